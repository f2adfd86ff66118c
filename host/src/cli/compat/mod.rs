//! makedumpfile's command line (kdump-format.md §7.1), for the scripts
//! written for it: Debian's kdump-tools (`makedumpfile -F -c -d 31
//! /proc/vmcore | ...`, `--dump-dmesg`), Fedora/RHEL's kdump-utils
//! (`makedumpfile -l --message-level 7 -d 31 /proc/vmcore FILE`, `-R` from a
//! raw device, `mkdumprd`'s `--check-params`). vmdump started as
//! `makedumpfile` (a symlink), or `vmdump makedumpfile ARGS`. Every option
//! is honoured with makedumpfile's meaning, accepted where it only tunes
//! what vmdump tunes itself, or refused with the reason ([`options`]).
//! The profile ([`ProfileSource`]: `VMDUMP_PROFILE`, else the system
//! profile, else the built-in one) applies too, and its `[makedumpfile]`
//! section may choose the plugin that serves each compression option (a
//! vendor's accelerated zlib for `-c`).

pub mod options;

use std::path::{Path, PathBuf};

use anyhow::{Context, bail, ensure};
use options::{Handling, OPTIONS, Token};

use super::Outcome;
use super::dump::DumpArgs;
use crate::level::DumpLevel;
use crate::profile::{Profile, ProfileSource};

/// What a makedumpfile command line asks for.
#[derive(Debug)]
pub enum Request {
    /// Write a dump, at the first level of the list, then the next ones if it does not fit.
    Dump(Box<DumpArgs>, Vec<DumpLevel>),
    /// `-R DUMPFILE`: rearrange a flattened stream from stdin.
    Rearrange(PathBuf, bool),
    /// `--reassemble DUMPFILE1 DUMPFILE2 ... DUMPFILE`: the pieces, then the output.
    Reassemble(Vec<PathBuf>),
    /// `--dump-dmesg VMCORE LOGFILE`, or `-F --dump-dmesg VMCORE`: the kernel log.
    Dmesg(DmesgRequest),
    /// `-v`.
    Version,
    /// `-h`.
    Help,
    /// `--dry-run`: the dump's estimate (`vmdump estimate`), no file written.
    DryRun(Box<DumpArgs>),
    /// `--mem-usage VMCORE`: the pages by type, no file written.
    MemUsage(PathBuf),
    /// `--check-params`: this request, checked but not carried out.
    Check(Box<Request>),
}

/// `--dump-dmesg`: where the log of which vmcore goes.
#[derive(Debug)]
pub struct DmesgRequest {
    /// VMCORE.
    pub input: PathBuf,
    /// LOGFILE; `None` for stdout (`-F`, as SUSE's kdump saves the log).
    pub log: Option<PathBuf>,
    /// `--message-level`.
    pub message_level: u8,
    /// `-f`: LOGFILE may be replaced.
    pub force: bool,
}

/// The options of one command line, as given (the files in order).
#[derive(Debug, Default)]
struct Given {
    compress: Option<&'static str>,
    levels: Option<Vec<DumpLevel>>,
    flattened: bool,
    elf: bool,
    force: bool,
    rearrange: bool,
    split: bool,
    reassemble: bool,
    dmesg: bool,
    check: bool,
    dry_run: bool,
    mem_usage: bool,
    no_mmap: bool,
    help: bool,
    version: bool,
    limit: Option<u64>,
    threads: Option<usize>,
    message_level: Option<u8>,
    show_stats: bool,
    splitblock_kib: Option<u64>,
    /// Accepted options that change nothing, with why.
    no_effect: Vec<(&'static str, &'static str)>,
    files: Vec<PathBuf>,
}

impl Given {
    fn read(args: &[String]) -> anyhow::Result<Self> {
        let mut given = Given::default();
        for token in options::tokens(args)? {
            match token {
                Token::File(file) => given.files.push(PathBuf::from(file)),
                Token::Option(option, value) => given.take(option, value.unwrap_or_default())?,
            }
        }
        Ok(given)
    }

    fn take(&mut self, option: &'static options::OptionSpec, value: String) -> anyhow::Result<()> {
        let name = option.name;
        match option.handling {
            Handling::Refused(why) => bail!("{name} is not supported by vmdump: {why}"),
            Handling::NoEffect(why) => self.no_effect.push((name, why)),
            Handling::Honoured => {}
        }
        let number = |what: &str| value.parse::<u64>().with_context(|| format!("{name} {value}: not {what}"));
        match name {
            "-c" | "-l" | "-p" | "-z" => self.compress = Some(name),
            "-d" => self.levels = Some(parse_levels(&value)?),
            "-F" => self.flattened = true,
            "-E" => self.elf = true,
            "-f" => self.force = true,
            "-R" => self.rearrange = true,
            "-L" => self.limit = Some(super::synth::parse_size(&value).map_err(anyhow::Error::msg)?),
            "--num-threads" => self.threads = Some(number("a thread count")? as usize),
            "--non-mmap" => self.no_mmap = true,
            "--dump-dmesg" => self.dmesg = true,
            "--split" => self.split = true,
            "--reassemble" => self.reassemble = true,
            "--splitblock-size" => self.splitblock_kib = Some(number("a size in KiB")?),
            "--message-level" => {
                let level = number("a message level")?;
                ensure!(level <= 31, "--message-level {level} is out of range 0-31");
                self.message_level = Some(level as u8);
            }
            "--show-stats" => self.show_stats = true,
            "-D" => self.message_level = Some(31), // debug: every message
            "--check-params" => self.check = true,
            "--dry-run" => self.dry_run = true,
            "--mem-usage" => self.mem_usage = true,
            "-v" => self.version = true,
            "-h" | "--help" => self.help = true,
            _ => {} // accepted without effect
        }
        Ok(())
    }

    /// What the options ask for, checked as makedumpfile checks them.
    fn request(self, profile: Option<(&Path, &Profile)>) -> anyhow::Result<Request> {
        for (name, why) in &self.no_effect {
            eprintln!("vmdump: {name} has no effect: {why}");
        }
        if self.help {
            return Ok(Request::Help);
        }
        if self.version {
            return Ok(Request::Version);
        }
        if self.rearrange {
            return rearrange(&self);
        }
        if self.reassemble {
            ensure!(
                self.files.len() >= 3,
                "usage: makedumpfile --reassemble DUMPFILE1 DUMPFILE2 [...] DUMPFILE"
            );
            return Ok(Request::Reassemble(self.files));
        }
        if self.mem_usage {
            let [input] = self.files.as_slice() else { bail!("usage: makedumpfile --mem-usage VMCORE") };
            return Ok(Request::MemUsage(input.clone()));
        }
        if self.dmesg {
            return self.dmesg_request();
        }
        dump_request(self, profile)
    }

    /// `--dump-dmesg VMCORE LOGFILE`, or with `-F` the log on stdout.
    fn dmesg_request(self) -> anyhow::Result<Request> {
        let (input, log) = match (self.flattened, self.files.as_slice()) {
            (false, [input, log]) => (input.clone(), Some(log.clone())),
            (true, [input]) => (input.clone(), None),
            (true, _) => bail!("usage: makedumpfile -F --dump-dmesg VMCORE (the log goes to stdout)"),
            (false, _) => bail!("usage: makedumpfile --dump-dmesg VMCORE LOGFILE"),
        };
        let message_level = self.message_level.unwrap_or(7);
        Ok(Request::Dmesg(DmesgRequest { input, log, message_level, force: self.force }))
    }
}

/// What a request does, for messages.
fn what(request: &Request) -> &'static str {
    match request {
        Request::Dump(..) | Request::DryRun(_) => "a dump",
        Request::Rearrange(..) => "-R",
        Request::Reassemble(_) => "--reassemble",
        Request::Dmesg(..) => "--dump-dmesg",
        Request::MemUsage(_) => "--mem-usage",
        Request::Version => "-v",
        Request::Help => "-h",
        Request::Check(_) => "--check-params",
    }
}

/// makedumpfile accepts "-d 31" and a list of levels to retry ("-d 31,11")
/// when the dump does not fit.
fn parse_levels(text: &str) -> anyhow::Result<Vec<DumpLevel>> {
    text.split(',').map(|level| level.parse().with_context(|| format!("-d {text}"))).collect()
}

/// Parses makedumpfile's arguments (without the program name), with the
/// compressor choices of `profile` for `-c -l -p -z`, and checks them as
/// makedumpfile does before it opens any file.
///
/// # Errors
/// An unknown or refused option, with the reason, or a combination or
/// number of files makedumpfile refuses too.
pub fn parse_with(args: &[String], profile: Option<(&Path, &Profile)>) -> anyhow::Result<Request> {
    let given = Given::read(args)?;
    let (check, dry_run) = (given.check, given.dry_run);
    let request = match given.request(profile)? {
        Request::Dump(dump, _) if dry_run => {
            ensure!(dump.split_outputs.is_empty(), "--dry-run cannot be combined with --split");
            Request::DryRun(dump)
        }
        other if dry_run => bail!("--dry-run is only for a dump (not {})", what(&other)),
        other => other,
    };
    Ok(if check { Request::Check(Box::new(request)) } else { request })
}

/// `-R DUMPFILE`: one file, none of the dump's options (as makedumpfile).
fn rearrange(given: &Given) -> anyhow::Result<Request> {
    let [output] = given.files.as_slice() else { bail!("usage: makedumpfile -R DUMPFILE < FLATTENED") };
    ensure!(
        given.compress.is_none() && given.levels.is_none() && !given.elf && !given.flattened,
        "-R rearranges a flattened stream as it is: -c, -l, -p, -z, -d, -E and -F do not apply"
    );
    Ok(Request::Rearrange(output.clone(), given.force))
}

fn dump_request(given: Given, profile: Option<(&Path, &Profile)>) -> anyhow::Result<Request> {
    // Each with its level where it has one, so that a profile's own level
    // (the default profile's zstd -1) does not change what -z writes:
    // makedumpfile's zstd level 1; for -c the page encoder's level 2, no
    // larger than makedumpfile's zlib level 1 (docs/deflate.md).
    let chosen = |flag: &str| {
        let default = match flag {
            "-c" => "zlib:2",
            "-l" => "lzo",
            "-p" => "snappy",
            _ => "zstd:1",
        };
        profile.and_then(|(_, p)| p.makedumpfile.for_option(flag)).unwrap_or(default).to_owned()
    };
    if given.elf && given.compress.is_some() {
        bail!("ELF output is not compressed: -E cannot be combined with -c, -l, -p or -z");
    }
    if given.threads.is_some() && (given.split || given.elf) {
        bail!("--num-threads cannot be combined with --split or -E (as makedumpfile)");
    }
    let levels = given.levels.clone().unwrap_or(vec![DumpLevel::NONE]); // makedumpfile's default level
    let mut dump = DumpArgs {
        profile: profile.map(|(path, _)| path.to_path_buf()),
        compress: Some(given.compress.map_or("none".into(), chosen)),
        dump_level: Some(levels[0]),
        message_level: Some(given.message_level.unwrap_or(7) | if given.show_stats { 16 } else { 0 }),
        elf: given.elf,
        force: given.force,
        limit: given.limit,
        threads: given.threads,
        no_mmap: given.no_mmap,
        splitblock_size: given.splitblock_kib.map(|kib| kib << 10),
        // A capture kernel must not end without a dump: kdump-utils keeps
        // the file only on exit status 0, and kdump-tools' pipe loses the
        // status. A level that cannot be honoured in full is lowered to the
        // bits that can, with a warning naming them (`plan::decide_level`).
        allow_lower_level: true,
        // Nor to a damaged VMCOREINFO: its damaged lines are named and
        // left out, and the level lowered as for a missing key.
        salvage_vmcoreinfo: true,
        // The profile's object store, when it names one: the scripts'
        // file then holds a manifest (docs/object-storage.md).
        to_target: profile.is_some_and(|(_, p)| p.output.target.is_some()),
        ..DumpArgs::default()
    };
    if given.split {
        ensure!(!given.flattened, "--split writes files: it cannot be combined with -F");
        let [input, outputs @ ..] = given.files.as_slice() else { bail!("--split needs a VMCORE") };
        ensure!(outputs.len() >= 2, "usage: makedumpfile --split VMCORE DUMPFILE1 DUMPFILE2 [...]");
        (dump.input, dump.output, dump.split_outputs) = (input.clone(), outputs[0].clone(), outputs.to_vec());
        dump.splitblock_size = dump.splitblock_size.or(Some(crate::dump::DEFAULT_SPLITBLOCK_BYTES));
        return Ok(Request::Dump(Box::new(dump), levels));
    }
    match (given.flattened, given.files.as_slice()) {
        (true, [input]) => (dump.input, dump.output) = (input.clone(), PathBuf::from("-")),
        (false, [input, output]) => (dump.input, dump.output) = (input.clone(), output.clone()),
        (true, _) => bail!("usage: makedumpfile -F [OPTION] VMCORE (the dump goes to stdout)"),
        (false, _) => bail!("usage: makedumpfile [OPTION] VMCORE DUMPFILE (see makedumpfile -h)"),
    }
    Ok(Request::Dump(Box::new(dump), levels))
}

/// [`parse_with`] without a profile.
///
/// # Errors
/// As [`parse_with`].
pub fn parse(args: &[String]) -> anyhow::Result<Request> {
    parse_with(args, None)
}

/// `--check-params`: the command line as a dump would take it, the profile
/// and the compressor it names, without opening VMCORE or creating any
/// file (mkdumprd passes the words `vmcore` and `dumpfile`).
fn check_params(request: &Request, base: &Profile, plugin_dirs: &[PathBuf]) -> anyhow::Result<()> {
    let (Request::Dump(dump, _) | Request::DryRun(dump)) = request else { return Ok(()) };
    let profile = dump.apply_to(base.clone())?;
    let registry = super::dump::registry_for(&profile, dump.elf, plugin_dirs);
    if profile.compress.plugin != "none" && !dump.elf {
        registry.compressor(&profile.compress.plugin)?;
    }
    for filter in &profile.filters {
        registry.filter(&filter.name)?;
    }
    Ok(())
}

/// Runs a makedumpfile command line.
///
/// # Errors
/// As `vmdump dump`, or a refused option.
pub fn run(args: &[String], plugin_dirs: &[PathBuf]) -> anyhow::Result<Outcome> {
    let source = ProfileSource::of_process(None);
    let mut profile = source.load()?;
    if profile.dump.threads == 0 {
        // makedumpfile runs one thread unless --num-threads says otherwise;
        // the profile's "every core" is its default, not an operator's
        // choice (a capture kernel of many CPUs would pay for a worker on
        // each, issue 41). A number of threads in the profile is kept.
        profile.dump.threads = 1;
    }
    let path = source.path().unwrap_or(Path::new(crate::profile::BUILTIN));
    const INVALID: &str = "Commandline parameter is invalid";
    let request = match parse_with(args, Some((path, &profile))) {
        Err(e) if args.iter().any(|a| a.starts_with("--ch")) => return Err(e.context(INVALID)),
        parsed => parsed?,
    };
    match request {
        Request::Check(request) => {
            check_params(&request, &profile, plugin_dirs).context(INVALID)?;
            Ok(Outcome::Success)
        }
        Request::Dump(dump, levels) => dump_at_levels(*dump, &levels, &profile, plugin_dirs).map(saved_dump),
        Request::DryRun(dump) => {
            super::estimate::dry_run(&dump, &dump.apply_to(profile.clone())?, plugin_dirs)?;
            Ok(Outcome::Success)
        }
        Request::Rearrange(out, force) => {
            let mut file = super::dump::create_output(&out, force)?;
            let mut input = std::io::BufReader::with_capacity(1 << 20, std::io::stdin().lock());
            vmdump_format::flat::rearrange(&mut input, &mut file).map_err(|e| {
                let _ = std::fs::remove_file(&out);
                anyhow::Error::new(e)
                    .context(format!("rearranging the flattened stream into {}", out.display()))
            })?;
            Ok(Outcome::Success)
        }
        Request::Reassemble(files) => {
            super::reassemble::run(&super::reassemble::ReassembleArgs { force: false, files })
        }
        Request::MemUsage(input) => {
            print!("{}", super::mem_usage::mem_usage(&input, &profile, plugin_dirs)?.table());
            Ok(Outcome::Success)
        }
        Request::Dmesg(dmesg) => {
            write_dmesg(&dmesg, &profile, plugin_dirs)?;
            Ok(Outcome::Success)
        }
        Request::Version => {
            println!(
                "makedumpfile: vmdump {} (makedumpfile-compatible command line)",
                env!("CARGO_PKG_VERSION")
            );
            Ok(Outcome::Success)
        }
        Request::Help => {
            print!("{}", help_text());
            Ok(Outcome::Success)
        }
    }
}

/// `--dump-dmesg`: the log of a VMCORE whose VMCOREINFO may be damaged,
/// printed at the debug message level, into LOGFILE or onto stdout, then
/// makedumpfile's common messages (on stderr when stdout holds the log).
fn write_dmesg(dmesg: &DmesgRequest, profile: &Profile, plugin_dirs: &[PathBuf]) -> anyhow::Result<()> {
    let opening = super::Opening::asked(true, Some(dmesg.message_level));
    let text = super::dmesg::kernel_log(&dmesg.input, &[], plugin_dirs, opening)?;
    super::dmesg::write_log(&text, dmesg.log.as_deref(), &profile.recipients()?, dmesg.force)?;
    if dmesg.message_level & 2 != 0 {
        let done = "makedumpfile Completed.";
        match &dmesg.log {
            Some(log) => println!("\nThe dmesg log is saved to {}.\n\n{done}", log.display()),
            None => eprintln!("\nThe dmesg log is saved to STDOUT.\n\n{done}"),
        }
    }
    Ok(())
}

/// The exit status of makedumpfile's callers for a dump: a complete one is
/// a saved one. kdump-utils keeps its file only on status 0, so vmdump's 3
/// (complete, with the pages a failed plugin could not compress stored raw,
/// or a failed filter's pages kept) would have it report "saving vmcore
/// failed" and run its failure action; the report and the warnings on
/// stderr say what was degraded. An incomplete dump stays 1, as
/// makedumpfile's.
fn saved_dump(outcome: Outcome) -> Outcome {
    match outcome {
        Outcome::Degraded => Outcome::Success,
        other => other,
    }
}

/// The dump at each level of `-d` in turn, as long as it does not fit
/// (`-L`, a full disk): a plain file is written again at the next level.
/// Through `convert`, so that a dump file given as VMCORE is refiltered.
fn dump_at_levels(
    mut dump: DumpArgs,
    levels: &[DumpLevel],
    base: &Profile,
    plugin_dirs: &[PathBuf],
) -> anyhow::Result<Outcome> {
    let convert = |dump: &DumpArgs| {
        let args =
            super::convert::ConvertArgs { pieces: Vec::new(), keys: Default::default(), dump: dump.clone() };
        super::convert::convert_with(&args, &dump.apply_to(base.clone())?, plugin_dirs)
    };
    let retry = dump.output != Path::new("-");
    if base.triage.beside_dump {
        write_triage(&dump, base, plugin_dirs);
    }
    for (i, level) in levels.iter().enumerate() {
        dump.dump_level = Some(*level);
        let outcome = convert(&dump)?;
        let Some(next) = levels.get(i + 1).filter(|_| retry && outcome == Outcome::Incomplete) else {
            return Ok(outcome);
        };
        eprintln!("vmdump: the dump at level {level} did not fit: writing it again at level {next}");
        dump.force = true;
    }
    unreachable!("levels has at least one level")
}

/// The triage of the dump's input, as `DUMPFILE.triage.json`, before the
/// dump: a few kilobytes that reach the fleet first. A triage that cannot
/// be written is a warning, never a lost dump; a dump to stdout (`-F`) has
/// no file to put it beside.
fn write_triage(dump: &DumpArgs, profile: &Profile, plugin_dirs: &[PathBuf]) {
    if dump.output == Path::new("-") {
        eprintln!(
            "vmdump: warning: [triage] beside_dump: the dump goes to stdout, so no triage file is written"
        );
        return;
    }
    let mut path = dump.output.clone().into_os_string();
    path.push(".triage.json");
    let written = super::triage::triage_of(&dump.input, &[], plugin_dirs)
        .and_then(|t| Ok(serde_json::to_string_pretty(&t)? + "\n"))
        .and_then(|json| {
            let recipients = profile.recipients()?;
            super::dump::write_whole_file(Path::new(&path), json.as_bytes(), &recipients, dump.force)
        });
    if let Err(e) = written {
        eprintln!("vmdump: warning: the triage beside the dump was not written: {e:#}");
    }
}

/// `-h`: the usage forms and every option vmdump takes.
pub fn help_text() -> String {
    let mut text = String::from(
        "usage: makedumpfile [OPTION]... VMCORE DUMPFILE\n       \
         makedumpfile -F [OPTION]... VMCORE > FLATTENED\n       \
         makedumpfile -R DUMPFILE < FLATTENED\n       \
         makedumpfile --split [OPTION]... VMCORE DUMPFILE1 DUMPFILE2 [...]\n       \
         makedumpfile --reassemble DUMPFILE1 DUMPFILE2 [...] DUMPFILE\n       \
         makedumpfile --dump-dmesg VMCORE LOGFILE\n       \
         makedumpfile -F --dump-dmesg VMCORE > LOGFILE\n\
         vmdump's makedumpfile mode: makedumpfile's options, with its meaning:\n",
    );
    for option in OPTIONS {
        let name = option.value.map_or(option.name.to_owned(), |v| format!("{} {v}", option.name));
        match option.handling {
            Handling::Honoured => text.push_str(&format!("  {name:<28} {}\n", option.meaning)),
            Handling::NoEffect(why) => text.push_str(&format!("  {name:<28} accepted, no effect: {why}\n")),
            Handling::Refused(_) => {}
        }
    }
    text.push_str("Refused, with the reason: ");
    let refused: Vec<_> =
        OPTIONS.iter().filter(|o| matches!(o.handling, Handling::Refused(_))).map(|o| o.name).collect();
    text.push_str(&refused.join(" "));
    text.push_str("\nvmdump's own commands: vmdump --help; manual: man vmdump (MAKEDUMPFILE MODE)\n");
    text
}

#[cfg(test)]
mod tests;
