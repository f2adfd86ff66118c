//! A progress line on stderr, for a person watching a terminal: redrawn at
//! most five times a second, and only when stderr is a terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Progress of one phase.
pub struct Progress {
    label: &'static str,
    total: u64,
    enabled: bool,
    started: Instant,
    last_draw: Option<Instant>,
}

impl Progress {
    /// A progress line for `total` units; drawn only if `wanted` and stderr is a terminal.
    pub fn new(label: &'static str, total: u64, wanted: bool) -> Self {
        let enabled = wanted && std::io::stderr().is_terminal();
        Self { label, total, enabled, started: Instant::now(), last_draw: None }
    }

    /// Redraws for `done` units if enough time has passed.
    pub fn update(&mut self, done: u64) {
        if !self.enabled || self.last_draw.is_some_and(|t| t.elapsed() < Duration::from_millis(200)) {
            return;
        }
        self.last_draw = Some(Instant::now());
        self.draw(done);
    }

    fn draw(&self, done: u64) {
        let fraction = if self.total == 0 { 1.0 } else { done as f64 / self.total as f64 };
        let width = 30;
        let filled = ((fraction * width as f64) as usize).min(width);
        let elapsed = self.started.elapsed().as_secs_f64();
        let eta = if fraction > 0.0 { elapsed / fraction - elapsed } else { 0.0 };
        let bar = format!("{}{}", "#".repeat(filled), " ".repeat(width - filled));
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{} : [{bar}] {:5.1} % {:4.0}s left ", self.label, fraction * 100.0, eta);
        let _ = err.flush();
    }

    /// Draws 100 % and ends the line.
    pub fn finish(&mut self) {
        if self.enabled {
            self.draw(self.total);
            let _ = writeln!(std::io::stderr(), "{:.1}s", self.started.elapsed().as_secs_f64());
        }
    }
}
