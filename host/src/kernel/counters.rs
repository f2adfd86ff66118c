//! The kernel's own page counters, which the classification's counts can
//! be set beside (docs/kernel-map.md §7): `vm_zone_stat[NR_FREE_PAGES]`,
//! `vm_node_stat[NR_FILE_PAGES]` and `vm_node_stat[NR_ANON_MAPPED]`, the
//! enum indexes from VMCOREINFO or BTF.

use super::KernelView;
use super::error::{MapError, needing};

/// Most a CPU's delta of one counter of one zone or node holds before
/// the kernel folds it into the global counter (mm/vmstat.c's
/// MAX_THRESHOLD).
const MAX_PER_CPU_DELTA: u64 = 125;

/// The symbols it reads.
pub const SYMBOLS: [&str; 4] = ["vm_zone_stat", "vm_node_stat", "nr_cpu_ids", "nr_node_ids"];

/// The enumerators it reads from BTF, where VMCOREINFO does not give them.
const ENUMERATORS: [&str; 4] = ["NR_FREE_PAGES", "NR_FILE_PAGES", "NR_ANON_MAPPED", "__MAX_NR_ZONES"];

/// The counters, in pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelCounters {
    /// Free pages in the buddy allocator (`NR_FREE_PAGES`).
    pub free: u64,
    /// Page cache pages, shmem included (`NR_FILE_PAGES`).
    pub file: u64,
    /// Anonymous pages mapped by processes (`NR_ANON_MAPPED`).
    pub anon: u64,
    /// How far each global counter can be from the truth: the per-CPU
    /// deltas not yet folded in, at most [`MAX_PER_CPU_DELTA`] per CPU
    /// and zone of each node.
    pub bound: u64,
}

impl KernelCounters {
    /// Reads the counters of `kernel`.
    ///
    /// # Errors
    /// No symbols or BTF, a counter or an index they do not give, a read
    /// that fails.
    pub fn read(kernel: &KernelView<'_>) -> Result<Self, MapError> {
        let symbols = kernel.landmarks().map_err(needing("the kernel's counters", "kallsyms"))?;
        let values = super::btf::find_enumerators(kernel.memory(), symbols, &ENUMERATORS)?;
        let index = |name: &str| {
            let from_btf = ENUMERATORS.iter().position(|&e| e == name).and_then(|i| values[i]);
            kernel
                .info()
                .number(name)
                .or(from_btf)
                .ok_or_else(|| MapError::NoType(format!("enumerator {name}")))
        };
        let counter = |array: &str, item: &str| -> Result<u64, MapError> {
            let at = symbols.address_of(array)?;
            let index =
                u64::try_from(index(item)?).map_err(|_| MapError::NoType(format!("{item} as an index")))?;
            let vaddr = at + 8 * index; // atomic_long_t
            let value = kernel.memory().read_u64(vaddr).map_err(super::error::read_error(
                "counters",
                "a counter",
                vaddr,
            ))?;
            Ok((value as i64).max(0) as u64) // a global counter can dip below 0 by the deltas
        };
        let u32_at = |name: &str| -> Option<u64> {
            let at = symbols.lookup(name)?;
            let mut word = [0u8; 4];
            kernel.memory().read_virt(at, &mut word).ok()?;
            Some(u64::from(kernel.memory().arch().endian().u32(&word, 0)))
        };
        // nr_cpu_ids, nr_node_ids: macros (absent) in kernels built for one.
        let cpus = u32_at("nr_cpu_ids").unwrap_or(1).max(1);
        let nodes = u32_at("nr_node_ids").unwrap_or(1).max(1);
        let zones = index("__MAX_NR_ZONES").ok().and_then(|z| u64::try_from(z).ok()).unwrap_or(4).max(1);
        Ok(KernelCounters {
            free: counter("vm_zone_stat", "NR_FREE_PAGES")?,
            file: counter("vm_node_stat", "NR_FILE_PAGES")?,
            anon: counter("vm_node_stat", "NR_ANON_MAPPED")?,
            bound: MAX_PER_CPU_DELTA * cpus * zones * nodes,
        })
    }
}
