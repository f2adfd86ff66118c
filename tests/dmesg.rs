//! `vmdump::dmesg::kernel_log` on the real vmcores, byte for byte against
//! the `--dump-dmesg` output of the makedumpfile that wrote each fixture's
//! `expected/NAME.dmesg.txt`: upstream master (1.7.9++, with the caller ids
//! of every release since 1.7.5) for vmcore-SK72, Debian's 1.7.2 (no caller
//! ids) for vmcore-S and vmcore-SK. Runs when `VMDUMP_FIXTURE_DIR` holds the
//! decompressed files.

mod support;

use support::dumps::{ExpectedFrom, Fixture};
use support::kernel_log::{every_record_has_a_caller, without_caller_ids};
use vmdump::dmesg::kernel_log;
use vmdump::input::{Input, Vmcore};
use vmdump::xlat::KernelMemory;
use vmdump_format::vmcoreinfo::VmcoreInfo;

/// The first line where `got` and `want` differ, both shown.
fn first_difference(got: &[u8], want: &[u8]) -> String {
    let mut got_lines = got.split(|&b| b == b'\n');
    let mut want_lines = want.split(|&b| b == b'\n');
    for number in 1.. {
        match (got_lines.next(), want_lines.next()) {
            (None, None) => break,
            (g, w) if g != w => {
                let show =
                    |l: Option<&[u8]>| l.map_or("<end>".into(), |l| String::from_utf8_lossy(l).into_owned());
                return format!("line {number}:\n   got: {}\n  want: {}", show(g), show(w));
            }
            _ => {}
        }
    }
    "same lines, different bytes".into()
}

/// The kernel log of `fixture`, read with `info` (its VMCOREINFO, or an
/// edited copy).
fn log_of(fixture: &Fixture, vmcore: &Vmcore, info: &VmcoreInfo) -> Vec<u8> {
    let memory = KernelMemory::open(vmcore, info, &vmcore.elf().loads).expect("kernel memory");
    kernel_log(&memory, info).unwrap_or_else(|e| panic!("{}: {e}", fixture.name))
}

fn assert_same_log(what: &str, got: &[u8], want: &[u8]) {
    assert!(
        got == want,
        "{what}: {} bytes, makedumpfile {} bytes; first difference at {}",
        got.len(),
        want.len(),
        first_difference(got, want)
    );
}

fn expected_log(fixture: &Fixture) -> Vec<u8> {
    let path = fixture.expected_file("dmesg.txt");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// vmcore-SK72 against upstream master's log byte for byte; the 6.1
/// fixtures against 1.7.2's once the caller column, which 1.7.2 does not
/// print, is taken out of vmdump's (every record has one: the 6.1 kernel
/// records callers too).
#[test]
fn kernel_log_matches_the_makedumpfile_of_each_fixture() {
    let Some(fixtures) = support::dumps::all_fixtures() else { return };
    for fixture in fixtures {
        let vmcore = Vmcore::open(&fixture.elf).expect("open vmcore");
        let got = log_of(&fixture, &vmcore, vmcore.vmcoreinfo().expect("VMCOREINFO"));
        assert!(every_record_has_a_caller(&got), "{}: a record without a caller id", fixture.name);
        let what = format!("{} ({:?})", fixture.name, fixture.expected_from);
        assert_same_log(&what, &fixture.log_as_expected(&got), &expected_log(&fixture));
    }
}

/// The form without caller ids, which makedumpfile 1.7.4 and older print
/// and vmdump prints for a kernel whose VMCOREINFO has no
/// `OFFSET(printk_info.caller_id)`: the 6.1 fixtures with that line taken
/// out equal 1.7.2's logs byte for byte.
#[test]
fn without_the_caller_key_the_log_is_makedumpfile_1_7_2s_byte_for_byte() {
    let Some(fixtures) = support::dumps::fixtures() else { return };
    for fixture in fixtures {
        assert_eq!(fixture.expected_from, ExpectedFrom::Debian172);
        let vmcore = Vmcore::open(&fixture.elf).expect("open vmcore");
        let text = vmcore.vmcoreinfo().expect("VMCOREINFO").text();
        let edited: String = text
            .lines()
            .filter(|l| !l.starts_with("OFFSET(printk_info.caller_id)="))
            .map(|l| l.to_owned() + "\n")
            .collect();
        assert!(edited.len() < text.len(), "{}: no caller_id key to take out", fixture.name);
        let info = VmcoreInfo::parse(edited.as_bytes()).expect("edited VMCOREINFO");
        let got = log_of(&fixture, &vmcore, &info);
        assert_same_log(&format!("{} without the key", fixture.name), &got, &expected_log(&fixture));
    }
}

#[test]
fn the_caller_column_comes_out_with_its_indent() {
    let indent = |n: usize| " ".repeat(n);
    let log = format!(
        "[    0.000000] [      T0] Linux\n[    1.000000] [   T1234] a\n{}b\n\
         [    2.000000] [T123456789] c\n{}d\n",
        indent(26),
        indent(28)
    );
    let want = format!("[    0.000000] Linux\n[    1.000000] a\n{0}b\n[    2.000000] c\n{0}d\n", indent(15));
    assert_eq!(String::from_utf8_lossy(&without_caller_ids(log.as_bytes())), want);
    assert!(every_record_has_a_caller(log.as_bytes()));
    let odd = format!("{log}[    3.000000] [x] y\n");
    assert!(!every_record_has_a_caller(odd.as_bytes()));
    assert!(without_caller_ids(odd.as_bytes()).ends_with(b"[    3.000000] [x] y\n"));
}
