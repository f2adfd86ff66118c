//! A compressor plugin that panics inside `compress` from the third page of
//! a context on: the SDK must catch the panic at the boundary and the host
//! must store the page raw and carry on.
#![deny(unsafe_code)]

use vmdump_sdk::{Compressor, CompressorFactory, Host, KdumpFormat, Params, SdkError};

/// Shared state: none.
pub struct Panicky;

/// Counts the pages it was given.
pub struct PanickyContext {
    pages: u64,
}

impl CompressorFactory for Panicky {
    type Context = PanickyContext;
    const NAME: &'static std::ffi::CStr = c"panicky";
    const FORMAT: KdumpFormat = KdumpFormat::Custom;

    fn init(params: &Params, _host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&[])?;
        Ok(Panicky)
    }

    fn new_context(&self) -> Result<PanickyContext, SdkError> {
        Ok(PanickyContext { pages: 0 })
    }
}

impl Compressor for PanickyContext {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
        self.pages += 1;
        assert!(self.pages < 3, "simulated bug on page {}", self.pages);
        let n = src.len() / 2;
        dst[..n].copy_from_slice(&src[..n]);
        Ok(n)
    }

    fn decompress(&mut self, _src: &[u8], _dst: &mut [u8]) -> Result<usize, SdkError> {
        Err(SdkError::failed("this test plugin cannot decompress"))
    }
}

vmdump_sdk::export_compressor!(Panicky);
