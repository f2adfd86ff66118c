//! `vmdump fetch s3://BUCKET/KEY FILE`: a copy of an object in a local
//! file (mode 0600, as every file vmdump writes), read by ranges.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use vmdump_format::ReadAt;

use crate::store::ObjectName;

/// Arguments of `vmdump fetch`.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// Overwrite FILE if it exists.
    #[arg(short = 'f', long)]
    pub force: bool,
    /// The object, `s3://BUCKET/KEY`.
    pub object: String,
    /// The local file.
    pub file: PathBuf,
}

/// Bytes copied at once.
const CHUNK: usize = 8 << 20;

/// Runs `vmdump fetch`.
///
/// # Errors
/// Not an `s3://` URL, the store's error, or the file's.
pub fn run(args: &FetchArgs) -> anyhow::Result<()> {
    let name = ObjectName::parse(&args.object)
        .with_context(|| format!("{}: not an object URL (s3://BUCKET/KEY)", args.object))?;
    let object = crate::store::open_object(name)?;
    let mut file = super::dump::create_output(&args.file, args.force)?;
    let mut buf = vec![0u8; CHUNK];
    let mut at = 0;
    while at < object.size() {
        let len = (object.size() - at).min(CHUNK as u64) as usize;
        object
            .read_exact_at(&mut buf[..len], at)
            .with_context(|| format!("reading {} at {at:#x}", args.object))?;
        file.write_all(&buf[..len]).with_context(|| format!("writing {}", args.file.display()))?;
        at += len as u64;
    }
    file.sync_data().with_context(|| format!("writing {}", args.file.display()))
}
