//! The dump engine: an ELF vmcore into a kdump-compressed file.
//!
//! One reader thread cuts the RAM pages into batches (mmap windows or
//! pread), N workers drop zero pages and compress the rest with their own
//! plugin context, and the calling thread writes descriptors and data in pfn
//! order (`crate::pool`). Memory is bounded by the slots in flight, whatever
//! the size of the dumped machine.

mod elf;
mod filter;
mod pipeline;
mod report;
mod slot;
mod split;
mod struct_pages;
mod writer;

use vmdump_format::FormatError;
use vmdump_format::kdump::Layout;

pub use elf::dump_elf;
pub use filter::{BothFilters, DumpableRanges, MetadataFilter, WINDOW_PFNS, WindowFilter, bit};
use pipeline::{cut_short, run_pages};
pub use report::DumpReport;
pub use slot::{PageRecord, Slot, Worker, is_zero_page};
pub use split::{DEFAULT_SPLITBLOCK_BYTES, split_pieces};
pub use struct_pages::{KernelView, StructPageFilter, StructPages};
pub use writer::{BitmapWindow, KeptPages, count_bits, for_each_bitmap_window};
use writer::{KdumpWriter, Preamble, write_bitmaps};

use crate::classify::ClassCounts;
use crate::codec::{Codec, EncodeStats};
use crate::filters::{FilterSet, PluginRanges, add_counts};
use crate::input::{ReadError, ReadMode, Vmcore};
use crate::level::DumpLevel;
use crate::output::sink::{Sink, SinkError};
use crate::progress::{Progress, ProgressStyle};

/// How to dump.
#[derive(Debug, Clone)]
pub struct DumpConfig {
    /// Dump level (`-d`).
    pub dump_level: DumpLevel,
    /// Compression workers (at least 1).
    pub threads: usize,
    /// mmap windows or pread.
    pub read_mode: ReadMode,
    /// Pages per batch.
    pub batch_pages: usize,
    /// How to show progress.
    pub progress: ProgressStyle,
    /// When the disk fills or the size limit is reached, close the file as
    /// an incomplete dump (status flag, readable up to where it stopped)
    /// instead of failing; only for outputs that can be rewritten.
    pub close_incomplete: bool,
    /// The pfns of the split piece to write (kdump-format.md §2.3), or
    /// `None` for a whole dump.
    pub piece: Option<std::ops::Range<u64>>,
}

impl Default for DumpConfig {
    fn default() -> Self {
        Self {
            dump_level: DumpLevel::ZERO,
            threads: 1,
            read_mode: ReadMode::Mmap { window_bytes: 4 << 20 },
            batch_pages: 256,
            progress: ProgressStyle::Off,
            close_incomplete: false,
            piece: None,
        }
    }
}

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
    /// Page classification failed (missing VMCOREINFO keys, unreadable struct pages).
    #[error("{0}")]
    Classify(crate::classify::ClassifyError),
    /// A broken invariant: a bug in vmdump.
    #[error("internal error: {0}")]
    Internal(String),
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

impl From<FormatError> for DumpError {
    fn from(e: FormatError) -> Self {
        Self::Layout(e)
    }
}

/// Refuses, before anything is written, a level whose classified bits no
/// metadata filter honours (a caller's mistake: the plan makes the filter).
///
/// # Errors
/// [`DumpError::Internal`] naming the bits.
fn check_level(level: DumpLevel, have_filter: bool) -> Result<(), DumpError> {
    if !level.classified().is_empty() && !have_filter {
        let bits = level.classified().list();
        return Err(DumpError::Internal(format!(
            "dump level {level}: no struct page filter for bits {bits}"
        )));
    }
    Ok(())
}

fn preamble_header(
    vmcore: &Vmcore,
    layout: &Layout,
    codec: Option<&Codec>,
) -> vmdump_format::kdump::DiskDumpHeader {
    let status = codec.map_or(0, |c| c.format().code());
    let mut header = layout.disk_dump_header(status, vmcore.elf().notes.nr_cpus);
    if let Some(info) = vmcore.vmcoreinfo() {
        header.fill_from_vmcoreinfo(info);
    }
    if let Some(utsname) = vmcore.utsname() {
        header.utsname = *utsname;
    }
    header
}

/// The sub header: phys_base from VMCOREINFO, the dump level, and the
/// piece's pfns in a split piece.
fn sub_header(vmcore: &Vmcore, layout: &Layout, config: &DumpConfig) -> vmdump_format::kdump::SubHeader {
    let phys_base = vmcore.vmcoreinfo().and_then(|i| i.phys_base()).unwrap_or(0);
    let mut sub = layout.sub_header(phys_base, i32::from(config.dump_level.bits()));
    if let Some(piece) = &config.piece {
        sub.split = 1;
        (sub.start_pfn, sub.end_pfn) = (piece.start, piece.end);
        (sub.start_pfn_64, sub.end_pfn_64) = (piece.start, piece.end);
    }
    sub
}

/// Split pieces share one 2nd bitmap, written before any page is read:
/// filter plugins, which decide on the way, cannot take part.
fn check_piece(piece: Option<&std::ops::Range<u64>>, plugins: &FilterSet) -> Result<(), DumpError> {
    if piece.is_some() && !(plugins.metadata.is_empty() && plugins.content.is_empty()) {
        return Err(DumpError::Unsupported(
            "filter plugins cannot be used with --split: the pieces share one 2nd bitmap, \
             written before any page is read"
                .into(),
        ));
    }
    Ok(())
}

/// The pfn ranges the reader reads: every RAM run, or what a filter keeps.
type Ranges<'a> = Box<dyn Iterator<Item = Result<std::ops::Range<u64>, DumpError>> + Send + 'a>;

/// What the filters of a dump are: the struct page filter, the filter
/// plugins, and the kernel view for plugins that read struct pages.
pub type Filters<'a> = (Option<&'a dyn MetadataFilter>, &'a FilterSet, Option<&'a KernelView<'a>>);

/// What the first pass found.
struct FirstPass {
    layout: Layout,
    excluded: ClassCounts,
    /// Pages of the split piece, for one.
    piece_pages: Option<u64>,
    seconds: f64,
}

/// The first pass: the bitmaps and the count of pages the metadata filter
/// keeps, which places the data.
fn first_pass(
    vmcore: &Vmcore,
    filter: Option<&dyn MetadataFilter>,
    sink: &mut dyn Sink,
    piece: Option<&std::ops::Range<u64>>,
) -> Result<FirstPass, DumpError> {
    let phys = vmcore.phys();
    let page_size =
        u32::try_from(vmcore.page_size()).map_err(|_| DumpError::Unsupported("page size".into()))?;
    let notes = &vmcore.elf().notes;
    let mut excluded = ClassCounts::default();
    let bitmaps = Layout::from_notes(phys.max_pfn(), page_size, notes, 0)?;
    let started = std::time::Instant::now();
    let mut cursor = filter.map(|f| f.cursor()).transpose()?;
    let kept = write_bitmaps(sink, &bitmaps, phys, cursor.as_deref_mut(), &mut excluded, piece)?;
    let layout = Layout::from_notes(phys.max_pfn(), page_size, notes, kept.total)?;
    let piece_pages = piece.map(|_| kept.in_piece);
    Ok(FirstPass { layout, excluded, piece_pages, seconds: started.elapsed().as_secs_f64() })
}

/// The pages the reader reads: RAM less what the metadata filters exclude.
fn reader_ranges<'a>(
    vmcore: &'a Vmcore,
    (filter, plugins, kernel): Filters<'a>,
    piece: Option<std::ops::Range<u64>>,
) -> Result<PluginRanges<'a, Ranges<'a>>, DumpError> {
    let phys = vmcore.phys();
    let mut ranges: Ranges<'a> = match filter {
        Some(f) => Box::new(DumpableRanges::new(phys, f.cursor()?)),
        None => Box::new(phys.runs().iter().map(|r| Ok(r.start_pfn..r.end_pfn))),
    };
    if let Some(piece) = piece {
        let clip = move |r: std::ops::Range<u64>| r.start.max(piece.start)..r.end.min(piece.end);
        let inside = ranges.map(move |r| r.map(clip)).filter(|r| r.as_ref().map_or(true, |r| !r.is_empty()));
        ranges = Box::new(inside);
    }
    let struct_pages = kernel.map(KernelView::struct_pages);
    Ok(PluginRanges::new(ranges, &plugins.metadata, vmcore.page_size(), struct_pages))
}

/// Zero pages, encoder counts and filter plugin counts of every worker.
fn worker_totals(
    workers: &[Worker<'_>],
    mut plugin_excluded: Vec<(String, u64)>,
) -> (u64, EncodeStats, Vec<(String, u64)>) {
    let (mut zero_pages, mut encode) = (0, EncodeStats::default());
    for worker in workers {
        let (zero, stats) = worker.counts();
        zero_pages += zero;
        encode += stats;
        add_counts(&mut plugin_excluded, worker.filter_counts());
    }
    (zero_pages, encode, plugin_excluded)
}

/// The filter plugins that failed, with their first error.
fn filter_failures(plugins: &FilterSet) -> Vec<(String, String)> {
    let all = plugins.metadata.iter().chain(&plugins.content);
    all.filter_map(|f| f.failure().map(|e| (f.name().to_owned(), e.to_string()))).collect()
}

/// Dumps `vmcore` into `sink`, compressing with `codec` (raw pages when
/// `None`) and leaving out what the `filters` exclude.
///
/// # Errors
/// [`DumpError`]; nothing is written for an unsupported request.
pub fn dump(
    vmcore: &Vmcore,
    codec: Option<&Codec>,
    filters: Filters<'_>,
    config: &DumpConfig,
    sink: &mut dyn Sink,
) -> Result<DumpReport, DumpError> {
    let (filter, plugins, _) = filters;
    check_level(config.dump_level, filter.is_some())?;
    check_piece(config.piece.as_ref(), plugins)?;
    let pass = first_pass(vmcore, filter, sink, config.piece.as_ref())?;
    let (layout, excluded, classify_seconds) = (pass.layout, pass.excluded, pass.seconds);
    let exclude_zero = config.dump_level.excludes_zero_pages();
    let preamble = Preamble {
        header: preamble_header(vmcore, &layout, codec),
        sub_header: sub_header(vmcore, &layout, config),
        notes: &vmcore.elf().notes.bytes,
        layout: &layout,
        exclude_zero,
        piece_pages: pass.piece_pages,
    };
    let mut writer = KdumpWriter::begin(sink, &preamble)?;
    let mut progress = Progress::new("Copying data", writer.expected_pages(), config.progress);
    let (counts, ran) = run_pages(vmcore, codec, filters, config, |slot| {
        writer.write_slot(slot)?;
        progress.update(writer.pages());
        Ok(())
    })?;
    progress.finish();
    let incomplete = cut_short(ran, config)?;
    let accounted = writer.pages() + writer.dropped() + counts.skipped;
    if incomplete.is_none() && accounted != writer.expected_pages() {
        let expected = writer.expected_pages();
        return Err(DumpError::Internal(format!(
            "{accounted} pages read, the layout has {expected} descriptors"
        )));
    }
    let (pages_in_file, bytes_written) =
        if incomplete.is_some() { writer.close_incomplete()? } else { (writer.pages(), writer.finish()?) };
    Ok(DumpReport {
        dump_level: config.dump_level,
        max_mapnr: layout.max_mapnr,
        ram_pages: vmcore.phys().ram_pages(),
        pages_in_file,
        incomplete,
        excluded,
        plugin_excluded: counts.plugin_excluded,
        filter_failures: filter_failures(plugins),
        classify_seconds: filter.map(|_| classify_seconds),
        zero_pages: counts.zero_pages,
        encode: counts.encode,
        bytes_written,
        compressor: codec.map(|c| c.name().to_owned()),
        plugin_failure: codec.and_then(Codec::failure).map(|e| e.to_string()),
        mmap_fallback: counts.mmap_fallback,
    })
}
