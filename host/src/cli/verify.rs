//! `vmdump verify DUMP [--against VMCORE]`: exit status 0 when the dump
//! verifies, 1 naming the first problems otherwise; an incomplete dump (cut
//! short, interrupted or killed) fails too, unless `--allow-incomplete`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::input::Vmcore;
use crate::plugin::SearchPath;
use crate::read::{Modules, Problems, VerifyStats, verify};

/// Arguments of `vmdump verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// A kdump-compressed file (plain or flattened), or every piece of a split dump.
    #[arg(required = true, num_args = 1.., value_name = "DUMP")]
    pub dump: Vec<PathBuf>,
    /// The private keys of an encrypted dump.
    #[command(flatten)]
    pub keys: super::decrypt::IdentityArgs,
    /// The ELF vmcore it was made from: every page is compared with it.
    #[arg(long, value_name = "VMCORE")]
    pub against: Option<PathBuf>,
    /// Accept a dump whose header says it is incomplete (a full disk, a
    /// signal, a killed run) when what it holds verifies.
    #[arg(long)]
    pub allow_incomplete: bool,
}

fn summary(s: &VerifyStats, p: &Problems, against: bool) -> String {
    let mut line = format!(
        "verified {} pages: {} compressed, {} raw, {} zero, {} lost, {} excluded ({} of them zero in the source)",
        s.stored, s.compressed, s.raw, s.zero, s.lost, s.excluded, s.excluded_zero
    );
    if s.other_pieces > 0 {
        line += &format!("; {} pages in the other pieces of the split dump", s.other_pieces);
    }
    if against {
        line += &format!("; {} equal to the source", s.equal);
        if s.source_beyond > 0 {
            line += &format!(", {} source pages beyond max_mapnr not judged", s.source_beyond);
        }
    }
    line + &format!("; {} problems", p.count)
}

/// Verifies `args.dump`, printing problems and the summary to `out`.
///
/// # Errors
/// The dump or the source cannot be opened, or the dump has problems
/// (the message names the first).
pub fn run(args: &VerifyArgs, plugin_dirs: &[PathBuf], out: &mut impl Write) -> anyhow::Result<()> {
    let reader = {
        let (paths, _decrypted) = super::decrypt::plain_paths(&args.dump, &args.keys)?;
        crate::read::open_dump_set(&paths)?
    };
    let name = args.dump.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ");
    let source = match &args.against {
        Some(path) => {
            Some(Vmcore::open(path).with_context(|| format!("{}: cannot read the source", path.display()))?)
        }
        None => None,
    };
    let modules = Modules::new(SearchPath::from_process(plugin_dirs, &[]));
    let (stats, problems) = verify(&reader, modules.decoder(), source.as_ref());
    for message in &problems.first {
        writeln!(out, "{name}: {message}")?;
    }
    if problems.count > problems.first.len() as u64 {
        writeln!(out, "... and {} more problems", problems.count - problems.first.len() as u64)?;
    }
    writeln!(out, "{}", summary(&stats, &problems, source.is_some()))?;
    if let Some(first) = problems.first.first() {
        anyhow::bail!("{name}: {} problems, the first: {first}", problems.count)
    }
    if reader.is_incomplete() {
        let why = match stats.lost {
            0 => "the run that wrote it did not finish".to_owned(),
            lost => format!("{lost} pages are lost (never written, or unreadable in the input)"),
        };
        writeln!(out, "{name}: the dump is INCOMPLETE: {why}")?;
        if !args.allow_incomplete {
            anyhow::bail!("{name}: incomplete dump (--allow-incomplete accepts what it holds)")
        }
    }
    Ok(())
}
