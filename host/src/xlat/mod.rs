//! Kernel virtual memory of a dump: address translation of the dumped
//! machine's architecture and the SPARSEMEM_EXTREME section table
//! (kdump-format.md §5.2, §5.6, §5.7; docs/arm64.md).
//!
//! This module knows nothing about files: it reads physical memory through
//! [`PhysRead`] and takes its parameters from VMCOREINFO (§4). The pieces:
//!
//! | item | what | doc |
//! |---|---|---|
//! | [`Arch`] | the architecture, chosen once per run; each one a file implementing [`Paging`] | |
//! | [`X86_64`] | paging parameters: phys_base, root table, 4/5 levels, sme_mask, PAGE_OFFSET | §5.6 |
//! | [`Arm64`] | 4/16/64 KiB pages, 36- to 52-bit VA, PHYS_OFFSET, kimage_voffset (KASLR) | docs/arm64.md |
//! | [`Ppc64`] | ppc64le: radix or hash MMU, 4/64 KiB pages, the linear map, vmemmap_list | docs/ppc64.md |
//! | [`Riscv64`] | Sv39/48/57, the image and linear map from VMCOREINFO's layout | docs/riscv64.md |
//! | [`S390x`] | big-endian region, segment and page tables; 1 MiB and 2 GiB frames | docs/s390x.md |
//! | [`KernelMemory`] | `read_virt` / `read_u64` over a [`PhysRead`], with a page-table cache | §5.6, §6.3 |
//! | [`SectionTable`] | present memory sections and their `mem_map` addresses | §5.2 |
//!
//! ```text
//! PhysRead ──► KernelMemory (Arch: formula or walk + 8-page table cache) ──► SectionTable
//! ```
//!
//! Everything read from the dump is checked: a pointer that is not present,
//! not canonical or not a kernel address is a typed [`XlatError`], never a
//! panic; every loop is bounded by sizes from VMCOREINFO or the caller.
#![forbid(unsafe_code)]

mod arch;
mod arm64;
mod error;
mod mem_section;
mod memory;
mod page_offset;
mod ppc64;
mod riscv64;
mod s390x;
mod user;
mod x86_64;

#[cfg(test)]
mod tests;

pub use arch::{Arch, Paging};
pub use arm64::{Arm64, OutputAddress};
pub use error::{Level, XlatError};
pub use mem_section::{Section, SectionGeometry, SectionTable};
pub use memory::KernelMemory;
pub use page_offset::{PageOffset, PageOffsetSource};
pub use ppc64::{Mmu, PPC64_PAGE_OFFSET, Ppc64, VmemmapBlock, VmemmapList};
pub use riscv64::Riscv64;
pub use s390x::S390x;
pub use user::{UserRun, UserWalkError, user_pages};
pub use x86_64::{
    ENTRY_MASK, PAGE_OFFSET_L4, PAGE_OFFSET_L5, PAGE_SIZE as X86_64_PAGE_SIZE, START_KERNEL_MAP, X86_64,
};

/// Physical memory of the dumped machine.
///
/// This module never asks for a read that crosses a boundary of the
/// architecture's pages ([`Arch::page_size`], the dumped kernel's
/// `PAGESIZE`): page-table reads are whole, aligned pages, and
/// [`KernelMemory::read_virt`] splits its reads at page boundaries (pages
/// adjacent in virtual memory need not be adjacent physically).
/// Implementations may therefore serve each call from a single page and
/// refuse a crossing read with an error.
pub trait PhysRead {
    /// Fills `buf` with the bytes at physical address `paddr`.
    ///
    /// # Errors
    ///
    /// [`XlatError::NotInDump`] if the page is not in the dump (a hole),
    /// [`XlatError::PhysRead`] if reading it failed.
    fn read_phys(&self, paddr: u64, buf: &mut [u8]) -> Result<(), XlatError>;
}

impl<T: PhysRead + ?Sized> PhysRead for &T {
    fn read_phys(&self, paddr: u64, buf: &mut [u8]) -> Result<(), XlatError> {
        (**self).read_phys(paddr, buf)
    }
}
