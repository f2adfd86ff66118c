//! `vmdump convert INPUT OUTPUT`: any dump vmdump reads (an ELF vmcore, a
//! kdump-compressed file, plain or flattened, or the pieces of a split
//! dump) into a kdump file with another compressor or a higher dump level,
//! or into an ELF core (`--elf`), through the same engine and plugins as
//! `vmdump dump`.
//!
//! A kdump input is first decompressed into a sparse ELF image in the
//! temporary directory (`TMPDIR`), unlinked at once: it takes the disk
//! space of the stored non-zero pages, uncompressed. Pages the input left
//! out stay out; the dump level is at least the input's.

use std::os::fd::AsRawFd;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::Outcome;
use super::dump::DumpArgs;
use crate::exclude::MetadataFilter;
use crate::level::DumpLevel;
use crate::plugin::{Registry, SearchPath};
use crate::profile::Profile;
use crate::read::image::write_image;
use crate::read::{Modules, open_dump_set, temporary_file};

/// Arguments of `vmdump convert`: those of `vmdump dump`, and the other
/// pieces of a split dump.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Another piece of a split dump given as INPUT (repeatable).
    #[arg(long = "piece", value_name = "FILE")]
    pub pieces: Vec<PathBuf>,
    /// How to write OUTPUT, as for `vmdump dump`.
    #[command(flatten)]
    pub dump: DumpArgs,
}

/// Runs `vmdump convert`.
///
/// # Errors
/// The input cannot be read or decoded, or the dump fails.
pub fn run(args: &ConvertArgs, plugin_dirs: &[PathBuf]) -> anyhow::Result<Outcome> {
    convert_with(args, &args.dump.profile()?, plugin_dirs)
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
    let registry = Registry::discover(SearchPath::from_process(plugin_dirs, &profile.plugins.dirs));
    if args.pieces.is_empty() && super::dmesg::is_elf(&args.dump.input)? {
        return super::dump::run_with(&args.dump, profile, &registry, None);
    }
    let mut inputs = vec![args.dump.input.clone()];
    inputs.extend(args.pieces.iter().cloned());
    let reader = open_dump_set(&inputs)?;
    let modules = Modules::new(&registry);
    let image = temporary_file(&args.dump.input, "convert")?;
    let (stats, exclusions) = write_image(&reader, &mut modules.decoder(), &image)
        .with_context(|| format!("{}: decompressing the dump", args.dump.input.display()))?;
    if stats.lost > 0 {
        eprintln!("vmdump: warning: the input is incomplete: {} pages it lost are left out", stats.lost);
    }
    let dump = DumpArgs {
        input: PathBuf::from(format!("/proc/self/fd/{}", image.as_raw_fd())),
        ..args.dump.clone()
    };
    let earlier = (&exclusions as &dyn MetadataFilter, DumpLevel::recorded(reader.dump_level()));
    super::dump::run_with(&dump, profile, &registry, Some(earlier))
}
