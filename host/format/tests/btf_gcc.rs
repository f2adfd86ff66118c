//! The BTF parser on BTF that gcc writes (`gcc -gbtf`, GCC 12 and later) for
//! `tests/btf/types.c`, against what the same compiler says of the same
//! types: every size, member offset and enumerator it prints.

use std::path::{Path, PathBuf};
use std::process::Command;

use vmdump_format::btf::Btf;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vmdump-test-btf-gcc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The `.BTF` section gcc writes for `source`.
fn gcc_btf(source: &Path, dir: &Path) -> Vec<u8> {
    let object = dir.join("types.o");
    run(Command::new("gcc").args(["-c", "-gbtf", "-O0"]).arg(source).arg("-o").arg(&object));
    let section = dir.join("types.btf");
    run(Command::new("objcopy")
        .arg(format!("--dump-section=.BTF={}", section.display()))
        .arg(&object)
        .arg(dir.join("copy.o")));
    std::fs::read(section).unwrap()
}

#[test]
fn sizes_offsets_and_enumerators_equal_the_compilers() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/btf/types.c");
    let dir = temp_dir();
    let btf = Btf::parse(gcc_btf(&source, &dir)).unwrap();
    let program = dir.join("layout");
    run(Command::new("gcc").arg("-DPRINT_LAYOUT").arg(&source).arg("-o").arg(&program));
    let layout = run(&mut Command::new(&program));
    let mut checked = 0;
    for line in layout.lines() {
        let (name, value) = line.rsplit_once(' ').unwrap();
        let value: i64 = value.parse().unwrap();
        let got = if let Some((outer, path)) = name.split_once('.') {
            let t = btf.aggregate(outer).unwrap_or_else(|| panic!("struct {outer}"));
            btf.member(t, path).unwrap_or_else(|| panic!("{name}")).offset() as i64
        } else if name.chars().next().unwrap().is_ascii_uppercase() {
            btf.enumerator(name).unwrap_or_else(|| panic!("{name}")).0
        } else {
            btf.size_of(btf.aggregate(name).unwrap().id).unwrap() as i64
        };
        assert_eq!(got, value, "{name}");
        checked += 1;
    }
    assert_eq!(checked, 17);
    let outer = btf.aggregate("outer_t").expect("a typedef of a struct");
    let next = btf.member(outer, "next").unwrap();
    assert_eq!(btf.type_name(next.type_id), "volatile const struct outer *");
    let b = btf.member(outer, "in.b").unwrap();
    assert_eq!(
        (b.bit_offset, b.bitfield_size),
        (8 * 8 + 3, 5),
        "a bitfield after 3 bits, inside the union at 8"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
