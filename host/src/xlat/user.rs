//! The present user pages of one process's page tables: the walk of the
//! user half under its top table (an `mm_struct`'s `pgd`), for the filters
//! that keep a process's memory (ABI 1.1 `user_pages`). x86_64 with 4 or 5
//! levels; other machines are refused.

use super::x86_64::ENTRY_MASK;
use super::{KernelMemory, PhysRead, XlatError};

/// Entry bits of x86_64 page tables.
const PRESENT: u64 = 0x1;
const PSE: u64 = 0x80;
/// Bytes of a page table (and of a base page) on x86_64.
const TABLE_BYTES: usize = 4096;
/// Entries of the top table that map user addresses (its lower half).
const USER_TOP_ENTRIES: usize = 256;

/// A run of present pages: user address, first pfn, base pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRun {
    /// User virtual address of the first page.
    pub vaddr: u64,
    /// Its pfn.
    pub pfn: u64,
    /// Base pages, contiguous both virtually and physically.
    pub pages: u64,
}

/// Why a walk ended early.
#[derive(Debug)]
pub enum UserWalkError {
    /// The visitor asked to stop.
    Stopped,
    /// A table could not be read.
    Xlat(XlatError),
    /// The dumped machine's user page tables are not walked (not x86_64).
    Unsupported(String),
}

impl From<XlatError> for UserWalkError {
    fn from(e: XlatError) -> Self {
        Self::Xlat(e)
    }
}

/// Calls `visit` for each run of present user pages under the top table at
/// kernel virtual address `pgd`, in increasing address order (adjacent
/// pages that are also physically adjacent make one run), until it returns
/// `false`.
///
/// # Errors
/// [`UserWalkError::Stopped`], or a table that cannot be read, or a
/// machine other than x86_64 ([`UserWalkError::Unsupported`]).
pub fn user_pages<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    pgd: u64,
    visit: &mut dyn FnMut(UserRun) -> bool,
) -> Result<(), UserWalkError> {
    let Some(x86) = memory.arch().x86_64() else {
        let machine = memory.arch().machine().name();
        return Err(UserWalkError::Unsupported(format!("user page tables of {machine} are not walked")));
    };
    let levels = if x86.five_level() { 5 } else { 4 };
    let mut walk = Walk { memory, mask: ENTRY_MASK & !x86.sme_mask(), run: None, visit };
    walk.table(memory.translate(pgd)?, levels, 0, USER_TOP_ENTRIES)?;
    walk.flush()
}

struct Walk<'w, 'm, R: PhysRead + ?Sized> {
    memory: &'w KernelMemory<'m, R>,
    mask: u64,
    run: Option<UserRun>,
    visit: &'w mut dyn FnMut(UserRun) -> bool,
}

impl<R: PhysRead + ?Sized> Walk<'_, '_, R> {
    /// Walks the first `entries` entries of the table at `paddr`, of
    /// `level` (1: the page table), which maps addresses from `base`.
    fn table(&mut self, paddr: u64, level: u32, base: u64, entries: usize) -> Result<(), UserWalkError> {
        let mut bytes = vec![0u8; TABLE_BYTES];
        self.memory.phys().read_phys(paddr, &mut bytes)?;
        let shift = 12 + 9 * (level - 1);
        for (i, raw) in bytes.chunks_exact(8).take(entries).enumerate() {
            let entry = u64::from_le_bytes(raw.try_into().expect("8 bytes"));
            if entry & PRESENT == 0 {
                continue;
            }
            let vaddr = base | (i as u64) << shift;
            let next = entry & self.mask;
            if level == 1 || (level <= 3 && entry & PSE != 0) {
                let first = next & !((1u64 << shift) - 1);
                self.add(UserRun { vaddr, pfn: first >> 12, pages: 1 << (shift - 12) })?;
            } else {
                self.table(next, level - 1, vaddr, TABLE_BYTES / 8)?;
            }
        }
        Ok(())
    }

    /// Adds `run` to the current run, or visits the current one and starts anew.
    fn add(&mut self, run: UserRun) -> Result<(), UserWalkError> {
        if let Some(current) = &mut self.run
            && current.vaddr + current.pages * 4096 == run.vaddr
            && current.pfn + current.pages == run.pfn
        {
            current.pages += run.pages;
            return Ok(());
        }
        self.flush()?;
        self.run = Some(run);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), UserWalkError> {
        match self.run.take() {
            Some(run) if !(self.visit)(run) => Err(UserWalkError::Stopped),
            _ => Ok(()),
        }
    }
}
