//! Where plugins are looked for, and which files may be loaded at all.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::LoadError;

/// Environment variable with extra plugin directories, `:`-separated.
pub const PLUGIN_PATH_ENV: &str = "VMDUMP_PLUGIN_PATH";
/// The system-wide plugin directory: set by a packager at build time
/// (`VMDUMP_PLUGIN_DIR`, scripts/install.sh), `/usr/lib/vmdump/plugins` by default.
pub const SYSTEM_PLUGIN_DIR: &str = match option_env!("VMDUMP_PLUGIN_DIR") {
    Some(dir) => dir,
    None => "/usr/lib/vmdump/plugins",
};

/// The plugin search path, first match wins: `--plugin-dir` options, the
/// profile's `plugin_dirs`, `VMDUMP_PLUGIN_PATH`, the executable's own
/// directory, then the system directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchPath {
    dirs: Vec<PathBuf>,
}

impl SearchPath {
    /// Builds the path from its sources, in priority order.
    pub fn new(
        cli_dirs: &[PathBuf],
        profile_dirs: &[PathBuf],
        env_value: Option<&str>,
        exe_dir: Option<&Path>,
    ) -> Self {
        let env_dirs =
            env_value.into_iter().flat_map(|v| v.split(':')).filter(|s| !s.is_empty()).map(PathBuf::from);
        let mut dirs: Vec<PathBuf> = Vec::new();
        let all = cli_dirs
            .iter()
            .cloned()
            .chain(profile_dirs.iter().cloned())
            .chain(env_dirs)
            .chain(exe_dir.map(Path::to_path_buf))
            .chain(std::iter::once(PathBuf::from(SYSTEM_PLUGIN_DIR)));
        for dir in all {
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        Self { dirs }
    }

    /// The path of this process: the environment and the executable's directory.
    pub fn from_process(cli_dirs: &[PathBuf], profile_dirs: &[PathBuf]) -> Self {
        let env = std::env::var(PLUGIN_PATH_ENV).ok();
        let exe = std::env::current_exe().ok();
        Self::new(cli_dirs, profile_dirs, env.as_deref(), exe.as_deref().and_then(Path::parent))
    }

    /// The directories, in order.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Every `*.so` file in the existing directories, in search order
    /// (sorted by name within a directory). Only `vmdump plugins` opens
    /// them all; a run opens the files of the names it asks for
    /// ([`SearchPath::files_named`]).
    pub fn candidate_files(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .filter_map(|dir| std::fs::read_dir(dir).ok())
            .flat_map(|entries| {
                let mut files: Vec<PathBuf> = entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|ext| ext == "so") && p.is_file())
                    .collect();
                // Crate names first, then short names, then the rest: the
                // order a run tries them in (file_names), so that the plugin
                // listed as the one of a name is the one a run loads.
                files.sort_by_cached_key(|p| {
                    let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    let rank = match () {
                        () if name.starts_with("libvmdump_compress_")
                            || name.starts_with("libvmdump_filter_") =>
                        {
                            0
                        }
                        () if name.starts_with("libvmdump_") => 1,
                        () => 2,
                    };
                    (rank, name)
                });
                files
            })
            .collect()
    }

    /// The existing files of plugin `name` of `kind`, in search order: in
    /// each directory, the names of [`file_names`] in turn.
    pub fn files_named(&self, kind: Kind, name: &str) -> Vec<PathBuf> {
        if !is_file_name_safe(name) {
            return Vec::new();
        }
        let names = file_names(kind, name);
        self.dirs
            .iter()
            .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
            .filter(|p| p.is_file())
            .collect()
    }

    /// The path as one line, for messages.
    pub fn display(&self) -> String {
        self.dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(":")
    }
}

/// The two kinds of plugin, which have their own file names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Exports `vmdump_compressor_entry_v1`.
    Compressor,
    /// Exports `vmdump_filter_entry_v1`.
    Filter,
}

impl Kind {
    /// "compressor" or "filter", for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Compressor => "compressor",
            Self::Filter => "filter",
        }
    }
}

/// The file names plugin `name` of `kind` may have, in the order tried: the
/// crate's own (`libvmdump_compress_zstd.so`, `libvmdump_filter_pfn_ranges.so`),
/// then the short one (`libvmdump_c_zlib.so`). `-` in a name is `_` in the
/// file name, as cargo names a cdylib. A run opens only these files
/// (issue 12): a shared object runs its constructors when it is opened, so
/// no other file of a plugin directory is ever loaded by a dump.
pub fn file_names(kind: Kind, name: &str) -> [String; 2] {
    let stem = name.replace('-', "_");
    let own = match kind {
        Kind::Compressor => format!("libvmdump_compress_{stem}.so"),
        Kind::Filter => format!("libvmdump_filter_{stem}.so"),
    };
    [own, format!("libvmdump_{stem}.so")]
}

/// Whether `name` can be part of a file name: letters, digits, `-`, `_`
/// and `.` only, so that no name reaches outside the plugin directories
/// (`--compress ../x`).
pub fn is_file_name_safe(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// The effective user id of this process (the owner of `/proc/self`, as
/// for outputs), root when it cannot be read.
fn effective_uid() -> u32 {
    vmdump_format::output::effective_uid().unwrap_or(0)
}

fn check_one(path: &Path, what: &str, uid: u32) -> Result<(), LoadError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| LoadError::Open { path: path.to_owned(), reason: e.to_string() })?;
    let insecure = |reason: String| Err(LoadError::Insecure { path: path.to_owned(), reason });
    if meta.mode() & 0o022 != 0 {
        return insecure(format!(
            "the {what} is writable by group or others (mode {:o}); run `chmod go-w {}`",
            meta.mode() & 0o7777,
            path.display()
        ));
    }
    if meta.uid() != 0 && meta.uid() != uid {
        return insecure(format!(
            "the {what} is owned by uid {}, neither root nor this user (uid {uid})",
            meta.uid()
        ));
    }
    Ok(())
}

/// Refuses a plugin file, or its directory, that another user could write.
///
/// # Errors
/// [`LoadError::Insecure`] naming the file or directory and the permission.
pub fn check_trusted(file: &Path) -> Result<(), LoadError> {
    let uid = effective_uid();
    check_one(file, "plugin file", uid)?;
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => check_one(dir, "plugin directory", uid),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn search_order_is_cli_profile_env_exe_system_without_duplicates() {
        let path = SearchPath::new(
            &[PathBuf::from("/cli")],
            &[PathBuf::from("/profile"), PathBuf::from("/cli")],
            Some("/env1::/env2"),
            Some(Path::new("/exe")),
        );
        let expected = ["/cli", "/profile", "/env1", "/env2", "/exe", SYSTEM_PLUGIN_DIR];
        assert_eq!(path.dirs(), expected.map(PathBuf::from));
    }

    #[test]
    fn file_names_follow_the_workspace_crates() {
        assert_eq!(file_names(Kind::Compressor, "zstd"), ["libvmdump_compress_zstd.so", "libvmdump_zstd.so"]);
        assert_eq!(file_names(Kind::Compressor, "c-zlib")[1], "libvmdump_c_zlib.so");
        assert_eq!(file_names(Kind::Filter, "pfn-ranges")[0], "libvmdump_filter_pfn_ranges.so");
    }

    #[test]
    fn group_writable_file_is_refused_with_the_reason() {
        let dir = std::env::temp_dir().join(format!("vmdump-trust-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let file = dir.join("libx.so");
        std::fs::write(&file, b"x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o664)).unwrap();
        let err = check_trusted(&file).unwrap_err().to_string();
        assert!(err.contains("writable by group or others"), "{err}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        check_trusted(&file).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = check_trusted(&file).unwrap_err().to_string();
        assert!(err.contains("plugin directory"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
