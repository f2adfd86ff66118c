//! The command line: `vmdump <command>`.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::plugin::{Registry, SearchPath};

/// vmdump: crash dumps of Linux kernels, fast and small, with plugins.
#[derive(Debug, Parser)]
#[command(name = "vmdump", version, about)]
pub struct Cli {
    /// Look for plugins in DIR first (repeatable; before VMDUMP_PLUGIN_PATH,
    /// the executable's directory and /usr/lib/vmdump/plugins).
    #[arg(long = "plugin-dir", value_name = "DIR", global = true)]
    pub plugin_dirs: Vec<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every plugin found, and every file skipped with the reason.
    Plugins,
}

/// Runs the parsed command line.
///
/// # Errors
/// Whatever the command fails with, with context for the user.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Plugins => list_plugins(&cli.plugin_dirs, &mut std::io::stdout().lock()),
    }
}

fn list_plugins(plugin_dirs: &[PathBuf], out: &mut impl Write) -> anyhow::Result<()> {
    let registry = Registry::discover(SearchPath::from_process(plugin_dirs, &[]));
    writeln!(out, "{:<12} {:<10} {:<5} {:<8} PATH", "NAME", "VERSION", "ABI", "FORMAT")?;
    for c in &registry.compressors {
        let abi = format!("{}.{}", c.info.abi.0, c.info.abi.1);
        let format = format!("{} ({:#x})", c.info.format, c.info.format.code());
        writeln!(
            out,
            "{:<12} {:<10} {:<5} {:<8} {}",
            c.info.name,
            c.info.version,
            abi,
            format,
            c.path.display()
        )?;
    }
    if !registry.skipped.is_empty() {
        writeln!(out, "\nskipped:")?;
        for reason in &registry.skipped {
            writeln!(out, "  {reason}")?;
        }
    }
    writeln!(out, "\nsearch path: {}", registry.search_path.display())?;
    Ok(())
}
