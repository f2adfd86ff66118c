//! The pages a dump lost: meant for it, but unreadable in the input (a
//! read error, a file that shrank, a mapped page that faulted). Counted in
//! full; their pfn ranges kept up to a bound, so that memory stays bounded
//! however many there are.

use std::fmt::Write;
use std::ops::Range;

use vmdump_format::kdump::PageRecord;

use super::Slot;

/// Pfn ranges kept for the report; the rest are only counted.
const RANGES_KEPT: usize = 32;

/// The lost pages of a run, in pfn order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LostPages {
    /// Pages lost.
    pub pages: u64,
    /// The first [`RANGES_KEPT`] runs of lost pfns.
    pub ranges: Vec<Range<u64>>,
    /// Runs not kept in `ranges`.
    pub more_ranges: u64,
    /// Why the first page could not be read.
    pub first_cause: Option<String>,
    /// The last lost pfn seen.
    last: Option<u64>,
}

impl LostPages {
    /// Notes the lost pages of a slot the writer is about to write.
    pub fn note(&mut self, slot: &Slot) {
        // The batch's lost ranges are where its Lost records are: most
        // batches have none, and cost no look at their records.
        if slot.pages.lost().is_empty() {
            return;
        }
        for (pfn, record) in (slot.pages.first_pfn()..).zip(&slot.records) {
            if *record == PageRecord::Lost {
                self.add(pfn);
            }
        }
        if self.first_cause.is_none() && self.pages > 0 {
            self.first_cause = slot.pages.lost_cause().map(str::to_owned);
        }
    }

    fn add(&mut self, pfn: u64) {
        self.pages += 1;
        let continues = self.last.is_some_and(|last| last + 1 == pfn);
        self.last = Some(pfn);
        if continues {
            if self.more_ranges == 0 {
                self.ranges.last_mut().expect("a run continues a kept range").end = pfn + 1;
            }
        } else if self.ranges.len() < RANGES_KEPT {
            self.ranges.push(pfn..pfn + 1);
        } else {
            self.more_ranges += 1;
        }
    }

    /// Adds the lost pages of a later split piece.
    pub fn absorb(&mut self, piece: LostPages) {
        self.pages += piece.pages;
        self.first_cause = self.first_cause.take().or(piece.first_cause);
        for run in piece.ranges {
            if self.ranges.len() < RANGES_KEPT {
                self.ranges.push(run);
            } else {
                self.more_ranges += 1;
            }
        }
        self.more_ranges += piece.more_ranges;
    }

    /// Whether no page was lost.
    pub fn is_empty(&self) -> bool {
        self.pages == 0
    }

    /// One line naming the lost pages: how many, their pfn ranges, why.
    pub fn describe(&self) -> String {
        let mut t = format!("{} pages could not be read from the input: pfns ", self.pages);
        for (i, r) in self.ranges.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(t, "{sep}{:#x}..{:#x}", r.start, r.end);
        }
        if self.more_ranges > 0 {
            let _ = write!(t, " and {} more ranges", self.more_ranges);
        }
        if let Some(cause) = &self.first_cause {
            let _ = write!(t, " (first: {cause})");
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lost(pfns: impl IntoIterator<Item = u64>) -> LostPages {
        let mut lost = LostPages::default();
        pfns.into_iter().for_each(|pfn| lost.add(pfn));
        lost
    }

    #[test]
    fn runs_of_pfns_become_ranges() {
        let l = lost([3, 4, 5, 9, 10, 20]);
        assert_eq!((l.pages, l.ranges.clone(), l.more_ranges), (6, vec![3..6, 9..11, 20..21], 0));
        assert_eq!(
            l.describe(),
            "6 pages could not be read from the input: pfns 0x3..0x6, 0x9..0xb, 0x14..0x15"
        );
    }

    #[test]
    fn ranges_past_the_kept_ones_are_only_counted() {
        // Every other pfn: one range each, plus a run continuing the last.
        let pfns = (0..100u64).map(|i| 2 * i).chain([199, 200]);
        let l = lost(pfns);
        assert_eq!(l.pages, 102);
        assert_eq!(l.ranges.len(), RANGES_KEPT);
        assert_eq!(l.ranges[RANGES_KEPT - 1], 62..63, "a kept range does not grow past the bound");
        assert_eq!(l.more_ranges, 100 - RANGES_KEPT as u64, "198..201 is one run");
        assert!(l.describe().ends_with(&format!(" and {} more ranges", 100 - RANGES_KEPT)));
    }

    #[test]
    fn pieces_add_up() {
        let mut whole = lost([1, 2]);
        whole.absorb(lost([10, 11, 12]));
        assert_eq!((whole.pages, whole.ranges.clone()), (5, vec![1..3, 10..13]));
    }
}
