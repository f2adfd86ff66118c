//! ELF output (`dump --elf`, makedumpfile's `-E`, kdump-format.md §3): an
//! ELF64 core holding the kept pages, uncompressed, one PT_LOAD per run of
//! consecutive kept pages. Unlike makedumpfile, which keeps runs of fewer
//! than 256 excluded pages with their contents, every excluded page is
//! left out: what the dump level excludes (user data among it) is never in
//! the file, and readers report it absent.
//!
//! The program headers come right after the file header, where every
//! reader looks for them, so their number must be known before any data is
//! written: a first pass counts the runs (reading the pages only when zero
//! pages or content filters decide), the second writes them. Each program
//! header is written once its segment is complete; memory stays bounded.

use std::ops::Range;

use vmdump_format::elf::write::{CoreLayout, program_header};
use vmdump_format::elf::{ELF64_PHDR_SIZE, Endian, LoadSegment, PT_LOAD};
use vmdump_format::phys::PhysMap;

use super::pipeline::{Pass, cut_short, run_pages};
use vmdump_format::kdump::PageRecord;

use super::{DumpError, DumpReport, Slot, reader_ranges};
use crate::exclude::Counts;
use crate::plan::Plan;
use crate::progress::Progress;
use vmdump_format::sink::Sink;

/// Program headers gathered before one write.
const PHDR_CACHE: usize = 1024;

/// A PT_LOAD being built: pfns, the virtual-minus-physical offset of its
/// source segment, and where its data starts in the file.
#[derive(Debug, Clone, Copy)]
struct Segment {
    start_pfn: u64,
    end_pfn: u64,
    vaddr_delta: u64,
    file_offset: u64,
}

/// Cuts the kept pages, in pfn order, into segments.
struct Segments<'p> {
    phys: &'p PhysMap,
    page_size: u64,
    /// The byte order of the program headers (the input's).
    endian: Endian,
    current: Option<Segment>,
    /// The source run of the last page: pfns and vaddr offset.
    run: (u64, u64, u64),
    closed: u64,
}

impl<'p> Segments<'p> {
    fn new(phys: &'p PhysMap, page_size: u64, endian: Endian) -> Self {
        Self { phys, page_size, endian, current: None, run: (0, 0, 0), closed: 0 }
    }

    fn vaddr_delta(&mut self, pfn: u64) -> u64 {
        if !(self.run.0..self.run.1).contains(&pfn) {
            let run = self.phys.run_of(pfn).expect("kept pages are RAM");
            let seg = &run.segment;
            self.run = (run.start_pfn, run.end_pfn, seg.vaddr.wrapping_sub(seg.paddr));
        }
        self.run.2
    }

    /// Page `pfn` is stored at `file_offset`; returns the segment it closed, if any.
    fn page(&mut self, pfn: u64, file_offset: u64) -> Option<Segment> {
        self.pages(pfn..pfn + 1, file_offset)
    }

    /// Pfns `pfns` (within one source run) are stored from `file_offset`;
    /// returns the segment they closed, if any.
    fn pages(&mut self, pfns: Range<u64>, file_offset: u64) -> Option<Segment> {
        let delta = self.vaddr_delta(pfns.start);
        let continues = |s: &&mut Segment| s.end_pfn == pfns.start && s.vaddr_delta == delta;
        if let Some(seg) = self.current.as_mut().filter(continues) {
            seg.end_pfn = pfns.end;
            return None;
        }
        let closed = self.gap();
        let (start_pfn, end_pfn) = (pfns.start, pfns.end);
        self.current = Some(Segment { start_pfn, end_pfn, vaddr_delta: delta, file_offset });
        closed
    }

    /// One past the last pfn of the source run holding `pfn`.
    fn run_end(&mut self, pfn: u64) -> u64 {
        self.vaddr_delta(pfn);
        self.run.1
    }

    /// A page left out: closes the current segment.
    fn gap(&mut self) -> Option<Segment> {
        let closed = self.current.take();
        self.closed += u64::from(closed.is_some());
        closed
    }

    fn header(&self, seg: &Segment) -> [u8; ELF64_PHDR_SIZE] {
        let paddr = seg.start_pfn * self.page_size;
        let len = (seg.end_pfn - seg.start_pfn) * self.page_size;
        let load = LoadSegment {
            paddr,
            vaddr: paddr.wrapping_add(seg.vaddr_delta),
            file_offset: seg.file_offset,
            file_size: len,
            mem_size: len,
        };
        program_header(self.endian, PT_LOAD, &load)
    }
}

/// Feeds one encoded slot to `segments`, calling `closed` for each segment
/// it completes. Returns the bytes of data the slot holds. A lost page
/// keeps its place in its segment, as zeros (an ELF core has no way to say
/// a page is missing but to split the segment, which the first pass did
/// not count); the file header then says incomplete.
fn feed(segments: &mut Segments<'_>, slot: &Slot, data_at: u64, mut closed: impl FnMut(Segment)) -> u64 {
    let mut offset = data_at;
    for (pfn, record) in (slot.pages.first_pfn()..).zip(&slot.records) {
        let done = match *record {
            PageRecord::Stored { len, .. } => {
                let done = segments.page(pfn, offset);
                offset += u64::from(len);
                done
            }
            PageRecord::Lost => {
                let done = segments.page(pfn, offset);
                offset += segments.page_size;
                done
            }
            PageRecord::Zero | PageRecord::Excluded => segments.gap(),
        };
        done.into_iter().for_each(&mut closed);
    }
    offset - data_at
}

/// The first pass: the number of segments and of pages, and what the
/// exclusion stages left out. The pages are read only when their bytes
/// decide (zero pages excluded, content filters).
fn count_segments(plan: &Plan<'_>) -> Result<(u64, u64, Counts), DumpError> {
    let mut segments = Segments::new(plan.ram(), plan.input().page_size(), plan.input().machine().1);
    let mut pages = 0;
    if plan.exclusion().reads_pages() {
        let pass = Pass { piece: None, threads: plan.run().threads, encode: false };
        let (counts, ran) = run_pages(plan, pass, |slot| {
            super::check_interrupt(plan)?;
            pages += pages_in(slot);
            feed(&mut segments, slot, 0, |_| {});
            Ok(())
        })?;
        ran?;
        segments.gap();
        let mut excluded = counts.metadata;
        excluded.absorb(counts.content);
        return Ok((segments.closed, pages, excluded));
    }
    let mut ranges = reader_ranges(plan, None)?;
    for range in ranges.by_ref() {
        let range = range?;
        pages += range.end - range.start;
        let mut pfn = range.start;
        while pfn < range.end {
            let end = segments.run_end(pfn).min(range.end);
            segments.pages(pfn..end, 0);
            pfn = end;
        }
    }
    segments.gap();
    Ok((segments.closed, pages, ranges.counts()))
}

/// The writing side: page data back to back, program headers as their
/// segments complete.
struct ElfOut<'s, 'p> {
    sink: &'s mut dyn Sink,
    layout: CoreLayout,
    /// The input's `e_machine` and byte order, which the output keeps.
    machine: (u16, Endian),
    segments: Segments<'p>,
    phdrs: Vec<u8>,
    /// Index of the first program header in `phdrs`.
    phdrs_index: u64,
    data_end: u64,
    pages: u64,
}

impl ElfOut<'_, '_> {
    fn begin(&mut self, notes: &[u8]) -> Result<(), DumpError> {
        let (e_machine, e) = self.machine;
        let (layout, sink) = (&self.layout, &mut *self.sink);
        sink.write_at(0, &layout.file_header(e, e_machine, 0))?;
        let note = vmdump_format::elf::write::note_program_header(e, layout.notes_offset, notes.len() as u64);
        sink.write_at(layout.phdr_offset(0), &note)?;
        if let (Some(at), Some(header)) = (layout.shoff, layout.section_header(e)) {
            sink.write_at(at, &header)?;
        }
        sink.write_at(layout.notes_offset, notes)?;
        Ok(())
    }

    fn write_slot(&mut self, slot: &Slot) -> Result<(), DumpError> {
        self.write_data(slot)?;
        let (segments, phdrs) = (&mut self.segments, &mut self.phdrs);
        let mut closed = Vec::new();
        self.data_end += feed(segments, slot, self.data_end, |seg| closed.push(seg));
        closed.iter().for_each(|seg| phdrs.extend_from_slice(&segments.header(seg)));
        self.pages += pages_in(slot);
        if self.phdrs.len() >= PHDR_CACHE * ELF64_PHDR_SIZE {
            self.flush_phdrs()?;
        }
        Ok(())
    }

    /// Writes the slot's data: in one write, or, when it has lost pages,
    /// piece by piece with a zero page in place of each.
    fn write_data(&mut self, slot: &Slot) -> Result<(), DumpError> {
        if slot.pages.lost().is_empty() {
            return Ok(self.sink.write_at(self.data_end, &slot.data)?);
        }
        let zero = vec![0u8; self.segments.page_size as usize];
        let (mut at, mut from) = (self.data_end, 0);
        for record in &slot.records {
            match *record {
                PageRecord::Stored { len, .. } => {
                    let len = len as usize;
                    self.sink.write_at(at, &slot.data[from..from + len])?;
                    (at, from) = (at + len as u64, from + len);
                }
                PageRecord::Lost => {
                    self.sink.write_at(at, &zero)?;
                    at += zero.len() as u64;
                }
                PageRecord::Zero | PageRecord::Excluded => {}
            }
        }
        Ok(())
    }

    fn flush_phdrs(&mut self) -> Result<(), DumpError> {
        self.sink.write_at(self.layout.phdr_offset(1 + self.phdrs_index), &self.phdrs)?;
        self.phdrs_index += (self.phdrs.len() / ELF64_PHDR_SIZE) as u64;
        self.phdrs.clear();
        Ok(())
    }

    /// Writes the last program headers. With `incomplete`, the file header
    /// gets flag 1 (§3); the program headers never written stay PT_NULL.
    fn finish(mut self, incomplete: bool) -> Result<(u64, u64), DumpError> {
        if let Some(seg) = self.segments.gap() {
            let header = self.segments.header(&seg);
            self.phdrs.extend_from_slice(&header);
        }
        self.flush_phdrs()?;
        let loads = self.layout.phnum - 1;
        if !incomplete && self.segments.closed != loads {
            return Err(DumpError::Internal(format!(
                "the vmcore changed between the two passes: {loads} segments counted, {} written",
                self.segments.closed
            )));
        }
        if incomplete {
            let (e_machine, e) = self.machine;
            self.sink.write_at(0, &self.layout.file_header(e, e_machine, 1))?;
        }
        self.sink.finish()?;
        Ok((self.pages, self.sink.bytes_written()))
    }
}

/// The pages of a slot that take room in the file.
fn pages_in(slot: &Slot) -> u64 {
    slot.records.iter().filter(|r| matches!(r, PageRecord::Stored { .. } | PageRecord::Lost)).count() as u64
}

/// Dumps what `plan` says into `sink` as an ELF64 core.
///
/// # Errors
/// [`DumpError`].
pub(super) fn dump_elf(plan: &Plan<'_>, sink: &mut dyn Sink) -> Result<DumpReport, DumpError> {
    let started = std::time::Instant::now();
    let (loads, pages, excluded) = count_segments(plan)?;
    let classify_seconds = started.elapsed().as_secs_f64();
    let (input, ram) = (plan.input(), plan.ram());
    // What filters erased is recorded as an ERASEINFO note (the input's
    // own, carried in plan.eraseinfo(), replaced), as makedumpfile does.
    let notes = match plan.eraseinfo() {
        [] => input.notes().bytes.clone(),
        eraseinfo => input.notes().with_eraseinfo(eraseinfo),
    };
    let layout = CoreLayout::new(loads, notes.len() as u64, input.page_size());
    let mut out = ElfOut {
        sink,
        layout,
        machine: input.machine(),
        segments: Segments::new(ram, input.page_size(), input.machine().1),
        phdrs: Vec::with_capacity(PHDR_CACHE * ELF64_PHDR_SIZE),
        phdrs_index: 0,
        data_end: layout.data_offset,
        pages: 0,
    };
    out.begin(&notes)?;
    let mut progress = Progress::new("Copying data", pages, &plan.run().progress);
    let pass = Pass { piece: None, threads: plan.run().threads, encode: false };
    let (counts, ran) = run_pages(plan, pass, |slot| {
        super::check_interrupt(plan)?;
        out.write_slot(slot)?;
        progress.update(out.pages, out.data_end);
        Ok(())
    })?;
    progress.finish(out.pages, out.data_end);
    let incomplete = cut_short(ran, plan)?;
    let (pages_in_file, bytes_written) = out.finish(incomplete.is_some() || !counts.lost.is_empty())?;
    Ok(DumpReport::new(plan, excluded, ram.max_pfn(), pages_in_file, incomplete)
        .with_run(plan, counts.encode, bytes_written, counts.mmap_fallback, Some(classify_seconds))
        .with_lost(counts.lost))
}
