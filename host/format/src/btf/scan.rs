//! Enumerators found in a BTF blob that is never held in memory: one pass
//! over its strings finds where the names asked for are, one pass over its
//! type records finds the enumerators that carry those names. Each pass
//! reads a window at a time, so a dump learns the few values it needs of a
//! 6 MiB BTF in a few KiB (docs/kernel-map.md §10).

use super::{Endian, FormatError, Kind, header_endian};
use crate::read_at::ReadAt;

/// Bytes read at a time: 16 KiB, a few reads more of a 6 MiB blob than
/// larger windows and no more memory than a capture kernel can spare.
const WINDOW: usize = 16 << 10;

/// The value of each of `names` as an enumerator of any enum of `blob`
/// (the first in record order, as [`super::Btf::enumerator`] finds it),
/// `None` for a name no enum has.
///
/// # Errors
/// A read fails, a bad header, a section beyond the blob, a record of
/// unknown kind or running past its section.
pub fn find_enumerators<R: ReadAt + ?Sized>(
    blob: &R,
    names: &[&str],
) -> Result<Vec<Option<i64>>, FormatError> {
    let mut reader = Windowed { blob, start: 0, bytes: Vec::new() };
    let layout = Layout::read(&mut reader)?;
    let offsets = string_offsets(&mut reader, &layout, names)?;
    let mut values = vec![None; names.len()];
    let mut at = layout.types.0;
    while at < layout.types.1 && values.iter().any(Option::is_none) {
        let record = reader.get(at, 12, layout.types.1, "a type record")?;
        let info = layout.endian.u32(record, 4);
        let kind_number = (info >> 24) & 0x1f;
        let kind =
            Kind::from_number(kind_number).ok_or_else(|| bad(at, format!("type kind {kind_number}")))?;
        let vlen = (info & 0xffff) as usize;
        let len = 12 + kind.extra(vlen) as u64;
        if layout.types.1 - at < len {
            return Err(bad(at, format!("a {kind:?} record of {len} bytes runs past its section")));
        }
        if matches!(kind, Kind::Enum | Kind::Enum64) {
            let entry = if kind == Kind::Enum { 8 } else { 12 };
            for i in 0..vlen as u64 {
                let e = reader.get(at + 12 + entry * i, entry as usize, layout.types.1, "an enumerator")?;
                let Some(&(_, n)) = offsets.iter().find(|(off, _)| *off == layout.endian.u32(e, 0)) else {
                    continue;
                };
                let value = match kind {
                    Kind::Enum => i64::from(layout.endian.u32(e, 4) as i32),
                    _ => {
                        (u64::from(layout.endian.u32(e, 8)) << 32 | u64::from(layout.endian.u32(e, 4))) as i64
                    }
                };
                values[n].get_or_insert(value);
            }
        }
        at += len;
    }
    Ok(values)
}

/// Where the two sections are, in blob offsets, and the byte order.
struct Layout {
    endian: Endian,
    types: (u64, u64),
    strings: (u64, u64),
}

impl Layout {
    fn read<R: ReadAt + ?Sized>(reader: &mut Windowed<'_, R>) -> Result<Self, FormatError> {
        let size = reader.blob.size();
        let header = reader.get(0, 24, size, "the BTF header")?;
        let endian = header_endian(header)?;
        let field = |at: usize| u64::from(endian.u32(header, at));
        let header_len = field(4);
        let section = |off_at: usize, what: &str| {
            let start = header_len + field(off_at);
            let end = start + field(off_at + 4);
            match header_len >= 24 && end <= size {
                true => Ok((start, end)),
                false => {
                    Err(bad(off_at as u64, format!("the {what} section runs past the blob's {size} bytes")))
                }
            }
        };
        Ok(Layout { endian, types: section(8, "type")?, strings: section(16, "string")? })
    }
}

/// Where each of `names` starts in the string section (name offsets, as
/// records give them), with the index of the name: every place, though
/// the kernel's BTF holds each string once.
fn string_offsets<R: ReadAt + ?Sized>(
    reader: &mut Windowed<'_, R>,
    layout: &Layout,
    names: &[&str],
) -> Result<Vec<(u32, usize)>, FormatError> {
    let (start, end) = layout.strings;
    let longest = names.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut found = Vec::new();
    let mut at = start;
    // After a string longer than a window, the rest of it up to its NUL.
    let mut skipping = false;
    while at < end {
        // A window from `at`: its strings that end in it are compared, the
        // one it cuts starts the next window (or, longer than a window and
        // so no name asked for, is stepped over).
        let window = reader.get(at, WINDOW.min((end - at) as usize), end, "the strings")?;
        let mut consumed = 0;
        while let Some(len) = window[consumed..].iter().position(|&b| b == 0) {
            let string = &window[consumed..consumed + len];
            if !std::mem::take(&mut skipping)
                && string.len() <= longest
                && let Some(n) = names.iter().position(|name| name.as_bytes() == string)
            {
                found.push(((at - start) as u32 + consumed as u32, n));
            }
            consumed += len + 1;
        }
        at += match consumed {
            0 => {
                skipping = true;
                window.len() as u64
            }
            _ => consumed as u64,
        };
    }
    Ok(found)
}

/// A window of the blob, refilled where a read falls outside it.
struct Windowed<'b, R: ReadAt + ?Sized> {
    blob: &'b R,
    start: u64,
    bytes: Vec<u8>,
}

impl<R: ReadAt + ?Sized> Windowed<'_, R> {
    /// `len` bytes at `at`, which must end by `limit` (the section's end).
    fn get(&mut self, at: u64, len: usize, limit: u64, what: &str) -> Result<&[u8], FormatError> {
        if limit.checked_sub(at).is_none_or(|room| room < len as u64) {
            return Err(bad(at, format!("{what} cut short by the end of its section")));
        }
        let inside = at >= self.start && at + len as u64 <= self.start + self.bytes.len() as u64;
        if !inside {
            let fill = (limit - at).min(WINDOW.max(len) as u64) as usize;
            self.bytes.resize(fill, 0);
            self.blob.read_exact_at(&mut self.bytes, at).map_err(|e| FormatError::io(at, fill as u64, e))?;
            self.start = at;
        }
        let from = (at - self.start) as usize;
        Ok(&self.bytes[from..from + len])
    }
}

fn bad(offset: u64, reason: String) -> FormatError {
    FormatError::BadBtf { offset, reason }
}

#[cfg(test)]
mod tests {
    use super::super::Btf;
    use super::super::tests::outer;
    use super::*;

    /// The kernel's enum node_stat_item in part, an enum64, and more
    /// strings than a window holds before them, so that the passes cross
    /// windows and a name is cut by one.
    fn stat_items() -> Vec<u8> {
        let mut b = outer();
        for i in 0..12_000 {
            b.name(&format!("padding_string_{i}"));
        }
        let names = ["NR_LRU_BASE", "NR_FILE_PAGES", "NR_ANON_MAPPED"].map(|n| b.name(n));
        b.record("node_stat_item", 6, 3, false, 4, &[names[0], 0, names[1], 7, names[2], u32::MAX]);
        let big = b.name("BIG");
        b.record("wide", 19, 1, false, 8, &[big, 1, 2]);
        b.bytes()
    }

    #[test]
    fn enumerators_equal_the_parsed_blobs() {
        let bytes = stat_items();
        assert!(bytes.len() > 2 * WINDOW);
        let names = ["NR_ANON_MAPPED", "NR_FILE_PAGES", "BIG", "NR_SHMEM", "padding_string_7"];
        let found = find_enumerators(bytes.as_slice(), &names).unwrap();
        assert_eq!(found, [Some(-1), Some(7), Some(1 << 33 | 1), None, None]);
        let btf = Btf::parse(bytes).unwrap();
        for (name, value) in names.iter().zip(&found) {
            assert_eq!(btf.enumerator(name).map(|(v, _)| v), *value, "{name}");
        }
    }

    #[test]
    fn bad_blobs_say_where() {
        let mut bytes = stat_items();
        bytes[0] = 0;
        assert!(find_enumerators(bytes.as_slice(), &["BIG"]).unwrap_err().to_string().contains("magic"));
        let good = stat_items();
        let cut = &good[..good.len() - 10];
        assert!(find_enumerators(cut, &["BIG"]).unwrap_err().to_string().contains("runs past"));
    }
}
