//! VMCOREINFO read from a kernel that just crashed, which may have damaged
//! it with the rest of its memory: every line that is well formed is kept,
//! every other one is named and left out, as if the kernel had not
//! exported it, so that a dump tool lowers its level rather than losing
//! the dump (issue 41). A line is damaged when it is not UTF-8, has no
//! `=`, has a key that is not a printable word, or a value its key's
//! family cannot hold (kdump-format.md §4.2: hex for `SYMBOL()`,
//! `KERNELOFFSET` and `BUILD-ID`, decimal for `PAGESIZE`, `CRASHTIME`,
//! `SIZE()`, `OFFSET()`, `LENGTH()`, decimal or `0x` hex for `NUMBER()`).
//! Keys of other families are kept as they are.

use std::fmt;

use super::{VmcoreInfo, parse_hex, parse_number};

/// A VMCOREINFO line that [`VmcoreInfo::salvage`] left out or replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// 1-based line number; 0 for a key the text lacked and the machine fixes.
    pub line: usize,
    /// The line as it was (at most 80 characters).
    pub text: String,
    /// What is wrong, and what was done.
    pub reason: String,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "VMCOREINFO: {}", self.reason),
            line => write!(f, "VMCOREINFO line {line} {:?}: {}", self.text, self.reason),
        }
    }
}

/// Why `key=value` cannot be what the kernel wrote, if it cannot.
fn value_problem(key: &str, value: &str) -> Option<&'static str> {
    let printable_word = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic());
    if !printable_word(key) {
        return Some("the key is not a printable word");
    }
    let family = key.split_once('(').map(|(family, rest)| (family, rest.ends_with(')')));
    let decimal = |v: &str| v.parse::<u64>().is_ok();
    let unsigned = |v: &str| parse_number(v).is_some_and(|n| n >= 0);
    let ok = match (key, family) {
        (_, Some((_, false))) => return Some("the key's parenthesis is not closed"),
        (_, Some(("SYMBOL", _))) => parse_hex(value).is_some(),
        (_, Some(("SIZE" | "OFFSET" | "LENGTH", _))) => unsigned(value),
        (_, Some(("NUMBER", _))) => parse_number(value).is_some(),
        ("PAGESIZE", _) => value.parse::<u64>().is_ok_and(u64::is_power_of_two),
        ("CRASHTIME", _) => decimal(value),
        ("KERNELOFFSET", _) => parse_hex(value).is_some(),
        ("BUILD-ID", _) => !value.is_empty() && value.bytes().all(|b| b.is_ascii_hexdigit()),
        ("OSRELEASE", _) => printable_word(value),
        _ => true,
    };
    (!ok).then_some("a value its key cannot have")
}

fn damage(line: usize, text: &str, reason: impl Into<String>) -> Damage {
    Damage { line, text: text.chars().take(80).collect(), reason: reason.into() }
}

impl VmcoreInfo {
    /// Parses VMCOREINFO that may be damaged: the well-formed lines, and
    /// every other line named. `fixed` holds the keys whose value the
    /// machine fixes (`PAGESIZE=4096` on x86_64): another value there is
    /// damage and the fixed one is used, and a missing one is added. The
    /// result's [`text`](VmcoreInfo::text) is the repaired text, what a
    /// dump should carry so that its readers open it.
    pub fn salvage(bytes: &[u8], fixed: &[(&str, &str)]) -> (VmcoreInfo, Vec<Damage>) {
        let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let mut kept = String::new();
        let mut found = Vec::new();
        let mut seen_fixed = vec![false; fixed.len()];
        for (n, raw) in bytes[..end].split(|&b| b == b'\n').enumerate() {
            let line = n + 1;
            let Ok(text) = std::str::from_utf8(raw).map(|t| t.trim_end_matches('\r')) else {
                found.push(damage(line, &String::from_utf8_lossy(raw), "not UTF-8: left out"));
                continue;
            };
            if text.is_empty() {
                continue;
            }
            let Some((key, value)) = text.split_once('=') else {
                found.push(damage(line, text, "no '=' in line: left out"));
                continue;
            };
            let mut text = text.to_owned();
            if let Some(i) = fixed.iter().position(|(k, _)| *k == key) {
                let want = fixed[i].1;
                if seen_fixed[i] {
                    continue; // the first occurrence wins, as in `parse`
                }
                seen_fixed[i] = true;
                if value != want {
                    found.push(damage(line, &text, format!("the machine's is {want}: {want} used")));
                    text = format!("{key}={want}");
                }
            } else if let Some(problem) = value_problem(key, value) {
                found.push(damage(line, &text, format!("{problem}: left out")));
                continue;
            }
            kept.push_str(&text);
            kept.push('\n');
        }
        for ((key, want), _) in fixed.iter().zip(&seen_fixed).filter(|(_, seen)| !**seen) {
            found.push(damage(0, "", format!("{key} is missing: the machine's {want} used")));
            kept.push_str(&format!("{key}={want}\n"));
        }
        let info = VmcoreInfo::parse(kept.as_bytes()).expect("every kept line is KEY=value");
        (info, found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const X86: &[(&str, &str)] = &[("PAGESIZE", "4096")];

    fn salvaged(text: &str, fixed: &[(&str, &str)]) -> (String, Vec<(usize, String)>) {
        let (info, damage) = VmcoreInfo::salvage(text.as_bytes(), fixed);
        (info.text().to_owned(), damage.into_iter().map(|d| (d.line, d.reason)).collect())
    }

    #[test]
    fn well_formed_text_is_kept_as_it_is() {
        let text = "OSRELEASE=6.1.0-57-amd64\nBUILD-ID=6a2b4ac7\nPAGESIZE=4096\nSYMBOL(init_uts_ns)=ffffffffa53fb000\n\
            SIZE(page)=64\nOFFSET(page.flags)=0\nLENGTH(zone.free_area)=11\nNUMBER(phys_base)=-411041792\n\
            NUMBER(kimage_voffset)=0xffff800080000000\nKERNELOFFSET=22800000\nCRASHTIME=1795998873\n\
            CONFIG_X86_PAE=y\nVA_BITS=48\n";
        let (info, damage) = VmcoreInfo::salvage(format!("{text}\0\0").as_bytes(), X86);
        assert!(damage.is_empty(), "{damage:?}");
        assert_eq!(info, VmcoreInfo::parse(text.as_bytes()).unwrap());
    }

    #[test]
    fn damaged_lines_are_named_and_left_out() {
        let text = "PAGESIZE=4096\nOFFSET(page.flags)80\nSYMBOL(mem_section)=ffff89zz\nSIZE(page)=-64\n\
            OFFSET(page.lru=8\nNUMBER(PG_lru)=four\nCRASHTIME=17x\nOSRELEASE=\nA B=1\n=5\nSIZE(zone)=1536\n";
        let (kept, damage) = salvaged(text, X86);
        assert_eq!(kept, "PAGESIZE=4096\nSIZE(zone)=1536\n");
        let lines: Vec<usize> = damage.iter().map(|d| d.0).collect();
        assert_eq!(lines, [2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert!(damage[0].1.contains("no '='"), "{damage:?}");
        assert!(damage[3].1.contains("parenthesis"), "{damage:?}");
        let (info, damage) = VmcoreInfo::salvage(b"PAGESIZE=4096\nSYMBOL(x)=1\nA=\xff\xfe\n", X86);
        assert_eq!((info.text(), damage.len()), ("PAGESIZE=4096\nSYMBOL(x)=1\n", 1), "{damage:?}");
    }

    #[test]
    fn the_machine_fixes_its_page_size() {
        let (kept, damage) = salvaged("OSRELEASE=6.1\nPAGESIZE=4095\nPAGESIZE=8192\n", X86);
        assert_eq!(kept, "OSRELEASE=6.1\nPAGESIZE=4096\n");
        assert_eq!(damage, [(2, "the machine's is 4096: 4096 used".to_owned())]);
        let (kept, damage) = salvaged("OSRELEASE=6.1\n", X86);
        assert_eq!(kept, "OSRELEASE=6.1\nPAGESIZE=4096\n");
        assert_eq!(damage[0].0, 0);
        assert!(damage[0].1.contains("PAGESIZE is missing"), "{damage:?}");
        // Without a fixed value, a page size that is no power of two is left out.
        let (kept, damage) = salvaged("PAGESIZE=65535\nOSRELEASE=6.1\n", &[]);
        assert_eq!((kept.as_str(), damage.len()), ("OSRELEASE=6.1\n", 1));
    }

    #[test]
    fn damage_names_its_line() {
        let (_, damage) = VmcoreInfo::salvage(b"PAGESIZE=4096\nOFFSET(page.flags)80\n", X86);
        assert_eq!(
            damage[0].to_string(),
            "VMCOREINFO line 2 \"OFFSET(page.flags)80\": no '=' in line: left out"
        );
    }
}
