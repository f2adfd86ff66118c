//! What a live dump of the running system (`/proc/kcore`) leaves out that
//! a crash dump's `/proc/vmcore` never holds: the memory reserved for the
//! capture kernel (`crashkernel=`), which `/proc/iomem` names "Crash
//! kernel". makedumpfile's `--mem-usage` leaves it out the same way.

use std::ops::Range;

/// The pfn ranges `/proc/iomem` reserves for the capture kernel; none if it
/// cannot be read (nothing is reserved, or not root: the addresses read as 0).
pub fn crash_kernel_pfns(page_size: u64) -> Vec<Range<u64>> {
    std::fs::read_to_string("/proc/iomem").map_or_else(|_| Vec::new(), |t| crash_kernel_in(&t, page_size))
}

/// The "Crash kernel" ranges of an `/proc/iomem` text, as pfn ranges
/// holding every page they touch.
fn crash_kernel_in(iomem: &str, page_size: u64) -> Vec<Range<u64>> {
    iomem
        .lines()
        .filter_map(|line| {
            let (range, name) = line.trim_start().split_once(" : ")?;
            (name.trim() == "Crash kernel").then_some(())?;
            let (start, end) = range.split_once('-')?;
            let start = u64::from_str_radix(start, 16).ok()?;
            let end = u64::from_str_radix(end, 16).ok()?.checked_add(1)?;
            (end > start && end > 1).then(|| start / page_size..end.div_ceil(page_size))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_kernel_ranges_are_read_from_iomem_at_any_depth() {
        let iomem = "00000000-00000fff : Reserved\n\
                     00100000-2ffd6fff : System RAM\n  \
                       01000000-01e02fff : Kernel code\n  \
                       25000000-2effffff : Crash kernel\n\
                     100000000-13fffffff : System RAM\n  \
                       138000000-1380007ff : Crash kernel\n\
                     00000000-00000000 : Crash kernel\n";
        assert_eq!(crash_kernel_in(iomem, 4096), vec![0x25000..0x2f000, 0x138000..0x138001]);
        assert!(crash_kernel_in("00100000-2ffd6fff : System RAM\n", 4096).is_empty());
    }
}
