//! The makedumpfile command lines of the distributions' kdump scripts, as
//! their scripts write them, run by bash with vmdump installed as
//! `makedumpfile` (first on PATH) and, for reference, with Debian's
//! makedumpfile, on the real vmcores (issue 41). Only the paths of
//! `/proc/vmcore` and of the output are this test's.
//!
//! - openSUSE/SLE kdump 2.1.9 (github openSUSE/kdump, 34da4b8),
//!   `dracut/kdump-save`: the kernel log on stdout (L220) with VMCOREINFO's
//!   `CRASHTIME=` and `OSRELEASE=` read back from stderr (L225-233), and
//!   the dump, always flattened (L276-296).
//! - kdump-utils 1.0.61 (github rhkdump/kdump-utils, 63f248c):
//!   `gen-kdump-conf.sh` L193 and `dracut/99kdumpbase/kdump.sh` L25 (the
//!   default core_collector), kdump.sh L114-131 (`-F` for ssh and raw
//!   targets, `--num-threads=$(nproc)` otherwise), L191 (a file system),
//!   L413 (a raw device), L461 (ssh), `kdumpctl` L925 (`-R` as the
//!   detector of a dump on a raw device at boot), `mkdumprd` L285-311
//!   (`--check-params`).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::dumps::{Fixture, all_fixtures, dump_counts, fixtures, libkdumpfile_compare};
use support::dumps::{libkdumpfile_compare_elf, makedumpfile};
use support::temp_dir;

/// A scratch folder with `bin/makedumpfile`, a link to vmdump.
struct Scripts {
    dir: support::TempDir,
}

impl Scripts {
    fn new(name: &str) -> Self {
        let dir = temp_dir(name);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_vmdump"), dir.join("bin/makedumpfile")).unwrap();
        Scripts { dir }
    }

    /// Runs `script` in bash with `/proc/vmcore` standing for `vmcore`,
    /// `$OUT` for this folder, and vmdump as makedumpfile (`ours`) or
    /// Debian's.
    fn run(&self, script: &str, vmcore: &Path, ours: bool) -> Output {
        let path = std::env::var("PATH").unwrap_or_default();
        let path = if ours { format!("{}:{path}", self.dir.join("bin").display()) } else { path };
        let script = script.replace("/proc/vmcore", &vmcore.display().to_string());
        Command::new("bash")
            .args(["-c", &format!("set -o pipefail; {script}")])
            .env("PATH", path)
            .env("OUT", &*self.dir)
            .env_remove("VMDUMP_PROFILE")
            .output()
            .expect("bash")
    }

    /// [`Scripts::run`], which must succeed.
    fn bash(&self, script: &str, vmcore: &Path, ours: bool) -> Output {
        let out = self.run(script, vmcore, ours);
        assert!(out.status.success(), "{script}: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
        out
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// `makedumpfile -R OUT < FLAT` by Debian's makedumpfile.
fn rearranged(scripts: &Scripts, flat: &str) -> PathBuf {
    let out = scripts.path(&format!("{flat}.rearranged"));
    let stdin = std::fs::File::open(scripts.path(flat)).unwrap();
    let status = Command::new("makedumpfile").arg("-R").arg(&out).stdin(stdin).output().unwrap().status;
    assert!(status.success(), "makedumpfile -R {flat}");
    out
}

/// SUSE's kdump-save L220, its log to `$SOURCE` (a FIFO there, a file here).
const SUSE_DMESG: &str = "SOURCE=$OUT/dmesg; makedumpfile -F --message-level 8 --dump-dmesg /proc/vmcore > $SOURCE 2> $OUT/makedumpfile_stderr";

/// SUSE's kdump-save L225-233: the crash time and release read from that stderr.
const SUSE_PARSE: &str = r#"IFS=" ="; while read KEY VALUE; do
    [[ CRASHTIME == "${KEY}" ]] && CRASHTIME=${VALUE}
    [[ OSRELEASE == "${KEY}" ]] && OSRELEASE=${VALUE}
done < $OUT/makedumpfile_stderr; echo "$CRASHTIME $OSRELEASE""#;

#[test]
fn suses_dmesg_line_gives_the_log_on_stdout_and_vmcoreinfo_on_stderr() {
    let Some(fixtures) = all_fixtures() else { return };
    for fixture in &fixtures {
        let scripts = Scripts::new(&format!("suse-dmesg-{}", fixture.name));
        scripts.bash(SUSE_DMESG, &fixture.elf, true);
        let log = std::fs::read(scripts.path("dmesg")).unwrap();
        let expected = std::fs::read(fixture.expected_file("dmesg.txt")).unwrap();
        assert!(fixture.log_as_expected(&log) == expected, "{}: the log is not makedumpfile's", fixture.name);
        let ours = std::fs::read_to_string(scripts.path("makedumpfile_stderr")).unwrap();
        let parsed = String::from_utf8(scripts.bash(SUSE_PARSE, &fixture.elf, true).stdout).unwrap();

        // Debian's makedumpfile, the same lines.
        scripts.bash(SUSE_DMESG, &fixture.elf, false);
        let theirs = std::fs::read_to_string(scripts.path("makedumpfile_stderr")).unwrap();
        let their_parse = String::from_utf8(scripts.bash(SUSE_PARSE, &fixture.elf, false).stdout).unwrap();
        assert_eq!(parsed, their_parse, "{}: SUSE reads another crash time or release", fixture.name);
        let release = parsed.split_whitespace().last().unwrap_or_default();
        assert!(ours.contains(&format!("  OSRELEASE={release}\n")), "{}: {parsed:?}", fixture.name);
        let lines = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.contains("CRASHTIME=") || l.contains("OSRELEASE="))
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(lines(&ours), lines(&theirs), "{}", fixture.name);
        if fixture.name != "vmcore-SK72" {
            // Debian's 1.7.2 reads the log of 6.1 right (not 7.2's caller ids).
            let their_log = std::fs::read(scripts.path("dmesg")).unwrap();
            assert!(fixture.log_as_expected(&log) == their_log, "{}: not Debian's log", fixture.name);
        }
    }
}

/// SUSE's dump line (kdump-save L290, run as L296 runs it), with the
/// variables it is made of.
fn suse_dump(format: &str, threads: &str, message_level: u8, file: &str) -> String {
    format!(
        "FORMAT={format}; THREADS='{threads}'; MSG_LEVEL={message_level}; KDUMP_DUMPLEVEL=31; MAKEDUMPFILE_OPTIONS=; \
         SOURCE=$OUT/{file}; \
         DUMP_COMMAND=\"makedumpfile -F ${{FORMAT}} ${{THREADS}} --message-level $MSG_LEVEL -d ${{KDUMP_DUMPLEVEL}} ${{MAKEDUMPFILE_OPTIONS}} /proc/vmcore\"; \
         eval \"${{DUMP_COMMAND}} > $SOURCE\""
    )
}

fn vmcore_sk() -> Option<Fixture> {
    fixtures()?.into_iter().find(|f| f.name == "vmcore-SK")
}

/// makedumpfile's own `-l -d 31` dump of `fixture`, for its page counts.
fn reference_31(scripts: &Scripts, fixture: &Fixture) -> support::dumps::DumpCounts {
    let out = scripts.path("reference");
    let result =
        makedumpfile(&["-l".as_ref(), "-d".as_ref(), "31".as_ref(), fixture.elf.as_ref(), out.as_ref()]);
    assert!(result.status.success(), "makedumpfile: {}", String::from_utf8_lossy(&result.stderr));
    dump_counts(&out)
}

#[test]
fn suses_dump_lines_give_streams_makedumpfile_rearranges_page_exact() {
    let Some(fixture) = vmcore_sk() else { return };
    let scripts = Scripts::new("suse-dump");
    let reference = reference_31(&scripts, &fixture);
    // KDUMP_DUMPFORMAT compressed, lzo, snappy, zstd (L256-271), with
    // KDUMP_CPUS threads (L279-283) and the message levels of
    // KDUMP_VERBOSE (L286-288).
    for (format, threads, level) in [
        ("-c", "", 6),
        ("-c", "--num-threads 2", 6),
        ("-l", "", 15),
        ("-p", "", 7),
        ("-z", "--num-threads 2", 14),
    ] {
        let name = format!("vmcore{format}{}", if threads.is_empty() { "" } else { "-threads" });
        let run = scripts.bash(&suse_dump(format, threads, level, &name), &fixture.elf, true);
        let stderr = String::from_utf8_lossy(&run.stderr);
        let dump = rearranged(&scripts, &name);
        let counts = dump_counts(&dump);
        assert_eq!(
            (counts.pages_in_file, counts.zero_pages),
            (reference.pages_in_file, reference.zero_pages)
        );
        let read = libkdumpfile_compare(&dump, &fixture.elf);
        assert_eq!((read.equal, read.different), (counts.pages_in_file, 0), "{name}: {}", read.raw);
        assert_eq!(level & 8 != 0, stderr.contains("  CRASHTIME="), "{name}: VMCOREINFO at debug level only");
    }
    // Threads change nothing in the stream's dump.
    for format in ["-c", "-z"] {
        let (one, two) = (format!("vmcore{format}"), format!("vmcore{format}-threads"));
        if format == "-z" {
            scripts.bash(&suse_dump(format, "", 6, &one), &fixture.elf, true);
            rearranged(&scripts, &one);
        }
        let same = std::fs::read(scripts.path(&format!("{one}.rearranged"))).unwrap()
            == std::fs::read(scripts.path(&format!("{two}.rearranged"))).unwrap();
        assert!(same, "{format}: --num-threads 2 changed the dump");
    }
    // ELF (L250-252): -E, one thread (L282).
    scripts.bash(&suse_dump("-E", "", 6, "vmcore-elf"), &fixture.elf, true);
    let elf = rearranged(&scripts, "vmcore-elf");
    let read = libkdumpfile_compare_elf(&elf, &fixture.elf);
    // Zero pages are left out of an ELF dump at -d 31.
    assert!(read.ok && read.present == reference.pages_in_file - reference.zero_pages, "{}", read.raw);
}

/// kdump-utils' default core_collector (gen-kdump-conf.sh L193), as
/// kdump.sh L114-131 makes it for a file system (threads when the capture
/// kernel has several CPUs) and for ssh and raw targets (-F).
const KDUMP_UTILS: &str = "makedumpfile -l --message-level 7 -d 31";

#[test]
fn kdump_utils_lines_write_the_same_dump_to_a_file_a_raw_device_and_ssh() {
    let Some(fixture) = vmcore_sk() else { return };
    let scripts = Scripts::new("kdump-utils");
    let reference = reference_31(&scripts, &fixture);
    let collector = |suffix: &str| format!("CORE_COLLECTOR='{KDUMP_UTILS}{suffix}'");
    // kdump.sh L191: a file system target, with and without threads.
    let fs =
        "mkdir -p $OUT/fs; $CORE_COLLECTOR /proc/vmcore \"$OUT/fs/vmcore-incomplete\" > $OUT/console 2>&1";
    scripts.bash(&format!("{}; {fs}", collector("")), &fixture.elf, true);
    let one = std::fs::read(scripts.path("fs/vmcore-incomplete")).unwrap();
    std::fs::remove_file(scripts.path("fs/vmcore-incomplete")).unwrap();
    scripts.bash(&format!("{}; {fs}", collector(" --num-threads=2")), &fixture.elf, true);
    let file = scripts.path("fs/vmcore-incomplete");
    assert!(std::fs::read(&file).unwrap() == one, "--num-threads=2 changed the dump");
    let counts = dump_counts(&file);
    assert_eq!((counts.pages_in_file, counts.zero_pages), (reference.pages_in_file, reference.zero_pages));
    let read = libkdumpfile_compare(&file, &fixture.elf);
    assert_eq!((read.equal, read.different), (counts.pages_in_file, 0), "{}", read.raw);

    // kdump.sh L413: a raw device (a file here, larger than the stream and
    // holding other bytes past it), then kdumpctl L925 at the next boot.
    let device = scripts.path("raw");
    std::fs::write(
        &device,
        (0..96u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    let raw = format!(
        "{}; $CORE_COLLECTOR /proc/vmcore | dd of=\"$OUT/raw\" bs=512 conv=notrunc 2>/dev/null",
        collector(" -F")
    );
    scripts.bash(&raw, &fixture.elf, true);
    for ours in [true, false] {
        let detect =
            "mkdir -p $OUT/boot; makedumpfile -R \"$OUT/boot/vmcore\" < \"$OUT/raw\" > /dev/null 2>&1";
        scripts.bash(detect, &fixture.elf, ours);
        assert!(
            std::fs::read(scripts.path("boot/vmcore")).unwrap() == one,
            "ours={ours}: -R of the raw device"
        );
        std::fs::remove_dir_all(scripts.path("boot")).unwrap();
    }
    // A device that holds no dump: both detectors say so.
    for (name, bytes) in
        [("zeros", vec![0u8; 1 << 20]), ("noise", (0..1u32 << 20).map(|i| (i * 7 + 3) as u8).collect())]
    {
        std::fs::write(scripts.path(name), bytes).unwrap();
        let detect = format!("makedumpfile -R \"$OUT/none-vmcore\" < \"$OUT/{name}\" > /dev/null 2>&1");
        let (ours, theirs) =
            (scripts.run(&detect, &fixture.elf, true), scripts.run(&detect, &fixture.elf, false));
        let (ours, theirs) = (ours.status.code(), theirs.status.code());
        assert!(ours != Some(0) && ours == theirs, "{name}: vmdump {ours:?}, makedumpfile {theirs:?}");
    }

    // kdump.sh L461: ssh, its remote side run here by sh.
    let ssh = format!(
        "{}; $CORE_COLLECTOR /proc/vmcore | sh -c \"umask 0077 && dd bs=512 of='$OUT/vmcore-ssh' 2>/dev/null\"",
        collector(" -F")
    );
    scripts.bash(&ssh, &fixture.elf, true);
    assert!(std::fs::read(rearranged(&scripts, "vmcore-ssh")).unwrap() == one, "ssh's stream");

    // mkdumprd L285-311: the line checked for each kind of target.
    for params in
        [format!("{} vmcore dumpfile", &KDUMP_UTILS[13..]), format!("{} -F vmcore", &KDUMP_UTILS[13..])]
    {
        scripts.bash(&format!("makedumpfile --check-params {params}"), &fixture.elf, true);
    }
}
