//! Checks the reader against the two real vmcores of /work/shared/fixtures
//! (fixtures/README.md) when decompressed copies are available.
//!
//! * `VMDUMP_FIXTURE_DIR`: folder holding the decompressed `vmcore-S` and
//!   `vmcore-SK` (this test never decompresses anything itself).
//! * `VMDUMP_FIXTURES`: the fixtures folder with `expected/` (default
//!   `<workspace>/../shared/fixtures`).
//!
//! Without the fixtures folder the test prints "fixtures not found: <path>"
//! and passes; with the folder but no decompressed copies it fails and says
//! how to get them (scripts/test.sh decompresses them), never skips silently.

use std::fs::File;
use std::path::{Path, PathBuf};

use vmdump_format::elf::ElfVmcore;
use vmdump_format::phys::PhysMap;

fn fixtures_dir() -> PathBuf {
    std::env::var_os("VMDUMP_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"))
}

/// The decompressed vmcore `name`, or `None` after saying why.
fn vmcore(name: &str) -> Option<File> {
    let Some(dir) = std::env::var_os("VMDUMP_FIXTURE_DIR") else {
        let shared = fixtures_dir();
        assert!(
            !shared.is_dir(),
            "{} exists but VMDUMP_FIXTURE_DIR is not set: run scripts/test.sh, which decompresses the vmcores",
            shared.display()
        );
        println!("fixtures not found: {} (the tests on the real vmcores did NOT run)", shared.display());
        return None;
    };
    let path = Path::new(&dir).join(name);
    Some(
        File::open(&path).unwrap_or_else(|e| panic!("VMDUMP_FIXTURE_DIR is set but {}: {e}", path.display())),
    )
}

/// makedumpfile's `-d 1` report: (Original pages, Memory Hole, Total pages, zero pages).
fn report(name: &str) -> Option<(u64, u64, u64, u64)> {
    let path = fixtures_dir().join(format!("expected/{name}.d1.report.txt"));
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!("fixtures not found: {}", path.display());
        return None;
    };
    let field = |label: &str| {
        let line = text.lines().find(|l| l.trim_start().starts_with(label)).expect(label);
        let hex = line.rsplit("0x").next().unwrap().trim();
        u64::from_str_radix(hex, 16).expect(label)
    };
    Some((
        field("Original pages"),
        field("Memory Hole"),
        field("Total pages"),
        field("Pages filled with zero"),
    ))
}

fn zero_pages(map: &PhysMap, file: &File) -> u64 {
    let mut buf = vec![0u8; 4096];
    let mut zero = 0;
    for run in map.runs() {
        for pfn in run.start_pfn..run.end_pfn {
            assert!(map.read_page(file, pfn, &mut buf).unwrap());
            zero += u64::from(buf.iter().all(|&b| b == 0));
        }
    }
    zero
}

#[test]
fn vmcore_s_qemu() {
    let (Some(file), Some((original, hole, total, zero))) = (vmcore("vmcore-S"), report("vmcore-S")) else {
        return;
    };
    assert_eq!(original + hole, total);
    let core = ElfVmcore::parse(&file).unwrap();
    assert_eq!(core.phoff, 64);
    assert_eq!(core.loads.len(), 2);
    let info = core.vmcoreinfo().unwrap().expect("VMCOREINFO");
    assert_eq!(info.page_size(), Some(4096));
    assert_eq!(info.osrelease(), Some("6.1.0-57-amd64"));
    assert!(info.phys_base().unwrap() < 0, "KASLR");
    assert_eq!(info.kerneloffset(), Some(0x27e0_0000));
    assert_eq!(info.crashtime(), None, "QEMU dump: no CRASHTIME");
    assert!(core.notes.nr_cpus >= 1);

    // From PT_LOADs alone the 256 KiB BIOS ROM at 0xfffc0000 is RAM too.
    let map = PhysMap::new(&core.loads, 4096).unwrap();
    assert_eq!(map.max_pfn(), 0x10_0000);
    assert_eq!(map.ram_pages(), 0x18000 + 0x40);
    // makedumpfile ends memory at the kernel's last pfn (0x18000): the ROM is dropped.
    let map = map.truncated(total);
    assert_eq!((map.max_pfn(), map.ram_pages()), (total, original));
    assert_eq!(map.ram_pages(), 98_304);
    assert_eq!(map.max_pfn() - map.ram_pages(), hole);
    assert_eq!(zero_pages(&map, &file), zero);
}

#[test]
fn vmcore_sk_proc_vmcore() {
    let (Some(file), Some((original, hole, total, zero))) = (vmcore("vmcore-SK"), report("vmcore-SK")) else {
        return;
    };
    assert_eq!(original + hole, total);
    let core = ElfVmcore::parse(&file).unwrap();
    let info = core.vmcoreinfo().unwrap().expect("VMCOREINFO");
    assert!(info.crashtime().is_some());
    assert!(info.phys_base().unwrap() < 0);
    assert_eq!(info.number("pgtable_l5_enabled"), Some(0));
    assert_eq!(core.loads[0].paddr, 0xb00_0000, "kernel text first");
    assert!(core.loads[0].vaddr >= 0xffff_ffff_8000_0000);

    let map = PhysMap::new(&core.loads, 4096).unwrap();
    assert_eq!(map.max_pfn(), total, "max_mapnr");
    // 89,818 RAM pages = pages in the -d 1 output (fixtures/README.md).
    assert_eq!(map.ram_pages(), 89_818);
    // makedumpfile's "Original pages" counts the kernel-text overlap twice.
    let per_segment: u64 =
        core.loads.iter().map(|l| (l.paddr + l.mem_size).div_ceil(4096) - l.paddr / 4096).sum();
    assert_eq!(per_segment, original);
    assert_eq!(original - map.ram_pages(), core.loads[0].mem_size / 4096);
    assert_eq!(zero_pages(&map, &file), zero);
}
