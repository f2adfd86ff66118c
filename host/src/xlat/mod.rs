//! Kernel virtual memory of a dump: x86_64 address translation and the
//! SPARSEMEM_EXTREME section table (kdump-format.md §5.2, §5.6, §5.7).
//!
//! This module knows nothing about files: it reads physical memory through
//! [`PhysRead`] and takes its parameters from VMCOREINFO (§4). The pieces:
//!
//! | item | what | doc |
//! |---|---|---|
//! | [`X86_64`] | paging parameters: phys_base, root table, 4/5 levels, sme_mask, PAGE_OFFSET | §5.6 |
//! | [`KernelMemory`] | `read_virt` / `read_u64` over a [`PhysRead`], with a page-table cache | §5.6, §6.3 |
//! | [`SectionTable`] | present memory sections and their `mem_map` addresses | §5.2 |
//!
//! ```text
//! PhysRead ──► KernelMemory (X86_64 walk + 8-page table cache) ──► SectionTable
//! ```
//!
//! Everything read from the dump is checked: a pointer that is not present,
//! not canonical or not a kernel address is a typed [`XlatError`], never a
//! panic; every loop is bounded by sizes from VMCOREINFO or the caller.
#![forbid(unsafe_code)]

mod error;
mod mem_section;
mod memory;
mod page_offset;
mod x86_64;

#[cfg(test)]
mod tests;

pub use error::{Level, XlatError};
pub use mem_section::{Section, SectionGeometry, SectionTable};
pub use memory::KernelMemory;
pub use page_offset::{PageOffset, PageOffsetSource};
pub use x86_64::{ENTRY_MASK, PAGE_OFFSET_L4, PAGE_OFFSET_L5, START_KERNEL_MAP, X86_64};

/// Size of the pages [`PhysRead`] is asked for (x86_64 base pages).
pub const PAGE_SIZE: u64 = 4096;

/// Physical memory of the dumped machine.
///
/// This module never asks for a read that crosses a [`PAGE_SIZE`]
/// boundary: page-table reads are whole, aligned 4 KiB pages, and
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
