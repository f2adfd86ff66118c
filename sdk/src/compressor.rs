//! The safe traits a Rust compressor plugin implements.
//!
//! Shared state and per-thread state are separate types, as in Linux zram:
//! a [`CompressorFactory`] is built once per run from the parameters and is
//! shared (read-only) by every worker; each worker thread gets its own
//! [`Compressor`] context from [`CompressorFactory::new_context`] and reuses it
//! for every page. "Finalize" is `Drop`.

use std::ffi::CStr;

use crate::{Host, KdumpFormat, Params, SdkError};

/// Shared, immutable module state of a compressor plugin (validated parameters,
/// prepared tables). Built once per run; used from several threads at once.
pub trait CompressorFactory: Sized + Send + Sync + 'static {
    /// The per-thread context type.
    type Context: Compressor;

    /// The runtime key used in profiles and on the command line (`c"zstd"`).
    const NAME: &'static CStr;
    /// The kdump page format the output is.
    const FORMAT: KdumpFormat;
    /// One line for `vmdump plugins`.
    const DESCRIPTION: &'static CStr = c"";

    /// Validates `params` once (refuse unknown keys with
    /// [`Params::accept_only`]) and builds the shared state.
    ///
    /// # Errors
    /// [`SdkError::InvalidParam`] for a bad parameter, anything else for a failed set-up.
    fn init(params: &Params, host: &Host) -> Result<Self, SdkError>;

    /// Creates the context of one worker thread.
    ///
    /// # Errors
    /// When the codec cannot allocate its state.
    fn new_context(&self) -> Result<Self::Context, SdkError>;

    /// The largest output `compress` may write for `src_len` input bytes.
    fn bound(&self, src_len: usize) -> usize {
        // Generous default that covers zlib, zstd, lzo and snappy worst cases.
        src_len + src_len / 6 + 128
    }
}

/// Per-thread context of a compressor: codec streams and scratch memory,
/// never shared between threads.
pub trait Compressor: Send + 'static {
    /// Compresses one page into `dst` (at least `bound(src.len())` long) and
    /// returns the bytes written. The output is one self-contained stream.
    ///
    /// # Errors
    /// Any failure; the host then stores the page raw.
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError>;

    /// Decompresses one page written by `compress` into `dst` and returns
    /// the bytes written.
    ///
    /// # Errors
    /// [`SdkError::Corrupt`] for an invalid stream, [`SdkError::DstTooSmall`]
    /// when the output does not fit.
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError>;

    /// Returns the context to the state of a new one. Called between pages.
    ///
    /// # Errors
    /// When the codec cannot reset; the host then disables the plugin.
    fn reset(&mut self) -> Result<(), SdkError> {
        Ok(())
    }
}
