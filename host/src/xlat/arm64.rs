//! arm64 (AArch64) translation of kernel virtual addresses, for the
//! layout of Linux 5.4 and later (docs/arm64.md §2, §3):
//!
//! | address | translation |
//! |---|---|
//! | linear map, `[PAGE_OFFSET, PAGE_END)` | `va − PAGE_OFFSET + PHYS_OFFSET`, modulo 2^64 |
//! | `swapper_pg_dir`, the root table | `va − kimage_voffset` (KASLR of the image is in it) |
//! | anything else: the image, vmalloc, modules, vmemmap | a walk of the tables from `swapper_pg_dir` |
//!
//! `PAGE_OFFSET = −2^VA_BITS` and `PAGE_END = −2^(VA_BITS_MIN − 1)`.
//! Granules of 4, 16 and 64 KiB (`PAGESIZE`), each level
//! `PAGE_SHIFT − 3` bits; blocks at the levels the granule allows; output
//! addresses of 48 bits, or 52 with 64 KiB pages and
//! `NUMBER(MAX_PHYSMEM_BITS)` 52 (FEAT_LPA: bits 51:48 in descriptor bits
//! 15:12) or with 4/16 KiB pages and `64 − NUMBER(TCR_EL1_T1SZ)` 52
//! (FEAT_LPA2: bits 51:50 in bits 9:8).
//!
//! How deep the tables are: a 64 KiB kernel built for 52-bit VA keeps a
//! root sized for 52 bits even on 48-bit hardware (TTBR1 points into it,
//! `TTBR1_BADDR_4852_OFFSET`), so its root is indexed with VA_BITS; with 4
//! and 16 KiB pages a 52-bit kernel without LPA2 folds its top level at run
//! time, so the walk follows `vabits_actual`. The fixture's kernel (4 KiB,
//! 48-bit) is the same either way; the 52-bit cases are checked by
//! synthetic tables only (`tests/arm64_52.rs`, beside `tests/arm64.rs`).

use vmdump_format::elf::LoadSegment;
use vmdump_format::machine::Machine;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::arch::Paging;
use super::page_offset::{PageOffset, PageOffsetSource};
use super::{Level, XlatError};

/// How descriptors carry their output address (docs/arm64.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputAddress {
    /// Bits 47:PAGE_SHIFT.
    Pa48,
    /// 64 KiB pages with FEAT_LPA: bits 47:16, and 51:48 in bits 15:12.
    Lpa,
    /// 4/16 KiB pages with FEAT_LPA2: bits 49:PAGE_SHIFT, and 51:50 in bits 9:8.
    Lpa2,
}

impl OutputAddress {
    /// Physical address bits.
    pub fn bits(self) -> u32 {
        match self {
            OutputAddress::Pa48 => 48,
            OutputAddress::Lpa | OutputAddress::Lpa2 => 52,
        }
    }

    /// The address in `desc` (a table, block or page; attribute bits off).
    pub fn decode(self, desc: u64, page_shift: u32) -> u64 {
        let field = |top: u32| desc & ((1u64 << (top + 1)) - 1) & !((1u64 << page_shift) - 1);
        match self {
            OutputAddress::Pa48 => field(47),
            OutputAddress::Lpa => field(47) | ((desc & 0xf000) << 36),
            OutputAddress::Lpa2 => field(49) | ((desc & 0x300) << 42),
        }
    }
}

/// Translation parameters of an arm64 kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arm64 {
    page_shift: u32,
    va_bits: u32,
    vabits_actual: u32,
    /// The VA width the walk indexes with (see the module comment).
    walk_bits: u32,
    levels: u8,
    output: OutputAddress,
    page_offset: u64,
    page_end: u64,
    phys_offset: u64,
    kimage_voffset: u64,
    kerneloffset: u64,
    root_paddr: u64,
}

fn bad(key: &'static str, value: impl Into<i128>, reason: &'static str) -> XlatError {
    XlatError::BadKey { key, value: value.into(), reason }
}

/// `NUMBER(PHYS_OFFSET)`, else from a PT_LOAD with a linear-map `p_vaddr`
/// (`/proc/vmcore`; QEMU writes `p_vaddr = p_paddr`), as makedumpfile's
/// `get_phys_base_arm64`.
fn phys_offset(info: &VmcoreInfo, loads: &[LoadSegment], linear: (u64, u64)) -> Result<u64, XlatError> {
    if let Some(v) = info.number("PHYS_OFFSET") {
        return Ok(v as u64);
    }
    loads
        .iter()
        .find(|l| (linear.0..linear.1).contains(&l.vaddr))
        .map(|l| l.paddr.wrapping_sub(l.vaddr - linear.0))
        .ok_or(XlatError::MissingKey("NUMBER(PHYS_OFFSET) (and no linear-map PT_LOAD)"))
}

/// `64 − NUMBER(TCR_EL1_T1SZ)`, else VA_BITS (kernels before 5.9).
fn vabits_actual(info: &VmcoreInfo, va_bits: u32) -> Result<u32, XlatError> {
    let Some(t1sz) = info.number("TCR_EL1_T1SZ") else { return Ok(va_bits) };
    match u32::try_from(64 - t1sz) {
        Ok(bits) if (36..=va_bits).contains(&bits) => Ok(bits),
        _ => Err(bad("NUMBER(TCR_EL1_T1SZ)", t1sz, "64 − TCR_EL1_T1SZ is not in 36..=VA_BITS")),
    }
}

impl Arm64 {
    /// Translation parameters from VMCOREINFO; `loads` (may be empty) give
    /// PHYS_OFFSET when VMCOREINFO lacks it.
    ///
    /// # Errors
    ///
    /// [`XlatError::MissingKey`] without `PAGESIZE`, `NUMBER(VA_BITS)`,
    /// `NUMBER(kimage_voffset)` or `SYMBOL(swapper_pg_dir)`;
    /// [`XlatError::BadKey`] for values out of range, a `SYMBOL(_stext)`
    /// below `PAGE_END` (the layout before Linux 5.4) or a root that is not
    /// a page-aligned physical address.
    pub fn new(info: &VmcoreInfo, loads: &[LoadSegment]) -> Result<Self, XlatError> {
        let page_size = info.page_size().ok_or(XlatError::MissingKey("PAGESIZE"))?;
        let page_shift = match page_size {
            4096 => 12,
            16384 => 14,
            65536 => 16,
            _ => return Err(bad("PAGESIZE", page_size, "arm64 pages are 4096, 16384 or 65536 bytes")),
        };
        let va_bits = info.number("VA_BITS").ok_or(XlatError::MissingKey("NUMBER(VA_BITS)"))?;
        let va_bits = u32::try_from(va_bits)
            .ok()
            .filter(|b| (36..=52).contains(b))
            .ok_or_else(|| bad("NUMBER(VA_BITS)", va_bits, "outside 36..=52"))?;
        let vabits_actual = vabits_actual(info, va_bits)?;
        let walk_bits = if page_shift == 16 { va_bits } else { vabits_actual };
        let levels = (walk_bits - page_shift).div_ceil(page_shift - 3) as u8;
        let max_physmem_bits = info.number("MAX_PHYSMEM_BITS").unwrap_or(if va_bits == 52 { 52 } else { 48 });
        let output = match (page_shift, max_physmem_bits, vabits_actual) {
            (16, 52, _) => OutputAddress::Lpa,
            (12 | 14, _, 52) => OutputAddress::Lpa2,
            _ => OutputAddress::Pa48,
        };
        let va_bits_min = match (va_bits, page_shift) {
            (49.., 14) => 47,
            (49.., _) => 48,
            _ => va_bits,
        };
        let page_offset = 0u64.wrapping_sub(1 << va_bits);
        let page_end = 0u64.wrapping_sub(1 << (va_bits_min - 1));
        if let Some(stext) = info.symbol("_stext")
            && stext < page_end
        {
            let reason =
                "below PAGE_END: the arm64 layout of kernels before 5.4, which vmdump does not translate";
            return Err(bad("SYMBOL(_stext)", stext, reason));
        }
        let kimage_voffset =
            info.number("kimage_voffset").ok_or(XlatError::MissingKey("NUMBER(kimage_voffset)"))? as u64;
        let root = info.symbol("swapper_pg_dir").ok_or(XlatError::MissingKey("SYMBOL(swapper_pg_dir)"))?;
        let root_paddr = root.wrapping_sub(kimage_voffset);
        if root_paddr % page_size != 0 || root_paddr >> output.bits() != 0 {
            let reason = "less NUMBER(kimage_voffset), not a page-aligned physical address";
            return Err(bad("SYMBOL(swapper_pg_dir)", root, reason));
        }
        Ok(Arm64 {
            page_shift,
            va_bits,
            vabits_actual,
            walk_bits,
            levels,
            output,
            page_offset,
            page_end,
            phys_offset: phys_offset(info, loads, (page_offset, page_end))?,
            kimage_voffset,
            kerneloffset: info.kerneloffset().unwrap_or(0),
            root_paddr,
        })
    }

    /// `NUMBER(VA_BITS)` and the width the hardware uses (`vabits_actual`).
    pub fn va_bits(&self) -> (u32, u32) {
        (self.va_bits, self.vabits_actual)
    }

    /// How descriptors carry output addresses.
    pub fn output_address(&self) -> OutputAddress {
        self.output
    }

    /// `NUMBER(kimage_voffset)`: image virtual − physical address.
    pub fn kimage_voffset(&self) -> u64 {
        self.kimage_voffset
    }

    /// End of the linear map.
    pub fn page_end(&self) -> u64 {
        self.page_end
    }

    /// `va − kimage_voffset`: the formula for kernel-image addresses (not
    /// bounded: VMCOREINFO does not say where the image ends, so only the
    /// root is translated with it; other image addresses are walked).
    pub fn image_to_phys(&self, vaddr: u64) -> u64 {
        vaddr.wrapping_sub(self.kimage_voffset)
    }

    /// The linear-map formula for `vaddr` in `[PAGE_OFFSET, PAGE_END)`,
    /// `None` for other addresses.
    pub fn linear_to_phys(&self, vaddr: u64) -> Option<Result<u64, XlatError>> {
        (self.page_offset..self.page_end).contains(&vaddr).then(|| {
            let paddr = (vaddr - self.page_offset).wrapping_add(self.phys_offset);
            let bits = self.output.bits();
            match paddr >> bits {
                0 => Ok(paddr),
                _ => Err(XlatError::BeyondPhysMem { vaddr, paddr, bits }),
            }
        })
    }

    /// Checks the two formulas against the page tables, as soon as they can
    /// be read: the root must map itself (`kimage_voffset`) and, when
    /// VMCOREINFO gives it, `SYMBOL(mem_section)` must be where the linear
    /// map says (`PHYS_OFFSET`, `VA_BITS`).
    ///
    /// # Errors
    ///
    /// The walk's error, or [`XlatError::Inconsistent`] naming the formula.
    pub fn check(
        &self,
        info: &VmcoreInfo,
        walk: &dyn Fn(u64) -> Result<u64, XlatError>,
    ) -> Result<(), XlatError> {
        let root = self.root_paddr.wrapping_add(self.kimage_voffset);
        let tables = walk(root)?;
        if tables != self.root_paddr {
            let what = "SYMBOL(swapper_pg_dir) − NUMBER(kimage_voffset)";
            return Err(XlatError::Inconsistent { what, vaddr: root, tables, formula: self.root_paddr });
        }
        if let Some(vaddr) = info.symbol("mem_section")
            && let Some(formula) = self.linear_to_phys(vaddr)
        {
            let (tables, formula) = (walk(vaddr)?, formula?);
            if tables != formula {
                let what = "the linear map (NUMBER(VA_BITS), NUMBER(PHYS_OFFSET)) at SYMBOL(mem_section)";
                return Err(XlatError::Inconsistent { what, vaddr, tables, formula });
            }
        }
        Ok(())
    }

    /// The Linux name of level `j`, counted from the last (0) up.
    fn level(&self, j: u32) -> Level {
        match j {
            _ if j + 1 == u32::from(self.levels) => Level::Pgd,
            0 => Level::Pte,
            1 => Level::Pmd,
            2 => Level::Pud,
            _ => Level::P4d,
        }
    }

    /// Whether a level whose entries span `2^shift` bytes may hold blocks:
    /// 1 GiB and 2 MiB (4 KiB pages), 32 MiB (16 KiB), 512 MiB (64 KiB);
    /// with 52-bit output addresses also 512 GiB, 64 GiB and 4 TiB.
    fn block_allowed(&self, shift: u32) -> bool {
        shift <= 30 || (self.output != OutputAddress::Pa48 && shift <= 42)
    }

    /// Reads the level-`j` entry for `vaddr` in `table`; an invalid one
    /// (bit 0 clear) is an error.
    fn entry(
        &self,
        j: u32,
        table: u64,
        vaddr: u64,
        read_entry: &mut dyn FnMut(u64) -> Result<u64, XlatError>,
    ) -> Result<Entry, XlatError> {
        let shift = self.page_shift + j * (self.page_shift - 3);
        let top = j + 1 == u32::from(self.levels);
        let bits = if top { self.walk_bits - shift } else { self.page_shift - 3 };
        let (level, paddr) = (self.level(j), table + ((vaddr >> shift) & ((1 << bits) - 1)) * 8);
        let value = read_entry(paddr).map_err(|e| XlatError::TableRead {
            vaddr,
            level,
            entry_paddr: paddr,
            cause: Box::new(e),
        })?;
        if value & 1 == 0 {
            return Err(XlatError::NotPresent { vaddr, level, entry: value, entry_paddr: paddr });
        }
        Ok(Entry { value, level, paddr, shift })
    }

    /// Walks the tables from `swapper_pg_dir`; `read_entry` reads the
    /// `u64` at a physical address (8-byte aligned).
    ///
    /// # Errors
    ///
    /// [`XlatError::NonCanonical`] below `PAGE_OFFSET` or below the
    /// `−2^walk_bits` the tables reach (a 52-bit kernel on 48-bit
    /// hardware), [`XlatError::NotPresent`] for an invalid descriptor,
    /// [`XlatError::Reserved`] for a reserved one, or
    /// [`XlatError::TableRead`] wrapping a read error.
    pub fn walk(
        &self,
        vaddr: u64,
        read_entry: &mut dyn FnMut(u64) -> Result<u64, XlatError>,
    ) -> Result<u64, XlatError> {
        if vaddr < self.page_offset.max(0u64.wrapping_sub(1 << self.walk_bits)) {
            return Err(XlatError::NonCanonical { vaddr, levels: self.levels });
        }
        let reserved =
            |e: Entry| XlatError::Reserved { vaddr, level: e.level, entry: e.value, entry_paddr: e.paddr };
        let mut table = self.root_paddr;
        for j in (1..u32::from(self.levels)).rev() {
            let e = self.entry(j, table, vaddr, read_entry)?;
            let address = self.output.decode(e.value, self.page_shift);
            match e.value & 3 {
                3 => table = address,
                _ if self.block_allowed(e.shift) => {
                    let low = (1u64 << e.shift) - 1;
                    return Ok((address & !low) | (vaddr & low));
                }
                _ => return Err(reserved(e)),
            }
        }
        let e = self.entry(0, table, vaddr, read_entry)?;
        match e.value & 3 {
            3 => Ok(self.output.decode(e.value, self.page_shift) | (vaddr & ((1 << self.page_shift) - 1))),
            _ => Err(reserved(e)),
        }
    }
}

/// A valid descriptor read by [`Arm64::walk`].
struct Entry {
    value: u64,
    level: Level,
    paddr: u64,
    /// Bytes one entry of its level spans, as a power of two.
    shift: u32,
}

impl Paging for Arm64 {
    fn machine(&self) -> Machine {
        Machine::Aarch64
    }

    fn page_size(&self) -> u64 {
        1 << self.page_shift
    }

    fn levels(&self) -> u8 {
        self.levels
    }

    fn root_paddr(&self) -> u64 {
        self.root_paddr
    }

    /// PHYS_OFFSET, as makedumpfile's phys_base on arm64.
    fn phys_base(&self) -> i64 {
        self.phys_offset as i64
    }

    fn kerneloffset(&self) -> u64 {
        self.kerneloffset
    }

    fn page_offset_info(&self) -> PageOffset {
        PageOffset { value: self.page_offset, source: PageOffsetSource::Vmcoreinfo }
    }

    fn direct(&self, vaddr: u64) -> Option<Result<u64, XlatError>> {
        self.linear_to_phys(vaddr)
    }

    fn walk(
        &self,
        vaddr: u64,
        read_entry: &mut dyn FnMut(u64) -> Result<u64, XlatError>,
    ) -> Result<u64, XlatError> {
        Arm64::walk(self, vaddr, read_entry)
    }
}
