//! Shared pieces of the benchmarks: a kernel-like page mix and a median timer.
#![deny(unsafe_code)]

pub mod system_zlib;

use std::time::Instant;

use vmdump_synth::{self as synth, PageKind, SynthSpec};

/// Page size of the corpus.
pub const PAGE_SIZE: usize = 4096;

/// `count` non-zero pages of the synthetic generator's kernel-like mix
/// (text, sparse, slab and random pages), in pfn order.
pub fn kernel_like_pages(count: usize, seed: u64) -> Vec<[u8; PAGE_SIZE]> {
    let spec = SynthSpec { seed, data_percent: 100, ..SynthSpec::default() };
    (0u64..)
        .filter(|&pfn| synth::page_kind(&spec, pfn) != PageKind::Zero)
        .take(count)
        .map(|pfn| {
            let mut page = [0u8; PAGE_SIZE];
            synth::page(&spec, pfn, &mut page);
            page
        })
        .collect()
}

/// Runs `f` once and returns its result with the seconds it took.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed().as_secs_f64())
}

/// The smallest of `values` (the least disturbed of repeated runs).
pub fn fastest(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::INFINITY, f64::min)
}
