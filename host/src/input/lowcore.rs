//! The VMCOREINFO of an s390x memory dump without a VMCOREINFO note
//! (QEMU's `dump-guest-memory`), found where the kernel says through its
//! lowcore (docs/s390x.md §3): the absolute lowcore's 8-byte field at
//! 0xe0c holds the physical address of the kernel's own VMCOREINFO ELF
//! note, which is taken whole.

use vmdump_format::ReadAt;
use vmdump_format::elf::{ElfVmcore, Endian, LoadSegment, Notes};
use vmdump_format::machine::EM_S390;

/// The lowcore field holding the note's physical address.
const VMCOREINFO_POINTER: u64 = 0xe0c;
/// `namesz` of the note: "VMCOREINFO" and its NUL.
const NAME: &[u8; 11] = b"VMCOREINFO\0";
/// The most VMCOREINFO text accepted (the kernel's buffer is one page).
const MAX_DESC: u64 = 64 << 10;

/// Bytes at physical address `paddr` of the dump, if a PT_LOAD holds them
/// in the file.
fn read_phys(file: &(impl ReadAt + ?Sized), loads: &[LoadSegment], paddr: u64, len: u64) -> Option<Vec<u8>> {
    let end = paddr.checked_add(len)?;
    let load = loads.iter().find(|l| paddr >= l.paddr && end <= l.paddr.saturating_add(l.file_size))?;
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, load.file_offset + (paddr - load.paddr)).ok()?;
    Some(buf)
}

/// The kernel's VMCOREINFO note (header, name and text, padded) as the
/// lowcore points to it; `None` when the pointer or the note is not there.
fn lowcore_note(file: &(impl ReadAt + ?Sized), loads: &[LoadSegment]) -> Option<Vec<u8>> {
    let e = Endian::Big;
    let pointer = e.u64(&read_phys(file, loads, VMCOREINFO_POINTER, 8)?, 0);
    let header = read_phys(file, loads, pointer, 12 + 12)?;
    let (namesz, descsz, note_type) = (e.u32(&header, 0), u64::from(e.u32(&header, 4)), e.u32(&header, 8));
    if namesz as usize != NAME.len() || &header[12..23] != NAME || note_type != 0 || descsz > MAX_DESC {
        return None;
    }
    read_phys(file, loads, pointer, 24 + descsz.div_ceil(4) * 4)
}

/// Adds the lowcore's VMCOREINFO note to the notes of `elf` when it is an
/// s390x dump that has none; returns whether it did.
pub fn add_vmcoreinfo(file: &(impl ReadAt + ?Sized), elf: &mut ElfVmcore) -> bool {
    let wanted =
        elf.machine == EM_S390 && elf.endian == Endian::Big && elf.notes.vmcoreinfo_bytes().is_none();
    let Some(note) = wanted.then(|| lowcore_note(file, &elf.loads)).flatten() else { return false };
    let mut bytes = elf.notes.bytes.clone();
    bytes.resize(bytes.len().div_ceil(4) * 4, 0);
    bytes.extend(note);
    match Notes::from_bytes(bytes, Endian::Big) {
        Ok(notes) if notes.vmcoreinfo_bytes().is_some() => {
            elf.notes = notes;
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmdump_format::elf::write::note;

    /// A 1 MiB "memory" with the lowcore pointing at a note at 0x8000.
    fn elf_with_lowcore(pointer: u64, note_bytes: &[u8]) -> (Vec<u8>, ElfVmcore) {
        let mut memory = vec![0u8; 1 << 20];
        memory[0xe0c..0xe14].copy_from_slice(&pointer.to_be_bytes());
        memory[0x8000..0x8000 + note_bytes.len()].copy_from_slice(note_bytes);
        let prstatus = note(Endian::Big, b"CORE", 1, &[0u8; 336]);
        let elf = ElfVmcore {
            endian: Endian::Big,
            machine: EM_S390,
            phoff: 64,
            loads: vec![LoadSegment {
                paddr: 0,
                vaddr: 0,
                file_offset: 0,
                file_size: 1 << 20,
                mem_size: 1 << 20,
            }],
            notes: Notes::from_bytes(prstatus, Endian::Big).unwrap(),
        };
        (memory, elf)
    }

    #[test]
    fn the_note_the_lowcore_points_to_is_added_after_the_others() {
        let text = b"OSRELEASE=6.1.0-50-s390x\nPAGESIZE=4096\n";
        let (memory, mut elf) = elf_with_lowcore(0x8000, &note(Endian::Big, b"VMCOREINFO", 0, text));
        assert!(add_vmcoreinfo(&memory[..], &mut elf));
        assert_eq!(elf.notes.vmcoreinfo_bytes(), Some(&text[..]));
        assert_eq!(elf.notes.iter().flatten().count(), 2, "NT_PRSTATUS kept");
        assert!(!add_vmcoreinfo(&memory[..], &mut elf), "added once");
    }

    #[test]
    fn no_pointer_another_note_or_another_machine_adds_nothing() {
        let vmcoreinfo = note(Endian::Big, b"VMCOREINFO", 0, b"PAGESIZE=4096\n");
        let (memory, mut elf) = elf_with_lowcore(0, &vmcoreinfo);
        assert!(!add_vmcoreinfo(&memory[..], &mut elf), "the pointer is 0");
        let (memory, mut elf) = elf_with_lowcore(0x8000, &note(Endian::Big, b"CORE", 0, b"x"));
        assert!(!add_vmcoreinfo(&memory[..], &mut elf), "not a VMCOREINFO note");
        let (memory, mut elf) = elf_with_lowcore(0x10_0000 - 8, &vmcoreinfo);
        assert!(!add_vmcoreinfo(&memory[..], &mut elf), "beyond the dump");
        let (memory, mut elf) = elf_with_lowcore(0x8000, &vmcoreinfo);
        elf.machine = vmdump_format::machine::EM_X86_64;
        assert!(!add_vmcoreinfo(&memory[..], &mut elf), "not s390x");
    }
}
