//! The dump engine on the real vmcores of `../shared/fixtures` (a QEMU dump
//! and a real /proc/vmcore of Debian's 6.1 kernel), judged by makedumpfile
//! and libkdumpfile. Without the fixtures these tests say so and do nothing.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::dumps::{
    Fixture, REPORT_CATEGORIES, dump_counts, fixtures, libkdumpfile_compare, makedumpfile,
    makedumpfile_rearrange, report_value, vmdump_ok,
};
use support::temp_dir;

const CODECS: [(&str, u32); 5] = [("zlib", 0x1), ("zstd", 0x20), ("lzo", 0x2), ("snappy", 0x4), ("none", 0)];

fn dump(fixture: &Fixture, out: &Path, extra: &[&str]) {
    let mut args: Vec<std::ffi::OsString> =
        vec!["dump".into(), "-d".into(), "1".into(), "--no-progress".into()];
    args.extend(extra.iter().map(Into::into));
    args.extend([fixture.elf.clone().into(), out.into()]);
    vmdump_ok(args);
}

/// makedumpfile's own -d 1 dump of the fixture, as the reference for counts.
fn reference_dump(fixture: &Fixture, dir: &Path) -> PathBuf {
    let out = dir.join("makedumpfile.kdump");
    let result =
        makedumpfile(&["-l".as_ref(), "-d".as_ref(), "1".as_ref(), fixture.elf.as_ref(), out.as_ref()]);
    assert!(result.status.success(), "makedumpfile: {}", String::from_utf8_lossy(&result.stderr));
    out
}

#[test]
fn every_compressor_gives_makedumpfiles_counts_and_every_page_reads_back() {
    let Some(fixtures) = fixtures() else { return };
    for fixture in &fixtures {
        let dir = temp_dir(&format!("fx-codecs-{}", fixture.name));
        let reference = dump_counts(&reference_dump(fixture, &dir));
        let expected_zero = fixture.expected_count(1, "Pages filled with zero");
        assert_eq!(reference.zero_pages, expected_zero, "makedumpfile itself disagrees with expected/");
        for (codec, flag) in CODECS {
            let out = dir.join(format!("{codec}.kdump"));
            dump(fixture, &out, &["--compress", codec]);
            let counts = dump_counts(&out);
            let what = format!("{} with {codec}", fixture.name);
            assert_eq!(counts.status, flag, "{what}: compression flag");
            assert_eq!(counts.max_mapnr, reference.max_mapnr, "{what}: max_mapnr");
            assert_eq!(counts.ram_pages, reference.ram_pages, "{what}: 1st bitmap");
            assert_eq!(counts.pages_in_file, reference.pages_in_file, "{what}: pages in file");
            assert_eq!(counts.zero_pages, expected_zero, "{what}: zero pages");
            let read = libkdumpfile_compare(&out, &fixture.elf);
            assert_eq!((read.different, read.missing), (0, 0), "{what}: {}", read.raw);
            assert_eq!(read.equal, counts.pages_in_file, "{what}: {}", read.raw);
        }
    }
}

#[test]
fn flattened_output_rearranged_by_makedumpfile_is_the_plain_file() {
    let Some(fixtures) = fixtures() else { return };
    for fixture in &fixtures {
        let dir = temp_dir(&format!("fx-flat-{}", fixture.name));
        for (codec, _) in CODECS {
            let (plain, flat, rearranged) = (dir.join("plain"), dir.join("flat"), dir.join("rearranged"));
            for path in [&plain, &flat, &rearranged] {
                let _ = std::fs::remove_file(path);
            }
            dump(fixture, &plain, &["--compress", codec]);
            dump(fixture, &flat, &["--compress", codec, "-F"]);
            makedumpfile_rearrange(&flat, &rearranged);
            let same = std::fs::read(&plain).unwrap() == std::fs::read(&rearranged).unwrap();
            assert!(
                same,
                "{} with {codec}: rearranged flattened output differs from the plain file",
                fixture.name
            );
        }
    }
}

#[test]
fn makedumpfile_dump_dmesg_reads_the_kernel_log_from_our_dump() {
    let Some(fixtures) = fixtures() else { return };
    for fixture in &fixtures {
        let dir = temp_dir(&format!("fx-dmesg-{}", fixture.name));
        let (out, log) = (dir.join("dump"), dir.join("dmesg.txt"));
        // Debian's makedumpfile 1.7.2 is built without zstd: zlib it reads.
        dump(fixture, &out, &["--compress", "zlib"]);
        let result = makedumpfile(&["--dump-dmesg".as_ref(), out.as_ref(), log.as_ref()]);
        assert!(result.status.success(), "{}: {}", fixture.name, String::from_utf8_lossy(&result.stderr));
        let expected = std::fs::read(fixture.expected_file("dmesg.txt")).unwrap();
        assert!(
            std::fs::read(&log).unwrap() == expected,
            "{}: the kernel log differs from expected/",
            fixture.name
        );
    }
}

#[test]
fn output_is_identical_for_any_thread_count_and_read_mode() {
    let Some(fixtures) = fixtures() else { return };
    for fixture in &fixtures {
        let dir = temp_dir(&format!("fx-same-{}", fixture.name));
        let reference = dir.join("t1");
        dump(fixture, &reference, &["--compress", "zlib", "--threads", "1"]);
        let reference = std::fs::read(&reference).unwrap();
        let variants: [&[&str]; 3] =
            [&["--threads", "2"], &["--threads", "4"], &["--threads", "2", "--no-mmap"]];
        for (i, extra) in variants.iter().enumerate() {
            let out = dir.join(format!("v{i}"));
            dump(fixture, &out, &[*extra, &["--compress", "zlib"]].concat());
            assert!(
                std::fs::read(&out).unwrap() == reference,
                "{}: {extra:?} differs from --threads 1",
                fixture.name
            );
        }
    }
}

#[test]
fn filtered_dumps_match_makedumpfile_at_31_and_at_each_single_bit() {
    let Some(fixtures) = fixtures() else { return };
    for fixture in &fixtures {
        let dir = temp_dir(&format!("fx-levels-{}", fixture.name));
        for level in [31u8, 2, 4, 8, 16] {
            let (ours, theirs) = (dir.join(format!("ours-{level}")), dir.join(format!("theirs-{level}")));
            let what = format!("{} -d {level}", fixture.name);
            let mut args: Vec<std::ffi::OsString> = vec!["dump".into(), "--no-progress".into()];
            args.extend(["-d".into(), level.to_string().into(), "--compress".into(), "lzo".into()]);
            args.extend([fixture.elf.clone().into(), ours.clone().into()]);
            let our_report = vmdump_ok(args);
            let level_arg = level.to_string();
            let result = makedumpfile(&[
                "--message-level".as_ref(),
                "22".as_ref(),
                "-l".as_ref(),
                "-d".as_ref(),
                level_arg.as_ref(),
                fixture.elf.as_ref(),
                theirs.as_ref(),
            ]);
            assert!(result.status.success(), "{what}: makedumpfile failed");
            let their_report = String::from_utf8_lossy(&result.stdout).into_owned()
                + &String::from_utf8_lossy(&result.stderr);
            for label in REPORT_CATEGORIES {
                let (a, b) = (report_value(&our_report, label), report_value(&their_report, label));
                assert_eq!(a, b, "{what}: {label}");
                if level == 31 {
                    assert_eq!(a, fixture.expected_count(31, label), "{what}: {label} against expected/");
                }
            }
            let (a, b) = (dump_counts(&ours), dump_counts(&theirs));
            assert_eq!(
                (a.pages_in_file, a.zero_pages, a.max_mapnr),
                (b.pages_in_file, b.zero_pages, b.max_mapnr),
                "{what}"
            );
            let read = libkdumpfile_compare(&ours, &fixture.elf);
            assert_eq!((read.equal, read.different), (a.pages_in_file, 0), "{what}: {}", read.raw);
            assert_eq!(read.missing, a.ram_pages - a.pages_in_file, "{what}: {}", read.raw);
        }
    }
}

#[test]
fn kdump_tools_pipeline_with_vmdump_installed_as_makedumpfile() {
    let Some(fixtures) = fixtures() else { return };
    let fixture = fixtures.iter().find(|f| f.name == "vmcore-SK").expect("vmcore-SK");
    let dir = temp_dir("fx-kdump-tools");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_vmdump"), bin.join("makedumpfile")).unwrap();
    let (flat, out) = (dir.join("f"), dir.join("out"));
    // kdump-tools: makedumpfile -F -c -d 31 vmcore | compress > file; makedumpfile -R out < file
    let script = format!(
        "set -e; export PATH={bin}:$PATH; makedumpfile -F -c -d 31 {elf} | cat > {flat}; makedumpfile -R {out} < {flat}",
        bin = bin.display(),
        elf = fixture.elf.display(),
        flat = flat.display(),
        out = out.display()
    );
    let result = Command::new("bash").arg("-c").arg(&script).output().unwrap();
    assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
    let reference = dump_counts(&reference_dump_at(fixture, &dir, 31));
    let counts = dump_counts(&out);
    assert_eq!((counts.pages_in_file, counts.zero_pages), (reference.pages_in_file, reference.zero_pages));
    assert_eq!(counts.status, 0x1, "zlib, complete");
    let read = libkdumpfile_compare(&out, &fixture.elf);
    assert_eq!((read.equal, read.different), (counts.pages_in_file, 0), "{}", read.raw);
}

/// makedumpfile's own -d `level` dump (lzo), as the reference for counts.
fn reference_dump_at(fixture: &Fixture, dir: &Path, level: u8) -> PathBuf {
    let out = dir.join(format!("makedumpfile-d{level}.kdump"));
    let level = level.to_string();
    let result =
        makedumpfile(&["-l".as_ref(), "-d".as_ref(), level.as_ref(), fixture.elf.as_ref(), out.as_ref()]);
    assert!(result.status.success(), "makedumpfile: {}", String::from_utf8_lossy(&result.stderr));
    out
}

#[test]
fn dump_dmesg_through_vmdump_as_makedumpfile_from_the_elf_and_from_our_dump() {
    let Some(fixtures) = fixtures() else { return };
    for fixture in &fixtures {
        let dir = temp_dir(&format!("fx-our-dmesg-{}", fixture.name));
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_vmdump"), bin.join("makedumpfile")).unwrap();
        let ours = dir.join("d31");
        let args = ["dump", "--no-progress", "-d", "31", "--compress", "zstd"].map(std::ffi::OsString::from);
        vmdump_ok(args.into_iter().chain([fixture.elf.clone().into(), ours.clone().into()]));
        let expected = std::fs::read(fixture.expected_file("dmesg.txt")).unwrap();
        for (from, input) in [("ELF", &fixture.elf), ("dump", &ours)] {
            let log = dir.join(format!("{from}.txt"));
            let result = Command::new(bin.join("makedumpfile"))
                .arg("--dump-dmesg")
                .arg(input)
                .arg(&log)
                .output()
                .unwrap();
            assert!(
                result.status.success(),
                "{} {from}: {}",
                fixture.name,
                String::from_utf8_lossy(&result.stderr)
            );
            // expected/ is makedumpfile 1.7.2's log: vmdump's, which has the
            // caller ids of 1.7.5 and later, without them.
            assert!(
                fixture.log_as_expected(&std::fs::read(&log).unwrap()) == expected,
                "{} from the {from}: log differs from makedumpfile 1.7.2's, caller ids aside",
                fixture.name
            );
            let said = String::from_utf8_lossy(&result.stdout);
            let message =
                format!("The dmesg log is saved to {}.\n\nmakedumpfile Completed.\n", log.display());
            assert!(said.ends_with(&message), "makedumpfile's messages: {said:?}");
        }
    }
}
