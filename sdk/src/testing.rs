//! The conformance kit: one call checks a compressor plugin against the
//! contract (feature `testing`); [`check_filter`] does the same for filters.
//!
//! ```ignore
//! #[test]
//! fn conformance() {
//!     vmdump_sdk::testing::check_compressor(crate::vmdump_compressor(), &Params::default()).unwrap();
//! }
//! ```
//!
//! It runs the plugin through its ABI table (in-process for a Rust plugin,
//! through the host's loader for a `.so`), on a page corpus like kernel memory,
//! and checks: round trip through the plugin's own decompress and, for the
//! standard formats, through an independent decoder; output within `bound`;
//! `reset` gives the same bytes as a fresh context; contexts on several
//! threads give the same bytes as one; an unknown parameter is refused.

mod filter;
mod kernel;

use std::fmt;
use std::sync::Arc;

use crate::client::{CompressorModule, CompressorPlugin, StderrHost};
use crate::{KdumpFormat, Params};

pub use filter::{FilterReport, PageCase, check_filter};
pub use kernel::{
    Erasure, FakeKernel, FakeProcess, KernelFilterReport, KernelMarks, PAGE_OFFSET, SAMPLE_TASKS,
    check_kernel_filter, task_layout,
};

/// Page size used by the kit (the x86_64 page).
pub const PAGE_SIZE: usize = 4096;

/// A broken rule: which check, on which page, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The check (`"round trip"`).
    pub check: &'static str,
    /// The page kind (`"text"`), or empty.
    pub page: String,
    /// What went wrong.
    pub detail: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.page.is_empty() {
            write!(f, "conformance check `{}` failed: {}", self.check, self.detail)
        } else {
            write!(f, "conformance check `{}` failed on the {} page: {}", self.check, self.page, self.detail)
        }
    }
}

impl std::error::Error for Failure {}

fn fail(check: &'static str, page: &str, detail: impl fmt::Display) -> Failure {
    Failure { check, page: page.to_owned(), detail: detail.to_string() }
}

/// What the kit measured on a passing plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Plugin name.
    pub name: String,
    /// Pages checked.
    pub pages: usize,
    /// Sum of compressed sizes over the corpus.
    pub compressed_bytes: usize,
    /// Whether an independent decoder checked the output.
    pub independent_decoder: bool,
}

/// A named test page.
pub struct Page {
    /// Kind of content.
    pub kind: &'static str,
    /// The bytes (one page).
    pub bytes: Vec<u8>,
}

/// Deterministic xorshift generator (no external crates in the kit).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn words_page(mut fill: impl FnMut(usize) -> u64) -> Vec<u8> {
    (0..PAGE_SIZE / 8).flat_map(|i| fill(i).to_le_bytes()).collect()
}

/// The corpus: zero, sparse, text-like, slab-like, repeated, random pages.
pub fn corpus() -> Vec<Page> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let text: Vec<u8> = b"kernel: [    1.234567] EXT4-fs (vda1): mounted filesystem with ordered data mode. "
        .iter()
        .copied()
        .cycle()
        .take(PAGE_SIZE)
        .collect();
    let sparse = words_page(|i| if i % 97 == 5 { 0xffff_8881_0000_0000 | (i as u64 * 64) } else { 0 });
    let slab = words_page(|i| match i % 8 {
        0 | 1 => 0xffff_8881_0420_0000 + (i as u64 / 8) * 64,
        2 => 1,
        3 => 0xffff_ffff_81c0_0000 + (i as u64 % 3) * 8,
        _ => 0,
    });
    let random = words_page(|_| rng.next());
    let mut half_random = random.clone();
    half_random[PAGE_SIZE / 2..].fill(0);
    let mut one_byte = vec![0u8; PAGE_SIZE];
    one_byte[PAGE_SIZE - 1] = 1;
    vec![
        Page { kind: "zero", bytes: vec![0; PAGE_SIZE] },
        Page { kind: "one-byte", bytes: one_byte },
        Page { kind: "sparse", bytes: sparse },
        Page { kind: "text", bytes: text },
        Page { kind: "slab", bytes: slab },
        Page { kind: "0xff", bytes: vec![0xff; PAGE_SIZE] },
        Page { kind: "half-random", bytes: half_random },
        Page { kind: "random", bytes: random },
    ]
}

/// Decodes `stream` of a standard `format` with a decoder that is not the
/// plugin's; `None` for [`KdumpFormat::Custom`].
///
/// # Errors
/// The decoder's error text.
pub fn reference_decode(format: KdumpFormat, stream: &[u8]) -> Option<Result<Vec<u8>, String>> {
    let mut out = vec![0u8; PAGE_SIZE];
    let result = match format {
        KdumpFormat::Zlib => {
            let mut d = flate2::Decompress::new(true);
            d.decompress(stream, &mut out, flate2::FlushDecompress::Finish)
                .map_err(|e| e.to_string())
                .and_then(|s| match s {
                    flate2::Status::StreamEnd => Ok(d.total_out() as usize),
                    other => Err(format!("zlib stream did not end ({other:?})")),
                })
        }
        KdumpFormat::Zstd => {
            zstd::bulk::decompress_to_buffer(stream, &mut out[..]).map_err(|e| e.to_string())
        }
        KdumpFormat::Lzo => {
            lzo1x::decompress(stream, &mut out).map(|()| PAGE_SIZE).map_err(|e| format!("{e:?}"))
        }
        KdumpFormat::Snappy => {
            snap::raw::Decoder::new().decompress(stream, &mut out).map_err(|e| e.to_string())
        }
        KdumpFormat::Custom => return None,
    };
    Some(result.map(|n| {
        out.truncate(n);
        out
    }))
}

/// Compresses every corpus page with one context, resetting between pages.
fn compress_all(module: &CompressorModule, pages: &[Page]) -> Result<Vec<Vec<u8>>, Failure> {
    let mut ctx = module.new_context().map_err(|e| fail("ctx_init", "", e))?;
    let bound = module.bound(PAGE_SIZE);
    let mut dst = vec![0u8; bound];
    pages
        .iter()
        .map(|page| {
            let n = ctx.compress(&page.bytes, &mut dst).map_err(|e| fail("compress", page.kind, e))?;
            ctx.reset().map_err(|e| fail("reset", page.kind, e))?;
            Ok(dst[..n].to_vec())
        })
        .collect()
}

fn check_round_trips(
    module: &CompressorModule,
    format: KdumpFormat,
    pages: &[Page],
    streams: &[Vec<u8>],
) -> Result<(), Failure> {
    let mut ctx = module.new_context().map_err(|e| fail("ctx_init", "", e))?;
    let mut out = vec![0u8; PAGE_SIZE];
    for (page, stream) in pages.iter().zip(streams) {
        let n = ctx.decompress(stream, &mut out).map_err(|e| fail("round trip", page.kind, e))?;
        if n != PAGE_SIZE || out != page.bytes {
            return Err(fail(
                "round trip",
                page.kind,
                format!("own decompress gave {n} bytes that differ from the page"),
            ));
        }
        if let Some(decoded) = reference_decode(format, stream) {
            let decoded = decoded.map_err(|e| fail("independent decoder", page.kind, e))?;
            if decoded != page.bytes {
                return Err(fail(
                    "independent decoder",
                    page.kind,
                    format!("{format} reference decoder gave different bytes ({} bytes)", decoded.len()),
                ));
            }
        }
    }
    Ok(())
}

fn check_bound(module: &CompressorModule, pages: &[Page], streams: &[Vec<u8>]) -> Result<(), Failure> {
    let bound = module.bound(PAGE_SIZE);
    if !(PAGE_SIZE..=16 * PAGE_SIZE).contains(&bound) {
        return Err(fail(
            "bound",
            "",
            format!("bound({PAGE_SIZE}) = {bound}, outside {PAGE_SIZE}..={}", 16 * PAGE_SIZE),
        ));
    }
    match pages.iter().zip(streams).find(|(_, s)| s.len() > bound || s.is_empty()) {
        Some((page, s)) => {
            Err(fail("bound", page.kind, format!("wrote {} bytes, bound is {bound}", s.len())))
        }
        None => Ok(()),
    }
}

/// A used context, reset, must give the bytes of a fresh one for every page.
fn check_reset(module: &CompressorModule, pages: &[Page], streams: &[Vec<u8>]) -> Result<(), Failure> {
    let mut ctx = module.new_context().map_err(|e| fail("ctx_init", "", e))?;
    let mut dst = vec![0u8; module.bound(PAGE_SIZE)];
    for (page, expected) in pages.iter().rev().zip(streams.iter().rev()) {
        let n = ctx.compress(&page.bytes, &mut dst).map_err(|e| fail("reset", page.kind, e))?;
        if dst[..n] != expected[..] {
            return Err(fail("reset", page.kind, "a reset context gave other bytes than a fresh one"));
        }
        ctx.reset().map_err(|e| fail("reset", page.kind, e))?;
    }
    Ok(())
}

fn check_threads(module: &CompressorModule, pages: &[Page], streams: &[Vec<u8>]) -> Result<(), Failure> {
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4).map(|_| scope.spawn(|| compress_all(module, pages))).collect();
        for worker in workers {
            let got = worker.join().map_err(|_| fail("threads", "", "a worker thread panicked"))??;
            if got != streams {
                return Err(fail("threads", "", "contexts on separate threads gave other bytes"));
            }
        }
        Ok(())
    })
}

fn check_corrupt_input(
    module: &CompressorModule,
    pages: &[Page],
    streams: &[Vec<u8>],
) -> Result<(), Failure> {
    let mut ctx = module.new_context().map_err(|e| fail("ctx_init", "", e))?;
    let mut out = vec![0u8; PAGE_SIZE];
    for (page, stream) in pages.iter().zip(streams) {
        let cut = &stream[..stream.len() / 2];
        // Any answer but "the original page" is acceptable, panics are not
        // (a Rust plugin's panic comes back as a status, never unwinds here).
        let whole = ctx.decompress(cut, &mut out).is_ok_and(|n| n == PAGE_SIZE && out == page.bytes);
        if whole && stream.len() > 1 {
            return Err(fail("corrupt input", page.kind, "half a stream decompressed to the whole page"));
        }
        ctx.reset().map_err(|e| fail("reset", page.kind, e))?;
    }
    Ok(())
}

/// `params` plus a key no plugin knows must be refused by `accepts`
/// (a module_init that says whether it succeeded).
fn check_unknown_key_refused(params: &Params, accepts: impl FnOnce(&Params) -> bool) -> Result<(), Failure> {
    let mut bogus = params.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect::<Vec<_>>();
    bogus.push(("no-such-key-in-any-plugin".into(), "1".into()));
    if accepts(&Params::new(bogus)) {
        return Err(fail(
            "unknown parameter",
            "",
            "module_init accepted the key `no-such-key-in-any-plugin`",
        ));
    }
    Ok(())
}

/// Checks `plugin` with `params` against the whole contract.
///
/// # Errors
/// The first rule the plugin breaks.
pub fn check_compressor(plugin: CompressorPlugin, params: &Params) -> Result<Report, Failure> {
    let info = plugin.info();
    let host = Arc::new(StderrHost);
    check_unknown_key_refused(params, |bogus| plugin.init(bogus, host.clone()).is_ok())?;
    let module = plugin.init(params, host).map_err(|e| fail("module_init", "", e))?;
    let pages = corpus();
    let streams = compress_all(&module, &pages)?;
    check_bound(&module, &pages, &streams)?;
    check_round_trips(&module, info.format, &pages, &streams)?;
    check_reset(&module, &pages, &streams)?;
    check_threads(&module, &pages, &streams)?;
    check_corrupt_input(&module, &pages, &streams)?;
    Ok(Report {
        name: info.name,
        pages: pages.len(),
        compressed_bytes: streams.iter().map(Vec::len).sum(),
        independent_decoder: info.format != KdumpFormat::Custom,
    })
}
