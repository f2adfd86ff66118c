//! VMCOREINFO: the `KEY=value` text the kernel exports in a note
//! (kdump-format.md §4.1, §4.2).
//!
//! Value formats (§4.2): `SYMBOL(x)` and `KERNELOFFSET` are hex without
//! `0x`; `PAGESIZE`, `CRASHTIME`, `SIZE`, `OFFSET`, `LENGTH` and `NUMBER`
//! are decimal, `NUMBER` possibly negative (`NUMBER(phys_base)` with KASLR)
//! and, for a few arch entries, hex with `0x`. As in makedumpfile, the first
//! occurrence of a key wins and a missing or unparsable value is `None`.

use std::collections::HashMap;

use crate::FormatError;

mod salvage;
pub use salvage::Damage;

/// Parsed VMCOREINFO text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmcoreInfo {
    text: String,
    /// (key, value) in text order.
    entries: Vec<(String, String)>,
    /// key → index into `entries` of its first occurrence.
    index: HashMap<String, usize>,
}

fn bad_line(line: usize, text: &str, reason: &'static str) -> FormatError {
    let text: String = text.chars().take(80).collect();
    FormatError::BadVmcoreinfoLine { line, text, reason }
}

/// Decimal (optionally negative), else hex with an optional `0x`
/// (makedumpfile re-parses base 16 when base 10 leaves characters).
fn parse_number(value: &str) -> Option<i64> {
    if let Ok(v) = value.parse::<i64>() {
        return Some(v);
    }
    let (neg, digits) = match value.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let digits = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")).unwrap_or(digits);
    // Reinterpret as two's complement: NUMBER(VMALLOC_START)=0xffffb1e180000000.
    let v = u64::from_str_radix(digits, 16).ok()? as i64;
    Some(if neg { v.wrapping_neg() } else { v })
}

fn parse_hex(value: &str) -> Option<u64> {
    let digits = value.strip_prefix("0x").unwrap_or(value);
    u64::from_str_radix(digits, 16).ok()
}

impl VmcoreInfo {
    /// Parses the note descriptor (trailing NUL bytes are ignored).
    ///
    /// # Errors
    ///
    /// [`FormatError::BadVmcoreinfoLine`] naming the 1-based line number of a
    /// line that is not UTF-8, has no `=`, or has an empty key.
    pub fn parse(bytes: &[u8]) -> Result<Self, FormatError> {
        let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let mut entries = Vec::new();
        let mut index = HashMap::new();
        for (n, raw) in bytes[..end].split(|&b| b == b'\n').enumerate() {
            let line = n + 1;
            let text = std::str::from_utf8(raw)
                .map_err(|_| bad_line(line, &String::from_utf8_lossy(raw), "not UTF-8"))?
                .trim_end_matches('\r');
            if text.is_empty() {
                continue;
            }
            let (key, value) = text.split_once('=').ok_or_else(|| bad_line(line, text, "no '=' in line"))?;
            if key.is_empty() {
                return Err(bad_line(line, text, "empty key"));
            }
            index.entry(key.to_owned()).or_insert(entries.len());
            entries.push((key.to_owned(), value.to_owned()));
        }
        let text = String::from_utf8_lossy(&bytes[..end]).into_owned();
        Ok(VmcoreInfo { text, entries, index })
    }

    /// The raw text (without trailing NULs).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// All (key, value) pairs in text order, duplicates included.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The value of `key` (first occurrence), e.g. `get("OSRELEASE")`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.index.get(key).map(|&i| self.entries[i].1.as_str())
    }

    fn wrapped(&self, family: &str, name: &str) -> Option<&str> {
        self.get(&format!("{family}({name})"))
    }

    /// `PAGESIZE=` (decimal).
    pub fn page_size(&self) -> Option<u64> {
        self.get("PAGESIZE")?.parse().ok()
    }

    /// `OSRELEASE=`, the kernel release string.
    pub fn osrelease(&self) -> Option<&str> {
        self.get("OSRELEASE")
    }

    /// (major, minor) of `OSRELEASE`, e.g. (6, 1) for `6.1.0-57-amd64`.
    pub fn kernel_version(&self) -> Option<(u32, u32)> {
        let mut parts = self.osrelease()?.split(|c: char| !c.is_ascii_digit());
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    }

    /// `CRASHTIME=` (decimal seconds since the epoch).
    pub fn crashtime(&self) -> Option<i64> {
        self.get("CRASHTIME")?.parse().ok()
    }

    /// `SYMBOL(name)=` (hex address).
    pub fn symbol(&self, name: &str) -> Option<u64> {
        parse_hex(self.wrapped("SYMBOL", name)?)
    }

    /// `SIZE(name)=` (decimal).
    pub fn size(&self, name: &str) -> Option<u64> {
        u64::try_from(parse_number(self.wrapped("SIZE", name)?)?).ok()
    }

    /// `OFFSET(name)=`, e.g. `offset("page.flags")` (decimal).
    pub fn offset(&self, name: &str) -> Option<u64> {
        u64::try_from(parse_number(self.wrapped("OFFSET", name)?)?).ok()
    }

    /// `LENGTH(name)=` (decimal).
    pub fn length(&self, name: &str) -> Option<u64> {
        u64::try_from(parse_number(self.wrapped("LENGTH", name)?)?).ok()
    }

    /// `NUMBER(name)=`: decimal, possibly negative; `0x` hex values are
    /// returned as their two's-complement `i64` bit pattern.
    pub fn number(&self, name: &str) -> Option<i64> {
        parse_number(self.wrapped("NUMBER", name)?)
    }

    /// A plain key's hex value, e.g. `hex("KERNELOFFPHYS")`.
    pub fn hex(&self, key: &str) -> Option<u64> {
        parse_hex(self.get(key)?)
    }

    /// `KERNELOFFSET=` (hex): the KASLR displacement of the kernel image
    /// (s390x since 6.10: the image's virtual start).
    pub fn kerneloffset(&self) -> Option<u64> {
        self.hex("KERNELOFFSET")
    }

    /// `NUMBER(phys_base)`, negative with KASLR.
    pub fn phys_base(&self) -> Option<i64> {
        self.number("phys_base")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "OSRELEASE=6.1.0-57-amd64\nPAGESIZE=4096\nSYMBOL(mem_section)=ffff8f0317fd5000\n\
        SIZE(page)=64\nOFFSET(page.flags)=0\nOFFSET(page._refcount)=52\nLENGTH(mem_section)=4096\n\
        NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)=-129\nNUMBER(phys_base)=-478150656\n\
        NUMBER(VMALLOC_START)=0xffffb1e180000000\nKERNELOFFSET=27e00000\nCONFIG_X86_PAE=y\n\
        PAGESIZE=65536\nCRASHTIME=1700000123\n\0\0\0";

    #[test]
    fn typed_getters() {
        let info = VmcoreInfo::parse(TEXT.as_bytes()).unwrap();
        assert_eq!(info.osrelease(), Some("6.1.0-57-amd64"));
        assert_eq!(info.page_size(), Some(4096), "first occurrence wins");
        assert_eq!(info.symbol("mem_section"), Some(0xffff_8f03_17fd_5000));
        assert_eq!(info.size("page"), Some(64));
        assert_eq!(info.offset("page.flags"), Some(0));
        assert_eq!(info.offset("page._refcount"), Some(52));
        assert_eq!(info.length("mem_section"), Some(4096));
        assert_eq!(info.number("PAGE_BUDDY_MAPCOUNT_VALUE"), Some(-129));
        assert_eq!(info.phys_base(), Some(-478_150_656));
        assert_eq!(info.number("VMALLOC_START"), Some(0xffff_b1e1_8000_0000u64 as i64));
        assert_eq!(info.kerneloffset(), Some(0x27e0_0000));
        assert_eq!(info.crashtime(), Some(1_700_000_123));
        assert_eq!(info.get("CONFIG_X86_PAE"), Some("y"));
        assert_eq!(info.symbol("missing"), None);
        assert_eq!(info.number("missing"), None);
        assert!(info.text().ends_with("CRASHTIME=1700000123\n"));
        assert_eq!(info.entries().count(), 14);
    }

    #[test]
    fn malformed_line_names_its_number() {
        let err = VmcoreInfo::parse(b"PAGESIZE=4096\n\ngarbage line\n").unwrap_err();
        match err {
            FormatError::BadVmcoreinfoLine { line, ref text, .. } => {
                assert_eq!(line, 3);
                assert_eq!(text, "garbage line");
            }
            other => panic!("unexpected {other}"),
        }
        assert!(VmcoreInfo::parse(b"=1\n").is_err());
        assert!(VmcoreInfo::parse(b"A=\xff\xfe\n").is_err());
    }

    #[test]
    fn unparsable_values_are_none() {
        let info = VmcoreInfo::parse(b"SYMBOL(x)=zzz\nSIZE(y)=-5\nPAGESIZE=4k\n").unwrap();
        assert_eq!(info.symbol("x"), None);
        assert_eq!(info.size("y"), None);
        assert_eq!(info.page_size(), None);
    }
}
