//! The ordered worker pipeline: one reader fills slots, N workers transform
//! them, one writer drains them in the order they were filled.
//!
//! Slots circulate through bounded channels (free → work → done → free), so
//! the number in flight, the reorder window and the memory they hold are all
//! bounded by the slot count, whatever the size of the input. Each worker
//! builds its own state once on its own thread (one plugin context per
//! worker, D3) and hands it back at the end. See dependencies.md §5.

use std::collections::BTreeMap;

use crossbeam_channel::{Receiver, Sender, bounded};

/// A slot with the sequence number it was filled under.
struct Numbered<S> {
    seq: u64,
    slot: S,
}

/// Runs the pipeline to the end, or to the first error of `fill` or `drain`.
///
/// - `fill(slot)` (reader thread) loads the next piece of work into a
///   recycled slot and returns `Ok(false)` when there is nothing left;
/// - `new_worker()` builds one worker's state on its thread;
/// - `work(state, slot)` transforms a slot (never fails: policy lives inside);
/// - `drain(slot)` (calling thread) consumes slots in fill order.
///
/// Returns every worker's final state, and the first error of `fill` or
/// `drain` (after it, the other threads stop early): the states count what
/// was done even when the run stopped short.
pub fn run_ordered<S, W, E, Fill, New, Work, Drain>(
    slots: Vec<S>,
    workers: usize,
    mut fill: Fill,
    new_worker: New,
    work: Work,
    mut drain: Drain,
) -> (Vec<W>, Result<(), E>)
where
    S: Send,
    W: Send,
    E: Send,
    Fill: FnMut(&mut S) -> Result<bool, E> + Send,
    New: Fn() -> W + Sync,
    Work: Fn(&mut W, &mut S) + Sync,
    Drain: FnMut(&mut S) -> Result<(), E>,
{
    let capacity = slots.len().max(1);
    let (free_tx, free_rx) = bounded::<S>(capacity);
    let (work_tx, work_rx) = bounded::<Numbered<S>>(capacity);
    let (done_tx, done_rx) = bounded::<Numbered<S>>(capacity);
    for slot in slots {
        free_tx.send(slot).expect("free list has room for every slot");
    }
    std::thread::scope(|scope| {
        let named = |name: String| std::thread::Builder::new().name(name);
        let reader = named("vmdump-reader".into())
            .spawn_scoped(scope, move || read_loop(&free_rx, work_tx, &mut fill))
            .expect("spawn the reader thread");
        let handles: Vec<_> = (0..workers.max(1))
            .map(|i| {
                let (work_rx, done_tx) = (work_rx.clone(), done_tx.clone());
                let (new_worker, work) = (&new_worker, &work);
                named(format!("vmdump-worker-{i}"))
                    .spawn_scoped(scope, move || work_loop(&work_rx, &done_tx, new_worker, work))
                    .expect("spawn a worker thread")
            })
            .collect();
        drop((work_rx, done_tx));
        let drained = write_loop(done_rx, &free_tx, &mut drain);
        drop(free_tx);
        let states: Vec<W> = handles.into_iter().map(|h| h.join().expect("worker thread panicked")).collect();
        let read = reader.join().expect("reader thread panicked");
        (states, drained.and(read))
    })
}

fn read_loop<S, E>(
    free: &Receiver<S>,
    work: Sender<Numbered<S>>,
    fill: &mut impl FnMut(&mut S) -> Result<bool, E>,
) -> Result<(), E> {
    for seq in 0.. {
        let Ok(mut slot) = free.recv() else { return Ok(()) }; // writer stopped
        if !fill(&mut slot)? {
            return Ok(());
        }
        if work.send(Numbered { seq, slot }).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

fn work_loop<S, W>(
    work: &Receiver<Numbered<S>>,
    done: &Sender<Numbered<S>>,
    new_worker: &impl Fn() -> W,
    transform: &impl Fn(&mut W, &mut S),
) -> W {
    let mut state = new_worker();
    for mut item in work.iter() {
        transform(&mut state, &mut item.slot);
        if done.send(item).is_err() {
            break;
        }
    }
    state
}

/// Drains slots in sequence order; on error, returns at once (dropping the
/// receivers unblocks the reader and the workers).
fn write_loop<S, E>(
    done: Receiver<Numbered<S>>,
    free: &Sender<S>,
    drain: &mut impl FnMut(&mut S) -> Result<(), E>,
) -> Result<(), E> {
    let mut pending = BTreeMap::new();
    let mut next = 0u64;
    for item in done.iter() {
        pending.insert(item.seq, item.slot);
        while let Some(mut slot) = pending.remove(&next) {
            drain(&mut slot)?;
            next += 1;
            let _ = free.send(slot);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(workers: usize, slots: usize, items: u64) -> (Vec<u64>, usize) {
        let mut next = 0u64;
        let mut seen = Vec::new();
        let (states, result) = run_ordered::<_, u64, (), _, _, _, _>(
            vec![0u64; slots],
            workers,
            |slot| {
                *slot = next;
                next += 1;
                Ok(next <= items)
            },
            || 0u64,
            |count, slot| {
                // Uneven work so that workers finish out of order.
                std::thread::sleep(std::time::Duration::from_micros((*slot % 7) * 50));
                *slot *= 10;
                *count += 1;
            },
            |slot| {
                seen.push(*slot);
                Ok(())
            },
        );
        result.unwrap();
        (seen, states.iter().sum::<u64>() as usize)
    }

    #[test]
    fn output_keeps_fill_order_for_any_worker_count() {
        let expected: Vec<u64> = (0..200).map(|i| i * 10).collect();
        for workers in [1, 2, 4] {
            let (seen, worked) = run(workers, 3, 200);
            assert_eq!(seen, expected, "{workers} workers");
            assert_eq!(worked, 200);
        }
    }

    #[test]
    fn a_drain_error_stops_everything() {
        let mut n = 0;
        let (_, result) = run_ordered::<_, (), &str, _, _, _, _>(
            vec![(); 4],
            2,
            |_| Ok(true), // endless input: only the error can stop it
            || (),
            |_, _| (),
            |_| {
                n += 1;
                if n == 50 { Err("disk full") } else { Ok(()) }
            },
        );
        assert_eq!(result.err(), Some("disk full"));
    }

    #[test]
    fn a_fill_error_is_returned() {
        let mut n = 0;
        let (_, result) = run_ordered::<_, (), &str, _, _, _, _>(
            vec![(); 2],
            2,
            |_| {
                n += 1;
                if n == 10 { Err("unreadable page") } else { Ok(true) }
            },
            || (),
            |_, _| (),
            |_| Ok(()),
        );
        assert_eq!(result.err(), Some("unreadable page"));
    }
}
