//! s390x translation over tables built by hand from z/Architecture's DAT
//! entry formats (docs/s390x.md §5), never by the code under test, stored
//! big-endian as the machine stores them: region entries (origin, TF
//! bits 7:6, TT bits 3:2, TL bits 1:0, I 0x20, FC 0x400 on the
//! region-third for a 2 GiB frame), segment entries (page-table origin,
//! TT 0, I 0x20, FC 0x400 for a 1 MiB frame), page entries (frame, I
//! 0x400). Every top table a kernel can have: the region-third (Linux
//! 6.1's below 4 TiB, the one Debian's kernel uses here), the
//! region-second and the region-first, which no kernel in the tests has.
//! Expected addresses are worked out by hand.

use vmdump_format::machine::Machine;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::super::{KernelMemory, Level, XlatError};
use super::MemPhys;

const TT_R1: u64 = 3 << 2;
const TT_R2: u64 = 2 << 2;
const TT_R3: u64 = 1 << 2;
/// The whole of the next table: TF 0, TL 3.
const WHOLE: u64 = 3;
const INVALID: u64 = 0x20;
const FC: u64 = 0x400;
const PAGE_INVALID: u64 = 0x400;

/// The root: Debian 6.1's swapper_pg_dir (docs/s390x.md §3).
const ROOT: u64 = 0x0129_0000;

fn put(m: &mut MemPhys, paddr: u64, entry: u64) {
    m.put_bytes(paddr, &entry.to_be_bytes());
}

/// An empty 2048-entry table of type `tt` at `origin` (16 KiB): every
/// entry invalid, as Linux leaves them.
fn empty_table(m: &mut MemPhys, origin: u64, tt: u64) {
    for i in 0..2048 {
        put(m, origin + i * 8, tt | INVALID);
    }
}

fn info(extra: &str) -> VmcoreInfo {
    let text = format!("OSRELEASE=6.1.0-test-s390x\nPAGESIZE=4096\nSYMBOL(swapper_pg_dir)={ROOT:x}\n{extra}");
    VmcoreInfo::parse(text.as_bytes()).unwrap()
}

/// A region-third top table (3 levels): the identity map's first 1 MiB
/// through a segment table's large frame, a 4 KiB page through a page
/// table, a 2 GiB region-third frame, and invalid entries at each level.
fn three_levels() -> MemPhys {
    let mut m = MemPhys::with_page_size(4096);
    let (segments, pages) = (0x0200_0000u64, 0x0201_0000u64);
    empty_table(&mut m, ROOT, TT_R3);
    empty_table(&mut m, segments, 0);
    // R3 index 0 (addresses below 2 GiB): the segment table.
    put(&mut m, ROOT, segments | TT_R3 | WHOLE);
    // R3 index 2 (4 GiB..6 GiB): a 2 GiB frame at 10 GiB.
    put(&mut m, ROOT + 2 * 8, 0x2_8000_0000 | TT_R3 | FC);
    // Segment 0: a 1 MiB frame at physical 0x0050_0000.
    put(&mut m, segments, 0x0050_0000 | FC);
    // Segment 5 (0x0050_0000..0x0060_0000): a page table of 256 entries.
    put(&mut m, segments + 5 * 8, pages);
    for i in 0..256 {
        put(&mut m, pages + i * 8, PAGE_INVALID);
    }
    put(&mut m, pages + 0x23 * 8, 0x7654_3000 | 0x001); // a software bit below the frame
    m
}

#[test]
fn region_third_top_large_frames_and_pages() {
    let m = three_levels();
    let mem = KernelMemory::open_as(&m, Machine::S390x, &info(""), &[]).unwrap();
    assert_eq!(mem.arch().machine().name(), "s390x");
    assert_eq!(mem.arch().root_paddr(), ROOT);
    for (va, pa) in [
        (0x0000_0abc, 0x0050_0abc),     // 1 MiB frame
        (0x000f_fff8, 0x005f_fff8),     // its last bytes
        (0x0052_3456, 0x7654_3456),     // page table, index 0x23
        (0x1_0000_0000, 0x2_8000_0000), // 2 GiB frame
        (0x1_7fff_ffff, 0x2_ffff_ffff), // its last byte
        (0x1_2345_6789, 0x2_8000_0000 + 0x2345_6789),
    ] {
        assert_eq!(mem.translate(va).unwrap(), pa, "{va:#x}");
    }
}

#[test]
fn region_third_top_errors_name_the_level() {
    let m = three_levels();
    let mem = KernelMemory::open_as(&m, Machine::S390x, &info(""), &[]).unwrap();
    let level = |va: u64| match mem.translate(va).unwrap_err() {
        XlatError::NotPresent { level, .. } => Some(level),
        _ => None,
    };
    assert_eq!(level(0x8000_0000), Some(Level::Pud), "R3 index 1: invalid");
    assert_eq!(level(0x0010_0000), Some(Level::Pmd), "segment 1: invalid");
    assert_eq!(level(0x0050_0000), Some(Level::Pte), "page 0 of the page table: invalid");
    // The region-third table reaches 4 TiB: above it, no table.
    assert!(
        matches!(mem.translate(1 << 42), Err(XlatError::NonCanonical { levels: 3, .. })),
        "{:?}",
        mem.translate(1 << 42)
    );
}

#[test]
fn region_second_and_first_tops() {
    for top in [TT_R2, TT_R1] {
        let mut m = MemPhys::with_page_size(4096);
        let (r2, r3, segments) = (0x0300_0000u64, 0x0300_4000u64, 0x0300_8000u64);
        let va: u64 =
            if top == TT_R1 { 0x0020_0000_0000_0000 | 0x0000_0400_8012_3456 } else { 0x0000_0400_8012_3456 };
        // Indices: RFX 1 (R1 top only), RSX 1, RTX 1, SX 1, byte 0x23456.
        let (rfx, rsx, rtx, sx) = (va >> 53, (va >> 42) & 0x7ff, (va >> 31) & 0x7ff, (va >> 20) & 0x7ff);
        assert_eq!((rsx, rtx, sx), (1, 1, 1));
        if top == TT_R1 {
            assert_eq!(rfx, 1);
            empty_table(&mut m, ROOT, TT_R1);
            empty_table(&mut m, r2, TT_R2);
            put(&mut m, ROOT + rfx * 8, r2 | TT_R1 | WHOLE);
        } else {
            empty_table(&mut m, ROOT, TT_R2);
        }
        let r2_origin = if top == TT_R1 { r2 } else { ROOT };
        empty_table(&mut m, r3, TT_R3);
        empty_table(&mut m, segments, 0);
        put(&mut m, r2_origin + rsx * 8, r3 | TT_R2 | WHOLE);
        put(&mut m, r3 + rtx * 8, segments | TT_R3 | WHOLE);
        put(&mut m, segments + sx * 8, 0x0fe0_0000 | FC);
        let mem = KernelMemory::open_as(&m, Machine::S390x, &info(""), &[]).unwrap();
        assert_eq!(mem.translate(va).unwrap(), 0x0fe2_3456, "top TT {top:#x}");
        if top == TT_R2 {
            // The region-second table reaches 8 PiB.
            assert!(matches!(mem.translate(1 << 53), Err(XlatError::NonCanonical { levels: 4, .. })));
        }
    }
}

#[test]
fn a_table_the_entry_says_is_partial_and_an_entry_of_the_wrong_type() {
    let mut m = MemPhys::with_page_size(4096);
    let segments = 0x0200_0000u64;
    empty_table(&mut m, ROOT, TT_R3);
    empty_table(&mut m, segments, 0);
    // TF 0, TL 0: only the first quarter (entries 0..511) of the segment
    // table exists, as a kernel may allocate it.
    put(&mut m, ROOT, segments | TT_R3);
    put(&mut m, segments + 600 * 8, 0x0050_0000 | FC);
    put(&mut m, segments + 3 * 8, 0x0060_0000 | FC);
    // R3 index 3 holds an entry that says it is a region-second entry.
    put(&mut m, ROOT + 3 * 8, segments | TT_R2 | WHOLE);
    let mem = KernelMemory::open_as(&m, Machine::S390x, &info(""), &[]).unwrap();
    assert_eq!(mem.translate(3 << 20).unwrap(), 0x0060_0000);
    assert!(matches!(mem.translate(600 << 20), Err(XlatError::NotPresent { level: Level::Pmd, .. })));
    assert!(matches!(mem.translate(3 << 31), Err(XlatError::Reserved { level: Level::Pud, .. })));
}

#[test]
fn memory_reads_are_big_endian() {
    let mut m = three_levels();
    m.put_bytes(0x0050_0100, &0x0102_0304_0506_0708u64.to_be_bytes());
    let mem = KernelMemory::open_as(&m, Machine::S390x, &info(""), &[]).unwrap();
    assert_eq!(mem.read_u64(0x100).unwrap(), 0x0102_0304_0506_0708);
    assert_eq!(mem.read_u32(0x100).unwrap(), 0x0102_0304);
}

#[test]
fn parameters_are_checked() {
    let new = |extra: &str, root: u64| {
        let text = format!("PAGESIZE=4096\nSYMBOL(swapper_pg_dir)={root:x}\n{extra}");
        super::super::Arch::new(Machine::S390x, &VmcoreInfo::parse(text.as_bytes()).unwrap(), &[])
    };
    assert!(new("", ROOT).is_ok());
    assert!(matches!(new("", ROOT + 8), Err(XlatError::BadKey { key: "SYMBOL(swapper_pg_dir)", .. })));
    // A virtual-layout kernel's symbol, far above 2^46 bytes of memory.
    assert!(matches!(
        new("NUMBER(MAX_PHYSMEM_BITS)=46\n", 0x03ff_e000_0000_0000),
        Err(XlatError::BadKey { key: "SYMBOL(swapper_pg_dir)", .. })
    ));
    let pages = VmcoreInfo::parse(b"PAGESIZE=65536\nSYMBOL(swapper_pg_dir)=1290000\n").unwrap();
    assert!(matches!(
        super::super::Arch::new(Machine::S390x, &pages, &[]),
        Err(XlatError::BadKey { key: "PAGESIZE", .. })
    ));
    let none = VmcoreInfo::parse(b"PAGESIZE=4096\n").unwrap();
    assert!(matches!(
        super::super::Arch::new(Machine::S390x, &none, &[]),
        Err(XlatError::MissingKey("SYMBOL(swapper_pg_dir)"))
    ));
}

/// Debian 13's 6.12 (docs/s390x.md §5): the image at KERNELOFFSET,
/// loaded at KERNELOFFPHYS; the root is swapper_pg_dir's place in the
/// image, and the identity map starts at IDENTITYBASE.
#[test]
fn the_virtual_layout_of_6_10_and_later() {
    let new = |text: &str| {
        super::super::Arch::new(Machine::S390x, &VmcoreInfo::parse(text.as_bytes()).unwrap(), &[])
    };
    let layout = "OSRELEASE=6.12.113+deb13-s390x\nPAGESIZE=4096\nSYMBOL(swapper_pg_dir)=3fffff40000\n\
                  NUMBER(MAX_PHYSMEM_BITS)=46\nKERNELOFFSET=3fffe7f4000\n";
    let arch = new(&format!("{layout}KERNELOFFPHYS=8f4000\nIDENTITYBASE=40000000000\n")).unwrap();
    // 0x3fffff40000 − 0x3fffe7f4000 = 0x174c000 into the image, which
    // starts at physical 0x8f4000.
    assert_eq!(arch.root_paddr(), 0x0204_0000);
    assert_eq!(arch.page_offset_info().value, 0x400_0000_0000);
    assert_eq!(arch.kerneloffset(), 0x3ff_fe7f_4000);
    // 6.10 and later without the image's physical start: refused, not
    // taken for a physical root (this one is below 2^46).
    assert!(matches!(new(layout), Err(XlatError::MissingKey("KERNELOFFPHYS"))));
    assert!(matches!(
        new(&format!("{layout}KERNELOFFPHYS=8f4000\n")),
        Err(XlatError::MissingKey("IDENTITYBASE"))
    ));
    // A symbol below the image's start.
    assert!(matches!(
        new(&format!("{layout}KERNELOFFPHYS=8f4000\nIDENTITYBASE=0\n").replace("3fffff40000", "1000")),
        Err(XlatError::BadKey { key: "SYMBOL(swapper_pg_dir)", .. })
    ));
    // Before 6.10: the symbol is the root's physical address, the identity
    // map from 0.
    let old =
        new("OSRELEASE=6.1.0-50-s390x\nPAGESIZE=4096\nSYMBOL(swapper_pg_dir)=1290000\nKERNELOFFSET=0\n")
            .unwrap();
    assert_eq!((old.root_paddr(), old.page_offset_info().value), (ROOT, 0));
}
