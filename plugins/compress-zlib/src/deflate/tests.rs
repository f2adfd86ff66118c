use super::block::Kind;
use super::*;
use flate2::{Decompress, FlushDecompress, Status};

const THOROUGH: Effort = Effort { depth: 32, nice: 258, insert_limit: 258, skip: Effort::NEVER_SKIP };
/// Skips early in literal runs, to exercise the skipping.
const QUICK: Effort = Effort { depth: 1, nice: 8, insert_limit: 4, skip: 2 };

/// `src` inflated back by another decoder (zlib-rs, as `uncompress()`
/// would), which also checks the Adler-32.
fn inflate(stream: &[u8], len: usize) -> Vec<u8> {
    let mut inflate = Decompress::new(true);
    let mut back = vec![0u8; len + 1];
    let status = inflate.decompress(stream, &mut back, FlushDecompress::Finish).unwrap();
    assert_eq!(status, Status::StreamEnd);
    assert_eq!(inflate.total_in() as usize, stream.len(), "the stream ends where it says");
    back.truncate(inflate.total_out() as usize);
    back
}

/// The encoder of the whole window, and the one of 4 KiB pages.
type Whole = PageDeflate<WINDOW>;
type Small = PageDeflate<4096>;

fn round_trip<const W: usize>(encoder: &mut PageDeflate<W>, src: &[u8]) -> (usize, Kind) {
    let mut dst = vec![0u8; PageDeflate::<W>::bound(src.len())];
    let n = encoder.compress(src, &mut dst).expect("the bound fits");
    assert_eq!(inflate(&dst[..n], src.len()), src, "{} bytes", src.len());
    (n, encoder.block.kind)
}

/// Pages like a kernel's: pointers, small counters, text, zero runs and
/// noise, mixed at random.
fn kernel_like(seed: u32, len: usize) -> Vec<u8> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let mut page = Vec::with_capacity(len);
    while page.len() < len {
        let r = next();
        match r % 5 {
            0 => page.extend_from_slice(
                &(0xffff_8880_0000_0000u64 | u64::from(next() & 0xfff_fff8)).to_le_bytes(),
            ),
            1 => page.extend_from_slice(&u64::from(r >> 24).to_le_bytes()),
            2 => page.extend_from_slice(b"kworker/"),
            3 => page.extend(std::iter::repeat_n(0u8, (r >> 8) as usize % 300)),
            _ => page.extend((0..r % 16).map(|_| next() as u8)),
        }
    }
    page.truncate(len);
    page
}

#[test]
fn every_kind_of_page_inflates_back_to_itself() {
    for effort in [QUICK, Effort { depth: 8, nice: 32, insert_limit: 16, skip: 7 }, THOROUGH] {
        let mut encoder = Whole::new(effort);
        for page in vmdump_sdk::testing::corpus() {
            round_trip(&mut encoder, &page.bytes);
        }
        for seed in 0..200 {
            round_trip(&mut encoder, &kernel_like(seed, 4096));
        }
    }
}

#[test]
fn each_kind_of_block_is_chosen_where_it_is_smallest() {
    let mut encoder = Whole::new(THOROUGH);
    let mut state = 99u32;
    let noise: Vec<u8> = (0..4096)
        .map(|_| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (state >> 16) as u8
        })
        .collect();
    let (n, kind) = round_trip(&mut encoder, &noise);
    assert_eq!((n, kind), (Whole::bound(4096), Kind::Stored));
    assert_eq!(round_trip(&mut encoder, b"a short line of text\n").1, Kind::Fixed);
    // Few letters, at random: literals that a page's own code makes short.
    let letters: Vec<u8> = noise.iter().map(|&r| b"eeeeetttaaoin s"[usize::from(r) % 15]).collect();
    assert_eq!(round_trip(&mut encoder, &letters).1, Kind::Dynamic);
    let (n, _) = round_trip(&mut encoder, &[0u8; 4096]);
    assert!(n < 30, "a zero page takes {n} bytes");
}

#[test]
fn edge_lengths_and_the_largest_page_round_trip() {
    let mut encoder = Whole::new(THOROUGH);
    for len in [0, 1, 2, 3, 4, 5, 7, 8, 9, 257, 258, 259, 260, 4095, 16_384, Whole::MAX_INPUT] {
        round_trip(&mut encoder, &kernel_like(len as u32, len));
        round_trip(&mut encoder, &vec![0xa5; len]);
    }
    // Matches of every length and the farthest distance.
    let mut far = kernel_like(1, Whole::MAX_INPUT);
    let (head, tail) = far.split_at_mut(Whole::MAX_INPUT / 2);
    tail.copy_from_slice(head);
    round_trip(&mut encoder, &far);
}

#[test]
fn a_destination_too_small_is_refused_not_overrun() {
    let mut encoder = Whole::new(QUICK);
    let page = kernel_like(3, 4096);
    let (n, _) = round_trip(&mut encoder, &page);
    let mut dst = vec![0u8; n - 1];
    assert_eq!(encoder.compress(&page, &mut dst), None);
}

#[test]
fn skewed_pages_need_length_limited_codes() {
    // Symbol counts in a Fibonacci progression make an unlimited Huffman
    // tree deeper than deflate's 15 bits.
    let mut page = Vec::new();
    let (mut a, mut b) = (1usize, 1usize);
    for symbol in 0..22u8 {
        page.extend(std::iter::repeat_n(symbol, a));
        (a, b) = (b, a + b);
    }
    page.truncate(Whole::MAX_INPUT);
    // Shuffled, so that few runs are left to match.
    let mut state = 17u64;
    for i in (1..page.len()).rev() {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        page.swap(i, (state >> 33) as usize % (i + 1));
    }
    let mut encoder = Whole::new(QUICK);
    round_trip(&mut encoder, &page);
}

/// Sized for 4 KiB pages, the encoder writes the streams of the whole
/// window's, byte for byte.
#[test]
fn the_small_encoder_writes_the_whole_windows_streams() {
    for effort in [QUICK, crate::page_effort(crate::DEFAULT_LEVEL).unwrap(), THOROUGH] {
        let (mut whole, mut small) = (Whole::new(effort), Small::new(effort));
        let pages = vmdump_sdk::testing::corpus().into_iter().map(|page| page.bytes.to_vec());
        for page in pages.chain((0..100).map(|seed| kernel_like(seed, 4096))).chain([vec![7; 4096], vec![]]) {
            let (mut a, mut b) = (vec![0u8; Whole::bound(4096)], vec![0u8; Small::bound(4096)]);
            let (n, m) = (whole.compress(&page, &mut a), small.compress(&page, &mut b));
            assert_eq!((n, &a[..n.unwrap()]), (m, &b[..m.unwrap()]));
            round_trip(&mut small, &page);
        }
    }
    assert_eq!(Small::MAX_INPUT, 4096);
}
