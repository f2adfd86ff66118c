//! Fuzz target `vmcoreinfo`: VmcoreInfo::parse and every accessor.
//! The harness is `vmdump_format::fuzzing::vmcoreinfo`, shared with tests/fuzz_corpus.rs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| vmdump_format::fuzzing::vmcoreinfo(data));
