//! Unreadable input is a lost page, not a lost dump (issue 12): a vmcore
//! truncated while it is dumped, read through mmap windows (the pages past
//! the new end fault with SIGBUS) or with pread (they come short). The
//! dump must end promptly, keep every page that could be read, name the
//! lost pfns, and be flagged incomplete; libkdumpfile must read every kept
//! page equal to the source and refuse the lost ones.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::dumps::{assert_verifies_incomplete, vmdump};
use support::synthetic::synthetic;
use support::{build_dir, temp_dir, workspace_root};
use vmdump_synth::SynthSpec;

/// Where the copy of the vmcore is cut: about half of it.
const TRUNCATE_TO: u64 = 200 << 20;

/// A dump of `vmcore` whose file is truncated to [`TRUNCATE_TO`] as soon as
/// the dump has begun writing; returns the exit code, stderr and seconds.
fn truncated_dump(vmcore: &Path, out: &Path, extra: &[&str]) -> (Option<i32>, String, f64) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vmdump"))
        .args(["--plugin-dir".as_ref(), build_dir().as_os_str()])
        .args(["dump", "--no-progress", "-d", "0"])
        .args(extra)
        .args([vmcore, out])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vmdump");
    while !out.exists() {
        assert!(child.try_wait().expect("poll vmdump").is_none(), "{extra:?}: vmdump ended before writing");
        assert!(started.elapsed() < Duration::from_secs(30), "the dump never started");
        std::thread::sleep(Duration::from_millis(1));
    }
    let file = std::fs::OpenOptions::new().write(true).open(vmcore).expect("open the vmcore copy");
    file.set_len(TRUNCATE_TO).expect("truncate the vmcore copy");
    let output = loop {
        if child.try_wait().expect("wait for vmdump").is_some() {
            break child.wait_with_output().expect("collect vmdump's output");
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("{extra:?}: vmdump still running after 120 s: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), stderr, started.elapsed().as_secs_f64())
}

fn json_number(raw: &str, key: &str) -> u64 {
    let at = raw.find(&format!("\"{key}\": ")).unwrap_or_else(|| panic!("no {key} in {raw}"));
    let rest = &raw[at + key.len() + 4..];
    rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())].parse().expect("a number")
}

#[test]
fn a_vmcore_truncated_during_the_dump_loses_only_the_pages_past_its_end() {
    let dir = temp_dir("lost-pages");
    let spec = SynthSpec { ram_bytes: 384 << 20, data_percent: 70, ..SynthSpec::default() };
    let (source, _) = synthetic(&dir, spec);
    let cases: [(&str, &[&str]); 3] = [
        ("mmap, one thread", &["--compress", "zlib:9", "--threads", "1"]),
        ("pread, one thread", &["--compress", "zlib:9", "--threads", "1", "--no-mmap"]),
        (
            "mmap, four threads, small windows",
            &["--compress", "zlib:9", "--threads", "4", "--window-mib", "1"],
        ),
    ];
    for (name, extra) in cases {
        let copy = dir.join("shrinking.elf");
        std::fs::copy(&source, &copy).expect("copy the vmcore");
        let out = dir.join("out.kdump");
        let _ = std::fs::remove_file(&out);
        let (code, stderr, seconds) = truncated_dump(&copy, &out, extra);
        eprintln!("{name}: exit {code:?} after {seconds:.1} s");
        assert_eq!(code, Some(1), "{name}: the exit status says incomplete: {stderr}");
        assert!(
            stderr.contains("pages could not be read from the input: pfns 0x"),
            "{name}: the lost pages are named: {stderr}"
        );
        let info = vmdump(["info".as_ref(), out.as_os_str()]);
        let info = String::from_utf8_lossy(&info.stdout);
        assert!(info.lines().any(|l| l.starts_with("incomplete") && l.ends_with("yes")), "{name}: {info}");
        assert!(!vmdump(["verify".as_ref(), out.as_os_str()]).status.success(), "{name}: verify accepted it");
        assert_verifies_incomplete(&out, &source, name);
        let judge = Command::new("/usr/bin/python3")
            .arg(workspace_root().join("tests/py/compare_dump.py"))
            .args([out.as_os_str(), source.as_os_str()])
            .args(["--lost-ok", "--truncated-at", &TRUNCATE_TO.to_string()])
            .output()
            .expect("run /usr/bin/python3");
        let raw = String::from_utf8_lossy(&judge.stdout);
        assert!(judge.status.success(), "{name}: {raw} {}", String::from_utf8_lossy(&judge.stderr));
        let (beyond, refused) = (json_number(&raw, "beyond"), json_number(&raw, "refused"));
        assert!(beyond > 0, "{name}: nothing lies past the cut: {raw}");
        assert_eq!(json_number(&raw, "readable_missing"), 0, "{name}: a readable page is missing: {raw}");
        assert_eq!(json_number(&raw, "missing"), 0, "{name}: lost pages read as excluded: {raw}");
        // Pages past the cut read before it came stay in the dump, whole.
        assert_eq!(refused + json_number(&raw, "beyond_present"), beyond, "{name}: {raw}");
        assert!(refused > 0, "{name}: the dump read everything before the cut: {raw}");
        assert!(stderr.contains(&format!("ERROR: {refused} pages could not be read")), "{name}: {stderr}");
    }
}

/// ELF output has no way to mark a page missing but to split its segment:
/// a lost page is written as zeros in its place, the report names it and
/// the file header says incomplete (e_flags bit 0, as makedumpfile marks
/// an incomplete ELF dump).
#[test]
fn an_elf_dump_of_a_truncated_vmcore_is_flagged_incomplete() {
    let dir = temp_dir("lost-pages-elf");
    let spec = SynthSpec { ram_bytes: 384 << 20, data_percent: 70, ..SynthSpec::default() };
    let (source, _) = synthetic(&dir, spec);
    let copy = dir.join("shrinking.elf");
    std::fs::copy(&source, &copy).expect("copy the vmcore");
    let out = dir.join("out.elf");
    let (code, stderr, _) = truncated_dump(&copy, &out, &["--threads", "2", "--elf"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("pages could not be read from the input: pfns 0x"), "{stderr}");
    let header = std::fs::read(&out).expect("read the ELF dump");
    let e_flags = u32::from_le_bytes(header[48..52].try_into().unwrap());
    assert_eq!(e_flags & 1, 1, "e_flags {e_flags:#x}");
}
