//! `vmdump triage` on the real vmcores, judged by what the crashed kernel
//! itself printed as it panicked (the fixtures' kernel logs, by
//! makedumpfile): its panic message, the CPU, pid and comm of its
//! "CPU: ... PID: ... Comm: ..." line, and its own call trace, every frame
//! of which from the sysrq handler outward is in the triage's stack with
//! the same symbol, offset and size. The QEMU dump of a kernel that did
//! not crash gives a triage that says what it lacks.

mod support;

use support::dumps::all_fixtures;

/// The release the kernel log's "Linux version" line names.
fn log_release(log: &str) -> String {
    let at = log.find("Linux version ").expect("a Linux version line") + "Linux version ".len();
    log[at..].split_whitespace().next().unwrap().to_owned()
}

/// What the kernel printed about its panic: (CPU, pid, comm) and its call
/// trace from the sysrq handler on, `?` entries included, as printed.
fn kernel_view(log: &str) -> ((u32, u32, String), Vec<String>) {
    let text = |line: &str| -> String {
        let rest = line.split_once("] ").map_or(line, |(_, r)| r);
        // 7.x lines have a caller column: "[      T1] ".
        let rest = rest.strip_prefix('[').and_then(|r| r.split_once("] ")).map_or(rest, |(_, r)| r);
        rest.to_owned()
    };
    let lines: Vec<String> = log.lines().map(text).collect();
    let panic = lines.iter().position(|l| l.starts_with("Kernel panic - not syncing")).expect("a panic line");
    let who = &lines[panic + 1];
    let field = |name: &str| who.split_once(name).unwrap().1.split_whitespace().next().unwrap().to_owned();
    let cpu = field("CPU: ").parse().unwrap();
    let pid = field("PID: ").parse().unwrap();
    let trace: Vec<String> = lines[panic..]
        .iter()
        .skip_while(|l| !l.trim_start().starts_with("sysrq_handle_crash"))
        .take_while(|l| !l.starts_with("RIP:") && !l.trim_start().starts_with("</TASK>"))
        .map(|l| l.trim_start().trim_start_matches("? ").to_owned())
        .collect();
    ((cpu, pid, field("Comm: ")), trace)
}

#[test]
fn the_triage_of_each_crash_is_what_the_kernel_said_as_it_panicked() {
    let Some(fixtures) = all_fixtures() else { return };
    for f in fixtures.iter().filter(|f| f.name != "vmcore-S") {
        let out = support::dumps::vmdump(["triage".as_ref(), "--json".as_ref(), f.elf.as_os_str()]);
        assert!(out.status.success(), "{}: {}", f.name, String::from_utf8_lossy(&out.stderr));
        let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let log = std::fs::read_to_string(f.expected_file("dmesg.txt")).unwrap();
        let ((cpu, pid, comm), trace) = kernel_view(&log);
        assert_eq!(t["panic"], "sysrq triggered crash", "{}", f.name);
        assert_eq!(
            (t["cpu"].as_u64(), t["task"]["pid"].as_u64()),
            (Some(u64::from(cpu)), Some(u64::from(pid))),
            "{}",
            f.name
        );
        assert_eq!(t["task"]["comm"], comm.as_str(), "{}", f.name);
        let release = log_release(&log);
        assert_eq!(t["release"], release.as_str(), "{}", f.name);
        assert_eq!(t["taint"]["letters"], "G", "{}", f.name);
        assert!(
            t["instruction_pointer"]["symbol"].as_str().unwrap().starts_with("__crash_kexec+"),
            "{}: {}",
            f.name,
            t["instruction_pointer"]
        );
        assert_eq!(t["stack_method"], "scan", "{}: x86_64 kernels without frame pointers", f.name);
        let ours: Vec<&str> =
            t["stack"].as_array().unwrap().iter().filter_map(|f| f["symbol"].as_str()).collect();
        assert!(trace.len() >= 8, "{}: the kernel's trace {trace:?}", f.name);
        let mut rest = ours.iter();
        for frame in &trace {
            assert!(
                rest.any(|o| o == frame),
                "{}: the kernel's frame {frame} is not in the triage's stack, in order: {ours:?}",
                f.name
            );
        }
        eprintln!("{}: {} of the kernel's frames in order in {} frames", f.name, trace.len(), ours.len());
    }
}

/// The text form names the panic and the sysrq handler, and says how the
/// stack was found.
#[test]
fn the_text_triage_names_the_panic_and_the_handler() {
    let Some(fixtures) = all_fixtures() else { return };
    let f = fixtures.iter().find(|f| f.name == "vmcore-SK").unwrap();
    let out = support::dumps::vmdump(["triage".as_ref(), f.elf.as_os_str()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("panic:       sysrq triggered crash\n"), "{text}");
    assert!(text.contains(" sysrq_handle_crash+0x16/0x20\n"), "{text}");
    assert!(
        text.contains(
            "stack (a scan of the stack for text addresses, `? ` where no call precedes (no frame pointers)):"
        ),
        "{text}"
    );
    assert!(text.contains("crash time:  2026-"), "{text}");
}

/// A kernel that did not crash (QEMU's dump-guest-memory of a running
/// guest): the triage is written, and says what it lacks.
#[test]
fn a_kernel_that_did_not_panic_gets_a_triage_that_says_so() {
    let Some(fixtures) = all_fixtures() else { return };
    let f = fixtures.iter().find(|f| f.name == "vmcore-S").unwrap();
    let out = support::dumps::vmdump(["triage".as_ref(), f.elf.as_os_str()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("panic:       ?\n") && text.contains("missing:     panic: the kernel log has no"),
        "{text}"
    );
    assert!(text.contains("kernel:      6.1.0-57-amd64\n"), "{text}");
}

/// In makedumpfile mode, a profile with `[triage] beside_dump = true`
/// writes `DUMPFILE.triage.json` (mode 0600) beside the dump: the same
/// triage as `vmdump triage --json`.
#[test]
fn the_capture_kernel_writes_the_triage_beside_the_dump() {
    use std::os::unix::fs::PermissionsExt;
    let Some(fixtures) = all_fixtures() else { return };
    let f = fixtures.iter().find(|f| f.name == "vmcore-SK72").unwrap();
    let dir = support::temp_dir("triage-beside");
    let profile = dir.join("triage.toml");
    std::fs::write(&profile, "[triage]\nbeside_dump = true\n").unwrap();
    let dump = dir.join("vmcore");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vmdump"))
        .args(["makedumpfile", "-l", "--message-level", "7", "-d", "31"])
        .arg(&f.elf)
        .arg(&dump)
        .env("VMDUMP_PROFILE", &profile)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let beside = dir.join("vmcore.triage.json");
    assert_eq!(std::fs::metadata(&beside).unwrap().permissions().mode() & 0o777, 0o600);
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(&beside).unwrap()).unwrap();
    let direct = support::dumps::vmdump(["triage".as_ref(), "--json".as_ref(), f.elf.as_os_str()]);
    let direct: serde_json::Value = serde_json::from_slice(&direct.stdout).unwrap();
    assert_eq!(written, direct);
    assert_eq!(written["panic"], "sysrq triggered crash");
    assert!(dump.exists());
}
