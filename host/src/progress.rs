//! Progress on stderr: a bar for a person at a terminal, a line every few
//! seconds on a console or in a log, or makedumpfile's progress line
//! (kdump-format.md §7.3) for scripts and log parsers written for it, which
//! ends each line with a newline when stderr is not a terminal. Beside it,
//! for tools, a stream of JSON lines (`--progress-fd`).

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

/// How often vmdump's own lines are written when stderr is not a terminal.
pub const DEFAULT_LINE_INTERVAL: Duration = Duration::from_secs(5);
/// How often the JSON stream gets a line.
pub const DEFAULT_JSON_INTERVAL: Duration = Duration::from_secs(1);

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressStyle {
    /// Not at all.
    #[default]
    Off,
    /// vmdump's bar on a terminal, five times a second; elsewhere a line
    /// every few seconds.
    Bar,
    /// makedumpfile's line, once a second and at 100 %.
    Makedumpfile,
}

/// What progress a run shows: on stderr, and as JSON lines for tools.
#[derive(Debug, Clone, Default)]
pub struct ProgressOptions {
    /// The form on stderr.
    pub style: ProgressStyle,
    /// How often lines are written (vmdump's lines and the JSON stream);
    /// `None` for their defaults. makedumpfile's line keeps its second.
    pub interval: Option<Duration>,
    /// Where the JSON lines go (`--progress-fd`).
    pub json: Option<Arc<File>>,
}

impl ProgressOptions {
    /// The same, without the stderr form (the JSON stream stays).
    pub fn quiet(&self) -> Self {
        Self { style: ProgressStyle::Off, ..self.clone() }
    }
}

/// One line of the JSON stream.
#[derive(Debug, Serialize)]
pub struct JsonLine<'a, T: Serialize> {
    /// `copying`, or `done` for the last line.
    pub phase: &'a str,
    /// Seconds since the phase began (the run, for `done`).
    pub elapsed_s: f64,
    /// What the phase reports.
    #[serde(flatten)]
    pub fields: T,
}

/// Writes `line` to the JSON stream, a line of its own.
pub fn write_json<T: Serialize>(json: &File, line: &JsonLine<'_, T>) {
    if let Ok(mut text) = serde_json::to_vec(line) {
        text.push(b'\n');
        let _ = (&*json).write_all(&text);
    }
}

/// The JSON fields of a phase under way.
#[derive(Debug, Serialize)]
struct Moving {
    pages_done: u64,
    pages_total: u64,
    bytes_written: u64,
    eta_s: Option<f64>,
}

/// Progress of one phase.
pub struct Progress {
    label: &'static str,
    total: u64,
    style: ProgressStyle,
    terminal: bool,
    interval: Option<Duration>,
    json: Option<Arc<File>>,
    started: Instant,
    last_draw: Option<Instant>,
    last_json: Option<Instant>,
    spins: usize,
}

impl Progress {
    /// Progress of `total` units as `options` ask.
    pub fn new(label: &'static str, total: u64, options: &ProgressOptions) -> Self {
        let terminal = std::io::stderr().is_terminal();
        Self {
            label,
            total,
            style: options.style,
            terminal,
            interval: options.interval,
            json: options.json.clone(),
            started: Instant::now(),
            last_draw: None,
            last_json: None,
            spins: 0,
        }
    }

    fn interval(&self) -> Duration {
        match self.style {
            ProgressStyle::Makedumpfile => Duration::from_secs(1),
            ProgressStyle::Bar if self.terminal => Duration::from_millis(200),
            _ => self.interval.unwrap_or(DEFAULT_LINE_INTERVAL),
        }
    }

    /// Redraws for `done` units and `bytes` written if enough time has passed.
    pub fn update(&mut self, done: u64, bytes: u64) {
        let due = |last: Option<Instant>, every: Duration| last.is_none_or(|t| t.elapsed() >= every);
        if self.json.is_some() && due(self.last_json, self.interval.unwrap_or(DEFAULT_JSON_INTERVAL)) {
            self.last_json = Some(Instant::now());
            self.json_line(done, bytes);
        }
        if self.style == ProgressStyle::Off || !due(self.last_draw, self.interval()) {
            return;
        }
        self.last_draw = Some(Instant::now());
        self.draw(done, bytes);
    }

    fn json_line(&self, done: u64, bytes: u64) {
        let Some(json) = &self.json else { return };
        let fields =
            Moving { pages_done: done, pages_total: self.total, bytes_written: bytes, eta_s: self.eta(done) };
        write_json(
            json,
            &JsonLine { phase: "copying", elapsed_s: self.started.elapsed().as_secs_f64(), fields },
        );
    }

    /// Seconds left at the rate so far, once some work is done.
    fn eta(&self, done: u64) -> Option<f64> {
        let fraction = self.fraction(done);
        let elapsed = self.started.elapsed().as_secs_f64();
        (fraction > 0.0).then(|| (elapsed / fraction - elapsed).max(0.0))
    }

    fn fraction(&self, done: u64) -> f64 {
        if self.total == 0 { 1.0 } else { done as f64 / self.total as f64 }
    }

    fn draw(&mut self, done: u64, bytes: u64) {
        let line = match self.style {
            ProgressStyle::Off => return,
            ProgressStyle::Bar if self.terminal => self.bar_line(done),
            ProgressStyle::Bar => self.plain_line(done, bytes),
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

    /// `vmdump: Copying data: 45.2 % (12345 of 27301 pages, 120.3 MiB
    /// written), 12s elapsed, 15s left`: a line for a console or a log.
    fn plain_line(&self, done: u64, bytes: u64) -> String {
        let left = self.eta(done).map_or("time left unknown".into(), |s| format!("{s:.0}s left"));
        format!(
            "vmdump: {}: {:.1} % ({done} of {} pages, {:.1} MiB written), {:.0}s elapsed, {left}\n",
            self.label,
            self.fraction(done) * 100.0,
            self.total,
            bytes as f64 / f64::from(1 << 20),
            self.started.elapsed().as_secs_f64()
        )
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

    /// Draws where the phase ended (`done` units, `bytes` written) and
    /// ends the line.
    pub fn finish(&mut self, done: u64, bytes: u64) {
        self.json_line(done, bytes);
        match self.style {
            ProgressStyle::Off => {}
            ProgressStyle::Bar => {
                self.draw(done, bytes);
                if self.terminal {
                    let _ = writeln!(std::io::stderr(), "{:.1}s", self.started.elapsed().as_secs_f64());
                }
            }
            ProgressStyle::Makedumpfile => {
                self.draw(done, bytes);
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
        let options = ProgressOptions { style: ProgressStyle::Makedumpfile, ..Default::default() };
        let mut p = Progress { terminal: false, ..Progress::new("Copying data", 1000, &options) };
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
