//! The ELF reader on synthetic vmcores of `vmdump-synth`: shaped like the
//! real fixtures (kernel text first, holes, VMCOREINFO), in QEMU's layout,
//! truncated and corrupted.

use vmdump_format::elf::{EM_X86_64, ElfVmcore, Endian};
use vmdump_format::phys::PhysMap;
use vmdump_synth::{self as synth, SynthSpec};

#[test]
fn parses_a_synthetic_core() {
    let spec = SynthSpec { ram_bytes: 8 << 20, nr_cpus: 3, ..Default::default() };
    let image = synth::to_vec(&spec).unwrap();
    let core = ElfVmcore::parse(&image).unwrap();
    let summary = synth::summarize(&spec);
    assert_eq!(core.endian, Endian::Little);
    assert_eq!(core.machine, EM_X86_64);
    assert_eq!(core.phoff, 64);
    assert_eq!(core.loads, summary.loads);
    assert_eq!(core.loads[0].vaddr, synth::KERNEL_TEXT_VADDR, "kernel text is the first PT_LOAD");
    assert_eq!(core.notes.nr_cpus, 3);
    assert_eq!(core.notes.iter().count(), 4);
    let info = core.vmcoreinfo().unwrap().unwrap();
    assert_eq!(info.page_size(), Some(4096));
    assert!(info.phys_base().unwrap() < 0);
    assert_eq!(info.number("pgtable_l5_enabled"), Some(0));
    assert_eq!(info.size("page"), Some(64));
    assert_eq!(info.crashtime(), Some(synth::crashtime(&spec) as i64));
}

#[test]
fn program_headers_are_read_at_e_phoff() {
    let spec =
        SynthSpec { ram_bytes: 2 << 20, phoff_gap: true, unaligned_offsets: true, ..Default::default() };
    let core = ElfVmcore::parse(&synth::to_vec(&spec).unwrap()).unwrap();
    assert_eq!(core.phoff, synth::GAP_PHOFF);
    assert_eq!(core.loads, synth::summarize(&spec).loads);
    assert_ne!(core.loads[0].file_offset % 4096, 0);
}

#[test]
fn every_truncation_is_an_error_never_a_panic() {
    let spec = SynthSpec { ram_bytes: 1 << 20, data_percent: 50, nr_cpus: 2, ..Default::default() };
    let image = synth::to_vec(&spec).unwrap();
    ElfVmcore::parse(&image).unwrap();
    let mut cuts: Vec<usize> = (0..4096.min(image.len())).collect();
    cuts.extend((4096..image.len()).step_by(509));
    cuts.push(image.len() - 1);
    for cut in cuts {
        assert!(ElfVmcore::parse(&image[..cut]).is_err(), "truncated at {cut:#x} parsed");
    }
}

#[test]
fn corrupted_headers_never_panic() {
    let spec = SynthSpec { ram_bytes: 1 << 20, nr_cpus: 2, ..Default::default() };
    let image = synth::to_vec(&spec).unwrap();
    let header_len = 64 + 5 * 56 + 2 * 356 + 2000;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..3000 {
        let mut v = image.clone();
        for _ in 0..1 + x % 4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v[(x % header_len as u64) as usize] ^= (x >> 32) as u8 | 1;
        }
        if let Ok(core) = ElfVmcore::parse(&v) {
            let _ = core.vmcoreinfo();
            let _ = core.notes.iter().count();
            if let Ok(map) = PhysMap::new(&core.loads, 4096) {
                let _ = (map.ram_pages(), map.locate(map.max_pfn().saturating_sub(1)));
            }
        }
    }
}
