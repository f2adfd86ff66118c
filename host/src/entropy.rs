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
    let sum: f64 = counts.iter().filter(|&&c| c > 0).map(|&c| f64::from(c) * log2(f64::from(c))).sum();
    log2(n) - sum / n
}

/// log2 of a positive finite `x` without libm: f64::log2 is the only
/// function vmdump would load libm for, 0.3 MiB of a capture kernel's
/// memory. The exponent, plus the mantissa m's log by the series of
/// atanh((m - 1) / (m + 1)), whose ratio is under 1/9: closer than 1e-11.
fn log2(x: f64) -> f64 {
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32 - 1023;
    let mantissa = f64::from_bits((bits & ((1 << 52) - 1)) | (1023 << 52));
    let z = (mantissa - 1.0) / (mantissa + 1.0);
    let z2 = z * z;
    // z (1 + z^2/3 + z^4/5 + ...), by Horner from the last term.
    let series = ATANH_TERMS.iter().rev().fold(0.0, |acc, &t| acc * z2 + t);
    f64::from(exponent) + 2.0 * std::f64::consts::LOG2_E * z * series
}

/// 1 / (2k + 1) for k = 0..12: the terms of atanh's series.
const ATANH_TERMS: [f64; 12] = {
    let mut terms = [0.0; 12];
    let mut k = 0;
    while k < 12 {
        terms[k] = 1.0 / (2 * k + 1) as f64;
        k += 1;
    }
    terms
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_is_std_s_for_every_count_of_a_page_and_more() {
        for c in (1..=70_000u32).chain([1 << 20, 123_456_789, u32::MAX]) {
            let x = f64::from(c);
            assert!((log2(x) - x.log2()).abs() < 1e-11, "{c}: {} against {}", log2(x), x.log2());
        }
        assert_eq!(log2(4096.0), 12.0);
    }

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
