//! `vmdump dump`: the main job.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::Outcome;
use crate::classify::ClassifyError;
use crate::crypt::{EncryptedSink, Recipients};
use crate::dump::{DumpReport, dump};
use crate::level::DumpLevel;
use crate::plan::{Asked, Format, Plan, open_kernel};
use crate::plugin::{Registry, SearchPath};
use crate::profile::{OutputFormat, Profile, ProfileSource};
use crate::progress::{ProgressOptions, ProgressStyle};
use crate::read::Modules;
use vmdump_format::sink::{FileSink, FlattenedSink, Sink};

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
    /// No progress on stderr (no bar on a terminal, no lines elsewhere).
    #[arg(long)]
    pub no_progress: bool,
    /// Write progress as JSON lines to this open file descriptor (e.g. 3
    /// with `3>progress.json`): one a second, and a last one with
    /// `"phase": "done"` and the final counts.
    #[arg(long, value_name = "FD")]
    pub progress_fd: Option<u32>,
    /// Seconds between progress lines when stderr is not a terminal, and
    /// between JSON lines [default: 5 for the lines, 1 for JSON].
    #[arg(long, value_name = "SECONDS", value_parser = parse_interval)]
    pub progress_interval: Option<std::time::Duration>,
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
    /// Dump even when VMCOREINFO is damaged (a line that is not KEY=value,
    /// a value its key cannot have): each damaged line is named and left
    /// out, as if the kernel had not exported it (with
    /// --allow-lower-level, the level is lowered as for a missing key), a
    /// value the machine fixes (x86_64's page size) is taken from the
    /// machine, and the dump carries the repaired text. makedumpfile mode
    /// always does.
    #[arg(long)]
    pub salvage_vmcoreinfo: bool,
    /// makedumpfile's `--message-level` bits (makedumpfile mode only): 1
    /// progress, 2 common messages, 8 debug (VMCOREINFO on stderr), 16 the
    /// report; unset = vmdump's own output.
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
    /// Encrypt the dump (and every file written with it) to this public
    /// key: an age X25519 recipient (age1...) or an OpenSSH ssh-ed25519 or
    /// ssh-rsa public key; repeatable, added to the profile's [output]
    /// recipients. Any one of the private keys decrypts it (`vmdump decrypt`).
    #[arg(long = "encrypt-to", value_name = "RECIPIENT")]
    pub encrypt_to: Vec<String>,
    /// makedumpfile mode: the dump goes to the profile's `[output] target`
    /// (an object store), and OUTPUT gets a manifest naming the object.
    #[arg(skip)]
    pub to_target: bool,
    /// The vmcore (ELF), e.g. /proc/vmcore.
    pub input: PathBuf,
    /// The dump file, or - for the flattened format on stdout.
    pub output: PathBuf,
}

impl DumpArgs {
    /// The profile (`--profile`, `VMDUMP_PROFILE`, the system one or the
    /// built-in one) with this command line's overrides.
    pub(super) fn profile(&self) -> anyhow::Result<Profile> {
        self.apply_to(ProfileSource::of_process(self.profile.as_deref()).load()?)
    }

    /// How the input is opened: `--salvage-vmcoreinfo`, and VMCOREINFO
    /// printed at makedumpfile's debug message level.
    pub(super) fn opening(&self) -> super::Opening {
        super::Opening::asked(self.salvage_vmcoreinfo, self.message_level)
    }

    /// `profile` with this command line's overrides.
    pub(super) fn apply_to(&self, mut profile: Profile) -> anyhow::Result<Profile> {
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
        profile.output.recipients.extend(self.encrypt_to.iter().cloned());
        profile.validate().map_err(|e| anyhow::anyhow!("command line: {e}"))?;
        Ok(profile)
    }
}

/// Creates the output file: mode 0600 (a dump holds secrets), never
/// replacing an existing file unless forced, never through a symbolic link
/// but with `force` to a regular file of this user (vmdump_format::output,
/// which every file vmdump writes goes through).
pub(super) fn create_output(path: &Path, force: bool) -> anyhow::Result<File> {
    Ok(vmdump_format::output::create(path, force)?)
}

/// Writes a small file whole (a kernel log, the kernel's BTF, a triage),
/// mode 0600 as the dump it comes from (it holds secrets too), encrypted
/// to `recipients` when there are any; an existing file is replaced only
/// when `force`, as a dump's (a symbolic link only to a regular file of
/// this user).
///
/// # Errors
/// The file exists (without `force`), or cannot be created or written.
pub(super) fn write_whole_file(
    path: &Path,
    bytes: &[u8],
    recipients: &Recipients,
    force: bool,
) -> anyhow::Result<()> {
    use std::io::Write;
    let encrypted;
    let bytes = if recipients.is_empty() {
        bytes
    } else {
        encrypted = recipients.encrypt(bytes)?;
        &encrypted
    };
    create_output(path, force)?.write_all(bytes).with_context(|| format!("writing {}", path.display()))
}

/// Makes the directory `dir` (and its parents) mode 0700 where missing.
///
/// # Errors
/// It cannot be made.
pub(super) fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))
}

/// The write buffer of a flattened stream: it gathers the records'
/// headers and the small ones (descriptors, bitmaps); a batch's page data,
/// larger, goes to the pipe in one write past it, so more would only cost
/// the capture kernel memory.
const FLATTENED_BUFFER: usize = 16 << 10;

/// Where the dump of one file goes: a plain file written at offsets, a
/// flattened stream into the file or stdout, or, with recipients, the
/// encryption of that stream (crate::crypt).
///
/// # Errors
/// A bad recipient, or the write error of the streams' headers.
pub(super) fn sink_for(
    out: Option<File>,
    profile: &Profile,
    limit: Option<u64>,
    sync: bool,
) -> anyhow::Result<Box<dyn Sink>> {
    let recipients = profile.recipients()?;
    let flat = |e| anyhow::Error::new(e).context("writing the flattened stream's header");
    Ok(match (out, recipients.is_empty(), profile.dump.format) {
        (Some(file), true, OutputFormat::Kdump) => Box::new(FileSink::new(file, limit).sync_on_finish(sync)),
        (Some(file), true, OutputFormat::Flattened) => {
            Box::new(FlattenedSink::new(BufWriter::with_capacity(FLATTENED_BUFFER, file)).map_err(flat)?)
        }
        (Some(file), false, _) => Box::new(EncryptedSink::new(&recipients, file, limit)?),
        (None, true, _) => Box::new(
            FlattenedSink::new(BufWriter::with_capacity(FLATTENED_BUFFER, std::io::stdout().lock()))
                .map_err(flat)?,
        ),
        (None, false, _) => Box::new(EncryptedSink::new(&recipients, std::io::stdout().lock(), limit)?),
    })
}

/// Writes the dump of `plan` to the output file, stdout or an object.
fn write_dump(args: &DumpArgs, profile: &Profile, plan: &Plan<'_>) -> anyhow::Result<DumpReport> {
    if let Some(name) = crate::store::ObjectName::of_path(&args.output) {
        return super::object::write_dump(args, profile, plan, &name);
    }
    if let Some(template) = profile.output.target.as_deref().filter(|_| args.to_target) {
        return super::object::write_to_target(args, profile, plan, template);
    }
    write_local(args, profile, plan)
}

/// Writes the dump of `plan` to the output file or stdout.
pub(super) fn write_local(args: &DumpArgs, profile: &Profile, plan: &Plan<'_>) -> anyhow::Result<DumpReport> {
    let to_stdout = args.output == Path::new("-");
    let file = if to_stdout { None } else { Some(create_output(&args.output, args.force)?) };
    let encrypted = !profile.output.recipients.is_empty();
    let mut sink = sink_for(file, profile, args.limit, args.sync)?;
    dump(plan, sink.as_mut()).map_err(|e| {
        let full = matches!(&e, crate::dump::DumpError::Write(w) if w.is_out_of_space());
        if encrypted && full && !to_stdout {
            // The age chunks on disk decrypt to the dump up to the last
            // descriptors written: an incomplete dump, kept.
            return anyhow::Error::new(e).context(format!(
                "dump to {} stopped: the encrypted file is kept; `vmdump decrypt` gives the dump it \
                 holds, flagged incomplete",
                args.output.display()
            ));
        }
        // A half-written file is not a dump: never leave one that looks whole.
        let removed = !to_stdout && std::fs::remove_file(&args.output).is_ok();
        let note = if removed { " (the partial output was removed)" } else { "" };
        let hint = match &e {
            crate::dump::DumpError::Exclude(crate::exclude::ExcludeError::Classify(
                ClassifyError::Xlat { .. },
            )) => "; --allow-lower-level keeps the pages whose struct pages cannot be read",
            _ => "",
        };
        anyhow::Error::new(e).context(format!("dump to {} failed{note}{hint}", args.output.display()))
    })
}

/// Parses a positive number of seconds.
fn parse_interval(text: &str) -> Result<std::time::Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("{text:?} is not a positive number of seconds"))
}

/// The progress the command line asks for, with the JSON stream's file
/// descriptor opened (again, through /proc/self/fd: appending to what it
/// refers to).
fn progress_options(args: &DumpArgs) -> anyhow::Result<ProgressOptions> {
    let json = match args.progress_fd {
        None => None,
        Some(fd) => {
            let path = format!("/proc/self/fd/{fd}");
            let file = std::fs::OpenOptions::new().append(true).open(&path).with_context(|| {
                format!("--progress-fd {fd}: not an open file descriptor to write ({path})")
            })?;
            Some(std::sync::Arc::new(file))
        }
    };
    Ok(ProgressOptions { style: progress_style(args), interval: args.progress_interval, json })
}

/// A bar for vmdump's own command line (lines when stderr is not a
/// terminal); makedumpfile's line when its message level has the progress bit.
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
    for warning in report.warnings() {
        writeln!(err, "vmdump: warning: {warning}")?;
    }
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
        match report.is_incomplete() {
            true => writeln!(out, "\nThis is an incomplete dumpfile, but might analyzable.\n")?,
            false if args.output == Path::new("-") => writeln!(out, "\nThe dumpfile is saved to STDOUT.\n")?,
            false if !args.split_outputs.is_empty() => {
                let names: Vec<String> = args.split_outputs.iter().map(|p| p.display().to_string()).collect();
                let (last, rest) = names.split_last().expect("at least two pieces");
                writeln!(out, "\nThe dumpfiles are saved to {}, and {last}.\n", rest.join(", "))?
            }
            false => writeln!(out, "\nThe dumpfile is saved to {}.\n", args.output.display())?,
        }
        writeln!(out, "makedumpfile Completed.")?;
    }
    if level & 4 != 0 && (report.is_degraded() || report.is_incomplete()) {
        write!(err, "{}", report.vmdump_text())?;
    }
    Ok(())
}

/// The plugins `profile` names (its compressor unless the output is ELF,
/// and its filters), found on the search path of `plugin_dirs` and the
/// profile; no other file is opened (issue 12). Files of those names that
/// were not loaded while the plugin came from elsewhere are warned about.
pub(super) fn registry_for(profile: &Profile, elf: bool, plugin_dirs: &[PathBuf]) -> Registry {
    let search_path = SearchPath::from_process(plugin_dirs, &profile.plugins.dirs);
    let compress = profile.compress.plugin.as_str();
    let compressors: Vec<&str> = (!elf && compress != "none").then_some(compress).into_iter().collect();
    let filters: Vec<&str> = profile.filters.iter().map(|f| f.name.as_str()).collect();
    let registry = Registry::named(search_path, &compressors, &filters);
    registry.skipped.iter().for_each(|e| eprintln!("vmdump: warning: {e}"));
    registry
}

/// Runs `vmdump dump`.
///
/// # Errors
/// Any failure, with the file and the reason.
pub fn run(args: &DumpArgs, plugin_dirs: &[PathBuf]) -> anyhow::Result<Outcome> {
    let profile = args.profile()?;
    run_with(args, &profile, plugin_dirs, &[])
}

/// Dumps `args.input` (and its other `pieces`, for a split dump) with
/// `profile`: an ELF vmcore, or a dump, which is refiltered or recompressed.
///
/// # Errors
/// As [`run`].
pub fn run_with(
    args: &DumpArgs,
    profile: &Profile,
    plugin_dirs: &[PathBuf],
    pieces: &[PathBuf],
) -> anyhow::Result<Outcome> {
    let started = std::time::Instant::now();
    let registry = registry_for(profile, args.elf, plugin_dirs);
    let modules = Modules::new(registry.search_path.clone());
    let inputs = [std::slice::from_ref(&args.input), pieces].concat();
    let input = super::open_input(&inputs, &modules, args.opening())?;
    let mut notes = Vec::new();
    let kernel = open_kernel(input.as_ref(), &mut notes);
    notes.drain(..).for_each(|note| eprintln!("vmdump: warning: {note}"));
    let progress = progress_options(args)?;
    let asked = Asked {
        profile,
        registry: &registry,
        allow_lower: args.allow_lower_level,
        format: if args.elf { Format::Elf } else { Format::Kdump },
        progress: progress.clone(),
        // Only a plain file can be flagged incomplete (§2.1: never a stream),
        // and an encrypted stream, whose reader (`vmdump decrypt`) rearranges
        // what it holds into a dump flagged so.
        close_incomplete: (args.output != Path::new("-") && profile.dump.format == OutputFormat::Kdump)
            || !profile.output.recipients.is_empty(),
        extra: None,
    };
    let interrupt =
        crate::interrupt::Interrupt::on_signals().context("catching SIGINT, SIGTERM and SIGHUP")?;
    let plan = Plan::build(&asked, input.as_ref(), kernel.as_ref())?.with_interrupt(interrupt);
    plan.notes().iter().for_each(|note| eprintln!("vmdump: warning: {note}"));
    let report = match super::split::outputs(args, profile)? {
        Some(outputs) => super::split::write_pieces(args, profile, &plan, &outputs)?,
        None => write_dump(args, profile, &plan)?,
    };
    print_outcome(args, &report)?;
    if let Some(json) = &progress.json {
        crate::progress::write_json(json, &report.done_line(started.elapsed().as_secs_f64()));
    }
    Ok(match () {
        () if report.is_incomplete() => Outcome::Incomplete,
        () if report.is_degraded() => Outcome::Degraded,
        () => Outcome::Success,
    })
}
