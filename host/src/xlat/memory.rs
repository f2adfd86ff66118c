//! [`KernelMemory`]: reads kernel virtual memory through [`PhysRead`]
//! with the dumped machine's [`Arch`] (kdump-format.md §5.6,
//! docs/arm64.md), caching the last page-table pages read (like
//! makedumpfile's 8-entry page cache, §6.3).

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use vmdump_format::elf::LoadSegment;
use vmdump_format::machine::Machine;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::page_offset::{PageOffset, PageOffsetSource};
use super::{Arch, PhysRead, XlatError};

/// Page-table pages kept: enough for two full 5-level walks.
const TABLE_CACHE_PAGES: usize = 8;

/// Most recently used table pages first (each of the architecture's page size).
#[derive(Debug, Default)]
struct TableCache {
    pages: VecDeque<(u64, Box<[u8]>)>,
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
    arch: Arch,
    cache: Mutex<TableCache>,
}

impl<'a, R: PhysRead + ?Sized> KernelMemory<'a, R> {
    /// Kernel memory with the given architecture's parameters.
    pub fn new(phys: &'a R, arch: impl Into<Arch>) -> Self {
        KernelMemory { phys, arch: arch.into(), cache: Mutex::new(TableCache::default()) }
    }

    /// [`KernelMemory::open_as`] the machine VMCOREINFO's keys point to
    /// ([`Machine::from_vmcoreinfo`]; x86_64 when they point nowhere), for
    /// inputs that do not say which machine they are of.
    ///
    /// # Errors
    ///
    /// As [`KernelMemory::open_as`].
    pub fn open(phys: &'a R, info: &VmcoreInfo, loads: &[LoadSegment]) -> Result<Self, XlatError> {
        Self::open_as(phys, Machine::from_vmcoreinfo(info).unwrap_or(Machine::X86_64), info, loads)
    }

    /// Builds the [`Arch`] of `machine` from VMCOREINFO and the PT_LOADs,
    /// then what needs the page tables: on x86_64, if these do not give
    /// PAGE_OFFSET, scans the page tables for it ([`PageOffset::scan`]) and
    /// keeps the constant if that finds nothing; on arm64, checks its
    /// formulas against the tables ([`super::Arm64::check`]).
    ///
    /// # Errors
    ///
    /// As [`Arch::new`], a failed read of the page tables, or arm64
    /// formulas the tables contradict.
    pub fn open_as(
        phys: &'a R,
        machine: Machine,
        info: &VmcoreInfo,
        loads: &[LoadSegment],
    ) -> Result<Self, XlatError> {
        let mut mem = Self::new(phys, Arch::new(machine, info, loads)?);
        match &mem.arch {
            Arch::X86_64(x86) if x86.page_offset_info().source == PageOffsetSource::Default => {
                if let Some(found) = PageOffset::scan(&mem)?
                    && let Arch::X86_64(x86) = &mut mem.arch
                {
                    x86.set_page_offset(found);
                }
            }
            Arch::X86_64(_) | Arch::Riscv64(_) | Arch::S390x(_) => {}
            Arch::Arm64(arm64) => arm64.check(info, &|vaddr| mem.walk(vaddr))?,
            Arch::Ppc64(ppc64) => {
                let mut ppc64 = ppc64.clone();
                ppc64.read_vmemmap_list(
                    info,
                    &|vaddr| mem.read_u64(vaddr),
                    &|vaddr| mem.read_u32(vaddr),
                    &|arch, vaddr| arch.walk(vaddr, &mut |paddr| mem.read_entry(paddr)),
                )?;
                mem.arch = Arch::Ppc64(ppc64);
            }
        }
        Ok(mem)
    }

    /// The architecture and its parameters.
    pub fn arch(&self) -> &Arch {
        &self.arch
    }

    /// Bytes of a page: page tables are read whole, and
    /// [`KernelMemory::read_virt`] splits its reads at these boundaries.
    pub fn page_size(&self) -> u64 {
        self.arch.page_size()
    }

    /// Start of the direct map.
    pub fn page_offset(&self) -> u64 {
        self.arch.page_offset()
    }

    /// Whether `addr` is a kernel virtual address (at or above
    /// [`super::Paging::kernel_space_start`]).
    pub fn is_kernel_address(&self, addr: u64) -> bool {
        addr >= self.arch.kernel_space_start()
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
        let page_size = self.page_size();
        let page = paddr & !(page_size - 1);
        let at = (paddr % page_size) as usize & !7;
        let endian = self.arch.endian();
        let entry = |bytes: &[u8]| endian.u64(bytes, at);
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
        let mut bytes = vec![0u8; page_size as usize].into_boxed_slice();
        self.phys.read_phys(page, &mut bytes)?;
        let value = entry(&bytes);
        let mut cache = self.lock();
        cache.misses += 1;
        cache.pages.push_front((page, bytes));
        cache.pages.truncate(TABLE_CACHE_PAGES);
        Ok(value)
    }

    /// Translates by walking the page tables, even addresses with a
    /// formula.
    ///
    /// # Errors
    ///
    /// As [`super::Paging::walk`].
    pub fn walk(&self, vaddr: u64) -> Result<u64, XlatError> {
        self.arch.paging().walk(vaddr, &mut |paddr| self.read_entry(paddr))
    }

    /// Translates `vaddr`: with the architecture's formula where it has
    /// one (x86_64: the kernel image, with phys_base; arm64: the linear
    /// map, with PHYS_OFFSET), all others by walking the page tables
    /// (§5.6, docs/arm64.md §2).
    ///
    /// # Errors
    ///
    /// The formula's error ([`XlatError::KernelImage`],
    /// [`XlatError::BeyondPhysMem`]), or as [`super::Paging::walk`].
    pub fn translate(&self, vaddr: u64) -> Result<u64, XlatError> {
        match self.arch.paging().direct(vaddr) {
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
        let page_size = self.page_size();
        let mut done = 0usize;
        while done < buf.len() {
            let va = vaddr.checked_add(done as u64).ok_or(XlatError::NonCanonical {
                vaddr: vaddr.wrapping_add(done as u64),
                levels: self.arch.levels(),
            })?;
            let len = (buf.len() - done).min((page_size - va % page_size) as usize);
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

    /// Reads a `u32` at `vaddr`, in the machine's byte order.
    ///
    /// # Errors
    ///
    /// As [`KernelMemory::read_virt`].
    pub fn read_u32(&self, vaddr: u64) -> Result<u32, XlatError> {
        let mut bytes = [0u8; 4];
        self.read_virt(vaddr, &mut bytes)?;
        Ok(self.arch.endian().u32(&bytes, 0))
    }

    /// Reads a `u64` at `vaddr`, in the machine's byte order.
    ///
    /// # Errors
    ///
    /// As [`KernelMemory::read_virt`].
    pub fn read_u64(&self, vaddr: u64) -> Result<u64, XlatError> {
        let mut bytes = [0u8; 8];
        self.read_virt(vaddr, &mut bytes)?;
        Ok(self.arch.endian().u64(&bytes, 0))
    }
}
