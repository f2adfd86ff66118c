//! Reading an encrypted output back: the age stream decrypted with the
//! private keys, the flattened stream in it rearranged into the plain file.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use vmdump_format::flat::{FLAT_SIGNATURE, rearrange_prefix};
use vmdump_format::kdump::{DUMP_DH_COMPRESSED_INCOMPLETE, DiskDumpHeader};

/// The first bytes of every age file.
const AGE_MAGIC: &[u8] = b"age-encryption.org/v1\n";
/// Plaintext bytes of an age payload chunk.
const AGE_CHUNK: u64 = 64 << 10;

/// Whether `path` is an age file; `false` for one that cannot be opened
/// (its reader then says why: /proc/kcore needs root).
///
/// # Errors
/// It cannot be read.
pub fn is_encrypted(path: &Path) -> anyhow::Result<bool> {
    let mut magic = [0u8; AGE_MAGIC.len()];
    let Ok(mut file) = File::open(path) else { return Ok(false) };
    let got =
        read_up_to(&mut file, &mut magic).with_context(|| format!("{}: cannot read", path.display()))?;
    Ok(starts_encrypted(&magic[..got]))
}

/// Whether `bytes` (a file's first) begin an age file.
pub fn starts_encrypted(bytes: &[u8]) -> bool {
    bytes.starts_with(AGE_MAGIC)
}

/// Refuses an encrypted file where a plain one is read, saying what to do.
///
/// # Errors
/// It is encrypted, or cannot be read.
pub fn refuse_encrypted(path: &Path) -> anyhow::Result<()> {
    if is_encrypted(path)? {
        bail!(
            "{} is an encrypted dump: decrypt it first (`vmdump decrypt -i IDENTITY`), or give \
             `vmdump info`, `verify` or `convert` the private key with -i IDENTITY",
            path.display()
        );
    }
    Ok(())
}

/// The private keys a dump is decrypted with.
pub struct Identities {
    keys: Vec<Box<dyn age::Identity>>,
    /// The files they came from, to name in errors.
    files: Vec<PathBuf>,
}

impl Identities {
    /// Reads the keys of each file: an age identity file (`AGE-SECRET-KEY-1…`
    /// lines, as age-keygen writes), or an OpenSSH private key without a
    /// passphrase (ssh-ed25519 or ssh-rsa).
    ///
    /// # Errors
    /// A file that cannot be read or holds no usable key, named.
    pub fn load(files: &[PathBuf]) -> anyhow::Result<Self> {
        let mut keys = Vec::new();
        for file in files {
            keys.extend(load_file(file).with_context(|| format!("identity {}", file.display()))?);
        }
        Ok(Self { keys, files: files.to_vec() })
    }

    fn names(&self) -> String {
        self.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
    }
}

fn load_file(path: &Path) -> anyhow::Result<Vec<Box<dyn age::Identity>>> {
    let text = std::fs::read_to_string(path).context("cannot read it (a key is a text file)")?;
    if text.contains("-----BEGIN OPENSSH PRIVATE KEY-----")
        || text.contains("-----BEGIN RSA PRIVATE KEY-----")
    {
        let key = age::ssh::Identity::from_buffer(text.as_bytes(), Some(path.display().to_string()))
            .map_err(|e| anyhow::anyhow!("not a usable OpenSSH private key: {e}"))?;
        return match key {
            age::ssh::Identity::Unencrypted(_) => Ok(vec![Box::new(key)]),
            age::ssh::Identity::Encrypted(_) => bail!(
                "the OpenSSH key is protected by a passphrase, which vmdump does not ask for: decrypt \
                 with `age -d -i KEY` (it asks), or use a copy of the key without one"
            ),
            age::ssh::Identity::Unsupported(kind) => bail!("an OpenSSH key age cannot use: {kind:?}"),
        };
    }
    let file = age::IdentityFile::from_buffer(text.as_bytes()).context("not an age identity file")?;
    let keys = file.into_identities().map_err(|e| anyhow::anyhow!("{e}"))?;
    if keys.is_empty() {
        bail!("no key in it (age identities are AGE-SECRET-KEY-1... lines)");
    }
    Ok(keys)
}

/// What [`decrypt`] wrote.
#[derive(Debug)]
pub struct Decrypted {
    /// Whether the plaintext was a dump's flattened stream (rearranged into
    /// the plain file), not a file encrypted whole (a kernel log).
    pub dump: bool,
    /// Why the output stops short of what was written, if it does: a
    /// truncated or altered file, or a dump whose writer was killed. The
    /// dump is then flagged incomplete and holds the whole records before.
    pub cut: Option<String>,
}

/// Counts the plaintext read, and turns the age stream's error into the
/// end of the input, kept to be reported: what came before it was
/// authenticated, nothing after it is used.
struct Authenticated<R> {
    inner: R,
    plain: u64,
    error: Option<std::io::Error>,
}

impl<R: Read> Read for Authenticated<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.error.is_some() {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Ok(n) => {
                self.plain += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Err(e),
            Err(e) => {
                self.error = Some(e);
                Ok(0)
            }
        }
    }
}

/// Decrypts `input` with `identities` into `output` (a new, empty file):
/// a dump's stream rearranged into the plain file, anything else as it is.
///
/// # Errors
/// No identity matches (the error names the file and the keys), the age
/// header is damaged, or nothing usable is in it; a write error.
pub fn decrypt(input: &Path, identities: &Identities, output: &mut File) -> anyhow::Result<Decrypted> {
    let name = input.display();
    let file = File::open(input).with_context(|| format!("{name}: cannot open"))?;
    let decryptor = age::Decryptor::new_buffered(BufReader::with_capacity(1 << 20, file))
        .map_err(|e| anyhow::anyhow!("{name}: not a readable age file: {e}"))?;
    let keys = identities.keys.iter().map(|k| k.as_ref() as &dyn age::Identity);
    let stream = decryptor.decrypt(keys).map_err(|e| match e {
        age::DecryptError::NoMatchingKeys => anyhow::anyhow!(
            "{name}: none of the keys of {} can decrypt it: it was encrypted to other recipients",
            identities.names()
        ),
        other => anyhow::anyhow!("{name}: cannot decrypt its header: {other}"),
    })?;
    let mut plain = Authenticated { inner: stream, plain: 0, error: None };
    let mut head = [0u8; 16];
    let got = read_up_to(&mut plain, &mut head)?;
    let dump = got == head.len() && head == FLAT_SIGNATURE;
    let mut whole = head[..got].chain(&mut plain);
    let cut_in_stream = if dump {
        let (_, end) = rearrange_prefix(&mut whole, output).with_context(|| format!("{name}: its dump"))?;
        end.map(|end| format!("{} at byte {:#x} of the dump's stream", end.reason, end.position))
    } else {
        std::io::copy(&mut whole, output).with_context(|| format!("writing what {name} holds"))?;
        None
    };
    let cut = match plain.error.take() {
        Some(e) => Some(stream_error(input, plain.plain, &e)),
        None => cut_in_stream,
    };
    if dump && cut.is_some() {
        flag_incomplete(output).with_context(|| format!("flagging the dump of {name} incomplete"))?;
    }
    Ok(Decrypted { dump, cut })
}

/// The age stream's error said for the user: the chunk that failed.
fn stream_error(input: &Path, plain: u64, error: &std::io::Error) -> String {
    let chunk = plain / AGE_CHUNK;
    let len = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    match error.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            format!(
                "{} is truncated: it ends after chunk {chunk} ({len} bytes), before its last chunk",
                input.display()
            )
        }
        _ => format!(
            "{}: chunk {chunk} of the encrypted stream (plaintext from byte {:#x}) fails authentication ({error}): \
             the file was altered or cut inside it; nothing from it or after it is used",
            input.display(),
            chunk * AGE_CHUNK
        ),
    }
}

fn read_up_to(input: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// Sets the INCOMPLETE flag of a rearranged kdump file's header (an ELF
/// core's `e_flags` bit 0); nothing when no header was written.
fn flag_incomplete(file: &mut File) -> anyhow::Result<()> {
    let mut head = vec![0u8; vmdump_format::kdump::DISK_DUMP_HEADER_SIZE];
    file.seek(SeekFrom::Start(0))?;
    if read_up_to(file, &mut head)? < head.len() {
        return Ok(());
    }
    if head.starts_with(b"\x7fELF") {
        head[48] |= 1;
        file.seek(SeekFrom::Start(48))?;
        return Ok(file.write_all(&head[48..49])?);
    }
    let Ok(mut header) = DiskDumpHeader::decode(&head) else { return Ok(()) };
    header.status |= DUMP_DH_COMPRESSED_INCOMPLETE;
    file.seek(SeekFrom::Start(0))?;
    Ok(file.write_all(&header.encode())?)
}

/// `input` decrypted into an unlinked file of the temporary directory
/// (mode 0600; gone when closed): the only plaintext of it on disk, for
/// the commands that read a dump (`info`, `verify`, `convert`). The cut,
/// if any, is said on stderr.
///
/// # Errors
/// As [`decrypt`].
pub fn decrypt_to_temporary(input: &Path, identities: &Identities) -> anyhow::Result<File> {
    let mut file = crate::read::temporary_file(input, "decrypted")?;
    let decrypted = decrypt(input, identities, &mut file)?;
    if let Some(cut) = &decrypted.cut {
        eprintln!("vmdump: warning: {cut}; the dump is read as incomplete");
    }
    file.rewind()?;
    Ok(file)
}
