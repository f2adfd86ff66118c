//! The calling side of the contract: safe wrappers over a compressor or filter
//! table, whoever built it (a Rust plugin in-process, a `.so` the host loaded,
//! a C plugin). The host's worker pool and the conformance kit both use these.
//!
//! Ownership mirrors the life cycle: a [`CompressorModule`] (module_init ..
//! module_finalize) lends [`CompressorContext`]s (ctx_init .. ctx_finalize),
//! so the borrow checker guarantees contexts are finalized first; likewise
//! [`FilterModule`] and [`FilterContext`].

mod checks;
mod filter;
mod kernel;
mod lifecycle;

use std::fmt;
use std::sync::Arc;

use checks::{c_text, check_name, check_prefix, check_required};
use lifecycle::{LiveContext, LiveModule, call_error, new_error};

use crate::abi::{self, CompressorV1, status};
use crate::{KdumpFormat, LogLevel, Params};

pub use filter::{FilterContext, FilterInfo, FilterModule, FilterPlugin};
pub use kernel::KernelServices;

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
    /// A filter's `needs` has a bit this ABI does not define.
    BadNeeds(u32),
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
            Self::BadNeeds(bits) => write!(f, "unknown filter needs bits {bits:#x}"),
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
        // SAFETY: the caller's contract is check_prefix's.
        let table = unsafe { check_prefix(table) }?;
        check_required(&[
            ("module_init", table.module_init.is_some()),
            ("bound", table.bound.is_some()),
            ("ctx_init", table.ctx_init.is_some()),
            ("compress", table.compress.is_some()),
            ("decompress", table.decompress.is_some()),
            ("ctx_finalize", table.ctx_finalize.is_some()),
            ("module_finalize", table.module_finalize.is_some()),
        ])?;
        check_name(table.name)?;
        KdumpFormat::from_code(table.kdump_format).ok_or(TableError::BadFormat(table.kdump_format))?;
        Ok(Self { table })
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

/// An initialised plugin module: shared state for every worker's context.
pub struct CompressorModule {
    table: &'static CompressorV1,
    live: LiveModule,
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
        let callbacks = (table.module_init, table.module_finalize);
        Ok(Self { table, live: LiveModule::init(callbacks, plugin, params, services)? })
    }

    /// The plugin's output bound for `src_len` input bytes.
    pub fn bound(&self, src_len: usize) -> usize {
        let bound = self.table.bound.expect("validated table");
        // SAFETY: live module from module_init; bound is thread-safe by contract.
        unsafe { bound(self.live.state, src_len) }
    }

    /// Creates one per-thread context.
    ///
    /// # Errors
    /// The plugin's failure to create it.
    pub fn new_context(&self) -> Result<CompressorContext<'_>, CallError> {
        let callbacks = (self.table.ctx_init, self.table.ctx_finalize);
        Ok(CompressorContext { module: self, live: LiveContext::init(callbacks, &self.live)? })
    }
}

/// One worker's context: compress, reset and decompress pages.
pub struct CompressorContext<'m> {
    module: &'m CompressorModule,
    live: LiveContext,
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
        let code =
            unsafe { f(self.live.ctx, src.as_ptr(), src.len(), dst.as_mut_ptr(), &mut written, &mut err) };
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
        let code = unsafe { reset(self.live.ctx, &mut err) };
        if code == status::OK { Ok(()) } else { Err(call_error("reset", code, &err)) }
    }
}
