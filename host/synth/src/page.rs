//! Deterministic page contents of a synthetic vmcore: a pure function of
//! (seed, pfn), so a dump can be verified page by page without the source.
//!
//! The mix imitates kernel memory: zero pages, text-like pages (page cache
//! of text files), sparse pages (a few kernel pointers in a zero page),
//! slab-like pages (64-byte objects) and random (incompressible) pages.

use super::SynthSpec;
use super::kernel::{self, Override};

/// Page size of every synthetic vmcore (x86_64).
pub const PAGE_SIZE: usize = 4096;

/// What kind of content a page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageKind {
    /// All zero bytes.
    Zero,
    /// ASCII words and lines, like page cache of text files.
    Text,
    /// A zero page with 1-8 kernel pointers.
    Sparse,
    /// 64-byte objects with pointers, counters and flags.
    Slab,
    /// Pseudo-random bytes (incompressible).
    Random,
}

/// SplitMix64 finaliser: a cheap, well-mixed 64-bit hash.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Hash of (seed, pfn) from which everything about the page is derived.
pub(crate) fn page_hash(seed: u64, pfn: u64) -> u64 {
    mix(seed ^ mix(pfn))
}

/// The kind of page `pfn` holds: `data_percent` % of pages are non-zero.
/// Pages of the kernel structures ([`SynthSpec::kernel`]) are
/// [`PageKind::Zero`] when all zero (struct pages) and [`PageKind::Sparse`]
/// otherwise (page tables, `mem_section`, kernel variables).
pub fn page_kind(spec: &SynthSpec, pfn: u64) -> PageKind {
    if let Some(layout) = kernel::layout(spec)
        && let Some(o) = layout.override_at(pfn)
    {
        return if o == Override::Zero { PageKind::Zero } else { PageKind::Sparse };
    }
    let h = page_hash(spec.seed, pfn);
    if h % 100 >= u64::from(spec.data_percent.min(100)) {
        return PageKind::Zero;
    }
    match (h >> 8) % 100 {
        0..25 => PageKind::Text,
        25..55 => PageKind::Sparse,
        55..85 => PageKind::Slab,
        _ => PageKind::Random,
    }
}

/// Xorshift64* generator for the bytes inside one page.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn kernel_pointer(&mut self) -> u64 {
        0xffff_8881_0000_0000 | (self.next() & 0xffff_fff8)
    }
}

/// Fills `buf` with the content of page `pfn` (full page, before any
/// segment-tail truncation; see [`super::expected_page`]).
pub fn page(spec: &SynthSpec, pfn: u64, buf: &mut [u8; PAGE_SIZE]) {
    if let Some(layout) = kernel::layout(spec)
        && let Some(o) = layout.override_at(pfn)
    {
        match o {
            Override::Zero => buf.fill(0),
            Override::Bytes(bytes) => buf.copy_from_slice(bytes),
        }
        return;
    }
    let kind = page_kind(spec, pfn);
    let mut rng = Rng(page_hash(spec.seed, pfn) | 1);
    buf.fill(0);
    match kind {
        PageKind::Zero => {}
        PageKind::Text => fill_text(&mut rng, buf),
        PageKind::Sparse => fill_sparse(&mut rng, buf),
        PageKind::Slab => fill_slab(&mut rng, buf),
        PageKind::Random => {
            for chunk in buf.chunks_exact_mut(8) {
                chunk.copy_from_slice(&rng.next().to_le_bytes());
            }
            buf[0] |= 1; // never all zero
        }
    }
}

const WORDS: &[&str] = &[
    "the",
    "kernel",
    "page",
    "memory",
    "struct",
    "return",
    "static",
    "int",
    "void",
    "mutex_lock",
    "spin_unlock",
    "error",
    "device",
    "buffer",
    "offset",
    "value",
    "config",
    "module",
    "of",
    "and",
    "to",
    "in",
    "is",
    "file",
    "data",
    "read",
    "write",
    "system",
    "user",
    "init",
];

fn fill_text(rng: &mut Rng, buf: &mut [u8; PAGE_SIZE]) {
    let mut pos = 0;
    while pos < PAGE_SIZE {
        let r = rng.next();
        let word = WORDS[(r % WORDS.len() as u64) as usize].as_bytes();
        let sep: &[u8] = if r >> 60 == 0 { b".\n" } else { b" " };
        for &b in word.iter().chain(sep) {
            if pos == PAGE_SIZE {
                break;
            }
            buf[pos] = b;
            pos += 1;
        }
    }
}

fn fill_sparse(rng: &mut Rng, buf: &mut [u8; PAGE_SIZE]) {
    let count = 1 + rng.next() % 8;
    for _ in 0..count {
        let word = (rng.next() % (PAGE_SIZE as u64 / 8)) as usize;
        let ptr = rng.kernel_pointer();
        buf[word * 8..word * 8 + 8].copy_from_slice(&ptr.to_le_bytes());
    }
}

fn fill_slab(rng: &mut Rng, buf: &mut [u8; PAGE_SIZE]) {
    for obj in buf.chunks_exact_mut(64) {
        let r = rng.next();
        if r.is_multiple_of(8) {
            continue; // a free object
        }
        obj[0..8].copy_from_slice(&rng.kernel_pointer().to_le_bytes());
        obj[8..16].copy_from_slice(&rng.kernel_pointer().to_le_bytes());
        obj[16..20].copy_from_slice(&(1 + (r >> 8) as u32 % 4).to_le_bytes()); // refcount
        obj[20..24].copy_from_slice(&((r >> 16) as u32 & 0x0f0f).to_le_bytes()); // flags
        obj[24..32].copy_from_slice(&((r >> 24) % 100_000).to_le_bytes()); // a counter
        obj[32..40].copy_from_slice(b"dentry\0\0");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_deterministic_and_data_pages_non_zero() {
        let spec = SynthSpec { data_percent: 60, ..Default::default() };
        let (mut a, mut b) = ([0u8; PAGE_SIZE], [0u8; PAGE_SIZE]);
        let mut kinds = std::collections::HashSet::new();
        for pfn in 0..2000 {
            page(&spec, pfn, &mut a);
            page(&spec, pfn, &mut b);
            assert_eq!(a, b);
            let kind = page_kind(&spec, pfn);
            kinds.insert(kind);
            assert_eq!(kind == PageKind::Zero, a.iter().all(|&x| x == 0), "pfn {pfn}");
        }
        assert_eq!(kinds.len(), 5, "all kinds appear: {kinds:?}");
        let other = SynthSpec { seed: spec.seed + 1, ..spec.clone() };
        let differs = (0..200).any(|pfn| {
            page(&spec, pfn, &mut a);
            page(&other, pfn, &mut b);
            a != b
        });
        assert!(differs);
    }

    #[test]
    fn data_percent_is_respected() {
        for pct in [0u8, 1, 50, 100] {
            let spec = SynthSpec { data_percent: pct, ..Default::default() };
            let data = (0..20_000).filter(|&p| page_kind(&spec, p) != PageKind::Zero).count();
            let expect = 20_000 * usize::from(pct) / 100;
            assert!(data.abs_diff(expect) <= 400, "{pct}%: {data} vs {expect}");
        }
    }
}
