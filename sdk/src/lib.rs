//! # vmdump-sdk: write compressor and filter plugins for vmdump
//!
//! The contract between the vmdump host and its plugins is a versioned C ABI,
//! described in `include/vmdump_plugin.h`. This crate is its Rust side:
//!
//! - [`abi`]: the `#[repr(C)]` mirror of the header (size/offset asserted);
//! - [`CompressorFactory`] (shared, validated once) and [`Compressor`]
//!   (one context per worker thread), the safe traits a plugin implements;
//! - [`FilterFactory`] and [`Filter`], the same pair for filters, which
//!   decide per page ([`PageView`] → [`Verdict`]) what is left out of a dump,
//!   or (ABI 1.1) walk the dumped kernel once before the page pass through
//!   [`Kernel`] and mark pages to keep, exclude or erase;
//! - [`export_compressor!`] and [`export_filter!`], which write the
//!   `extern "C"` entry point and trampolines, catching every panic at the
//!   boundary; [`static_compressor!`], the same table without the entry
//!   symbol, for a codec linked into a program (the host's built-in codecs);
//! - [`client`], the calling side, used by the host and by the conformance kit;
//! - `testing` (feature `testing`), the conformance kit a plugin runs on itself.
//!
//! A complete plugin:
//!
//! ```
//! use vmdump_sdk::{Compressor, CompressorFactory, Host, KdumpFormat, Params, SdkError};
//!
//! /// Stores pages as they are: the smallest possible plugin.
//! pub struct Store;
//! pub struct StoreContext;
//!
//! impl CompressorFactory for Store {
//!     type Context = StoreContext;
//!     const NAME: &'static std::ffi::CStr = c"store";
//!     const FORMAT: KdumpFormat = KdumpFormat::Custom;
//!     fn init(params: &Params, _host: &Host) -> Result<Self, SdkError> {
//!         params.accept_only(&[])?;
//!         Ok(Store)
//!     }
//!     fn new_context(&self) -> Result<StoreContext, SdkError> {
//!         Ok(StoreContext)
//!     }
//! }
//!
//! impl Compressor for StoreContext {
//!     fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
//!         dst[..src.len()].copy_from_slice(src);
//!         Ok(src.len())
//!     }
//!     fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, SdkError> {
//!         self.compress(src, dst)
//!     }
//! }
//!
//! vmdump_sdk::export_compressor!(Store);
//! # fn main() {
//! let module = vmdump_compressor().init(&Params::default(), std::sync::Arc::new(vmdump_sdk::client::StderrHost)).unwrap();
//! let mut ctx = module.new_context().unwrap();
//! let mut out = vec![0; module.bound(4096)];
//! assert_eq!(ctx.compress(&[7; 4096], &mut out).unwrap(), 4096);
//! # }
//! ```
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod abi;
mod compressor;
mod error;
mod filter;
mod format;
mod params;
#[cfg(feature = "testing")]
pub mod testing;

pub use abi::client;

/// The README's Rust example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
pub use abi::host_api::{Host, LogLevel};
pub use abi::kernel::{Fill, Kernel, KernelError, MemberInfo, ServiceError, Space, SymbolInfo};
pub use compressor::{Compressor, CompressorFactory};
pub use error::SdkError;
pub use filter::{Filter, FilterFactory, Needs, PageView, Verdict};
pub use format::KdumpFormat;
pub use params::{Params, parse_u64};
