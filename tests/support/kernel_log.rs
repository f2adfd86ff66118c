//! Kernel logs in the forms makedumpfile's releases print them.
//!
//! makedumpfile 1.7.5 and later (and vmdump) print the caller of each
//! message, `[      T0] ` after the timestamp, where the kernel records it
//! (every lockless ring buffer exports `OFFSET(printk_info.caller_id)`);
//! 1.7.4 and older, Debian 12's 1.7.2 among them, print none. The shared
//! fixtures' logs of 6.1 come from 1.7.2.

/// `log` without the caller column: each record's `[%8s] ` after its
/// timestamp removed, and as many spaces from its continuation lines, as
/// makedumpfile 1.7.4 and older print it.
pub fn without_caller_ids(log: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(log.len());
    let mut width = 0;
    for line in log.split_inclusive(|&b| b == b'\n') {
        if let Some((at, w)) = caller_column(line) {
            out.extend_from_slice(&line[..at]);
            out.extend_from_slice(&line[at + w..]);
            width = w;
        } else if line.starts_with(b" ") {
            let spaces = line.iter().take_while(|&&b| b == b' ').count();
            out.extend_from_slice(&line[width.min(spaces)..]);
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

/// Where the caller column of a record's first line starts, and its width
/// with the space after it: `[    0.000000] [      T0] text`.
fn caller_column(line: &[u8]) -> Option<(usize, usize)> {
    let (open, rest) = line.split_first()?;
    let stamp_end = rest.windows(2).position(|w| w == b"] ")?;
    let at = 1 + stamp_end + 2;
    if *open != b'[' || !rest[..stamp_end].iter().all(|b| b.is_ascii_digit() || b" .".contains(b)) {
        return None;
    }
    let column = line.get(at..)?;
    let close = column.windows(2).position(|w| w == b"] ")?;
    let id = column[1..close].trim_ascii_start();
    let is_caller = column[0] == b'['
        && matches!(id.first(), Some(b'T' | b'C'))
        && id.len() > 1
        && id[1..].iter().all(u8::is_ascii_digit);
    is_caller.then_some((at, close + 2))
}

/// Whether every record of `log` (each line not indented) has a caller column.
pub fn every_record_has_a_caller(log: &[u8]) -> bool {
    log.split(|&b| b == b'\n')
        .filter(|line| !line.is_empty() && !line.starts_with(b" "))
        .all(|line| caller_column(line).is_some())
}
