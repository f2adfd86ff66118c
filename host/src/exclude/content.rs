//! The exclusion decided from the page bytes, on each worker: zero pages
//! (dump level bit 1), then the filter plugins that need the page bytes.

use super::Counts;
use super::marks::Erasures;
use super::plugins::{FilterStage, PluginFilter};
use crate::level::DumpLevel;

/// What becomes of a page the metadata stages kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// All zero, left out by dump level bit 1: it points at the shared zero page.
    Zero,
    /// Left out by a content filter plugin.
    Excluded,
    /// Stored.
    Keep,
}

/// Whether every byte of `page` is zero. OR-reduces 64-byte chunks, which
/// the compiler vectorises (dependencies.md §4: ~8 GiB/s, far from being the
/// bottleneck); an early exit per chunk keeps non-zero pages cheap.
pub fn is_zero_page(page: &[u8]) -> bool {
    let mut chunks = page.chunks_exact(64);
    let whole = chunks.all(|chunk| chunk.iter().fold(0u8, |acc, &b| acc | b) == 0);
    whole && chunks.remainder().iter().all(|&b| b == 0)
}

/// One worker's content stage, with what it left out.
pub struct ContentStage<'f> {
    exclude_zero: bool,
    plugins: FilterStage<'f>,
    erasures: &'f Erasures,
    page_size: u64,
    zero: u64,
}

impl<'f> ContentStage<'f> {
    /// The stage of dump `level`, the content filter `plugins` and the
    /// filters' `erasures`.
    pub fn new(
        level: DumpLevel,
        plugins: &'f [PluginFilter],
        erasures: &'f Erasures,
        page_size: u64,
    ) -> Self {
        let plugins = FilterStage::new(plugins);
        Self { exclude_zero: level.excludes_zero_pages(), plugins, erasures, page_size, zero: 0 }
    }

    /// Page `pfn` as the dump holds it: `page` itself, or, when filters
    /// erase bytes of it, a copy in `scratch` with those bytes overwritten
    /// (before the zero-page check and compression, as makedumpfile does).
    pub fn erased<'p>(&self, pfn: u64, page: &'p [u8], scratch: &'p mut Vec<u8>) -> &'p [u8] {
        let paddr = pfn * self.page_size;
        if !self.erasures.touches(paddr, page.len() as u64) {
            return page;
        }
        scratch.clear();
        scratch.extend_from_slice(page);
        self.erasures.apply(paddr, scratch);
        scratch
    }

    /// What becomes of page `pfn`, whose bytes are `page`.
    pub fn judge(&mut self, pfn: u64, page: &[u8]) -> Verdict {
        if self.exclude_zero && is_zero_page(page) {
            self.zero += 1;
            return Verdict::Zero;
        }
        if self.plugins.excludes(pfn, pfn * self.page_size, Some(page)) {
            return Verdict::Excluded;
        }
        Verdict::Keep
    }

    /// What it left out so far.
    pub fn counts(&self) -> Counts {
        Counts { zero: self.zero, plugins: self.plugins.counts(), ..Counts::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_check_sees_a_single_bit_anywhere() {
        let mut page = vec![0u8; 4096];
        assert!(is_zero_page(&page));
        for at in [0, 63, 64, 2047, 4095] {
            page[at] = 0x10;
            assert!(!is_zero_page(&page), "byte {at}");
            page[at] = 0;
        }
        assert!(!is_zero_page(&[0, 0, 1]));
    }
}
