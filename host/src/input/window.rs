//! Read-only mmap windows over the input (the one mapping in the host).
//!
//! A window maps a few MiB of the vmcore; batches of pages borrow its bytes
//! and hand them to the compressors without copying. When the window's last
//! batch is written, the `Arc` drops and the range is unmapped, so resident
//! memory stays bounded by the windows in flight.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;

use memmap2::{Advice, Mmap, MmapOptions};

/// A mapped range of the input file.
pub struct Window {
    map: Mmap,
    offset: u64,
}

impl Window {
    /// Maps `len` bytes of `file` from `offset` (any alignment); with
    /// `populate`, every page is mapped at once (MAP_POPULATE) instead of one
    /// fault per page, which pays when all of them will be read.
    ///
    /// # Errors
    /// The mmap error (e.g. a `/proc/vmcore` whose kernel refuses mmap).
    pub fn map(file: &File, offset: u64, len: usize, populate: bool) -> io::Result<Self> {
        let mut options = MmapOptions::new();
        options.offset(offset).len(len);
        if populate {
            options.populate();
        }
        // SAFETY: the mapping is read-only and private. The vmcore must not be
        // truncated while we read it (a truncated mapping raises SIGBUS); the
        // input is checked against the program headers before any window is
        // mapped, and /proc/vmcore cannot shrink.
        let map = unsafe { options.map(file)? };
        // Advice is a hint; a kernel that ignores it changes nothing.
        let _ = map.advise(Advice::Sequential);
        Ok(Self { map, offset })
    }

    /// File offset of the first byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }
}
