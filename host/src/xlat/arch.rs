//! [`Arch`]: the architecture of the dumped machine, chosen once per run
//! from the ELF header's `e_machine` (or a kdump header's utsname, or
//! VMCOREINFO's keys) and built from VMCOREINFO. Each architecture is one
//! file implementing [`Paging`], as each is one `src/addrxlat/<arch>.c` in
//! libkdumpfile; nothing above [`super::KernelMemory`] knows which one it
//! is.
//!
//! | | x86_64 ([`X86_64`]) | arm64 ([`Arm64`]) |
//! |---|---|---|
//! | page size | 4 KiB | `PAGESIZE`: 4, 16 or 64 KiB |
//! | root table | `init_top_pgt − __START_KERNEL_map + phys_base` | `swapper_pg_dir − kimage_voffset` |
//! | without tables | kernel image: `phys_base` | linear map: `PHYS_OFFSET` |
//! | the header's `phys_base` | `NUMBER(phys_base)` | `NUMBER(PHYS_OFFSET)` |
//! | utsname machine | `x86_64` | `aarch64` |
//! | byte order | little | little (big-endian arm64 is refused) |
//!
//! ppc64le ([`Ppc64`], docs/ppc64.md): 4 or 64 KiB pages, root
//! `swapper_pg_dir − 0xc000000000000000`, the linear map from physical 0
//! at 0xc000000000000000 (the kernel image in it), the header's
//! `phys_base` 0, utsname machine `ppc64le`, little-endian (its page
//! tables big-endian). riscv64 ([`Riscv64`], docs/riscv64.md): 4 KiB
//! pages, Sv39/48/57, root `swapper_pg_dir − va_kernel_pa_offset`, the
//! linear map and the image by the formulas of VMCOREINFO's layout,
//! `phys_base` `NUMBER(phys_ram_base)`, utsname machine `riscv64`.
//! s390x ([`S390x`], docs/s390x.md §5): 4 KiB pages, big-endian, root
//! `swapper_pg_dir` (before 6.10 a physical address; since, `−
//! KERNELOFFSET + KERNELOFFPHYS`), everything walked, `phys_base` 0,
//! utsname machine `s390x`.

use vmdump_format::elf::{Endian, LoadSegment};
use vmdump_format::machine::Machine;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::XlatError;
use super::arm64::Arm64;
use super::page_offset::PageOffset;
use super::ppc64::Ppc64;
use super::riscv64::Riscv64;
use super::s390x::S390x;
use super::x86_64::X86_64;

/// What each architecture's file gives (libkdumpfile's per-arch
/// translation methods): the page size, the root table, the translation
/// that needs no tables, and the walk. Translation reads memory only
/// through the `read_entry` callback: it knows nothing about files.
pub trait Paging {
    /// The machine.
    fn machine(&self) -> Machine;

    /// Bytes of a base page (and of a page table).
    fn page_size(&self) -> u64;

    /// Levels of the page tables (2 to 5).
    fn levels(&self) -> u8;

    /// Physical address of the root table.
    fn root_paddr(&self) -> u64;

    /// The kernel's physical displacement, as makedumpfile calls it
    /// `phys_base` (negative values as their two's complement).
    fn phys_base(&self) -> i64;

    /// `KERNELOFFSET` (0 if absent): the KASLR displacement of the image.
    fn kerneloffset(&self) -> u64;

    /// The lowest address of the kernel's direct (linear) map.
    fn page_offset_info(&self) -> PageOffset;

    /// The lowest kernel virtual address: a pointer the kernel keeps to its
    /// own memory (a `mem_section` root, a section's `mem_map`) is at or
    /// above it. The direct map's start, unless the machine puts other
    /// kernel ranges below it (riscv64: vmemmap and vmalloc).
    fn kernel_space_start(&self) -> u64 {
        self.page_offset_info().value
    }

    /// The translation of `vaddr` that needs no page tables, for the
    /// addresses it covers; `None` for the others.
    fn direct(&self, vaddr: u64) -> Option<Result<u64, XlatError>>;

    /// Translates `vaddr` through the page tables; `read_entry` reads the
    /// `u64` at a physical address (8-byte aligned).
    ///
    /// # Errors
    ///
    /// [`XlatError`] naming the address, the level and the entry.
    fn walk(
        &self,
        vaddr: u64,
        read_entry: &mut dyn FnMut(u64) -> Result<u64, XlatError>,
    ) -> Result<u64, XlatError>;
}

/// The architecture of the dumped machine, with its translation parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arch {
    /// x86_64, 4- or 5-level paging.
    X86_64(X86_64),
    /// arm64, 4/16/64 KiB pages.
    Arm64(Arm64),
    /// ppc64le, radix or hash MMU, 4/64 KiB pages.
    Ppc64(Ppc64),
    /// riscv64, Sv39/Sv48/Sv57.
    Riscv64(Riscv64),
    /// s390x, big-endian, region and segment tables.
    S390x(S390x),
}

impl From<X86_64> for Arch {
    fn from(arch: X86_64) -> Self {
        Arch::X86_64(arch)
    }
}

impl From<Arm64> for Arch {
    fn from(arch: Arm64) -> Self {
        Arch::Arm64(arch)
    }
}

impl From<Ppc64> for Arch {
    fn from(arch: Ppc64) -> Self {
        Arch::Ppc64(arch)
    }
}

impl From<Riscv64> for Arch {
    fn from(arch: Riscv64) -> Self {
        Arch::Riscv64(arch)
    }
}

impl From<S390x> for Arch {
    fn from(arch: S390x) -> Self {
        Arch::S390x(arch)
    }
}

impl Arch {
    /// The machine of an ELF vmcore.
    ///
    /// # Errors
    ///
    /// [`XlatError::UnsupportedMachine`] for another machine or byte order.
    pub fn machine_of_elf(e_machine: u16, endian: Endian) -> Result<Machine, XlatError> {
        Machine::from_elf(e_machine, endian).ok_or_else(|| XlatError::UnsupportedMachine {
            machine: format!(
                "ELF e_machine {e_machine}, {}-endian",
                if endian == Endian::Big { "big" } else { "little" }
            ),
            supported: Machine::SUPPORTED,
        })
    }

    /// Translation parameters of `machine` from VMCOREINFO; `loads` (the
    /// dump's PT_LOADs, may be empty) fill in what VMCOREINFO lacks.
    ///
    /// # Errors
    ///
    /// As the architecture's `new` ([`X86_64::new`], [`Arm64::new`], [`Ppc64::new`], [`Riscv64::new`],
    /// [`S390x::new`]).
    pub fn new(machine: Machine, info: &VmcoreInfo, loads: &[LoadSegment]) -> Result<Self, XlatError> {
        Ok(match machine {
            Machine::X86_64 => Arch::X86_64(X86_64::new(info, loads)?),
            Machine::Aarch64 => Arch::Arm64(Arm64::new(info, loads)?),
            Machine::Ppc64le => Arch::Ppc64(Ppc64::new(info, loads)?),
            Machine::Riscv64 => Arch::Riscv64(Riscv64::new(info, loads)?),
            Machine::S390x => Arch::S390x(S390x::new(info, loads)?),
        })
    }

    /// The architecture's own file.
    pub fn paging(&self) -> &dyn Paging {
        match self {
            Arch::X86_64(arch) => arch,
            Arch::Arm64(arch) => arch,
            Arch::Ppc64(arch) => arch,
            Arch::Riscv64(arch) => arch,
            Arch::S390x(arch) => arch,
        }
    }

    /// The x86_64 parameters, if it is one.
    pub fn x86_64(&self) -> Option<&X86_64> {
        match self {
            Arch::X86_64(arch) => Some(arch),
            _ => None,
        }
    }

    /// The arm64 parameters, if it is one.
    pub fn arm64(&self) -> Option<&Arm64> {
        match self {
            Arch::Arm64(arch) => Some(arch),
            _ => None,
        }
    }

    /// The ppc64le parameters, if it is one.
    pub fn ppc64(&self) -> Option<&Ppc64> {
        match self {
            Arch::Ppc64(arch) => Some(arch),
            _ => None,
        }
    }

    /// The machine.
    pub fn machine(&self) -> Machine {
        self.paging().machine()
    }

    /// Byte order of the machine's memory.
    pub fn endian(&self) -> Endian {
        self.machine().endian()
    }

    /// Bytes of a base page.
    pub fn page_size(&self) -> u64 {
        self.paging().page_size()
    }

    /// Levels of the page tables.
    pub fn levels(&self) -> u8 {
        self.paging().levels()
    }

    /// Physical address of the root table.
    pub fn root_paddr(&self) -> u64 {
        self.paging().root_paddr()
    }

    /// `NUMBER(phys_base)` on x86_64 (negative with KASLR), PHYS_OFFSET on
    /// arm64: what makedumpfile calls phys_base.
    pub fn phys_base(&self) -> i64 {
        self.paging().phys_base()
    }

    /// `KERNELOFFSET` (0 if absent).
    pub fn kerneloffset(&self) -> u64 {
        self.paging().kerneloffset()
    }

    /// Start of the direct map, with where it came from.
    pub fn page_offset_info(&self) -> PageOffset {
        self.paging().page_offset_info()
    }

    /// Start of the direct map.
    pub fn page_offset(&self) -> u64 {
        self.page_offset_info().value
    }

    /// The lowest kernel virtual address ([`Paging::kernel_space_start`]).
    pub fn kernel_space_start(&self) -> u64 {
        self.paging().kernel_space_start()
    }
}
