//! `vmdump convert INPUT OUTPUT`: any dump vmdump reads (an ELF vmcore, a
//! kdump-compressed file, plain or flattened, or the pieces of a split
//! dump) into a kdump file with another compressor or a higher dump level,
//! or into an ELF core (`--elf`), through the same engine and plugins as
//! `vmdump dump`.
//!
//! A kdump input is read directly (`crate::input::KdumpInput`): its pages
//! are decompressed as they are read, no temporary image is written. Pages
//! the input left out stay out; the dump level is at least the input's.

use std::path::PathBuf;

use clap::Args;

use super::Outcome;
use super::dump::DumpArgs;
use crate::profile::Profile;

/// Arguments of `vmdump convert`: those of `vmdump dump`, and the other
/// pieces of a split dump.
#[derive(Debug, Clone, Args)]
pub struct ConvertArgs {
    /// Another piece of a split dump given as INPUT (repeatable).
    #[arg(long = "piece", value_name = "FILE")]
    pub pieces: Vec<PathBuf>,
    /// The private keys of an encrypted INPUT.
    #[command(flatten)]
    pub keys: super::decrypt::IdentityArgs,
    /// How to write OUTPUT, as for `vmdump dump`.
    #[command(flatten)]
    pub dump: DumpArgs,
}

/// Runs `vmdump convert`.
///
/// # Errors
/// The input cannot be read or decoded, or the dump fails.
pub fn run(args: &ConvertArgs, plugin_dirs: &[PathBuf]) -> anyhow::Result<Outcome> {
    let inputs = [std::slice::from_ref(&args.dump.input), &args.pieces].concat();
    let (mut plain, _decrypted) = super::decrypt::plain_paths(&inputs, &args.keys)?;
    let mut args = ConvertArgs { pieces: plain.split_off(1), ..args.clone() };
    args.dump.input = plain.remove(0);
    convert_with(&args, &args.dump.profile()?, plugin_dirs)
}

/// [`run`] with the profile already read (and the command line's overrides applied).
///
/// # Errors
/// As [`run`].
pub fn convert_with(
    args: &ConvertArgs,
    profile: &Profile,
    plugin_dirs: &[PathBuf],
) -> anyhow::Result<Outcome> {
    super::dump::run_with(&args.dump, profile, plugin_dirs, &args.pieces)
}
