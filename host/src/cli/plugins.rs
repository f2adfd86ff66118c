//! `vmdump plugins`: what the loader finds, and why it skips files. The
//! only command that opens every `*.so` of the search path; a run opens the
//! files of the names it asks for (plugin::file_names).

use std::io::Write;
use std::path::{Path, PathBuf};

use vmdump_sdk::Needs;

use crate::plugin::{Kind, Origin, Registry, SearchPath, builtin, file_names};
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
        let note = match origin {
            Origin::File(path) => match unnamed(path, Kind::Compressor, name) {
                Some(note) => note,
                None if builtin::is_builtin(name) => " (replaces the built-in one)".into(),
                None => String::new(),
            },
            Origin::BuiltIn => String::new(),
        };
        writeln!(out, "{name:<12} {version:<10} {:<5} {format:<12} {origin}{note}", abi(c.info.abi))?;
    }
    writeln!(out, "\nfilters:\n{:<12} {:<10} {:<5} {:<12} PATH", "NAME", "VERSION", "ABI", "NEEDS")?;
    for f in &registry.filters {
        let (name, version, path) = (&f.info.name, &f.info.version, f.path.display());
        writeln!(
            out,
            "{name:<12} {version:<10} {:<5} {:<12} {path}{}",
            abi(f.info.abi),
            needs_text(f.info.needs),
            unnamed(&f.path, Kind::Filter, name).unwrap_or_default()
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

/// A note when a run would not find the plugin in `path` by its name: the
/// file name is none of [`file_names`].
fn unnamed(path: &Path, kind: Kind, name: &str) -> Option<String> {
    let names = file_names(kind, name);
    let file = path.file_name()?.to_string_lossy();
    (!names.iter().any(|n| *n == file))
        .then(|| format!(" (a run does not load it: rename it {} or {})", names[0], names[1]))
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
