//! The `zlib` compressor plugin over ISA-L's igzip, written in C against
//! `sdk/include/vmdump_plugin.h` alone (`isal_zlib.c`): a vendor's
//! accelerated zlib that replaces the host's built-in zlib by name. This
//! crate holds no code: its `build.rs` compiles the C file with the system C
//! compiler (`$CC`, default `cc`) into `libvmdump_compress_zlib.so`, in
//! `target/<profile>/isal/` (not beside the host, where the Rust zlib plugin
//! has that file name) and in this crate's `OUT_DIR`.
//!
//! ```
//! assert!(std::path::Path::new(vmdump_compress_isal_zlib::SO_PATH).is_file());
//! assert!(vmdump_compress_isal_zlib::SO_PATH.ends_with(vmdump_compress_isal_zlib::SO_NAME));
//! ```
#![forbid(unsafe_code)]

/// File name of the built plugin: the built-in zlib's, so that it replaces it.
pub const SO_NAME: &str = "libvmdump_compress_zlib.so";

/// Directory under `target/<profile>/` that holds the built plugin alone,
/// to put on the plugin search path (`--plugin-dir target/release/isal`).
pub const PROFILE_SUBDIR: &str = "isal";

/// Absolute path of the plugin built for this build of the crate (in its
/// `OUT_DIR`, alone there), for tests that load it.
pub const SO_PATH: &str = concat!(env!("OUT_DIR"), "/libvmdump_compress_zlib.so");
