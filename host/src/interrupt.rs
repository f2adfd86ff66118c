//! SIGINT, SIGTERM and SIGHUP during a dump. The first one sets a flag
//! that the dump checks between batches: it stops there and closes its
//! file as incomplete, as when the disk fills. A second one terminates the
//! process at once (the file then still reads as incomplete: its header
//! says so until the last byte is written). The handlers are signal-hook's,
//! which only store to atomics.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// The signals that close a dump early.
pub const SIGNALS: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// Whether one of [`SIGNALS`] arrived; the default never fires.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    caught: Arc<AtomicUsize>,
}

impl Interrupt {
    /// Catches [`SIGNALS`] for the rest of the process.
    ///
    /// # Errors
    /// A handler cannot be installed.
    pub fn on_signals() -> std::io::Result<Self> {
        let interrupt = Self::default();
        let once = Arc::new(AtomicBool::new(false));
        for signal in SIGNALS {
            // In this order: the second signal finds `once` set and terminates.
            signal_hook::flag::register_conditional_default(signal, Arc::clone(&once))?;
            signal_hook::flag::register(signal, Arc::clone(&once))?;
            signal_hook::flag::register_usize(signal, Arc::clone(&interrupt.caught), signal as usize)?;
        }
        Ok(interrupt)
    }

    /// The signal that arrived, if one did.
    pub fn caught(&self) -> Option<i32> {
        match self.caught.load(Ordering::Relaxed) {
            0 => None,
            signal => Some(signal as i32),
        }
    }
}

/// The signal's name, for messages.
pub fn name(signal: i32) -> String {
    match signal {
        SIGINT => "SIGINT".into(),
        SIGTERM => "SIGTERM".into(),
        SIGHUP => "SIGHUP".into(),
        other => format!("signal {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_never_fires_and_a_caught_signal_is_named() {
        let interrupt = Interrupt::default();
        assert_eq!(interrupt.caught(), None);
        interrupt.caught.store(SIGTERM as usize, Ordering::Relaxed);
        assert_eq!(interrupt.clone().caught().map(name).as_deref(), Some("SIGTERM"));
    }
}
