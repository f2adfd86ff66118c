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

/// The pfn ranges of `pieces` split files covering `[0, max_pfn)`: each
/// piece but the last ends at the first block boundary where it holds
/// `1/pieces` of the pages kept; the last ends at max_pfn. Pieces may be
/// empty when the pages are few.
///
/// # Errors
/// The filter's error; [`DumpError::Unsupported`] for zero pieces or a
/// block smaller than a page.
pub fn split_pieces(plan: &Plan<'_>, pieces: usize, block_bytes: u64) -> Result<Vec<Range<u64>>, DumpError> {
    check(plan)?;
    let block_pages = block_bytes / plan.input().page_size();
    if pieces == 0 || block_pages == 0 {
        return Err(DumpError::Unsupported(format!(
            "cannot split into {pieces} pieces of blocks of {block_bytes} bytes"
        )));
    }
    let blocks = pages_per_block(plan, block_pages)?;
    let target = blocks.iter().sum::<u64>() / pieces as u64;
    let max_pfn = plan.ram().max_pfn();
    let mut ranges = Vec::with_capacity(pieces);
    let (mut start, mut held) = (0u64, 0u64);
    for (index, pages) in blocks.iter().enumerate() {
        if ranges.len() + 1 == pieces {
            break;
        }
        held += pages;
        if held >= target.max(1) {
            let end = ((index as u64 + 1) * block_pages).min(max_pfn);
            ranges.push(start..end);
            (start, held) = (end, 0);
        }
    }
    while ranges.len() + 1 < pieces {
        ranges.push(start..start);
    }
    ranges.push(start..max_pfn);
    Ok(ranges)
}
