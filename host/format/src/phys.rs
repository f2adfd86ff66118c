//! Physical page map built from PT_LOAD segments (kdump-format.md §1.7,
//! §1.8, §6.2).
//!
//! Rules:
//! * **RAM pages.** Page `pfn` is RAM (a 1st-bitmap bit, §1.7) iff it
//!   overlaps some PT_LOAD's `[p_paddr, p_paddr + p_memsz)`: the segment
//!   covers pfns `[paddr / page_size, ceil((paddr + mem_size) / page_size))`.
//!   The start is rounded down as `paddr_to_pfn(start)` does. For a segment
//!   *ending mid-page* §1.7 notes two makedumpfile behaviours (the
//!   file-backed bitmap path keeps the partial last page, the in-memory
//!   cyclic path drops it); we keep it, because §1.8 and §6.2 say a page is
//!   always read as `page_size` bytes with the missing part zero-filled:
//!   losing real memory bytes is worse than one extra RAM bit.
//! * **Overlaps.** Where PT_LOADs overlap (the kernel-text PT_LOAD of
//!   `/proc/vmcore` duplicates RAM of a direct-map PT_LOAD), a page is read
//!   from the segment with the *lowest program-header index* that covers
//!   it, the lookup order of makedumpfile's `paddr_to_offset`. Pages are
//!   never counted twice.
//! * **Zero fill.** Bytes of the page outside the chosen segment's file
//!   range (before a mid-page start, beyond `p_filesz`, beyond `p_memsz`)
//!   read as zero. A page shared by two segments that each cover part of it
//!   is read from one segment only (the lowest index); the other part is
//!   zero. Real vmcores place such partial pages next to holes, never next
//!   to another segment.
//!
//! Memory use is one [`PageRun`] per distinct (segment, pfn interval), so
//! lookups over 64 M pfns (256 GiB) are binary searches over a few runs.

use std::collections::BTreeSet;
use std::ops::Range;

use crate::elf::LoadSegment;
use crate::{FormatError, ReadAt};

/// A maximal interval of RAM pfns read from one PT_LOAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRun {
    /// First pfn.
    pub start_pfn: u64,
    /// One past the last pfn.
    pub end_pfn: u64,
    /// Index of the segment in the `loads` given to [`PhysMap::new`].
    pub segment_index: usize,
    /// The segment the pages are read from.
    pub segment: LoadSegment,
}

/// Where the bytes of one page are: `page[lead_zero..lead_zero + file_bytes]`
/// comes from the file at `file_offset`, every other byte is zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLocation {
    /// File offset of the first file-backed byte (meaningless if `file_bytes == 0`).
    pub file_offset: u64,
    /// Zero bytes at the start of the page (segment starting mid-page).
    pub lead_zero: u32,
    /// Bytes read from the file.
    pub file_bytes: u32,
    /// The page size.
    pub page_size: u32,
}

impl PageLocation {
    /// Zero bytes at the end of the page.
    pub fn tail_zero(&self) -> u32 {
        self.page_size - self.lead_zero - self.file_bytes
    }

    /// True if the whole page comes from the file (no zero fill).
    pub fn is_whole(&self) -> bool {
        self.file_bytes == self.page_size
    }
}

/// Sorted, non-overlapping runs of RAM pfns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysMap {
    page_size: u64,
    runs: Vec<PageRun>,
    /// `ram_before[i]` = RAM pages in `runs[..i]`; one more entry than runs.
    ram_before: Vec<u64>,
}

/// Checks that `page_size` is a page size the formats accept: a power of
/// two in 512..=1 MiB (what [`PhysMap::new`] and the kdump layout require).
///
/// # Errors
///
/// [`FormatError::BadPageSize`] otherwise.
pub fn check_page_size(page_size: u64) -> Result<(), FormatError> {
    if page_size.is_power_of_two() && (512..=1 << 20).contains(&page_size) {
        Ok(())
    } else {
        Err(FormatError::BadPageSize(page_size))
    }
}

/// Splits the pfn line into elementary intervals and picks the lowest
/// covering segment index for each; adjacent intervals of one segment merge.
fn sweep(intervals: &[(u64, u64, usize)]) -> Vec<(u64, u64, usize)> {
    // (pfn, is_start, index); ends sort before starts at the same pfn.
    let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(intervals.len() * 2);
    for &(s, e, i) in intervals {
        events.push((s, true, i));
        events.push((e, false, i));
    }
    events.sort_unstable();
    let mut active = BTreeSet::new();
    let mut out: Vec<(u64, u64, usize)> = Vec::new();
    let mut last = 0;
    for (pfn, is_start, index) in events {
        if let Some(&winner) = active.first()
            && pfn > last
        {
            match out.last_mut() {
                Some(prev) if prev.1 == last && prev.2 == winner => prev.1 = pfn,
                _ => out.push((last, pfn, winner)),
            }
        }
        if is_start {
            active.insert(index);
        } else {
            active.remove(&index);
        }
        last = pfn;
    }
    out
}

impl PhysMap {
    /// Builds the map from PT_LOADs in program-header order.
    ///
    /// # Errors
    ///
    /// [`FormatError::BadPageSize`] for a page size that is not a power of
    /// two in 512..=1 MiB; [`FormatError::NoLoad`] if no segment has memory.
    pub fn new(loads: &[LoadSegment], page_size: u64) -> Result<Self, FormatError> {
        check_page_size(page_size)?;
        let intervals: Vec<(u64, u64, usize)> = loads
            .iter()
            .enumerate()
            .filter(|(_, s)| s.mem_size > 0)
            .map(|(i, s)| {
                let end = s.paddr.saturating_add(s.mem_size);
                (s.paddr / page_size, end.div_ceil(page_size), i)
            })
            .collect();
        if intervals.is_empty() {
            return Err(FormatError::NoLoad);
        }
        let runs = sweep(&intervals)
            .into_iter()
            .map(|(start_pfn, end_pfn, i)| PageRun {
                start_pfn,
                end_pfn,
                segment_index: i,
                segment: loads[i],
            })
            .collect();
        Ok(Self::from_runs(page_size, runs))
    }

    fn from_runs(page_size: u64, runs: Vec<PageRun>) -> Self {
        let mut ram_before = Vec::with_capacity(runs.len() + 1);
        let mut total = 0;
        ram_before.push(0);
        for r in &runs {
            total += r.end_pfn - r.start_pfn;
            ram_before.push(total);
        }
        PhysMap { page_size, runs, ram_before }
    }

    /// The page size the map was built with.
    pub fn page_size(&self) -> u64 {
        self.page_size
    }

    /// One past the highest RAM pfn: `max_mapnr` of the dump.
    pub fn max_pfn(&self) -> u64 {
        self.runs.last().map_or(0, |r| r.end_pfn)
    }

    /// The runs, sorted by pfn.
    pub fn runs(&self) -> &[PageRun] {
        &self.runs
    }

    /// Number of RAM pages (set bits of the 1st bitmap).
    pub fn ram_pages(&self) -> u64 {
        *self.ram_before.last().expect("never empty")
    }

    fn run_index(&self, pfn: u64) -> Option<usize> {
        let i = self.runs.partition_point(|r| r.end_pfn <= pfn);
        (i < self.runs.len() && self.runs[i].start_pfn <= pfn).then_some(i)
    }

    /// The run holding `pfn`, or `None` for a hole.
    pub fn run_of(&self, pfn: u64) -> Option<&PageRun> {
        self.run_index(pfn).map(|i| &self.runs[i])
    }

    /// True if `pfn` is RAM.
    pub fn is_ram(&self, pfn: u64) -> bool {
        self.run_index(pfn).is_some()
    }

    /// RAM pages with pfn below `pfn`.
    fn count_below(&self, pfn: u64) -> u64 {
        let i = self.runs.partition_point(|r| r.end_pfn <= pfn);
        let partial = self.runs.get(i).map_or(0, |r| pfn.saturating_sub(r.start_pfn));
        self.ram_before[i] + partial
    }

    /// Number of RAM pages in the pfn range.
    pub fn count_in(&self, range: Range<u64>) -> u64 {
        if range.end <= range.start {
            return 0;
        }
        self.count_below(range.end) - self.count_below(range.start)
    }

    /// Where the bytes of page `pfn` are, or `None` for a hole.
    pub fn locate(&self, pfn: u64) -> Option<PageLocation> {
        let seg = self.runs[self.run_index(pfn)?].segment;
        let page_start = pfn.saturating_mul(self.page_size);
        let page_end = page_start.saturating_add(self.page_size);
        let data_start = page_start.max(seg.paddr);
        let file_end = seg.paddr.saturating_add(seg.file_size.min(seg.mem_size));
        let file_bytes = page_end.min(file_end).saturating_sub(data_start);
        Some(PageLocation {
            // Saturating: far beyond p_filesz (file_bytes == 0) the sum can
            // exceed u64 (p_memsz near 2^64); within it, parse checked it.
            file_offset: seg.file_offset.saturating_add(data_start - seg.paddr),
            lead_zero: (data_start - page_start) as u32,
            file_bytes: file_bytes as u32,
            page_size: self.page_size as u32,
        })
    }

    /// Reads page `pfn` into `buf` (exactly one page), zero-filling as
    /// [`PageLocation`] says. Returns `false` (and zeroes `buf`) for a hole.
    ///
    /// # Errors
    ///
    /// [`FormatError::Io`] if the read fails; [`FormatError::BadPageSize`]
    /// if `buf` is not one page long.
    pub fn read_page<R: ReadAt + ?Sized>(
        &self,
        input: &R,
        pfn: u64,
        buf: &mut [u8],
    ) -> Result<bool, FormatError> {
        if buf.len() as u64 != self.page_size {
            return Err(FormatError::BadPageSize(buf.len() as u64));
        }
        buf.fill(0);
        let Some(loc) = self.locate(pfn) else { return Ok(false) };
        if loc.file_bytes == 0 {
            return Ok(true); // entirely beyond p_filesz: all zero
        }
        let part = &mut buf[loc.lead_zero as usize..(loc.lead_zero + loc.file_bytes) as usize];
        input
            .read_exact_at(part, loc.file_offset)
            .map_err(|e| FormatError::io(loc.file_offset, u64::from(loc.file_bytes), e))?;
        Ok(true)
    }

    /// The same map without pages at or above `limit_pfn`, for when the
    /// kernel says memory ends earlier than the PT_LOADs (a QEMU dump's
    /// BIOS ROM segment at 0xfffc0000, see the fixture test).
    pub fn truncated(&self, limit_pfn: u64) -> PhysMap {
        let runs = self
            .runs
            .iter()
            .filter(|r| r.start_pfn < limit_pfn)
            .map(|r| PageRun { end_pfn: r.end_pfn.min(limit_pfn), ..*r })
            .collect();
        Self::from_runs(self.page_size, runs)
    }

    /// The same map without the pages of `holes` (pfn ranges): for a live
    /// system's `/proc/kcore`, the memory reserved for the capture kernel,
    /// which a crash dump's `/proc/vmcore` never holds.
    pub fn without(&self, holes: &[Range<u64>]) -> PhysMap {
        let mut runs = Vec::with_capacity(self.runs.len() + holes.len());
        for run in &self.runs {
            let mut start = run.start_pfn;
            let mut cuts: Vec<&Range<u64>> =
                holes.iter().filter(|h| h.start < run.end_pfn && h.end > run.start_pfn).collect();
            cuts.sort_by_key(|h| h.start);
            for cut in cuts {
                if cut.start > start {
                    runs.push(PageRun { start_pfn: start, end_pfn: cut.start, ..*run });
                }
                start = start.max(cut.end);
            }
            if start < run.end_pfn {
                runs.push(PageRun { start_pfn: start, ..*run });
            }
        }
        Self::from_runs(self.page_size, runs)
    }
}

#[cfg(test)]
mod tests;
