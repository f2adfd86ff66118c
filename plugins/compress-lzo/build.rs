//! Links Debian's liblzo2 (package liblzo2-dev at build time), the library
//! makedumpfile `-l` uses, statically: only its lzo1x-1 coder and
//! decompressor come into the binary, which a capture kernel then maps
//! without loading a shared library (its pages, its relocations: about
//! 0.1 MiB of peak RSS). The C compiler says where the archive is (the
//! multiarch folder: /usr/lib/x86_64-linux-gnu on Debian).

use std::path::Path;
use std::process::Command;

fn main() {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let found = Command::new(&cc).arg("-print-file-name=liblzo2.a").output().expect("the C compiler runs");
    let archive = String::from_utf8_lossy(&found.stdout).trim().to_string();
    let dir = Path::new(&archive).parent().filter(|_| Path::new(&archive).is_absolute());
    let dir = dir.unwrap_or_else(|| panic!("{cc} finds no liblzo2.a: install liblzo2-dev"));
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=lzo2");
    println!("cargo:rerun-if-env-changed=CC");
}
