//! No command follows a symbolic link at its output path (issue 12), beside
//! tests/modes.rs, over the same subcommands and output modes: without
//! `-f` a link (dangling or not) is refused and nothing is created at its
//! target; with `-f` a link to a regular file of this user is overwritten in
//! place (the link stays a link, the file becomes 0600), and a link to a
//! device, a directory, nothing, or another user's file is refused with the
//! path and the reason. A command that always replaces its output (`synth`)
//! follows the `-f` rule.

mod support;

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use support::dumps::fixtures;
use support::synthetic::synthetic;
use support::{build_dir, temp_dir};
use vmdump_synth::SynthSpec;

/// One way of writing a file: the command line with its output at `out`.
struct Case {
    name: &'static str,
    /// The words before the output, `-f` put after the first when forced.
    args: Vec<OsString>,
    /// Words after the output (the second piece of a split).
    after: Vec<OsString>,
    /// A file for stdin (makedumpfile -R).
    stdin: Option<PathBuf>,
    /// The file written first whose path is the link (`OUT.1` of a split).
    suffix: &'static str,
    /// Whether the command takes `-f` (else: it never replaces, or always does).
    takes_force: bool,
    /// Whether it always replaces its output (the -f rule without -f).
    replaces: bool,
}

fn words(words: &[&dyn AsRef<OsStr>]) -> Vec<OsString> {
    words.iter().map(|w| w.as_ref().to_owned()).collect()
}

impl Case {
    fn new(name: &'static str, args: Vec<OsString>) -> Self {
        Case { name, args, after: Vec::new(), stdin: None, suffix: "", takes_force: true, replaces: false }
    }

    fn run(&self, out: &Path, force: bool) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_vmdump"));
        command.arg("--plugin-dir").arg(build_dir()).env_remove("VMDUMP_PLUGIN_PATH");
        command.env("VMDUMP_PROFILE", "builtin");
        let (first, rest) = self.args.split_first().expect("a subcommand");
        command.arg(first);
        if force {
            command.arg("-f");
        }
        command.args(rest).arg(out).args(&self.after);
        if let Some(path) = &self.stdin {
            command.stdin(Stdio::from(std::fs::File::open(path).expect("open stdin file")));
        }
        command.output().expect("run vmdump")
    }

    /// The link `OUT{suffix}` to `target`, in a fresh folder of `base`.
    fn link(&self, base: &Path, label: &str, target: &Path) -> (PathBuf, PathBuf) {
        let dir = base.join(format!("{}-{label}", self.name));
        std::fs::create_dir(&dir).unwrap();
        let out = dir.join("out");
        let link = PathBuf::from(format!("{}{}", out.display(), self.suffix));
        symlink(target, &link).unwrap();
        (out, link)
    }

    fn refused(&self, out: Output, link: &Path, words: &[&str]) {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: succeeded through the link {}", self.name, link.display());
        assert!(!stderr.contains("panicked"), "{}: {stderr}", self.name);
        let shown = link.display().to_string();
        for word in [shown.as_str(), "symbolic link"].iter().chain(words) {
            assert!(stderr.contains(word), "{}: `{word}` not in: {stderr}", self.name);
        }
        assert!(std::fs::symlink_metadata(link).unwrap().file_type().is_symlink(), "{}", self.name);
    }
}

/// Every command that writes a file, on a synthetic vmcore (and the kernel
/// logs on a real one when the fixtures are there).
fn cases(dir: &Path) -> Vec<Case> {
    let (vmcore, _) = synthetic(dir, SynthSpec { ram_bytes: 32 << 20, ..SynthSpec::default() });
    let (kdump, flat, pieces) = (dir.join("d.kdump"), dir.join("d.flat"), dir.join("piece"));
    let made = [
        words(&[&"dump", &"--no-progress", &vmcore, &kdump]),
        words(&[&"dump", &"--no-progress", &"-F", &vmcore, &flat]),
        words(&[&"dump", &"--no-progress", &"--split", &"2", &vmcore, &pieces]),
    ];
    for args in made {
        let mut command = Command::new(env!("CARGO_BIN_EXE_vmdump"));
        let out = command.arg("--plugin-dir").arg(build_dir()).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let (piece1, piece2) = (dir.join("piece.1"), dir.join("piece.2"));
    let mut cases = vec![
        Case::new("dump", words(&[&"dump", &"--no-progress", &vmcore])),
        Case::new("dump-F", words(&[&"dump", &"--no-progress", &"-F", &vmcore])),
        Case::new("dump-elf", words(&[&"dump", &"--no-progress", &"--elf", &vmcore])),
        Case {
            suffix: ".1",
            ..Case::new("dump-split", words(&[&"dump", &"--no-progress", &"--split", &"2", &vmcore]))
        },
        Case::new("convert", words(&[&"convert", &"--no-progress", &kdump])),
        Case::new("convert-elf", words(&[&"convert", &"--no-progress", &"--elf", &kdump])),
        Case::new("reassemble", words(&[&"reassemble", &piece1, &piece2])),
        Case {
            takes_force: false,
            replaces: true,
            ..Case::new("synth", words(&[&"synth", &"--size", &"16M"]))
        },
        Case::new("makedumpfile-l", words(&[&"makedumpfile", &"-l", &"-d", &"1", &vmcore])),
        Case::new("makedumpfile-E", words(&[&"makedumpfile", &"-E", &"-d", &"1", &vmcore])),
        Case {
            after: words(&[&dir.join("unused-second-piece")]),
            ..Case::new("makedumpfile-split", words(&[&"makedumpfile", &"--split", &"-d", &"1", &vmcore]))
        },
        Case {
            takes_force: false,
            ..Case::new(
                "makedumpfile-reassemble",
                words(&[&"makedumpfile", &"--reassemble", &piece1, &piece2]),
            )
        },
        Case { stdin: Some(flat.clone()), ..Case::new("makedumpfile-R", words(&[&"makedumpfile", &"-R"])) },
    ];
    match fixtures() {
        Some(fixtures) => {
            let real = fixtures[0].elf.clone();
            // The kernel logs follow the dump's rule (issue 41: makedumpfile
            // refuses an existing LOGFILE without -f).
            cases.push(Case::new("dmesg", words(&[&"dmesg", &real])));
            cases.push(Case::new(
                "makedumpfile-dump-dmesg",
                words(&[&"makedumpfile", &"--dump-dmesg", &real]),
            ));
        }
        None => eprintln!("NOTE: no fixtures: the kernel log outputs (dmesg, --dump-dmesg) were NOT checked"),
    }
    cases
}

#[test]
fn no_command_writes_through_a_dangling_link_or_one_to_a_file_without_force() {
    let dir = temp_dir("links-no-force");
    for case in cases(&dir) {
        let target = dir.join(format!("{}-absent-target", case.name));
        let (out, link) = case.link(&dir, "dangling", &target);
        let reason = if case.replaces { "does not exist" } else { "without --force" };
        case.refused(case.run(&out, false), &link, &[reason]);
        assert!(!target.exists(), "{}: created {} through a dangling link", case.name, target.display());
        if case.replaces {
            continue;
        }
        let target = dir.join(format!("{}-own-target", case.name));
        std::fs::write(&target, b"keep me").unwrap();
        let (out, link) = case.link(&dir, "own", &target);
        case.refused(case.run(&out, false), &link, &["without --force"]);
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me", "{}", case.name);
    }
}

#[test]
fn with_force_a_link_is_followed_only_to_a_regular_file_of_this_user() {
    let dir = temp_dir("links-force");
    let uid = std::fs::metadata("/proc/self").unwrap().uid();
    let foreign = dir.join("foreign");
    std::fs::write(&foreign, b"someone else's").unwrap();
    let foreign = if uid == 0 {
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
        foreign
    } else {
        eprintln!(
            "NOTE: not root (uid {uid}): a file cannot be given away, so the link to another \
             user's file points to /etc/passwd (uid 0) instead of a file chowned to uid 65534"
        );
        PathBuf::from("/etc/passwd")
    };
    let foreign_owner = std::fs::metadata(&foreign).unwrap().uid();
    assert_ne!(foreign_owner, uid, "the foreign file must be another user's");
    let before = std::fs::read(&foreign).unwrap();
    let other_dir = dir.join("a-directory");
    std::fs::create_dir(&other_dir).unwrap();
    for case in cases(&dir).into_iter().filter(|c| c.takes_force || c.replaces) {
        let force = case.takes_force;
        // A link to a file of this user is overwritten in place.
        let target = dir.join(format!("{}-own-target", case.name));
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (out, link) = case.link(&dir, "own", &target);
        let output = case.run(&out, force);
        assert!(output.status.success(), "{}: {}", case.name, String::from_utf8_lossy(&output.stderr));
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "{}", case.name);
        let written = std::fs::metadata(&target).unwrap();
        assert!(written.len() > 3, "{}: the target was not written", case.name);
        assert_eq!(written.mode() & 0o7777, 0o600, "{}", case.name);

        let refusals: [(&str, &Path, &str); 4] = [
            ("dev-null", Path::new("/dev/null"), "a character device, not a regular file"),
            ("dir", &other_dir, "a directory, not a regular file"),
            ("dangling", &dir.join(format!("{}-absent", case.name)), "does not exist"),
            ("foreign", &foreign, &format!("owned by uid {foreign_owner}, not by this user (uid {uid})")),
        ];
        for (label, target, why) in refusals {
            let (out, link) = case.link(&dir, label, target);
            case.refused(case.run(&out, force), &link, &[why]);
        }
        assert!(!dir.join(format!("{}-absent", case.name)).exists(), "{}", case.name);
        assert_eq!(std::fs::read(&foreign).unwrap(), before, "{}: the foreign file changed", case.name);
        assert!(std::fs::read_dir(&other_dir).unwrap().next().is_none(), "{}", case.name);
    }
}

#[test]
fn a_split_whose_second_piece_is_refused_leaves_no_first_piece() {
    let dir = temp_dir("links-split");
    let (vmcore, _) = synthetic(&dir, SynthSpec { ram_bytes: 32 << 20, ..SynthSpec::default() });
    let out = dir.join("out");
    let target = dir.join("absent");
    symlink(&target, dir.join("out.2")).unwrap();
    let case = Case::new("dump-split", words(&[&"dump", &"--no-progress", &"--split", &"2", &vmcore]));
    for force in [false, true] {
        case.refused(case.run(&out, force), &dir.join("out.2"), &[]);
        assert!(!dir.join("out.1").exists() && !target.exists(), "force {force}");
    }
}
