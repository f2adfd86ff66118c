//! The kernel services of ABI 1.1 (`struct vmdump_kernel`), seen from a
//! filter's `prepare` hook: the dumped kernel's symbols, types and memory,
//! and the marks a filter makes (keep, exclude, erase).

use std::ffi::{CString, c_int, c_void};
use std::fmt;
use std::ops::Range;

use crate::SdkError;
use crate::abi::{ERASE_NULLIFY, RawKernel, space, status};

/// An address space of [`Kernel::read`] and [`Kernel::erase`] (`enum vmdump_space`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Space {
    /// Physical addresses of the dumped machine.
    Phys,
    /// Kernel virtual addresses, through the kernel's page tables.
    KernelVirtual,
}

impl Space {
    /// The ABI code.
    pub const fn code(self) -> u32 {
        match self {
            Space::Phys => space::PHYS,
            Space::KernelVirtual => space::KVIRT,
        }
    }

    /// The space of an ABI code.
    pub const fn from_code(code: u32) -> Option<Space> {
        match code {
            space::PHYS => Some(Space::Phys),
            space::KVIRT => Some(Space::KernelVirtual),
            _ => None,
        }
    }
}

/// What erased bytes become.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fill {
    /// This byte (makedumpfile's is `'X'`), recorded as `size N`.
    Byte(u8),
    /// Zeros, recorded as `nullify` (makedumpfile's word, for pointers).
    Nullify,
}

impl Fill {
    /// The ABI code: the byte, or `VMDUMP_ERASE_NULLIFY`.
    pub const fn code(self) -> u32 {
        match self {
            Fill::Byte(b) => b as u32,
            Fill::Nullify => ERASE_NULLIFY,
        }
    }

    /// The fill of an ABI code.
    pub const fn from_code(code: u32) -> Option<Fill> {
        match code {
            ERASE_NULLIFY => Some(Fill::Nullify),
            0..=0xff => Some(Fill::Byte(code as u8)),
            _ => None,
        }
    }

    /// The byte written.
    pub const fn byte(self) -> u8 {
        match self {
            Fill::Byte(b) => b,
            Fill::Nullify => 0,
        }
    }
}

/// Why a kernel service gave no answer (its status code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceError {
    /// No such symbol, type or member in the dumped kernel.
    NotFound,
    /// The memory is not in the dump, or not mapped.
    Unreadable,
    /// The dump cannot give this service (no kallsyms, no BTF, an architecture not walked).
    Unavailable,
    /// A bad argument (a bitfield member, an unknown space, a bad name).
    Invalid,
    /// Another status (a visitor's own, returned by a walk it stopped).
    Other(i32),
}

impl ServiceError {
    /// The ABI status.
    pub const fn code(self) -> i32 {
        match self {
            Self::NotFound => status::NOT_FOUND,
            Self::Unreadable => status::UNREADABLE,
            Self::Unavailable => status::UNAVAILABLE,
            Self::Invalid => status::INVALID_PARAM,
            Self::Other(code) => code,
        }
    }

    /// The error of a status other than OK.
    pub const fn from_code(code: i32) -> Self {
        match code {
            status::NOT_FOUND => Self::NotFound,
            status::UNREADABLE => Self::Unreadable,
            status::UNAVAILABLE => Self::Unavailable,
            status::INVALID_PARAM => Self::Invalid,
            other => Self::Other(other),
        }
    }

    /// `Ok` for OK, else the error.
    pub const fn check(code: c_int) -> Result<(), Self> {
        if code == status::OK { Ok(()) } else { Err(Self::from_code(code)) }
    }
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound => f.write_str("not in the dumped kernel"),
            Self::Unreadable => f.write_str("not readable from the dump"),
            Self::Unavailable => f.write_str("not available from this dump"),
            Self::Invalid => f.write_str("refused as invalid"),
            Self::Other(code) => write!(f, "failed (status {code})"),
        }
    }
}

/// A failed kernel service call: what was asked and why there is no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelError {
    /// What was asked (`symbol init_task`, `read of 8 bytes at 0xffff…`).
    pub asked: String,
    /// Why it failed.
    pub cause: ServiceError,
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.asked, self.cause)
    }
}

impl std::error::Error for KernelError {}

impl From<KernelError> for SdkError {
    fn from(e: KernelError) -> Self {
        SdkError::failed(e)
    }
}

/// A symbol's address and the bytes to the next symbol (kallsyms keeps no sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolInfo {
    /// Its address.
    pub address: u64,
    /// Bytes to the next symbol; 0 for the last.
    pub size: u64,
}

/// A member's byte offset in its struct, its size and its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberInfo {
    /// Bytes from the start of the outermost struct.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its type's C name (`struct mm_struct *`, `char [16]`).
    pub type_name: String,
}

/// The kernel services a `prepare` hook is given (valid during the hook).
#[derive(Clone, Copy)]
pub struct Kernel<'k> {
    raw: &'k RawKernel,
}

/// A C string of `text`, or the error of a name holding a NUL.
fn c_string(text: &str, asked: impl FnOnce() -> String) -> Result<CString, KernelError> {
    CString::new(text).map_err(|_| KernelError { asked: asked(), cause: ServiceError::Invalid })
}

/// The visitor of [`Kernel::user_pages`], as `vmdump_user_page_fn`.
///
/// # Safety
/// `arg` is the `&mut &mut dyn FnMut` that `user_pages` passed.
unsafe extern "C" fn visit_trampoline(arg: *mut c_void, vaddr: u64, pfn: u64, pages: u64) -> c_int {
    // SAFETY: `arg` is user_pages' visitor, alive and unaliased during the walk.
    let visit = unsafe { &mut *arg.cast::<&mut dyn FnMut(u64, u64, u64) -> bool>() };
    let go_on = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| visit(vaddr, pfn, pages)));
    if go_on.unwrap_or(false) { status::OK } else { status::FAILED }
}

impl<'k> Kernel<'k> {
    /// Wraps the table given to `prepare`.
    ///
    /// # Safety
    /// `raw` points at a valid `vmdump_kernel` for `'k`.
    ///
    /// # Errors
    /// A null table, or one shorter than ABI 1.1's.
    pub unsafe fn from_raw(raw: *const RawKernel) -> Result<Self, SdkError> {
        // SAFETY: the caller's contract.
        let raw =
            unsafe { raw.as_ref() }.ok_or_else(|| SdkError::failed("the host gave no kernel services"))?;
        if (raw.struct_size as usize) < std::mem::size_of::<RawKernel>() {
            return Err(SdkError::failed(format!(
                "the host's vmdump_kernel is only {} bytes",
                raw.struct_size
            )));
        }
        Ok(Self { raw })
    }

    /// Calls a service, `Err` naming `asked` when it is missing or fails.
    fn call(
        &self,
        f: Option<impl FnOnce(*mut c_void) -> c_int>,
        asked: impl FnOnce() -> String,
    ) -> Result<(), KernelError> {
        let code = f.map_or(status::UNAVAILABLE, |f| f(self.raw.host));
        ServiceError::check(code).map_err(|cause| KernelError { asked: asked(), cause })
    }

    /// The symbol `name` of the kernel or of a loaded module.
    ///
    /// # Errors
    /// No such symbol, or no kallsyms in the dump.
    pub fn symbol(&self, name: &str) -> Result<SymbolInfo, KernelError> {
        let asked = || format!("symbol `{name}`");
        let c_name = c_string(name, asked)?;
        let (mut address, mut size) = (0, 0);
        let (a, z) = (&raw mut address, &raw mut size);
        // SAFETY: a valid table's callback, with a NUL-terminated name and
        // out-pointers to the locals above, alive for the call.
        let f = self.raw.symbol.map(|f| move |h| unsafe { f(h, c_name.as_ptr(), a, z) });
        self.call(f, asked)?;
        Ok(SymbolInfo { address, size })
    }

    /// The size of a type by its C name (`struct task_struct`, `pgd_t`).
    ///
    /// # Errors
    /// No such type, or no BTF in the dump.
    pub fn type_size(&self, type_name: &str) -> Result<u64, KernelError> {
        let asked = || format!("size of `{type_name}`");
        let c_type = c_string(type_name, asked)?;
        let mut size = 0;
        let z = &raw mut size;
        // SAFETY: as in `symbol`.
        let f = self.raw.type_size.map(|f| move |h| unsafe { f(h, c_type.as_ptr(), z) });
        self.call(f, asked)?;
        Ok(size)
    }

    /// The offset and size of `member` (`a.b.c`) in `type_name`.
    ///
    /// # Errors
    /// No such type or member, a bitfield, or no BTF in the dump.
    pub fn member(&self, type_name: &str, member: &str) -> Result<MemberInfo, KernelError> {
        let asked = || format!("member `{member}` of `{type_name}`");
        let (c_type, c_member) = (c_string(type_name, asked)?, c_string(member, asked)?);
        let (mut offset, mut size, mut name) = (0, 0, [0u8; 256]);
        let (o, z) = (&raw mut offset, &raw mut size);
        let (name_ptr, name_len) = (name.as_mut_ptr().cast(), name.len());
        // SAFETY: as in `symbol`, with a name buffer writable for its length.
        let f = self
            .raw
            .member
            .map(|f| move |h| unsafe { f(h, c_type.as_ptr(), c_member.as_ptr(), o, z, name_ptr, name_len) });
        self.call(f, asked)?;
        let end = name.iter().position(|&b| b == 0).unwrap_or(0);
        Ok(MemberInfo { offset, size, type_name: String::from_utf8_lossy(&name[..end]).into_owned() })
    }

    /// Reads `buf.len()` bytes at `addr` of `space`.
    ///
    /// # Errors
    /// The memory is not in the dump, or not mapped.
    pub fn read(&self, space: Space, addr: u64, buf: &mut [u8]) -> Result<(), KernelError> {
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        let asked = || format!("read of {len} bytes at {addr:#x} ({space:?})");
        // SAFETY: a valid table's callback and a buffer writable for its length.
        let f = self.raw.read.map(|f| move |h| unsafe { f(h, space.code(), addr, ptr.cast(), len) });
        let code = f.map_or(status::UNAVAILABLE, |f| f(self.raw.host));
        ServiceError::check(code).map_err(|cause| KernelError { asked: asked(), cause })
    }

    /// The little-endian `u64` at kernel virtual address `vaddr` (the
    /// machines vmdump dumps are little-endian).
    ///
    /// # Errors
    /// As [`Kernel::read`].
    pub fn read_u64(&self, vaddr: u64) -> Result<u64, KernelError> {
        let mut bytes = [0; 8];
        self.read(Space::KernelVirtual, vaddr, &mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    /// Calls `visit(vaddr, pfn, pages)` for each run of present user pages
    /// of the page tables whose top table is at kernel virtual address
    /// `pgd`, in increasing address order, until it returns `false`.
    ///
    /// # Errors
    /// The tables are unreadable, the architecture is not walked, or the
    /// visitor stopped the walk (`ServiceError::Other`).
    pub fn user_pages(
        &self,
        pgd: u64,
        mut visit: impl FnMut(u64, u64, u64) -> bool,
    ) -> Result<(), KernelError> {
        let mut visit: &mut dyn FnMut(u64, u64, u64) -> bool = &mut visit;
        let arg = std::ptr::from_mut(&mut visit).cast::<c_void>();
        // SAFETY: a valid table's callback; `arg` is the visitor the
        // trampoline expects, alive for the call.
        let f = self.raw.user_pages.map(|f| move |h| unsafe { f(h, pgd, Some(visit_trampoline), arg) });
        self.call(f, || format!("user pages of the page tables at {pgd:#x}"))
    }

    /// Keeps the pfns `pfns` whatever the dump level's classes say.
    ///
    /// # Errors
    /// The host refused the range.
    pub fn keep(&self, pfns: Range<u64>) -> Result<(), KernelError> {
        let count = pfns.end.saturating_sub(pfns.start);
        // SAFETY: a valid table's callback.
        let f = self.raw.keep.map(|f| move |h| unsafe { f(h, pfns.start, count) });
        self.call(f, || format!("keep of {count} pfns"))
    }

    /// Leaves the pfns `pfns` out, unless a filter keeps them.
    ///
    /// # Errors
    /// The host refused the range.
    pub fn exclude(&self, pfns: Range<u64>) -> Result<(), KernelError> {
        let count = pfns.end.saturating_sub(pfns.start);
        // SAFETY: a valid table's callback.
        let f = self.raw.exclude.map(|f| move |h| unsafe { f(h, pfns.start, count) });
        self.call(f, || format!("exclude of {count} pfns"))
    }

    /// Erases `len` bytes at `addr` of `space` with `fill`, recorded in the
    /// dump's eraseinfo under `what`.
    ///
    /// # Errors
    /// A page of the range is unmapped or not in the dump (nothing erased),
    /// or `what` holds a space, a newline or a NUL.
    pub fn erase(
        &self,
        space: Space,
        addr: u64,
        len: u64,
        fill: Fill,
        what: &str,
    ) -> Result<(), KernelError> {
        let asked = || format!("erase of `{what}` ({len} bytes at {addr:#x})");
        let c_what = c_string(what, asked)?;
        // SAFETY: a valid table's callback and a NUL-terminated string.
        let f = self
            .raw
            .erase
            .map(|f| move |h| unsafe { f(h, space.code(), addr, len, fill.code(), c_what.as_ptr()) });
        self.call(f, asked)
    }
}
