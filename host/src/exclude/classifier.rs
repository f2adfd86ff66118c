//! The dump level's struct page classifier (`crate::classify`) as a window stage.

use std::ops::Range;

use super::{ExcludeError, WindowFilter};
use crate::classify::{ClassCounts, PageClassifier};
use crate::input::Input;

impl<'b> WindowFilter for PageClassifier<'_, dyn Input + 'b> {
    fn exclude(
        &mut self,
        window: Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        counts: &mut ClassCounts,
    ) -> Result<(), ExcludeError> {
        Ok(self.classify(window, is_ram, excluded, counts)?)
    }
}
