//! Fuzz target `flat`: flat::rearrange of a flattened stream into a bounded in-memory file.
//! The harness is `vmdump_fuzzing::flat`, shared with host/fuzzing/tests/fuzz_corpus.rs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| vmdump_fuzzing::flat(data));
