//! arm64 translation with the builder of `arm64.rs`: 4 KiB pages with
//! 39-bit VA and a randomised (negative) PHYS_OFFSET, 16 KiB and 64 KiB
//! pages with 48 bits or fewer. Level shifts and root sizes are those of
//! docs/arm64.md §3's table, expected addresses worked out by hand.

use super::super::{Level, OutputAddress, XlatError};
use super::arm64::{BLOCK, Enc, G4K_48, Geometry, Kernel, LEAF, build, check_all, fixture, not_present};

/// A kernel with `page_size`-byte pages and `va_bits`-bit VA on hardware
/// of the same width, RAM from 0x40000000 at PAGE_OFFSET, swapper_pg_dir
/// at `swapper` (pa `root`).
fn kernel(page_size: u64, va_bits: u32, swapper: u64, root: u64, mem_section: u64) -> Kernel {
    Kernel {
        page_size,
        va_bits,
        t1sz: 64 - va_bits,
        phys_offset: 0x4000_0000,
        kimage_voffset: swapper.wrapping_sub(root),
        kerneloffset: 0,
        swapper,
        max_physmem_bits: 48,
        mem_section: Some(mem_section),
    }
}

#[test]
fn arm64_4k_48_negative_phys_offset() {
    // The kernel randomised the linear map (the a57 fixture's case first):
    // RAM at 0x40000000 sits at PAGE_OFFSET + `linear`, PHYS_OFFSET is
    // 0x40000000 − `linear`, modulo 2^64.
    let cases = [
        (0x09b5_4000_0000, 0xffff_f64b_0000_0000, -0x09b5_0000_0000),
        (0x7abc_c000_0000, 0xffff_8543_8000_0000, -0x7abc_8000_0000),
        (0x8000_0000, 0xffff_ffff_c000_0000, -0x4000_0000),
    ];
    for (linear, phys_offset, phys_base) in cases {
        let ram = 0xffff_0000_0000_0000 + linear;
        let k = Kernel {
            phys_offset,
            swapper: 0xffff_b9ff_e3a5_8000,
            kimage_voffset: 0xffff_b9ff_a200_0000,
            mem_section: Some(ram + 0xff5_0380),
            ..fixture(48)
        };
        let t = build(G4K_48, &k, 0x4300_0000, &[(ram, 0x4000_0000, 2), (ram + 0xff5_0000, 0x4ff5_0000, 3)]);
        let mem = k.open(&t.m).unwrap();
        assert_eq!(mem.arch().root_paddr(), 0x41a5_8000);
        assert_eq!(mem.arch().phys_base(), phys_base);
        check_all(&mem, &[(ram + 0x1234, 0x4000_1234), (ram + 0xff5_0380, 0x4ff5_0380)]);
        match mem.translate(0xffff_0000_0000_0000).unwrap_err() {
            XlatError::BeyondPhysMem { paddr, bits: 48, .. } => assert_eq!(paddr, phys_offset),
            other => panic!("PAGE_OFFSET: {other}"),
        }
    }
}

#[test]
fn arm64_4k_39_three_levels() {
    let g = Geometry { granule: 4096, shifts: &[30, 21, 12], root_entries: 512, enc: Enc::Pa48 };
    let k = Kernel {
        va_bits: 39,
        t1sz: 25,
        phys_offset: 0x8000_0000,
        swapper: 0xffff_ffc0_0985_8000,
        kimage_voffset: 0xffff_ffbf_8800_0000,
        mem_section: Some(0xffff_ff80_1234_5678),
        ..fixture(48)
    };
    let maps = [
        (0xffff_ff80_1234_5000, 0x9234_5000, 2),
        (0xffff_ff80_4000_0000, 0xc000_0000, 0), // 1 GiB block in the root
        (0xffff_ff80_0060_0000, 0x8060_0000, 1), // 2 MiB block
        (0xffff_ffc0_1000_0000, 0x1_2345_6000, 2),
    ];
    let t = build(g, &k, 0x8200_0000, &maps);
    let mem = k.open(&t.m).unwrap();
    assert_eq!((mem.arch().levels(), mem.arch().root_paddr()), (3, 0x8185_8000));
    assert_eq!(mem.page_offset(), 0xffff_ff80_0000_0000);
    assert_eq!(mem.arch().arm64().unwrap().page_end(), 0xffff_ffc0_0000_0000);
    check_all(
        &mem,
        &[
            (0xffff_ff80_1234_5678, 0x9234_5678),
            (0xffff_ff80_4abc_def0, 0xcabc_def0),
            (0xffff_ff80_0067_89ab, 0x8067_89ab),
        ],
    );
    assert_eq!(mem.translate(0xffff_ffc0_1000_0042).unwrap(), 0x1_2345_6042, "walked: above PAGE_END");
    assert_eq!(not_present(&mem, 0xffff_ff80_8000_0000), (Level::Pgd, 0x8185_8000 + 2 * 8));
    assert_eq!(not_present(&mem, 0xffff_ff80_0000_0000).0, Level::Pmd);
    assert_eq!(not_present(&mem, 0xffff_ff80_1234_6000).0, Level::Pte);
}

#[test]
fn arm64_16k_47_three_levels() {
    let g = Geometry { granule: 16384, shifts: &[36, 25, 14], root_entries: 2048, enc: Enc::Pa48 };
    let k = kernel(16384, 47, 0xffff_c000_0a5c_4000, 0x4a5c_4000, 0xffff_8000_02ff_0380);
    assert_eq!(k.kimage_voffset, 0xffff_bfff_c000_0000);
    let maps = [
        (0xffff_8000_0200_0000, 0x4200_0000, 1), // 32 MiB block
        (0xffff_c000_1234_4000, 0x5_6789_c000, 2),
    ];
    let t = build(g, &k, 0x4b00_0000, &maps);
    let mem = k.open(&t.m).unwrap();
    assert_eq!((mem.arch().page_size(), mem.arch().levels()), (16384, 3));
    assert_eq!(mem.page_offset(), 0xffff_8000_0000_0000);
    assert_eq!(mem.arch().arm64().unwrap().page_end(), 0xffff_c000_0000_0000);
    check_all(&mem, &[(0xffff_8000_03ab_cdef, 0x43ab_cdef), (0xffff_8000_02ff_0380, 0x42ff_0380)]);
    assert_eq!(mem.translate(0xffff_c000_1234_7ffc).unwrap(), 0x5_6789_fffc);
    assert_eq!(not_present(&mem, 0xffff_8010_0000_0000), (Level::Pgd, 0x4a5c_4000 + 8));
    assert_eq!(not_present(&mem, 0xffff_8000_0400_0000).0, Level::Pmd);
    assert_eq!(not_present(&mem, 0xffff_c000_1234_8000).0, Level::Pte);
}

#[test]
fn arm64_16k_48_two_entry_root() {
    let g = Geometry { granule: 16384, shifts: &[47, 36, 25, 14], root_entries: 2, enc: Enc::Pa48 };
    let k = kernel(16384, 48, 0xffff_8000_0a5c_4000, 0x4a5c_4000, 0xffff_0000_02ff_0380);
    let maps = [(0xffff_0000_0200_0000, 0x4200_0000, 2), (0xffff_8000_1234_4000, 0x5_6789_c000, 3)];
    let mut t = build(g, &k, 0x4b00_0000, &maps);
    // A 64 GiB block at level 1 needs LPA2.
    t.put(0xffff_0010_0000_0000, 1, LEAF | 0x10_0000_0000 | BLOCK);
    let mem = k.open(&t.m).unwrap();
    assert_eq!((mem.arch().levels(), mem.page_offset()), (4, 0xffff_0000_0000_0000));
    check_all(&mem, &[(0xffff_0000_03ab_cdef, 0x43ab_cdef)]);
    assert_eq!(mem.translate(0xffff_8000_1234_7ffc).unwrap(), 0x5_6789_fffc, "root entry 1");
    let err = mem.walk(0xffff_0010_0000_0000).unwrap_err();
    assert!(matches!(err, XlatError::Reserved { level: Level::Pud, .. }), "{err}");
    assert_eq!(not_present(&mem, 0xffff_0000_0400_0000).0, Level::Pmd);
    assert_eq!(not_present(&mem, 0xffff_8010_0000_0000).0, Level::Pud);
}

#[test]
fn arm64_64k_42_two_levels() {
    let g = Geometry { granule: 65536, shifts: &[29, 16], root_entries: 8192, enc: Enc::Pa48 };
    let k = kernel(65536, 42, 0xffff_fe00_0a5c_0000, 0x4a5c_0000, 0xffff_fc00_2ff5_0380);
    let maps = [
        (0xffff_fc00_2000_0000, 0x6000_0000, 0), // 512 MiB block in the root
        (0xffff_fe00_1234_0000, 0x7_89ab_0000, 1),
    ];
    let t = build(g, &k, 0x4b00_0000, &maps);
    let mem = k.open(&t.m).unwrap();
    assert_eq!((mem.arch().page_size(), mem.arch().levels()), (65536, 2));
    assert_eq!(mem.page_offset(), 0xffff_fc00_0000_0000);
    assert_eq!(mem.arch().arm64().unwrap().page_end(), 0xffff_fe00_0000_0000);
    check_all(&mem, &[(0xffff_fc00_3fff_fff8, 0x7fff_fff8), (0xffff_fc00_2ff5_0380, 0x6ff5_0380)]);
    assert_eq!(mem.translate(0xffff_fe00_1234_fff0).unwrap(), 0x7_89ab_fff0);
    assert_eq!(not_present(&mem, 0xffff_fc00_0000_0000), (Level::Pgd, 0x4a5c_0000));
    assert_eq!(not_present(&mem, 0xffff_fe00_1235_0000).0, Level::Pte);
}

#[test]
fn arm64_64k_48_three_levels_512m_block() {
    let g = Geometry { granule: 65536, shifts: &[42, 29, 16], root_entries: 64, enc: Enc::Pa48 };
    let k = kernel(65536, 48, 0xffff_8000_0a5c_0000, 0x4a5c_0000, 0xffff_0000_2ff5_0380);
    let maps = [(0xffff_0000_2000_0000, 0x6000_0000, 1), (0xffff_8000_1234_0000, 0x7_89ab_0000, 2)];
    let mut t = build(g, &k, 0x4b00_0000, &maps);
    // A 4 TiB block at level 1 needs 52-bit output addresses.
    t.put(0xffff_0400_0000_0000, 0, LEAF | 0x400_0000_0000 | BLOCK);
    let mem = k.open(&t.m).unwrap();
    let arm64 = mem.arch().arm64().unwrap();
    assert_eq!((mem.arch().levels(), arm64.output_address()), (3, OutputAddress::Pa48));
    check_all(&mem, &[(0xffff_0000_3fff_fff8, 0x7fff_fff8), (0xffff_0000_2ff5_0380, 0x6ff5_0380)]);
    assert_eq!(mem.translate(0xffff_8000_1234_fff0).unwrap(), 0x7_89ab_fff0);
    match mem.walk(0xffff_0400_0000_0000).unwrap_err() {
        XlatError::Reserved { level, entry_paddr, .. } => {
            assert_eq!((level, entry_paddr), (Level::Pgd, 0x4a5c_0008))
        }
        other => panic!("{other}"),
    }
    assert_eq!(not_present(&mem, 0xffff_0000_0000_0000).0, Level::Pmd);
    assert_eq!(not_present(&mem, 0xffff_0800_0000_0000), (Level::Pgd, 0x4a5c_0000 + 2 * 8));
}
