//! Where the dump's bytes go: a plain file written at offsets, or the
//! flattened stream of kdump-format.md §2.1 for pipes. Both receive the same
//! sequence of positioned writes, so a flattened stream rearranged by
//! `makedumpfile -R` is byte-identical to the plain file.

use std::fs::File;
use std::io::{self, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;

use crate::flat::FlatWriter;

/// A destination for positioned writes.
pub trait Sink {
    /// Writes all of `data` at `offset` of the dump.
    ///
    /// # Errors
    /// The I/O error, or [`SinkError::LimitReached`] when a size limit stops it.
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), SinkError>;

    /// Says that the bytes of `range` are final: no later write touches
    /// them. A sink that gathers bytes before it sends them (an object
    /// store's parts) sends them then; others need not know. Bytes never
    /// written (holes, read as zeros) may be settled too.
    ///
    /// # Errors
    /// The sink's error in sending them.
    fn settle(&mut self, range: Range<u64>) -> Result<(), SinkError> {
        let _ = range;
        Ok(())
    }

    /// Says that the dump will not be longer than `len` bytes (known once
    /// the first pass has counted the pages), so that a sink can lay out
    /// what is still to come.
    fn expect_at_most(&mut self, len: u64) {
        let _ = len;
    }

    /// Waits until what was written is on disk, when the sink was asked to
    /// (a file with `--sync`); nothing otherwise.
    ///
    /// # Errors
    /// The I/O error.
    fn sync_data(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    /// Flushes and closes the stream (the flattened end marker), after
    /// [`Sink::sync_data`].
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
    #[error("writing {len} bytes at offset {offset:#x}: {cause}")]
    Io {
        /// Where.
        offset: u64,
        /// How much.
        len: usize,
        /// The error.
        cause: io::Error,
    },
}

impl SinkError {
    /// Whether the dump can be closed as incomplete (space ran out) rather than failed.
    pub fn is_out_of_space(&self) -> bool {
        matches!(self, Self::NoSpace { .. } | Self::LimitReached { .. })
    }
}

/// The error of a write of `len` bytes at `offset` that failed with
/// `cause` after `written` bytes: [`SinkError::NoSpace`] for ENOSPC.
pub fn io_error(offset: u64, len: usize, cause: io::Error, written: u64) -> SinkError {
    if cause.raw_os_error() == Some(28) {
        SinkError::NoSpace { written }
    } else {
        SinkError::Io { offset, len, cause }
    }
}

/// A regular file written with `pwrite`.
pub struct FileSink {
    file: File,
    written: u64,
    limit: Option<u64>,
    sync: bool,
}

impl FileSink {
    /// Writes into `file`, refusing to grow it past `limit` bytes when set.
    /// Like makedumpfile, it leaves flushing to disk to the system (kdump
    /// scripts sync before rebooting) unless [`FileSink::sync_on_finish`].
    pub fn new(file: File, limit: Option<u64>) -> Self {
        Self { file, written: 0, limit, sync: false }
    }

    /// Makes `finish` wait until the data is on disk (`fdatasync`).
    pub fn sync_on_finish(mut self, sync: bool) -> Self {
        self.sync = sync;
        self
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

    fn sync_data(&mut self) -> Result<(), SinkError> {
        if self.sync {
            self.file.sync_data().map_err(|e| io_error(0, 0, e, self.written))?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.sync_data()
    }

    fn bytes_written(&self) -> u64 {
        self.written
    }
}

/// The flattened format (kdump-format.md §2.1): every positioned write
/// becomes a record of [`crate::flat`].
pub struct FlattenedSink<W: Write> {
    out: Option<FlatWriter<CountingWriter<W>>>,
    /// Bytes of the whole stream, once finished.
    total: u64,
    /// The inner writer, once finished (for a writer that must be closed
    /// in its own way: an encrypted stream's last chunk).
    finished: Option<W>,
}

/// Counts the bytes that pass through.
struct CountingWriter<W> {
    inner: W,
    count: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> FlattenedSink<W> {
    /// A stream into `out` (stdout for a pipe); writes the stream header.
    ///
    /// # Errors
    /// The write error of the header.
    pub fn new(out: W) -> Result<Self, SinkError> {
        let writer =
            FlatWriter::new(CountingWriter { inner: out, count: 0 }).map_err(|e| io_error(0, 0, e, 0))?;
        Ok(Self { out: Some(writer), total: 0, finished: None })
    }

    /// The inner writer, once the stream is finished (`None` before, or
    /// when taken already).
    pub fn take_inner(&mut self) -> Option<W> {
        self.finished.take()
    }

    fn writer(&mut self) -> &mut FlatWriter<CountingWriter<W>> {
        self.out.as_mut().expect("stream used after finish")
    }
}

impl<W: Write> Sink for FlattenedSink<W> {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), SinkError> {
        let written = self.bytes_written();
        self.writer().write_at(offset, data).map_err(|e| io_error(offset, data.len(), e, written))
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        let written = self.bytes_written();
        if let Some(writer) = self.out.take() {
            let counted = writer.finish().map_err(|e| io_error(written, 0, e, written))?;
            self.total = counted.count;
            self.finished = Some(counted.inner);
        }
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.out.as_ref().map_or(self.total, |w| w.get_ref().count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattened_records_are_counted_and_rearrange_to_the_plain_bytes() {
        let mut stream = Vec::new();
        let mut sink = FlattenedSink::new(&mut stream).unwrap();
        sink.write_at(0x1000, b"abc").unwrap();
        sink.write_at(5, b"").unwrap();
        sink.write_at(2, b"xy").unwrap();
        sink.finish().unwrap();
        assert_eq!(sink.bytes_written(), (4096 + 16 + 3 + 16 + 2 + 16) as u64);
        let mut plain = std::io::Cursor::new(Vec::new());
        crate::flat::rearrange(&mut stream.as_slice(), &mut plain).unwrap();
        let plain = plain.into_inner();
        assert_eq!((&plain[2..4], &plain[0x1000..]), (&b"xy"[..], &b"abc"[..]));
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
