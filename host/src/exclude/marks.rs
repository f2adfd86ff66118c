//! What filter plugins mark in their `prepare` hooks (ABI 1.1): pfns to
//! keep, pfns to leave out, bytes to erase. Kept pfns go to the classifier
//! ([`PageClassifier::keeping`](crate::classify::PageClassifier::keeping));
//! excluded ones are a window stage ([`MarkedWindows`]); erasures are
//! applied by the workers to the page bytes ([`Erasures::apply`]) and
//! recorded in the dump's eraseinfo ([`Erasures::eraseinfo`]).

use std::ops::Range;

use vmdump_sdk::Fill;

use super::{ExcludeError, WindowFilter};
use crate::classify::ClassCounts;
use crate::ranges;

/// Erased pieces a dump may hold (each within one page): 16 MiB of them at most.
pub const MAX_ERASE_PIECES: usize = 1 << 20;

/// Bytes of one page to overwrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErasePiece {
    /// Physical address of the first byte.
    pub paddr: u64,
    /// Bytes, all in the page of `paddr`.
    pub len: u32,
    /// What they become.
    pub byte: u8,
}

/// One line of eraseinfo: what was erased, and how much.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EraseRecord {
    what: String,
    bytes: u64,
    nullify: bool,
}

/// The erasures of a dump: pieces sorted by address, and their records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Erasures {
    pieces: Vec<ErasePiece>,
    records: Vec<EraseRecord>,
}

impl Erasures {
    /// Whether nothing is erased.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Pieces recorded.
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// Adds the pieces of one erasure (already split at page boundaries),
    /// recorded as `what`.
    ///
    /// # Errors
    /// Past [`MAX_ERASE_PIECES`].
    pub fn add(&mut self, pieces: &[ErasePiece], fill: Fill, what: &str) -> Result<(), String> {
        if self.pieces.len() + pieces.len() > MAX_ERASE_PIECES {
            return Err(format!("more than {MAX_ERASE_PIECES} erased pieces"));
        }
        self.pieces.extend_from_slice(pieces);
        let bytes: u64 = pieces.iter().map(|p| u64::from(p.len)).sum();
        let nullify = fill == Fill::Nullify;
        match self.records.iter_mut().find(|r| r.what == what && r.nullify == nullify) {
            Some(record) => record.bytes += bytes,
            None => self.records.push(EraseRecord { what: what.to_owned(), bytes, nullify }),
        }
        Ok(())
    }

    /// Adds every erasure of `other`.
    pub fn absorb(&mut self, other: Erasures) {
        self.pieces.extend(other.pieces);
        for record in other.records {
            match self.records.iter_mut().find(|r| r.what == record.what && r.nullify == record.nullify) {
                Some(known) => known.bytes += record.bytes,
                None => self.records.push(record),
            }
        }
    }

    /// Sorts the pieces by address (before the page pass).
    pub fn seal(&mut self) {
        self.pieces.sort_by_key(|p| p.paddr);
    }

    /// Whether a piece falls in the page at `paddr` of `len` bytes.
    pub fn touches(&self, paddr: u64, len: u64) -> bool {
        !self.in_page(paddr, len).is_empty()
    }

    fn in_page(&self, paddr: u64, len: u64) -> &[ErasePiece] {
        let first = self.pieces.partition_point(|p| p.paddr < paddr);
        let count = self.pieces[first..].partition_point(|p| p.paddr < paddr + len);
        &self.pieces[first..first + count]
    }

    /// Overwrites the erased bytes of `page`, the page at `paddr`.
    pub fn apply(&self, paddr: u64, page: &mut [u8]) {
        for piece in self.in_page(paddr, page.len() as u64) {
            let at = (piece.paddr - paddr) as usize;
            let end = (at + piece.len as usize).min(page.len());
            page[at..end].fill(piece.byte);
        }
    }

    /// Bytes erased, in all.
    pub fn bytes(&self) -> u64 {
        self.records.iter().map(|r| r.bytes).sum()
    }

    /// makedumpfile's eraseinfo lines (kdump-format.md §1.9): `erase WHAT
    /// size N` (N summed per WHAT) or `erase WHAT nullify`, each ending in
    /// a newline.
    pub fn eraseinfo(&self) -> String {
        let line = |r: &EraseRecord| match r.nullify {
            true => format!("erase {} nullify\n", r.what),
            false => format!("erase {} size {}\n", r.what, r.bytes),
        };
        self.records.iter().map(line).collect()
    }
}

/// Everything the `prepare` hooks marked.
#[derive(Debug, Clone, Default)]
pub struct Marks {
    /// Pfns to keep, sorted and merged.
    pub keep: Vec<Range<u64>>,
    /// Pfns each filter leaves out, by filter name, sorted and merged.
    pub exclude: Vec<(String, Vec<Range<u64>>)>,
    /// Bytes to erase.
    pub erasures: Erasures,
}

impl Marks {
    /// Whether any filter excludes pfns by mark.
    pub fn excludes(&self) -> bool {
        self.exclude.iter().any(|(_, ranges)| !ranges.is_empty())
    }
}

/// The pfns filters marked to leave out, as a window stage (less those a
/// filter marked to keep), counted for the filter that marked them.
pub struct MarkedWindows<'m> {
    marks: &'m Marks,
    counts: Vec<u64>,
}

impl<'m> MarkedWindows<'m> {
    /// The stage of `marks`.
    pub fn new(marks: &'m Marks) -> Self {
        Self { marks, counts: vec![0; marks.exclude.len()] }
    }
}

impl WindowFilter for MarkedWindows<'_> {
    fn exclude(
        &mut self,
        window: Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        _counts: &mut ClassCounts,
    ) -> Result<(), ExcludeError> {
        for ((_, ranges), count) in self.marks.exclude.iter().zip(&mut self.counts) {
            let first = ranges.partition_point(|r| r.end <= window.start);
            for range in ranges[first..].iter().take_while(|r| r.start < window.end) {
                let pfns = range.start.max(window.start)..range.end.min(window.end);
                for pfn in pfns.filter(|&p| is_ram(p) && !ranges::holds(&self.marks.keep, p)) {
                    let bit = pfn - window.start;
                    let word = &mut excluded[(bit / 64) as usize];
                    if *word >> (bit % 64) & 1 == 0 {
                        *word |= 1 << (bit % 64);
                        *count += 1;
                    }
                }
            }
        }
        Ok(())
    }

    fn plugin_counts(&self) -> Vec<(String, u64)> {
        self.marks.exclude.iter().zip(&self.counts).map(|((name, _), &n)| (name.clone(), n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erasures_apply_in_their_page_and_sum_per_name() {
        let mut e = Erasures::default();
        let piece = |paddr, len| ErasePiece { paddr, len, byte: b'X' };
        e.add(&[piece(0x1ffc, 4), piece(0x2000, 4)], Fill::Byte(b'X'), "secret").unwrap();
        e.add(&[ErasePiece { paddr: 0x2010, len: 8, byte: 0 }], Fill::Nullify, "ptr").unwrap();
        e.add(&[piece(0x3000, 2)], Fill::Byte(b'X'), "secret").unwrap();
        e.seal();
        let mut page = vec![0xaa; 4096];
        e.apply(0x2000, &mut page);
        assert_eq!(&page[..5], b"XXXX\xaa");
        assert_eq!(&page[0x10..0x19], &[0, 0, 0, 0, 0, 0, 0, 0, 0xaa]);
        assert!(e.touches(0x1000, 4096) && !e.touches(0x4000, 4096));
        assert_eq!(e.eraseinfo(), "erase secret size 10\nerase ptr nullify\n");
        assert_eq!(e.bytes(), 18);
    }
}
