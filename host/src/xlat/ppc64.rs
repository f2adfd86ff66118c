//! ppc64le (64-bit POWER, Book3S, little-endian) translation of kernel
//! virtual addresses, for the layout of Linux 5.2 and later, where the
//! radix and the hash MMU share one kernel map in the 0xc quadrant
//! (docs/ppc64.md §2, §3):
//!
//! | address | translation |
//! |---|---|
//! | linear map, `[0xc000000000000000, vmalloc start)` | `va − 0xc000000000000000` (the kernel image is in it: physical 0) |
//! | vmemmap, when `SYMBOL(vmemmap_list)` holds a list | the list's `(virt_addr, phys)` blocks of `mmu_psize_defs[mmu_vmemmap_psize]` bytes |
//! | anything else: vmalloc, modules, vmemmap without a list | a walk of the Linux page tables from `swapper_pg_dir` |
//!
//! The tables have four levels whatever the MMU; their entries are
//! big-endian even on a little-endian kernel. Index bits per level, PTE
//! first (docs/ppc64.md §3):
//!
//! | | 64 KiB pages | 4 KiB pages |
//! |---|---|---|
//! | radix | 5, 9, 9, 13 | 9, 9, 9, 13 |
//! | hash | 8, 10, 10, 8 | 9, 7, 9, 9 |
//!
//! A table entry holds the next table's physical address in bits 55:8
//! with `_PAGE_PRESENT` (bit 63); a leaf holds `_PAGE_PTE` (bit 62) too,
//! and its page's physical address in bits 52:PAGE_SHIFT. A leaf above
//! the last level maps the whole span of its entry (radix maps the linear
//! map and vmemmap with 2 MiB and 1 GiB leaves).
//!
//! The hash MMU does not map vmemmap through these tables (its bolted
//! hash entries are recorded in `vmemmap_list`), so a hash kernel's
//! vmemmap needs the list; a radix kernel's is walked, and where it also
//! keeps the list (6.1 does) the two are checked against each other.

use std::sync::Arc;

use vmdump_format::elf::LoadSegment;
use vmdump_format::machine::Machine;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::arch::Paging;
use super::page_offset::{PageOffset, PageOffsetSource};
use super::{Level, XlatError};

/// The linear map's base: physical 0 (`PAGE_OFFSET`, `KERNELBASE`).
pub const PPC64_PAGE_OFFSET: u64 = 0xc000_0000_0000_0000;
/// The first address past the linear map in the shared 0xc layout
/// (`H_KERN_VIRT_START`, `RADIX_KERN_VIRT_START`: vmalloc starts there).
const VMALLOC_START: u64 = 0xc008_0000_0000_0000;
/// `_PAGE_PRESENT`: the entry is valid (radix: the V bit).
const PRESENT: u64 = 1 << 63;
/// `_PAGE_PTE`: the entry is a leaf, not a pointer to a table.
const LEAF: u64 = 1 << 62;
/// A table entry's next-level base (radix NLB: bits 55:8).
const TABLE_ADDRESS: u64 = 0x00ff_ffff_ffff_ff00;
/// A leaf's real page number, bits 52:12 (`PTE_RPN_MASK`, 53 bits of
/// physical address), low bits below the page cleared by the caller.
const LEAF_ADDRESS: u64 = (1 << 53) - (1 << 12);
/// Most `vmemmap_list` entries followed: one per vmemmap block, 16 MiB of
/// struct pages (hash) or 2 MiB (radix) each; a million cover 2 PiB of
/// RAM with 64 KiB pages.
const MAX_VMEMMAP_BLOCKS: usize = 1 << 20;

/// The kernel's MMU mode (`NUMBER(RADIX_MMU)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mmu {
    /// The radix tree of POWER9 and later (QEMU pseries' default).
    Radix,
    /// The hashed page table (POWER8 and earlier; `disable_radix`).
    Hash,
}

/// One block of vmemmap as `struct vmemmap_backing` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VmemmapBlock {
    /// Its virtual address (`virt_addr`).
    pub virt: u64,
    /// Its physical address (`phys`).
    pub phys: u64,
}

/// The blocks of `vmemmap_list`, each `size` bytes, sorted by address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmemmapList {
    size: u64,
    blocks: Arc<[VmemmapBlock]>,
}

impl VmemmapList {
    /// A list of blocks of `size` bytes (a power of two).
    pub fn new(size: u64, mut blocks: Vec<VmemmapBlock>) -> Self {
        blocks.sort_unstable_by_key(|b| b.virt);
        VmemmapList { size, blocks: blocks.into() }
    }

    /// The physical address of `vaddr` if a block holds it.
    pub fn translate(&self, vaddr: u64) -> Option<u64> {
        let i = self.blocks.partition_point(|b| b.virt <= vaddr).checked_sub(1)?;
        let block = self.blocks[i];
        (vaddr - block.virt < self.size).then(|| block.phys + (vaddr - block.virt))
    }

    /// The blocks.
    pub fn blocks(&self) -> &[VmemmapBlock] {
        &self.blocks
    }
}

/// Translation parameters of a ppc64le kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ppc64 {
    page_shift: u32,
    mmu: Mmu,
    /// Whether VMCOREINFO said which MMU (`NUMBER(RADIX_MMU)`); if not,
    /// `vmemmap_list` tells ([`Ppc64::read_vmemmap_list`]).
    mmu_given: bool,
    /// Index bits per level, PTE first.
    index_bits: [u32; 4],
    linear_end: u64,
    physmem_bits: u32,
    kerneloffset: u64,
    root_paddr: u64,
    vmemmap: Option<VmemmapList>,
}

fn bad(key: &'static str, value: impl Into<i128>, reason: &'static str) -> XlatError {
    XlatError::BadKey { key, value: value.into(), reason }
}

/// Index bits per level of the kernel's tables, PTE first.
fn index_bits(mmu: Mmu, page_shift: u32) -> [u32; 4] {
    match (mmu, page_shift) {
        (Mmu::Radix, 16) => [5, 9, 9, 13],
        (Mmu::Radix, _) => [9, 9, 9, 13],
        (Mmu::Hash, 16) => [8, 10, 10, 8],
        (Mmu::Hash, _) => [9, 7, 9, 9],
    }
}

/// The physical address of a linear-map address (`None` outside it).
fn linear(vaddr: u64, linear_end: u64) -> Option<u64> {
    (PPC64_PAGE_OFFSET..linear_end).contains(&vaddr).then(|| vaddr - PPC64_PAGE_OFFSET)
}

impl Ppc64 {
    /// Translation parameters from VMCOREINFO (the PT_LOADs are not
    /// needed: the linear map is fixed).
    ///
    /// # Errors
    ///
    /// [`XlatError::MissingKey`] without `PAGESIZE` or
    /// `SYMBOL(swapper_pg_dir)`; [`XlatError::BadKey`] for a page size
    /// other than 4 or 64 KiB, or a root outside the linear map.
    pub fn new(info: &VmcoreInfo, _loads: &[LoadSegment]) -> Result<Self, XlatError> {
        let page_size = info.page_size().ok_or(XlatError::MissingKey("PAGESIZE"))?;
        let page_shift = match page_size {
            4096 => 12,
            65536 => 16,
            _ => return Err(bad("PAGESIZE", page_size, "ppc64 pages are 4096 or 65536 bytes")),
        };
        // Kernels before 6.4 (bookworm's 6.1) do not export it: radix is
        // then assumed until vmemmap_list says otherwise.
        let (mmu, mmu_given) = match info.number("RADIX_MMU") {
            Some(1) => (Mmu::Radix, true),
            Some(0) => (Mmu::Hash, true),
            Some(other) => return Err(bad("NUMBER(RADIX_MMU)", other, "neither 0 (hash) nor 1 (radix)")),
            None => (Mmu::Radix, false),
        };
        let linear_end = match info.number("vmalloc_start") {
            Some(v) if (v as u64) > PPC64_PAGE_OFFSET => v as u64,
            Some(v) => return Err(bad("NUMBER(vmalloc_start)", v, "not above 0xc000000000000000")),
            None => VMALLOC_START,
        };
        let physmem_bits = match info.number("MAX_PHYSMEM_BITS") {
            Some(bits @ 40..=53) => bits as u32,
            Some(bits) => return Err(bad("NUMBER(MAX_PHYSMEM_BITS)", bits, "outside 40..=53")),
            None => 51,
        };
        let root = info.symbol("swapper_pg_dir").ok_or(XlatError::MissingKey("SYMBOL(swapper_pg_dir)"))?;
        let root_paddr = linear(root, linear_end)
            .filter(|pa| pa % 8 == 0 && pa >> physmem_bits == 0)
            .ok_or_else(|| bad("SYMBOL(swapper_pg_dir)", root, "not an aligned address of the linear map"))?;
        Ok(Ppc64 {
            page_shift,
            mmu,
            mmu_given,
            index_bits: index_bits(mmu, page_shift),
            linear_end,
            physmem_bits,
            kerneloffset: info.kerneloffset().unwrap_or(0),
            root_paddr,
            vmemmap: None,
        })
    }

    /// The MMU mode.
    pub fn mmu(&self) -> Mmu {
        self.mmu
    }

    /// The vmemmap list, once [`Ppc64::read_vmemmap_list`] found one.
    pub fn vmemmap_list(&self) -> Option<&VmemmapList> {
        self.vmemmap.as_ref()
    }

    /// Reads `vmemmap_list` through the linear map (`read_u64` and
    /// `read_u32` read kernel virtual memory) and keeps it: a hash kernel
    /// needs it for vmemmap; on a radix kernel the walk gives the same,
    /// which is checked at the list's first block. Nothing is kept when
    /// VMCOREINFO lacks the list's keys or the list is empty (a radix
    /// kernel after 6.6 keeps none). Without `NUMBER(RADIX_MMU)`, the
    /// MMU is the one whose tables map the first block where the list
    /// says: radix if the radix walk finds it there, else hash.
    ///
    /// # Errors
    ///
    /// A read error, a list longer than [`MAX_VMEMMAP_BLOCKS`] or with a
    /// block outside the linear map, [`XlatError::MissingKey`] for a hash
    /// kernel without the list, or [`XlatError::Inconsistent`] when list
    /// and tables disagree.
    pub fn read_vmemmap_list(
        &mut self,
        info: &VmcoreInfo,
        read_u64: &dyn Fn(u64) -> Result<u64, XlatError>,
        read_u32: &dyn Fn(u64) -> Result<u32, XlatError>,
        walk: &dyn Fn(&Ppc64, u64) -> Result<u64, XlatError>,
    ) -> Result<(), XlatError> {
        const UNTOLD: &str = "NUMBER(RADIX_MMU), or a vmemmap_list to tell the MMU";
        let Some(list) = VmemmapKeys::of(info) else {
            return match (self.mmu, self.mmu_given) {
                (_, false) => Err(XlatError::MissingKey(UNTOLD)),
                (Mmu::Hash, _) => {
                    Err(XlatError::MissingKey("SYMBOL(vmemmap_list) and its structures (hash MMU)"))
                }
                (Mmu::Radix, true) => Ok(()),
            };
        };
        let psize = read_u32(list.psize_index)?;
        let shift = read_u32(list.psize_defs + u64::from(psize) * list.psize_def_size + list.shift_offset)?;
        if !(16..=34).contains(&shift) {
            return Err(bad("mmu_psize_defs[mmu_vmemmap_psize].shift", shift, "not a page shift of 16..=34"));
        }
        let mut blocks = Vec::new();
        let (head, mut at) = (list.head, read_u64(list.head)?);
        while at != 0 && at != head {
            if blocks.len() == MAX_VMEMMAP_BLOCKS || linear(at, self.linear_end).is_none() {
                return Err(bad(
                    "SYMBOL(vmemmap_list)",
                    at,
                    "a list entry outside the linear map, or too many",
                ));
            }
            blocks.push(VmemmapBlock { virt: read_u64(at + list.virt)?, phys: read_u64(at + list.phys)? });
            at = read_u64(at + list.next)?;
        }
        if blocks.is_empty() {
            return match (self.mmu, self.mmu_given) {
                (_, false) => Err(XlatError::MissingKey(UNTOLD)),
                (Mmu::Hash, _) => Err(bad("SYMBOL(vmemmap_list)", head, "empty on a hash-MMU kernel")),
                (Mmu::Radix, true) => Ok(()),
            };
        }
        let vmemmap = VmemmapList::new(1 << shift, blocks);
        if self.mmu == Mmu::Radix {
            let first = vmemmap.blocks()[0];
            match walk(self, first.virt) {
                Ok(tables) if tables == first.phys => {}
                _ if !self.mmu_given => {
                    self.mmu = Mmu::Hash;
                    self.index_bits = index_bits(Mmu::Hash, self.page_shift);
                }
                Ok(tables) => {
                    let what = "vmemmap_list's first block";
                    return Err(XlatError::Inconsistent {
                        what,
                        vaddr: first.virt,
                        tables,
                        formula: first.phys,
                    });
                }
                Err(e) => return Err(e),
            }
        }
        self.vmemmap = Some(vmemmap);
        Ok(())
    }

    /// The Linux name of level `j`, counted from the last (0) up.
    fn level(j: usize) -> Level {
        [Level::Pte, Level::Pmd, Level::Pud, Level::Pgd][j]
    }

    /// Walks the Linux page tables from `swapper_pg_dir`; `read_entry`
    /// reads the `u64` at a physical address in the machine's byte order
    /// (the entries are big-endian: swapped here).
    ///
    /// # Errors
    ///
    /// [`XlatError::NonCanonical`] outside the kernel's quadrant (bits
    /// 63:62 set, 61:52 clear), [`XlatError::NotPresent`] for an entry
    /// without `_PAGE_PRESENT`, [`XlatError::BeyondPhysMem`] for an
    /// address beyond `MAX_PHYSMEM_BITS`, or [`XlatError::TableRead`].
    pub fn walk(
        &self,
        vaddr: u64,
        read_entry: &mut dyn FnMut(u64) -> Result<u64, XlatError>,
    ) -> Result<u64, XlatError> {
        if vaddr >> 52 != 0xc00 {
            return Err(XlatError::NonCanonical { vaddr, levels: 4 });
        }
        let mut table = self.root_paddr;
        let mut shift = self.page_shift + self.index_bits[..3].iter().sum::<u32>();
        for j in (0..4).rev() {
            let level = Self::level(j);
            let index = (vaddr >> shift) & ((1 << self.index_bits[j]) - 1);
            let entry_paddr = table + index * 8;
            let raw = read_entry(entry_paddr).map_err(|e| XlatError::TableRead {
                vaddr,
                level,
                entry_paddr,
                cause: Box::new(e),
            })?;
            let entry = u64::from_be_bytes(raw.to_le_bytes());
            if entry & PRESENT == 0 {
                return Err(XlatError::NotPresent { vaddr, level, entry, entry_paddr });
            }
            if entry & LEAF != 0 || j == 0 {
                let low = (1u64 << shift) - 1;
                let paddr = (entry & LEAF_ADDRESS & !low) | (vaddr & low);
                return match paddr >> self.physmem_bits {
                    0 => Ok(paddr),
                    _ => Err(XlatError::BeyondPhysMem { vaddr, paddr, bits: self.physmem_bits }),
                };
            }
            table = entry & TABLE_ADDRESS;
            shift -= self.index_bits[j - 1];
        }
        unreachable!("the last level returns")
    }
}

/// Where `vmemmap_list` and the size of its blocks are, from VMCOREINFO.
struct VmemmapKeys {
    head: u64,
    next: u64,
    virt: u64,
    phys: u64,
    psize_index: u64,
    psize_defs: u64,
    psize_def_size: u64,
    shift_offset: u64,
}

impl VmemmapKeys {
    fn of(info: &VmcoreInfo) -> Option<Self> {
        Some(VmemmapKeys {
            head: info.symbol("vmemmap_list")?,
            next: info.offset("vmemmap_backing.list")?,
            virt: info.offset("vmemmap_backing.virt_addr")?,
            phys: info.offset("vmemmap_backing.phys")?,
            psize_index: info.symbol("mmu_vmemmap_psize")?,
            psize_defs: info.symbol("mmu_psize_defs")?,
            psize_def_size: info.size("mmu_psize_def")?,
            shift_offset: info.offset("mmu_psize_def.shift")?,
        })
    }
}

impl Paging for Ppc64 {
    fn machine(&self) -> Machine {
        Machine::Ppc64le
    }

    fn page_size(&self) -> u64 {
        1 << self.page_shift
    }

    fn levels(&self) -> u8 {
        4
    }

    fn root_paddr(&self) -> u64 {
        self.root_paddr
    }

    /// 0: the kernel runs at physical 0 (makedumpfile's phys_base stays 0).
    fn phys_base(&self) -> i64 {
        0
    }

    fn kerneloffset(&self) -> u64 {
        self.kerneloffset
    }

    fn page_offset_info(&self) -> PageOffset {
        PageOffset { value: PPC64_PAGE_OFFSET, source: PageOffsetSource::Architecture }
    }

    fn direct(&self, vaddr: u64) -> Option<Result<u64, XlatError>> {
        if let Some(paddr) = linear(vaddr, self.linear_end) {
            let bits = self.physmem_bits;
            return Some(match paddr >> bits {
                0 => Ok(paddr),
                _ => Err(XlatError::BeyondPhysMem { vaddr, paddr, bits }),
            });
        }
        self.vmemmap.as_ref()?.translate(vaddr).map(Ok)
    }

    fn walk(
        &self,
        vaddr: u64,
        read_entry: &mut dyn FnMut(u64) -> Result<u64, XlatError>,
    ) -> Result<u64, XlatError> {
        Ppc64::walk(self, vaddr, read_entry)
    }
}
