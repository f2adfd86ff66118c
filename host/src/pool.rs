//! The ordered worker pipeline: the calling thread fills slots, N workers
//! transform them, and the calling thread drains them in the order they
//! were filled.
//!
//! Slots circulate (free → work → done → free) through two bounded
//! channels and the caller's free list, so the number in flight, the
//! reorder window and the memory they hold are all bounded by the slot
//! count, whatever the size of the input. Filling and draining share the
//! calling thread: both are light beside the workers' encoding (a mapped
//! window, a write), and a thread of their own each would cost a capture
//! kernel a stack, a malloc arena and CPU time taken from the workers
//! (issue 41). Each worker builds its own state once on its own thread
//! (one plugin context per worker, D3) and hands it back at the end. See
//! dependencies.md §5.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crossbeam_channel::{Receiver, Sender, TryRecvError, bounded};

/// A pipeline thread panicked (a bug, in vmdump or in code it runs): the
/// run stops with this instead of hanging or losing the thread's slot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {thread} thread panicked: {message}")]
pub struct Panicked {
    /// The thread's name.
    pub thread: String,
    /// The panic message.
    pub message: String,
}

impl Panicked {
    fn from_payload(thread: &str, payload: &(dyn std::any::Any + Send)) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".into());
        Self { thread: thread.into(), message }
    }
}

/// A slot with the sequence number it was filled under; a worker that
/// panicked on it sends it back marked, so the writer stops at once.
struct Numbered<S> {
    seq: u64,
    slot: S,
    panicked: Option<Panicked>,
}

/// Runs the pipeline to the end, or to the first error of `fill` or `drain`
/// or the first panic of any thread.
///
/// - `fill(slot)` (calling thread) loads the next piece of work into a
///   recycled slot and returns `Ok(false)` when there is nothing left;
/// - `new_worker()` builds one worker's state on its thread;
/// - `work(state, slot)` transforms a slot (never fails: policy lives inside);
/// - `drain(slot)` (calling thread) consumes slots in fill order.
///
/// Returns the final state of every worker that did not panic, and how the
/// run ended. Shutdown needs no timeout: a worker blocks only on the work
/// queue, which the calling thread drops when it stops, and the calling
/// thread only on the done queue, which the workers drop when they stop,
/// so the first failure anywhere unblocks every thread.
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
    E: From<Panicked>,
    Fill: FnMut(&mut S) -> Result<bool, E>,
    New: Fn() -> W + Sync,
    Work: Fn(&mut W, &mut S) + Sync,
    Drain: FnMut(&mut S) -> Result<(), E>,
{
    let capacity = slots.len().max(1);
    let (work_tx, work_rx) = bounded::<Numbered<S>>(capacity);
    let (done_tx, done_rx) = bounded::<Numbered<S>>(capacity);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.max(1))
            .map(|i| {
                let (work_rx, done_tx) = (work_rx.clone(), done_tx.clone());
                let (new_worker, work) = (&new_worker, &work);
                let name = format!("vmdump-worker-{i}");
                std::thread::Builder::new()
                    .name(name.clone())
                    .spawn_scoped(scope, move || work_loop(&name, &work_rx, &done_tx, new_worker, work))
                    .expect("spawn a worker thread")
            })
            .collect();
        drop((work_rx, done_tx));
        let mut feeder = Feeder { free: slots, pending: BTreeMap::new(), sent: 0, drained: 0 };
        let fed = feeder.run(&work_tx, &done_rx, &mut fill, &mut drain);
        // The workers stop: no more work comes, and what they finish has
        // nowhere to go.
        drop((work_tx, done_rx));
        let mut states = Vec::with_capacity(handles.len());
        let mut failed = None;
        for handle in handles {
            match handle.join().expect("a worker catches its panics") {
                Ok(state) => states.push(state),
                Err(panicked) => failed = failed.or(Some(panicked)),
            }
        }
        let ended = match (fed, failed) {
            (Err(e), _) => Err(e),
            (Ok(()), Some(panicked)) => Err(E::from(panicked)),
            (Ok(()), None) if feeder.drained != feeder.sent => Err(E::from(Panicked {
                thread: "vmdump-writer".into(),
                message: format!("{} of {} slots came back from the workers", feeder.drained, feeder.sent),
            })),
            (Ok(()), None) => Ok(()),
        };
        (states, ended)
    })
}

/// [`run_ordered`] on the calling thread alone, with one slot: fill, work,
/// drain, again, for a machine with one CPU, where the pipeline's threads
/// would only hand the slot to each other. Same results, same errors; a
/// panic of any of the three is returned as [`Panicked`] too.
pub fn run_inline<S, W, E, Fill, New, Work, Drain>(
    mut slot: S,
    mut fill: Fill,
    new_worker: New,
    work: Work,
    mut drain: Drain,
) -> (Vec<W>, Result<(), E>)
where
    E: From<Panicked>,
    Fill: FnMut(&mut S) -> Result<bool, E>,
    New: Fn() -> W,
    Work: Fn(&mut W, &mut S),
    Drain: FnMut(&mut S) -> Result<(), E>,
{
    let thread = "vmdump-main";
    let panicked =
        |payload: Box<dyn std::any::Any + Send>| E::from(Panicked::from_payload(thread, &*payload));
    let mut state = match catch_unwind(AssertUnwindSafe(new_worker)) {
        Ok(state) => state,
        Err(payload) => return (Vec::new(), Err(panicked(payload))),
    };
    let ended = catch_unwind(AssertUnwindSafe(|| {
        while fill(&mut slot)? {
            work(&mut state, &mut slot);
            drain(&mut slot)?;
        }
        Ok(())
    }))
    .unwrap_or_else(|payload| Err(panicked(payload)));
    (vec![state], ended)
}

/// Transforms slots until the feeder stops. A panic in
/// `new_worker` or `transform` ends this worker: the slot it held goes back
/// to the writer marked, so the run stops instead of waiting for it.
fn work_loop<S, W>(
    name: &str,
    work: &Receiver<Numbered<S>>,
    done: &Sender<Numbered<S>>,
    new_worker: &impl Fn() -> W,
    transform: &impl Fn(&mut W, &mut S),
) -> Result<W, Panicked> {
    let mut state = catch_unwind(AssertUnwindSafe(new_worker))
        .map_err(|payload| Panicked::from_payload(name, &*payload))?;
    for mut item in work.iter() {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| transform(&mut state, &mut item.slot))) {
            let panicked = Panicked::from_payload(name, &*payload);
            item.panicked = Some(panicked.clone());
            let _ = done.send(item);
            return Err(panicked);
        }
        if done.send(item).is_err() {
            break;
        }
    }
    Ok(state)
}

/// The calling thread's part: it fills free slots and hands them to the
/// workers, and drains what comes back in fill order. It drains whatever
/// is ready before it fills the next slot, and waits only when every slot
/// is out (or the input has ended and some still are).
struct Feeder<S> {
    free: Vec<S>,
    /// Slots back from the workers ahead of their turn.
    pending: BTreeMap<u64, S>,
    sent: u64,
    drained: u64,
}

impl<S> Feeder<S> {
    /// Runs until the input ends and every slot sent has been drained, or
    /// to the first error of `fill` or `drain`, a panic of either (named
    /// after the reader's and the writer's part), or of a worker. Returns
    /// early, without an error, if every worker has stopped: the caller
    /// learns why from the workers.
    fn run<E: From<Panicked>>(
        &mut self,
        work: &Sender<Numbered<S>>,
        done: &Receiver<Numbered<S>>,
        fill: &mut impl FnMut(&mut S) -> Result<bool, E>,
        drain: &mut impl FnMut(&mut S) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut input_left = true;
        loop {
            loop {
                match done.try_recv() {
                    Ok(item) => self.take_back(item, drain)?,
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return Ok(()),
                }
            }
            if input_left && let Some(mut slot) = self.free.pop() {
                if guarded("vmdump-reader", || fill(&mut slot))? {
                    if work.send(Numbered { seq: self.sent, slot, panicked: None }).is_err() {
                        return Ok(());
                    }
                    self.sent += 1;
                } else {
                    input_left = false;
                }
                continue;
            }
            if self.drained == self.sent {
                return Ok(());
            }
            let Ok(item) = done.recv() else { return Ok(()) };
            self.take_back(item, drain)?;
        }
    }

    /// A slot back from a worker: drained now if it is its turn (with any
    /// that were waiting for it), else kept until it is.
    fn take_back<E: From<Panicked>>(
        &mut self,
        item: Numbered<S>,
        drain: &mut impl FnMut(&mut S) -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some(panicked) = item.panicked {
            return Err(E::from(panicked));
        }
        self.pending.insert(item.seq, item.slot);
        while let Some(mut slot) = self.pending.remove(&self.drained) {
            guarded("vmdump-writer", || drain(&mut slot))?;
            self.drained += 1;
            self.free.push(slot);
        }
        Ok(())
    }
}

/// `f`, with a panic returned as [`Panicked`] under `part`'s name.
fn guarded<T, E: From<Panicked>>(part: &str, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|payload| Err(E::from(Panicked::from_payload(part, &*payload))))
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[derive(Debug, PartialEq)]
    enum Stop {
        Failed(&'static str),
        Panicked(Panicked),
    }

    impl From<Panicked> for Stop {
        fn from(p: Panicked) -> Self {
            Self::Panicked(p)
        }
    }

    /// Runs `f` on a thread and fails the test if it has not returned within
    /// ten seconds (a hang), instead of hanging the test run.
    fn within_seconds<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || tx.send(f()));
        rx.recv_timeout(Duration::from_secs(10)).expect("the pipeline hung")
    }

    fn run(workers: usize, slots: usize, items: u64) -> (Vec<u64>, usize) {
        let mut next = 0u64;
        let mut seen = Vec::new();
        let (states, result) = run_ordered::<_, u64, Stop, _, _, _, _>(
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
        let result = within_seconds(|| {
            let mut n = 0;
            run_ordered::<_, (), Stop, _, _, _, _>(
                vec![(); 4],
                2,
                |_| Ok(true), // endless input: only the error can stop it
                || (),
                |_, _| (),
                |_| {
                    n += 1;
                    if n == 50 { Err(Stop::Failed("disk full")) } else { Ok(()) }
                },
            )
            .1
        });
        assert_eq!(result.err(), Some(Stop::Failed("disk full")));
    }

    #[test]
    fn a_fill_error_is_returned() {
        let result = within_seconds(|| {
            let mut n = 0;
            run_ordered::<_, (), Stop, _, _, _, _>(
                vec![(); 2],
                2,
                |_| {
                    n += 1;
                    if n == 10 { Err(Stop::Failed("unreadable page")) } else { Ok(true) }
                },
                || (),
                |_, _| (),
                |_| Ok(()),
            )
            .1
        });
        assert_eq!(result.err(), Some(Stop::Failed("unreadable page")));
    }

    /// A worker panicking on one slot, among other workers that go on, on
    /// endless input: the run must stop with the panic, not wait forever
    /// for the slot that never comes back.
    #[test]
    fn a_worker_panic_stops_the_run_whatever_the_worker_count() {
        for (workers, at) in [(1, 0), (1, 7), (2, 3), (4, 11), (8, 40)] {
            let result = within_seconds(move || {
                let mut n = 0u64;
                run_ordered::<_, (), Stop, _, _, _, _>(
                    vec![0u64; 4 * workers + 4],
                    workers,
                    |slot| {
                        (*slot, n) = (n, n + 1);
                        Ok(true) // endless
                    },
                    || (),
                    |_, slot| assert!(*slot != at, "bad page {at}"),
                    |_| Ok(()),
                )
                .1
            });
            match result {
                Err(Stop::Panicked(p)) => {
                    assert!(p.thread.starts_with("vmdump-worker-"), "{p:?}");
                    assert_eq!(p.message, format!("bad page {at}"));
                }
                other => panic!("{workers} workers, panic at {at}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_reader_panic_or_a_worker_that_cannot_start_is_an_error() {
        let read = within_seconds(|| {
            run_ordered::<_, (), Stop, _, _, _, _>(
                vec![(); 2],
                2,
                |_| panic!("torn"),
                || (),
                |_, _| (),
                |_| Ok(()),
            )
            .1
        });
        assert!(
            matches!(&read, Err(Stop::Panicked(p)) if p.thread == "vmdump-reader" && p.message == "torn")
        );
        let start = within_seconds(|| {
            let mut n = 0;
            let (states, ended) = run_ordered::<_, u32, Stop, _, _, _, _>(
                vec![(); 2],
                3,
                |_| {
                    n += 1;
                    Ok(n < 100)
                },
                || panic!("no context"),
                |_, _| (),
                |_| Ok(()),
            );
            (states.len(), ended)
        });
        assert_eq!(start.0, 0);
        assert!(matches!(&start.1, Err(Stop::Panicked(p)) if p.message == "no context"), "{:?}", start.1);
    }

    #[test]
    fn inline_gives_the_same_slots_and_the_same_errors() {
        let mut next = 0u64;
        let mut seen = Vec::new();
        let (states, ended) = run_inline::<_, u64, Stop, _, _, _, _>(
            0u64,
            |slot| {
                (*slot, next) = (next, next + 1);
                Ok(next <= 200)
            },
            || 0,
            |count, slot| {
                *slot *= 10;
                *count += 1;
            },
            |slot| {
                seen.push(*slot);
                if *slot == 1000 { Err(Stop::Failed("disk full")) } else { Ok(()) }
            },
        );
        assert_eq!(ended, Err(Stop::Failed("disk full")));
        assert_eq!(seen, (0..=100).map(|i| i * 10).collect::<Vec<_>>());
        assert_eq!(states, vec![101]);
        let (_, ended) = run_inline::<_, (), Stop, _, _, _, _>(
            0u64,
            |slot| {
                *slot += 1;
                Ok(true)
            },
            || (),
            |_, slot| assert!(*slot != 7, "bad page 7"),
            |_| Ok(()),
        );
        assert!(matches!(&ended, Err(Stop::Panicked(p)) if p.message == "bad page 7"), "{ended:?}");
    }
}
