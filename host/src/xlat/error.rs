//! [`XlatError`]: every failure names the virtual address, the paging
//! level and the entry involved (kdump-format.md §5.6), or the VMCOREINFO
//! key (§4.3) that is missing or unusable.

use std::fmt;

/// A paging level, top to bottom (§5.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// Top level (bits 48–56 with 5-level paging, 39–47 with 4-level).
    Pgd,
    /// 5-level only: bits 39–47.
    P4d,
    /// Bits 30–38; PSE maps 1 GiB.
    Pud,
    /// Bits 21–29; PSE maps 2 MiB.
    Pmd,
    /// Bits 12–20: 4 KiB pages.
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

    /// A VMCOREINFO key needed here is absent.
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
