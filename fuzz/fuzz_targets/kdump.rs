//! Fuzz target `kdump`: the kdump-compressed structure decoders and KdumpReader: open, accessors, dumpable pfns, pages, cursors.
//! The harness is `vmdump_fuzzing::kdump`, shared with host/fuzzing/tests/fuzz_corpus.rs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| vmdump_fuzzing::kdump(data));
