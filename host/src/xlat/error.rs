//! [`XlatError`]: every failure names the virtual address, the paging
//! level and the entry involved (kdump-format.md §5.6), or the VMCOREINFO
//! key (§4.3) that is missing or unusable.

use std::fmt;

/// A paging level, top to bottom, by the Linux names of every
/// architecture (§5.6, docs/arm64.md §3). Kernels with fewer than five
/// levels fold the middle ones: 4 levels have no P4D, 3 levels (arm64 with
/// 64 KiB pages or 39-bit VA) no PUD either, 2 levels only PGD and PTE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// The top level (x86_64: bits 48–56 with 5-level paging, 39–47 with 4-level).
    Pgd,
    /// 5-level only (x86_64: bits 39–47).
    P4d,
    /// x86_64: bits 30–38, PSE maps 1 GiB; arm64 4 KiB pages: 1 GiB blocks.
    Pud,
    /// x86_64: bits 21–29, PSE maps 2 MiB; arm64: 2/32/512 MiB blocks.
    Pmd,
    /// The last level: base pages.
    Pte,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Pgd => "PGD",
            Level::P4d => "P4D",
            Level::Pud => "PUD",
            Level::Pmd => "PMD",
            Level::Pte => "PTE",
        })
    }
}

/// Errors of address translation and of reading kernel structures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum XlatError {
    /// A page-table entry on the way to `vaddr` lacks `_PAGE_PRESENT`.
    #[error("translating {vaddr:#x}: {level} entry {entry:#x} at paddr {entry_paddr:#x} is not present")]
    NotPresent {
        /// The address being translated.
        vaddr: u64,
        /// The level of the entry.
        level: Level,
        /// The entry value.
        entry: u64,
        /// Physical address of the entry.
        entry_paddr: u64,
    },

    /// A page-table entry could not be read.
    #[error("translating {vaddr:#x}: reading the {level} entry at paddr {entry_paddr:#x}: {cause}")]
    TableRead {
        /// The address being translated.
        vaddr: u64,
        /// The level of the entry.
        level: Level,
        /// Physical address of the entry.
        entry_paddr: u64,
        /// Why the read failed.
        cause: Box<XlatError>,
    },

    /// `vaddr` is not canonical for the paging mode (bits above the top
    /// level's are not copies of its highest bit).
    #[error("{vaddr:#x} is not a canonical {levels}-level address")]
    NonCanonical {
        /// The address.
        vaddr: u64,
        /// 4 or 5.
        levels: u8,
    },

    /// An arm64 descriptor whose type is reserved at its level (`0b01`
    /// at the last level, or a block where the granule allows none).
    #[error(
        "translating {vaddr:#x}: {level} entry {entry:#x} at paddr {entry_paddr:#x} is a reserved descriptor"
    )]
    Reserved {
        /// The address being translated.
        vaddr: u64,
        /// The level of the entry.
        level: Level,
        /// The entry value.
        entry: u64,
        /// Physical address of the entry.
        entry_paddr: u64,
    },

    /// A linear-map address translates beyond the physical address space
    /// (a wrong `NUMBER(PHYS_OFFSET)`).
    #[error("{vaddr:#x} translates to {paddr:#x}, beyond the {bits}-bit physical address space")]
    BeyondPhysMem {
        /// The address.
        vaddr: u64,
        /// What the formula gave.
        paddr: u64,
        /// Physical address bits of the machine.
        bits: u32,
    },

    /// A translation formula and the kernel's page tables disagree: the
    /// VMCOREINFO values behind the formula do not fit this kernel.
    #[error("{what}: the page tables map {vaddr:#x} at paddr {tables:#x}, the formula gives {formula:#x}")]
    Inconsistent {
        /// The formula and the keys it uses.
        what: &'static str,
        /// The address checked.
        vaddr: u64,
        /// Its translation by the page tables.
        tables: u64,
        /// Its translation by the formula.
        formula: u64,
    },

    /// The dump is of a machine vmdump has no translation for.
    #[error("no address translation for {machine}; vmdump translates {supported}")]
    UnsupportedMachine {
        /// The machine, e.g. "ELF e_machine 21, big-endian".
        machine: String,
        /// The machines that are supported.
        supported: &'static str,
    },

    /// A kernel-image address maps below physical 0 (bad phys_base).
    #[error("kernel image address {vaddr:#x} is below physical 0 with phys_base {phys_base}")]
    KernelImage {
        /// The address.
        vaddr: u64,
        /// `NUMBER(phys_base)` in use.
        phys_base: i64,
    },

    /// Translated memory could not be read.
    #[error("reading {len:#x} bytes at {vaddr:#x} (paddr {paddr:#x}): {cause}")]
    VirtRead {
        /// The virtual address of the chunk.
        vaddr: u64,
        /// Its physical address.
        paddr: u64,
        /// Bytes in the chunk.
        len: usize,
        /// Why the read failed.
        cause: Box<XlatError>,
    },

    /// The physical page is not in the dump (a hole between PT_LOADs).
    #[error("physical address {paddr:#x} is not in the dump")]
    NotInDump {
        /// The address.
        paddr: u64,
    },

    /// A [`super::PhysRead`] implementation failed.
    #[error("reading {len:#x} bytes at paddr {paddr:#x}: {cause}")]
    PhysRead {
        /// The address.
        paddr: u64,
        /// Bytes asked for.
        len: usize,
        /// The underlying error (in the message, not chained, so it is said once).
        cause: Box<dyn std::error::Error + Send + Sync>,
    },

    /// `init_uts_ns` does not hold a `new_utsname` of this kernel.
    #[error(
        "init_uts_ns.name at {vaddr:#x} is not the kernel's utsname (no \"Linux\", or a release other than {osrelease:?})"
    )]
    NotUtsname {
        /// Where it was read.
        vaddr: u64,
        /// VMCOREINFO's OSRELEASE.
        osrelease: String,
    },
    /// A VMCOREINFO key needed here is absent.
    #[error("VMCOREINFO lacks {0}")]
    MissingKey(&'static str),

    /// A VMCOREINFO value is out of the range this code supports.
    #[error("VMCOREINFO {key}={value} is unusable: {reason}")]
    BadKey {
        /// The key, e.g. `NUMBER(SECTION_SIZE_BITS)`.
        key: &'static str,
        /// Its value.
        value: i128,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// The section table read at `addr` is not valid.
    #[error("mem_section at {addr:#x}: {reason}")]
    MemSection {
        /// Address of the root array tried.
        addr: u64,
        /// What failed.
        reason: String,
    },

    /// Neither reading of `SYMBOL(mem_section)` gave a valid table (§5.2).
    #[error(
        "SYMBOL(mem_section)={symbol:#x} is neither the root array ({as_array}) nor a pointer to it ({as_pointer})"
    )]
    MemSectionSymbol {
        /// The symbol value.
        symbol: u64,
        /// Why it is not the array.
        as_array: Box<XlatError>,
        /// Why it is not a pointer to the array.
        as_pointer: Box<XlatError>,
    },
}
