//! Progress on stderr: a bar for a person at a terminal, or makedumpfile's
//! progress line (kdump-format.md §7.3) for scripts and log parsers written
//! for it, which ends each line with a newline when stderr is not a terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressStyle {
    /// Not at all.
    #[default]
    Off,
    /// vmdump's bar, only on a terminal, five times a second.
    Bar,
    /// makedumpfile's line, once a second and at 100 %.
    Makedumpfile,
}

/// Progress of one phase.
pub struct Progress {
    label: &'static str,
    total: u64,
    style: ProgressStyle,
    terminal: bool,
    started: Instant,
    last_draw: Option<Instant>,
    spins: usize,
}

impl Progress {
    /// Progress of `total` units in `style`.
    pub fn new(label: &'static str, total: u64, style: ProgressStyle) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let style = if style == ProgressStyle::Bar && !terminal { ProgressStyle::Off } else { style };
        Self { label, total, style, terminal, started: Instant::now(), last_draw: None, spins: 0 }
    }

    fn interval(&self) -> Duration {
        match self.style {
            ProgressStyle::Makedumpfile => Duration::from_secs(1),
            _ => Duration::from_millis(200),
        }
    }

    /// Redraws for `done` units if enough time has passed.
    pub fn update(&mut self, done: u64) {
        if self.style == ProgressStyle::Off || self.last_draw.is_some_and(|t| t.elapsed() < self.interval()) {
            return;
        }
        self.last_draw = Some(Instant::now());
        self.draw(done);
    }

    fn fraction(&self, done: u64) -> f64 {
        if self.total == 0 { 1.0 } else { done as f64 / self.total as f64 }
    }

    fn draw(&mut self, done: u64) {
        let line = match self.style {
            ProgressStyle::Off => return,
            ProgressStyle::Bar => self.bar_line(done),
            ProgressStyle::Makedumpfile => self.makedumpfile_line(done),
        };
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(line.as_bytes());
        let _ = err.flush();
    }

    fn bar_line(&self, done: u64) -> String {
        let fraction = self.fraction(done);
        let filled = ((fraction * 30.0) as usize).min(30);
        let elapsed = self.started.elapsed().as_secs_f64();
        let eta = if fraction > 0.0 { elapsed / fraction - elapsed } else { 0.0 };
        let bar = format!("{}{}", "#".repeat(filled), " ".repeat(30 - filled));
        format!("\r{} : [{bar}] {:5.1} % {eta:4.0}s left ", self.label, fraction * 100.0)
    }

    /// `\rLABEL (50 columns): [ 25.4 %] |           eta: 3s`, with a newline
    /// instead of the carriage return when stderr is not a terminal.
    fn makedumpfile_line(&mut self, done: u64) -> String {
        let permille = (self.fraction(done) * 1000.0) as u64;
        self.spins += 1;
        let spinner = ['/', '|', '\\', '-'][self.spins % 4];
        let elapsed = self.started.elapsed();
        let eta = match permille {
            0 => 0,
            p => (elapsed.as_millis() as u64 / p).saturating_sub(elapsed.as_secs()),
        };
        let body = format!(
            "{:<50}: [{:3}.{} %] {spinner}  {:>16}",
            self.label,
            permille / 10,
            permille % 10,
            eta_text(eta)
        );
        if self.terminal { format!("\r{body}") } else { format!("{body}\n") }
    }

    /// Draws 100 % and ends the line.
    pub fn finish(&mut self) {
        match self.style {
            ProgressStyle::Off => {}
            ProgressStyle::Bar => {
                self.draw(self.total);
                let _ = writeln!(std::io::stderr(), "{:.1}s", self.started.elapsed().as_secs_f64());
            }
            ProgressStyle::Makedumpfile => {
                self.draw(self.total);
                if self.terminal {
                    let _ = writeln!(std::io::stderr());
                }
            }
        }
    }
}

/// makedumpfile's ETA text (§7.3).
fn eta_text(seconds: u64) -> String {
    match seconds {
        s if s < 100 => format!("eta: {s}s"),
        s if s < 6000 => format!("eta: {}m{}s", s / 60, s % 60),
        s if s < 48 * 3600 => format!("eta: {}h{}m", s / 3600, s % 3600 / 60),
        s if s < 100 * 86400 => format!("eta: {}d{}h", s / 86400, s % 86400 / 3600),
        _ => "eta: >100day".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makedumpfile_lines_have_its_layout() {
        let mut p = Progress {
            label: "Copying data",
            total: 1000,
            style: ProgressStyle::Makedumpfile,
            terminal: false,
            started: Instant::now(),
            last_draw: None,
            spins: 0,
        };
        let line = p.makedumpfile_line(254);
        assert!(
            line.starts_with("Copying data                                      : [ 25.4 %] |"),
            "{line:?}"
        );
        assert!(line.ends_with("eta: 0s\n"), "{line:?}");
        assert_eq!(
            (eta_text(99), eta_text(100), eta_text(7200)),
            ("eta: 99s".into(), "eta: 1m40s".into(), "eta: 2h0m".into())
        );
    }
}
