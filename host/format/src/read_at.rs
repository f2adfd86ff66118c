//! Positioned reads: the one input abstraction of the format code.
//!
//! Every parser in this crate reads through [`ReadAt`], so the same code
//! works over a `pread`-backed [`std::fs::File`] and over bytes in memory
//! (tests, or an mmap window provided by the host).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// A random-access, read-only byte source of known size.
pub trait ReadAt {
    /// Total size in bytes. Parsers check every offset and length against it
    /// before reading or allocating.
    fn size(&self) -> u64;

    /// Fills `buf` with the bytes at `offset`.
    ///
    /// # Errors
    ///
    /// `UnexpectedEof` when `offset + buf.len()` exceeds [`ReadAt::size`],
    /// or any I/O error of the underlying source.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
}

impl ReadAt for File {
    /// The length from `metadata()`; 0 if the metadata cannot be read, so
    /// that every later read is reported as a truncated file.
    fn size(&self) -> u64 {
        self.metadata().map(|m| m.len()).unwrap_or(0)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }
}

impl ReadAt for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|start| Some(start..start.checked_add(buf.len())?))
            .and_then(|range| self.get(range))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "read of {:#x} bytes at {offset:#x} beyond end of buffer ({:#x} bytes)",
                        buf.len(),
                        self.len()
                    ),
                )
            })?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl ReadAt for Vec<u8> {
    fn size(&self) -> u64 {
        self.as_slice().size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn size(&self) -> u64 {
        (**self).size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for Box<T> {
    fn size(&self) -> u64 {
        (**self).size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_reads_in_range_and_refuses_out_of_range() {
        let data: Vec<u8> = (0..16).collect();
        let mut buf = [0u8; 4];
        data.read_exact_at(&mut buf, 12).unwrap();
        assert_eq!(buf, [12, 13, 14, 15]);
        let err = data.read_exact_at(&mut buf, 13).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        let err = data[..].read_exact_at(&mut buf, u64::MAX).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(ReadAt::size(&&data[..]), 16);
    }

    #[test]
    fn file_reads_with_pread() {
        let path = std::env::temp_dir().join(format!("vmdump-format-readat-{}", std::process::id()));
        std::fs::write(&path, b"hello world").unwrap();
        let file = File::open(&path).unwrap();
        let mut buf = [0u8; 5];
        ReadAt::read_exact_at(&file, &mut buf, 6).unwrap();
        assert_eq!(&buf, b"world");
        assert_eq!(ReadAt::size(&file), 11);
        assert!(ReadAt::read_exact_at(&file, &mut buf, 7).is_err());
        std::fs::remove_file(&path).unwrap();
    }
}
