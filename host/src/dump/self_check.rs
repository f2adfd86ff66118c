//! The self-check: the classification's counts beside the kernel's own
//! counters ([`KernelCounters`]), for the classes the dump level left out.
//! A kernel change that breaks the classification shows here, at dump
//! time, as counts far apart (docs/kernel-map.md §7).

use crate::classify::{ClassCounts, PageClass};
use crate::kernel::KernelView;
use crate::kernel::counters::KernelCounters;
use crate::level::DumpLevel;

/// One class against its counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterCheck {
    /// The class, as the report names it.
    pub class: &'static str,
    /// The kernel's counter.
    pub counter: &'static str,
    /// Pages the classification left out as that class.
    pub ours: u64,
    /// The counter's value.
    pub kernel: u64,
    /// How far apart they may be.
    pub bound: u64,
}

impl CounterCheck {
    /// Whether they are further apart than the counters' inexactness.
    pub fn differs(&self) -> bool {
        self.ours.abs_diff(self.kernel) > self.bound
    }
}

/// The checks of the classes `level` classifies; `Err` says why there are
/// none (no symbols, no BTF, an older kernel).
pub fn check(
    kernel: &KernelView<'_>,
    level: DumpLevel,
    counts: &ClassCounts,
) -> Result<Vec<CounterCheck>, String> {
    let classified = level.classified();
    if classified.is_empty() {
        return Ok(Vec::new());
    }
    let counters = KernelCounters::read(kernel).map_err(|e| e.to_string())?;
    let check =
        |class, counter, ours, kernel| CounterCheck { class, counter, ours, kernel, bound: counters.bound };
    let mut checks = Vec::new();
    if classified.contains(DumpLevel::FREE) {
        checks.push(check("free pages", "NR_FREE_PAGES", counts.classified(PageClass::Free), counters.free));
    }
    // Page cache is both cache classes; with one of them only, the other
    // is not counted.
    if classified.contains(DumpLevel::CACHE) && classified.contains(DumpLevel::CACHE_PRIVATE) {
        let cache = counts.classified(PageClass::Cache) + counts.classified(PageClass::CachePrivate);
        checks.push(check("page cache", "NR_FILE_PAGES", cache, counters.file));
    }
    if classified.contains(DumpLevel::USER) {
        checks.push(check("user data", "NR_ANON_MAPPED", counts.classified(PageClass::User), counters.anon));
    }
    Ok(checks)
}
