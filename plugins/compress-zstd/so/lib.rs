//! The `zstd` codec of `vmdump-compress-zstd` as a plugin file,
//! `libvmdump_compress_zstd.so`. The host has the same codec built in; a file
//! of the same name on its plugin search path replaces the built-in one.
#![deny(unsafe_code)]

vmdump_sdk::export_compressor!(codec::Zstd);
