//! riscv64 translation of kernel virtual addresses: Sv39, Sv48 and Sv57,
//! 4 KiB pages, with the layout VMCOREINFO gives (Linux 5.13 and later
//! export it; docs/riscv64.md §2, §3):
//!
//! | address | translation |
//! |---|---|
//! | the kernel image, from `NUMBER(KERNEL_LINK_ADDR)` | `va − NUMBER(va_kernel_pa_offset)` |
//! | the linear map, from `NUMBER(PAGE_OFFSET)` below the modules | `va − PAGE_OFFSET + NUMBER(phys_ram_base)` |
//! | vmalloc, vmemmap, modules: the `NUMBER(..._START/_END)` ranges | a walk of the tables from `swapper_pg_dir` |
//!
//! The paging mode follows from `NUMBER(VA_BITS)` or, where a kernel does
//! not export it, from PAGE_OFFSET, which each mode puts in its own
//! range: it is a run-time choice (a kernel built for Sv57 falls back to
//! Sv48 or Sv39 on hardware without it) and both keys give the running
//! one. Every level indexes 9 bits; an entry is valid with V (bit 0), a
//! leaf with any of R, W, X (bits 1..3), at any level (1 GiB, 2 MiB,
//! 512 GiB and 256 TiB leaves); its PPN is bits 53:10, the physical page
//! number. Bits 63:54 (Svpbmt, Svnapot, reserved) are not address bits.

use vmdump_format::elf::LoadSegment;
use vmdump_format::machine::Machine;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::arch::Paging;
use super::page_offset::{PageOffset, PageOffsetSource};
use super::{Level, XlatError};

const PAGE_SHIFT: u32 = 12;
/// V: the entry is valid.
const VALID: u64 = 1;
/// R, W, X: any of them makes the entry a leaf.
const LEAF: u64 = 0b1110;
/// The PPN field, bits 53:10.
const PPN: u64 = ((1 << 54) - 1) & !((1 << 10) - 1);
/// Physical address bits a PPN carries (56).
const PA_BITS: u32 = 56;

/// Translation parameters of a riscv64 kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Riscv64 {
    va_bits: u32,
    page_offset: u64,
    linear_end: u64,
    phys_ram_base: u64,
    kernel_link_addr: u64,
    va_kernel_pa_offset: u64,
    walked: [(u64, u64); 3],
    kerneloffset: u64,
    root_paddr: u64,
}

fn bad(key: &'static str, value: impl Into<i128>, reason: &'static str) -> XlatError {
    XlatError::BadKey { key, value: value.into(), reason }
}

fn number(info: &VmcoreInfo, key: &'static str, what: &'static str) -> Result<u64, XlatError> {
    info.number(key).map(|v| v as u64).ok_or(XlatError::MissingKey(what))
}

/// The VA width of the mode PAGE_OFFSET lies in: Sv39 puts the linear map
/// in the top 2^38 bytes, Sv48 in the top 2^47, Sv57 below.
fn va_bits_of_page_offset(page_offset: u64) -> u32 {
    match page_offset {
        _ if page_offset >= 0u64.wrapping_sub(1 << 38) => 39,
        _ if page_offset >= 0u64.wrapping_sub(1 << 47) => 48,
        _ => 57,
    }
}

impl Riscv64 {
    /// Translation parameters from VMCOREINFO (the PT_LOADs are not needed).
    ///
    /// # Errors
    ///
    /// [`XlatError::MissingKey`] without `PAGESIZE`, the layout's
    /// `NUMBER()`s or `SYMBOL(swapper_pg_dir)`; [`XlatError::BadKey`] for
    /// pages other than 4 KiB, a VA width other than 39, 48 or 57, or a
    /// root that is not a page-aligned physical address.
    pub fn new(info: &VmcoreInfo, _loads: &[LoadSegment]) -> Result<Self, XlatError> {
        let page_size = info.page_size().ok_or(XlatError::MissingKey("PAGESIZE"))?;
        if page_size != 1 << PAGE_SHIFT {
            return Err(bad("PAGESIZE", page_size, "riscv64 pages are 4096 bytes"));
        }
        let page_offset = number(info, "PAGE_OFFSET", "NUMBER(PAGE_OFFSET)")?;
        let va_bits = match info.number("VA_BITS") {
            Some(bits @ (39 | 48 | 57)) => bits as u32,
            Some(bits) => return Err(bad("NUMBER(VA_BITS)", bits, "not 39, 48 or 57 (Sv39, Sv48, Sv57)")),
            None => va_bits_of_page_offset(page_offset),
        };
        let range = |start: &'static str, end: &'static str| -> Result<(u64, u64), XlatError> {
            Ok((number(info, start, start)?, number(info, end, end)?))
        };
        let walked = [
            range("VMALLOC_START", "VMALLOC_END")?,
            range("VMEMMAP_START", "VMEMMAP_END")?,
            range("MODULES_VADDR", "MODULES_END")?,
        ];
        let kernel_link_addr = number(info, "KERNEL_LINK_ADDR", "NUMBER(KERNEL_LINK_ADDR)")?;
        let va_kernel_pa_offset = number(info, "va_kernel_pa_offset", "NUMBER(va_kernel_pa_offset)")?;
        let root = info.symbol("swapper_pg_dir").ok_or(XlatError::MissingKey("SYMBOL(swapper_pg_dir)"))?;
        let root_paddr = root.wrapping_sub(va_kernel_pa_offset);
        if root < kernel_link_addr || root_paddr % page_size != 0 || root_paddr >> PA_BITS != 0 {
            let reason = "not in the kernel image at a page-aligned physical address";
            return Err(bad("SYMBOL(swapper_pg_dir)", root, reason));
        }
        let linear_end = walked[2].0.min(kernel_link_addr);
        Ok(Riscv64 {
            va_bits,
            page_offset,
            linear_end,
            phys_ram_base: info.number("phys_ram_base").unwrap_or(0) as u64,
            kernel_link_addr,
            va_kernel_pa_offset,
            walked,
            kerneloffset: info.kerneloffset().unwrap_or(0),
            root_paddr,
        })
    }

    /// The VA width of the paging mode: 39, 48 or 57.
    pub fn va_bits(&self) -> u32 {
        self.va_bits
    }

    /// Whether `vaddr` is in a range only the tables map.
    fn is_walked(&self, vaddr: u64) -> bool {
        self.walked.iter().any(|&(start, end)| (start..=end).contains(&vaddr))
    }

    /// The Linux name of level `j`, counted from the last (0) up.
    fn level(&self, j: u32) -> Level {
        match j {
            _ if j + 1 == self.levels_u32() => Level::Pgd,
            0 => Level::Pte,
            1 => Level::Pmd,
            2 => Level::Pud,
            _ => Level::P4d,
        }
    }

    fn levels_u32(&self) -> u32 {
        (self.va_bits - PAGE_SHIFT) / 9
    }

    /// Walks the tables from `swapper_pg_dir`.
    ///
    /// # Errors
    ///
    /// [`XlatError::NonCanonical`] when the bits above the mode's width
    /// are not copies of its top bit, [`XlatError::NotPresent`] for an
    /// entry without V, [`XlatError::Reserved`] for a last-level entry
    /// that is not a leaf, or [`XlatError::TableRead`].
    pub fn walk(
        &self,
        vaddr: u64,
        read_entry: &mut dyn FnMut(u64) -> Result<u64, XlatError>,
    ) -> Result<u64, XlatError> {
        let levels = self.levels_u32();
        let top = (vaddr as i64) >> (self.va_bits - 1);
        if top != 0 && top != -1 {
            return Err(XlatError::NonCanonical { vaddr, levels: levels as u8 });
        }
        let mut table = self.root_paddr;
        for j in (0..levels).rev() {
            let shift = PAGE_SHIFT + 9 * j;
            let (level, entry_paddr) = (self.level(j), table + ((vaddr >> shift) & 511) * 8);
            let entry = read_entry(entry_paddr).map_err(|e| XlatError::TableRead {
                vaddr,
                level,
                entry_paddr,
                cause: Box::new(e),
            })?;
            if entry & VALID == 0 {
                return Err(XlatError::NotPresent { vaddr, level, entry, entry_paddr });
            }
            let address = ((entry & PPN) >> 10) << PAGE_SHIFT;
            if entry & LEAF != 0 {
                let low = (1u64 << shift) - 1;
                return Ok((address & !low) | (vaddr & low));
            }
            if j == 0 {
                return Err(XlatError::Reserved { vaddr, level, entry, entry_paddr });
            }
            table = address;
        }
        unreachable!("the last level returns or fails")
    }
}

impl Paging for Riscv64 {
    fn machine(&self) -> Machine {
        Machine::Riscv64
    }

    fn page_size(&self) -> u64 {
        1 << PAGE_SHIFT
    }

    fn levels(&self) -> u8 {
        self.levels_u32() as u8
    }

    fn root_paddr(&self) -> u64 {
        self.root_paddr
    }

    /// `NUMBER(phys_ram_base)`, as makedumpfile's phys_base on riscv64.
    fn phys_base(&self) -> i64 {
        self.phys_ram_base as i64
    }

    fn kerneloffset(&self) -> u64 {
        self.kerneloffset
    }

    fn page_offset_info(&self) -> PageOffset {
        PageOffset { value: self.page_offset, source: PageOffsetSource::Vmcoreinfo }
    }

    /// The upper half of the mode's address space: vmemmap, vmalloc and
    /// the modules lie below PAGE_OFFSET.
    fn kernel_space_start(&self) -> u64 {
        0u64.wrapping_sub(1 << (self.va_bits - 1))
    }

    fn direct(&self, vaddr: u64) -> Option<Result<u64, XlatError>> {
        if self.is_walked(vaddr) || vaddr < self.page_offset {
            return None;
        }
        let paddr = if vaddr >= self.kernel_link_addr {
            vaddr.wrapping_sub(self.va_kernel_pa_offset)
        } else if vaddr < self.linear_end {
            (vaddr - self.page_offset).wrapping_add(self.phys_ram_base)
        } else {
            return None;
        };
        Some(match paddr >> PA_BITS {
            0 => Ok(paddr),
            _ => Err(XlatError::BeyondPhysMem { vaddr, paddr, bits: PA_BITS }),
        })
    }

    fn walk(
        &self,
        vaddr: u64,
        read_entry: &mut dyn FnMut(u64) -> Result<u64, XlatError>,
    ) -> Result<u64, XlatError> {
        Riscv64::walk(self, vaddr, read_entry)
    }
}
