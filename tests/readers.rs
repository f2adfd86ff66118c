//! What people debug with opens every kind of dump vmdump writes, on both
//! real vmcores: libkdumpfile gives `arch.name` and the same `linux.uts.*`
//! as for makedumpfile's dump of the same vmcore (the header's utsname is
//! the kernel's `init_uts_ns`), and drgn (from PyPI, without a vmlinux)
//! opens each and reads every page it has equal to the source.

mod support;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::dumps::{
    Fixture, drgn_compare, fixtures, libkdumpfile_compare, libkdumpfile_compare_elf, makedumpfile_ok,
    vmdump_ok,
};
use support::temp_dir;

/// Every kind of kdump output, each as its reader takes it: (what, file).
fn kdump_outputs(elf: &Path, dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let path = |name: &str| dir.join(name);
    let (plain, flat, split) = (path("plain"), path("flat"), path("split"));
    vmdump_ok([
        "makedumpfile".as_ref(),
        "-c".as_ref(),
        "-d".as_ref(),
        "31".as_ref(),
        elf.as_os_str(),
        plain.as_ref(),
    ]);
    flattened(elf, &flat);
    let rearranged = path("flat.rearranged");
    let status = Command::new("makedumpfile")
        .arg("-R")
        .arg(&rearranged)
        .stdin(std::fs::File::open(&flat).unwrap())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "makedumpfile -R of vmdump's flattened stream");
    let options = ["dump", "--split", "2", "-d", "31", "--compress", "zstd", "--no-progress"].map(OsStr::new);
    vmdump_ok([&options[..], &[elf.as_os_str(), split.as_os_str()]].concat());
    let pieces = [path("split.1"), path("split.2")];
    let reassembled = path("reassembled");
    vmdump_ok([OsStr::new("reassemble"), pieces[0].as_ref(), pieces[1].as_ref(), reassembled.as_ref()]);
    let converted = path("converted");
    let options = ["convert", "--compress", "snappy", "--no-progress"].map(OsStr::new);
    vmdump_ok([&options[..], &[plain.as_os_str(), converted.as_os_str()]].concat());
    vec![
        ("kdump, zlib (makedumpfile -c)", plain),
        ("flattened (-F -l), rearranged by makedumpfile -R", rearranged),
        ("split piece 1 (--split 2, zstd)", pieces[0].clone()),
        ("split piece 2", pieces[1].clone()),
        ("reassembled", reassembled),
        ("converted to snappy", converted),
    ]
}

/// `makedumpfile -F -l -d 31 VMCORE > flat` through vmdump.
fn flattened(elf: &Path, flat: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_vmdump"))
        .args(["makedumpfile", "-F", "-l", "-d", "31"])
        .arg(elf)
        .stdout(std::fs::File::create(flat).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// libkdumpfile reads the same pages as drgn, and both equal to the source.
fn drgn_agrees(dump: &Path, fixture: &Fixture, what: &str, pages: u64) {
    let drgn = drgn_compare(dump, &fixture.elf);
    assert_eq!((drgn.equal, drgn.different), (pages, 0), "{}: {what}: drgn: {}", fixture.name, drgn.raw);
    eprintln!("{}: {what}: {pages} pages equal through libkdumpfile and drgn", fixture.name);
}

fn makedumpfile_dump(fixture: &Fixture, option: &str, out: &Path) {
    makedumpfile_ok([OsStr::new(option), "-d".as_ref(), "31".as_ref(), fixture.elf.as_ref(), out.as_ref()]);
}

fn judge(fixture: &Fixture) {
    let dir = temp_dir(&format!("readers-{}", fixture.name));
    let reference = dir.join("makedumpfile");
    makedumpfile_dump(fixture, "-c", &reference);
    let expected = libkdumpfile_compare(&reference, &fixture.elf).attrs().to_owned();
    assert!(expected.contains("\"arch.name\": \"x86_64\"") && !expected.contains("null"), "{expected}");
    for (what, dump) in kdump_outputs(&fixture.elf, &dir) {
        let read = libkdumpfile_compare(&dump, &fixture.elf);
        assert!(
            read.equal > 0 && read.different == 0,
            "{}: {what}: libkdumpfile: {}",
            fixture.name,
            read.raw
        );
        assert_eq!(
            read.attrs(),
            expected,
            "{}: {what}: attributes differ from makedumpfile's dump",
            fixture.name
        );
        drgn_agrees(&dump, fixture, what, read.equal);
    }
    let drgn = drgn_compare(&dir.join("flat"), &fixture.elf);
    assert!(
        drgn.equal > 0 && drgn.different == 0,
        "{}: drgn on the flattened stream: {}",
        fixture.name,
        drgn.raw
    );
    // An ELF core has no utsname of its own: readers find what makedumpfile's -E gives them.
    let (ours, theirs) = (dir.join("elf"), dir.join("makedumpfile.elf"));
    vmdump_ok([
        "makedumpfile".as_ref(),
        "-E".as_ref(),
        "-d".as_ref(),
        "31".as_ref(),
        fixture.elf.as_os_str(),
        ours.as_ref(),
    ]);
    makedumpfile_dump(fixture, "-E", &theirs);
    let read = libkdumpfile_compare_elf(&ours, &fixture.elf);
    assert!(read.ok && read.equal == read.present, "{}: ELF: libkdumpfile: {}", fixture.name, read.raw);
    let expected = libkdumpfile_compare_elf(&theirs, &fixture.elf).attrs().to_owned();
    assert!(expected.contains("\"arch.name\": \"x86_64\""), "{expected}");
    assert_eq!(read.attrs(), expected, "{}: ELF: attributes differ from makedumpfile -E's", fixture.name);
    drgn_agrees(&ours, fixture, "ELF (makedumpfile -E)", read.equal);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn fixture(name: &str) -> Option<Fixture> {
    fixtures().map(|all| all.into_iter().find(|f| f.name == name).expect("a fixture of that name"))
}

#[test]
fn libkdumpfile_and_drgn_read_every_output_kind_of_vmcore_s() {
    if let Some(f) = fixture("vmcore-S") {
        judge(&f);
    }
}

#[test]
fn libkdumpfile_and_drgn_read_every_output_kind_of_vmcore_sk() {
    if let Some(f) = fixture("vmcore-SK") {
        judge(&f);
    }
}
