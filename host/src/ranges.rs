//! Sets of pfns as sorted, disjoint ranges: the kernel image in use, the
//! pfns filter plugins mark. One place for merging and looking them up.

use std::ops::Range;

/// Sorts `ranges` and merges those that overlap or touch (empty ones dropped).
pub fn merge(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.retain(|r| !r.is_empty());
    ranges.sort_unstable_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// Whether `pfn` lies in sorted, disjoint `ranges`.
pub fn holds(ranges: &[Range<u64>], pfn: u64) -> bool {
    let i = ranges.partition_point(|r| r.end <= pfn);
    ranges.get(i).is_some_and(|r| r.start <= pfn)
}

/// The ranges of sorted, disjoint `ranges` that meet `pfns`.
pub fn meeting<'r>(ranges: &'r [Range<u64>], pfns: &Range<u64>) -> &'r [Range<u64>] {
    let first = ranges.partition_point(|r| r.end <= pfns.start);
    let count = ranges[first..].partition_point(|r| r.start < pfns.end);
    &ranges[first..first + count]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_are_found() {
        let merged = merge(vec![5..7, 1..3, 2..4, 7..9, 20..20]);
        assert_eq!(merged, vec![1..4, 5..9]);
        assert!(holds(&merged, 1) && holds(&merged, 8));
        assert!(!holds(&merged, 4) && !holds(&merged, 9) && !holds(&merged, 0));
        assert_eq!(meeting(&merged, &(3..6)), &[1..4, 5..9]);
        assert_eq!(meeting(&merged, &(4..5)), &[] as &[Range<u64>]);
    }
}
