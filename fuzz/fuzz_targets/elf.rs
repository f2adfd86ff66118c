//! Fuzz target `elf`: ElfVmcore::parse, its notes and VMCOREINFO, the PhysMap of its PT_LOADs and pages read through it.
//! The harness is `vmdump_fuzzing::elf`, shared with host/fuzzing/tests/fuzz_corpus.rs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| vmdump_fuzzing::elf(data));
