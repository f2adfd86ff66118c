//! The only code that opens shared objects (`libloading`).
//!
//! Libraries are leaked on purpose and never unloaded: tables, strings and
//! callbacks a plugin hands out must stay valid for the rest of the process,
//! and unloading Rust cdylibs with thread-local destructors is fragile.
#![allow(unsafe_code)]

use std::path::Path;

use libloading::Library;
use vmdump_sdk::abi::{
    ABI_MAJOR, ABI_MINOR, COMPRESSOR_ENTRY_V1, CompressorEntryV1, FILTER_ENTRY_V1, FilterEntryV1,
};
use vmdump_sdk::client::{CompressorPlugin, FilterPlugin};

use super::LoadError;

/// A validated plugin table of either kind.
pub enum AnyPlugin {
    /// Exports `vmdump_compressor_entry_v1`.
    Compressor(CompressorPlugin),
    /// Exports `vmdump_filter_entry_v1`.
    Filter(FilterPlugin),
}

/// Opens `path`, calls its entry point (compressor first, then filter) and
/// validates the returned table.
///
/// # Errors
/// [`LoadError::Open`], [`LoadError::NotAPlugin`] or [`LoadError::BadTable`].
pub fn open_plugin(path: &Path) -> Result<AnyPlugin, LoadError> {
    // SAFETY: loading a library runs its initialisers. The caller has checked
    // the file's ownership and permissions (search::check_trusted); running
    // trusted plugin code is the purpose of this function.
    let library = unsafe { Library::new(path) }
        .map_err(|e| LoadError::Open { path: path.to_owned(), reason: e.to_string() })?;
    let library: &'static Library = Box::leak(Box::new(library));
    let bad_table = |cause| LoadError::BadTable { path: path.to_owned(), cause };
    // SAFETY: the symbol's type is fixed by the header for ABI major 1 (the
    // major version is in the symbol name).
    if let Ok(entry) = unsafe { library.get::<CompressorEntryV1>(COMPRESSOR_ENTRY_V1) } {
        // SAFETY: calling the entry with the host's version is its contract.
        let table = unsafe { entry(ABI_MAJOR, ABI_MINOR) };
        // SAFETY: the table comes from a library that is never unloaded; the
        // entry's contract makes it a static table (or null, which is checked).
        return unsafe { CompressorPlugin::from_raw(table) }.map(AnyPlugin::Compressor).map_err(bad_table);
    }
    // SAFETY: as above, for the filter entry's fixed type.
    let entry = unsafe { library.get::<FilterEntryV1>(FILTER_ENTRY_V1) }
        .map_err(|_| LoadError::NotAPlugin { path: path.to_owned() })?;
    // SAFETY: calling the entry with the host's version is its contract.
    let table = unsafe { entry(ABI_MAJOR, ABI_MINOR) };
    // SAFETY: as for compressors: a static table of a library never unloaded.
    unsafe { FilterPlugin::from_raw(table) }.map(AnyPlugin::Filter).map_err(bad_table)
}
