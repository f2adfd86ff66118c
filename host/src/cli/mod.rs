//! The command line: `vmdump <command>`. Exit status: 0 success, 1 failure
//! (or a dump cut short by a full disk or `-L`, kept and flagged
//! incomplete), 2 usage error, 3 dump complete but degraded (a plugin failed
//! and pages were stored raw).

pub mod compat;
mod convert;
mod decrypt;
mod dmesg;
mod dump;
mod estimate;
mod fetch;
mod info;
mod list;
mod mem_usage;
mod object;
mod plugins;
pub(crate) mod reassemble;
mod split;
mod symbols;
mod synth;
pub mod triage;
mod verify;

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::input::{Input, VmcoreinfoPolicy};
use crate::read::Modules;

/// vmdump: crash dumps of Linux kernels, fast and small, with plugins.
#[derive(Debug, Parser)]
#[command(name = "vmdump", version, about)]
pub struct Cli {
    /// Look for plugins in DIR first (repeatable; before the profile's dirs,
    /// VMDUMP_PLUGIN_PATH, the executable's directory and /usr/lib/vmdump/plugins).
    /// A run opens only the files of the plugins it names
    /// (libvmdump_compress_NAME.so, libvmdump_filter_NAME.so, libvmdump_NAME.so).
    #[arg(long = "plugin-dir", value_name = "DIR", global = true)]
    pub plugin_dirs: Vec<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Dump an ELF vmcore (e.g. /proc/vmcore) into a kdump-compressed file.
    Dump(dump::DumpArgs),
    /// List every plugin found, and every file skipped with the reason.
    Plugins,
    /// Write a synthetic ELF vmcore (sparse on disk) for tests and benchmarks.
    Synth(synth::SynthArgs),
    /// Describe a kdump-compressed file: header, levels, page counts, VMCOREINFO.
    Info(info::InfoArgs),
    /// Check a kdump-compressed file, page by page, optionally against its source vmcore.
    Verify(verify::VerifyArgs),
    /// Convert a dump (ELF, kdump, flattened, split) into kdump with another
    /// compressor or a higher dump level, or into ELF (--elf).
    Convert(convert::ConvertArgs),
    /// Predict a dump before making it: the pages of each class and at
    /// each dump level (exact), and the file's size for the profile's codec
    /// (from a compressed sample of the kept pages).
    Estimate(estimate::EstimateArgs),
    /// Decrypt an encrypted dump (`dump --encrypt-to`) into the kdump file
    /// it holds, with a private key (as `age -d -i KEY IN | makedumpfile -R OUT`).
    Decrypt(decrypt::DecryptArgs),
    /// Join the pieces of a split dump (`dump --split`, makedumpfile --split) into one file.
    Reassemble(reassemble::ReassembleArgs),
    /// Write the kernel log of an ELF vmcore or a dump (as makedumpfile --dump-dmesg).
    Dmesg(dmesg::DmesgArgs),
    /// The dumped kernel's symbols and types, read from the dump (kallsyms, BTF).
    Symbols(symbols::SymbolsArgs),
    /// What crashed: kernel, panic, CPU and task, stack, taint, from a vmcore or a dump.
    Triage(triage::TriageArgs),
    /// Copy a dump (or any object) from an S3-compatible store into a local file.
    Fetch(fetch::FetchArgs),
    /// The dumps in an S3-compatible store under a prefix, grouped by crash
    /// signature, from their triage objects.
    List(list::ListArgs),
    /// makedumpfile's command line (also: run vmdump under the name `makedumpfile`).
    #[command(disable_help_flag = true)]
    Makedumpfile {
        /// makedumpfile's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// How the command ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything as asked.
    Success,
    /// The dump is complete but some pages were stored raw (exit status 3).
    Degraded,
    /// The disk filled or the size limit was reached: the file is kept,
    /// flagged incomplete (exit status 1, as makedumpfile).
    Incomplete,
}

/// Runs the parsed command line.
///
/// # Errors
/// Whatever the command fails with, with context for the user.
pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Dump(args) => dump::run(&args, &cli.plugin_dirs),
        Command::Plugins => {
            plugins::run(&cli.plugin_dirs, &mut std::io::stdout().lock()).map(|()| Outcome::Success)
        }
        Command::Synth(args) => synth::run(&args).map(|()| Outcome::Success),
        Command::Makedumpfile { args } => compat::run(&args, &cli.plugin_dirs),
        Command::Dmesg(args) => dmesg::run(&args, &cli.plugin_dirs).map(|()| Outcome::Success),
        Command::Fetch(args) => fetch::run(&args).map(|()| Outcome::Success),
        Command::List(args) => list::run(&args, &mut std::io::stdout().lock()).map(|()| Outcome::Success),
        Command::Triage(args) => {
            triage::run(&args, &cli.plugin_dirs, &mut std::io::stdout().lock()).map(|()| Outcome::Success)
        }
        Command::Symbols(args) => {
            symbols::run(&args, &cli.plugin_dirs, &mut std::io::stdout().lock()).map(|()| Outcome::Success)
        }
        Command::Estimate(args) => {
            estimate::run(&args, &cli.plugin_dirs, &mut std::io::stdout().lock()).map(|()| Outcome::Success)
        }
        Command::Reassemble(args) => reassemble::run(&args),
        Command::Decrypt(args) => decrypt::run(&args),
        Command::Convert(args) => convert::run(&args, &cli.plugin_dirs),
        Command::Info(args) => info::run(&args, &mut std::io::stdout().lock()).map(|()| Outcome::Success),
        Command::Verify(args) => {
            verify::run(&args, &cli.plugin_dirs, &mut std::io::stdout().lock()).map(|()| Outcome::Success)
        }
    }
}

/// How a command opens its input.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Opening {
    /// What to do with a damaged VMCOREINFO.
    pub policy: VmcoreinfoPolicy,
    /// Print VMCOREINFO on stderr, as makedumpfile does at its debug
    /// message level (bit 8): SUSE's kdump reads `CRASHTIME=` and
    /// `OSRELEASE=` from there.
    pub print_vmcoreinfo: bool,
}

impl Opening {
    /// As asked: `salvage` a damaged VMCOREINFO, print it at the debug bit
    /// of makedumpfile's `message_level`.
    pub(crate) fn asked(salvage: bool, message_level: Option<u8>) -> Self {
        let policy = if salvage { VmcoreinfoPolicy::Salvage } else { VmcoreinfoPolicy::Strict };
        Opening { policy, print_vmcoreinfo: message_level.is_some_and(|level| level & 8 != 0) }
    }
}

/// Opens `paths` as [`crate::input::open_with`] does, then names each
/// damaged VMCOREINFO line on stderr and prints VMCOREINFO when asked.
///
/// # Errors
/// As [`crate::input::open_with`].
pub(crate) fn open_input<'m>(
    paths: &[PathBuf],
    modules: &'m Modules,
    opening: Opening,
) -> anyhow::Result<Box<dyn Input + 'm>> {
    let input = crate::input::open_with(paths, modules, opening.policy)?;
    for damage in input.vmcoreinfo_damage() {
        eprintln!("vmdump: warning: {}: {damage}", input.path().display());
    }
    if opening.print_vmcoreinfo
        && let Some(info) = input.vmcoreinfo()
    {
        // makedumpfile's layout: a title, then each line indented by two.
        let mut text = String::from("VMCOREINFO   :\n");
        info.text().lines().filter(|l| !l.is_empty()).for_each(|line| text += &format!("  {line}\n"));
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
    Ok(input)
}
