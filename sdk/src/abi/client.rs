//! The calling side of the contract: safe wrappers over a compressor table,
//! whoever built it (a Rust plugin in-process, a `.so` the host loaded, a C
//! plugin). The host's worker pool and the conformance kit both use these.
//!
//! Ownership mirrors the life cycle: a [`CompressorModule`] (module_init ..
//! module_finalize) lends [`CompressorContext`]s (ctx_init .. ctx_finalize),
//! so the borrow checker guarantees contexts are finalized first.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::fmt;
use std::sync::Arc;

use crate::abi::{self, CompressorV1, RawError, RawHostApi, RawParam, RawParams, status};
use crate::{KdumpFormat, LogLevel, Params};

/// Why a table is not a usable compressor (checked before any call into it).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableError {
    /// The entry returned a null table: the plugin refused this host.
    Refused,
    /// The first field is not `VMDUMP_PLUGIN_MAGIC`.
    BadMagic(u64),
    /// Built for another ABI major version.
    AbiMajor {
        /// The plugin's `abi_major`.
        plugin: (u32, u32),
        /// This host's.
        host: (u32, u32),
    },
    /// `struct_size` smaller than the ABI 1.0 table.
    ShortTable {
        /// The plugin's `struct_size`.
        size: u32,
        /// The least accepted.
        needed: usize,
    },
    /// A required callback is null.
    MissingCallback(&'static str),
    /// The name is null, empty, not UTF-8, or not a lowercase key.
    BadName(String),
    /// `kdump_format` is not a known code.
    BadFormat(u32),
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused => f.write_str("the plugin's entry returned no table (it refused this host's ABI)"),
            Self::BadMagic(m) => write!(f, "wrong magic {m:#018x} (expected {:#018x})", abi::PLUGIN_MAGIC),
            Self::AbiMajor { plugin, host } => write!(
                f,
                "plugin ABI {}.{} is not compatible with host ABI {}.{} (major versions differ)",
                plugin.0, plugin.1, host.0, host.1
            ),
            Self::ShortTable { size, needed } => {
                write!(f, "table is {size} bytes, shorter than the {needed} of ABI 1.0")
            }
            Self::MissingCallback(name) => write!(f, "required callback `{name}` is null"),
            Self::BadName(why) => write!(f, "bad plugin name: {why}"),
            Self::BadFormat(code) => write!(f, "unknown kdump format code {code:#x}"),
        }
    }
}

impl std::error::Error for TableError {}

/// A failed call into a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    /// The callback (`"compress"`).
    pub call: &'static str,
    /// The status it returned, or `None` when the host detected misbehaviour.
    pub status: Option<i32>,
    /// The plugin's message, or the host's description.
    pub message: String,
}

impl CallError {
    fn misbehaved(call: &'static str, message: String) -> Self {
        Self { call, status: None, message }
    }

    /// Whether the plugin panicked (a Rust plugin, caught by the SDK).
    pub fn is_panic(&self) -> bool {
        self.status == Some(status::PANICKED)
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.status {
            None => "misbehaved",
            Some(status::INVALID_PARAM) => "refused a parameter",
            Some(status::DST_TOO_SMALL) => "ran out of output space",
            Some(status::CORRUPT) => "found corrupt input",
            Some(status::PANICKED) => "panicked",
            Some(status::NO_MEMORY) => "ran out of memory",
            Some(_) => "failed",
        };
        match self.status {
            Some(code) => write!(f, "{} {kind} (status {code})", self.call)?,
            None => write!(f, "{} {kind}", self.call)?,
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for CallError {}

/// What a plugin says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    /// Runtime key.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// One line, may be empty.
    pub description: String,
    /// Output format.
    pub format: KdumpFormat,
    /// ABI version the plugin was built with.
    pub abi: (u32, u32),
}

/// The services a host offers plugins (`struct vmdump_host_api`).
pub trait HostServices: Send + Sync {
    /// One line from a plugin.
    fn log(&self, plugin: &str, level: LogLevel, message: &str);
    /// A VMCOREINFO value of the dump being written.
    fn vmcoreinfo(&self, _key: &str) -> Option<String> {
        None
    }
}

/// Host services that print plugin messages to stderr and know no VMCOREINFO.
#[derive(Debug, Default, Clone, Copy)]
pub struct StderrHost;

impl HostServices for StderrHost {
    fn log(&self, plugin: &str, level: LogLevel, message: &str) {
        eprintln!("vmdump: plugin {plugin}: {level:?}: {message}");
    }
}

fn c_text(ptr: *const c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: non-null strings in a validated table are NUL-terminated and static.
    unsafe { CStr::from_ptr(ptr) }.to_str().ok().map(str::to_owned)
}

/// A validated compressor table.
#[derive(Clone, Copy)]
pub struct CompressorPlugin {
    table: &'static CompressorV1,
}

impl fmt::Debug for CompressorPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompressorPlugin").field("info", &self.info()).finish()
    }
}

impl CompressorPlugin {
    /// Checks a table the way the host does at load time.
    ///
    /// # Safety
    /// `table` is null or points to memory readable for at least the first 24
    /// bytes (magic, versions, struct_size) and, when `struct_size` says so,
    /// for a whole table whose pointers follow the header's contract, alive
    /// for the rest of the process (libraries are never unloaded).
    ///
    /// # Errors
    /// The first [`TableError`] found.
    pub unsafe fn from_raw(table: *const CompressorV1) -> Result<Self, TableError> {
        if table.is_null() {
            return Err(TableError::Refused);
        }
        // Read the fixed prefix field by field: the rest may not exist.
        // SAFETY: caller guarantees the 24-byte prefix is readable.
        let (magic, major, minor, size) = unsafe {
            (
                std::ptr::addr_of!((*table).magic).read_unaligned(),
                std::ptr::addr_of!((*table).abi_major).read_unaligned(),
                std::ptr::addr_of!((*table).abi_minor).read_unaligned(),
                std::ptr::addr_of!((*table).struct_size).read_unaligned(),
            )
        };
        if magic != abi::PLUGIN_MAGIC {
            return Err(TableError::BadMagic(magic));
        }
        if major != abi::ABI_MAJOR {
            return Err(TableError::AbiMajor {
                plugin: (major, minor),
                host: (abi::ABI_MAJOR, abi::ABI_MINOR),
            });
        }
        if (size as usize) < abi::COMPRESSOR_V1_0_SIZE {
            return Err(TableError::ShortTable { size, needed: abi::COMPRESSOR_V1_0_SIZE });
        }
        // SAFETY: struct_size covers the whole 1.0 table; caller guarantees it lives forever.
        let table: &'static CompressorV1 = unsafe { &*table };
        Self::check_callbacks(table)?;
        let plugin = Self { table };
        let name = c_text(table.name).ok_or_else(|| TableError::BadName("null or not UTF-8".into()))?;
        let valid = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
        if name.is_empty() || name.len() > 64 || !name.chars().all(valid) {
            return Err(TableError::BadName(format!("`{name}` is not a short lowercase key")));
        }
        KdumpFormat::from_code(table.kdump_format).ok_or(TableError::BadFormat(table.kdump_format))?;
        Ok(plugin)
    }

    /// Wraps a table exported by [`export_compressor!`](crate::export_compressor)
    /// in this process (no dlopen): how a Rust plugin tests itself.
    ///
    /// # Panics
    /// When the factory's name or format is invalid (a bug in the plugin).
    pub fn from_exported(table: &'static super::export::ExportedTable) -> Self {
        // SAFETY: an ExportedTable is a complete static table whose callbacks
        // are the SDK's own trampolines, which follow the header's contract.
        unsafe { Self::from_raw(table.as_raw()) }.unwrap_or_else(|e| panic!("exported table is invalid: {e}"))
    }

    fn check_callbacks(t: &CompressorV1) -> Result<(), TableError> {
        let required = [
            ("module_init", t.module_init.is_some()),
            ("bound", t.bound.is_some()),
            ("ctx_init", t.ctx_init.is_some()),
            ("compress", t.compress.is_some()),
            ("decompress", t.decompress.is_some()),
            ("ctx_finalize", t.ctx_finalize.is_some()),
            ("module_finalize", t.module_finalize.is_some()),
        ];
        match required.iter().find(|(_, present)| !present) {
            Some((name, _)) => Err(TableError::MissingCallback(name)),
            None => Ok(()),
        }
    }

    /// Name, version, format and ABI of the plugin.
    pub fn info(&self) -> PluginInfo {
        let t = self.table;
        PluginInfo {
            name: c_text(t.name).unwrap_or_default(),
            version: c_text(t.version).unwrap_or_default(),
            description: c_text(t.description).unwrap_or_default(),
            format: KdumpFormat::from_code(t.kdump_format).unwrap_or(KdumpFormat::Custom),
            abi: (t.abi_major, t.abi_minor),
        }
    }

    /// The runtime key.
    pub fn name(&self) -> String {
        c_text(self.table.name).unwrap_or_default()
    }

    /// Runs module_init with `params`.
    ///
    /// # Errors
    /// The plugin's refusal (unknown key, bad value) or failure.
    pub fn init(&self, params: &Params, host: Arc<dyn HostServices>) -> Result<CompressorModule, CallError> {
        CompressorModule::new(self.table, self.name(), params, host)
    }
}

/// What the host API callbacks reach through `vmdump_host_api.host`.
struct HostCell {
    plugin: String,
    services: Arc<dyn HostServices>,
}

unsafe extern "C" fn host_log(host: *mut c_void, level: c_int, message: *const c_char) {
    // SAFETY: `host` is the HostCell the module owns; it outlives the plugin's use.
    let cell = unsafe { &*host.cast::<HostCell>() };
    let text = c_text(message).unwrap_or_else(|| "(message not UTF-8)".into());
    cell.services.log(&cell.plugin, LogLevel::from_raw(level), &text);
}

unsafe extern "C" fn host_vmcoreinfo(
    host: *mut c_void,
    key: *const c_char,
    buf: *mut c_char,
    len: usize,
) -> i64 {
    // SAFETY: `host` is the module's HostCell (see host_log).
    let cell = unsafe { &*host.cast::<HostCell>() };
    let Some(value) = c_text(key).and_then(|k| cell.services.vmcoreinfo(&k)) else { return -1 };
    if value.len() >= len || buf.is_null() {
        return value.len() as i64;
    }
    // SAFETY: `buf` is writable for `len` bytes and `value.len() + 1 <= len`.
    unsafe {
        std::ptr::copy_nonoverlapping(value.as_ptr(), buf.cast::<u8>(), value.len());
        *buf.add(value.len()) = 0;
    }
    value.len() as i64
}

fn new_error() -> RawError {
    RawError { message: [0; abi::ERROR_MESSAGE_LEN] }
}

fn call_error(call: &'static str, code: c_int, err: &RawError) -> CallError {
    let bytes: Vec<u8> = err.message.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    CallError { call, status: Some(code), message: String::from_utf8_lossy(&bytes).into_owned() }
}

/// An initialised plugin module: shared state for every worker's context.
pub struct CompressorModule {
    table: &'static CompressorV1,
    module: *mut c_void,
    // Boxed so their addresses stay fixed while the plugin holds them.
    _host_api: Box<RawHostApi>,
    _host_cell: Box<HostCell>,
}

// SAFETY: the header requires module state to be read-only after module_init
// and `bound`/`ctx_init` to be callable from several threads at once.
unsafe impl Send for CompressorModule {}
// SAFETY: as above.
unsafe impl Sync for CompressorModule {}

impl CompressorModule {
    fn new(
        table: &'static CompressorV1,
        plugin: String,
        params: &Params,
        services: Arc<dyn HostServices>,
    ) -> Result<Self, CallError> {
        let cell = Box::new(HostCell { plugin, services });
        let host_api = Box::new(RawHostApi {
            struct_size: std::mem::size_of::<RawHostApi>() as u32,
            abi_minor: abi::ABI_MINOR,
            host: std::ptr::from_ref::<HostCell>(&cell).cast_mut().cast(),
            log: Some(host_log),
            vmcoreinfo: Some(host_vmcoreinfo),
        });
        let to_c = |s: &str| {
            CString::new(s)
                .map_err(|_| CallError::misbehaved("module_init", format!("parameter `{s}` holds a NUL")))
        };
        let texts: Vec<(CString, CString)> =
            params.iter().map(|(k, v)| Ok((to_c(k)?, to_c(v)?))).collect::<Result<_, CallError>>()?;
        let items: Vec<RawParam> =
            texts.iter().map(|(k, v)| RawParam { key: k.as_ptr(), value: v.as_ptr() }).collect();
        let raw_params = RawParams { items: items.as_ptr(), count: items.len() };
        let mut module = std::ptr::null_mut();
        let mut err = new_error();
        let init = table.module_init.expect("validated table");
        // SAFETY: validated table; every pointer is valid for the call and the
        // host table lives as long as the returned module.
        let code = unsafe { init(&raw_params, &*host_api, &mut module, &mut err) };
        if code != status::OK {
            return Err(call_error("module_init", code, &err));
        }
        Ok(Self { table, module, _host_api: host_api, _host_cell: cell })
    }

    /// The plugin's output bound for `src_len` input bytes.
    pub fn bound(&self, src_len: usize) -> usize {
        let bound = self.table.bound.expect("validated table");
        // SAFETY: live module from module_init; bound is thread-safe by contract.
        unsafe { bound(self.module, src_len) }
    }

    /// Creates one per-thread context.
    ///
    /// # Errors
    /// The plugin's failure to create it.
    pub fn new_context(&self) -> Result<CompressorContext<'_>, CallError> {
        let mut ctx = std::ptr::null_mut();
        let mut err = new_error();
        let init = self.table.ctx_init.expect("validated table");
        // SAFETY: live module; valid out-pointers.
        let code = unsafe { init(self.module, &mut ctx, &mut err) };
        if code != status::OK {
            return Err(call_error("ctx_init", code, &err));
        }
        Ok(CompressorContext { module: self, ctx })
    }
}

impl Drop for CompressorModule {
    fn drop(&mut self) {
        let finalize = self.table.module_finalize.expect("validated table");
        // SAFETY: every context borrowed this module and is gone; called once.
        unsafe { finalize(self.module) }
    }
}

/// One worker's context: compress, reset and decompress pages.
pub struct CompressorContext<'m> {
    module: &'m CompressorModule,
    ctx: *mut c_void,
}

// SAFETY: a context may move between threads between calls (header contract);
// it is not Sync, so two threads never use it at once.
unsafe impl Send for CompressorContext<'_> {}

impl CompressorContext<'_> {
    fn transform(
        &mut self,
        call: &'static str,
        f: abi::TransformFn,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, CallError> {
        let capacity = dst.len();
        let mut written = capacity;
        let mut err = new_error();
        // SAFETY: live context used by this thread only; buffers valid for
        // their lengths; `written` is a valid in/out length.
        let code = unsafe { f(self.ctx, src.as_ptr(), src.len(), dst.as_mut_ptr(), &mut written, &mut err) };
        if code != status::OK {
            return Err(call_error(call, code, &err));
        }
        if written > capacity {
            return Err(CallError::misbehaved(
                call,
                format!("reported {written} bytes written into a buffer of {capacity}"),
            ));
        }
        Ok(written)
    }

    /// Compresses `src` into `dst`, returning the length written.
    ///
    /// # Errors
    /// The plugin's failure, or a reported length beyond `dst`.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CallError> {
        let f = self.module.table.compress.expect("validated table");
        self.transform("compress", f, src, dst)
    }

    /// Decompresses `src` into `dst`, returning the length written.
    ///
    /// # Errors
    /// The plugin's failure, or a reported length beyond `dst`.
    pub fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CallError> {
        let f = self.module.table.decompress.expect("validated table");
        self.transform("decompress", f, src, dst)
    }

    /// Returns the context to its fresh state (no-op for plugins without reset).
    ///
    /// # Errors
    /// The plugin's failure.
    pub fn reset(&mut self) -> Result<(), CallError> {
        let Some(reset) = self.module.table.reset else { return Ok(()) };
        let mut err = new_error();
        // SAFETY: live context used by this thread only.
        let code = unsafe { reset(self.ctx, &mut err) };
        if code == status::OK { Ok(()) } else { Err(call_error("reset", code, &err)) }
    }
}

impl Drop for CompressorContext<'_> {
    fn drop(&mut self) {
        let finalize = self.module.table.ctx_finalize.expect("validated table");
        // SAFETY: context from ctx_init, finalized exactly once, module alive.
        unsafe { finalize(self.ctx) }
    }
}
