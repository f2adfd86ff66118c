//! Progress when stderr is not a terminal: vmdump's own lines at the rate
//! asked, makedumpfile's lines once a second in makedumpfile mode, and the
//! JSON stream of `--progress-fd`, whose last line says done with the
//! final counts. Judged by the lines' count and by the time between their
//! arrivals on a pipe, on a vmcore that takes a few seconds to dump.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::synthetic::synthetic;
use support::{build_dir, temp_dir};
use vmdump_synth::SynthSpec;

/// The lines `command` writes on stderr (a pipe), each with the time it
/// arrived, and whether the command succeeded.
fn stderr_lines(command: &mut Command) -> (Vec<(Duration, String)>, bool) {
    let mut child = command.stderr(Stdio::piped()).stdout(Stdio::null()).spawn().expect("run vmdump");
    let started = Instant::now();
    let lines = BufReader::new(child.stderr.take().unwrap())
        .lines()
        .map(|line| (started.elapsed(), line.unwrap()))
        .collect();
    (lines, child.wait().unwrap().success())
}

/// The gaps between consecutive lines' arrivals.
fn gaps(lines: &[&(Duration, String)]) -> Vec<f64> {
    lines.windows(2).map(|w| (w[1].0 - w[0].0).as_secs_f64()).collect()
}

/// A vmcore of 2 GiB with 60 % data pages: a few seconds of zlib.
fn big_vmcore(dir: &Path) -> std::path::PathBuf {
    let spec = SynthSpec { ram_bytes: 2 << 30, data_percent: 60, ..SynthSpec::default() };
    synthetic(dir, spec).0
}

#[test]
fn progress_lines_and_the_json_stream_come_at_the_rate_asked_and_end_done() {
    let dir = temp_dir("progress");
    let vmcore = big_vmcore(&dir);
    let (out, json) = (dir.join("dump"), dir.join("progress.json"));
    // fd 3 is opened by the shell, as an operator's script would.
    let script = r#"exec "$0" --plugin-dir "$1" dump -f --compress zlib --progress-interval 0.25 --progress-fd 3 "$2" "$3" 3>"$4""#;
    let (lines, ok) = stderr_lines(
        Command::new("sh")
            .args(["-c", script, env!("CARGO_BIN_EXE_vmdump")])
            .arg(build_dir())
            .args([&vmcore, &out, &json]),
    );
    assert!(ok, "{lines:?}");
    let progress: Vec<_> = lines.iter().filter(|(_, l)| l.starts_with("vmdump: Copying data: ")).collect();
    let wall = lines.last().unwrap().0.as_secs_f64();
    assert!(progress.len() >= 4 && progress.len() as f64 >= wall / 0.25 * 0.5, "{wall:.1} s: {lines:#?}");
    assert!(progress.last().unwrap().1.contains(": 100.0 % ("), "{progress:?}");
    let between = gaps(&progress[..progress.len() - 1]);
    assert!(between.iter().all(|&g| g > 0.15), "lines closer than the 0.25 s asked: {between:?}");
    assert!(between.iter().all(|&g| g < 1.0), "a second without a line: {between:?}");

    let stream: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let (last, moving) = stream.split_last().unwrap();
    assert!(moving.len() >= 4, "{stream:?}");
    assert!(moving.iter().all(|l| l["phase"] == "copying" && l["pages_total"].as_u64() == Some(1 << 19)));
    let done: Vec<u64> = moving.iter().map(|l| l["pages_done"].as_u64().unwrap()).collect();
    let bytes: Vec<u64> = moving.iter().map(|l| l["bytes_written"].as_u64().unwrap()).collect();
    assert!(done.is_sorted() && bytes.is_sorted(), "{done:?} {bytes:?}");
    let counts = support::dumps::dump_counts(&out);
    assert_eq!(last["phase"], "done", "{last}");
    assert_eq!(last["complete"], true, "{last}");
    assert_eq!(last["pages_in_file"].as_u64(), Some(counts.pages_in_file), "{last}");
    // Bytes written count the header and bitmaps rewritten at the end too.
    let written = last["bytes_written"].as_u64().unwrap();
    assert!(written >= std::fs::metadata(&out).unwrap().len() && written >= *bytes.last().unwrap(), "{last}");
    assert!(last["excluded"]["zero"].as_u64().unwrap() > 0, "{last}");

    // makedumpfile mode: its own line, once a second, ending at 100 %.
    let (lines, ok) = stderr_lines(
        Command::new(env!("CARGO_BIN_EXE_vmdump"))
            .arg("--plugin-dir")
            .arg(build_dir())
            .args(["makedumpfile", "-c", "-d", "1", "--message-level", "7"])
            .args([&vmcore, &dir.join("mdf")]),
    );
    assert!(ok, "{lines:?}");
    let progress: Vec<_> = lines.iter().filter(|(_, l)| l.starts_with("Copying data      ")).collect();
    assert!(progress.len() >= 3, "{lines:#?}");
    assert!(progress.last().unwrap().1.contains("[100.0 %]"), "{progress:?}");
    let between = gaps(&progress[..progress.len() - 1]);
    assert!(between.iter().all(|&g| (0.7..1.6).contains(&g)), "not once a second: {between:?}");
}

#[test]
fn a_progress_fd_that_is_not_open_is_refused() {
    let dir = temp_dir("progress-fd");
    let (vmcore, _) = synthetic(&dir, SynthSpec { ram_bytes: 8 << 20, ..SynthSpec::default() });
    let out = support::dumps::vmdump([
        "dump".as_ref(),
        "--progress-fd".as_ref(),
        "97".as_ref(),
        vmcore.as_os_str(),
        dir.join("dump").as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--progress-fd 97: not an open file descriptor"), "{err}");
    assert!(!dir.join("dump").exists());
}
