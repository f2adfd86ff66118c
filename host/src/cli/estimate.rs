//! `vmdump estimate`: the pages of each class, the pages in the file at
//! each dump level, and the dump's size for the profile's codec, predicted
//! from a sample of the kept pages (`crate::estimate`).

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use super::dump::{DumpArgs, registry_for};
use crate::classify::ClassCounts;
use crate::dump::report::{Excluded, ReportCounts, makedumpfile_report};
use crate::estimate::{self, DEFAULT_SAMPLE_PAGES, SizeEstimate};
use crate::input::Input;
use crate::kernel::KernelView;
use crate::level::DumpLevel;
use crate::plan::{Asked, Format, Plan, open_kernel};
use crate::plugin::Registry;
use crate::profile::Profile;
use crate::progress::ProgressOptions;
use crate::read::Modules;

/// Options of `vmdump estimate`.
#[derive(Debug, clap::Args)]
pub struct EstimateArgs {
    /// The profile (TOML) whose codec and level are estimated.
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// The compressor to estimate, in place of the profile's.
    #[arg(long)]
    pub compress: Option<String>,
    #[doc = "The dump level, in place of the profile's (see --help)."]
    #[arg(short = 'd', long = "dump-level", value_name = "LEVEL", long_help = crate::level::HELP)]
    pub dump_level: Option<DumpLevel>,
    /// Pages to sample and compress.
    #[arg(long, default_value_t = DEFAULT_SAMPLE_PAGES)]
    pub sample_pages: u64,
    /// Seed of the sample's start.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// When VMCOREINFO lacks what some level bits need, estimate with the
    /// bits it allows.
    #[arg(long)]
    pub allow_lower_level: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// An ELF vmcore (/proc/vmcore) or a dump.
    pub input: PathBuf,
}

/// The whole estimate.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The input.
    pub input: PathBuf,
    /// Bytes of a page.
    pub page_size: u64,
    /// RAM pages.
    pub ram_pages: u64,
    /// Pfns the bitmaps cover.
    pub max_pfn: u64,
    /// Pages excluded at -d 31, by class (None when the kernel's struct
    /// pages cannot be classified).
    pub classes: Option<Excluded>,
    /// (level, pages in the file) for levels 0 to 31.
    pub levels: Vec<(u8, u64)>,
    /// The dump asked for.
    pub estimate: SizeEstimate,
    /// Pages excluded at the level asked, by class.
    pub excluded: Excluded,
    /// The same, as the dump counts them.
    #[serde(skip)]
    pub excluded_counts: ClassCounts,
    /// How long the estimate took.
    pub seconds: f64,
}

/// Runs `vmdump estimate`.
///
/// # Errors
/// The input cannot be read or planned.
pub fn run(args: &EstimateArgs, plugin_dirs: &[PathBuf], out: &mut dyn Write) -> anyhow::Result<()> {
    let dump_args = DumpArgs {
        profile: args.profile.clone(),
        compress: args.compress.clone(),
        dump_level: args.dump_level,
        input: args.input.clone(),
        ..DumpArgs::default()
    };
    let report = estimate_of(args, &dump_args.profile()?, plugin_dirs)?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        out.write_all(text(&report).as_bytes())?;
    }
    Ok(())
}

/// The estimate of `args.input` for `profile`.
///
/// # Errors
/// The input cannot be read or planned.
pub fn estimate_of(
    args: &EstimateArgs,
    profile: &Profile,
    plugin_dirs: &[PathBuf],
) -> anyhow::Result<Report> {
    let started = std::time::Instant::now();
    let registry = registry_for(profile, false, plugin_dirs);
    let modules = Modules::new(registry.search_path.clone());
    let input = crate::input::open(std::slice::from_ref(&args.input), &modules)?;
    let mut notes = Vec::new();
    let kernel = open_kernel(input.as_ref(), &mut notes);
    notes.drain(..).for_each(|note| eprintln!("vmdump: warning: {note}"));
    let (input, kernel, lower) = (input.as_ref(), kernel.as_ref(), args.allow_lower_level);
    let plan = plan_for(profile, &registry, input, kernel, lower)?;
    plan.notes().iter().for_each(|note| eprintln!("vmdump: warning: {note}"));
    let kept = estimate::kept(&plan)?;
    let ram_pages = plan.ram().ram_pages();
    // The classes of every bit, from a -d 31 pass (the asked one when it is).
    let all = DumpLevel::ALL;
    let at_31 = if plan.level().classified() == all.classified() {
        Some(kept.excluded)
    } else {
        let mut at_31 = profile.clone();
        at_31.dump.level = all;
        plan_for(&at_31, &registry, input, kernel, lower)
            .ok()
            .filter(|p| p.level() == all)
            .map(|p| estimate::kept(&p))
            .transpose()?
            .map(|k| k.excluded)
    };
    let levels = (0..=all.bits())
        .filter_map(|bits| DumpLevel::new(bits).ok())
        .map(|level| {
            let pages = match (&at_31, level.classified() == plan.level().classified()) {
                (_, true) => Some(kept.pages),
                (Some(c), false) => Some(estimate::pages_at(level, ram_pages, c)),
                (None, false) => level.classified().is_empty().then_some(ram_pages),
            };
            pages.map(|p| (level.bits(), p))
        })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default();
    let pfns = estimate::sample_pfns(&plan, kept.pages, args.sample_pages, args.seed)?;
    let mut encoder = plan.codec().map_or_else(crate::codec::PageEncoder::raw, |c| c.encoder());
    let sample = estimate::measure(&plan, &pfns, plan.level(), &mut encoder);
    let estimate = estimate::size_estimate(&plan, kept.pages, sample)?;
    Ok(Report {
        input: args.input.clone(),
        page_size: plan.input().page_size(),
        ram_pages,
        max_pfn: plan.ram().max_pfn(),
        classes: at_31.as_ref().map(Excluded::from),
        levels,
        estimate,
        excluded: Excluded::from(&kept.excluded),
        excluded_counts: kept.excluded,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The plan of a kdump file for `profile`, showing no progress.
pub(super) fn plan_for<'a>(
    profile: &'a Profile,
    registry: &'a Registry,
    input: &'a dyn Input,
    kernel: Option<&'a KernelView<'a>>,
    allow_lower: bool,
) -> anyhow::Result<Plan<'a>> {
    let asked = Asked {
        profile,
        registry,
        allow_lower,
        format: Format::Kdump,
        progress: ProgressOptions::default(),
        close_incomplete: false,
        extra: None,
    };
    Plan::build(&asked, input, kernel)
}

/// The report for a person.
fn text(r: &Report) -> String {
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    let e = &r.estimate;
    let mut t = String::new();
    let _ = writeln!(t, "input           : {}", r.input.display());
    let _ = writeln!(
        t,
        "RAM             : {} pages of {} KiB ({:.1} MiB)",
        r.ram_pages,
        r.page_size >> 10,
        mib(r.ram_pages * r.page_size)
    );
    if let Some(c) = &r.classes {
        let _ = writeln!(t, "excluded at -d 31, by class (from the struct pages, exact):");
        for (label, n) in [
            ("page cache", c.cache),
            ("page cache with private data", c.cache_private),
            ("user data", c.user),
            ("free", c.free),
            ("hwpoison", c.hwpoison),
            ("offline", c.offline),
        ] {
            let _ = writeln!(t, "  {label:<29}: {n}");
        }
    }
    let _ = writeln!(t, "pages in the file at each level:");
    for row in r.levels.chunks(4) {
        let cells: Vec<String> = row.iter().map(|(l, n)| format!("-d {l:2}: {n:>10}")).collect();
        let _ = writeln!(t, "  {}", cells.join("   "));
    }
    let s = &e.sample;
    let _ = writeln!(
        t,
        "at -d {}, {}     : {} pages, ~{} of them zero; {:.1} MiB ± {:.1} MiB (95 %)",
        e.dump_level,
        e.codec,
        e.pages_in_file,
        e.zero_pages,
        mib(e.bytes),
        mib(e.error_bytes)
    );
    let _ = writeln!(
        t,
        "sample          : {} of the {} kept pages, one in {:.1} in pfn order from a random start, \
         compressed as the dump would ({} zero, {} unreadable); {:.1} s",
        s.pages,
        e.pages_in_file,
        e.pages_in_file as f64 / s.pages.max(1) as f64,
        s.zero,
        s.unreadable,
        r.seconds
    );
    t
}

/// makedumpfile's `--dry-run`: the estimate of the dump `dump` asks for,
/// printed as makedumpfile's report (message level bit 16) with the page
/// counts exact and the zero pages and write bytes estimated, and no file
/// written.
///
/// # Errors
/// The input cannot be read or planned.
pub fn dry_run(dump: &DumpArgs, profile: &Profile, plugin_dirs: &[PathBuf]) -> anyhow::Result<()> {
    let args = EstimateArgs {
        profile: None,
        compress: None,
        dump_level: None,
        sample_pages: DEFAULT_SAMPLE_PAGES,
        seed: 1,
        allow_lower_level: dump.allow_lower_level,
        json: false,
        input: dump.input.clone(),
    };
    let r = estimate_of(&args, profile, plugin_dirs)?;
    let e = &r.estimate;
    let level = dump.message_level.unwrap_or(7);
    if level & 16 != 0 {
        let zero_excluded = DumpLevel::new(e.dump_level).is_ok_and(DumpLevel::excludes_zero_pages);
        let zero = if zero_excluded { e.zero_pages } else { 0 };
        let counts = ReportCounts { ram_pages: r.ram_pages, max_mapnr: r.max_pfn, zero };
        print!("{}", makedumpfile_report(&counts, &r.excluded_counts, None, e.bytes));
    }
    if level & 2 != 0 {
        println!(
            "\nThe dumpfile is not written (--dry-run): the pages are counted as the dump would, the zero pages \
             and the write bytes ({} \u{b1} {}) estimated from {} sampled pages.\n\nmakedumpfile Completed.",
            e.bytes, e.error_bytes, e.sample.pages
        );
    }
    Ok(())
}
