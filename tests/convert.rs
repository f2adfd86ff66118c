//! `vmdump convert`: kdump (plain, flattened, split) or ELF into kdump with
//! another compressor or a higher dump level, or into ELF; every result read
//! by libkdumpfile against the source vmcore.

mod support;

use std::path::{Path, PathBuf};

use support::dumps::{
    dump_counts, fixtures, libkdumpfile_compare, libkdumpfile_compare_elf, makedumpfile_ok, vmdump_ok,
};
use support::synthetic::{OsArg, dump_with, expect_failure, kernel_spec, synthetic};
use support::temp_dir;
use vmdump_synth::Flavour;

fn convert(input: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args: Vec<OsArg> = vec!["convert".into(), "--no-progress".into()];
    args.extend(extra.iter().map(|&a| OsArg::from(a)));
    args.extend([input.into(), out.into()]);
    vmdump_ok(args)
}

/// libkdumpfile reads every page of `dump` equal to `source`, none missing.
fn assert_every_page(dump: &Path, source: &Path) {
    let read = libkdumpfile_compare(dump, source);
    assert_eq!((read.different, read.missing), (0, 0), "{}: {}", dump.display(), read.raw);
    assert_eq!(read.equal, read.compared, "{}", read.raw);
}

fn header_status_and_level(dump: &Path) -> (u32, i32) {
    let reader = vmdump_format::kdump::KdumpReader::open(std::fs::File::open(dump).unwrap()).unwrap();
    (reader.compression(), reader.dump_level())
}

#[test]
fn makedumpfiles_lzo_dump_of_vmcore_s_to_zstd_to_zlib_to_elf() {
    let Some(fixtures) = fixtures() else { return };
    let fixture = fixtures.iter().find(|f| f.name == "vmcore-S").expect("vmcore-S in the fixtures");
    let dir = temp_dir("convert-chain");
    let lzo = dir.join("makedumpfile-l.kdump");
    makedumpfile_ok(["-l".as_ref(), fixture.elf.as_os_str(), lzo.as_os_str()]);
    let zstd = dir.join("zstd.kdump");
    convert(&lzo, &zstd, &["--compress", "zstd", "-d", "0"]);
    assert_eq!(header_status_and_level(&zstd), (0x20, 0));
    assert_every_page(&zstd, &fixture.elf);
    let zlib = dir.join("zlib.kdump");
    convert(&zstd, &zlib, &["--compress", "zlib", "-d", "0"]);
    assert_eq!(header_status_and_level(&zlib), (0x1, 0));
    assert_every_page(&zlib, &fixture.elf);
    let elf = dir.join("converted.elf");
    convert(&zlib, &elf, &["--elf", "-d", "0"]);
    let read = libkdumpfile_compare_elf(&elf, &fixture.elf);
    // Every RAM page of the dumps is there; the source's pages beyond
    // max_mapnr (its BIOS ROM segment, which makedumpfile drops) are not.
    assert!(read.ok, "{}", read.raw);
    assert_eq!((read.present, read.equal), (dump_counts(&zlib).ram_pages, read.present), "{}", read.raw);
}

#[test]
fn a_higher_level_refilters_as_a_dump_from_the_vmcore_would() {
    let dir = temp_dir("convert-refilter");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let first = dir.join("level1.kdump");
    makedumpfile_ok(["-c".as_ref(), "-d".as_ref(), "1".as_ref(), vmcore.as_os_str(), first.as_os_str()]);
    let refiltered = dir.join("level31.kdump");
    convert(&first, &refiltered, &["--compress", "lzo", "-d", "31"]);
    let direct = dir.join("direct31.kdump");
    dump_with(&vmcore, &direct, &["--no-progress", "--compress", "lzo", "-d", "31"]);
    assert_eq!(header_status_and_level(&refiltered), (0x2, 31));
    assert_eq!(dump_counts(&refiltered).pages_in_file, dump_counts(&direct).pages_in_file);
    let read = libkdumpfile_compare(&refiltered, &vmcore);
    assert_eq!((read.different, read.equal), (0, dump_counts(&refiltered).pages_in_file), "{}", read.raw);
}

#[test]
fn a_lower_level_keeps_what_the_input_left_out() {
    let dir = temp_dir("convert-keep-level");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let first = dir.join("level31.kdump");
    dump_with(&vmcore, &first, &["--no-progress", "-d", "31"]);
    let again = dir.join("again.kdump");
    let report = convert(&first, &again, &["--compress", "snappy", "-d", "1"]);
    assert!(report.contains("converting at level 31"), "{report}");
    assert_eq!(header_status_and_level(&again), (0x4, 31));
    assert_eq!(dump_counts(&again).pages_in_file, dump_counts(&first).pages_in_file);
    vmdump_ok(["verify".as_ref(), again.as_os_str(), "--against".as_ref(), vmcore.as_os_str()]);
}

#[test]
fn flattened_and_split_inputs_convert() {
    let dir = temp_dir("convert-shapes");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let flat = dir.join("flat");
    dump_with(&vmcore, &flat, &["--no-progress", "-F", "-d", "0"]);
    let from_flat = dir.join("from-flat.kdump");
    convert(&flat, &from_flat, &["--compress", "zlib", "-d", "0"]);
    assert_every_page(&from_flat, &vmcore);
    let split = dir.join("split");
    let args: Vec<OsArg> = ["dump", "--no-progress", "-d", "0", "--split", "2", "--splitblock-size", "8M"]
        .map(OsArg::from)
        .into_iter()
        .chain([vmcore.as_path().into(), split.as_path().into()])
        .collect();
    vmdump_ok(args);
    let pieces: Vec<PathBuf> = (1..=2).map(|i| PathBuf::from(format!("{}.{i}", split.display()))).collect();
    let from_split = dir.join("from-split.kdump");
    let mut args: Vec<OsArg> = vec!["convert".into(), "--no-progress".into(), "-d".into(), "0".into()];
    args.extend(["--piece".into(), pieces[1].as_path().into(), pieces[0].as_path().into()]);
    args.push(from_split.as_path().into());
    vmdump_ok(args);
    assert_every_page(&from_split, &vmcore);
}

#[test]
fn an_elf_input_converts_as_a_dump() {
    let dir = temp_dir("convert-elf");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let out = dir.join("out.kdump");
    convert(&vmcore, &out, &["-d", "0"]);
    assert_every_page(&out, &vmcore);
}

#[test]
fn a_corrupt_page_stops_the_conversion_naming_it() {
    let dir = temp_dir("convert-corrupt");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let dump = dir.join("zlib.kdump");
    dump_with(&vmcore, &dump, &["--no-progress", "--compress", "zlib"]);
    let reader = vmdump_format::kdump::KdumpReader::open(std::fs::File::open(&dump).unwrap()).unwrap();
    let (pfn, desc) = reader
        .dumpable_pfns()
        .map(Result::unwrap)
        .find_map(|(pfn, rank)| match reader.page_at(pfn, rank).unwrap() {
            vmdump_format::kdump::StoredPage::Stored { desc, .. } if desc.flags != 0 => Some((pfn, desc)),
            _ => None,
        })
        .expect("a compressed page");
    let mut bytes = std::fs::read(&dump).unwrap();
    bytes[desc.offset as usize + 2] ^= 0xff;
    std::fs::write(&dump, &bytes).unwrap();
    let out = dir.join("out");
    let args: Vec<OsArg> = vec!["convert".into(), dump.as_path().into(), out.as_path().into()];
    expect_failure(&args, &[&format!("pfn {pfn:#x}")]);
    assert!(!out.exists());
}

#[test]
fn makedumpfile_mode_refilters_a_dump_file() {
    let dir = temp_dir("convert-compat");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let first = dir.join("level0.kdump");
    makedumpfile_ok(["-l".as_ref(), vmcore.as_os_str(), first.as_os_str()]);
    let refiltered = dir.join("level31.kdump");
    let args: Vec<OsArg> = vec![
        "makedumpfile".into(),
        "-c".into(),
        "-d".into(),
        "31".into(),
        first.as_path().into(),
        refiltered.as_path().into(),
    ];
    vmdump_ok(args);
    assert_eq!(header_status_and_level(&refiltered), (0x1, 31));
    vmdump_ok(["verify".as_ref(), refiltered.as_os_str(), "--against".as_ref(), vmcore.as_os_str()]);
}
