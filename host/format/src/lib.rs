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
//! | [`btf`] | BTF, the kernel's type information: types, members, enumerators | docs/kernel-map.md §2 |
//! | [`machine`] | the dumped machines: `e_machine`, byte order, utsname name, sub header phys_base | §1.5 |
//! | [`flat`] | flattened stream (`-F`) and rearrangement (`-R`) | §2.1, §2.2 |
//! | [`sink`] | where a dump's positioned writes go: a file, or a flattened stream | §2.1 |
//! | [`name_index`] | finding entries of large tables by name (kallsyms, BTF) | |
//! | [`output`] | creating every output file: 0600, `-f`, never through a symbolic link | |
//!
//! Synthetic vmcores for tests and benchmarks are made by the crate
//! `vmdump-synth`; the fuzz harness of these parsers is `vmdump-fuzzing`.
//!
//! # Example
//!
//! ```
//! use vmdump_format::elf::{Endian, NT_PRSTATUS, Notes, write};
//! use vmdump_format::kdump::Layout;
//! use vmdump_format::vmcoreinfo::VmcoreInfo;
//!
//! // The PT_NOTE payload of a one-CPU x86_64 vmcore.
//! let e = Endian::Little;
//! let mut bytes = write::note(e, b"CORE", NT_PRSTATUS, &[0; 336]);
//! bytes.extend(write::note(e, b"VMCOREINFO", 0, b"OSRELEASE=6.1.0\nPAGESIZE=4096\n"));
//! let notes = Notes::from_bytes(bytes, e).unwrap();
//! assert_eq!(notes.nr_cpus, 1);
//! let info = VmcoreInfo::parse(notes.vmcoreinfo_bytes().unwrap()).unwrap();
//! assert_eq!(info.page_size(), Some(4096));
//!
//! // Where a kdump-compressed file of 1 GiB of RAM puts its parts (§1.13).
//! let layout = Layout::from_notes(1 << 18, 4096, &notes, 1 << 18).unwrap();
//! assert_eq!(layout.offset_note, 4096 + 104);
//! assert_eq!(layout.bitmap1_offset, 2 * 4096);
//! assert_eq!(layout.data_offset, layout.page_desc_offset + 24 * (1 << 18));
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod btf;
pub mod elf;
pub mod error;
pub mod flat;
pub mod kdump;
pub mod machine;
pub mod name_index;
pub mod output;
pub mod phys;
pub mod read_at;
pub mod sink;
pub mod vmcoreinfo;

pub use error::FormatError;
pub use read_at::ReadAt;
