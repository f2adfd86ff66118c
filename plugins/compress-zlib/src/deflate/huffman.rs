//! Length-limited canonical Huffman codes (RFC 1951 §3.2.2).

/// The code of one alphabet: each symbol's length in bits (0: unused) and
/// its codeword, bit-reversed so that it can be written least significant
/// bit first as deflate wants.
#[derive(Clone)]
pub struct Code<const N: usize> {
    pub lengths: [u8; N],
    pub codewords: [u16; N],
}

impl<const N: usize> Code<N> {
    /// The optimal code for `freqs` (see `make_optimal`).
    #[cfg(test)]
    pub fn optimal(freqs: &[u32; N], limit: u32) -> Self {
        let mut code = Code { lengths: [0; N], codewords: [0; N] };
        code.make_optimal(freqs, limit);
        code
    }

    /// Makes this code the optimal one for `freqs` with no codeword
    /// longer than `limit`, in place. The code is always complete (its
    /// Kraft sum is exactly 1): if fewer than two symbols occur, unused ones
    /// are given codes too, since inflaters refuse incomplete codes.
    pub fn make_optimal(&mut self, freqs: &[u32; N], limit: u32) {
        let mut ranked = [0u32; N];
        let mut count = 0;
        for (symbol, &freq) in freqs.iter().enumerate() {
            if freq > 0 {
                ranked[count] = rank_key(freq, symbol);
                count += 1;
            }
        }
        let mut filler = 0;
        while count < 2 {
            while freqs[filler] > 0 {
                filler += 1;
            }
            ranked[count] = rank_key(0, filler);
            filler += 1;
            count += 1;
        }
        let ranked = &mut ranked[..count];
        ranked.sort_unstable();
        let per_length = lengths_per_count::<N>(ranked, limit);
        self.lengths = [0; N];
        let mut next = ranked.iter();
        for (length, &count) in per_length.iter().enumerate().rev() {
            for _ in 0..count {
                let &key = next.next().expect("a symbol for every length counted");
                self.lengths[ranked_symbol(key)] = length as u8;
            }
        }
        self.assign_codewords(&per_length);
    }

    /// The canonical code of these lengths.
    pub fn from_lengths(lengths: [u8; N]) -> Self {
        // Lengths are at most 15 (the masks tell the compiler).
        let mut per_length = [0u32; 16];
        for &length in &lengths {
            per_length[usize::from(length & 15)] += 1;
        }
        let mut code = Code { lengths, codewords: [0; N] };
        code.assign_codewords(&per_length);
        code
    }

    /// The canonical codewords of the lengths, of which `per_length` has
    /// the count of each.
    fn assign_codewords(&mut self, per_length: &[u32; 16]) {
        let mut next = [0u32; 16];
        for length in 1..16 {
            let shorter = if length == 1 { 0 } else { per_length[length - 1] };
            next[length] = (next[length - 1] + shorter) << 1;
        }
        // No branch on unused symbols: their codeword comes out as 0.
        for (codeword, &length) in self.codewords.iter_mut().zip(&self.lengths) {
            let length = u32::from(length & 15);
            let code = next[length as usize];
            next[length as usize] += 1;
            *codeword = ((code.reverse_bits() >> (31 - length)) >> 1) as u16;
        }
    }

    /// Bits that `freqs` costs in this code.
    pub fn cost(&self, freqs: &[u32; N]) -> u64 {
        freqs.iter().zip(&self.lengths).map(|(&f, &l)| u64::from(f) * u64::from(l)).sum()
    }
}

/// Bits of a rank key that hold the symbol; the frequency is above them.
const SYMBOL_BITS: u32 = 9;

/// A key that sorts by frequency, then symbol (frequencies of a page of
/// at most 32 KiB fit the bits left).
fn rank_key(freq: u32, symbol: usize) -> u32 {
    freq << SYMBOL_BITS | symbol as u32
}

fn ranked_symbol(key: u32) -> usize {
    (key & ((1 << SYMBOL_BITS) - 1)) as usize
}

fn ranked_freq(key: u32) -> u64 {
    u64::from(key >> SYMBOL_BITS)
}

/// How many of the `ranked` symbols (at least two, least frequent first)
/// get each length, limit included, for an optimal complete code with no
/// length above `limit`.
fn lengths_per_count<const N: usize>(ranked: &[u32], limit: u32) -> [u32; 16] {
    let limit = limit as usize;
    let mut per_length = [0u32; 16];
    let mut depths = [0u8; N];
    tree_depths(ranked, &mut depths);
    for &depth in &depths[..ranked.len()] {
        per_length[usize::from(depth).min(limit)] += 1;
    }
    fit_to_kraft(&mut per_length, limit);
    per_length
}

/// The depth of each leaf of the Huffman tree of `ranked` (ascending
/// weights), built with two queues: the leaves in order, and the internal
/// nodes, which are made in ascending weight. Depths past 255 are cut
/// there (they are cut to the limit anyway).
fn tree_depths<const N: usize>(ranked: &[u32], depths: &mut [u8; N]) {
    let leaves = ranked.len();
    let mut weight = [0u64; N];
    let mut leaf_parent = [0u16; N];
    let mut node_parent = [0u16; N];
    let (mut next_leaf, mut next_node) = (0, 0);
    for node in 0..leaves - 1 {
        let mut sum = 0u64;
        for _ in 0..2 {
            let take_leaf = next_leaf < leaves
                && (next_node == node || ranked_freq(ranked[next_leaf]) <= weight[next_node]);
            if take_leaf {
                sum += ranked_freq(ranked[next_leaf]);
                leaf_parent[next_leaf] = node as u16;
                next_leaf += 1;
            } else {
                sum += weight[next_node];
                node_parent[next_node] = node as u16;
                next_node += 1;
            }
        }
        weight[node] = sum;
    }
    // The root is the last node made; every other node's parent comes
    // later. Node depths reuse `weight`, no longer needed.
    let node_depth = &mut weight;
    node_depth[leaves - 2] = 0;
    for node in (0..leaves - 2).rev() {
        node_depth[node] = node_depth[usize::from(node_parent[node])] + 1;
    }
    for (depth, &parent) in depths.iter_mut().zip(&leaf_parent[..leaves]) {
        *depth = (node_depth[usize::from(parent)] + 1).min(255) as u8;
    }
}

/// Moves leaves between lengths until the Kraft sum of `per_length` is
/// exactly 1 (in units of 2^-limit): too long a code after lengths were
/// cut to the limit is lengthened at its deepest short leaves, and a
/// deficit is filled by shortening the deepest leaves.
fn fit_to_kraft(per_length: &mut [u32; 16], limit: usize) {
    let full = 1u64 << limit;
    let units = |length: usize| 1u64 << (limit - length);
    let mut kraft: u64 = (1..=limit).map(|l| u64::from(per_length[l]) * units(l)).sum();
    while kraft > full {
        let length = (1..limit).rev().find(|&l| per_length[l] > 0).expect("a leaf above the limit");
        per_length[length] -= 1;
        per_length[length + 1] += 1;
        kraft -= units(length + 1);
    }
    while kraft < full {
        let length = (2..=limit).rev().find(|&l| per_length[l] > 0).expect("a leaf below the root");
        per_length[length] -= 1;
        per_length[length - 1] += 1;
        kraft += units(length);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kraft<const N: usize>(code: &Code<N>) -> f64 {
        code.lengths.iter().filter(|&&l| l > 0).map(|&l| 0.5f64.powi(i32::from(l))).sum()
    }

    fn prefix_free<const N: usize>(code: &Code<N>) -> bool {
        let words: Vec<(u16, u8)> =
            (0..N).filter(|&s| code.lengths[s] > 0).map(|s| (code.codewords[s], code.lengths[s])).collect();
        words.iter().enumerate().all(|(i, &(a, la))| {
            words.iter().enumerate().all(|(j, &(b, lb))| {
                let short = la.min(lb);
                i == j || (a & ((1 << short) - 1)) != (b & ((1 << short) - 1))
            })
        })
    }

    #[test]
    fn codes_are_complete_prefix_free_and_within_the_limit() {
        let mut state = 7u32;
        for case in 0..300 {
            let mut freqs = [0u32; 40];
            for f in freqs.iter_mut() {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                // Skewed weights (powers of two) force lengths past the limit.
                *f = match (state >> 16) % 4 {
                    0 => 0,
                    1 => 1 << ((state >> 8) % 24),
                    _ => (state >> 20) % 100,
                };
            }
            if case % 50 == 0 {
                freqs = [0; 40];
                freqs[case % 40] = 5;
            }
            for limit in [7, 9, 15] {
                let code = Code::optimal(&freqs, limit);
                assert_eq!(kraft(&code), 1.0, "case {case} limit {limit}: {:?}", code.lengths);
                assert!(code.lengths.iter().all(|&l| u32::from(l) <= limit));
                assert!(freqs.iter().zip(&code.lengths).all(|(&f, &l)| f == 0 || l > 0));
                assert!(prefix_free(&code), "case {case}");
            }
        }
    }

    #[test]
    fn an_unlimited_code_is_optimal() {
        // Weights 1, 1, 2, 4, 8: the classic lengths 4, 4, 3, 2, 1.
        let code = Code::optimal(&[8, 4, 2, 1, 1], 15);
        assert_eq!(code.lengths, [1, 2, 3, 4, 4]);
        assert_eq!(code.cost(&[8, 4, 2, 1, 1]), 8 + 8 + 6 + 4 + 4);
    }
}
