//! `vmdump plugins`: what the loader finds, and why it skips files.

use std::io::Write;
use std::path::PathBuf;

use crate::plugin::{Registry, SearchPath};

/// Lists the plugins found on the search path.
///
/// # Errors
/// Writing to `out` failed.
pub fn run(plugin_dirs: &[PathBuf], out: &mut impl Write) -> anyhow::Result<()> {
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
