//! x86_64 paging (kdump-format.md §5.6): kernel-image addresses translate
//! with `va − __START_KERNEL_map + phys_base`; every other address by
//! walking the page tables from `SYMBOL(init_top_pgt)`, 4- or 5-level
//! (`NUMBER(pgtable_l5_enabled)`), with 1 GiB (PUD) and 2 MiB (PMD) PSE
//! leaves, `_PAGE_PRESENT` required at every level, and entries masked
//! with `ENTRY_MASK` minus `NUMBER(sme_mask)` (the AMD SME C-bit).

use vmdump_format::elf::LoadSegment;
use vmdump_format::machine::Machine;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::arch::Paging;
use super::page_offset::PageOffset;
use super::{Level, XlatError};

/// x86_64's base page: the size of its page tables and of its kdump blocks.
pub const PAGE_SIZE: u64 = 4096;

/// `__START_KERNEL_map`: virtual base of the kernel image mapping.
pub const START_KERNEL_MAP: u64 = 0xffff_ffff_8000_0000;
/// Bits 12..=51 of an entry: the physical frame or next table.
pub const ENTRY_MASK: u64 = 0x000f_ffff_ffff_f000;
/// Direct-map base of 4-level kernels ≥ 4.20 without KASLR.
pub const PAGE_OFFSET_L4: u64 = 0xffff_8880_0000_0000;
/// Direct-map base of 5-level kernels ≥ 4.20 without KASLR.
pub const PAGE_OFFSET_L5: u64 = 0xff11_0000_0000_0000;

const PRESENT: u64 = 0x1;
const PSE: u64 = 0x80;
/// `KERNEL_IMAGE_SIZE` of KASLR kernels, used when VMCOREINFO lacks it.
const DEFAULT_KERNEL_IMAGE_SIZE: u64 = 1 << 30;

/// Upper levels of a walk with their index shifts; the PTE level (shift 12) follows.
const UPPER_L4: &[(Level, u32)] = &[(Level::Pgd, 39), (Level::Pud, 30), (Level::Pmd, 21)];
const UPPER_L5: &[(Level, u32)] = &[(Level::Pgd, 48), (Level::P4d, 39), (Level::Pud, 30), (Level::Pmd, 21)];

/// Paging parameters of an x86_64 kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct X86_64 {
    phys_base: i64,
    kerneloffset: u64,
    kernel_image_size: u64,
    root_paddr: u64,
    five_level: bool,
    sme_mask: u64,
    page_offset: PageOffset,
}

/// `NUMBER(phys_base)`, else from a kernel-text PT_LOAD:
/// `phys_start − (virt_start − __START_KERNEL_map)` (§5.6).
fn phys_base(info: &VmcoreInfo, loads: &[LoadSegment]) -> Result<i64, XlatError> {
    if let Some(v) = info.phys_base() {
        return Ok(v);
    }
    loads
        .iter()
        .find(|l| l.vaddr >= START_KERNEL_MAP)
        .map(|l| l.paddr.wrapping_sub(l.vaddr - START_KERNEL_MAP) as i64)
        .ok_or(XlatError::MissingKey("NUMBER(phys_base) (and no kernel-text PT_LOAD)"))
}

impl X86_64 {
    /// Paging parameters from VMCOREINFO; `loads` (the dump's PT_LOADs,
    /// may be empty) give phys_base when VMCOREINFO lacks it and PAGE_OFFSET
    /// ([`PageOffset::from_loads`]; otherwise the default constant until
    /// [`super::KernelMemory::open`] scans the page tables).
    ///
    /// # Errors
    ///
    /// [`XlatError::MissingKey`] without `SYMBOL(init_top_pgt)` (or
    /// `init_level4_pgt`) or phys_base; [`XlatError::BadKey`] if the root is
    /// not a page-aligned kernel-image address, or for a `PAGESIZE` other
    /// than 4096.
    pub fn new(info: &VmcoreInfo, loads: &[LoadSegment]) -> Result<Self, XlatError> {
        if let Some(size) = info.page_size()
            && size != PAGE_SIZE
        {
            return Err(XlatError::BadKey {
                key: "PAGESIZE",
                value: size.into(),
                reason: "x86_64 pages are 4096 bytes",
            });
        }
        let root = info
            .symbol("init_top_pgt")
            .or_else(|| info.symbol("init_level4_pgt"))
            .ok_or(XlatError::MissingKey("SYMBOL(init_top_pgt)"))?;
        let five_level = info.number("pgtable_l5_enabled").is_some_and(|v| v != 0);
        let kernel_image_size = info
            .number("KERNEL_IMAGE_SIZE")
            .and_then(|v| u64::try_from(v).ok())
            .filter(|&v| v > 0 && v <= 2 << 30)
            .unwrap_or(DEFAULT_KERNEL_IMAGE_SIZE);
        let mut arch = X86_64 {
            phys_base: phys_base(info, loads)?,
            kerneloffset: info.kerneloffset().unwrap_or(0),
            kernel_image_size,
            root_paddr: 0,
            five_level,
            sme_mask: info.number("sme_mask").unwrap_or(0) as u64,
            page_offset: PageOffset::from_loads(loads).unwrap_or_else(|| PageOffset::default_for(five_level)),
        };
        let bad = |reason| XlatError::BadKey { key: "SYMBOL(init_top_pgt)", value: i128::from(root), reason };
        arch.root_paddr = match arch.image_to_phys(root) {
            Some(Ok(pa)) if pa % PAGE_SIZE == 0 => pa,
            Some(Ok(_)) => return Err(bad("not page aligned")),
            Some(Err(_)) => return Err(bad("below physical 0 with this phys_base")),
            None => return Err(bad("not a kernel-image address")),
        };
        Ok(arch)
    }

    /// `NUMBER(phys_base)` (negative with KASLR).
    pub fn phys_base(&self) -> i64 {
        self.phys_base
    }

    /// `KERNELOFFSET` (0 if absent).
    pub fn kerneloffset(&self) -> u64 {
        self.kerneloffset
    }

    /// True with 5-level paging.
    pub fn five_level(&self) -> bool {
        self.five_level
    }

    /// `NUMBER(sme_mask)`, cleared from every entry.
    pub fn sme_mask(&self) -> u64 {
        self.sme_mask
    }

    /// Physical address of the top-level table (`init_top_pgt`).
    pub fn root_paddr(&self) -> u64 {
        self.root_paddr
    }

    /// Start of the direct map.
    pub fn page_offset(&self) -> u64 {
        self.page_offset.value
    }

    /// PAGE_OFFSET with where it came from.
    pub fn page_offset_info(&self) -> PageOffset {
        self.page_offset
    }

    /// Replaces PAGE_OFFSET (e.g. by one found in the page tables).
    pub fn set_page_offset(&mut self, page_offset: PageOffset) {
        self.page_offset = page_offset;
    }

    /// True for addresses of the kernel image mapping
    /// `[__START_KERNEL_map, + KERNEL_IMAGE_SIZE)`.
    pub fn is_kernel_image(&self, vaddr: u64) -> bool {
        vaddr >= START_KERNEL_MAP && vaddr - START_KERNEL_MAP < self.kernel_image_size
    }

    /// `va − __START_KERNEL_map + phys_base` for a kernel-image address,
    /// `None` for any other address.
    pub fn image_to_phys(&self, vaddr: u64) -> Option<Result<u64, XlatError>> {
        self.is_kernel_image(vaddr).then(|| {
            (vaddr - START_KERNEL_MAP)
                .checked_add_signed(self.phys_base)
                .ok_or(XlatError::KernelImage { vaddr, phys_base: self.phys_base })
        })
    }

    /// Checks that the bits above the top level copy its highest bit.
    fn check_canonical(&self, vaddr: u64) -> Result<(), XlatError> {
        let top = if self.five_level { 56 } else { 47 };
        match (vaddr as i64) >> top {
            0 | -1 => Ok(()),
            _ => Err(XlatError::NonCanonical { vaddr, levels: if self.five_level { 5 } else { 4 } }),
        }
    }

    /// Walks the page tables for `vaddr`; `read_entry` reads the `u64` at
    /// a physical address (always 8-byte aligned).
    ///
    /// # Errors
    ///
    /// [`XlatError::NonCanonical`], [`XlatError::NotPresent`] naming the
    /// level and entry, or [`XlatError::TableRead`] wrapping a read error.
    pub fn walk(
        &self,
        vaddr: u64,
        read_entry: &mut dyn FnMut(u64) -> Result<u64, XlatError>,
    ) -> Result<u64, XlatError> {
        self.check_canonical(vaddr)?;
        let mask = ENTRY_MASK & !self.sme_mask;
        let mut read = |table: u64, level: Level, shift: u32| {
            let entry_paddr = table + ((vaddr >> shift) & 511) * 8;
            let entry = read_entry(entry_paddr).map_err(|e| XlatError::TableRead {
                vaddr,
                level,
                entry_paddr,
                cause: Box::new(e),
            })?;
            if entry & PRESENT == 0 {
                return Err(XlatError::NotPresent { vaddr, level, entry, entry_paddr });
            }
            Ok(entry)
        };
        let mut table = self.root_paddr;
        for &(level, shift) in if self.five_level { UPPER_L5 } else { UPPER_L4 } {
            let entry = read(table, level, shift)?;
            if matches!(level, Level::Pud | Level::Pmd) && entry & PSE != 0 {
                let low = (1u64 << shift) - 1;
                return Ok((entry & mask & !low) | (vaddr & low));
            }
            table = entry & mask;
        }
        let entry = read(table, Level::Pte, 12)?;
        Ok((entry & mask) | (vaddr & (PAGE_SIZE - 1)))
    }

    /// Bytes one entry of `level` covers (how far a walk may skip when the
    /// entry is not present).
    pub fn level_span(&self, level: Level) -> u64 {
        match level {
            Level::Pgd if self.five_level => 1 << 48,
            Level::Pgd | Level::P4d => 1 << 39,
            Level::Pud => 1 << 30,
            Level::Pmd => 1 << 21,
            Level::Pte => PAGE_SIZE,
        }
    }
}

impl Paging for X86_64 {
    fn machine(&self) -> Machine {
        Machine::X86_64
    }

    fn page_size(&self) -> u64 {
        PAGE_SIZE
    }

    fn levels(&self) -> u8 {
        if self.five_level { 5 } else { 4 }
    }

    fn root_paddr(&self) -> u64 {
        X86_64::root_paddr(self)
    }

    fn phys_base(&self) -> i64 {
        X86_64::phys_base(self)
    }

    fn kerneloffset(&self) -> u64 {
        X86_64::kerneloffset(self)
    }

    fn page_offset_info(&self) -> PageOffset {
        X86_64::page_offset_info(self)
    }

    /// Kernel-image addresses (the direct map is walked: with KASLR its
    /// base is a variable VMCOREINFO does not export).
    fn direct(&self, vaddr: u64) -> Option<Result<u64, XlatError>> {
        self.image_to_phys(vaddr)
    }

    fn walk(
        &self,
        vaddr: u64,
        read_entry: &mut dyn FnMut(u64) -> Result<u64, XlatError>,
    ) -> Result<u64, XlatError> {
        X86_64::walk(self, vaddr, read_entry)
    }
}
