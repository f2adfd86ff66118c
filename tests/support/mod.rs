//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The vmdump binary copied into `dir/bin` (its own directory is on the
/// plugin search path), with `makedumpfile` linked to it.
pub fn binary_alone(dir: &Path) -> PathBuf {
    let alone = dir.join("bin");
    std::fs::create_dir_all(&alone).unwrap();
    let binary = alone.join("vmdump");
    std::fs::copy(env!("CARGO_BIN_EXE_vmdump"), &binary).unwrap();
    std::os::unix::fs::symlink("vmdump", alone.join("makedumpfile")).unwrap();
    binary
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("host/ has a parent").to_path_buf()
}

/// The directory holding the vmdump binary and, after `cargo build
/// --workspace`, every plugin `.so` of the workspace.
pub fn build_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_vmdump")).parent().expect("binary has a directory").to_path_buf()
}

/// The built `.so` of a workspace plugin, with a clear message when missing.
pub fn built_plugin(file_name: &str) -> PathBuf {
    let path = build_dir().join(file_name);
    assert!(
        path.is_file(),
        "{} is missing: build every plugin first (`cargo build --workspace` with the same profile)",
        path.display()
    );
    path
}

/// A fresh private directory (mode 0755) under the system temp dir,
/// removed when the test passes; a failing test keeps it and names it.
pub fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("vmdump-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod temp dir");
    TempDir(dir)
}

/// A test's scratch directory: its dumps take hundreds of MiB, so it goes
/// when the test passes (a whole suite would otherwise fill the disk).
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept for the failure: {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Compiles `tests/plugins/broken.c` with `-D<flag>` into `dir`, as plugin
/// `name`, and returns the `.so` path.
pub fn build_c_plugin(dir: &Path, name: &str, flag: Option<&str>) -> PathBuf {
    build_c_plugin_with(dir, name, flag.as_slice())
}

/// [`build_c_plugin`] with several `-D` flags.
pub fn build_c_plugin_with(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let root = workspace_root();
    let out = dir.join(format!("libvmdump_{}.so", name.replace('-', "_")));
    let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cc.args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-std=c11"])
        .arg(format!("-I{}", root.join("sdk/include").display()))
        .arg(format!("-DPLUGIN_NAME=\"{name}\""));
    for flag in flags {
        cc.arg(format!("-D{flag}"));
    }
    let status =
        cc.arg(root.join("tests/plugins/broken.c")).args(["-lz", "-o"]).arg(&out).status().expect("run cc");
    assert!(status.success(), "cc failed for variant {flags:?}");
    out
}

pub mod dumps;
pub mod kernel_log;
pub mod store;
pub mod synthetic;
