//! Whether a plugin still works: the first failure disables it for the rest
//! of the run (D5), and is kept for the report. Shared by every worker.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use vmdump_sdk::client::CallError;

/// The state of one plugin across all threads.
#[derive(Default)]
pub struct Health {
    disabled: AtomicBool,
    first_failure: Mutex<Option<CallError>>,
}

impl Health {
    /// Whether the plugin was disabled.
    pub fn is_disabled(&self) -> bool {
        self.disabled.load(Ordering::Relaxed)
    }

    /// Disables the plugin, keeping the first failure.
    pub fn fail(&self, error: CallError) {
        self.disabled.store(true, Ordering::Relaxed);
        if let Ok(mut first) = self.first_failure.lock() {
            first.get_or_insert(error);
        }
    }

    /// The first failure, if any.
    pub fn failure(&self) -> Option<CallError> {
        self.first_failure.lock().map(|f| f.clone()).unwrap_or(None)
    }
}
