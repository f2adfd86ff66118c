//! Reading kdump-compressed dumps back: decompressing pages through the
//! plugins ([`decode`]) and checking a dump against itself and its source
//! vmcore ([`verify`]). The file format itself is
//! `vmdump_format::kdump::reader`.

pub mod decode;
pub mod phys;
pub mod verify;

pub use decode::{Decoder, Modules};
pub use phys::DumpMemory;
pub use verify::{Problems, VerifyStats, verify};
