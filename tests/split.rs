//! Split dumps (`dump --split N`, makedumpfile's `--split`) and their
//! reassembly, by vmdump and by makedumpfile, judged by libkdumpfile; on a
//! synthetic kernel, and on the real vmcore-SK when the fixtures are there.

mod support;

use std::path::{Path, PathBuf};

use support::dumps::{fixtures, libkdumpfile_compare, makedumpfile_ok, vmdump, vmdump_ok};
use support::synthetic::{OsArg, expect_failure, kernel_spec, synthetic};
use support::temp_dir;
use vmdump_format::kdump::KdumpReader;
use vmdump_synth::{Flavour, SynthSpec};

/// `vmdump dump --split 3` of `vmcore` at `level`; returns the pieces.
fn split(vmcore: &Path, out: &Path, level: &str, block: &str) -> Vec<PathBuf> {
    split_in(vmcore, out, level, block, 3)
}

/// `vmdump dump --split PIECES` of `vmcore` at `level`; returns the pieces.
fn split_in(vmcore: &Path, out: &Path, level: &str, block: &str, pieces: usize) -> Vec<PathBuf> {
    let args: Vec<OsArg> = vec![
        "dump".into(),
        "--no-progress".into(),
        "--compress".into(),
        "zlib".into(),
        "-d".into(),
        level.into(),
        "--split".into(),
        pieces.to_string().as_str().into(),
        "--splitblock-size".into(),
        block.into(),
        vmcore.into(),
        out.into(),
    ];
    vmdump_ok(args);
    (1..=pieces).map(|i| PathBuf::from(format!("{}.{i}", out.display()))).collect()
}

/// The pfn ranges of the pieces, from their sub headers.
fn pieces_of(pieces: &[PathBuf]) -> Vec<std::ops::Range<u64>> {
    pieces
        .iter()
        .map(|p| {
            let reader = KdumpReader::open(std::fs::File::open(p).unwrap()).unwrap();
            reader.piece().unwrap_or_else(|| panic!("{} is not a split piece", p.display()))
        })
        .collect()
}

fn reassemble_both(pieces: &[PathBuf], dir: &Path) -> (PathBuf, PathBuf) {
    let ours = dir.join("vmdump-reassembled");
    let mut args: Vec<OsArg> = vec!["reassemble".into()];
    args.extend(pieces.iter().rev().map(|p| p.as_path().into()));
    args.push(ours.as_path().into());
    vmdump_ok(args);
    let theirs = dir.join("makedumpfile-reassembled");
    let mut args: Vec<OsArg> = vec!["--reassemble".into()];
    args.extend(pieces.iter().map(|p| p.as_path().into()));
    args.push(theirs.as_path().into());
    makedumpfile_ok(args);
    (ours, theirs)
}

/// Pieces of vmdump's split dump: contiguous, each holding pages, each
/// verifying alone; joined by vmdump and by makedumpfile into the same
/// bytes, which libkdumpfile reads page-exact.
fn check_split_dump(vmcore: &Path, dir: &Path, level: &str, block: &str) {
    let pieces = split(vmcore, &dir.join("split"), level, block);
    let ranges = pieces_of(&pieces);
    assert_eq!(ranges[0].start, 0);
    assert!(ranges.windows(2).all(|w| w[0].end == w[1].start), "{ranges:?}");
    assert!(ranges.iter().all(|r| !r.is_empty()), "every piece should hold pages: {ranges:?}");
    for piece in &pieces {
        let out = vmdump(["verify".as_ref(), piece.as_os_str(), "--against".as_ref(), vmcore.as_os_str()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("in the other pieces"), "{}: {text}", piece.display());
    }
    let mut set: Vec<OsArg> = vec!["verify".into()];
    set.extend(pieces.iter().map(|p| p.as_path().into()));
    set.extend(["--against".into(), vmcore.into()]);
    vmdump_ok(set);
    let mut info: Vec<OsArg> = vec!["info".into()];
    info.extend(pieces.iter().map(|p| p.as_path().into()));
    let out = vmdump(info);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("split dump       : 3 pieces"), "{text}");
    let (ours, theirs) = reassemble_both(&pieces, dir);
    assert!(std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap(), "reassemblies differ");
    let read = libkdumpfile_compare(&ours, vmcore);
    let stored = KdumpReader::open(std::fs::File::open(&ours).unwrap()).unwrap().num_dumpable();
    assert_eq!((read.different, read.equal), (0, stored), "{}", read.raw);
}

#[test]
fn split_dumps_of_a_synthetic_kernel_reassemble_page_exact() {
    let dir = temp_dir("split-synthetic");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    check_split_dump(&vmcore, &dir, "31", "8M");
}

/// splitmix64: the property test's draws, repeatable from its seed.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A RAM map of 1 to 5 ranges with holes between them (and maybe before
/// the first), each 1 page to 12 MiB.
fn random_ram_map(state: &mut u64) -> Vec<std::ops::Range<u64>> {
    let page = 4096;
    let mut at = (next(state) % 3) * (next(state) % 2048) * page;
    (0..1 + next(state) % 5)
        .map(|_| {
            let len =
                if next(state).is_multiple_of(4) { 1 + next(state) % 8 } else { 1 + next(state) % 3072 }
                    * page;
            let range = at..at + len;
            at = range.end + (1 + next(state) % 4096) * page;
            range
        })
        .collect()
}

/// Random RAM maps, piece counts (2 to 8), split blocks and shares of
/// data pages: every piece of every split holds pfns, the pieces are
/// contiguous, and makedumpfile and vmdump reassemble them into the same
/// bytes, which libkdumpfile reads page-exact against the vmcore.
#[test]
fn random_ram_maps_split_into_pieces_that_makedumpfile_reassembles() {
    let seed = std::env::var("VMDUMP_SPLIT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5917);
    let mut state: u64 = seed;
    for case in 0..16 {
        let dir = temp_dir(&format!("split-random-{case}"));
        let ram_map = random_ram_map(&mut state);
        let pieces = 2 + (next(&mut state) % 7) as usize;
        let block = format!("{}K", 4 << (next(&mut state) % 12));
        let data_percent = [0, 1, 10, 40, 100][(next(&mut state) % 5) as usize];
        let spec = SynthSpec {
            ram_map: Some(ram_map.clone()),
            data_percent,
            seed: next(&mut state),
            kernel_text_overlap: false,
            ..SynthSpec::default()
        };
        let what = format!(
            "seed {seed:#x} case {case}: RAM {ram_map:x?}, {pieces} pieces of {block} blocks, {data_percent} % data"
        );
        let (vmcore, _) = synthetic(&dir, spec);
        let parts = split_in(&vmcore, &dir.join("split"), "1", &block, pieces);
        let ranges = pieces_of(&parts);
        assert!(ranges.iter().all(|r| !r.is_empty()), "{what}: an empty piece in {ranges:x?}");
        assert!(
            ranges[0].start == 0 && ranges.windows(2).all(|w| w[0].end == w[1].start),
            "{what}: {ranges:x?}"
        );
        let (ours, theirs) = reassemble_both(&parts, &dir);
        assert!(
            std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap(),
            "{what}: reassemblies differ"
        );
        let read = libkdumpfile_compare(&ours, &vmcore);
        let stored = KdumpReader::open(std::fs::File::open(&ours).unwrap()).unwrap().num_dumpable();
        assert_eq!((read.different, read.equal), (0, stored), "{what}: {}", read.raw);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn makedumpfiles_pieces_reassemble_to_its_own_bytes() {
    let dir = temp_dir("split-makedumpfile");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let pieces: Vec<PathBuf> = (1..=3).map(|i| dir.join(format!("piece{i}"))).collect();
    let mut args: Vec<OsArg> =
        ["--split", "--splitblock-size", "8192", "-c", "-d", "1"].map(OsArg::from).into();
    args.push(vmcore.as_path().into());
    args.extend(pieces.iter().map(|p| p.as_path().into()));
    makedumpfile_ok(args);
    let (ours, theirs) = reassemble_both(&pieces, &dir);
    assert!(std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap(), "reassemblies differ");
    let mut set: Vec<OsArg> = vec!["verify".into()];
    set.extend(pieces.iter().map(|p| p.as_path().into()));
    set.extend(["--against".into(), vmcore.as_path().into()]);
    vmdump_ok(set);
}

#[test]
fn the_makedumpfile_command_line_splits_and_reassembles() {
    let dir = temp_dir("split-compat");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let pieces: Vec<PathBuf> = (1..=3).map(|i| dir.join(format!("piece{i}"))).collect();
    let mut args: Vec<OsArg> =
        ["makedumpfile", "--split", "--splitblock-size", "8192", "-l", "-d", "31"].map(OsArg::from).into();
    args.push(vmcore.as_path().into());
    args.extend(pieces.iter().map(|p| p.as_path().into()));
    vmdump_ok(args);
    let whole = dir.join("whole");
    let mut args: Vec<OsArg> = ["makedumpfile", "--reassemble"].map(OsArg::from).into();
    args.extend(pieces.iter().map(|p| p.as_path().into()));
    args.push(whole.as_path().into());
    vmdump_ok(args);
    let read = libkdumpfile_compare(&whole, &vmcore);
    assert!(read.different == 0 && read.equal > 0, "{}", read.raw);
}

#[test]
fn a_missing_or_foreign_piece_is_refused_and_no_output_is_left() {
    let dir = temp_dir("split-bad");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let pieces = split(&vmcore, &dir.join("a"), "1", "8M");
    let out = dir.join("joined");
    let args: Vec<OsArg> = vec![
        "reassemble".into(),
        pieces[0].as_path().into(),
        pieces[2].as_path().into(),
        out.as_path().into(),
    ];
    expect_failure(&args, &["starts at pfn", "the pieces before end at"]);
    assert!(!out.exists());
    let other = split(&vmcore, &dir.join("b"), "31", "8M");
    let args: Vec<OsArg> = vec![
        "reassemble".into(),
        pieces[0].as_path().into(),
        other[1].as_path().into(),
        other[2].as_path().into(),
        out.as_path().into(),
    ];
    expect_failure(&args, &["not a piece of the same dump"]);
    let whole = dir.join("whole");
    vmdump_ok(["dump".as_ref(), vmcore.as_os_str(), whole.as_os_str()]);
    let args: Vec<OsArg> = vec!["reassemble".into(), whole.as_path().into(), out.as_path().into()];
    expect_failure(&args, &["not a piece of a split dump"]);
    assert!(!out.exists());
}

#[test]
fn split_dump_of_vmcore_sk_reassembles_page_exact() {
    let Some(fixtures) = fixtures() else { return };
    let fixture = fixtures.iter().find(|f| f.name == "vmcore-SK").expect("vmcore-SK in the fixtures");
    let dir = temp_dir("split-sk");
    check_split_dump(&fixture.elf, &dir, "31", "64M");
    // The kernel log read from the pieces, as makedumpfile prints it.
    let pieces: Vec<PathBuf> = (1..=3).map(|i| dir.join(format!("split.{i}"))).collect();
    let log = dir.join("dmesg.txt");
    let args: Vec<OsArg> = vec![
        "dmesg".into(),
        pieces[0].as_path().into(),
        "--piece".into(),
        pieces[1].as_path().into(),
        "--piece".into(),
        pieces[2].as_path().into(),
        log.as_path().into(),
    ];
    vmdump_ok(args);
    // expected/ is makedumpfile 1.7.2's log, which has no caller ids.
    let expected = std::fs::read(fixture.expected_file("dmesg.txt")).unwrap();
    assert!(
        fixture.log_as_expected(&std::fs::read(&log).unwrap()) == expected,
        "the log read from the pieces differs from makedumpfile 1.7.2's, caller ids aside"
    );
}

#[test]
fn incomplete_pieces_reassemble_into_an_incomplete_dump_that_reads() {
    let dir = temp_dir("split-incomplete");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let out = dir.join("cut");
    let args: Vec<OsArg> =
        ["dump", "--no-progress", "-d", "0", "--split", "3", "--splitblock-size", "8M", "-L", "2M"]
            .map(OsArg::from)
            .into_iter()
            .chain([vmcore.as_path().into(), out.as_path().into()])
            .collect();
    let result = vmdump(args);
    assert_eq!(result.status.code(), Some(1), "{}", String::from_utf8_lossy(&result.stderr));
    let pieces: Vec<PathBuf> = (1..=3).map(|i| PathBuf::from(format!("{}.{i}", out.display()))).collect();
    for piece in &pieces {
        let reader = KdumpReader::open(std::fs::File::open(piece).unwrap()).unwrap();
        assert!(reader.is_incomplete(), "{} should be flagged incomplete", piece.display());
    }
    let whole = dir.join("whole");
    let mut args: Vec<OsArg> = vec!["reassemble".into()];
    args.extend(pieces.iter().map(|p| p.as_path().into()));
    args.push(whole.as_path().into());
    let result = vmdump(args);
    assert_eq!(result.status.code(), Some(1), "{}", String::from_utf8_lossy(&result.stderr));
    assert!(KdumpReader::open(std::fs::File::open(&whole).unwrap()).unwrap().is_incomplete());
    let read = libkdumpfile_compare(&whole, &vmcore);
    assert!(read.different == 0 && read.equal > 0 && read.missing > 0, "{}", read.raw);
}
