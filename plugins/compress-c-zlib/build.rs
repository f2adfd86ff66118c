//! Compiles `c_zlib.c` into `libvmdump_c_zlib.so` (../c_plugin_build.rs).

include!("../c_plugin_build.rs");

fn main() {
    build_c_plugin("c_zlib.c", "libvmdump_c_zlib.so", &["-lz"], "; zlib1g-dev provides zlib.h");
}
