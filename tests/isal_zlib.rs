//! The vendor's accelerated zlib (plugins/compress-isal-zlib, C over ISA-L)
//! replaces the built-in zlib by name: with its directory on the plugin
//! search path, `vmdump plugins` lists `zlib` from its file, `--compress
//! zlib` and makedumpfile's `-c` dump through it, and the dumps read back
//! page-exact. Needs `cargo build --workspace` (same profile), which builds
//! it into target/<profile>/isal/.

mod support;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::dumps::libkdumpfile_compare;
use support::synthetic::{kernel_spec, synthetic};
use support::{binary_alone, built_plugin, temp_dir, workspace_root};
use vmdump_format::kdump::DiskDumpHeader;
use vmdump_synth::Flavour;

/// The directory of the ISA-L plugin, alone in it.
fn isal_dir() -> PathBuf {
    let so = built_plugin("isal/libvmdump_compress_zlib.so");
    so.parent().expect("a directory").to_path_buf()
}

/// Runs `program` with the built-in profile (unless `profile`) and no
/// plugin path but `plugin_path`; returns the output, stderr on failure.
fn run(program: &Path, args: &[&OsStr], plugin_path: Option<&Path>, profile: Option<&Path>) -> Output {
    let mut command = Command::new(program);
    command.args(args).env_remove("VMDUMP_PLUGIN_PATH");
    command.env("VMDUMP_PROFILE", profile.map_or(OsStr::new("builtin"), Path::as_os_str));
    if let Some(path) = plugin_path {
        command.env("VMDUMP_PLUGIN_PATH", path);
    }
    command.output().expect("run vmdump")
}

fn ok(out: Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `vmdump dump --no-progress OPTIONS VMCORE OUT`, returning the file.
fn dump(vmdump: &Path, options: &[&str], vmcore: &Path, out: &Path, plugins: Option<&Path>) -> Vec<u8> {
    let mut args: Vec<&OsStr> = ["dump", "--no-progress"].iter().chain(options).map(OsStr::new).collect();
    args.extend([vmcore.as_os_str(), out.as_os_str()]);
    ok(run(vmdump, &args, plugins, None), &format!("dump {options:?}"));
    std::fs::read(out).unwrap()
}

fn assert_verifies(vmdump: &Path, dump: &Path, vmcore: &Path, plugins: Option<&Path>) {
    let args = ["verify".as_ref(), dump.as_os_str(), "--against".as_ref(), vmcore.as_os_str()];
    let text = ok(run(vmdump, &args, plugins, None), "verify");
    assert!(text.contains("; 0 problems"), "{text}");
}

#[test]
fn the_isa_l_file_replaces_the_built_in_zlib_by_name() {
    let isal = isal_dir();
    let dir = temp_dir("isal-zlib");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let vmdump = binary_alone(&dir);
    let listing = ok(run(&vmdump, &["plugins".as_ref()], Some(&isal), None), "plugins");
    let line = listing.lines().find(|l| l.starts_with("zlib ")).unwrap_or_else(|| panic!("{listing}"));
    let file = isal.join("libvmdump_compress_zlib.so");
    assert!(line.contains(&file.display().to_string()) && line.contains("replaces the built-in"), "{line}");

    // The same request, with and without the directory on the path.
    let (with_isal, built_in) = (dir.join("isal.kdump"), dir.join("builtin.kdump"));
    let isal_bytes = dump(&vmdump, &["--compress", "zlib", "-d", "1"], &vmcore, &with_isal, Some(&isal));
    let builtin_bytes = dump(&vmdump, &["--compress", "zlib", "-d", "1"], &vmcore, &built_in, None);
    assert_eq!(DiskDumpHeader::decode(&isal_bytes).unwrap().status & 0x27, 0x1, "zlib pages");
    assert!(isal_bytes != builtin_bytes, "the dump through the file equals the built-in one's");
    // Its default level (3) writes the same bytes with any number of workers.
    let one = dump(
        &vmdump,
        &["--compress", "zlib", "-d", "1", "--threads", "1"],
        &vmcore,
        &dir.join("1"),
        Some(&isal),
    );
    assert!(one == isal_bytes, "--threads 1 and 2 gave different dumps");
    // ISA-L's levels are the file's: the built-in zlib would take level 9.
    let nine = dir.join("9.kdump");
    let args =
        ["dump".as_ref(), "--compress".as_ref(), "zlib:9".as_ref(), vmcore.as_os_str(), nine.as_os_str()];
    let refused = run(&vmdump, &args, Some(&isal), None);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && stderr.contains("0..=3"), "{stderr}");

    // Read back by ISA-L's inflate, by libdeflate (the built-in) and by libkdumpfile.
    assert_verifies(&vmdump, &with_isal, &vmcore, Some(&isal));
    assert_verifies(&vmdump, &with_isal, &vmcore, None);
    let read = libkdumpfile_compare(&with_isal, &vmcore);
    assert!(read.equal > 0 && read.different == 0, "{}", read.raw);

    // makedumpfile's -c goes to the file too, as `zlib:2` (vmdump's choice
    // for -c; ISA-L's level 2 is not byte-reproducible, so no byte compare
    // here: the_shipped_profile_turns_it_on compares -c at level 3).
    let makedumpfile = vmdump.with_file_name("makedumpfile");
    let (minus_c, minus_c_builtin) = (dir.join("c.kdump"), dir.join("c-builtin.kdump"));
    for (out, plugins) in [(&minus_c, Some(isal.as_path())), (&minus_c_builtin, None)] {
        let args = ["-c".as_ref(), "-d".as_ref(), "31".as_ref(), vmcore.as_os_str(), out.as_os_str()];
        ok(run(&makedumpfile, &args, plugins, None), "makedumpfile -c");
    }
    assert!(std::fs::read(&minus_c).unwrap() != std::fs::read(&minus_c_builtin).unwrap());
    assert_verifies(&vmdump, &minus_c, &vmcore, None);
    let read = libkdumpfile_compare(&minus_c, &vmcore);
    assert!(read.equal > 0 && read.different == 0, "{}", read.raw);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_shipped_profile_turns_it_on() {
    let isal = isal_dir();
    let dir = temp_dir("isal-profile");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let vmdump = binary_alone(&dir);
    // config/isal-zlib.toml as installed, with the package's directory moved here.
    let shipped = std::fs::read_to_string(workspace_root().join("config/isal-zlib.toml")).unwrap();
    let package_dir = "\"/usr/lib/vmdump/plugins-isal\"";
    assert!(shipped.contains(package_dir), "{shipped}");
    let profile = dir.join("isal-zlib.toml");
    std::fs::write(&profile, shipped.replace(package_dir, &format!("{:?}", isal.display().to_string())))
        .unwrap();

    let out = dir.join("profile.kdump");
    let args = [OsStr::new("dump"), "--profile".as_ref(), profile.as_os_str(), "--no-progress".as_ref()];
    ok(run(&vmdump, &[&args[..], &[vmcore.as_os_str(), out.as_os_str()]].concat(), None, None), "dump");
    let expected =
        dump(&vmdump, &["--compress", "zlib", "-d", "1"], &vmcore, &dir.join("direct"), Some(&isal));
    assert!(std::fs::read(&out).unwrap() == expected, "the profile did not dump through the ISA-L file");

    // kdump-tools' command line, with the profile as the system one would be.
    let minus_c = dir.join("c.kdump");
    let args = ["-c".as_ref(), "-d".as_ref(), "31".as_ref(), vmcore.as_os_str(), minus_c.as_os_str()];
    ok(run(&vmdump.with_file_name("makedumpfile"), &args, None, Some(&profile)), "makedumpfile -c");
    let expected =
        dump(&vmdump, &["--compress", "zlib:3", "-d", "31"], &vmcore, &dir.join("c-direct"), Some(&isal));
    assert!(std::fs::read(&minus_c).unwrap() == expected, "-c did not go through the ISA-L file");
    assert_verifies(&vmdump, &minus_c, &vmcore, None);
    std::fs::remove_dir_all(&dir).unwrap();
}
