//! The host side of the kernel services (ABI 1.1): [`KernelServices`], which
//! a host implements over the dumped kernel, and the `vmdump_kernel` table
//! of C callbacks built over it for one `prepare` call.

use std::ffi::{c_char, c_int, c_void};
use std::ops::Range;

use super::checks::c_text;
use crate::abi::{RawKernel, UserPageFn, status};
use crate::{Fill, ServiceError, Space};

/// What a host answers a filter's `prepare` hook with. Called on one thread;
/// the marks go into the host's own state (hence `&self`).
pub trait KernelServices {
    /// The address of symbol `name` and the bytes to the next symbol.
    ///
    /// # Errors
    /// No such symbol, or no kallsyms.
    fn symbol(&self, name: &str) -> Result<(u64, u64), ServiceError>;
    /// The size of type `type_name`.
    ///
    /// # Errors
    /// No such type, or no BTF.
    fn type_size(&self, type_name: &str) -> Result<u64, ServiceError>;
    /// The byte offset, size and type's C name of `member` (`a.b.c`) in `type_name`.
    ///
    /// # Errors
    /// No such type or member, a bitfield, or no BTF.
    fn member(&self, type_name: &str, member: &str) -> Result<(u64, u64, String), ServiceError>;
    /// Fills `buf` from `addr` of `space`.
    ///
    /// # Errors
    /// Memory not in the dump, or not mapped.
    fn read(&self, space: Space, addr: u64, buf: &mut [u8]) -> Result<(), ServiceError>;
    /// Calls `visit(vaddr, pfn, pages)` for each run of present user pages
    /// under the top table at kernel virtual address `pgd`, until it
    /// returns `false` (then `Err(ServiceError::Other(FAILED))`).
    ///
    /// # Errors
    /// Unreadable tables, an architecture not walked, a stopped walk.
    fn user_pages(&self, pgd: u64, visit: &mut dyn FnMut(u64, u64, u64) -> bool) -> Result<(), ServiceError>;
    /// Keeps `pfns`.
    ///
    /// # Errors
    /// A range the host refuses.
    fn keep(&self, pfns: Range<u64>) -> Result<(), ServiceError>;
    /// Leaves `pfns` out.
    ///
    /// # Errors
    /// A range the host refuses.
    fn exclude(&self, pfns: Range<u64>) -> Result<(), ServiceError>;
    /// Erases `len` bytes at `addr` of `space`, recorded under `what`.
    ///
    /// # Errors
    /// A page not in the dump or unmapped (nothing erased), a bad `what`.
    fn erase(&self, space: Space, addr: u64, len: u64, fill: Fill, what: &str) -> Result<(), ServiceError>;
}

/// `vmdump_kernel.host`: the services of one `prepare` call.
struct KernelCell<'s> {
    services: &'s dyn KernelServices,
}

/// The services behind a table's `host` pointer.
///
/// # Safety
/// `host` is the `KernelCell` of [`kernel_table`], alive during the call.
unsafe fn services<'a>(host: *mut c_void) -> &'a dyn KernelServices {
    // SAFETY: the caller's contract.
    unsafe { &*host.cast::<KernelCell<'a>>() }.services
}

/// The status of a service's answer, its values written through `out`.
fn answer<T>(result: Result<T, ServiceError>, out: impl FnOnce(T)) -> c_int {
    match result {
        Ok(value) => {
            out(value);
            status::OK
        }
        Err(e) => e.code(),
    }
}

/// Writes `value` through `ptr` when it is not null.
///
/// # Safety
/// `ptr` is null or writable.
unsafe fn put(ptr: *mut u64, value: u64) {
    // SAFETY: the caller's contract.
    if let Some(p) = unsafe { ptr.as_mut() } {
        *p = value;
    }
}

fn text(ptr: *const c_char) -> Result<String, ServiceError> {
    c_text(ptr).ok_or(ServiceError::Invalid)
}

/// # Safety
/// Called only through [`kernel_table`] by a plugin that keeps the
/// header's contract: `host` is that table's, alive during the call, and
/// every pointer is valid for the lengths passed with it.
unsafe extern "C" fn k_symbol(
    host: *mut c_void,
    name: *const c_char,
    address: *mut u64,
    size: *mut u64,
) -> c_int {
    // SAFETY: `host` is the call's KernelCell (kernel_table).
    let s = unsafe { services(host) };
    // SAFETY: out-pointers null or writable (header contract).
    answer(text(name).and_then(|n| s.symbol(&n)), |(a, z)| unsafe {
        put(address, a);
        put(size, z);
    })
}

/// # Safety
/// Called only through [`kernel_table`] by a plugin that keeps the
/// header's contract: `host` is that table's, alive during the call, and
/// every pointer is valid for the lengths passed with it.
unsafe extern "C" fn k_type_size(host: *mut c_void, type_name: *const c_char, size: *mut u64) -> c_int {
    // SAFETY: as k_symbol.
    let s = unsafe { services(host) };
    // SAFETY: as k_symbol.
    answer(text(type_name).and_then(|t| s.type_size(&t)), |z| unsafe { put(size, z) })
}

/// # Safety
/// Called only through [`kernel_table`] by a plugin that keeps the
/// header's contract: `host` is that table's, alive during the call, and
/// every pointer is valid for the lengths passed with it.
unsafe extern "C" fn k_member(
    host: *mut c_void,
    type_name: *const c_char,
    member: *const c_char,
    offset: *mut u64,
    size: *mut u64,
    name: *mut c_char,
    name_len: usize,
) -> c_int {
    // SAFETY: as k_symbol.
    let s = unsafe { services(host) };
    let found = text(type_name).and_then(|t| s.member(&t, &text(member)?));
    // SAFETY: as k_symbol; `name` is null or writable for `name_len` bytes.
    answer(found, |(o, z, n)| unsafe {
        put(offset, o);
        put(size, z);
        if !name.is_null() && name_len > 0 {
            let len = n.len().min(name_len - 1);
            std::ptr::copy_nonoverlapping(n.as_ptr(), name.cast::<u8>(), len);
            *name.add(len) = 0;
        }
    })
}

/// # Safety
/// Called only through [`kernel_table`] by a plugin that keeps the
/// header's contract: `host` is that table's, alive during the call, and
/// every pointer is valid for the lengths passed with it.
unsafe extern "C" fn k_read(host: *mut c_void, space: u32, addr: u64, buf: *mut c_void, len: usize) -> c_int {
    // SAFETY: as k_symbol.
    let s = unsafe { services(host) };
    let Some(space) = Space::from_code(space) else { return status::INVALID_PARAM };
    if len == 0 {
        return status::OK;
    }
    if buf.is_null() {
        return status::INVALID_PARAM;
    }
    // SAFETY: `buf` is writable for `len` bytes (header contract).
    let buf = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    answer(s.read(space, addr, buf), |()| {})
}

/// # Safety
/// Called only through [`kernel_table`] by a plugin that keeps the
/// header's contract: `host` is that table's, alive during the call, and
/// every pointer is valid for the lengths passed with it.
unsafe extern "C" fn k_user_pages(
    host: *mut c_void,
    pgd: u64,
    visit: Option<UserPageFn>,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: as k_symbol.
    let s = unsafe { services(host) };
    let Some(visit) = visit else { return status::INVALID_PARAM };
    let mut stopped = status::OK;
    let mut each = |vaddr, pfn, pages| {
        // SAFETY: the plugin's visitor with its own argument (header contract).
        stopped = unsafe { visit(arg, vaddr, pfn, pages) };
        stopped == status::OK
    };
    match s.user_pages(pgd, &mut each) {
        Ok(()) => status::OK,
        Err(_) if stopped != status::OK => stopped,
        Err(e) => e.code(),
    }
}

fn pfn_range(first: u64, count: u64) -> Result<Range<u64>, ServiceError> {
    first.checked_add(count).map(|end| first..end).ok_or(ServiceError::Invalid)
}

/// # Safety
/// Called only through [`kernel_table`] by a plugin that keeps the
/// header's contract: `host` is that table's, alive during the call, and
/// every pointer is valid for the lengths passed with it.
unsafe extern "C" fn k_keep(host: *mut c_void, first: u64, count: u64) -> c_int {
    // SAFETY: as k_symbol.
    let s = unsafe { services(host) };
    answer(pfn_range(first, count).and_then(|r| s.keep(r)), |()| {})
}

/// # Safety
/// Called only through [`kernel_table`] by a plugin that keeps the
/// header's contract: `host` is that table's, alive during the call, and
/// every pointer is valid for the lengths passed with it.
unsafe extern "C" fn k_exclude(host: *mut c_void, first: u64, count: u64) -> c_int {
    // SAFETY: as k_symbol.
    let s = unsafe { services(host) };
    answer(pfn_range(first, count).and_then(|r| s.exclude(r)), |()| {})
}

/// # Safety
/// Called only through [`kernel_table`] by a plugin that keeps the
/// header's contract: `host` is that table's, alive during the call, and
/// every pointer is valid for the lengths passed with it.
unsafe extern "C" fn k_erase(
    host: *mut c_void,
    space: u32,
    addr: u64,
    len: u64,
    fill: u32,
    what: *const c_char,
) -> c_int {
    // SAFETY: as k_symbol.
    let s = unsafe { services(host) };
    let (Some(space), Some(fill)) = (Space::from_code(space), Fill::from_code(fill)) else {
        return status::INVALID_PARAM;
    };
    let what = match text(what) {
        Ok(w) if !w.is_empty() && !w.contains(char::is_whitespace) => w,
        _ => return status::INVALID_PARAM,
    };
    answer(s.erase(space, addr, len, fill, &what), |()| {})
}

/// Calls `f` with a `vmdump_kernel` table over `services`, valid during the call.
pub(super) fn with_kernel_table<R>(services: &dyn KernelServices, f: impl FnOnce(&RawKernel) -> R) -> R {
    let cell = KernelCell { services };
    let table = RawKernel {
        struct_size: std::mem::size_of::<RawKernel>() as u32,
        reserved: 0,
        host: std::ptr::from_ref(&cell).cast_mut().cast(),
        symbol: Some(k_symbol),
        type_size: Some(k_type_size),
        member: Some(k_member),
        read: Some(k_read),
        user_pages: Some(k_user_pages),
        keep: Some(k_keep),
        exclude: Some(k_exclude),
        erase: Some(k_erase),
    };
    f(&table)
}
