//! Cuts the RAM pages of a vmcore into batches, in pfn order.
//!
//! A batch is a run of consecutive pfns whose bytes are contiguous in the
//! file. Its bytes are borrowed from an mmap window (no copy on the way to
//! the compressors) or read with one `pread` into the batch's own reused
//! buffer. Pages that are not wholly in the file (a segment starting or
//! ending mid-page, or beyond `p_filesz`) travel alone, zero-filled.
//! mmap is tried first unless disabled; the first failure switches the
//! rest of the run to pread (as makedumpfile does with /proc/vmcore).

use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use vmdump_format::phys::PageRun;

use vmdump_format::phys::PhysMap;

use super::{Input, Vmcore, Window};

/// How pages are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// mmap windows of this many bytes, falling back to pread on failure.
    Mmap {
        /// Window size in bytes.
        window_bytes: usize,
    },
    /// pread only (`--no-mmap`).
    Pread,
}

/// A failed read, naming the pages and where they are in the file.
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot read pfns {first_pfn:#x}..{end_pfn:#x} at file offset {offset:#x}: {cause}")]
pub struct ReadError {
    /// The input file.
    pub path: PathBuf,
    /// First pfn of the batch.
    pub first_pfn: u64,
    /// One past its last pfn.
    pub end_pfn: u64,
    /// File offset of the read.
    pub offset: u64,
    /// The I/O error.
    pub cause: io::Error,
}

/// Consecutive pages of one batch (a reusable slot).
#[derive(Default)]
pub struct PageBatch {
    first_pfn: u64,
    count: usize,
    page_size: usize,
    window: Option<Arc<Window>>,
    window_start: usize,
    buf: Vec<u8>,
}

impl PageBatch {
    /// First pfn.
    pub fn first_pfn(&self) -> u64 {
        self.first_pfn
    }

    /// Number of pages.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the batch holds no page.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The bytes of page `index` of the batch.
    pub fn page(&self, index: usize) -> &[u8] {
        let at = index * self.page_size;
        match &self.window {
            Some(w) => &w.bytes()[self.window_start + at..self.window_start + at + self.page_size],
            None => &self.buf[at..at + self.page_size],
        }
    }

    /// Drops the reference to the input window once the pages are encoded,
    /// so that the window is unmapped as soon as no batch needs it.
    /// The batch is empty afterwards.
    pub fn release_input(&mut self) {
        self.window = None;
        self.count = 0;
    }

    fn reset(&mut self, first_pfn: u64, count: usize, page_size: usize) {
        (self.first_pfn, self.count, self.page_size) = (first_pfn, count, page_size);
        self.window = None;
    }

    /// Makes the batch `count` pages from `first_pfn` held in its own
    /// buffer, and returns the buffer to fill.
    pub fn own_pages(&mut self, first_pfn: u64, count: usize, page_size: usize) -> &mut [u8] {
        self.reset(first_pfn, count, page_size);
        self.buf.resize(count * page_size, 0);
        &mut self.buf
    }
}

/// Where the pages of an input come from: fills batches on the reader thread.
pub trait PageSource: Send {
    /// Puts up to `limit` pages from `pfn` (all RAM, in `run`, and kept)
    /// into `batch`; returns how many it took (at least one).
    ///
    /// # Errors
    /// A [`ReadError`] naming the pages that cannot be read.
    fn fill(&mut self, run: &PageRun, pfn: u64, limit: u64, batch: &mut PageBatch) -> Result<u64, ReadError>;

    /// The mmap error that switched the run to pread, if one did.
    fn mmap_failure(&self) -> Option<&io::Error> {
        None
    }
}

/// Produces batches of the pfn ranges it is given, in order.
pub struct BatchReader<'v, I> {
    phys: &'v PhysMap,
    source: Box<dyn PageSource + 'v>,
    batch_pages: u64,
    ranges: I,
    current: Range<u64>,
}

impl<'v, I, E> BatchReader<'v, I>
where
    I: Iterator<Item = Result<Range<u64>, E>>,
    E: From<ReadError>,
{
    /// A reader of the pfn `ranges` (increasing, RAM only) of `input`, at
    /// most `batch_pages` pages per batch. `sparse` says that the ranges
    /// leave out many pages: mapped windows are then not populated up
    /// front, so pages nobody reads are not read.
    pub fn new(input: &'v dyn Input, ranges: I, batch_pages: usize, mode: ReadMode, sparse: bool) -> Self {
        let source = input.page_source(mode, sparse);
        Self { phys: input.phys(), source, batch_pages: batch_pages.max(1) as u64, ranges, current: 0..0 }
    }

    /// The ranges it reads (and what they know, e.g. what they left out).
    pub fn ranges(&self) -> &I {
        &self.ranges
    }

    /// The mmap error that switched the run to pread, if one did.
    pub fn mmap_failure(&self) -> Option<&io::Error> {
        self.source.mmap_failure()
    }

    /// Fills `batch` with the next pages; `Ok(false)` at the end.
    ///
    /// # Errors
    /// The ranges' error, or a [`ReadError`] when the file cannot be read.
    pub fn fill(&mut self, batch: &mut PageBatch) -> Result<bool, E> {
        while self.current.is_empty() {
            match self.ranges.next() {
                None => return Ok(false),
                Some(range) => self.current = range?,
            }
        }
        let pfn = self.current.start;
        let run = *self.phys.run_of(pfn).expect("pfn ranges lie in RAM");
        let limit = (self.current.end.min(run.end_pfn) - pfn).min(self.batch_pages);
        let taken = self.source.fill(&run, pfn, limit, batch)?;
        self.current.start += taken;
        Ok(true)
    }
}

/// The pages of an ELF vmcore: borrowed from mmap windows, or read with
/// pread into the batch (after the first mmap failure, for the rest of the run).
pub struct ElfPages<'v> {
    vmcore: &'v Vmcore,
    mode: ReadMode,
    populate: bool,
    window: Option<Arc<Window>>,
    mmap_failure: Option<io::Error>,
}

impl PageSource for ElfPages<'_> {
    fn fill(&mut self, run: &PageRun, pfn: u64, limit: u64, batch: &mut PageBatch) -> Result<u64, ReadError> {
        self.fill_from(run, pfn, limit, batch)
    }

    fn mmap_failure(&self) -> Option<&io::Error> {
        self.mmap_failure.as_ref()
    }
}

impl<'v> ElfPages<'v> {
    /// The pages of `vmcore`, read as `mode` says.
    pub fn new(vmcore: &'v Vmcore, mode: ReadMode, sparse: bool) -> Self {
        Self { vmcore, mode, populate: !sparse, window: None, mmap_failure: None }
    }

    /// Whole pages of `run` from `pfn`, at most `limit`.
    fn whole_pages(&self, run: &PageRun, pfn: u64, limit: u64) -> u64 {
        let ps = self.vmcore.page_size();
        let seg = &run.segment;
        let file_end = seg.paddr + seg.file_size.min(seg.mem_size);
        let starts_whole = pfn * ps >= seg.paddr;
        if starts_whole { (file_end / ps).saturating_sub(pfn).min(limit) } else { 0 }
    }

    /// Puts up to `limit` pages from `pfn` into `batch`; returns how many.
    fn fill_from(
        &mut self,
        run: &PageRun,
        pfn: u64,
        limit: u64,
        batch: &mut PageBatch,
    ) -> Result<u64, ReadError> {
        let ps = self.vmcore.page_size() as usize;
        let whole = self.whole_pages(run, pfn, limit);
        if whole == 0 {
            batch.reset(pfn, 1, ps);
            batch.buf.resize(ps, 0);
            self.vmcore
                .phys()
                .read_page(self.vmcore.file(), pfn, &mut batch.buf)
                .map_err(|e| self.error(pfn, 1, 0, io::Error::other(e.to_string())))?;
            return Ok(1);
        }
        let offset = run.segment.file_offset + (pfn * ps as u64 - run.segment.paddr);
        Ok(self.map_or_read(batch, pfn, whole as usize, offset)? as u64)
    }

    /// Points `batch` at up to `count` pages from file `offset`, through a
    /// window when mmap works, else by pread. Returns the pages taken.
    fn map_or_read(
        &mut self,
        batch: &mut PageBatch,
        pfn: u64,
        count: usize,
        offset: u64,
    ) -> Result<usize, ReadError> {
        let ps = self.vmcore.page_size() as usize;
        if let Some((window, start, pages)) = self.window_for(offset, count * ps) {
            batch.reset(pfn, pages, ps);
            (batch.window, batch.window_start) = (Some(window), start);
            return Ok(pages);
        }
        batch.reset(pfn, count, ps);
        batch.buf.resize(count * ps, 0);
        self.vmcore
            .file()
            .read_exact_at(&mut batch.buf, offset)
            .map_err(|e| self.error(pfn, count as u64, offset, e))?;
        Ok(count)
    }

    /// A window holding the start of `[offset, offset + len)`: the current
    /// one, or a new one mapped there. Returns it with the start of the
    /// range inside it and the whole pages it holds. `None` in pread mode.
    fn window_for(&mut self, offset: u64, len: usize) -> Option<(Arc<Window>, usize, usize)> {
        let ReadMode::Mmap { window_bytes } = self.mode else { return None };
        let ps = self.vmcore.page_size() as usize;
        let covers =
            |w: &Window| offset >= w.offset() && offset + ps as u64 <= w.offset() + w.bytes().len() as u64;
        if !self.window.as_deref().is_some_and(covers) {
            let map_len = (window_bytes.max(len) as u64).min(self.vmcore.file_size() - offset) as usize;
            match Window::map(self.vmcore.file(), offset, map_len, self.populate) {
                Ok(w) => self.window = Some(Arc::new(w)),
                Err(e) => {
                    self.mode = ReadMode::Pread;
                    self.window = None;
                    self.mmap_failure = Some(e);
                    return None;
                }
            }
        }
        let window = self.window.clone()?;
        let start = (offset - window.offset()) as usize;
        let pages = ((window.bytes().len() - start) / ps).min(len / ps);
        Some((window, start, pages))
    }

    fn error(&self, first_pfn: u64, pages: u64, offset: u64, cause: io::Error) -> ReadError {
        ReadError { path: self.vmcore.path().into(), first_pfn, end_pfn: first_pfn + pages, offset, cause }
    }
}
