//! The encrypted output: the dump's flattened stream through an age stream.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use age::stream::StreamWriter;
use vmdump_format::sink::{FlattenedSink, Sink, SinkError, io_error};

use super::{CryptError, Recipients};

/// Room kept under a size limit (`-L`) for closing a dump cut short: the
/// descriptor cache and the 2nd bitmap's chunk it completes (at most one
/// chunk, 1 MiB), the header and sub header, each with its record header.
const CLOSING_RESERVE: u64 = (1 << 20) + (64 << 10);

/// Bytes of an age stream's payload chunk, and of the tag each one adds.
const AGE_CHUNK: u64 = 64 << 10;
const AGE_TAG: u64 = 16;
/// An upper bound of the age header with its recipients' stanzas (an
/// ssh-rsa stanza holds a 4096-bit key's wrapped file key: under 700 bytes).
const AGE_HEADER_PER_RECIPIENT: u64 = 1024;

/// A dump written as the age encryption of its flattened stream.
pub struct EncryptedSink<W: Write> {
    flat: FlattenedSink<StreamWriter<W>>,
    /// The size limit of the encrypted file, if any.
    limit: Option<u64>,
    header_bound: u64,
    /// Set once the limit stopped a write: the closing writes then pass.
    closing: bool,
    /// Where the bound of the encrypted size goes once the dump knows its
    /// own ([`Sink::expect_at_most`]): the stream's writer, behind the age
    /// stream, reads it (an object sizes its parts by it).
    size_hint: Option<Arc<AtomicU64>>,
}

impl<W: Write> EncryptedSink<W> {
    /// A stream into `out` to `recipients`, of at most `limit` bytes when
    /// set; the age header and the stream header are written now.
    ///
    /// # Errors
    /// The age library's refusal, or the write error of the headers.
    pub fn new(recipients: &Recipients, out: W, limit: Option<u64>) -> Result<Self, CryptError> {
        let age = recipients.wrap(out)?;
        let flat = FlattenedSink::new(age).map_err(|e| CryptError::Encrypt(e.to_string()))?;
        let header_bound = AGE_HEADER_PER_RECIPIENT * recipients.keys.len() as u64;
        Ok(Self { flat, limit, header_bound, closing: false, size_hint: None })
    }

    /// The same, telling `hint` the encrypted stream's size at most once
    /// the dump knows its own.
    pub fn with_size_hint(self, hint: Arc<AtomicU64>) -> Self {
        Self { size_hint: Some(hint), ..self }
    }

    /// The encrypted size of `plain` bytes of stream, at most.
    fn encrypted_size(&self, plain: u64) -> u64 {
        self.header_bound + plain + plain.div_ceil(AGE_CHUNK).max(1) * AGE_TAG
    }
}

impl<W: Write> Sink for EncryptedSink<W> {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), SinkError> {
        if let Some(limit) = self.limit.filter(|_| !self.closing) {
            let after = self.flat.bytes_written() + (16 + data.len()) as u64 + CLOSING_RESERVE;
            if self.encrypted_size(after) > limit {
                self.closing = true;
                return Err(SinkError::LimitReached { limit });
            }
        }
        self.flat.write_at(offset, data)
    }

    /// The flattened stream adds a 16-byte record header to each write: a
    /// page's bytes come in three at most (its data, its descriptor, its
    /// bit), and the dump's bound counts each page whole (4 KiB or more).
    fn expect_at_most(&mut self, len: u64) {
        if let Some(hint) = &self.size_hint {
            let flattened = len + len / 64 + 4096;
            hint.store(self.encrypted_size(flattened), Ordering::Relaxed);
        }
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        let written = self.flat.bytes_written();
        self.flat.finish()?;
        let age = self.flat.take_inner().expect("the flattened stream was just finished");
        let io = |cause| io_error(written, 0, cause, written);
        age.finish().map_err(io)?.flush().map_err(io)
    }

    fn bytes_written(&self) -> u64 {
        self.flat.bytes_written()
    }
}
