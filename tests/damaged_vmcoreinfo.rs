//! A damaged VMCOREINFO never costs the dump (issue 41): the capture
//! kernel reads the memory of a kernel that just crashed, VMCOREINFO with
//! it. The real vmcores' notes are damaged as such a crash can damage them,
//! and the distributions' makedumpfile command lines, through vmdump under
//! that name, still write a dump: page-exact for what it holds (read back
//! by libkdumpfile), the damage named on stderr, the level it could honour
//! in the header. `vmdump dump` refuses unless asked.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::dumps::{Fixture, dump_counts, edited_vmcoreinfo, fixture_72, fixtures, libkdumpfile_compare};
use support::dumps::{makedumpfile_rearrange, vmdump};
use support::temp_dir;
use vmdump_format::kdump::{DiskDumpHeader, SubHeader};

/// Damages a note: the bytes replaced and their replacement (of the same
/// length).
type Edit = fn(&[u8]) -> (Vec<u8>, Vec<u8>);

/// One way of damaging the note: the bytes replaced (of the same length),
/// what stderr must name, and the level the dump can still be made at
/// (`None`: whatever the warning says).
struct Damage {
    name: &'static str,
    edit: Edit,
    named: &'static str,
    level: Option<i32>,
}

/// The VMCOREINFO text of a vmcore: from `OSRELEASE=` to the NUL after it.
fn note_text(head: &[u8]) -> &[u8] {
    let start = find(head, b"OSRELEASE=");
    let end = start + head[start..].iter().position(|&b| b == 0).expect("the text ends");
    &head[start..end]
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.windows(needle.len()).position(|w| w == needle).expect("in the note")
}

/// The whole line of `key` in the note.
fn line_of<'a>(text: &'a [u8], key: &[u8]) -> &'a [u8] {
    let start = find(text, key);
    &text[start..start + text[start..].iter().position(|&b| b == b'\n').expect("a whole line")]
}

fn replaced(old: &[u8], new: &[u8]) -> (Vec<u8>, Vec<u8>) {
    (old.to_vec(), new.to_vec())
}

const BROKEN_KEY: Damage = Damage {
    name: "broken-key",
    edit: |_| replaced(b"SYMBOL(mem_section)=", b"SYMBOL(mem_sectiOn)="),
    named: "SYMBOL(mem_section)",
    level: Some(1),
};

const POINTER_OFF: Damage = Damage {
    name: "pointer-off",
    edit: |text| {
        let line = line_of(text, b"SYMBOL(mem_section)=");
        let mut off = line.to_vec();
        let last = off.last_mut().expect("a value");
        let digit = u8::from_str_radix(&(*last as char).to_string(), 16).expect("hex");
        *last = format!("{:x}", (digit + 8) % 16).as_bytes()[0];
        (line.to_vec(), off)
    },
    named: "SYMBOL(mem_section)=0x",
    level: Some(1),
};

const NO_EQUALS: Damage = Damage {
    name: "no-equals",
    edit: |_| replaced(b"OFFSET(page.flags)=", b"OFFSET(page.flags)8"),
    named: "no '=' in line",
    level: Some(1),
};

const PAGE_SIZE: Damage = Damage {
    name: "page-size",
    edit: |_| replaced(b"PAGESIZE=4096", b"PAGESIZE=4095"),
    named: "\"PAGESIZE=4095\": the machine's is 4096",
    level: Some(31),
};

/// The last quarter of the text lost (zeros), the line there cut in two.
const TRUNCATED: Damage = Damage {
    name: "truncated",
    edit: |text| {
        let cut = text.len() * 3 / 4;
        (text[cut..].to_vec(), vec![0; text.len() - cut])
    },
    named: "no '=' in line",
    level: None,
};

/// makedumpfile's command lines through vmdump under that name, run in
/// `dir` on `vmcore`.
struct Lines {
    makedumpfile: PathBuf,
}

impl Lines {
    fn new(dir: &Path) -> Self {
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let makedumpfile = bin.join("makedumpfile");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_vmdump"), &makedumpfile).unwrap();
        Lines { makedumpfile }
    }

    fn run(&self, args: &[&str], vmcore: &Path, out: Option<&Path>, stdout: Option<&Path>) -> Output {
        let mut command = Command::new(&self.makedumpfile);
        command.args(args).arg(vmcore).args(out).env_remove("VMDUMP_PROFILE");
        if let Some(path) = stdout {
            command.stdout(std::fs::File::create(path).unwrap());
        }
        command.output().expect("run vmdump as makedumpfile")
    }
}

/// The dump level of a dump's sub header.
fn header_level(dump: &Path) -> i32 {
    let bytes = std::fs::read(dump).unwrap();
    let header = DiskDumpHeader::decode(&bytes).unwrap();
    SubHeader::decode(&bytes[header.block_size as usize..], header.endian).unwrap().dump_level
}

/// The level a warning says the dump was lowered to, else 31.
fn level_said(stderr: &str) -> i32 {
    stderr
        .split("dumping at level ")
        .nth(1)
        .map_or(31, |rest| rest.split_whitespace().next().unwrap().parse().expect("a level"))
}

fn check(fixture: &Fixture, damage: &Damage) {
    let what = format!("{} {}", fixture.name, damage.name);
    let dir = temp_dir(&format!("damaged-{}-{}", damage.name, fixture.name));
    let head = std::fs::read(&fixture.elf).unwrap()[..1 << 16].to_vec();
    let (old, new) = (damage.edit)(note_text(&head));
    let vmcore = edited_vmcoreinfo(fixture, &dir, &old, &new);
    let lines = Lines::new(&dir);

    // kdump-utils' default core_collector (gen-kdump-conf.sh L193, kdump.sh L191).
    let file = dir.join("vmcore-incomplete");
    let run = lines.run(&["-l", "--message-level", "7", "-d", "31"], &vmcore, Some(&file), None);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{what}: {stderr}");
    assert!(stderr.contains(damage.named), "{what}: the damage is not named: {stderr}");
    let level = header_level(&file);
    assert_eq!(level, level_said(&stderr), "{what}: {stderr}");
    if let Some(want) = damage.level {
        assert_eq!(level, want, "{what}: {stderr}");
    }
    let counts = dump_counts(&file);
    let read = libkdumpfile_compare(&file, &vmcore);
    assert_eq!((read.equal, read.different), (counts.pages_in_file, 0), "{what}: {}", read.raw);

    // kdump-tools' (kdump-config: makedumpfile -F -c -d 31 /proc/vmcore | ...),
    // rearranged by makedumpfile.
    let flat = dir.join("flat");
    let run = lines.run(&["-F", "-c", "-d", "31"], &vmcore, None, Some(&flat));
    assert!(run.status.success(), "{what}: {}", String::from_utf8_lossy(&run.stderr));
    let rearranged = dir.join("rearranged");
    makedumpfile_rearrange(&flat, &rearranged);
    let flat_counts = dump_counts(&rearranged);
    assert_eq!(header_level(&rearranged), level, "{what}");
    assert_eq!(
        (flat_counts.pages_in_file, flat_counts.zero_pages),
        (counts.pages_in_file, counts.zero_pages)
    );
}

fn each_fixture(damage: &Damage) {
    let Some(list) = fixtures() else { return };
    let sk = list.into_iter().find(|f| f.name == "vmcore-SK").expect("vmcore-SK");
    for fixture in [Some(sk), fixture_72()].into_iter().flatten() {
        check(&fixture, damage);
    }
}

#[test]
fn a_broken_key_lowers_the_level() {
    each_fixture(&BROKEN_KEY);
}

#[test]
fn a_pointer_off_by_eight_bytes_lowers_the_level() {
    each_fixture(&POINTER_OFF);
}

#[test]
fn a_line_without_equals_is_left_out_and_the_level_lowered() {
    each_fixture(&NO_EQUALS);
}

#[test]
fn a_page_size_x86_64_cannot_have_is_the_machines() {
    each_fixture(&PAGE_SIZE);
}

#[test]
fn a_truncated_note_keeps_what_it_still_holds() {
    each_fixture(&TRUNCATED);
}

#[test]
fn vmdump_dump_refuses_a_damaged_note_unless_asked() {
    let Some(list) = fixtures() else { return };
    let fixture = list.iter().find(|f| f.name == "vmcore-SK").expect("vmcore-SK");
    let dir = temp_dir("damaged-refused");
    let vmcore = edited_vmcoreinfo(fixture, &dir, b"OFFSET(page.flags)=", b"OFFSET(page.flags)8");
    let out = dir.join("dump");
    let refused =
        vmdump(["dump", "--no-progress", "-d", "31"].iter().map(Path::new).chain([&*vmcore, &*out]));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && stderr.contains("no '=' in line"), "{stderr}");
    assert!(!out.exists(), "no file is left behind");
    let asked = ["dump", "--no-progress", "-d", "31", "--salvage-vmcoreinfo", "--allow-lower-level"];
    let salvaged = vmdump(asked.iter().map(Path::new).chain([&*vmcore, &*out]));
    let stderr = String::from_utf8_lossy(&salvaged.stderr);
    assert!(salvaged.status.success() && stderr.contains("VMCOREINFO line"), "{stderr}");
    assert_eq!(header_level(&out), 1);
    // The dump carries the repaired text: the damaged line is not in it.
    let head = std::fs::read(&out).unwrap()[..1 << 16].to_vec();
    let holds = |text: &[u8]| head.windows(text.len()).any(|w| w == text);
    assert!(holds(b"\nOFFSET(page._refcount)=") && !holds(b"OFFSET(page.flags)"), "the repaired note");
}
