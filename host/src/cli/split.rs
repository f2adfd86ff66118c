//! `vmdump dump --split N`: the dump as N kdump files, each holding the
//! pages of a range of pfns (kdump-format.md §2.3), written in parallel.

use std::path::PathBuf;

use anyhow::{Context, bail};

use super::dump::{DumpArgs, create_output, sink_for};
use crate::dump::{DumpReport, dump_piece, split_pieces};
use crate::plan::Plan;
use crate::profile::{OutputFormat, Profile};

/// vmdump's own split block: fine enough that small machines split too.
const SPLITBLOCK_BYTES: u64 = 64 << 20;

/// The pieces' file names, or `None` for a dump in one file.
///
/// # Errors
/// `--split` with the flattened format or stdout, or with fewer than 2 pieces.
pub fn outputs(args: &DumpArgs, profile: &Profile) -> anyhow::Result<Option<Vec<PathBuf>>> {
    let names: Vec<PathBuf> = match args.split {
        None if args.split_outputs.is_empty() => return Ok(None),
        None => args.split_outputs.clone(),
        Some(n) => (1..=n).map(|i| PathBuf::from(format!("{}.{i}", args.output.display()))).collect(),
    };
    if args.elf {
        bail!("--split writes kdump files: it cannot be combined with --elf");
    }
    if names.len() < 2 {
        bail!("--split needs at least 2 pieces");
    }
    if profile.dump.format == OutputFormat::Flattened || args.output.as_os_str() == "-" {
        bail!("--split writes plain files: it cannot be combined with the flattened format or stdout");
    }
    Ok(Some(names))
}

/// Writes the pieces side by side, the workers shared out among them.
/// Returns the report of the whole dump. On failure no piece is left.
///
/// # Errors
/// The first piece that failed, with its file.
pub fn write_pieces(
    args: &DumpArgs,
    profile: &Profile,
    plan: &Plan<'_>,
    outputs: &[PathBuf],
) -> anyhow::Result<DumpReport> {
    let block = args.splitblock_size.unwrap_or(SPLITBLOCK_BYTES);
    let ranges = split_pieces(plan, outputs.len(), block)?;
    let mut files = Vec::with_capacity(outputs.len());
    for path in outputs {
        match create_output(path, args.force) {
            Ok(file) => files.push(file),
            Err(e) => {
                // The pieces already created are empty: none is left.
                outputs[..files.len()].iter().for_each(|p| drop(std::fs::remove_file(p)));
                return Err(e);
            }
        }
    }
    let threads = (plan.run().threads / outputs.len()).max(1);
    let results: Vec<anyhow::Result<DumpReport>> = std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .into_iter()
            .zip(ranges)
            .zip(outputs)
            .map(|((file, piece), path)| {
                scope.spawn(move || {
                    // Each piece its own stream when encrypted: each decrypts alone.
                    let mut sink = sink_for(Some(file), profile, args.limit, args.sync)?;
                    dump_piece(plan, piece, threads, sink.as_mut())
                        .with_context(|| format!("dump to {} failed", path.display()))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| bail!("a split piece panicked"))).collect()
    });
    merge(results, outputs)
}

/// One report for the pieces, or the first error (every piece removed).
fn merge(results: Vec<anyhow::Result<DumpReport>>, outputs: &[PathBuf]) -> anyhow::Result<DumpReport> {
    let mut merged: Option<DumpReport> = None;
    for (result, path) in results.into_iter().zip(outputs) {
        match result {
            Ok(report) => {
                eprintln!(
                    "vmdump: {}: {} pages, {} bytes",
                    path.display(),
                    report.pages_in_file,
                    report.bytes_written
                );
                match merged.as_mut() {
                    Some(whole) => whole.absorb_piece(report),
                    None => merged = Some(report),
                }
            }
            Err(e) => {
                outputs.iter().for_each(|p| drop(std::fs::remove_file(p)));
                return Err(e.context("the split dump failed (every piece was removed)"));
            }
        }
    }
    merged.context("no piece")
}
