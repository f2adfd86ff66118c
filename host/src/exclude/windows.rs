//! Windows of pfns: the metadata filters composed into one cursor, the
//! walk of a pass over the whole machine, and the kept pfn ranges the
//! reader reads. One bitset per window in memory, however large or
//! fragmented the machine.

use std::ops::Range;

use vmdump_format::phys::{PageRun, PhysMap};

use super::{Counts, ExcludeError, WindowFilter};
use crate::classify::ClassCounts;

/// Pfns per filter window: one 1 MiB bitset (32 GiB of 4 KiB pages).
pub const WINDOW_PFNS: u64 = 1 << 23;

/// Whether bit `i` of `bits` is set.
pub fn bit(bits: &[u64], i: u64) -> bool {
    bits[(i / 64) as usize] >> (i % 64) & 1 == 1
}

/// Metadata filters in one: a page is excluded when one of them excludes
/// it; each is asked, in order, only about the pages the earlier ones kept
/// (the first that excludes a page counts it).
pub struct Composed<'a> {
    cursors: Vec<Box<dyn WindowFilter + 'a>>,
    scratch: Vec<u64>,
}

impl<'a> Composed<'a> {
    /// The cursors, in the order they decide.
    pub fn new(cursors: Vec<Box<dyn WindowFilter + 'a>>) -> Self {
        Self { cursors, scratch: Vec::new() }
    }
}

impl WindowFilter for Composed<'_> {
    fn exclude(
        &mut self,
        window: Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        counts: &mut ClassCounts,
    ) -> Result<(), ExcludeError> {
        for cursor in &mut self.cursors {
            let (before, start) = (&*excluded, window.start);
            let still_in = |pfn: u64| is_ram(pfn) && !bit(before, pfn - start);
            self.scratch.clear();
            self.scratch.resize(excluded.len(), 0);
            cursor.exclude(window.clone(), &still_in, &mut self.scratch, counts)?;
            excluded.iter_mut().zip(&self.scratch).for_each(|(a, b)| *a |= b);
        }
        Ok(())
    }

    fn plugin_counts(&self) -> Vec<(String, u64)> {
        self.cursors.iter().flat_map(|c| c.plugin_counts()).collect()
    }
}

/// One window of the walk: RAM pfns and those the filter keeps, as bitmaps.
pub struct Window<'b> {
    /// Pfn of bit 0.
    pub first_pfn: u64,
    /// Byte offset of the window in a bitmap of the machine.
    pub offset: u64,
    /// RAM bits.
    pub ram: &'b [u8],
    /// Kept bits.
    pub kept: &'b [u8],
}

impl Window<'_> {
    /// Kept pages with pfns in `pfns`.
    pub fn kept_in(&self, pfns: &Range<u64>) -> u64 {
        let bits = 8 * self.kept.len() as u64;
        let from = pfns.start.saturating_sub(self.first_pfn).min(bits);
        let to = pfns.end.saturating_sub(self.first_pfn).min(bits);
        count_bits(self.kept, from, to)
    }
}

/// Sets the bits of RAM pfns in `[first, first + 8 * out.len())`.
fn fill_ram(ram: &PhysMap, first: u64, out: &mut [u8]) {
    out.fill(0);
    let end = first + 8 * out.len() as u64;
    for run in ram.runs().iter().filter(|r| r.end_pfn > first && r.start_pfn < end) {
        for pfn in run.start_pfn.max(first)..run.end_pfn.min(end) {
            let bit = pfn - first;
            out[(bit / 8) as usize] |= 1 << (bit % 8);
        }
    }
}

/// Number of set bits of `bits` with index in `from..to`.
fn count_bits(bits: &[u8], from: u64, to: u64) -> u64 {
    let to = to.min(8 * bits.len() as u64);
    let (mut n, mut i) = (0, from);
    while i < to {
        if i % 8 == 0 && to - i >= 8 {
            n += u64::from(bits[(i / 8) as usize].count_ones());
            i += 8;
        } else {
            n += u64::from(bits[(i / 8) as usize] >> (i % 8) & 1);
            i += 1;
        }
    }
    n
}

/// One pass of `filter` over the whole machine, window by window: the
/// bitmaps of each window to `each` (whose error it returns), the
/// exclusions counted in `counts`. `bitmap_len` is the bytes of one bitmap.
///
/// # Errors
/// The filter's error, or `each`'s.
pub fn for_each_window<E: From<ExcludeError>>(
    bitmap_len: u64,
    ram: &PhysMap,
    mut filter: Option<&mut (dyn WindowFilter + '_)>,
    counts: &mut ClassCounts,
    mut each: impl FnMut(Window<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let chunk_bytes = (WINDOW_PFNS / 8) as usize;
    let mut ram_bits = vec![0u8; chunk_bytes.min(bitmap_len as usize)];
    let mut kept = ram_bits.clone();
    let mut excluded = Vec::new();
    let mut done = 0u64;
    while done < bitmap_len {
        let len = (bitmap_len - done).min(chunk_bytes as u64) as usize;
        let first = done * 8;
        fill_ram(ram, first, &mut ram_bits[..len]);
        kept[..len].copy_from_slice(&ram_bits[..len]);
        if let Some(filter) = filter.as_deref_mut() {
            let end = (first + 8 * len as u64).min(ram.max_pfn());
            excluded.clear();
            excluded.resize((end.saturating_sub(first)).div_ceil(64) as usize, 0u64);
            if end > first {
                filter.exclude(first..end, &|pfn| ram.is_ram(pfn), &mut excluded, counts)?;
            }
            let words = excluded.iter().flat_map(|w| w.to_le_bytes());
            kept[..len].iter_mut().zip(words).for_each(|(d, x)| *d &= !x);
        }
        each(Window { first_pfn: first, offset: done, ram: &ram_bits[..len], kept: &kept[..len] })?;
        done += len as u64;
    }
    Ok(())
}

/// The pfn ranges to dump: RAM minus what the filter excludes, produced
/// lazily window by window.
pub struct DumpableRanges<'a> {
    ram: &'a PhysMap,
    cursor: Option<Box<dyn WindowFilter + 'a>>,
    excluded: Vec<u64>,
    window: Range<u64>,
    next_pfn: u64,
    counts: ClassCounts,
}

impl<'a> DumpableRanges<'a> {
    /// The ranges of `ram` that `cursor` keeps (all of them without one).
    pub fn new(ram: &'a PhysMap, cursor: Option<Box<dyn WindowFilter + 'a>>) -> Self {
        let start = ram.runs().first().map_or(0, |r| r.start_pfn);
        let counts = ClassCounts::default();
        Self { ram, cursor, excluded: Vec::new(), window: 0..0, next_pfn: start, counts }
    }

    fn load_window(&mut self, pfn: u64) -> Result<(), ExcludeError> {
        let start = pfn - pfn % WINDOW_PFNS;
        let end = (start + WINDOW_PFNS).min(self.ram.max_pfn());
        self.excluded.clear();
        self.excluded.resize((end - start).div_ceil(64) as usize, 0);
        let (ram, cursor) = (self.ram, self.cursor.as_mut().expect("loaded only with a cursor"));
        cursor.exclude(start..end, &|pfn| ram.is_ram(pfn), &mut self.excluded, &mut self.counts)?;
        self.window = start..end;
        Ok(())
    }

    fn kept(&self, pfn: u64) -> bool {
        !bit(&self.excluded, pfn - self.window.start)
    }

    /// What the cursor left out so far.
    pub fn counts(&self) -> Counts {
        let plugins = self.cursor.as_ref().map(|c| c.plugin_counts()).unwrap_or_default();
        Counts { classes: self.counts, plugins, zero: 0 }
    }

    fn next_range(&mut self) -> Result<Option<Range<u64>>, ExcludeError> {
        loop {
            let Some(run) = self.ram.run_of(self.next_pfn).copied().or_else(|| self.next_run()) else {
                return Ok(None);
            };
            let pfn = self.next_pfn.max(run.start_pfn);
            if self.cursor.is_none() {
                self.next_pfn = run.end_pfn;
                return Ok(Some(pfn..run.end_pfn));
            }
            if !self.window.contains(&pfn) {
                self.load_window(pfn)?;
            }
            let end = run.end_pfn.min(self.window.end);
            let Some(first) = (pfn..end).find(|&p| self.kept(p)) else {
                self.next_pfn = end;
                continue;
            };
            let last = (first..end).find(|&p| !self.kept(p)).unwrap_or(end);
            self.next_pfn = last;
            return Ok(Some(first..last));
        }
    }

    /// The first run after `next_pfn`, moving `next_pfn` to its start.
    fn next_run(&mut self) -> Option<PageRun> {
        let run = *self.ram.runs().iter().find(|r| r.start_pfn >= self.next_pfn)?;
        self.next_pfn = run.start_pfn;
        Some(run)
    }
}

impl Iterator for DumpableRanges<'_> {
    type Item = Result<Range<u64>, ExcludeError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_range().transpose()
    }
}
