//! The kernel log of a dump, byte for byte as `makedumpfile --dump-dmesg`
//! writes it (kdump-format.md §4 printk keys, §7/§8 `--dump-dmesg`).
//!
//! | item | what |
//! |---|---|
//! | [`kernel_log`] | picks the ring format from VMCOREINFO and returns the formatted log |
//! | `lockless` | the lockless ring buffer of Linux 5.10+ (`SYMBOL(prb)`) |
//! | `log_buf` | the older variable-length `struct printk_log` records (`SYMBOL(log_buf)`) |
//! | `format` | one record as text: `[%5lu.%06lu] `, the caller id where the kernel records one, indented continuation lines, `\xNN` escapes |
//!
//! ```text
//! VmcoreInfo ─► Layout (sizes/offsets) ─► bulk read_virt of the rings ─► records ─► format
//! ```
//!
//! Every index, length and position taken from the dump is checked against
//! the buffers read: a record that cannot be located ends the log with what
//! was read before it; a ring whose geometry is impossible is an error.
#![forbid(unsafe_code)]

mod format;
mod lockless;
mod log_buf;

#[cfg(test)]
mod tests;

use vmdump_format::elf::Endian;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use crate::xlat::{KernelMemory, PhysRead, XlatError};

pub use format::{Escape, LogRecord, format_record};

/// Why the kernel log could not be extracted.
#[derive(Debug, thiserror::Error)]
pub enum DmesgError {
    /// Neither `SYMBOL(prb)` nor `SYMBOL(log_buf)` is in VMCOREINFO.
    #[error("VMCOREINFO has neither SYMBOL(prb) nor SYMBOL(log_buf): no kernel log to read")]
    NoLog,

    /// A VMCOREINFO key the chosen format needs is absent.
    #[error("VMCOREINFO lacks {0}, needed for the kernel log")]
    MissingKey(String),

    /// A value read from VMCOREINFO or the dump is out of range.
    #[error("kernel log: {what} = {value:#x} is unusable: {reason}")]
    Bad {
        /// What the value is.
        what: &'static str,
        /// The value.
        value: u64,
        /// Why it is refused.
        reason: &'static str,
    },

    /// Kernel memory holding part of the log could not be read.
    #[error("reading {what} at {vaddr:#x} ({len:#x} bytes): {cause}")]
    Read {
        /// What was being read.
        what: &'static str,
        /// Its kernel virtual address.
        vaddr: u64,
        /// Bytes asked for.
        len: usize,
        /// The translation or read error.
        cause: XlatError,
    },
}

/// The kernel log of the dump: exactly the bytes `makedumpfile
/// --dump-dmesg` writes (1.7.5 and later: with the caller ids of a kernel
/// that records them; older releases print none, `format` module). The lockless ring buffer is used when VMCOREINFO
/// exports `SYMBOL(prb)`, else the `log_buf` ring of `struct printk_log`.
///
/// # Errors
///
/// [`DmesgError`] naming a missing key, an impossible ring geometry or an
/// unreadable address.
pub fn kernel_log<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    info: &VmcoreInfo,
) -> Result<Vec<u8>, DmesgError> {
    let escape = Escape::of(memory.arch().machine());
    if info.symbol("prb").is_some() {
        lockless::kernel_log(memory, info, escape)
    } else if info.symbol("log_buf").is_some() {
        log_buf::kernel_log(memory, info, escape)
    } else {
        Err(DmesgError::NoLog)
    }
}

/// `SYMBOL(name)`, or the missing-key error.
fn symbol(info: &VmcoreInfo, name: &str) -> Result<u64, DmesgError> {
    info.symbol(name).ok_or_else(|| DmesgError::MissingKey(format!("SYMBOL({name})")))
}

/// `SIZE(name)`, or the missing-key error.
fn size(info: &VmcoreInfo, name: &str) -> Result<u64, DmesgError> {
    info.size(name).ok_or_else(|| DmesgError::MissingKey(format!("SIZE({name})")))
}

/// `OFFSET(name)` of a field of `width` bytes inside a struct of
/// `struct_size` bytes, or an error if absent or out of the struct.
fn field(info: &VmcoreInfo, name: &str, width: u64, struct_size: u64) -> Result<usize, DmesgError> {
    let off = info.offset(name).ok_or_else(|| DmesgError::MissingKey(format!("OFFSET({name})")))?;
    if off.checked_add(width).is_none_or(|end| end > struct_size) {
        return Err(DmesgError::Bad { what: "a field offset", value: off, reason: "beyond its struct" });
    }
    Ok(off as usize)
}

/// [`field`] for a field some kernels lack: `None` when VMCOREINFO does
/// not export it (`printk_info.caller_id` without CONFIG_PRINTK_CALLER).
fn optional_field(
    info: &VmcoreInfo,
    name: &str,
    width: u64,
    struct_size: u64,
) -> Result<Option<usize>, DmesgError> {
    match info.offset(name) {
        None => Ok(None),
        Some(_) => field(info, name, width, struct_size).map(Some),
    }
}

/// Reads `len` bytes of kernel memory at `vaddr`.
fn read_bytes<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    what: &'static str,
    vaddr: u64,
    len: usize,
) -> Result<Vec<u8>, DmesgError> {
    let mut buf = vec![0u8; len];
    memory.read_virt(vaddr, &mut buf).map_err(|cause| DmesgError::Read { what, vaddr, len, cause })?;
    Ok(buf)
}

/// Unsigned integer of `width` (1, 2, 4 or 8) bytes at `at` in byte order
/// `e` (the dumped machine's), or `None` if it does not fit in `bytes`.
fn uint(e: Endian, bytes: &[u8], at: usize, width: usize) -> Option<u64> {
    (at.checked_add(width)? <= bytes.len()).then(|| e.uint(bytes, at, width))
}
