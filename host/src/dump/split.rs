//! Where the pieces of a split dump begin and end (kdump-format.md §2.3):
//! the machine is cut at split-block boundaries so that each piece holds
//! about the same number of pages.

use std::ops::Range;

use super::DumpError;
use crate::classify::ClassCounts;
use crate::exclude::for_each_window;
use crate::plan::{Format, Plan};

/// makedumpfile's default split block: 1 GiB.
pub const DEFAULT_SPLITBLOCK_BYTES: u64 = 1 << 30;

/// Refuses what pieces cannot be: ELF, or content filter plugins (the
/// pieces share one 2nd bitmap, written before any page is read; the
/// metadata stages decide before that, the content stage only after).
///
/// # Errors
/// [`DumpError::Unsupported`] saying why.
pub fn check(plan: &Plan<'_>) -> Result<(), DumpError> {
    if plan.format() == Format::Elf {
        return Err(DumpError::Unsupported("split pieces are kdump files, not ELF".into()));
    }
    if !plan.exclusion().plugins().content.is_empty() {
        return Err(DumpError::Unsupported(
            "filter plugins that read the page bytes cannot be used with --split: the pieces share one \
             2nd bitmap, written before any page is read"
                .into(),
        ));
    }
    Ok(())
}

/// Pages the metadata stages keep in each block of `block_pages` pfns.
fn pages_per_block(plan: &Plan<'_>, block_pages: u64) -> Result<Vec<u64>, DumpError> {
    let max_pfn = plan.ram().max_pfn();
    let mut blocks = vec![0u64; max_pfn.div_ceil(block_pages) as usize];
    let mut cursor = plan.exclusion().metadata().map(|f| f.cursor()).transpose()?;
    let mut counts = ClassCounts::default();
    for_each_window(max_pfn.div_ceil(8), plan.ram(), cursor.as_deref_mut(), &mut counts, |w| {
        let end = (w.first_pfn + 8 * w.kept.len() as u64).min(max_pfn);
        let mut pfn = w.first_pfn;
        while pfn < end {
            let block_end = ((pfn / block_pages + 1) * block_pages).min(end);
            blocks[(pfn / block_pages) as usize] += w.kept_in(&(pfn..block_end));
            pfn = block_end;
        }
        Ok::<(), DumpError>(())
    })?;
    Ok(blocks)
}

/// The pfn ranges of `pieces` split files covering `[0, max_pfn)`, cut
/// at block boundaries: each piece but the last ends at the first boundary
/// where it holds `1/pieces` of the pages kept, or where the pieces after
/// it would have no block left. No piece is empty (makedumpfile's
/// `--reassemble` refuses a set with an empty piece); when the machine
/// has fewer blocks than pieces, the blocks are made smaller.
///
/// # Errors
/// The filter's error; [`DumpError::Unsupported`] for zero pieces, a
/// block smaller than a page, or fewer pfns than pieces.
pub fn split_pieces(plan: &Plan<'_>, pieces: usize, block_bytes: u64) -> Result<Vec<Range<u64>>, DumpError> {
    check(plan)?;
    let max_pfn = plan.ram().max_pfn();
    let block_pages = block_bytes / plan.input().page_size();
    if pieces == 0 || block_pages == 0 || max_pfn < pieces as u64 {
        return Err(DumpError::Unsupported(format!(
            "cannot split {max_pfn} pfns into {pieces} pieces of blocks of {block_bytes} bytes"
        )));
    }
    let block_pages = block_pages.min(max_pfn / pieces as u64);
    Ok(cut(&pages_per_block(plan, block_pages)?, pieces, block_pages, max_pfn))
}

/// The piece ranges of blocks holding `blocks[i]` kept pages each (at
/// least `pieces` blocks).
fn cut(blocks: &[u64], pieces: usize, block_pages: u64, max_pfn: u64) -> Vec<Range<u64>> {
    let target = (blocks.iter().sum::<u64>() / pieces as u64).max(1);
    let mut ranges = Vec::with_capacity(pieces);
    let (mut start, mut held) = (0u64, 0u64);
    for (index, pages) in blocks.iter().enumerate() {
        if ranges.len() + 1 == pieces {
            break;
        }
        held += pages;
        let blocks_after = blocks.len() - index - 1;
        if held >= target || blocks_after == pieces - ranges.len() - 1 {
            let end = (index as u64 + 1) * block_pages;
            ranges.push(start..end);
            (start, held) = (end, 0);
        }
    }
    ranges.push(start..max_pfn);
    ranges
}

#[cfg(test)]
mod tests {
    use super::cut;

    fn check(blocks: &[u64], pieces: usize) -> Vec<std::ops::Range<u64>> {
        let max_pfn = blocks.len() as u64 * 4 - 1;
        let ranges = cut(blocks, pieces, 4, max_pfn);
        assert_eq!(ranges.len(), pieces, "{blocks:?}");
        assert!(ranges.iter().all(|r| r.start < r.end), "an empty piece: {ranges:?}");
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start) && ranges[pieces - 1].end == max_pfn);
        ranges
    }

    #[test]
    fn pages_in_one_block_still_give_every_piece_a_block() {
        assert_eq!(check(&[0, 9, 0, 0, 0], 3), [0..8, 8..16, 16..19]);
        assert_eq!(check(&[9, 0, 0], 3), [0..4, 4..8, 8..11]);
        assert_eq!(check(&[0, 0, 0], 3), [0..4, 4..8, 8..11]);
    }

    #[test]
    fn pieces_hold_about_equal_pages() {
        assert_eq!(check(&[3, 3, 3, 3, 3, 3], 3), [0..8, 8..16, 16..23]);
        assert_eq!(check(&[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 8], 2).len(), 2);
    }
}
