//! ELF64 core ("vmcore") reader: header, program headers, PT_LOAD segments
//! and PT_NOTE notes (kdump-format.md §1.6, §4.1; fixtures/README.md).
//!
//! Rules this reader enforces:
//! * program headers are read at `e_phoff`, never assumed at 64 (QEMU 7.2
//!   wrote them at 192);
//! * `e_phnum == PN_XNUM (0xffff)` means the real count is `sh_info` of
//!   section header 0;
//! * every offset, length and count is checked against the file size before
//!   it is used, so allocations are bounded by the file size;
//! * PT_LOADs with `p_paddr == u64::MAX` (no physical address) are skipped;
//! * both byte orders are read; ELF32 is refused with a clear error.

mod endian;
mod notes;
pub mod write;

pub use crate::machine::{EM_AARCH64, EM_X86_64};
pub use endian::Endian;
pub use notes::{
    NOTE_HEADER_SIZE, NOTE_NAME_CORE, NOTE_NAME_ERASEINFO, NOTE_NAME_VMCOREINFO, NT_PRSTATUS, Note, NoteIter,
    Notes,
};

use crate::vmcoreinfo::VmcoreInfo;
use crate::{FormatError, ReadAt};

/// `e_type` of a core file.
pub const ET_CORE: u16 = 4;
/// Program header type of a loadable (memory) segment.
pub const PT_LOAD: u32 = 1;
/// Program header type of a note segment.
pub const PT_NOTE: u32 = 4;
/// `e_phnum` value meaning "count is in section header 0's `sh_info`".
pub const PN_XNUM: u16 = 0xffff;
/// Size of the ELF64 file header.
pub const ELF64_EHDR_SIZE: usize = 64;
/// Size of an ELF64 program header.
pub const ELF64_PHDR_SIZE: usize = 56;
/// Size of an ELF64 section header.
pub const ELF64_SHDR_SIZE: usize = 64;

/// 64-bit machines a Linux vmcore can come from.
const KNOWN_MACHINES: &[u16] = &[62, 183, 21, 22, 243, 258, 8, 43, 50, 0x9026];
const KNOWN_MACHINE_NAMES: &str = "x86_64 (62), aarch64 (183), ppc64 (21), s390 (22), riscv (243), loongarch (258), mips (8), sparcv9 (43), ia64 (50), alpha (0x9026)";

/// One PT_LOAD: a physical memory range and where its bytes are in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LoadSegment {
    /// `p_paddr`: physical start address.
    pub paddr: u64,
    /// `p_vaddr`: virtual start address (direct map or kernel text).
    pub vaddr: u64,
    /// `p_offset`: file offset of the first byte.
    pub file_offset: u64,
    /// `p_filesz`: bytes present in the file.
    pub file_size: u64,
    /// `p_memsz`: bytes of memory; the part beyond `file_size` reads as zero.
    pub mem_size: u64,
}

/// A parsed ELF64 vmcore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfVmcore {
    /// Byte order of the file.
    pub endian: Endian,
    /// `e_machine`.
    pub machine: u16,
    /// `e_phoff`: file offset of the program header table.
    pub phoff: u64,
    /// PT_LOAD segments in program-header order (those with a physical address).
    pub loads: Vec<LoadSegment>,
    /// The PT_NOTE payload.
    pub notes: Notes,
}

/// Fields of the ELF header the reader uses.
struct Ehdr {
    endian: Endian,
    machine: u16,
    phoff: u64,
    phentsize: u16,
    phnum: u64,
}

/// Reads `len` bytes at `offset` after checking them against the size.
pub(crate) fn read_checked<R: ReadAt + ?Sized>(
    input: &R,
    offset: u64,
    len: u64,
    what: &'static str,
) -> Result<Vec<u8>, FormatError> {
    let size = input.size();
    if offset.checked_add(len).is_none_or(|end| end > size) {
        return Err(FormatError::Truncated { what, offset, len, size });
    }
    let mut buf = vec![0u8; len as usize];
    input.read_exact_at(&mut buf, offset).map_err(|e| FormatError::io(offset, len, e))?;
    Ok(buf)
}

fn parse_ident(input: &(impl ReadAt + ?Sized)) -> Result<Endian, FormatError> {
    let ident = read_checked(input, 0, 16, "ELF identification")?;
    let magic = [ident[0], ident[1], ident[2], ident[3]];
    if magic != *b"\x7fELF" {
        return Err(FormatError::BadElfMagic { found: magic });
    }
    if ident[4] != 2 {
        return Err(FormatError::BadElfClass { class: ident[4] });
    }
    match ident[5] {
        1 => Ok(Endian::Little),
        2 => Ok(Endian::Big),
        data => Err(FormatError::BadElfData { data }),
    }
}

fn parse_ehdr(input: &(impl ReadAt + ?Sized)) -> Result<Ehdr, FormatError> {
    let endian = parse_ident(input)?;
    let h = read_checked(input, 0, ELF64_EHDR_SIZE as u64, "ELF header")?;
    let e_type = endian.u16(&h, 16);
    if e_type != ET_CORE {
        return Err(FormatError::BadElfType { e_type });
    }
    let machine = endian.u16(&h, 18);
    if !KNOWN_MACHINES.contains(&machine) {
        return Err(FormatError::BadElfMachine { machine, supported: KNOWN_MACHINE_NAMES });
    }
    let phoff = endian.u64(&h, 32);
    let shoff = endian.u64(&h, 40);
    let phentsize = endian.u16(&h, 54);
    let e_phnum = endian.u16(&h, 56);
    let shentsize = endian.u16(&h, 58);
    let phnum = if e_phnum == PN_XNUM {
        u64::from(xnum_from_section0(input, endian, shoff, shentsize)?)
    } else {
        u64::from(e_phnum)
    };
    Ok(Ehdr { endian, machine, phoff, phentsize, phnum })
}

/// PN_XNUM: the program header count is `sh_info` of section header 0.
fn xnum_from_section0(
    input: &(impl ReadAt + ?Sized),
    endian: Endian,
    shoff: u64,
    shentsize: u16,
) -> Result<u32, FormatError> {
    if shoff == 0 || usize::from(shentsize) < ELF64_SHDR_SIZE {
        return Err(FormatError::BadProgramHeaders {
            phoff: 0,
            phnum: u64::from(PN_XNUM),
            phentsize: 0,
            reason: "e_phnum is PN_XNUM but there is no valid section header 0 (e_shoff/e_shentsize)",
        });
    }
    let sh = read_checked(input, shoff, ELF64_SHDR_SIZE as u64, "section header 0 (PN_XNUM)")?;
    Ok(endian.u32(&sh, 44))
}

fn check_phdr_table(eh: &Ehdr, size: u64) -> Result<(), FormatError> {
    let bad = |reason| FormatError::BadProgramHeaders {
        phoff: eh.phoff,
        phnum: eh.phnum,
        phentsize: eh.phentsize,
        reason,
    };
    if eh.phnum == 0 {
        return Err(bad("no program headers"));
    }
    if usize::from(eh.phentsize) < ELF64_PHDR_SIZE {
        return Err(bad("e_phentsize is smaller than an ELF64 program header (56)"));
    }
    let table = eh.phnum.checked_mul(u64::from(eh.phentsize));
    match table.and_then(|t| eh.phoff.checked_add(t)) {
        Some(end) if end <= size => Ok(()),
        _ => Err(bad("program header table extends beyond end of file")),
    }
}

/// Checks a segment's file range; returns its end.
fn check_file_range(
    index: usize,
    ph_offset: u64,
    start: u64,
    len: u64,
    size: u64,
    is_load: bool,
) -> Result<u64, FormatError> {
    match start.checked_add(len) {
        Some(end) if end <= size => Ok(end),
        end => {
            let end = end.unwrap_or(u64::MAX);
            Err(if is_load {
                FormatError::LoadBeyondEof { index, ph_offset, start, end, size }
            } else {
                FormatError::NoteBeyondEof { index, ph_offset, start, end, size }
            })
        }
    }
}

fn parse_load(
    e: Endian,
    ph: &[u8],
    index: usize,
    ph_offset: u64,
    size: u64,
) -> Result<Option<LoadSegment>, FormatError> {
    let seg = LoadSegment {
        file_offset: e.u64(ph, 8),
        vaddr: e.u64(ph, 16),
        paddr: e.u64(ph, 24),
        file_size: e.u64(ph, 32),
        mem_size: e.u64(ph, 40),
    };
    if seg.paddr == u64::MAX {
        return Ok(None);
    }
    check_file_range(index, ph_offset, seg.file_offset, seg.file_size, size, true)?;
    let bad = |reason| FormatError::BadLoad { index, ph_offset, reason };
    if seg.file_size > seg.mem_size {
        return Err(bad("p_filesz is larger than p_memsz"));
    }
    if seg.paddr.checked_add(seg.mem_size).is_none() {
        return Err(bad("p_paddr + p_memsz overflows the physical address space"));
    }
    Ok(Some(seg))
}

impl ElfVmcore {
    /// Parses an ELF64 `ET_CORE` file.
    ///
    /// # Errors
    ///
    /// A [`FormatError`] naming the structure and offset for: a file too
    /// short for what it declares, bad magic/class/data/type/machine, a bad
    /// program header table, a PT_LOAD or PT_NOTE beyond the end of file, a
    /// malformed note, or no PT_LOAD with a physical address.
    pub fn parse<R: ReadAt + ?Sized>(input: &R) -> Result<Self, FormatError> {
        let size = input.size();
        let eh = parse_ehdr(input)?;
        check_phdr_table(&eh, size)?;
        let stride = u64::from(eh.phentsize);
        let table = read_checked(input, eh.phoff, eh.phnum * stride, "program header table")?;
        let mut loads = Vec::new();
        let mut note_ranges = Vec::new();
        for (index, ph) in table.chunks_exact(stride as usize).enumerate() {
            let ph_offset = eh.phoff + index as u64 * stride;
            match eh.endian.u32(ph, 0) {
                PT_LOAD => loads.extend(parse_load(eh.endian, ph, index, ph_offset, size)?),
                PT_NOTE => {
                    let (start, len) = (eh.endian.u64(ph, 8), eh.endian.u64(ph, 32));
                    check_file_range(index, ph_offset, start, len, size, false)?;
                    note_ranges.push((start, len));
                }
                _ => {}
            }
        }
        if loads.is_empty() {
            return Err(FormatError::NoLoad);
        }
        let notes = read_notes(input, eh.endian, &note_ranges)?;
        Ok(ElfVmcore { endian: eh.endian, machine: eh.machine, phoff: eh.phoff, loads, notes })
    }

    /// Parses the VMCOREINFO note, if there is one.
    ///
    /// # Errors
    ///
    /// [`FormatError::BadVmcoreinfoLine`] if the text is malformed.
    pub fn vmcoreinfo(&self) -> Result<Option<VmcoreInfo>, FormatError> {
        self.notes.vmcoreinfo_bytes().map(VmcoreInfo::parse).transpose()
    }
}

/// Reads and concatenates the PT_NOTE segments (total bounded by the file size).
fn read_notes(
    input: &(impl ReadAt + ?Sized),
    endian: Endian,
    ranges: &[(u64, u64)],
) -> Result<Notes, FormatError> {
    let size = input.size();
    let total = ranges.iter().try_fold(0u64, |acc, &(_, len)| acc.checked_add(len));
    let total = match total {
        Some(t) if t <= size => t,
        t => return Err(FormatError::NotesTooLarge { total: t.unwrap_or(u64::MAX), size }),
    };
    let mut bytes = Vec::with_capacity(total as usize);
    let mut spans = Vec::with_capacity(ranges.len());
    for &(start, len) in ranges {
        let at = bytes.len();
        bytes.extend(read_checked(input, start, len, "PT_NOTE segment")?);
        spans.push((at..bytes.len(), start));
    }
    Notes::from_segments(bytes, endian, spans)
}

#[cfg(test)]
mod tests;
