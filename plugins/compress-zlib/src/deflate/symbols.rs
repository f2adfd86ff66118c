//! Deflate's alphabets (RFC 1951 §3.2.5): match lengths and distances as
//! symbols with extra bits, and the parsed page as a list of items.

/// Literal/length symbols: 256 literals, end of block, 29 length codes
/// (286 used; 288 in the fixed code).
pub const LITLEN_SYMBOLS: usize = 288;
/// Distance symbols (30 used; 32 in the fixed code).
pub const DIST_SYMBOLS: usize = 32;
pub const END_OF_BLOCK: usize = 256;
pub const MIN_MATCH: usize = 3;
pub const MAX_MATCH: usize = 258;
/// The farthest a match may reach back.
pub const WINDOW: usize = 32_768;

/// A match as its length symbol (above the end of block) with its extra
/// bits and its distance symbol with its extra bits, in fields of 9, 5, 5
/// and 13 bits.
pub type Item = u32;

pub fn matched(length: Coded, distance: Coded) -> Item {
    length.symbol as u32 | length.extra << 9 | (distance.symbol as u32) << 14 | distance.extra << 19
}

/// A match item's length symbol.
pub fn litlen_symbol(item: Item) -> usize {
    (item & 0x1ff) as usize
}

/// A match item's length extra bits, distance symbol and distance extra
/// bits.
pub fn match_fields(item: Item) -> (u32, usize, u32) {
    ((item >> 9) & 0x1f, ((item >> 14) & 0x1f) as usize, item >> 19)
}

/// A symbol's code index in its alphabet and its extra bits (count, value).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coded {
    pub symbol: usize,
    pub extra_bits: u32,
    pub extra: u32,
}

/// Lengths 3..=258 as symbols 257..=285.
pub fn length_symbol(length: usize) -> Coded {
    let code = usize::from(TABLES.length_code[length]);
    let extra_bits = u32::from(TABLES.length_extra[code]);
    Coded { symbol: 257 + code, extra_bits, extra: (length - usize::from(TABLES.length_base[code])) as u32 }
}

/// Distances 1..=32768 as symbols 0..=29.
pub fn distance_symbol(distance: usize) -> Coded {
    let d = distance - 1;
    let code = usize::from(if d < 256 { TABLES.dist_code_low[d] } else { TABLES.dist_code_high[d >> 7] });
    let extra_bits = u32::from(TABLES.dist_extra[code]);
    Coded { symbol: code, extra_bits, extra: (distance - usize::from(TABLES.dist_base[code])) as u32 }
}

/// The count of extra bits after a literal/length symbol (none after a
/// literal or the end of block).
pub fn litlen_extra_bits(symbol: usize) -> u32 {
    u32::from(TABLES.litlen_extra[symbol])
}

/// The count of extra bits after a distance symbol (0..=29).
pub fn distance_symbol_extra_bits(symbol: usize) -> u32 {
    u32::from(TABLES.dist_extra[symbol])
}

/// The extra bits of each length code (29) and distance code (30).
const fn length_extra_bits(code: usize) -> u8 {
    if code < 8 || code == 28 { 0 } else { ((code - 4) / 4) as u8 }
}

const fn distance_extra_bits(code: usize) -> u8 {
    if code < 4 { 0 } else { ((code - 2) / 2) as u8 }
}

struct Tables {
    length_base: [u16; 29],
    length_extra: [u8; 29],
    litlen_extra: [u8; 512],
    length_code: [u8; MAX_MATCH + 1],
    dist_base: [u16; 30],
    dist_extra: [u8; DIST_SYMBOLS],
    /// The code of distance - 1 below 256, and of (distance - 1) >> 7 above.
    dist_code_low: [u8; 256],
    dist_code_high: [u8; 256],
}

const TABLES: Tables = build_tables();

const fn build_tables() -> Tables {
    let mut t = Tables {
        length_base: [0; 29],
        length_extra: [0; 29],
        litlen_extra: [0; 512],
        length_code: [0; MAX_MATCH + 1],
        dist_base: [0; 30],
        dist_extra: [0; DIST_SYMBOLS],
        dist_code_low: [0; 256],
        dist_code_high: [0; 256],
    };
    let mut base = MIN_MATCH;
    let mut code = 0;
    while code < 29 {
        let extra = length_extra_bits(code);
        t.length_extra[code] = extra;
        t.litlen_extra[257 + code] = extra;
        // Code 28 is length 258 alone, though 227 + 31 would also reach it.
        if code == 28 {
            base = MAX_MATCH;
        }
        t.length_base[code] = base as u16;
        let mut length = base;
        while length < base + (1 << extra) && length <= MAX_MATCH {
            t.length_code[length] = code as u8;
            length += 1;
        }
        base += 1 << extra;
        code += 1;
    }
    let mut base = 1usize;
    let mut code = 0;
    while code < 30 {
        let extra = distance_extra_bits(code);
        t.dist_extra[code] = extra;
        t.dist_base[code] = base as u16;
        let mut d = base - 1;
        while d < base - 1 + (1 << extra) {
            if d < 256 {
                t.dist_code_low[d] = code as u8;
            } else {
                t.dist_code_high[d >> 7] = code as u8;
            }
            d += 1;
        }
        base += 1 << extra;
        code += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_and_distance_maps_back_to_itself() {
        for length in MIN_MATCH..=MAX_MATCH {
            let c = length_symbol(length);
            let code = c.symbol - 257;
            assert!(c.extra < 1 << c.extra_bits || (c.extra == 0 && c.extra_bits == 0), "{length}");
            assert_eq!(usize::from(TABLES.length_base[code]) + c.extra as usize, length);
        }
        assert_eq!(length_symbol(258).symbol, 285);
        assert_eq!(length_symbol(257).symbol, 284);
        for distance in 1..=WINDOW {
            let c = distance_symbol(distance);
            assert!(c.extra < 1 << c.extra_bits || c.extra_bits == 0 && c.extra == 0, "{distance}");
            assert_eq!(usize::from(TABLES.dist_base[c.symbol]) + c.extra as usize, distance);
        }
        assert_eq!(distance_symbol(WINDOW).symbol, 29);
        let item = matched(length_symbol(258), distance_symbol(WINDOW));
        assert_eq!(litlen_symbol(item), 285);
        assert_eq!(match_fields(item), (0, 29, (1 << 13) - 1));
    }
}
