//! arm64 translation over page tables built by hand from the VMSAv8-64
//! descriptor formats (docs/arm64.md §3), never by the code under test:
//! the 4 KiB granule here, the other granules and 52-bit addresses in
//! `arm64_granules.rs`. Expected physical addresses are worked out by
//! hand; the level shifts and table sizes are written out per case from
//! docs/arm64.md's table, not computed.

use std::collections::HashMap;

use vmdump_format::elf::LoadSegment;
use vmdump_format::machine::Machine;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::super::{Arm64, KernelMemory, Level, OutputAddress, PageOffsetSource, Paging, XlatError};
use super::MemPhys;

/// Table descriptor type (`11`) with PXNTable and UXNTable, as in the fixture.
pub(super) const TABLE: u64 = 0x1800_0000_0000_0003;
/// Page (level 3) and block descriptor types.
pub(super) const PAGE: u64 = 3;
pub(super) const BLOCK: u64 = 1;
/// Leaf attributes with 48-bit or LPA output addresses: software dirty
/// (55), UXN, PXN, DBM (51), GP (50), nG, AF, SH = inner shareable (9:8),
/// AttrIndx 1.
pub(super) const LEAF: u64 = 0x00ec_0000_0000_0f04;
/// The same without SH: with LPA2 bits 9:8 are address bits 51:50.
pub(super) const LEAF_LPA2: u64 = 0x00ec_0000_0000_0c04;

/// How a configuration puts an output address into a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Enc {
    /// Bits 47:PAGE_SHIFT in place.
    Pa48,
    /// 64 KiB FEAT_LPA: bits 47:16 in place, 51:48 in descriptor bits 15:12.
    Lpa,
    /// FEAT_LPA2: bits 49:PAGE_SHIFT in place, 51:50 in descriptor bits 9:8.
    Lpa2,
}

/// The descriptor bits that carry output address `pa`.
pub(super) fn encode(enc: Enc, pa: u64) -> u64 {
    assert_eq!(pa >> 52, 0, "{pa:#x}");
    match enc {
        Enc::Pa48 => {
            assert_eq!(pa >> 48, 0, "{pa:#x}");
            pa
        }
        Enc::Lpa => (pa & 0x0000_ffff_ffff_0000) | (pa >> 48) << 12,
        Enc::Lpa2 => (pa & 0x0003_ffff_ffff_f000) | (pa >> 50) << 8,
    }
}

/// Shape of the tables: `shifts[d]` is the span of one entry at depth `d`
/// (0: the root) as a power of two, the last one the page shift.
#[derive(Debug, Clone, Copy)]
pub(super) struct Geometry {
    pub(super) granule: u64,
    pub(super) shifts: &'static [u32],
    pub(super) root_entries: u64,
    pub(super) enc: Enc,
}

/// Page tables in memory, with tables made on demand from `next` up.
pub(super) struct Tables {
    pub(super) m: MemPhys,
    g: Geometry,
    root: u64,
    next: u64,
    children: HashMap<u64, u64>,
}

impl Tables {
    pub(super) fn new(g: Geometry, root: u64, next: u64) -> Self {
        let mut m = MemPhys::with_page_size(g.granule);
        m.put_u64(root, 0);
        Tables { m, g, root, next, children: HashMap::new() }
    }

    /// Physical address of the depth-`depth` entry for `va`, making the
    /// tables above it.
    pub(super) fn slot(&mut self, va: u64, depth: usize) -> u64 {
        let mut table = self.root;
        for d in 0.. {
            let entries = if d == 0 { self.g.root_entries } else { self.g.granule / 8 };
            let slot = table + (va >> self.g.shifts[d]) % entries * 8;
            if d == depth {
                return slot;
            }
            table = match self.children.get(&slot) {
                Some(&child) => child,
                None => {
                    let child = self.next;
                    self.next += self.g.granule;
                    self.children.insert(slot, child);
                    self.m.put_u64(slot, TABLE | encode(self.g.enc, child));
                    self.m.put_u64(child, 0);
                    child
                }
            };
        }
        unreachable!()
    }

    /// Writes `raw` as the depth-`depth` entry for `va`.
    pub(super) fn put(&mut self, va: u64, depth: usize, raw: u64) {
        let slot = self.slot(va, depth);
        self.m.put_u64(slot, raw);
    }

    /// Maps `va` to `pa` with a page (the last depth) or a block.
    pub(super) fn map(&mut self, va: u64, pa: u64, depth: usize) {
        let kind = if depth + 1 == self.g.shifts.len() { PAGE } else { BLOCK };
        let attrs = if self.g.enc == Enc::Lpa2 { LEAF_LPA2 } else { LEAF };
        self.put(va, depth, attrs | encode(self.g.enc, pa) | kind);
    }
}

/// The VMCOREINFO keys arm64 translation reads.
#[derive(Debug, Clone)]
pub(super) struct Kernel {
    pub(super) page_size: u64,
    pub(super) va_bits: u32,
    pub(super) t1sz: u32,
    pub(super) phys_offset: u64,
    pub(super) kimage_voffset: u64,
    pub(super) kerneloffset: u64,
    pub(super) swapper: u64,
    pub(super) max_physmem_bits: u32,
    pub(super) mem_section: Option<u64>,
}

impl Kernel {
    pub(super) fn text(&self) -> String {
        let mut text = format!(
            "OSRELEASE=6.1.0-test\nPAGESIZE={}\nNUMBER(VA_BITS)={}\nNUMBER(TCR_EL1_T1SZ)={:#x}\n\
             NUMBER(PHYS_OFFSET)={:#x}\nNUMBER(kimage_voffset)={:#x}\nKERNELOFFSET={:x}\n\
             SYMBOL(swapper_pg_dir)={:x}\nNUMBER(MAX_PHYSMEM_BITS)={}\n",
            self.page_size,
            self.va_bits,
            self.t1sz,
            self.phys_offset,
            self.kimage_voffset,
            self.kerneloffset,
            self.swapper,
            self.max_physmem_bits
        );
        if let Some(va) = self.mem_section {
            text += &format!("SYMBOL(mem_section)={va:x}\n");
        }
        text
    }

    pub(super) fn info(&self) -> VmcoreInfo {
        VmcoreInfo::parse(self.text().as_bytes()).unwrap()
    }

    /// Kernel memory through `open_as`, which checks the formulas against
    /// the tables.
    pub(super) fn open<'a>(&self, m: &'a MemPhys) -> Result<KernelMemory<'a, MemPhys>, XlatError> {
        KernelMemory::open_as(m, Machine::Aarch64, &self.info(), &[])
    }
}

/// Tables of geometry `g` for `k`, tables made from `next` up: the root
/// page mapped at `SYMBOL(swapper_pg_dir)` (where `check` looks), then
/// `maps` as (va, pa, depth).
pub(super) fn build(g: Geometry, k: &Kernel, next: u64, maps: &[(u64, u64, usize)]) -> Tables {
    let root = k.swapper.wrapping_sub(k.kimage_voffset);
    let mut t = Tables::new(g, root, next);
    t.map(k.swapper, root, g.shifts.len() - 1);
    for &(va, pa, depth) in maps {
        t.map(va, pa, depth);
    }
    t
}

/// Each (va, pa) of `expect` by the walk and by `translate` (the formula
/// for linear-map addresses).
pub(super) fn check_all(mem: &KernelMemory<'_, MemPhys>, expect: &[(u64, u64)]) {
    for &(va, pa) in expect {
        assert_eq!(mem.walk(va).unwrap(), pa, "walk {va:#x}");
        assert_eq!(mem.translate(va).unwrap(), pa, "translate {va:#x}");
    }
}

/// The level and entry address of the not-present entry met walking `va`.
pub(super) fn not_present(mem: &KernelMemory<'_, MemPhys>, va: u64) -> (Level, u64) {
    match mem.walk(va).unwrap_err() {
        XlatError::NotPresent { vaddr, level, entry_paddr, .. } if vaddr == va => (level, entry_paddr),
        other => panic!("{va:#x}: {other}"),
    }
}

/// 4 KiB pages, 48-bit VA: L0..L3 (docs/arm64.md §3).
pub(super) const G4K_48: Geometry =
    Geometry { granule: 4096, shifts: &[39, 30, 21, 12], root_entries: 512, enc: Enc::Pa48 };

/// The 6.1 fixture's image (`vmcore-arm64`, -cpu max): swapper_pg_dir at
/// pa 0x41858000, RAM from 0x40000000.
const ROOT: u64 = 0x4185_8000;
const SWAPPER: u64 = 0xffff_a533_7585_8000;
const KIMAGE_VOFFSET: u64 = 0xffff_a533_3400_0000;
const KERNELOFFSET: u64 = 0x2533_6c20_0000;
const MEM_SECTION: u64 = 0xffff_0000_0ff5_0380;
const VMALLOC: u64 = 0xffff_8000_0a12_3abc;

pub(super) fn fixture(max_physmem_bits: u32) -> Kernel {
    Kernel {
        page_size: 4096,
        va_bits: 48,
        t1sz: 16,
        phys_offset: 0x4000_0000,
        kimage_voffset: KIMAGE_VOFFSET,
        kerneloffset: KERNELOFFSET,
        swapper: SWAPPER,
        max_physmem_bits,
        mem_section: Some(MEM_SECTION),
    }
}

/// 4 KiB, 48-bit tables written entry by entry, indices worked out by
/// hand; the root's entries are written at each of `roots`.
fn hand_built_4k(roots: &[u64]) -> MemPhys {
    let mut m = MemPhys::default();
    let table = |pa: u64| TABLE | pa;
    for &root in roots {
        m.put_u64(root + 330 * 8, table(0x4100_1000)); // swapper_pg_dir: 330, 205, 428, 88
        m.put_u64(root + 256 * 8, table(0x4100_4000)); // VMALLOC: 256, 0, 80, 291
        m.put_u64(root, table(0x4100_7000)); // the linear map's first 512 GiB
    }
    m.put_u64(0x4100_1000 + 205 * 8, table(0x4100_2000));
    m.put_u64(0x4100_2000 + 428 * 8, table(0x4100_3000));
    m.put_u64(0x4100_3000 + 88 * 8, LEAF | ROOT | PAGE);
    m.put_u64(0x4100_4000, table(0x4100_5000));
    m.put_u64(0x4100_5000 + 80 * 8, table(0x4100_6000));
    m.put_u64(0x4100_6000 + 291 * 8, LEAF | 0x4_7654_3000 | PAGE);
    // Linear map: L1 0 a table, L1 3 a 1 GiB block at 0x1_0000_0000; in
    // L2, 65 a 2 MiB block at 0x4820_0000 and 127 the table of
    // MEM_SECTION's page (336: pa 0x4ff5_0000).
    m.put_u64(0x4100_7000, table(0x4100_8000));
    m.put_u64(0x4100_7000 + 3 * 8, LEAF | 0x1_0000_0000 | BLOCK);
    m.put_u64(0x4100_8000 + 65 * 8, LEAF | 0x4820_0000 | BLOCK);
    m.put_u64(0x4100_8000 + 127 * 8, table(0x4100_9000));
    m.put_u64(0x4100_9000 + 336 * 8, LEAF | 0x4ff5_0000 | PAGE | 1 << 52); // contiguous
    m
}

#[test]
fn arm64_4k_48_page_2m_and_1g_blocks() {
    // MAX_PHYSMEM_BITS 52 keeps 48-bit output addresses with 4 KiB pages:
    // SH (bits 9:8, 0b11 in every leaf) is no address.
    for max_physmem_bits in [48, 52] {
        let mut m = hand_built_4k(&[ROOT]);
        m.put_bytes(0x4_7654_3abc, b"arm64 ok");
        let mem = fixture(max_physmem_bits).open(&m).unwrap();
        let arch = mem.arch();
        assert_eq!((arch.machine(), arch.page_size(), arch.levels()), (Machine::Aarch64, 4096, 4));
        assert_eq!(
            (arch.root_paddr(), arch.phys_base(), arch.kerneloffset()),
            (ROOT, 0x4000_0000, KERNELOFFSET)
        );
        assert_eq!(arch.page_offset_info().source, PageOffsetSource::Vmcoreinfo);
        assert_eq!(arch.page_offset(), 0xffff_0000_0000_0000);
        let arm64 = arch.arm64().unwrap();
        assert_eq!((arm64.va_bits(), arm64.output_address()), ((48, 48), OutputAddress::Pa48));
        assert_eq!(arm64.page_end(), 0xffff_8000_0000_0000);
        assert_eq!(mem.walk(SWAPPER + 0x18).unwrap(), ROOT + 0x18);
        assert_eq!(mem.translate(VMALLOC).unwrap(), 0x4_7654_3abc, "page");
        assert_eq!(mem.read_u64(VMALLOC).unwrap(), u64::from_le_bytes(*b"arm64 ok"));
        for (va, pa, what) in [
            (0xffff_0000_0821_2345, 0x4821_2345, "2 MiB block"),
            (0xffff_0000_d234_5678, 0x1_1234_5678, "1 GiB block"),
            (MEM_SECTION, 0x4ff5_0380, "page, contiguous bit"),
        ] {
            assert_eq!(mem.walk(va).unwrap(), pa, "{what}, walk");
            assert_eq!(mem.translate(va).unwrap(), pa, "{what}, formula");
        }
        assert_eq!(mem.translate(0xffff_0000_0000_1000).unwrap(), 0x4000_1000, "formula without tables");
    }
}

#[test]
fn arm64_not_present_names_the_level() {
    let m = hand_built_4k(&[ROOT]);
    let mem = fixture(48).open(&m).unwrap();
    let cases = [
        (0xffff_0080_0000_0000, Level::Pgd, ROOT + 8),
        (0xffff_8000_4000_0000, Level::Pud, 0x4100_4008),
        (0xffff_0000_0000_1000, Level::Pmd, 0x4100_8000),
        (0xffff_8000_0a12_4000, Level::Pte, 0x4100_6000 + 292 * 8),
    ];
    for (va, level, entry_paddr) in cases {
        match mem.walk(va).unwrap_err() {
            XlatError::NotPresent { vaddr, level: l, entry: 0, entry_paddr: p } => {
                assert_eq!((vaddr, l, p), (va, level, entry_paddr));
            }
            other => panic!("{va:#x}: {other}"),
        }
    }
    let text = mem.walk(0xffff_0000_0000_1000).unwrap_err().to_string();
    assert_eq!(text, "translating 0xffff000000001000: PMD entry 0x0 at paddr 0x41008000 is not present");
    let err = mem.walk(0xfffe_ffff_ffff_f000).unwrap_err();
    assert!(matches!(err, XlatError::NonCanonical { levels: 4, .. }), "below PAGE_OFFSET: {err}");
}

#[test]
fn arm64_reserved_descriptors() {
    // 0b01 at level 3, and a 512 GiB block at level 0 (only with LPA2).
    let mut m = hand_built_4k(&[ROOT]);
    m.put_u64(0x4100_6000 + 291 * 8, LEAF | 0x4_7654_3000 | BLOCK);
    m.put_u64(ROOT + 8, LEAF | 0x80_0000_0000 | BLOCK);
    let mem = fixture(48).open(&m).unwrap();
    let cases = [
        (VMALLOC, Level::Pte, 0x4100_6000 + 291 * 8, LEAF | 0x4_7654_3001),
        (0xffff_0080_0000_0000, Level::Pgd, ROOT + 8, LEAF | 0x80_0000_0001),
    ];
    for (va, level, entry_paddr, entry) in cases {
        match mem.walk(va).unwrap_err() {
            XlatError::Reserved { vaddr, level: l, entry: e, entry_paddr: p } => {
                assert_eq!((vaddr, l, e, p), (va, level, entry, entry_paddr));
            }
            other => panic!("{va:#x}: {other}"),
        }
    }
    assert!(mem.walk(VMALLOC).unwrap_err().to_string().ends_with("is a reserved descriptor"));
}

#[test]
fn arm64_formulas_checked_against_the_tables() {
    // PHYS_OFFSET 2 MiB off: the linear map at mem_section disagrees.
    let m = hand_built_4k(&[ROOT, ROOT + 0x1000]);
    let wrong = Kernel { phys_offset: 0x4020_0000, ..fixture(48) };
    match wrong.open(&m).unwrap_err() {
        XlatError::Inconsistent { what, vaddr, tables, formula } => {
            assert_eq!((vaddr, tables, formula), (MEM_SECTION, 0x4ff5_0380, 0x5015_0380));
            assert!(what.contains("PHYS_OFFSET"), "{what}");
        }
        other => panic!("{other}"),
    }
    // kimage_voffset 4 KiB off finds a copy of the root, which maps
    // swapper_pg_dir at the real one.
    let wrong = Kernel { kimage_voffset: KIMAGE_VOFFSET - 0x1000, ..fixture(48) };
    match wrong.open(&m).unwrap_err() {
        XlatError::Inconsistent { what, vaddr, tables, formula } => {
            assert_eq!((vaddr, tables, formula), (SWAPPER, ROOT, ROOT + 0x1000));
            assert!(what.contains("kimage_voffset"), "{what}");
        }
        other => panic!("{other}"),
    }
    // Further off, the root is not in the dump at all.
    let wrong = Kernel { kimage_voffset: KIMAGE_VOFFSET - 0x10_0000, ..fixture(48) };
    let err = wrong.open(&m).unwrap_err();
    assert!(matches!(err, XlatError::TableRead { level: Level::Pgd, .. }), "{err}");
    // Without SYMBOL(mem_section) only the root is checked.
    let unchecked = Kernel { phys_offset: 0x4020_0000, mem_section: None, ..fixture(48) };
    assert_eq!(unchecked.open(&m).unwrap().translate(MEM_SECTION).unwrap(), 0x5015_0380);
}

#[test]
fn arm64_missing_and_bad_keys() {
    let text = fixture(48).text();
    let without = |drop: &dyn Fn(&str) -> bool| {
        let kept: String = text.lines().filter(|l| !drop(l)).map(|l| format!("{l}\n")).collect();
        VmcoreInfo::parse(kept.as_bytes()).unwrap()
    };
    let m = hand_built_4k(&[ROOT]);
    for (prefix, key) in [
        ("PAGESIZE=", "PAGESIZE"),
        ("NUMBER(VA_BITS)=", "NUMBER(VA_BITS)"),
        ("NUMBER(kimage_voffset)=", "NUMBER(kimage_voffset)"),
        ("SYMBOL(swapper_pg_dir)=", "SYMBOL(swapper_pg_dir)"),
        ("NUMBER(PHYS_OFFSET)=", "NUMBER(PHYS_OFFSET) (and no linear-map PT_LOAD)"),
    ] {
        let info = without(&|l| l.starts_with(prefix));
        assert!(matches!(Arm64::new(&info, &[]), Err(XlatError::MissingKey(k)) if k == key), "{prefix}");
        let err = KernelMemory::open_as(&m, Machine::Aarch64, &info, &[]).unwrap_err();
        assert_eq!(err.to_string(), format!("VMCOREINFO lacks {key}"));
    }
    // PHYS_OFFSET from a linear-map PT_LOAD (/proc/vmcore), not QEMU's p_vaddr = p_paddr.
    let load = |vaddr| LoadSegment { paddr: 0x4000_0000, vaddr, file_offset: 0, file_size: 0, mem_size: 0 };
    let info = without(&|l| l.starts_with("NUMBER(PHYS_OFFSET)="));
    let arch = Arm64::new(&info, &[load(0x4000_0000), load(0xffff_09b5_4000_0000)]).unwrap();
    assert_eq!(Paging::phys_base(&arch), -0x09b5_0000_0000);
    assert!(matches!(Arm64::new(&info, &[load(0x4000_0000)]), Err(XlatError::MissingKey(_))));
    // Optional keys: TCR_EL1_T1SZ (VA_BITS then), MAX_PHYSMEM_BITS, KERNELOFFSET.
    let info = without(&|l| l.contains("T1SZ") || l.contains("MAX_PHYSMEM") || l.starts_with("KERNELOFFSET"));
    let mem = KernelMemory::open(&m, &info, &[]).unwrap();
    assert_eq!((mem.arch().machine(), mem.arch().kerneloffset()), (Machine::Aarch64, 0));
    assert_eq!(mem.translate(VMALLOC).unwrap(), 0x4_7654_3abc);
    for (from, to, key) in [
        ("PAGESIZE=4096", "PAGESIZE=8192", "PAGESIZE"),
        ("T1SZ)=0x10", "T1SZ)=0x20", "NUMBER(TCR_EL1_T1SZ)"),
        ("OSRELEASE", "SYMBOL(_stext)=ffff000000010000\nOSRELEASE", "SYMBOL(_stext)"),
    ] {
        let info = VmcoreInfo::parse(text.replace(from, to).as_bytes()).unwrap();
        let err = Arm64::new(&info, &[]).unwrap_err();
        assert!(matches!(err, XlatError::BadKey { key: k, .. } if k == key), "{to}: {err}");
    }
}
