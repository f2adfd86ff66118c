//! The vmcore being dumped: an ELF file (`/proc/vmcore` or a saved copy),
//! its physical page map, its notes and VMCOREINFO, and the page reader
//! that cuts it into batches (mmap windows with a pread fallback).

mod reader;
mod window;

use std::fs::File;
use std::path::{Path, PathBuf};

use vmdump_format::elf::ElfVmcore;
use vmdump_format::kdump::Utsname;
use vmdump_format::phys::PhysMap;
use vmdump_format::vmcoreinfo::VmcoreInfo;
use vmdump_format::{FormatError, ReadAt};

use crate::xlat::{KernelMemory, PhysRead, SectionTable, XlatError};

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
    utsname: Option<Utsname>,
}

/// What the dumped kernel says of itself, read through its page tables
/// ([`Vmcore::kernel_facts`]); each part `Ok(None)` without the VMCOREINFO
/// keys it needs.
#[derive(Debug)]
pub struct KernelFacts {
    /// One past the last pfn of the last present memory section (§5.2).
    pub memory_end: Result<Option<u64>, XlatError>,
    /// `init_uts_ns.name`, as the dump header carries it (§1.2).
    pub utsname: Result<Option<Utsname>, XlatError>,
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
        Ok(Self { path: path.into(), file, elf, phys, info, page_size, utsname: None })
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

    /// Limits RAM to pfns below `limit` (the kernel's last memory section).
    pub fn limit_pfns(&mut self, limit: u64) {
        if limit < self.phys.max_pfn() {
            self.phys = self.phys.truncated(limit);
        }
    }

    /// The kernel's utsname, once [`Vmcore::adopt`] took it.
    pub fn utsname(&self) -> Option<&Utsname> {
        self.utsname.as_ref()
    }

    /// Reads what the kernel says of itself, opening its page tables once:
    /// where its memory ends (one past the last pfn of its last present
    /// memory section, kdump-format.md §5.2; makedumpfile reduces
    /// max_mapnr to it, which drops segments the kernel does not manage,
    /// such as the BIOS ROM of a QEMU dump), and its `init_uts_ns.name`
    /// (the dump header's utsname, §1.2).
    ///
    /// # Errors
    /// [`XlatError`] when the page tables cannot be opened.
    pub fn kernel_facts(&self) -> Result<KernelFacts, XlatError> {
        let nothing = KernelFacts { memory_end: Ok(None), utsname: Ok(None) };
        let Some(info) = self.info.as_ref() else { return Ok(nothing) };
        let has_sections = info.symbol("mem_section").is_some();
        if !has_sections && uts_address(info).is_none() {
            return Ok(nothing);
        }
        let memory = KernelMemory::open(self, info, &self.elf.loads)?;
        let memory_end = match has_sections {
            true => SectionTable::read(&memory, info, self.phys.max_pfn()).map(|s| Some(s.present_pfn_end())),
            false => Ok(None),
        };
        Ok(KernelFacts { memory_end, utsname: read_utsname(&memory, info) })
    }

    /// Takes what [`Vmcore::kernel_facts`] found: limits RAM to the
    /// kernel's memory and keeps its utsname, where each could be read.
    pub fn adopt(&mut self, facts: &KernelFacts) {
        if let Ok(Some(end)) = facts.memory_end {
            self.limit_pfns(end);
        }
        if let Ok(Some(utsname)) = &facts.utsname {
            self.utsname = Some(*utsname);
        }
    }
}

/// Where `init_uts_ns.name` is: `OFFSET(uts_namespace.name)` into
/// `init_uts_ns`, or 4 (after the `kref`) for kernels that do not say.
fn uts_address(info: &VmcoreInfo) -> Option<u64> {
    let offset = info.offset("uts_namespace.name").unwrap_or(4);
    info.symbol("init_uts_ns")?.checked_add(offset)
}

/// The kernel's `new_utsname`; `Ok(None)` without its symbol, an error
/// when it cannot be read or does not look like one.
fn read_utsname<R: PhysRead>(
    memory: &KernelMemory<'_, R>,
    info: &VmcoreInfo,
) -> Result<Option<Utsname>, XlatError> {
    let Some(vaddr) = uts_address(info) else { return Ok(None) };
    let mut raw = [0u8; Utsname::SIZE];
    memory.read_virt(vaddr, &mut raw)?;
    let osrelease = info.osrelease();
    Utsname::from_kernel(&raw, osrelease)
        .map(Some)
        .ok_or_else(|| XlatError::NotUtsname { vaddr, osrelease: osrelease.unwrap_or("?").to_owned() })
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
