//! What a dump is made from ([`Input`]): an ELF vmcore ([`Vmcore`]:
//! `/proc/vmcore` or a saved copy) or a kdump-compressed dump
//! ([`KdumpInput`]: plain, flattened or the pieces of a split dump, read
//! directly, its pages decompressed as they are read). [`open`] tells them
//! apart by their first bytes, as libkdumpfile's format table does. Each
//! gives its physical page map, notes and VMCOREINFO, physical reads for
//! address translation, and a [`PageSource`] that the [`BatchReader`] cuts
//! into batches (for a vmcore: mmap windows with a pread fallback).

mod fault;
mod kdump;
mod live;
mod lowcore;
mod reader;
mod window;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use vmdump_format::elf::{ElfVmcore, Endian, LoadSegment, Notes};
use vmdump_format::machine::Machine;
use vmdump_format::phys::PhysMap;
use vmdump_format::vmcoreinfo::{Damage, VmcoreInfo};
use vmdump_format::{FormatError, ReadAt};

use crate::exclude::MetadataFilter;
use crate::level::DumpLevel;
use crate::read::Modules;
use crate::xlat::{PhysRead, XlatError};

pub use kdump::KdumpInput;
pub use reader::{BatchReader, ElfPages, PageBatch, PageSource, ReadError, ReadMode};
pub use window::Window;

/// The input of a dump, whatever its format.
pub trait Input: PhysRead + Sync {
    /// The file, for messages.
    fn path(&self) -> &Path;
    /// Page size of the dumped kernel.
    fn page_size(&self) -> u64;
    /// The RAM pages.
    fn phys(&self) -> &PhysMap;
    /// The ELF notes of the dumped kernel (NT_PRSTATUS, VMCOREINFO...), verbatim.
    fn notes(&self) -> &Notes;
    /// The parsed VMCOREINFO note, if there is one.
    fn vmcoreinfo(&self) -> Option<&VmcoreInfo>;
    /// The ELF machine (`e_machine`) of the dumped kernel and its byte order.
    fn machine(&self) -> (u16, Endian);
    /// The memory segments (PT_LOADs), where they tell the kernel's direct map.
    fn loads(&self) -> &[LoadSegment];
    /// Whether it is the running system's `/proc/kcore` (a live dump:
    /// its memory moves while it is read, docs/live.md).
    fn is_live(&self) -> bool {
        false
    }
    /// What the input itself left out (a dump's excluded and lost pages)
    /// and the dump level it was made at; `None` for a vmcore.
    fn earlier(&self) -> Option<(&dyn MetadataFilter, DumpLevel)> {
        None
    }
    /// The damaged VMCOREINFO lines that were left out or replaced when
    /// it was opened with [`VmcoreinfoPolicy::Salvage`].
    fn vmcoreinfo_damage(&self) -> &[Damage] {
        &[]
    }
    /// What an earlier erase filter overwrote (a dump's eraseinfo, an ELF
    /// dump's ERASEINFO note); empty for a vmcore.
    ///
    /// # Errors
    /// The dump's eraseinfo cannot be read.
    fn eraseinfo(&self) -> Result<Vec<u8>, vmdump_format::FormatError> {
        Ok(Vec::new())
    }
    /// A reader of pages for the pipeline (`crate::pool`): `mode` for a file that can
    /// be mapped; `sparse` when many pages will be skipped.
    fn page_source(&self, mode: ReadMode, sparse: bool) -> Box<dyn PageSource + '_>;
}

/// What to do with a damaged VMCOREINFO note (a line that is not
/// `KEY=value`, a value its key cannot have).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VmcoreinfoPolicy {
    /// Refuse the input, naming the line.
    #[default]
    Strict,
    /// Leave the damaged lines out, as if the kernel had not exported
    /// them, take the values the machine fixes from the machine, and carry
    /// the repaired text into the dump ([`VmcoreInfo::salvage`]; ELF
    /// vmcores): a capture kernel must not lose the dump to it.
    Salvage,
}

/// Opens `paths` (one file, or the pieces of a split dump) as an input,
/// by what its first bytes say: an ELF vmcore, else a kdump-compressed dump
/// (plain or flattened), whose pages `modules` decompress.
///
/// # Errors
/// The file cannot be opened or is neither, with its name and the reason.
pub fn open<'m>(paths: &[PathBuf], modules: &'m Modules) -> anyhow::Result<Box<dyn Input + 'm>> {
    open_with(paths, modules, VmcoreinfoPolicy::Strict)
}

/// [`open`], with `policy` for a damaged VMCOREINFO.
///
/// # Errors
/// As [`open`].
pub fn open_with<'m>(
    paths: &[PathBuf],
    modules: &'m Modules,
    policy: VmcoreinfoPolicy,
) -> anyhow::Result<Box<dyn Input + 'm>> {
    let [first, rest @ ..] = paths else { anyhow::bail!("no input file given") };
    if crate::store::ObjectName::of_path(first).is_some() {
        // A dump in an object store, read by ranges (what vmdump puts there).
        return Ok(Box::new(KdumpInput::open(paths, modules)?));
    }
    paths.iter().try_for_each(|path| crate::crypt::refuse_encrypted(path))?;
    if rest.is_empty() && is_elf(first)? {
        return Ok(Box::new(Vmcore::open_with(first, policy)?));
    }
    Ok(Box::new(KdumpInput::open(paths, modules)?))
}

/// Whether `path` is the running kernel's `/proc/kcore` (a live dump).
pub fn is_live(path: &Path) -> bool {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf()) == Path::new("/proc/kcore")
}

/// Whether `path` starts with the ELF magic (a file of fewer than 4
/// bytes does not; short reads are retried).
///
/// # Errors
/// The file cannot be opened or read.
pub fn is_elf(path: &Path) -> anyhow::Result<bool> {
    use std::io::Read;
    let mut magic = Vec::with_capacity(4);
    open_file(path)?.take(4).read_to_end(&mut magic)?;
    Ok(magic == b"\x7fELF")
}

/// Opens `path` to read, saying why a live dump needs root when it does.
fn open_file(path: &Path) -> Result<File, InputError> {
    File::open(path).map_err(|cause| match cause.kind() {
        std::io::ErrorKind::PermissionDenied if is_live(path) => {
            InputError::LiveNotRoot { path: path.into(), cause }
        }
        _ => InputError::Open { path: path.into(), cause },
    })
}

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
    /// `/proc/kcore` could not be opened: it is root's alone.
    #[error(
        "cannot open {path}: {cause}: a live dump reads the running kernel's memory through /proc/kcore, \
         which only root can read (CAP_SYS_RAWIO)"
    )]
    LiveNotRoot {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// `/proc/kcore` without a VMCOREINFO note.
    #[error(
        "{path} has no VMCOREINFO note (Linux 4.19 and later write one): without it the running \
         kernel's memory cannot be classified or translated, so no live dump is made"
    )]
    LiveWithoutVmcoreinfo {
        /// The file.
        path: PathBuf,
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
    file: Arc<File>,
    /// The size when it was opened, which the program headers were checked against.
    size: u64,
    elf: ElfVmcore,
    phys: PhysMap,
    info: Option<VmcoreInfo>,
    /// What [`VmcoreinfoPolicy::Salvage`] left out or replaced.
    damage: Vec<Damage>,
    page_size: u64,
    /// The running system's `/proc/kcore`.
    live: bool,
}

impl Vmcore {
    /// Opens and parses `path`; every program header is checked against the
    /// file size before any page is read.
    ///
    /// # Errors
    /// [`InputError`] naming the file and, for format errors, the offset.
    pub fn open(path: &Path) -> Result<Self, InputError> {
        Self::open_with(path, VmcoreinfoPolicy::Strict)
    }

    /// [`Vmcore::open`], with `policy` for a damaged VMCOREINFO.
    ///
    /// # Errors
    /// As [`Vmcore::open`].
    pub fn open_with(path: &Path, policy: VmcoreinfoPolicy) -> Result<Self, InputError> {
        let live = is_live(path);
        let file = open_file(path)?;
        let format = |cause| InputError::Format { path: path.into(), cause };
        let mut elf = ElfVmcore::parse(&file).map_err(format)?;
        // /proc/kcore's segments of vmalloc, modules and vmemmap have no
        // physical address (p_paddr -1): they are not RAM, which its
        // KCORE_RAM segments (and the kernel text's) cover.
        elf.loads.retain(|load| load.paddr != u64::MAX);
        // QEMU's dump of an s390x guest has no VMCOREINFO note: the kernel's,
        // found through the lowcore, is added (and so written to the dump).
        lowcore::add_vmcoreinfo(&file, &mut elf);
        let (info, damage) = match policy {
            VmcoreinfoPolicy::Strict => (elf.vmcoreinfo().map_err(format)?, Vec::new()),
            VmcoreinfoPolicy::Salvage => salvage_vmcoreinfo(&mut elf).map_err(format)?,
        };
        if live && info.is_none() {
            return Err(InputError::LiveWithoutVmcoreinfo { path: path.into() });
        }
        let page_size = info.as_ref().and_then(VmcoreInfo::page_size).unwrap_or(4096);
        let mut phys = PhysMap::new(&elf.loads, page_size).map_err(format)?;
        if live {
            phys = phys.without(&live::crash_kernel_pfns(page_size));
        }
        let size = file.size();
        Ok(Self { path: path.into(), file: Arc::new(file), size, elf, phys, info, damage, page_size, live })
    }

    /// The open file.
    pub fn file(&self) -> &Arc<File> {
        &self.file
    }

    /// Size of the file in bytes when it was opened (it may have shrunk since).
    pub fn file_size(&self) -> u64 {
        self.size
    }

    /// Program headers and notes.
    pub fn elf(&self) -> &ElfVmcore {
        &self.elf
    }
}

impl Input for Vmcore {
    fn path(&self) -> &Path {
        &self.path
    }

    fn is_live(&self) -> bool {
        self.live
    }

    fn page_size(&self) -> u64 {
        self.page_size
    }

    fn phys(&self) -> &PhysMap {
        &self.phys
    }

    fn notes(&self) -> &Notes {
        &self.elf.notes
    }

    fn eraseinfo(&self) -> Result<Vec<u8>, vmdump_format::FormatError> {
        Ok(self.elf.notes.eraseinfo())
    }

    fn vmcoreinfo(&self) -> Option<&VmcoreInfo> {
        self.info.as_ref()
    }

    fn vmcoreinfo_damage(&self) -> &[Damage] {
        &self.damage
    }

    fn machine(&self) -> (u16, Endian) {
        (self.elf.machine, self.elf.endian)
    }

    fn loads(&self) -> &[LoadSegment] {
        &self.elf.loads
    }

    fn page_source(&self, mode: ReadMode, sparse: bool) -> Box<dyn PageSource + '_> {
        Box::new(ElfPages::new(self, mode, sparse))
    }
}

/// The VMCOREINFO of `elf`, its damaged lines left out and the values its
/// machine fixes taken from the machine; when anything was, the note of
/// `elf` now holds the repaired text, which the dump then carries (its
/// readers refuse or crash on what was damaged: libkdumpfile on a
/// `PAGESIZE` of 4095).
fn salvage_vmcoreinfo(elf: &mut ElfVmcore) -> Result<(Option<VmcoreInfo>, Vec<Damage>), FormatError> {
    let Some(bytes) = elf.notes.vmcoreinfo_bytes() else { return Ok((None, Vec::new())) };
    let page_size = Machine::from_elf(elf.machine, elf.endian).and_then(Machine::fixed_page_size);
    let page_size = page_size.map(|size| size.to_string());
    let fixed: Vec<(&str, &str)> = page_size.iter().map(|size| ("PAGESIZE", size.as_str())).collect();
    let (info, damage) = VmcoreInfo::salvage(bytes, &fixed);
    if !damage.is_empty() {
        elf.notes = Notes::from_bytes(elf.notes.with_vmcoreinfo(info.text().as_bytes()), elf.endian)?;
    }
    Ok((Some(info), damage))
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
