//! Creating the files vmdump writes: the one function every output goes
//! through ([`create`]), so that each gets the same three rules.
//!
//! - Mode 0600: a dump and a kernel log hold the machine's secrets.
//! - An existing file is replaced only when asked (`-f`).
//! - A symbolic link at the path is never followed, except with `-f` to a
//!   regular file owned by this user, which is then overwritten in place
//!   (the link stays). A link to another user's file, to a device, fifo or
//!   directory, or a dangling one, is refused: a dump tool runs as root and
//!   must not be pointed at `/etc/shadow` or a disk by whoever can write the
//!   output directory (issue 12).
//!
//! The opens themselves carry the checks where the kernel can: without
//! `-f` the file is created with `O_EXCL` (which never follows a link);
//! with `-f` the last component is opened `O_NOFOLLOW`, and a link's target
//! is checked again on the open descriptor before it is truncated, so a
//! swap between the check and the open is caught.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why an output file was not created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// The directory of the path does not exist.
    #[error("cannot create {path}: directory {dir} does not exist")]
    NoDirectory {
        /// The output.
        path: PathBuf,
        /// Its directory.
        dir: PathBuf,
    },
    /// Something exists at the path and replacing it was not asked for.
    #[error("cannot create {path}: it exists (use --force to overwrite)")]
    Exists {
        /// The output.
        path: PathBuf,
    },
    /// A symbolic link at the path that is not followed.
    #[error("cannot create {path}: it is a symbolic link to {target}, {why}")]
    Symlink {
        /// The output.
        path: PathBuf,
        /// What the link points to, as written in it.
        target: PathBuf,
        /// Why it is not followed.
        why: String,
    },
    /// Another I/O error.
    #[error("cannot create {path}: {cause}")]
    Io {
        /// The output.
        path: PathBuf,
        /// The error.
        #[source]
        cause: io::Error,
    },
}

/// Creates (or, with `overwrite`, replaces) the output file `path`, opened
/// for reading and writing, mode 0600, under the rules of this module.
///
/// # Errors
/// [`OutputError`], naming the path and why.
pub fn create(path: &Path, overwrite: bool) -> Result<File, OutputError> {
    let io_error = |cause| OutputError::Io { path: path.to_owned(), cause };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(OutputError::NoDirectory { path: path.to_owned(), dir: dir.to_owned() });
    }
    let mut options = OpenOptions::new();
    options.read(true).write(true).mode(0o600);
    if !overwrite {
        // O_EXCL: fails on anything at the path, a link (dangling or not) included.
        return options.create_new(true).open(path).map_err(|cause| match cause.kind() {
            io::ErrorKind::AlreadyExists => match std::fs::read_link(path) {
                Ok(target) => symlink_refused(path, target, "not followed without --force".into()),
                Err(_) => OutputError::Exists { path: path.to_owned() },
            },
            _ => io_error(cause),
        });
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => open_link_target(path, options),
        // Not a link (or nothing): O_NOFOLLOW refuses one put there since.
        _ => {
            let file =
                options.create(true).truncate(true).custom_flags(libc::O_NOFOLLOW).open(path).map_err(
                    |cause| match cause.raw_os_error() {
                        Some(libc::ELOOP) => symlink_refused(
                            path,
                            std::fs::read_link(path).unwrap_or_default(),
                            "which appeared while it was opened".into(),
                        ),
                        _ => io_error(cause),
                    },
                )?;
            private(path, file)
        }
    }
}

fn symlink_refused(path: &Path, target: PathBuf, why: String) -> OutputError {
    OutputError::Symlink { path: path.to_owned(), target, why }
}

/// With `-f`, the link `path`: its target when that is a regular file of
/// this user, opened without following a link and checked again on the
/// descriptor, then truncated.
fn open_link_target(path: &Path, mut options: OpenOptions) -> Result<File, OutputError> {
    let target = std::fs::read_link(path).unwrap_or_default();
    let refuse = |why: String| Err(symlink_refused(path, target.clone(), why));
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return refuse("which does not exist (a dangling link is never followed)".into());
        }
        Err(e) => return refuse(format!("which cannot be read: {e}")),
    };
    if let Some(why) = refusal(&meta) {
        return refuse(why);
    }
    let resolved = match std::fs::canonicalize(path) {
        Ok(resolved) => resolved,
        Err(e) => return refuse(format!("which cannot be resolved: {e}")),
    };
    let file = match options.custom_flags(libc::O_NOFOLLOW).open(&resolved) {
        Ok(file) => file,
        Err(e) => return refuse(format!("whose target {} cannot be opened: {e}", resolved.display())),
    };
    let opened = file.metadata().map_err(|cause| OutputError::Io { path: path.to_owned(), cause })?;
    if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
        return refuse("which changed while it was opened".into());
    }
    if let Some(why) = refusal(&opened) {
        return refuse(why);
    }
    file.set_len(0).map_err(|cause| OutputError::Io { path: path.to_owned(), cause })?;
    private(path, file)
}

/// Why a link to a file of `meta` is not followed, if it is not.
fn refusal(meta: &Metadata) -> Option<String> {
    let kind = meta.file_type();
    let what = match () {
        () if kind.is_file() => None,
        () if kind.is_dir() => Some("a directory"),
        () if kind.is_block_device() => Some("a block device"),
        () if kind.is_char_device() => Some("a character device"),
        () if kind.is_fifo() => Some("a fifo"),
        () if kind.is_socket() => Some("a socket"),
        () => Some("not a regular file"),
    };
    if let Some(what) = what {
        return Some(format!("which is {what}, not a regular file"));
    }
    match effective_uid() {
        Some(uid) if uid == meta.uid() => None,
        Some(uid) => Some(format!("a file owned by uid {}, not by this user (uid {uid})", meta.uid())),
        None => Some("whose owner cannot be compared with this user (/proc/self cannot be read)".into()),
    }
}

/// Makes a regular file mode 0600 (a replaced file keeps its mode
/// otherwise); other files (a device given with `-f`) are left as they are.
fn private(path: &Path, file: File) -> Result<File, OutputError> {
    let meta = file.metadata().map_err(|cause| OutputError::Io { path: path.to_owned(), cause })?;
    if meta.is_file() && meta.mode() & 0o7777 != 0o600 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|cause| OutputError::Io { path: path.to_owned(), cause })?;
    }
    Ok(file)
}

/// The effective user id of this process: the owner of `/proc/self`
/// (this crate has no `unsafe` for `geteuid`).
pub fn effective_uid() -> Option<u32> {
    std::fs::metadata("/proc/self").map(|m| m.uid()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vmdump-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn a_new_file_is_0600_and_an_existing_one_needs_overwrite() {
        let dir = dir("new");
        let path = dir.join("out");
        create(&path, false).unwrap();
        assert_eq!(mode(&path), 0o600);
        let err = create(&path, false).unwrap_err().to_string();
        assert!(err.contains("it exists (use --force"), "{err}");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        create(&path, true).unwrap();
        assert_eq!((std::fs::read(&path).unwrap().len(), mode(&path)), (0, 0o600));
        let err = create(&dir.join("no/such"), true).unwrap_err().to_string();
        assert!(err.contains("does not exist"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn links_are_followed_only_with_overwrite_to_an_own_regular_file() {
        let dir = dir("links");
        let (dangling, target) = (dir.join("link"), dir.join("target"));
        symlink(&target, &dangling).unwrap();
        for overwrite in [false, true] {
            let err = create(&dangling, overwrite).unwrap_err().to_string();
            assert!(err.contains("symbolic link") && err.contains("dangling") == overwrite, "{err}");
            assert!(!target.exists(), "created through a dangling link");
        }
        let own = dir.join("own");
        std::fs::write(&target, b"old contents").unwrap();
        symlink(&target, &own).unwrap();
        assert!(create(&own, false).unwrap_err().to_string().contains("without --force"));
        create(&own, true).unwrap();
        assert!(std::fs::symlink_metadata(&own).unwrap().file_type().is_symlink());
        assert_eq!((std::fs::read(&target).unwrap().len(), mode(&target)), (0, 0o600));
        let null = dir.join("null");
        symlink("/dev/null", &null).unwrap();
        let err = create(&null, true).unwrap_err().to_string();
        assert!(err.contains("character device"), "{err}");
        let to_dir = dir.join("to-dir");
        symlink(&dir, &to_dir).unwrap();
        assert!(create(&to_dir, true).unwrap_err().to_string().contains("a directory"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
