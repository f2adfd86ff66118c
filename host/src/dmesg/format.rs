//! One log record as makedumpfile prints it.
//!
//! - a prefix `[%5lu.%06lu] `: seconds, then microseconds of `ts_nsec`;
//! - the text, where a newline starts a new output line indented by as many
//!   spaces as the prefix is wide, so continuation lines line up;
//! - printable ASCII and white space (tab, CR, VT, FF) as they are, every
//!   other byte as `\xNN` (lower-case hex);
//! - a final newline.

use std::io::Write;

/// Appends one record (timestamp `ts_nsec` in nanoseconds, raw `text`) to `out`.
pub fn format_record(out: &mut Vec<u8>, ts_nsec: u64, text: &[u8]) {
    let start = out.len();
    let secs = ts_nsec / 1_000_000_000;
    let micros = ts_nsec % 1_000_000_000 / 1000;
    // Writing to a Vec cannot fail.
    let _ = write!(out, "[{secs:5}.{micros:06}] ");
    let indent = out.len() - start;
    for &byte in text {
        match byte {
            b'\n' => {
                out.push(b'\n');
                out.resize(out.len() + indent, b' ');
            }
            0x20..=0x7e | b'\t' | b'\r' | 0x0b | 0x0c => out.push(byte),
            _ => {
                let _ = write!(out, "\\x{byte:02x}");
            }
        }
    }
    out.push(b'\n');
}
