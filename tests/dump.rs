//! The dump engine end to end on synthetic vmcores the tests make: every
//! page read back by libkdumpfile, byte-identical output for any thread
//! count and read mode, the flattened stream, and bad input.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::dumps::{dump_counts, libkdumpfile_compare, vmdump, vmdump_ok};
use support::{build_c_plugin_with, temp_dir};
use vmdump_format::synth::{self, SynthSpec, SynthSummary};

/// A 64 MiB synthetic vmcore with holes, an overlapping kernel-text
/// segment, a segment ending mid-page and 40 % data pages.
fn synthetic(dir: &Path, spec: SynthSpec) -> (PathBuf, SynthSummary) {
    let path = dir.join("vmcore");
    let summary = synth::write(&spec, &path).expect("write synthetic vmcore");
    (path, summary)
}

fn quirky_spec() -> SynthSpec {
    SynthSpec { ram_bytes: 64 << 20, partial_tail: true, phoff_gap: true, ..SynthSpec::default() }
}

#[test]
fn every_compressor_round_trips_through_libkdumpfile() {
    let dir = temp_dir("dump-codecs");
    let (vmcore, summary) = synthetic(&dir, quirky_spec());
    for (codec, flag) in
        [("zlib", 0x1), ("zstd", 0x20), ("lzo", 0x2), ("snappy", 0x4), ("c-zlib", 0x1), ("none", 0)]
    {
        let out = dir.join(format!("{codec}.kdump"));
        vmdump_ok([
            OsArg::from("dump"),
            "--compress".into(),
            codec.into(),
            vmcore.as_path().into(),
            out.as_path().into(),
        ]);
        let counts = dump_counts(&out);
        assert_eq!(counts.status, flag, "{codec}: header compression flag");
        assert_eq!(counts.pages_in_file, summary.ram_pages, "{codec}");
        assert_eq!(counts.zero_pages, summary.zero_pages, "{codec}: zero pages share one page");
        let read = libkdumpfile_compare(&out, &vmcore);
        assert_eq!(
            (read.equal, read.different, read.missing),
            (read.compared, 0, 0),
            "{codec}: {}",
            read.raw
        );
        assert_eq!(read.compared, summary.ram_pages, "{codec}");
    }
}

/// Command-line arguments of mixed types.
struct OsArg(std::ffi::OsString);

impl From<&str> for OsArg {
    fn from(s: &str) -> Self {
        Self(s.into())
    }
}

impl From<&Path> for OsArg {
    fn from(p: &Path) -> Self {
        Self(p.into())
    }
}

impl AsRef<std::ffi::OsStr> for OsArg {
    fn as_ref(&self) -> &std::ffi::OsStr {
        &self.0
    }
}

fn dump_with(vmcore: &Path, out: &Path, extra: &[&str]) -> Vec<u8> {
    let mut args: Vec<OsArg> = vec!["dump".into()];
    args.extend(extra.iter().map(|&a| OsArg::from(a)));
    args.extend([vmcore.into(), out.into()]);
    vmdump_ok(args);
    std::fs::read(out).expect("read dump")
}

#[test]
fn output_is_identical_for_any_thread_count_and_read_mode() {
    let dir = temp_dir("dump-identical");
    let (vmcore, _) = synthetic(&dir, quirky_spec());
    let reference = dump_with(&vmcore, &dir.join("ref"), &["--threads", "1", "--compress", "zstd"]);
    let variants: [&[&str]; 5] = [
        &["--threads", "2"],
        &["--threads", "4"],
        &["--threads", "1", "--no-mmap"],
        &["--threads", "4", "--no-mmap"],
        &["--threads", "3", "--window-mib", "1"],
    ];
    for (i, extra) in variants.iter().enumerate() {
        let args = [*extra, &["--compress", "zstd"]].concat();
        let got = dump_with(&vmcore, &dir.join(format!("v{i}")), &args);
        assert!(got == reference, "{extra:?} gave other bytes than --threads 1");
    }
}

#[test]
fn flattened_output_rearranges_to_the_plain_file() {
    let dir = temp_dir("dump-flat");
    let (vmcore, _) = synthetic(&dir, quirky_spec());
    let plain = dump_with(&vmcore, &dir.join("plain"), &["--compress", "lzo"]);
    let flat = dump_with(&vmcore, &dir.join("flat"), &["--compress", "lzo", "-F"]);
    let mut ours = std::io::Cursor::new(Vec::new());
    vmdump_format::flat::rearrange(&mut flat.as_slice(), &mut ours).unwrap();
    assert!(ours.into_inner() == plain, "vmdump_format::flat::rearrange differs from the plain file");
    let theirs = dir.join("rearranged");
    let status = Command::new("makedumpfile")
        .arg("-R")
        .arg(&theirs)
        .stdin(std::fs::File::open(dir.join("flat")).unwrap())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("makedumpfile (scripts/test.sh installs it)");
    assert!(status.success());
    assert!(std::fs::read(&theirs).unwrap() == plain, "makedumpfile -R differs from the plain file");
    let piped = Command::new(env!("CARGO_BIN_EXE_vmdump"))
        .arg("--plugin-dir")
        .arg(support::build_dir())
        .args(["dump", "--compress", "lzo"])
        .arg(&vmcore)
        .arg("-")
        .output()
        .unwrap();
    assert!(piped.status.success() && piped.stdout == flat, "`-` must write the same flattened stream");
}

fn expect_failure(args: &[OsArg], words: &[&str]) -> String {
    let out = vmdump(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for word in words {
        assert!(stderr.contains(word), "`{word}` not in:\n{stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn bad_input_gets_a_clear_error_and_leaves_no_dump() {
    let dir = temp_dir("dump-bad");
    let (vmcore, _) = synthetic(&dir, quirky_spec());
    let bytes = std::fs::read(&vmcore).unwrap();
    let out = dir.join("out");
    let cases: [(&str, Vec<u8>, &[&str]); 3] = [
        ("truncated-headers", bytes[..100].to_vec(), &["truncated"]),
        ("corrupt-magic", [b"\x7fELG".as_slice(), &bytes[4..]].concat(), &["magic"]),
        ("load-beyond-eof", bytes[..bytes.len() / 2].to_vec(), &["beyond end of file", "program header"]),
    ];
    for (name, content, words) in cases {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        let stderr = expect_failure(&["dump".into(), path.as_path().into(), out.as_path().into()], words);
        assert!(stderr.contains(name), "the error names the file: {stderr}");
        assert!(!out.exists(), "{name}: no output may be left behind");
    }
    let missing_dir = dir.join("no/such/dir/out");
    expect_failure(
        &["dump".into(), vmcore.as_path().into(), missing_dir.as_path().into()],
        &["does not exist"],
    );
}

#[test]
fn an_existing_output_is_kept_unless_forced_and_dumps_are_private() {
    let dir = temp_dir("dump-force");
    let (vmcore, _) = synthetic(&dir, SynthSpec { ram_bytes: 8 << 20, ..SynthSpec::default() });
    let out = dir.join("out");
    std::fs::write(&out, b"precious").unwrap();
    expect_failure(&["dump".into(), vmcore.as_path().into(), out.as_path().into()], &["exists", "--force"]);
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    std::fs::remove_file(&out).unwrap();
    dump_with(&vmcore, &out, &[]);
    assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
    dump_with(&vmcore, &out, &["--force", "--compress", "snappy"]);
}

#[test]
fn a_vmcore_without_vmcoreinfo_still_dumps_completely() {
    let dir = temp_dir("dump-novmcoreinfo");
    let spec = SynthSpec { with_vmcoreinfo: false, ..quirky_spec() };
    let (vmcore, summary) = synthetic(&dir, spec);
    let out = dir.join("out");
    let stderr = vmdump_ok([OsArg::from("dump"), vmcore.as_path().into(), out.as_path().into()]);
    assert!(stderr.contains("no VMCOREINFO"), "{stderr}");
    assert_eq!(dump_counts(&out).pages_in_file, summary.ram_pages);
}

#[test]
fn a_plugin_failing_mid_run_gives_a_complete_dump_with_raw_pages() {
    let dir = temp_dir("dump-midrun");
    let plugins = temp_dir("dump-midrun-plugins");
    build_c_plugin_with(&plugins, "flaky-zlib", &["REAL_ZLIB", "BROKEN_FAILS_MIDRUN"]);
    let (vmcore, summary) = synthetic(&dir, quirky_spec());
    let out = dir.join("out");
    let result = vmdump([
        OsArg::from("--plugin-dir"),
        plugins.as_path().into(),
        "dump".into(),
        "--compress".into(),
        "flaky-zlib".into(),
        vmcore.as_path().into(),
        out.as_path().into(),
    ]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(3), "degraded exit status: {stderr}");
    assert!(stderr.contains("device timeout on page 3") && stderr.contains("stored raw"), "{stderr}");
    assert_eq!(dump_counts(&out).pages_in_file, summary.ram_pages);
    let read = libkdumpfile_compare(&out, &vmcore);
    assert_eq!((read.equal, read.different, read.missing), (read.compared, 0, 0), "{}", read.raw);
}

#[test]
fn every_shipped_profile_makes_a_readable_dump() {
    let dir = temp_dir("dump-profiles");
    let (vmcore, summary) = synthetic(&dir, SynthSpec { ram_bytes: 16 << 20, ..SynthSpec::default() });
    let config = support::workspace_root().join("config");
    let mut profiles: Vec<PathBuf> = std::fs::read_dir(&config)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    profiles.sort();
    assert!(profiles.len() >= 3, "default, fast and small at least");
    for profile in profiles {
        let out = dir.join(profile.file_stem().unwrap());
        vmdump_ok([
            OsArg::from("dump"),
            "--profile".into(),
            profile.as_path().into(),
            vmcore.as_path().into(),
            out.as_path().into(),
        ]);
        let read = libkdumpfile_compare(&out, &vmcore);
        assert_eq!((read.equal, read.missing), (summary.ram_pages, 0), "{}: {}", profile.display(), read.raw);
    }
}

/// Excludes every fifth pfn and one block, as free pages.
struct EveryFifth;

impl vmdump::dump::MetadataFilter for EveryFifth {
    fn cursor(&self) -> Result<Box<dyn vmdump::dump::WindowFilter + '_>, vmdump::dump::DumpError> {
        Ok(Box::new(EveryFifthCursor))
    }
}

struct EveryFifthCursor;

fn excluded_by_every_fifth(pfn: u64) -> bool {
    pfn.is_multiple_of(5) || (0x3000..0x3800).contains(&pfn)
}

impl vmdump::dump::WindowFilter for EveryFifthCursor {
    fn exclude(
        &mut self,
        window: std::ops::Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        counts: &mut vmdump::classify::ClassCounts,
    ) -> Result<(), vmdump::dump::DumpError> {
        for pfn in window.clone().filter(|&p| excluded_by_every_fifth(p) && is_ram(p)) {
            let bit = pfn - window.start;
            excluded[(bit / 64) as usize] |= 1 << (bit % 64);
            counts.free += 1;
        }
        Ok(())
    }
}

fn filtered_dump(vmcore: &Path, out: &Path, threads: usize) -> vmdump::dump::DumpReport {
    let input = vmdump::input::Vmcore::open(vmcore).unwrap();
    let file = std::fs::File::create(out).unwrap();
    let mut sink = vmdump::output::sink::FileSink::new(file, None);
    let config = vmdump::dump::DumpConfig { dump_level: 17, threads, ..Default::default() };
    let plugins = vmdump::filters::FilterSet::default();
    vmdump::dump::dump(&input, None, (Some(&EveryFifth), &plugins, None), &config, &mut sink).unwrap()
}

#[test]
fn a_metadata_filter_leaves_out_exactly_what_it_excludes() {
    let dir = temp_dir("dump-filter");
    let spec = SynthSpec { ram_bytes: 96 << 20, ..quirky_spec() };
    let (vmcore, summary) = synthetic(&dir, spec);
    let out = dir.join("filtered");
    let report = filtered_dump(&vmcore, &out, 2);
    let ram: Vec<u64> =
        synth::ram_ranges(&spec).into_iter().flat_map(|r| r.start / 4096..r.end.div_ceil(4096)).collect();
    let excluded = ram.iter().filter(|&&p| excluded_by_every_fifth(p)).count() as u64;
    assert_eq!(report.excluded.free, excluded, "only RAM pages are counted");
    let counts = dump_counts(&out);
    assert_eq!(counts.ram_pages, summary.ram_pages);
    assert_eq!(counts.pages_in_file, summary.ram_pages - excluded);
    let read = libkdumpfile_compare(&out, &vmcore);
    assert_eq!(
        (read.equal, read.different, read.missing),
        (summary.ram_pages - excluded, 0, excluded),
        "{}",
        read.raw
    );
    let again = dir.join("filtered-1-thread");
    filtered_dump(&vmcore, &again, 1);
    assert!(std::fs::read(&again).unwrap() == std::fs::read(&out).unwrap(), "thread count changed the bytes");
}

fn kernel_spec(flavour: synth::Flavour) -> SynthSpec {
    let kernel = synth::KernelSpec {
        kaslr: true,
        five_level: true,
        struct_pages: Some(flavour),
        ..Default::default()
    };
    SynthSpec { ram_bytes: 64 << 20, kernel: Some(kernel), ..SynthSpec::default() }
}

#[test]
fn dump_level_31_on_a_synthetic_kernel_excludes_what_its_struct_pages_say() {
    for flavour in [synth::Flavour::Linux6_1, synth::Flavour::Linux6_12] {
        let dir = temp_dir(&format!("dump-d31-{flavour:?}"));
        let spec = kernel_spec(flavour);
        let (vmcore, summary) = synthetic(&dir, spec);
        let ram = synth::ram_ranges(&spec).into_iter().flat_map(|r| r.start / 4096..r.end.div_ceil(4096));
        let excluded = ram
            .filter(|&pfn| synth::expected_class(&spec, pfn).is_some_and(|c| c.excluded_at(31)))
            .count() as u64;
        assert!(excluded > summary.ram_pages / 10, "the synthetic kernel has pages to exclude");
        let out = dir.join("d31");
        let mut args =
            vec![OsArg::from("dump"), "-d".into(), "31".into(), "--compress".into(), "zstd".into()];
        args.extend([vmcore.as_path().into(), out.as_path().into()]);
        vmdump_ok(args);
        assert_eq!(dump_counts(&out).pages_in_file, summary.ram_pages - excluded, "{flavour:?}");
        let read = libkdumpfile_compare(&out, &vmcore);
        assert_eq!((read.different, read.missing), (0, excluded), "{flavour:?}: {}", read.raw);
    }
}

#[test]
fn missing_vmcoreinfo_keys_stop_the_dump_unless_a_lower_level_is_allowed() {
    let dir = temp_dir("dump-missing-keys");
    let (vmcore, _) = synthetic(&dir, kernel_spec(synth::Flavour::Linux6_1));
    let mut bytes = std::fs::read(&vmcore).unwrap();
    let key = b"NUMBER(PG_lru)=";
    let at = bytes.windows(key.len()).position(|w| w == key).expect("the key is in the note");
    bytes[at..at + key.len()].copy_from_slice(b"NUMBER(PG_xxx)=");
    let patched = dir.join("patched");
    std::fs::write(&patched, bytes).unwrap();
    let out = dir.join("out");
    let stderr = expect_failure(
        &["dump".into(), "-d".into(), "31".into(), patched.as_path().into(), out.as_path().into()],
        &["NUMBER(PG_lru)", "cannot be honoured", "nothing was written", "--allow-lower-level"],
    );
    assert!(!out.exists(), "{stderr}");
    let mut args = vec![OsArg::from("dump"), "-d".into(), "31".into(), "--allow-lower-level".into()];
    args.extend([patched.as_path().into(), out.as_path().into()]);
    let stderr = vmdump_ok(args);
    assert!(stderr.contains("instead of 31"), "{stderr}");
    let sub = vmdump_format::kdump::SubHeader::decode(&std::fs::read(&out).unwrap()[4096..]).unwrap();
    assert!(sub.dump_level < 31 && sub.dump_level & 1 == 1, "dumped at level {}", sub.dump_level);
}

/// Overwrites RAM page `pfn` of an ELF vmcore written by `synth` (whose
/// RAM segment at paddr 0 maps pfn p at a known file offset) with `fill`.
fn overwrite_page(vmcore: &Path, pfn: u64, fill: &[u8; 8]) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new().read(true).write(true).open(vmcore).unwrap();
    let elf = vmdump_format::elf::ElfVmcore::parse(&file).unwrap();
    let phys = vmdump_format::phys::PhysMap::new(&elf.loads, 4096).unwrap();
    let loc = phys.locate(pfn).expect("a RAM page");
    assert!(loc.is_whole());
    let page: Vec<u8> = fill.iter().copied().cycle().take(4096).collect();
    file.write_all_at(&page, loc.file_offset).unwrap();
}

#[test]
fn the_example_filter_plugins_named_in_a_profile_exclude_what_they_say() {
    let dir = temp_dir("dump-filter-plugins");
    let spec = SynthSpec { ram_bytes: 32 << 20, ..SynthSpec::default() };
    let (vmcore, summary) = synthetic(&dir, spec);
    let poisoned = [0x800u64, 0x801, 0x2500];
    for pfn in poisoned {
        overwrite_page(&vmcore, pfn, &[0x6b; 8]);
    }
    let profile = dir.join("filters.toml");
    std::fs::write(
        &profile,
        "[compress]\nplugin = \"zstd\"\n\n[[filters]]\nname = \"pfn-ranges\"\nparams = { ranges = \"0x400-0x500\" }\n\n\
         [[filters]]\nname = \"pattern\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    let stderr = vmdump_ok([
        OsArg::from("dump"),
        "--profile".into(),
        profile.as_path().into(),
        vmcore.as_path().into(),
        out.as_path().into(),
    ]);
    assert!(stderr.contains("Filter          : pfn-ranges: 256 pages excluded"), "{stderr}");
    assert!(stderr.contains("Filter          : pattern: 3 pages excluded"), "{stderr}");
    assert!(stderr.contains("Extension filter pages  : 0x0000000000000103"), "{stderr}");
    assert_eq!(dump_counts(&out).pages_in_file, summary.ram_pages - 259);
    let read = libkdumpfile_compare(&out, &vmcore);
    assert_eq!((read.equal, read.different, read.missing), (summary.ram_pages - 259, 0, 259), "{}", read.raw);
}

#[test]
fn a_failing_filter_plugin_is_disabled_and_its_pages_kept() {
    let dir = temp_dir("dump-flaky-filter");
    let plugins = temp_dir("dump-flaky-filter-plugins");
    build_c_filter(&plugins, "broken_filter.c", "libflaky_filter.so");
    let (vmcore, summary) = synthetic(&dir, SynthSpec { ram_bytes: 16 << 20, ..SynthSpec::default() });
    let profile = dir.join("flaky.toml");
    std::fs::write(&profile, "[[filters]]\nname = \"flaky-filter\"\n").unwrap();
    let out = dir.join("out");
    let result = vmdump([
        OsArg::from("--plugin-dir"),
        plugins.as_path().into(),
        "dump".into(),
        "--profile".into(),
        profile.as_path().into(),
        vmcore.as_path().into(),
        out.as_path().into(),
    ]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("filter flaky-filter failed") && stderr.contains("filter hardware gone"),
        "{stderr}"
    );
    let read = libkdumpfile_compare(&out, &vmcore);
    assert_eq!((read.equal, read.missing), (summary.ram_pages, 0), "{}", read.raw);
}

fn build_c_filter(dir: &Path, source: &str, so: &str) -> PathBuf {
    let out = dir.join(so);
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-I"])
        .arg(support::workspace_root().join("sdk/include"))
        .arg(support::workspace_root().join("tests/plugins").join(source))
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "cc {source}");
    out
}

#[test]
fn a_filter_plugin_reading_struct_pages_and_vmcoreinfo_excludes_lru_pages() {
    let dir = temp_dir("dump-lru-filter");
    let plugins = temp_dir("dump-lru-filter-plugins");
    build_c_filter(&plugins, "lru_filter.c", "liblru_filter.so");
    let (vmcore, summary) = synthetic(&dir, kernel_spec(synth::Flavour::Linux6_1));
    // The rule, applied here to the struct pages read through vmdump's own view.
    let input = vmdump::input::Vmcore::open(&vmcore).unwrap();
    let info = input.vmcoreinfo().unwrap();
    let (bit, offset) = (info.number("PG_lru").unwrap() as u32, info.offset("page.flags").unwrap() as usize);
    let view = vmdump::dump::KernelView::open(&input, "the test").unwrap();
    let mut pages = view.struct_pages();
    let ram = synth::ram_ranges(&kernel_spec(synth::Flavour::Linux6_1))
        .into_iter()
        .flat_map(|r| r.start / 4096..r.end.div_ceil(4096));
    let lru = ram
        .filter(|&pfn| {
            let page = pages.get(pfn).expect("struct page");
            u64::from_le_bytes(page[offset..offset + 8].try_into().unwrap()) >> bit & 1 == 1
        })
        .count() as u64;
    assert!(lru > 100, "the synthetic kernel has LRU pages ({lru})");
    let profile = dir.join("lru.toml");
    std::fs::write(&profile, "[[filters]]\nname = \"lru\"\n").unwrap();
    let out = dir.join("out");
    let stderr = String::from_utf8_lossy(
        &vmdump([
            OsArg::from("--plugin-dir"),
            plugins.as_path().into(),
            "dump".into(),
            "--profile".into(),
            profile.as_path().into(),
            vmcore.as_path().into(),
            out.as_path().into(),
        ])
        .stderr,
    )
    .into_owned();
    assert!(stderr.contains(&format!("Filter          : lru: {lru} pages excluded")), "{stderr}");
    let read = libkdumpfile_compare(&out, &vmcore);
    assert_eq!((read.equal, read.missing), (summary.ram_pages - lru, lru), "{}", read.raw);
}

/// Checks a dump that was cut short: flagged incomplete, and every page it
/// holds reads back equal to the source.
fn assert_incomplete_but_readable(out: &Path, vmcore: &Path, ram_pages: u64) {
    let counts = dump_counts(out);
    assert_eq!(counts.status & 0x8, 0x8, "the header says incomplete");
    assert!(counts.pages_in_file > 0 && counts.pages_in_file < ram_pages, "{counts:?}");
    let read = libkdumpfile_compare(out, vmcore);
    assert_eq!((read.equal, read.different), (counts.pages_in_file, 0), "{}", read.raw);
}

#[test]
fn a_size_limit_closes_the_dump_as_incomplete_and_readable() {
    let dir = temp_dir("dump-limit");
    let (vmcore, summary) = synthetic(&dir, quirky_spec());
    let out = dir.join("out");
    let result = vmdump([
        OsArg::from("dump"),
        "-L".into(),
        "6M".into(),
        "--compress".into(),
        "lzo".into(),
        vmcore.as_path().into(),
        out.as_path().into(),
    ]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("incomplete") && stderr.contains("size limit"), "{stderr}");
    assert!(std::fs::metadata(&out).unwrap().len() <= 6 << 20);
    assert_incomplete_but_readable(&out, &vmcore, summary.ram_pages);
}

/// A size-limited tmpfs, unmounted when dropped.
struct SmallFs(PathBuf);

impl SmallFs {
    fn mount(path: PathBuf, size: &str) -> Self {
        std::fs::create_dir_all(&path).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "mounting a small tmpfs needs root (CI runs as root): this test cannot run otherwise"
        );
        Self(path)
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_closes_the_dump_as_incomplete_and_readable() {
    let dir = temp_dir("dump-full-disk");
    let (vmcore, summary) = synthetic(&dir, quirky_spec());
    let small = SmallFs::mount(dir.join("small"), "6m");
    let out = small.0.join("out");
    let result = vmdump([
        OsArg::from("dump"),
        "--compress".into(),
        "lzo".into(),
        vmcore.as_path().into(),
        out.as_path().into(),
    ]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no space left"), "{stderr}");
    let copy = dir.join("copy");
    std::fs::copy(&out, &copy).unwrap();
    drop(small);
    assert_incomplete_but_readable(&copy, &vmcore, summary.ram_pages);
}

#[test]
fn a_flattened_dump_is_read_back_by_info_and_verify() {
    let dir = temp_dir("dump-read-flat");
    let (vmcore, _) = synthetic(&dir, quirky_spec());
    let flat = dir.join("flat");
    dump_with(&vmcore, &flat, &["-F", "--compress", "snappy"]);
    let out =
        vmdump([OsArg::from("verify"), flat.as_path().into(), "--against".into(), vmcore.as_path().into()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("0 problems"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info = vmdump([OsArg::from("info"), flat.as_path().into()]);
    assert!(String::from_utf8_lossy(&info.stdout).contains("snappy"));
}

#[test]
fn makedumpfile_mode_prints_makedumpfiles_messages_at_each_level() {
    let dir = temp_dir("dump-message-levels");
    let (vmcore, _) = synthetic(&dir, SynthSpec { ram_bytes: 16 << 20, ..SynthSpec::default() });
    let run = |level: &str, name: &str| {
        let out = dir.join(name);
        let args = ["makedumpfile", "--message-level", level, "-l", "-d", "1"].map(OsArg::from);
        let result =
            vmdump(args.into_iter().chain([OsArg::from(vmcore.as_path()), OsArg::from(out.as_path())]));
        assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
        (
            String::from_utf8_lossy(&result.stdout).into_owned(),
            String::from_utf8_lossy(&result.stderr).into_owned(),
        )
    };
    let (stdout, stderr) = run("7", "default");
    assert!(
        stdout.contains("The dumpfile is saved to") && stdout.ends_with("makedumpfile Completed.\n"),
        "{stdout}"
    );
    let progress =
        stderr.lines().find(|l| l.contains("[100.0 %]")).unwrap_or_else(|| panic!("no progress: {stderr:?}"));
    assert!(
        progress.starts_with("Copying data") && !stderr.contains('\r'),
        "newline-terminated off a terminal: {stderr:?}"
    );
    assert!(!stderr.contains("Original pages"), "the report needs bit 16");
    let (_, stderr) = run("23", "report");
    assert!(stderr.contains("Original pages") && stderr.contains("Pages filled with zero"), "{stderr}");
    let (stdout, stderr) = run("0", "quiet");
    assert!(stdout.is_empty() && !stderr.contains("Copying data"), "level 0: {stdout:?} {stderr:?}");
}

#[test]
fn the_man_page_renders_cleanly_and_documents_every_dump_option() {
    let page = support::workspace_root().join("man/vmdump.1");
    let groff =
        Command::new("groff").args(["-man", "-ww", "-z"]).arg(&page).output().expect("groff (groff-base)");
    assert!(groff.status.success() && groff.stderr.is_empty(), "{}", String::from_utf8_lossy(&groff.stderr));
    let text = std::fs::read_to_string(&page).unwrap().replace('\\', "");
    let help = vmdump(["dump", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    let options: Vec<&str> = help
        .split_whitespace()
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_end_matches([',', '.']))
        .filter(|w| *w != "--help")
        .collect();
    assert!(options.len() > 8, "{help}");
    for option in options {
        assert!(text.contains(option), "man/vmdump.1 does not document {option}");
    }
}

#[test]
fn a_profile_makes_a_vendor_plugin_serve_makedumpfiles_c() {
    let dir = temp_dir("dump-compat-profile");
    let (vmcore, _) = synthetic(&dir, SynthSpec { ram_bytes: 16 << 20, ..SynthSpec::default() });
    let profile = dir.join("vendor.toml");
    std::fs::write(&profile, "[makedumpfile]\nzlib = \"c-zlib\"\n").unwrap();
    let (through_c, direct) = (dir.join("through-c"), dir.join("direct"));
    let result = Command::new(env!("CARGO_BIN_EXE_vmdump"))
        .args(["makedumpfile", "-c", "-d", "1"])
        .arg(&vmcore)
        .arg(&through_c)
        .env("VMDUMP_PROFILE", &profile)
        .output()
        .unwrap();
    assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
    dump_with(&vmcore, &direct, &["--compress", "c-zlib", "-d", "1"]);
    assert!(
        std::fs::read(&through_c).unwrap() == std::fs::read(&direct).unwrap(),
        "-c must be served by c-zlib"
    );
}
