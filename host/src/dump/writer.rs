//! Writes a kdump-compressed file (kdump-format.md §1, checklist §11): both
//! bitmaps first (their count places the data), then header, sub header and
//! notes, then page data and
//! descriptors side by side. Each slot's data is already contiguous, so it
//! is written as it is (one write, no copy); descriptors gather in a cache
//! that is flushed only after the data it points at, so the descriptors on
//! disk always point at data on disk. Every write is positioned, so the
//! same sequence feeds a plain file or the flattened stream.

use vmdump_format::kdump::{DiskDumpHeader, Layout, PageDesc, SubHeader};
use vmdump_format::phys::PhysMap;

use super::DumpError;
use super::filter::{WINDOW_PFNS, WindowFilter};
use crate::classify::ClassCounts;
use super::slot::{PageRecord, Slot};
use crate::output::sink::{Sink, SinkError};

/// Bytes of the descriptor cache.
const CACHE_BYTES: usize = 1 << 20;

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

/// Writes both bitmaps window by window: the 1st is RAM, the 2nd RAM less
/// what `filter` excludes. Returns the pages in the file (bits of the 2nd).
///
/// # Errors
/// The sink's or the filter's error.
pub fn write_bitmaps(
    sink: &mut dyn Sink,
    layout: &Layout,
    phys: &PhysMap,
    mut filter: Option<&mut (dyn WindowFilter + '_)>,
    counts: &mut ClassCounts,
) -> Result<u64, DumpError> {
    let chunk_bytes = (WINDOW_PFNS / 8) as usize;
    let mut ram = vec![0u8; chunk_bytes.min(layout.bitmap_len as usize)];
    let mut dumpable = ram.clone();
    let mut excluded = Vec::new();
    let (mut done, mut pages) = (0u64, 0u64);
    while done < layout.bitmap_len {
        let len = (layout.bitmap_len - done).min(chunk_bytes as u64) as usize;
        let first = done * 8;
        fill_bitmap(phys, first, &mut ram[..len]);
        dumpable[..len].copy_from_slice(&ram[..len]);
        if let Some(filter) = filter.as_deref_mut() {
            let end = (first + 8 * len as u64).min(phys.max_pfn());
            excluded.clear();
            excluded.resize((end.saturating_sub(first)).div_ceil(64) as usize, 0u64);
            if end > first {
                filter.exclude(first..end, &|pfn| phys.is_ram(pfn), &mut excluded, counts)?;
            }
            let words = excluded.iter().flat_map(|w| w.to_le_bytes());
            dumpable[..len].iter_mut().zip(words).for_each(|(d, x)| *d &= !x);
        }
        pages += dumpable[..len].iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
        sink.write_at(layout.bitmap1_offset + done, &ram[..len])?;
        sink.write_at(layout.bitmap2_offset + done, &dumpable[..len])?;
        done += len as u64;
    }
    Ok(pages)
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
