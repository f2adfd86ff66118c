//! `vmdump::dmesg::kernel_log` on the real vmcores equals makedumpfile
//! 1.7.2's `--dump-dmesg` output (`expected/NAME.dmesg.txt`) byte for byte.
//! Runs when `VMDUMP_FIXTURE_DIR` holds the decompressed files.

mod support;

use vmdump::dmesg::kernel_log;
use vmdump::input::{Input, Vmcore};
use vmdump::xlat::KernelMemory;

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

#[test]
fn kernel_log_matches_makedumpfile() {
    let Some(fixtures) = support::dumps::fixtures() else { return };
    for fixture in fixtures {
        let vmcore = Vmcore::open(&fixture.elf).expect("open vmcore");
        let info = vmcore.vmcoreinfo().expect("VMCOREINFO");
        let memory = KernelMemory::open(&vmcore, info, &vmcore.elf().loads).expect("kernel memory");
        let got = kernel_log(&memory, info).unwrap_or_else(|e| panic!("{}: {e}", fixture.name));
        let path = fixture.expected_file("dmesg.txt");
        let want = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            got == want,
            "{}: {} bytes, makedumpfile {} bytes; first difference at {}",
            fixture.name,
            got.len(),
            want.len(),
            first_difference(&got, &want)
        );
    }
}
