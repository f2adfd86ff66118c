//! The safe traits a Rust filter plugin implements, and the values it works on.
//!
//! As for compressors, shared state and per-thread state are separate types:
//! a [`FilterFactory`] is built once per run from the parameters (and the
//! VMCOREINFO keys it needs) and is shared, read-only, by every thread; each
//! worker or pass thread gets its own [`Filter`] context from
//! [`FilterFactory::new_context`]. "Finalize" is `Drop`.

use std::ffi::CStr;
use std::fmt;
use std::ops::BitOr;

use crate::abi::{needs, verdict};
use crate::{Host, Kernel, Params, SdkError};

/// What a filter looks at besides the pfn and physical address
/// (`VMDUMP_FILTER_NEEDS_*`). It also decides where the host runs the filter:
/// [`Needs::STRUCT_PAGE`] alone before any page byte is read, with
/// [`Needs::PAGE`] on the workers after the zero-page check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Needs(u32);

impl Needs {
    /// The pfn and physical address only.
    pub const NOTHING: Needs = Needs(0);
    /// The page bytes: a content filter.
    pub const PAGE: Needs = Needs(needs::PAGE);
    /// The page's `struct page` bytes: a metadata filter.
    pub const STRUCT_PAGE: Needs = Needs(needs::STRUCT_PAGE);
    /// ABI 1.1: [`FilterFactory::prepare`] must run (a 1.0 host refuses the filter).
    pub const KERNEL: Needs = Needs(needs::KERNEL);

    /// The ABI bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The needs of ABI bits; `None` when a bit is not defined by this ABI.
    pub const fn from_bits(bits: u32) -> Option<Needs> {
        if bits & !needs::KNOWN == 0 { Some(Needs(bits)) } else { None }
    }

    /// Both needs (usable in a `const`, unlike `|`).
    pub const fn union(self, other: Needs) -> Needs {
        Needs(self.0 | other.0)
    }

    /// Whether every bit of `other` is set in `self`.
    pub const fn contains(self, other: Needs) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for Needs {
    type Output = Needs;

    fn bitor(self, other: Needs) -> Needs {
        self.union(other)
    }
}

impl fmt::Display for Needs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match (self.contains(Needs::PAGE), self.contains(Needs::STRUCT_PAGE)) {
            (false, false) => "pfn only",
            (true, false) => "page bytes",
            (false, true) => "struct page",
            (true, true) => "page bytes + struct page",
        };
        f.write_str(text)?;
        if self.contains(Needs::KERNEL) { f.write_str(" + kernel") } else { Ok(()) }
    }
}

/// A filter's decision on one page (`enum vmdump_verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The page stays in the dump.
    Keep,
    /// The page is left out of the dump.
    Exclude,
}

impl Verdict {
    /// The ABI code.
    pub const fn code(self) -> u32 {
        match self {
            Verdict::Keep => verdict::KEEP,
            Verdict::Exclude => verdict::EXCLUDE,
        }
    }

    /// The verdict of an ABI code; `None` for a code that is not one.
    pub const fn from_code(code: u32) -> Option<Verdict> {
        match code {
            verdict::KEEP => Some(Verdict::Keep),
            verdict::EXCLUDE => Some(Verdict::Exclude),
            _ => None,
        }
    }
}

/// One page as a filter sees it: only what its [`FilterFactory::NEEDS`]
/// declared is there (the SDK hides anything else, so a filter behaves the
/// same whatever the host passes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PageView<'a> {
    /// Page frame number in the dumped machine.
    pub pfn: u64,
    /// Physical address of the page's first byte.
    pub paddr: u64,
    /// The page bytes: `Some` exactly when the filter needs [`Needs::PAGE`].
    pub data: Option<&'a [u8]>,
    /// The `struct page` bytes (`SIZE(page)` of them): `Some` exactly when the
    /// filter needs [`Needs::STRUCT_PAGE`].
    pub struct_page: Option<&'a [u8]>,
}

impl<'a> PageView<'a> {
    /// A view of one page (for tests that call a [`Filter`] directly).
    pub const fn new(pfn: u64, paddr: u64, data: Option<&'a [u8]>, struct_page: Option<&'a [u8]>) -> Self {
        Self { pfn, paddr, data, struct_page }
    }
}

/// Shared, immutable module state of a filter plugin (validated parameters,
/// VMCOREINFO offsets, prepared tables). Built once per run; used from several
/// threads at once.
pub trait FilterFactory: Sized + Send + Sync + 'static {
    /// The per-thread context type.
    type Context: Filter;

    /// The runtime key used in profiles and on the command line (`c"pfn-ranges"`).
    const NAME: &'static CStr;
    /// What [`Filter::classify`] looks at; the least is the fastest.
    const NEEDS: Needs;
    /// One line for `vmdump plugins`.
    const DESCRIPTION: &'static CStr = c"";
    /// Whether [`Filter::classify`] is ever asked. `false` only for a
    /// filter that decides in [`FilterFactory::prepare`] alone, whose
    /// [`FilterFactory::NEEDS`] must then be exactly [`Needs::KERNEL`]
    /// (checked when the table is built).
    const CLASSIFIES: bool = true;

    /// Validates `params` once (refuse unknown keys with
    /// [`Params::accept_only`]), reads the VMCOREINFO keys it depends on
    /// through [`Host::vmcoreinfo`] and builds the shared state.
    ///
    /// # Errors
    /// [`SdkError::InvalidParam`] for a bad parameter, anything else for a
    /// failed set-up (a missing VMCOREINFO key, say): the host then runs
    /// without the filter and keeps every page.
    fn init(params: &Params, host: &Host) -> Result<Self, SdkError>;

    /// Creates the context of one worker or pass thread.
    ///
    /// # Errors
    /// When the context cannot be set up.
    fn new_context(&self) -> Result<Self::Context, SdkError>;

    /// ABI 1.1, with [`Needs::KERNEL`]: runs once after [`FilterFactory::init`]
    /// and before any context, on one thread. Walk the dumped kernel
    /// through `kernel` (valid during the call) and mark pages to keep,
    /// exclude or erase; keep here what the contexts need later.
    ///
    /// # Errors
    /// Any failure: the host then drops every mark of this call, disables
    /// the filter and reports it.
    fn prepare(&mut self, kernel: &Kernel<'_>) -> Result<(), SdkError> {
        let _ = kernel;
        Ok(())
    }
}

/// Per-thread context of a filter, never shared between threads.
pub trait Filter: Send + 'static {
    /// Decides on one page. The same page must get the same verdict whatever
    /// pages the context saw before.
    ///
    /// # Errors
    /// Any failure; the host then keeps the page and disables the filter.
    fn classify(&mut self, page: &PageView<'_>) -> Result<Verdict, SdkError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_bits_round_trip_and_unknown_bits_are_refused() {
        let both = Needs::PAGE | Needs::STRUCT_PAGE;
        assert_eq!(Needs::from_bits(both.bits()), Some(both));
        assert!(both.contains(Needs::PAGE) && !Needs::PAGE.contains(Needs::STRUCT_PAGE));
        assert!(Needs::NOTHING.contains(Needs::NOTHING));
        assert_eq!(Needs::from_bits(0x8), None);
        assert_eq!((Needs::STRUCT_PAGE | Needs::KERNEL).to_string(), "struct page + kernel");
        assert_eq!(both.to_string(), "page bytes + struct page");
    }

    #[test]
    fn verdict_codes_round_trip() {
        for v in [Verdict::Keep, Verdict::Exclude] {
            assert_eq!(Verdict::from_code(v.code()), Some(v));
        }
        assert_eq!(Verdict::from_code(2), None);
    }
}
