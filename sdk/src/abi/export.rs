//! The `extern "C"` trampolines behind [`export_compressor!`](crate::export_compressor).
//!
//! Every callback runs the plugin's safe trait method inside `catch_unwind`,
//! so neither a panic nor a Rust error ever crosses the C boundary: a panic
//! becomes `VMDUMP_ERR_PANICKED` with its message, an [`SdkError`] its status
//! code and text. The trampolines are generic over the factory type and are
//! monomorphised in the plugin crate; the macro only adds the entry symbol.
//! The life-cycle trampolines (`module_init`, `ctx_init`, the finalizers) are
//! shared by every plugin kind (a private `PluginKind` trait); the filter's
//! own are in the child module `filter`.

mod filter;

use std::any::Any;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::abi::{self, CompressorV1, RawError, RawHostApi, RawParams, status};
use crate::{Compressor, CompressorFactory, FilterFactory, Host, Params, SdkError};

pub use filter::{ExportedFilterTable, filter_entry, filter_table};

/// A `&'static CStr` from a string literal that ends in NUL, usable in consts.
pub const fn cstr(text: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(text.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("string must end with exactly one NUL"),
    }
}

/// A compressor table built by [`compressor_table`] from a safe Rust factory:
/// its callbacks are the SDK's trampolines, so it follows the contract by
/// construction and can be wrapped without `unsafe`
/// ([`CompressorPlugin::from_exported`](crate::client::CompressorPlugin::from_exported)).
pub struct ExportedTable(CompressorV1);

impl ExportedTable {
    /// The raw table, for the entry symbol.
    pub const fn as_raw(&'static self) -> &'static CompressorV1 {
        &self.0
    }
}

/// The ABI table of factory `F`, built at compile time.
pub const fn compressor_table<F: CompressorFactory>(version: &'static CStr) -> ExportedTable {
    ExportedTable(CompressorV1 {
        magic: abi::PLUGIN_MAGIC,
        abi_major: abi::ABI_MAJOR,
        abi_minor: abi::ABI_MINOR,
        struct_size: std::mem::size_of::<CompressorV1>() as u32,
        flags: 0,
        name: F::NAME.as_ptr(),
        version: version.as_ptr(),
        description: F::DESCRIPTION.as_ptr(),
        kdump_format: F::FORMAT.code(),
        reserved: 0,
        module_init: Some(module_init::<AsCompressor<F>>),
        bound: Some(bound::<F>),
        ctx_init: Some(ctx_init::<AsCompressor<F>>),
        compress: Some(compress::<F>),
        reset: Some(reset::<F>),
        decompress: Some(decompress::<F>),
        ctx_finalize: Some(finalize::<F::Context>),
        module_finalize: Some(finalize::<F>),
    })
}

/// The body of `vmdump_compressor_entry_v1`: the table, or null for a host of
/// another major version.
pub fn entry(
    table: &'static ExportedTable,
    host_abi_major: u32,
    _host_abi_minor: u32,
) -> *const CompressorV1 {
    offered(table.as_raw(), host_abi_major)
}

/// `table` for a host of this ABI major, null for any other.
fn offered<T>(table: &'static T, host_abi_major: u32) -> *const T {
    if host_abi_major == abi::ABI_MAJOR { table } else { std::ptr::null() }
}

/// What the shared life-cycle trampolines need from a kind of plugin: how to
/// build its module state and a context from it.
trait PluginKind: 'static {
    /// The shared module state (the plugin's factory).
    type Module: Send + Sync + 'static;
    /// The per-thread context.
    type Context: Send + 'static;
    fn build(params: &Params, host: &Host) -> Result<Self::Module, SdkError>;
    fn new_context(module: &Self::Module) -> Result<Self::Context, SdkError>;
}

/// `$kind<F>`: a factory of trait `$factory` seen as a [`PluginKind`] (both
/// factory traits have the same `init` and `new_context`).
macro_rules! plugin_kind {
    ($kind:ident, $factory:ident) => {
        #[doc = concat!("A [`", stringify!($factory), "`] seen as a [`PluginKind`].")]
        struct $kind<F>(PhantomData<F>);

        impl<F: $factory> PluginKind for $kind<F> {
            type Module = F;
            type Context = F::Context;
            fn build(params: &Params, host: &Host) -> Result<F, SdkError> {
                F::init(params, host)
            }
            fn new_context(module: &F) -> Result<F::Context, SdkError> {
                module.new_context()
            }
        }
    };
}

plugin_kind!(AsCompressor, CompressorFactory);
plugin_kind!(AsFilter, FilterFactory);

fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}

/// Copies `message` into the C error struct, truncated on a char boundary.
fn write_error(err: *mut RawError, message: &str) {
    // SAFETY: the host passes null or a valid, writable vmdump_error.
    let Some(err) = (unsafe { err.as_mut() }) else { return };
    let mut end = message.len().min(abi::ERROR_MESSAGE_LEN - 1);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    for (dst, &src) in err.message.iter_mut().zip(&message.as_bytes()[..end]) {
        *dst = src as c_char;
    }
    err.message[end] = 0;
}

/// Runs `body`, turning an error or a panic into a status code and message.
fn guarded(err: *mut RawError, body: impl FnOnce() -> Result<(), SdkError>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => status::OK,
        Ok(Err(e)) => {
            write_error(err, &e.to_string());
            e.status()
        }
        Err(payload) => {
            write_error(err, &format!("plugin panicked: {}", panic_text(payload.as_ref())));
            status::PANICKED
        }
    }
}

/// # Safety
/// `params` points to a valid `vmdump_params` whose strings are NUL-terminated.
unsafe fn read_params(params: *const RawParams) -> Result<Params, SdkError> {
    // SAFETY: caller's contract; null means no parameters.
    let Some(raw) = (unsafe { params.as_ref() }) else { return Ok(Params::default()) };
    if raw.count == 0 || raw.items.is_null() {
        return Ok(Params::default());
    }
    // SAFETY: `items` points to `count` entries (header contract).
    let items = unsafe { std::slice::from_raw_parts(raw.items, raw.count) };
    let text = |p: *const c_char| -> Result<String, SdkError> {
        if p.is_null() {
            return Err(SdkError::InvalidParam("null key or value".into()));
        }
        // SAFETY: non-null, NUL-terminated (header contract).
        let s = unsafe { CStr::from_ptr(p) };
        s.to_str().map(str::to_owned).map_err(|_| SdkError::InvalidParam("parameter is not UTF-8".into()))
    };
    let pairs: Result<Vec<_>, _> =
        items.iter().map(|p| Ok::<_, SdkError>((text(p.key)?, text(p.value)?))).collect();
    Ok(Params::new(pairs?))
}

/// Byte slices from a raw (pointer, length) pair; null is allowed for length 0.
///
/// # Safety
/// When `len > 0`, `ptr` is valid for reads of `len` bytes for `'a`.
unsafe fn src_slice<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    // SAFETY: the caller guarantees `ptr` is readable for `len > 0` bytes.
    if len == 0 { &[] } else { unsafe { std::slice::from_raw_parts(ptr, len) } }
}

/// # Safety
/// When `len > 0`, `ptr` is valid for writes of `len` bytes for `'a`.
unsafe fn dst_slice<'a>(ptr: *mut u8, len: usize) -> &'a mut [u8] {
    // SAFETY: the caller guarantees `ptr` is writable for `len > 0` bytes.
    if len == 0 { &mut [] } else { unsafe { std::slice::from_raw_parts_mut(ptr, len) } }
}

/// # Safety
/// Called only through the exported table, by a host that keeps the
/// header's contract (`vmdump_plugin.h`): its pointers are this table's
/// own objects, or buffers valid for the lengths passed with them.
unsafe extern "C" fn module_init<K: PluginKind>(
    params: *const RawParams,
    host: *const RawHostApi,
    module: *mut *mut c_void,
    err: *mut RawError,
) -> c_int {
    guarded(err, || {
        // SAFETY: the host passes valid params and a host table that lives
        // until module_finalize (header contract).
        let params = unsafe { read_params(params)? };
        // SAFETY: as above.
        let host = unsafe { Host::from_raw(host) };
        let state = K::build(&params, &host)?;
        // SAFETY: `module` is a valid out-pointer (header contract).
        unsafe { *module = Box::into_raw(Box::new(state)).cast() };
        Ok(())
    })
}

/// # Safety
/// Called only through the exported table, by a host that keeps the
/// header's contract (`vmdump_plugin.h`): its pointers are this table's
/// own objects, or buffers valid for the lengths passed with them.
unsafe extern "C" fn bound<F: CompressorFactory>(module: *const c_void, src_len: usize) -> usize {
    // SAFETY: `module` came from module_init::<F> and is still alive.
    let factory = unsafe { &*module.cast::<F>() };
    // A panicking bound reads as 0, which the host refuses as too small.
    catch_unwind(AssertUnwindSafe(|| factory.bound(src_len))).unwrap_or(0)
}

/// # Safety
/// Called only through the exported table, by a host that keeps the
/// header's contract (`vmdump_plugin.h`): its pointers are this table's
/// own objects, or buffers valid for the lengths passed with them.
unsafe extern "C" fn ctx_init<K: PluginKind>(
    module: *const c_void,
    ctx: *mut *mut c_void,
    err: *mut RawError,
) -> c_int {
    guarded(err, || {
        // SAFETY: `module` came from module_init::<K> and is still alive.
        let state = unsafe { &*module.cast::<K::Module>() };
        let context = K::new_context(state)?;
        // SAFETY: `ctx` is a valid out-pointer (header contract).
        unsafe { *ctx = Box::into_raw(Box::new(context)).cast() };
        Ok(())
    })
}

/// A context method with the shape of compress and decompress.
type ContextOp<C> = fn(&mut C, &[u8], &mut [u8]) -> Result<usize, SdkError>;

/// Shared body of compress and decompress.
///
/// # Safety
/// Header contract: `ctx` from `ctx_init::<F>`, used by one thread; `src` and
/// `dst` valid for their lengths; `dst_len` a valid in/out pointer.
unsafe fn transform<F: CompressorFactory>(
    ctx: *mut c_void,
    (src, src_len): (*const u8, usize),
    (dst, dst_len): (*mut u8, *mut usize),
    err: *mut RawError,
    op: ContextOp<F::Context>,
) -> c_int {
    guarded(err, || {
        // SAFETY: see the function's contract.
        let (context, src, dst_len) =
            unsafe { (&mut *ctx.cast::<F::Context>(), src_slice(src, src_len), &mut *dst_len) };
        // SAFETY: see the function's contract.
        let dst = unsafe { dst_slice(dst, *dst_len) };
        *dst_len = op(context, src, dst)?;
        Ok(())
    })
}

/// # Safety
/// Called only through the exported table, by a host that keeps the
/// header's contract (`vmdump_plugin.h`): its pointers are this table's
/// own objects, or buffers valid for the lengths passed with them.
unsafe extern "C" fn compress<F: CompressorFactory>(
    ctx: *mut c_void,
    src: *const u8,
    src_len: usize,
    dst: *mut u8,
    dst_len: *mut usize,
    err: *mut RawError,
) -> c_int {
    // SAFETY: forwarded header contract.
    unsafe { transform::<F>(ctx, (src, src_len), (dst, dst_len), err, |c, s, d| c.compress(s, d)) }
}

/// # Safety
/// Called only through the exported table, by a host that keeps the
/// header's contract (`vmdump_plugin.h`): its pointers are this table's
/// own objects, or buffers valid for the lengths passed with them.
unsafe extern "C" fn decompress<F: CompressorFactory>(
    ctx: *mut c_void,
    src: *const u8,
    src_len: usize,
    dst: *mut u8,
    dst_len: *mut usize,
    err: *mut RawError,
) -> c_int {
    // SAFETY: forwarded header contract.
    unsafe { transform::<F>(ctx, (src, src_len), (dst, dst_len), err, |c, s, d| c.decompress(s, d)) }
}

/// # Safety
/// Called only through the exported table, by a host that keeps the
/// header's contract (`vmdump_plugin.h`): its pointers are this table's
/// own objects, or buffers valid for the lengths passed with them.
unsafe extern "C" fn reset<F: CompressorFactory>(ctx: *mut c_void, err: *mut RawError) -> c_int {
    guarded(err, || {
        // SAFETY: `ctx` came from ctx_init::<F> and is used by one thread.
        unsafe { &mut *ctx.cast::<F::Context>() }.reset()
    })
}

/// `ctx_finalize` (`T` a context) and `module_finalize` (`T` a factory).
unsafe extern "C" fn finalize<T>(state: *mut c_void) {
    if state.is_null() {
        return;
    }
    // SAFETY: `state` came from Box::into_raw of a `T` in module_init or
    // ctx_init, and the host finalizes it exactly once.
    let state = unsafe { Box::from_raw(state.cast::<T>()) };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(state)));
}

/// Exports a [`CompressorFactory`] as a vmdump compressor plugin.
///
/// Writes the static ABI table, the versioned entry symbol
/// `vmdump_compressor_entry_v1` and `vmdump_compressor()`, which gives the
/// table to in-process tests (the conformance kit) without dlopen. Use it
/// once per `cdylib`; the crate may `#![deny(unsafe_code)]` (not `forbid`: the
/// entry symbol needs `#[unsafe(no_mangle)]`, allowed locally by the macro).
#[macro_export]
macro_rules! export_compressor {
    ($factory:ty) => {
        $crate::static_compressor!($factory);
        $crate::__vmdump_entry_symbol!(vmdump_compressor_entry_v1() -> CompressorV1 = entry(__VMDUMP_COMPRESSOR_V1));
    };
}

/// The table and `vmdump_compressor()` of [`export_compressor!`], without
/// the entry symbol: for a codec linked into a program (the vmdump host's
/// built-in codecs), where several such crates would each define the one
/// entry name. A `cdylib` of it is one line: `export_compressor!(its::Factory);`.
#[macro_export]
macro_rules! static_compressor {
    ($factory:ty) => {
        $crate::__vmdump_static_table! {
            static __VMDUMP_COMPRESSOR_V1: ExportedTable = compressor_table::<$factory>;
            fn vmdump_compressor() -> CompressorPlugin;
        }
    };
}

/// Exports a [`FilterFactory`] as a vmdump filter plugin.
///
/// Writes the static ABI table, the versioned entry symbol
/// `vmdump_filter_entry_v1` and `vmdump_filter()`, which gives the table to
/// in-process tests (`testing::check_filter`) without
/// dlopen. Its names differ from [`export_compressor!`]'s, so one crate could
/// use both; one plugin kind per `.so` is the usual way.
#[macro_export]
macro_rules! export_filter {
    ($factory:ty) => {
        $crate::__vmdump_static_table! {
            static __VMDUMP_FILTER_V1: ExportedFilterTable = filter_table::<$factory>;
            fn vmdump_filter() -> FilterPlugin;
        }
        $crate::__vmdump_entry_symbol!(vmdump_filter_entry_v1() -> FilterV1 = filter_entry(__VMDUMP_FILTER_V1));
    };
}

/// A static table of the crate's version and its in-process accessor. Not
/// public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __vmdump_static_table {
    (
        static $table:ident: $exported:ident = $build:ident::<$factory:ty>;
        fn $accessor:ident() -> $plugin:ident;
    ) => {
        static $table: $crate::abi::export::$exported = $crate::abi::export::$build::<$factory>(
            $crate::abi::export::cstr(concat!(env!("CARGO_PKG_VERSION"), "\0")),
        );

        /// This plugin through its ABI table, in-process (for the conformance kit).
        pub fn $accessor() -> $crate::client::$plugin {
            $crate::client::$plugin::from_exported(&$table)
        }
    };
}

/// The `#[no_mangle]` entry symbol over a static table. Not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __vmdump_entry_symbol {
    ($entry:ident() -> $raw:ident = $body:ident($table:ident)) => {
        /// The versioned entry point the vmdump host looks up.
        // SAFETY: `no_mangle` exports the one versioned entry symbol; the
        // macro is invoked once per cdylib, so the name cannot clash.
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        pub extern "C" fn $entry(host_abi_major: u32, host_abi_minor: u32) -> *const $crate::abi::$raw {
            $crate::abi::export::$body(&$table, host_abi_major, host_abi_minor)
        }
    };
}
