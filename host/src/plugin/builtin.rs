//! The standard codecs compiled into the host: zlib, zstd, lzo and snappy
//! (zram's `backends[]`), so the binary alone writes every format
//! makedumpfile does. Each is the plugin crate's own ABI table, called
//! in-process through the same client as a loaded file; a file of the same
//! name on the search path replaces it (a vendor's accelerated zlib).
//!
//! LZO is behind the `lzo` feature (on by default): its code is GPL-2.0,
//! which makes a binary built with it GPL-2.0 as a whole (README, Licences).

use vmdump_sdk::client::CompressorPlugin;

/// The built-in compressors, in the order `vmdump plugins` lists them.
pub fn compressors() -> Vec<CompressorPlugin> {
    [
        Some(vmdump_compress_zlib::vmdump_compressor()),
        Some(vmdump_compress_zstd::vmdump_compressor()),
        lzo(),
        Some(vmdump_compress_snappy::vmdump_compressor()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(feature = "lzo")]
fn lzo() -> Option<CompressorPlugin> {
    Some(vmdump_compress_lzo::vmdump_compressor())
}

#[cfg(not(feature = "lzo"))]
fn lzo() -> Option<CompressorPlugin> {
    None
}

/// Whether a compressor of this name is built in.
pub fn is_builtin(name: &str) -> bool {
    compressors().iter().any(|c| c.info().name == name)
}

/// The licence of this binary as built: GPL-2.0 when LZO is built in.
pub const BINARY_LICENCE: &str = if cfg!(feature = "lzo") {
    "GPL-2.0-only (LZO is built in; without the `lzo` feature: MIT OR Apache-2.0)"
} else {
    "MIT OR Apache-2.0 (built without LZO: -l needs the lzo plugin file)"
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_codecs_are_built_in_with_their_kdump_formats() {
        let mut found: Vec<(String, u32)> =
            compressors().iter().map(|c| (c.info().name, c.info().format.code())).collect();
        found.sort();
        let mut expected = vec![("snappy".to_owned(), 0x4), ("zlib".into(), 0x1), ("zstd".into(), 0x20)];
        if cfg!(feature = "lzo") {
            expected.push(("lzo".into(), 0x2));
        }
        expected.sort();
        assert_eq!(found, expected);
    }
}
