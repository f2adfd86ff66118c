//! File formats of vmdump, with no dependency on plugins, threads or the SDK.
//!
//! The on-disk facts come from the team reference `kdump-format.md`
//! (cited as §N below); the crate only parses, computes layouts and
//! encodes structures. Policy (what to dump, how to compress) lives in the
//! host.
//!
//! | module | what | doc |
//! |---|---|---|
//! | [`read_at`] | positioned reads over files and byte slices | |
//! | [`error`] | [`FormatError`], naming what failed and where | |
//! | [`elf`] | ELF64 core (vmcore) reader, notes | §1.6, §4.1 |
//! | [`phys`] | PT_LOADs → physical page map | §1.7, §1.8, §6.2 |
//! | [`vmcoreinfo`] | `KEY=value` text of the VMCOREINFO note | §4.2 |
//! | [`kdump`] | kdump-compressed header, sub header, descriptors, layout | §1.1–§1.13 |
//! | [`flat`] | flattened stream (`-F`) and rearrangement (`-R`) | §2.1, §2.2 |
//! | [`synth`] | synthetic sparse vmcores for tests and benchmarks | |
//!
//! # Example
//!
//! ```
//! use vmdump_format::{elf::ElfVmcore, phys::PhysMap, synth};
//!
//! let spec = synth::SynthSpec { ram_bytes: 4 << 20, ..Default::default() };
//! let image = synth::to_vec(&spec).unwrap();
//! let core = ElfVmcore::parse(&image).unwrap();
//! let map = PhysMap::new(&core.loads, 4096).unwrap();
//! assert_eq!(map.ram_pages(), synth::summarize(&spec).ram_pages);
//! let info = core.vmcoreinfo().unwrap().unwrap();
//! assert_eq!(info.page_size(), Some(4096));
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod elf;
pub mod error;
pub mod flat;
#[doc(hidden)]
pub mod fuzzing;
pub mod kdump;
pub mod phys;
pub mod read_at;
pub mod synth;
pub mod vmcoreinfo;

pub use error::FormatError;
pub use read_at::ReadAt;
