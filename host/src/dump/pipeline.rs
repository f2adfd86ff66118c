//! One run of the pages through the pipeline (`crate::pool`): the reader
//! cuts the kept pages into batches, the workers run the content stage and
//! encode, and the caller's `drain` gets every slot in pfn order. Both
//! output formats (kdump, ELF) are written this way.

use std::ops::Range;

use super::lost::LostPages;
use super::{DumpError, Slot, Worker, reader_ranges};
use crate::codec::{Codec, EncodeStats, PageEncoder};
use crate::exclude::{Counts, ExcludeError};
use crate::input::BatchReader;
use crate::plan::Plan;

/// What one run over the pages covers.
pub struct Pass {
    /// The pfns of the split piece, if it is one.
    pub piece: Option<Range<u64>>,
    /// Workers.
    pub threads: usize,
    /// Compress with the plan's codec (else every page is stored raw).
    pub encode: bool,
}

/// What a run counted.
pub struct PassCounts {
    /// What the reader's metadata stages left out (the same as the first
    /// pass's, when both passes agree).
    pub metadata: Counts,
    /// What the workers' content stages left out.
    pub content: Counts,
    /// The encoders' counts.
    pub encode: EncodeStats,
    /// Why mmap was given up for pread, if it was.
    pub mmap_fallback: Option<String>,
    /// The pages that could not be read, among those drained.
    pub lost: LostPages,
}

/// Runs the kept pages of the plan through the workers. Returns the counts
/// and how the run ended (the first error of the reader or of `drain`).
///
/// # Errors
/// The metadata stages cannot start.
pub fn run_pages(
    plan: &Plan<'_>,
    pass: Pass,
    mut drain: impl FnMut(&mut Slot) -> Result<(), DumpError>,
) -> Result<(PassCounts, Result<(), DumpError>), DumpError> {
    let (run, input) = (plan.run(), plan.input());
    let sparse = plan.exclusion().metadata().is_some();
    let ranges = reader_ranges(plan, pass.piece)?;
    let mut reader = BatchReader::new(input, ranges, run.batch_pages, run.read_mode, sparse);
    let codec = plan.codec().filter(|_| pass.encode);
    let mut lost = LostPages::default();
    let fill = |slot: &mut Slot| reader.fill(&mut slot.pages);
    let new_worker =
        || Worker::new(codec.map_or_else(PageEncoder::raw, Codec::encoder), plan.exclusion().content_stage());
    let work = |worker: &mut Worker<'_>, slot: &mut Slot| worker.encode(slot);
    let drain = |slot: &mut Slot| {
        lost.note(slot);
        drain(slot)
    };
    // One worker on one CPU: threads would only hand the slots to each other.
    let (workers, ran) = if pass.threads == 1 && run.cpus == 1 {
        crate::pool::run_inline(Slot::default(), fill, new_worker, work, drain)
    } else {
        let slots = (0..4 * pass.threads + 4).map(|_| Slot::default()).collect();
        crate::pool::run_ordered(slots, pass.threads, fill, new_worker, work, drain)
    };
    let (mut content, mut encode) = (Counts::default(), EncodeStats::default());
    for worker in &workers {
        content.absorb(worker.content_counts());
        encode += worker.encode_stats();
    }
    let counts = PassCounts {
        metadata: reader.ranges().counts(),
        content,
        encode,
        mmap_fallback: reader.mmap_failure().map(|e| e.to_string()),
        lost,
    };
    Ok((counts, ran))
}

/// How a run that wrote an output ended: `None` when complete, the reason
/// when the output can be closed as an incomplete dump (the disk filled,
/// the size limit was reached, a filter plugin changed its answer, a
/// signal arrived); any
/// other error as it is.
///
/// # Errors
/// The run's error, unless it is one an incomplete dump answers.
pub fn cut_short(ran: Result<(), DumpError>, plan: &Plan<'_>) -> Result<Option<String>, DumpError> {
    let closable = plan.run().close_incomplete;
    match ran {
        Ok(()) => Ok(None),
        Err(DumpError::Write(e)) if e.is_out_of_space() && closable => Ok(Some(e.to_string())),
        Err(DumpError::Exclude(e @ ExcludeError::Changed { .. })) if closable => Ok(Some(e.to_string())),
        Err(e @ DumpError::Interrupted(_)) if closable => Ok(Some(e.to_string())),
        Err(e) => Err(e),
    }
}
