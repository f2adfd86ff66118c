//! vmdump codec `lzo` (built into the host; `so/` makes it a plugin file): one raw LZO1X block per page (kdump flag
//! `DUMP_DH_COMPRESSED_LZO`, 0x2), as makedumpfile `-l` writes and readers'
//! `lzo1x_decompress_safe` expects.
//!
//! Uses the pure-Rust `lzo1x` port at level 3, whose output is byte-identical
//! to liblzo2's `lzo1x_1_compress` (docs/dependencies.md §3). No parameters.
//! GPL-2.0-only, like the code it ports (architecture.md D7).
//!
//! Known cost: `lzo1x::compress` allocates its output and a 16 K-entry
//! dictionary on every call (the crate has no context API); the result is
//! copied into the host's buffer.
//!
//! ```
//! use vmdump_sdk::{Params, client::StderrHost};
//! let module = vmdump_compress_lzo::vmdump_compressor()
//!     .init(&Params::default(), std::sync::Arc::new(StderrHost)).unwrap();
//! let mut ctx = module.new_context().unwrap();
//! let mut out = vec![0; module.bound(4096)];
//! assert!(ctx.compress(&[0x55; 4096], &mut out).unwrap() < 100);
//! ```
#![forbid(unsafe_code)]

use lzo1x::{CompressLevel, DecompressError};
use vmdump_sdk::{Compressor, CompressorFactory, Host, KdumpFormat, Params, SdkError};

/// `lzo1x_1_compress` (LZO1X-1 with a 2^14-entry dictionary).
const LEVEL: CompressLevel = CompressLevel::new(3);

/// The plugin: no parameters, no shared state.
pub struct Lzo;

/// Per-worker state: none the crate lets us keep.
pub struct LzoContext;

impl CompressorFactory for Lzo {
    type Context = LzoContext;
    const NAME: &'static std::ffi::CStr = c"lzo";
    const FORMAT: KdumpFormat = KdumpFormat::Lzo;
    const DESCRIPTION: &'static std::ffi::CStr = c"raw LZO1X-1 block per page (lzo1x crate, GPL-2.0)";

    fn init(params: &Params, _host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&[])?;
        Ok(Lzo)
    }

    fn new_context(&self) -> Result<LzoContext, SdkError> {
        Ok(LzoContext)
    }

    /// liblzo2's worst case for LZO1X-1 (4419 for 4 KiB).
    fn bound(&self, n: usize) -> usize {
        n + n / 16 + 64 + 3
    }
}

impl Compressor for LzoContext {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        let out = lzo1x::compress(src, LEVEL);
        if out.len() > dst.len() {
            return Err(SdkError::DstTooSmall { needed: out.len(), available: dst.len() });
        }
        dst[..out.len()].copy_from_slice(&out);
        Ok(out.len())
    }

    /// `lzo1x::decompress` wants a buffer of exactly the decompressed size
    /// and LZO records no size: `dst` must be one page, as every kdump page is.
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        match lzo1x::decompress(src, dst) {
            Ok(()) => Ok(dst.len()),
            Err(DecompressError::InvalidInput) => Err(SdkError::corrupt("invalid LZO1X block")),
            Err(DecompressError::OutputLength) => Err(SdkError::corrupt(format!(
                "LZO1X block does not decompress to exactly {} bytes",
                dst.len()
            ))),
        }
    }
}

vmdump_sdk::static_compressor!(Lzo);

#[cfg(test)]
mod tests {
    use super::*;
    use vmdump_sdk::testing::{PAGE_SIZE, check_compressor, corpus};

    #[test]
    fn conformance() {
        let report = check_compressor(crate::vmdump_compressor(), &Params::default()).unwrap();
        assert!(report.independent_decoder);
        eprintln!("lzo: {} bytes for {} pages", report.compressed_bytes, report.pages);
    }

    #[test]
    fn any_parameter_is_refused_by_name() {
        let host = std::sync::Arc::new(vmdump_sdk::client::StderrHost);
        let err = crate::vmdump_compressor().init(&Params::new([("level", "3")]), host).err().unwrap();
        assert!(err.message.contains("`level`") && err.message.contains("no parameters"), "{err}");
    }

    #[test]
    fn output_is_lzo1x_level_3() {
        let host = std::sync::Arc::new(vmdump_sdk::client::StderrHost);
        let module = crate::vmdump_compressor().init(&Params::default(), host).unwrap();
        let mut ctx = module.new_context().unwrap();
        let mut out = vec![0; module.bound(PAGE_SIZE)];
        for page in corpus() {
            let n = ctx.compress(&page.bytes, &mut out).unwrap();
            assert_eq!(
                out[..n],
                lzo1x::compress(&page.bytes, CompressLevel::new(3))[..],
                "{} page",
                page.kind
            );
        }
    }
}
