//! Finds the matches of one page: hash chains over 3-byte sequences sized
//! for a page (the tables fit in the L1 cache and are cleared for the
//! price of a few cache lines), greedy parsing with a bounded search.
//!
//! The matcher and the parse are sized for pages of up to `W` bytes (a
//! power of two, at most deflate's window): a 4 KiB page's tables take
//! 68 KiB, the whole window's 400 KiB, which a capture kernel feels.

use super::symbols::{DIST_SYMBOLS, Item, LITLEN_SYMBOLS, MAX_MATCH, WINDOW};
use super::symbols::{distance_symbol, length_symbol, matched};

const HASH_BITS: u32 = 13;
/// Bytes hashed to find a match; shorter matches are not looked for.
const HASHED: usize = 3;
/// The hashed bytes of a little-endian u32.
const HASHED_MASK: u32 = 0x00ff_ffff;

/// Positions at the end of a long match that are still hashed.
const TAIL_INSERTS: usize = 4;

/// How hard the parser looks for a match.
#[derive(Clone, Copy, Debug)]
pub struct Effort {
    /// Candidates tried at each position.
    pub depth: u32,
    /// A match this long ends the search.
    pub nice: usize,
    /// The positions inside a match longer than this are not looked up
    /// later (not hashed), but for its last few.
    pub insert_limit: usize,
    /// Literal runs speed up: after each 2^skip literals in a row, one
    /// more position is passed over between lookups (random-looking data
    /// is crossed quickly; `Effort::NEVER_SKIP` looks up every position).
    pub skip: u32,
}

impl Effort {
    /// A `skip` that never passes a position over (within a page).
    pub const NEVER_SKIP: u32 = 63;
}

/// One match of a parse and the literals before it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sequence {
    /// Literal bytes between the previous match and this one.
    pub literals: u16,
    /// The match's length in bytes.
    pub length: u16,
    /// The match's symbols and extra bits.
    pub item: Item,
}

/// The parse of one page: its matches, each with the literals before it,
/// the literals after the last one, and how often each symbol occurs.
pub struct Parse<const W: usize> {
    sequences: Box<[Sequence; W]>,
    count: usize,
    pub trailing_literals: usize,
    pub litlen_freqs: [u32; LITLEN_SYMBOLS],
    pub dist_freqs: [u32; DIST_SYMBOLS],
}

impl<const W: usize> Parse<W> {
    pub fn new() -> Self {
        Parse {
            sequences: vec![Sequence::default(); W].into_boxed_slice().try_into().expect("W sequences"),
            count: 0,
            trailing_literals: 0,
            litlen_freqs: [0; LITLEN_SYMBOLS],
            dist_freqs: [0; DIST_SYMBOLS],
        }
    }

    pub fn sequences(&self) -> &[Sequence] {
        &self.sequences[..self.count]
    }
}

/// Appends to a parse; the count of matches and the start of the pending
/// literals are kept in locals (registers) until `finish`.
struct Appender<'a, const W: usize> {
    parse: &'a mut Parse<W>,
    count: usize,
    literals_from: usize,
}

impl<'a, const W: usize> Appender<'a, W> {
    fn new(parse: &'a mut Parse<W>) -> Self {
        parse.litlen_freqs = [0; LITLEN_SYMBOLS];
        parse.dist_freqs = [0; DIST_SYMBOLS];
        Appender { parse, count: 0, literals_from: 0 }
    }

    fn literal(&mut self, byte: u8) {
        self.parse.litlen_freqs[usize::from(byte)] += 1;
    }

    /// A match at `pos`: the literals since the last match go before it.
    /// Matches never outnumber the bytes of a page, which are at most `W`
    /// (the mask tells the compiler so).
    fn matched(&mut self, pos: usize, length: usize, distance: usize) {
        let (length_code, distance_code) = (length_symbol(length), distance_symbol(distance));
        self.parse.sequences[self.count & (W - 1)] = Sequence {
            literals: (pos - self.literals_from) as u16,
            length: length as u16,
            item: matched(length_code, distance_code),
        };
        self.count += 1;
        self.literals_from = pos + length;
        self.parse.litlen_freqs[length_code.symbol] += 1;
        self.parse.dist_freqs[distance_code.symbol] += 1;
    }

    fn finish(self, len: usize) {
        self.parse.count = self.count;
        self.parse.trailing_literals = len - self.literals_from;
    }
}

/// The hash chains: for each hash the last position that had it, and for
/// each position the previous one with the same hash (positions are
/// stored plus one, so 0 ends a chain); and the page being parsed, copied
/// where every read of eight bytes at a position inside it stays in
/// bounds (so the compiler needs no checks): twice `W` bytes, as stable
/// Rust has no `[u8; W + 8]`.
pub struct Matcher<const W: usize> {
    head: Box<[u16; 1 << HASH_BITS]>,
    prev: Box<[u16; W]>,
    page: Box<[[u8; W]; 2]>,
}

impl<const W: usize> Matcher<W> {
    /// The largest input a matcher parses: every match stays in the
    /// window, and positions fit their 16-bit links.
    pub const MAX_INPUT: usize = W;
    /// Positions are below `W`; masking with this tells the compiler.
    const POSITION_MASK: usize = W - 1;

    pub fn new() -> Self {
        const { assert!(W.is_power_of_two() && W <= WINDOW, "a power of two, at most the window") };
        Matcher {
            head: Box::new([0; 1 << HASH_BITS]),
            prev: vec![0; W].into_boxed_slice().try_into().expect("W links"),
            page: vec![[0; W]; 2].into_boxed_slice().try_into().expect("two halves"),
        }
    }

    /// Parses `src` (at most `MAX_INPUT` bytes) into `parse`.
    pub fn parse(&mut self, src: &[u8], effort: Effort, parse: &mut Parse<W>) {
        assert!(src.len() <= Self::MAX_INPUT, "a page of at most {} bytes", Self::MAX_INPUT);
        let mut parse = Appender::new(parse);
        self.head.fill(0);
        self.page.as_flattened_mut()[..src.len()].copy_from_slice(src);
        let len = src.len();
        // Hashing reads four bytes whatever HASHED is.
        let hashable_end = len.saturating_sub(3);
        let mut pos = 0;
        while pos < hashable_end {
            let (length, distance) = self.longest_match(len, pos, effort);
            if length >= HASHED {
                parse.matched(pos, length, distance);
                let end = (pos + length).min(hashable_end);
                let from = if length <= effort.insert_limit {
                    pos + 1
                } else {
                    end.saturating_sub(TAIL_INSERTS).max(pos + 1)
                };
                for later in from..end {
                    self.insert(later);
                }
                pos += length;
            } else {
                let step = 1 + ((pos - parse.literals_from) >> effort.skip);
                let next = (pos + step).min(hashable_end);
                for &byte in &src[pos..next] {
                    parse.literal(byte);
                }
                pos = next;
            }
        }
        for &byte in &src[pos..] {
            parse.literal(byte);
        }
        parse.finish(len);
    }

    /// Records `pos` in its chain; returns the position before it there
    /// (plus one, 0 for none).
    fn insert(&mut self, pos: usize) -> usize {
        let hash = hash(self.read_u32(pos));
        let previous = self.head[hash];
        self.prev[pos & Self::POSITION_MASK] = previous;
        self.head[hash] = (pos + 1) as u16;
        usize::from(previous)
    }

    /// The longest match for `pos` in a page of `len` bytes among the
    /// candidates tried, as (length, distance); records `pos` in its chain.
    fn longest_match(&mut self, len: usize, pos: usize, effort: Effort) -> (usize, usize) {
        let mut candidate = self.insert(pos);
        let max = (len - pos).min(MAX_MATCH);
        let (mut best, mut distance) = (0, 0);
        let first = self.read_u32(pos) & HASHED_MASK;
        for _ in 0..effort.depth {
            if candidate == 0 {
                break;
            }
            let start = candidate - 1;
            let could_be_longer = best < HASHED || self.byte(start + best) == self.byte(pos + best);
            if could_be_longer && self.read_u32(start) & HASHED_MASK == first {
                let length = self.common_length(start, pos, max);
                if length > best {
                    (best, distance) = (length, pos - start);
                    if length >= effort.nice || length == max {
                        break;
                    }
                }
            }
            candidate = usize::from(self.prev[start & Self::POSITION_MASK]);
        }
        (best, distance)
    }

    /// How many bytes from `earlier` and `pos` agree, up to `max` (which
    /// `pos + max` does not pass the end of the page).
    fn common_length(&self, earlier: usize, pos: usize, max: usize) -> usize {
        let mut length = 0;
        while length < max {
            let diff = self.read_u64(earlier + length) ^ self.read_u64(pos + length);
            if diff != 0 {
                return (length + (diff.trailing_zeros() / 8) as usize).min(max);
            }
            length += 8;
        }
        max
    }

    fn byte(&self, pos: usize) -> u8 {
        self.page.as_flattened()[pos & Self::POSITION_MASK]
    }

    fn read_u32(&self, pos: usize) -> u32 {
        let pos = pos & Self::POSITION_MASK;
        u32::from_le_bytes(self.page.as_flattened()[pos..pos + 4].try_into().expect("four bytes"))
    }

    fn read_u64(&self, pos: usize) -> u64 {
        let pos = pos & Self::POSITION_MASK;
        u64::from_le_bytes(self.page.as_flattened()[pos..pos + 8].try_into().expect("eight bytes"))
    }
}

fn hash(bytes: u32) -> usize {
    ((bytes & HASHED_MASK).wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
}
