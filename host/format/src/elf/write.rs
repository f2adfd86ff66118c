//! Writing ELF64 cores: the file header, program headers, notes and, past
//! 65534 program headers, the section header 0 that holds their count
//! (PN_XNUM). Used by the ELF output of the dump (kdump-format.md §3) and
//! by the synthetic vmcores of `vmdump-synth`.

use super::{
    ELF64_EHDR_SIZE, ELF64_PHDR_SIZE, ELF64_SHDR_SIZE, ET_CORE, Endian, LoadSegment, NOTE_HEADER_SIZE,
    PN_XNUM, PT_LOAD, PT_NOTE,
};

/// An ELF64 file header for an `ET_CORE` with `phnum` program headers at `phoff`.
pub fn elf_header(e: Endian, machine: u16, phoff: u64, phnum: u16) -> [u8; ELF64_EHDR_SIZE] {
    let mut h = [0u8; ELF64_EHDR_SIZE];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 2; // ELFCLASS64
    h[5] = match e {
        Endian::Little => 1,
        Endian::Big => 2,
    };
    h[6] = 1; // EV_CURRENT
    e.put_u16(&mut h, 16, ET_CORE);
    e.put_u16(&mut h, 18, machine);
    e.put_u32(&mut h, 20, 1);
    e.put_u64(&mut h, 32, phoff);
    e.put_u16(&mut h, 52, ELF64_EHDR_SIZE as u16);
    e.put_u16(&mut h, 54, ELF64_PHDR_SIZE as u16);
    e.put_u16(&mut h, 56, phnum);
    h
}

/// An ELF64 program header.
pub fn program_header(e: Endian, p_type: u32, seg: &LoadSegment) -> [u8; ELF64_PHDR_SIZE] {
    let mut p = [0u8; ELF64_PHDR_SIZE];
    e.put_u32(&mut p, 0, p_type);
    e.put_u32(&mut p, 4, if p_type == PT_LOAD { 7 } else { 0 }); // RWX like /proc/vmcore
    e.put_u64(&mut p, 8, seg.file_offset);
    e.put_u64(&mut p, 16, seg.vaddr);
    e.put_u64(&mut p, 24, seg.paddr);
    e.put_u64(&mut p, 32, seg.file_size);
    e.put_u64(&mut p, 40, seg.mem_size);
    p
}

/// A PT_NOTE program header for `len` bytes at `offset`.
pub fn note_program_header(e: Endian, offset: u64, len: u64) -> [u8; ELF64_PHDR_SIZE] {
    let seg = LoadSegment { paddr: 0, vaddr: 0, file_offset: offset, file_size: len, mem_size: len };
    program_header(e, PT_NOTE, &seg)
}

/// One ELF note: the 12-byte header, the name with its NUL, the
/// descriptor; name and descriptor each padded to 4 bytes (§1.6).
pub fn note(e: Endian, name: &[u8], note_type: u32, desc: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; NOTE_HEADER_SIZE];
    e.put_u32(&mut v, 0, name.len() as u32 + 1);
    e.put_u32(&mut v, 4, desc.len() as u32);
    e.put_u32(&mut v, 8, note_type);
    v.extend_from_slice(name);
    v.push(0);
    v.resize(v.len().div_ceil(4) * 4, 0);
    v.extend_from_slice(desc);
    v.resize(v.len().div_ceil(4) * 4, 0);
    v
}

/// Where the parts of an ELF core go: file header, program headers (a
/// PT_NOTE, then the PT_LOADs), section header 0 when the count needs
/// PN_XNUM, the notes, then the segment data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreLayout {
    /// Program headers, the PT_NOTE included.
    pub phnum: u64,
    /// Offset of section header 0, when `phnum >= PN_XNUM`.
    pub shoff: Option<u64>,
    /// Offset of the notes.
    pub notes_offset: u64,
    /// Offset of the first segment's data.
    pub data_offset: u64,
}

impl CoreLayout {
    /// The layout of a core with `loads` PT_LOADs and `notes_len` bytes of
    /// notes, the data starting at a multiple of `align` (the page size: a
    /// segment whose file offset is not page-aligned shows readers such as
    /// libkdumpfile a zero page before its start).
    pub fn new(loads: u64, notes_len: u64, align: u64) -> Self {
        let phnum = loads + 1;
        let table_end = ELF64_EHDR_SIZE as u64 + phnum * ELF64_PHDR_SIZE as u64;
        let shoff = (phnum >= u64::from(PN_XNUM)).then_some(table_end);
        let notes_offset = table_end + shoff.map_or(0, |_| ELF64_SHDR_SIZE as u64);
        let data_offset = (notes_offset + notes_len).div_ceil(align.max(1)) * align.max(1);
        CoreLayout { phnum, shoff, notes_offset, data_offset }
    }

    /// File offset of program header `index` (0 is the PT_NOTE).
    pub fn phdr_offset(&self, index: u64) -> u64 {
        ELF64_EHDR_SIZE as u64 + index * ELF64_PHDR_SIZE as u64
    }

    /// The file header; `e_flags` 1 marks an incomplete dump (§3).
    pub fn file_header(&self, e: Endian, machine: u16, flags: u32) -> [u8; ELF64_EHDR_SIZE] {
        let mut h = elf_header(e, machine, ELF64_EHDR_SIZE as u64, e_phnum(self.phnum));
        e.put_u32(&mut h, 48, flags);
        if let Some(shoff) = self.shoff {
            point_at_section0(e, &mut h, shoff);
        }
        h
    }

    /// Section header 0 holding the program header count, when the layout needs one.
    pub fn section_header(&self, e: Endian) -> Option<[u8; ELF64_SHDR_SIZE]> {
        self.shoff.map(|_| section0(e, self.phnum))
    }
}

/// `e_phnum` for `phnum` program headers: PN_XNUM from 0xffff on.
pub fn e_phnum(phnum: u64) -> u16 {
    u16::try_from(phnum).unwrap_or(PN_XNUM)
}

/// Section header 0 of a PN_XNUM file: the program header count in `sh_info`.
pub fn section0(e: Endian, phnum: u64) -> [u8; ELF64_SHDR_SIZE] {
    let mut s = [0u8; ELF64_SHDR_SIZE];
    e.put_u32(&mut s, 44, u32::try_from(phnum).unwrap_or(u32::MAX));
    s
}

/// Points file header `h` at one section header (section 0) at `shoff`.
pub fn point_at_section0(e: Endian, h: &mut [u8; ELF64_EHDR_SIZE], shoff: u64) {
    e.put_u64(h, 40, shoff);
    e.put_u16(h, 58, ELF64_SHDR_SIZE as u16);
    e.put_u16(h, 60, 1);
}
