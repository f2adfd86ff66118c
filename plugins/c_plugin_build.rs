// The build of a plugin written in C, shared by the build.rs of the C
// plugins (`include!`d): compiles one C file against sdk/include with the
// system C compiler into a standalone `.so` that the host dlopens (the `cc`
// crate builds static libraries for linking into Rust, not this), in the
// crate's OUT_DIR and beside the host binary in target/<profile>/.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `source` (in the crate's folder) into `so_name`, linked with
/// `libs`, and installs it beside the host binary; `hint` names the
/// packages a failure may lack.
#[allow(dead_code)] // the ISA-L zlib installs its file elsewhere
fn build_c_plugin(source: &str, so_name: &str, libs: &[&str], hint: &str) {
    let built = compile_c_plugin(source, so_name, libs, hint);
    install(&built, &profile_dir().join(so_name));
}

/// target/<profile>/, where the host binary and the Rust plugins' .so files
/// land: OUT_DIR is target/<profile>/build/<pkg>-<hash>/out, three up.
fn profile_dir() -> PathBuf {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    out_dir.ancestors().nth(3).expect("OUT_DIR is target/<profile>/build/<pkg>/out").to_owned()
}

/// Compiles `source` into `OUT_DIR/so_name` and returns that path.
fn compile_c_plugin(source: &str, so_name: &str, libs: &[&str], hint: &str) -> PathBuf {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let source = manifest.join(source);
    let include = manifest.join("../../sdk/include");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-changed={}", include.join("vmdump_plugin.h").display());
    println!("cargo:rerun-if-env-changed=CC");

    // $CC may carry arguments ("ccache gcc").
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let mut words = cc.split_whitespace();
    let program = words.next().unwrap_or("cc");
    let built = out_dir.join(so_name);
    let status = Command::new(program)
        .args(words)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-std=c11"])
        .arg("-I")
        .arg(&include)
        .arg(&source)
        .args(libs)
        .arg("-o")
        .arg(&built)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` (set CC to choose another): {e}"));
    if !status.success() {
        panic!("`{cc}` failed to build {so_name} from {} ({status}){hint}", source.display());
    }
    built
}

/// Copies through a temporary name and renames, so a process that has the
/// old library mapped keeps a consistent file.
fn install(from: &Path, to: &Path) {
    let tmp = to.with_extension("so.tmp");
    std::fs::copy(from, &tmp)
        .and_then(|_| std::fs::rename(&tmp, to))
        .unwrap_or_else(|e| panic!("cannot install {} as {}: {e}", from.display(), to.display()));
}
