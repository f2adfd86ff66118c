//! The calling side of a filter table: [`FilterPlugin`] (validated table) →
//! [`FilterModule`] (module_init .. module_finalize) → [`FilterContext`]
//! (ctx_init .. ctx_finalize, one per thread) → `classify` per page.

use std::fmt;
use std::sync::Arc;

use super::checks::{c_text, check_name, check_prefix, check_required};
use super::kernel::{KernelServices, with_kernel_table};
use super::lifecycle::{LiveContext, LiveModule, call_error, new_error};
use super::{CallError, HostServices, TableError};
use crate::abi::{FILTER_V1_1_SIZE, FilterV1, FilterV1_1, PrepareFn, RawPage, status, verdict};
use crate::{Needs, Params, Verdict};

#[cfg(test)]
mod tests;

/// What a filter plugin says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterInfo {
    /// Runtime key.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// One line, may be empty.
    pub description: String,
    /// What it looks at, hence where the host runs it.
    pub needs: Needs,
    /// ABI version the plugin was built with.
    pub abi: (u32, u32),
}

/// A validated filter table.
#[derive(Clone, Copy)]
pub struct FilterPlugin {
    table: &'static FilterV1,
    /// ABI 1.1's `prepare`, when the table has it.
    prepare: Option<PrepareFn>,
}

/// `prepare` of a table whose `struct_size` covers it (ABI 1.1), else `None`.
///
/// # Safety
/// `table` is a validated table, readable for `struct_size` bytes.
unsafe fn appended_prepare(table: &'static FilterV1) -> Option<PrepareFn> {
    if (table.struct_size as usize) < FILTER_V1_1_SIZE {
        return None;
    }
    // SAFETY: struct_size covers the 1.1 table, which starts with the 1.0 one.
    unsafe { (*std::ptr::from_ref(table).cast::<FilterV1_1>()).prepare }
}

impl fmt::Debug for FilterPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilterPlugin").field("info", &self.info()).finish()
    }
}

impl FilterPlugin {
    /// Checks a table the way the host does at load time: magic, ABI major,
    /// size, required callbacks, name, `needs` bits.
    ///
    /// # Safety
    /// As for [`CompressorPlugin::from_raw`](super::CompressorPlugin::from_raw):
    /// `table` is null or readable for its 24-byte prefix and, when
    /// `struct_size` says so, a whole table following the header's contract,
    /// alive for the rest of the process.
    ///
    /// # Errors
    /// The first [`TableError`] found.
    pub unsafe fn from_raw(table: *const FilterV1) -> Result<Self, TableError> {
        // SAFETY: the caller's contract is check_prefix's.
        let table = unsafe { check_prefix(table) }?;
        let needs = Needs::from_bits(table.needs).ok_or(TableError::BadNeeds(table.needs))?;
        // SAFETY: a table whose prefix checked out, readable for struct_size.
        let prepare = unsafe { appended_prepare(table) };
        check_required(&[
            ("module_init", table.module_init.is_some()),
            ("ctx_init", table.ctx_init.is_some()),
            ("classify", table.classify.is_some() || needs == Needs::KERNEL),
            ("ctx_finalize", table.ctx_finalize.is_some()),
            ("module_finalize", table.module_finalize.is_some()),
            ("prepare", prepare.is_some() || !needs.contains(Needs::KERNEL)),
        ])?;
        check_name(table.name)?;
        Ok(Self { table, prepare: prepare.filter(|_| needs.contains(Needs::KERNEL)) })
    }

    /// Wraps a table exported by [`export_filter!`](crate::export_filter) in
    /// this process (no dlopen): how a Rust filter tests itself.
    ///
    /// # Panics
    /// When the factory's name is invalid (a bug in the plugin).
    pub fn from_exported(table: &'static crate::abi::export::ExportedFilterTable) -> Self {
        // SAFETY: an ExportedFilterTable is a complete static table whose
        // callbacks are the SDK's own trampolines, which follow the contract.
        unsafe { Self::from_raw(table.as_raw()) }.unwrap_or_else(|e| panic!("exported table is invalid: {e}"))
    }

    /// Name, version, needs and ABI of the plugin.
    pub fn info(&self) -> FilterInfo {
        let t = self.table;
        FilterInfo {
            name: self.name(),
            version: c_text(t.version).unwrap_or_default(),
            description: c_text(t.description).unwrap_or_default(),
            needs: self.needs(),
            abi: (t.abi_major, t.abi_minor),
        }
    }

    /// The runtime key.
    pub fn name(&self) -> String {
        c_text(self.table.name).unwrap_or_default()
    }

    /// What the filter looks at (checked at load time).
    pub fn needs(&self) -> Needs {
        Needs::from_bits(self.table.needs).unwrap_or(Needs::NOTHING)
    }

    /// Runs module_init with `params`.
    ///
    /// # Errors
    /// The plugin's refusal (unknown key, bad value) or failure.
    pub fn init(&self, params: &Params, host: Arc<dyn HostServices>) -> Result<FilterModule, CallError> {
        let callbacks = (self.table.module_init, self.table.module_finalize);
        let live = LiveModule::init(callbacks, self.name(), params, host)?;
        Ok(FilterModule { table: self.table, needs: self.needs(), prepare: self.prepare, live })
    }

    /// Whether the filter is ever asked about a page (a filter that decides
    /// in `prepare` alone is not).
    pub fn classifies(&self) -> bool {
        self.table.classify.is_some()
    }
}

/// An initialised filter module: shared state for every thread's context.
pub struct FilterModule {
    table: &'static FilterV1,
    needs: Needs,
    prepare: Option<PrepareFn>,
    live: LiveModule,
}

// SAFETY: the header requires module state to be read-only after module_init
// and `ctx_init` to be callable from several threads at once.
unsafe impl Send for FilterModule {}
// SAFETY: as above.
unsafe impl Sync for FilterModule {}

impl FilterModule {
    /// What the filter looks at.
    pub fn needs(&self) -> Needs {
        self.needs
    }

    /// Whether the filter is ever asked about a page.
    pub fn classifies(&self) -> bool {
        self.table.classify.is_some()
    }

    /// Runs the `prepare` hook (ABI 1.1) with `kernel`; nothing for a
    /// filter without [`Needs::KERNEL`]. Before any context: `&mut self`.
    ///
    /// # Errors
    /// The plugin's failure.
    pub fn prepare(&mut self, kernel: &dyn KernelServices) -> Result<(), CallError> {
        let Some(prepare) = self.prepare else { return Ok(()) };
        let mut err = new_error();
        let state = self.live.state;
        // SAFETY: a validated table's hook on its live module, which has no
        // context (they borrow the module); the kernel table is valid for the call.
        let code = with_kernel_table(kernel, |table| unsafe { prepare(state, table, &mut err) });
        if code == status::OK { Ok(()) } else { Err(call_error("prepare", code, &err)) }
    }

    /// Creates one per-thread context.
    ///
    /// # Errors
    /// The plugin's failure to create it.
    pub fn new_context(&self) -> Result<FilterContext<'_>, CallError> {
        let callbacks = (self.table.ctx_init, self.table.ctx_finalize);
        Ok(FilterContext { module: self, live: LiveContext::init(callbacks, &self.live)? })
    }
}

/// One thread's filter context.
pub struct FilterContext<'m> {
    module: &'m FilterModule,
    live: LiveContext,
}

// SAFETY: a context may move between threads between calls (header contract);
// it is not Sync, so two threads never use it at once.
unsafe impl Send for FilterContext<'_> {}

/// `(pointer, length)` of what the filter declared it needs, null otherwise.
fn declared(needed: bool, bytes: Option<&[u8]>, what: &str) -> Result<(*const u8, usize), CallError> {
    match bytes {
        _ if !needed => Ok((std::ptr::null(), 0)),
        Some(b) if !b.is_empty() => Ok((b.as_ptr(), b.len())),
        // A host bug, refused here so that a C filter never reads a NULL it
        // was promised would not be: the host keeps the page and drops the filter.
        _ => Err(CallError {
            call: "classify",
            status: None,
            message: format!("not called: the host has no {what} for a filter that needs them"),
        }),
    }
}

impl FilterContext<'_> {
    /// Classifies one page. Only what the filter declared is passed on: `data`
    /// (one page) when it needs [`Needs::PAGE`], `struct_page` when it needs
    /// [`Needs::STRUCT_PAGE`]; anything else given is ignored.
    ///
    /// # Errors
    /// The plugin's failure, a verdict other than KEEP or EXCLUDE, or a
    /// declared need the caller did not provide (then the plugin is not called).
    pub fn classify(
        &mut self,
        pfn: u64,
        paddr: u64,
        data: Option<&[u8]>,
        struct_page: Option<&[u8]>,
    ) -> Result<Verdict, CallError> {
        let needs = self.module.needs;
        let (data, data_len) = declared(needs.contains(Needs::PAGE), data, "page bytes")?;
        let (struct_page, struct_page_len) =
            declared(needs.contains(Needs::STRUCT_PAGE), struct_page, "struct page bytes")?;
        let page = RawPage {
            struct_size: std::mem::size_of::<RawPage>() as u32,
            reserved: 0,
            pfn,
            paddr,
            data,
            data_len,
            struct_page,
            struct_page_len,
        };
        let Some(classify) = self.module.table.classify else { return Ok(Verdict::Keep) };
        let mut decided = verdict::KEEP;
        let mut err = new_error();
        // SAFETY: live context used by this thread only; the page and its
        // buffers are valid for the call; valid out-pointers.
        let code = unsafe { classify(self.live.ctx, &page, &mut decided, &mut err) };
        if code != status::OK {
            return Err(call_error("classify", code, &err));
        }
        Verdict::from_code(decided).ok_or_else(|| {
            CallError::misbehaved(
                "classify",
                format!("wrote verdict {decided}, neither KEEP (0) nor EXCLUDE (1)"),
            )
        })
    }
}
