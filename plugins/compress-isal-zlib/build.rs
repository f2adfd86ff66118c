//! Compiles `isal_zlib.c` into a shared object with the system C compiler
//! (../c_plugin_build.rs),
//! linked to ISA-L (`-lisal`; Debian: libisal-dev). The `cc` crate is not
//! used: it builds static libraries for linking into Rust, and this plugin is
//! a standalone `.so` that the host dlopens.
//!
//! The file is named like the built-in codec it replaces,
//! `libvmdump_compress_zlib.so`, which is also the Rust zlib plugin's file in
//! `target/<profile>/`. So it goes to `target/<profile>/isal/`, a directory of
//! its own to put on the plugin search path, and to `OUT_DIR` (`SO_PATH`).

use std::fs;
use std::os::unix::fs::PermissionsExt;

include!("../c_plugin_build.rs");

const SO_NAME: &str = "libvmdump_compress_zlib.so";
const PROFILE_SUBDIR: &str = "isal";

fn main() {
    let hint = "; libisal-dev provides isa-l/igzip_lib.h and libisal.so";
    let built = compile_c_plugin("isal_zlib.c", SO_NAME, &["-lisal"], hint);
    let dir = profile_dir().join(PROFILE_SUBDIR);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    // The host refuses plugin files and directories that group or others
    // can write, whatever the umask of the build was.
    for (path, mode) in [(&dir, 0o755), (&built, 0o755)] {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("cannot chmod {}: {e}", path.display()));
    }
    install(&built, &dir.join(SO_NAME));
}
