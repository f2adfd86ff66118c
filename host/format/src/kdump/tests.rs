use super::*;
use crate::elf::write::note;
use crate::elf::{Endian, NT_PRSTATUS, Notes};

/// The example of kdump-format.md §1.13: 17 GiB, 8 CPUs, 2959-byte VMCOREINFO last.
fn worked_example_notes() -> Notes {
    let e = Endian::Little;
    let mut bytes = Vec::new();
    for _ in 0..8 {
        bytes.extend(note(e, b"CORE", NT_PRSTATUS, &[0u8; 336])); // x86_64 struct elf_prstatus
    }
    let text = vec![b'A'; 2959];
    bytes.extend(note(e, b"VMCOREINFO", 0, &text));
    assert_eq!(bytes.len(), 5832, "PT_NOTE = 8 x 356 + 12 + 12 + 2960");
    Notes::from_bytes(bytes, e).unwrap()
}

#[test]
fn worked_offset_table_of_section_1_13() {
    let notes = worked_example_notes();
    assert_eq!(notes.nr_cpus, 8);
    let l = Layout::from_notes(0x44_0000, 4096, &notes, 1_000_000).unwrap();
    assert_eq!(l.offset_note, 4200);
    assert_eq!(l.offset_note, 0x1068);
    assert_eq!(l.offset_vmcoreinfo, 7072);
    assert_eq!(l.offset_vmcoreinfo, 0x1BA0);
    assert_eq!(l.size_vmcoreinfo, 2959);
    assert_eq!(l.size_note, 5832);
    assert_eq!(l.sub_hdr_size, 2);
    assert_eq!(l.bitmap_len, 557_056);
    assert_eq!(l.bitmap_len / 4096, 136);
    assert_eq!(l.bitmap_blocks, 272);
    assert_eq!(l.bitmap1_offset, 0x3000);
    assert_eq!(l.bitmap2_offset, 0x8B000);
    assert_eq!(l.page_desc_offset, 0x113000);
    assert_eq!(l.page_desc_offset, 1_126_400);
    assert_eq!(l.data_offset, 25_126_400);
    // §1.13 prints "25,126,400 = 0x17F6800", but 0x17F6800 is 25,126,912:
    // the decimal value (0x113000 + 24 * 1,000,000) is the right one.
    assert_eq!(l.data_offset, 0x17F6600);
    assert_eq!(l.page_desc_offset_of(2), 0x113000 + 48);
}

#[test]
fn layout_edges() {
    // One pfn still needs one block per bitmap; no notes needs one sub-header block.
    let l = Layout::new(1, 4096, 0, None, 0).unwrap();
    assert_eq!((l.sub_hdr_size, l.bitmap_blocks, l.offset_vmcoreinfo), (1, 2, 0));
    assert_eq!(l.bitmap1_offset, 0x2000);
    assert_eq!(l.data_offset, 0x4000);
    // 104 + 3992 = 4096 fits one block exactly; one more byte needs two.
    assert_eq!(Layout::new(1, 4096, 3992, None, 0).unwrap().sub_hdr_size, 1);
    assert_eq!(Layout::new(1, 4096, 3993, None, 0).unwrap().sub_hdr_size, 2);
    assert!(matches!(Layout::new(1, 4000, 0, None, 0), Err(FormatError::BadPageSize(4000))));
    assert!(Layout::new(1, 4096, 10, Some(8..12), 0).is_err());
    assert!(matches!(Layout::new(u64::MAX, 4096, 0, None, 0), Err(FormatError::LayoutOverflow(_))));
}

#[test]
fn vmcoreinfo_offset_overflow_is_an_error_not_a_panic() {
    // Found by fuzzing (target kdump): notes of u64::MAX bytes with the
    // VMCOREINFO at their end overflowed block_size + 104 + start.
    let (start, size_note) = (u64::MAX - 8, u64::MAX);
    let got = Layout::new(1, 4096, size_note, Some(start..size_note), 0);
    assert!(matches!(got, Err(FormatError::LayoutOverflow(_))), "{got:?}");
}

#[test]
fn header_fields_at_documented_offsets() {
    let l = Layout::new(0x1_0000_0001, 4096, 0, None, 0).unwrap();
    let mut h = l.disk_dump_header(DUMP_DH_COMPRESSED_ZSTD, 4, Endian::Little);
    let info =
        crate::vmcoreinfo::VmcoreInfo::parse(b"OSRELEASE=6.1.0-57-amd64\nCRASHTIME=1700000123\n").unwrap();
    h.fill_from_vmcoreinfo(&info, Some(crate::machine::Machine::X86_64));
    let b = h.encode();
    assert_eq!(&b[0..8], b"KDUMP   ");
    assert_eq!(i32::from_le_bytes(b[8..12].try_into().unwrap()), 6);
    assert_eq!(&b[12..17], b"Linux");
    assert_eq!(&b[12 + 2 * 65..12 + 2 * 65 + 14], b"6.1.0-57-amd64");
    assert_eq!(&b[12 + 4 * 65..12 + 4 * 65 + 6], b"x86_64");
    assert_eq!(i64::from_le_bytes(b[408..416].try_into().unwrap()), 1_700_000_123);
    assert_eq!(u32::from_le_bytes(b[424..428].try_into().unwrap()), 0x20);
    assert_eq!(u32::from_le_bytes(b[428..432].try_into().unwrap()), 4096);
    assert_eq!(u32::from_le_bytes(b[440..444].try_into().unwrap()), u32::MAX, "saturated");
    assert_eq!(u32::from_le_bytes(b[460..464].try_into().unwrap()), 4);
    assert_eq!(DiskDumpHeader::decode(&b).unwrap(), h);
    assert_eq!(h.utsname.get(Utsname::RELEASE), b"6.1.0-57-amd64");

    let sh = l.sub_header(-478_150_656, 31);
    let sb = sh.encode(Endian::Little);
    assert_eq!(i64::from_le_bytes(sb[0..8].try_into().unwrap()), -478_150_656);
    assert_eq!(u32::from_le_bytes(sb[8..12].try_into().unwrap()), 31);
    assert_eq!(u64::from_le_bytes(sb[48..56].try_into().unwrap()), 4096 + 104);
    assert_eq!(u64::from_le_bytes(sb[96..104].try_into().unwrap()), 0x1_0000_0001);
    assert_eq!(SubHeader::decode(&sb, Endian::Little).unwrap(), sh);
}

/// s390x: every integer big-endian, at the same offsets; the header's
/// byte order found from its version, and a version that is small in
/// neither order refused.
#[test]
fn big_endian_headers_and_descriptors_round_trip() {
    let l = Layout::new(0x8_0000, 4096, 0, None, 0).unwrap();
    let h = l.disk_dump_header(DUMP_DH_COMPRESSED_ZLIB, 2, Endian::Big);
    let b = h.encode();
    assert_eq!(&b[8..12], &6u32.to_be_bytes());
    assert_eq!(&b[428..432], &4096u32.to_be_bytes());
    assert_eq!(&b[440..444], &0x8_0000u32.to_be_bytes());
    let back = DiskDumpHeader::decode(&b).unwrap();
    assert_eq!((back, back.endian), (h, Endian::Big));
    let little = l.disk_dump_header(DUMP_DH_COMPRESSED_ZLIB, 2, Endian::Little).encode();
    assert_eq!(DiskDumpHeader::decode(&little).unwrap().endian, Endian::Little);
    let mut neither = b;
    neither[8..12].copy_from_slice(&[1, 0, 0, 1]);
    assert!(DiskDumpHeader::decode(&neither).unwrap_err().to_string().contains("header_version"));

    let sh = l.sub_header(0, 31);
    let sb = sh.encode(Endian::Big);
    assert_eq!(&sb[8..12], &31u32.to_be_bytes());
    assert_eq!(&sb[96..104], &0x8_0000u64.to_be_bytes());
    assert_eq!(SubHeader::decode(&sb, Endian::Big).unwrap(), sh);
    let d = PageDesc { offset: 0x1234_5678, size: 99, flags: DUMP_DH_COMPRESSED_ZLIB, page_flags: 0 };
    let db = d.encode(Endian::Big);
    assert_eq!(&db[0..8], &0x1234_5678u64.to_be_bytes());
    assert_eq!(PageDesc::decode(&db, Endian::Big).unwrap(), d);
    assert_ne!(PageDesc::decode(&db, Endian::Little).unwrap(), d);
}

#[test]
fn page_desc_round_trip_and_short_input() {
    let d = PageDesc { offset: 0x17F6800, size: 1234, flags: DUMP_DH_COMPRESSED_LZO, page_flags: 0 };
    let b = d.encode(Endian::Little);
    assert_eq!(&b[8..12], &1234u32.to_le_bytes());
    assert_eq!(&b[12..16], &2u32.to_le_bytes());
    assert_eq!(PageDesc::decode(&b, Endian::Little).unwrap(), d);
    assert!(PageDesc::decode(&b[..23], Endian::Little).is_err());
    assert!(DiskDumpHeader::decode(&[0u8; 463]).is_err());
    let mut bad = DiskDumpHeader::decode(
        &Layout::new(1, 4096, 0, None, 0).unwrap().disk_dump_header(0, 1, Endian::Little).encode(),
    )
    .unwrap()
    .encode();
    bad[0] = b'D';
    assert!(DiskDumpHeader::decode(&bad).unwrap_err().to_string().contains("signature"));
    assert!(SubHeader::decode(&[0u8; 103], Endian::Little).is_err());
    assert_eq!(DUMP_DH_COMPRESSION_MASK, 0x27);
}

#[test]
fn a_kernel_utsname_is_taken_whole_when_it_looks_like_one() {
    let mut raw = [0u8; Utsname::SIZE];
    let fields = ["Linux", "host", "6.1.0-57-amd64", "#1 SMP PREEMPT_DYNAMIC Debian", "x86_64", "(none)"];
    for (i, field) in fields.iter().enumerate() {
        raw[i * UTSNAME_FIELD_LEN..][..field.len()].copy_from_slice(field.as_bytes());
    }
    let u = Utsname::from_kernel(&raw, Some("6.1.0-57-amd64")).expect("a utsname");
    for (i, field) in fields.iter().enumerate() {
        assert_eq!(u.get(i), field.as_bytes());
    }
    assert!(Utsname::from_kernel(&raw, None).is_some(), "without OSRELEASE the release is not checked");
    assert!(Utsname::from_kernel(&raw, Some("6.12.0")).is_none(), "another release");
    let mut other = raw;
    other[..5].copy_from_slice(b"Linuy");
    assert!(Utsname::from_kernel(&other, None).is_none(), "not Linux");
    let mut unterminated = raw;
    unterminated[UTSNAME_FIELD_LEN..2 * UTSNAME_FIELD_LEN].fill(b'x');
    assert!(Utsname::from_kernel(&unterminated, None).is_none(), "a field without its NUL");
}
