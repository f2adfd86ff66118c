//! Links Debian's liblzo2 (package liblzo2-dev at build time, liblzo2-2 at
//! run time), the library makedumpfile `-l` uses.

fn main() {
    println!("cargo:rustc-link-lib=dylib=lzo2");
}
