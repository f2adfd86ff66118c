//! Page-table walks over hand-built and builder-built tables.

use vmdump_format::elf::LoadSegment;
use vmdump_synth::pagetable::{MapSize, PageTables};

use super::super::{KernelMemory, Level, PageOffset, PageOffsetSource, START_KERNEL_MAP, X86_64, XlatError};
use super::{MemPhys, info};

const NX: u64 = 1 << 63;
const TABLE: u64 = 0x63; // present, RW, accessed, dirty
const LARGE: u64 = 0xe3; // ... and PSE

/// 4-level tables at 0x1000 (PGD), 0x2000 (PUD), 0x3000 (PMD), 0x4000
/// (PTE) for `0xffff888000203abc`, indices worked out by hand:
/// PGD 273, PUD 0, PMD 1, PTE 3.
fn hand_built_l4(sme: u64) -> MemPhys {
    let mut m = MemPhys::default();
    m.put_u64(0x1000 + 273 * 8, NX | sme | 0x2000 | TABLE);
    m.put_u64(0x2000, sme | 0x3000 | TABLE);
    m.put_u64(0x3000 + 8, sme | 0x4000 | TABLE);
    m.put_u64(0x4000 + 3 * 8, NX | sme | 0x7000_0000 | TABLE);
    // 2 MiB page at PMD index 2 with the PAT bit (12) set; 1 GiB page at PUD 5.
    m.put_u64(0x3000 + 2 * 8, NX | sme | 0x4000_0000 | 0x1000 | LARGE);
    m.put_u64(0x2000 + 5 * 8, sme | 0x1_4000_0000 | 0x1000 | LARGE);
    m
}

fn l4_memory(m: &MemPhys, sme_in_info: u64) -> KernelMemory<'_, MemPhys> {
    let arch = X86_64::new(&info(false, 0, START_KERNEL_MAP + 0x1000, sme_in_info), &[]).unwrap();
    KernelMemory::new(m, arch)
}

#[test]
fn four_level_4k_2m_1g() {
    let m = hand_built_l4(0);
    let mem = l4_memory(&m, 0);
    assert_eq!(mem.translate(0xffff_8880_0020_3abc).unwrap(), 0x7000_0abc);
    assert_eq!(mem.translate(0xffff_8880_0041_2345).unwrap(), 0x4001_2345, "2 MiB, PAT bit ignored");
    assert_eq!(mem.translate(0xffff_8881_4abc_d123).unwrap(), 0x1_4abc_d123, "1 GiB");
    assert_eq!(mem.walk(START_KERNEL_MAP + 0x1000).unwrap_err().to_string(), {
        "translating 0xffffffff80001000: PGD entry 0x0 at paddr 0x1ff8 is not present"
    });
    assert_eq!(mem.translate(START_KERNEL_MAP + 0x1234).unwrap(), 0x1234, "image: direct formula");
}

#[test]
fn not_present_names_each_level() {
    let va = 0xffff_8880_0020_3abcu64;
    let cases =
        [(Level::Pgd, 0x1000 + 273 * 8), (Level::Pud, 0x2000), (Level::Pmd, 0x3008), (Level::Pte, 0x4018)];
    for (level, entry_paddr) in cases {
        let mut m = hand_built_l4(0);
        m.put_u64(entry_paddr, 0x8000_0000_0000_0000 | 0x5000); // NX, frame, no present bit
        let err = l4_memory(&m, 0).translate(va).unwrap_err();
        match err {
            XlatError::NotPresent { vaddr, level: l, entry, entry_paddr: p } => {
                assert_eq!((vaddr, l, entry, p), (va, level, 0x8000_0000_0000_5000, entry_paddr));
            }
            other => panic!("{level}: {other}"),
        }
        let text = l4_memory(&m, 0).translate(va).unwrap_err().to_string();
        assert!(
            text.contains(&format!("{level} entry 0x8000000000005000 at paddr {entry_paddr:#x}")),
            "{text}"
        );
    }
}

#[test]
fn sme_mask_is_cleared_and_needed() {
    let sme = 1 << 47;
    let m = hand_built_l4(sme);
    assert_eq!(l4_memory(&m, sme).translate(0xffff_8880_0020_3abc).unwrap(), 0x7000_0abc);
    assert_eq!(l4_memory(&m, sme).translate(0xffff_8881_4000_0001).unwrap(), 0x1_4000_0001);
    let err = l4_memory(&m, 0).translate(0xffff_8880_0020_3abc).unwrap_err();
    assert!(matches!(err, XlatError::TableRead { level: Level::Pud, .. }), "C-bit kept: {err}");
}

#[test]
fn five_level_by_hand() {
    // 0xff11_0000_0020_3abc: PGD 273, P4D 0, PUD 0, PMD 1, PTE 3.
    let mut m = MemPhys::default();
    m.put_u64(0x1000 + 273 * 8, 0x2000 | TABLE);
    m.put_u64(0x2000, 0x3000 | TABLE);
    m.put_u64(0x3000, 0x4000 | TABLE);
    m.put_u64(0x4000 + 8, 0x5000 | TABLE);
    m.put_u64(0x5000 + 3 * 8, NX | 0x9000 | TABLE);
    let arch = X86_64::new(&info(true, 0, START_KERNEL_MAP + 0x1000, 0), &[]).unwrap();
    let mem = KernelMemory::new(&m, arch);
    assert_eq!(mem.translate(0xff11_0000_0020_3abc).unwrap(), 0x9abc);
    let err = mem.translate(0xff11_0080_0000_0000).unwrap_err(); // P4D index 1
    assert!(matches!(err, XlatError::NotPresent { level: Level::P4d, entry_paddr: 0x2008, .. }), "{err}");
    let err = mem.translate(0xff12_0000_0000_0000).unwrap_err();
    assert!(matches!(err, XlatError::NotPresent { level: Level::Pgd, .. }), "{err}");
    let err = mem.translate(0xff00_0000_0000_0000u64 ^ (1 << 57)).unwrap_err();
    assert!(matches!(err, XlatError::NonCanonical { levels: 5, .. }), "{err}");
    let four = l4_memory(&m, 0);
    assert!(matches!(four.translate(0xff11_0000_0020_3abc), Err(XlatError::NonCanonical { levels: 4, .. })));
}

#[test]
fn kaslr_negative_phys_base() {
    let (koff, phys_base) = (0x2280_0000u64, -0x1880_0000i64);
    let root = START_KERNEL_MAP + 0x100_0000 + koff + 0x8_0000;
    let arch = X86_64::new(&info(false, phys_base, root, 0), &[]).unwrap();
    assert_eq!(arch.root_paddr(), 0xb08_0000);
    let m = MemPhys::default();
    let mem = KernelMemory::new(&m, arch);
    assert_eq!(mem.translate(START_KERNEL_MAP + 0x2380_0123).unwrap(), 0xb00_0123);
    let err = mem.translate(START_KERNEL_MAP + 0x1000).unwrap_err();
    assert!(matches!(err, XlatError::KernelImage { phys_base: -0x1880_0000, .. }), "{err}");
    let low_root = info(false, phys_base, START_KERNEL_MAP + 0x1000, 0);
    assert!(matches!(X86_64::new(&low_root, &[]), Err(XlatError::BadKey { .. })));
}

/// Tables from the generator's builder, read back by the walker.
fn builder_memory(five_level: bool, sme: u64) -> (MemPhys, X86_64) {
    let mut next = 0x10_0000u64;
    let mut alloc = || {
        next += 0x1000;
        Some(next)
    };
    let mut pt = PageTables::new(five_level, 0x1000, sme);
    let base = if five_level { 0xff11_0000_0000_0000 } else { 0xffff_8880_0000_0000u64 };
    pt.map_range(base, 0, 0x20_0000, MapSize::Page4K, &mut alloc).unwrap();
    pt.map_range(base + 0x20_0000, 0x20_0000, 0x3fe0_0000, MapSize::Page2M, &mut alloc).unwrap();
    pt.map_range(base + (1 << 30), 1 << 30, 2 << 30, MapSize::Page1G, &mut alloc).unwrap();
    let mut m = MemPhys::default();
    for (pa, bytes) in pt.pages() {
        m.put_page(pa, bytes);
    }
    let arch = X86_64::new(&info(five_level, 0, START_KERNEL_MAP + 0x1000, sme), &[]).unwrap();
    (m, arch)
}

#[test]
fn builder_tables_all_sizes_both_modes() {
    for five_level in [false, true] {
        let (m, arch) = builder_memory(five_level, 1 << 51);
        let mem = KernelMemory::new(&m, arch);
        let base = arch.page_offset();
        for pa in [0u64, 0xfff, 0x1f_f008, 0x20_0000, 0x3fff_fff8, 0x4000_0000, 0xbfff_fff8] {
            assert_eq!(mem.translate(base + pa).unwrap(), pa, "five_level {five_level}, pa {pa:#x}");
        }
        let err = mem.translate(base + (3 << 30)).unwrap_err();
        assert!(matches!(err, XlatError::NotPresent { level: Level::Pud, .. }), "{err}");
        let found = PageOffset::scan(&mem).unwrap().unwrap();
        assert_eq!((found.value, found.source), (base, PageOffsetSource::PageTables));
    }
}

#[test]
fn table_cache_avoids_rereads() {
    let (m, arch) = builder_memory(true, 0);
    let mem = KernelMemory::new(&m, arch);
    let base = arch.page_offset();
    mem.translate(base + 0x1000).unwrap();
    let first = m.reads();
    assert_eq!(first, 5, "one read per level");
    for pa in (0x2000..0x20_0000).step_by(0x1000) {
        mem.translate(base + pa).unwrap();
    }
    assert_eq!(m.reads(), first, "same five table pages");
    let (hits, misses) = mem.table_cache_stats();
    assert_eq!((hits, misses), (5 * 510, 5));
}

#[test]
fn read_virt_splits_at_pages() {
    let mut next = 0x10_0000u64;
    let mut alloc = || {
        next += 0x1000;
        Some(next)
    };
    let mut pt = PageTables::new(false, 0x1000, 0);
    let va = 0xffff_c900_0000_0000u64;
    pt.map(va, 0x9_0000, MapSize::Page4K, &mut alloc).unwrap();
    pt.map(va + 0x1000, 0x5_0000, MapSize::Page4K, &mut alloc).unwrap();
    let mut m = MemPhys::default();
    for (pa, bytes) in pt.pages() {
        m.put_page(pa, bytes);
    }
    m.put_bytes(0x9_0ffc, b"abcd");
    m.put_bytes(0x5_0000, b"efgh");
    let arch = X86_64::new(&info(false, 0, START_KERNEL_MAP + 0x1000, 0), &[]).unwrap();
    let mem = KernelMemory::new(&m, arch);
    let mut buf = [0u8; 8];
    mem.read_virt(va + 0xffc, &mut buf).unwrap();
    assert_eq!(&buf, b"abcdefgh");
    assert_eq!(mem.read_u64(va + 0xffc).unwrap(), u64::from_le_bytes(*b"abcdefgh"));
    let err = mem.read_virt(va + 0x1ffc, &mut buf).unwrap_err();
    assert!(
        matches!(err, XlatError::NotPresent { vaddr, level: Level::Pte, .. } if vaddr == va + 0x2000),
        "{err}"
    );
    m.pages.remove(&0x50);
    let mem = KernelMemory::new(&m, arch);
    let err = mem.read_virt(va + 0x1000, &mut buf).unwrap_err();
    assert!(matches!(err, XlatError::VirtRead { paddr: 0x5_0000, .. }), "{err}");
}

#[test]
fn page_offset_from_loads() {
    let load =
        |vaddr, paddr| LoadSegment { paddr, vaddr, file_offset: 0, file_size: 0x1000, mem_size: 0x1000 };
    let sk = [
        load(0xffff_ffff_a380_0000, 0xb00_0000),
        load(0xffff_8949_c010_0000, 0x10_0000),
        load(0xffff_8949_df00_0000, 0x1f00_0000),
    ];
    let found = PageOffset::from_loads(&sk).unwrap();
    assert_eq!((found.value, found.source), (0xffff_8949_c000_0000, PageOffsetSource::PtLoad));
    assert_eq!(PageOffset::from_loads(&[load(0, 0), load(0xfffc_0000, 0xfffc_0000)]), None, "QEMU p_vaddr");
    assert_eq!(PageOffset::from_loads(&sk[..1]), None, "kernel text only");
}
