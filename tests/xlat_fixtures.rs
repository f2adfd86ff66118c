//! Address translation and the section table on the real vmcores
//! (fixtures/README.md): `vmcore-S` (QEMU, RAM PT_LOAD with `p_vaddr` 0,
//! BIOS ROM segment beyond the last section) and `vmcore-SK`
//! (`/proc/vmcore`, direct-map `p_vaddr`s). Runs when `VMDUMP_FIXTURE_DIR`
//! holds the decompressed files.

mod support;

use vmdump::input::{Input, Vmcore};
use vmdump::xlat::{KernelMemory, PageOffsetSource, SectionTable};
use vmdump_format::vmcoreinfo::VmcoreInfo;

struct Fixture {
    phys: Vmcore,
    info: VmcoreInfo,
    loads: Vec<vmdump_format::elf::LoadSegment>,
}

/// The fixture `name`, read through vmdump's own vmcore input (which is
/// the `PhysRead` the dump engine uses), or `None` after saying why.
fn fixture(name: &str) -> Option<Fixture> {
    let fixtures = support::dumps::fixtures()?;
    let elf = &fixtures.iter().find(|f| f.name == name).expect("known fixture").elf;
    let phys = Vmcore::open(elf).unwrap();
    let info = phys.vmcoreinfo().cloned().expect("VMCOREINFO note");
    let loads = phys.elf().loads.clone();
    Some(Fixture { phys, info, loads })
}

/// The release string of `init_uts_ns.name` (`new_utsname.release`, after
/// two 65-byte fields).
fn utsname_release(mem: &KernelMemory<'_, Vmcore>, info: &VmcoreInfo) -> String {
    let uts = info.symbol("init_uts_ns").unwrap() + info.offset("uts_namespace.name").unwrap();
    let mut release = [0u8; 65];
    mem.read_virt(uts + 2 * 65, &mut release).unwrap();
    let end = release.iter().position(|&b| b == 0).unwrap_or(65);
    String::from_utf8_lossy(&release[..end]).into_owned()
}

/// Checks shared by both fixtures; returns the section table.
fn check_common(f: &Fixture, name: &str) -> (u64, SectionTable) {
    let mem = KernelMemory::open(&f.phys, &f.info, &f.loads).unwrap();
    let scanned = KernelMemory::open(&f.phys, &f.info, &[]).unwrap();
    assert_eq!(scanned.arch().page_offset_info().source, PageOffsetSource::PageTables, "{name}");
    assert_eq!(scanned.page_offset(), mem.page_offset(), "{name}: page tables agree with the PT_LOADs");
    let page_offset = mem.page_offset();
    assert_eq!(page_offset % (1 << 30), 0, "{name}: PAGE_OFFSET is 1 GiB aligned");
    let mem_section = f.info.symbol("mem_section").unwrap();
    assert_eq!(mem.walk(mem_section).unwrap(), mem_section - page_offset, "{name}: direct map is linear");
    let root = f.info.symbol("init_top_pgt").unwrap();
    assert_eq!(mem.walk(root).unwrap(), mem.translate(root).unwrap(), "{name}: image mapping agrees");
    assert_eq!(utsname_release(&mem, &f.info), f.info.osrelease().unwrap(), "{name}");
    let table = SectionTable::read(&mem, &f.info, f.phys.phys().max_pfn()).unwrap();
    let first = table.sections()[0];
    assert_eq!(first.nr, 0, "{name}");
    let pfn = f.phys.phys().runs()[0].start_pfn + 3;
    let struct_page = table.mem_map_of(pfn).unwrap();
    mem.read_u64(struct_page).unwrap(); // the vmemmap is mapped
    eprintln!(
        "{name}: phys_base {} ({:#x}), KERNELOFFSET {:#x}, PAGE_OFFSET {page_offset:#x} ({:?}), \
         init_top_pgt paddr {:#x}, present sections {}, present_pfn_end {:#x}, mem_map of pfn {pfn:#x} {struct_page:#x}",
        mem.arch().phys_base(),
        mem.arch().phys_base(),
        mem.arch().kerneloffset(),
        mem.arch().page_offset_info().source,
        mem.arch().root_paddr(),
        table.sections().len(),
        table.present_pfn_end(),
    );
    (page_offset, table)
}

#[test]
fn vmcore_s_qemu() {
    let Some(f) = fixture("vmcore-S") else { return };
    assert_eq!(f.phys.phys().max_pfn(), 0x10_0000, "the BIOS ROM PT_LOAD ends at 4 GiB");
    let mem = KernelMemory::open(&f.phys, &f.info, &f.loads).unwrap();
    assert_eq!(mem.arch().page_offset_info().source, PageOffsetSource::PageTables, "QEMU p_vaddr is 0");
    let (_, table) = check_common(&f, "vmcore-S");
    assert_eq!(table.present_pfn_end(), 0x1_8000, "makedumpfile's Total pages");
}

#[test]
fn vmcore_sk_proc_vmcore() {
    let Some(f) = fixture("vmcore-SK") else { return };
    let mem = KernelMemory::open(&f.phys, &f.info, &f.loads).unwrap();
    assert_eq!(mem.arch().page_offset_info().source, PageOffsetSource::PtLoad);
    assert!(mem.arch().phys_base() < 0, "KASLR");
    let (_, table) = check_common(&f, "vmcore-SK");
    assert!(table.present_pfn_end() >= 0x1_ffda, "covers max_pfn 0x1ffda: {:#x}", table.present_pfn_end());
}
