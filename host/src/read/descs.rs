//! The descriptor table of a dump read 64 KiB at a time, for passes that
//! visit every stored page in order (reassembly, conversion).

use crate::read::DumpSource;

use anyhow::Context;
use vmdump_format::ReadAt;
use vmdump_format::kdump::{KdumpReader, PAGE_DESC_SIZE, PageDesc};

/// Descriptors read at once.
const CHUNK: usize = (64 << 10) / PAGE_DESC_SIZE;

/// Sequential access to the descriptors of one file.
pub struct Descriptors<'r> {
    reader: &'r KdumpReader<DumpSource>,
    chunk: Vec<u8>,
    /// Index of the first descriptor in `chunk`.
    start: u64,
}

impl<'r> Descriptors<'r> {
    /// The descriptors of `reader` (of its own piece, for a split piece).
    pub fn new(reader: &'r KdumpReader<DumpSource>) -> Self {
        Self { reader, chunk: Vec::new(), start: 0 }
    }

    /// Descriptor number `index` of this file; one of offset 0 (lost) past
    /// the end of an incomplete file.
    ///
    /// # Errors
    /// The table cannot be read, or a descriptor does not decode.
    pub fn get(&mut self, index: u64) -> anyhow::Result<PageDesc> {
        let held = (self.chunk.len() / PAGE_DESC_SIZE) as u64;
        if index < self.start || index >= self.start + held {
            self.load(index)?;
        }
        let at = ((index - self.start) as usize) * PAGE_DESC_SIZE;
        Ok(PageDesc::decode(&self.chunk[at..at + PAGE_DESC_SIZE], self.reader.header().endian)?)
    }

    fn load(&mut self, index: u64) -> anyhow::Result<()> {
        let r = self.reader;
        let at = r.geometry().page_desc_offset + index * PAGE_DESC_SIZE as u64;
        let room = r.file_size().saturating_sub(at) / PAGE_DESC_SIZE as u64;
        let n = (CHUNK as u64).min(room) as usize;
        self.start = index;
        self.chunk.resize(n.max(1) * PAGE_DESC_SIZE, 0);
        if n == 0 && r.is_incomplete() {
            self.chunk.fill(0); // beyond the end of an incomplete file: lost
            return Ok(());
        }
        r.source().read_exact_at(&mut self.chunk, at).with_context(|| format!("page descriptors at {at:#x}"))
    }
}
