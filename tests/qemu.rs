//! Dumps as QEMU's `dump-guest-memory` writes them (kdump-format.md §9),
//! made from ELF vmcores by `tests/py/qemu_dump.py`: flattened
//! (`kdump-zlib`) and plain (`kdump-raw-zlib`), zlib and uncompressed, with
//! and without the guest's VMCOREINFO. `vmdump info` and `vmdump verify
//! --against` read them, libkdumpfile reads the generated files page-exact,
//! phys_base comes from VMCOREINFO rather than QEMU's wrong sub header, and
//! the real vmcore-SK dumped QEMU's way gives makedumpfile's kernel log.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::dumps::{dump_counts, fixtures, libkdumpfile_compare, vmdump, vmdump_ok};
use support::synthetic::{OsArg, synthetic};
use support::{build_dir, temp_dir, workspace_root};
use vmdump::plugin::SearchPath;
use vmdump::read::{DumpMemory, Modules, open_dump};
use vmdump::xlat::KernelMemory;
use vmdump_format::kdump::{
    DISK_DUMP_HEADER_SIZE, DiskDumpHeader, PAGE_DESC_SIZE, PageDesc, SUB_HEADER_SIZE, SubHeader, Utsname,
};
use vmdump_synth::{self as synth, KernelSpec, SynthSpec, SynthSummary};

const PAGE: u64 = 4096;

/// 48 MiB of RAM with the legacy hole, a 16 MiB hole, a kernel-text PT_LOAD
/// overlapping RAM, a KASLR kernel (negative phys_base) and the BIOS ROM
/// just below 4 GiB (a hole of almost 4 GiB before it, like the PCI hole).
/// 12352 pages: the data area does not start on a block boundary.
fn spec() -> SynthSpec {
    let kernel = KernelSpec { kaslr: true, bios_rom: true, ..KernelSpec::default() };
    SynthSpec { ram_bytes: 48 << 20, seed: 0x9e, kernel: Some(kernel), ..SynthSpec::default() }
}

/// One of QEMU's outputs.
#[derive(Debug, Clone, Copy)]
struct Variant {
    flattened: bool,
    zlib: bool,
    vmcoreinfo: bool,
}

impl Variant {
    fn all() -> Vec<Variant> {
        let mut all = Vec::new();
        for flattened in [true, false] {
            for zlib in [true, false] {
                for vmcoreinfo in [true, false] {
                    all.push(Variant { flattened, zlib, vmcoreinfo });
                }
            }
        }
        all
    }

    fn name(self) -> String {
        format!(
            "{}-{}{}",
            if self.flattened { "kdump" } else { "kdump-raw" },
            if self.zlib { "zlib" } else { "none" },
            if self.vmcoreinfo { "" } else { "-novmci" }
        )
    }

    fn options(self) -> Vec<&'static str> {
        let mut o = vec!["--compression", if self.zlib { "zlib" } else { "none" }];
        if !self.flattened {
            o.push("--raw");
        }
        if !self.vmcoreinfo {
            o.push("--no-vmcoreinfo");
        }
        o
    }
}

/// Runs the generator; returns its JSON line.
fn qemu_dump(elf: &Path, out: &Path, options: &[&str]) -> String {
    let result = Command::new("/usr/bin/python3")
        .arg(workspace_root().join("tests/py/qemu_dump.py"))
        .args(options)
        .arg(elf)
        .arg(out)
        .output()
        .expect("run /usr/bin/python3");
    let stdout = String::from_utf8_lossy(&result.stdout).into_owned();
    assert!(
        result.status.success(),
        "qemu_dump.py {options:?} failed: {}{stdout}",
        String::from_utf8_lossy(&result.stderr)
    );
    stdout
}

fn json_u64(text: &str, key: &str) -> u64 {
    let at = text.find(&format!("\"{key}\": ")).unwrap_or_else(|| panic!("no {key} in {text}"));
    let rest = &text[at + key.len() + 4..];
    rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())].parse().expect("a number")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn info(dump: &Path) -> String {
    let out = vmdump(["info".as_ref(), dump.as_os_str()]);
    let all = text(&out);
    assert!(out.status.success(), "vmdump info {}:\n{all}", dump.display());
    assert!(!all.contains("panicked"), "{all}");
    all
}

fn info_value(info: &str, label: &str) -> String {
    let line = info.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no {label} in {info}"));
    line.split_once(": ").expect("label : value").1.trim().to_owned()
}

fn assert_verifies(dump: &Path, against: &Path) -> String {
    let out = vmdump(["verify".as_ref(), dump.as_os_str(), "--against".as_ref(), against.as_os_str()]);
    let all = text(&out);
    assert!(out.status.success(), "{} does not verify:\n{all}", dump.display());
    assert!(all.contains("; 0 problems") && !all.contains("panicked"), "{all}");
    all
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

/// QEMU's `qemu_strtou64(value, NULL, 16)` of a decimal `NUMBER(phys_base)`.
fn qemu_phys_base(decimal: i64) -> u64 {
    let digits = u64::from_str_radix(&decimal.unsigned_abs().to_string(), 16).expect("hex digits");
    if decimal < 0 { digits.wrapping_neg() } else { digits }
}

fn synthetic_vmcore(dir: &Path) -> (PathBuf, SynthSummary) {
    let (vmcore, summary) = synthetic(dir, spec());
    assert!(summary.max_pfn >= 0x10_0000, "the BIOS ROM below 4 GiB sets max_mapnr: {summary:?}");
    (vmcore, summary)
}

#[test]
fn every_qemu_format_reads_and_verifies() {
    let dir = temp_dir("qemu-formats");
    let (vmcore, summary) = synthetic_vmcore(&dir);
    for v in Variant::all() {
        let name = v.name();
        let out = dir.join(&name);
        let made = qemu_dump(&vmcore, &out, &v.options());
        assert_eq!(json_u64(&made, "num_dumpable"), summary.ram_pages, "{name}: {made}");

        let info = info(&out);
        let value = |label| info_value(&info, label);
        assert_eq!(value("header version"), "6", "{name}:\n{info}");
        assert_eq!(value("compression"), if v.zlib { "zlib" } else { "none" }, "{name}:\n{info}");
        assert_eq!(value("dump level"), "1", "{name}:\n{info}");
        assert_eq!(value("incomplete"), "no", "{name}:\n{info}");
        assert_eq!(value("nr_cpus"), "2", "{name}:\n{info}");
        assert_eq!(value("max_mapnr"), hex(summary.max_pfn), "{name}:\n{info}");
        assert_eq!(value("RAM pages"), hex(summary.ram_pages), "{name}:\n{info}");
        assert_eq!(value("pages in file"), hex(summary.ram_pages), "{name}:\n{info}");
        assert_eq!(value("zero pages"), hex(summary.zero_pages), "{name}:\n{info}");
        assert!(value("kernel").ends_with("x86_64"), "{name}: only utsname.machine is set:\n{info}");
        if v.vmcoreinfo {
            assert!(
                value("kernel").contains(synth::kernel::OSRELEASE),
                "{name}: release from OSRELEASE:\n{info}"
            );
            assert!(info.contains("OSRELEASE=") && info.contains("KERNELOFFSET="), "{name}:\n{info}");
            assert!(value("phys_base").contains("VMCOREINFO; the sub header's"), "{name}:\n{info}");
        } else {
            assert_eq!(value("VMCOREINFO"), "none", "{name}:\n{info}");
            assert_eq!(value("phys_base"), "0 (sub header)", "{name}:\n{info}");
        }

        let verified = assert_verifies(&out, &vmcore);
        let pages = summary.ram_pages;
        assert!(verified.contains(&format!("verified {pages} pages: ")), "{name}: {verified}");
        assert!(
            verified.contains(&format!(", {} zero, 0 lost, 0 excluded", summary.zero_pages)),
            "{verified}"
        );
        assert!(verified.contains(&format!("; {pages} equal to the source")), "{name}: {verified}");
        if !v.zlib {
            assert!(verified.contains(": 0 compressed, "), "{name}: {verified}");
        }
    }
}

/// The kdump-raw file, and the flattened stream rearranged by makedumpfile.
#[test]
fn libkdumpfile_reads_the_generated_files_page_exact() {
    let dir = temp_dir("qemu-libkdumpfile");
    let (vmcore, summary) = synthetic_vmcore(&dir);
    for (zlib, vmcoreinfo) in [(true, true), (false, false)] {
        let raw = Variant { flattened: false, zlib, vmcoreinfo };
        let flat = Variant { flattened: true, ..raw };
        let (raw_path, flat_path) = (dir.join(raw.name()), dir.join(flat.name()));
        qemu_dump(&vmcore, &raw_path, &raw.options());
        qemu_dump(&vmcore, &flat_path, &flat.options());
        let rearranged = dir.join(format!("{}.R", flat.name()));
        let status = Command::new("makedumpfile")
            .arg("-R")
            .arg(&rearranged)
            .stdin(std::fs::File::open(&flat_path).unwrap())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run makedumpfile -R");
        assert!(status.success(), "makedumpfile -R {}", flat.name());
        let same = std::fs::read(&rearranged).unwrap() == std::fs::read(&raw_path).unwrap();
        assert!(same, "{}: makedumpfile -R gives other bytes than {}", flat.name(), raw.name());

        let counts = dump_counts(&raw_path);
        assert_eq!(counts.status, u32::from(zlib), "{}", raw.name());
        assert_eq!(counts.max_mapnr, summary.max_pfn, "{}", raw.name());
        assert_eq!((counts.ram_pages, counts.pages_in_file), (summary.ram_pages, summary.ram_pages));
        assert_eq!(counts.zero_pages, summary.zero_pages, "{}", raw.name());
        let read = libkdumpfile_compare(&raw_path, &vmcore);
        assert_eq!((read.equal, read.different, read.missing), (summary.ram_pages, 0, 0), "{}", read.raw);
        assert_eq!(read.compared, summary.ram_pages, "{}", read.raw);
    }
}

/// The generator itself against §9, read with vmdump_format's decoders.
#[test]
fn generated_files_have_qemus_layout() {
    let dir = temp_dir("qemu-layout");
    let (vmcore, summary) = synthetic_vmcore(&dir);
    let layout = synth::kernel_layout(&spec()).unwrap().expect("a kernel");
    let out = dir.join("kdump-raw-zlib");
    qemu_dump(&vmcore, &out, &["--raw"]);
    let bytes = std::fs::read(&out).unwrap();
    let h = DiskDumpHeader::decode(&bytes).unwrap();
    let bs = PAGE as usize;
    let sub = SubHeader::decode(&bytes[bs..], h.endian).unwrap();
    assert_eq!(h.header_version, 6);
    assert_eq!((h.timestamp_sec, h.timestamp_usec, h.nr_cpus, h.status), (0, 0, 2, 1));
    for field in 0..6 {
        let want: &[u8] = if field == Utsname::MACHINE { b"x86_64" } else { b"" };
        assert_eq!(h.utsname.get(field), want, "utsname field {field}");
    }
    assert!(bytes[DISK_DUMP_HEADER_SIZE..bs].iter().all(|&b| b == 0), "block 0 after the header");
    assert_eq!((sub.dump_level, sub.split, sub.max_mapnr_64), (1, 0, summary.max_pfn));
    assert_eq!(sub.phys_base, qemu_phys_base(layout.phys_base), "QEMU's hex parse of {}", layout.phys_base);
    assert_ne!(sub.phys_base, layout.phys_base as u64);
    assert_eq!(sub.offset_note, (bs + SUB_HEADER_SIZE) as u64);
    assert_eq!(h.sub_hdr_size as u64, (SUB_HEADER_SIZE as u64 + sub.size_note).div_ceil(PAGE));

    // Notes: CORE, CORE, QEMU, QEMU, then VMCOREINFO, copied unchanged
    // (QEMU's NUL terminator lands in its padding); offset_vmcoreinfo
    // points at its descriptor.
    let notes = &bytes[sub.offset_note as usize..(sub.offset_note + sub.size_note) as usize];
    let mut names = Vec::new();
    let mut at = 0;
    while at < notes.len() {
        let word = |i: usize| u32::from_le_bytes(notes[at + i..at + i + 4].try_into().unwrap()) as usize;
        let (namesz, descsz) = (word(0), word(4));
        names.push(String::from_utf8_lossy(&notes[at + 12..at + 12 + namesz - 1]).into_owned());
        at += 12 + namesz.next_multiple_of(4) + descsz.next_multiple_of(4);
    }
    assert_eq!(names, ["CORE", "CORE", "QEMU", "QEMU", "VMCOREINFO"]);
    let info_end = (sub.offset_vmcoreinfo + sub.size_vmcoreinfo) as usize;
    assert_eq!(&bytes[sub.offset_vmcoreinfo as usize..][..10], b"OSRELEASE=");
    assert_eq!(bytes[info_end - 1], b'\n', "the text ends as the kernel wrote it");
    assert_eq!(info_end.next_multiple_of(4) as u64, sub.offset_note + sub.size_note, "the last note");

    // Identical bitmaps; descriptors right after; data not block aligned,
    // starting with the shared zero page.
    let half = h.bitmap_blocks as usize / 2 * bs;
    assert_eq!(half as u64, summary.max_pfn.div_ceil(8).div_ceil(PAGE) * PAGE);
    let bitmap1 = (1 + h.sub_hdr_size as usize) * bs;
    assert!(bytes[bitmap1..bitmap1 + half] == bytes[bitmap1 + half..bitmap1 + 2 * half]);
    let descs = bitmap1 + 2 * half;
    let data = descs + summary.ram_pages as usize * PAGE_DESC_SIZE;
    assert_ne!(data % bs, 0, "pick a spec whose data area is not block aligned");
    assert!(bytes[data..data + bs].iter().all(|&b| b == 0), "the zero page comes first");
    let desc = |i: usize| PageDesc::decode(&bytes[descs + i * PAGE_DESC_SIZE..], h.endian).unwrap();
    let mut next = (data + bs) as u64;
    for i in 0..summary.ram_pages as usize {
        let d = desc(i);
        if d.offset == data as u64 {
            assert_eq!((d.size, d.flags), (PAGE as u32, 0), "descriptor {i}: zero page");
            continue;
        }
        assert_eq!(d.offset, next, "descriptor {i}: data back to back");
        assert!(
            (d.flags == 1 && u64::from(d.size) < PAGE) || (d.flags == 0 && u64::from(d.size) == PAGE),
            "{d:?}"
        );
        next += u64::from(d.size);
    }
    assert_eq!(next, bytes.len() as u64, "the file ends with the last page");
}

#[test]
fn phys_base_comes_from_vmcoreinfo_not_the_sub_header() {
    let dir = temp_dir("qemu-phys-base");
    let (vmcore, _) = synthetic_vmcore(&dir);
    let layout = synth::kernel_layout(&spec()).unwrap().expect("a kernel");
    assert!(layout.phys_base < -9, "KASLR gives a negative phys_base: {}", layout.phys_base);
    let out = dir.join("kdump-zlib");
    let made = qemu_dump(&vmcore, &out, &[]);
    assert_eq!(json_u64(&made, "phys_base"), qemu_phys_base(layout.phys_base), "{made}");

    let reader = open_dump(&out).unwrap();
    assert_eq!(reader.sub_header().phys_base, qemu_phys_base(layout.phys_base));
    assert_eq!(reader.phys_base(), layout.phys_base);
    let info = reader.vmcoreinfo().cloned().expect("VMCOREINFO");
    assert_eq!(info.phys_base(), Some(layout.phys_base));

    // Address translation on the dump reads the kernel's utsname, as the
    // kernel log reader does (`vmdump dmesg` of a dump).
    let modules = Modules::new(SearchPath::from_process(&[build_dir()], &[]));
    let dump = DumpMemory::new(reader, modules.decoder());
    let memory = KernelMemory::open(&dump, &info, &[]).expect("kernel memory of the dump");
    assert_eq!(memory.arch().phys_base(), layout.phys_base);
    let mut uts = [0u8; 6 * 65];
    memory.read_virt(layout.init_uts_ns, &mut uts).expect("init_uts_ns through the dump");
    assert_eq!(&uts[..6], b"Linux\0");
    let release = synth::kernel::OSRELEASE.as_bytes();
    assert_eq!(&uts[2 * 65..2 * 65 + release.len()], release);

    let text = info_value(&self::info(&out), "phys_base");
    let want = format!(
        "{} (VMCOREINFO; the sub header's {:#x} is ignored)",
        layout.phys_base,
        qemu_phys_base(layout.phys_base)
    );
    assert_eq!(text, want);
}

/// The real `/proc/vmcore` of vmcore-SK, dumped as QEMU's kdump-zlib.
#[test]
fn fixture_vmcore_sk_dumped_by_qemu_verifies_and_gives_the_kernel_log() {
    let Some(list) = fixtures() else { return };
    let f = list.into_iter().find(|f| f.name == "vmcore-SK").expect("vmcore-SK");
    let dir = temp_dir("qemu-fixture");
    let out = dir.join("vmcore-SK.kdump-zlib");
    let made = qemu_dump(&f.elf, &out, &[]);
    let pages = f.expected_count(1, "Pages filled with zero");
    assert_eq!(json_u64(&made, "zero_pages"), pages, "{made}");

    let verified = assert_verifies(&out, &f.elf);
    assert!(verified.contains(&format!(", {pages} zero, 0 lost, 0 excluded")), "{verified}");
    let info = info(&out);
    assert!(info_value(&info, "kernel").contains("6.1.0-57-amd64"), "{info}");
    assert!(info_value(&info, "phys_base").starts_with("-411041792 (VMCOREINFO;"), "{info}");

    let log = dir.join("dmesg.txt");
    vmdump_ok([OsArg::from("dmesg"), out.as_path().into(), log.as_path().into()]);
    // makedumpfile 1.7.2's log (expected/), which has no caller ids.
    let got = f.log_as_expected(&std::fs::read(&log).unwrap());
    let want = std::fs::read(f.expected_file("dmesg.txt")).unwrap();
    assert!(
        got == want,
        "the kernel log of the QEMU-style dump differs from makedumpfile 1.7.2's, caller ids aside ({} / {} bytes)",
        got.len(),
        want.len()
    );
}

#[test]
fn a_qemu_dump_converts_to_zstd_page_exact() {
    let dir = temp_dir("qemu-convert");
    let (vmcore, _) = synthetic_vmcore(&dir);
    let qemu = dir.join("kdump-zlib");
    qemu_dump(&vmcore, &qemu, &[]);
    let zstd = dir.join("zstd.kdump");
    let args: Vec<OsArg> = ["convert", "--no-progress", "--compress", "zstd", "-d", "0"]
        .map(OsArg::from)
        .into_iter()
        .chain([qemu.as_path().into(), zstd.as_path().into()])
        .collect();
    vmdump_ok(args);
    let read = libkdumpfile_compare(&zstd, &vmcore);
    assert_eq!((read.different, read.missing), (0, 0), "{}", read.raw);
    assert_eq!(read.equal, dump_counts(&zstd).ram_pages, "{}", read.raw);
    assert_verifies(&zstd, &vmcore);
}
