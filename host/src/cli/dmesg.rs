//! `vmdump dmesg`: the kernel log of an ELF vmcore or of a kdump-compressed
//! dump, as `makedumpfile --dump-dmesg` writes it.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::crypt::Recipients;
use crate::kernel::KernelView;
use crate::plugin::SearchPath;
use crate::read::Modules;

/// Options of `vmdump dmesg`.
#[derive(Debug, clap::Args)]
pub struct DmesgArgs {
    /// An ELF vmcore or a kdump-compressed dump.
    pub input: PathBuf,
    /// Another piece of a split dump given as INPUT (repeatable).
    #[arg(long = "piece", value_name = "FILE")]
    pub pieces: Vec<PathBuf>,
    /// Encrypt the log to this public key (as `vmdump dump --encrypt-to`;
    /// repeatable), besides the system profile's [output] recipients.
    #[arg(long = "encrypt-to", value_name = "RECIPIENT")]
    pub encrypt_to: Vec<String>,
    /// Overwrite OUTPUT if it exists (as `vmdump dump -f`).
    #[arg(short = 'f', long)]
    pub force: bool,
    /// Read the log even when VMCOREINFO is damaged, leaving out the
    /// damaged lines (as `vmdump dump --salvage-vmcoreinfo`).
    #[arg(long)]
    pub salvage_vmcoreinfo: bool,
    /// Where to write the log (default: stdout).
    pub output: Option<PathBuf>,
}

/// The kernel log of `input` (with the other `pieces` of a split dump).
///
/// # Errors
/// The input cannot be read, or has no usable VMCOREINFO or log.
pub fn kernel_log(
    input: &Path,
    pieces: &[PathBuf],
    plugin_dirs: &[PathBuf],
    opening: super::Opening,
) -> anyhow::Result<Vec<u8>> {
    let context = || format!("reading the kernel log of {}", input.display());
    let modules = Modules::new(SearchPath::from_process(plugin_dirs, &[]));
    let input = super::open_input(&[&[input.to_path_buf()], pieces].concat(), &modules, opening)?;
    let kernel =
        KernelView::open(input.as_ref()).with_context(context)?.context("the input has no VMCOREINFO")?;
    crate::dmesg::kernel_log(kernel.memory(), kernel.info()).with_context(context)
}

/// Runs `vmdump dmesg`.
///
/// # Errors
/// As [`kernel_log`], or writing the output.
pub fn run(args: &DmesgArgs, plugin_dirs: &[PathBuf]) -> anyhow::Result<()> {
    let mut profile = crate::profile::ProfileSource::of_process(None).load()?;
    profile.output.recipients.extend(args.encrypt_to.iter().cloned());
    let recipients = profile.recipients()?;
    let opening = super::Opening::asked(args.salvage_vmcoreinfo, None);
    let log = kernel_log(&args.input, &args.pieces, plugin_dirs, opening)?;
    write_log(&log, args.output.as_deref(), &recipients, args.force)
}

/// Writes the kernel log to `output` (a new file, or an existing one when
/// `force`), or to stdout; encrypted to `recipients` when there are any.
///
/// # Errors
/// The file exists (without `force`), or the log cannot be written.
pub(super) fn write_log(
    log: &[u8],
    output: Option<&Path>,
    recipients: &Recipients,
    force: bool,
) -> anyhow::Result<()> {
    match output {
        Some(path) => super::dump::write_whole_file(path, log, recipients, force),
        None => {
            use std::io::Write;
            let encrypted;
            let log = if recipients.is_empty() {
                log
            } else {
                encrypted = recipients.encrypt(log)?;
                &encrypted
            };
            std::io::stdout().lock().write_all(log).context("writing the log to stdout")
        }
    }
}
