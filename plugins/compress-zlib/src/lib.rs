//! vmdump codec `zlib` (built into the host; `so/` makes it a plugin file): one RFC 1950 zlib stream per page
//! (kdump flag `DUMP_DH_COMPRESSED_ZLIB`, 0x1), what makedumpfile `-c` writes
//! and what crash, libkdumpfile and drgn read with `uncompress()`.
//!
//! The encoder is libdeflate (bundled, built by the `libdeflater` crate),
//! the fastest of the deflate encoders measured on kernel pages at a size no
//! larger than makedumpfile's (docs/deflate.md). Parameter `level` (0..=12,
//! libdeflate's levels); the default, 2, is the fastest level whose output
//! is no larger than the system zlib's level 1 (makedumpfile's `-c`).
//! Each worker keeps one compressor and one decompressor: libdeflate
//! compresses a whole page in one call, with no stream to reset.
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

use libdeflater::{CompressionLvl, Compressor as Deflate, DecompressionError, Decompressor as Inflate};
use vmdump_sdk::{Compressor, CompressorFactory, Host, KdumpFormat, Params, SdkError};

/// The default level: libdeflate's fastest level that is no larger than
/// zlib's level 1 on kernel pages (docs/deflate.md).
pub const DEFAULT_LEVEL: i64 = 2;

/// Shared state: the validated level.
pub struct Zlib {
    level: CompressionLvl,
}

/// Per-worker state: a compressor and a decompressor.
pub struct ZlibContext {
    deflate: Deflate,
    inflate: Inflate,
}

impl CompressorFactory for Zlib {
    type Context = ZlibContext;
    const NAME: &'static std::ffi::CStr = c"zlib";
    const FORMAT: KdumpFormat = KdumpFormat::Zlib;
    const DESCRIPTION: &'static std::ffi::CStr = c"zlib stream per page (libdeflate), param level 0-12";

    fn init(params: &Params, _host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&["level"])?;
        let level = params.get_in_range("level", 0..=12, DEFAULT_LEVEL)? as i32;
        let level =
            CompressionLvl::new(level).map_err(|_| SdkError::failed("libdeflate refuses the level"))?;
        Ok(Zlib { level })
    }

    fn new_context(&self) -> Result<ZlibContext, SdkError> {
        Ok(ZlibContext { deflate: Deflate::new(self.level), inflate: Inflate::new() })
    }

    fn bound(&self, n: usize) -> usize {
        Deflate::new(self.level).zlib_compress_bound(n)
    }
}

impl Compressor for ZlibContext {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        self.deflate.zlib_compress(src, dst).map_err(|_| SdkError::DstTooSmall {
            needed: self.deflate.zlib_compress_bound(src.len()),
            available: dst.len(),
        })
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        match self.inflate.zlib_decompress(src, dst) {
            Ok(n) => Ok(n),
            Err(DecompressionError::InsufficientSpace) => {
                Err(SdkError::DstTooSmall { needed: 0, available: dst.len() })
            }
            Err(DecompressionError::BadData) => Err(SdkError::corrupt("not a valid zlib stream")),
        }
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
