//! Reading kdump-compressed dumps back: decompressing pages through the
//! plugins ([`decode`]) and checking a dump against itself and its source
//! vmcore ([`verify`]). The file format itself is
//! `vmdump_format::kdump::reader`.

pub mod decode;
pub mod descs;
pub mod phys;
pub mod reassemble;
pub mod verify;

pub use decode::{Decoder, Modules};
pub use phys::DumpMemory;
pub use reassemble::{Reassembled, reassemble};
pub use verify::{Problems, VerifyStats, verify};

use std::fs::File;
use std::io::{Read, Seek};
use std::path::Path;

use anyhow::Context;
use vmdump_format::ReadAt;
use vmdump_format::kdump::reader::KdumpReader;

use crate::store::ObjectName;

/// Where a dump's bytes come from: a file, or an object read by ranges.
pub type DumpSource = Box<dyn ReadAt + Send + Sync>;

/// Opens a kdump-compressed dump, plain or flattened (kdump-format.md §2.1):
/// a flattened stream is first rearranged into an unlinked temporary file.
/// An `s3://` object is read by ranges ([`crate::store::ObjectReader`]).
///
/// # Errors
/// The file cannot be read, or is not a valid dump, with its name.
pub fn open_dump(path: &Path) -> anyhow::Result<KdumpReader<DumpSource>> {
    if let Some(name) = ObjectName::of_path(path) {
        let object = crate::store::open_object(name)?;
        let mut magic = [0u8; 32];
        let start = &mut magic[..object.size().min(32) as usize];
        if object.read_exact_at(start, 0).is_ok() && crate::crypt::starts_encrypted(start) {
            anyhow::bail!(
                "{} is an encrypted dump: copy it (`vmdump fetch {0} FILE`) and decrypt the copy \
                 (`vmdump decrypt -i IDENTITY FILE DUMP`)",
                path.display()
            );
        }
        return KdumpReader::open(Box::new(object) as DumpSource)
            .with_context(|| format!("{}: not a valid kdump-compressed object", path.display()));
    }
    crate::crypt::refuse_encrypted(path)?;
    let mut file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let mut signature = [0u8; 12];
    let flattened = file.read(&mut signature)? == 12 && signature == *b"makedumpfile";
    file.rewind()?;
    let file = if flattened { rearranged(path, &mut file)? } else { file };
    KdumpReader::open(Box::new(file) as DumpSource)
        .with_context(|| format!("{}: not a valid kdump-compressed file", path.display()))
}

/// Opens a dump given as one file or as the pieces of a split dump: pieces
/// are first reassembled into an unlinked temporary file.
///
/// # Errors
/// As [`open_dump`], or the pieces do not form one dump.
pub fn open_dump_set(paths: &[std::path::PathBuf]) -> anyhow::Result<KdumpReader<DumpSource>> {
    let [first, rest @ ..] = paths else { anyhow::bail!("no dump file given") };
    if rest.is_empty() {
        return open_dump(first);
    }
    let pieces = paths
        .iter()
        .map(|p| Ok((p.display().to_string(), open_dump(p)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let file = temporary_file(first, "reassembled")?;
    let mut sink = vmdump_format::sink::FileSink::new(file.try_clone()?, None);
    reassemble(pieces, &mut sink).context("reassembling the split dump")?;
    KdumpReader::open(Box::new(file) as DumpSource).context("the reassembled split dump")
}

/// A new file in the temporary directory, removed from it at once (the
/// open file stays usable).
pub fn temporary_file(path: &Path, what: &str) -> anyhow::Result<File> {
    let name = format!(
        "vmdump-{what}-{}-{}",
        std::process::id(),
        path.file_name().map_or("".into(), |n| n.to_string_lossy())
    );
    let temp = std::env::temp_dir().join(name);
    // Mode 0600 like every output: it holds pages of the dump until closed.
    let file = vmdump_format::output::create(&temp, false)?;
    let _ = std::fs::remove_file(&temp);
    Ok(file)
}

/// The plain file of a flattened stream, in the temporary directory, removed
/// from it at once (the open file stays readable).
fn rearranged(path: &Path, stream: &mut File) -> anyhow::Result<File> {
    let mut plain = temporary_file(path, "rearranged")?;
    let mut input = std::io::BufReader::with_capacity(1 << 20, stream);
    vmdump_format::flat::rearrange(&mut input, &mut plain)
        .with_context(|| format!("{}: flattened stream", path.display()))?;
    Ok(plain)
}
