use std::os::unix::fs::MetadataExt;

use vmdump_format::elf::ElfVmcore;
use vmdump_format::phys::PhysMap;

use super::*;

fn temp_path(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("vmdump-synth-{tag}-{}", std::process::id()))
}

/// Reads every pfn below max_pfn + 2 through the ELF reader and compares it
/// with `expected_page`; returns (ram pages, zero pages).
pub(crate) fn verify_all_pages(spec: &SynthSpec, image: &[u8]) -> (u64, u64) {
    let core = ElfVmcore::parse(image).unwrap();
    let map = PhysMap::new(&core.loads, PAGE_SIZE as u64).unwrap();
    let (mut got, mut want) = (vec![0u8; PAGE_SIZE], [0u8; PAGE_SIZE]);
    let (mut ram, mut zero) = (0, 0);
    for pfn in 0..map.max_pfn() + 2 {
        let is_ram = map.read_page(image, pfn, &mut got).unwrap();
        assert_eq!(is_ram, expected_page(spec, pfn, &mut want), "pfn {pfn:#x} RAM-ness");
        assert!(got[..] == want[..], "pfn {pfn:#x} content");
        ram += u64::from(is_ram);
        zero += u64::from(is_ram && got.iter().all(|&b| b == 0));
    }
    (ram, zero)
}

#[test]
fn every_page_reads_back_as_generated() {
    let variants = [
        SynthSpec { ram_bytes: 6 << 20, ..Default::default() },
        SynthSpec {
            ram_bytes: 3 << 20,
            holes: false,
            kernel_text_overlap: false,
            data_percent: 100,
            ..Default::default()
        },
        SynthSpec {
            ram_bytes: (5 << 20) + 1234,
            partial_tail: true,
            phoff_gap: true,
            unaligned_offsets: true,
            seed: 9,
            ..Default::default()
        },
        SynthSpec {
            ram_bytes: 40 << 20,
            data_percent: 5,
            with_vmcoreinfo: false,
            nr_cpus: 0,
            ..Default::default()
        },
    ];
    for spec in variants {
        let image = to_vec(&spec).unwrap();
        let summary = summarize(&spec);
        assert_eq!(image.len() as u64, summary.file_size);
        let (ram, zero) = verify_all_pages(&spec, &image);
        assert_eq!((ram, zero), (summary.ram_pages, summary.zero_pages), "{spec:?}");
        assert_eq!(summary.data_pages + summary.zero_pages, summary.ram_pages);
        let map = PhysMap::new(&ElfVmcore::parse(&image).unwrap().loads, 4096).unwrap();
        assert_eq!(map.max_pfn(), summary.max_pfn);
    }
}

#[test]
fn layout_quirks_are_present() {
    let spec = SynthSpec { ram_bytes: 64 << 20, partial_tail: true, ..Default::default() };
    let s = summarize(&spec);
    let map = PhysMap::new(&s.loads, 4096).unwrap();
    assert!(map.is_ram(0x9f) && !map.is_ram(0xa0) && !map.is_ram(0xff) && map.is_ram(0x100), "legacy hole");
    assert_eq!(map.count_in(0..map.max_pfn()), s.ram_pages);
    assert!(map.max_pfn() > s.ram_pages + 4000, "second 16 MiB hole");
    let text = s.loads[0];
    assert_eq!(text.vaddr, KERNEL_TEXT_VADDR);
    let covering = s.loads[1..]
        .iter()
        .find(|l| l.paddr <= text.paddr && text.paddr + text.mem_size <= l.paddr + l.mem_size);
    assert!(covering.is_some(), "kernel text overlaps a RAM PT_LOAD");
    let last = s.loads.last().unwrap();
    assert_eq!((last.paddr + last.mem_size) % 4096, 4096 - PARTIAL_TAIL_MISSING);
    assert_eq!(s.ram_pages, (64 << 20) / 4096, "the partial page still counts");
}

#[test]
fn file_and_memory_images_are_identical() {
    let spec = SynthSpec { ram_bytes: 3 << 20, partial_tail: true, seed: 77, ..Default::default() };
    let path = temp_path("same");
    let summary = write(&spec, &path).unwrap();
    let on_disk = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(summary, summarize(&spec));
    assert_eq!(on_disk, to_vec(&spec).unwrap());
}

#[test]
fn large_images_are_sparse() {
    let gib = 1u64 << 30;
    let empty = SynthSpec { ram_bytes: 4 * gib, data_percent: 0, ..Default::default() };
    let path = temp_path("sparse0");
    let s = write(&empty, &path).unwrap();
    let allocated = std::fs::metadata(&path).unwrap().blocks() * 512;
    std::fs::remove_file(&path).unwrap();
    assert!(s.file_size > 4 * gib);
    assert_eq!(s.data_pages, 0);
    assert!(allocated < 1 << 20, "data_percent 0 allocated {allocated} bytes");

    let one = SynthSpec { ram_bytes: gib, data_percent: 1, ..Default::default() };
    let path = temp_path("sparse1");
    let s = write(&one, &path).unwrap();
    let allocated = std::fs::metadata(&path).unwrap().blocks() * 512;
    let file = std::fs::File::open(&path).unwrap();
    let core = ElfVmcore::parse(&file).unwrap();
    let map = PhysMap::new(&core.loads, 4096).unwrap();
    let (mut got, mut want) = (vec![0u8; 4096], [0u8; 4096]);
    for pfn in (0..map.max_pfn()).step_by(997) {
        assert_eq!(map.read_page(&file, pfn, &mut got).unwrap(), expected_page(&one, pfn, &mut want));
        assert!(got[..] == want[..], "pfn {pfn:#x}");
    }
    std::fs::remove_file(&path).unwrap();
    let data_bytes = (s.data_pages + 2048) * 4096; // plus the kernel-text copy
    assert!(allocated < 2 * data_bytes + (1 << 20), "allocated {allocated}, data {data_bytes}");
}

#[test]
fn vmcoreinfo_has_realistic_keys() {
    let spec = SynthSpec::default();
    let info = vmdump_format::vmcoreinfo::VmcoreInfo::parse(vmcoreinfo_text(&spec).as_bytes()).unwrap();
    assert_eq!(info.osrelease(), Some("6.1.0-synth-amd64"));
    assert!(info.symbol("mem_section").is_some() && info.symbol("init_top_pgt").is_some());
    assert!(info.kerneloffset().unwrap().is_multiple_of(0x20_0000));
    assert!(info.phys_base().unwrap() < 0);
    assert_eq!(info.number("PAGE_BUDDY_MAPCOUNT_VALUE"), Some(-129));
    assert_eq!(info.offset("page.flags"), Some(0));
    assert_eq!(info.length("free_area.free_list"), Some(5));
}

/// FNV-1a of a whole image.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

#[test]
fn without_kernel_the_output_is_unchanged() {
    // Hashes of the images written before `SynthSpec::kernel` existed.
    let specs = [
        (SynthSpec { ram_bytes: 6 << 20, ..Default::default() }, 0x7ac3_e75b_31ef_a223),
        (
            SynthSpec {
                ram_bytes: (5 << 20) + 1234,
                partial_tail: true,
                phoff_gap: true,
                unaligned_offsets: true,
                seed: 9,
                ..Default::default()
            },
            0x7080_855f_485d_0c04,
        ),
    ];
    for (spec, want) in specs {
        assert_eq!(fnv(&to_vec(&spec).unwrap()), want, "{spec:?}");
    }
}
