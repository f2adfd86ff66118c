//! One log record as makedumpfile prints it (its `--dump-dmesg`, as of
//! 1.7.5 and still in upstream's master):
//!
//! - a prefix `[%5lu.%06lu] `: seconds, then microseconds of `ts_nsec`;
//! - where the kernel records the caller of each message (CONFIG_PRINTK_CALLER:
//!   VMCOREINFO then exports `OFFSET(printk_info.caller_id)`), the caller
//!   right-aligned in 8 columns between brackets, `[      T0] `: `T` and
//!   the task id, or `C` and the CPU when bit 31 of the id is set. 1.7.4 and
//!   older print no caller;
//! - the text, where a newline starts a new output line indented by as many
//!   spaces as the prefix is wide, so continuation lines line up;
//! - printable ASCII and white space (tab, CR, VT, FF) as they are, every
//!   other byte as `\xNN` (lower-case hex) of a C `char`: where `char` is
//!   signed (x86_64), a byte of 0x80 or more is sign-extended first,
//!   `\xffffffc3`; where it is unsigned (arm64, ppc64, s390x, riscv64),
//!   `\xc3`. vmdump writes what makedumpfile writes in the dumped
//!   machine's capture kernel, wherever vmdump runs ([`Escape`]);
//! - a final newline.

use std::io::Write;

/// Bit 31 of a caller id: a CPU number, not a task id.
const CALLER_IS_CPU: u32 = 1 << 31;

/// How a byte of 0x80 or more is escaped: as makedumpfile's `"\\x%02x"`
/// of a C `char` of the dumped machine prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// `char` is signed (x86_64): `\xffffffc3`.
    SignedChar,
    /// `char` is unsigned (arm64): `\xc3`.
    UnsignedChar,
}

impl Escape {
    /// The escape of makedumpfile on `machine`.
    pub fn of(machine: vmdump_format::machine::Machine) -> Self {
        if machine.c_char_is_signed() { Escape::SignedChar } else { Escape::UnsignedChar }
    }
}

/// One message of the kernel log, as the ring holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogRecord<'a> {
    /// Timestamp in nanoseconds.
    pub ts_nsec: u64,
    /// The caller id, where the kernel records one.
    pub caller: Option<u32>,
    /// The raw text.
    pub text: &'a [u8],
}

/// Appends one record to `out`.
pub fn format_record(out: &mut Vec<u8>, escape: Escape, record: &LogRecord<'_>) {
    let LogRecord { ts_nsec, caller, text } = *record;
    let start = out.len();
    let secs = ts_nsec / 1_000_000_000;
    let micros = ts_nsec % 1_000_000_000 / 1000;
    // Writing to a Vec cannot fail.
    let _ = write!(out, "[{secs:5}.{micros:06}] ");
    if let Some(id) = caller {
        let kind = if id & CALLER_IS_CPU != 0 { 'C' } else { 'T' };
        let number = id & !CALLER_IS_CPU;
        let width = 1 + number.checked_ilog10().map_or(1, |digits| digits as usize + 1);
        let _ = write!(out, "[{:pad$}{kind}{number}] ", "", pad = 8usize.saturating_sub(width));
    }
    let indent = out.len() - start;
    for &byte in text {
        match byte {
            b'\n' => {
                out.push(b'\n');
                out.resize(out.len() + indent, b' ');
            }
            0x20..=0x7e | b'\t' | b'\r' | 0x0b | 0x0c => out.push(byte),
            0x80.. if escape == Escape::SignedChar => {
                let _ = write!(out, "\\x{:02x}", i32::from(byte as i8) as u32);
            }
            _ => {
                let _ = write!(out, "\\x{byte:02x}");
            }
        }
    }
    out.push(b'\n');
}
