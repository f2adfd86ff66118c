//! vmdump codec `zlib` (built into the host; `so/` makes it a plugin file): one RFC 1950 zlib stream per page
//! (kdump flag `DUMP_DH_COMPRESSED_ZLIB`, 0x1), what makedumpfile `-c` writes
//! and what crash, libkdumpfile and drgn read with `uncompress()`.
//!
//! Parameters `level` (0..=9, default 1 = `Z_BEST_SPEED`, as makedumpfile)
//! and `window_bits` (9..=15, default 15; a 4 KiB page needs no more than 12).
//! Each worker keeps one deflate and one inflate stream and resets them per
//! page instead of allocating (the makedumpfile 2015 per-call cost).
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

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use vmdump_sdk::{Compressor, CompressorFactory, Host, KdumpFormat, Params, SdkError};

/// Shared state: the validated parameters.
pub struct Zlib {
    level: u32,
    window_bits: u8,
}

/// Per-worker state: a reusable deflate and inflate stream.
pub struct ZlibContext {
    deflate: Compress,
    inflate: Decompress,
}

impl CompressorFactory for Zlib {
    type Context = ZlibContext;
    const NAME: &'static std::ffi::CStr = c"zlib";
    const FORMAT: KdumpFormat = KdumpFormat::Zlib;
    const DESCRIPTION: &'static std::ffi::CStr = c"zlib stream per page (flate2 + zlib-rs), param level 0-9";

    fn init(params: &Params, _host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&["level", "window_bits"])?;
        Ok(Zlib {
            level: params.get_in_range("level", 0..=9, 1)? as u32,
            window_bits: params.get_in_range("window_bits", 9..=15, 15)? as u8,
        })
    }

    fn new_context(&self) -> Result<ZlibContext, SdkError> {
        Ok(ZlibContext {
            deflate: Compress::new_with_window_bits(Compression::new(self.level), true, self.window_bits),
            inflate: Decompress::new(true),
        })
    }

    fn bound(&self, n: usize) -> usize {
        deflate_bound(n)
    }
}

/// zlib-rs (like zlib-ng) encodes level 1 with static Huffman codes and no
/// stored-block fallback, so a random page grows to ~4.3 KiB: zlib's classic
/// compressBound (4110 for 4 KiB) is too small. This is zlib-rs's own
/// `compress_bound`: 9 bits per literal, block overhead, zlib wrapper (4617).
fn deflate_bound(n: usize) -> usize {
    n + n.div_ceil(8) + 3 + 6 + usize::from(n < 9) + usize::from(n == 0)
}

impl Compressor for ZlibContext {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        self.reset()?; // no-op unless the host skipped reset after the last page
        match self.deflate.compress(src, dst, FlushCompress::Finish) {
            Ok(Status::StreamEnd) => Ok(self.deflate.total_out() as usize),
            Ok(_) => Err(SdkError::DstTooSmall { needed: deflate_bound(src.len()), available: dst.len() }),
            Err(e) => Err(SdkError::failed(format!("deflate: {e}"))),
        }
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        self.inflate.reset(true);
        match self.inflate.decompress(src, dst, FlushDecompress::Finish) {
            Ok(Status::StreamEnd) => Ok(self.inflate.total_out() as usize),
            // Output full with input left over: the page does not fit.
            Ok(_) if (self.inflate.total_in() as usize) < src.len() => {
                Err(SdkError::DstTooSmall { needed: 0, available: dst.len() })
            }
            Ok(_) => Err(SdkError::corrupt("zlib stream is truncated")),
            Err(e) => Err(SdkError::corrupt(format!("inflate: {e}"))),
        }
    }

    fn reset(&mut self) -> Result<(), SdkError> {
        if self.deflate.total_in() != 0 || self.deflate.total_out() != 0 {
            self.deflate.reset();
        }
        Ok(())
    }
}

vmdump_sdk::static_compressor!(Zlib);

#[cfg(test)]
mod tests {
    use super::*;
    use vmdump_sdk::testing::{PAGE_SIZE, check_compressor, corpus};

    #[test]
    fn conformance() {
        for level in ["0", "1", "6", "9"] {
            let report =
                check_compressor(crate::vmdump_compressor(), &Params::new([("level", level)])).unwrap();
            eprintln!("zlib level {level}: {} bytes for {} pages", report.compressed_bytes, report.pages);
        }
        for bits in ["9", "12"] {
            let params = Params::new([("level", "2"), ("window_bits", bits)]);
            check_compressor(crate::vmdump_compressor(), &params).unwrap();
        }
        let host = std::sync::Arc::new(vmdump_sdk::client::StderrHost);
        let err = crate::vmdump_compressor().init(&Params::new([("window_bits", "16")]), host).err().unwrap();
        assert!(err.message.contains("`window_bits`"), "{err}");
        let report = check_compressor(crate::vmdump_compressor(), &Params::default()).unwrap();
        assert!(report.independent_decoder);
        eprintln!("zlib default: {} bytes for {} pages", report.compressed_bytes, report.pages);
    }

    #[test]
    fn level_out_of_range_is_refused_by_name() {
        let host = std::sync::Arc::new(vmdump_sdk::client::StderrHost);
        let err = crate::vmdump_compressor().init(&Params::new([("level", "10")]), host).err().unwrap();
        assert!(err.message.contains("`level`"), "{err}");
    }

    #[test]
    fn output_is_plain_flate2_level_1() {
        let host = std::sync::Arc::new(vmdump_sdk::client::StderrHost);
        let module = crate::vmdump_compressor().init(&Params::default(), host).unwrap();
        let mut ctx = module.new_context().unwrap();
        let mut ours = vec![0; module.bound(PAGE_SIZE)];
        for page in corpus() {
            let n = ctx.compress(&page.bytes, &mut ours).unwrap();
            ctx.reset().unwrap();
            let mut direct = Compress::new(Compression::fast(), true);
            let mut out = Vec::with_capacity(2 * PAGE_SIZE);
            assert_eq!(
                direct.compress_vec(&page.bytes, &mut out, FlushCompress::Finish).unwrap(),
                Status::StreamEnd
            );
            assert_eq!(ours[..n], out[..], "{} page", page.kind);
            if page.kind == "random" {
                assert!(n > 4110, "random page: {n} bytes; zlib's compressBound would have been enough");
            }
        }
    }
}
