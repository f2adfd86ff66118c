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
    // The code the phases before this pass ran goes back to the page
    // cache: the peak is this pass's alone (crate::resident).
    crate::resident::release_clean_file_pages();
    let (run, input) = (plan.run(), plan.input());
    let sparse = plan.exclusion().metadata().is_some();
    let ranges = reader_ranges(plan, pass.piece)?;
    // One worker: threads would only hand the slots to each other.
    let inline = pass.threads == 1;
    let page_size = input.page_size() as usize;
    let shape = if inline {
        Shape::inline(run.batch_pages, page_size)
    } else {
        Shape::new(pass.threads, run.batch_pages, page_size)
    };
    let mut reader = BatchReader::new(input, ranges, shape.batch_pages, run.read_mode, sparse);
    let codec = plan.codec().filter(|_| pass.encode);
    let mut lost = LostPages::default();
    let (mut filled, settled) = (0, if inline { 0 } else { 2 * shape.slots });
    let fill = |slot: &mut Slot| {
        filled += 1;
        if filled <= settled && filled.is_power_of_two() {
            // The workers are starting, then at work: the code that started
            // them (threads, their malloc arenas and TLS, in libc, ld.so and
            // vmdump) goes back to the page cache too (crate::resident),
            // 0.5-1 MiB that a capture kernel of several CPUs would
            // otherwise keep, and would keep on top of the slots as they
            // fill. At fills 1, 2, 4, ... up to twice the slots, so that it
            // goes as soon as it has run, whenever the workers get to it,
            // at a few reads of smaps for the whole pass.
            crate::resident::release_clean_file_pages();
        }
        reader.fill(&mut slot.pages)
    };
    let new_worker =
        || Worker::new(codec.map_or_else(PageEncoder::raw, Codec::encoder), plan.exclusion().content_stage());
    let work = |worker: &mut Worker<'_>, slot: &mut Slot| worker.encode(slot);
    let drain = |slot: &mut Slot| {
        lost.note(slot);
        drain(slot)
    };
    let (workers, ran) = if inline {
        crate::pool::run_inline(Slot::default(), fill, new_worker, work, drain)
    } else {
        let slots = (0..shape.slots).map(|_| Slot::default()).collect();
        crate::pool::run_ordered(slots, shape.workers, fill, new_worker, work, drain)
    };
    let (mut content, mut encode) = (Counts::default(), EncodeStats::default());
    for worker in &workers {
        content.absorb(worker.content_counts());
        encode += worker.encode_stats();
    }
    // The slots and the workers' contexts are free now: their memory and
    // the code of the pass go back before the phases after it add theirs.
    drop(workers);
    crate::resident::release_free_heap();
    crate::resident::release_clean_file_pages();
    let counts = PassCounts {
        metadata: reader.ranges().counts(),
        content,
        encode,
        mmap_fallback: reader.mmap_failure().map(|e| e.to_string()),
        lost,
    };
    Ok((counts, ran))
}

/// What the slots in flight may hold, whatever the number of workers: a
/// slot holds a batch of input pages (its own buffer, or a part of a
/// mapped window) and as many stored bytes at most.
const IN_FLIGHT_BYTES: usize = 32 << 20;

/// The bytes of input pages a batch holds, whatever the number of workers
/// (its stored bytes are up to as many). Small, because a slot's stored
/// bytes stay resident at the most it ever held, and the slots are what a
/// capture kernel pays for each worker besides the codec's context: with
/// batches of 1 MiB, four workers in a 4-CPU capture kernel cost 11 MiB
/// more than makedumpfile's four threads (issue 41); at 64 KiB a worker's
/// slot holds 64 KiB at the most. It costs a write and a pass through
/// the pool's channels a batch: pinned to one core, a -l -d 1 dump of a
/// vmcore in tmpfs took 2 % longer than at 128 KiB, and that 4 % longer
/// than at 512 KiB; from a capture kernel's /proc/vmcore, which reads far
/// slower, none that shows.
const SLOT_BYTES: usize = 64 << 10;

/// How many workers run, how many slots circulate, and how many pages a
/// batch holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    workers: usize,
    slots: usize,
    batch_pages: usize,
}

impl Shape {
    /// For `threads` workers: a slot a worker and one more (filled while
    /// the workers encode, or back early and waiting for its turn to be
    /// written), batches of [`SLOT_BYTES`] at most; workers are capped
    /// where the slots would not fit [`IN_FLIGHT_BYTES`] (255), so that
    /// memory stays within the budget instead of growing with the CPUs of
    /// the machine. Two slots a worker and two more ran no faster on two
    /// cores (-c -d 1 of vmcore-SK from one to two workers, medians of 5:
    /// 1.73x, against 1.62-1.70x with two more and 1.60-1.62x with one
    /// more, the machine moving as much between runs) and cost a capture
    /// kernel of four CPUs 320 KiB more (issue 41).
    fn new(threads: usize, batch_pages: usize, page_size: usize) -> Self {
        let batch_pages = Self::slot_pages(batch_pages, page_size);
        let slot_bytes = 2 * batch_pages * page_size.max(1);
        let workers = threads.clamp(1, (IN_FLIGHT_BYTES / slot_bytes).saturating_sub(1).max(1));
        Self { workers, slots: workers + 1, batch_pages }
    }

    /// One worker and one slot.
    fn inline(batch_pages: usize, page_size: usize) -> Self {
        Self { workers: 1, slots: 1, batch_pages: Self::slot_pages(batch_pages, page_size) }
    }

    /// `batch_pages`, at most [`SLOT_BYTES`] of them (one at least).
    fn slot_pages(batch_pages: usize, page_size: usize) -> usize {
        batch_pages.clamp(1, (SLOT_BYTES / page_size.max(1)).max(1))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_get_a_slot_each_and_one_more_and_batches_of_64_kib() {
        for threads in [1, 2, 3, 32] {
            let shape = Shape { workers: threads, slots: threads + 1, batch_pages: 16 };
            assert_eq!(Shape::new(threads, 256, 4096), shape);
        }
        assert_eq!(Shape::new(4, 256, 65536).batch_pages, 1);
    }

    #[test]
    fn memory_in_flight_stays_within_the_budget_whatever_the_workers_and_pages() {
        for page_size in [4096, 16384, 65536] {
            for threads in [1, 2, 8, 64, 256, 1024, 10_000] {
                let shape = Shape::new(threads, 256, page_size);
                let bytes = shape.slots * 2 * shape.batch_pages * page_size;
                assert!(bytes <= IN_FLIGHT_BYTES, "{threads} workers, {page_size} B pages: {shape:?}");
                assert!(shape.slots > shape.workers, "{threads} workers: {shape:?}");
                assert!(shape.batch_pages >= 1 && shape.workers >= 1);
            }
        }
        assert_eq!(Shape::new(64, 256, 4096), Shape { workers: 64, slots: 65, batch_pages: 16 });
        assert_eq!(Shape::new(1024, 256, 4096).workers, 255);
        assert_eq!(Shape::new(1024, 256, 65536).workers, 255);
    }

    #[test]
    fn one_worker_on_one_cpu_gets_one_small_slot() {
        assert_eq!(Shape::inline(256, 4096), Shape { workers: 1, slots: 1, batch_pages: 16 });
        assert_eq!(Shape::inline(256, 65536), Shape { workers: 1, slots: 1, batch_pages: 1 });
        assert_eq!(Shape::inline(8, 4096).batch_pages, 8);
        assert_eq!(Shape::inline(256, 1 << 20).batch_pages, 1);
    }
}
