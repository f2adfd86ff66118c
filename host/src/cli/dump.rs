//! `vmdump dump`: the main job.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use vmdump_format::vmcoreinfo::VmcoreInfo;
use vmdump_sdk::KdumpFormat;
use vmdump_sdk::LogLevel;
use vmdump_sdk::client::HostServices;

use super::Outcome;
use crate::classify::PageClassifier;
use crate::codec::Codec;
use crate::dump::{
    BothFilters, DumpConfig, DumpReport, KernelView, MetadataFilter, StructPageFilter, dump, dump_elf,
};
use crate::filters::FilterSet;
use crate::input::{ReadMode, Vmcore};
use crate::level::DumpLevel;
use crate::output::sink::{FileSink, FlattenedSink, Sink};
use crate::plugin::{LoadError, Registry, SearchPath};
use crate::profile::{OutputFormat, Profile, ProfileSource};
use crate::progress::ProgressStyle;

/// Options of `vmdump dump`; each overrides the profile.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct DumpArgs {
    /// Profile to start from (TOML, see config/README.md); default: VMDUMP_PROFILE, else
    /// /etc/vmdump/vmdump.toml if it exists, else the built-in one ("builtin").
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    #[doc = "Dump level 0-31, a sum of bits (see --help)."]
    #[arg(short = 'd', long = "dump-level", value_name = "LEVEL", long_help = crate::level::HELP)]
    pub dump_level: Option<DumpLevel>,
    /// Compressor plugin, with an optional level ("zstd:3", "lzo", "none").
    #[arg(long, value_name = "NAME[:LEVEL]")]
    pub compress: Option<String>,
    /// Compression workers (default: every core available).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Read the input with pread only, never mmap.
    #[arg(long)]
    pub no_mmap: bool,
    /// Size of one mmap window in MiB.
    #[arg(long, value_name = "MIB")]
    pub window_mib: Option<u32>,
    /// Write an ELF core (uncompressed, as makedumpfile -E) instead of the
    /// kdump-compressed format; excluded pages are left out of it.
    #[arg(short = 'E', long)]
    pub elf: bool,
    /// Write the flattened format (for pipes; always used when OUTPUT is -).
    #[arg(short = 'F', long)]
    pub flattened: bool,
    /// Overwrite OUTPUT if it exists.
    #[arg(short = 'f', long)]
    pub force: bool,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Wait until the dump is on disk before exiting (fdatasync).
    #[arg(long)]
    pub sync: bool,
    /// Stop the dump at this size (e.g. 512M): the file is then closed as
    /// an incomplete dump, as when the disk fills.
    #[arg(short = 'L', long = "limit", value_name = "SIZE", value_parser = super::synth::parse_size)]
    pub limit: Option<u64>,
    /// When VMCOREINFO lacks what some dump level bits need, dump with the
    /// bits it allows (and say so) instead of stopping.
    #[arg(long)]
    pub allow_lower_level: bool,
    /// makedumpfile's `--message-level` bits (makedumpfile mode only): 1
    /// progress, 2 common messages, 16 the report; unset = vmdump's own output.
    #[arg(skip)]
    pub message_level: Option<u8>,
    /// Write the dump as N kdump files, OUTPUT.1 to OUTPUT.N, each holding
    /// the pages of a range of pfns, written in parallel as makedumpfile
    /// --split does; `vmdump reassemble` joins them.
    #[arg(long, value_name = "N")]
    pub split: Option<usize>,
    /// Pieces of a split dump begin and end at multiples of this size
    /// [default: 64M].
    #[arg(long = "splitblock-size", value_name = "SIZE", value_parser = super::synth::parse_size)]
    pub splitblock_size: Option<u64>,
    /// The pieces' names (makedumpfile mode names them; else OUTPUT.1 to OUTPUT.N).
    #[arg(skip)]
    pub split_outputs: Vec<PathBuf>,
    /// The vmcore (ELF), e.g. /proc/vmcore.
    pub input: PathBuf,
    /// The dump file, or - for the flattened format on stdout.
    pub output: PathBuf,
}

impl DumpArgs {
    /// The profile with this command line's overrides.
    pub(super) fn profile(&self) -> anyhow::Result<Profile> {
        let mut profile = ProfileSource::of_process(self.profile.as_deref()).load()?;
        if let Some(level) = self.dump_level {
            profile.dump.level = level;
        }
        if self.elf && self.compress.as_deref().is_some_and(|c| c != "none") {
            anyhow::bail!("ELF output is not compressed: --elf cannot be combined with --compress");
        }
        if let Some(spec) = &self.compress {
            profile.set_compressor(spec).map_err(anyhow::Error::msg)?;
        }
        if let Some(threads) = self.threads {
            profile.dump.threads = threads;
        }
        if let Some(mib) = self.window_mib {
            profile.input.window_mib = mib;
        }
        profile.input.mmap &= !self.no_mmap;
        if self.flattened || self.output == Path::new("-") {
            profile.dump.format = OutputFormat::Flattened;
        }
        profile.validate().map_err(|e| anyhow::anyhow!("command line: {e}"))?;
        Ok(profile)
    }
}

/// Plugin messages go to stderr; VMCOREINFO look-ups are answered from the vmcore.
struct DumpHost {
    vmcoreinfo: Option<VmcoreInfo>,
}

impl HostServices for DumpHost {
    fn log(&self, plugin: &str, level: LogLevel, message: &str) {
        eprintln!("vmdump: plugin {plugin}: {}: {message}", format!("{level:?}").to_lowercase());
    }

    fn vmcoreinfo(&self, key: &str) -> Option<String> {
        self.vmcoreinfo.as_ref()?.get(key).map(str::to_owned)
    }
}

/// The plugins of the profile: the compressor (none for raw pages) and the filters.
fn open_plugins(
    profile: &Profile,
    plugin_dirs: &[PathBuf],
    vmcore: &Vmcore,
) -> anyhow::Result<(Option<Codec>, FilterSet)> {
    let registry = Registry::discover(SearchPath::from_process(plugin_dirs, &profile.plugins.dirs));
    let host: Arc<dyn HostServices> = Arc::new(DumpHost { vmcoreinfo: vmcore.vmcoreinfo().cloned() });
    let loaded = profile
        .filters
        .iter()
        .map(|f| Ok((registry.filter(&f.name)?, f.params())))
        .collect::<Result<Vec<_>, LoadError>>()?;
    let filters = FilterSet::new(&loaded, &host)?;
    Ok((open_codec(profile, &registry, host, vmcore)?, filters))
}

fn open_codec(
    profile: &Profile,
    registry: &Registry,
    host: Arc<dyn HostServices>,
    vmcore: &Vmcore,
) -> anyhow::Result<Option<Codec>> {
    if profile.compress.plugin == "none" {
        return Ok(None);
    }
    let plugin = registry.compressor(&profile.compress.plugin)?;
    if plugin.info.format == KdumpFormat::Custom {
        bail!(
            "plugin `{}` writes a custom page format that crash, libkdumpfile and makedumpfile cannot read; \
             choose a plugin of a standard format (zlib, lzo, snappy, zstd)",
            plugin.info.name
        );
    }
    let codec = Codec::new(plugin, &profile.plugin_params(), host, vmcore.page_size() as usize)?;
    Ok(Some(codec.skipping_random_pages(profile.compress.skip_random)))
}

/// Creates the output file: mode 0600 (a dump holds secrets), never
/// replacing an existing file unless forced.
pub(super) fn create_output(path: &Path, force: bool) -> anyhow::Result<File> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        bail!("cannot create {}: directory {} does not exist", path.display(), dir.display());
    }
    let mut options = OpenOptions::new();
    options.write(true).mode(0o600);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    options.open(path).with_context(|| {
        if path.exists() && !force {
            format!("cannot create {}: it exists (use --force to overwrite)", path.display())
        } else {
            format!("cannot create {}", path.display())
        }
    })
}

fn config(profile: &Profile) -> DumpConfig {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    DumpConfig {
        dump_level: profile.dump.level,
        threads: if profile.dump.threads == 0 { cores } else { profile.dump.threads },
        read_mode: if profile.input.mmap {
            ReadMode::Mmap { window_bytes: profile.input.window_mib as usize * (1 << 20) }
        } else {
            ReadMode::Pread
        },
        ..DumpConfig::default()
    }
}

/// The level to dump at and the struct page filter it needs: the asked
/// level, or, when VMCOREINFO lacks keys some of its bits need and
/// `allow_lower`, the bits that can be honoured (else nothing is written).
fn page_filter(
    vmcore: &Vmcore,
    level: DumpLevel,
    allow_lower: bool,
) -> anyhow::Result<(Option<StructPageFilter<'_>>, DumpLevel)> {
    if level.classified().is_empty() {
        return Ok((None, level));
    }
    let error = match StructPageFilter::new(vmcore, level) {
        Ok(filter) => return Ok((Some(filter), level)),
        Err(e) => e,
    };
    if !allow_lower {
        bail!("{error}; nothing was written (--allow-lower-level dumps with the bits that can be honoured)");
    }
    let supported = vmcore.vmcoreinfo().map_or(DumpLevel::NONE, PageClassifier::<Vmcore>::supported_bits);
    let lower = level & (supported | DumpLevel::ZERO);
    eprintln!("vmdump: warning: {error}; dumping at level {lower} instead of {level} (--allow-lower-level)");
    if lower.classified().is_empty() {
        return Ok((None, lower));
    }
    Ok((Some(StructPageFilter::new(vmcore, lower)?), lower))
}

/// What transforms the pages: compressor, struct page filter, filter plugins.
pub(super) struct Stages<'a> {
    pub(super) codec: Option<&'a Codec>,
    pub(super) filter: Option<&'a dyn MetadataFilter>,
    pub(super) plugins: &'a FilterSet,
    /// The kernel's memory, when a filter plugin reads struct pages.
    pub(super) kernel: Option<&'a KernelView<'a>>,
}

fn write_dump(
    args: &DumpArgs,
    profile: &Profile,
    vmcore: &Vmcore,
    stages: &Stages<'_>,
    config: &DumpConfig,
) -> anyhow::Result<DumpReport> {
    let filters = (stages.filter, stages.plugins, stages.kernel);
    let codec = stages.codec;
    let write = |sink: &mut dyn Sink| match args.elf {
        true => dump_elf(vmcore, filters, config, sink),
        false => dump(vmcore, codec, filters, config, sink),
    };
    if args.output == Path::new("-") {
        let mut sink = FlattenedSink::new(BufWriter::with_capacity(1 << 20, std::io::stdout().lock()))?;
        return Ok(write(&mut sink)?);
    }
    let file = create_output(&args.output, args.force)?;
    let mut sink: Box<dyn Sink> = match profile.dump.format {
        OutputFormat::Kdump => Box::new(FileSink::new(file, args.limit).sync_on_finish(args.sync)),
        OutputFormat::Flattened => Box::new(FlattenedSink::new(BufWriter::with_capacity(1 << 20, file))?),
    };
    write(sink.as_mut()).map_err(|e| {
        // A half-written file is not a dump: never leave one that looks whole.
        let removed = std::fs::remove_file(&args.output).is_ok();
        let note = if removed { " (the partial output was removed)" } else { "" };
        anyhow::Error::new(e).context(format!("dump to {} failed{note}", args.output.display()))
    })
}

/// A bar for vmdump's own command line; makedumpfile's line when its message
/// level has the progress bit.
fn progress_style(args: &DumpArgs) -> ProgressStyle {
    match args.message_level {
        _ if args.no_progress => ProgressStyle::Off,
        None => ProgressStyle::Bar,
        Some(level) if level & 1 != 0 => ProgressStyle::Makedumpfile,
        Some(_) => ProgressStyle::Off,
    }
}

/// Prints the report: vmdump's own lines, or in makedumpfile mode what its
/// message level asks for (bit 16 the report, bit 2 the closing messages).
fn print_outcome(args: &DumpArgs, report: &DumpReport) -> std::io::Result<()> {
    let mut err = std::io::stderr().lock();
    let Some(level) = args.message_level else {
        return write!(err, "{}{}", report.makedumpfile_text(), report.vmdump_text());
    };
    if level & 16 != 0 {
        write!(err, "{}", report.makedumpfile_text())?;
    }
    if level & 2 != 0 {
        // Common messages: stdout, or stderr when the dump is on stdout (§7.2).
        let mut out: Box<dyn Write> = if args.output == Path::new("-") {
            Box::new(std::io::stderr())
        } else {
            Box::new(std::io::stdout())
        };
        match &report.incomplete {
            Some(_) => writeln!(out, "\nThis is an incomplete dumpfile, but might analyzable.\n")?,
            None if args.output == Path::new("-") => writeln!(out, "\nThe dumpfile is saved to STDOUT.\n")?,
            None if !args.split_outputs.is_empty() => {
                let names: Vec<String> = args.split_outputs.iter().map(|p| p.display().to_string()).collect();
                let (last, rest) = names.split_last().expect("at least two pieces");
                writeln!(out, "\nThe dumpfiles are saved to {}, and {last}.\n", rest.join(", "))?
            }
            None => writeln!(out, "\nThe dumpfile is saved to {}.\n", args.output.display())?,
        }
        writeln!(out, "makedumpfile Completed.")?;
    }
    if level & 4 != 0 && (report.is_degraded() || report.incomplete.is_some()) {
        write!(err, "{}", report.vmdump_text())?;
    }
    Ok(())
}

/// Limits the dump to the kernel's memory and takes its utsname for the
/// header; what cannot be read is a warning, not a failure.
fn adopt_kernel_facts(vmcore: &mut Vmcore) {
    let facts = match vmcore.kernel_facts() {
        Ok(facts) => facts,
        Err(e) => {
            eprintln!(
                "vmdump: warning: cannot read the kernel's page tables ({e}); every PT_LOAD page is dumped \
                 and the header's utsname has the release only"
            );
            return;
        }
    };
    if let Err(e) = &facts.memory_end {
        eprintln!(
            "vmdump: warning: cannot read the kernel's memory sections ({e}); every PT_LOAD page is dumped"
        );
    }
    if let Err(e) = &facts.utsname {
        eprintln!("vmdump: warning: cannot read the kernel's utsname ({e}); the header has the release only");
    }
    vmcore.adopt(&facts);
}

/// Runs `vmdump dump`.
///
/// # Errors
/// Any failure, with the file and the reason.
pub fn run(args: &DumpArgs, plugin_dirs: &[PathBuf]) -> anyhow::Result<Outcome> {
    run_with(args, plugin_dirs, None)
}

/// [`run`], with `more` pages to leave out (those a converted dump lacks).
///
/// # Errors
/// As [`run`].
pub fn run_with(
    args: &DumpArgs,
    plugin_dirs: &[PathBuf],
    more: Option<&dyn MetadataFilter>,
) -> anyhow::Result<Outcome> {
    let profile = args.profile()?;
    let mut vmcore = Vmcore::open(&args.input)?;
    adopt_kernel_facts(&mut vmcore);
    if vmcore.vmcoreinfo().is_none() {
        eprintln!(
            "vmdump: warning: {} has no VMCOREINFO note: the dump is complete, but its header has no \
             kernel release, crash time or phys_base (crash then needs a vmlinux)",
            args.input.display()
        );
    }
    let (filter, level) = page_filter(&vmcore, profile.dump.level, args.allow_lower_level)?;
    let (codec, plugins) = open_plugins(&profile, plugin_dirs, &vmcore)?;
    let mut config = config(&profile);
    (config.progress, config.dump_level) = (progress_style(args), level);
    // Only a plain file can be flagged incomplete (§2.1: never a stream).
    config.close_incomplete = args.output != Path::new("-") && profile.dump.format == OutputFormat::Kdump;
    let both;
    let filter = match (filter.as_ref(), more) {
        (Some(pages), Some(more)) => {
            both = BothFilters(pages, more);
            Some(&both as &dyn MetadataFilter)
        }
        (pages, more) => pages.map(|f| f as &dyn MetadataFilter).or(more),
    };
    let kernel = match plugins.needs_struct_pages() {
        true => Some(KernelView::open(&vmcore, "a filter plugin that reads struct pages")?),
        false => None,
    };
    let codec = if args.elf { None } else { codec };
    let stages = Stages { codec: codec.as_ref(), filter, plugins: &plugins, kernel: kernel.as_ref() };
    let report = match super::split::outputs(args, &profile)? {
        Some(outputs) => super::split::write_pieces(args, &vmcore, &stages, &config, &outputs)?,
        None => write_dump(args, &profile, &vmcore, &stages, &config)?,
    };
    print_outcome(args, &report)?;
    Ok(match () {
        () if report.incomplete.is_some() => Outcome::Incomplete,
        () if report.is_degraded() => Outcome::Degraded,
        () => Outcome::Success,
    })
}
