//! Fuzz target `flat`: flat::rearrange of a flattened stream into a bounded in-memory file.
//! The harness is `vmdump_format::fuzzing::flat`, shared with tests/fuzz_corpus.rs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| vmdump_format::fuzzing::flat(data));
