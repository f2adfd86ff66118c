//! The `patterns` parameter and the page test: a page is excluded when it is
//! one pattern word repeated from its first byte to its last.

use vmdump_sdk::parse_u64;

/// Bytes compared at a time: a block of the pattern repeated, so that the
/// page is checked with a few `memcmp`s instead of 512 word compares.
const BLOCK: usize = 256;

/// One pattern, prepared for the page test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    word: [u8; 8],
    block: [u8; BLOCK],
}

impl Pattern {
    /// The pattern of the 64-bit `value`, as a little-endian word in memory.
    pub fn new(value: u64) -> Self {
        let word = value.to_le_bytes();
        let mut block = [0u8; BLOCK];
        block.chunks_exact_mut(8).for_each(|w| w.copy_from_slice(&word));
        Self { word, block }
    }

    /// Whether `page` is this pattern repeated (with early exit: the first
    /// word decides for almost every page).
    pub fn fills(&self, page: &[u8]) -> bool {
        page.len() >= 8
            && page[..8] == self.word
            && page.chunks(BLOCK).all(|chunk| chunk == &self.block[..chunk.len()])
    }
}

/// Parses `text` (`"0x6b6b6b6b6b6b6b6b, 0x5a5a5a5a5a5a5a5a"`).
///
/// # Errors
/// A message naming the bad entry.
pub fn parse(text: &str) -> Result<Vec<Pattern>, String> {
    let mut values = Vec::new();
    for (i, entry) in text.split(',').map(str::trim).enumerate() {
        let value = match entry {
            "" => return Err(format!("entry {} is empty", i + 1)),
            _ => parse_u64(entry)
                .ok_or_else(|| format!("`{entry}` is not a 64-bit number (decimal, or hex with 0x)"))?,
        };
        if value == 0 {
            return Err("0 would drop zero pages: dump level 1 handles them (as one shared page)".into());
        }
        if !values.contains(&value) {
            values.push(value);
        }
    }
    Ok(values.into_iter().map(Pattern::new).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_of_one_repeated_word_matches_and_nothing_else() {
        let p = Pattern::new(0x1122_3344_5566_7788);
        let page = 0x1122_3344_5566_7788u64.to_le_bytes().repeat(512);
        assert!(p.fills(&page));
        assert!(p.fills(&page[..4096 - 8]), "any length of whole words");
        for at in [0, 7, 255, 256, 2048, 4095] {
            let mut changed = page.clone();
            changed[at] ^= 1;
            assert!(!p.fills(&changed), "byte {at} changed");
        }
        assert!(!p.fills(&[]) && !p.fills(&page[..4]));
    }

    #[test]
    fn entries_are_parsed_deduplicated_and_named_when_bad() {
        assert_eq!(parse("0x6b6b6b6b6b6b6b6b, 7740398493674204011 ,0x5a").unwrap().len(), 2);
        assert!(parse("0x5a,").unwrap_err().contains("entry 2 is empty"));
        assert!(parse("0x5a,-3").unwrap_err().contains("`-3` is not a 64-bit number"));
        assert!(parse("0x1_0000_0000_0000_0000").unwrap_err().contains("is not a 64-bit number"));
        assert!(parse("0").unwrap_err().contains("dump level 1"));
    }
}
