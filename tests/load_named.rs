//! A run opens only the plugin files it names (issue 12, Build 4): opening a
//! shared object runs its constructors, as root in a capture kernel. Shared
//! objects whose constructor writes a marker file sit next to the binary and
//! in the plugin directory; dumps, conversions, verification and the
//! makedumpfile command line naming other plugins leave no marker, and
//! `vmdump plugins`, which opens everything, leaves both.

mod support;

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use support::synthetic::{kernel_spec, synthetic};
use support::{binary_alone, build_c_plugin_with, temp_dir};
use vmdump_synth::Flavour;

/// A shared object that is no plugin: its constructor writes `marker`.
fn snooping_library(so: &Path, marker: &Path) {
    let source = so.with_extension("c");
    std::fs::write(
        &source,
        "#include <stdio.h>\n\
         __attribute__((constructor)) static void snoop(void)\n\
         {\n    FILE *f = fopen(MARKER, \"w\");\n    if (f) { fputs(\"opened\\n\", f); fclose(f); }\n}\n",
    )
    .unwrap();
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-std=c11"])
        .arg(format!("-DMARKER=\"{}\"", marker.display()))
        .arg(&source)
        .arg("-o")
        .arg(so)
        .status()
        .expect("run cc");
    assert!(status.success(), "cc failed on {}", source.display());
}

/// Runs `program` with the built-in profile and no plugin path but `plugins`.
fn run(program: &Path, plugins: &Path, args: &[&OsStr]) -> Output {
    Command::new(program)
        .args(args)
        .env("VMDUMP_PROFILE", "builtin")
        .env("VMDUMP_PLUGIN_PATH", plugins)
        .output()
        .expect("run vmdump")
}

fn ok(out: Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{what}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned() + &stderr
}

#[test]
fn a_run_opens_only_the_plugin_files_it_names() {
    let dir = temp_dir("load-named");
    let (vmcore, _) = synthetic(&dir, kernel_spec(Flavour::Linux6_1));
    let vmdump = binary_alone(&dir);
    let makedumpfile = vmdump.with_file_name("makedumpfile");
    let plugins = dir.join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    build_c_plugin_with(&plugins, "my-zlib", &["REAL_ZLIB"]);
    // Any name next to the binary, and a plugin file name no run below asks for.
    let (beside, named) = (dir.join("marker-beside-binary"), dir.join("marker-filter-snoop"));
    snooping_library(&vmdump.with_file_name("libsnoop.so"), &beside);
    snooping_library(&plugins.join("libvmdump_filter_snoop.so"), &named);
    let markers = [&beside, &named];
    let untouched = |what: &str| {
        for marker in markers {
            assert!(!marker.exists(), "{what} opened the library that wrote {}", marker.display());
        }
    };

    let (stored, zlib, converted) = (dir.join("stored"), dir.join("zlib"), dir.join("converted"));
    let dump = |args: &[&str], out: &Path| {
        let mut all: Vec<&OsStr> = vec!["dump".as_ref(), "--no-progress".as_ref()];
        all.extend(args.iter().map(OsStr::new));
        all.extend([vmcore.as_os_str(), out.as_os_str()]);
        ok(run(&vmdump, &plugins, &all), &format!("dump {args:?}"))
    };
    dump(&["--compress", "my-zlib"], &stored);
    untouched("dump --compress my-zlib (a plugin file)");
    dump(&["--compress", "zlib", "-d", "31"], &zlib);
    untouched("dump --compress zlib (built in)");
    dump(&["--elf"], &dir.join("elf"));
    untouched("dump --elf");
    let args = ["convert".as_ref(), "--no-progress".as_ref(), zlib.as_os_str(), converted.as_os_str()];
    ok(run(&vmdump, &plugins, &args), "convert");
    untouched("convert of a zlib dump");
    ok(run(&vmdump, &plugins, &["verify".as_ref(), converted.as_os_str()]), "verify");
    untouched("verify");
    let check =
        ["--check-params".as_ref(), "-c".as_ref(), "-d".as_ref(), "31".as_ref(), "a".as_ref(), "b".as_ref()];
    ok(run(&makedumpfile, &plugins, &check), "makedumpfile --check-params");
    let out = dir.join("mdf");
    let args = ["-l".as_ref(), "-d".as_ref(), "31".as_ref(), vmcore.as_os_str(), out.as_os_str()];
    ok(run(&makedumpfile, &plugins, &args), "makedumpfile -l");
    untouched("makedumpfile");

    // A name not found: the message names it, the file names tried and where.
    let missing = dir.join("missing");
    let args =
        ["dump".as_ref(), "--compress".as_ref(), "nosuch".as_ref(), vmcore.as_os_str(), missing.as_os_str()];
    let out = run(&vmdump, &plugins, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for word in [
        "`nosuch`",
        "libvmdump_compress_nosuch.so",
        "libvmdump_nosuch.so",
        &plugins.display().to_string(),
        &vmdump.parent().unwrap().display().to_string(),
        "zlib",
    ] {
        assert!(stderr.contains(word), "`{word}` not in: {stderr}");
    }
    assert!(!missing.exists());
    untouched("a dump naming a missing plugin");

    // Only the listing opens every shared object.
    let listing = ok(run(&vmdump, &plugins, &["plugins".as_ref()]), "vmdump plugins");
    assert!(listing.contains("my-zlib ") && listing.contains("libvmdump_my_zlib.so"), "{listing}");
    for marker in markers {
        assert!(
            marker.exists(),
            "vmdump plugins did not open the library of {}:\n{listing}",
            marker.display()
        );
    }
    assert!(listing.contains("libsnoop.so: not a vmdump plugin"), "{listing}");
    std::fs::remove_dir_all(&dir).unwrap();
}
