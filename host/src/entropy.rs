//! A cheap test for pages that no compressor will shrink (random data,
//! encrypted or already compressed memory), so the host can store them raw
//! without spending a compression on them, as btrfs does before compressing.
//!
//! Stage one samples every 16th byte and counts the distinct values: text,
//! code, slab and sparse pages show few, random pages about 160 of 256. Only
//! pages that pass it pay for stage two, the byte entropy of the whole page.
//! A page above 7.9 bits per byte cannot lose more than about 50 bytes to
//! Huffman coding, less than a zlib or zstd frame adds: it would be stored
//! raw anyway, unless it repeats itself, which LZ matching shrinks: stage
//! three looks for any repeated aligned 8-byte word (random data has none;
//! a pattern with a period under ~512 bytes always does).

/// Distinct sampled bytes above which a page may be random (of 256
/// samples; a random page shows 162 on average, standard deviation 4).
const SAMPLE_DISTINCT: u32 = 150;
/// Bits per byte above which a page is treated as incompressible.
const ENTROPY_LIMIT: f64 = 7.9;

/// Whether `page` is random enough that compressing it is wasted work.
pub fn looks_incompressible(page: &[u8]) -> bool {
    if page.len() < 1024 || distinct_sampled(page) < SAMPLE_DISTINCT {
        return false;
    }
    entropy_bits_per_byte(page) > ENTROPY_LIMIT && !has_repeated_word(page)
}

/// Whether two aligned 8-byte words of `page` are equal (open addressing
/// over a fixed table; the page is at most as many words as the table has
/// slots halved, larger pages are sampled by their first 4 KiB).
fn has_repeated_word(page: &[u8]) -> bool {
    const SLOTS: usize = 1024;
    let mut table = [0u64; SLOTS];
    let mut zero_seen = false;
    for chunk in page[..page.len().min(4096)].chunks_exact(8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        if word == 0 {
            if zero_seen {
                return true;
            }
            zero_seen = true;
            continue;
        }
        let mut slot = (word.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize;
        loop {
            match table[slot] {
                0 => break table[slot] = word,
                w if w == word => return true,
                _ => slot = (slot + 1) % SLOTS,
            }
        }
    }
    false
}

fn distinct_sampled(page: &[u8]) -> u32 {
    let mut seen = [0u64; 4];
    for &b in page.iter().step_by(page.len() / 256) {
        seen[usize::from(b >> 6)] |= 1 << (b & 63);
    }
    seen.iter().map(|w| w.count_ones()).sum()
}

fn entropy_bits_per_byte(page: &[u8]) -> f64 {
    // Four interleaved histograms: consecutive equal bytes do not wait on
    // each other's increments.
    let mut counts4 = [[0u32; 256]; 4];
    let mut chunks = page.chunks_exact(4);
    for c in &mut chunks {
        for (lane, &b) in c.iter().enumerate() {
            counts4[lane][usize::from(b)] += 1;
        }
    }
    let mut counts = [0u32; 256];
    for &b in chunks.remainder() {
        counts[usize::from(b)] += 1;
    }
    for (i, count) in counts.iter_mut().enumerate() {
        *count += counts4.iter().map(|h| h[i]).sum::<u32>();
    }
    let n = page.len() as f64;
    let sum: f64 = counts.iter().filter(|&&c| c > 0).map(|&c| f64::from(c) * f64::from(c).log2()).sum();
    n.log2() - sum / n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_page(seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn random_pages_are_recognised_and_structured_ones_are_not() {
        for seed in 1..20 {
            assert!(looks_incompressible(&random_page(seed)), "seed {seed}");
        }
        let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog 0123456789 "
            .iter()
            .copied()
            .cycle()
            .take(4096)
            .collect();
        let mut half = random_page(5);
        half[2048..].fill(0);
        let mut ascending = vec![0u8; 4096];
        ascending.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        for (name, page) in [("zero", vec![0u8; 4096]), ("text", text), ("half random", half)] {
            assert!(!looks_incompressible(&page), "{name}");
        }
        // Every byte value equally often (entropy 8 bits, the sample sees all
        // values), but a repeating pattern that LZ shrinks: not random.
        assert!(!looks_incompressible(&ascending));
        let mut odd_period = random_page(9);
        for i in 300..4096 {
            odd_period[i] = odd_period[i - 300];
        }
        assert!(!looks_incompressible(&odd_period), "period 300");
    }

    #[test]
    fn entropy_of_known_distributions() {
        assert_eq!(entropy_bits_per_byte(&[7u8; 4096]), 0.0);
        let two: Vec<u8> = (0..4096).map(|i| (i % 2) as u8).collect();
        assert!((entropy_bits_per_byte(&two) - 1.0).abs() < 1e-9);
    }
}
