//! Writes a kdump-compressed file (kdump-format.md §1, checklist §11) in
//! one pass: header, sub header and notes, both bitmaps, then page data and
//! descriptors side by side. Each slot's data is already contiguous, so it
//! is written as it is (one write, no copy); descriptors gather in a cache
//! that is flushed only after the data it points at, so the descriptors on
//! disk always point at data on disk. Every write is positioned, so the
//! same sequence feeds a plain file or the flattened stream.

use vmdump_format::kdump::{DiskDumpHeader, Layout, PageDesc, SubHeader};
use vmdump_format::phys::PhysMap;

use super::slot::{PageRecord, Slot};
use crate::output::sink::{Sink, SinkError};

/// Bytes of the descriptor cache.
const CACHE_BYTES: usize = 1 << 20;
/// Bytes of bitmap built and written at a time (8 Mi pfns = 32 GiB of RAM).
const BITMAP_CHUNK: u64 = 1 << 20;

/// The streaming part of the writer, once the headers and bitmaps are out.
pub struct KdumpWriter<'s> {
    sink: &'s mut dyn Sink,
    page_size: u64,
    /// Offset of the shared zero page, when dump level bit 1 is set.
    zero_page: Option<u64>,
    descs: Vec<u8>,
    descs_at: u64,
    /// Where the next page data goes.
    data_end: u64,
    expected_pages: u64,
    pages: u64,
}

/// What goes before the page data.
pub struct Preamble<'a> {
    /// The file header.
    pub header: DiskDumpHeader,
    /// The sub header.
    pub sub_header: SubHeader,
    /// The vmcore's notes, copied verbatim.
    pub notes: &'a [u8],
    /// Offsets and sizes.
    pub layout: &'a Layout,
    /// RAM pages (1st bitmap); every RAM page is dumpable at this level.
    pub phys: &'a PhysMap,
    /// Write the shared zero page (dump level bit 1).
    pub exclude_zero: bool,
}

/// Sets the bits of RAM pfns in `[first, first + 8 * out.len())`.
fn fill_bitmap(phys: &PhysMap, first: u64, out: &mut [u8]) {
    out.fill(0);
    let end = first + 8 * out.len() as u64;
    for run in phys.runs().iter().filter(|r| r.end_pfn > first && r.start_pfn < end) {
        for pfn in run.start_pfn.max(first)..run.end_pfn.min(end) {
            let bit = pfn - first;
            out[(bit / 8) as usize] |= 1 << (bit % 8);
        }
    }
}

fn write_bitmaps(sink: &mut dyn Sink, layout: &Layout, phys: &PhysMap) -> Result<(), SinkError> {
    let mut chunk = vec![0u8; BITMAP_CHUNK.min(layout.bitmap_len) as usize];
    let mut done = 0;
    while done < layout.bitmap_len {
        let len = (layout.bitmap_len - done).min(BITMAP_CHUNK) as usize;
        fill_bitmap(phys, done * 8, &mut chunk[..len]);
        sink.write_at(layout.bitmap1_offset + done, &chunk[..len])?;
        sink.write_at(layout.bitmap2_offset + done, &chunk[..len])?;
        done += len as u64;
    }
    Ok(())
}

impl<'s> KdumpWriter<'s> {
    /// Writes everything before the page data and returns the writer.
    ///
    /// # Errors
    /// The sink's error.
    pub fn begin(sink: &'s mut dyn Sink, pre: &Preamble<'_>) -> Result<Self, SinkError> {
        let layout = pre.layout;
        sink.write_at(0, &pre.header.encode())?;
        sink.write_at(u64::from(layout.block_size), &pre.sub_header.encode())?;
        sink.write_at(layout.offset_note, pre.notes)?;
        write_bitmaps(sink, layout, pre.phys)?;
        let page_size = u64::from(layout.block_size);
        let mut writer = Self {
            sink,
            page_size,
            zero_page: None,
            descs: Vec::with_capacity(CACHE_BYTES),
            descs_at: layout.page_desc_offset,
            data_end: layout.data_offset,
            expected_pages: layout.num_dumpable,
            pages: 0,
        };
        if pre.exclude_zero {
            writer.zero_page = Some(layout.data_offset);
            writer.sink.write_at(layout.data_offset, &vec![0; page_size as usize])?;
            writer.data_end += page_size;
        }
        Ok(writer)
    }

    /// Writes the data of one encoded slot and queues its descriptors.
    ///
    /// # Errors
    /// The sink's error.
    pub fn write_slot(&mut self, slot: &Slot) -> Result<(), SinkError> {
        self.sink.write_at(self.data_end, &slot.data)?;
        let mut offset = self.data_end;
        for record in &slot.records {
            let desc = match *record {
                PageRecord::Zero => PageDesc {
                    offset: self.zero_page.expect("zero records only when zero pages are excluded"),
                    size: self.page_size as u32,
                    ..PageDesc::default()
                },
                PageRecord::Stored { len, format } => {
                    offset += u64::from(len);
                    PageDesc { offset: offset - u64::from(len), size: len, flags: format.map_or(0, |f| f.code()), page_flags: 0 }
                }
            };
            self.descs.extend_from_slice(&desc.encode());
        }
        self.data_end = offset;
        self.pages += slot.records.len() as u64;
        if self.descs.len() >= CACHE_BYTES {
            self.flush_descriptors()?;
        }
        Ok(())
    }

    /// Writes the queued descriptors (their data is already written).
    fn flush_descriptors(&mut self) -> Result<(), SinkError> {
        self.sink.write_at(self.descs_at, &self.descs)?;
        self.descs_at += self.descs.len() as u64;
        self.descs.clear();
        Ok(())
    }

    /// Pages written so far.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// Descriptors the layout has room for.
    pub fn expected_pages(&self) -> u64 {
        self.expected_pages
    }

    /// Flushes and closes the sink. Returns the bytes written.
    ///
    /// # Errors
    /// The sink's error.
    pub fn finish(mut self) -> Result<u64, SinkError> {
        self.flush_descriptors()?;
        self.sink.finish()?;
        Ok(self.sink.bytes_written())
    }
}
