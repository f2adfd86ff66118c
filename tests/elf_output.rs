//! ELF output (`dump --elf`, makedumpfile's `-E`): libkdumpfile reads every
//! kept page equal to the source and finds every excluded page absent; the
//! pages present are exactly those a kdump dump of the same level stores
//! (zero pages aside); makedumpfile and vmdump read the ELF back.

mod support;

use std::path::{Path, PathBuf};

use support::dumps::{
    dump_counts, fixtures, libkdumpfile_compare, libkdumpfile_compare_elf, makedumpfile_ok,
};
use support::synthetic::{OsArg, dump_status, dump_with, expect_failure, kernel_spec, synthetic};
use support::temp_dir;
use vmdump_format::elf::ElfVmcore;
use vmdump_synth::{Flavour, SynthSpec};

/// Dumps `vmcore` at `level` as ELF and as kdump, and checks the ELF against both.
fn check_elf_dump(vmcore: &Path, dir: &Path, level: &str) -> PathBuf {
    let elf = dir.join(format!("d{level}.elf"));
    dump_with(vmcore, &elf, &["--no-progress", "--elf", "-d", level]);
    let kdump = dir.join(format!("d{level}.kdump"));
    dump_with(vmcore, &kdump, &["--no-progress", "-d", level]);
    let counts = dump_counts(&kdump);
    let read = libkdumpfile_compare_elf(&elf, vmcore);
    assert!(read.ok, "level {level}: {}", read.raw);
    assert_eq!(read.present, read.equal, "{}", read.raw);
    assert_eq!(read.present, counts.pages_in_file - counts.zero_pages, "level {level}: {}", read.raw);
    assert_eq!(read.present + read.absent, counts.ram_pages, "level {level}: {}", read.raw);
    elf
}

#[test]
fn elf_dumps_hold_the_kept_pages_and_nothing_else() {
    let dir = temp_dir("elf-levels");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    for level in ["0", "1", "31"] {
        check_elf_dump(&vmcore, &dir, level);
    }
}

#[test]
fn makedumpfile_and_vmdump_read_an_elf_dump_back() {
    let dir = temp_dir("elf-readback");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let elf = check_elf_dump(&vmcore, &dir, "31");
    let theirs = dir.join("makedumpfile.kdump");
    makedumpfile_ok(["-l".as_ref(), "-d".as_ref(), "0".as_ref(), elf.as_os_str(), theirs.as_os_str()]);
    let ours = dir.join("vmdump.kdump");
    dump_with(&elf, &ours, &["--no-progress", "-d", "0"]);
    for dump in [&theirs, &ours] {
        let read = libkdumpfile_compare(dump, &vmcore);
        assert_eq!(read.different, 0, "{}: {}", dump.display(), read.raw);
        assert_eq!(read.equal, dump_counts(dump).pages_in_file, "{}: {}", dump.display(), read.raw);
    }
}

#[test]
fn more_than_65534_segments_use_pn_xnum() {
    let dir = temp_dir("elf-xnum");
    let spec = SynthSpec { ram_bytes: 1280 << 20, data_percent: 30, ..SynthSpec::default() };
    let (vmcore, _) = synthetic(&dir, spec);
    let elf = dir.join("many.elf");
    dump_with(&vmcore, &elf, &["--no-progress", "--elf", "-d", "1"]);
    let head = std::fs::read(&elf).unwrap()[..64].to_vec();
    assert_eq!(u16::from_le_bytes([head[56], head[57]]), 0xffff, "e_phnum is PN_XNUM");
    let parsed = ElfVmcore::parse(&std::fs::File::open(&elf).unwrap()).unwrap();
    assert!(parsed.loads.len() > 65534, "{} segments", parsed.loads.len());
    let read = libkdumpfile_compare_elf(&elf, &vmcore);
    assert!(read.ok && read.segments == parsed.loads.len() as u64, "{}", read.raw);
    // The biggest files of the suite: not left behind once judged.
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_full_disk_leaves_an_incomplete_elf_that_reads() {
    let dir = temp_dir("elf-incomplete");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let elf = dir.join("cut.elf");
    let (status, stderr) = dump_status(
        &["--no-progress".as_ref(), "--elf".as_ref(), "-L".as_ref(), "4M".as_ref()],
        &vmcore,
        &elf,
    );
    assert_eq!(status, Some(1), "{stderr}");
    let head = std::fs::read(&elf).unwrap();
    assert_eq!(u32::from_le_bytes(head[48..52].try_into().unwrap()), 1, "e_flags marks it incomplete");
    let read = libkdumpfile_compare_elf(&elf, &vmcore);
    assert!(read.ok && read.present > 0 && read.present == read.equal, "{}", read.raw);
}

#[test]
fn elf_output_refuses_compression_and_split() {
    let dir = temp_dir("elf-refuse");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let out = dir.join("x");
    let with = |extra: &[&str]| {
        let mut args: Vec<OsArg> = vec!["dump".into(), "--elf".into()];
        args.extend(extra.iter().map(|&a| OsArg::from(a)));
        args.extend([vmcore.as_path().into(), out.as_path().into()]);
        args
    };
    expect_failure(&with(&["--compress", "zstd"]), &["not compressed"]);
    expect_failure(&with(&["--split", "2"]), &["cannot be combined with --elf"]);
    let args: Vec<OsArg> =
        vec!["makedumpfile".into(), "-E".into(), "-c".into(), vmcore.as_path().into(), out.as_path().into()];
    expect_failure(&args, &["not compressed"]);
    assert!(!out.exists());
}

#[test]
fn makedumpfile_e_writes_an_elf_dump() {
    let dir = temp_dir("elf-compat");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let elf = dir.join("compat.elf");
    let args: Vec<OsArg> = vec![
        "makedumpfile".into(),
        "-E".into(),
        "-d".into(),
        "31".into(),
        vmcore.as_path().into(),
        elf.as_path().into(),
    ];
    support::dumps::vmdump_ok(args);
    let read = libkdumpfile_compare_elf(&elf, &vmcore);
    assert!(read.ok && read.absent > 0, "{}", read.raw);
}

#[test]
fn elf_dumps_of_vmcore_sk_are_page_exact() {
    let Some(fixtures) = fixtures() else { return };
    let fixture = fixtures.iter().find(|f| f.name == "vmcore-SK").expect("vmcore-SK in the fixtures");
    let dir = temp_dir("elf-sk");
    check_elf_dump(&fixture.elf, &dir, "31");
}
