//! `vmdump decrypt -i IDENTITY IN OUT`: an encrypted dump (or kernel log)
//! back into the file it would have been unencrypted; and the `-i` of the
//! commands that read dumps.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::Outcome;
use crate::crypt::{Identities, decrypt, decrypt_to_temporary, is_encrypted};

/// The private keys to read encrypted dumps with.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct IdentityArgs {
    /// A private key to decrypt an encrypted dump with: an age identity
    /// file (age-keygen) or an OpenSSH private key without a passphrase
    /// (repeatable). The dump is decrypted into an unlinked temporary file.
    #[arg(short = 'i', long = "identity", value_name = "IDENTITY")]
    pub identities: Vec<PathBuf>,
}

/// Options of `vmdump decrypt`.
#[derive(Debug, clap::Args)]
pub struct DecryptArgs {
    #[command(flatten)]
    pub keys: IdentityArgs,
    /// Overwrite OUTPUT if it exists.
    #[arg(short = 'f', long)]
    pub force: bool,
    /// The encrypted file (`vmdump dump --encrypt-to`, or the profile's
    /// [output] recipients).
    pub input: PathBuf,
    /// The plain file: a kdump-compressed dump (or what else was encrypted).
    pub output: PathBuf,
}

/// Runs `vmdump decrypt`: incomplete (exit status 1) when the file was
/// cut or altered, the output then holding the whole records before it.
///
/// # Errors
/// No key decrypts it, or nothing of it is readable; the output is removed.
pub fn run(args: &DecryptArgs) -> anyhow::Result<Outcome> {
    if args.keys.identities.is_empty() {
        anyhow::bail!("vmdump decrypt needs the private key: -i IDENTITY");
    }
    let identities = Identities::load(&args.keys.identities)?;
    let mut out = super::dump::create_output(&args.output, args.force)?;
    let decrypted = decrypt(&args.input, &identities, &mut out).inspect_err(|_| {
        let _ = std::fs::remove_file(&args.output);
    })?;
    out.sync_all().with_context(|| format!("writing {}", args.output.display()))?;
    match decrypted.cut {
        Some(cut) if decrypted.dump => {
            eprintln!(
                "vmdump: {cut}\nvmdump: {} holds the dump up to there, flagged incomplete",
                args.output.display()
            );
            Ok(Outcome::Incomplete)
        }
        Some(cut) => {
            eprintln!("vmdump: {cut}\nvmdump: {} holds what came before", args.output.display());
            Ok(Outcome::Incomplete)
        }
        None => Ok(Outcome::Success),
    }
}

/// The paths to read for `paths`: each encrypted one decrypted into an
/// unlinked temporary file, named by its descriptor (`/proc/self/fd/N`),
/// which stays open as long as the returned files.
///
/// # Errors
/// An encrypted file without `-i`, or one that does not decrypt.
pub fn plain_paths(paths: &[PathBuf], keys: &IdentityArgs) -> anyhow::Result<(Vec<PathBuf>, Vec<File>)> {
    let mut identities = None;
    let (mut plain, mut open) = (Vec::new(), Vec::new());
    for path in paths {
        if !is_encrypted(path)? {
            plain.push(path.clone());
            continue;
        }
        if keys.identities.is_empty() {
            anyhow::bail!("{} is encrypted: give the private key with -i IDENTITY", path.display());
        }
        let identities = match &identities {
            Some(loaded) => loaded,
            None => identities.insert(Identities::load(&keys.identities)?),
        };
        let file = decrypt_to_temporary(path, identities)?;
        plain.push(descriptor_path(&file));
        open.push(file);
    }
    Ok((plain, open))
}

fn descriptor_path(file: &File) -> PathBuf {
    use std::os::fd::AsRawFd;
    Path::new("/proc/self/fd").join(file.as_raw_fd().to_string())
}
