//! makedumpfile's command line and messages, the man page, and a profile
//! choosing the plugin behind makedumpfile's compression options.

mod support;

use std::process::Command;

use support::dumps::vmdump;
use support::synthetic::*;
use support::temp_dir;
use vmdump_synth::SynthSpec;

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
    let groff = Command::new("groff")
        .args(["-t", "-man", "-ww", "-z"])
        .arg(&page)
        .output()
        .expect("groff (groff-base)");
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
fn the_man_page_has_every_makedumpfile_option_vmdump_knows() {
    let text =
        std::fs::read_to_string(support::workspace_root().join("man/vmdump.1")).unwrap().replace('\\', "");
    let section = &text[text.find(".SH MAKEDUMPFILE MODE").expect("the section")..];
    let table = &section[section.find(".TS").expect("a table")..section.find(".TE").expect("its end")];
    let help = vmdump(["makedumpfile", "-h"]);
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    let options: Vec<&str> = help
        .split_whitespace()
        .map(|w| w.trim_end_matches([';', ',', '.']))
        .filter(|w| w.starts_with('-') && w.len() > 1 && !w.contains(':'))
        .filter(|w| w.chars().nth(1).is_some_and(|c| c.is_ascii_alphabetic() || c == '-'))
        .collect();
    assert!(options.len() >= 40, "{help}");
    for option in options {
        let row = table.lines().any(|l| l.starts_with(&format!("fB{option}fR")));
        assert!(row, "the man page's makedumpfile table has no row for {option}");
    }
}

#[test]
fn check_params_accepts_mkdumprds_lines_writes_nothing_and_rejects_bad_ones() {
    let dir = temp_dir("check-params");
    let run = |line: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_vmdump"))
            .arg("makedumpfile")
            .args(line.split_whitespace())
            .current_dir(&dir)
            .env("VMDUMP_PROFILE", "builtin")
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // mkdumprd 1.0.61: `makedumpfile --check-params $_params vmcore dumpfile` (ssh and raw: `vmcore` only).
    for line in [
        "--check-params -l --message-level 7 -d 31 vmcore dumpfile",
        "--check-params -F -l --message-level 7 -d 31 vmcore",
        "--check-params -c --message-level 7 -d 31 vmcore dumpfile",
        "--check-params -F -c -d 31 -F vmcore",
        "--check-params -z -d 31 --num-threads=2 vmcore dumpfile",
        "--check-params -p -d 1 vmcore dumpfile",
    ] {
        let (code, stderr) = run(line);
        assert_eq!(code, Some(0), "{line}: {stderr}");
    }
    for (line, why) in [
        ("--check-params -F -l -d 31 vmcore dumpfile", "usage"),
        ("--check-params -c -E vmcore dumpfile", "-E"),
        ("--check-params --bogus vmcore dumpfile", "unknown option --bogus"),
        ("--check-params -d 40 vmcore dumpfile", "out of range"),
    ] {
        let (code, stderr) = run(line);
        assert_eq!(code, Some(1), "{line}: {stderr}");
        assert!(
            stderr.contains("Commandline parameter is invalid") && stderr.contains(why),
            "{line}: {stderr}"
        );
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "--check-params wrote something");
}

#[test]
fn mkdumprds_own_call_line_passes_through_the_name_makedumpfile() {
    // kdump-utils 1.0.61, mkdumprd, verify_core_collector(): `_cmd` is the first
    // word of core_collector, `_params` the rest plus the placeholders, and
    // `if ! $_cmd --check-params $_params; then perror_exit ...`.
    let dir = temp_dir("mkdumprd-line");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_vmdump"), dir.join("makedumpfile")).unwrap();
    let script = r#"
        check() {
            local _cmd="${1%% *}" _params="${1#"${1%% *}"} $2"
            if ! $_cmd --check-params $_params; then echo "makedumpfile parameter check failed."; return 1; fi
        }
        check "makedumpfile -l --message-level 7 -d 31" "vmcore dumpfile" &&
        check "makedumpfile -F -l --message-level 7 -d 31" "vmcore" &&
        ! check "makedumpfile -l --message-level 7 -d 31" "vmcore" 2>/dev/null
    "#;
    let out = Command::new("bash")
        .args(["-c", script])
        .current_dir(&dir)
        .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .env("VMDUMP_PROFILE", "builtin")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "only the symlink: nothing written");
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
