//! Where the dump's bytes go: a plain file written at offsets, or the
//! flattened stream of kdump-format.md §2.1 for pipes. Both receive the same
//! sequence of positioned writes, so a flattened stream rearranged by
//! `makedumpfile -R` is byte-identical to the plain file.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

/// A destination for positioned writes.
pub trait Sink: Send {
    /// Writes all of `data` at `offset` of the dump.
    ///
    /// # Errors
    /// The I/O error, or [`SinkError::LimitReached`] when a size limit stops it.
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), SinkError>;

    /// Flushes and closes the stream (the flattened end marker).
    ///
    /// # Errors
    /// The I/O error.
    fn finish(&mut self) -> Result<(), SinkError>;

    /// Bytes written so far (what makedumpfile reports as "Write bytes").
    fn bytes_written(&self) -> u64;
}

/// Why a write failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// The file system is full.
    #[error("no space left on the output device after {written} bytes")]
    NoSpace {
        /// Bytes written before.
        written: u64,
    },
    /// The configured size limit was reached.
    #[error("output size limit of {limit} bytes reached")]
    LimitReached {
        /// The limit.
        limit: u64,
    },
    /// Another I/O error.
    #[error("writing {len} bytes at offset {offset:#x}: {source}")]
    Io {
        /// Where.
        offset: u64,
        /// How much.
        len: usize,
        /// The error.
        source: io::Error,
    },
}

impl SinkError {
    /// Whether the dump can be closed as incomplete (space ran out) rather than failed.
    pub fn is_out_of_space(&self) -> bool {
        matches!(self, Self::NoSpace { .. } | Self::LimitReached { .. })
    }
}

fn io_error(offset: u64, len: usize, source: io::Error, written: u64) -> SinkError {
    if source.raw_os_error() == Some(28) {
        SinkError::NoSpace { written }
    } else {
        SinkError::Io { offset, len, source }
    }
}

/// A regular file written with `pwrite`.
pub struct FileSink {
    file: File,
    written: u64,
    limit: Option<u64>,
}

impl FileSink {
    /// Writes into `file`, refusing to grow it past `limit` bytes when set.
    pub fn new(file: File, limit: Option<u64>) -> Self {
        Self { file, written: 0, limit }
    }
}

impl Sink for FileSink {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), SinkError> {
        if let Some(limit) = self.limit.filter(|&limit| offset + data.len() as u64 > limit) {
            return Err(SinkError::LimitReached { limit });
        }
        self.file.write_all_at(data, offset).map_err(|e| io_error(offset, data.len(), e, self.written))?;
        self.written += data.len() as u64;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.file.sync_data().map_err(|e| io_error(0, 0, e, self.written))
    }

    fn bytes_written(&self) -> u64 {
        self.written
    }
}

/// The flattened format: every positioned write becomes a record.
pub struct FlattenedSink<W: Write + Send> {
    out: W,
    written: u64,
    started: bool,
}

/// Signature at the start of a flattened stream (§2.1), NUL-padded to 16.
const FLAT_SIGNATURE: &[u8; 16] = b"makedumpfile\0\0\0\0";
/// Size of the stream header block.
const FLAT_HEADER_SIZE: usize = 4096;

impl<W: Write + Send> FlattenedSink<W> {
    /// A stream into `out` (stdout for a pipe).
    pub fn new(out: W) -> Self {
        Self { out, written: 0, started: false }
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), SinkError> {
        self.out.write_all(bytes).map_err(|e| io_error(self.written, bytes.len(), e, self.written))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn start(&mut self) -> Result<(), SinkError> {
        let mut header = [0u8; FLAT_HEADER_SIZE];
        header[..16].copy_from_slice(FLAT_SIGNATURE);
        header[16..24].copy_from_slice(&1i64.to_be_bytes()); // type: flat header
        header[24..32].copy_from_slice(&1i64.to_be_bytes()); // version
        self.started = true;
        self.put(&header)
    }

    fn record(&mut self, offset: i64, size: i64) -> Result<(), SinkError> {
        let mut head = [0u8; 16];
        head[..8].copy_from_slice(&offset.to_be_bytes());
        head[8..].copy_from_slice(&size.to_be_bytes());
        self.put(&head)
    }
}

impl<W: Write + Send> Sink for FlattenedSink<W> {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), SinkError> {
        if !self.started {
            self.start()?;
        }
        // A zero-length record would end makedumpfile -R's loop early.
        if data.is_empty() {
            return Ok(());
        }
        self.record(offset as i64, data.len() as i64)?;
        self.put(data)
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        if !self.started {
            self.start()?;
        }
        self.record(-1, -1)?;
        self.out.flush().map_err(|e| io_error(self.written, 0, e, self.written))
    }

    fn bytes_written(&self) -> u64 {
        self.written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattened_records_are_big_endian_and_end_with_minus_one() {
        let mut sink = FlattenedSink::new(Vec::new());
        sink.write_at(0x1000, b"abc").unwrap();
        sink.write_at(5, b"").unwrap();
        sink.finish().unwrap();
        let out = sink.out;
        assert_eq!(&out[..12], b"makedumpfile");
        assert_eq!(out.len(), 4096 + 16 + 3 + 16);
        assert_eq!(&out[4096..4112], &[0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 3]);
        assert_eq!(&out[4112..4115], b"abc");
        assert!(out[4115..].iter().all(|&b| b == 0xff));
    }

    #[test]
    fn the_limit_stops_a_write_that_would_cross_it() {
        let path = std::env::temp_dir().join(format!("vmdump-sink-{}", std::process::id()));
        let mut sink = FileSink::new(File::create(&path).unwrap(), Some(10));
        sink.write_at(0, b"12345").unwrap();
        assert!(sink.write_at(5, b"123456").unwrap_err().is_out_of_space());
        std::fs::remove_file(path).unwrap();
    }
}
