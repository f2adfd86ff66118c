//! The `drop-tasks` filter plugin, written in C against
//! `sdk/include/vmdump_plugin.h` alone (`drop_tasks.c`): the example of an
//! ABI 1.1 filter with a `prepare` hook in C. This crate holds no code: its
//! `build.rs` compiles the C file with the system C compiler (`$CC`,
//! default `cc`) into `libvmdump_filter_drop_tasks.so`, next to the host
//! binary in `target/<profile>/`, and into this crate's `OUT_DIR`.
//!
//! ```
//! assert!(std::path::Path::new(vmdump_filter_c_drop_tasks::SO_PATH).is_file());
//! ```
#![forbid(unsafe_code)]

/// File name of the built plugin.
pub const SO_NAME: &str = "libvmdump_filter_drop_tasks.so";

/// Absolute path of the plugin built for this build of the crate (in its
/// `OUT_DIR`), for tests that load it.
pub const SO_PATH: &str = concat!(env!("OUT_DIR"), "/libvmdump_filter_drop_tasks.so");
