//! The filter table behind [`export_filter!`](crate::export_filter): the shared
//! life-cycle trampolines of the parent module plus `classify`.

use std::ffi::{CStr, c_int, c_void};

use super::{AsFilter, ctx_init, finalize, guarded, module_init, offered, src_slice};
use crate::abi::{self, FilterV1, FilterV1_1, RawError, RawKernel, RawPage, needs};
use crate::{Filter, FilterFactory, Kernel, Needs, PageView, SdkError};

/// A filter table built by [`filter_table`] from a safe Rust factory: its
/// callbacks are the SDK's trampolines, so it follows the contract by
/// construction and can be wrapped without `unsafe`
/// ([`FilterPlugin::from_exported`](crate::client::FilterPlugin::from_exported)).
pub struct ExportedFilterTable(FilterV1_1);

impl ExportedFilterTable {
    /// The raw table, for the entry symbol (its `struct_size` covers the
    /// fields of ABI 1.1 that follow the 1.0 ones).
    pub const fn as_raw(&'static self) -> &'static FilterV1 {
        &self.0.v1_0
    }
}

/// The ABI table of filter factory `F`, built at compile time.
///
/// # Panics
/// At compile time, for a factory that does not classify
/// ([`FilterFactory::CLASSIFIES`] `false`) but needs more than [`Needs::KERNEL`].
pub const fn filter_table<F: FilterFactory>(version: &'static CStr) -> ExportedFilterTable {
    assert!(
        F::CLASSIFIES || F::NEEDS.bits() == needs::KERNEL,
        "a filter that does not classify decides in prepare alone: its NEEDS must be exactly Needs::KERNEL"
    );
    ExportedFilterTable(FilterV1_1 {
        v1_0: FilterV1 {
            magic: abi::PLUGIN_MAGIC,
            abi_major: abi::ABI_MAJOR,
            abi_minor: abi::ABI_MINOR,
            struct_size: std::mem::size_of::<FilterV1_1>() as u32,
            flags: 0,
            name: F::NAME.as_ptr(),
            version: version.as_ptr(),
            description: F::DESCRIPTION.as_ptr(),
            needs: F::NEEDS.bits(),
            reserved: 0,
            module_init: Some(module_init::<AsFilter<F>>),
            ctx_init: Some(ctx_init::<AsFilter<F>>),
            classify: if F::CLASSIFIES { Some(classify::<F>) } else { None },
            ctx_finalize: Some(finalize::<F::Context>),
            module_finalize: Some(finalize::<F>),
        },
        prepare: Some(prepare::<F>),
    })
}

/// The body of `vmdump_filter_entry_v1`: the table, or null for a host of
/// another major version, and for a 1.0 host when the filter needs its
/// `prepare` hook (that host would not run it; it would also refuse the
/// `needs` bit).
pub fn filter_entry(
    table: &'static ExportedFilterTable,
    host_abi_major: u32,
    host_abi_minor: u32,
) -> *const FilterV1 {
    let raw = table.as_raw();
    if raw.needs & needs::KERNEL != 0 && host_abi_minor < 1 {
        return std::ptr::null();
    }
    offered(raw, host_abi_major)
}

/// The `prepare` trampoline (ABI 1.1).
///
/// # Safety
/// As [`crate::abi::PrepareFn`]: `module` came from this plugin's
/// module_init and no context of it exists.
unsafe extern "C" fn prepare<F: FilterFactory>(
    module: *mut c_void,
    kernel: *const RawKernel,
    err: *mut RawError,
) -> c_int {
    guarded(err, || {
        // SAFETY: the host passes a kernel table valid during the call.
        let kernel = unsafe { Kernel::from_raw(kernel) }?;
        // SAFETY: `module` is this plugin's live module, with no context yet
        // (header contract), so this is its only reference.
        let factory = unsafe { &mut *module.cast::<F>() };
        factory.prepare(&kernel)
    })
}

/// The bytes of a `vmdump_page` field: `None` when the filter did not ask for
/// them (whatever the host passed), an error when it asked and got none.
///
/// # Safety
/// When non-null, `ptr` is readable for `len` bytes for `'a`.
unsafe fn declared_bytes<'a>(
    wanted: bool,
    (ptr, len): (*const u8, usize),
    what: &str,
) -> Result<Option<&'a [u8]>, SdkError> {
    if !wanted {
        return Ok(None);
    }
    if ptr.is_null() || len == 0 {
        return Err(SdkError::failed(format!("the host gave no {what}, which this filter needs")));
    }
    // SAFETY: the caller's contract, for a non-null pointer.
    Ok(Some(unsafe { src_slice(ptr, len) }))
}

/// The safe view of `page`, holding only what `needs` declares.
///
/// # Safety
/// `page` is null or a valid `vmdump_page` whose buffers live for `'a`.
unsafe fn page_view<'a>(page: *const RawPage, needs: Needs) -> Result<PageView<'a>, SdkError> {
    // SAFETY: the caller's contract.
    let raw = unsafe { page.as_ref() }.ok_or_else(|| SdkError::failed("the host gave a null page"))?;
    if (raw.struct_size as usize) < std::mem::size_of::<RawPage>() {
        return Err(SdkError::failed(format!("the host's vmdump_page is only {} bytes", raw.struct_size)));
    }
    // SAFETY: the header makes `data` readable for `data_len` bytes during the call.
    let data =
        unsafe { declared_bytes(needs.contains(Needs::PAGE), (raw.data, raw.data_len), "page bytes") }?;
    // SAFETY: as above, for `struct_page`.
    let struct_page = unsafe {
        declared_bytes(
            needs.contains(Needs::STRUCT_PAGE),
            (raw.struct_page, raw.struct_page_len),
            "struct page",
        )
    }?;
    Ok(PageView { pfn: raw.pfn, paddr: raw.paddr, data, struct_page })
}

/// The `classify` trampoline: catches panics, turns the verdict and errors into C.
///
/// # Safety
/// As [`crate::abi::ClassifyFn`]: `ctx` is a context this plugin made.
unsafe extern "C" fn classify<F: FilterFactory>(
    ctx: *mut c_void,
    page: *const RawPage,
    verdict: *mut u32,
    err: *mut RawError,
) -> c_int {
    guarded(err, || {
        // SAFETY: the host passes a page valid during the call (header contract).
        let view = unsafe { page_view(page, F::NEEDS) }?;
        // SAFETY: `ctx` came from ctx_init::<AsFilter<F>> and is used by one thread.
        let filter = unsafe { &mut *ctx.cast::<F::Context>() };
        let decided = filter.classify(&view)?;
        // SAFETY: `verdict` is a valid out-pointer (header contract).
        unsafe { *verdict = decided.code() };
        Ok(())
    })
}
