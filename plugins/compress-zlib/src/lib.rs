//! vmdump codec `zlib` (built into the host; `so/` makes it a plugin file): one RFC 1950 zlib stream per page
//! (kdump flag `DUMP_DH_COMPRESSED_ZLIB`, 0x1), what makedumpfile `-c` writes
//! and what crash, libkdumpfile and drgn read with `uncompress()`.
//!
//! Parameter `level` (0..=12). Levels 1 and 2 are written by [`deflate`],
//! an encoder made for single pages, the fastest of the deflate encoders
//! measured on kernel pages at a size no larger than makedumpfile's
//! (docs/deflate.md); the default, 2, is what `makedumpfile -c` runs.
//! Level 0 and levels 3 to 12 (and pages over 32 KiB) are libdeflate's
//! (bundled, built by the `libdeflater` crate). Each worker keeps its own
//! encoder and decoder: a whole page is compressed in one call, with no
//! stream to reset.
//!
//! ```
//! use vmdump_sdk::{Params, client::StderrHost};
//! let module = vmdump_compress_zlib::vmdump_compressor()
//!     .init(&Params::new([("level", "6")]), std::sync::Arc::new(StderrHost)).unwrap();
//! let mut ctx = module.new_context().unwrap();
//! let mut out = vec![0; module.bound(4096)];
//! assert!(ctx.compress(&[0x55; 4096], &mut out).unwrap() < 100);
//! ```
#![forbid(unsafe_code)]

pub mod deflate;

use deflate::{Effort, PageDeflate, WINDOW};
use libdeflater::{CompressionLvl, Compressor as Deflate, DecompressionError, Decompressor as Inflate};
use vmdump_sdk::{Compressor, CompressorFactory, Host, KdumpFormat, Params, SdkError};

/// The default level: smaller than zlib's level 1 (makedumpfile's) on
/// kernel pages, and faster than any level of libdeflate that is
/// (docs/deflate.md).
pub const DEFAULT_LEVEL: i64 = 2;

/// How hard the page encoder looks for matches at the levels it writes;
/// None for the levels that libdeflate writes.
pub fn page_effort(level: i64) -> Option<Effort> {
    match level {
        1 => Some(Effort { depth: 2, nice: 16, insert_limit: 8, skip: 7 }),
        2 => Some(Effort { depth: 4, nice: 16, insert_limit: 8, skip: 7 }),
        _ => None,
    }
}

/// The most bytes libdeflate writes for `n` bytes as a zlib stream, worked
/// out as libdeflate does it (without allocating its compressor, 0.65 MB
/// at level 2, to ask): at worst all its blocks are stored, each of at
/// least 5,000 bytes (its smallest block) but the last, with 5 bytes of
/// block header each, inside zlib's 2-byte header and 4-byte Adler-32.
fn libdeflate_bound(n: usize) -> usize {
    const SMALLEST_BLOCK: usize = 5000;
    2 + 5 * n.div_ceil(SMALLEST_BLOCK).max(1) + n + 4
}

/// Shared state: the validated level.
pub struct Zlib {
    level: CompressionLvl,
    page_effort: Option<Effort>,
}

/// The pages of most kernels (x86_64's always): the page encoder made for
/// them has tables of 68 KiB, the whole window's 400 KiB.
const SMALL_PAGE: usize = 4096;

/// Per-worker state, each part made when first needed: the page encoder
/// where the level is its (for 4 KiB pages, or for pages of up to the
/// window), libdeflate, and a decompressor.
pub struct ZlibContext {
    page_effort: Option<Effort>,
    small_pages: Option<PageDeflate<SMALL_PAGE>>,
    large_pages: Option<PageDeflate<WINDOW>>,
    level: CompressionLvl,
    deflate: Option<Deflate>,
    inflate: Option<Inflate>,
}

impl CompressorFactory for Zlib {
    type Context = ZlibContext;
    const NAME: &'static std::ffi::CStr = c"zlib";
    const FORMAT: KdumpFormat = KdumpFormat::Zlib;
    const DESCRIPTION: &'static std::ffi::CStr =
        c"zlib stream per page (levels 1-2: page encoder; 0, 3-12: libdeflate), param level 0-12";

    fn init(params: &Params, _host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&["level"])?;
        let level = params.get_in_range("level", 0..=12, DEFAULT_LEVEL)?;
        let page_effort = page_effort(level);
        let level = CompressionLvl::new(level as i32)
            .map_err(|_| SdkError::failed("libdeflate refuses the level"))?;
        Ok(Zlib { level, page_effort })
    }

    fn new_context(&self) -> Result<ZlibContext, SdkError> {
        Ok(ZlibContext {
            page_effort: self.page_effort,
            small_pages: None,
            large_pages: None,
            level: self.level,
            deflate: None,
            inflate: None,
        })
    }

    fn bound(&self, n: usize) -> usize {
        libdeflate_bound(n).max(PageDeflate::<WINDOW>::bound(n))
    }
}

impl Compressor for ZlibContext {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        let available = dst.len();
        let too_small = |needed| SdkError::DstTooSmall { needed, available };
        let written = match self.page_effort {
            Some(effort) if src.len() <= SMALL_PAGE => {
                self.small_pages.get_or_insert_with(|| PageDeflate::new(effort)).compress(src, dst)
            }
            Some(effort) if src.len() <= WINDOW => {
                self.large_pages.get_or_insert_with(|| PageDeflate::new(effort)).compress(src, dst)
            }
            _ => return self.libdeflate(src, dst),
        };
        written.ok_or_else(|| too_small(PageDeflate::<WINDOW>::bound(src.len())))
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        match self.inflate.get_or_insert_with(Inflate::new).zlib_decompress(src, dst) {
            Ok(n) => Ok(n),
            Err(DecompressionError::InsufficientSpace) => {
                Err(SdkError::DstTooSmall { needed: 0, available: dst.len() })
            }
            Err(DecompressionError::BadData) => Err(SdkError::corrupt("not a valid zlib stream")),
        }
    }
}

impl ZlibContext {
    fn libdeflate(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        let available = dst.len();
        let deflate = self.deflate.get_or_insert_with(|| Deflate::new(self.level));
        let needed = deflate.zlib_compress_bound(src.len());
        deflate.zlib_compress(src, dst).map_err(|_| SdkError::DstTooSmall { needed, available })
    }
}

vmdump_sdk::static_compressor!(Zlib);

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Decompress, FlushDecompress, Status};
    use vmdump_sdk::testing::{PAGE_SIZE, check_compressor, corpus};

    #[test]
    fn conformance() {
        for level in ["0", "1", "2", "6", "9", "12"] {
            let report =
                check_compressor(crate::vmdump_compressor(), &Params::new([("level", level)])).unwrap();
            assert!(report.independent_decoder);
            eprintln!("zlib level {level}: {} bytes for {} pages", report.compressed_bytes, report.pages);
        }
        let report = check_compressor(crate::vmdump_compressor(), &Params::default()).unwrap();
        eprintln!("zlib default: {} bytes for {} pages", report.compressed_bytes, report.pages);
    }

    #[test]
    fn the_bound_is_libdeflates() {
        for level in [0, 1, 2, 6, 12] {
            let mut deflate = Deflate::new(CompressionLvl::new(level).unwrap());
            for n in [0, 1, 4095, 4096, 4999, 5000, 5001, 16_384, 65_536, 1 << 20] {
                assert_eq!(libdeflate_bound(n), deflate.zlib_compress_bound(n), "level {level}, {n} bytes");
            }
        }
    }

    /// Pages larger than the page encoder's window (64 KiB pages of arm64
    /// or ppc64) are written by libdeflate at the same level.
    #[test]
    fn pages_over_32_kib_are_written_by_libdeflate() {
        let host = std::sync::Arc::new(vmdump_sdk::client::StderrHost);
        let module = crate::vmdump_compressor().init(&Params::default(), host).unwrap();
        let mut ctx = module.new_context().unwrap();
        let page: Vec<u8> = (0..65_536u32).map(|i| (i / 7 % 251) as u8).collect();
        let mut out = vec![0; module.bound(page.len())];
        let n = ctx.compress(&page, &mut out).unwrap();
        assert!(n < page.len() / 10, "{n} bytes");
        let mut back = vec![0; page.len()];
        assert_eq!(ctx.decompress(&out[..n], &mut back).unwrap(), page.len());
        assert_eq!(back, page);
    }

    #[test]
    fn out_of_range_or_unknown_parameters_are_refused_by_name() {
        let host = std::sync::Arc::new(vmdump_sdk::client::StderrHost);
        let err =
            crate::vmdump_compressor().init(&Params::new([("level", "13")]), host.clone()).err().unwrap();
        assert!(err.message.contains("`level`"), "{err}");
        let err = crate::vmdump_compressor().init(&Params::new([("window_bits", "12")]), host).err().unwrap();
        assert!(err.message.contains("`window_bits`"), "{err}");
    }

    /// Every page is one whole zlib stream that another inflater (zlib-rs,
    /// as `uncompress()` would) takes to exactly the page, within the bound.
    #[test]
    fn each_page_is_a_standalone_zlib_stream_within_the_bound() {
        let host = std::sync::Arc::new(vmdump_sdk::client::StderrHost);
        let module = crate::vmdump_compressor().init(&Params::default(), host).unwrap();
        let mut ctx = module.new_context().unwrap();
        let mut out = vec![0; module.bound(PAGE_SIZE)];
        for page in corpus() {
            let n = ctx.compress(&page.bytes, &mut out).unwrap();
            assert!(n <= module.bound(PAGE_SIZE), "{} page", page.kind);
            assert_eq!(out[0] & 0x0f, 8, "{} page: CM is deflate", page.kind);
            let mut inflate = Decompress::new(true);
            let mut back = vec![0u8; PAGE_SIZE];
            let status = inflate.decompress(&out[..n], &mut back, FlushDecompress::Finish).unwrap();
            assert_eq!(status, Status::StreamEnd, "{} page", page.kind);
            assert_eq!((inflate.total_in() as usize, back), (n, page.bytes.to_vec()), "{} page", page.kind);
        }
    }
}
