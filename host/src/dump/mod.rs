//! The dump engine: an ELF vmcore into a kdump-compressed file.
//!
//! One reader thread cuts the RAM pages into batches (mmap windows or
//! pread), N workers drop zero pages and compress the rest with their own
//! plugin context, and the calling thread writes descriptors and data in pfn
//! order (`crate::pool`). Memory is bounded by the slots in flight, whatever
//! the size of the dumped machine.

mod filter;
mod report;
mod slot;
mod struct_pages;
mod writer;

use vmdump_format::FormatError;
use vmdump_format::kdump::Layout;

pub use filter::{DumpableRanges, MetadataFilter, WINDOW_PFNS, WindowFilter, bit};
pub use report::DumpReport;
pub use slot::{PageRecord, Slot, Worker, is_zero_page};
pub use struct_pages::{KernelView, StructPageFilter, StructPages};
use writer::{KdumpWriter, Preamble, write_ram_bitmap};

use crate::classify::ClassCounts;
use crate::codec::{Codec, EncodeStats, PageEncoder};
use crate::filters::{FilterSet, FilterStage, PluginRanges, add_counts};
use crate::input::{BatchReader, ReadError, ReadMode, Vmcore};
use crate::output::sink::{Sink, SinkError};
use crate::progress::{Progress, ProgressStyle};

/// Dump level bit 1: exclude zero pages.
pub const DL_EXCLUDE_ZERO: u8 = 1;

/// How to dump.
#[derive(Debug, Clone)]
pub struct DumpConfig {
    /// Dump level (`-d`).
    pub dump_level: u8,
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
}

impl Default for DumpConfig {
    fn default() -> Self {
        Self {
            dump_level: DL_EXCLUDE_ZERO,
            threads: 1,
            read_mode: ReadMode::Mmap { window_bytes: 4 << 20 },
            batch_pages: 256,
            progress: ProgressStyle::Off,
            close_incomplete: false,
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

/// Refuses, before anything is written, what this version cannot dump:
/// dump level bits above 1 without a metadata filter to honour them.
///
/// # Errors
/// [`DumpError::Unsupported`] naming the dump level bits.
pub fn check_level(level: u8, have_filter: bool) -> Result<(), DumpError> {
    if level > 31 {
        return Err(DumpError::Unsupported(format!("dump level {level} is out of range 0..=31")));
    }
    if level & !DL_EXCLUDE_ZERO != 0 && !have_filter {
        return Err(DumpError::Unsupported(format!(
            "dump level {level} asks to exclude page cache, user or free pages (bits 2, 4, 8, 16): \
             page classification is not implemented yet; use -d 0 or -d 1"
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
    header
}

/// The pfn ranges the reader reads: every RAM run, or what a filter keeps.
type Ranges<'a> = Box<dyn Iterator<Item = Result<std::ops::Range<u64>, DumpError>> + Send + 'a>;

/// Dumps `vmcore` into `sink`, compressing with `codec` (raw pages when
/// `None`) and leaving out what `filter` excludes.
///
/// # Errors
/// [`DumpError`]; nothing is written for an unsupported request.
pub fn dump(
    vmcore: &Vmcore,
    codec: Option<&Codec>,
    (filter, plugins, kernel): (Option<&dyn MetadataFilter>, &FilterSet, Option<&KernelView<'_>>),
    config: &DumpConfig,
    sink: &mut dyn Sink,
) -> Result<DumpReport, DumpError> {
    check_level(config.dump_level, filter.is_some())?;
    let phys = vmcore.phys();
    let page_size =
        u32::try_from(vmcore.page_size()).map_err(|_| DumpError::Unsupported("page size".into()))?;
    let notes = &vmcore.elf().notes;
    let mut excluded = ClassCounts::default();
    let bitmaps = Layout::from_notes(phys.max_pfn(), page_size, notes, 0)?;
    let started = std::time::Instant::now();
    let mut cursor = filter.map(|f| f.cursor()).transpose()?;
    let dumpable = write_ram_bitmap(sink, &bitmaps, phys, cursor.as_deref_mut(), &mut excluded)?;
    drop(cursor);
    let bitmap_seconds = started.elapsed().as_secs_f64();
    let layout = Layout::from_notes(phys.max_pfn(), page_size, notes, dumpable)?;
    let phys_base = vmcore.vmcoreinfo().and_then(|i| i.phys_base()).unwrap_or(0);
    let exclude_zero = config.dump_level & DL_EXCLUDE_ZERO != 0;
    let preamble = Preamble {
        header: preamble_header(vmcore, &layout, codec),
        sub_header: layout.sub_header(phys_base, i32::from(config.dump_level)),
        notes: &notes.bytes,
        layout: &layout,
        exclude_zero,
    };
    let mut writer = KdumpWriter::begin(sink, &preamble)?;
    let ranges: Ranges<'_> = match filter {
        Some(f) => Box::new(DumpableRanges::new(phys, f.cursor()?)),
        None => Box::new(phys.runs().iter().map(|r| Ok(r.start_pfn..r.end_pfn))),
    };
    let struct_pages = kernel.map(KernelView::struct_pages);
    let ranges = PluginRanges::new(ranges, &plugins.metadata, vmcore.page_size(), struct_pages);
    let sparse = filter.is_some() || !plugins.metadata.is_empty();
    let mut reader = BatchReader::new(vmcore, ranges, config.batch_pages, config.read_mode, sparse);
    let mut progress = Progress::new("Copying data", layout.num_dumpable, config.progress);
    let slots = (0..4 * config.threads + 4).map(|_| Slot::default()).collect();
    let (workers, ran) = crate::pool::run_ordered(
        slots,
        config.threads,
        |slot: &mut Slot| reader.fill(&mut slot.pages),
        || {
            let encoder = codec.map_or_else(PageEncoder::raw, Codec::encoder);
            Worker::new(encoder, exclude_zero, FilterStage::new(&plugins.content), vmcore.page_size())
        },
        |worker: &mut Worker<'_>, slot: &mut Slot| worker.encode(slot),
        |slot: &mut Slot| {
            writer.write_slot(slot)?;
            progress.update(writer.pages());
            Ok(())
        },
    );
    progress.finish();
    let incomplete = match ran {
        Ok(()) => None,
        Err(DumpError::Write(e)) if e.is_out_of_space() && config.close_incomplete => Some(e.to_string()),
        Err(e) => return Err(e),
    };
    let skipped = reader.ranges().skipped();
    if incomplete.is_none() && writer.pages() + writer.dropped() + skipped != writer.expected_pages() {
        return Err(DumpError::Internal(format!(
            "{} pages read, the layout has {} descriptors",
            writer.pages() + writer.dropped() + skipped,
            writer.expected_pages()
        )));
    }
    let (pages_in_file, bytes_written) =
        if incomplete.is_some() { writer.close_incomplete()? } else { (writer.pages(), writer.finish()?) };
    let (mut zero_pages, mut encode) = (0, EncodeStats::default());
    let mut plugin_excluded = reader.ranges().counts();
    for worker in &workers {
        let (zero, stats) = worker.counts();
        zero_pages += zero;
        encode += stats;
        add_counts(&mut plugin_excluded, worker.filter_counts());
    }
    let filter_failures = plugins
        .metadata
        .iter()
        .chain(&plugins.content)
        .filter_map(|f| f.failure().map(|e| (f.name().to_owned(), e.to_string())))
        .collect();
    Ok(DumpReport {
        dump_level: config.dump_level,
        max_mapnr: layout.max_mapnr,
        ram_pages: phys.ram_pages(),
        pages_in_file,
        incomplete,
        excluded,
        plugin_excluded,
        filter_failures,
        classify_seconds: filter.map(|_| bitmap_seconds),
        zero_pages,
        encode,
        bytes_written,
        compressor: codec.map(|c| c.name().to_owned()),
        plugin_failure: codec.and_then(Codec::failure).map(|e| e.to_string()),
        mmap_fallback: reader.mmap_failure().map(|e| e.to_string()),
    })
}
