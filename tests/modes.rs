//! Every file vmdump creates is mode 0600, whatever the umask allows: a
//! dump and a kernel log hold the machine's secrets. Each subcommand and
//! output mode, vmdump's command line and makedumpfile's, on a synthetic
//! vmcore and (for -d 31 and the kernel log) a real one.

mod support;

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use support::dumps::fixtures;
use support::synthetic::synthetic;
use support::{build_dir, temp_dir};
use vmdump_synth::SynthSpec;

fn mode(path: &Path) -> u32 {
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    meta.permissions().mode() & 0o7777
}

/// An argument of any kind (str, path).
type Arg<'a> = &'a dyn AsRef<OsStr>;

/// Runs vmdump with a permissive umask (022, as a login shell), stdin from
/// `stdin` when given.
fn run(args: &[Arg<'_>], stdin: Option<&Path>) {
    let mut command = Command::new("sh");
    command.arg("-c").arg("umask 022; exec \"$@\"").arg("sh").arg(env!("CARGO_BIN_EXE_vmdump"));
    command.arg("--plugin-dir").arg(build_dir()).args(args.iter().map(|a| a.as_ref()));
    if let Some(path) = stdin {
        command.stdin(Stdio::from(std::fs::File::open(path).expect("open stdin file")));
    }
    let out = command.output().expect("run vmdump");
    let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect();
    assert!(out.status.success(), "vmdump {shown:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn check(dir: &Path, created: &[&str]) {
    for name in created {
        assert_eq!(mode(&dir.join(name)), 0o600, "{name}");
    }
}

#[test]
fn every_file_vmdump_creates_is_0600() {
    let dir = temp_dir("modes");
    let (vmcore, _) = synthetic(&dir, SynthSpec { ram_bytes: 32 << 20, ..SynthSpec::default() });
    let at = |name: &str| dir.join(name);
    run(&[&"dump", &"--no-progress", &vmcore, &at("d.kdump")], None);
    run(&[&"dump", &"--no-progress", &"-F", &vmcore, &at("d.flat")], None);
    run(&[&"dump", &"--no-progress", &"--elf", &vmcore, &at("d.elf")], None);
    run(&[&"dump", &"--no-progress", &"--split", &"2", &vmcore, &at("piece")], None);
    run(&[&"convert", &"--no-progress", &at("d.kdump"), &at("c.kdump")], None);
    run(&[&"convert", &"--no-progress", &"--elf", &at("d.kdump"), &at("c.elf")], None);
    run(&[&"reassemble", &at("piece.1"), &at("piece.2"), &at("r.kdump")], None);
    run(&[&"synth", &"--size", &"16M", &at("synth.elf")], None);
    run(&[&"makedumpfile", &"-l", &"-d", &"1", &vmcore, &at("m.kdump")], None);
    run(&[&"makedumpfile", &"-E", &"-d", &"1", &vmcore, &at("m.elf")], None);
    run(&[&"makedumpfile", &"--split", &"-d", &"1", &vmcore, &at("m1"), &at("m2")], None);
    run(&[&"makedumpfile", &"--reassemble", &at("m1"), &at("m2"), &at("mr.kdump")], None);
    run(&[&"makedumpfile", &"-R", &at("rearranged.kdump")], Some(&at("d.flat")));
    check(&dir, &["d.kdump", "d.flat", "d.elf", "piece.1", "piece.2", "c.kdump", "c.elf", "r.kdump"]);
    check(&dir, &["synth.elf", "m.kdump", "m.elf", "m1", "m2", "mr.kdump", "rearranged.kdump"]);
}

#[test]
fn kernel_logs_and_classified_dumps_of_a_real_vmcore_are_0600() {
    let Some(fixtures) = fixtures() else { return };
    let dir = temp_dir("modes-real");
    let vmcore = &fixtures[0].elf;
    let at = |name: &str| dir.join(name);
    run(&[&"dump", &"--no-progress", &"-d", &"31", vmcore, &at("d31")], None);
    run(&[&"dmesg", vmcore, &at("log.txt")], None);
    run(&[&"dmesg", &at("d31"), &at("log-of-dump.txt")], None);
    run(&[&"makedumpfile", &"--dump-dmesg", vmcore, &at("mlog.txt")], None);
    run(&[&"makedumpfile", &"-c", &"-d", &"31", vmcore, &at("m31")], None);
    check(&dir, &["d31", "log.txt", "log-of-dump.txt", "mlog.txt", "m31"]);
}
