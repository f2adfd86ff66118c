//! One deflate block holding a whole page: chooses the smallest of the
//! three kinds of block (RFC 1951 §3.2.3) and writes it.

use super::huffman::Code;
use super::matcher::Parse;
use super::symbols::{DIST_SYMBOLS, END_OF_BLOCK, LITLEN_SYMBOLS};
use super::symbols::{distance_symbol_extra_bits, litlen_extra_bits};
use super::symbols::{litlen_symbol, match_fields};

/// Code-length symbols, and the order their own lengths are sent in.
const PRECODE_SYMBOLS: usize = 19;
const PRECODE_ORDER: [usize; PRECODE_SYMBOLS] =
    [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
/// Repeat the previous length 3-6 times; repeat zero 3-10 and 11-138 times.
const REPEAT_PREVIOUS: u8 = 16;
const REPEAT_ZERO_SHORT: u8 = 17;
const REPEAT_ZERO_LONG: u8 = 18;

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Kind {
    Stored,
    Fixed,
    Dynamic,
}

/// The plan of a page's block, kept by a worker from page to page.
pub struct Block {
    pub kind: Kind,
    /// The planned block's size in bits.
    pub bits: u64,
    litlen: Code<LITLEN_SYMBOLS>,
    dist: Code<DIST_SYMBOLS>,
    /// The dynamic header's code lengths, run-length coded: (symbol, extra).
    runs: LengthRuns,
    precode: Code<PRECODE_SYMBOLS>,
    litlen_count: usize,
    dist_count: usize,
    precode_count: usize,
    fixed_litlen: Code<LITLEN_SYMBOLS>,
    fixed_dist: Code<DIST_SYMBOLS>,
}

impl Block {
    /// Bytes a stored block adds to its data: the header bits padded to a
    /// byte, then LEN and NLEN.
    pub const STORED_OVERHEAD: usize = 5;

    pub fn new() -> Self {
        let fixed_litlen = Code::from_lengths(std::array::from_fn(|s| match s {
            0..=143 => 8,
            144..=255 => 9,
            256..=279 => 7,
            _ => 8,
        }));
        let fixed_dist = Code::from_lengths([5; DIST_SYMBOLS]);
        Block {
            kind: Kind::Stored,
            bits: 0,
            litlen: fixed_litlen.clone(),
            dist: fixed_dist.clone(),
            runs: LengthRuns::new(),
            precode: Code::from_lengths([0; PRECODE_SYMBOLS]),
            litlen_count: 0,
            dist_count: 0,
            precode_count: 0,
            fixed_litlen,
            fixed_dist,
        }
    }

    /// Plans the smallest block for `parse` of a page of `len` bytes.
    pub fn plan<const W: usize>(&mut self, parse: &mut Parse<W>, len: usize) {
        parse.litlen_freqs[END_OF_BLOCK] = 1;
        let extra = extra_bits(parse);
        let dynamic = self.plan_dynamic(parse) + extra;
        let fixed =
            3 + self.fixed_litlen.cost(&parse.litlen_freqs) + self.fixed_dist.cost(&parse.dist_freqs) + extra;
        let stored = 8 * (Self::STORED_OVERHEAD + len) as u64;
        (self.kind, self.bits) = if stored <= fixed.min(dynamic) {
            (Kind::Stored, stored)
        } else if fixed <= dynamic {
            (Kind::Fixed, fixed)
        } else {
            (Kind::Dynamic, dynamic)
        };
    }

    /// Writes the planned block (the last of the stream) for `parse` of
    /// `src`; returns the position after it.
    pub fn write<const W: usize>(&self, parse: &Parse<W>, src: &[u8], mut bits: BitWriter) -> usize {
        bits.put(1, 1);
        match self.kind {
            Kind::Stored => {
                bits.put(0b00, 2);
                let (out, pos) = bits.finish();
                let len = src.len() as u16;
                out[pos..pos + 2].copy_from_slice(&len.to_le_bytes());
                out[pos + 2..pos + 4].copy_from_slice(&(!len).to_le_bytes());
                out[pos + 4..pos + 4 + src.len()].copy_from_slice(src);
                return pos + 4 + src.len();
            }
            Kind::Fixed => {
                bits.put(0b01, 2);
                bits = write_items(bits, parse, src, &self.fixed_litlen, &self.fixed_dist);
            }
            Kind::Dynamic => {
                bits.put(0b10, 2);
                self.write_dynamic_header(&mut bits);
                bits = write_items(bits, parse, src, &self.litlen, &self.dist);
            }
        }
        bits.finish().1
    }

    /// Builds the dynamic codes and their header; returns the bits of the
    /// header and of the symbols (extra bits aside).
    fn plan_dynamic<const W: usize>(&mut self, parse: &Parse<W>) -> u64 {
        self.litlen.make_optimal(&parse.litlen_freqs, 15);
        self.dist.make_optimal(&parse.dist_freqs, 15);
        self.litlen_count = used_count(&self.litlen.lengths, 257);
        self.dist_count = used_count(&self.dist.lengths, 1);
        let mut lengths = [0u8; LITLEN_SYMBOLS + DIST_SYMBOLS];
        lengths[..self.litlen_count].copy_from_slice(&self.litlen.lengths[..self.litlen_count]);
        let sent = self.litlen_count + self.dist_count;
        lengths[self.litlen_count..sent].copy_from_slice(&self.dist.lengths[..self.dist_count]);
        self.runs.code(&lengths[..sent]);
        self.precode.make_optimal(&self.runs.freqs, 7);
        self.precode_count = PRECODE_ORDER
            .iter()
            .rposition(|&s| self.precode.lengths[s] > 0)
            .map_or(4, |last| (last + 1).max(4));
        let header = 5
            + 5
            + 4
            + 3 * self.precode_count as u64
            + self.precode.cost(&self.runs.freqs)
            + self.runs.extra_bits;
        3 + header + self.litlen.cost(&parse.litlen_freqs) + self.dist.cost(&parse.dist_freqs)
    }

    fn write_dynamic_header(&self, bits: &mut BitWriter) {
        bits.put((self.litlen_count - 257) as u64, 5);
        bits.put((self.dist_count - 1) as u64, 5);
        bits.put((self.precode_count - 4) as u64, 4);
        bits.flush();
        for &symbol in &PRECODE_ORDER[..self.precode_count] {
            bits.put(u64::from(self.precode.lengths[symbol]), 3);
            bits.flush();
        }
        for &(symbol, extra) in self.runs.symbols() {
            let s = usize::from(symbol);
            bits.put(u64::from(self.precode.codewords[s]), u32::from(self.precode.lengths[s]));
            bits.put(u64::from(extra), precode_extra_bits(symbol));
            bits.flush();
        }
    }
}

/// The symbols to send of an alphabet: through the last one with a code,
/// and at least `min`.
fn used_count(lengths: &[u8], min: usize) -> usize {
    lengths.iter().rposition(|&l| l > 0).map_or(min, |last| (last + 1).max(min))
}

/// The extra bits every match of `parse` carries, whatever the code.
fn extra_bits<const W: usize>(parse: &Parse<W>) -> u64 {
    let lengths: u64 =
        (257..286).map(|s| u64::from(parse.litlen_freqs[s]) * u64::from(litlen_extra_bits(s))).sum();
    let distances: u64 =
        (0..30).map(|s| u64::from(parse.dist_freqs[s]) * u64::from(distance_symbol_extra_bits(s))).sum();
    lengths + distances
}

fn precode_extra_bits(symbol: u8) -> u32 {
    match symbol {
        REPEAT_PREVIOUS => 2,
        REPEAT_ZERO_SHORT => 3,
        REPEAT_ZERO_LONG => 7,
        _ => 0,
    }
}

/// The code lengths of a dynamic header as code-length symbols with their
/// extra bits, how often each symbol occurs, and their extra bits in all.
struct LengthRuns {
    symbols: [(u8, u8); LITLEN_SYMBOLS + DIST_SYMBOLS],
    count: usize,
    freqs: [u32; PRECODE_SYMBOLS],
    extra_bits: u64,
}

impl LengthRuns {
    fn new() -> Self {
        LengthRuns {
            symbols: [(0, 0); LITLEN_SYMBOLS + DIST_SYMBOLS],
            count: 0,
            freqs: [0; PRECODE_SYMBOLS],
            extra_bits: 0,
        }
    }

    fn symbols(&self) -> &[(u8, u8)] {
        &self.symbols[..self.count]
    }

    fn push(&mut self, symbol: u8, extra: usize) {
        self.symbols[self.count] = (symbol, extra as u8);
        self.count += 1;
        self.freqs[usize::from(symbol)] += 1;
        self.extra_bits += u64::from(precode_extra_bits(symbol));
    }

    /// Codes `lengths` (at most one per symbol of both alphabets).
    fn code(&mut self, lengths: &[u8]) {
        (self.count, self.freqs, self.extra_bits) = (0, [0; PRECODE_SYMBOLS], 0);
        let mut at = 0;
        while at < lengths.len() {
            let length = lengths[at];
            let mut end = at + 1;
            while end < lengths.len() && lengths[end] == length {
                end += 1;
            }
            let mut run = end - at;
            at = end;
            if length == 0 {
                while run >= 11 {
                    let n = run.min(138);
                    self.push(REPEAT_ZERO_LONG, n - 11);
                    run -= n;
                }
                if run >= 3 {
                    self.push(REPEAT_ZERO_SHORT, run - 3);
                    run = 0;
                }
            } else {
                self.push(length, 0);
                run -= 1;
                while run >= 3 {
                    let n = run.min(6);
                    self.push(REPEAT_PREVIOUS, n - 3);
                    run -= n;
                }
            }
            for _ in 0..run {
                self.push(length, 0);
            }
        }
    }
}

/// Writes the literals and matches of `parse` of `src`, and the end of
/// block. The writer is rebuilt in a local, whose state then stays in
/// registers (the caller's lives in memory).
fn write_items<'a, const W: usize>(
    bits: BitWriter<'a>,
    parse: &Parse<W>,
    src: &[u8],
    litlen: &Code<LITLEN_SYMBOLS>,
    dist: &Code<DIST_SYMBOLS>,
) -> BitWriter<'a> {
    let BitWriter { out, pos, buf, count } = bits;
    let mut bits = BitWriter { out, pos, buf, count };
    let mut at = 0;
    for sequence in parse.sequences() {
        let literals = usize::from(sequence.literals);
        bits.literals(&src[at..at + literals], litlen);
        at += literals + usize::from(sequence.length);
        let symbol = litlen_symbol(sequence.item);
        let (length_extra, distance, distance_extra) = match_fields(sequence.item);
        bits.put(u64::from(litlen.codewords[symbol]), u32::from(litlen.lengths[symbol]));
        bits.put(u64::from(length_extra), litlen_extra_bits(symbol));
        bits.put(u64::from(dist.codewords[distance]), u32::from(dist.lengths[distance]));
        bits.put(u64::from(distance_extra), distance_symbol_extra_bits(distance));
        bits.flush();
    }
    bits.literals(&src[at..], litlen);
    bits.put(u64::from(litlen.codewords[END_OF_BLOCK]), u32::from(litlen.lengths[END_OF_BLOCK]));
    bits
}

/// Bits written least significant first into a buffer with at least
/// eight bytes to spare past the stream: each flush stores eight bytes
/// and keeps the whole ones.
pub struct BitWriter<'a> {
    out: &'a mut [u8],
    pos: usize,
    buf: u64,
    count: u32,
}

impl<'a> BitWriter<'a> {
    pub fn new(out: &'a mut [u8], pos: usize) -> Self {
        BitWriter { out, pos, buf: 0, count: 0 }
    }

    /// Appends the low `n` bits of `value`; at most 56 bits may be put
    /// between flushes.
    #[inline(always)]
    fn put(&mut self, value: u64, n: u32) {
        self.buf |= value << self.count;
        self.count += n;
    }

    /// Writes the whole bytes put so far.
    #[inline(always)]
    fn flush(&mut self) {
        self.out[self.pos..self.pos + 8].copy_from_slice(&self.buf.to_le_bytes());
        let bytes = self.count / 8;
        self.pos += bytes as usize;
        // At most 56 bits were put: fewer than eight whole bytes.
        self.buf >>= 8 * bytes;
        self.count -= 8 * bytes;
    }

    /// Writes `bytes` as literals of `code`, three (at most 15 bits
    /// each) to a flush.
    #[inline(always)]
    fn literals(&mut self, bytes: &[u8], code: &Code<LITLEN_SYMBOLS>) {
        let mut triples = bytes.chunks_exact(3);
        for triple in &mut triples {
            for &byte in triple {
                self.put(
                    u64::from(code.codewords[usize::from(byte)]),
                    u32::from(code.lengths[usize::from(byte)]),
                );
            }
            self.flush();
        }
        for &byte in triples.remainder() {
            self.put(
                u64::from(code.codewords[usize::from(byte)]),
                u32::from(code.lengths[usize::from(byte)]),
            );
            self.flush();
        }
    }

    /// Pads with zero bits to a whole byte and writes what is pending;
    /// returns the buffer and the position after the bits.
    fn finish(mut self) -> (&'a mut [u8], usize) {
        self.count = self.count.next_multiple_of(8);
        self.flush();
        (self.out, self.pos)
    }
}
