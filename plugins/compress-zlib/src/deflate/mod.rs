//! A deflate encoder for single pages: each call writes one whole zlib
//! stream (RFC 1950) of one deflate block (RFC 1951), the smallest of a
//! dynamic Huffman block, the fixed code's block and a stored block.
//!
//! General encoders size their match finders for long streams and clear
//! hundreds of KiB of tables on every call; here the tables are sized for a
//! page, stay in the L1 cache and cost a few cache lines to clear.

mod block;
mod huffman;
mod matcher;
mod symbols;

pub use matcher::Effort;
pub use symbols::WINDOW;

use block::{BitWriter, Block};
use matcher::{Matcher, Parse};

/// zlib's header: deflate with a 32 KiB window, "fastest" level, no
/// dictionary (CMF 0x78, FLG 0x01; a multiple of 31 together).
const ZLIB_HEADER: [u8; 2] = [0x78, 0x01];

/// One worker's page encoder and its scratch state, for pages of up to
/// `W` bytes (a power of two, at most deflate's 32 KiB window).
pub struct PageDeflate<const W: usize> {
    effort: Effort,
    matcher: Matcher<W>,
    parse: Parse<W>,
    block: Block,
    out: Vec<u8>,
}

impl<const W: usize> PageDeflate<W> {
    /// The largest page it encodes.
    pub const MAX_INPUT: usize = Matcher::<W>::MAX_INPUT;

    pub fn new(effort: Effort) -> Self {
        PageDeflate {
            effort,
            matcher: Matcher::new(),
            parse: Parse::new(),
            block: Block::new(),
            // Eight bytes to spare for the bit writer's stores.
            out: vec![0; Self::bound(Self::MAX_INPUT) + 8],
        }
    }

    /// The most bytes a page of `len` bytes takes: a stored block.
    pub fn bound(len: usize) -> usize {
        ZLIB_HEADER.len() + Block::STORED_OVERHEAD + len + 4
    }

    /// `src` (at most `MAX_INPUT` bytes) as one zlib stream in `dst`; the
    /// stream's length, or None if `dst` is too small for it.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Option<usize> {
        self.matcher.parse(src, self.effort, &mut self.parse);
        self.block.plan(&mut self.parse, src.len());
        self.out[..ZLIB_HEADER.len()].copy_from_slice(&ZLIB_HEADER);
        let bits = BitWriter::new(&mut self.out, ZLIB_HEADER.len());
        let end = self.block.write(&self.parse, src, bits);
        debug_assert_eq!(
            (end - ZLIB_HEADER.len()) as u64,
            self.block.bits.div_ceil(8),
            "the block as planned"
        );
        self.out[end..end + 4].copy_from_slice(&simd_adler32::adler32(&src).to_be_bytes());
        let stream = &self.out[..end + 4];
        dst.get_mut(..stream.len())?.copy_from_slice(stream);
        Some(stream.len())
    }
}

#[cfg(test)]
mod tests;
