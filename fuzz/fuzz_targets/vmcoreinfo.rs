//! Fuzz target `vmcoreinfo`: VmcoreInfo::parse and every accessor.
//! The harness is `vmdump_fuzzing::vmcoreinfo`, shared with host/fuzzing/tests/fuzz_corpus.rs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| vmdump_fuzzing::vmcoreinfo(data));
