//! The `lzo` codec of `vmdump-compress-lzo` as a plugin file,
//! `libvmdump_compress_lzo.so`. The host has the same codec built in; a file
//! of the same name on its plugin search path replaces the built-in one.
#![deny(unsafe_code)]

vmdump_sdk::export_compressor!(codec::Lzo);
