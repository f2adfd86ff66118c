//! s390x (z/Architecture) translation of kernel virtual addresses: the
//! dynamic address translation (DAT) walk from `swapper_pg_dir`, 4 KiB
//! pages, big-endian entries (docs/s390x.md §5).
//!
//! A virtual address indexes up to five tables: the region-first,
//! -second and -third tables and the segment table with 11 bits each
//! (bits 63:53, 52:42, 41:31, 30:20; 2048 entries, 16 KiB a table), then
//! the page table with 8 (bits 19:12; 256 entries, 2 KiB). The kernel's
//! top table is the region table its address space needs (Linux 6.1: the
//! region-third table below 4 TiB, the region-second above); each region
//! and segment entry says which table it is in (TT, bits 3:2), so the
//! walk reads the top table's type from its first entry. Entry bits:
//!
//! | entry | invalid | next table or frame | large frame |
//! |---|---|---|---|
//! | region (first, second, third) | I, 0x20 | origin, bits 63:12; TF (7:6) and TL (1:0): the quarters of the next table that exist | region-third with FC (0x400): 2 GiB frame, bits 63:31 |
//! | segment | I, 0x20 | page-table origin, bits 63:11 | FC (0x400): 1 MiB frame, bits 63:20 |
//! | page | I, 0x400 | page frame, bits 63:12 | |
//!
//! Linux before 6.10 runs its kernel at its physical addresses (symbols
//! are physical addresses, the identity map from 0): `swapper_pg_dir` is
//! the root's physical address. Since 6.10 (the "virtual" layout) the
//! image runs at `KERNELOFFSET`, loaded at physical `KERNELOFFPHYS`, and
//! the identity map starts at `IDENTITYBASE`: the root is
//! `swapper_pg_dir − KERNELOFFSET + KERNELOFFPHYS`. Either way every
//! address is walked: the tables map the identity map and the image too.

use vmdump_format::elf::LoadSegment;
use vmdump_format::machine::Machine;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::arch::Paging;
use super::page_offset::{PageOffset, PageOffsetSource};
use super::{Level, XlatError};

const PAGE_SHIFT: u32 = 12;
/// A region or segment entry's invalid bit (I).
const TABLE_INVALID: u64 = 0x20;
/// A region or segment entry's table type (TT).
const TABLE_TYPE: u64 = 0x0c;
/// A region-third or segment entry's format control (FC): a large frame.
const LARGE: u64 = 0x400;
/// A page-table entry's invalid bit (I).
const PAGE_INVALID: u64 = 0x400;
/// Physical address bits when VMCOREINFO has no `NUMBER(MAX_PHYSMEM_BITS)`
/// (the kernel's own limit on 6.1).
const DEFAULT_PHYSMEM_BITS: u32 = 46;

/// The tables of a walk, from the top down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    RegionFirst,
    RegionSecond,
    RegionThird,
    Segment,
    Page,
}

impl Table {
    /// The table a region or segment entry says it is in (its TT field).
    fn of_entry(entry: u64) -> Table {
        match (entry & TABLE_TYPE) >> 2 {
            3 => Table::RegionFirst,
            2 => Table::RegionSecond,
            1 => Table::RegionThird,
            _ => Table::Segment,
        }
    }

    /// The lowest bit of the address's index into this table.
    fn shift(self) -> u32 {
        match self {
            Table::RegionFirst => 53,
            Table::RegionSecond => 42,
            Table::RegionThird => 31,
            Table::Segment => 20,
            Table::Page => PAGE_SHIFT,
        }
    }

    /// Entries: 2048, 256 in a page table.
    fn entries(self) -> u64 {
        if self == Table::Page { 256 } else { 2048 }
    }

    fn below(self) -> Table {
        match self {
            Table::RegionFirst => Table::RegionSecond,
            Table::RegionSecond => Table::RegionThird,
            Table::RegionThird => Table::Segment,
            Table::Segment | Table::Page => Table::Page,
        }
    }

    /// Tables from this one down to the page table.
    fn levels(self) -> u8 {
        match self {
            Table::RegionFirst => 5,
            Table::RegionSecond => 4,
            Table::RegionThird => 3,
            Table::Segment => 2,
            Table::Page => 1,
        }
    }

    /// Linux's names: pgd, p4d, pud, pmd, pte.
    fn level(self) -> Level {
        match self {
            Table::RegionFirst => Level::Pgd,
            Table::RegionSecond => Level::P4d,
            Table::RegionThird => Level::Pud,
            Table::Segment => Level::Pmd,
            Table::Page => Level::Pte,
        }
    }
}

/// The first kernel of the virtual layout.
const VIRTUAL_LAYOUT: (u32, u32) = (6, 10);

/// Translation parameters of an s390x kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct S390x {
    root_paddr: u64,
    kerneloffset: u64,
    /// The identity map's start: 0 before 6.10, `IDENTITYBASE` since.
    identity: PageOffset,
}

fn bad(key: &'static str, value: impl Into<i128>, reason: &'static str) -> XlatError {
    XlatError::BadKey { key, value: value.into(), reason }
}

impl S390x {
    /// Translation parameters from VMCOREINFO (the PT_LOADs are not needed).
    ///
    /// # Errors
    ///
    /// [`XlatError::MissingKey`] without `PAGESIZE` or
    /// `SYMBOL(swapper_pg_dir)`, a kernel of 6.10 or later without
    /// `KERNELOFFPHYS`, or `KERNELOFFPHYS` without `IDENTITYBASE`; [`XlatError::BadKey`] for pages other than 4 KiB,
    /// or a root that is not a page-aligned physical address.
    pub fn new(info: &VmcoreInfo, _loads: &[LoadSegment]) -> Result<Self, XlatError> {
        let page_size = info.page_size().ok_or(XlatError::MissingKey("PAGESIZE"))?;
        if page_size != 1 << PAGE_SHIFT {
            return Err(bad("PAGESIZE", page_size, "s390x pages are 4096 bytes"));
        }
        let symbol = info.symbol("swapper_pg_dir").ok_or(XlatError::MissingKey("SYMBOL(swapper_pg_dir)"))?;
        let kerneloffset = info.kerneloffset().unwrap_or(0);
        let (root, identity) = match info.hex("KERNELOFFPHYS") {
            Some(image_paddr) => {
                let image_offset = symbol.checked_sub(kerneloffset).ok_or_else(|| {
                    bad("SYMBOL(swapper_pg_dir)", symbol, "below the image's start, KERNELOFFSET")
                })?;
                let base = info.hex("IDENTITYBASE").ok_or(XlatError::MissingKey("IDENTITYBASE"))?;
                (
                    image_paddr.wrapping_add(image_offset),
                    PageOffset { value: base, source: PageOffsetSource::Vmcoreinfo },
                )
            }
            None if info.kernel_version().is_some_and(|v| v >= VIRTUAL_LAYOUT) => {
                return Err(XlatError::MissingKey("KERNELOFFPHYS"));
            }
            None => (symbol, PageOffset { value: 0, source: PageOffsetSource::Architecture }),
        };
        let bits = info.number("MAX_PHYSMEM_BITS").map_or(DEFAULT_PHYSMEM_BITS, |b| b.clamp(1, 64) as u32);
        if root % page_size != 0 || root.checked_shr(bits).unwrap_or(0) != 0 {
            return Err(bad(
                "SYMBOL(swapper_pg_dir)",
                symbol,
                "its table is not at a page-aligned physical address",
            ));
        }
        Ok(S390x { root_paddr: root, kerneloffset, identity })
    }

    /// Walks the tables from `swapper_pg_dir`; `read_entry` gives each
    /// entry as the machine stores it (big-endian, already decoded).
    ///
    /// # Errors
    ///
    /// [`XlatError::NonCanonical`] for an address beyond the top table's
    /// reach, [`XlatError::NotPresent`] for an invalid entry or an index
    /// outside the part of a table its entry says exists,
    /// [`XlatError::Reserved`] for an entry in the wrong table, or
    /// [`XlatError::TableRead`].
    pub fn walk(
        &self,
        vaddr: u64,
        read_entry: &mut dyn FnMut(u64) -> Result<u64, XlatError>,
    ) -> Result<u64, XlatError> {
        let mut read = |table: Table, entry_paddr: u64| {
            read_entry(entry_paddr).map_err(|e| XlatError::TableRead {
                vaddr,
                level: table.level(),
                entry_paddr,
                cause: Box::new(e),
            })
        };
        let top = Table::of_entry(read(Table::RegionFirst, self.root_paddr)?);
        let reach = top.shift() + 11;
        if reach < 64 && vaddr >> reach != 0 {
            return Err(XlatError::NonCanonical { vaddr, levels: top.levels() });
        }
        let (mut table, mut origin, mut quarters) = (top, self.root_paddr, 0..=3u64);
        loop {
            let index = (vaddr >> table.shift()) & (table.entries() - 1);
            let (level, entry_paddr) = (table.level(), origin + index * 8);
            if table != Table::Page && !quarters.contains(&(index >> 9)) {
                // The table's entry said this part of it does not exist.
                return Err(XlatError::NotPresent { vaddr, level, entry: 0, entry_paddr });
            }
            let entry = read(table, entry_paddr)?;
            let invalid = if table == Table::Page { PAGE_INVALID } else { TABLE_INVALID };
            if entry & invalid != 0 {
                return Err(XlatError::NotPresent { vaddr, level, entry, entry_paddr });
            }
            if table != Table::Page && Table::of_entry(entry) != table {
                return Err(XlatError::Reserved { vaddr, level, entry, entry_paddr });
            }
            let frame = |shift: u32| (entry & !((1u64 << shift) - 1)) | (vaddr & ((1u64 << shift) - 1));
            match table {
                Table::Page => return Ok(frame(PAGE_SHIFT)),
                Table::RegionThird | Table::Segment if entry & LARGE != 0 => return Ok(frame(table.shift())),
                Table::Segment => origin = entry & !0x7ff,
                _ => {
                    origin = entry & !0xfff;
                    quarters = (entry >> 6) & 3..=entry & 3;
                }
            }
            table = table.below();
        }
    }
}

impl Paging for S390x {
    fn machine(&self) -> Machine {
        Machine::S390x
    }

    fn page_size(&self) -> u64 {
        1 << PAGE_SHIFT
    }

    /// The most a kernel's tables have: the walk reads the top table's
    /// type from the tables themselves.
    fn levels(&self) -> u8 {
        Table::RegionFirst.levels()
    }

    fn root_paddr(&self) -> u64 {
        self.root_paddr
    }

    /// Memory from physical 0, as makedumpfile's phys_base on s390x.
    fn phys_base(&self) -> i64 {
        0
    }

    fn kerneloffset(&self) -> u64 {
        self.kerneloffset
    }

    /// The identity map: from 0 before 6.10, from `IDENTITYBASE` since.
    fn page_offset_info(&self) -> PageOffset {
        self.identity
    }

    /// Everything walks: the identity map's extent (`high_memory`) is in
    /// memory, not in VMCOREINFO, and the tables map it too.
    fn direct(&self, _vaddr: u64) -> Option<Result<u64, XlatError>> {
        None
    }

    fn walk(
        &self,
        vaddr: u64,
        read_entry: &mut dyn FnMut(u64) -> Result<u64, XlatError>,
    ) -> Result<u64, XlatError> {
        S390x::walk(self, vaddr, read_entry)
    }
}
