//! Linux 7.2 (Debian unstable's 7.2.13), on the real `/proc/vmcore` of
//! `../shared/fixtures/vmcore-SK72`, judged by what upstream makedumpfile
//! master (b7587f1, after the 7.1 fix f50c015) wrote for it: its reports
//! (`expected/vmcore-SK72.dN.report.txt`), the pages and bytes of its
//! dumps (the fixtures README) and its kernel log. Debian's makedumpfile
//! 1.7.2, which misclassifies 7.x kernels, judges nothing here; it only
//! rearranges the flattened stream, which is the same on every kernel.
//!
//! Both distribution command lines, through vmdump installed as
//! `makedumpfile`: kdump-utils' `-l --message-level 7 -d N VMCORE FILE` and
//! kdump-tools' `-F -c -d N VMCORE | cat > FILE`. And a VMCOREINFO that
//! lacks a key (7.1's rename, undone): the makedumpfile command line still
//! writes a dump, `vmdump dump` refuses it.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::dumps::{
    Fixture, REPORT_CATEGORIES, drgn_compare, dump_counts, edited_vmcoreinfo, fixture_72,
    libkdumpfile_compare, makedumpfile_rearrange, report_value,
};
use support::synthetic::{OsArg, expect_failure};
use support::temp_dir;

/// A directory with `makedumpfile` and `vmdump` linked to the vmdump binary.
fn as_makedumpfile(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["makedumpfile", "vmdump"] {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_vmdump"), bin.join(name)).unwrap();
    }
    bin
}

/// Runs a shell command line with `bin` first on PATH.
fn sh(bin: &Path, line: &str) -> Output {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    Command::new("bash").args(["-c", &format!("set -o pipefail; {line}")]).env("PATH", path).output().unwrap()
}

/// kdump-utils' call at `level`: the dump file.
fn kdump_utils(bin: &Path, vmcore: &Path, dir: &Path, level: u8) -> (PathBuf, Output) {
    let out = dir.join(format!("kdump-utils-d{level}"));
    let line = format!("makedumpfile -l --message-level 7 -d {level} {} {}", vmcore.display(), out.display());
    (out, sh(bin, &line))
}

/// kdump-tools' call at `level`, the stream rearranged by makedumpfile -R.
fn kdump_tools(bin: &Path, vmcore: &Path, dir: &Path, level: u8) -> (PathBuf, Output) {
    let (flat, out) =
        (dir.join(format!("kdump-tools-d{level}.flat")), dir.join(format!("kdump-tools-d{level}")));
    let line = format!("makedumpfile -F -c -d {level} {} | cat > {}", vmcore.display(), flat.display());
    let result = sh(bin, &line);
    if result.status.success() {
        makedumpfile_rearrange(&flat, &out);
    }
    (out, result)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Upstream's dump of the fixture at `level` with `comp`, from the fixtures
/// README's table: (output bytes, pages in the file).
fn upstream_dump(fixture: &Fixture, level: u8, comp: &str) -> (u64, u64) {
    let readme = std::fs::read_to_string(fixture.expected.join("../README.md")).expect("the fixtures README");
    let number = |cell: &str| cell.trim().replace(',', "").parse::<u64>().expect("a number");
    readme
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            (cells.len() == 9 && cells[1] == "SK72" && cells[2] == level.to_string() && cells[3] == comp)
                .then(|| (number(cells[6]), number(cells[7])))
        })
        .next()
        .unwrap_or_else(|| panic!("no SK72 -d {level} {comp} row in the fixtures README"))
}

/// Both command lines at -d 31 and -d 1: exit 0 and no warning; the level
/// recorded; pages in the file and zero pages as upstream's; every page
/// read back by libkdumpfile; with -l (liblzo2, as upstream) the same
/// number of bytes as upstream's file.
#[test]
fn both_distribution_command_lines_dump_7_2_as_upstream_makedumpfile() {
    let Some(fixture) = fixture_72() else { return };
    let dir = temp_dir("k72-forms");
    let bin = as_makedumpfile(&dir);
    for level in [31, 1] {
        let zero = fixture.expected_count(level, "Pages filled with zero");
        let (lzo_bytes, pages) = upstream_dump(&fixture, level, "lzo");
        for (form, (out, result)) in [
            ("kdump-utils", kdump_utils(&bin, &fixture.elf, &dir, level)),
            ("kdump-tools", kdump_tools(&bin, &fixture.elf, &dir, level)),
        ] {
            let what = format!("{form} -d {level}");
            assert!(result.status.success(), "{what}: {}", stderr(&result));
            assert!(!stderr(&result).contains("warning"), "{what}: {}", stderr(&result));
            let counts = dump_counts(&out);
            assert_eq!((counts.pages_in_file, counts.zero_pages), (pages, zero), "{what}");
            let level_recorded = vmdump_format::kdump::SubHeader::decode(
                &std::fs::read(&out).unwrap()[4096..],
                vmdump_format::elf::Endian::Little,
            )
            .expect("sub header")
            .dump_level;
            assert_eq!(level_recorded, i32::from(level), "{what}");
            let read = libkdumpfile_compare(&out, &fixture.elf);
            assert_eq!((read.equal, read.different), (pages, 0), "{what}: {}", read.raw);
            if form == "kdump-utils" {
                assert_eq!(
                    std::fs::metadata(&out).unwrap().len(),
                    lzo_bytes,
                    "{what}: bytes of upstream's -l"
                );
            }
        }
    }
    // drgn, without a vmlinux, reads every page of all four dumps.
    for (form, level) in [("kdump-utils", 31), ("kdump-utils", 1), ("kdump-tools", 31), ("kdump-tools", 1)] {
        let pages = upstream_dump(&fixture, level, "lzo").1;
        let read = drgn_compare(&dir.join(format!("{form}-d{level}")), &fixture.elf);
        assert_eq!((read.equal, read.different), (pages, 0), "drgn, {form} -d {level}: {}", read.raw);
    }
}

/// The report's counts (makedumpfile's `--message-level 22`) equal
/// upstream's for every class, at both levels.
#[test]
fn the_report_counts_every_class_as_upstream_makedumpfile() {
    let Some(fixture) = fixture_72() else { return };
    let dir = temp_dir("k72-report");
    let bin = as_makedumpfile(&dir);
    for level in [31, 1] {
        let out = dir.join(format!("d{level}"));
        let line = format!(
            "makedumpfile --message-level 22 -l -d {level} {} {}",
            fixture.elf.display(),
            out.display()
        );
        let result = sh(&bin, &line);
        let text = format!("{}{}", String::from_utf8_lossy(&result.stdout), stderr(&result));
        assert!(result.status.success(), "{text}");
        for label in ["Excluded pages", "Total pages"].into_iter().chain(REPORT_CATEGORIES) {
            assert_eq!(
                report_value(&text, label),
                fixture.expected_count(level, label),
                "-d {level}: {label}"
            );
        }
    }
}

/// Refiltering vmdump's -d 1 dump of 7.2 to -d 31 (makedumpfile's command
/// line on a dump file) keeps upstream's pages.
#[test]
fn a_7_2_dump_refilters_to_upstreams_pages() {
    let Some(fixture) = fixture_72() else { return };
    let dir = temp_dir("k72-refilter");
    let bin = as_makedumpfile(&dir);
    let (d1, result) = kdump_utils(&bin, &fixture.elf, &dir, 1);
    assert!(result.status.success(), "{}", stderr(&result));
    let out = dir.join("refiltered");
    let result = sh(&bin, &format!("makedumpfile -l -d 31 {} {}", d1.display(), out.display()));
    assert!(result.status.success(), "{}", stderr(&result));
    let (_, pages) = upstream_dump(&fixture, 31, "lzo");
    assert_eq!(dump_counts(&out).pages_in_file, pages);
    let read = libkdumpfile_compare(&out, &fixture.elf);
    assert_eq!((read.equal, read.different), (pages, 0), "{}", read.raw);
}

/// The kernel log through both commands, from the ELF and from a dump:
/// upstream's byte for byte (caller ids included).
#[test]
fn the_kernel_log_of_7_2_is_upstreams_from_the_elf_and_from_a_dump() {
    let Some(fixture) = fixture_72() else { return };
    let dir = temp_dir("k72-dmesg");
    let bin = as_makedumpfile(&dir);
    let (dump, result) = kdump_utils(&bin, &fixture.elf, &dir, 31);
    assert!(result.status.success(), "{}", stderr(&result));
    let want = std::fs::read(fixture.expected_file("dmesg.txt")).unwrap();
    for (from, input) in [("ELF", &fixture.elf), ("dump", &dump)] {
        let (a, b) = (dir.join(format!("{from}.mdf.txt")), dir.join(format!("{from}.vmdump.txt")));
        let result = sh(&bin, &format!("makedumpfile --dump-dmesg {} {}", input.display(), a.display()));
        assert!(result.status.success(), "{from}: {}", stderr(&result));
        let result = sh(&bin, &format!("vmdump dmesg {} {}", input.display(), b.display()));
        assert!(result.status.success(), "{from}: {}", stderr(&result));
        for log in [a, b] {
            assert!(std::fs::read(&log).unwrap() == want, "{}: not upstream's log", log.display());
        }
    }
}

/// Without the key that tells tail pages (7.1's `OFFSET(page.compound_info)`,
/// renamed away), bits 2, 4 and 8 cannot be honoured. Both distribution
/// command lines still write a dump: at level 17 (zero and free pages
/// left out, found without that key), recorded in the header, the bits
/// and the key named on stderr, exit status 0 (kdump-utils keeps a dump
/// only then; kdump-tools' pipe loses the status). Every page reads back.
/// `vmdump dump` refuses it and writes nothing.
#[test]
fn a_key_missing_lowers_the_level_through_makedumpfile_and_stops_vmdump_dump() {
    let Some(fixture) = fixture_72() else { return };
    let dir = temp_dir("k72-missing-key");
    let bin = as_makedumpfile(&dir);
    let vmcore =
        edited_vmcoreinfo(&fixture, &dir, b"OFFSET(page.compound_info)=", b"OFFSET(page.compound_xxxx)=");
    let ram = upstream_dump(&fixture, 1, "lzo").1;
    let free = fixture.expected_count(31, "Free pages");
    for (form, (out, result)) in [
        ("kdump-utils", kdump_utils(&bin, &vmcore, &dir, 31)),
        ("kdump-tools", kdump_tools(&bin, &vmcore, &dir, 31)),
    ] {
        let said = stderr(&result);
        assert_eq!(result.status.code(), Some(0), "{form}: {said}");
        for words in
            ["OFFSET(page.compound_head)", "bits 2, 4, 8 cannot be honoured", "at level 17 instead of 31"]
        {
            assert!(said.contains(words), "{form}: `{words}` not in {said}");
        }
        let sub = vmdump_format::kdump::SubHeader::decode(
            &std::fs::read(&out).unwrap()[4096..],
            vmdump_format::elf::Endian::Little,
        )
        .unwrap();
        assert_eq!(sub.dump_level, 17, "{form}");
        let counts = dump_counts(&out);
        assert_eq!(counts.pages_in_file, ram - free, "{form}: every page but the free ones");
        let read = libkdumpfile_compare(&out, &vmcore);
        assert_eq!((read.equal, read.different), (ram - free, 0), "{form}: {}", read.raw);
    }
    let out = dir.join("refused");
    let args: Vec<OsArg> =
        vec!["dump".into(), "-d".into(), "31".into(), vmcore.as_path().into(), out.as_path().into()];
    expect_failure(&args, &["OFFSET(page.compound_head)", "nothing was written", "--allow-lower-level"]);
    assert!(!out.exists());
}
