//! The section table over hand-placed `mem_section` structures with the
//! fixtures' geometry (SIZE(mem_section)=32, LENGTH(mem_section)=4096).

use vmdump_format::vmcoreinfo::VmcoreInfo;
use vmdump_synth::pagetable::{MapSize, PageTables};

use super::super::{
    KernelMemory, PAGE_OFFSET_L4, START_KERNEL_MAP, SectionGeometry, SectionTable, X86_64, XlatError,
};
use super::MemPhys;

const VMEMMAP: u64 = 0xffff_ea00_0000_0000;
const ROOTS: u64 = 0x1_0000;
const ROOT0: u64 = 0x1_1000;
const PTR_VAR: u64 = 0x3000; // a kernel variable holding the roots' address

fn text(symbol: u64, length: u64) -> String {
    format!(
        "PAGESIZE=4096\nSYMBOL(init_top_pgt)={:x}\nNUMBER(phys_base)=0\nNUMBER(pgtable_l5_enabled)=0\n\
         SYMBOL(mem_section)={symbol:x}\nLENGTH(mem_section)={length}\nSIZE(mem_section)=32\n\
         OFFSET(mem_section.section_mem_map)=0\nNUMBER(SECTION_SIZE_BITS)=27\nNUMBER(MAX_PHYSMEM_BITS)=46\n\
         SIZE(page)=64\n",
        START_KERNEL_MAP + 0x1000
    )
}

/// Direct map of the first 2 MiB; sections 0 and 3 present, 1 absent,
/// 2 present without a mem_map; `encoded3` is section 3's encoded pointer.
fn memory(encoded3: u64) -> MemPhys {
    let mut next = 0x10_0000u64;
    let mut pt = PageTables::new(false, 0x1000, 0);
    let mut alloc = || {
        next += 0x1000;
        Some(next)
    };
    pt.map_range(PAGE_OFFSET_L4, 0, 0x20_0000, MapSize::Page4K, &mut alloc).unwrap();
    let mut m = MemPhys::default();
    for (pa, bytes) in pt.pages() {
        m.put_page(pa, bytes);
    }
    m.put_u64(ROOTS, PAGE_OFFSET_L4 + ROOT0);
    m.put_u64(ROOT0, VMEMMAP | 0x3);
    m.put_u64(ROOT0 + 32, VMEMMAP); // not present
    m.put_u64(ROOT0 + 64, 0x1d); // present, no mem_map
    m.put_u64(ROOT0 + 96, encoded3 | 0x7);
    m.put_u64(PTR_VAR, PAGE_OFFSET_L4 + ROOTS);
    m
}

fn read(m: &MemPhys, text: &str, max_pfn: u64) -> Result<SectionTable, XlatError> {
    let info = VmcoreInfo::parse(text.as_bytes()).unwrap();
    let mem = KernelMemory::new(m, X86_64::new(&info, &[]).unwrap());
    SectionTable::read(&mem, &info, max_pfn)
}

#[test]
fn array_and_pointer_symbols() {
    let m = memory(VMEMMAP);
    for symbol in [PAGE_OFFSET_L4 + ROOTS, START_KERNEL_MAP + PTR_VAR] {
        let table = read(&m, &text(symbol, 4096), 0x1_ffda).unwrap();
        let nrs: Vec<u64> = table.sections().iter().map(|s| s.nr).collect();
        assert_eq!(nrs, [0, 3], "symbol {symbol:#x}");
        assert_eq!(table.present_pfn_end(), 0x2_0000);
        assert_eq!(table.mem_map_of(0x1_8005), Some(VMEMMAP + 0x1_8005 * 64));
        assert_eq!(table.mem_map_of(7), Some(VMEMMAP + 7 * 64));
        assert_eq!(table.mem_map_of(0x8000), None, "section 1 absent");
        assert_eq!(table.mem_map_of(0x1_0000), None, "section 2 has no mem_map");
        assert_eq!(table.mem_map_of(0x2_0000), None, "beyond the hint");
    }
    let only_first = read(&m, &text(PAGE_OFFSET_L4 + ROOTS, 4096), 0x8000).unwrap();
    assert_eq!(only_first.present_pfn_end(), 0x8000, "sections beyond the hint are not read");
}

/// Kernels with CONFIG_SPARSEMEM_VMEMMAP_PREINIT (Debian's 7.2) have six
/// flag bits: bit 5 (`SECTION_IS_VMEMMAP_PREINIT`) and bit 4
/// (`SECTION_TAINT_ZONE_DEVICE`) set must not move the mem_map.
#[test]
fn a_sixth_flag_bit_is_not_taken_for_the_pointer() {
    let m = memory(VMEMMAP | 0x30);
    let table = read(&m, &text(PAGE_OFFSET_L4 + ROOTS, 4096), 0x1_ffda).unwrap();
    assert_eq!(table.mem_map_of(0x1_8005), Some(VMEMMAP + 0x1_8005 * 64));
}

#[test]
fn bad_tables_are_typed_errors() {
    let m = memory(0x4000); // section 3's mem_map is a user address
    let err = read(&m, &text(PAGE_OFFSET_L4 + ROOTS, 4096), 0x2_0000).unwrap_err();
    let XlatError::MemSectionSymbol { as_array, .. } = &err else { panic!("{err}") };
    assert!(as_array.to_string().contains("section 3: mem_map 0x604000"), "{err}");
    let err = read(&m, &text(0x1234_5000, 4096), 0x2_0000).unwrap_err();
    assert!(err.to_string().contains("not a kernel address"), "{err}");
    let err = read(&memory(VMEMMAP), &text(PAGE_OFFSET_L4 + ROOTS, 2048), 0x2_0000).unwrap_err();
    assert!(matches!(err, XlatError::BadKey { key: "LENGTH(mem_section)", value: 2048, .. }), "{err}");
    let no_bits = text(PAGE_OFFSET_L4 + ROOTS, 4096).replace("NUMBER(SECTION_SIZE_BITS)=27\n", "");
    let err = read(&memory(VMEMMAP), &no_bits, 0x2_0000).unwrap_err();
    assert!(matches!(err, XlatError::MissingKey("NUMBER(SECTION_SIZE_BITS)")), "{err}");
    let err = read(&memory(VMEMMAP), &text(PAGE_OFFSET_L4 + ROOTS, 4096), 0).unwrap_err();
    assert!(err.to_string().contains("no present section"), "{err}");
}

#[test]
fn physical_addresses_up_to_riscv64s_56_bits() {
    // trixie's 6.12 riscv64 kernel on Sv57: 2^29 sections, 4194304 roots of
    // 128 sections (only those below the highest pfn are read).
    let sv57 = |bits: u32| {
        let length = (1u64 << (bits - 27)) / 128;
        text(PAGE_OFFSET_L4 + ROOTS, length)
            .replace("MAX_PHYSMEM_BITS)=46", &format!("MAX_PHYSMEM_BITS)={bits}"))
    };
    let info = VmcoreInfo::parse(sv57(56).as_bytes()).unwrap();
    let g = SectionGeometry::from_vmcoreinfo(&info).unwrap();
    assert_eq!((g.nr_mem_sections, g.nr_roots), (1 << 29, 4_194_304));
    let table = read(&memory(VMEMMAP), &sv57(56), 0x1_ffda).unwrap();
    assert_eq!(table.sections().iter().map(|s| s.nr).collect::<Vec<_>>(), [0, 3]);
    let info = VmcoreInfo::parse(sv57(57).as_bytes()).unwrap();
    let err = SectionGeometry::from_vmcoreinfo(&info).unwrap_err();
    assert!(matches!(err, XlatError::BadKey { key: "NUMBER(MAX_PHYSMEM_BITS)", value: 57, .. }), "{err}");
}
