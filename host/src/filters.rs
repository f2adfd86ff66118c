//! Filter plugins (`vmdump_filter_entry_v1`) in the dump.
//!
//! A metadata filter (it needs the pfn only) runs on the reader thread, so
//! the pages it excludes are never read; a content filter (it needs the page
//! bytes) runs on the workers after the zero-page check. Neither takes part
//! in the first pass that sizes the descriptor table: the table keeps room
//! for the pages they drop, an unused gap that readers never look at (the
//! 2nd bitmap has no bit for them). A filter that fails or panics is
//! disabled for the rest of the run and its pages are kept: never lost.

use std::sync::Arc;

use vmdump_sdk::client::{CallError, FilterContext, FilterModule, HostServices};
use vmdump_sdk::{Needs, Params, Verdict};

use crate::dump::StructPages;
use crate::health::Health;
use crate::plugin::LoadedFilter;

/// Why a filter cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    /// module_init refused its parameters or failed.
    #[error("filter `{name}` ({path}): {cause}")]
    Init {
        /// Plugin name.
        name: String,
        /// Its file.
        path: String,
        /// The plugin's error.
        cause: CallError,
    },
    /// It needs both page bytes and struct page bytes, which no stage has together.
    #[error("filter `{0}` needs both the page bytes and the struct page: split it into two filters")]
    NeedsBoth(String),
}

/// One initialised filter plugin, shared by every thread.
pub struct PluginFilter {
    name: String,
    module: FilterModule,
    health: Health,
}

impl PluginFilter {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its first failure, if it failed (it was then disabled, pages kept).
    pub fn failure(&self) -> Option<CallError> {
        self.health.failure()
    }
}

/// The filters of a dump, by where they run.
#[derive(Default)]
pub struct FilterSet {
    /// Decide from the pfn: on the reader thread.
    pub metadata: Vec<PluginFilter>,
    /// Decide from the page bytes: on the workers.
    pub content: Vec<PluginFilter>,
}

impl FilterSet {
    /// Initialises each filter with its parameters, in the order given.
    ///
    /// # Errors
    /// [`FilterError`] for the first filter that cannot be used.
    pub fn new(
        filters: &[(&LoadedFilter, Params)],
        host: &Arc<dyn HostServices>,
    ) -> Result<Self, FilterError> {
        let mut set = Self::default();
        for (loaded, params) in filters {
            let name = loaded.info.name.clone();
            if loaded.info.needs.contains(Needs::STRUCT_PAGE) && loaded.info.needs.contains(Needs::PAGE) {
                return Err(FilterError::NeedsBoth(name));
            }
            let module = loaded.plugin.init(params, host.clone()).map_err(|cause| FilterError::Init {
                name: name.clone(),
                path: loaded.path.display().to_string(),
                cause,
            })?;
            let filter = PluginFilter { name, module, health: Health::default() };
            let stage =
                if loaded.info.needs.contains(Needs::PAGE) { &mut set.content } else { &mut set.metadata };
            stage.push(filter);
        }
        Ok(set)
    }

    /// Whether there is no filter at all.
    pub fn is_empty(&self) -> bool {
        self.metadata.is_empty() && self.content.is_empty()
    }

    /// Whether a metadata filter reads struct pages (the kernel's memory
    /// must then be opened even at dump level 1).
    pub fn needs_struct_pages(&self) -> bool {
        self.metadata.iter().any(|f| f.module.needs().contains(Needs::STRUCT_PAGE))
    }
}

/// One thread's contexts of a list of filters, with what each excluded.
pub struct FilterStage<'f> {
    filters: &'f [PluginFilter],
    contexts: Vec<Option<FilterContext<'f>>>,
    excluded: Vec<u64>,
}

impl<'f> FilterStage<'f> {
    /// Contexts for `filters` on this thread; a filter whose context cannot
    /// be created is disabled.
    pub fn new(filters: &'f [PluginFilter]) -> Self {
        let contexts =
            filters.iter().map(|f| f.module.new_context().map_err(|e| f.health.fail(e)).ok()).collect();
        Self { filters, contexts, excluded: vec![0; filters.len()] }
    }

    /// Whether any filter excludes the page (the first that does counts it).
    pub fn excludes(
        &mut self,
        pfn: u64,
        paddr: u64,
        data: Option<&[u8]>,
        struct_page: Option<&[u8]>,
    ) -> bool {
        for (i, filter) in self.filters.iter().enumerate() {
            let Some(ctx) = self.contexts[i].as_mut().filter(|_| !filter.health.is_disabled()) else {
                continue;
            };
            match ctx.classify(pfn, paddr, data, struct_page) {
                Ok(Verdict::Exclude) => {
                    self.excluded[i] += 1;
                    return true;
                }
                Ok(Verdict::Keep) => {}
                Err(e) => filter.health.fail(e),
            }
        }
        false
    }

    /// Pages each filter excluded, by name.
    pub fn counts(&self) -> Vec<(String, u64)> {
        self.filters.iter().zip(&self.excluded).map(|(f, &n)| (f.name.clone(), n)).collect()
    }
}

/// Adds `more` into `total`, matching names.
pub fn add_counts(total: &mut Vec<(String, u64)>, more: Vec<(String, u64)>) {
    for (name, n) in more {
        match total.iter_mut().find(|(t, _)| *t == name) {
            Some((_, sum)) => *sum += n,
            None => total.push((name, n)),
        }
    }
}

/// The pfn ranges of `inner` less what the metadata filters exclude,
/// decided page by page on the reader thread before anything is read.
pub struct PluginRanges<'f, I> {
    inner: I,
    stage: Option<FilterStage<'f>>,
    struct_pages: Option<StructPages<'f, 'f>>,
    pending: std::ops::Range<u64>,
    page_size: u64,
    skipped: u64,
}

impl<'f, I> PluginRanges<'f, I> {
    /// `inner` filtered by `filters` (no filtering when empty), which read
    /// their struct pages from `struct_pages`.
    pub fn new(
        inner: I,
        filters: &'f [PluginFilter],
        page_size: u64,
        struct_pages: Option<StructPages<'f, 'f>>,
    ) -> Self {
        let stage = (!filters.is_empty()).then(|| FilterStage::new(filters));
        Self { inner, stage, struct_pages, pending: 0..0, page_size, skipped: 0 }
    }

    /// Pages excluded so far.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Pages each filter excluded, by name.
    pub fn counts(&self) -> Vec<(String, u64)> {
        self.stage.as_ref().map(FilterStage::counts).unwrap_or_default()
    }

    /// The next kept run inside `pending`, consuming what it looked at.
    fn next_kept(&mut self, stage: &mut FilterStage<'f>) -> Option<std::ops::Range<u64>> {
        let (ps, struct_pages) = (self.page_size, &mut self.struct_pages);
        let mut keep = |pfn: u64| {
            let struct_page = struct_pages.as_mut().and_then(|s| s.get(pfn));
            !stage.excludes(pfn, pfn * ps, None, struct_page)
        };
        while !self.pending.is_empty() {
            let first = self.pending.start;
            self.pending.start += 1;
            if !keep(first) {
                self.skipped += 1;
                continue;
            }
            let mut end = first + 1;
            while end < self.pending.end && keep(end) {
                end += 1;
            }
            if end < self.pending.end {
                self.skipped += 1; // `end` was looked at and excluded
                self.pending.start = end + 1;
            } else {
                self.pending.start = end;
            }
            return Some(first..end);
        }
        None
    }
}

impl<I, E> Iterator for PluginRanges<'_, I>
where
    I: Iterator<Item = Result<std::ops::Range<u64>, E>>,
{
    type Item = Result<std::ops::Range<u64>, E>;

    fn next(&mut self) -> Option<Self::Item> {
        let Some(mut stage) = self.stage.take() else { return self.inner.next() };
        let result = loop {
            if let Some(run) = self.next_kept(&mut stage) {
                break Some(Ok(run));
            }
            match self.inner.next() {
                Some(Ok(range)) => self.pending = range,
                other => break other,
            }
        };
        self.stage = Some(stage);
        result
    }
}
