//! Cuts the RAM pages of a vmcore into batches, in pfn order.
//!
//! A batch is a run of consecutive pfns whose bytes are contiguous in the
//! file. Its bytes are borrowed from an mmap window (no copy on the way to
//! the compressors) or read with one `pread` into the batch's own reused
//! buffer. Pages that are not wholly in the file (a segment starting or
//! ending mid-page, or beyond `p_filesz`) travel alone, zero-filled.
//! mmap is tried first unless disabled; the first failure switches the
//! rest of the run to pread (as makedumpfile does with /proc/vmcore).
//!
//! A page that cannot be read (pread fails or comes short, or the mapped
//! page faults: the file shrank, the kernel refused the page) is marked
//! lost in its batch, and the batch goes on: the dump records it as lost
//! rather than losing the whole dump.

use std::fs::File;
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
    /// Page indices that could not be read (increasing, disjoint).
    lost: Vec<Range<usize>>,
    /// Why the first of them could not be.
    lost_cause: Option<String>,
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

    /// Its bytes: pages times their size.
    pub fn byte_len(&self) -> usize {
        self.count * self.page_size
    }

    /// The bytes of page `index` of the batch (zeros for a lost page).
    pub fn page(&self, index: usize) -> &[u8] {
        let at = index * self.page_size;
        &self.bytes()[at..at + self.page_size]
    }

    /// The pages that could not be read, as index ranges.
    pub fn lost(&self) -> &[Range<usize>] {
        &self.lost
    }

    /// Why the first lost page could not be read.
    pub fn lost_cause(&self) -> Option<&str> {
        self.lost_cause.as_deref()
    }

    fn bytes(&self) -> &[u8] {
        let len = self.count * self.page_size;
        match &self.window {
            Some(w) => &w.bytes()[self.window_start..self.window_start + len],
            None => &self.buf[..len],
        }
    }

    /// Makes sure the bytes of a batch borrowed from a mapped window are the
    /// file's: touches each page (a page that faults then reads as zero and
    /// the window records it), and if any of them faulted, reads the batch
    /// again with pread into its own buffer, marking the pages that cannot
    /// be read as lost. Called by the worker before it reads the pages.
    pub fn settle(&mut self) {
        let Some(window) = self.window.clone() else { return };
        let pages = self.bytes();
        // One byte a page is enough: a page faults whole. After the first
        // fault, pread tells about the rest.
        let faulted = pages.chunks(self.page_size.max(1)).any(|page| {
            std::hint::black_box(page[0]);
            window.faulted_within(page)
        });
        if faulted || window.faulted_within(pages) {
            let offset = window.offset() + self.window_start as u64;
            let (first_pfn, count, page_size) = (self.first_pfn, self.count, self.page_size);
            self.read_owned(window.file(), offset, first_pfn, count, page_size);
        }
    }

    /// Whether the pages the worker read are still the file's: `false` when
    /// a page of the batch faulted after [`PageBatch::settle`] (the file
    /// shrank while it was being encoded).
    pub fn still_whole(&self) -> bool {
        self.window.as_ref().is_none_or(|w| !w.faulted_within(self.bytes()))
    }

    /// Marks every page of the batch lost.
    pub fn lose_all(&mut self, cause: &str) {
        self.lost.clear();
        self.lost.push(0..self.count);
        self.lost_cause = Some(cause.into());
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
        self.lost.clear();
        self.lost_cause = None;
    }

    /// Makes the batch `count` pages from `first_pfn` held in its own
    /// buffer, and returns the buffer to fill.
    pub fn own_pages(&mut self, first_pfn: u64, count: usize, page_size: usize) -> &mut [u8] {
        self.reset(first_pfn, count, page_size);
        self.buf.resize(count * page_size, 0);
        &mut self.buf
    }

    /// Marks page `index` lost (pages are marked in increasing order).
    fn mark_lost(&mut self, index: usize, cause: impl FnOnce() -> String) {
        match self.lost.last_mut() {
            Some(last) if last.end == index => last.end += 1,
            _ => self.lost.push(index..index + 1),
        }
        if self.lost_cause.is_none() {
            self.lost_cause = Some(cause());
        }
    }

    /// Reads `count` pages at file `offset` into the batch's own buffer.
    /// A page the file does not give whole (an I/O error, the end of the
    /// file) is zero-filled and marked lost; reading goes on past an error,
    /// and stops at the end of the file (every page after it is lost).
    fn read_owned(&mut self, file: &File, offset: u64, first_pfn: u64, count: usize, page_size: usize) {
        self.own_pages(first_pfn, count, page_size);
        let mut index = 0;
        while index < count {
            let page_at = index * page_size;
            match read_fully(file, &mut self.buf[page_at..count * page_size], offset + page_at as u64) {
                Ok(()) => return,
                Err((done, e)) => {
                    let bad = index + done / page_size;
                    let at = offset + (bad * page_size) as u64;
                    let end_of_file = e.kind() == io::ErrorKind::UnexpectedEof;
                    let last = if end_of_file { count } else { bad + 1 };
                    for lost in bad..last {
                        self.mark_lost(lost, || {
                            if end_of_file {
                                format!(
                                    "the file ends before offset {:#x} (it shrank?)",
                                    at + page_size as u64
                                )
                            } else {
                                format!("file offset {at:#x}: {e}")
                            }
                        });
                    }
                    self.buf[bad * page_size..last * page_size].fill(0);
                    index = last;
                }
            }
        }
    }
}

/// Fills `buf` from `offset`. On failure returns how many bytes were read
/// and the error (`UnexpectedEof` at the end of the file).
fn read_fully(file: &File, buf: &mut [u8], offset: u64) -> Result<(), (usize, io::Error)> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => return Err((done, io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((done, e)),
        }
    }
    Ok(())
}

/// Where the pages of an input come from: fills batches for the pipeline (`crate::pool`).
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
        Ok(self.fill_from(run, pfn, limit, batch))
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
    fn fill_from(&mut self, run: &PageRun, pfn: u64, limit: u64, batch: &mut PageBatch) -> u64 {
        let ps = self.vmcore.page_size() as usize;
        let whole = self.whole_pages(run, pfn, limit);
        if whole == 0 {
            let buf = batch.own_pages(pfn, 1, ps);
            buf.fill(0);
            if let Err(e) = self.vmcore.phys().read_page(&**self.vmcore.file(), pfn, buf) {
                batch.mark_lost(0, || e.to_string());
            }
            return 1;
        }
        let offset = run.segment.file_offset + (pfn * ps as u64 - run.segment.paddr);
        self.map_or_read(batch, pfn, whole as usize, offset) as u64
    }

    /// Points `batch` at up to `count` pages from file `offset`, through a
    /// window when mmap works, else by pread. Returns the pages taken.
    fn map_or_read(&mut self, batch: &mut PageBatch, pfn: u64, count: usize, offset: u64) -> usize {
        let ps = self.vmcore.page_size() as usize;
        if let Some((window, start, pages)) = self.window_for(offset, count * ps) {
            batch.reset(pfn, pages, ps);
            (batch.window, batch.window_start) = (Some(window), start);
            return pages;
        }
        batch.read_owned(self.vmcore.file(), offset, pfn, count, ps);
        count
    }

    /// A window holding the start of `[offset, offset + len)`: the current
    /// one, or a new one mapped there. Returns it with the start of the
    /// range inside it and the whole pages it holds. `None` in pread mode,
    /// which the first failure to map switches to for the rest of the run,
    /// as does a window that faulted (the file shrank, or pages of it
    /// cannot be read: pread tells which).
    fn window_for(&mut self, offset: u64, len: usize) -> Option<(Arc<Window>, usize, usize)> {
        let ReadMode::Mmap { window_bytes } = self.mode else { return None };
        if let Some(faulted) = self.window.as_ref().filter(|w| w.faulted()) {
            let at = faulted.offset();
            return self.give_up_mmap(io::Error::other(format!(
                "a page of the window at file offset {at:#x} could not be read (SIGBUS)"
            )));
        }
        let ps = self.vmcore.page_size() as usize;
        let covers =
            |w: &Window| offset >= w.offset() && offset + ps as u64 <= w.offset() + w.bytes().len() as u64;
        if !self.window.as_deref().is_some_and(covers) {
            let map_len = (window_bytes.max(len) as u64).min(self.vmcore.file_size().saturating_sub(offset));
            match Window::map(self.vmcore.file(), offset, map_len as usize, self.populate) {
                Ok(w) => self.window = Some(Arc::new(w)),
                Err(e) => return self.give_up_mmap(e),
            }
        }
        let window = self.window.clone()?;
        let start = (offset - window.offset()) as usize;
        let pages = ((window.bytes().len() - start) / ps).min(len / ps);
        Some((window, start, pages))
    }

    /// Switches the rest of the run to pread.
    fn give_up_mmap<T>(&mut self, why: io::Error) -> Option<T> {
        self.mode = ReadMode::Pread;
        self.window = None;
        self.mmap_failure = Some(why);
        None
    }
}
