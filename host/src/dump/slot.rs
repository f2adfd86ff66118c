//! The unit of work that circulates through the pipeline: a batch of input
//! pages and, once a worker has been through it, how each page is stored.

use vmdump_format::kdump::PageRecord;

use crate::codec::{EncodeStats, Encoded, PageEncoder};
use crate::exclude::Counts;
use crate::exclude::content::{ContentStage, Verdict};
use crate::input::PageBatch;

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

/// One worker's state: its plugin contexts and its counts.
pub struct Worker<'c> {
    encoder: PageEncoder<'c>,
    content: ContentStage<'c>,
    /// A page with erased bytes, as it is stored.
    erased: Vec<u8>,
}

impl<'c> Worker<'c> {
    /// A worker encoding with `encoder` the pages `content` keeps.
    pub fn new(encoder: PageEncoder<'c>, content: ContentStage<'c>) -> Self {
        Self { encoder, content, erased: Vec::new() }
    }

    /// What the content stage left out.
    pub fn content_counts(&self) -> Counts {
        self.content.counts()
    }

    /// The encoder's counts.
    pub fn encode_stats(&self) -> EncodeStats {
        self.encoder.stats()
    }

    /// Encodes every page of the slot, then lets go of its input window.
    /// Pages that could not be read become [`PageRecord::Lost`]; if a page
    /// of the window faults while the batch is encoded, the whole batch is
    /// lost (what was encoded may hold zeros that are not the file's).
    pub fn encode(&mut self, slot: &mut Slot) {
        slot.pages.settle();
        self.encode_pages(slot);
        if !slot.pages.still_whole() {
            slot.pages.lose_all("a mapped page faulted while its batch was encoded (the file shrank?)");
            self.encode_pages(slot);
        }
        slot.pages.release_input();
    }

    fn encode_pages(&mut self, slot: &mut Slot) {
        slot.records.clear();
        slot.data.clear();
        // Room for every page stored raw, the most a batch can take, at
        // once: no growth by doubling past it, no copy on the way.
        slot.data.reserve_exact(slot.pages.byte_len());
        slot.records.reserve_exact(slot.pages.len());
        let mut lost = slot.pages.lost().iter().peekable();
        for index in 0..slot.pages.len() {
            while lost.next_if(|r| r.end <= index).is_some() {}
            if lost.peek().is_some_and(|r| r.contains(&index)) {
                slot.records.push(PageRecord::Lost);
                continue;
            }
            let pfn = slot.pages.first_pfn() + index as u64;
            let page = self.content.erased(pfn, slot.pages.page(index), &mut self.erased);
            let record = match self.content.judge(pfn, page) {
                Verdict::Zero => PageRecord::Zero,
                Verdict::Excluded => PageRecord::Excluded,
                Verdict::Keep => {
                    let (bytes, flags) = match self.encoder.encode(page) {
                        Encoded::Compressed(bytes, format) => (bytes, format.code()),
                        Encoded::Raw => (page, 0),
                    };
                    slot.data.extend_from_slice(bytes);
                    PageRecord::Stored { len: bytes.len() as u32, flags }
                }
            };
            slot.records.push(record);
        }
    }
}
