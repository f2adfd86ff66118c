//! Synthetic vmcores and command lines shared by the end-to-end tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use vmdump_synth::{self as synth, SynthSpec, SynthSummary};

use super::dumps::{vmdump, vmdump_ok};

/// Writes the synthetic vmcore of `spec` into `dir`.
pub fn synthetic(dir: &Path, spec: SynthSpec) -> (PathBuf, SynthSummary) {
    let path = dir.join("vmcore");
    let summary = synth::write(&spec, &path).expect("write synthetic vmcore");
    (path, summary)
}

/// A 64 MiB synthetic vmcore with holes, an overlapping kernel-text
/// segment, a segment ending mid-page and 40 % data pages.
pub fn quirky_spec() -> SynthSpec {
    SynthSpec { ram_bytes: 64 << 20, partial_tail: true, phoff_gap: true, ..SynthSpec::default() }
}

/// Command-line arguments of mixed types.
pub struct OsArg(pub std::ffi::OsString);

impl From<&str> for OsArg {
    fn from(s: &str) -> Self {
        Self(s.into())
    }
}

impl From<&Path> for OsArg {
    fn from(p: &Path) -> Self {
        Self(p.into())
    }
}

impl AsRef<std::ffi::OsStr> for OsArg {
    fn as_ref(&self) -> &std::ffi::OsStr {
        &self.0
    }
}

/// Runs `vmdump dump EXTRA... VMCORE OUT` and returns the dump's bytes.
pub fn dump_with(vmcore: &Path, out: &Path, extra: &[&str]) -> Vec<u8> {
    let mut args: Vec<OsArg> = vec!["dump".into()];
    args.extend(extra.iter().map(|&a| OsArg::from(a)));
    args.extend([vmcore.into(), out.into()]);
    vmdump_ok(args);
    std::fs::read(out).expect("read dump")
}

/// Runs vmdump, expects exit status 1 with every word in stderr and no panic.
pub fn expect_failure(args: &[OsArg], words: &[&str]) -> String {
    let out = vmdump(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for word in words {
        assert!(stderr.contains(word), "`{word}` not in:\n{stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// A 64 MiB synthetic kernel with struct pages of `flavour`, 5-level paging and KASLR.
pub fn kernel_spec(flavour: synth::Flavour) -> SynthSpec {
    let kernel = synth::KernelSpec {
        kaslr: true,
        five_level: true,
        struct_pages: Some(flavour),
        ..Default::default()
    };
    SynthSpec { ram_bytes: 64 << 20, kernel: Some(kernel), ..SynthSpec::default() }
}

/// Overwrites RAM page `pfn` of an ELF vmcore written by `synth` (whose
/// RAM segment at paddr 0 maps pfn p at a known file offset) with `fill`.
pub fn overwrite_page(vmcore: &Path, pfn: u64, fill: &[u8; 8]) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new().read(true).write(true).open(vmcore).unwrap();
    let elf = vmdump_format::elf::ElfVmcore::parse(&file).unwrap();
    let phys = vmdump_format::phys::PhysMap::new(&elf.loads, 4096).unwrap();
    let loc = phys.locate(pfn).expect("a RAM page");
    assert!(loc.is_whole());
    let page: Vec<u8> = fill.iter().copied().cycle().take(4096).collect();
    file.write_all_at(&page, loc.file_offset).unwrap();
}

/// Compiles `tests/plugins/SOURCE` into `DIR/SO`.
pub fn build_c_filter(dir: &Path, source: &str, so: &str) -> PathBuf {
    build_c_filter_with(dir, source, so, &[])
}

/// [`build_c_filter`] with `-D` definitions.
pub fn build_c_filter_with(dir: &Path, source: &str, so: &str, defines: &[&str]) -> PathBuf {
    build_c_filter_from(dir, "sdk/include", source, so, defines)
}

/// [`build_c_filter`] against the `vmdump_plugin.h` in `include` (relative
/// to the workspace: `tests/plugins/abi-1.0` is ABI 1.0's, frozen).
pub fn build_c_filter_against(dir: &Path, include: &str, source: &str, so: &str) -> PathBuf {
    build_c_filter_from(dir, include, source, so, &[])
}

fn build_c_filter_from(dir: &Path, include: &str, source: &str, so: &str, defines: &[&str]) -> PathBuf {
    let out = dir.join(so);
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-I"])
        .arg(super::workspace_root().join(include))
        .args(defines.iter().map(|d| format!("-D{d}")))
        .arg(super::workspace_root().join("tests/plugins").join(source))
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "cc {source}");
    out
}

/// Runs `vmdump dump OPTIONS... VMCORE OUT`; returns the exit code and stderr.
pub fn dump_status(options: &[&std::ffi::OsStr], vmcore: &Path, out: &Path) -> (Option<i32>, String) {
    let args = [std::ffi::OsStr::new("dump")].into_iter().chain(options.iter().copied());
    let result = vmdump(args.chain([vmcore.as_os_str(), out.as_os_str()]));
    (result.status.code(), String::from_utf8_lossy(&result.stderr).into_owned())
}
