//! Read-only mmap windows over the input (the one mapping in the host).
//!
//! A window maps a few MiB of the vmcore; batches of pages borrow its bytes
//! and hand them to the compressors without copying. When the window's last
//! batch is written, the `Arc` drops and the range is unmapped, so resident
//! memory stays bounded by the windows in flight. A page of a window that
//! faults (the file shrank, the kernel refused the page) reads as zero and
//! is recorded by the window's guard (`super::fault`); readers check it and
//! read the pages again from the file.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::sync::Arc;

use memmap2::{Advice, Mmap, MmapOptions};

use super::fault::Guard;

/// A mapped range of the input file.
pub struct Window {
    // Declared before `map`: the range is unregistered before it is unmapped.
    guard: Guard,
    map: Mmap,
    offset: u64,
    file: Arc<File>,
}

impl Window {
    /// Maps `len` bytes of `file` from `offset` (any alignment); with
    /// `populate`, every page is mapped at once (MAP_POPULATE) instead of one
    /// fault per page, which pays when all of them will be read.
    ///
    /// # Errors
    /// The mmap error (e.g. a `/proc/vmcore` whose kernel refuses mmap), or
    /// no guard for the window (too many mapped at once).
    pub fn map(file: &Arc<File>, offset: u64, len: usize, populate: bool) -> io::Result<Self> {
        let mut options = MmapOptions::new();
        options.offset(offset).len(len);
        if populate {
            options.populate();
        }
        // SAFETY: the mapping is read-only and private. If the file shrinks
        // while we read it, or the kernel refuses a page, the access raises
        // SIGBUS: the guard registered below makes that page read as zero
        // and records the fault, which every reader of the window checks
        // (`faulted_within`) before trusting the bytes.
        let map = unsafe { options.map(&**file)? };
        let guard =
            Guard::register(&map).ok_or_else(|| io::Error::other("no guard left for a mapped window"))?;
        // Advice is a hint; a kernel that ignores it changes nothing.
        let _ = map.advise(Advice::Sequential);
        Ok(Self { guard, map, offset, file: Arc::clone(file) })
    }

    /// The file the window maps, to read its pages again after a fault.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Whether a page of `bytes` (a part of [`Window::bytes`]) faulted: its
    /// bytes are zeros, not the file's.
    pub fn faulted_within(&self, bytes: &[u8]) -> bool {
        self.guard.faulted_within(bytes)
    }

    /// Whether any page of the window faulted.
    pub fn faulted(&self) -> bool {
        self.guard.faulted()
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
