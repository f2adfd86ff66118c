use super::write::{elf_header, note, note_program_header, program_header};
use super::*;

fn load(paddr: u64, file_offset: u64, size: u64) -> LoadSegment {
    LoadSegment { paddr, vaddr: 0xffff_8880_0000_0000 + paddr, file_offset, file_size: size, mem_size: size }
}

/// A hand-made core: header, program headers at `phoff` (PT_NOTE first), notes after them.
fn build(e: Endian, phoff: u64, loads: &[LoadSegment], notes: &[u8], len: usize) -> Vec<u8> {
    let phnum = 1 + loads.len();
    let notes_off = phoff as usize + phnum * ELF64_PHDR_SIZE;
    let mut image = vec![0u8; len.max(notes_off + notes.len())];
    image[..64].copy_from_slice(&elf_header(e, EM_X86_64, phoff, phnum as u16));
    let mut at = phoff as usize;
    image[at..at + 56].copy_from_slice(&note_program_header(e, notes_off as u64, notes.len() as u64));
    for l in loads {
        at += 56;
        image[at..at + 56].copy_from_slice(&program_header(e, PT_LOAD, l));
    }
    image[notes_off..notes_off + notes.len()].copy_from_slice(notes);
    image
}

fn cpu_notes(e: Endian, n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.extend(note(e, b"CORE", NT_PRSTATUS, &[0u8; 336]));
    }
    v.extend(note(e, b"VMCOREINFO", 0, b"PAGESIZE=4096\nNUMBER(phys_base)=-2097152\n"));
    v
}

#[test]
fn big_endian_core() {
    let e = Endian::Big;
    let notes = cpu_notes(e, 2);
    let loads = [load(0, 0x1000, 0x2000), load(0x10_0000, 0x3000, 0x1000)];
    let mut image = build(e, 64, &loads, &notes, 0x4000);
    image[18..20].copy_from_slice(&21u16.to_be_bytes()); // EM_PPC64
    let core = ElfVmcore::parse(&image).unwrap();
    assert_eq!((core.endian, core.machine), (Endian::Big, 21));
    assert_eq!(core.loads, loads);
    assert_eq!(core.notes.nr_cpus, 2);
    assert_eq!(core.vmcoreinfo().unwrap().unwrap().phys_base(), Some(-2_097_152));
}

#[test]
fn pn_xnum_reads_the_count_from_section_zero() {
    let e = Endian::Little;
    let loads = [load(0, 0x1000, 0x1000), load(0x2000, 0x2000, 0x1000)];
    let mut image = build(e, 64, &loads, &cpu_notes(e, 1), 0x3000 + 64);
    let shoff = 0x3000u64;
    e.put_u16(&mut image, 56, PN_XNUM);
    e.put_u64(&mut image, 40, shoff);
    e.put_u16(&mut image, 58, 64);
    e.put_u32(&mut image, shoff as usize + 44, 3);
    assert_eq!(ElfVmcore::parse(&image).unwrap().loads, loads);
    e.put_u16(&mut image, 58, 0);
    assert!(matches!(ElfVmcore::parse(&image), Err(FormatError::BadProgramHeaders { .. })));
}

#[test]
fn loads_without_physical_address_are_skipped() {
    let e = Endian::Little;
    let loads = [LoadSegment { paddr: u64::MAX, ..load(0, 0x1000, 0x1000) }, load(0x5000, 0x1000, 0x1000)];
    let core = ElfVmcore::parse(&build(e, 64, &loads, &[], 0x2000)).unwrap();
    assert_eq!(core.loads, [loads[1]]);
    assert_eq!(core.notes.nr_cpus, 0);
    assert!(core.vmcoreinfo().unwrap().is_none());
    let only_virtual = [loads[0]];
    assert!(matches!(ElfVmcore::parse(&build(e, 64, &only_virtual, &[], 0x2000)), Err(FormatError::NoLoad)));
}

#[test]
fn header_errors() {
    let e = Endian::Little;
    let good = build(e, 64, &[load(0, 0x1000, 0x1000)], &cpu_notes(e, 1), 0x2000);
    ElfVmcore::parse(&good).unwrap();
    let with = |at: usize, bytes: &[u8]| {
        let mut v = good.clone();
        v[at..at + bytes.len()].copy_from_slice(bytes);
        ElfVmcore::parse(&v).unwrap_err()
    };
    assert!(matches!(with(0, b"\x7fELG"), FormatError::BadElfMagic { .. }));
    assert!(with(4, &[1]).to_string().contains("ELF32"));
    assert!(matches!(with(5, &[3]), FormatError::BadElfData { data: 3 }));
    assert!(matches!(with(16, &[2, 0]), FormatError::BadElfType { e_type: 2 }));
    assert!(with(18, &[0, 0]).to_string().contains("x86_64 (62)"));
    assert!(matches!(with(54, &[40, 0]), FormatError::BadProgramHeaders { phentsize: 40, .. }));
    assert!(matches!(with(56, &[0, 0]), FormatError::BadProgramHeaders { phnum: 0, .. }));
    assert!(matches!(with(32, &0x1_0000u64.to_le_bytes()), FormatError::BadProgramHeaders { .. }));
    assert!(matches!(with(32, &u64::MAX.to_le_bytes()), FormatError::BadProgramHeaders { .. }));
    assert!(matches!(ElfVmcore::parse(&good[..10]), Err(FormatError::Truncated { .. })));
}

#[test]
fn segment_errors_name_index_and_offset() {
    let e = Endian::Little;
    let loads = [load(0, 0x1000, 0x1000), load(0x1000, 0x2000, 0x1000), load(0x2000, 0x3000, 0x1000)];
    let image = build(e, 64, &loads, &cpu_notes(e, 1), 0x4000);
    let err = ElfVmcore::parse(&image[..0x3800]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "program header 3 at offset 0xe8: PT_LOAD file range 0x3000-0x4000 extends beyond end of file (size 0x3800)"
    );
    let mut bad = image.clone();
    e.put_u64(&mut bad, 64 + 32, 0x10_0000); // PT_NOTE p_filesz
    assert!(matches!(
        ElfVmcore::parse(&bad).unwrap_err(),
        FormatError::NoteBeyondEof { index: 0, ph_offset: 64, .. }
    ));
    let mut bad = image.clone();
    e.put_u64(&mut bad, 64 + 56 + 32, 0x2000); // p_filesz > p_memsz
    assert!(matches!(ElfVmcore::parse(&bad).unwrap_err(), FormatError::BadLoad { index: 1, .. }));
    let mut bad = image.clone();
    e.put_u64(&mut bad, 64 + 56 + 24, u64::MAX - 5); // paddr + memsz overflows
    assert!(matches!(ElfVmcore::parse(&bad).unwrap_err(), FormatError::BadLoad { index: 1, .. }));
    let mut bad = image.clone();
    let notes_off = 64 + 4 * 56;
    e.put_u32(&mut bad, notes_off + 4, 0xffff_fff0); // descsz of note 0
    let err = ElfVmcore::parse(&bad).unwrap_err();
    assert!(
        matches!(err, FormatError::MalformedNote { note_index: 0, offset, .. } if offset == notes_off as u64),
        "{err}"
    );
}

#[test]
fn many_pt_notes_cannot_multiply_memory() {
    let e = Endian::Little;
    let image = build(e, 64, &[load(0, 0x1000, 0x1000)], &[], 0x2000);
    let mut big = image.clone();
    // 40 program headers: PT_NOTEs each claiming the whole file.
    let phnum = 40usize;
    big.resize(0x4000, 0);
    e.put_u16(&mut big, 56, phnum as u16);
    e.put_u64(&mut big, 32, 0x2000);
    for i in 0..phnum {
        let ph = if i == 0 {
            program_header(e, PT_LOAD, &load(0, 0x1000, 0x1000))
        } else {
            note_program_header(e, 0, 0x4000)
        };
        big[0x2000 + i * 56..0x2000 + (i + 1) * 56].copy_from_slice(&ph);
    }
    assert!(matches!(ElfVmcore::parse(&big), Err(FormatError::NotesTooLarge { .. })));
}

#[test]
fn an_eraseinfo_note_is_read_and_replaced_with_the_other_notes_kept() {
    let e = Endian::Little;
    let (cpus, old) = (cpu_notes(e, 1), note(e, NOTE_NAME_ERASEINFO, 0, b"erase a size 4\n\0\0"));
    let tail = note(e, b"VMCOREDD", 0, b"device");
    let notes = Notes::from_bytes([cpus.clone(), old, tail.clone()].concat(), e).unwrap();
    assert_eq!(notes.eraseinfo(), b"erase a size 4\n");
    let rewritten = Notes::from_bytes(notes.with_eraseinfo(b"erase a size 4\nerase b nullify\n"), e).unwrap();
    let names: Vec<_> = rewritten.iter().map(|n| n.unwrap().name.to_vec()).collect();
    let expected: [&[u8]; 4] = [b"CORE", b"VMCOREINFO", b"VMCOREDD", b"ERASEINFO"];
    assert_eq!(names, expected);
    assert_eq!(rewritten.eraseinfo(), b"erase a size 4\nerase b nullify\n");
    assert_eq!(rewritten.vmcoreinfo_bytes(), notes.vmcoreinfo_bytes());
    let without = notes.with_eraseinfo(b"");
    assert_eq!(without, [cpus, tail].concat());
}
