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

use std::fs::File;
use std::io::{Read, Seek};
use std::path::Path;

use anyhow::Context;
use vmdump_format::kdump::reader::KdumpReader;

/// Opens a kdump-compressed dump, plain or flattened (kdump-format.md §2.1):
/// a flattened stream is first rearranged into an unlinked temporary file.
///
/// # Errors
/// The file cannot be read, or is not a valid dump, with its name.
pub fn open_dump(path: &Path) -> anyhow::Result<KdumpReader<File>> {
    let mut file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let mut signature = [0u8; 12];
    let flattened = file.read(&mut signature)? == 12 && signature == *b"makedumpfile";
    file.rewind()?;
    let file = if flattened { rearranged(path, &mut file)? } else { file };
    KdumpReader::open(file).with_context(|| format!("{}: not a valid kdump-compressed file", path.display()))
}

/// The plain file of a flattened stream, in the temporary directory, removed
/// from it at once (the open file stays readable).
fn rearranged(path: &Path, stream: &mut File) -> anyhow::Result<File> {
    let name = format!(
        "vmdump-rearranged-{}-{}",
        std::process::id(),
        path.file_name().map_or("".into(), |n| n.to_string_lossy())
    );
    let temp = std::env::temp_dir().join(name);
    let mut plain = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&temp)
        .with_context(|| format!("cannot create {}", temp.display()))?;
    let _ = std::fs::remove_file(&temp);
    let mut input = std::io::BufReader::with_capacity(1 << 20, stream);
    vmdump_format::flat::rearrange(&mut input, &mut plain)
        .with_context(|| format!("{}: flattened stream", path.display()))?;
    Ok(plain)
}
