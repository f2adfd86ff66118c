//! Compiles `drop_tasks.c` into `libvmdump_filter_drop_tasks.so` (../c_plugin_build.rs).

include!("../c_plugin_build.rs");

fn main() {
    build_c_plugin("drop_tasks.c", "libvmdump_filter_drop_tasks.so", &[], "");
}
