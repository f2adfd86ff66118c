//! The kernel services of one filter's `prepare` hook (ABI 1.1), answered
//! from the dumped kernel ([`KernelView`]: kallsyms, BTF, its memory), and
//! the marks the hook makes, gathered for that filter alone: the host
//! keeps them only when the hook succeeds.

use std::cell::RefCell;
use std::ops::Range;

use vmdump_sdk::client::KernelServices;
use vmdump_sdk::{Fill, ServiceError, Space};

use super::marks::{ErasePiece, Erasures};
use crate::kernel::{KernelView, MapError};
use crate::xlat::{UserRun, UserWalkError, user_pages};

/// Marked pfn ranges one hook may make (before merging): 64 MiB of them.
const MAX_MARKED_RANGES: usize = 1 << 22;
/// Reasons a service was unavailable, kept for the report.
const MAX_REASONS: usize = 4;

/// Bytes of a pointer on the machines vmdump dumps (64-bit).
const POINTER_BYTES: u64 = 8;

/// An array type's element and count: `char [16]` → (`char`, 16).
fn array_of(type_name: &str) -> Option<(&str, u64)> {
    let open = type_name.rfind('[')?;
    let count = type_name[open + 1..].strip_suffix(']')?.trim().parse().ok()?;
    Some((type_name[..open].trim_end(), count))
}

/// BTF's (gcc's) name of a C base type spelt another way (`unsigned long`
/// is `long unsigned int` there).
fn btf_spelling(name: &str) -> &str {
    match name {
        "unsigned" => "unsigned int",
        "long" | "signed long" => "long int",
        "unsigned long" => "long unsigned int",
        "long long" => "long long int",
        "unsigned long long" => "long long unsigned int",
        "short" => "short int",
        "unsigned short" => "short unsigned int",
        other => other,
    }
}

/// The marks of one hook.
#[derive(Debug, Default)]
pub struct HookMarks {
    /// Pfns to keep, in the order marked.
    pub keep: Vec<Range<u64>>,
    /// Pfns to leave out, in the order marked.
    pub exclude: Vec<Range<u64>>,
    /// Bytes to erase.
    pub erasures: Erasures,
}

/// The services of one `prepare` call.
pub struct PrepareHost<'k> {
    kernel: Option<&'k KernelView<'k>>,
    max_pfn: u64,
    marks: RefCell<HookMarks>,
    reasons: RefCell<Vec<String>>,
}

impl<'k> PrepareHost<'k> {
    /// Services over `kernel` (`None`: a dump without VMCOREINFO, where every
    /// service is unavailable) for a machine of `max_pfn` pfns.
    pub fn new(kernel: Option<&'k KernelView<'k>>, max_pfn: u64) -> Self {
        Self { kernel, max_pfn, marks: RefCell::default(), reasons: RefCell::default() }
    }

    /// The marks made, and why services were unavailable.
    pub fn finish(self) -> (HookMarks, Vec<String>) {
        (self.marks.into_inner(), self.reasons.into_inner())
    }

    /// Notes why a service is unavailable and returns the error.
    fn unavailable(&self, why: impl std::fmt::Display) -> ServiceError {
        let mut reasons = self.reasons.borrow_mut();
        let why = why.to_string();
        if reasons.len() < MAX_REASONS && !reasons.contains(&why) {
            reasons.push(why);
        }
        ServiceError::Unavailable
    }

    fn kernel(&self) -> Result<&'k KernelView<'k>, ServiceError> {
        self.kernel.ok_or_else(|| self.unavailable("the dump has no VMCOREINFO: its kernel cannot be read"))
    }

    fn btf(&self) -> Result<&'k vmdump_format::btf::Btf, ServiceError> {
        let kernel = self.kernel()?;
        kernel.types().map(|t| t.vmlinux()).map_err(|e: &MapError| self.unavailable(e))
    }

    /// The struct or union a C type name names (`struct x`, `union x`, `x`).
    fn aggregate(&self, type_name: &str) -> Result<vmdump_format::btf::Type<'k>, ServiceError> {
        let name = type_name.strip_prefix("struct ").or_else(|| type_name.strip_prefix("union "));
        self.btf()?.aggregate(name.unwrap_or(type_name).trim()).ok_or(ServiceError::NotFound)
    }

    fn mark(
        &self,
        pfns: Range<u64>,
        to: impl FnOnce(&mut HookMarks) -> &mut Vec<Range<u64>>,
    ) -> Result<(), ServiceError> {
        let mut marks = self.marks.borrow_mut();
        let list = to(&mut marks);
        if list.len() >= MAX_MARKED_RANGES {
            return Err(ServiceError::Invalid);
        }
        let clipped = pfns.start..pfns.end.min(self.max_pfn);
        if !clipped.is_empty() {
            list.push(clipped);
        }
        Ok(())
    }

    /// The pieces of `len` bytes at `addr`, split at page boundaries and
    /// translated to physical addresses, each page checked to be in the dump.
    fn erase_pieces(
        &self,
        space: Space,
        addr: u64,
        len: u64,
        byte: u8,
    ) -> Result<Vec<ErasePiece>, ServiceError> {
        let kernel = self.kernel()?;
        let memory = kernel.memory();
        let page = memory.page_size();
        let end = addr.checked_add(len).ok_or(ServiceError::Invalid)?;
        let mut pieces = Vec::new();
        let mut at = addr;
        while at < end {
            let piece_len = (end - at).min(page - at % page);
            let paddr = match space {
                Space::Phys => at,
                Space::KernelVirtual => memory.translate(at).map_err(|_| ServiceError::Unreadable)?,
            };
            if paddr / page >= self.max_pfn || memory.phys().read_phys(paddr, &mut [0u8; 1]).is_err() {
                return Err(ServiceError::Unreadable);
            }
            pieces.push(ErasePiece { paddr, len: piece_len as u32, byte });
            at += piece_len;
        }
        Ok(pieces)
    }
}

impl KernelServices for PrepareHost<'_> {
    fn symbol(&self, name: &str) -> Result<(u64, u64), ServiceError> {
        let kernel = self.kernel()?;
        let symbols = kernel.symbols().map_err(|e| self.unavailable(e))?;
        if let Some(s) = symbols.lookup(name) {
            return Ok((s.address, s.size.unwrap_or(0)));
        }
        let in_modules = kernel.modules().ok().and_then(|modules| {
            modules
                .iter()
                .flat_map(|m| m.symbols())
                .find(|s| s.name == name)
                .map(|s| (s.address, s.size.unwrap_or(0)))
        });
        in_modules.ok_or(ServiceError::NotFound)
    }

    fn type_size(&self, type_name: &str) -> Result<u64, ServiceError> {
        let btf = self.btf()?;
        let type_name = type_name.trim();
        if type_name.ends_with('*') {
            return Ok(POINTER_BYTES);
        }
        if let Some((element, count)) = array_of(type_name) {
            return self.type_size(element)?.checked_mul(count).ok_or(ServiceError::Invalid);
        }
        if let Ok(t) = self.aggregate(type_name) {
            return btf.size_of(t.id).ok_or(ServiceError::NotFound);
        }
        let plain = type_name.strip_prefix("enum ").unwrap_or(type_name).trim();
        let plain = btf_spelling(plain);
        btf.named(plain).find_map(|t| btf.size_of(t.id)).ok_or(ServiceError::NotFound)
    }

    fn member(&self, type_name: &str, member: &str) -> Result<(u64, u64, String), ServiceError> {
        let btf = self.btf()?;
        let found = btf.member(self.aggregate(type_name)?, member).ok_or(ServiceError::NotFound)?;
        if found.bitfield_size != 0 || found.bit_offset % 8 != 0 {
            return Err(ServiceError::Invalid);
        }
        Ok((found.offset(), btf.size_of(found.type_id).unwrap_or(0), btf.type_name(found.type_id)))
    }

    fn read(&self, space: Space, addr: u64, buf: &mut [u8]) -> Result<(), ServiceError> {
        let memory = self.kernel()?.memory();
        match space {
            Space::KernelVirtual => memory.read_virt(addr, buf).map_err(|_| ServiceError::Unreadable),
            Space::Phys => {
                // The input serves one page a call: split at page boundaries.
                let page = memory.page_size();
                let mut done = 0;
                while done < buf.len() {
                    let at = addr.checked_add(done as u64).ok_or(ServiceError::Invalid)?;
                    let len = (buf.len() - done).min((page - at % page) as usize);
                    memory
                        .phys()
                        .read_phys(at, &mut buf[done..done + len])
                        .map_err(|_| ServiceError::Unreadable)?;
                    done += len;
                }
                Ok(())
            }
        }
    }

    fn user_pages(&self, pgd: u64, visit: &mut dyn FnMut(u64, u64, u64) -> bool) -> Result<(), ServiceError> {
        let memory = self.kernel()?.memory();
        let mut each = |run: UserRun| visit(run.vaddr, run.pfn, run.pages);
        user_pages(memory, pgd, &mut each).map_err(|e| match e {
            UserWalkError::Stopped => ServiceError::Other(vmdump_sdk::abi::status::FAILED),
            UserWalkError::Xlat(_) => ServiceError::Unreadable,
            UserWalkError::Unsupported(why) => self.unavailable(why),
        })
    }

    fn keep(&self, pfns: Range<u64>) -> Result<(), ServiceError> {
        self.mark(pfns, |m| &mut m.keep)
    }

    fn exclude(&self, pfns: Range<u64>) -> Result<(), ServiceError> {
        self.mark(pfns, |m| &mut m.exclude)
    }

    fn erase(&self, space: Space, addr: u64, len: u64, fill: Fill, what: &str) -> Result<(), ServiceError> {
        let pieces = self.erase_pieces(space, addr, len, fill.byte())?;
        self.marks.borrow_mut().erasures.add(&pieces, fill, what).map_err(|_| ServiceError::Invalid)
    }
}
