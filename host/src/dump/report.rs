//! What a dump did, and makedumpfile's statistics report (kdump-format.md §7.4).

use std::fmt::Write;

use crate::classify::ClassCounts;
use crate::codec::{Codec, EncodeStats};
use crate::exclude::Counts;
use crate::plan::Plan;

use super::LostPages;
use super::self_check::{self, CounterCheck};

/// The counts of one dump.
#[derive(Debug, Clone, PartialEq)]
pub struct DumpReport {
    /// Dump level used.
    pub dump_level: crate::level::DumpLevel,
    /// Pfns covered by the bitmaps (`max_mapnr`).
    pub max_mapnr: u64,
    /// RAM pages of the input (1st bitmap).
    pub ram_pages: u64,
    /// Pages with a descriptor (2nd bitmap).
    pub pages_in_file: u64,
    /// Why the dump stopped short, when it did: the file is flagged
    /// incomplete and holds the pages written until then.
    pub incomplete: Option<String>,
    /// Pages a metadata filter left out, by category.
    pub excluded: ClassCounts,
    /// Pages each filter plugin excluded, by name.
    pub plugin_excluded: Vec<(String, u64)>,
    /// Filter plugins that failed (disabled, their pages kept), with the error.
    pub filter_failures: Vec<(String, String)>,
    /// Seconds of the classification pass (struct pages read, bitmaps
    /// written), when a metadata filter ran.
    pub classify_seconds: Option<f64>,
    /// Zero pages pointed at the shared zero page.
    pub zero_pages: u64,
    /// Compressed, incompressible and plugin-failed page counts.
    pub encode: EncodeStats,
    /// Bytes written to the output.
    pub bytes_written: u64,
    /// The compressor plugin, if any.
    pub compressor: Option<String>,
    /// The plugin's first failure: the dump is complete, with those pages raw.
    pub plugin_failure: Option<String>,
    /// Why mmap was given up for pread, if it was.
    pub mmap_fallback: Option<String>,
    /// Pages that could not be read from the input: recorded as lost, the
    /// file flagged incomplete.
    pub lost: LostPages,
    /// The classification's counts beside the kernel's counters, or why
    /// they could not be read.
    pub self_check: Result<Vec<CounterCheck>, String>,
    /// Why the kernel image in use could not be kept against its struct
    /// pages, when the level classifies them.
    pub image_unprotected: Option<String>,
    /// Bytes filters erased, and the eraseinfo lines that record them.
    pub erased: (u64, usize),
    /// The object the dump went to, and what its upload took.
    pub store: Option<(String, crate::store::TrafficCounts)>,
}

impl DumpReport {
    /// This report, of a dump that went to `object` with `traffic`.
    pub fn with_store(mut self, object: String, traffic: crate::store::TrafficCounts) -> Self {
        self.store = Some((object, traffic));
        self
    }

    /// The report of a dump of `plan`, once its pages are written: what was
    /// `excluded`, the pfns the bitmaps cover, the pages with a descriptor,
    /// and why it stopped short, if it did.
    pub(super) fn new(
        plan: &Plan<'_>,
        excluded: Counts,
        max_mapnr: u64,
        pages_in_file: u64,
        incomplete: Option<String>,
    ) -> Self {
        Self {
            dump_level: plan.level(),
            max_mapnr,
            ram_pages: plan.ram().ram_pages(),
            pages_in_file,
            incomplete,
            excluded: excluded.classes,
            plugin_excluded: excluded.plugins,
            filter_failures: plan.exclusion().plugins().failures(),
            classify_seconds: None,
            zero_pages: excluded.zero,
            encode: EncodeStats::default(),
            bytes_written: 0,
            compressor: plan.codec().map(|c| c.name().to_owned()),
            plugin_failure: plan.codec().and_then(Codec::failure).map(|e| e.to_string()),
            mmap_fallback: None,
            lost: LostPages::default(),
            image_unprotected: plan
                .exclusion()
                .kernel()
                .filter(|_| !plan.level().classified().is_empty())
                .and_then(|k| k.image_pfns().err().map(|e| e.to_string())),
            store: None,
            erased: {
                let erasures = &plan.exclusion().marks().erasures;
                (erasures.bytes(), erasures.eraseinfo().lines().count())
            },
            self_check: match plan.exclusion().kernel() {
                Some(_) if plan.input().is_live() => Err("the system is live: its counters \
                    move while it is dumped (the dump's own output adds page cache)"
                    .into()),
                Some(kernel) => self_check::check(kernel, plan.level(), &excluded.classes),
                None => Ok(Vec::new()),
            },
        }
    }

    /// With the pages the run lost.
    pub(super) fn with_lost(mut self, lost: LostPages) -> Self {
        self.lost = lost;
        self
    }

    /// Whether the file is flagged incomplete: the dump stopped short, or
    /// pages of the input could not be read.
    pub fn is_incomplete(&self) -> bool {
        self.incomplete.is_some() || !self.lost.is_empty()
    }

    /// With what the pipeline counted: the encoders, the bytes written,
    /// the mmap fallback, and the seconds of the classification pass (kept
    /// only when the metadata stages ran).
    pub(super) fn with_run(
        mut self,
        plan: &Plan<'_>,
        encode: EncodeStats,
        bytes_written: u64,
        mmap_fallback: Option<String>,
        classify_seconds: Option<f64>,
    ) -> Self {
        self.encode = encode;
        self.bytes_written = bytes_written;
        self.mmap_fallback = mmap_fallback;
        self.classify_seconds = classify_seconds.filter(|_| plan.exclusion().metadata().is_some());
        self
    }

    /// Whether the dump is complete but some pages were stored raw because
    /// the plugin failed.
    pub fn is_degraded(&self) -> bool {
        self.plugin_failure.is_some() || !self.filter_failures.is_empty()
    }

    /// Adds the pages and bytes of another piece of the same split dump
    /// (the classification counts are the whole machine's in every piece).
    pub fn absorb_piece(&mut self, piece: DumpReport) {
        self.pages_in_file += piece.pages_in_file;
        self.zero_pages += piece.zero_pages;
        self.encode += piece.encode;
        self.bytes_written += piece.bytes_written;
        self.incomplete = self.incomplete.take().or(piece.incomplete);
        self.lost.absorb(piece.lost);
        self.plugin_failure = self.plugin_failure.take().or(piece.plugin_failure);
        self.mmap_fallback = self.mmap_fallback.take().or(piece.mmap_fallback);
    }

    /// Pages the filter plugins excluded.
    pub fn extension_pages(&self) -> u64 {
        self.plugin_excluded.iter().map(|(_, n)| n).sum()
    }

    /// Excluded pages, as makedumpfile counts them (zero pages included).
    pub fn excluded_pages(&self) -> u64 {
        self.zero_pages + self.excluded.total() + self.extension_pages()
    }

    /// The JSON stream's last line: done, with the final counts.
    pub fn done_line(&self, elapsed_s: f64) -> crate::progress::JsonLine<'static, Done<'_>> {
        let excluded = Excluded {
            zero: Some(self.zero_pages),
            filters: Some(self.extension_pages()),
            ..(&self.excluded).into()
        };
        let fields = Done {
            complete: !self.is_incomplete(),
            incomplete: self.incomplete.as_deref(),
            dump_level: self.dump_level.bits(),
            ram_pages: self.ram_pages,
            pages_in_file: self.pages_in_file,
            bytes_written: self.bytes_written,
            excluded,
            store: self.store.as_ref().map(|(_, traffic)| *traffic),
        };
        crate::progress::JsonLine { phase: "done", elapsed_s, fields }
    }

    /// makedumpfile's report, line for line (§7.4).
    pub fn makedumpfile_text(&self) -> String {
        let extension = (!self.plugin_excluded.is_empty()).then(|| self.extension_pages());
        let counts =
            ReportCounts { ram_pages: self.ram_pages, max_mapnr: self.max_mapnr, zero: self.zero_pages };
        makedumpfile_report(&counts, &self.excluded, extension, self.bytes_written)
    }

    /// What the user must know of a dump that is complete and still not
    /// what was asked: the pages kept because their struct pages could not
    /// be read (printed as warnings whatever the message level).
    pub fn warnings(&self) -> Vec<String> {
        let x = &self.excluded;
        let mut warnings = Vec::new();
        if let Some((pfn, vaddr)) = x.first_unclassified.filter(|_| x.unclassified > 0) {
            warnings.push(format!(
                "{} pages were kept whatever dump level {} says: their struct pages could not be read (the \
                 first, of pfn {pfn:#x}, at {vaddr:#x}: the dump lacks the memory that holds them)",
                x.unclassified, self.dump_level
            ));
        }
        for c in self.self_check.iter().flatten().filter(|c| c.differs()) {
            warnings.push(format!(
                "the classification left out {} pages as {}, the kernel's own {} counts {}: further apart than \
                 the {} its per-CPU deltas can account for. A kernel change vmdump does not know may have broken \
                 the classification of {}: check the dump before relying on what it left out",
                c.ours, c.class, c.counter, c.kernel, c.bound, c.class
            ));
        }
        warnings
    }

    /// vmdump's own lines after the report: compression and any degradation.
    pub fn vmdump_text(&self) -> String {
        let mut t = String::new();
        let e = &self.encode;
        let name = self.compressor.as_deref().unwrap_or("none");
        match self.compressor {
            None => {
                let _ = writeln!(t, "Compression     : none: {} pages stored raw", e.uncompressed);
            }
            Some(_) => {
                let _ = writeln!(
                    t,
                    "Compression     : {name}: {} pages compressed, {} stored raw (incompressible), {} raw \
                     (random), {} raw (plugin failed)",
                    e.compressed, e.incompressible, e.random, e.plugin_failed
                );
            }
        }
        for (name, pages) in &self.plugin_excluded {
            let _ = writeln!(t, "Filter          : {name}: {pages} pages excluded");
        }
        for (name, why) in &self.filter_failures {
            let _ = writeln!(
                t,
                "WARNING: filter {name} failed ({why}); it was disabled and its pages kept. The dump is complete."
            );
        }
        match &self.self_check {
            Ok(checks) if !checks.is_empty() => {
                let each: Vec<String> = checks
                    .iter()
                    .map(|c| format!("{} {} ({} {})", c.class, c.ours, c.counter, c.kernel))
                    .collect();
                let verdict = if checks.iter().any(CounterCheck::differs) { "DIFFER" } else { "agree" };
                let bound = checks[0].bound;
                let _ =
                    writeln!(t, "Self-check      : {}: {verdict} (within {bound} pages)", each.join(", "));
            }
            Ok(_) => {}
            Err(why) => {
                let _ = writeln!(t, "Self-check      : not made: {why}");
            }
        }
        if let Some(why) = &self.image_unprotected {
            let _ = writeln!(t, "Kernel image    : not kept against its struct pages: {why}");
        }
        if self.excluded.image_kept > 0 {
            let _ = writeln!(
                t,
                "Kernel image    : {} pages in use kept, which their struct pages would have left out",
                self.excluded.image_kept
            );
        }
        if self.excluded.filter_kept_total() > 0 {
            let _ = writeln!(
                t,
                "Kept by filters : {} pages filter plugins marked to keep, which the dump level would have left out",
                self.excluded.filter_kept_total()
            );
        }
        if self.erased.0 > 0 {
            let _ = writeln!(
                t,
                "Erased          : {} bytes, recorded in the dump's eraseinfo ({} lines)",
                self.erased.0, self.erased.1
            );
        }
        if let Some((object, traffic)) = &self.store {
            let _ = writeln!(
                t,
                "Object store    : {object}: {} requests, {} retried, {} bytes sent",
                traffic.requests, traffic.retries, traffic.bytes_sent
            );
        }
        if let Some(seconds) = self.classify_seconds {
            let _ =
                writeln!(t, "Classification  : {:.3} s (struct pages of {} pfns)", seconds, self.max_mapnr);
        }
        if let Some(why) = &self.mmap_fallback {
            let _ = writeln!(t, "Input           : mmap failed ({why}); read with pread instead");
        }
        if let Some(why) = &self.incomplete {
            let _ = writeln!(
                t,
                "ERROR: the dump is incomplete ({why}): it holds the first {} pages and is flagged \
                 incomplete; readers open it",
                self.pages_in_file
            );
        }
        if !self.lost.is_empty() {
            let _ = writeln!(
                t,
                "ERROR: {}. They are recorded as lost (readers refuse them) and the dump is flagged \
                 incomplete; every other page is in it",
                self.lost.describe()
            );
        }
        if let Some(failure) = &self.plugin_failure {
            let _ = writeln!(
                t,
                "WARNING: plugin {name} failed ({failure}); it was disabled and {} pages were stored raw. \
                 The dump is complete.",
                e.plugin_failed
            );
        }
        t
    }
}

/// The final counts of the JSON stream's `done` line.
#[derive(Debug, serde::Serialize)]
pub struct Done<'a> {
    /// Whether the dump holds every page it set out to.
    pub complete: bool,
    /// Why not, when it does not.
    pub incomplete: Option<&'a str>,
    /// The dump level used.
    pub dump_level: u8,
    /// RAM pages of the input.
    pub ram_pages: u64,
    /// Pages in the file.
    pub pages_in_file: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Pages left out, by class.
    pub excluded: Excluded,
    /// The object store's requests, when the dump went to one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<crate::store::TrafficCounts>,
}

/// Pages left out, by makedumpfile's classes, and (in a dump's report) as
/// zero pages and by filter plugins.
#[derive(Debug, serde::Serialize)]
#[allow(missing_docs)] // makedumpfile's report names them
pub struct Excluded {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zero: Option<u64>,
    pub cache: u64,
    pub cache_private: u64,
    pub user: u64,
    pub free: u64,
    pub hwpoison: u64,
    pub offline: u64,
    /// Pages filter plugins excluded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filters: Option<u64>,
}

impl From<&ClassCounts> for Excluded {
    fn from(c: &ClassCounts) -> Self {
        let (cache, cache_private, user, free) = (c.cache, c.cache_private, c.user, c.free);
        Self {
            zero: None,
            cache,
            cache_private,
            user,
            free,
            hwpoison: c.hwpoison,
            offline: c.offline,
            filters: None,
        }
    }
}

/// The counts makedumpfile's report begins with.
#[derive(Debug, Clone, Copy)]
pub struct ReportCounts {
    /// RAM pages (1st bitmap).
    pub ram_pages: u64,
    /// Pfns the bitmaps cover.
    pub max_mapnr: u64,
    /// Zero pages left out.
    pub zero: u64,
}

/// makedumpfile's report (§7.4) of `counts`, the classes `x` excluded, the
/// pages extension filters excluded (a line only when filters ran) and the
/// bytes written.
pub fn makedumpfile_report(
    counts: &ReportCounts,
    x: &ClassCounts,
    extension: Option<u64>,
    bytes: u64,
) -> String {
    let mut t = String::new();
    let original = counts.ram_pages;
    let excluded = counts.zero + x.total() + extension.unwrap_or(0);
    let hex = |v: u64| format!("0x{v:016x}");
    let _ = writeln!(t);
    let _ = writeln!(t, "Original pages  : {}", hex(original));
    let _ = writeln!(t, "  Excluded pages   : {}", hex(excluded));
    for (label, value) in [
        ("Pages filled with zero  ", counts.zero),
        ("Non-private cache pages ", x.cache),
        ("Private cache pages     ", x.cache_private),
        ("User process data pages ", x.user),
        ("Free pages              ", x.free),
        ("Hwpoison pages          ", x.hwpoison),
        ("Offline pages           ", x.offline),
    ] {
        let _ = writeln!(t, "    {label}: {}", hex(value));
    }
    if x.earlier > 0 {
        let _ = writeln!(t, "    Excluded in the input   : {}", hex(x.earlier));
    }
    if let Some(pages) = extension {
        let _ = writeln!(t, "    Extension filter pages  : {}", hex(pages));
    }
    let _ = writeln!(t, "  Remaining pages  : {}", hex(original - excluded));
    if let Some(percent) = ((original - excluded) * 100).checked_div(original) {
        let _ = writeln!(t, "  (The number of pages is reduced to {percent}%.)");
    }
    let _ = writeln!(t, "Memory Hole     : {}", hex(counts.max_mapnr - original));
    let _ = writeln!(t, "--------------------------------------------------");
    let _ = writeln!(t, "Total pages     : {}", hex(counts.max_mapnr));
    let _ = writeln!(t, "Write bytes     : {bytes}");
    t
}
