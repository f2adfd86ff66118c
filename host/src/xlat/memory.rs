//! [`KernelMemory`]: reads kernel virtual memory through [`PhysRead`]
//! (kdump-format.md §5.6), caching the last page-table pages read
//! (like makedumpfile's 8-entry page cache, §6.3).

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use vmdump_format::elf::LoadSegment;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::page_offset::{PageOffset, PageOffsetSource};
use super::{PAGE_SIZE, PhysRead, X86_64, XlatError};

/// Page-table pages kept: enough for two full 5-level walks.
const TABLE_CACHE_PAGES: usize = 8;

/// Most recently used table pages first.
#[derive(Debug, Default)]
struct TableCache {
    pages: VecDeque<(u64, Box<[u8; PAGE_SIZE as usize]>)>,
    hits: u64,
    misses: u64,
}

/// Kernel virtual memory of a dump.
///
/// Cheap to create; the table cache sits behind a mutex so a shared
/// reference can be used from several threads, but each worker should
/// rather own its `KernelMemory` (house style point 8).
#[derive(Debug)]
pub struct KernelMemory<'a, R: PhysRead + ?Sized> {
    phys: &'a R,
    arch: X86_64,
    cache: Mutex<TableCache>,
}

impl<'a, R: PhysRead + ?Sized> KernelMemory<'a, R> {
    /// Kernel memory with the given paging parameters.
    pub fn new(phys: &'a R, arch: X86_64) -> Self {
        KernelMemory { phys, arch, cache: Mutex::new(TableCache::default()) }
    }

    /// Builds [`X86_64`] from VMCOREINFO and the PT_LOADs; if these do not
    /// give PAGE_OFFSET, scans the page tables for it
    /// ([`PageOffset::scan`]) and keeps the constant if that finds nothing.
    ///
    /// # Errors
    ///
    /// As [`X86_64::new`], or a failed read of the page tables.
    pub fn open(phys: &'a R, info: &VmcoreInfo, loads: &[LoadSegment]) -> Result<Self, XlatError> {
        let mut mem = Self::new(phys, X86_64::new(info, loads)?);
        if mem.arch.page_offset_info().source == PageOffsetSource::Default
            && let Some(found) = PageOffset::scan(&mem)?
        {
            mem.arch.set_page_offset(found);
        }
        Ok(mem)
    }

    /// The paging parameters.
    pub fn arch(&self) -> &X86_64 {
        &self.arch
    }

    /// Start of the direct map.
    pub fn page_offset(&self) -> u64 {
        self.arch.page_offset()
    }

    /// The physical memory.
    pub fn phys(&self) -> &'a R {
        self.phys
    }

    /// (hits, misses) of the page-table cache so far.
    pub fn table_cache_stats(&self) -> (u64, u64) {
        let cache = self.lock();
        (cache.hits, cache.misses)
    }

    fn lock(&self) -> MutexGuard<'_, TableCache> {
        // The cache stays consistent even if a holder panicked.
        self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The u64 entry at `paddr` (8-byte aligned), from the cache or by
    /// reading its whole page.
    fn read_entry(&self, paddr: u64) -> Result<u64, XlatError> {
        let page = paddr & !(PAGE_SIZE - 1);
        let at = (paddr % PAGE_SIZE) as usize & !7;
        let entry = |bytes: &[u8; PAGE_SIZE as usize]| {
            u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default())
        };
        {
            let mut cache = self.lock();
            if let Some(i) = cache.pages.iter().position(|(p, _)| *p == page)
                && let Some(hit) = cache.pages.remove(i)
            {
                cache.hits += 1;
                let value = entry(&hit.1);
                cache.pages.push_front(hit);
                return Ok(value);
            }
        }
        let mut bytes = Box::new([0u8; PAGE_SIZE as usize]);
        self.phys.read_phys(page, &mut bytes[..])?;
        let value = entry(&bytes);
        let mut cache = self.lock();
        cache.misses += 1;
        cache.pages.push_front((page, bytes));
        cache.pages.truncate(TABLE_CACHE_PAGES);
        Ok(value)
    }

    /// Translates by walking the page tables, even for kernel-image
    /// addresses.
    ///
    /// # Errors
    ///
    /// As [`X86_64::walk`].
    pub fn walk(&self, vaddr: u64) -> Result<u64, XlatError> {
        self.arch.walk(vaddr, &mut |paddr| self.read_entry(paddr))
    }

    /// Translates `vaddr`: kernel-image addresses directly with phys_base,
    /// all others by walking the page tables (§5.6).
    ///
    /// # Errors
    ///
    /// [`XlatError::KernelImage`], or as [`X86_64::walk`].
    pub fn translate(&self, vaddr: u64) -> Result<u64, XlatError> {
        match self.arch.image_to_phys(vaddr) {
            Some(result) => result,
            None => self.walk(vaddr),
        }
    }

    /// Reads `buf.len()` bytes of kernel virtual memory at `vaddr`,
    /// translating each page separately.
    ///
    /// # Errors
    ///
    /// A translation error naming the failing address, or
    /// [`XlatError::VirtRead`] wrapping the [`PhysRead`] error.
    pub fn read_virt(&self, vaddr: u64, buf: &mut [u8]) -> Result<(), XlatError> {
        let mut done = 0usize;
        while done < buf.len() {
            let va = vaddr.checked_add(done as u64).ok_or(XlatError::NonCanonical {
                vaddr: vaddr.wrapping_add(done as u64),
                levels: if self.arch.five_level() { 5 } else { 4 },
            })?;
            let len = (buf.len() - done).min((PAGE_SIZE - va % PAGE_SIZE) as usize);
            let paddr = self.translate(va)?;
            self.phys.read_phys(paddr, &mut buf[done..done + len]).map_err(|e| XlatError::VirtRead {
                vaddr: va,
                paddr,
                len,
                cause: Box::new(e),
            })?;
            done += len;
        }
        Ok(())
    }

    /// Reads a little-endian `u64` at `vaddr`.
    ///
    /// # Errors
    ///
    /// As [`KernelMemory::read_virt`].
    pub fn read_u64(&self, vaddr: u64) -> Result<u64, XlatError> {
        let mut bytes = [0u8; 8];
        self.read_virt(vaddr, &mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }
}
