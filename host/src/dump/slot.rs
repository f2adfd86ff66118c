//! The unit of work that circulates through the pipeline: a batch of input
//! pages and, once a worker has been through it, how each page is stored.

use vmdump_sdk::KdumpFormat;

use crate::codec::{EncodeStats, Encoded, PageEncoder};
use crate::filters::FilterStage;
use crate::input::PageBatch;

/// How one page goes into the dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageRecord {
    /// All zero, excluded by dump level bit 1: points at the shared zero page.
    Zero,
    /// Left out by a content filter: no descriptor, cleared in the 2nd bitmap.
    Excluded,
    /// `len` bytes in the batch's data, compressed with `format` or raw (None).
    Stored {
        /// Bytes stored.
        len: u32,
        /// The compression, or `None` for a raw page.
        format: Option<KdumpFormat>,
    },
}

/// A reusable slot: input pages in, records and stored bytes out.
#[derive(Default)]
pub struct Slot {
    /// The input pages.
    pub pages: PageBatch,
    /// One record per page, in pfn order.
    pub records: Vec<PageRecord>,
    /// The stored bytes of every `Stored` record, back to back.
    pub data: Vec<u8>,
}

/// Whether every byte of `page` is zero. OR-reduces 64-byte chunks, which
/// the compiler vectorises (dependencies.md §4: ~8 GiB/s, far from being the
/// bottleneck); an early exit per chunk keeps non-zero pages cheap.
pub fn is_zero_page(page: &[u8]) -> bool {
    let mut chunks = page.chunks_exact(64);
    let whole = chunks.all(|chunk| chunk.iter().fold(0u8, |acc, &b| acc | b) == 0);
    whole && chunks.remainder().iter().all(|&b| b == 0)
}

/// One worker's state: its plugin contexts and its counts.
pub struct Worker<'c> {
    encoder: PageEncoder<'c>,
    exclude_zero: bool,
    filters: FilterStage<'c>,
    page_size: u64,
    zero_pages: u64,
}

impl<'c> Worker<'c> {
    /// A worker encoding with `encoder`; zero pages are excluded when
    /// `exclude_zero` (dump level bit 1), then what the content `filters` say.
    pub fn new(
        encoder: PageEncoder<'c>,
        exclude_zero: bool,
        filters: FilterStage<'c>,
        page_size: u64,
    ) -> Self {
        Self { encoder, exclude_zero, filters, page_size, zero_pages: 0 }
    }

    /// Pages each content filter excluded, by name.
    pub fn filter_counts(&self) -> Vec<(String, u64)> {
        self.filters.counts()
    }

    /// Zero pages seen, and the encoder's counts.
    pub fn counts(&self) -> (u64, EncodeStats) {
        (self.zero_pages, self.encoder.stats())
    }

    /// Encodes every page of the slot, then lets go of its input window.
    pub fn encode(&mut self, slot: &mut Slot) {
        slot.records.clear();
        slot.data.clear();
        for index in 0..slot.pages.len() {
            let page = slot.pages.page(index);
            if self.exclude_zero && is_zero_page(page) {
                self.zero_pages += 1;
                slot.records.push(PageRecord::Zero);
                continue;
            }
            let pfn = slot.pages.first_pfn() + index as u64;
            if self.filters.excludes(pfn, pfn * self.page_size, Some(page), None) {
                slot.records.push(PageRecord::Excluded);
                continue;
            }
            let (bytes, format) = match self.encoder.encode(page) {
                Encoded::Compressed(bytes, format) => (bytes, Some(format)),
                Encoded::Raw => (page, None),
            };
            slot.data.extend_from_slice(bytes);
            slot.records.push(PageRecord::Stored { len: bytes.len() as u32, format });
        }
        slot.pages.release_input();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_check_sees_a_single_bit_anywhere() {
        let mut page = vec![0u8; 4096];
        assert!(is_zero_page(&page));
        for at in [0, 63, 64, 2047, 4095] {
            page[at] = 0x10;
            assert!(!is_zero_page(&page), "byte {at}");
            page[at] = 0;
        }
        assert!(!is_zero_page(&[0, 0, 1]));
    }
}
