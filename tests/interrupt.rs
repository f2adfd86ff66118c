//! A dump interrupted by SIGINT, SIGTERM, SIGHUP or SIGKILL at a random
//! moment: its header says incomplete (read from the raw bytes), `vmdump
//! info` says so, `vmdump verify` rejects it unless `--allow-incomplete`,
//! and every page it holds reads back whole through libkdumpfile.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use support::dumps::{assert_verifies_incomplete, libkdumpfile_compare, vmdump};
use support::synthetic::synthetic;
use support::{build_dir, temp_dir};
use vmdump_synth::SynthSpec;

/// Offset of `status` in the kdump header: signature (8), header_version
/// (4), utsname (6 x 65), padding to 8, timestamp (16).
const STATUS_OFFSET: usize = 424;
const DUMP_DH_COMPRESSED_INCOMPLETE: u32 = 0x8;

fn header_status(dump: &Path) -> u32 {
    let bytes = std::fs::read(dump).expect("read the dump");
    assert_eq!(&bytes[..8], b"KDUMP   ", "{} has no kdump header", dump.display());
    u32::from_le_bytes(bytes[STATUS_OFFSET..STATUS_OFFSET + 4].try_into().unwrap())
}

/// A delay in 300..1300 ms that differs from run to run.
fn random_delay(salt: u64) -> Duration {
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().subsec_nanos();
    let mixed =
        (u64::from(nanos) ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    Duration::from_millis(300 + (mixed >> 33) % 1000)
}

/// Starts a slow dump (one thread, zlib at level 9), signals it after a
/// random delay; returns its exit status and stderr.
fn interrupted_dump(
    vmcore: &Path,
    out: &Path,
    signal: &str,
    salt: u64,
) -> (std::process::ExitStatus, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_vmdump"))
        .args(["--plugin-dir".as_ref(), build_dir().as_os_str()])
        .args(["dump", "--no-progress", "--threads", "1", "--compress", "zlib:9", "-d", "0"])
        .args([vmcore, out])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vmdump");
    let delay = random_delay(salt);
    std::thread::sleep(delay);
    let pid = child.id().to_string();
    let killed = Command::new("kill").args([&format!("-{signal}"), &pid]).status().expect("run kill");
    assert!(killed.success(), "kill -{signal} {pid}");
    let started = Instant::now();
    let output = child.wait_with_output().expect("wait for vmdump");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{signal}: vmdump took {:?} to stop",
        started.elapsed()
    );
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    eprintln!("{signal} after {delay:?}: {} ({} bytes of stderr)", output.status, stderr.len());
    (output.status, stderr)
}

fn info_says_incomplete(dump: &Path) -> bool {
    let out = vmdump(["info".as_ref(), dump.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().any(|l| l.starts_with("incomplete") && l.trim_end().ends_with("yes"))
}

#[test]
fn an_interrupted_dump_reads_as_incomplete_and_holds_whole_pages() {
    let dir = temp_dir("interrupt");
    let spec = SynthSpec { ram_bytes: 384 << 20, data_percent: 70, ..SynthSpec::default() };
    let (vmcore, summary) = synthetic(&dir, spec);
    for (salt, signal) in ["INT", "TERM", "HUP", "KILL"].into_iter().enumerate() {
        let out = dir.join(format!("{signal}.kdump"));
        let (status, stderr) = interrupted_dump(&vmcore, &out, signal, salt as u64);
        if signal == "KILL" {
            assert_eq!(status.code(), None, "killed by SIGKILL: {status}");
        } else {
            assert_eq!(status.code(), Some(1), "{signal}: {stderr}");
            assert!(stderr.contains(&format!("interrupted by SIG{signal}")), "{signal}: {stderr}");
        }
        let flagged = header_status(&out) & DUMP_DH_COMPRESSED_INCOMPLETE;
        assert_eq!(flagged, DUMP_DH_COMPRESSED_INCOMPLETE, "{signal}: the header says incomplete");
        assert!(info_says_incomplete(&out), "{signal}: vmdump info");
        let verify = vmdump(["verify".as_ref(), out.as_os_str()]);
        assert!(!verify.status.success(), "{signal}: vmdump verify accepted an incomplete dump");
        assert_verifies_incomplete(&out, &vmcore, signal);
        let read = libkdumpfile_compare(&out, &vmcore);
        assert_eq!(read.different, 0, "{signal}: {}", read.raw);
        assert!(read.equal < summary.ram_pages, "{signal}: the dump was not cut short: {}", read.raw);
        // SIGKILL too: the 2nd bitmap is written through as each batch of
        // descriptors reaches the disk, so the pages written before stay
        // readable.
        assert!(read.equal > 0, "{signal}: nothing written before the signal was kept: {}", read.raw);
    }
}

/// A signal while the struct pages are classified (the first pass, before
/// any page is written): the file is kept as an incomplete dump holding no
/// page, not removed, and `verify --allow-incomplete` accepts it.
#[test]
fn a_dump_interrupted_in_its_first_pass_is_kept_as_incomplete() {
    let dir = temp_dir("interrupt-first-pass");
    let vmcore = dir.join("big.elf");
    // 64 GiB of sparse RAM: the classification of 16 Mi struct pages takes
    // about a second, the signal comes after 300 ms.
    let synth = vmdump(
        ["synth", "--size", "64G", "--data-percent", "1"]
            .map(AsRef::as_ref)
            .into_iter()
            .chain([vmcore.as_os_str()]),
    );
    assert!(synth.status.success(), "{}", String::from_utf8_lossy(&synth.stderr));
    let out = dir.join("out.kdump");
    let child = Command::new(env!("CARGO_BIN_EXE_vmdump"))
        .args(["dump", "--no-progress", "-d", "16"])
        .args([&vmcore, &out])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vmdump");
    std::thread::sleep(Duration::from_millis(300));
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("run kill");
    assert!(killed.success());
    let output = child.wait_with_output().expect("wait for vmdump");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    assert!(info_says_incomplete(&out), "the file is kept and reads as incomplete: {stderr}");
    assert_verifies_incomplete(&out, &vmcore, "first pass");
}
