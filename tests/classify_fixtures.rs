//! Page classification (`vmdump::classify`) on the real vmcores of
//! `../shared/fixtures` (Debian 6.1 kernels), against makedumpfile: the
//! report counts of `expected/NAME.d31.report.txt`, and for each single
//! bit 2, 4, 8, 16 makedumpfile's report and its output's bitmaps, pfn by
//! pfn. Without the fixtures these tests say so and do nothing.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use support::dumps::{Fixture, REPORT_CATEGORIES, fixtures};
use support::temp_dir;
use vmdump::classify::{ClassCounts, PageClassifier};
use vmdump::input::{Input, Vmcore};
use vmdump::xlat::{KernelMemory, SectionTable};
use vmdump_format::kdump::{DiskDumpHeader, SubHeader};

/// Report labels of makedumpfile (kdump-format.md §7.4), in `ClassCounts`
/// order: its categories but the zero pages.
const LABELS: [&str; 6] = {
    let [_zero, cache, private, user, free, hwpoison, offline] = REPORT_CATEGORIES;
    [cache, private, user, free, hwpoison, offline]
};

fn as_array(c: &ClassCounts) -> [u64; 6] {
    [c.cache, c.cache_private, c.user, c.free, c.hwpoison, c.offline]
}

/// Our classification of a whole fixture: counts and the excluded pfns as
/// a bitset from pfn 0, with windows of `window` pfns.
fn classify(vmcore: &Vmcore, level: u8, window: u64) -> (ClassCounts, Vec<u64>) {
    let info = vmcore.vmcoreinfo().expect("VMCOREINFO");
    let memory = KernelMemory::open(vmcore, info, &vmcore.elf().loads).expect("kernel memory");
    let sections = SectionTable::read(&memory, info, vmcore.phys().max_pfn()).expect("sections");
    let end = vmcore.phys().max_pfn().min(sections.present_pfn_end());
    let level = vmdump::level::DumpLevel::new(level).expect("a dump level");
    let mut classifier = PageClassifier::new(&memory, info, &sections, level).expect("classifier");
    let mut counts = ClassCounts::default();
    let mut all = vec![0u64; end.div_ceil(64) as usize];
    let is_ram = |pfn: u64| vmcore.phys().is_ram(pfn);
    let mut start = 0;
    while start < end {
        let w = start..(start + window).min(end);
        let mut bits = vec![0u64; (w.end - w.start).div_ceil(64) as usize];
        classifier.classify(w.clone(), &is_ram, &mut bits, &mut counts).expect("classify");
        for i in 0..w.end - w.start {
            if bits[(i / 64) as usize] >> (i % 64) & 1 != 0 {
                let pfn = w.start + i;
                all[(pfn / 64) as usize] |= 1 << (pfn % 64);
            }
        }
        start = w.end;
    }
    assert_eq!(classifier.invalid_free_orders(), 0);
    (counts, all)
}

/// Runs makedumpfile at `level`; returns its report counts (LABELS order)
/// and the pfns it excluded (1st bitmap set, 2nd clear), as a bitset.
fn makedumpfile(fixture: &Fixture, level: u8, dir: &Path) -> ([u64; 6], Vec<u64>) {
    let out = dir.join(format!("d{level}.kdump"));
    let _ = std::fs::remove_file(&out);
    let result = Command::new("makedumpfile")
        .args(["--message-level", "22", "-l", "-d", &level.to_string()])
        .arg(&fixture.elf)
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .expect("makedumpfile (scripts/lib/tools.sh installs it)");
    let text =
        format!("{}{}", String::from_utf8_lossy(&result.stdout), String::from_utf8_lossy(&result.stderr));
    assert!(result.status.success(), "makedumpfile -d {level}: {text}");
    let counts = LABELS.map(|label| {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("{label} in {text}"));
        u64::from_str_radix(line.rsplit("0x").next().unwrap().trim(), 16).expect("hex count")
    });
    let excluded = excluded_in_dump(&out);
    let _ = std::fs::remove_file(&out);
    (counts, excluded)
}

/// Pfns in the 1st bitmap of a kdump-compressed file but not in its 2nd.
fn excluded_in_dump(path: &Path) -> Vec<u64> {
    let bytes = std::fs::read(path).expect("read dump");
    let header = DiskDumpHeader::decode(&bytes).expect("header");
    let bs = header.block_size as usize;
    let _sub = SubHeader::decode(&bytes[bs..], header.endian).expect("sub header");
    let len = header.bitmap_blocks as usize / 2 * bs;
    let first = (1 + header.sub_hdr_size as usize) * bs;
    let (b1, b2) = (&bytes[first..first + len], &bytes[first + len..first + 2 * len]);
    b1.chunks(8)
        .zip(b2.chunks(8))
        .map(|(a, b)| {
            let word = |c: &[u8]| c.iter().rev().fold(0u64, |w, &x| w << 8 | u64::from(x));
            word(a) & !word(b)
        })
        .collect()
}

/// Describes where two pfn bitsets differ (at most 8 pfns shown).
fn diff(ours: &[u64], theirs: &[u64]) -> (u64, u64, Vec<u64>) {
    let (mut only_ours, mut only_theirs, mut sample) = (0, 0, Vec::new());
    for i in 0..ours.len().max(theirs.len()) {
        let (a, b) = (ours.get(i).copied().unwrap_or(0), theirs.get(i).copied().unwrap_or(0));
        only_ours += u64::from((a & !b).count_ones());
        only_theirs += u64::from((b & !a).count_ones());
        let mut d = a ^ b;
        while d != 0 && sample.len() < 8 {
            sample.push(i as u64 * 64 + u64::from(d.trailing_zeros()));
            d &= d - 1;
        }
    }
    (only_ours, only_theirs, sample)
}

#[test]
fn level_31_counts_equal_makedumpfiles_report() {
    let Some(fixtures) = fixtures() else { return };
    for fixture in &fixtures {
        let vmcore = Vmcore::open(&fixture.elf).expect("open fixture");
        let started = Instant::now();
        let (counts, _) = classify(&vmcore, 31, 1 << 15);
        let kernel = vmdump::kernel::KernelView::open(&vmcore).expect("page tables").expect("VMCOREINFO");
        let pfns = kernel.memory_end().expect("mem_section").min(vmcore.phys().max_pfn());
        eprintln!(
            "{}: classified pfns 0..{pfns:#x} at -d 31 (open kernel memory, read sections, classify) in {:.1} ms: {counts:?}",
            fixture.name,
            started.elapsed().as_secs_f64() * 1e3
        );
        let expected = LABELS.map(|label| fixture.expected_count(31, label));
        assert_eq!(
            as_array(&counts),
            expected,
            "{}: ours vs expected/{}.d31.report.txt ({LABELS:?})",
            fixture.name,
            fixture.name
        );
    }
}

#[test]
fn window_size_does_not_change_the_result() {
    let Some(fixtures) = fixtures() else { return };
    for fixture in &fixtures {
        let vmcore = Vmcore::open(&fixture.elf).expect("open fixture");
        let whole = classify(&vmcore, 31, u64::MAX / 2);
        for window in [1000, 4096, 333] {
            assert_eq!(classify(&vmcore, 31, window), whole, "{}: windows of {window} pfns", fixture.name);
        }
    }
}

#[test]
fn each_single_bit_matches_makedumpfile_pfn_by_pfn() {
    let Some(fixtures) = fixtures() else { return };
    for fixture in &fixtures {
        let vmcore = Vmcore::open(&fixture.elf).expect("open fixture");
        let dir = temp_dir(&format!("classify-{}", fixture.name));
        for level in [2u8, 4, 8, 16] {
            let (theirs, their_pfns) = makedumpfile(fixture, level, &dir);
            let (ours, our_pfns) = classify(&vmcore, level, 1 << 15);
            eprintln!("{} -d {level}: ours {:?} makedumpfile {theirs:?}", fixture.name, as_array(&ours));
            assert_eq!(as_array(&ours), theirs, "{} -d {level}: report counts ({LABELS:?})", fixture.name);
            let (only_ours, only_theirs, sample) = diff(&our_pfns, &their_pfns);
            assert_eq!(
                (only_ours, only_theirs),
                (0, 0),
                "{} -d {level}: pfns excluded only by us / only by makedumpfile, e.g. {sample:x?}",
                fixture.name
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
