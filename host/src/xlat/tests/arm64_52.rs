//! arm64 with 52-bit virtual or physical addresses, over tables from the
//! builder of `arm64.rs`: 64 KiB pages with FEAT_LPA (PA bits 51:48 in
//! descriptor bits 15:12), 4 and 16 KiB pages with FEAT_LPA2 (bits 51:50 in
//! bits 9:8), and 52-bit kernels on 48-bit hardware (docs/arm64.md §3).

use super::super::{Level, OutputAddress, XlatError};
use super::arm64::{Enc, G4K_48, Geometry, Kernel, build, check_all, encode, not_present};

/// 64 KiB pages, 52-bit VA: a 1024-entry root (FEAT_LVA).
const G64K_52: Geometry =
    Geometry { granule: 65536, shifts: &[42, 29, 16], root_entries: 1024, enc: Enc::Lpa };

/// A kernel built for 52-bit VA and PA; `t1sz` 12 (52-bit hardware) or 16.
fn kernel(page_size: u64, t1sz: u32, phys_offset: u64, swapper: u64, root: u64, mem_section: u64) -> Kernel {
    Kernel {
        page_size,
        va_bits: 52,
        t1sz,
        phys_offset,
        kimage_voffset: swapper.wrapping_sub(root),
        kerneloffset: 0,
        swapper,
        max_physmem_bits: 52,
        mem_section: Some(mem_section),
    }
}

#[test]
fn arm64_descriptor_encodings_by_hand() {
    assert_eq!(encode(Enc::Pa48, 0x4ff5_0000), 0x4ff5_0000);
    assert_eq!(encode(Enc::Lpa, 0xf_edcb_a987_0000), 0xedcb_a987_f000);
    assert_eq!(encode(Enc::Lpa2, 0xe_3456_7890_1000), 0x2_3456_7890_1300);
}

#[test]
fn arm64_64k_52_lpa_output_addresses() {
    let k = kernel(
        65536,
        12,
        0xd_0000_0000_0000,
        0xffff_8000_0a5c_0000,
        0x8_0000_4a5c_0000,
        0xfff0_0000_2ff5_0380,
    );
    assert_eq!(k.kimage_voffset, 0xfff7_7fff_c000_0000);
    let maps = [
        (0xfff0_0400_0000_0000, 0xd_0400_0000_0000, 0), // 4 TiB block (52-bit PA only)
        (0xfff0_0000_2000_0000, 0xd_0000_2000_0000, 1), // 512 MiB block
        (0xffff_8000_1234_0000, 0xf_edcb_a987_0000, 2),
    ];
    // Tables above 2^48 too: their descriptors use the same encoding.
    let t = build(G64K_52, &k, 0xa_0000_0000_0000, &maps);
    let mem = k.open(&t.m).unwrap();
    let arm64 = mem.arch().arm64().unwrap();
    assert_eq!((arm64.va_bits(), arm64.output_address()), ((52, 52), OutputAddress::Lpa));
    assert_eq!((mem.arch().levels(), mem.arch().root_paddr()), (3, 0x8_0000_4a5c_0000));
    assert_eq!((mem.page_offset(), arm64.page_end()), (0xfff0_0000_0000_0000, 0xffff_8000_0000_0000));
    check_all(
        &mem,
        &[(0xfff0_0523_4567_89ab, 0xd_0523_4567_89ab), (0xfff0_0000_2ff5_0380, 0xd_0000_2ff5_0380)],
    );
    assert_eq!(mem.translate(0xffff_8000_1234_abcd).unwrap(), 0xf_edcb_a987_abcd);
    assert_eq!(not_present(&mem, 0xfff0_0800_0000_0000), (Level::Pgd, 0x8_0000_4a5c_0000 + 2 * 8));
    assert_eq!(not_present(&mem, 0xfff0_0000_4000_0000).0, Level::Pmd);
    // Read as 48-bit descriptors the root is out of reach.
    let pa48 = Kernel { max_physmem_bits: 48, ..k };
    let err = pa48.open(&t.m).unwrap_err();
    assert!(matches!(err, XlatError::BadKey { key: "SYMBOL(swapper_pg_dir)", .. }), "{err}");
}

#[test]
fn arm64_64k_52_kernel_on_48_bit_hardware() {
    // memstart_addr moved by _PAGE_OFFSET(48) − _PAGE_OFFSET(52): RAM at
    // 0x80000000 is at 0xffff000000000000.
    let phys_offset = 0xfff1_0000_8000_0000;
    let k = kernel(65536, 16, phys_offset, 0xffff_8000_0a5c_0000, 0x4a5c_0000, 0xffff_0000_2ff5_0380);
    let maps = [(0xffff_0000_2000_0000, 0xa000_0000, 1), (0xffff_8000_1234_0000, 0x7_89ab_0000, 2)];
    let t = build(G64K_52, &k, 0x4b00_0000, &maps);
    let mem = k.open(&t.m).unwrap();
    let arm64 = mem.arch().arm64().unwrap();
    assert_eq!((arm64.va_bits(), arm64.output_address()), ((52, 48), OutputAddress::Lpa));
    assert_eq!((mem.arch().levels(), mem.page_offset()), (3, 0xfff0_0000_0000_0000));
    assert_eq!(mem.arch().phys_base(), -0xe_ffff_8000_0000);
    check_all(&mem, &[(0xffff_0000_3fff_fff8, 0xbfff_fff8), (0xffff_0000_2ff5_0380, 0xaff5_0380)]);
    assert_eq!(mem.translate(0xffff_8000_1234_fff0).unwrap(), 0x7_89ab_fff0);
    // The root is indexed with 10 bits: entry 961, inside the 64 entries
    // TTBR1 points at (TTBR1_BADDR_4852_OFFSET = 960 entries = 0x1e00).
    assert_eq!(not_present(&mem, 0xffff_0400_0000_0000), (Level::Pgd, 0x4a5c_0000 + 0x1e08));
    match mem.translate(0xfff0_0000_0000_0000).unwrap_err() {
        XlatError::BeyondPhysMem { paddr, bits: 52, .. } => assert_eq!(paddr, phys_offset),
        other => panic!("{other}"),
    }
}

#[test]
fn arm64_4k_52_lpa2_five_levels() {
    let g = Geometry { granule: 4096, shifts: &[48, 39, 30, 21, 12], root_entries: 16, enc: Enc::Lpa2 };
    let root = 0xc_0000_4185_8000;
    let k = kernel(4096, 12, 0xc_0000_0000_0000, 0xffff_8000_0985_8000, root, 0xfff0_0000_4ff5_0380);
    assert_eq!(k.kimage_voffset, 0xfff3_7fff_c800_0000);
    let maps = [
        (0xfff0_0080_0000_0000, 0xc_0080_0000_0000, 1), // 512 GiB block at level 0 (LPA2 only)
        (0xfff0_0000_4000_0000, 0xc_0000_4000_0000, 2), // 1 GiB block
        (0xffff_8000_1234_5000, 0xe_3456_7890_1000, 4),
    ];
    let t = build(g, &k, 0xd_0000_0000_0000, &maps);
    let mem = k.open(&t.m).unwrap();
    let arm64 = mem.arch().arm64().unwrap();
    assert_eq!((arm64.va_bits(), arm64.output_address()), ((52, 52), OutputAddress::Lpa2));
    assert_eq!((mem.arch().levels(), mem.arch().root_paddr()), (5, root));
    check_all(
        &mem,
        &[
            (0xfff0_0092_3456_789a, 0xc_0092_3456_789a),
            (0xfff0_0000_7fff_fff8, 0xc_0000_7fff_fff8),
            (0xfff0_0000_4ff5_0380, 0xc_0000_4ff5_0380),
        ],
    );
    assert_eq!(mem.translate(0xffff_8000_1234_5ffc).unwrap(), 0xe_3456_7890_1ffc);
    assert_eq!(not_present(&mem, 0xfff1_0000_0000_0000), (Level::Pgd, root + 8));
    assert_eq!(not_present(&mem, 0xfff0_0100_0000_0000).0, Level::P4d);
    assert_eq!(not_present(&mem, 0xfff0_0000_8000_0000).0, Level::Pud);
    assert_eq!(not_present(&mem, 0xffff_8000_1240_0000).0, Level::Pmd);
}

#[test]
fn arm64_16k_52_lpa2_64g_block() {
    let g = Geometry { granule: 16384, shifts: &[47, 36, 25, 14], root_entries: 32, enc: Enc::Lpa2 };
    let root = 0xc_0000_4a5c_4000;
    let k = kernel(16384, 12, 0xc_0000_0000_0000, 0xffff_c000_0a5c_4000, root, 0xfff0_0000_02ff_0380);
    let maps = [
        (0xfff0_0010_0000_0000, 0xc_0010_0000_0000, 1), // 64 GiB block (LPA2 only)
        (0xfff0_0000_0200_0000, 0xc_0000_0200_0000, 2), // 32 MiB block
        (0xffff_c000_1234_4000, 0xe_3456_7890_4000, 3),
    ];
    let t = build(g, &k, 0xd_0000_0000_0000, &maps);
    let mem = k.open(&t.m).unwrap();
    let arm64 = mem.arch().arm64().unwrap();
    assert_eq!((mem.arch().levels(), arm64.output_address()), (4, OutputAddress::Lpa2));
    assert_eq!(arm64.page_end(), 0xffff_c000_0000_0000, "VA_BITS_MIN 47 with 16 KiB pages");
    check_all(
        &mem,
        &[(0xfff0_0012_3456_789a, 0xc_0012_3456_789a), (0xfff0_0000_02ff_0380, 0xc_0000_02ff_0380)],
    );
    assert_eq!(mem.translate(0xffff_c000_1234_7ffc).unwrap(), 0xe_3456_7890_7ffc);
    assert_eq!(not_present(&mem, 0xfff1_0000_0000_0000), (Level::Pgd, root + 2 * 8));
}

#[test]
fn arm64_4k_52_kernel_on_48_bit_hardware() {
    // No LPA2: the top level is folded, the walk follows vabits_actual.
    let phys_offset = 0xfff1_0000_4000_0000;
    let k = kernel(4096, 16, phys_offset, 0xffff_8000_0985_8000, 0x4185_8000, 0xffff_0000_002f_0380);
    let t = build(G4K_48, &k, 0x4300_0000, &[(0xffff_0000_0020_0000, 0x4020_0000, 2)]);
    let mem = k.open(&t.m).unwrap();
    let arm64 = mem.arch().arm64().unwrap();
    assert_eq!((arm64.va_bits(), arm64.output_address()), ((52, 48), OutputAddress::Pa48));
    assert_eq!((mem.arch().levels(), mem.page_offset()), (4, 0xfff0_0000_0000_0000));
    check_all(&mem, &[(0xffff_0000_003f_fff8, 0x403f_fff8), (0xffff_0000_002f_0380, 0x402f_0380)]);
    // Below 2^64 − 2^48 the hardware translates nothing; the 48-bit
    // indices would alias 0xffff000000200000.
    let err = mem.walk(0xfff8_0000_0020_0000).unwrap_err();
    assert!(matches!(err, XlatError::NonCanonical { levels: 4, .. }), "{err}");
}
