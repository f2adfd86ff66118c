//! The life cycle every plugin kind shares: the host API handed to
//! `module_init`, a live module state, a live context, and the conversion of
//! a callback's status into a [`CallError`].

use std::ffi::{CString, c_char, c_int, c_void};
use std::sync::Arc;

use super::checks::c_text;
use super::{CallError, HostServices};
use crate::abi::{
    self, CtxInitFn, FinalizeFn, ModuleInitFn, RawError, RawHostApi, RawParam, RawParams, status,
};
use crate::{LogLevel, Params};

/// What the host API callbacks reach through `vmdump_host_api.host`.
struct HostCell {
    plugin: String,
    services: Arc<dyn HostServices>,
}

/// `vmdump_host_api.log` of the host.
///
/// # Safety
/// As [`crate::abi::LogFn`]: `host` is the module's [`HostCell`].
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

/// A zeroed `vmdump_error`, as the host passes to every call.
pub(super) fn new_error() -> RawError {
    RawError { message: [0; abi::ERROR_MESSAGE_LEN] }
}

/// The error of a callback that returned `code` and wrote `err`.
pub(super) fn call_error(call: &'static str, code: c_int, err: &RawError) -> CallError {
    let bytes: Vec<u8> = err.message.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    CallError { call, status: Some(code), message: String::from_utf8_lossy(&bytes).into_owned() }
}

/// `params` as C strings, alive as long as this value.
struct CParams {
    _texts: Vec<(CString, CString)>,
    items: Vec<RawParam>,
}

impl CParams {
    fn new(params: &Params) -> Result<Self, CallError> {
        let to_c = |s: &str| {
            CString::new(s)
                .map_err(|_| CallError::misbehaved("module_init", format!("parameter `{s}` holds a NUL")))
        };
        let texts: Vec<(CString, CString)> =
            params.iter().map(|(k, v)| Ok((to_c(k)?, to_c(v)?))).collect::<Result<_, CallError>>()?;
        let items = texts.iter().map(|(k, v)| RawParam { key: k.as_ptr(), value: v.as_ptr() }).collect();
        Ok(Self { _texts: texts, items })
    }

    fn raw(&self) -> RawParams {
        RawParams { items: self.items.as_ptr(), count: self.items.len() }
    }
}

/// A plugin's module state from a successful `module_init`, finalized on drop
/// (before the host API it was given goes away).
pub(super) struct LiveModule {
    pub(super) state: *mut c_void,
    finalize: FinalizeFn,
    // Boxed so their addresses stay fixed while the plugin holds them.
    _host_api: Box<RawHostApi>,
    _host_cell: Box<HostCell>,
}

impl LiveModule {
    /// Runs `module_init` with `params` and a host API that reports as `plugin`.
    pub(super) fn init(
        (init, finalize): (Option<ModuleInitFn>, Option<FinalizeFn>),
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
        let (init, finalize) = (init.expect("validated table"), finalize.expect("validated table"));
        let c_params = CParams::new(params)?;
        let mut state = std::ptr::null_mut();
        let mut err = new_error();
        // SAFETY: a validated table's callback; every pointer is valid for the
        // call and the host table lives as long as the returned module.
        let code = unsafe { init(&c_params.raw(), &*host_api, &mut state, &mut err) };
        if code != status::OK {
            return Err(call_error("module_init", code, &err));
        }
        Ok(Self { state, finalize, _host_api: host_api, _host_cell: cell })
    }
}

impl Drop for LiveModule {
    fn drop(&mut self) {
        // SAFETY: every context of this module is gone (they borrow the
        // wrapper that owns it); called exactly once.
        unsafe { (self.finalize)(self.state) }
    }
}

/// A context from a successful `ctx_init`, finalized on drop. Its owner keeps
/// the module alive longer (by borrowing it).
pub(super) struct LiveContext {
    pub(super) ctx: *mut c_void,
    finalize: FinalizeFn,
}

impl LiveContext {
    /// Runs `ctx_init` on a live module state.
    pub(super) fn init(
        (init, finalize): (Option<CtxInitFn>, Option<FinalizeFn>),
        module: &LiveModule,
    ) -> Result<Self, CallError> {
        let (init, finalize) = (init.expect("validated table"), finalize.expect("validated table"));
        let mut ctx = std::ptr::null_mut();
        let mut err = new_error();
        // SAFETY: a live module; valid out-pointers; ctx_init is callable from
        // several threads at once (header contract).
        let code = unsafe { init(module.state, &mut ctx, &mut err) };
        if code != status::OK {
            return Err(call_error("ctx_init", code, &err));
        }
        Ok(Self { ctx, finalize })
    }
}

impl Drop for LiveContext {
    fn drop(&mut self) {
        // SAFETY: a context from ctx_init, finalized exactly once, while its
        // module is alive (the owner borrows it).
        unsafe { (self.finalize)(self.ctx) }
    }
}
