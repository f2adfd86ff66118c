//! Fuzz target `btf`: Btf::parse, every type and member lookup, split blobs.
//! The harness is `vmdump_fuzzing::btf`, shared with host/fuzzing/tests/fuzz_corpus.rs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| vmdump_fuzzing::btf(data));
