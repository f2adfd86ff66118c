//! `vmdump plugins`: what the loader finds, and why it skips files.

use std::io::Write;
use std::path::PathBuf;

use vmdump_sdk::Needs;

use crate::plugin::{Origin, Registry, SearchPath, builtin};
use crate::profile::system_profile;

/// Lists the plugins found on the search path.
///
/// # Errors
/// Writing to `out` failed.
pub fn run(plugin_dirs: &[PathBuf], out: &mut impl Write) -> anyhow::Result<()> {
    let registry = Registry::discover(SearchPath::from_process(plugin_dirs, &[]));
    let abi = |(major, minor): (u32, u32)| format!("{major}.{minor}");
    writeln!(out, "compressors:\n{:<12} {:<10} {:<5} {:<12} PATH", "NAME", "VERSION", "ABI", "FORMAT")?;
    for c in &registry.compressors {
        let format = format!("{} ({:#x})", c.info.format, c.info.format.code());
        let (name, version, origin) = (&c.info.name, &c.info.version, &c.origin);
        let replaces = match origin {
            Origin::File(_) if builtin::is_builtin(name) => " (replaces the built-in one)",
            _ => "",
        };
        writeln!(out, "{name:<12} {version:<10} {:<5} {format:<12} {origin}{replaces}", abi(c.info.abi))?;
    }
    writeln!(out, "\nfilters:\n{:<12} {:<10} {:<5} {:<12} PATH", "NAME", "VERSION", "ABI", "NEEDS")?;
    for f in &registry.filters {
        let (name, version, path) = (&f.info.name, &f.info.version, f.path.display());
        writeln!(
            out,
            "{name:<12} {version:<10} {:<5} {:<12} {path}",
            abi(f.info.abi),
            needs_text(f.info.needs)
        )?;
    }
    if !registry.skipped.is_empty() {
        writeln!(out, "\nskipped:")?;
        for reason in &registry.skipped {
            writeln!(out, "  {reason}")?;
        }
    }
    writeln!(out, "\nsearch path: {}", registry.search_path.display())?;
    let system = system_profile();
    let state = if system.exists() { "" } else { " (absent: the built-in profile applies)" };
    writeln!(out, "system profile: {}{state}", system.display())?;
    writeln!(out, "licence of this binary: {}", builtin::BINARY_LICENCE)?;
    Ok(())
}

/// What a filter looks at, in words.
fn needs_text(needs: Needs) -> &'static str {
    match (needs.contains(Needs::PAGE), needs.contains(Needs::STRUCT_PAGE)) {
        (false, false) => "pfn",
        (true, false) => "page bytes",
        (false, true) => "struct page",
        (true, true) => "page+struct",
    }
}
