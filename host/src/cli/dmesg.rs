//! `vmdump dmesg`: the kernel log of an ELF vmcore or of a kdump-compressed
//! dump, as `makedumpfile --dump-dmesg` writes it.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::input::Vmcore;
use crate::plugin::{Registry, SearchPath};
use crate::read::{DumpMemory, Modules};
use crate::xlat::{Arch, KernelMemory};

/// Options of `vmdump dmesg`.
#[derive(Debug, clap::Args)]
pub struct DmesgArgs {
    /// An ELF vmcore or a kdump-compressed dump.
    pub input: PathBuf,
    /// Another piece of a split dump given as INPUT (repeatable).
    #[arg(long = "piece", value_name = "FILE")]
    pub pieces: Vec<PathBuf>,
    /// Where to write the log (default: stdout).
    pub output: Option<PathBuf>,
}

/// Whether `path` starts with the ELF magic.
pub(super) fn is_elf(path: &Path) -> anyhow::Result<bool> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let mut file = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    Ok(file.read(&mut magic)? == 4 && magic == *b"\x7fELF")
}

/// The kernel log of `input` (with the other `pieces` of a split dump).
///
/// # Errors
/// The input cannot be read, or has no usable VMCOREINFO or log.
pub fn kernel_log(input: &Path, pieces: &[PathBuf], plugin_dirs: &[PathBuf]) -> anyhow::Result<Vec<u8>> {
    let context = || format!("reading the kernel log of {}", input.display());
    if pieces.is_empty() && is_elf(input)? {
        let vmcore = Vmcore::open(input)?;
        let info = vmcore.vmcoreinfo().context("the vmcore has no VMCOREINFO note")?;
        let elf = vmcore.elf();
        let machine = Arch::machine_of_elf(elf.machine, elf.endian).with_context(context)?;
        let memory = KernelMemory::open_as(&vmcore, machine, info, &elf.loads).with_context(context)?;
        return crate::dmesg::kernel_log(&memory, info).with_context(context);
    }
    let reader = crate::read::open_dump_set(&[&[input.to_path_buf()], pieces].concat())?;
    let info = reader.vmcoreinfo().cloned().context("the dump has no VMCOREINFO")?;
    let registry = Registry::discover(SearchPath::from_process(plugin_dirs, &[]));
    let modules = Modules::new(&registry);
    // The machine the header's utsname names (else VMCOREINFO's keys).
    let machine = reader.machine();
    let dump = DumpMemory::new(reader, modules.decoder());
    let memory = match machine {
        Some(machine) => KernelMemory::open_as(&dump, machine, &info, &[]),
        None => KernelMemory::open(&dump, &info, &[]),
    }
    .with_context(context)?;
    crate::dmesg::kernel_log(&memory, &info).with_context(context)
}

/// Runs `vmdump dmesg`.
///
/// # Errors
/// As [`kernel_log`], or writing the output.
pub fn run(args: &DmesgArgs, plugin_dirs: &[PathBuf]) -> anyhow::Result<()> {
    let log = kernel_log(&args.input, &args.pieces, plugin_dirs)?;
    match &args.output {
        Some(path) => write_log(path, &log),
        None => {
            use std::io::Write;
            std::io::stdout().lock().write_all(&log).context("writing the log")
        }
    }
}

/// Writes a kernel log file, mode 0600 as the dump it comes from (a log
/// holds secrets too), replacing the file if it exists.
///
/// # Errors
/// The file cannot be created or written.
pub(super) fn write_log(path: &Path, log: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(log))
        .with_context(|| format!("writing {}", path.display()))
}
