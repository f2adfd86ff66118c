//! The services the host offers a plugin (logging, VMCOREINFO look-ups),
//! seen from the plugin's side.

use std::ffi::{CString, c_char, c_int};

use crate::abi::RawHostApi;

/// Message levels, as in `enum vmdump_log_level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum LogLevel {
    /// An error.
    Error = 1,
    /// A warning.
    Warn = 2,
    /// Information.
    Info = 3,
    /// Debugging detail.
    Debug = 4,
}

impl LogLevel {
    /// The level of a raw code; unknown codes read as `Debug`.
    pub fn from_raw(code: c_int) -> Self {
        match code {
            1 => Self::Error,
            2 => Self::Warn,
            3 => Self::Info,
            _ => Self::Debug,
        }
    }
}

/// A handle on the host's services, given to [`crate::CompressorFactory::init`].
/// Copyable and usable from any thread while the module lives.
#[derive(Clone, Copy)]
pub struct Host {
    api: *const RawHostApi,
}

// SAFETY: the host API table is immutable and its callbacks are documented as
// callable from any thread (vmdump_plugin.h, struct vmdump_host_api).
unsafe impl Send for Host {}
// SAFETY: as above.
unsafe impl Sync for Host {}

impl Host {
    /// A handle that offers nothing (no logging, no VMCOREINFO), for tests.
    pub const fn detached() -> Self {
        Self { api: std::ptr::null() }
    }

    /// Wraps the host table given to `module_init`.
    ///
    /// # Safety
    /// `api` is null or points to a valid `vmdump_host_api` that outlives every
    /// use of the returned handle.
    pub unsafe fn from_raw(api: *const RawHostApi) -> Self {
        Self { api }
    }

    fn api(&self) -> Option<&RawHostApi> {
        // SAFETY: `from_raw`'s contract: null or valid for the module's life.
        unsafe { self.api.as_ref() }
    }

    /// Logs one line through the host.
    pub fn log(&self, level: LogLevel, message: &str) {
        let Some(api) = self.api() else { return };
        let Some(log) = api.log else { return };
        let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
        // SAFETY: a valid host table and a NUL-terminated string alive during the call.
        unsafe { log(api.host, level as c_int, text.as_ptr()) }
    }

    /// The value of a VMCOREINFO key (`"SYMBOL(mem_section)"`) of the dump
    /// being written, if the host has one.
    pub fn vmcoreinfo(&self, key: &str) -> Option<String> {
        let api = self.api()?;
        if (api.struct_size as usize) < std::mem::size_of::<RawHostApi>() {
            return None;
        }
        let lookup = api.vmcoreinfo?;
        let key = CString::new(key).ok()?;
        let mut buf = vec![0u8; 256];
        loop {
            // SAFETY: a valid host table, a NUL-terminated key and a writable
            // buffer of the length given.
            let n = unsafe { lookup(api.host, key.as_ptr(), buf.as_mut_ptr().cast::<c_char>(), buf.len()) };
            let n = usize::try_from(n).ok()?;
            if n < buf.len() {
                buf.truncate(n);
                return String::from_utf8(buf).ok();
            }
            buf.resize(n + 1, 0);
        }
    }
}
