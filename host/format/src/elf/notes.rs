//! ELF notes of a vmcore: the PT_NOTE payload, CPU count and VMCOREINFO
//! location (kdump-format.md §1.6, §4.1).
//!
//! A note is a 12-byte header (`namesz`, `descsz`, `type`, each a `u32` in
//! the file's byte order) followed by the name and the descriptor, each
//! padded to a multiple of 4 bytes. The whole payload is kept verbatim
//! because the kdump-compressed writer copies it unchanged (§1.6).
//!
//! Padding: an all-zero note header followed only by zero bytes (or fewer
//! than 12 trailing zero bytes) ends a PT_NOTE segment; anything else that
//! does not parse is a [`FormatError::MalformedNote`].

use std::ops::Range;

use super::Endian;
use crate::FormatError;

/// Note type of a per-CPU register note (`NT_PRSTATUS`, name "CORE").
pub const NT_PRSTATUS: u32 = 1;
/// Name of the per-CPU register notes.
pub const NOTE_NAME_CORE: &[u8] = b"CORE";
/// Name of the VMCOREINFO note (type 0).
pub const NOTE_NAME_VMCOREINFO: &[u8] = b"VMCOREINFO";
/// Name of the note that records erased data in an ELF dump (type 0; its
/// descriptor is the eraseinfo text of a kdump file, padded with NULs), as
/// makedumpfile writes it and libkdumpfile reads it (`file.eraseinfo.raw`).
pub const NOTE_NAME_ERASEINFO: &[u8] = b"ERASEINFO";
/// Size of an ELF note header (same for ELF32 and ELF64).
pub const NOTE_HEADER_SIZE: usize = 12;

/// One ELF note, borrowed from [`Notes::bytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Note<'a> {
    /// Name without its trailing NUL bytes.
    pub name: &'a [u8],
    /// `n_type`.
    pub note_type: u32,
    /// Descriptor bytes (`descsz` long, without padding).
    pub desc: &'a [u8],
    /// Offset of the note header inside [`Notes::bytes`].
    pub header_offset: usize,
    /// Offset of the descriptor inside [`Notes::bytes`].
    pub desc_offset: usize,
}

/// The PT_NOTE payload of a vmcore and what vmdump needs from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notes {
    /// All PT_NOTE segments concatenated in program-header order, verbatim.
    pub bytes: Vec<u8>,
    /// Number of "CORE"/`NT_PRSTATUS` notes (the header's `nr_cpus`, §1.2).
    pub nr_cpus: u32,
    /// Byte range of the VMCOREINFO descriptor text inside `bytes`.
    pub vmcoreinfo: Option<Range<usize>>,
    /// Byte order of the note headers.
    pub endian: Endian,
    /// Each PT_NOTE segment: its range in `bytes` and its file offset.
    spans: Vec<(Range<usize>, u64)>,
}

impl Notes {
    /// Parses a notes payload that did not come from a file (offsets in
    /// errors are then offsets inside `bytes`).
    ///
    /// # Errors
    ///
    /// [`FormatError::MalformedNote`] if a note does not fit.
    pub fn from_bytes(bytes: Vec<u8>, endian: Endian) -> Result<Self, FormatError> {
        let spans = vec![(0..bytes.len(), 0)];
        Self::from_segments(bytes, endian, spans)
    }

    /// Parses concatenated PT_NOTE segments; `spans` gives each segment's
    /// range in `bytes` and its file offset (for error messages).
    pub(crate) fn from_segments(
        bytes: Vec<u8>,
        endian: Endian,
        spans: Vec<(Range<usize>, u64)>,
    ) -> Result<Self, FormatError> {
        let mut notes = Notes { bytes, nr_cpus: 0, vmcoreinfo: None, endian, spans };
        let mut nr_cpus = 0u32;
        let mut vmcoreinfo = None;
        for note in notes.iter() {
            let note = note?;
            if note.name == NOTE_NAME_CORE && note.note_type == NT_PRSTATUS {
                nr_cpus = nr_cpus.saturating_add(1);
            } else if note.name == NOTE_NAME_VMCOREINFO && note.note_type == 0 && vmcoreinfo.is_none() {
                vmcoreinfo = Some(note.desc_offset..note.desc_offset + note.desc.len());
            }
        }
        notes.nr_cpus = nr_cpus;
        notes.vmcoreinfo = vmcoreinfo;
        Ok(notes)
    }

    /// Iterates over the notes of every segment in order.
    pub fn iter(&self) -> NoteIter<'_> {
        NoteIter { notes: self, span: 0, pos: 0, index: 0, failed: false }
    }

    /// The VMCOREINFO descriptor bytes, if present.
    pub fn vmcoreinfo_bytes(&self) -> Option<&[u8]> {
        self.vmcoreinfo.clone().map(|r| &self.bytes[r])
    }

    /// The eraseinfo text of the first ERASEINFO note, without its NUL
    /// padding; empty when there is none.
    pub fn eraseinfo(&self) -> Vec<u8> {
        let note = self.iter().flatten().find(|n| n.name == NOTE_NAME_ERASEINFO);
        let desc = note.map_or(&[][..], |n| n.desc);
        desc[..desc.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)].to_vec()
    }

    /// The payload with every ERASEINFO note left out and, when
    /// `eraseinfo` is not empty, one ERASEINFO note of it at the end.
    pub fn with_eraseinfo(&self, eraseinfo: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.bytes.len() + eraseinfo.len() + 24);
        for note in self.iter().flatten() {
            if note.name != NOTE_NAME_ERASEINFO {
                self.copy_note(&note, &mut bytes);
            }
        }
        if !eraseinfo.is_empty() {
            bytes.extend(super::write::note(self.endian, NOTE_NAME_ERASEINFO, 0, eraseinfo));
        }
        bytes
    }

    /// The payload with the VMCOREINFO note's text replaced by `text`
    /// (a repaired one: `VmcoreInfo::salvage`), every other note as it is.
    pub fn with_vmcoreinfo(&self, text: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.bytes.len() + text.len());
        for note in self.iter().flatten() {
            if Some(note.desc_offset) == self.vmcoreinfo.as_ref().map(|r| r.start) {
                bytes.extend(super::write::note(self.endian, NOTE_NAME_VMCOREINFO, 0, text));
            } else {
                self.copy_note(&note, &mut bytes);
            }
        }
        bytes
    }

    /// Appends `note` as it is in the payload, padded to 4 bytes.
    fn copy_note(&self, note: &Note<'_>, bytes: &mut Vec<u8>) {
        let end = (note.desc_offset + note.desc.len()).div_ceil(4) * 4;
        bytes.extend_from_slice(&self.bytes[note.header_offset..end.min(self.bytes.len())]);
        bytes.resize(bytes.len().div_ceil(4) * 4, 0);
    }

    /// Length of the payload in bytes (the source `size_note`, §1.5).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// True if there are no note bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Iterator over [`Notes`]; yields one error and then stops on bad input.
#[derive(Debug, Clone)]
pub struct NoteIter<'a> {
    notes: &'a Notes,
    span: usize,
    pos: usize,
    index: usize,
    failed: bool,
}

fn align4(n: u64) -> u64 {
    n.div_ceil(4) * 4
}

impl<'a> NoteIter<'a> {
    fn error(&mut self, reason: &'static str) -> Option<Result<Note<'a>, FormatError>> {
        self.failed = true;
        let (range, file_offset) = &self.notes.spans[self.span];
        let offset = file_offset + (self.pos - range.start) as u64;
        Some(Err(FormatError::MalformedNote { note_index: self.index, offset, reason }))
    }

    /// Parses the note at `self.pos`, which lies inside span `range`.
    fn parse_one(&mut self, range: Range<usize>) -> Option<Result<Note<'a>, FormatError>> {
        let bytes = &self.notes.bytes;
        let rest = &bytes[self.pos..range.end];
        let all_zero = rest.iter().all(|&b| b == 0);
        if rest.len() < NOTE_HEADER_SIZE {
            if all_zero {
                self.pos = range.end;
                return None;
            }
            return self.error("truncated note header at the end of the PT_NOTE segment");
        }
        let e = self.notes.endian;
        let namesz = u64::from(e.u32(rest, 0));
        let descsz = u64::from(e.u32(rest, 4));
        let note_type = e.u32(rest, 8);
        if all_zero {
            self.pos = range.end;
            return None;
        }
        let len = rest.len() as u64;
        let name_end = NOTE_HEADER_SIZE as u64 + namesz;
        let desc_start = NOTE_HEADER_SIZE as u64 + align4(namesz);
        let desc_end = desc_start + descsz;
        if name_end > len || desc_end > len {
            return self.error("name or descriptor size extends beyond the end of the PT_NOTE segment");
        }
        let base = self.pos;
        let name = &bytes[base + NOTE_HEADER_SIZE..base + name_end as usize];
        let name_len = name.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let note = Note {
            name: &name[..name_len],
            note_type,
            desc: &bytes[base + desc_start as usize..base + desc_end as usize],
            header_offset: base,
            desc_offset: base + desc_start as usize,
        };
        // The last note's descriptor padding may be missing: clamp.
        self.pos = base + align4(desc_end).min(len) as usize;
        self.index += 1;
        Some(Ok(note))
    }
}

impl<'a> Iterator for NoteIter<'a> {
    type Item = Result<Note<'a>, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.failed && self.span < self.notes.spans.len() {
            let range = self.notes.spans[self.span].0.clone();
            self.pos = self.pos.max(range.start);
            if self.pos < range.end {
                if let Some(item) = self.parse_one(range) {
                    return Some(item);
                }
            } else {
                self.span += 1;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf::write::note;

    #[test]
    fn counts_cpus_and_finds_vmcoreinfo() {
        for e in [Endian::Little, Endian::Big] {
            let mut b = note(e, b"CORE", NT_PRSTATUS, &[1u8; 336]);
            b.extend(note(e, b"CORE", NT_PRSTATUS, &[2u8; 336]));
            b.extend(note(e, b"QEMU", 0, &[3u8; 7]));
            let off = b.len() + 12 + 12;
            b.extend(note(e, b"VMCOREINFO", 0, b"PAGESIZE=4096\n"));
            b.extend([0u8; 20]); // padding
            let n = Notes::from_bytes(b, e).unwrap();
            assert_eq!(n.nr_cpus, 2);
            assert_eq!(n.vmcoreinfo, Some(off..off + 14));
            assert_eq!(n.vmcoreinfo_bytes().unwrap(), b"PAGESIZE=4096\n");
            let names: Vec<_> = n.iter().map(|x| x.unwrap().name.to_vec()).collect();
            assert_eq!(names.len(), 4);
            assert_eq!(names[2], b"QEMU");
        }
    }

    #[test]
    fn the_vmcoreinfo_text_is_replaced_and_every_other_note_kept() {
        for e in [Endian::Little, Endian::Big] {
            let cpu = note(e, b"CORE", NT_PRSTATUS, &[1u8; 336]);
            let mut b = cpu.clone();
            b.extend(note(e, b"VMCOREINFO", 0, b"PAGESIZE=4095\nOFFSET(page.flags)80\n\0\0\0"));
            b.extend(note(e, b"QEMU", 0, &[3u8; 7]));
            let replaced = Notes::from_bytes(b, e).unwrap().with_vmcoreinfo(b"PAGESIZE=4096\n");
            let n = Notes::from_bytes(replaced.clone(), e).unwrap();
            assert_eq!(n.vmcoreinfo_bytes().unwrap(), b"PAGESIZE=4096\n");
            assert_eq!(n.nr_cpus, 1);
            assert_eq!(&replaced[..cpu.len()], &cpu[..]);
            assert_eq!(n.iter().map(|x| x.unwrap().name.to_vec()).last().unwrap(), b"QEMU");
        }
    }

    #[test]
    fn oversized_descriptor_is_an_error_not_a_panic() {
        let e = Endian::Little;
        let mut b = note(e, b"CORE", NT_PRSTATUS, &[0u8; 8]);
        e.put_u32(&mut b, 4, u32::MAX);
        let err = Notes::from_bytes(b.clone(), e).unwrap_err();
        assert!(matches!(err, FormatError::MalformedNote { note_index: 0, offset: 0, .. }), "{err}");
        e.put_u32(&mut b, 0, u32::MAX);
        assert!(Notes::from_bytes(b, e).is_err());
        let err = Notes::from_bytes(vec![1, 0, 0, 0, 0], e).unwrap_err();
        assert!(err.to_string().contains("truncated note header"), "{err}");
    }
}
