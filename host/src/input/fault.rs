//! Surviving a fault on a mapped input window: reading a mapped page that
//! the file no longer has (it shrank under the mapping) or that the kernel
//! refuses (a poisoned page of `/proc/vmcore`) raises SIGBUS, which would
//! kill the dump.
//!
//! Each [`Window`](super::Window) registers its address range here for as
//! long as it is mapped. A SIGBUS handler, installed once, looks the
//! faulting address up: inside a registered window, it maps an anonymous
//! zero page over the faulting page (so the access that faulted completes
//! when the handler returns) and records the fault on the window; anywhere
//! else, it hands the signal to the handler that was there before (Rust's
//! own, or the default action, which ends the process as without us).
//! Readers of a window check [`Guard::faulted_within`] after touching its
//! pages and read them again with pread, which tells exactly which pages
//! cannot be read (input/reader.rs).
//!
//! A signal handler sees only process-wide state, so the registry is the
//! one static table of the host: fixed-size, lock-free, touched by the
//! handler with atomic loads and stores only.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

/// Windows that can be mapped at once. A window that finds no free entry
/// is not mapped (the reader falls back to pread).
const ENTRIES: usize = 1024;

/// One registered window: its address range and the faults it took.
struct Entry {
    taken: AtomicBool,
    start: AtomicUsize,
    /// 0 while the entry is free or being filled in.
    end: AtomicUsize,
    /// Lowest and highest faulting addresses (`usize::MAX` and 0: none).
    lowest_fault: AtomicUsize,
    highest_fault: AtomicUsize,
}

impl Entry {
    const fn new() -> Self {
        Self {
            taken: AtomicBool::new(false),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            lowest_fault: AtomicUsize::new(usize::MAX),
            highest_fault: AtomicUsize::new(0),
        }
    }

    fn contains(&self, addr: usize) -> bool {
        // `end` is published last and cleared first, so a non-zero `end`
        // comes with the `start` of the same window.
        let end = self.end.load(Ordering::Acquire);
        end != 0 && self.start.load(Ordering::Relaxed) <= addr && addr < end
    }
}

static ENTRIES_TABLE: [Entry; ENTRIES] = [const { Entry::new() }; ENTRIES];
/// The SIGBUS action that was in place before ours.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
static INSTALL: Once = Once::new();
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(0);

/// A window's registration: faults in its range are survived while it lives.
pub struct Guard {
    entry: &'static Entry,
}

impl Guard {
    /// Registers `bytes` (a mapping that outlives the guard). `None` when
    /// every entry is taken or the handler cannot be installed.
    pub fn register(bytes: &[u8]) -> Option<Self> {
        if !install() {
            return None;
        }
        let entry = ENTRIES_TABLE
            .iter()
            .find(|e| e.taken.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok())?;
        let start = bytes.as_ptr() as usize;
        entry.lowest_fault.store(usize::MAX, Ordering::Relaxed);
        entry.highest_fault.store(0, Ordering::Relaxed);
        entry.start.store(start, Ordering::Relaxed);
        entry.end.store(start + bytes.len(), Ordering::Release);
        Some(Self { entry })
    }

    /// Whether a page in `bytes` (inside the window) has faulted: its bytes
    /// read as zero and are not the file's.
    pub fn faulted_within(&self, bytes: &[u8]) -> bool {
        let (start, end) = (bytes.as_ptr() as usize, bytes.as_ptr() as usize + bytes.len());
        let lowest = self.entry.lowest_fault.load(Ordering::Acquire);
        let highest = self.entry.highest_fault.load(Ordering::Acquire);
        lowest < end && highest >= start
    }

    /// Whether any page of the window has faulted.
    pub fn faulted(&self) -> bool {
        self.entry.lowest_fault.load(Ordering::Acquire) != usize::MAX
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.entry.end.store(0, Ordering::Release);
        self.entry.start.store(0, Ordering::Relaxed);
        self.entry.taken.store(false, Ordering::Release);
    }
}

/// Installs the handler once; whether it is in place.
fn install() -> bool {
    INSTALL.call_once(|| {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        PAGE_SIZE.store(usize::try_from(page).unwrap_or(4096), Ordering::Relaxed);
        // SAFETY: `action` is fully initialised (zeroed, then the handler,
        // flags and an empty mask); `previous` is written by the kernel. The
        // handler is async-signal-safe: atomics, mmap and sigaction only.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&raw mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &raw const action, &raw mut previous) == 0 {
                let _ = PREVIOUS.set(previous);
            }
        }
    });
    PREVIOUS.get().is_some()
}

extern "C" fn on_sigbus(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE_SIZE.load(Ordering::Relaxed);
    if let Some(entry) = ENTRIES_TABLE.iter().find(|e| e.contains(addr)) {
        let at = addr & !(page - 1);
        // SAFETY: [at, at + page) lies in a read-only private mapping of the
        // input that a live `Window` owns (its guard is dropped before it
        // is unmapped, and the faulting thread holds it). Mapping a zero
        // page over it changes only what that window reads, which its
        // readers check through the guard and read again with pread.
        let mapped = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if mapped != libc::MAP_FAILED {
            entry.lowest_fault.fetch_min(at, Ordering::AcqRel);
            entry.highest_fault.fetch_max(at + page - 1, Ordering::AcqRel);
            return;
        }
    }
    pass_on(signal, info, context);
}

/// Hands a fault that is not ours to the action that was there before.
fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let previous = PREVIOUS.get().map(|p| (p.sa_sigaction, p.sa_flags));
    match previous {
        Some((handler, flags)) if flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: with SA_SIGINFO, sa_sigaction is a three-argument
            // handler installed by someone else (Rust's runtime).
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(handler) };
            handler(signal, info, context);
        }
        Some((handler, _)) if handler != libc::SIG_DFL && handler != libc::SIG_IGN => {
            // SAFETY: without SA_SIGINFO, a handler that is neither SIG_DFL
            // nor SIG_IGN is a one-argument function.
            let handler: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
            handler(signal);
        }
        _ => {
            // The default action: when this returns, the access faults again
            // and the kernel ends the process with SIGBUS, as without us.
            // SAFETY: a zeroed sigaction with SIG_DFL is a valid action.
            unsafe {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &raw const default, std::ptr::null_mut());
            }
        }
    }
}
