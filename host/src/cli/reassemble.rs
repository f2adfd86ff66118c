//! `vmdump reassemble PIECE... OUTPUT`: one dump from the pieces of a split
//! dump, as `makedumpfile --reassemble`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::Outcome;
use super::dump::create_output;
use crate::read::{open_dump, reassemble};
use vmdump_format::sink::FileSink;

/// Arguments of `vmdump reassemble`.
#[derive(Debug, Args)]
pub struct ReassembleArgs {
    /// Overwrite OUTPUT if it exists.
    #[arg(short = 'f', long)]
    pub force: bool,
    /// The pieces (in any order), then the file to write.
    #[arg(required = true, num_args = 2.., value_name = "PIECE... OUTPUT")]
    pub files: Vec<PathBuf>,
}

/// Runs `vmdump reassemble`.
///
/// # Errors
/// A piece cannot be read, the pieces do not form one dump, or the output
/// cannot be written; no output is left then.
pub fn run(args: &ReassembleArgs) -> anyhow::Result<Outcome> {
    let (output, inputs) = args.files.split_last().context("no output file")?;
    let pieces =
        inputs.iter().map(|p| Ok((p.display().to_string(), open_dump(p)?))).collect::<anyhow::Result<_>>()?;
    let mut sink = FileSink::new(create_output(output, args.force)?, None);
    let done = reassemble(pieces, &mut sink).map_err(|e| {
        let _ = std::fs::remove_file(output);
        e.context(format!("reassembling into {} failed (the output was removed)", output.display()))
    })?;
    eprintln!(
        "vmdump: {}: {} pages from {} pieces, {} bytes{}",
        output.display(),
        done.pages,
        inputs.len(),
        done.bytes,
        if done.incomplete { "; a piece was incomplete, so is the dump" } else { "" }
    );
    Ok(if done.incomplete { Outcome::Incomplete } else { Outcome::Success })
}
