//! makedumpfile's `--mem-usage VMCORE`: how the pages of a system are used
//! (normally the running one's, through `/proc/kcore`), as makedumpfile
//! prints it: one -d 31 pass that classifies the struct pages and reads
//! every page they keep to count the zero ones, nothing written. On
//! `/proc/kcore` the capture kernel's reserved memory is left out
//! (`input::live`), as makedumpfile leaves it out.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::dump::registry_for;
use super::estimate::plan_for;
use crate::classify::ClassCounts;
use crate::dump::count_pages;
use crate::level::DumpLevel;
use crate::plan::open_kernel;
use crate::profile::Profile;
use crate::read::Modules;

/// The pages of a system by use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemUsage {
    /// Bytes of a page.
    pub page_size: u64,
    /// RAM pages.
    pub ram_pages: u64,
    /// Pages excluded at -d 31 by their struct pages.
    pub classes: ClassCounts,
    /// Zero pages among the others.
    pub zero: u64,
}

impl MemUsage {
    /// The pages no dump level leaves out: what makedumpfile calls
    /// dumpable kernel data.
    pub fn kernel_data(&self) -> u64 {
        let c = &self.classes;
        let excluded = self.zero + c.cache + c.cache_private + c.user + c.free + c.hwpoison + c.offline;
        self.ram_pages.saturating_sub(excluded)
    }

    /// makedumpfile's table.
    pub fn table(&self) -> String {
        let c = &self.classes;
        let mut t = String::from("\nTYPE\t\tPAGES\t\t\tEXCLUDABLE\tDESCRIPTION\n");
        t.push_str(&"-".repeat(70));
        t.push('\n');
        for (name, pages, excludable, what) in [
            ("ZERO\t", self.zero, "yes", "Pages filled with zero"),
            ("NON_PRI_CACHE", c.cache, "yes", "Cache pages without private flag"),
            ("PRI_CACHE", c.cache_private, "yes", "Cache pages with private flag"),
            ("USER\t", c.user, "yes", "User process pages"),
            ("FREE\t", c.free, "yes", "Free pages"),
            ("KERN_DATA", self.kernel_data(), "no", "Dumpable kernel data "),
        ] {
            let _ = writeln!(t, "{name}\t{pages:<16}\t{excludable}\t\t{what}");
        }
        let _ = writeln!(t, "\npage size:\t\t{:<16}", self.page_size);
        let _ = writeln!(t, "Total pages on system:\t{:<16}", self.ram_pages);
        let _ = writeln!(t, "Total size on system:\t{:<16} Byte", self.ram_pages * self.page_size);
        t
    }
}

/// The pages of `input` by use, from the struct pages of its kernel and a
/// read of every page they keep.
///
/// # Errors
/// The input cannot be opened, or its kernel's struct pages cannot be
/// classified (the table would be wrong).
pub fn mem_usage(input: &Path, profile: &Profile, plugin_dirs: &[PathBuf]) -> anyhow::Result<MemUsage> {
    let mut profile = profile.clone();
    profile.dump.level = DumpLevel::ALL;
    profile.compress.plugin = "none".into();
    profile.filters.clear();
    let registry = registry_for(&profile, false, plugin_dirs);
    let modules = Modules::new(registry.search_path.clone());
    let input = crate::input::open(std::slice::from_ref(&input.to_path_buf()), &modules)?;
    let mut notes = Vec::new();
    let kernel = open_kernel(input.as_ref(), &mut notes);
    notes.drain(..).for_each(|note| eprintln!("vmdump: warning: {note}"));
    let plan = plan_for(&profile, &registry, input.as_ref(), kernel.as_ref(), false)?;
    let counts = count_pages(&plan)?;
    if !counts.lost.is_empty() {
        eprintln!("vmdump: warning: {}: counted as kernel data", counts.lost.describe());
    }
    Ok(MemUsage {
        page_size: input.page_size(),
        ram_pages: plan.ram().ram_pages(),
        classes: counts.metadata.classes,
        zero: counts.content.zero,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_makedumpfiles() {
        let classes = ClassCounts {
            cache: 20,
            cache_private: 3,
            user: 40,
            free: 500,
            hwpoison: 1,
            ..Default::default()
        };
        let usage = MemUsage { page_size: 4096, ram_pages: 1000, classes, zero: 7 };
        assert_eq!(usage.kernel_data(), 1000 - 7 - 20 - 3 - 40 - 500 - 1);
        let want = "\nTYPE\t\tPAGES\t\t\tEXCLUDABLE\tDESCRIPTION\n\
            ----------------------------------------------------------------------\n\
            ZERO\t\t7               \tyes\t\tPages filled with zero\n\
            NON_PRI_CACHE\t20              \tyes\t\tCache pages without private flag\n\
            PRI_CACHE\t3               \tyes\t\tCache pages with private flag\n\
            USER\t\t40              \tyes\t\tUser process pages\n\
            FREE\t\t500             \tyes\t\tFree pages\n\
            KERN_DATA\t429             \tno\t\tDumpable kernel data \n\
            \npage size:\t\t4096            \n\
            Total pages on system:\t1000            \n\
            Total size on system:\t4096000          Byte\n";
        assert_eq!(usage.table(), want);
    }
}
