//! Lays out the vmdump binary's code in the order a dump first runs it
//! (host/link-order.txt, made by scripts/link-order.sh): the kernel maps a
//! binary's pages 64 KiB around each one touched, so the code a capture
//! kernel's dump runs, side by side, costs it about 1.4 MiB less memory
//! than the same code scattered. Only where the linker is lld (Rust's
//! default on x86_64 Linux since 1.90, unless the flags choose another);
//! a function the list names that the binary lacks is skipped.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=link-order.txt");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let chosen = ["linker-features", "link-self-contained", "linker="].iter().any(|f| flags.contains(f));
    let lld = !chosen && rustc_minor(&var("RUSTC")).is_some_and(|minor| minor >= 90);
    let target = (var("CARGO_CFG_TARGET_ARCH"), var("CARGO_CFG_TARGET_OS"), var("CARGO_CFG_TARGET_ENV"));
    if target == ("x86_64".into(), "linux".into(), "gnu".into()) && lld {
        let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("link-order.txt");
        println!("cargo:rustc-link-arg-bin=vmdump=-Wl,--symbol-ordering-file={}", order.display());
        println!("cargo:rustc-link-arg-bin=vmdump=-Wl,--no-warn-symbol-ordering");
    }
}

/// The minor version of `rustc` 1.x (`rustc --version`).
fn rustc_minor(rustc: &str) -> Option<u32> {
    let out = std::process::Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    text.split_whitespace().nth(1)?.split('.').nth(1)?.parse().ok()
}
