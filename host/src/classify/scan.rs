//! The scan of one window: present sections, 512-pfn batches of struct
//! pages read in one `read_virt` each (kdump-format.md §5.3), decisions,
//! and the marking of excluded pfns.

use std::ops::Range;

use super::decide::{Decision, decide, decode};
use super::{ClassCounts, ClassifyError, PageClass, PageClassifier, Pending};
use crate::ranges;
use crate::xlat::PhysRead;

/// Struct pages per read, aligned to multiples of it (`PGMM_CACHED`).
pub(crate) const BATCH: u64 = 512;

/// Where excluded pfns of the current window go.
pub(crate) struct Marker<'a> {
    pub(crate) window: Range<u64>,
    pub(crate) is_ram: &'a dyn Fn(u64) -> bool,
    pub(crate) excluded: &'a mut [u64],
    pub(crate) counts: &'a mut ClassCounts,
    /// Pfns kept whatever their struct pages say (the kernel image in
    /// use), sorted and disjoint.
    pub(crate) protected: &'a [Range<u64>],
    /// Pfns filter plugins keep (their `prepare` marks), sorted and disjoint.
    pub(crate) kept: &'a [Range<u64>],
}

impl Marker<'_> {
    /// Marks and counts the RAM pfns of `pfns` inside the window, but
    /// the protected and kept ones, which are counted as kept.
    pub(crate) fn exclude(&mut self, pfns: Range<u64>, class: PageClass) {
        let inside = pfns.start.max(self.window.start)..pfns.end.min(self.window.end);
        let (protected, kept) =
            (ranges::meeting(self.protected, &inside), ranges::meeting(self.kept, &inside));
        let (mut n, mut image_kept, mut filter_kept) = (0, 0, 0);
        for pfn in inside.filter(|&pfn| (self.is_ram)(pfn)) {
            if ranges::holds(protected, pfn) {
                image_kept += 1;
            } else if ranges::holds(kept, pfn) {
                filter_kept += 1;
            } else {
                let bit = pfn - self.window.start;
                self.excluded[(bit / 64) as usize] |= 1 << (bit % 64);
                n += 1;
            }
        }
        self.counts.add(class, n);
        self.counts.image_kept += image_kept;
        self.counts.filter_kept[class as usize] += filter_kept;
    }

    /// Counts the RAM pfns of `pfns` (inside the window) as kept without a
    /// class; `vaddr` is the struct page of the first.
    pub(crate) fn keep_unclassified(&mut self, pfns: Range<u64>, vaddr: u64) {
        let n = (pfns.start.max(self.window.start)..pfns.end.min(self.window.end))
            .filter(|&pfn| (self.is_ram)(pfn))
            .count() as u64;
        self.counts.unclassified += n;
        if self.counts.first_unclassified.is_none() {
            self.counts.first_unclassified = Some((pfns.start, vaddr));
        }
    }
}

impl<R: PhysRead + ?Sized> PageClassifier<'_, R> {
    /// Scans `[pfn, window end)`: section by section, batch by batch.
    pub(super) fn scan(&mut self, mut pfn: u64, out: &mut Marker<'_>) -> Result<(), ClassifyError> {
        let end = out.window.end;
        let shift = self.sections.geometry().pfn_section_shift;
        while pfn < end {
            let nr = pfn >> shift;
            let sections = self.sections.sections();
            let i = sections.partition_point(|s| s.nr < nr);
            let Some(section) = sections.get(i) else { break };
            if section.nr > nr {
                pfn = section.nr << shift; // skip to the next present section
                continue;
            }
            let section_end = (nr + 1) << shift;
            let batch_end = ((pfn / BATCH + 1) * BATCH).min(section_end);
            pfn = self.batch(pfn, batch_end, out)?;
        }
        Ok(())
    }

    /// Classifies pfns from `pfn` up to `batch_end` (and the window end)
    /// with one read of their struct pages; returns the next pfn to look
    /// at, which is beyond `batch_end` after a large exclusion.
    fn batch(&mut self, pfn: u64, batch_end: u64, out: &mut Marker<'_>) -> Result<u64, ClassifyError> {
        let stop = batch_end.min(out.window.end);
        let Some(first) = (pfn..stop).find(|&p| (out.is_ram)(p)) else { return Ok(batch_end) };
        let size = self.rules.layout.size;
        // Read up to the batch end even past the window: a compound head's
        // first tail may lie there, and the batch is one vmemmap subsection.
        let count = (batch_end - first) as usize;
        let vaddr = self.sections.mem_map_of(first).unwrap_or_default();
        self.buf.resize(count * size, 0);
        if let Err(cause) = self.memory.read_virt(vaddr, &mut self.buf) {
            if !self.keep_unreadable {
                return Err(ClassifyError::Xlat { pfns: first..batch_end, vaddr, cause });
            }
            out.keep_unclassified(first..stop, vaddr);
            return Ok(batch_end);
        }
        let mut p = first;
        while p < stop {
            if !(out.is_ram)(p) {
                p += 1;
                continue;
            }
            let at = (p - first) as usize * size;
            let next = (p + 1 < batch_end).then(|| &self.buf[at + size..at + 2 * size]);
            let page = decode(&self.buf[at..at + size], next, p, &self.rules);
            match decide(&page, &self.rules, self.level) {
                Decision::Keep | Decision::Tail => p += 1,
                Decision::InvalidFreeOrder => {
                    self.invalid_free_orders += 1;
                    p += 1;
                }
                Decision::Exclude { class, pages } => {
                    let range = p..p.saturating_add(pages);
                    out.exclude(range.clone(), class);
                    if range.end > out.window.end {
                        self.pending = Some(Pending { pfns: out.window.end..range.end, class });
                    }
                    p = range.end;
                }
            }
        }
        Ok(p.max(batch_end))
    }
}
