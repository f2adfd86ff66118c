//! One bitmap of a kdump-compressed file, read on demand (kdump-format.md
//! §1.7, §1.14): bit `p & 7` of byte `p >> 3`, LSB first. The 2nd bitmap
//! also gets a prefix count table with one entry per 4096-pfn bucket, so
//! that a descriptor index costs one read of at most 512 bytes.

use crate::{FormatError, ReadAt};

/// Pfns per bucket of the prefix count table (BITMAP_SECT_LEN).
pub const BUCKET_PFNS: u64 = 4096;
const BUCKET_BYTES: usize = (BUCKET_PFNS / 8) as usize;
/// Bytes read at once when scanning a whole bitmap.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// Where a bitmap is and how many pfns it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BitmapRegion {
    /// File offset of its first byte.
    pub offset: u64,
    /// Number of pfns (bits) that count: `max_mapnr`.
    pub bits: u64,
    /// Name for messages ("1st bitmap").
    pub what: &'static str,
}

fn io_err(offset: u64, len: usize, cause: std::io::Error) -> FormatError {
    FormatError::io(offset, len as u64, cause)
}

/// Popcount of the first `bits` bits of `bytes` (LSB first).
pub fn count_bits(bytes: &[u8], bits: u64) -> u64 {
    let full = (bits / 8) as usize;
    let mut n: u64 = bytes[..full].iter().map(|b| u64::from(b.count_ones())).sum();
    let rest = (bits % 8) as u32;
    if rest != 0 {
        n += u64::from((bytes[full] & ((1u8 << rest) - 1)).count_ones());
    }
    n
}

impl BitmapRegion {
    /// Whether bit `pfn` is set; `false` for a pfn at or above `bits`.
    ///
    /// # Errors
    /// [`FormatError::Io`] if the byte cannot be read.
    pub fn bit<R: ReadAt + ?Sized>(&self, src: &R, pfn: u64) -> Result<bool, FormatError> {
        if pfn >= self.bits {
            return Ok(false);
        }
        let mut b = [0u8; 1];
        let at = self.offset + pfn / 8;
        src.read_exact_at(&mut b, at).map_err(|e| io_err(at, 1, e))?;
        Ok(b[0] & (1 << (pfn % 8)) != 0)
    }

    /// Reads the bytes holding bits `[first_byte * 8, ...)` into `buf`,
    /// as many as the bitmap has (returns the count read).
    pub fn read_bytes<R: ReadAt + ?Sized>(
        &self,
        src: &R,
        first_byte: u64,
        buf: &mut [u8],
    ) -> Result<usize, FormatError> {
        let total = self.bits.div_ceil(8);
        let n = (total.saturating_sub(first_byte)).min(buf.len() as u64) as usize;
        let at = self.offset + first_byte;
        src.read_exact_at(&mut buf[..n], at).map_err(|e| io_err(at, n, e))?;
        Ok(n)
    }

    /// Set bits strictly below `pfn` within the bucket holding `pfn`.
    fn count_in_bucket<R: ReadAt + ?Sized>(&self, src: &R, pfn: u64) -> Result<u64, FormatError> {
        let start = pfn - pfn % BUCKET_PFNS;
        let mut buf = [0u8; BUCKET_BYTES];
        let below = pfn - start;
        let n = self.read_bytes(src, start / 8, &mut buf[..below.div_ceil(8) as usize])?;
        Ok(count_bits(&buf[..n], below))
    }
}

/// Prefix popcounts of the 2nd bitmap: `prefix[k]` = set bits in pfns
/// `[0, 4096 k)`; the last entry is the total. Memory: one u64 per bucket.
#[derive(Debug, Clone)]
pub struct PrefixTable {
    region: BitmapRegion,
    prefix: Vec<u64>,
}

impl PrefixTable {
    /// Scans the bitmap in [`CHUNK_BYTES`] chunks.
    ///
    /// # Errors
    /// [`FormatError::Io`] if a chunk cannot be read.
    pub fn build<R: ReadAt + ?Sized>(src: &R, region: BitmapRegion) -> Result<Self, FormatError> {
        let buckets = region.bits.div_ceil(BUCKET_PFNS);
        let mut prefix = Vec::with_capacity(buckets as usize + 1);
        prefix.push(0u64);
        let mut buf = vec![0u8; CHUNK_BYTES];
        let mut byte = 0u64;
        let mut total = 0u64;
        while byte < region.bits.div_ceil(8) {
            let n = region.read_bytes(src, byte, &mut buf)?;
            for bucket in buf[..n].chunks(BUCKET_BYTES) {
                let first_pfn = byte * 8;
                let bits = (region.bits - first_pfn).min(BUCKET_PFNS);
                total += count_bits(bucket, bits);
                prefix.push(total);
                byte += bucket.len() as u64;
            }
        }
        Ok(PrefixTable { region, prefix })
    }

    /// Set bits in the whole bitmap.
    pub fn total(&self) -> u64 {
        *self.prefix.last().expect("at least one entry")
    }

    /// Set bits strictly below `pfn` (`pfn < bits`).
    ///
    /// # Errors
    /// [`FormatError::Io`] if the bucket cannot be read.
    pub fn rank<R: ReadAt + ?Sized>(&self, src: &R, pfn: u64) -> Result<u64, FormatError> {
        let bucket = (pfn / BUCKET_PFNS) as usize;
        Ok(self.prefix[bucket] + self.region.count_in_bucket(src, pfn)?)
    }
}

/// Every set bit of a bitmap in order, with its rank (number of set bits
/// below it), reading [`CHUNK_BYTES`] at a time.
pub struct SetBits<'a, R: ReadAt + ?Sized> {
    src: &'a R,
    region: BitmapRegion,
    buf: Vec<u8>,
    /// Byte index in the bitmap of `buf[0]`.
    buf_byte: u64,
    /// Bytes valid in `buf`.
    buf_len: usize,
    /// Next pfn to look at.
    next: u64,
    rank: u64,
    failed: bool,
}

impl<'a, R: ReadAt + ?Sized> SetBits<'a, R> {
    /// Starts at pfn 0.
    pub fn new(src: &'a R, region: BitmapRegion) -> Self {
        SetBits {
            src,
            region,
            buf: vec![0u8; CHUNK_BYTES],
            buf_byte: 0,
            buf_len: 0,
            next: 0,
            rank: 0,
            failed: false,
        }
    }

    /// Starts at `pfn` instead, whose rank (set bits below it) is `rank`.
    pub fn starting_at(mut self, pfn: u64, rank: u64) -> Self {
        (self.next, self.rank) = (pfn, rank);
        self
    }

    fn byte_of(&mut self, pfn: u64) -> Result<u8, FormatError> {
        let byte = pfn / 8;
        if byte < self.buf_byte || byte >= self.buf_byte + self.buf_len as u64 {
            self.buf_byte = byte;
            self.buf_len = self.region.read_bytes(self.src, byte, &mut self.buf)?;
        }
        Ok(self.buf[(byte - self.buf_byte) as usize])
    }
}

impl<R: ReadAt + ?Sized> Iterator for SetBits<'_, R> {
    /// `(pfn, rank)`.
    type Item = Result<(u64, u64), FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.failed && self.next < self.region.bits {
            let pfn = self.next;
            let byte = match self.byte_of(pfn) {
                Ok(b) => b,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            };
            if pfn.is_multiple_of(8) && byte == 0 {
                self.next += 8;
                continue;
            }
            self.next += 1;
            if byte & (1 << (pfn % 8)) != 0 {
                self.rank += 1;
                return Some(Ok((pfn, self.rank - 1)));
            }
        }
        None
    }
}

/// Random bit lookups that mostly move forward, reading [`CHUNK_BYTES`] at a time.
pub struct BitCursor<'a, R: ReadAt + ?Sized> {
    src: &'a R,
    region: BitmapRegion,
    buf: Vec<u8>,
    buf_byte: u64,
    buf_len: usize,
}

impl<'a, R: ReadAt + ?Sized> BitCursor<'a, R> {
    /// A cursor over `region` of `src`.
    pub fn new(src: &'a R, region: BitmapRegion) -> Self {
        BitCursor { src, region, buf: vec![0u8; CHUNK_BYTES], buf_byte: 0, buf_len: 0 }
    }

    /// Whether bit `pfn` is set; `false` at or beyond the region's bits.
    ///
    /// # Errors
    /// [`FormatError::Io`] if a chunk cannot be read.
    pub fn bit(&mut self, pfn: u64) -> Result<bool, FormatError> {
        if pfn >= self.region.bits {
            return Ok(false);
        }
        let byte = pfn / 8;
        if byte < self.buf_byte || byte >= self.buf_byte + self.buf_len as u64 {
            self.buf_byte = byte;
            self.buf_len = self.region.read_bytes(self.src, byte, &mut self.buf)?;
        }
        Ok(self.buf[(byte - self.buf_byte) as usize] & (1 << (pfn % 8)) != 0)
    }
}
