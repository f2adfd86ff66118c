//! `vmdump verify` and `vmdump info`: vmdump's own dumps for every
//! compressor, makedumpfile's dumps of the real fixtures, corrupted and
//! truncated dumps, garbage.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::dumps::{assert_verifies_incomplete, dump_counts, fixtures, vmdump, vmdump_ok};
use support::temp_dir;
use vmdump_format::kdump::{KdumpReader, StoredPage};
use vmdump_synth::{self as synth, SynthSpec};

fn synthetic(dir: &Path) -> PathBuf {
    let path = dir.join("vmcore");
    let spec = SynthSpec { ram_bytes: 32 << 20, partial_tail: true, phoff_gap: true, ..SynthSpec::default() };
    synth::write(&spec, &path).expect("write synthetic vmcore");
    path
}

fn dump(vmcore: &Path, out: &Path, codec: &str) {
    let args: Vec<&std::ffi::OsStr> =
        vec!["dump".as_ref(), "--compress".as_ref(), codec.as_ref(), vmcore.as_os_str(), out.as_os_str()];
    vmdump_ok(args);
}

fn verify(dump: &Path, against: Option<&Path>) -> Output {
    let mut args = vec!["verify".as_ref(), dump.as_os_str()];
    if let Some(src) = against {
        args.extend(["--against".as_ref(), src.as_os_str()]);
    }
    vmdump(args)
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn assert_verifies(dump: &Path, against: &Path) -> String {
    let out = verify(dump, Some(against));
    let all = text(&out);
    assert!(out.status.success(), "{} does not verify:\n{all}", dump.display());
    assert!(all.contains("verified ") && all.contains("; 0 problems"), "{all}");
    all
}

fn assert_fails(out: &Output, wanted: &str) -> String {
    let all = text(out);
    assert_eq!(out.status.code(), Some(1), "expected failure:\n{all}");
    assert!(!all.contains("panicked"), "{all}");
    assert!(all.contains(wanted), "wanted {wanted:?} in:\n{all}");
    all
}

fn info_value(info: &str, label: &str) -> String {
    let line = info.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no {label} in {info}"));
    line.split_once(": ").expect("label : value").1.trim().to_owned()
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

#[test]
fn every_compressor_verifies_and_info_reports_it() {
    let dir = temp_dir("verify-codecs");
    let vmcore = synthetic(&dir);
    for codec in ["zlib", "zstd", "lzo", "snappy", "none"] {
        let out = dir.join(format!("{codec}.kdump"));
        dump(&vmcore, &out, codec);
        assert_verifies(&out, &vmcore);
        assert!(verify(&out, None).status.success(), "{codec} without --against");
        let info = String::from_utf8(vmdump(["info".as_ref(), out.as_os_str()]).stdout).unwrap();
        let counts = dump_counts(&out);
        assert_eq!(info_value(&info, "compression"), codec, "{info}");
        assert_eq!(info_value(&info, "pages in file"), hex(counts.pages_in_file), "{info}");
        assert_eq!(info_value(&info, "RAM pages"), hex(counts.ram_pages), "{info}");
        assert_eq!(info_value(&info, "zero pages"), hex(counts.zero_pages), "{info}");
        assert_eq!(info_value(&info, "max_mapnr"), hex(counts.max_mapnr), "{info}");
        assert_eq!(info_value(&info, "incomplete"), "no");
        assert!(info.contains("OSRELEASE=") && info.contains("KERNELOFFSET="), "{info}");
    }
}

/// The pfn and data offset of a compressed page in the middle of the dump.
fn some_compressed_page(path: &Path) -> (u64, u64, u32) {
    let reader = KdumpReader::open(std::fs::File::open(path).unwrap()).unwrap();
    let pages: Vec<(u64, u64, u32)> = reader
        .dumpable_pfns()
        .map(Result::unwrap)
        .filter_map(|(pfn, index)| match reader.page_at(pfn, index).unwrap() {
            StoredPage::Stored { desc, .. } if desc.flags != 0 => Some((pfn, desc.offset, desc.size)),
            _ => None,
        })
        .collect();
    pages[pages.len() / 2]
}

#[test]
fn a_flipped_byte_in_a_compressed_page_names_its_pfn() {
    let dir = temp_dir("verify-flip");
    let vmcore = synthetic(&dir);
    for codec in ["zlib", "zstd", "lzo", "snappy"] {
        let out = dir.join(format!("{codec}.kdump"));
        dump(&vmcore, &out, codec);
        let (pfn, offset, size) = some_compressed_page(&out);
        let mut bytes = std::fs::read(&out).unwrap();
        bytes[(offset + u64::from(size) / 2) as usize] ^= 0x5a;
        std::fs::write(&out, &bytes).unwrap();
        assert_fails(&verify(&out, Some(&vmcore)), &format!("pfn {pfn:#x}: "));
    }
}

#[test]
fn a_truncated_dump_names_a_pfn_beyond_the_end() {
    let dir = temp_dir("verify-truncated");
    let vmcore = synthetic(&dir);
    let out = dir.join("zstd.kdump");
    dump(&vmcore, &out, "zstd");
    let data = KdumpReader::open(std::fs::File::open(&out).unwrap()).unwrap().data_offset();
    let len = std::fs::metadata(&out).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&out).unwrap();
    file.set_len(data + (len - data) / 2).unwrap();
    assert_fails(&verify(&out, Some(&vmcore)), "beyond the end of the file");
    assert_fails(&verify(&out, None), "pfn 0x");
}

#[test]
fn garbage_and_truncated_headers_are_clean_errors() {
    let dir = temp_dir("verify-garbage");
    let vmcore = synthetic(&dir);
    let good = dir.join("good.kdump");
    dump(&vmcore, &good, "zlib");
    let bytes = std::fs::read(&good).unwrap();
    let cases: [(&str, Vec<u8>); 5] = [
        ("empty", Vec::new()),
        ("garbage", (0..10_000u32).map(|i| (i * 7919 % 251) as u8).collect()),
        ("half-header", bytes[..200].to_vec()),
        ("no-sub-header", bytes[..4096 + 50].to_vec()),
        ("no-bitmaps", bytes[..3 * 4096].to_vec()),
    ];
    for (name, content) in cases {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        for cmd in ["verify", "info"] {
            let out = vmdump([cmd.as_ref(), path.as_os_str()]);
            assert_fails(&out, "vmdump: error: ");
        }
    }
}

fn makedumpfile(args: &[&str], elf: &Path, out: &Path) {
    let status =
        Command::new("makedumpfile").args(args).arg(elf).arg(out).output().expect("run makedumpfile");
    assert!(status.status.success(), "makedumpfile {args:?}: {}", String::from_utf8_lossy(&status.stderr));
}

#[test]
fn fixtures_verify_for_vmdump_and_makedumpfile_dumps() {
    let Some(list) = fixtures() else { return };
    let dir = temp_dir("verify-fixtures");
    for f in list {
        let ours = dir.join(format!("{}.vmdump", f.name));
        let args: Vec<&std::ffi::OsStr> =
            vec!["dump".as_ref(), "-d".as_ref(), "31".as_ref(), f.elf.as_os_str(), ours.as_os_str()];
        vmdump_ok(args);
        assert_verifies(&ours, &f.elf);
        for (tag, args) in [("l31", &["-l", "-d", "31"][..]), ("c1", &["-c", "-d", "1"][..])] {
            let theirs = dir.join(format!("{}.{tag}", f.name));
            makedumpfile(args, &f.elf, &theirs);
            let summary = assert_verifies(&theirs, &f.elf);
            assert!(!summary.contains(" 0 equal to the source"), "{summary}");
        }
    }
}

/// A dump cut short by the size limit at dump level 1: its 2nd bitmap
/// leaves out the pages never written, so the data area starts past where
/// the bitmap's count places it. `verify` must still find the shared zero
/// page (it once took it for overlapping raw pages) and pass with
/// `--allow-incomplete`, and `info` count its zero pages.
#[test]
fn a_cut_short_level_1_dump_verifies_as_incomplete() {
    let dir = temp_dir("verify-cut-level-1");
    let vmcore = synthetic(&dir);
    let out = dir.join("cut.kdump");
    let run = vmdump(
        ["dump", "--no-progress", "-d", "1", "-L", "1M", "--compress", "zlib:1"]
            .map(AsRef::as_ref)
            .into_iter()
            .chain([vmcore.as_os_str(), out.as_os_str()]),
    );
    assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    let said = assert_verifies_incomplete(&out, &vmcore, "cut at 1M");
    let zero: u64 = said.split(" zero,").next().and_then(|s| s.rsplit(' ').next()).unwrap().parse().unwrap();
    assert!(zero > 0, "the zero pages were not recognised: {said}");
}
