//! A kdump-compressed dump as input (`vmdump convert`, makedumpfile's
//! refiltering `-d 31 DUMPFILE`): read directly, its pages decompressed as
//! the reader takes them, with no temporary image. Its RAM is its 1st
//! bitmap; the pages it did not store (excluded when it was made, or lost
//! in an incomplete dump) are a metadata stage of the new dump, so the new
//! one keeps every exclusion and cannot dump at a lower level.

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::Context;
use vmdump_format::elf::{Endian, LoadSegment, Notes};
use vmdump_format::kdump::reader::BitCursor;
use vmdump_format::kdump::{KdumpReader, PageDesc};
use vmdump_format::machine::Machine;
use vmdump_format::phys::{PageRun, PhysMap};
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::{Input, PageBatch, PageSource, ReadError, ReadMode};
use crate::classify::ClassCounts;
use crate::exclude::{ExcludeError, MetadataFilter, WindowFilter};
use crate::level::DumpLevel;
use crate::read::descs::Descriptors;
use crate::read::{Decoder, DumpMemory, DumpSource, Modules, open_dump_set};
use crate::xlat::{PhysRead, XlatError};

/// Bytes of stored page data read at once.
const WINDOW_BYTES: usize = 1 << 20;

/// An opened dump, plain or flattened, or the pieces of a split dump.
pub struct KdumpInput<'m> {
    path: PathBuf,
    memory: DumpMemory<'m, DumpSource>,
    modules: &'m Modules,
    phys: PhysMap,
    loads: Vec<LoadSegment>,
    notes: Notes,
}

impl<'m> KdumpInput<'m> {
    /// Opens `paths` (a dump, or the pieces of a split dump, reassembled
    /// into an unlinked temporary file), whose pages `modules` decompress.
    ///
    /// # Errors
    /// The files cannot be read or do not form a dump; a lone split piece.
    pub fn open(paths: &[PathBuf], modules: &'m Modules) -> anyhow::Result<Self> {
        let path = paths.first().context("no dump file given")?.clone();
        let reader = open_dump_set(paths)?;
        if let Some(piece) = reader.piece() {
            anyhow::bail!(
                "{}: a piece of a split dump (pfns {:#x}..{:#x}): give the other pieces too (--piece FILE)",
                path.display(),
                piece.start,
                piece.end
            );
        }
        let loads = ram_segments(&reader).with_context(|| format!("{}: the 1st bitmap", path.display()))?;
        let phys = PhysMap::new(&loads, reader.block_size()).with_context(|| path.display().to_string())?;
        let notes = Notes::from_bytes(reader.notes().to_vec(), reader.header().endian)
            .with_context(|| format!("{}: notes", path.display()))?;
        let memory = DumpMemory::new(reader, modules.decoder());
        Ok(Self { path, memory, modules, phys, loads, notes })
    }

    fn reader(&self) -> &KdumpReader<DumpSource> {
        self.memory.reader()
    }
}

/// The RAM of the 1st bitmap as memory segments, one per run of pfns.
fn ram_segments(reader: &KdumpReader<DumpSource>) -> Result<Vec<LoadSegment>, vmdump_format::FormatError> {
    let ps = reader.block_size();
    let mut ram = reader.ram_cursor();
    let mut loads = Vec::<LoadSegment>::new();
    for pfn in 0..reader.max_mapnr() {
        if !ram.bit(pfn)? {
            continue;
        }
        match loads.last_mut().filter(|l| l.paddr + l.mem_size == pfn * ps) {
            Some(load) => (load.file_size, load.mem_size) = (load.file_size + ps, load.mem_size + ps),
            None => loads.push(LoadSegment {
                paddr: pfn * ps,
                vaddr: 0,
                file_offset: 0,
                file_size: ps,
                mem_size: ps,
            }),
        }
    }
    Ok(loads)
}

impl Input for KdumpInput<'_> {
    fn path(&self) -> &Path {
        &self.path
    }

    fn page_size(&self) -> u64 {
        self.reader().block_size()
    }

    fn phys(&self) -> &PhysMap {
        &self.phys
    }

    fn notes(&self) -> &Notes {
        &self.notes
    }

    fn vmcoreinfo(&self) -> Option<&VmcoreInfo> {
        self.reader().vmcoreinfo()
    }

    fn machine(&self) -> (u16, Endian) {
        // The header's utsname (else VMCOREINFO's keys) names the machine;
        // a dump that says neither is taken for x86_64, as vmdump's first
        // releases wrote only those.
        let machine = self.reader().machine().unwrap_or(Machine::X86_64);
        (machine.e_machine(), self.reader().header().endian)
    }

    fn loads(&self) -> &[LoadSegment] {
        &self.loads
    }

    fn earlier(&self) -> Option<(&dyn MetadataFilter, DumpLevel)> {
        Some((self, DumpLevel::recorded(self.reader().dump_level())))
    }

    fn eraseinfo(&self) -> Result<Vec<u8>, vmdump_format::FormatError> {
        self.reader().eraseinfo()
    }

    fn page_source(&self, _mode: ReadMode, _sparse: bool) -> Box<dyn PageSource + '_> {
        Box::new(KdumpPages {
            input: self,
            decoder: self.modules.decoder(),
            descs: Descriptors::new(self.reader()),
            window: DataWindow::default(),
        })
    }
}

impl PhysRead for KdumpInput<'_> {
    fn read_phys(&self, paddr: u64, buf: &mut [u8]) -> Result<(), XlatError> {
        self.memory.read_phys(paddr, buf)
    }
}

/// The pages the dump did not store, for the metadata stages.
impl MetadataFilter for KdumpInput<'_> {
    fn cursor(&self) -> Result<Box<dyn WindowFilter + '_>, ExcludeError> {
        Ok(Box::new(NotStored { input: self, stored: self.reader().dumpable_cursor(), descs: None }))
    }
}

/// Excludes the pfns the 2nd bitmap has not, and those whose descriptor
/// an incomplete dump never wrote (lost).
struct NotStored<'a, 'm> {
    input: &'a KdumpInput<'m>,
    stored: BitCursor<'a, DumpSource>,
    descs: Option<Descriptors<'a>>,
}

impl NotStored<'_, '_> {
    /// Whether stored `pfn` was lost (only an incomplete dump loses pages).
    fn lost(&mut self, pfn: u64) -> Result<bool, ExcludeError> {
        let reader = self.input.reader();
        if !reader.is_incomplete() {
            return Ok(false);
        }
        let descs = self.descs.get_or_insert_with(|| Descriptors::new(reader));
        let index = reader.descriptor_index(pfn)?;
        let desc = descs.get(index).map_err(|e| ExcludeError::Unsupported(format!("pfn {pfn:#x}: {e:#}")))?;
        Ok(desc.offset == 0)
    }
}

impl WindowFilter for NotStored<'_, '_> {
    fn exclude(
        &mut self,
        window: Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        counts: &mut ClassCounts,
    ) -> Result<(), ExcludeError> {
        for pfn in window.clone().filter(|&pfn| is_ram(pfn)) {
            if !self.stored.bit(pfn)? || self.lost(pfn)? {
                let i = pfn - window.start;
                excluded[(i / 64) as usize] |= 1 << (i % 64);
                counts.earlier += 1;
            }
        }
        Ok(())
    }
}

/// The stored pages, decompressed into the batches; descriptors and data
/// read in windows (a dump stores its pages in pfn order).
struct KdumpPages<'a, 'm> {
    input: &'a KdumpInput<'m>,
    decoder: Decoder<'m>,
    descs: Descriptors<'a>,
    window: DataWindow,
}

impl PageSource for KdumpPages<'_, '_> {
    fn fill(
        &mut self,
        _run: &PageRun,
        pfn: u64,
        limit: u64,
        batch: &mut PageBatch,
    ) -> Result<u64, ReadError> {
        let reader = self.input.reader();
        let ps = reader.block_size() as usize;
        let failed = |pfn: u64, cause: String| ReadError {
            path: self.input.path.clone(),
            first_pfn: pfn,
            end_pfn: pfn + 1,
            offset: 0,
            cause: std::io::Error::other(cause),
        };
        let first = reader.descriptor_index(pfn).map_err(|e| failed(pfn, e.to_string()))?;
        let pages = batch.own_pages(pfn, limit as usize, ps);
        for (i, page) in pages.chunks_exact_mut(ps).enumerate() {
            let at = pfn + i as u64;
            let desc = self.descs.get(first + i as u64).map_err(|e| failed(at, format!("{e:#}")))?;
            decode(reader, &mut self.window, &mut self.decoder, at, &desc, page)
                .map_err(|e| failed(at, e))?;
        }
        Ok(limit)
    }
}

/// Page `pfn`, described by `desc`, decompressed into `page`.
fn decode(
    reader: &KdumpReader<DumpSource>,
    window: &mut DataWindow,
    decoder: &mut Decoder<'_>,
    pfn: u64,
    desc: &PageDesc,
    page: &mut [u8],
) -> Result<(), String> {
    if reader.zero_page_offset() == Some(desc.offset) {
        page.fill(0);
        return Ok(());
    }
    reader.check_desc(pfn, desc)?;
    let stored = window.get(reader, desc.offset, desc.size as usize).map_err(|e| format!("{e:#}"))?;
    decoder.decode(desc.flags, stored, page).map_err(|why| format!("pfn {pfn:#x}: {why}"))
}

/// A window of the stored data: one read serves the many pages it holds.
#[derive(Default)]
struct DataWindow {
    buf: Vec<u8>,
    start: u64,
}

impl DataWindow {
    /// `len` bytes at `offset` (checked to lie in the file).
    fn get(&mut self, reader: &KdumpReader<DumpSource>, offset: u64, len: usize) -> anyhow::Result<&[u8]> {
        let end = self.start + self.buf.len() as u64;
        if offset < self.start || offset + len as u64 > end {
            let n = (WINDOW_BYTES as u64).max(len as u64).min(reader.file_size() - offset);
            self.buf.resize(n as usize, 0);
            reader
                .source()
                .read_exact_at(&mut self.buf, offset)
                .with_context(|| format!("reading at {offset:#x}"))?;
            self.start = offset;
        }
        let at = (offset - self.start) as usize;
        Ok(&self.buf[at..at + len])
    }
}
