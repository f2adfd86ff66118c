//! Page filters end to end on synthetic vmcores: a metadata filter in the
//! engine, struct page classification, and filter plugins named in profiles.

mod support;

use std::path::Path;

use support::dumps::{dump_counts, libkdumpfile_compare, vmdump, vmdump_ok};
use support::synthetic::*;
use support::temp_dir;
use vmdump_synth::{self as synth, SynthSpec};

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
