//! The dump engine: what a [`Plan`] says, written as a kdump-compressed
//! file (or stream, or split piece) or an ELF core.
//!
//! The calling thread cuts the kept pages into batches (mmap windows or
//! pread), N workers run the content stage and compress with their own
//! plugin context, and the calling thread writes descriptors and data in pfn
//! order (`crate::pool`; with one worker, no thread: it all runs inline). Memory is bounded by the slots in flight, whatever
//! the size of the dumped machine. What is left out is decided by the
//! plan's exclusion stages (`crate::exclude`).

mod bitmaps;
mod elf;
mod lost;
mod pipeline;
pub mod report;
pub mod self_check;
mod slot;
mod split;

use std::ops::Range;

use vmdump_format::FormatError;
use vmdump_format::elf::Endian;
use vmdump_format::kdump::{
    DUMP_DH_COMPRESSED_INCOMPLETE, DiskDumpHeader, KdumpWriter, Layout, Preamble, SubHeader, WriteError,
};
use vmdump_format::machine::Machine;

use bitmaps::write_bitmaps;
pub use lost::LostPages;
use pipeline::{Pass, cut_short, run_pages};
pub use report::DumpReport;
pub use slot::{Slot, Worker};
pub use split::{DEFAULT_SPLITBLOCK_BYTES, split_pieces};

use vmdump_format::sink::{Sink, SinkError};

use crate::exclude::{Counts, DumpableRanges, ExcludeError};
use crate::input::ReadError;
use crate::plan::{Format, Plan};
use crate::progress::Progress;

/// Why a dump failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DumpError {
    /// Reading the input failed.
    #[error("{0}")]
    Read(ReadError),
    /// Writing the output failed.
    #[error("writing the dump: {0}")]
    Write(SinkError),
    /// The layout cannot be computed.
    #[error("laying out the dump: {0}")]
    Layout(FormatError),
    /// Something this version cannot do, said before anything is written.
    #[error("{0}")]
    Unsupported(String),
    /// The exclusion stages failed (unreadable struct pages, a filter
    /// plugin that changed its answer).
    #[error("{0}")]
    Exclude(ExcludeError),
    /// A signal ([`crate::interrupt`]) stopped the dump.
    #[error("interrupted by {}", crate::interrupt::name(*.0))]
    Interrupted(i32),
    /// A pipeline thread panicked (a bug in vmdump): the run stopped.
    #[error("internal error: {0}")]
    Panicked(#[from] crate::pool::Panicked),
    /// A broken invariant: a bug in vmdump.
    #[error("internal error: {0}")]
    Internal(String),
}

/// [`DumpError::Interrupted`] if a signal arrived since the run began.
///
/// # Errors
/// That one.
pub fn check_interrupt(plan: &Plan<'_>) -> Result<(), DumpError> {
    plan.run().interrupt.caught().map_or(Ok(()), |signal| Err(DumpError::Interrupted(signal)))
}

impl From<ReadError> for DumpError {
    fn from(e: ReadError) -> Self {
        Self::Read(e)
    }
}

impl From<SinkError> for DumpError {
    fn from(e: SinkError) -> Self {
        Self::Write(e)
    }
}

impl From<WriteError> for DumpError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Sink(e) => Self::Write(e),
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<FormatError> for DumpError {
    fn from(e: FormatError) -> Self {
        Self::Layout(e)
    }
}

impl From<ExcludeError> for DumpError {
    fn from(e: ExcludeError) -> Self {
        Self::Exclude(e)
    }
}

/// Dumps what `plan` says into `sink`.
///
/// # Errors
/// [`DumpError`]; when the output is cut short and the plan allows it, the
/// file is closed as an incomplete dump instead (the report says why).
pub fn dump(plan: &Plan<'_>, sink: &mut dyn Sink) -> Result<DumpReport, DumpError> {
    match plan.format() {
        Format::Kdump => dump_kdump(plan, None, plan.run().threads, sink),
        Format::Elf => elf::dump_elf(plan, sink),
    }
}

/// Dumps the pfns `piece` of a split dump (kdump-format.md §2.3) into
/// `sink` with `threads` workers: a kdump file with the whole machine's
/// bitmaps, as makedumpfile writes each piece.
///
/// # Errors
/// As [`dump`]; [`DumpError::Unsupported`] for an ELF plan or content
/// filter plugins.
pub fn dump_piece(
    plan: &Plan<'_>,
    piece: Range<u64>,
    threads: usize,
    sink: &mut dyn Sink,
) -> Result<DumpReport, DumpError> {
    split::check(plan)?;
    dump_kdump(plan, Some(piece), threads, sink)
}

/// What reading every page a plan keeps found, with nothing written.
pub struct PageCount {
    /// What the metadata stages left out (the classes of the struct pages).
    pub metadata: Counts,
    /// What the content stages left out (the zero pages).
    pub content: Counts,
    /// The pages that could not be read.
    pub lost: LostPages,
}

/// Reads every page `plan` keeps with its workers and writes nothing: the
/// pages its stages leave out, the zero pages among them, exactly
/// (makedumpfile's `--mem-usage`).
///
/// # Errors
/// The stages cannot start, or a signal stopped the run.
pub fn count_pages(plan: &Plan<'_>) -> Result<PageCount, DumpError> {
    let pass = Pass { piece: None, threads: plan.run().threads, encode: false };
    let (counts, ran) = run_pages(plan, pass, |_| check_interrupt(plan))?;
    ran?;
    Ok(PageCount { metadata: counts.metadata, content: counts.content, lost: counts.lost })
}

/// The machine the input's ELF header names; `None` for a little-endian
/// one vmdump does not know (its header's utsname machine stays empty).
///
/// # Errors
/// A big-endian input of a machine vmdump does not know: the byte order of
/// the header a makedumpfile there writes cannot be assumed.
fn input_machine(plan: &Plan<'_>) -> Result<Option<Machine>, DumpError> {
    let (e_machine, endian) = plan.input().machine();
    let machine = Machine::from_elf(e_machine, endian);
    if machine.is_none() && endian == Endian::Big {
        return Err(DumpError::Unsupported(format!(
            "{} is a big-endian vmcore (e_machine {e_machine}): vmdump writes kdump files of {}",
            plan.input().path().display(),
            Machine::SUPPORTED
        )));
    }
    Ok(machine)
}

fn preamble_header(plan: &Plan<'_>, layout: &Layout, machine: Option<Machine>) -> DiskDumpHeader {
    let status = plan.codec().map_or(0, |c| c.format().code());
    // The dumped machine's byte order (the input's), as makedumpfile writes it there.
    let endian = plan.input().machine().1;
    let mut header = layout.disk_dump_header(status, plan.input().notes().nr_cpus, endian);
    if let Some(info) = plan.input().vmcoreinfo() {
        header.fill_from_vmcoreinfo(info, machine);
    }
    if header.timestamp_sec == 0 && plan.input().is_live() {
        // No crash time: a live dump is stamped with when it began.
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        (header.timestamp_sec, header.timestamp_usec) =
            (now.as_secs() as i64, i64::from(now.subsec_micros()));
    }
    if let Some(utsname) = plan.utsname() {
        header.utsname = *utsname;
    }
    header
}

/// The sub header: phys_base from VMCOREINFO (arm64: PHYS_OFFSET,
/// [`Machine::header_phys_base`]), the dump level, and the piece's pfns in
/// a split piece.
fn sub_header(
    plan: &Plan<'_>,
    layout: &Layout,
    machine: Option<Machine>,
    piece: Option<&Range<u64>>,
) -> SubHeader {
    let machine = machine.unwrap_or(Machine::X86_64);
    let phys_base = plan.input().vmcoreinfo().and_then(|i| machine.header_phys_base(i)).unwrap_or(0);
    let mut sub = layout.sub_header(phys_base, i32::from(plan.level().bits()));
    if let Some(piece) = piece {
        sub.split = 1;
        (sub.start_pfn, sub.end_pfn) = (piece.start, piece.end);
        (sub.start_pfn_64, sub.end_pfn_64) = (piece.start, piece.end);
    }
    sub
}

/// Writes the header (flagged INCOMPLETE), sub header and notes before the
/// first pass, and gives the file the length of its bitmaps (one byte at
/// their end: a hole, nothing written): a run that dies while it classifies
/// (a crash, SIGKILL, a power loss) leaves a file that readers open as an
/// incomplete dump holding no page, not an empty file. The writer rewrites
/// them once the first pass has counted the pages.
fn write_unfinished_header(
    plan: &Plan<'_>,
    sink: &mut dyn Sink,
    machine: Option<Machine>,
    piece: Option<&Range<u64>>,
) -> Result<(), DumpError> {
    let page_size =
        u32::try_from(plan.input().page_size()).map_err(|_| DumpError::Unsupported("page size".into()))?;
    let notes = plan.input().notes();
    let layout = Layout::from_notes(plan.ram().max_pfn(), page_size, notes, 0)?;
    let mut header = preamble_header(plan, &layout, machine);
    header.status |= DUMP_DH_COMPRESSED_INCOMPLETE;
    sink.write_at(0, &header.encode())?;
    let sub = sub_header(plan, &layout, machine, piece);
    sink.write_at(u64::from(layout.block_size), &sub.encode(header.endian))?;
    sink.write_at(layout.offset_note, &notes.bytes)?;
    if layout.bitmap_len > 0 {
        sink.write_at(layout.bitmap2_offset + layout.bitmap_len - 1, &[0])?;
    }
    Ok(())
}

/// What the first pass found.
struct FirstPass {
    layout: Layout,
    excluded: Counts,
    /// Pages of the split piece, for one.
    piece_pages: Option<u64>,
    seconds: f64,
}

/// The first pass: the bitmaps and the count of pages the metadata stages
/// keep, which places the data.
fn first_pass(
    plan: &Plan<'_>,
    sink: &mut dyn Sink,
    piece: Option<&Range<u64>>,
) -> Result<FirstPass, DumpError> {
    let (ram, input) = (plan.ram(), plan.input());
    let page_size =
        u32::try_from(input.page_size()).map_err(|_| DumpError::Unsupported("page size".into()))?;
    let notes = input.notes();
    let bitmaps = Layout::from_notes(ram.max_pfn(), page_size, notes, 0)?;
    let started = std::time::Instant::now();
    let mut cursor = plan.exclusion().metadata().map(|f| f.cursor()).transpose()?;
    let mut excluded = Counts::default();
    let stages = (cursor.as_deref_mut(), &plan.run().interrupt);
    let kept = write_bitmaps(sink, &bitmaps, ram, stages, &mut excluded.classes, piece)?;
    excluded.plugins = cursor.map(|c| c.plugin_counts()).unwrap_or_default();
    let layout = Layout::from_notes(ram.max_pfn(), page_size, notes, kept.total)?;
    let piece_pages = piece.map(|_| kept.in_piece);
    Ok(FirstPass { layout, excluded, piece_pages, seconds: started.elapsed().as_secs_f64() })
}

/// The pfn ranges the reader reads: RAM less what the metadata stages
/// exclude, within the split piece if there is one.
fn reader_ranges<'p>(plan: &'p Plan<'_>, piece: Option<Range<u64>>) -> Result<KeptRanges<'p>, DumpError> {
    let cursor = plan.exclusion().metadata().map(|f| f.cursor()).transpose()?;
    Ok(KeptRanges { ranges: DumpableRanges::new(plan.ram(), cursor), piece })
}

/// [`DumpableRanges`] clipped to a split piece, with the engine's error.
struct KeptRanges<'p> {
    ranges: DumpableRanges<'p>,
    piece: Option<Range<u64>>,
}

impl KeptRanges<'_> {
    fn counts(&self) -> Counts {
        self.ranges.counts()
    }
}

impl Iterator for KeptRanges<'_> {
    type Item = Result<Range<u64>, DumpError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let range = match self.ranges.next()? {
                Ok(range) => range,
                Err(e) => return Some(Err(e.into())),
            };
            let Some(piece) = &self.piece else { return Some(Ok(range)) };
            if range.start >= piece.end {
                return None;
            }
            let clipped = range.start.max(piece.start)..range.end.min(piece.end);
            if !clipped.is_empty() {
                return Some(Ok(clipped));
            }
        }
    }
}

/// A kdump-compressed dump: the whole machine, or one split piece.
fn dump_kdump(
    plan: &Plan<'_>,
    piece: Option<Range<u64>>,
    threads: usize,
    sink: &mut dyn Sink,
) -> Result<DumpReport, DumpError> {
    let machine = input_machine(plan)?;
    write_unfinished_header(plan, sink, machine, piece.as_ref())?;
    let pass = match first_pass(plan, sink, piece.as_ref()) {
        // A signal while the pages are classified: the file already reads as
        // an incomplete dump (holding no page yet), so it is kept as one.
        Err(e @ DumpError::Interrupted(_)) if plan.run().close_incomplete => {
            sink.finish()?;
            let max_mapnr = plan.ram().max_pfn();
            return Ok(DumpReport::new(plan, Counts::default(), max_mapnr, 0, Some(e.to_string())));
        }
        other => other?,
    };
    let preamble = Preamble {
        header: preamble_header(plan, &pass.layout, machine),
        sub_header: sub_header(plan, &pass.layout, machine, piece.as_ref()),
        notes: &plan.input().notes().bytes,
        layout: &pass.layout,
        exclude_zero: plan.level().excludes_zero_pages(),
        piece_pages: pass.piece_pages,
        eraseinfo: plan.eraseinfo(),
    };
    // Every page stored raw at worst, after the shared zero page.
    let pages = pass.piece_pages.unwrap_or(pass.layout.num_dumpable) + 1;
    sink.expect_at_most(
        pass.layout.data_offset + pages * u64::from(pass.layout.block_size) + plan.eraseinfo().len() as u64,
    );
    let mut writer = KdumpWriter::begin(sink, &preamble)?;
    let options = if piece.is_some() { plan.run().progress.quiet() } else { plan.run().progress.clone() };
    let mut progress = Progress::new("Copying data", writer.expected_pages(), &options);
    let run = Pass { piece, threads, encode: true };
    let (counts, ran) = run_pages(plan, run, |slot| {
        check_interrupt(plan)?;
        writer.write_run(slot.pages.first_pfn(), &slot.data, &slot.records)?;
        progress.update(writer.pages(), writer.bytes());
        Ok(())
    })?;
    progress.finish(writer.pages() + writer.dropped(), writer.bytes());
    let incomplete = cut_short(ran, plan)?;
    let accounted = writer.pages() + writer.dropped();
    if incomplete.is_none() && accounted != writer.expected_pages() {
        let expected = writer.expected_pages();
        return Err(DumpError::Internal(format!(
            "{accounted} pages read, the layout has {expected} descriptors"
        )));
    }
    let (pages_in_file, bytes_written) =
        if incomplete.is_some() { writer.close_incomplete()? } else { (writer.pages(), writer.finish()?) };
    let mut excluded = pass.excluded;
    excluded.absorb(counts.content);
    Ok(DumpReport::new(plan, excluded, pass.layout.max_mapnr, pages_in_file, incomplete)
        .with_run(plan, counts.encode, bytes_written, counts.mmap_fallback, Some(pass.seconds))
        .with_lost(counts.lost))
}
