//! Lays out the vmdump binary's code in the order a dump first runs it
//! (host/link-order.txt, made by scripts/link-order.sh): the kernel maps a
//! binary's pages 64 KiB around each one touched, so the code a capture
//! kernel's dump runs, side by side, costs it about 0.6 MiB of memory
//! where the same code scattered cost 2.5 MiB. Only where the linker is lld (Rust's
//! default on x86_64 Linux since 1.90, unless the flags choose another).
//!
//! The list goes to the linker as a script that puts the listed functions'
//! sections side by side after the rest of `.text` ([`linker_script`]): a section
//! pattern also matches a function that ThinLTO exported from its module
//! under a suffix of its own (`NAME.llvm.<hash of the module>`, new with
//! any change of the module's code), which an exact list of symbols
//! (`--symbol-ordering-file`) missed; one LLVM deems cold, in
//! `.text.unlikely.NAME`; and, where the list leaves a symbol's hash open
//! (`NAME17h*E`), the function whatever hash a change of its crate's code
//! gave it. A function the list names that the binary lacks matches
//! nothing.
//!
//! The binary is linked as a fixed-address executable (not PIE): a PIE's
//! thousands of pointers in read-only data are relocated at every start,
//! which reads the relocations (0.1 MB) and writes those pages, all
//! counted in the capture kernel's memory. Linked at its address nothing is
//! relocated; the shared libraries keep their random addresses. And
//! libgcc's unwinder is linked in whole (libgcc_eh.a) rather than loaded
//! (libgcc_s.so.1, 0.1 MiB of the capture kernel's memory for its pages
//! and relocations): the host's panics unwind to the plugin boundary and
//! the pool's workers as before; a plugin file brings its own.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=link-order.txt");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let chosen = ["linker-features", "link-self-contained", "linker="].iter().any(|f| flags.contains(f));
    let lld = !chosen && rustc_minor(&var("RUSTC")).is_some_and(|minor| minor >= 90);
    let target = (var("CARGO_CFG_TARGET_ARCH"), var("CARGO_CFG_TARGET_OS"), var("CARGO_CFG_TARGET_ENV"));
    if target == ("x86_64".into(), "linux".into(), "gnu".into()) && lld {
        let list = Path::new(&var("CARGO_MANIFEST_DIR")).join("link-order.txt");
        let script = PathBuf::from(var("OUT_DIR")).join("link-order.ld");
        let names = std::fs::read_to_string(&list).expect("host/link-order.txt is readable");
        std::fs::write(&script, linker_script(&names)).expect("OUT_DIR is writable");
        println!("cargo:rustc-link-arg-bin=vmdump=-Wl,-T,{}", script.display());
        println!("cargo:rustc-link-arg-bin=vmdump=-no-pie");
        if let Some(dir) = gcc_eh_dir() {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static:+whole-archive=gcc_eh");
        }
    }
}

/// A script that adds to the default layout one output section, after
/// `.text`, holding the sections of the listed functions in the list's
/// reverse order, then liblzo2's coder and the unwinder's frame
/// registration, then the C runtime's start-up code (`_start`,
/// `frame_dummy`: each object's one `.text`): the functions every dump
/// runs (the list's first) end against `.plt`, which every run executes
/// too, and share its 64 KiB. Names that are not plain symbols are left
/// out.
fn linker_script(names: &str) -> String {
    let mut script = String::from("SECTIONS {\n  .text.vmdump_first : {\n");
    let symbol = |name: &&str| name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.$*".contains(&b));
    for name in names.lines().rev().filter(|name| !name.is_empty()).filter(symbol) {
        writeln!(
            script,
            "    *(.text.{name} .text.{name}.llvm.* .text.unlikely.{name} .text.unlikely.{name}.llvm.*)"
        )
        .unwrap();
    }
    // The C code linked from archives built without function sections:
    // liblzo2's coder and its start-up check (every -l dump: lzo1x_1.o and
    // lzo_init.o, in whichever archive: rustc bundles liblzo2.a into the
    // codec's rlib) and the unwinder's frame registration (every start:
    // crtbegin.o calls it), whose one `.text` each would otherwise lie
    // among cold code and cost the 64 KiB around it.
    script.push_str("    *:lzo1x_1.o(.text .text.*) *:lzo_init.o(.text .text.*)\n");
    script.push_str("    *libgcc_eh.a:unwind-dw2-fde*.o(.text .text.*)\n");
    script.push_str("    *crt1.o(.text) *crti.o(.text) *crtbegin.o(.text) *crtend.o(.text) *crtn.o(.text)\n");
    script.push_str("  }\n} INSERT AFTER .text;\n");
    script
}

/// Where the C compiler keeps libgcc_eh.a.
fn gcc_eh_dir() -> Option<PathBuf> {
    let out = std::process::Command::new("cc").arg("-print-file-name=libgcc_eh.a").output().ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    path.is_absolute().then(|| path.parent().map(Path::to_path_buf)).flatten()
}

/// The minor version of `rustc` 1.x (`rustc --version`).
fn rustc_minor(rustc: &str) -> Option<u32> {
    let out = std::process::Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    text.split_whitespace().nth(1)?.split('.').nth(1)?.parse().ok()
}
