//! The first pass's output: the 1st bitmap of a kdump-compressed file,
//! written window by window as the exclusion stages decide, with the count
//! of pages kept that places the data (`vmdump_format::kdump::writer`
//! writes the rest).

use std::ops::Range;

use vmdump_format::kdump::Layout;
use vmdump_format::phys::PhysMap;
use vmdump_format::sink::Sink;

use super::DumpError;
use crate::classify::ClassCounts;
use crate::exclude::{WINDOW_PFNS, WindowFilter, for_each_window};
use crate::interrupt::Interrupt;

/// What the first pass counted: the pages the metadata filter keeps, in
/// the whole machine and in the split piece being written.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeptPages {
    /// In the whole machine: the room the descriptor table needs.
    pub total: u64,
    /// In the split piece (equal to `total` without one).
    pub in_piece: u64,
}

/// Writes the 1st bitmap (RAM) window by window and counts the RAM pages
/// `filter` keeps. The 2nd bitmap gets zeros now and its real bits from
/// the writer, once pages have their descriptors; except for a split
/// piece, whose 2nd bitmap is the whole machine's (the same in every
/// piece, kdump-format.md §2.3), written here.
///
/// # Errors
/// The sink's or the filter's error; [`DumpError::Interrupted`].
pub fn write_bitmaps(
    sink: &mut dyn Sink,
    layout: &Layout,
    ram: &PhysMap,
    (filter, interrupt): (Option<&mut (dyn WindowFilter + '_)>, &Interrupt),
    counts: &mut ClassCounts,
    piece: Option<&Range<u64>>,
) -> Result<KeptPages, DumpError> {
    let mut kept = KeptPages::default();
    let zeros = vec![0u8; ((WINDOW_PFNS / 8) as usize).min(layout.bitmap_len as usize)];
    for_each_window(layout.bitmap_len, ram, filter, counts, |w| {
        if let Some(signal) = interrupt.caught() {
            return Err(DumpError::Interrupted(signal));
        }
        kept.total += w.kept_in(&(0..u64::MAX));
        kept.in_piece += w.kept_in(piece.unwrap_or(&(0..u64::MAX)));
        let at = layout.bitmap1_offset + w.offset;
        sink.write_at(at, w.ram)?;
        sink.settle(at..at + w.ram.len() as u64)?;
        // Zeros without a piece: the blocks are taken while there is room,
        // so an incomplete dump can still close its bitmap.
        let second = if piece.is_some() { w.kept } else { &zeros[..w.kept.len()] };
        sink.write_at(layout.bitmap2_offset + w.offset, second)?;
        Ok::<(), DumpError>(())
    })?;
    Ok(kept)
}
