//! ppc64le translation over Linux page tables built by hand from the
//! Book3S-64 entry format (docs/ppc64.md §3), never by the code under
//! test: big-endian entries, `_PAGE_PRESENT` (63), `_PAGE_PTE` (62), a
//! table's next-level base with the radix NLS in its low bits. The level
//! shifts of each mode are written out per case from docs/ppc64.md's
//! table; expected addresses are worked out by hand. The real kernel
//! (bookworm's 6.1, radix, 64 KiB pages) is judged by
//! scripts/make-kdump-fixture.sh and tests/ppc64_fixture.rs.

use std::collections::HashMap;

use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::super::{KernelMemory, Level, Mmu, Paging, PhysRead, Ppc64, XlatError};
use super::MemPhys;

const PRESENT: u64 = 1 << 63;
const LEAF: u64 = 1 << 62;
/// Leaf attributes a kernel mapping carries: accessed, dirty, read, write
/// (`_PAGE_ACCESSED | _PAGE_DIRTY | _PAGE_RW`), privileged.
const ATTRS: u64 = 0x0000_0000_0000_018e;

/// Tables of one mode: `shifts[d]` is the span of an entry at depth `d`
/// (0: the PGD), `bits[d]` its index bits.
struct Mode {
    page_size: u64,
    shifts: [u32; 4],
    bits: [u32; 4],
    radix: bool,
}

const RADIX_64K: Mode = Mode { page_size: 65536, shifts: [39, 30, 21, 16], bits: [13, 9, 9, 5], radix: true };
const RADIX_4K: Mode = Mode { page_size: 4096, shifts: [39, 30, 21, 12], bits: [13, 9, 9, 9], radix: true };
const HASH_64K: Mode =
    Mode { page_size: 65536, shifts: [44, 34, 24, 16], bits: [8, 10, 10, 8], radix: false };
const HASH_4K: Mode = Mode { page_size: 4096, shifts: [37, 28, 21, 12], bits: [9, 9, 7, 9], radix: false };

/// Page tables in memory; tables are placed from `next` up, each aligned
/// to its own size.
struct Tables {
    m: MemPhys,
    mode: &'static Mode,
    root: u64,
    next: u64,
    children: HashMap<(u64, u64), u64>,
}

impl Tables {
    fn new(mode: &'static Mode, root: u64, next: u64) -> Self {
        let mut m = MemPhys::with_page_size(mode.page_size);
        m.put_bytes(root, &[0; 8]);
        Tables { m, mode, root, next, children: HashMap::new() }
    }

    fn put_be(&mut self, paddr: u64, value: u64) {
        self.m.put_bytes(paddr, &value.to_be_bytes());
    }

    /// The entry address at `depth` for `va`, making the tables above it.
    fn slot(&mut self, va: u64, depth: usize) -> u64 {
        let mut table = self.root;
        for d in 0..=depth {
            let index = (va >> self.mode.shifts[d]) & ((1 << self.mode.bits[d]) - 1);
            let slot = table + index * 8;
            if d == depth {
                return slot;
            }
            table = match self.children.get(&(table, index)) {
                Some(&child) => child,
                None => {
                    let size = 8u64 << self.mode.bits[d + 1];
                    let child = self.next.next_multiple_of(size);
                    self.next = child + size;
                    self.children.insert((table, index), child);
                    // the radix NLS: log2 of the next table's entries
                    let nls = if self.mode.radix { u64::from(self.mode.bits[d + 1]) } else { 0 };
                    self.put_be(slot, PRESENT | child | nls);
                    self.m.put_bytes(child, &[0; 8]);
                    child
                }
            };
        }
        unreachable!()
    }

    /// Maps `va` to `pa` with a leaf at `depth` (3: a page; 2, 1: 2 MiB
    /// or 1 GiB on radix).
    fn map(&mut self, va: u64, pa: u64, depth: usize) {
        let slot = self.slot(va, depth);
        self.put_be(slot, PRESENT | LEAF | ATTRS | pa);
    }
}

fn info(mode: &Mode, swapper: u64, extra: &str) -> VmcoreInfo {
    let text = format!(
        "OSRELEASE=6.1.0-test-powerpc64le\nPAGESIZE={}\nSYMBOL(swapper_pg_dir)={swapper:x}\n\
         NUMBER(RADIX_MMU)={}\nNUMBER(MAX_PHYSMEM_BITS)=51\nKERNELOFFSET=0\n{extra}",
        mode.page_size,
        u8::from(mode.radix)
    );
    VmcoreInfo::parse(text.as_bytes()).unwrap()
}

/// The same without `NUMBER(RADIX_MMU)` (kernels before 6.4).
fn untold(info: &VmcoreInfo) -> VmcoreInfo {
    let text: String = info
        .text()
        .lines()
        .filter(|l| !l.starts_with("NUMBER(RADIX_MMU)="))
        .map(|l| format!("{l}\n"))
        .collect();
    VmcoreInfo::parse(text.as_bytes()).unwrap()
}

fn check(mem: &KernelMemory<'_, MemPhys>, cases: &[(u64, u64)]) {
    for &(va, pa) in cases {
        assert_eq!(mem.translate(va).unwrap(), pa, "{va:#x}");
    }
}

#[test]
fn ppc64_radix_64k() {
    let mut t = Tables::new(&RADIX_64K, 0x0199_0000, 0x0400_0000);
    let module = 0xc008_0000_0123_0000;
    let vmemmap = 0xc00c_0000_0000_0000;
    t.map(module, 0x3f45_0000, 3);
    t.map(module + 0x1_0000, 0x0777_0000, 3);
    t.map(vmemmap, 0x3e00_0000, 2); // 2 MiB leaf in the PMD
    t.map(0xc00c_0000_4000_0000, 0x8000_0000, 1); // 1 GiB leaf in the PUD
    let info = info(&RADIX_64K, 0xc000_0000_0199_0000, "");
    let mem = KernelMemory::open(&t.m, &info, &[]).unwrap();
    let arch = mem.arch().ppc64().unwrap();
    assert_eq!((arch.mmu(), mem.page_size(), mem.arch().root_paddr()), (Mmu::Radix, 65536, 0x0199_0000));
    assert_eq!((mem.page_offset(), mem.arch().phys_base()), (0xc000_0000_0000_0000, 0));
    assert!(arch.vmemmap_list().is_none());
    check(
        &mem,
        &[
            (0xc000_0000_0000_0000, 0),
            (0xc000_0000_1234_5678, 0x1234_5678),
            (0xc007_ffff_ffff_fff8, 0x7_ffff_ffff_fff8),
            (module + 0xabc, 0x3f45_0abc),
            (module + 0x1_fff8, 0x0777_fff8),
            (vmemmap + 0x1f_fff0, 0x3e1f_fff0),
            (0xc00c_0000_7fff_0040, 0xbfff_0040),
        ],
    );
    // The walk ignores the linear-map formula: the image is not in these tables.
    match mem.walk(0xc000_0000_0000_1000).unwrap_err() {
        XlatError::NotPresent { level: Level::Pgd, entry: 0, entry_paddr: 0x0199_0000, .. } => {}
        other => panic!("{other}"),
    }
    match mem.translate(module + 0x2_0000).unwrap_err() {
        XlatError::NotPresent { level: Level::Pte, .. } => {}
        other => panic!("{other}"),
    }
    for va in [0x0000_0000_1000_0000, 0xc010_0000_0000_0000, 0x8000_0000_0000_0000] {
        assert!(matches!(mem.translate(va).unwrap_err(), XlatError::NonCanonical { .. }), "{va:#x}");
    }
}

#[test]
fn ppc64_radix_4k_and_entry_order() {
    let mut t = Tables::new(&RADIX_4K, 0x0200_0000, 0x0100_0000);
    let va = 0xc008_0001_0020_3000;
    t.map(va, 0x0001_2345_6000, 3);
    let info = info(&RADIX_4K, 0xc000_0000_0200_0000, "");
    let mem = KernelMemory::open(&t.m, &info, &[]).unwrap();
    check(&mem, &[(va + 0x18, 0x0001_2345_6018)]);
    // The same entries little-endian are not present (bit 63 is then in
    // the entry's first byte): the walk must read them big-endian.
    let pgd = 0x0200_0000 + ((va >> 39) & 0x1fff) * 8;
    let mut raw = [0u8; 8];
    t.m.read_phys(pgd, &mut raw).unwrap();
    assert_eq!(raw[0] & 0x80, 0x80, "the PGD entry is big-endian");
    t.m.put_bytes(pgd, &u64::from_be_bytes(raw).to_le_bytes());
    let mem = KernelMemory::open(&t.m, &info, &[]).unwrap();
    assert!(matches!(mem.translate(va).unwrap_err(), XlatError::NotPresent { level: Level::Pgd, .. }));
}

#[test]
fn ppc64_hash_64k_vmalloc_and_vmemmap_list() {
    let mut t = Tables::new(&HASH_64K, 0x0180_0000, 0x0300_0000);
    let module = 0xc008_0000_0004_0000;
    t.map(module, 0x0555_0000, 3);
    // vmemmap_list: two 16 MiB blocks, listed out of order, each a
    // struct vmemmap_backing { list (0), phys (8), virt_addr (16) } in the
    // linear map; mmu_psize_defs[4].shift (16-byte entries, shift at 0) = 24.
    let (head, first, second) = (0x0100_0000u64, 0x0110_0000u64, 0x0110_0040u64);
    let put = |t: &mut Tables, pa: u64, v: u64| t.m.put_u64(pa, v);
    put(&mut t, head, 0xc000_0000_0000_0000 | first);
    put(&mut t, first, 0xc000_0000_0000_0000 | second);
    put(&mut t, first + 8, 0x2100_0000);
    put(&mut t, first + 16, 0xc00c_0000_0100_0000);
    put(&mut t, second, 0);
    put(&mut t, second + 8, 0x2000_0000);
    put(&mut t, second + 16, 0xc00c_0000_0000_0000);
    t.m.put_bytes(0x0120_0000, &4u32.to_le_bytes()); // mmu_vmemmap_psize
    t.m.put_bytes(0x0130_0000 + 4 * 16, &24u32.to_le_bytes()); // mmu_psize_defs[4].shift
    let keys = "SYMBOL(vmemmap_list)=c000000001000000\nSYMBOL(mmu_vmemmap_psize)=c000000001200000\n\
                SYMBOL(mmu_psize_defs)=c000000001300000\nSIZE(vmemmap_backing)=32\n\
                OFFSET(vmemmap_backing.list)=0\nOFFSET(vmemmap_backing.phys)=8\n\
                OFFSET(vmemmap_backing.virt_addr)=16\nSIZE(mmu_psize_def)=16\nOFFSET(mmu_psize_def.shift)=0\n";
    let info = info(&HASH_64K, 0xc000_0000_0180_0000, keys);
    let mem = KernelMemory::open(&t.m, &info, &[]).unwrap();
    let arch = mem.arch().ppc64().unwrap();
    assert_eq!(arch.mmu(), Mmu::Hash);
    assert_eq!(arch.vmemmap_list().unwrap().blocks().len(), 2);
    check(
        &mem,
        &[
            (module + 0xfff8, 0x0555_fff8),
            (0xc00c_0000_0000_0040, 0x2000_0040),
            (0xc00c_0000_00ff_fff8, 0x20ff_fff8),
            (0xc00c_0000_0100_0000, 0x2100_0000),
            (0xc00c_0000_01ff_fff8, 0x21ff_fff8),
        ],
    );
    // Past the last block, vmemmap is not in a hash kernel's tables.
    assert!(mem.translate(0xc00c_0000_0200_0000).is_err());
    // Untold, the radix walk does not find the list's first block: hash.
    let told_by_list = untold(&info);
    let mem = KernelMemory::open(&t.m, &told_by_list, &[]).unwrap();
    assert_eq!(mem.arch().ppc64().unwrap().mmu(), Mmu::Hash);
    check(&mem, &[(module + 0xfff8, 0x0555_fff8), (0xc00c_0000_0100_0000, 0x2100_0000)]);
    // A hash kernel without the list cannot translate vmemmap: refused at once.
    let bare = self::info(&HASH_64K, 0xc000_0000_0180_0000, "");
    match KernelMemory::open(&t.m, &bare, &[]).unwrap_err() {
        XlatError::MissingKey(key) => assert!(key.contains("vmemmap_list"), "{key}"),
        other => panic!("{other}"),
    }
}

#[test]
fn ppc64_hash_4k_walk() {
    let mut t = Tables::new(&HASH_4K, 0x0010_0000, 0x0080_0000);
    let va = 0xc000_1234_5678_9000 | 0x0008_0000_0000_0000;
    t.map(va, 0x00ab_cdef_0000, 3);
    let keys = "SYMBOL(vmemmap_list)=c000000000200000\nSYMBOL(mmu_vmemmap_psize)=c000000000200008\n\
                SYMBOL(mmu_psize_defs)=c000000000200010\nSIZE(vmemmap_backing)=32\n\
                OFFSET(vmemmap_backing.list)=0\nOFFSET(vmemmap_backing.phys)=8\n\
                OFFSET(vmemmap_backing.virt_addr)=16\nSIZE(mmu_psize_def)=16\nOFFSET(mmu_psize_def.shift)=0\n";
    // one block at 0xc00c000000000000, 16 MiB (shift 24, psize index 0)
    t.m.put_u64(0x0020_0000, 0xc000_0000_0030_0000);
    t.m.put_u64(0x0020_0010, 24);
    t.m.put_u64(0x0030_0000, 0);
    t.m.put_u64(0x0030_0008, 0x0700_0000);
    t.m.put_u64(0x0030_0010, 0xc00c_0000_0000_0000);
    let info = info(&HASH_4K, 0xc000_0000_0010_0000, keys);
    let mem = KernelMemory::open(&t.m, &info, &[]).unwrap();
    check(&mem, &[(va | 0xff8, 0x00ab_cdef_0ff8), (0xc00c_0000_0000_1000, 0x0700_1000)]);
}

#[test]
fn ppc64_radix_list_checked_against_tables() {
    let keys = "SYMBOL(vmemmap_list)=c000000001000000\nSYMBOL(mmu_vmemmap_psize)=c000000001200000\n\
                SYMBOL(mmu_psize_defs)=c000000001300000\nSIZE(vmemmap_backing)=32\n\
                OFFSET(vmemmap_backing.list)=0\nOFFSET(vmemmap_backing.phys)=8\n\
                OFFSET(vmemmap_backing.virt_addr)=16\nSIZE(mmu_psize_def)=16\nOFFSET(mmu_psize_def.shift)=0\n";
    for (list_phys, ok) in [(0x3e00_0000u64, true), (0x3d00_0000, false)] {
        let mut t = Tables::new(&RADIX_64K, 0x0199_0000, 0x0400_0000);
        t.map(0xc00c_0000_0000_0000, 0x3e00_0000, 2);
        t.m.put_u64(0x0100_0000, 0xc000_0000_0110_0000);
        t.m.put_u64(0x0110_0000, 0);
        t.m.put_u64(0x0110_0008, list_phys);
        t.m.put_u64(0x0110_0010, 0xc00c_0000_0000_0000);
        t.m.put_bytes(0x0120_0000, &1u32.to_le_bytes());
        t.m.put_bytes(0x0130_0010, &21u32.to_le_bytes());
        let info = info(&RADIX_64K, 0xc000_0000_0199_0000, keys);
        // Untold, the list tells: radix where the tables map its first
        // block as it says, else hash (whose vmemmap is the list's).
        let mem = KernelMemory::open(&t.m, &untold(&info), &[]).unwrap();
        let (mmu, at) = if ok { (Mmu::Radix, 0x3e10_0000) } else { (Mmu::Hash, 0x3d10_0000) };
        assert_eq!(mem.arch().ppc64().unwrap().mmu(), mmu);
        check(&mem, &[(0xc00c_0000_0010_0000, at)]);
        match (KernelMemory::open(&t.m, &info, &[]), ok) {
            (Ok(mem), true) => {
                assert_eq!(mem.arch().ppc64().unwrap().vmemmap_list().unwrap().blocks().len(), 1);
                check(&mem, &[(0xc00c_0000_0010_0000, 0x3e10_0000)]);
            }
            (Err(XlatError::Inconsistent { tables: 0x3e00_0000, formula: 0x3d00_0000, .. }), false) => {}
            (other, _) => panic!("list at {list_phys:#x}: {other:?}"),
        }
    }
}

#[test]
fn ppc64_refusals() {
    let m = MemPhys::with_page_size(65536);
    let cases = [
        ("PAGESIZE=16384\nSYMBOL(swapper_pg_dir)=c000000001990000\nNUMBER(RADIX_MMU)=1\n", "PAGESIZE"),
        ("PAGESIZE=65536\nSYMBOL(swapper_pg_dir)=c008000001990000\nNUMBER(RADIX_MMU)=1\n", "swapper_pg_dir"),
        ("PAGESIZE=65536\nNUMBER(RADIX_MMU)=1\n", "swapper_pg_dir"),
    ];
    for (text, key) in cases {
        let info = VmcoreInfo::parse(format!("OSRELEASE=t\n{text}").as_bytes()).unwrap();
        let err = Ppc64::new(&info, &[]).unwrap_err();
        assert!(err.to_string().contains(key), "{text}: {err}");
        assert!(KernelMemory::open(&m, &info, &[]).is_err());
    }
    // Neither NUMBER(RADIX_MMU) nor a vmemmap_list: the MMU is unknown
    // (mmu_psize_defs names the machine).
    let info = untold(&info(&RADIX_64K, 0xc000_0000_0199_0000, "SYMBOL(mmu_psize_defs)=c000000001300000\n"));
    match KernelMemory::open(&m, &info, &[]).unwrap_err() {
        XlatError::MissingKey(key) => assert!(key.contains("RADIX_MMU"), "{key}"),
        other => panic!("{other}"),
    }
    let info = self::info(&RADIX_64K, 0xc000_0000_0199_0000, "");
    let arch = Ppc64::new(&info, &[]).unwrap();
    assert_eq!((arch.machine().name(), arch.levels()), ("ppc64le", 4));
}
