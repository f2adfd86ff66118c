//! Running vmdump and judging its dumps with readers we did not write.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use vmdump_format::kdump::{DiskDumpHeader, PAGE_DESC_SIZE, PageDesc, SubHeader};

use super::{build_dir, workspace_root};

/// Runs the vmdump binary with the workspace's plugins on the path.
pub fn vmdump<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_vmdump"))
        .arg("--plugin-dir")
        .arg(build_dir())
        .args(args)
        .env_remove("VMDUMP_PLUGIN_PATH")
        .output()
        .expect("run vmdump")
}

/// Runs `vmdump verify --allow-incomplete --against SOURCE DUMP`, asserts
/// that what the incomplete dump holds verifies with 0 problems (`case`
/// names the case in the message), and returns the output.
pub fn assert_verifies_incomplete(dump: &Path, source: &Path, case: &str) -> String {
    let args = ["verify", "--allow-incomplete", "--against"].map(AsRef::as_ref);
    let out = vmdump(args.into_iter().chain([source.as_os_str(), dump.as_os_str()]));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success() && text.contains("; 0 problems"), "{case}: {text}");
    text
}

/// Runs vmdump and asserts success; returns stderr (the report).
pub fn vmdump_ok<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = vmdump(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "vmdump failed ({}):\n{stderr}", out.status);
    stderr
}

/// What libkdumpfile read back, compared with the ELF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// RAM pages of the ELF below the dump's max_pfn.
    pub compared: u64,
    /// Pages read back equal.
    pub equal: u64,
    /// Pages read back different.
    pub different: u64,
    /// Pages the dump does not have.
    pub missing: u64,
    /// The script's whole output.
    pub raw: String,
}

fn json_number(text: &str, key: &str) -> u64 {
    let at = text.find(&format!("\"{key}\": ")).unwrap_or_else(|| panic!("no {key} in {text}"));
    let rest = &text[at + key.len() + 4..];
    rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())].parse().expect("a number")
}

/// Reads every RAM page of `elf` back from `dump` with python3-libkdumpfile.
pub fn libkdumpfile_compare(dump: &Path, elf: &Path) -> Comparison {
    let script = workspace_root().join("tests/py/compare_dump.py");
    let out = Command::new("/usr/bin/python3")
        .arg(script)
        .arg(dump)
        .arg(elf)
        .arg("--excluded-ok")
        .output()
        .expect("run /usr/bin/python3");
    let raw = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        raw.contains("\"equal\""),
        "compare_dump.py failed (python3-libkdumpfile missing? scripts/test.sh installs it): {stderr}"
    );
    Comparison::from_json(raw)
}

/// The attributes libkdumpfile gives (`arch.name`, `linux.uts.*`) in the
/// output of tests/py/compare*.py, as one JSON object.
fn attrs_of(raw: &str) -> &str {
    let at = raw.find("\"attrs\": {").unwrap_or_else(|| panic!("no attrs in {raw}"));
    let rest = &raw[at..];
    &rest[..=rest.find('}').expect("the attrs object ends")]
}

impl Comparison {
    /// The counts of a compare script's JSON line.
    fn from_json(raw: String) -> Self {
        Comparison {
            compared: json_number(&raw, "compared"),
            equal: json_number(&raw, "equal"),
            different: json_number(&raw, "different"),
            missing: json_number(&raw, "missing"),
            raw,
        }
    }

    /// The attributes libkdumpfile gives (`arch.name`, `linux.uts.*`), as one JSON object.
    pub fn attrs(&self) -> &str {
        attrs_of(&self.raw)
    }
}

/// The library directory of a libkdumpfile that shows eraseinfo
/// (`ensure_libkdumpfile_eraseinfo` of scripts/lib/tools.sh builds it once
/// from trixie's source package), for LD_LIBRARY_PATH.
pub fn libkdumpfile_with_eraseinfo() -> PathBuf {
    static READY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    READY
        .get_or_init(|| {
            let out = Command::new("bash")
                .current_dir(workspace_root())
                .args(["-c", "source scripts/lib/tools.sh && ensure_libkdumpfile_eraseinfo"])
                .output()
                .expect("run bash");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "could not build libkdumpfile 0.5.2+ for eraseinfo: {stderr}");
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        })
        .clone()
}

/// The python of the venv with drgn: `ensure_drgn` of scripts/lib/tools.sh
/// (which scripts/test.sh runs first) checks it under a lock, and installs
/// it if a test runs without test.sh.
pub fn drgn_python() -> PathBuf {
    static READY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    READY
        .get_or_init(|| {
            let status = Command::new("bash")
                .current_dir(workspace_root())
                .args(["-c", "source scripts/lib/tools.sh && ensure_drgn"])
                .status()
                .expect("run bash");
            assert!(status.success(), "could not install drgn into target/venv-drgn (pip install drgn)");
            workspace_root().join("target/venv-drgn/bin/python")
        })
        .clone()
}

/// Reads every RAM page of `elf` back from `dump` with drgn (tests/py/drgn_compare.py).
pub fn drgn_compare(dump: &Path, elf: &Path) -> Comparison {
    let out = Command::new(drgn_python())
        .arg(workspace_root().join("tests/py/drgn_compare.py"))
        .arg(dump)
        .arg(elf)
        .output()
        .expect("run drgn's python");
    let raw = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        raw.contains("\"equal\""),
        "drgn cannot open {}: {}",
        dump.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Comparison::from_json(raw)
}

/// What libkdumpfile read back from an ELF dump (tests/py/compare_elf_dump.py).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfComparison {
    /// Source pages the dump's PT_LOADs cover.
    pub present: u64,
    /// Of those, read back equal to the source.
    pub equal: u64,
    /// Source pages the dump leaves out (absent, or zeros before a PT_LOAD).
    pub absent: u64,
    /// Program headers of type PT_LOAD.
    pub segments: u64,
    /// Whether every present page was equal and every other page absent.
    pub ok: bool,
    /// The script's whole output.
    pub raw: String,
}

/// Reads every RAM page of `source` back from the ELF `dump` with libkdumpfile.
pub fn libkdumpfile_compare_elf(dump: &Path, source: &Path) -> ElfComparison {
    let script = workspace_root().join("tests/py/compare_elf_dump.py");
    let out = Command::new("/usr/bin/python3").arg(script).arg(dump).arg(source).output().expect("python3");
    let raw = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(raw.contains("\"equal\""), "compare_elf_dump.py failed: {stderr}");
    ElfComparison {
        present: json_number(&raw, "present"),
        equal: json_number(&raw, "equal"),
        absent: json_number(&raw, "absent") + json_number(&raw, "absent_read_as_zero"),
        segments: json_number(&raw, "segments"),
        ok: out.status.success(),
        raw,
    }
}

impl ElfComparison {
    /// The attributes libkdumpfile gives (`arch.name`, `linux.uts.*`), as one JSON object.
    pub fn attrs(&self) -> &str {
        attrs_of(&self.raw)
    }
}

/// Counts read from a dump's own structures, independently of vmdump's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DumpCounts {
    /// max_mapnr of the sub header.
    pub max_mapnr: u64,
    /// Set bits of the 1st bitmap (RAM).
    pub ram_pages: u64,
    /// Set bits of the 2nd bitmap (pages in the file).
    pub pages_in_file: u64,
    /// Descriptors pointing at the shared zero page.
    pub zero_pages: u64,
    /// Header status word.
    pub status: u32,
}

fn popcount(bytes: &[u8]) -> u64 {
    bytes.iter().map(|b| u64::from(b.count_ones())).sum()
}

/// Reads the header, both bitmaps and every descriptor of a plain dump.
pub fn dump_counts(path: &Path) -> DumpCounts {
    let bytes = std::fs::read(path).expect("read dump");
    let header = DiskDumpHeader::decode(&bytes).expect("header");
    let bs = header.block_size as usize;
    let sub = SubHeader::decode(&bytes[bs..], header.endian).expect("sub header");
    let bitmap_len = header.bitmap_blocks as usize / 2 * bs;
    let bitmap1 = (1 + header.sub_hdr_size as usize) * bs;
    let bitmap2 = bitmap1 + bitmap_len;
    let pages_in_file = popcount(&bytes[bitmap2..bitmap2 + bitmap_len]);
    let descs = bitmap2 + bitmap_len;
    let data = descs + pages_in_file as usize * PAGE_DESC_SIZE;
    let zero_pages = (0..pages_in_file as usize)
        .map(|i| PageDesc::decode(&bytes[descs + i * PAGE_DESC_SIZE..], header.endian).expect("descriptor"))
        .filter(|d| sub.dump_level & 1 != 0 && d.offset == data as u64)
        .count() as u64;
    DumpCounts {
        max_mapnr: sub.max_mapnr_64,
        ram_pages: popcount(&bytes[bitmap1..bitmap1 + bitmap_len]),
        pages_in_file,
        zero_pages,
        status: header.status,
    }
}

/// Descriptor slots of a plain dump's table: from its start to the first
/// page data (which follows the table directly), one per 24 bytes. Equal to
/// the pages in the file when no slot is left unused.
pub fn descriptor_slots(path: &Path) -> u64 {
    let bytes = std::fs::read(path).expect("read dump");
    let header = DiskDumpHeader::decode(&bytes).expect("header");
    let bs = header.block_size as usize;
    let bitmap_len = header.bitmap_blocks as usize / 2 * bs;
    let descs = (1 + header.sub_hdr_size as usize) * bs + 2 * bitmap_len;
    let pages = popcount(&bytes[descs - bitmap_len..descs]) as usize;
    let data = (0..pages)
        .map(|i| {
            PageDesc::decode(&bytes[descs + i * PAGE_DESC_SIZE..], header.endian).expect("descriptor").offset
        })
        .min()
        .expect("a page in the file");
    (data - descs as u64) / PAGE_DESC_SIZE as u64
}

/// Which makedumpfile wrote a fixture's `expected/` files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpectedFrom {
    /// Debian 12's makedumpfile 1.7.2, the one the tests also run
    /// (vmcore-S, vmcore-SK: Linux 6.1). Its kernel log has no caller ids.
    Debian172,
    /// Upstream makedumpfile master at b7587f1 (vmcore-SK72: Linux 7.2,
    /// which Debian's 1.7.2 misclassifies): the log with caller ids.
    UpstreamMaster,
}

/// The decompressed real vmcores and makedumpfile's expected output.
pub struct Fixture {
    /// `vmcore-S`, `vmcore-SK` or `vmcore-SK72`.
    pub name: &'static str,
    /// The ELF vmcore.
    pub elf: PathBuf,
    /// `expected/` of the shared fixtures.
    pub expected: PathBuf,
    /// Who wrote `expected/`.
    pub expected_from: ExpectedFrom,
}

impl Fixture {
    /// An expected file, e.g. `d1.report.txt` or `dmesg.txt`.
    pub fn expected_file(&self, suffix: &str) -> PathBuf {
        self.expected.join(format!("{}.{suffix}", self.name))
    }

    /// vmdump's kernel log (`log`, with the caller ids of current
    /// makedumpfile) in the form of `expected/NAME.dmesg.txt`: without the
    /// ids where 1.7.2 wrote it.
    pub fn log_as_expected(&self, log: &[u8]) -> Vec<u8> {
        match self.expected_from {
            ExpectedFrom::Debian172 => super::kernel_log::without_caller_ids(log),
            ExpectedFrom::UpstreamMaster => log.to_vec(),
        }
    }

    /// A value of makedumpfile's report line `label` (hex), e.g. "Pages filled with zero".
    pub fn expected_count(&self, level: u8, label: &str) -> u64 {
        let path = self.expected_file(&format!("d{level}.report.txt"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let line = text.lines().find(|l| l.trim_start().starts_with(label)).expect("label in report");
        let value = line.rsplit("0x").next().expect("hex value");
        u64::from_str_radix(value.trim(), 16).expect("hex")
    }
}

/// The fixtures of Linux 6.1 (vmcore-S, vmcore-SK), which the tests also
/// judge with Debian's makedumpfile, or `None` after saying clearly why
/// they are not there. `scripts/test.sh` decompresses
/// `../shared/fixtures/*.zst` and sets `VMDUMP_FIXTURE_DIR` (the ELF files)
/// and `VMDUMP_FIXTURES` (the shared folder).
pub fn fixtures() -> Option<Vec<Fixture>> {
    fixtures_named(&[("vmcore-S", ExpectedFrom::Debian172), ("vmcore-SK", ExpectedFrom::Debian172)])
}

/// vmcore-SK72 (Linux 7.2), judged by upstream makedumpfile's expected
/// files only, or `None` as [`fixtures`].
pub fn fixture_72() -> Option<Fixture> {
    fixtures_named(&[("vmcore-SK72", ExpectedFrom::UpstreamMaster)]).and_then(|mut list| list.pop())
}

/// Every fixture: [`fixtures`] and [`fixture_72`].
pub fn all_fixtures() -> Option<Vec<Fixture>> {
    Some(fixtures()?.into_iter().chain(fixture_72()).collect())
}

fn fixtures_named(names: &[(&'static str, ExpectedFrom)]) -> Option<Vec<Fixture>> {
    let shared = std::env::var_os("VMDUMP_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared/fixtures"));
    let Some(dir) = std::env::var_os("VMDUMP_FIXTURE_DIR").map(PathBuf::from) else {
        assert!(
            !shared.is_dir(),
            "{} exists but VMDUMP_FIXTURE_DIR is not set: run scripts/test.sh, which decompresses the vmcores",
            shared.display()
        );
        eprintln!(
            "fixtures not found: VMDUMP_FIXTURE_DIR is not set (scripts/test.sh sets it when {} exists); \
             the tests on the real vmcores did NOT run",
            shared.display()
        );
        return None;
    };
    let list: Vec<Fixture> = names
        .iter()
        .map(|&(name, expected_from)| Fixture {
            name,
            elf: dir.join(name),
            expected: shared.join("expected"),
            expected_from,
        })
        .collect();
    for f in &list {
        assert!(f.elf.is_file(), "VMDUMP_FIXTURE_DIR is set but {} is missing", f.elf.display());
    }
    Some(list)
}

/// makedumpfile's report lines of excluded pages, one a category
/// (kdump-format.md §7.4), in its order.
pub const REPORT_CATEGORIES: [&str; 7] = [
    "Pages filled with zero",
    "Non-private cache pages",
    "Private cache pages",
    "User process data pages",
    "Free pages",
    "Hwpoison pages",
    "Offline pages",
];

/// The hex counts of a makedumpfile-style report (ours or makedumpfile's):
/// `(label, value)` for every `label : 0x…` line, in order.
pub fn report_counts(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|line| {
            let (label, value) = line.split_once(" : 0x")?;
            Some((label.trim().to_owned(), u64::from_str_radix(value.trim(), 16).ok()?))
        })
        .collect()
}

/// The value of `label` in a report.
pub fn report_value(text: &str, label: &str) -> u64 {
    report_counts(text)
        .into_iter()
        .find(|(l, _)| l == label)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no `{label}` in:\n{text}"))
}

/// Runs makedumpfile (scripts/test.sh installs it with apt-get).
pub fn makedumpfile(args: &[&OsStr]) -> Output {
    Command::new("makedumpfile")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("makedumpfile (scripts/test.sh installs it with apt-get)")
}

/// `makedumpfile -R out < flat`, which must succeed.
pub fn makedumpfile_rearrange(flat: &Path, out: &Path) {
    let status = Command::new("makedumpfile")
        .arg("-R")
        .arg(out)
        .stdin(std::fs::File::open(flat).expect("open the flattened file"))
        .stdout(std::process::Stdio::null())
        .status()
        .expect("makedumpfile (scripts/test.sh installs it with apt-get)");
    assert!(status.success(), "makedumpfile -R {} < {} failed", out.display(), flat.display());
}

/// makedumpfile, which must succeed.
pub fn makedumpfile_ok<I, S>(args: I)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let owned: Vec<S> = args.into_iter().collect();
    let args: Vec<&OsStr> = owned.iter().map(AsRef::as_ref).collect();
    let out = makedumpfile(&args);
    assert!(out.status.success(), "makedumpfile failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// A copy of `fixture` in `dir` whose VMCOREINFO note has `text` replaced
/// by `replaced` (of the same length: the note keeps its size), e.g. a key
/// renamed away or a value changed.
pub fn edited_vmcoreinfo(fixture: &Fixture, dir: &Path, text: &[u8], replaced: &[u8]) -> PathBuf {
    assert_eq!(text.len(), replaced.len());
    let copy = dir.join(format!("{}-edited", fixture.name));
    std::fs::copy(&fixture.elf, &copy).unwrap();
    let mut bytes = std::fs::read(&copy).unwrap();
    let head = &mut bytes[..1 << 16];
    let at = head.windows(text.len()).position(|w| w == text).expect("the text is in the note");
    head[at..at + text.len()].copy_from_slice(replaced);
    std::fs::write(&copy, &bytes).unwrap();
    copy
}
