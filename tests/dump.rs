//! The dump engine end to end on synthetic vmcores the tests make: every
//! page read back by libkdumpfile, byte-identical output for any thread
//! count and read mode, the flattened stream, bad input, and dumps cut short.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::dumps::{dump_counts, libkdumpfile_compare, vmdump, vmdump_ok};
use support::synthetic::*;
use support::{build_c_plugin_with, temp_dir};
use vmdump_synth::SynthSpec;

#[test]
fn every_compressor_round_trips_through_libkdumpfile() {
    let dir = temp_dir("dump-codecs");
    let (vmcore, summary) = synthetic(&dir, quirky_spec());
    for (codec, flag) in
        [("zlib", 0x1), ("zstd", 0x20), ("lzo", 0x2), ("snappy", 0x4), ("c-zlib", 0x1), ("none", 0)]
    {
        let out = dir.join(format!("{codec}.kdump"));
        vmdump_ok([
            OsArg::from("dump"),
            "--compress".into(),
            codec.into(),
            vmcore.as_path().into(),
            out.as_path().into(),
        ]);
        let counts = dump_counts(&out);
        assert_eq!(counts.status, flag, "{codec}: header compression flag");
        assert_eq!(counts.pages_in_file, summary.ram_pages, "{codec}");
        assert_eq!(counts.zero_pages, summary.zero_pages, "{codec}: zero pages share one page");
        let read = libkdumpfile_compare(&out, &vmcore);
        assert_eq!(
            (read.equal, read.different, read.missing),
            (read.compared, 0, 0),
            "{codec}: {}",
            read.raw
        );
        assert_eq!(read.compared, summary.ram_pages, "{codec}");
    }
}

#[test]
fn output_is_identical_for_any_thread_count_and_read_mode() {
    let dir = temp_dir("dump-identical");
    let (vmcore, _) = synthetic(&dir, quirky_spec());
    let reference = dump_with(&vmcore, &dir.join("ref"), &["--threads", "1", "--compress", "zstd"]);
    let variants: [&[&str]; 5] = [
        &["--threads", "2"],
        &["--threads", "4"],
        &["--threads", "1", "--no-mmap"],
        &["--threads", "4", "--no-mmap"],
        &["--threads", "3", "--window-mib", "1"],
    ];
    for (i, extra) in variants.iter().enumerate() {
        let args = [*extra, &["--compress", "zstd"]].concat();
        let got = dump_with(&vmcore, &dir.join(format!("v{i}")), &args);
        assert!(got == reference, "{extra:?} gave other bytes than --threads 1");
    }
}

#[test]
fn flattened_output_rearranges_to_the_plain_file() {
    let dir = temp_dir("dump-flat");
    let (vmcore, _) = synthetic(&dir, quirky_spec());
    let plain = dump_with(&vmcore, &dir.join("plain"), &["--compress", "lzo"]);
    let flat = dump_with(&vmcore, &dir.join("flat"), &["--compress", "lzo", "-F"]);
    let mut ours = std::io::Cursor::new(Vec::new());
    vmdump_format::flat::rearrange(&mut flat.as_slice(), &mut ours).unwrap();
    assert!(ours.into_inner() == plain, "vmdump_format::flat::rearrange differs from the plain file");
    let theirs = dir.join("rearranged");
    let status = Command::new("makedumpfile")
        .arg("-R")
        .arg(&theirs)
        .stdin(std::fs::File::open(dir.join("flat")).unwrap())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("makedumpfile (scripts/test.sh installs it)");
    assert!(status.success());
    assert!(std::fs::read(&theirs).unwrap() == plain, "makedumpfile -R differs from the plain file");
    let piped = Command::new(env!("CARGO_BIN_EXE_vmdump"))
        .arg("--plugin-dir")
        .arg(support::build_dir())
        .args(["dump", "--compress", "lzo"])
        .arg(&vmcore)
        .arg("-")
        .output()
        .unwrap();
    assert!(piped.status.success() && piped.stdout == flat, "`-` must write the same flattened stream");
}

#[test]
fn bad_input_gets_a_clear_error_and_leaves_no_dump() {
    let dir = temp_dir("dump-bad");
    let (vmcore, _) = synthetic(&dir, quirky_spec());
    let bytes = std::fs::read(&vmcore).unwrap();
    let out = dir.join("out");
    let cases: [(&str, Vec<u8>, &[&str]); 3] = [
        ("truncated-headers", bytes[..100].to_vec(), &["truncated"]),
        ("corrupt-magic", [b"\x7fELG".as_slice(), &bytes[4..]].concat(), &["magic"]),
        ("load-beyond-eof", bytes[..bytes.len() / 2].to_vec(), &["beyond end of file", "program header"]),
    ];
    for (name, content, words) in cases {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        let stderr = expect_failure(&["dump".into(), path.as_path().into(), out.as_path().into()], words);
        assert!(stderr.contains(name), "the error names the file: {stderr}");
        assert!(!out.exists(), "{name}: no output may be left behind");
    }
    let missing_dir = dir.join("no/such/dir/out");
    expect_failure(
        &["dump".into(), vmcore.as_path().into(), missing_dir.as_path().into()],
        &["does not exist"],
    );
}

#[test]
fn an_existing_output_is_kept_unless_forced_and_dumps_are_private() {
    let dir = temp_dir("dump-force");
    let (vmcore, _) = synthetic(&dir, SynthSpec { ram_bytes: 8 << 20, ..SynthSpec::default() });
    let out = dir.join("out");
    std::fs::write(&out, b"precious").unwrap();
    expect_failure(&["dump".into(), vmcore.as_path().into(), out.as_path().into()], &["exists", "--force"]);
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    std::fs::remove_file(&out).unwrap();
    dump_with(&vmcore, &out, &[]);
    assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
    dump_with(&vmcore, &out, &["--force", "--compress", "snappy"]);
}

#[test]
fn a_vmcore_without_vmcoreinfo_still_dumps_completely() {
    let dir = temp_dir("dump-novmcoreinfo");
    let spec = SynthSpec { with_vmcoreinfo: false, ..quirky_spec() };
    let (vmcore, summary) = synthetic(&dir, spec);
    let out = dir.join("out");
    let stderr = vmdump_ok([OsArg::from("dump"), vmcore.as_path().into(), out.as_path().into()]);
    assert!(stderr.contains("no VMCOREINFO"), "{stderr}");
    assert_eq!(dump_counts(&out).pages_in_file, summary.ram_pages);
}

/// The same through makedumpfile's command line, with the profile's
/// `[makedumpfile] zlib` naming the failing plugin for `-c`: a complete
/// dump is a saved dump for kdump-utils only on exit status 0, so the
/// status is 0 and the report on stderr names the failure.
#[test]
fn a_plugin_failing_mid_run_through_makedumpfile_exits_0_with_a_complete_dump() {
    let dir = temp_dir("dump-midrun-mdf");
    let plugins = temp_dir("dump-midrun-mdf-plugins");
    build_c_plugin_with(&plugins, "flaky-zlib", &["REAL_ZLIB", "BROKEN_FAILS_MIDRUN"]);
    let (vmcore, summary) = synthetic(&dir, quirky_spec());
    let profile = dir.join("profile.toml");
    std::fs::write(&profile, "[makedumpfile]\nzlib = \"flaky-zlib\"\n").unwrap();
    let out = dir.join("out");
    let result = Command::new(env!("CARGO_BIN_EXE_vmdump"))
        .arg("--plugin-dir")
        .arg(&plugins)
        .args(["makedumpfile", "-c", "--message-level", "7", "-d", "1"])
        .args([&vmcore, &out])
        .env("VMDUMP_PROFILE", &profile)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("device timeout on page 3") && stderr.contains("stored raw"), "{stderr}");
    assert_eq!(dump_counts(&out).pages_in_file, summary.ram_pages);
    let read = libkdumpfile_compare(&out, &vmcore);
    assert_eq!((read.equal, read.different, read.missing), (read.compared, 0, 0), "{}", read.raw);
}

#[test]
fn a_plugin_failing_mid_run_gives_a_complete_dump_with_raw_pages() {
    let dir = temp_dir("dump-midrun");
    let plugins = temp_dir("dump-midrun-plugins");
    build_c_plugin_with(&plugins, "flaky-zlib", &["REAL_ZLIB", "BROKEN_FAILS_MIDRUN"]);
    let (vmcore, summary) = synthetic(&dir, quirky_spec());
    let out = dir.join("out");
    let options =
        ["--plugin-dir".as_ref(), plugins.as_os_str(), "--compress".as_ref(), "flaky-zlib".as_ref()];
    let (code, stderr) = dump_status(&options, &vmcore, &out);
    assert_eq!(code, Some(3), "degraded exit status: {stderr}");
    assert!(stderr.contains("device timeout on page 3") && stderr.contains("stored raw"), "{stderr}");
    assert_eq!(dump_counts(&out).pages_in_file, summary.ram_pages);
    let read = libkdumpfile_compare(&out, &vmcore);
    assert_eq!((read.equal, read.different, read.missing), (read.compared, 0, 0), "{}", read.raw);
}

#[test]
fn every_shipped_profile_makes_a_readable_dump() {
    let dir = temp_dir("dump-profiles");
    let (vmcore, summary) = synthetic(&dir, SynthSpec { ram_bytes: 16 << 20, ..SynthSpec::default() });
    let config = support::workspace_root().join("config");
    let mut profiles: Vec<PathBuf> = std::fs::read_dir(&config)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    profiles.sort();
    assert!(profiles.len() >= 3, "default, fast and small at least");
    for profile in profiles {
        let out = dir.join(profile.file_stem().unwrap());
        vmdump_ok([
            OsArg::from("dump"),
            "--profile".into(),
            profile.as_path().into(),
            vmcore.as_path().into(),
            out.as_path().into(),
        ]);
        let read = libkdumpfile_compare(&out, &vmcore);
        assert_eq!((read.equal, read.missing), (summary.ram_pages, 0), "{}: {}", profile.display(), read.raw);
    }
}

/// Checks a dump that was cut short: flagged incomplete, and every page it
/// holds reads back equal to the source.
fn assert_incomplete_but_readable(out: &Path, vmcore: &Path, ram_pages: u64) {
    let counts = dump_counts(out);
    assert_eq!(counts.status & 0x8, 0x8, "the header says incomplete");
    assert!(counts.pages_in_file > 0 && counts.pages_in_file < ram_pages, "{counts:?}");
    let read = libkdumpfile_compare(out, vmcore);
    assert_eq!((read.equal, read.different), (counts.pages_in_file, 0), "{}", read.raw);
}

#[test]
fn a_size_limit_closes_the_dump_as_incomplete_and_readable() {
    let dir = temp_dir("dump-limit");
    let (vmcore, summary) = synthetic(&dir, quirky_spec());
    let out = dir.join("out");
    let (code, stderr) =
        dump_status(&["-L".as_ref(), "6M".as_ref(), "--compress".as_ref(), "lzo".as_ref()], &vmcore, &out);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("incomplete") && stderr.contains("size limit"), "{stderr}");
    assert!(std::fs::metadata(&out).unwrap().len() <= 6 << 20);
    assert_incomplete_but_readable(&out, &vmcore, summary.ram_pages);
}

/// A size-limited tmpfs, unmounted when dropped.
struct SmallFs(PathBuf);

impl SmallFs {
    fn mount(path: PathBuf, size: &str) -> Self {
        std::fs::create_dir_all(&path).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "mounting a small tmpfs needs root (CI runs as root): this test cannot run otherwise"
        );
        Self(path)
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_closes_the_dump_as_incomplete_and_readable() {
    let dir = temp_dir("dump-full-disk");
    let (vmcore, summary) = synthetic(&dir, quirky_spec());
    let small = SmallFs::mount(dir.join("small"), "6m");
    let out = small.0.join("out");
    let (code, stderr) = dump_status(&["--compress".as_ref(), "lzo".as_ref()], &vmcore, &out);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("no space left"), "{stderr}");
    let copy = dir.join("copy");
    std::fs::copy(&out, &copy).unwrap();
    drop(small);
    assert_incomplete_but_readable(&copy, &vmcore, summary.ram_pages);
}

#[test]
fn a_flattened_dump_is_read_back_by_info_and_verify() {
    let dir = temp_dir("dump-read-flat");
    let (vmcore, _) = synthetic(&dir, quirky_spec());
    let flat = dir.join("flat");
    dump_with(&vmcore, &flat, &["-F", "--compress", "snappy"]);
    let out =
        vmdump([OsArg::from("verify"), flat.as_path().into(), "--against".into(), vmcore.as_path().into()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("0 problems"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info = vmdump([OsArg::from("info"), flat.as_path().into()]);
    assert!(String::from_utf8_lossy(&info.stdout).contains("snappy"));
}

#[test]
fn a_failing_mmap_switches_to_pread_by_itself_and_the_output_is_the_same() {
    let dir = temp_dir("dump-mmap-fallback");
    let (vmcore, _) =
        synthetic(&dir, SynthSpec { ram_bytes: 2 << 30, data_percent: 5, ..SynthSpec::default() });
    let (mapped, read) = (dir.join("mapped"), dir.join("read"));
    // An address-space limit below one 1 GiB window: the mmap fails, as on
    // a /proc/vmcore whose kernel refuses it.
    let script = format!(
        "ulimit -v 800000; exec {} --plugin-dir {} dump --no-progress --window-mib 1024 {} {}",
        env!("CARGO_BIN_EXE_vmdump"),
        support::build_dir().display(),
        vmcore.display(),
        mapped.display()
    );
    let result = Command::new("bash").arg("-c").arg(script).output().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    assert!(stderr.contains("mmap failed") && stderr.contains("pread"), "{stderr}");
    dump_with(&vmcore, &read, &["--no-mmap"]);
    assert!(std::fs::read(&mapped).unwrap() == std::fs::read(&read).unwrap(), "fallback output differs");
}

#[test]
fn the_header_carries_the_kernels_own_utsname() {
    use vmdump_format::kdump::{DiskDumpHeader, Utsname};
    let dir = temp_dir("dump-utsname");
    let (vmcore, _) = synthetic(&dir, kernel_spec(vmdump_synth::Flavour::Linux6_1));
    let out = dir.join("dump");
    dump_with(&vmcore, &out, &["-d", "31"]);
    let header = DiskDumpHeader::decode(&std::fs::read(&out).unwrap()).unwrap();
    let field = |i| String::from_utf8_lossy(header.utsname.get(i)).into_owned();
    // What the synthetic kernel's init_uts_ns holds (synth::kernel::build).
    assert_eq!(field(Utsname::NODENAME), "synth");
    assert_eq!(field(Utsname::RELEASE), vmdump_synth::kernel::OSRELEASE);
    assert_eq!(field(Utsname::VERSION), "#1 SMP PREEMPT_DYNAMIC synth");
    assert_eq!(field(Utsname::DOMAINNAME), "(none)");
    assert_eq!(field(Utsname::MACHINE), "x86_64");
    let listing = libkdumpfile_compare(&out, &vmcore);
    assert!(listing.attrs().contains("\"linux.uts.nodename\": \"synth\""), "{}", listing.raw);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_profile_comes_from_the_command_line_then_vmdump_profile_then_the_built_in_one() {
    let dir = temp_dir("dump-profile-source");
    let (vmcore, _) = synthetic(&dir, SynthSpec { ram_bytes: 16 << 20, ..SynthSpec::default() });
    let fast = support::workspace_root().join("config/fast.toml"); // lzo
    let small = support::workspace_root().join("config/zlib.toml"); // zlib
    let dump = |name: &str, profile: Option<&Path>, env: Option<&Path>| {
        let out = dir.join(name);
        let mut command = Command::new(env!("CARGO_BIN_EXE_vmdump"));
        command.args(["dump", "--no-progress"]);
        if let Some(profile) = profile {
            command.arg("--profile").arg(profile);
        }
        command.arg(&vmcore).arg(&out).env_remove("VMDUMP_PLUGIN_PATH");
        match env {
            Some(path) => command.env("VMDUMP_PROFILE", path),
            None => command.env_remove("VMDUMP_PROFILE"),
        };
        let result = command.output().unwrap();
        assert!(result.status.success(), "{name}: {}", String::from_utf8_lossy(&result.stderr));
        dump_counts(&out).status
    };
    assert_eq!(dump("env", None, Some(&fast)), 0x2, "VMDUMP_PROFILE when --profile is not given");
    assert_eq!(dump("cli", Some(&small), Some(&fast)), 0x1, "--profile before VMDUMP_PROFILE");
    assert_eq!(
        dump("builtin", Some(Path::new("builtin")), Some(&fast)),
        0x20,
        "builtin: the compiled-in zstd"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
