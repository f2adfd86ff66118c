//! `vmdump estimate` on the real vmcores, judged by the real dumps: the
//! pages in the file at -d 1 and -d 31 equal those of vmdump's dumps (and
//! the classes at -d 31 equal makedumpfile's report), and the predicted
//! size is within 5 % of the real file for zlib, lzo and zstd, and within
//! the estimate's own error bound.

mod support;

use std::path::Path;

use support::dumps::{all_fixtures, dump_counts, report_counts, report_value, vmdump, vmdump_ok};
use support::temp_dir;

/// `vmdump estimate --json` of `vmcore` at `level` with `codec`.
fn estimate(vmcore: &Path, level: &str, codec: &str) -> serde_json::Value {
    let out = vmdump(
        ["estimate", "--json", "-d", level, "--compress", codec]
            .iter()
            .map(AsRef::as_ref)
            .chain([vmcore.as_os_str()]),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn estimates_of_the_real_vmcores_match_their_dumps() {
    let Some(fixtures) = all_fixtures() else { return };
    let dir = temp_dir("estimate");
    for f in &fixtures {
        for (level, codec) in [("31", "zlib"), ("31", "lzo"), ("31", "zstd"), ("1", "zlib")] {
            let e = estimate(&f.elf, level, codec);
            let dump = dir.join(format!("{}.d{level}.{codec}", f.name));
            vmdump_ok(
                ["dump", "--no-progress", "-f", "-d", level, "--compress", codec]
                    .iter()
                    .map(AsRef::as_ref)
                    .chain([f.elf.as_os_str(), dump.as_os_str()]),
            );
            let real = dump_counts(&dump);
            let what = format!("{} -d {level} {codec}", f.name);
            assert_eq!(e["estimate"]["pages_in_file"].as_u64(), Some(real.pages_in_file), "{what}");
            let table = e["levels"].as_array().unwrap();
            let row = &table[level.parse::<usize>().unwrap()];
            assert_eq!(row.as_array().unwrap()[1].as_u64(), Some(real.pages_in_file), "{what}: the table");
            assert_eq!(e["ram_pages"].as_u64(), Some(real.ram_pages), "{what}");
            let size = std::fs::metadata(&dump).unwrap().len() as f64;
            let predicted = e["estimate"]["bytes"].as_f64().unwrap();
            let bound = e["estimate"]["error_bytes"].as_f64().unwrap();
            let off = (predicted - size).abs();
            eprintln!(
                "{what}: predicted {predicted} ± {bound}, real {size} ({:+.2} %)",
                (predicted / size - 1.0) * 100.0
            );
            assert!(off <= 0.05 * size, "{what}: predicted {predicted}, real {size}");
            assert!(off <= bound.max(0.005 * size), "{what}: {off} off, beyond the bound {bound}");
            let zero = e["estimate"]["zero_pages"].as_f64().unwrap();
            assert!(
                (zero - real.zero_pages as f64).abs() <= 0.05 * real.zero_pages as f64 + 50.0,
                "{what}: zero {zero} against {}",
                real.zero_pages
            );
            std::fs::remove_file(&dump).unwrap();
        }
        let classes = &estimate(&f.elf, "31", "none")["classes"];
        for (key, label) in [
            ("cache", "Non-private cache pages"),
            ("cache_private", "Private cache pages"),
            ("user", "User process data pages"),
            ("free", "Free pages"),
        ] {
            assert_eq!(
                classes[key].as_u64(),
                Some(f.expected_count(31, label)),
                "{}: {key} against makedumpfile's report",
                f.name
            );
        }
    }
}

/// The text form names the classes, the table and the prediction.
#[test]
fn the_text_estimate_says_how_it_was_made() {
    let Some(fixtures) = all_fixtures() else { return };
    let out = vmdump(["estimate".as_ref(), "-d".as_ref(), "31".as_ref(), fixtures[0].elf.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for part in [
        "excluded at -d 31, by class",
        "pages in the file at each level:",
        "-d 31:",
        "(95 %)",
        "in pfn order from a random start",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
}

/// makedumpfile's `--dry-run --show-stats`: no file, and its report with
/// the class counts of the real run's report, the zero pages and write
/// bytes within 5 % of them.
#[test]
fn the_makedumpfile_dry_run_reports_the_dump_it_would_write() {
    let Some(fixtures) = all_fixtures() else { return };
    let dir = temp_dir("dry-run");
    let f = &fixtures[1];
    let run = |extra: &[&str], out: &Path| {
        let args = ["makedumpfile", "-c", "-d", "31", "--show-stats"].iter().chain(extra).map(AsRef::as_ref);
        let o = vmdump(args.chain([f.elf.as_os_str(), out.as_os_str()]));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
    };
    let (dry, real) = (dir.join("not-written"), dir.join("written"));
    let predicted = run(&["--dry-run"], &dry);
    assert!(!dry.exists(), "--dry-run wrote {}", dry.display());
    assert!(predicted.contains("The dumpfile is not written (--dry-run)"), "{predicted}");
    let written = run(&[], &real);
    let (p, w) = (report_counts(&predicted), report_counts(&written));
    for label in [
        "Original pages",
        "Non-private cache pages",
        "Private cache pages",
        "User process data pages",
        "Free pages",
        "Total pages",
    ] {
        let value = |counts: &[(String, u64)]| counts.iter().find(|(l, _)| l == label).map(|(_, v)| *v);
        assert_eq!(value(&p), value(&w), "{label}: {predicted}\n{written}");
    }
    let near = |label: &str| {
        let (a, b) = (report_value(&predicted, label) as f64, report_value(&written, label) as f64);
        assert!((a - b).abs() <= 0.05 * b, "{label}: {a} predicted, {b} written");
    };
    near("Pages filled with zero");
    let bytes = |text: &str| {
        text.lines().find_map(|l| l.strip_prefix("Write bytes     : ")).unwrap().parse::<f64>().unwrap()
    };
    let size = std::fs::metadata(&real).unwrap().len() as f64;
    assert!(
        (bytes(&predicted) - size).abs() <= 0.05 * size,
        "{} predicted, {size} written",
        bytes(&predicted)
    );
}

/// makedumpfile's `--mem-usage` on the real vmcores: its table, every type
/// equal to makedumpfile's own -d 31 report, and the total its "Original
/// pages" less the pages it counts twice where two PT_LOADs overlap (the
/// kernel text segment over RAM, in vmcore-SK and vmcore-SK72).
#[test]
fn mem_usage_prints_makedumpfiles_table_with_its_counts() {
    let Some(fixtures) = all_fixtures() else { return };
    for f in &fixtures {
        let out = vmdump(["makedumpfile".as_ref(), "--mem-usage".as_ref(), f.elf.as_os_str()]);
        let table = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}: {}", f.name, String::from_utf8_lossy(&out.stderr));
        assert!(table.contains("TYPE\t\tPAGES\t\t\tEXCLUDABLE\tDESCRIPTION\n"), "{table}");
        let row = |name: &str| -> u64 {
            let line = table.lines().find(|l| l.split_whitespace().next() == Some(name)).expect(name);
            line.split_whitespace().nth(1).unwrap().parse().unwrap()
        };
        for (name, label) in [
            ("ZERO", "Pages filled with zero"),
            ("NON_PRI_CACHE", "Non-private cache pages"),
            ("PRI_CACHE", "Private cache pages"),
            ("USER", "User process data pages"),
            ("FREE", "Free pages"),
        ] {
            assert_eq!(row(name), f.expected_count(31, label), "{}: {name}", f.name);
        }
        let total: u64 = table
            .lines()
            .find_map(|l| l.strip_prefix("Total pages on system:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let twice = overlapping_load_pages(&f.elf);
        assert_eq!(
            total + twice,
            f.expected_count(31, "Original pages"),
            "{}: total, {twice} counted twice",
            f.name
        );
        let excluded = f.expected_count(31, "Excluded pages");
        assert_eq!(row("KERN_DATA") + twice, f.expected_count(31, "Original pages") - excluded, "{}", f.name);
    }
}

/// Pages that more than one PT_LOAD of an ELF vmcore covers (64-bit, little-endian).
fn overlapping_load_pages(elf: &Path) -> u64 {
    use std::io::Read;
    let mut bytes = vec![0; 1 << 16];
    std::fs::File::open(elf).unwrap().read_exact(&mut bytes).unwrap();
    let word = |at: usize, n: usize| bytes[at..at + n].iter().rev().fold(0u64, |v, b| v << 8 | u64::from(*b));
    let (phoff, phnum) = (word(32, 8) as usize, word(56, 2) as usize);
    let loads: Vec<(u64, u64)> = (0..phnum)
        .map(|i| phoff + i * 56)
        .filter(|&at| word(at, 4) == 1)
        .map(|at| (word(at + 24, 8) / 4096, (word(at + 24, 8) + word(at + 40, 8)).div_ceil(4096)))
        .collect();
    let covered: std::collections::BTreeSet<u64> = loads.iter().flat_map(|&(s, e)| s..e).collect();
    loads.iter().map(|(s, e)| e - s).sum::<u64>() - covered.len() as u64
}
