//! What a dump will hold and how big it will be, before it is made
//! (`vmdump estimate`, makedumpfile's `--dry-run`).
//!
//! The pages of each class come from the same pass over the struct pages
//! that a dump makes, so the pages in the file are exact. Zero pages and
//! the bytes of the data are estimated from a sample of the kept pages:
//! a systematic sample, one page every `kept / n` in pfn order from a
//! random start, so that every part of memory is represented in
//! proportion; each sampled page is read and compressed with the dump's
//! codec, as the dump would store it. The error given is the 95 % bound of
//! the mean of a simple random sample of that size (1.96 standard errors,
//! with the finite population correction): a systematic sample does at
//! least as well unless memory repeats with the sample's period.

use serde::Serialize;
use vmdump_format::kdump::Layout;

use crate::classify::ClassCounts;
use crate::codec::{Encoded, PageEncoder};
use crate::dump::DumpError;
use crate::exclude::for_each_window;
use crate::level::DumpLevel;
use crate::plan::Plan;

/// Pages sampled by default: a few seconds of zlib on one core.
pub const DEFAULT_SAMPLE_PAGES: u64 = 16_384;

/// The pages a plan keeps and what its stages excluded, by class.
#[derive(Debug, Clone, Copy, Default)]
pub struct Kept {
    /// Pages in the file (set bits of the 2nd bitmap).
    pub pages: u64,
    /// Pages excluded, by class.
    pub excluded: ClassCounts,
}

/// What the sampled pages cost.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Sample {
    /// Pages sampled.
    pub pages: u64,
    /// Of them, pages of zeros.
    pub zero: u64,
    /// Bytes they take in the file, as the dump stores them.
    pub bytes: u64,
    /// Sum of the squares of each page's bytes (for the variance).
    #[serde(skip)]
    pub bytes_squared: f64,
    /// Pages that could not be read (counted at a full page).
    pub unreadable: u64,
}

/// The estimate of one dump.
#[derive(Debug, Clone, Serialize)]
pub struct SizeEstimate {
    /// The dump level.
    pub dump_level: u8,
    /// The codec, `none` for raw pages.
    pub codec: String,
    /// Pages in the file (exact).
    pub pages_in_file: u64,
    /// Zero pages among them (estimated).
    pub zero_pages: u64,
    /// Bytes before the page data: headers, notes, bitmaps, descriptors.
    pub metadata_bytes: u64,
    /// The file's size, estimated.
    pub bytes: u64,
    /// The 95 % bound of the error of `bytes`.
    pub error_bytes: u64,
    /// The sample.
    pub sample: Sample,
}

/// One pass of the plan's metadata stages: the pages kept, the classes
/// excluded.
///
/// # Errors
/// The filter's error.
pub fn kept(plan: &Plan<'_>) -> Result<Kept, DumpError> {
    let mut cursor = plan.exclusion().metadata().map(|f| f.cursor()).transpose()?;
    let mut kept = Kept::default();
    let bitmap_len = plan.ram().max_pfn().div_ceil(8);
    for_each_window(bitmap_len, plan.ram(), cursor.as_deref_mut(), &mut kept.excluded, |w| {
        kept.pages += w.kept.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
        Ok::<(), DumpError>(())
    })?;
    Ok(kept)
}

/// The pfns of a systematic sample of `n` of the plan's `kept` pages, from
/// a start drawn from `seed`.
///
/// # Errors
/// The filter's error.
pub fn sample_pfns(plan: &Plan<'_>, kept: u64, n: u64, seed: u64) -> Result<Vec<u64>, DumpError> {
    let n = n.min(kept);
    if n == 0 {
        return Ok(Vec::new());
    }
    let stride = kept as f64 / n as f64;
    let start = (splitmix(seed) >> 11) as f64 / (1u64 << 53) as f64 * stride;
    let target = |i: u64| (start + i as f64 * stride) as u64;
    let mut cursor = plan.exclusion().metadata().map(|f| f.cursor()).transpose()?;
    let (mut pfns, mut seen) = (Vec::with_capacity(n as usize), 0u64);
    let mut counts = ClassCounts::default();
    let bitmap_len = plan.ram().max_pfn().div_ceil(8);
    for_each_window(bitmap_len, plan.ram(), cursor.as_deref_mut(), &mut counts, |w| {
        let ones: u64 = w.kept.iter().map(|b| u64::from(b.count_ones())).sum();
        if (pfns.len() as u64) < n && target(pfns.len() as u64) < seen + ones {
            for (byte_index, &byte) in w.kept.iter().enumerate() {
                for bit in (0..8).filter(|bit| byte >> bit & 1 != 0) {
                    if (pfns.len() as u64) < n && target(pfns.len() as u64) == seen {
                        pfns.push(w.first_pfn + 8 * byte_index as u64 + bit);
                    }
                    seen += 1;
                }
            }
        } else {
            seen += ones;
        }
        Ok::<(), DumpError>(())
    })?;
    Ok(pfns)
}

/// Reads the pages at `pfns` and stores each as the dump would: nothing
/// for a zero page when `level` excludes them, else compressed by
/// `encoder` or raw.
pub fn measure(plan: &Plan<'_>, pfns: &[u64], level: DumpLevel, encoder: &mut PageEncoder<'_>) -> Sample {
    let page_size = plan.input().page_size();
    let mut page = vec![0u8; page_size as usize];
    let mut sample = Sample::default();
    for &pfn in pfns {
        let bytes = if plan.input().read_phys(pfn * page_size, &mut page).is_err() {
            sample.unreadable += 1;
            page_size
        } else if page.iter().all(|&b| b == 0) && {
            sample.zero += 1;
            level.excludes_zero_pages()
        } {
            0
        } else {
            match encoder.encode(&page) {
                Encoded::Compressed(data, _) => data.len() as u64,
                Encoded::Raw => page_size,
            }
        };
        sample.pages += 1;
        sample.bytes += bytes;
        sample.bytes_squared += (bytes as f64).powi(2);
    }
    sample
}

/// The size of a kdump file of `pages_in_file` pages, from `sample`.
///
/// # Errors
/// A layout that cannot be (notes too large).
pub fn size_estimate(plan: &Plan<'_>, pages_in_file: u64, sample: Sample) -> Result<SizeEstimate, DumpError> {
    let (input, level) = (plan.input(), plan.level());
    let page_size = input.page_size();
    let block = u32::try_from(page_size).map_err(|_| DumpError::Unsupported("page size".into()))?;
    let layout = Layout::from_notes(plan.ram().max_pfn(), block, input.notes(), pages_in_file)?;
    let shared_zero_page = if level.excludes_zero_pages() { page_size } else { 0 };
    let metadata_bytes = layout.data_offset + shared_zero_page + plan.eraseinfo().len() as u64;
    let (n, k) = (sample.pages as f64, pages_in_file as f64);
    let mean = if sample.pages == 0 { 0.0 } else { sample.bytes as f64 / n };
    let variance =
        if sample.pages < 2 { 0.0 } else { (sample.bytes_squared - n * mean * mean).max(0.0) / (n - 1.0) };
    let correction = if k > 0.0 { (1.0 - n / k).max(0.0) } else { 0.0 };
    let error = if sample.pages == 0 { 0.0 } else { 1.96 * k * (variance / n * correction).sqrt() };
    let zero_share = if sample.pages == 0 { 0.0 } else { sample.zero as f64 / n };
    Ok(SizeEstimate {
        dump_level: level.bits(),
        codec: plan.codec().map_or("none".into(), |c| c.name().to_owned()),
        pages_in_file,
        zero_pages: (zero_share * k).round() as u64,
        metadata_bytes,
        bytes: metadata_bytes + (mean * k).round() as u64,
        error_bytes: error.round() as u64,
        sample,
    })
}

/// The pages in the file at `level`, from the classes a -d 31 pass
/// excluded: exact at the levels that classify nothing (every RAM page)
/// and at 31; elsewhere exact while no page falls in two classes (a page
/// both in the page cache and of hugetlbfs counts as cache at 31).
pub fn pages_at(level: DumpLevel, ram_pages: u64, at_31: &ClassCounts) -> u64 {
    if level.classified().is_empty() {
        return ram_pages;
    }
    let mut excluded = at_31.hwpoison + at_31.offline;
    let classes = [
        (DumpLevel::CACHE_PRIVATE, at_31.cache_private),
        (DumpLevel::USER, at_31.user),
        (DumpLevel::FREE, at_31.free),
    ];
    excluded += classes.iter().filter(|(bit, _)| level.contains(*bit)).map(|(_, n)| n).sum::<u64>();
    // Bit 4 leaves out the whole page cache, bit 2 the part without private data.
    if level.contains(DumpLevel::CACHE) || level.contains(DumpLevel::CACHE_PRIVATE) {
        excluded += at_31.cache;
    }
    ram_pages.saturating_sub(excluded)
}

/// splitmix64 of `x`: the sample's start.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_leave_out_the_classes_of_their_bits() {
        let at_31 = ClassCounts {
            cache: 10,
            cache_private: 20,
            user: 40,
            free: 80,
            hwpoison: 1,
            ..Default::default()
        };
        assert_eq!(pages_at(DumpLevel::new(0).unwrap(), 1000, &at_31), 1000);
        assert_eq!(pages_at(DumpLevel::new(1).unwrap(), 1000, &at_31), 1000);
        assert_eq!(pages_at(DumpLevel::new(2).unwrap(), 1000, &at_31), 1000 - 10 - 1);
        assert_eq!(pages_at(DumpLevel::new(4).unwrap(), 1000, &at_31), 1000 - 30 - 1);
        assert_eq!(pages_at(DumpLevel::new(16).unwrap(), 1000, &at_31), 1000 - 80 - 1);
        assert_eq!(pages_at(DumpLevel::new(31).unwrap(), 1000, &at_31), 1000 - 151);
    }
}
