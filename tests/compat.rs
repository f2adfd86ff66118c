//! makedumpfile's command line and messages, the man page, and a profile
//! choosing the plugin behind makedumpfile's compression options.

mod support;

use std::process::Command;

use support::dumps::vmdump;
use support::synthetic::*;
use support::temp_dir;
use vmdump_format::synth::SynthSpec;

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
