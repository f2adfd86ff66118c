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
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use vmdump_format::phys::PageRun;

use super::{Vmcore, Window};

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
}

/// Produces the batches of a vmcore in pfn order.
pub struct BatchReader<'v> {
    vmcore: &'v Vmcore,
    batch_pages: usize,
    mode: ReadMode,
    run: usize,
    next_pfn: u64,
    window: Option<Arc<Window>>,
    mmap_failure: Option<io::Error>,
}

impl<'v> BatchReader<'v> {
    /// A reader of at most `batch_pages` pages per batch.
    pub fn new(vmcore: &'v Vmcore, batch_pages: usize, mode: ReadMode) -> Self {
        let next_pfn = vmcore.phys().runs().first().map_or(0, |r| r.start_pfn);
        Self { vmcore, batch_pages: batch_pages.max(1), mode, run: 0, next_pfn, window: None, mmap_failure: None }
    }

    /// The mmap error that switched the run to pread, if one did.
    pub fn mmap_failure(&self) -> Option<&io::Error> {
        self.mmap_failure.as_ref()
    }

    /// Fills `batch` with the next pages; `Ok(false)` at the end.
    ///
    /// # Errors
    /// [`ReadError`] when the file cannot be read.
    pub fn fill(&mut self, batch: &mut PageBatch) -> Result<bool, ReadError> {
        let runs = self.vmcore.phys().runs();
        while let Some(run) = runs.get(self.run) {
            if self.next_pfn < run.end_pfn {
                let run = *run;
                self.fill_from(&run, batch)?;
                return Ok(true);
            }
            self.run += 1;
            self.next_pfn = runs.get(self.run).map_or(0, |r| r.start_pfn);
        }
        Ok(false)
    }

    /// Whole pages of `run` from `next_pfn` that can go in one batch.
    fn whole_pages(&self, run: &PageRun) -> u64 {
        let ps = self.vmcore.page_size();
        let seg = &run.segment;
        let file_end = seg.paddr + seg.file_size.min(seg.mem_size);
        let starts_whole = self.next_pfn * ps >= seg.paddr;
        let whole_end = (file_end / ps).min(run.end_pfn);
        if starts_whole { whole_end.saturating_sub(self.next_pfn).min(self.batch_pages as u64) } else { 0 }
    }

    fn fill_from(&mut self, run: &PageRun, batch: &mut PageBatch) -> Result<(), ReadError> {
        let ps = self.vmcore.page_size() as usize;
        let pfn = self.next_pfn;
        let whole = self.whole_pages(run);
        if whole == 0 {
            batch.reset(pfn, 1, ps);
            batch.buf.resize(ps, 0);
            self.vmcore
                .phys()
                .read_page(self.vmcore.file(), pfn, &mut batch.buf)
                .map_err(|e| self.error(pfn, 1, 0, io::Error::other(e.to_string())))?;
            self.next_pfn += 1;
            return Ok(());
        }
        let offset = run.segment.file_offset + (pfn * ps as u64 - run.segment.paddr);
        let count = self.map_or_read(batch, pfn, whole as usize, offset)?;
        self.next_pfn += count as u64;
        Ok(())
    }

    /// Points `batch` at up to `count` pages from file `offset`, through a
    /// window when mmap works, else by pread. Returns the pages taken.
    fn map_or_read(&mut self, batch: &mut PageBatch, pfn: u64, count: usize, offset: u64) -> Result<usize, ReadError> {
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
        let covers = |w: &Window| offset >= w.offset() && offset + ps as u64 <= w.offset() + w.bytes().len() as u64;
        if !self.window.as_deref().is_some_and(covers) {
            let map_len = (window_bytes.max(len) as u64).min(self.vmcore.file_size() - offset) as usize;
            match Window::map(self.vmcore.file(), offset, map_len) {
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
