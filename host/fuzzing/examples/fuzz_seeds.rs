//! Writes the fuzzing seeds that the library crates can make by
//! themselves: small ELF vmcores from [`vmdump_synth`], VMCOREINFO texts
//! and a small flattened stream. `scripts/fuzz.sh` adds kdump files and
//! flattened dumps made by the `vmdump` binary.
//!
//! Usage: `cargo run -p vmdump-fuzzing --example fuzz_seeds -- OUTDIR`
//! (writes `OUTDIR/<target>/<name>`).

use std::fs;
use std::io;
use std::path::Path;

use vmdump_format::flat::FlatWriter;
use vmdump_synth::{self as synth, KernelSpec, SynthSpec};

fn small(ram_kib: u64) -> SynthSpec {
    SynthSpec {
        ram_bytes: ram_kib << 10,
        data_percent: 10,
        holes: false,
        kernel_text_overlap: false,
        nr_cpus: 1,
        ..SynthSpec::default()
    }
}

fn put(dir: &Path, target: &str, name: &str, bytes: &[u8]) -> io::Result<()> {
    let dir = dir.join(target);
    fs::create_dir_all(&dir)?;
    fs::write(dir.join(name), bytes)
}

fn main() -> io::Result<()> {
    let out = std::env::args_os().nth(1).expect("usage: fuzz_seeds OUTDIR");
    let out = Path::new(&out);

    let elves = [
        ("plain-256k", small(256)),
        ("zero-64k", SynthSpec { data_percent: 0, ..small(64) }),
        ("holes-tail-768k", SynthSpec { holes: true, partial_tail: true, nr_cpus: 2, ..small(768) }),
        (
            "qemu-512k",
            SynthSpec {
                holes: true,
                phoff_gap: true,
                unaligned_offsets: true,
                partial_tail: true,
                ..small(512)
            },
        ),
        ("no-vmcoreinfo-128k", SynthSpec { with_vmcoreinfo: false, nr_cpus: 4, ..small(128) }),
    ];
    for (name, spec) in &elves {
        put(out, "elf", name, &synth::to_vec(spec)?)?;
    }

    let kernel = |k: KernelSpec| SynthSpec { ram_bytes: 8 << 20, kernel: Some(k), ..SynthSpec::default() };
    let texts = [
        ("plain", synth::vmcoreinfo_text(&small(256))),
        ("kernel", synth::vmcoreinfo_text(&kernel(KernelSpec::default()))),
        (
            "kaslr-5level",
            synth::vmcoreinfo_text(&kernel(KernelSpec {
                kaslr: true,
                five_level: true,
                ..KernelSpec::default()
            })),
        ),
        ("odd", "PAGESIZE=65536\r\nNUMBER(x)=0xffff\nNUMBER(y)=-0x10\nSYMBOL(s)=0xff\n\n\0\0".to_owned()),
    ];
    for (name, text) in &texts {
        put(out, "vmcoreinfo", name, text.as_bytes())?;
    }

    // Out-of-order records, one overwriting another, a gap.
    let mut w = FlatWriter::new(Vec::new())?;
    w.write_at(8192, b"third record, after a gap")?;
    w.write_at(0, &[0x5a; 600])?;
    w.write_at(100, b"overwrites part of the first")?;
    put(out, "flat", "small", &w.finish()?)?;
    Ok(())
}
