//! The `c-zlib` compressor plugin, written in C against
//! `sdk/include/vmdump_plugin.h` alone (`c_zlib.c`): the example a vendor
//! copies. This crate holds no code: its `build.rs` compiles the C file with
//! the system C compiler (`$CC`, default `cc`) into `libvmdump_c_zlib.so`,
//! next to the host binary and the other plugins in `target/<profile>/`, and
//! into this crate's `OUT_DIR`.
//!
//! ```
//! assert!(std::path::Path::new(vmdump_compress_c_zlib::SO_PATH).is_file());
//! ```
#![forbid(unsafe_code)]

/// File name of the built plugin.
pub const SO_NAME: &str = "libvmdump_c_zlib.so";

/// Absolute path of the plugin built for this build of the crate (in its
/// `OUT_DIR`), for tests that load it.
pub const SO_PATH: &str = concat!(env!("OUT_DIR"), "/libvmdump_c_zlib.so");
