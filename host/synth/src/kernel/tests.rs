//! The generated kernel structures, checked with a small independent
//! page-table walker over the ELF reader (the host's `xlat` tests do the
//! full translation).

use vmdump_format::elf::ElfVmcore;
use vmdump_format::phys::PhysMap;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::super::pagetable::{ENTRY_MASK, PAGE_PRESENT, PAGE_PSE};
use super::super::tests::verify_all_pages;
use super::super::{SynthSpec, summarize, to_vec};
use super::*;

struct Core<'a> {
    image: &'a [u8],
    map: PhysMap,
    layout: Arc<KernelLayout>,
}

impl Core<'_> {
    fn read_u64(&self, paddr: u64) -> u64 {
        let mut page = vec![0u8; 4096];
        assert!(self.map.read_page(self.image, paddr / 4096, &mut page).unwrap(), "{paddr:#x} is RAM");
        let at = (paddr % 4096) as usize;
        u64::from_le_bytes(page[at..at + 8].try_into().unwrap())
    }

    /// Walks the tables from `init_top_pgt` (found with the image formula).
    fn walk(&self, va: u64) -> u64 {
        let l = &self.layout;
        let mut table = (l.init_top_pgt - START_KERNEL_MAP).checked_add_signed(l.phys_base).unwrap();
        let shifts: &[u32] = if l.five_level { &[48, 39, 30, 21, 12] } else { &[39, 30, 21, 12] };
        for &shift in shifts {
            let entry = self.read_u64(table + ((va >> shift) & 511) * 8);
            assert_ne!(entry & PAGE_PRESENT, 0, "{va:#x}: level {shift} not present");
            assert_eq!(entry & l.sme_mask, l.sme_mask, "C-bit set");
            let frame = entry & ENTRY_MASK & !l.sme_mask;
            let low = (1u64 << shift) - 1;
            if entry & PAGE_PSE != 0 || shift == 12 {
                return (frame & !low) + (va & low);
            }
            table = frame;
        }
        unreachable!()
    }
}

fn kernel_spec(five_level: bool, kaslr: bool) -> SynthSpec {
    SynthSpec {
        ram_bytes: 300 << 20,
        data_percent: 3,
        seed: 0x1234 + u64::from(five_level) + 2 * u64::from(kaslr),
        kernel: Some(KernelSpec { five_level, kaslr, ..Default::default() }),
        ..Default::default()
    }
}

fn check_core(spec: &SynthSpec) {
    let image = to_vec(spec).unwrap();
    let summary = summarize(spec);
    assert_eq!(verify_all_pages(spec, &image), (summary.ram_pages, summary.zero_pages), "{spec:?}");
    let elf = ElfVmcore::parse(&image[..]).unwrap();
    let map = PhysMap::new(&elf.loads, 4096).unwrap();
    let layout = kernel_layout(spec).unwrap().unwrap();
    let info = elf.vmcoreinfo().unwrap().unwrap();
    check_vmcoreinfo(&info, &layout);
    let text = elf.loads[0];
    assert_eq!((text.vaddr, text.paddr), (layout.text_vaddr, layout.image_phys), "kernel text PT_LOAD");
    assert_eq!(elf.loads[1].vaddr - elf.loads[1].paddr, layout.page_offset, "RAM PT_LOADs in the direct map");
    let core = Core { image: &image, map, layout };
    check_walks(&core);
}

fn check_vmcoreinfo(info: &VmcoreInfo, l: &KernelLayout) {
    assert_eq!(info.symbol("init_top_pgt"), Some(l.init_top_pgt));
    assert_eq!(info.symbol("swapper_pg_dir"), Some(l.init_top_pgt));
    assert_eq!(info.symbol("mem_section"), Some(l.mem_section));
    assert_eq!(info.symbol("init_uts_ns"), Some(l.init_uts_ns));
    assert_eq!(info.phys_base(), Some(l.phys_base));
    assert_eq!(info.kerneloffset(), Some(l.kerneloffset));
    assert_eq!(info.number("pgtable_l5_enabled"), Some(i64::from(l.five_level)));
    assert_eq!(info.number("MAX_PHYSMEM_BITS"), Some(if l.five_level { 52 } else { 46 }));
    assert_eq!(info.number("sme_mask"), Some(l.sme_mask as i64));
    assert_eq!(info.size("mem_section"), Some(16));
    assert_eq!(info.length("mem_section"), Some(if l.five_level { 131_072 } else { 2048 }));
    assert_eq!(info.size("page"), Some(64));
}

fn check_walks(core: &Core) {
    let l = &core.layout;
    let image_pa = |va: u64| (va - START_KERNEL_MAP).checked_add_signed(l.phys_base).unwrap();
    for va in [l.init_top_pgt, l.init_uts_ns, l.mem_section_ptr, l.text_vaddr + 0xf_f123] {
        assert_eq!(core.walk(va), image_pa(va), "image {va:#x} mapped with 4 KiB pages");
    }
    assert_eq!(core.read_u64(image_pa(l.mem_section_ptr)), l.mem_section, "the mem_section variable");
    for pa in [0, 0x1ff_f000, 0x20_0000, 0x4a1_2345, 299 << 20] {
        assert_eq!(core.walk(l.page_offset + pa), pa, "direct map of {pa:#x}");
    }
    let roots = core.walk(l.mem_section);
    assert_eq!(roots, l.mem_section - l.page_offset);
    let root0 = core.read_u64(roots);
    assert_eq!(core.read_u64(roots + 8), 0, "one root for 3 sections");
    for nr in 0..4u64 {
        let entry = core.read_u64(core.walk(root0) + nr * MEM_SECTION_SIZE);
        let want = if nr < 3 { l.vmemmap_base | 0xf } else { 0 };
        assert_eq!(entry, want, "section {nr}");
    }
    assert_eq!(l.present_sections, [0, 1, 2]);
    assert_eq!(l.present_pfn_end(), 3 << 15);
    for pfn in [0u64, 0x7fff, 0x8000, 0x12c00 - 1] {
        let va = l.mem_map_of(pfn).unwrap();
        assert_eq!(va, l.vmemmap_base + pfn * 64);
        assert_eq!(core.read_u64(core.walk(va)), 0, "struct pages are zero for now");
    }
    let release = image_pa(l.init_uts_ns) + 130;
    let mut word = core.read_u64(release).to_le_bytes().to_vec();
    word.extend(core.read_u64(release + 8).to_le_bytes());
    assert_eq!(&word[..16], &OSRELEASE.as_bytes()[..16]);
}

#[test]
fn four_and_five_level_cores_with_and_without_kaslr() {
    for five_level in [false, true] {
        for kaslr in [false, true] {
            let spec = kernel_spec(five_level, kaslr);
            check_core(&spec);
            let l = kernel_layout(&spec).unwrap().unwrap();
            if kaslr {
                assert!(l.phys_base < 0 && l.kerneloffset > 0, "{l:?}");
                assert_ne!(l.page_offset, if five_level { PAGE_OFFSET_L5 } else { PAGE_OFFSET_L4 });
            } else {
                assert_eq!((l.phys_base, l.kerneloffset), (0, 0), "loaded at 16 MiB");
            }
        }
    }
}

#[test]
fn sme_rom_and_partial_tail() {
    let mut spec = kernel_spec(false, true);
    spec.partial_tail = true;
    spec.kernel = Some(KernelSpec { sme_mask: 1 << 47, bios_rom: true, ..spec.kernel.unwrap() });
    check_core(&spec);
    let s = summarize(&spec);
    let rom = s.loads.last().unwrap();
    assert_eq!((rom.paddr, rom.vaddr, rom.mem_size), (0xfffc_0000, 0, 0x4_0000));
    assert_eq!(s.max_pfn, 0x10_0000);
}

#[test]
fn kernel_pages_are_in_the_file_and_counted() {
    let spec = SynthSpec { data_percent: 0, ..kernel_spec(true, true) };
    let layout = kernel_layout(&spec).unwrap().unwrap();
    let pfns = layout.kernel_pfns();
    let nonzero = pfns.iter().filter(|&&p| layout.override_at(p) != Some(Override::Zero)).count() as u64;
    assert!(nonzero >= 8, "tables, roots, sections, uts, vars: {nonzero}");
    assert_eq!(summarize(&spec).data_pages, nonzero, "with data_percent 0 only kernel pages hold data");
    assert!(pfns.windows(2).all(|w| w[0] < w[1]), "no page placed twice");
}

#[test]
fn too_small_or_too_large_ram_is_refused() {
    let tiny = SynthSpec { ram_bytes: 2 << 20, ..kernel_spec(false, false) };
    assert_eq!(to_vec(&tiny).unwrap_err().kind(), io::ErrorKind::InvalidInput);
    let mut big = SynthSpec { ram_bytes: 5 << 30, data_percent: 0, ..kernel_spec(false, false) };
    big.kernel = Some(KernelSpec { bios_rom: true, ..Default::default() });
    let err = kernel_layout(&big).unwrap_err();
    assert!(err.to_string().contains("BIOS ROM"), "{err}");
}
