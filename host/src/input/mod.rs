//! The vmcore being dumped: an ELF file (`/proc/vmcore` or a saved copy),
//! its physical page map, its notes and VMCOREINFO, and the page reader
//! that cuts it into batches (mmap windows with a pread fallback).

mod reader;
mod window;

use std::fs::File;
use std::path::{Path, PathBuf};

use vmdump_format::elf::ElfVmcore;
use vmdump_format::phys::PhysMap;
use vmdump_format::vmcoreinfo::VmcoreInfo;
use vmdump_format::{FormatError, ReadAt};

use crate::xlat::{PhysRead, XlatError};

pub use reader::{BatchReader, PageBatch, ReadError, ReadMode};
pub use window::Window;

/// Why the input cannot be dumped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The file cannot be opened.
    #[error("cannot open {path}: {cause}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The file is not a usable ELF vmcore.
    #[error("{path}: {cause}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        cause: FormatError,
    },
    /// VMCOREINFO and the caller disagree on something essential.
    #[error("{path}: {message}")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What.
        message: String,
    },
}

/// An opened, parsed ELF vmcore.
pub struct Vmcore {
    path: PathBuf,
    file: File,
    elf: ElfVmcore,
    phys: PhysMap,
    info: Option<VmcoreInfo>,
    page_size: u64,
}

impl Vmcore {
    /// Opens and parses `path`; every program header is checked against the
    /// file size before any page is read.
    ///
    /// # Errors
    /// [`InputError`] naming the file and, for format errors, the offset.
    pub fn open(path: &Path) -> Result<Self, InputError> {
        let file = File::open(path).map_err(|cause| InputError::Open { path: path.into(), cause })?;
        let format = |cause| InputError::Format { path: path.into(), cause };
        let elf = ElfVmcore::parse(&file).map_err(format)?;
        let info = elf.vmcoreinfo().map_err(format)?;
        let page_size = info.as_ref().and_then(VmcoreInfo::page_size).unwrap_or(4096);
        let phys = PhysMap::new(&elf.loads, page_size).map_err(format)?;
        Ok(Self { path: path.into(), file, elf, phys, info, page_size })
    }

    /// The file name, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Size of the file in bytes.
    pub fn file_size(&self) -> u64 {
        self.file.size()
    }

    /// Program headers and notes.
    pub fn elf(&self) -> &ElfVmcore {
        &self.elf
    }

    /// RAM pages and where they are in the file.
    pub fn phys(&self) -> &PhysMap {
        &self.phys
    }

    /// The parsed VMCOREINFO note, if the vmcore has one.
    pub fn vmcoreinfo(&self) -> Option<&VmcoreInfo> {
        self.info.as_ref()
    }

    /// Page size of the dumped kernel (VMCOREINFO `PAGESIZE`, else 4096).
    pub fn page_size(&self) -> u64 {
        self.page_size
    }
}

/// Physical reads for address translation: page-bounded, zero-filled where
/// the page has no file bytes, an error for a hole.
impl PhysRead for Vmcore {
    fn read_phys(&self, paddr: u64, buf: &mut [u8]) -> Result<(), XlatError> {
        let (ps, len) = (self.page_size, buf.len() as u64);
        let at = paddr % ps;
        if at + len > ps {
            return Err(XlatError::PhysRead {
                paddr,
                len: buf.len(),
                cause: "the read crosses a page".into(),
            });
        }
        let loc = self.phys.locate(paddr / ps).ok_or(XlatError::NotInDump { paddr })?;
        buf.fill(0);
        let lead = u64::from(loc.lead_zero);
        let (lo, hi) = (at.max(lead), (at + len).min(lead + u64::from(loc.file_bytes)));
        if lo < hi {
            let part = &mut buf[(lo - at) as usize..(hi - at) as usize];
            self.file
                .read_exact_at(part, loc.file_offset + (lo - lead))
                .map_err(|e| XlatError::PhysRead { paddr, len: part.len(), cause: Box::new(e) })?;
        }
        Ok(())
    }
}
