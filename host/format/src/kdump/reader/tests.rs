use super::*;
use crate::elf::{Endian, Notes};
use crate::kdump::{DUMP_DH_COMPRESSED_ZSTD, Layout};

const BS: usize = 4096;
const MAX_MAPNR: u64 = 10_000;

fn is_ram(pfn: u64) -> bool {
    pfn < 3000 || (5000..9000).contains(&pfn)
}
fn is_dumpable(pfn: u64) -> bool {
    is_ram(pfn) && !pfn.is_multiple_of(7)
}
fn is_zero(pfn: u64) -> bool {
    pfn.is_multiple_of(5)
}
fn is_compressed(pfn: u64) -> bool {
    pfn.is_multiple_of(3)
}
fn raw_page(pfn: u64) -> Vec<u8> {
    (0..BS).map(|i| (pfn as usize).wrapping_mul(31).wrapping_add(i) as u8).collect()
}
fn fake_compressed(pfn: u64) -> Vec<u8> {
    vec![(pfn % 251) as u8; 100 + (pfn % 50) as usize]
}

/// A dump with level 1 (shared zero page), zstd status, some pages
/// "compressed" (opaque bytes) and some raw; `status` extra bits OR'ed in.
fn build(extra_status: u32) -> Vec<u8> {
    build_in(extra_status, Endian::Little)
}

/// [`build`] with every integer in byte order `e`.
fn build_in(extra_status: u32, e: Endian) -> Vec<u8> {
    let text = b"OSRELEASE=6.1.0-test\nPAGESIZE=4096\nNUMBER(phys_base)=-411041792\nCRASHTIME=1700000000\n";
    let note = crate::elf::write::note(e, b"VMCOREINFO", 0, text);
    let notes = Notes::from_bytes(note, e).unwrap();
    let dumpable: Vec<u64> = (0..MAX_MAPNR).filter(|&p| is_dumpable(p)).collect();
    let l = Layout::from_notes(MAX_MAPNR, BS as u32, &notes, dumpable.len() as u64).unwrap();
    let mut out = vec![0u8; l.data_offset as usize];
    let h = l.disk_dump_header(DUMP_DH_COMPRESSED_ZSTD | extra_status, 1, e);
    out[..DISK_DUMP_HEADER_SIZE].copy_from_slice(&h.encode());
    out[BS..BS + SUB_HEADER_SIZE].copy_from_slice(&l.sub_header(0, 1).encode(e));
    let nb = &notes.bytes;
    out[l.offset_note as usize..l.offset_note as usize + nb.len()].copy_from_slice(nb);
    for p in 0..MAX_MAPNR {
        let byte = (p / 8) as usize;
        if is_ram(p) {
            out[l.bitmap1_offset as usize + byte] |= 1 << (p % 8);
        }
        if is_dumpable(p) {
            out[l.bitmap2_offset as usize + byte] |= 1 << (p % 8);
        }
    }
    out.extend(vec![0u8; BS]); // shared zero page
    for (i, &p) in dumpable.iter().enumerate() {
        let (bytes, flags, offset) = if is_zero(p) {
            (Vec::new(), 0, l.data_offset)
        } else if is_compressed(p) {
            (fake_compressed(p), DUMP_DH_COMPRESSED_ZSTD, out.len() as u64)
        } else {
            (raw_page(p), 0, out.len() as u64)
        };
        let size = if is_zero(p) { BS as u32 } else { bytes.len() as u32 };
        let d = PageDesc { offset, size, flags, page_flags: 0 };
        let at = l.page_desc_offset_of(i as u64) as usize;
        out[at..at + PAGE_DESC_SIZE].copy_from_slice(&d.encode(e));
        out.extend(bytes);
    }
    out
}

#[test]
fn reads_every_page_of_a_valid_dump() {
    reads_every_page_of(&build(0));
}

/// s390x's dumps: the header, sub header, notes and descriptors big-endian.
#[test]
fn reads_every_page_of_a_big_endian_dump() {
    let bytes = build_in(0, Endian::Big);
    assert_eq!(KdumpReader::open(&bytes[..]).unwrap().header().endian, Endian::Big);
    reads_every_page_of(&bytes);
}

fn reads_every_page_of(bytes: &[u8]) {
    let r = KdumpReader::open(bytes).unwrap();
    assert_eq!(r.max_mapnr(), MAX_MAPNR);
    assert_eq!(r.num_dumpable(), (0..MAX_MAPNR).filter(|&p| is_dumpable(p)).count() as u64);
    assert_eq!(r.compression(), DUMP_DH_COMPRESSED_ZSTD);
    assert!(!r.is_incomplete());
    assert_eq!(r.dump_level(), 1);
    let info = r.vmcoreinfo().unwrap();
    assert_eq!(info.osrelease(), Some("6.1.0-test"));
    let zero = r.zero_page_offset().unwrap();
    for p in (0..MAX_MAPNR + 5).step_by(3) {
        assert_eq!(r.is_ram(p).unwrap(), is_ram(p) && p < MAX_MAPNR, "pfn {p}");
        match r.page(p).unwrap() {
            StoredPage::Hole => assert!(!is_ram(p) || p >= MAX_MAPNR),
            StoredPage::Excluded => assert!(is_ram(p) && !is_dumpable(p)),
            StoredPage::Lost | StoredPage::OtherPiece => panic!("pfn {p}: lost or elsewhere in a whole dump"),
            StoredPage::Stored { desc, bytes } if is_zero(p) => {
                assert_eq!((desc.offset, bytes.len()), (zero, BS));
                assert!(bytes.iter().all(|&b| b == 0));
            }
            StoredPage::Stored { desc, bytes } if is_compressed(p) => {
                assert_eq!((desc.flags, bytes), (DUMP_DH_COMPRESSED_ZSTD, fake_compressed(p)), "pfn {p}");
            }
            StoredPage::Stored { desc, bytes } => {
                assert_eq!((desc.flags, bytes), (0, raw_page(p)), "pfn {p}")
            }
        }
    }
}

#[test]
fn phys_base_prefers_vmcoreinfo_over_the_sub_header() {
    let mut bytes = build(0);
    // What QEMU writes: the decimal "-411041792" parsed as hex (§9).
    let qemu = 0x4_1104_1792u64.wrapping_neg();
    bytes[BS..BS + 8].copy_from_slice(&qemu.to_le_bytes());
    assert_eq!(KdumpReader::open(&bytes[..]).unwrap().phys_base(), -411_041_792);
    // Without VMCOREINFO (offset/size 0/0, QEMU without the vmcoreinfo
    // device) only the sub header is left.
    bytes[BS + 32..BS + 48].fill(0);
    let r = KdumpReader::open(&bytes[..]).unwrap();
    assert!(r.vmcoreinfo().is_none());
    assert_eq!(r.phys_base(), qemu as i64);
}

#[test]
fn iterates_dumpable_pfns_with_their_index() {
    let bytes = build(0);
    let r = KdumpReader::open(&bytes[..]).unwrap();
    let got: Vec<(u64, u64)> = r.dumpable_pfns().map(Result::unwrap).collect();
    let want: Vec<u64> = (0..MAX_MAPNR).filter(|&p| is_dumpable(p)).collect();
    assert_eq!(got.len(), want.len());
    for (i, (&(pfn, index), &p)) in got.iter().zip(&want).enumerate() {
        assert_eq!((pfn, index), (p, i as u64));
        assert_eq!(r.page_at(pfn, index).unwrap(), r.page(pfn).unwrap());
    }
}

#[test]
fn descriptor_beyond_the_file_names_the_pfn() {
    let mut bytes = build(0);
    let r = KdumpReader::open(&bytes[..]).unwrap();
    let desc_at = r.geometry().page_desc_offset as usize + 3 * PAGE_DESC_SIZE;
    let (pfn, _) = r.dumpable_pfns().nth(3).unwrap().unwrap();
    bytes[desc_at..desc_at + 8].copy_from_slice(&(u64::MAX - 10).to_le_bytes());
    let r = KdumpReader::open(&bytes[..]).unwrap();
    let e = r.page(pfn).unwrap_err().to_string();
    assert!(e.contains(&format!("pfn {pfn:#x}")) && e.contains("beyond the end of the file"), "{e}");
}

#[test]
fn incomplete_dump_reports_lost_pages() {
    let mut bytes = build(DUMP_DH_COMPRESSED_INCOMPLETE);
    let r = KdumpReader::open(&bytes[..]).unwrap();
    assert!(r.is_incomplete());
    let (pfn, index) = r.dumpable_pfns().last().unwrap().unwrap();
    let at = (r.geometry().page_desc_offset + index * PAGE_DESC_SIZE as u64) as usize;
    bytes[at..at + PAGE_DESC_SIZE].fill(0);
    let r = KdumpReader::open(&bytes[..]).unwrap();
    assert_eq!(r.page(pfn).unwrap(), StoredPage::Lost);
}

#[test]
fn rejects_bad_headers_with_named_fields() {
    let good = build(0);
    let cases: [(usize, &[u8], &str); 5] = [
        (0, b"KDUMPXXX", "signature"),
        (8, &0i32.to_le_bytes(), "header_version"),
        (428, &4000i32.to_le_bytes(), "block_size"),
        (BS + 96, &100_000u64.to_le_bytes(), "bitmap_blocks"),
        (424, &3u32.to_le_bytes(), "several compression"),
    ];
    for (at, patch, want) in cases {
        let mut bytes = good.clone();
        bytes[at..at + patch.len()].copy_from_slice(patch);
        let e = KdumpReader::open(&bytes[..]).unwrap_err().to_string();
        assert!(e.contains(want), "patch at {at}: {e}");
    }
}

#[test]
fn truncation_anywhere_is_an_error_or_a_page_error_never_a_panic() {
    let good = build(0);
    let data = KdumpReader::open(&good[..]).unwrap().data_offset() as usize;
    let mut cut = 0;
    while cut < good.len() {
        let bytes = &good[..cut];
        match KdumpReader::open(bytes) {
            Err(_) => assert!(cut < data, "header part complete at {cut} but open failed"),
            Ok(r) => {
                assert!(cut >= data, "opened a dump cut at {cut:#x} before the data at {data:#x}");
                let errors =
                    r.dumpable_pfns().filter_map(|x| x.and_then(|(p, i)| r.page_at(p, i)).err()).count();
                assert!(errors > 0 || cut == good.len(), "cut at {cut:#x}: no page error");
            }
        }
        cut += if cut < data { 97 } else { 4099 };
    }
}

#[test]
fn random_byte_flips_in_the_headers_never_panic() {
    let good = build(0);
    let data = KdumpReader::open(&good[..]).unwrap().data_offset() as usize;
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..400 {
        let mut bytes = good.clone();
        for _ in 0..1 + next() % 4 {
            // Mostly the header, sub header and descriptors; sometimes anywhere before the data.
            let at = match next() % 3 {
                0 => (next() % 464) as usize,
                1 => BS + (next() % 104) as usize,
                _ => (next() % data as u64) as usize,
            };
            bytes[at] ^= 1 << (next() % 8);
        }
        if let Ok(r) = KdumpReader::open(&bytes[..]) {
            for item in r.dumpable_pfns().take(2000) {
                let Ok((pfn, index)) = item else { break };
                let _ = r.page_at(pfn, index);
                let _ = r.page(pfn);
            }
        }
    }
}

#[test]
fn garbage_and_empty_files_are_clean_errors() {
    for len in [0usize, 10, 463, 464, 4096, 5000] {
        let bytes = vec![0xA5u8; len];
        assert!(KdumpReader::open(&bytes[..]).is_err());
    }
    let mut header_only = build(0);
    header_only.truncate(BS + 50);
    let e = KdumpReader::open(&header_only[..]).unwrap_err().to_string();
    assert!(e.contains("kdump_sub_header"), "{e}");
}

#[test]
fn descriptor_index_far_beyond_the_table_is_an_error_not_an_overflow() {
    // Found by fuzzing (target kdump): the descriptor's offset was computed
    // as page_desc_offset + 24 * index before index was checked.
    let bytes = build(0);
    let r = KdumpReader::open(&bytes[..]).unwrap();
    for index in [r.num_dumpable(), u64::MAX / 24, u64::MAX] {
        let e = r.descriptor(3, index).unwrap_err().to_string();
        assert!(e.contains("beyond the") && e.contains("descriptors"), "{e}");
    }
}
