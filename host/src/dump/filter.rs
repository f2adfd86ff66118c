//! Metadata filters: page exclusion decided from the kernel's own records
//! (struct page), before any page byte is read (kdump-format.md §5).
//!
//! A filter works on windows of pfns in increasing order, one bitset per
//! window, so memory stays bounded whatever the size of the machine. The
//! dump runs it twice, as makedumpfile's cyclic mode does: once to write the
//! 2nd bitmap and count the pages (the data area starts after one descriptor
//! per page), and once, on the reader thread, to skip the excluded pages.

use std::ops::Range;

use vmdump_format::phys::PhysMap;

use super::DumpError;
use crate::classify::ClassCounts;

/// Pfns per filter window: one 1 MiB bitset (32 GiB of 4 KiB pages).
pub const WINDOW_PFNS: u64 = 1 << 23;

/// Shared state of a metadata filter; hands out one cursor per pass.
pub trait MetadataFilter: Sync {
    /// A cursor over windows in increasing order.
    ///
    /// # Errors
    /// When the filter cannot start (its kernel structures are unreadable).
    fn cursor(&self) -> Result<Box<dyn WindowFilter + '_>, DumpError>;
}

/// Classifies windows of pfns, in increasing order (state such as a free
/// block running past a window's end carries into the next call).
pub trait WindowFilter: Send {
    /// Sets bit `pfn - window.start` of `excluded` (cleared by the caller)
    /// for every excluded pfn of `window` that `is_ram`, and counts it.
    ///
    /// # Errors
    /// When the kernel structures of the window cannot be read.
    fn exclude(
        &mut self,
        window: Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        counts: &mut ClassCounts,
    ) -> Result<(), DumpError>;
}

/// Two metadata filters in one: a page is excluded when either excludes it
/// (the first is asked first and counts it).
pub struct BothFilters<'a>(pub &'a dyn MetadataFilter, pub &'a dyn MetadataFilter);

impl MetadataFilter for BothFilters<'_> {
    fn cursor(&self) -> Result<Box<dyn WindowFilter + '_>, DumpError> {
        Ok(Box::new(BothCursors(self.0.cursor()?, self.1.cursor()?, Vec::new())))
    }
}

struct BothCursors<'a>(Box<dyn WindowFilter + 'a>, Box<dyn WindowFilter + 'a>, Vec<u64>);

impl WindowFilter for BothCursors<'_> {
    fn exclude(
        &mut self,
        window: Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        counts: &mut ClassCounts,
    ) -> Result<(), DumpError> {
        self.0.exclude(window.clone(), is_ram, excluded, counts)?;
        let (first, start) = (&*excluded, window.start);
        let still_in = |pfn: u64| is_ram(pfn) && !bit(first, pfn - start);
        self.2.clear();
        self.2.resize(excluded.len(), 0);
        self.1.exclude(window, &still_in, &mut self.2, counts)?;
        excluded.iter_mut().zip(&self.2).for_each(|(a, b)| *a |= b);
        Ok(())
    }
}

/// Whether bit `i` of `bits` is set.
pub fn bit(bits: &[u64], i: u64) -> bool {
    bits[(i / 64) as usize] >> (i % 64) & 1 == 1
}

/// The pfn ranges to dump: RAM minus what the filter excludes, produced
/// lazily window by window (one bitset in memory, however fragmented).
pub struct DumpableRanges<'a> {
    phys: &'a PhysMap,
    cursor: Box<dyn WindowFilter + 'a>,
    excluded: Vec<u64>,
    window: Range<u64>,
    next_pfn: u64,
    counts: ClassCounts,
}

impl<'a> DumpableRanges<'a> {
    /// The ranges of `phys` that `cursor` keeps.
    pub fn new(phys: &'a PhysMap, cursor: Box<dyn WindowFilter + 'a>) -> Self {
        let start = phys.runs().first().map_or(0, |r| r.start_pfn);
        Self {
            phys,
            cursor,
            excluded: Vec::new(),
            window: 0..0,
            next_pfn: start,
            counts: ClassCounts::default(),
        }
    }

    /// What the filter excluded so far.
    pub fn counts(&self) -> ClassCounts {
        self.counts
    }

    fn load_window(&mut self, pfn: u64) -> Result<(), DumpError> {
        let start = pfn - pfn % WINDOW_PFNS;
        let end = (start + WINDOW_PFNS).min(self.phys.max_pfn());
        self.excluded.clear();
        self.excluded.resize((end - start).div_ceil(64) as usize, 0);
        let phys = self.phys;
        self.cursor.exclude(start..end, &|pfn| phys.is_ram(pfn), &mut self.excluded, &mut self.counts)?;
        self.window = start..end;
        Ok(())
    }

    fn kept(&self, pfn: u64) -> bool {
        !bit(&self.excluded, pfn - self.window.start)
    }

    fn next_range(&mut self) -> Result<Option<Range<u64>>, DumpError> {
        loop {
            let Some(run) = self.phys.run_of(self.next_pfn).copied().or_else(|| self.next_run()) else {
                return Ok(None);
            };
            let pfn = self.next_pfn.max(run.start_pfn);
            if !self.window.contains(&pfn) {
                self.load_window(pfn)?;
            }
            let end = run.end_pfn.min(self.window.end);
            let first = (pfn..end).find(|&p| self.kept(p));
            let Some(first) = first else {
                self.next_pfn = end;
                continue;
            };
            let last = (first..end).find(|&p| !self.kept(p)).unwrap_or(end);
            self.next_pfn = last;
            return Ok(Some(first..last));
        }
    }

    /// The first run after `next_pfn`, moving `next_pfn` to its start.
    fn next_run(&mut self) -> Option<vmdump_format::phys::PageRun> {
        let run = *self.phys.runs().iter().find(|r| r.start_pfn >= self.next_pfn)?;
        self.next_pfn = run.start_pfn;
        Some(run)
    }
}

impl Iterator for DumpableRanges<'_> {
    type Item = Result<Range<u64>, DumpError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_range().transpose()
    }
}
