//! Compiles `isal_zlib.c` into a shared object with the system C compiler,
//! linked to ISA-L (`-lisal`; Debian: libisal-dev). The `cc` crate is not
//! used: it builds static libraries for linking into Rust, and this plugin is
//! a standalone `.so` that the host dlopens.
//!
//! The file is named like the built-in codec it replaces,
//! `libvmdump_compress_zlib.so`, which is also the Rust zlib plugin's file in
//! `target/<profile>/`. So it goes to `target/<profile>/isal/`, a directory of
//! its own to put on the plugin search path, and to `OUT_DIR` (`SO_PATH`).

use std::env;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const SO_NAME: &str = "libvmdump_compress_zlib.so";
const PROFILE_SUBDIR: &str = "isal";

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let source = manifest.join("isal_zlib.c");
    let include = manifest.join("../../sdk/include");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-changed={}", include.join("vmdump_plugin.h").display());
    println!("cargo:rerun-if-env-changed=CC");

    // $CC may carry arguments ("ccache gcc").
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let mut words = cc.split_whitespace();
    let program = words.next().unwrap_or("cc");
    let built = out_dir.join(SO_NAME);
    let status = Command::new(program)
        .args(words)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-std=c11"])
        .arg("-I")
        .arg(&include)
        .arg(&source)
        .args(["-lisal", "-o"])
        .arg(&built)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` (set CC to choose another): {e}"));
    if !status.success() {
        panic!(
            "`{cc}` failed to build {SO_NAME} from {} ({status}); libisal-dev provides \
             isa-l/igzip_lib.h and libisal.so",
            source.display()
        );
    }

    // OUT_DIR is target/<profile>/build/<pkg>-<hash>/out: the profile dir,
    // where the host binary and the Rust plugins' .so files land, is three up.
    let profile_dir = out_dir.ancestors().nth(3).expect("OUT_DIR is target/<profile>/build/<pkg>/out");
    let dir = profile_dir.join(PROFILE_SUBDIR);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    // The host refuses plugin files and directories that group or others
    // can write, whatever the umask of the build was.
    for (path, mode) in [(&dir, 0o755), (&built, 0o755)] {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("cannot chmod {}: {e}", path.display()));
    }
    install(&built, &dir.join(SO_NAME));
}

/// Copies through a temporary name and renames, so a process that has the
/// old library mapped keeps a consistent file.
fn install(from: &Path, to: &Path) {
    let tmp = to.with_extension("so.tmp");
    fs::copy(from, &tmp)
        .and_then(|_| fs::rename(&tmp, to))
        .unwrap_or_else(|e| panic!("cannot install {} as {}: {e}", from.display(), to.display()));
}
