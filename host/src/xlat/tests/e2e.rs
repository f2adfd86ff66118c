//! Whole synthetic vmcores (`SynthSpec::kernel`): written by the
//! generator, parsed by the ELF reader, translated here.

use std::sync::Arc;

use vmdump_format::ReadAt;
use vmdump_format::elf::ElfVmcore;
use vmdump_format::phys::PhysMap;
use vmdump_format::vmcoreinfo::VmcoreInfo;
use vmdump_synth::{self as synth, KernelLayout, KernelSpec, SynthSpec};

use super::super::{
    KernelMemory, PageOffsetSource, PhysRead, SectionTable, X86_64_PAGE_SIZE as PAGE_SIZE, XlatError,
};

/// Physical memory of an ELF vmcore: pages through [`PhysMap::read_page`].
pub(crate) struct ElfPhys<F: ReadAt> {
    pub(crate) file: F,
    pub(crate) map: PhysMap,
}

impl<F: ReadAt> PhysRead for ElfPhys<F> {
    fn read_phys(&self, paddr: u64, buf: &mut [u8]) -> Result<(), XlatError> {
        let at = (paddr % PAGE_SIZE) as usize;
        if at + buf.len() > PAGE_SIZE as usize {
            return Err(XlatError::PhysRead { paddr, len: buf.len(), cause: "crosses a page".into() });
        }
        let mut page = vec![0u8; PAGE_SIZE as usize];
        let ram = self
            .map
            .read_page(&self.file, paddr / PAGE_SIZE, &mut page)
            .map_err(|e| XlatError::PhysRead { paddr, len: buf.len(), cause: Box::new(e) })?;
        if !ram {
            return Err(XlatError::NotInDump { paddr });
        }
        buf.copy_from_slice(&page[at..at + buf.len()]);
        Ok(())
    }
}

fn spec(five_level: bool, kaslr: bool, kernel: KernelSpec) -> SynthSpec {
    SynthSpec {
        ram_bytes: 300 << 20,
        data_percent: 5,
        seed: 77 + u64::from(five_level) * 2 + u64::from(kaslr),
        kernel: Some(KernelSpec { five_level, kaslr, ..kernel }),
        ..Default::default()
    }
}

fn open<F: ReadAt>(file: F) -> (ElfPhys<F>, VmcoreInfo, Vec<vmdump_format::elf::LoadSegment>) {
    let core = ElfVmcore::parse(&file).unwrap();
    let info = core.vmcoreinfo().unwrap().unwrap();
    let map = PhysMap::new(&core.loads, PAGE_SIZE).unwrap();
    (ElfPhys { file, map }, info, core.loads)
}

fn check(
    phys: &ElfPhys<impl ReadAt>,
    info: &VmcoreInfo,
    loads: &[vmdump_format::elf::LoadSegment],
    l: &KernelLayout,
) {
    let mem = KernelMemory::open(phys, info, loads).unwrap();
    assert_eq!(mem.page_offset(), l.page_offset);
    assert_eq!(mem.arch().page_offset_info().source, PageOffsetSource::PtLoad);
    assert_eq!(mem.arch().phys_base(), l.phys_base);
    let scanned = KernelMemory::open(phys, info, &[]).unwrap();
    assert_eq!(scanned.arch().page_offset_info().source, PageOffsetSource::PageTables);
    assert_eq!(scanned.page_offset(), l.page_offset, "page tables agree with the PT_LOADs");
    assert_eq!(mem.walk(l.init_top_pgt).unwrap(), mem.translate(l.init_top_pgt).unwrap());
    assert_eq!(mem.walk(l.mem_section).unwrap(), l.mem_section - l.page_offset);
    let table = SectionTable::read(&mem, info, phys.map.max_pfn()).unwrap();
    assert_eq!(table.present_pfn_end(), l.present_pfn_end());
    let nrs: Vec<u64> = table.sections().iter().map(|s| s.nr).collect();
    assert_eq!(nrs, l.present_sections);
    for pfn in [0, 1, 0x7fff, 0x8000, 0x1_2345, l.present_pfn_end() - 1, l.present_pfn_end(), 1 << 30] {
        assert_eq!(table.mem_map_of(pfn), l.mem_map_of(pfn), "pfn {pfn:#x}");
    }
    let runs = phys.map.runs().iter().filter(|r| r.start_pfn < l.present_pfn_end());
    let last_ram_pfn = runs.map(|r| r.end_pfn).max().unwrap() - 1;
    for pfn in [0, last_ram_pfn] {
        assert_eq!(
            mem.read_u64(table.mem_map_of(pfn).unwrap()).unwrap(),
            0,
            "struct page of {pfn:#x} mapped"
        );
    }
    let mut release = [0u8; 17];
    mem.read_virt(l.init_uts_ns + 130, &mut release).unwrap();
    assert_eq!(&release, info.osrelease().unwrap().as_bytes());
}

#[test]
fn synthetic_cores_four_and_five_level_with_and_without_kaslr() {
    for five_level in [false, true] {
        for kaslr in [false, true] {
            let spec = spec(five_level, kaslr, KernelSpec::default());
            let image = synth::to_vec(&spec).unwrap();
            let layout = synth::kernel_layout(&spec).unwrap().unwrap();
            let (phys, info, loads) = open(&image[..]);
            check(&phys, &info, &loads, &layout);
        }
    }
}

#[test]
fn symbol_as_pointer_sme_and_bios_rom() {
    let k = KernelSpec { sme_mask: 1 << 47, bios_rom: true, ..Default::default() };
    let spec = spec(false, true, k);
    let image = synth::to_vec(&spec).unwrap();
    let layout: Arc<KernelLayout> = synth::kernel_layout(&spec).unwrap().unwrap();
    let (phys, info, loads) = open(&image[..]);
    assert_eq!(phys.map.max_pfn(), 0x10_0000, "the ROM PT_LOAD ends at 4 GiB");
    check(&phys, &info, &loads, &layout);
    let mem = KernelMemory::open(&phys, &info, &loads).unwrap();
    assert_eq!(SectionTable::read(&mem, &info, phys.map.max_pfn()).unwrap().present_pfn_end(), 0x1_8000);
    let text = info.text().replace(
        &format!("SYMBOL(mem_section)={:x}", layout.mem_section),
        &format!("SYMBOL(mem_section)={:x}", layout.mem_section_ptr),
    );
    let by_pointer = VmcoreInfo::parse(text.as_bytes()).unwrap();
    assert_eq!(by_pointer.symbol("mem_section"), Some(layout.mem_section_ptr));
    let table = SectionTable::read(&mem, &by_pointer, phys.map.max_pfn()).unwrap();
    assert_eq!(table.present_pfn_end(), 0x1_8000, "found through the pointer variable");
}

#[test]
fn gigabyte_pages_in_a_sparse_file() {
    let spec =
        SynthSpec { ram_bytes: (9 << 30) / 4, data_percent: 0, ..spec(true, true, KernelSpec::default()) };
    let path = std::env::temp_dir().join(format!("vmdump-xlat-gib-{}", std::process::id()));
    synth::write(&spec, &path).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let layout = synth::kernel_layout(&spec).unwrap().unwrap();
    let (phys, info, loads) = open(file);
    let mem = KernelMemory::open(&phys, &info, &loads).unwrap();
    for pa in [0x4000_0000u64, 0x7fff_f000, 0x8000_1000, 0x8fff_f000] {
        assert_eq!(mem.translate(layout.page_offset + pa).unwrap(), pa, "1 GiB then 2 MiB pages: {pa:#x}");
    }
    let table = SectionTable::read(&mem, &info, phys.map.max_pfn()).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(table.present_pfn_end(), layout.present_pfn_end());
    assert_eq!(table.present_pfn_end(), 19 << 15, "2.25 GiB of RAM above a 16 MiB hole");
}
