//! The flattened stream of `makedumpfile -F` and its rearrangement
//! (`makedumpfile -R`) (kdump-format.md §2.1, §2.2, §11 point 8).
//!
//! Stream: a 4096-byte header block (`"makedumpfile"` + 4 NULs, then type 1
//! and version 1 as big-endian i64, rest zero), then records of a 16-byte
//! big-endian header {offset i64, size i64} followed by `size` payload bytes
//! that belong at `offset`, in any order, then an end marker of 16 0xFF
//! bytes (offset = size = -1).

use std::io::{self, Read, Seek, SeekFrom, Write};

use crate::FormatError;

/// Size of the stream header block.
pub const FLAT_HEADER_SIZE: usize = 4096;
/// Signature at the start of the stream: "makedumpfile" padded to 16 bytes.
pub const FLAT_SIGNATURE: [u8; 16] = *b"makedumpfile\0\0\0\0";
/// `type` field: TYPE_FLAT_HEADER.
pub const FLAT_TYPE: i64 = 1;
/// `version` field: VERSION_FLAT_HEADER.
pub const FLAT_VERSION: i64 = 1;
/// Size of a record header.
pub const RECORD_HEADER_SIZE: usize = 16;
/// Chunk used to copy payloads.
const COPY_CHUNK: usize = 64 << 10;

/// The 4096-byte stream header block.
pub fn stream_header() -> Vec<u8> {
    let mut b = vec![0u8; FLAT_HEADER_SIZE];
    b[..16].copy_from_slice(&FLAT_SIGNATURE);
    b[16..24].copy_from_slice(&FLAT_TYPE.to_be_bytes());
    b[24..32].copy_from_slice(&FLAT_VERSION.to_be_bytes());
    b
}

/// A record header: `size` payload bytes belong at `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// Destination offset in the rearranged file.
    pub offset: i64,
    /// Payload length.
    pub size: i64,
}

impl RecordHeader {
    /// The end marker (offset = size = -1).
    pub const END: RecordHeader = RecordHeader { offset: -1, size: -1 };

    /// Big-endian encoding.
    pub fn encode(&self) -> [u8; RECORD_HEADER_SIZE] {
        let mut b = [0u8; RECORD_HEADER_SIZE];
        b[..8].copy_from_slice(&self.offset.to_be_bytes());
        b[8..].copy_from_slice(&self.size.to_be_bytes());
        b
    }

    /// Big-endian decoding.
    pub fn decode(b: &[u8; RECORD_HEADER_SIZE]) -> Self {
        RecordHeader {
            offset: i64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
            size: i64::from_be_bytes(b[8..].try_into().expect("8 bytes")),
        }
    }

    /// True for the end marker.
    pub fn is_end(&self) -> bool {
        *self == Self::END
    }
}

/// Writes a flattened stream: positioned writes become records.
#[derive(Debug)]
pub struct FlatWriter<W: Write> {
    inner: W,
}

impl<W: Write> FlatWriter<W> {
    /// Writes the stream header and returns the writer.
    ///
    /// # Errors
    ///
    /// Any write error.
    pub fn new(mut inner: W) -> io::Result<Self> {
        inner.write_all(&stream_header())?;
        Ok(FlatWriter { inner })
    }

    /// Emits `data` as a record for `offset`. Empty writes emit nothing
    /// (a zero-length record would end `-R` early, §2.2).
    ///
    /// # Errors
    ///
    /// Any write error; `InvalidInput` if `offset` or the length exceed i64.
    pub fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let too_big = |_| io::Error::new(io::ErrorKind::InvalidInput, "offset or size beyond i64");
        let header = RecordHeader {
            offset: i64::try_from(offset).map_err(too_big)?,
            size: i64::try_from(data.len()).map_err(too_big)?,
        };
        self.inner.write_all(&header.encode())?;
        self.inner.write_all(data)
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Writes the end marker and returns the inner writer.
    ///
    /// # Errors
    ///
    /// Any write error.
    pub fn finish(mut self) -> io::Result<W> {
        self.inner.write_all(&RecordHeader::END.encode())?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

/// What [`rearrange`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RearrangeStats {
    /// Records copied.
    pub records: u64,
    /// Payload bytes copied.
    pub bytes: u64,
    /// Highest `offset + size` written (the rearranged file's length).
    pub end: u64,
}

fn bad(position: u64, reason: impl Into<String>) -> FormatError {
    FormatError::BadFlattened { position, reason: reason.into() }
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` on a clean EOF before any byte.
fn read_full(input: &mut impl Read, buf: &mut [u8], position: u64) -> Result<bool, FormatError> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(bad(position, format!("stream ends after {got} of {} bytes", buf.len()))),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FormatError::io(position + got as u64, (buf.len() - got) as u64, e)),
        }
    }
    Ok(true)
}

fn check_stream_header(input: &mut impl Read) -> Result<(), FormatError> {
    let mut header = vec![0u8; FLAT_HEADER_SIZE];
    if !read_full(input, &mut header, 0)? {
        return Err(bad(0, "empty input: no flattened header"));
    }
    // The signature is compared as a C string (§2.2).
    let sig_len = header[..16].iter().position(|&b| b == 0).unwrap_or(16);
    if &header[..sig_len] != b"makedumpfile" {
        let found = String::from_utf8_lossy(&header[..sig_len]).into_owned();
        return Err(bad(0, format!("signature {found:?} is not \"makedumpfile\"")));
    }
    let kind = i64::from_be_bytes(header[16..24].try_into().expect("8 bytes"));
    if kind != FLAT_TYPE {
        return Err(bad(16, format!("header type {kind} is not 1 (flat header)")));
    }
    Ok(())
}

/// Copies one record's payload from the stream to its offset in `output`.
fn copy_payload(
    input: &mut impl Read,
    output: &mut (impl Write + Seek),
    record: RecordHeader,
    position: u64,
    buf: &mut [u8],
) -> Result<(), FormatError> {
    let offset = record.offset as u64;
    output.seek(SeekFrom::Start(offset)).map_err(|e| FormatError::io(offset, record.size as u64, e))?;
    let mut done = 0u64;
    while done < record.size as u64 {
        let n = (record.size as u64 - done).min(buf.len() as u64) as usize;
        let at = position + done;
        if !read_full(input, &mut buf[..n], at)? {
            return Err(bad(
                at,
                format!(
                    "stream ends inside the payload of record at {position:#x} ({done:#x} of {:#x} bytes)",
                    record.size
                ),
            ));
        }
        output.write_all(&buf[..n]).map_err(|e| FormatError::io(offset + done, n as u64, e))?;
        done += n as u64;
    }
    Ok(())
}

/// Turns a flattened stream into the normal file (`makedumpfile -R`).
///
/// # Errors
///
/// [`FormatError::BadFlattened`] naming the stream position for a bad
/// signature or type, a zero-length or negative record, a stream that ends
/// inside a record or before the end marker; [`FormatError::Io`] for read
/// or write failures (write errors name the output offset).
pub fn rearrange(
    input: &mut impl Read,
    output: &mut (impl Write + Seek),
) -> Result<RearrangeStats, FormatError> {
    check_stream_header(input)?;
    let mut position = FLAT_HEADER_SIZE as u64;
    let mut stats = RearrangeStats::default();
    let mut buf = vec![0u8; COPY_CHUNK];
    loop {
        let mut raw = [0u8; RECORD_HEADER_SIZE];
        if !read_full(input, &mut raw, position)? {
            return Err(bad(position, "stream ends without the end marker (offset = size = -1)"));
        }
        let record = RecordHeader::decode(&raw);
        if record.is_end() {
            break;
        }
        if record.size == 0 {
            return Err(bad(position, format!("zero-length record for offset {:#x}", record.offset)));
        }
        let end = record.offset.checked_add(record.size).filter(|_| record.offset >= 0 && record.size > 0);
        let Some(end) = end else {
            return Err(bad(
                position,
                format!("invalid record header: offset {}, size {}", record.offset, record.size),
            ));
        };
        position += RECORD_HEADER_SIZE as u64;
        copy_payload(input, output, record, position, &mut buf)?;
        position += record.size as u64;
        stats.records += 1;
        stats.bytes += record.size as u64;
        stats.end = stats.end.max(end as u64);
    }
    output.flush().map_err(|e| FormatError::io(stats.end, 0, e))?;
    Ok(stats)
}

/// Where a stream given to [`rearrange_prefix`] stopped short, if it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixEnd {
    /// Stream position of the first byte not used.
    pub position: u64,
    /// What was there: a record cut short, or no end marker.
    pub reason: String,
}

/// The most a record of [`rearrange_prefix`] may hold (a batch's data, a
/// bitmap chunk or the notes are far smaller).
const MAX_RECORD: i64 = 1 << 30;

/// Turns the whole records of a stream that may stop short (a dump cut by
/// a signal, a full disk, a truncated or altered copy) into the normal
/// file: a record is written only once all of it is read, so that no
/// structure is left half-overwritten. Returns what was copied and, when
/// the stream ends before its end marker, where and why.
///
/// Readable as a dump when cut because of the writer's order (kdump-format.md
/// §2.1): a page's data comes before its descriptor, and a descriptor
/// before its bit of the 2nd bitmap, so a prefix of the records never
/// points at what it does not hold.
///
/// # Errors
/// A bad stream header, an invalid record header (the stream is not cut
/// but wrong), or a read or write failure.
pub fn rearrange_prefix(
    input: &mut impl Read,
    output: &mut (impl Write + Seek),
) -> Result<(RearrangeStats, Option<PrefixEnd>), FormatError> {
    check_stream_header(input)?;
    let mut position = FLAT_HEADER_SIZE as u64;
    let mut stats = RearrangeStats::default();
    let mut payload = Vec::new();
    let cut = |position, reason: &str| Some(PrefixEnd { position, reason: reason.into() });
    let end = loop {
        let mut raw = [0u8; RECORD_HEADER_SIZE];
        match read_full(input, &mut raw, position) {
            Ok(true) => {}
            Ok(false) => break cut(position, "the stream ends without the end marker"),
            Err(FormatError::BadFlattened { .. }) => {
                break cut(position, "the stream ends inside a record header");
            }
            Err(e) => return Err(e),
        }
        let record = RecordHeader::decode(&raw);
        if record.is_end() {
            break None;
        }
        if record.offset < 0
            || record.size <= 0
            || record.size > MAX_RECORD
            || record.offset.checked_add(record.size).is_none()
        {
            return Err(bad(
                position,
                format!("invalid record header: offset {}, size {}", record.offset, record.size),
            ));
        }
        position += RECORD_HEADER_SIZE as u64;
        payload.resize(record.size as usize, 0);
        match read_full(input, &mut payload, position) {
            Ok(true) => {}
            Ok(false) | Err(FormatError::BadFlattened { .. }) => {
                break cut(position - RECORD_HEADER_SIZE as u64, "the stream ends inside a record");
            }
            Err(e) => return Err(e),
        }
        let offset = record.offset as u64;
        output.seek(SeekFrom::Start(offset)).map_err(|e| FormatError::io(offset, record.size as u64, e))?;
        output.write_all(&payload).map_err(|e| FormatError::io(offset, record.size as u64, e))?;
        position += record.size as u64;
        stats.records += 1;
        stats.bytes += record.size as u64;
        stats.end = stats.end.max(offset + record.size as u64);
    };
    output.flush().map_err(|e| FormatError::io(stats.end, 0, e))?;
    Ok((stats, end))
}

#[cfg(test)]
mod tests;
