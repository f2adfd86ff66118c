//! The binary alone: copied into an empty folder, with no plugin file
//! anywhere, vmdump writes every standard format (its codecs are built in);
//! a plugin file of a built-in codec's name replaces the built-in one.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::dumps::libkdumpfile_compare;
use support::synthetic::{kernel_spec, synthetic};
use support::{binary_alone, temp_dir, workspace_root};
use vmdump_format::kdump::DiskDumpHeader;
use vmdump_synth::Flavour;

/// Runs `program` with no plugin path and the built-in profile, so nothing
/// outside the folder is found (but the system plugin directory, absent here).
fn run(program: &Path, args: &[&std::ffi::OsStr], plugin_path: Option<&Path>) -> Output {
    let mut command = Command::new(program);
    command.args(args).env_remove("VMDUMP_PLUGIN_PATH").env("VMDUMP_PROFILE", "builtin");
    if let Some(path) = plugin_path {
        command.env("VMDUMP_PLUGIN_PATH", path);
    }
    let out = command.output().expect("run vmdump");
    assert!(out.status.success(), "{program:?} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn stored_format(dump: &Path) -> u32 {
    let bytes = std::fs::read(dump).unwrap();
    DiskDumpHeader::decode(&bytes).unwrap().status & 0x27
}

#[test]
fn the_binary_alone_dumps_every_standard_format_page_exact() {
    assert!(
        !Path::new(vmdump::plugin::SYSTEM_PLUGIN_DIR).exists(),
        "a system plugin directory would be found"
    );
    let dir = temp_dir("binary-alone");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let vmdump = binary_alone(&dir);
    let listing = String::from_utf8(run(&vmdump, &["plugins".as_ref()], None).stdout).unwrap();
    for name in ["zlib", "zstd", "lzo", "snappy"] {
        let line = listing
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{listing}"));
        assert!(line.ends_with("built in"), "{line}");
    }
    let makedumpfile = vmdump.with_file_name("makedumpfile");
    for (flag, format) in [("-c", 0x1), ("-l", 0x2), ("-p", 0x4), ("-z", 0x20)] {
        let out = dir.join(format!("dump{flag}"));
        let args = [flag.as_ref(), "-d".as_ref(), "31".as_ref(), vmcore.as_os_str(), out.as_os_str()];
        run(&makedumpfile, &args, None);
        assert_eq!(stored_format(&out), format, "{flag}");
        let read = libkdumpfile_compare(&out, &vmcore);
        assert!(read.equal > 0 && read.different == 0, "{flag}: {}", read.raw);
    }
    let out = dir.join("dump-zstd");
    let args = ["dump", "--compress", "zstd", "--no-progress"].map(std::ffi::OsStr::new);
    run(&vmdump, &[&args[..], &[vmcore.as_os_str(), out.as_os_str()]].concat(), None);
    let read = libkdumpfile_compare(&out, &vmcore);
    assert!(read.equal > 0 && read.different == 0 && read.missing == 0, "{}", read.raw);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The C plugin of the workspace, compiled as a vendor's zlib would be: under the name `zlib`.
fn vendor_zlib(dir: &Path) -> PathBuf {
    let source = workspace_root().join("plugins/compress-c-zlib/c_zlib.c");
    let so = dir.join("libvmdump_compress_zlib.so");
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-std=c11", "-DPLUGIN_NAME=\"zlib\"", "-I"])
        .arg(workspace_root().join("sdk/include"))
        .arg(&source)
        .args(["-lz", "-o"])
        .arg(&so)
        .status()
        .expect("run cc");
    assert!(status.success(), "cc failed on {}", source.display());
    so
}

#[test]
fn a_plugin_file_named_zlib_replaces_the_built_in_zlib() {
    let dir = temp_dir("vendor-zlib");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let vmdump = binary_alone(&dir);
    let plugins = dir.join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let so = vendor_zlib(&plugins);
    let listing = String::from_utf8(run(&vmdump, &["plugins".as_ref()], Some(&plugins)).stdout).unwrap();
    let line = listing.lines().find(|l| l.starts_with("zlib ")).unwrap_or_else(|| panic!("{listing}"));
    assert!(line.contains(&so.display().to_string()) && line.contains("replaces the built-in"), "{line}");
    // -c through the vendor's file, and the same C code under its own name (c-zlib, level 2 as -c).
    let (vendor, reference) = (dir.join("vendor"), dir.join("reference"));
    let makedumpfile = vmdump.with_file_name("makedumpfile");
    run(
        &makedumpfile,
        &["-c".as_ref(), "-d".as_ref(), "31".as_ref(), vmcore.as_os_str(), vendor.as_os_str()],
        Some(&plugins),
    );
    let c_zlib = support::built_plugin("libvmdump_c_zlib.so");
    let args = ["dump", "--compress", "c-zlib:2", "-d", "31", "--no-progress"].map(std::ffi::OsStr::new);
    let dirs = c_zlib.parent().unwrap();
    run(&vmdump, &[&args[..], &[vmcore.as_os_str(), reference.as_os_str()]].concat(), Some(dirs));
    assert!(
        std::fs::read(&vendor).unwrap() == std::fs::read(&reference).unwrap(),
        "-c was not served by the file"
    );
    let read = libkdumpfile_compare(&vendor, &vmcore);
    assert!(read.equal > 0 && read.different == 0, "{}", read.raw);
    std::fs::remove_dir_all(&dir).unwrap();
}
