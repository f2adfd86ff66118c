//! Regression tests from fuzzing: every file of `tests/fuzz-corpus/<target>/`
//! (the minimised corpus of `scripts/fuzz.sh`, plus `regress-*` inputs that
//! once crashed) goes through the same harness as the cargo-fuzz target
//! ([`vmdump_fuzzing`]). A panic in the harness is a failure.

use std::panic;
use std::path::PathBuf;

use vmdump_fuzzing as fuzzing;

fn run_corpus(target: &str) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus").join(target);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no corpus files", dir.display());
    let mut failed = Vec::new();
    for path in &files {
        let data = std::fs::read(path).unwrap();
        if panic::catch_unwind(|| assert!(fuzzing::run(target, &data), "unknown target {target}")).is_err() {
            failed.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert!(failed.is_empty(), "{target}: {} of {} inputs failed: {failed:?}", failed.len(), files.len());
}

#[test]
fn every_target_has_a_test() {
    assert_eq!(fuzzing::TARGETS, ["elf", "kdump", "flat", "vmcoreinfo", "btf"]);
}

#[test]
fn elf() {
    run_corpus("elf");
}

#[test]
fn kdump() {
    run_corpus("kdump");
}

#[test]
fn flat() {
    run_corpus("flat");
}

#[test]
fn vmcoreinfo() {
    run_corpus("vmcoreinfo");
}

#[test]
fn btf() {
    run_corpus("btf");
}
