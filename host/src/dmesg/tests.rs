//! Record formatting and the log_buf walk on hand-built data.

use super::format::{Escape, LogRecord, format_record};
use super::log_buf::{RecordLayout, format_log};
use vmdump_format::elf::Endian;

fn one(ts_nsec: u64, text: &[u8]) -> String {
    with_caller(ts_nsec, None, text)
}

fn with_caller(ts_nsec: u64, caller: Option<u32>, text: &[u8]) -> String {
    let mut out = Vec::new();
    format_record(&mut out, Escape::SignedChar, &LogRecord { ts_nsec, caller, text });
    String::from_utf8(out).expect("ASCII output")
}

#[test]
fn timestamp_widths() {
    assert_eq!(one(0, b"Linux version"), "[    0.000000] Linux version\n");
    assert_eq!(one(12_025_248_999, b"x"), "[   12.025248] x\n");
    assert_eq!(one(123_456_000_001_000, b"x"), "[123456.000001] x\n");
    assert_eq!(one(0, b""), "[    0.000000] \n");
}

#[test]
fn continuation_lines_are_indented_to_the_prefix() {
    assert_eq!(one(1_000, b"a:\n  b\nc"), "[    0.000001] a:\n                 b\n               c\n");
    // A wider prefix gives a wider indent.
    assert_eq!(one(100_000_000_000_000, b"a\nb"), "[100000.000000] a\n                b\n");
}

#[test]
fn non_printable_bytes_are_escaped_white_space_kept() {
    assert_eq!(one(0, b"rcu: \tRCU"), "[    0.000000] rcu: \tRCU\n");
    assert_eq!(one(0, b"a\x01b\x7f\r"), "[    0.000000] a\\x01b\\x7f\r\n");
    assert_eq!(one(0, b"\x00"), "[    0.000000] \\x00\n");
}

/// makedumpfile prints a byte of 0x80 or more with `"\\x%02x"` of a C
/// `char`: sign-extended where `char` is signed (x86_64), as it is where
/// it is unsigned (arm64, ppc64, s390x, riscv64).
#[test]
fn bytes_over_0x7f_are_escaped_as_makedumpfile_of_the_dumped_machine_prints_them() {
    let escaped = |escape| {
        let mut out = Vec::new();
        format_record(&mut out, escape, &LogRecord { ts_nsec: 0, caller: None, text: b"\xc3\xa9" });
        String::from_utf8(out).expect("ASCII")
    };
    assert_eq!(escaped(Escape::SignedChar), "[    0.000000] \\xffffffc3\\xffffffa9\n");
    assert_eq!(escaped(Escape::UnsignedChar), "[    0.000000] \\xc3\\xa9\n");
    use vmdump_format::machine::Machine;
    assert_eq!(
        (Escape::of(Machine::X86_64), Escape::of(Machine::Aarch64)),
        (Escape::SignedChar, Escape::UnsignedChar)
    );
}

/// makedumpfile 1.7.5 and later, on kernels that record the caller:
/// `[%8s] ` of `T<task>` or, bit 31 set, `C<cpu>`.
#[test]
fn caller_ids_are_right_aligned_in_eight_columns() {
    assert_eq!(with_caller(0, Some(0), b"Linux"), "[    0.000000] [      T0] Linux\n");
    assert_eq!(with_caller(1_000, Some(1234), b"x"), "[    0.000001] [   T1234] x\n");
    assert_eq!(with_caller(0, Some(0x8000_0001), b"x"), "[    0.000000] [      C1] x\n");
    assert_eq!(with_caller(0, Some(12_345_678), b"x"), "[    0.000000] [T12345678] x\n");
    assert_eq!(with_caller(0, Some(0x8000_0000 | 9_999_999), b"x"), "[    0.000000] [C9999999] x\n");
}

#[test]
fn continuation_lines_line_up_after_the_caller_id() {
    assert_eq!(
        with_caller(0, Some(7), b"a\nb"),
        "[    0.000000] [      T7] a\n                          b\n"
    );
}

/// printk_log of 3.5+ kernels: u64 ts_nsec, u16 len, u16 text_len, u16 dict_len, u8, u8.
const LAYOUT: RecordLayout =
    RecordLayout { header: 16, ts_nsec: 0, len: 8, text_len: 10, caller_id: None, endian: Endian::Little };

fn put(buf: &mut [u8], at: usize, ts_nsec: u64, text: &[u8]) -> usize {
    let len = (16 + text.len()).next_multiple_of(8);
    buf[at..at + 8].copy_from_slice(&ts_nsec.to_le_bytes());
    buf[at + 8..at + 10].copy_from_slice(&(len as u16).to_le_bytes());
    buf[at + 10..at + 12].copy_from_slice(&(text.len() as u16).to_le_bytes());
    buf[at + 16..at + 16 + text.len()].copy_from_slice(text);
    at + len
}

#[test]
fn log_buf_in_order_and_wrapped() {
    let mut buf = vec![0u8; 128];
    // Oldest two records at the end, then a wrap marker, then the newest at 0.
    let a = put(&mut buf, 64, 1_000_000_000, b"first");
    let b = put(&mut buf, a, 2_000_000_000, b"second");
    assert!(b + 16 <= buf.len()); // room for the len == 0 marker (zeros)
    let next = put(&mut buf, 0, 3_000_000_000, b"third\x02");
    let text = String::from_utf8(format_log(&buf, LAYOUT, Escape::SignedChar, 64, next)).expect("ASCII");
    assert_eq!(text, "[    1.000000] first\n[    2.000000] second\n[    3.000000] third\\x02\n");
    // Not wrapped: just the middle.
    let text = String::from_utf8(format_log(&buf, LAYOUT, Escape::SignedChar, 64, a)).expect("ASCII");
    assert_eq!(text, "[    1.000000] first\n");
}

#[test]
fn log_buf_corrupt_record_ends_the_log() {
    let mut buf = vec![0u8; 64];
    let a = put(&mut buf, 0, 5_000, b"ok");
    // A record claiming a text longer than the buffer.
    buf[a + 8..a + 10].copy_from_slice(&40u16.to_le_bytes());
    buf[a + 10..a + 12].copy_from_slice(&500u16.to_le_bytes());
    assert_eq!(format_log(&buf, LAYOUT, Escape::SignedChar, 0, 60), b"[    0.000005] ok\n");
    // Indexes beyond the buffer give nothing, no panic.
    assert!(format_log(&buf, LAYOUT, Escape::SignedChar, 1000, 0).is_empty());
    assert!(format_log(&[], LAYOUT, Escape::SignedChar, 0, 8).is_empty());
}
