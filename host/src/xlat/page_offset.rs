//! PAGE_OFFSET, the base of the direct map (kdump-format.md §5.6).
//!
//! On arm64 it follows from `NUMBER(VA_BITS)` ([`PageOffsetSource::Vmcoreinfo`],
//! `super::Arm64`). On x86_64 VMCOREINFO does not export it (with KASLR it is `page_offset_base`, a
//! variable), so it is derived, in this order:
//! 1. **PT_LOADs** ([`PageOffset::from_loads`]): `p_vaddr − p_paddr` of the
//!    last PT_LOAD below `__START_KERNEL_map` with a non-zero `p_vaddr`
//!    (`/proc/vmcore` gives RAM segments direct-map addresses; QEMU's
//!    `dump-guest-memory` writes `p_vaddr` 0, so this finds nothing there).
//! 2. **Page tables** ([`PageOffset::scan`]): the direct map is the first
//!    mapping at or above the non-KASLR base (KASLR places the direct map
//!    first, then vmalloc, then vmemmap, each 1 GiB aligned). The scan
//!    walks upward from the base, skipping a whole entry's span wherever
//!    an entry is not present; the first address `va` that translates, to
//!    `pa`, gives `va − pa` if that is 1 GiB aligned and not below the base.
//! 3. **Constants**: 0xffff888000000000 (4-level) or 0xff11000000000000
//!    (5-level), the bases of kernels ≥ 4.20 without KASLR (older kernels
//!    used 0xffff880000000000 / 0xff10000000000000).

use vmdump_format::elf::LoadSegment;

use super::x86_64::{PAGE_OFFSET_L4, PAGE_OFFSET_L5, START_KERNEL_MAP};
use super::{KernelMemory, PhysRead, XlatError};

const GIB: u64 = 1 << 30;
/// Most walks one scan may make (each skips at least 4 KiB, most skip a
/// whole top-level entry).
const MAX_SCAN_STEPS: u32 = 1 << 16;

/// Where a PAGE_OFFSET value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageOffsetSource {
    /// `p_vaddr − p_paddr` of a RAM PT_LOAD.
    PtLoad,
    /// The first direct-map translation found in the page tables.
    PageTables,
    /// The non-KASLR constant of the paging mode.
    Default,
    /// Computed from VMCOREINFO (arm64: `−2^NUMBER(VA_BITS)`).
    Vmcoreinfo,
    /// The architecture's only value (ppc64: 0xc000000000000000).
    Architecture,
}

/// The direct-map base and its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageOffset {
    /// The virtual address of physical 0 in the direct map.
    pub value: u64,
    /// How it was found.
    pub source: PageOffsetSource,
}

impl PageOffset {
    /// The non-KASLR constant for the paging mode.
    pub fn default_for(five_level: bool) -> PageOffset {
        let value = if five_level { PAGE_OFFSET_L5 } else { PAGE_OFFSET_L4 };
        PageOffset { value, source: PageOffsetSource::Default }
    }

    /// From the last RAM PT_LOAD with a direct-map `p_vaddr` (step 1).
    pub fn from_loads(loads: &[LoadSegment]) -> Option<PageOffset> {
        let load = loads.iter().rev().find(|l| l.vaddr != 0 && l.vaddr < START_KERNEL_MAP)?;
        let value = load.vaddr.checked_sub(load.paddr)?;
        (value >= 0xff00_0000_0000_0000 && value % GIB == 0)
            .then_some(PageOffset { value, source: PageOffsetSource::PtLoad })
    }

    /// Scans the page tables of an x86_64 kernel for the direct map (step
    /// 2); `None` if the first mapping above the base does not look like
    /// it, or if `mem` is not of an x86_64 kernel.
    ///
    /// # Errors
    ///
    /// A page-table read that fails (not a missing entry: that is skipped).
    pub fn scan<R: PhysRead + ?Sized>(mem: &KernelMemory<'_, R>) -> Result<Option<PageOffset>, XlatError> {
        let Some(arch) = mem.arch().x86_64() else { return Ok(None) };
        let base = PageOffset::default_for(arch.five_level()).value;
        let mut va = base;
        for _ in 0..MAX_SCAN_STEPS {
            if va >= START_KERNEL_MAP {
                break;
            }
            match mem.walk(va) {
                Ok(pa) => {
                    let value = va.checked_sub(pa).filter(|v| v % GIB == 0 && *v >= base);
                    return Ok(value.map(|value| PageOffset { value, source: PageOffsetSource::PageTables }));
                }
                Err(XlatError::NotPresent { level, .. }) => {
                    let Some(next) = (va | (arch.level_span(level) - 1)).checked_add(1) else { break };
                    va = next;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}
