//! One run of the pages through the pipeline (`crate::pool`): the reader
//! cuts the kept pages into batches, the workers drop zero pages, run the
//! content filters and encode, and the caller's `drain` gets every slot in
//! pfn order. Both output formats (kdump, ELF) are written this way.

use super::{DumpConfig, DumpError, Filters, Slot, Worker, reader_ranges, worker_totals};
use crate::codec::{Codec, EncodeStats, PageEncoder};
use crate::filters::FilterStage;
use crate::input::{BatchReader, Vmcore};

/// What a run counted.
pub struct PassCounts {
    /// Zero pages the workers dropped (dump level bit 1).
    pub zero_pages: u64,
    /// The encoders' counts.
    pub encode: EncodeStats,
    /// Pages each filter plugin excluded, by name.
    pub plugin_excluded: Vec<(String, u64)>,
    /// Pages the metadata filter plugins skipped before reading.
    pub skipped: u64,
    /// Why mmap was given up for pread, if it was.
    pub mmap_fallback: Option<String>,
}

/// Runs the kept pages of `vmcore` (of the split piece of `config`, if
/// any) through the workers, encoding with `codec` (raw without one).
/// Returns the counts and how the run ended (the first error of the reader
/// or of `drain`).
///
/// # Errors
/// The filters cannot start.
pub fn run_pages(
    vmcore: &Vmcore,
    codec: Option<&Codec>,
    filters: Filters<'_>,
    config: &DumpConfig,
    drain: impl FnMut(&mut Slot) -> Result<(), DumpError>,
) -> Result<(PassCounts, Result<(), DumpError>), DumpError> {
    let (filter, plugins, _) = filters;
    let exclude_zero = config.dump_level.excludes_zero_pages();
    let sparse = filter.is_some() || !plugins.metadata.is_empty();
    let ranges = reader_ranges(vmcore, filters, config.piece.clone())?;
    let mut reader = BatchReader::new(vmcore, ranges, config.batch_pages, config.read_mode, sparse);
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
        drain,
    );
    let (zero_pages, encode, plugin_excluded) = worker_totals(&workers, reader.ranges().counts());
    let counts = PassCounts {
        zero_pages,
        encode,
        plugin_excluded,
        skipped: reader.ranges().skipped(),
        mmap_fallback: reader.mmap_failure().map(|e| e.to_string()),
    };
    Ok((counts, ran))
}

/// How a run that wrote an output ended: `None` when complete, the reason
/// when the disk filled (or the size limit was reached) and the output can
/// be closed as an incomplete dump; any other error as it is.
///
/// # Errors
/// The run's error, unless it is one an incomplete dump answers.
pub fn cut_short(ran: Result<(), DumpError>, config: &DumpConfig) -> Result<Option<String>, DumpError> {
    match ran {
        Ok(()) => Ok(None),
        Err(DumpError::Write(e)) if e.is_out_of_space() && config.close_incomplete => Ok(Some(e.to_string())),
        Err(e) => Err(e),
    }
}
