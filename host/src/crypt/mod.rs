//! Confidential dumps (docs/encryption.md): the output encrypted to public
//! keys as it is written, in the age format, so that the machine that
//! crashes holds no secret and a copied dump reads only with a private key.
//!
//! What is encrypted is the flattened stream (kdump-format.md §2.1) of the
//! dump, never the plain file: the plain writer goes back to rewrite its
//! header and bitmaps, which a stream of authenticated chunks cannot, and a
//! stream goes through a pipe (ssh) as well as to a file. `vmdump decrypt`
//! (or `age -d | makedumpfile -R`) gives the plain file back.

mod decrypt;
mod sink;

pub use decrypt::{
    Decrypted, Identities, decrypt, decrypt_to_temporary, is_encrypted, refuse_encrypted, starts_encrypted,
};
pub use sink::EncryptedSink;

use std::io::Write;
use std::str::FromStr;

/// The public keys a dump is encrypted to: age X25519 (`age1…`), and
/// OpenSSH `ssh-ed25519` and `ssh-rsa` public keys.
pub struct Recipients {
    keys: Vec<Box<dyn age::Recipient + Send + Sync>>,
}

impl std::fmt::Debug for Recipients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Recipients({})", self.keys.len())
    }
}

/// What went wrong with a key or with the age format.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CryptError {
    /// A recipient that is no public key vmdump knows.
    #[error(
        "recipient {recipient:?} is not an age X25519 key (age1...) nor an ssh-ed25519 or ssh-rsa public key"
    )]
    BadRecipient {
        /// The text given, cut short.
        recipient: String,
    },
    /// The age library refused to encrypt.
    #[error("encrypting: {0}")]
    Encrypt(String),
}

impl Recipients {
    /// Parses each recipient (its text as in an authorized_keys or age
    /// recipients file; an SSH key's comment may follow it).
    ///
    /// # Errors
    /// [`CryptError::BadRecipient`] naming the first that is none.
    pub fn parse(texts: &[String]) -> Result<Self, CryptError> {
        let keys = texts.iter().map(|text| parse_recipient(text.trim())).collect::<Result<_, _>>()?;
        Ok(Self { keys })
    }

    /// None: what is written is not encrypted.
    pub fn none() -> Self {
        Self { keys: Vec::new() }
    }

    /// No recipient: the output is not encrypted.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// An age stream to the recipients into `out`: its header is written now.
    ///
    /// # Errors
    /// The write error of the header, or the age library's refusal.
    pub fn wrap<W: Write>(&self, out: W) -> Result<age::stream::StreamWriter<W>, CryptError> {
        let keys = self.keys.iter().map(|key| key.as_ref() as &dyn age::Recipient);
        let encryptor =
            age::Encryptor::with_recipients(keys).map_err(|e| CryptError::Encrypt(e.to_string()))?;
        encryptor.wrap_output(out).map_err(|e| CryptError::Encrypt(e.to_string()))
    }

    /// `bytes` encrypted whole (a kernel log, a triage beside the dump).
    ///
    /// # Errors
    /// As [`Recipients::wrap`].
    pub fn encrypt(&self, bytes: &[u8]) -> Result<Vec<u8>, CryptError> {
        let mut stream = self.wrap(Vec::with_capacity(bytes.len() + 1024))?;
        let io = |e: std::io::Error| CryptError::Encrypt(e.to_string());
        stream.write_all(bytes).map_err(io)?;
        stream.finish().map_err(io)
    }
}

fn parse_recipient(text: &str) -> Result<Box<dyn age::Recipient + Send + Sync>, CryptError> {
    let bad = || CryptError::BadRecipient { recipient: text.chars().take(80).collect() };
    if text.starts_with("age1") {
        return age::x25519::Recipient::from_str(text).map(|r| Box::new(r) as _).map_err(|_| bad());
    }
    if text.starts_with("ssh-ed25519 ") || text.starts_with("ssh-rsa ") {
        return age::ssh::Recipient::from_str(text).map(|r| Box::new(r) as _).map_err(|_| bad());
    }
    Err(bad())
}

#[cfg(test)]
mod tests;
