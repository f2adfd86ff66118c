//! The `ranges` parameter: half-open ranges of pfns (or, with `paddr:`, of
//! physical byte addresses), parsed, checked, sorted and merged once so that a
//! page is looked up with one binary search.

use std::ops::Range;

use vmdump_sdk::parse_u64;

/// One entry of the parameter as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry's text, for messages.
    pub text: String,
    /// Start and end as written (pfns, or bytes when `paddr`).
    pub bounds: Range<u64>,
    /// Whether the bounds are physical byte addresses.
    pub paddr: bool,
}

/// Parses `text` (`"0x100000-0x140000, paddr:0xfe000000-0x100000000"`).
///
/// # Errors
/// A message naming the bad entry and what is wrong with it.
pub fn parse_entries(text: &str) -> Result<Vec<Entry>, String> {
    if text.trim().is_empty() {
        return Err("no range given (write `start-end`, e.g. `0x100000-0x140000`)".into());
    }
    text.split(',').map(str::trim).enumerate().map(|(i, entry)| parse_entry(i + 1, entry)).collect()
}

fn parse_entry(position: usize, entry: &str) -> Result<Entry, String> {
    if entry.is_empty() {
        return Err(format!("entry {position} is empty"));
    }
    let (paddr, span) = match entry.strip_prefix("paddr:") {
        Some(rest) => (true, rest.trim()),
        None => (false, entry),
    };
    let bad = |why: String| format!("`{entry}`: {why}");
    let (start, end) = span.split_once('-').ok_or_else(|| bad("not `start-end`".into()))?;
    let number = |part: &str| {
        parse_u64(part.trim())
            .ok_or_else(|| bad(format!("`{}` is not a number (decimal, or hex with 0x)", part.trim())))
    };
    let (start, end) = (number(start)?, number(end)?);
    if end <= start {
        return Err(bad(
            "the end must be after the start (ranges are half-open: `start-end` excludes end)".into()
        ));
    }
    Ok(Entry { text: entry.to_owned(), bounds: start..end, paddr })
}

/// Sorted, disjoint, non-adjacent pfn ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PfnRanges(Vec<Range<u64>>);

impl PfnRanges {
    /// The pfn ranges of `entries`; `paddr` entries must be multiples of `page_size`.
    ///
    /// # Errors
    /// A message naming a `paddr` entry that does not fall on page boundaries.
    pub fn new(entries: &[Entry], page_size: u64) -> Result<Self, String> {
        let mut ranges = entries.iter().map(|e| pfns(e, page_size)).collect::<Result<Vec<_>, _>>()?;
        ranges.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
        for range in ranges {
            match merged.last_mut() {
                Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
                _ => merged.push(range),
            }
        }
        Ok(Self(merged))
    }

    /// Whether `pfn` is in one of the ranges.
    pub fn contains(&self, pfn: u64) -> bool {
        let first_not_before = self.0.partition_point(|r| r.end <= pfn);
        self.0.get(first_not_before).is_some_and(|r| r.start <= pfn)
    }
}

fn pfns(entry: &Entry, page_size: u64) -> Result<Range<u64>, String> {
    if !entry.paddr {
        return Ok(entry.bounds.clone());
    }
    let Range { start, end } = entry.bounds;
    match [start, end].into_iter().find(|a| a % page_size != 0) {
        Some(a) => Err(format!("`{}`: {a:#x} is not a multiple of the page size ({page_size})", entry.text)),
        None => Ok(start / page_size..end / page_size),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(text: &str) -> Result<PfnRanges, String> {
        PfnRanges::new(&parse_entries(text)?, 4096)
    }

    #[test]
    fn hex_decimal_and_paddr_entries_become_sorted_merged_pfn_ranges() {
        let r = ranges(" 0x200000-0x200100 , 16-32,0x100000-0x140000, paddr:0x10000-0x21000,20-40").unwrap();
        assert_eq!(r.0, [16..40, 0x100000..0x140000, 0x200000..0x200100]);
        assert_eq!(ranges("0-1,1-2").unwrap().0, vec![0..2], "adjacent ranges merge");
    }

    #[test]
    fn lookup_is_half_open() {
        let r = ranges("0x100-0x200,0x1000-0x1001").unwrap();
        let excluded: Vec<u64> = [0, 0xff, 0x100, 0x1ff, 0x200, 0xfff, 0x1000, 0x1001, u64::MAX]
            .into_iter()
            .filter(|&p| r.contains(p))
            .collect();
        assert_eq!(excluded, [0x100, 0x1ff, 0x1000]);
    }

    #[test]
    fn bad_entries_are_named() {
        let error = |text| ranges(text).unwrap_err();
        assert!(error("").contains("no range"));
        assert!(error("0x100-0x200,").contains("entry 2 is empty"), "{}", error("0x100-0x200,"));
        assert!(error("0x100").contains("`0x100`: not `start-end`"));
        assert!(error("1-0x2g").contains("`0x2g` is not a number"));
        assert!(error("5-5").contains("`5-5`: the end must be after the start"));
        assert!(error("-1-2").contains("`` is not a number"));
        assert!(error("paddr:0x1800-0x4000").contains("0x1800 is not a multiple of the page size (4096)"));
    }
}
