//! Writing a kdump-compressed file (kdump-format.md §1, checklist §11), the
//! counterpart of [`super::reader`]. The caller writes the 1st bitmap
//! first, with the count of pages it keeps (that places the data after one
//! descriptor each); [`KdumpWriter::begin`] writes header, sub header and
//! notes; then page data and descriptors go side by side, and the 2nd
//! bitmap window by window from the pages that really got a descriptor (a
//! page dropped late keeps its descriptor slot unused, a gap readers never
//! look at, as in split dumps).
//!
//! Each run's data is already contiguous, so it is written as it is (one
//! write, no copy); descriptors gather in a cache that is flushed only after
//! the data it points at, so the descriptors on disk always point at data on
//! disk. Every write is positioned, so the same sequence feeds a plain file
//! or the flattened stream ([`crate::sink`]).

use super::{DUMP_DH_COMPRESSED_INCOMPLETE, DiskDumpHeader, Layout, PAGE_DESC_SIZE, PageDesc, SubHeader};
use crate::sink::{Sink, SinkError};

/// Bytes of the descriptor cache: small, so that when the disk fills, few
/// pages have their data on disk but not their descriptor.
const CACHE_BYTES: usize = 16 << 10;

/// Bytes of the 2nd bitmap kept in memory and written at once: 1 MiB, the
/// bits of 8 Mi pfns.
pub const BITMAP_CHUNK: u64 = 1 << 20;

/// How one page of a run goes into the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageRecord {
    /// All zero, excluded by dump level bit 1: points at the shared zero page.
    Zero,
    /// Dropped after the 1st bitmap was written (a content filter): no
    /// descriptor, clear in the 2nd bitmap, its slot unused.
    Excluded,
    /// Meant for the dump but unreadable in the input: set in the 2nd
    /// bitmap with an all-zero descriptor, which readers of a dump flagged
    /// incomplete take as a lost page (§1.11); the header stays INCOMPLETE.
    Lost,
    /// `len` bytes of the run's data, with the descriptor's compression
    /// flag (`DUMP_DH_COMPRESSED_*`, 0 for a raw page).
    Stored {
        /// Bytes stored.
        len: u32,
        /// The descriptor's flags.
        flags: u32,
    },
}

/// Why a write failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The sink's error.
    #[error(transparent)]
    Sink(#[from] SinkError),
    /// A run holds more pages than the descriptor table has room left for
    /// (the input changed between the caller's passes): nothing of it was
    /// written.
    #[error(
        "more pages than the {expected} descriptors the first pass counted: the input changed between the passes"
    )]
    MorePages {
        /// The descriptors the layout has room for.
        expected: u64,
    },
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
    /// The pages of the split piece being written, if it is one (its 2nd
    /// bitmap is the whole machine's, written by the caller with the 1st).
    pub piece_pages: Option<u64>,
    /// The eraseinfo text (kdump-format.md §1.9), written after the last
    /// page data with its place in the sub header; empty for none.
    pub eraseinfo: &'a [u8],
}

/// The 2nd bitmap, built from the pages that get a descriptor and written
/// one chunk at a time, in pfn order.
struct DumpableBitmap {
    offset: u64,
    len: u64,
    chunk: Vec<u8>,
    /// Index of the chunk in `chunk`.
    index: u64,
}

impl DumpableBitmap {
    fn new(layout: &Layout) -> Self {
        let chunk = vec![0u8; BITMAP_CHUNK.min(layout.bitmap_len) as usize];
        Self { offset: layout.bitmap2_offset, len: layout.bitmap_len, chunk, index: 0 }
    }

    fn chunk_bytes(&self) -> u64 {
        self.chunk.len().max(1) as u64
    }

    /// Writes the current chunk (cut at the bitmap's end) and starts the next.
    fn flush(&mut self, sink: &mut dyn Sink) -> Result<(), SinkError> {
        let at = self.index * self.chunk_bytes();
        if at < self.len {
            let len = (self.len - at).min(self.chunk_bytes()) as usize;
            sink.write_at(self.offset + at, &self.chunk[..len])?;
            sink.settle(self.offset + at..self.offset + at + len as u64)?;
        }
        self.chunk.fill(0);
        self.index += 1;
        Ok(())
    }

    fn mark(&mut self, sink: &mut dyn Sink, pfn: u64) -> Result<(), SinkError> {
        let bits = 8 * self.chunk_bytes();
        while pfn / bits > self.index {
            self.flush(sink)?;
        }
        let bit = pfn % bits;
        self.chunk[(bit / 8) as usize] |= 1 << (bit % 8);
        Ok(())
    }

    /// Writes the bytes of the current chunk that hold the bits of pfns
    /// `from..=to` (those in the chunk), so that a run killed before the
    /// chunk is complete leaves the pages it wrote readable.
    fn write_through(&self, sink: &mut dyn Sink, from: u64, to: u64) -> Result<(), SinkError> {
        let bits = 8 * self.chunk_bytes();
        let chunk_start = self.index * bits;
        if to < chunk_start {
            return Ok(());
        }
        let first = (from.max(chunk_start) - chunk_start) / 8;
        let last = ((to - chunk_start) / 8).min(self.chunk.len() as u64 - 1);
        let at = self.index * self.chunk_bytes() + first;
        if at < self.len {
            let end = (last + 1).min(self.len - self.index * self.chunk_bytes());
            sink.write_at(self.offset + at, &self.chunk[first as usize..end as usize])?;
        }
        Ok(())
    }

    fn finish(&mut self, sink: &mut dyn Sink) -> Result<(), SinkError> {
        while self.index * self.chunk_bytes() < self.len {
            self.flush(sink)?;
        }
        Ok(())
    }
}

/// The streaming part of the writer, once the headers and bitmaps are out.
pub struct KdumpWriter<'s> {
    sink: &'s mut dyn Sink,
    page_size: u64,
    /// Offset of the shared zero page, when dump level bit 1 is set.
    zero_page: Option<u64>,
    descs: Vec<u8>,
    /// The pfns of the queued descriptors: their bits are set in the 2nd
    /// bitmap only once the descriptors are on disk.
    desc_pfns: Vec<u64>,
    descs_at: u64,
    /// Where the next page data goes.
    data_end: u64,
    /// The 2nd bitmap the writer builds; `None` for a split piece.
    dumpable: Option<DumpableBitmap>,
    header: DiskDumpHeader,
    sub_header: SubHeader,
    block_size: u64,
    eraseinfo: Vec<u8>,
    expected_pages: u64,
    pages: u64,
    dropped: u64,
    lost: u64,
}

impl<'s> KdumpWriter<'s> {
    /// Writes everything before the page data and returns the writer. The
    /// header says INCOMPLETE until [`KdumpWriter::finish`] has written the
    /// last byte: a dump killed outright, or cut by a power loss, reads as
    /// incomplete (§1.11).
    ///
    /// # Errors
    /// The sink's error.
    pub fn begin(sink: &'s mut dyn Sink, pre: &Preamble<'_>) -> Result<Self, SinkError> {
        let layout = pre.layout;
        let mut unfinished = pre.header;
        unfinished.status |= DUMP_DH_COMPRESSED_INCOMPLETE;
        sink.write_at(0, &unfinished.encode())?;
        sink.write_at(u64::from(layout.block_size), &pre.sub_header.encode(pre.header.endian))?;
        sink.write_at(layout.offset_note, pre.notes)?;
        let page_size = u64::from(layout.block_size);
        let mut writer = Self {
            sink,
            page_size,
            zero_page: None,
            descs: Vec::with_capacity(CACHE_BYTES),
            desc_pfns: Vec::with_capacity(CACHE_BYTES / PAGE_DESC_SIZE),
            descs_at: layout.page_desc_offset,
            data_end: layout.data_offset,
            dumpable: pre.piece_pages.is_none().then(|| DumpableBitmap::new(layout)),
            header: pre.header,
            sub_header: pre.sub_header,
            block_size: u64::from(layout.block_size),
            eraseinfo: pre.eraseinfo.to_vec(),
            expected_pages: pre.piece_pages.unwrap_or(layout.num_dumpable),
            pages: 0,
            dropped: 0,
            lost: 0,
        };
        // The 1st bitmap is final, and so are the gaps before the tables.
        writer.sink.settle(layout.bitmap1_offset..layout.bitmap2_offset)?;
        writer.sink.settle(layout.bitmap2_offset + layout.bitmap_len..layout.page_desc_offset)?;
        if pre.exclude_zero {
            writer.zero_page = Some(layout.data_offset);
            writer.sink.write_at(layout.data_offset, &vec![0; page_size as usize])?;
            writer.data_end += page_size;
        }
        writer.sink.settle(
            layout.page_desc_offset + PAGE_DESC_SIZE as u64 * writer.expected_pages..writer.data_end,
        )?;
        Ok(writer)
    }

    /// Writes the data of a run of pages from `first_pfn` on (the stored
    /// bytes of its `Stored` records, back to back) and queues their
    /// descriptors.
    ///
    /// # Errors
    /// The sink's error, or [`WriteError::MorePages`].
    pub fn write_run(
        &mut self,
        first_pfn: u64,
        data: &[u8],
        records: &[PageRecord],
    ) -> Result<(), WriteError> {
        if self.pages + self.dropped + records.len() as u64 > self.expected_pages {
            return Err(WriteError::MorePages { expected: self.expected_pages });
        }
        // Flushed before it would grow: the cache stays at its capacity.
        if self.descs.len() + records.len() * PAGE_DESC_SIZE > self.descs.capacity() {
            self.flush_descriptors()?;
        }
        self.sink.write_at(self.data_end, data)?;
        self.sink.settle(self.data_end..self.data_end + data.len() as u64)?;
        let mut offset = self.data_end;
        for (pfn, record) in (first_pfn..).zip(records) {
            let desc = match *record {
                PageRecord::Excluded => {
                    self.dropped += 1;
                    continue;
                }
                PageRecord::Lost => {
                    self.lost += 1;
                    PageDesc::default()
                }
                PageRecord::Zero => PageDesc {
                    offset: self.zero_page.expect("zero records only when zero pages are excluded"),
                    size: self.page_size as u32,
                    ..PageDesc::default()
                },
                PageRecord::Stored { len, flags } => {
                    offset += u64::from(len);
                    PageDesc { offset: offset - u64::from(len), size: len, flags, page_flags: 0 }
                }
            };
            self.descs.extend_from_slice(&desc.encode(self.header.endian));
            self.desc_pfns.push(pfn);
            self.pages += 1;
        }
        self.data_end = offset;
        Ok(())
    }

    /// Writes the queued descriptors (their data is already written) and
    /// sets their pages' bits.
    fn flush_descriptors(&mut self) -> Result<(), SinkError> {
        self.sink.write_at(self.descs_at, &self.descs)?;
        self.sink.settle(self.descs_at..self.descs_at + self.descs.len() as u64)?;
        self.descs_at += self.descs.len() as u64;
        self.descs.clear();
        if let Some(dumpable) = self.dumpable.as_mut() {
            for &pfn in &self.desc_pfns {
                dumpable.mark(self.sink, pfn)?;
            }
            if let (Some(&from), Some(&to)) = (self.desc_pfns.first(), self.desc_pfns.last()) {
                dumpable.write_through(self.sink, from, to)?;
            }
        }
        self.desc_pfns.clear();
        Ok(())
    }

    /// Bytes of the file written so far (where the page data ends).
    pub fn bytes(&self) -> u64 {
        self.data_end
    }

    /// Pages written so far.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// Descriptors the layout has room for.
    pub fn expected_pages(&self) -> u64 {
        self.expected_pages
    }

    /// Pages dropped late (their descriptor slots stay unused).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Pages recorded as lost (among [`KdumpWriter::pages`]).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Closes a dump cut short by a full disk or the size limit (§1.11):
    /// the descriptors whose data is on disk, the 2nd bitmap of the pages
    /// written (the others read as excluded), and the header with the
    /// INCOMPLETE flag. Returns the pages in the file and the bytes written.
    ///
    /// # Errors
    /// The sink's error: not even the closing structures fit.
    pub fn close_incomplete(mut self) -> Result<(u64, u64), SinkError> {
        // Pages whose descriptors no longer fit are left out of the 2nd
        // bitmap, so readers see them as absent rather than corrupt. The
        // bitmaps and the header were written (their blocks taken) before
        // the data, so they still fit.
        match self.flush_descriptors() {
            Err(e) if e.is_out_of_space() => {
                self.pages -= self.desc_pfns.len() as u64;
                self.desc_pfns.clear();
            }
            other => other?,
        }
        // The 2nd bitmap needs nothing more: each flush of descriptors wrote
        // their bits through, and its other bytes are the first pass's zeros
        // (a stream cut at a size limit has room for no more than this).
        match self.write_eraseinfo() {
            Err(e) if e.is_out_of_space() => {}
            other => other?,
        }
        self.header.status |= DUMP_DH_COMPRESSED_INCOMPLETE;
        self.sink.write_at(0, &self.header.encode())?;
        self.sink.finish()?;
        Ok((self.pages, self.sink.bytes_written()))
    }

    /// Writes the eraseinfo after the last page data and points the sub
    /// header at it (nothing without eraseinfo).
    fn write_eraseinfo(&mut self) -> Result<(), SinkError> {
        if self.eraseinfo.is_empty() {
            return Ok(());
        }
        self.sink.write_at(self.data_end, &self.eraseinfo)?;
        self.sub_header.offset_eraseinfo = self.data_end;
        self.sub_header.size_eraseinfo = self.eraseinfo.len() as u64;
        self.data_end += self.eraseinfo.len() as u64;
        self.sink.write_at(self.block_size, &self.sub_header.encode(self.header.endian))
    }

    /// Writes what is left, then (once the rest is on disk, when the sink
    /// syncs) the header without the INCOMPLETE flag (unless pages were
    /// lost: the header then stays INCOMPLETE, so that readers take their
    /// zero descriptors as lost pages), and closes the sink. Returns the
    /// bytes written.
    ///
    /// # Errors
    /// The sink's error.
    pub fn finish(mut self) -> Result<u64, SinkError> {
        self.flush_descriptors()?;
        if let Some(dumpable) = self.dumpable.as_mut() {
            dumpable.finish(self.sink)?;
        }
        self.write_eraseinfo()?;
        self.sink.sync_data()?;
        if self.lost > 0 {
            self.header.status |= DUMP_DH_COMPRESSED_INCOMPLETE;
        }
        self.sink.write_at(0, &self.header.encode())?;
        self.sink.finish()?;
        Ok(self.sink.bytes_written())
    }
}
