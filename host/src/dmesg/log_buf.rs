//! The `log_buf` ring of `struct printk_log` records (Linux 3.5 to 5.9).
//!
//! `log_buf` points at `log_buf_len` bytes. Each record is a
//! `struct printk_log` header (ts_nsec, len, text_len, ...) followed by its
//! text; `len` is the whole record, padded, so the next record starts `len`
//! bytes later. A header with `len == 0` marks the end of the used part of
//! the array: the next record is at index 0. The live records run from
//! `log_first_idx` to `log_next_idx`.

use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::format::{Escape, LogRecord, format_record};
use super::{DmesgError, field, optional_field, read_bytes, size, symbol, uint};
use crate::xlat::{KernelMemory, PhysRead};
use vmdump_format::elf::Endian;

/// Largest buffer accepted (the kernel's maximum is 2^25 plus per-CPU extra).
const MAX_LOG_BUF: u64 = 1 << 28;

/// Where the fields of `struct printk_log` are.
#[derive(Debug, Clone, Copy)]
pub(super) struct RecordLayout {
    /// `SIZE(printk_log)`: the text follows the header.
    pub header: usize,
    /// `OFFSET(printk_log.ts_nsec)`.
    pub ts_nsec: usize,
    /// `OFFSET(printk_log.len)`.
    pub len: usize,
    /// `OFFSET(printk_log.text_len)`.
    pub text_len: usize,
    /// `OFFSET(printk_log.caller_id)` (u32), exported with CONFIG_PRINTK_CALLER (5.1+).
    pub caller_id: Option<usize>,
    /// The dumped machine's byte order.
    pub endian: Endian,
}

impl RecordLayout {
    fn from_info(info: &VmcoreInfo, endian: Endian) -> Result<Self, DmesgError> {
        let header = size(info, "printk_log")?;
        Ok(RecordLayout {
            header: header as usize,
            ts_nsec: field(info, "printk_log.ts_nsec", 8, header)?,
            len: field(info, "printk_log.len", 2, header)?,
            text_len: field(info, "printk_log.text_len", 2, header)?,
            caller_id: optional_field(info, "printk_log.caller_id", 4, header)?,
            endian,
        })
    }
}

/// The log of a kernel with `struct printk_log` records.
pub(super) fn kernel_log<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    info: &VmcoreInfo,
    escape: Escape,
) -> Result<Vec<u8>, DmesgError> {
    let e = memory.arch().endian();
    let layout = RecordLayout::from_info(info, e)?;
    let u32_at = |name: &str| -> Result<u64, DmesgError> {
        let va = symbol(info, name)?;
        let bytes = read_bytes(memory, "a log_buf variable", va, 4)?;
        Ok(uint(e, &bytes, 0, 4).unwrap_or(0))
    };
    let buf_va = {
        let va = symbol(info, "log_buf")?;
        uint(e, &read_bytes(memory, "log_buf", va, 8)?, 0, 8).unwrap_or(0)
    };
    let buf_len = u32_at("log_buf_len")?;
    if buf_len == 0 || buf_len > MAX_LOG_BUF {
        return Err(DmesgError::Bad { what: "log_buf_len", value: buf_len, reason: "zero or over 256 MiB" });
    }
    let first = u32_at("log_first_idx")?;
    let next = u32_at("log_next_idx")?;
    let buf = read_bytes(memory, "log_buf", buf_va, buf_len as usize)?;
    Ok(format_log(&buf, layout, escape, first as usize, next as usize))
}

/// Formats the records of `buf` from index `first` (`log_first_idx`) up
/// to `next` (`log_next_idx`, below `first` when the ring has wrapped);
/// stops at the first record that does not fit in the buffer.
pub(super) fn format_log(
    buf: &[u8],
    layout: RecordLayout,
    escape: Escape,
    first: usize,
    next: usize,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut idx = first;
    let mut wrapped = false;
    // Each step either moves forward by a non-empty record or wraps once.
    while idx != next {
        let Some(len) = uint(layout.endian, buf, idx + layout.len, 2) else { break };
        if len == 0 {
            if wrapped || idx == 0 {
                break;
            }
            wrapped = true;
            idx = 0;
            continue;
        }
        let (Some(ts_nsec), Some(text_len)) = (
            uint(layout.endian, buf, idx + layout.ts_nsec, 8),
            uint(layout.endian, buf, idx + layout.text_len, 2),
        ) else {
            break;
        };
        let caller = match layout.caller_id.map(|at| uint(layout.endian, buf, idx + at, 4)) {
            None => None,
            Some(Some(id)) => Some(id as u32),
            Some(None) => break,
        };
        let text_at = idx + layout.header;
        let end = idx + len as usize;
        let Some(text) = buf.get(text_at..text_at + text_len as usize) else { break };
        if text_at + text_len as usize > end {
            break;
        }
        format_record(&mut out, escape, &LogRecord { ts_nsec, caller, text });
        if idx < next && end > next {
            // Jumped over log_next_idx: the ring is inconsistent.
            break;
        }
        idx = end;
    }
    out
}
