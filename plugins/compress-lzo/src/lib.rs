//! vmdump codec `lzo` (built into the host; `so/` makes it a plugin file): one raw LZO1X block per page (kdump flag
//! `DUMP_DH_COMPRESSED_LZO`, 0x2), as makedumpfile `-l` writes and readers'
//! `lzo1x_decompress_safe` expects.
//!
//! Compresses with liblzo2's `lzo1x_1_compress` (what makedumpfile `-l`
//! calls, so the bytes are makedumpfile's), each worker keeping its own
//! dictionary, straight into the host's buffer. Decompresses with the
//! pure-Rust `lzo1x` port, a decoder independent of the encoder. No
//! parameters. GPL-2.0-only, like liblzo2 (architecture.md D7).
//!
//! The pure-Rust port compresses byte-identically (its level 3) but ran at
//! about 0.7x liblzo2: it allocates its output and dictionary at every call
//! (docs/dependencies.md §3).
//!
//! ```
//! use vmdump_sdk::{Params, client::StderrHost};
//! let module = vmdump_compress_lzo::vmdump_compressor()
//!     .init(&Params::default(), std::sync::Arc::new(StderrHost)).unwrap();
//! let mut ctx = module.new_context().unwrap();
//! let mut out = vec![0; module.bound(4096)];
//! assert!(ctx.compress(&[0x55; 4096], &mut out).unwrap() < 100);
//! ```
#![deny(unsafe_code)]

#[allow(unsafe_code)] // the FFI of liblzo2, each call with its SAFETY comment
mod liblzo2;

use lzo1x::DecompressError;
use vmdump_sdk::{Compressor, CompressorFactory, Host, KdumpFormat, Params, SdkError};

/// The plugin: no parameters, no shared state.
pub struct Lzo;

/// Per-worker state: liblzo2's dictionary.
pub struct LzoContext {
    encoder: liblzo2::Encoder,
}

impl CompressorFactory for Lzo {
    type Context = LzoContext;
    const NAME: &'static std::ffi::CStr = c"lzo";
    const FORMAT: KdumpFormat = KdumpFormat::Lzo;
    const DESCRIPTION: &'static std::ffi::CStr = c"raw LZO1X-1 block per page (liblzo2, GPL-2.0)";

    fn init(params: &Params, _host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&[])?;
        liblzo2::check_abi().map_err(SdkError::failed)?;
        Ok(Lzo)
    }

    fn new_context(&self) -> Result<LzoContext, SdkError> {
        Ok(LzoContext { encoder: liblzo2::Encoder::new() })
    }

    /// liblzo2's worst case for LZO1X-1 (4419 for 4 KiB).
    fn bound(&self, n: usize) -> usize {
        liblzo2::bound(n)
    }
}

impl Compressor for LzoContext {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        let needed = liblzo2::bound(src.len());
        if dst.len() < needed {
            return Err(SdkError::DstTooSmall { needed, available: dst.len() });
        }
        self.encoder.compress(src, dst).map_err(SdkError::failed)
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
    fn output_is_the_lzo1x_crates_level_3() {
        let host = std::sync::Arc::new(vmdump_sdk::client::StderrHost);
        let module = crate::vmdump_compressor().init(&Params::default(), host).unwrap();
        let mut ctx = module.new_context().unwrap();
        let mut out = vec![0; module.bound(PAGE_SIZE)];
        for page in corpus() {
            let n = ctx.compress(&page.bytes, &mut out).unwrap();
            assert_eq!(
                out[..n],
                lzo1x::compress(&page.bytes, lzo1x::CompressLevel::new(3))[..],
                "{} page",
                page.kind
            );
        }
    }
}
