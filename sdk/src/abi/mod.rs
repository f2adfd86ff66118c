//! The `#[repr(C)]` mirror of `include/vmdump_plugin.h`, field for field.
//!
//! The header is the contract; this file follows it. Compile-time asserts pin
//! every size and offset on x86_64/aarch64 (LP64), so a drift between the two
//! is a build error, and the C plugin built by the tests checks the other side.
#![allow(unsafe_code)]

pub mod client;
pub mod export;
pub mod host_api;
pub mod kernel;

use std::ffi::{c_char, c_int, c_void};

/// `VMDUMP_PLUGIN_MAGIC`: "VMDUMPPL" read as a little-endian u64.
pub const PLUGIN_MAGIC: u64 = u64::from_le_bytes(*b"VMDUMPPL");
/// `VMDUMP_ABI_MAJOR`.
pub const ABI_MAJOR: u32 = 1;
/// `VMDUMP_ABI_MINOR`.
pub const ABI_MINOR: u32 = 1;
/// The compressor entry symbol for ABI major 1, NUL-terminated for dlsym.
pub const COMPRESSOR_ENTRY_V1: &[u8] = b"vmdump_compressor_entry_v1\0";
/// The filter entry symbol for ABI major 1, NUL-terminated for dlsym.
pub const FILTER_ENTRY_V1: &[u8] = b"vmdump_filter_entry_v1\0";
/// `VMDUMP_ERROR_MESSAGE_LEN`.
pub const ERROR_MESSAGE_LEN: usize = 256;

/// `VMDUMP_FILTER_NEEDS_*` bits of `vmdump_filter_v1.needs`.
pub mod needs {
    /// The page bytes (a content filter).
    pub const PAGE: u32 = 0x1;
    /// The page's struct page bytes (a metadata filter).
    pub const STRUCT_PAGE: u32 = 0x2;
    /// ABI 1.1: the `prepare` hook must run (a 1.0 host refuses the bit).
    pub const KERNEL: u32 = 0x4;
    /// Every bit this ABI defines; a table with another bit is refused.
    pub const KNOWN: u32 = PAGE | STRUCT_PAGE | KERNEL;
}

/// `enum vmdump_verdict` values.
pub mod verdict {
    /// The page stays in the dump.
    pub const KEEP: u32 = 0;
    /// The page is left out.
    pub const EXCLUDE: u32 = 1;
}

/// `enum vmdump_status` values.
pub mod status {
    /// Success.
    pub const OK: i32 = 0;
    /// Generic failure.
    pub const FAILED: i32 = 1;
    /// Bad parameter at module init.
    pub const INVALID_PARAM: i32 = 2;
    /// Output buffer too small.
    pub const DST_TOO_SMALL: i32 = 3;
    /// Corrupt compressed input.
    pub const CORRUPT: i32 = 4;
    /// A panic was caught at the boundary.
    pub const PANICKED: i32 = 5;
    /// Out of memory.
    pub const NO_MEMORY: i32 = 6;
    /// Kernel services (1.1): no such symbol, type or member.
    pub const NOT_FOUND: i32 = 7;
    /// Kernel services (1.1): the memory is not in the dump, or not mapped.
    pub const UNREADABLE: i32 = 8;
    /// Kernel services (1.1): the dump cannot give this service.
    pub const UNAVAILABLE: i32 = 9;
}

/// `enum vmdump_space` values.
pub mod space {
    /// Physical addresses.
    pub const PHYS: u32 = 0;
    /// Kernel virtual addresses.
    pub const KVIRT: u32 = 1;
}

/// `VMDUMP_ERASE_NULLIFY`: erase with zeros, recorded as "nullify".
pub const ERASE_NULLIFY: u32 = 0x100;

/// `struct vmdump_error`.
#[repr(C)]
pub struct RawError {
    /// NUL-terminated message.
    pub message: [c_char; ERROR_MESSAGE_LEN],
}

/// `struct vmdump_param`.
#[repr(C)]
pub struct RawParam {
    /// NUL-terminated key.
    pub key: *const c_char,
    /// NUL-terminated value.
    pub value: *const c_char,
}

/// `struct vmdump_params`.
#[repr(C)]
pub struct RawParams {
    /// Array of `count` items.
    pub items: *const RawParam,
    /// Number of items.
    pub count: usize,
}

/// `vmdump_host_api.log`.
///
/// # Safety
/// `host` is the table's own `host` pointer; `message` is a NUL-terminated
/// string valid for the call.
pub type LogFn = unsafe extern "C" fn(host: *mut c_void, level: c_int, message: *const c_char);
/// `vmdump_host_api.vmcoreinfo`.
///
/// # Safety
/// `host` is the table's own `host` pointer; `key` is a NUL-terminated
/// string and `buf` is writable for `len` bytes, both for the call.
pub type VmcoreinfoFn =
    unsafe extern "C" fn(host: *mut c_void, key: *const c_char, buf: *mut c_char, len: usize) -> i64;

/// `struct vmdump_host_api`.
#[repr(C)]
pub struct RawHostApi {
    /// Size of the host's table.
    pub struct_size: u32,
    /// The host's ABI minor version.
    pub abi_minor: u32,
    /// Opaque host pointer.
    pub host: *mut c_void,
    /// Logging callback.
    pub log: Option<LogFn>,
    /// VMCOREINFO look-up callback.
    pub vmcoreinfo: Option<VmcoreinfoFn>,
}

/// `module_init`.
///
/// # Safety
/// `params` and `host` point at valid tables for the call; `module` and
/// `err` are writable.
pub type ModuleInitFn = unsafe extern "C" fn(
    params: *const RawParams,
    host: *const RawHostApi,
    module: *mut *mut c_void,
    err: *mut RawError,
) -> c_int;
/// `bound`.
///
/// # Safety
/// `module` is a live module of the same plugin.
pub type BoundFn = unsafe extern "C" fn(module: *const c_void, src_len: usize) -> usize;
/// `ctx_init`.
///
/// # Safety
/// `module` is a live module of the same plugin; `ctx` and `err` are writable.
pub type CtxInitFn =
    unsafe extern "C" fn(module: *const c_void, ctx: *mut *mut c_void, err: *mut RawError) -> c_int;
/// `compress` and `decompress`.
///
/// # Safety
/// `ctx` is a live context used by one thread at a time; `src` is readable
/// for `src_len` bytes, `dst` writable for `*dst_len` bytes; `err` is writable.
pub type TransformFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    src: *const u8,
    src_len: usize,
    dst: *mut u8,
    dst_len: *mut usize,
    err: *mut RawError,
) -> c_int;
/// `reset`.
///
/// # Safety
/// `ctx` is a live context used by one thread at a time; `err` is writable.
pub type ResetFn = unsafe extern "C" fn(ctx: *mut c_void, err: *mut RawError) -> c_int;
/// `ctx_finalize` and `module_finalize`.
///
/// # Safety
/// `state` is a live context or module, finalized once and not used after.
pub type FinalizeFn = unsafe extern "C" fn(state: *mut c_void);

/// `struct vmdump_compressor_v1`.
#[repr(C)]
pub struct CompressorV1 {
    /// `VMDUMP_PLUGIN_MAGIC`.
    pub magic: u64,
    /// ABI major the plugin was built with.
    pub abi_major: u32,
    /// ABI minor the plugin was built with.
    pub abi_minor: u32,
    /// Size of the plugin's table.
    pub struct_size: u32,
    /// No flags in 1.0.
    pub flags: u32,
    /// Runtime key, NUL-terminated.
    pub name: *const c_char,
    /// Plugin version, NUL-terminated.
    pub version: *const c_char,
    /// One-line description or NULL.
    pub description: *const c_char,
    /// kdump format code of the output.
    pub kdump_format: u32,
    /// Zero.
    pub reserved: u32,
    /// Required.
    pub module_init: Option<ModuleInitFn>,
    /// Required.
    pub bound: Option<BoundFn>,
    /// Required.
    pub ctx_init: Option<CtxInitFn>,
    /// Required.
    pub compress: Option<TransformFn>,
    /// Optional.
    pub reset: Option<ResetFn>,
    /// Required.
    pub decompress: Option<TransformFn>,
    /// Required.
    pub ctx_finalize: Option<FinalizeFn>,
    /// Required.
    pub module_finalize: Option<FinalizeFn>,
}

// SAFETY: a table is immutable after construction and its pointers refer to
// static strings and functions, so sharing it between threads is sound.
unsafe impl Sync for CompressorV1 {}
// SAFETY: as above; the host API table is immutable while a plugin can see it
// and its `host` pointer refers to a `Sync` host object.
unsafe impl Sync for RawHostApi {}
// SAFETY: see `Sync` above.
unsafe impl Send for RawHostApi {}

/// The fields every plugin table starts with, whatever its kind: what a host
/// reads, field by field, before it trusts the rest of a table.
#[repr(C)]
pub struct TablePrefix {
    /// `VMDUMP_PLUGIN_MAGIC`.
    pub magic: u64,
    /// ABI major the plugin was built with.
    pub abi_major: u32,
    /// ABI minor the plugin was built with.
    pub abi_minor: u32,
    /// Size of the plugin's table.
    pub struct_size: u32,
    /// No flags in 1.0.
    pub flags: u32,
}

/// `struct vmdump_page`: one page given to `classify`.
#[repr(C)]
pub struct RawPage {
    /// Size of the host's struct.
    pub struct_size: u32,
    /// Zero.
    pub reserved: u32,
    /// Page frame number.
    pub pfn: u64,
    /// Physical address of the first byte.
    pub paddr: u64,
    /// Page bytes when the filter needs them, else null.
    pub data: *const u8,
    /// Bytes at `data`.
    pub data_len: usize,
    /// Struct page bytes when the filter needs them, else null.
    pub struct_page: *const u8,
    /// Bytes at `struct_page`.
    pub struct_page_len: usize,
}

/// `classify`.
///
/// # Safety
/// `ctx` is a live context used by one thread at a time; `page` points at a
/// valid `RawPage` whose buffers are readable for their lengths; `verdict`
/// and `err` are writable.
pub type ClassifyFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    page: *const RawPage,
    verdict: *mut u32,
    err: *mut RawError,
) -> c_int;

/// `struct vmdump_filter_v1`.
#[repr(C)]
pub struct FilterV1 {
    /// `VMDUMP_PLUGIN_MAGIC`.
    pub magic: u64,
    /// ABI major the plugin was built with.
    pub abi_major: u32,
    /// ABI minor the plugin was built with.
    pub abi_minor: u32,
    /// Size of the plugin's table.
    pub struct_size: u32,
    /// No flags in 1.0.
    pub flags: u32,
    /// Runtime key, NUL-terminated.
    pub name: *const c_char,
    /// Plugin version, NUL-terminated.
    pub version: *const c_char,
    /// One-line description or NULL.
    pub description: *const c_char,
    /// [`needs`] bits.
    pub needs: u32,
    /// Zero.
    pub reserved: u32,
    /// Required.
    pub module_init: Option<ModuleInitFn>,
    /// Required.
    pub ctx_init: Option<CtxInitFn>,
    /// Required.
    pub classify: Option<ClassifyFn>,
    /// Required.
    pub ctx_finalize: Option<FinalizeFn>,
    /// Required.
    pub module_finalize: Option<FinalizeFn>,
}

// SAFETY: as for `CompressorV1`: immutable, pointing to static strings and functions.
unsafe impl Sync for FilterV1 {}

/// `struct vmdump_filter_v1` as ABI 1.1 has it: the 1.0 table and the
/// field appended. A host reads the appended field only when the table's
/// `struct_size` covers it (a 1.0 plugin's table ends before it).
#[repr(C)]
pub struct FilterV1_1 {
    /// The fields of ABI 1.0.
    pub v1_0: FilterV1,
    /// Required with [`needs::KERNEL`].
    pub prepare: Option<PrepareFn>,
}

// SAFETY: as for `FilterV1`.
unsafe impl Sync for FilterV1_1 {}

/// `vmdump_user_page_fn`.
///
/// # Safety
/// `arg` is the pointer given to `user_pages`.
pub type UserPageFn = unsafe extern "C" fn(arg: *mut c_void, vaddr: u64, pfn: u64, pages: u64) -> c_int;

/// `vmdump_kernel.member`: type, member, offset, size, type name buffer and its length.
pub type MemberFn = unsafe extern "C" fn(
    *mut c_void,
    *const c_char,
    *const c_char,
    *mut u64,
    *mut u64,
    *mut c_char,
    usize,
) -> c_int;

/// `struct vmdump_kernel` (ABI 1.1): the services of the `prepare` hook.
/// Every callback takes the table's own `host` pointer first; strings are
/// NUL-terminated and out-pointers writable, for the call.
///
/// # Safety
///
/// The callbacks are `unsafe extern "C"` function pointer types: no code
/// here calls them. A caller (the SDK's `abi::kernel`, each call with its
/// SAFETY comment) must pass this table's `host`, valid NUL-terminated
/// strings, and buffers and out-pointers writable for their lengths, and
/// only during the `prepare` call that received the table.
#[repr(C)]
pub struct RawKernel {
    /// Size of the host's table.
    pub struct_size: u32,
    /// Zero.
    pub reserved: u32,
    /// Opaque host pointer.
    pub host: *mut c_void,
    /// Symbol address and size.
    pub symbol: Option<unsafe extern "C" fn(*mut c_void, *const c_char, *mut u64, *mut u64) -> c_int>,
    /// Type size.
    pub type_size: Option<unsafe extern "C" fn(*mut c_void, *const c_char, *mut u64) -> c_int>,
    /// Member offset, size and type name (buffer and its length).
    pub member: Option<MemberFn>,
    /// Memory read (`space`, address, buffer, length).
    pub read: Option<unsafe extern "C" fn(*mut c_void, u32, u64, *mut c_void, usize) -> c_int>,
    /// Walk of a process's present user pages.
    pub user_pages: Option<unsafe extern "C" fn(*mut c_void, u64, Option<UserPageFn>, *mut c_void) -> c_int>,
    /// Keep pfns.
    pub keep: Option<unsafe extern "C" fn(*mut c_void, u64, u64) -> c_int>,
    /// Exclude pfns.
    pub exclude: Option<unsafe extern "C" fn(*mut c_void, u64, u64) -> c_int>,
    /// Erase bytes (`space`, address, length, fill, what).
    pub erase: Option<unsafe extern "C" fn(*mut c_void, u32, u64, u64, u32, *const c_char) -> c_int>,
}

/// `prepare` (ABI 1.1).
///
/// # Safety
/// `module` is a live module of the same plugin with no context yet;
/// `kernel` points at a valid table for the call; `err` is writable.
pub type PrepareFn =
    unsafe extern "C" fn(module: *mut c_void, kernel: *const RawKernel, err: *mut RawError) -> c_int;

/// `vmdump_filter_entry_v1`.
///
/// # Safety
/// Called on a loaded library that exports the symbol with this signature.
pub type FilterEntryV1 = unsafe extern "C" fn(host_abi_major: u32, host_abi_minor: u32) -> *const FilterV1;

/// Size of the ABI 1.0 filter table: the least `struct_size` the host accepts.
pub const FILTER_V1_0_SIZE: usize = std::mem::size_of::<FilterV1>();
/// Size of the ABI 1.1 filter table, which has `prepare`.
pub const FILTER_V1_1_SIZE: usize = std::mem::size_of::<FilterV1_1>();

/// `vmdump_compressor_entry_v1`.
///
/// # Safety
/// Called on a loaded library that exports the symbol with this signature.
pub type CompressorEntryV1 =
    unsafe extern "C" fn(host_abi_major: u32, host_abi_minor: u32) -> *const CompressorV1;

/// Size of the ABI 1.0 compressor table: the least `struct_size` the host accepts.
pub const COMPRESSOR_V1_0_SIZE: usize = std::mem::size_of::<CompressorV1>();

#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<RawError>() == 256);
    assert!(size_of::<RawParam>() == 16);
    assert!(size_of::<RawParams>() == 16);
    assert!(size_of::<RawHostApi>() == 32);
    assert!(offset_of!(RawHostApi, host) == 8);
    assert!(offset_of!(RawHostApi, log) == 16);
    assert!(offset_of!(RawHostApi, vmcoreinfo) == 24);
    assert!(offset_of!(CompressorV1, magic) == 0);
    assert!(offset_of!(CompressorV1, abi_major) == 8);
    assert!(offset_of!(CompressorV1, abi_minor) == 12);
    assert!(offset_of!(CompressorV1, struct_size) == 16);
    assert!(offset_of!(CompressorV1, flags) == 20);
    assert!(offset_of!(CompressorV1, name) == 24);
    assert!(offset_of!(CompressorV1, version) == 32);
    assert!(offset_of!(CompressorV1, description) == 40);
    assert!(offset_of!(CompressorV1, kdump_format) == 48);
    assert!(offset_of!(CompressorV1, reserved) == 52);
    assert!(offset_of!(CompressorV1, module_init) == 56);
    assert!(offset_of!(CompressorV1, bound) == 64);
    assert!(offset_of!(CompressorV1, ctx_init) == 72);
    assert!(offset_of!(CompressorV1, compress) == 80);
    assert!(offset_of!(CompressorV1, reset) == 88);
    assert!(offset_of!(CompressorV1, decompress) == 96);
    assert!(offset_of!(CompressorV1, ctx_finalize) == 104);
    assert!(offset_of!(CompressorV1, module_finalize) == 112);
    assert!(size_of::<CompressorV1>() == 120);
    assert!(size_of::<TablePrefix>() == 24);
    assert!(size_of::<RawPage>() == 56);
    assert!(offset_of!(RawPage, pfn) == 8);
    assert!(offset_of!(RawPage, paddr) == 16);
    assert!(offset_of!(RawPage, data) == 24);
    assert!(offset_of!(RawPage, data_len) == 32);
    assert!(offset_of!(RawPage, struct_page) == 40);
    assert!(offset_of!(RawPage, struct_page_len) == 48);
    assert!(offset_of!(FilterV1, magic) == 0);
    assert!(offset_of!(FilterV1, abi_major) == 8);
    assert!(offset_of!(FilterV1, abi_minor) == 12);
    assert!(offset_of!(FilterV1, struct_size) == 16);
    assert!(offset_of!(FilterV1, flags) == 20);
    assert!(offset_of!(FilterV1, name) == 24);
    assert!(offset_of!(FilterV1, version) == 32);
    assert!(offset_of!(FilterV1, description) == 40);
    assert!(offset_of!(FilterV1, needs) == 48);
    assert!(offset_of!(FilterV1, reserved) == 52);
    assert!(offset_of!(FilterV1, module_init) == 56);
    assert!(offset_of!(FilterV1, ctx_init) == 64);
    assert!(offset_of!(FilterV1, classify) == 72);
    assert!(offset_of!(FilterV1, ctx_finalize) == 80);
    assert!(offset_of!(FilterV1, module_finalize) == 88);
    assert!(size_of::<FilterV1>() == 96);
    assert!(offset_of!(FilterV1_1, prepare) == 96);
    assert!(size_of::<FilterV1_1>() == 104);
    assert!(size_of::<RawKernel>() == 80);
    assert!(offset_of!(RawKernel, host) == 8);
    assert!(offset_of!(RawKernel, symbol) == 16);
    assert!(offset_of!(RawKernel, type_size) == 24);
    assert!(offset_of!(RawKernel, member) == 32);
    assert!(offset_of!(RawKernel, read) == 40);
    assert!(offset_of!(RawKernel, user_pages) == 48);
    assert!(offset_of!(RawKernel, keep) == 56);
    assert!(offset_of!(RawKernel, exclude) == 64);
    assert!(offset_of!(RawKernel, erase) == 72);
};

// Every table starts with the prefix, so a host may read it through a
// `*const TablePrefix` whatever the table's kind (on any pointer width).
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(TablePrefix, struct_size) == offset_of!(CompressorV1, struct_size));
    assert!(offset_of!(TablePrefix, struct_size) == offset_of!(FilterV1, struct_size));
    assert!(offset_of!(TablePrefix, flags) == offset_of!(CompressorV1, flags));
    assert!(offset_of!(TablePrefix, flags) == offset_of!(FilterV1, flags));
    assert!(offset_of!(CompressorV1, name) == offset_of!(FilterV1, name));
    assert!(offset_of!(CompressorV1, description) == offset_of!(FilterV1, description));
};
