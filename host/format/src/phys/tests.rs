use super::*;

const PS: u64 = 4096;

fn seg(paddr: u64, file_offset: u64, file_size: u64, mem_size: u64) -> LoadSegment {
    LoadSegment { paddr, vaddr: 0, file_offset, file_size, mem_size }
}

#[test]
fn holes_and_counts() {
    // RAM [0, 640K) and [1M, 3M): legacy hole in between.
    let loads = [seg(0, 0x1000, 0xA0000, 0xA0000), seg(0x10_0000, 0xA1000, 0x20_0000, 0x20_0000)];
    let map = PhysMap::new(&loads, PS).unwrap();
    assert_eq!(map.runs().len(), 2);
    assert_eq!(map.max_pfn(), 0x300);
    assert_eq!(map.ram_pages(), 0xA0 + 0x200);
    assert!(map.is_ram(0x9f) && !map.is_ram(0xA0) && !map.is_ram(0xff) && map.is_ram(0x100));
    assert!(!map.is_ram(0x300) && !map.is_ram(u64::MAX));
    assert_eq!(map.count_in(0..0x300), map.ram_pages());
    assert_eq!(map.count_in(0x90..0x110), 0x10 + 0x10);
    assert_eq!(map.count_in(0xA0..0x100), 0);
    assert_eq!(map.count_in(0x2ff..u64::MAX), 1);
    assert_eq!(map.count_in(5..5), 0);
    let loc = map.locate(0x101).unwrap();
    assert_eq!(
        loc,
        PageLocation { file_offset: 0xA1000 + PS, lead_zero: 0, file_bytes: 4096, page_size: 4096 }
    );
    assert!(loc.is_whole());
    assert_eq!(map.locate(0xA0), None);
}

#[test]
fn overlapping_segments_read_from_the_earlier_program_header() {
    // Header 0: kernel text at 0xb000000 (own file copy), header 1: RAM covering it.
    let text = seg(0xb00_0000, 0x2000, 0x343_0000, 0x343_0000);
    let ram = seg(0x10_0000, 0x343_2000, 0x14f0_0000, 0x14f0_0000);
    let map = PhysMap::new(&[text, ram], PS).unwrap();
    let runs: Vec<_> = map.runs().iter().map(|r| (r.start_pfn, r.end_pfn, r.segment_index)).collect();
    assert_eq!(runs, vec![(0x100, 0xb000, 1), (0xb000, 0xe430, 0), (0xe430, 0x15000, 1)]);
    assert_eq!(map.ram_pages(), 0x14f00, "overlap counted once");
    assert_eq!(map.locate(0xb000).unwrap().file_offset, 0x2000);
    assert_eq!(map.locate(0xafff).unwrap().file_offset, 0x343_2000 + (0xafff - 0x100) * PS);
    assert_eq!(map.locate(0xe430).unwrap().file_offset, 0x343_2000 + (0xe430 - 0x100) * PS);
    // Reversed header order: RAM wins everywhere and the runs merge.
    let map = PhysMap::new(&[ram, text], PS).unwrap();
    assert_eq!(map.runs().len(), 1);
    assert_eq!(map.locate(0xb000).unwrap().file_offset, 0x343_2000 + (0xb000 - 0x100) * PS);
}

#[test]
fn mid_page_ends_and_starts_are_zero_filled() {
    // Ends 0x800 into its last page; the next starts 0x200 into a page.
    let a = seg(0, 0, 0x2800, 0x2800);
    let b = seg(0x5200, 0x3000, 0x1000, 0x1000);
    let map = PhysMap::new(&[a, b], PS).unwrap();
    assert_eq!(map.ram_pages(), 3 + 2);
    let tail = map.locate(2).unwrap();
    assert_eq!(
        (tail.file_offset, tail.lead_zero, tail.file_bytes, tail.tail_zero()),
        (0x2000, 0, 0x800, 0x800)
    );
    let head = map.locate(5).unwrap();
    assert_eq!((head.file_offset, head.lead_zero, head.file_bytes), (0x3000, 0x200, 0xE00));
    let next = map.locate(6).unwrap();
    assert_eq!((next.file_offset, next.lead_zero, next.file_bytes), (0x3E00, 0, 0x200));
    assert_eq!(map.max_pfn(), 7);
}

#[test]
fn bytes_beyond_file_size_read_as_zero() {
    let s = seg(0x10000, 0, 0x1800, 0x4000);
    let mut file = vec![0xAAu8; 0x1800];
    file[0x1000] = 0x55;
    let map = PhysMap::new(&[s], PS).unwrap();
    let mut buf = vec![0xEEu8; PS as usize];
    assert!(map.read_page(&file, 0x11, &mut buf).unwrap());
    assert_eq!(buf[0], 0x55);
    assert!(buf[1..0x800].iter().all(|&b| b == 0xAA));
    assert!(buf[0x800..].iter().all(|&b| b == 0));
    assert!(map.read_page(&file, 0x12, &mut buf).unwrap());
    assert!(buf.iter().all(|&b| b == 0));
    assert!(!map.read_page(&file, 0x20, &mut buf).unwrap(), "hole");
    assert!(map.read_page(&file, 0x10, &mut [0u8; 100]).is_err());
    assert_eq!(map.locate(0x13).unwrap().file_bytes, 0);
}

#[test]
fn large_maps_are_cheap_and_truncation_works() {
    // 256 GiB in 3 segments: 64 M pfns, 3 runs, no per-pfn memory.
    let gib = 1u64 << 30;
    let loads = [
        seg(0, 0, 2 * gib, 2 * gib),
        seg(4 * gib, 0, 100 * gib, 100 * gib),
        seg(110 * gib, 0, 156 * gib, 156 * gib),
    ];
    let map = PhysMap::new(&loads, PS).unwrap();
    assert_eq!(map.runs().len(), 3);
    assert_eq!(map.ram_pages(), 258 * gib / PS);
    assert_eq!(map.max_pfn(), 266 * gib / PS);
    assert_eq!(map.count_in(0..4 * gib / PS), 2 * gib / PS);
    let t = map.truncated(5 * gib / PS);
    assert_eq!((t.max_pfn(), t.ram_pages(), t.runs().len()), (5 * gib / PS, 3 * gib / PS, 2));
    assert_eq!(map.truncated(0).ram_pages(), 0);
}

#[test]
fn rejects_bad_input() {
    assert!(matches!(PhysMap::new(&[seg(0, 0, 1, 1)], 4095), Err(FormatError::BadPageSize(4095))));
    assert!(matches!(PhysMap::new(&[], PS), Err(FormatError::NoLoad)));
    assert!(matches!(PhysMap::new(&[seg(0, 0, 0, 0)], PS), Err(FormatError::NoLoad)));
    // Extreme addresses saturate instead of overflowing.
    let map = PhysMap::new(&[seg(u64::MAX - 0x1000, 0, 0x2000, 0x2000)], PS).unwrap();
    assert!(map.locate(map.max_pfn() - 1).is_some());
}

#[test]
fn page_far_beyond_p_filesz_of_a_huge_segment_is_zero_not_an_overflow() {
    // Found by fuzzing (target elf): p_offset 0x1000, p_filesz 0,
    // p_memsz 2^64 - 256; the file offset of the last page overflowed u64.
    let loads = [seg(0, 0x1000, 0, u64::MAX - 0xff)];
    let map = PhysMap::new(&loads, PS).unwrap();
    let last = map.max_pfn() - 1;
    let loc = map.locate(last).unwrap();
    assert_eq!((loc.lead_zero, loc.file_bytes), (0, 0));
    let mut buf = vec![0xa5u8; PS as usize];
    assert!(map.read_page(&[0u8; 0x1000][..], last, &mut buf).unwrap());
    assert!(buf.iter().all(|&b| b == 0));
}

#[test]
fn holes_cut_out_leave_the_rest_where_it_was() {
    // RAM [1M, 3M) and [4M, 8M); holes over [2M, 2.5M), across the gap [2.75M, 5M), and past the end.
    let loads =
        [seg(0x10_0000, 0x1000, 0x20_0000, 0x20_0000), seg(0x40_0000, 0x20_1000, 0x40_0000, 0x40_0000)];
    let map = PhysMap::new(&loads, PS).unwrap();
    let holes = [0x280..0x500, 0x200..0x250, 0x7ff..0x900];
    let cut = map.without(&holes);
    let runs: Vec<_> = cut.runs().iter().map(|r| (r.start_pfn, r.end_pfn)).collect();
    assert_eq!(runs, vec![(0x100, 0x200), (0x250, 0x280), (0x500, 0x7ff)]);
    assert_eq!(cut.ram_pages(), map.ram_pages() - 0x50 - (0x300 - 0x280) - (0x500 - 0x400) - 1);
    for pfn in [0x100, 0x1ff, 0x250, 0x27f, 0x500, 0x7fe] {
        assert_eq!(cut.locate(pfn), map.locate(pfn), "pfn {pfn:#x}");
    }
    for pfn in [0x200, 0x24f, 0x280, 0x4ff, 0x7ff] {
        assert_eq!(cut.locate(pfn), None, "pfn {pfn:#x}");
    }
    assert_eq!(map.without(&[]), map);
}
