//! vmdump codec `snappy` (built into the host; `so/` makes it a plugin file): one raw Snappy block per page, NOT the
//! framing format (kdump flag `DUMP_DH_COMPRESSED_SNAPPY`, 0x4), as
//! makedumpfile's `snappy_compress` writes and readers' `snappy_uncompress`
//! expects. No parameters. The fastest standard codec
//! (docs/dependencies.md §4).
//!
//! ```
//! use vmdump_sdk::{Params, client::StderrHost};
//! let module = vmdump_compress_snappy::vmdump_compressor()
//!     .init(&Params::default(), std::sync::Arc::new(StderrHost)).unwrap();
//! let mut ctx = module.new_context().unwrap();
//! let mut out = vec![0; module.bound(4096)];
//! assert!(ctx.compress(&[0x55; 4096], &mut out).unwrap() < 400);
//! ```
#![forbid(unsafe_code)]

use snap::raw::{Decoder, Encoder, max_compress_len};
use vmdump_sdk::{Compressor, CompressorFactory, Host, KdumpFormat, Params, SdkError};

/// The plugin: no parameters, no shared state.
pub struct Snappy;

/// Per-worker state: a reused encoder (its hash table) and decoder.
pub struct SnappyContext {
    encoder: Encoder,
    decoder: Decoder,
}

impl CompressorFactory for Snappy {
    type Context = SnappyContext;
    const NAME: &'static std::ffi::CStr = c"snappy";
    const FORMAT: KdumpFormat = KdumpFormat::Snappy;
    const DESCRIPTION: &'static std::ffi::CStr = c"raw snappy block per page (snap crate)";

    fn init(params: &Params, _host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&[])?;
        Ok(Snappy)
    }

    fn new_context(&self) -> Result<SnappyContext, SdkError> {
        Ok(SnappyContext { encoder: Encoder::new(), decoder: Decoder::new() })
    }

    /// snappy's `MaxCompressedLength`: 32 + n + n/6 (4810 for 4 KiB).
    fn bound(&self, src_len: usize) -> usize {
        max_compress_len(src_len)
    }
}

fn to_sdk(e: snap::Error, corrupt: bool) -> SdkError {
    match e {
        snap::Error::BufferTooSmall { given, min } => {
            SdkError::DstTooSmall { needed: min as usize, available: given as usize }
        }
        e if corrupt => SdkError::corrupt(e),
        e => SdkError::failed(e),
    }
}

impl Compressor for SnappyContext {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        self.encoder.compress(src, dst).map_err(|e| to_sdk(e, false))
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        self.decoder.decompress(src, dst).map_err(|e| to_sdk(e, true))
    }
}

vmdump_sdk::static_compressor!(Snappy);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conformance() {
        let report =
            vmdump_sdk::testing::check_compressor(crate::vmdump_compressor(), &Params::default()).unwrap();
        assert!(report.independent_decoder);
        eprintln!("snappy: {} bytes for {} pages", report.compressed_bytes, report.pages);
    }

    #[test]
    fn any_parameter_is_refused_by_name() {
        let host = std::sync::Arc::new(vmdump_sdk::client::StderrHost);
        let err = crate::vmdump_compressor().init(&Params::new([("framed", "1")]), host).err().unwrap();
        assert!(err.message.contains("`framed`") && err.message.contains("no parameters"), "{err}");
    }
}
