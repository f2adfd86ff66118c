//! The dump engine: an ELF vmcore into a kdump-compressed file.
//!
//! One reader thread cuts the RAM pages into batches (mmap windows or
//! pread), N workers drop zero pages and compress the rest with their own
//! plugin context, and the calling thread writes descriptors and data in pfn
//! order (`crate::pool`). Memory is bounded by the slots in flight, whatever
//! the size of the dumped machine.

mod report;
mod slot;
mod writer;

use vmdump_format::FormatError;
use vmdump_format::kdump::Layout;

pub use report::DumpReport;
pub use slot::{PageRecord, Slot, Worker, is_zero_page};
use writer::{KdumpWriter, Preamble};

use crate::codec::{Codec, EncodeStats, PageEncoder};
use crate::input::{BatchReader, ReadError, ReadMode, Vmcore};
use crate::output::sink::{Sink, SinkError};
use crate::progress::Progress;

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
    /// Show a progress bar.
    pub progress: bool,
}

impl Default for DumpConfig {
    fn default() -> Self {
        Self {
            dump_level: DL_EXCLUDE_ZERO,
            threads: 1,
            read_mode: ReadMode::Mmap { window_bytes: 4 << 20 },
            batch_pages: 256,
            progress: false,
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

/// Refuses, before anything is written, what this version cannot dump.
///
/// # Errors
/// [`DumpError::Unsupported`] naming the dump level bits.
pub fn check_level(level: u8) -> Result<(), DumpError> {
    if level & !DL_EXCLUDE_ZERO != 0 {
        return Err(DumpError::Unsupported(format!(
            "dump level {level} asks to exclude page cache, user or free pages (bits 2, 4, 8, 16): \
             page classification is not implemented yet; use -d 0 or -d 1"
        )));
    }
    Ok(())
}

fn preamble_header(vmcore: &Vmcore, layout: &Layout, codec: Option<&Codec>) -> vmdump_format::kdump::DiskDumpHeader {
    let status = codec.map_or(0, |c| c.format().code());
    let mut header = layout.disk_dump_header(status, vmcore.elf().notes.nr_cpus);
    if let Some(info) = vmcore.vmcoreinfo() {
        header.fill_from_vmcoreinfo(info);
    }
    header
}

/// Dumps `vmcore` into `sink`, compressing with `codec` (raw pages when `None`).
///
/// # Errors
/// [`DumpError`]; nothing is written for an unsupported request.
pub fn dump(
    vmcore: &Vmcore,
    codec: Option<&Codec>,
    config: &DumpConfig,
    sink: &mut dyn Sink,
) -> Result<DumpReport, DumpError> {
    check_level(config.dump_level)?;
    let phys = vmcore.phys();
    let page_size = u32::try_from(vmcore.page_size()).map_err(|_| DumpError::Unsupported("page size".into()))?;
    let layout = Layout::from_notes(phys.max_pfn(), page_size, &vmcore.elf().notes, phys.ram_pages())?;
    let phys_base = vmcore.vmcoreinfo().and_then(|i| i.phys_base()).unwrap_or(0);
    let exclude_zero = config.dump_level & DL_EXCLUDE_ZERO != 0;
    let preamble = Preamble {
        header: preamble_header(vmcore, &layout, codec),
        sub_header: layout.sub_header(phys_base, i32::from(config.dump_level)),
        notes: &vmcore.elf().notes.bytes,
        layout: &layout,
        phys,
        exclude_zero,
    };
    let mut writer = KdumpWriter::begin(sink, &preamble)?;
    let ram = phys.runs().iter().map(|r| Ok::<_, DumpError>(r.start_pfn..r.end_pfn));
    let mut reader = BatchReader::new(vmcore, ram, config.batch_pages, config.read_mode, false);
    let mut progress = Progress::new("Copying data", layout.num_dumpable, config.progress);
    let slots = (0..4 * config.threads + 4).map(|_| Slot::default()).collect();
    let workers = crate::pool::run_ordered(
        slots,
        config.threads,
        |slot: &mut Slot| reader.fill(&mut slot.pages),
        || Worker::new(codec.map_or_else(PageEncoder::raw, Codec::encoder), exclude_zero),
        |worker: &mut Worker<'_>, slot: &mut Slot| worker.encode(slot),
        |slot: &mut Slot| {
            writer.write_slot(slot)?;
            progress.update(writer.pages());
            Ok(())
        },
    )?;
    progress.finish();
    if writer.pages() != writer.expected_pages() {
        return Err(DumpError::Internal(format!(
            "{} pages read, the layout has {} descriptors",
            writer.pages(),
            writer.expected_pages()
        )));
    }
    let bytes_written = writer.finish()?;
    let (mut zero_pages, mut encode) = (0, EncodeStats::default());
    for worker in &workers {
        let (zero, stats) = worker.counts();
        zero_pages += zero;
        encode += stats;
    }
    Ok(DumpReport {
        dump_level: config.dump_level,
        max_mapnr: layout.max_mapnr,
        ram_pages: phys.ram_pages(),
        pages_in_file: layout.num_dumpable,
        zero_pages,
        encode,
        bytes_written,
        compressor: codec.map(|c| c.name().to_owned()),
        plugin_failure: codec.and_then(Codec::failure).map(|e| e.to_string()),
        mmap_fallback: reader.mmap_failure().map(|e| e.to_string()),
    })
}
