//! The load-time checks every plugin table gets, whatever its kind: the
//! prefix (magic, major version, size), the name, the required callbacks.

use std::ffi::{CStr, c_char};

use super::TableError;
use crate::abi::{self, TablePrefix};

/// The text of a NUL-terminated string from a validated table.
pub(super) fn c_text(ptr: *const c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: non-null strings in a validated table are NUL-terminated and static.
    unsafe { CStr::from_ptr(ptr) }.to_str().ok().map(str::to_owned)
}

/// The table `T` once its prefix checks out: magic, ABI major and size, read
/// before anything else. `T` is the ABI 1.0 table (`COMPRESSOR_V1_0_SIZE`,
/// `FILTER_V1_0_SIZE`): a later minor that appends fields must read them
/// apart, gated on `struct_size`.
///
/// # Safety
/// `table` is null or readable for the 24 bytes of [`TablePrefix`] and, when
/// its `struct_size` covers a whole `T`, a valid `T` that lives forever.
pub(super) unsafe fn check_prefix<T>(table: *const T) -> Result<&'static T, TableError> {
    if table.is_null() {
        return Err(TableError::Refused);
    }
    let v1_0_size = std::mem::size_of::<T>();
    let prefix = table.cast::<TablePrefix>();
    // Read the fixed prefix field by field: the rest may not exist.
    // SAFETY: the caller guarantees the prefix is readable.
    let (magic, major, minor, size) = unsafe {
        (
            std::ptr::addr_of!((*prefix).magic).read_unaligned(),
            std::ptr::addr_of!((*prefix).abi_major).read_unaligned(),
            std::ptr::addr_of!((*prefix).abi_minor).read_unaligned(),
            std::ptr::addr_of!((*prefix).struct_size).read_unaligned(),
        )
    };
    if magic != abi::PLUGIN_MAGIC {
        return Err(TableError::BadMagic(magic));
    }
    if major != abi::ABI_MAJOR {
        return Err(TableError::AbiMajor { plugin: (major, minor), host: (abi::ABI_MAJOR, abi::ABI_MINOR) });
    }
    if (size as usize) < v1_0_size {
        return Err(TableError::ShortTable { size, needed: v1_0_size });
    }
    // SAFETY: struct_size covers a whole `T`; the caller guarantees it is
    // valid and lives forever.
    Ok(unsafe { &*table })
}

/// The first required callback that is null, as an error.
pub(super) fn check_required(callbacks: &[(&'static str, bool)]) -> Result<(), TableError> {
    match callbacks.iter().find(|(_, present)| !present) {
        Some((name, _)) => Err(TableError::MissingCallback(name)),
        None => Ok(()),
    }
}

/// Checks that `name` is a short lowercase key (`zstd`, `pfn-ranges`).
pub(super) fn check_name(name: *const c_char) -> Result<(), TableError> {
    let name = c_text(name).ok_or_else(|| TableError::BadName("null or not UTF-8".into()))?;
    let valid = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
    if name.is_empty() || name.len() > 64 || !name.chars().all(valid) {
        return Err(TableError::BadName(format!("`{name}` is not a short lowercase key")));
    }
    Ok(())
}
