//! Page filters end to end on synthetic vmcores: a metadata filter in the
//! engine, struct page classification, and filter plugins named in profiles.

mod support;

use std::path::Path;

use support::dumps::{descriptor_slots, dump_counts, libkdumpfile_compare, vmdump, vmdump_ok};
use support::synthetic::*;
use support::temp_dir;
use vmdump::input::Input;
use vmdump_synth::{self as synth, SynthSpec};

/// Excludes every fifth pfn and one block, as free pages.
struct EveryFifth;

impl vmdump::exclude::MetadataFilter for EveryFifth {
    fn cursor(&self) -> Result<Box<dyn vmdump::exclude::WindowFilter + '_>, vmdump::exclude::ExcludeError> {
        Ok(Box::new(EveryFifthCursor))
    }
}

struct EveryFifthCursor;

fn excluded_by_every_fifth(pfn: u64) -> bool {
    pfn.is_multiple_of(5) || (0x3000..0x3800).contains(&pfn)
}

impl vmdump::exclude::WindowFilter for EveryFifthCursor {
    fn exclude(
        &mut self,
        window: std::ops::Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        counts: &mut vmdump::classify::ClassCounts,
    ) -> Result<(), vmdump::exclude::ExcludeError> {
        for pfn in window.clone().filter(|&p| excluded_by_every_fifth(p) && is_ram(p)) {
            let bit = pfn - window.start;
            excluded[(bit / 64) as usize] |= 1 << (bit % 64);
            counts.free += 1;
        }
        Ok(())
    }
}

/// A dump of `vmcore` at level 1 with [`EveryFifth`] as a metadata stage
/// of the plan, raw pages, `threads` workers.
fn filtered_dump(vmcore: &Path, out: &Path, threads: usize) -> vmdump::dump::DumpReport {
    use vmdump::plan::{Asked, Format, Plan};
    let input = vmdump::input::Vmcore::open(vmcore).unwrap();
    let mut profile = vmdump::profile::Profile::default();
    profile.set_compressor("none").unwrap();
    profile.dump.threads = threads;
    let registry = vmdump::plugin::Registry::default();
    let asked = Asked {
        profile: &profile,
        registry: &registry,
        allow_lower: false,
        format: Format::Kdump,
        progress: vmdump::progress::ProgressOptions::default(),
        close_incomplete: false,
        extra: Some(&EveryFifth),
    };
    let plan = Plan::build(&asked, &input, None).unwrap();
    let file = std::fs::File::create(out).unwrap();
    let mut sink = vmdump_format::sink::FileSink::new(file, None);
    vmdump::dump::dump(&plan, &mut sink).unwrap()
}

#[test]
fn a_metadata_filter_leaves_out_exactly_what_it_excludes() {
    let dir = temp_dir("dump-filter");
    let spec = SynthSpec { ram_bytes: 96 << 20, ..quirky_spec() };
    let (vmcore, summary) = synthetic(&dir, spec.clone());
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

#[test]
fn dump_level_31_on_a_synthetic_kernel_excludes_what_its_struct_pages_say() {
    for flavour in [synth::Flavour::Linux6_1, synth::Flavour::Linux6_12] {
        let dir = temp_dir(&format!("dump-d31-{flavour:?}"));
        let spec = kernel_spec(flavour);
        let (vmcore, summary) = synthetic(&dir, spec.clone());
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
    let sub = vmdump_format::kdump::SubHeader::decode(
        &std::fs::read(&out).unwrap()[4096..],
        vmdump_format::elf::Endian::Little,
    )
    .unwrap();
    assert!(sub.dump_level < 31 && sub.dump_level & 1 == 1, "dumped at level {}", sub.dump_level);
}

/// A vmcore that lacks the memory holding one section's struct pages (as
/// kexec-tools leaves "Reserved" memory out of riscv64 vmcores): `vmdump
/// dump` stops, naming the pfns and the address; the makedumpfile command
/// line and `--allow-lower-level` keep that section's pages, classify the
/// others, and say how many were kept and why. Every page reads back.
#[test]
fn unreadable_struct_pages_are_kept_where_a_dump_must_not_be_lost() {
    let dir = temp_dir("dump-vmemmap-hole");
    let mut spec = kernel_spec(synth::Flavour::Linux6_12);
    spec.ram_bytes = 320 << 20;
    spec.data_percent = 10;
    spec.kernel = spec.kernel.map(|k| synth::KernelSpec { vmemmap_hole: Some(1), ..k });
    let (vmcore, summary) = synthetic(&dir, spec.clone());
    let ram: Vec<u64> =
        synth::ram_ranges(&spec).into_iter().flat_map(|r| r.start / 4096..r.end.div_ceil(4096)).collect();
    let excluded = ram
        .iter()
        .filter(|&&pfn| synth::expected_class(&spec, pfn).is_some_and(|c| c.excluded_at(31)))
        .count() as u64;
    assert!(excluded > summary.ram_pages / 10, "sections 0 and 2 have pages to exclude");
    let in_hole = ram.iter().filter(|&&pfn| pfn >> 15 == 1).count();
    let out = dir.join("refused");
    expect_failure(
        &["dump".into(), "-d".into(), "31".into(), vmcore.as_path().into(), out.as_path().into()],
        &[
            "reading the struct pages of pfns 0x8000..",
            "is not present",
            "the partial output was removed",
            "--allow-lower-level keeps",
        ],
    );
    assert!(!out.exists());
    for (how, args) in [
        (
            "makedumpfile",
            vec![OsArg::from("makedumpfile"), "-l".into(), "--message-level".into(), "7".into()],
        ),
        ("--allow-lower-level", vec![OsArg::from("dump"), "--allow-lower-level".into()]),
    ] {
        let out = dir.join(how);
        let mut args = args;
        args.extend(["-d".into(), "31".into(), vmcore.as_path().into(), out.as_path().into()]);
        let stderr = vmdump_ok(args);
        let kept = format!("{in_hole} pages were kept whatever dump level 31 says");
        assert!(stderr.contains(&kept), "{how}: {stderr}");
        assert!(stderr.contains("of pfn 0x8000"), "{how}: {stderr}");
        assert_eq!(dump_counts(&out).pages_in_file, summary.ram_pages - excluded, "{how}");
        let read = libkdumpfile_compare(&out, &vmcore);
        assert_eq!((read.different, read.missing), (0, excluded), "{how}: {}", read.raw);
    }
}

#[test]
fn the_example_filter_plugins_named_in_a_profile_exclude_what_they_say() {
    let dir = temp_dir("dump-filter-plugins");
    let spec = SynthSpec { ram_bytes: 32 << 20, ..SynthSpec::default() };
    let (vmcore, summary) = synthetic(&dir, spec.clone());
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
fn a_metadata_filter_plugin_leaves_no_unused_descriptor_slot() {
    let dir = temp_dir("dump-filter-slots");
    let spec = SynthSpec { ram_bytes: 32 << 20, ..SynthSpec::default() };
    let (vmcore, summary) = synthetic(&dir, spec.clone());
    let profile = dir.join("ranges.toml");
    let ranges = "[[filters]]\nname = \"pfn-ranges\"\nparams = { ranges = \"0x400-0x500,0x1000-0x1800\" }\n";
    std::fs::write(&profile, ranges).unwrap();
    let in_ranges = |pfn: &u64| (0x400..0x500).contains(pfn) || (0x1000..0x1800).contains(pfn);
    let ram = synth::ram_ranges(&spec).into_iter().flat_map(|r| r.start / 4096..r.end.div_ceil(4096));
    let excluded = ram.filter(in_ranges).count() as u64;
    assert!(excluded > 256, "the ranges hold RAM ({excluded} pages)");
    for level in ["0", "1"] {
        let out = dir.join(format!("out-{level}"));
        let args = ["dump", "-d", level, "--compress", "lzo", "--profile"].map(OsArg::from);
        let files = [profile.as_path().into(), vmcore.as_path().into(), out.as_path().into()];
        let stderr = vmdump_ok(args.into_iter().chain(files));
        assert!(
            stderr.contains(&format!("Filter          : pfn-ranges: {excluded} pages excluded")),
            "{stderr}"
        );
        let pages = dump_counts(&out).pages_in_file;
        assert_eq!(pages, summary.ram_pages - excluded, "-d {level}");
        assert_eq!(descriptor_slots(&out), pages, "-d {level}: the table has a slot for each page, no more");
        let read = libkdumpfile_compare(&out, &vmcore);
        assert_eq!((read.different, read.missing), (0, excluded), "-d {level}: {}", read.raw);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failing_filter_plugin_is_disabled_and_its_pages_kept() {
    let dir = temp_dir("dump-flaky-filter");
    let plugins = temp_dir("dump-flaky-filter-plugins");
    build_c_filter(&plugins, "broken_filter.c", "libvmdump_flaky_filter.so");
    let (vmcore, summary) = synthetic(&dir, SynthSpec { ram_bytes: 16 << 20, ..SynthSpec::default() });
    let profile = dir.join("flaky.toml");
    std::fs::write(&profile, "[[filters]]\nname = \"flaky-filter\"\n").unwrap();
    let out = dir.join("out");
    let options = ["--plugin-dir".as_ref(), plugins.as_os_str(), "--profile".as_ref(), profile.as_os_str()];
    let (code, stderr) = dump_status(&options, &vmcore, &out);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("filter flaky-filter failed") && stderr.contains("filter hardware gone"),
        "{stderr}"
    );
    let read = libkdumpfile_compare(&out, &vmcore);
    assert_eq!((read.equal, read.missing), (summary.ram_pages, 0), "{}", read.raw);
}

#[test]
fn a_metadata_filter_plugin_that_fails_keeps_both_passes_in_step() {
    let dir = temp_dir("dump-fickle-filter");
    let (vmcore, summary) = synthetic(&dir, SynthSpec { ram_bytes: 32 << 20, ..SynthSpec::default() });
    let profile = dir.join("fickle.toml");
    std::fs::write(&profile, "[[filters]]\nname = \"fickle\"\n").unwrap();
    for (context, code, words) in [(0, 3, "filter fickle failed"), (1, 1, "failed on the second pass")] {
        let plugins = temp_dir(&format!("dump-fickle-filter-{context}"));
        build_c_filter_with(
            &plugins,
            "fickle_filter.c",
            "libvmdump_fickle.so",
            &[&format!("FAIL_IN_CONTEXT={context}")],
        );
        let out = dir.join(format!("out-{context}"));
        let options =
            ["--plugin-dir".as_ref(), plugins.as_os_str(), "--profile".as_ref(), profile.as_os_str()];
        let (status, stderr) = dump_status(&options, &vmcore, &out);
        assert_eq!(status, Some(code), "failing in context {context}: {stderr}");
        assert!(stderr.contains(words) && stderr.contains("fickle at pfn"), "{stderr}");
        let counts = dump_counts(&out);
        let read = libkdumpfile_compare(&out, &vmcore);
        assert_eq!(read.different, 0, "context {context}: {}", read.raw);
        assert_eq!(read.equal, counts.pages_in_file, "context {context}: every page in the file reads back");
        if context == 0 {
            assert_eq!(counts.status & 0x8, 0, "complete");
            assert_eq!(descriptor_slots(&out), counts.pages_in_file, "no unused slot");
            assert!(counts.pages_in_file > summary.ram_pages * 9 / 10, "pages kept once it failed");
        } else {
            assert_eq!(counts.status & 0x8, 0x8, "flagged incomplete");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_filter_plugin_reading_struct_pages_and_vmcoreinfo_excludes_lru_pages() {
    lru_filter_excludes_lru_pages("sdk/include", "dump-lru-filter");
}

/// ABI 1.1 is append-only: the same filter built against the frozen ABI
/// 1.0 header (a 96-byte table, no `prepare`) loads, says 1.0, and runs
/// unchanged.
#[test]
fn a_filter_built_against_the_abi_1_0_header_loads_and_runs_unchanged() {
    lru_filter_excludes_lru_pages("tests/plugins/abi-1.0", "dump-lru-filter-1.0");
    let plugins = temp_dir("lru-filter-1.0-listed");
    build_c_filter_against(&plugins, "tests/plugins/abi-1.0", "lru_filter.c", "libvmdump_filter_lru.so");
    let listed = vmdump_ok([OsArg::from("--plugin-dir"), OsArg::from(&*plugins), "plugins".into()]);
    let out = vmdump([OsArg::from("--plugin-dir"), OsArg::from(&*plugins), "plugins".into()]);
    let text = format!("{listed}{}", String::from_utf8_lossy(&out.stdout));
    let line = text.lines().find(|l| l.contains("lru")).unwrap_or_else(|| panic!("lru not listed: {text}"));
    assert!(line.contains("1.0"), "{line}");
    std::fs::remove_dir_all(&plugins).unwrap();
}

/// The LRU filter, built against the header in `include`, excludes exactly
/// the LRU pages of a synthetic kernel.
fn lru_filter_excludes_lru_pages(include: &str, name: &str) {
    let dir = temp_dir(name);
    let plugins = temp_dir(&format!("{name}-plugins"));
    build_c_filter_against(&plugins, include, "lru_filter.c", "libvmdump_filter_lru.so");
    let (vmcore, summary) = synthetic(&dir, kernel_spec(synth::Flavour::Linux6_1));
    // The rule, applied here to the struct pages read through vmdump's own view.
    let input = vmdump::input::Vmcore::open(&vmcore).unwrap();
    let info = input.vmcoreinfo().unwrap();
    let (bit, offset) = (info.number("PG_lru").unwrap() as u32, info.offset("page.flags").unwrap() as usize);
    let view = vmdump::kernel::KernelView::open(&input).unwrap().expect("VMCOREINFO");
    let mut pages = view.struct_pages().expect("memory sections");
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
            OsArg::from(&*plugins),
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
