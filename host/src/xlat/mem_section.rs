//! SPARSEMEM_EXTREME `mem_section` (kdump-format.md §5.2): which memory
//! sections are present and where their `struct page` arrays are.
//!
//! `SYMBOL(mem_section)` is the root array: `LENGTH(mem_section)` pointers,
//! each to `SECTIONS_PER_ROOT = PAGE_SIZE / SIZE(mem_section)` structures.
//! A section is present iff bit 0 of its `section_mem_map` is set; masking
//! the low flag bits gives the *encoded* pointer, and the section's first
//! struct page is at `encoded + section_start_pfn · SIZE(page)`. Only the
//! roots covering `max_pfn_hint` are read, each root page once, in bulk.
//!
//! How many low bits are flags depends on the kernel's build
//! (`SECTION_MAP_LAST_BIT`, which VMCOREINFO does not export): 5 on Linux
//! 4.13 to 6.x with CONFIG_ZONE_DEVICE, 6 on kernels with
//! CONFIG_SPARSEMEM_VMEMMAP_PREINIT too (Debian's 7.2: bit 5 marks a
//! section whose vmemmap was set up early for boot-time hugetlb pages).
//! The encoded pointer is the vmemmap base, or a page-aligned mem_map less
//! a multiple of 2 MiB, so no bit of it lies below 4 KiB: every bit there
//! is masked, whatever the kernel (docs/kernels.md).

use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::{KernelMemory, PhysRead, XlatError};

/// `SECTION_MARKED_PRESENT`.
const SECTION_MARKED_PRESENT: u64 = 1;
/// Low bits of `section_mem_map` that are not the encoded pointer: the
/// flags (below `SECTION_MAP_LAST_BIT`, 5 or 6 today) and the zeros of a
/// page-aligned pointer (module docs).
const SECTION_MAP_FLAGS: u64 = (1 << 12) - 1;
/// Most roots read at once (16 MiB of pointers; 5-level kernels have 131072).
const MAX_ROOTS_READ: u64 = 1 << 21;
/// The widest physical address of the machines vmdump reads: riscv64's
/// Sv57 (a 44-bit page number, 56 bits; x86_64 and arm64 have 52, ppc64 53).
const MAX_PHYSMEM_BITS_LIMIT: i64 = 56;

/// The sizes that shape the section table, from VMCOREINFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionGeometry {
    /// `PAGESIZE`.
    pub page_size: u64,
    /// `SECTION_SIZE_BITS − PAGE_SHIFT`.
    pub pfn_section_shift: u32,
    /// `2^(MAX_PHYSMEM_BITS − SECTION_SIZE_BITS)`.
    pub nr_mem_sections: u64,
    /// `SIZE(mem_section)`.
    pub mem_section_size: u64,
    /// `OFFSET(mem_section.section_mem_map)`.
    pub map_offset: u64,
    /// `SIZE(page)`.
    pub struct_page_size: u64,
    /// `PAGE_SIZE / SIZE(mem_section)`.
    pub sections_per_root: u64,
    /// `NR_SECTION_ROOTS` (= `LENGTH(mem_section)` when given).
    pub nr_roots: u64,
}

fn need_number(info: &VmcoreInfo, name: &str, key: &'static str) -> Result<i64, XlatError> {
    info.number(name).ok_or(XlatError::MissingKey(key))
}

fn bad(key: &'static str, value: impl Into<i128>, reason: &'static str) -> XlatError {
    XlatError::BadKey { key, value: value.into(), reason }
}

impl SectionGeometry {
    /// Reads and checks the keys of §5.2.
    ///
    /// # Errors
    ///
    /// [`XlatError::MissingKey`] or [`XlatError::BadKey`] naming the key;
    /// a `LENGTH(mem_section)` other than `NR_SECTION_ROOTS` means the
    /// kernel is not SPARSEMEM_EXTREME.
    pub fn from_vmcoreinfo(info: &VmcoreInfo) -> Result<Self, XlatError> {
        let page_size = info.page_size().ok_or(XlatError::MissingKey("PAGESIZE"))?;
        if !page_size.is_power_of_two() || !(4096..=65536).contains(&page_size) {
            return Err(bad("PAGESIZE", page_size, "not a power of two in 4096..=65536"));
        }
        let page_shift = i64::from(page_size.trailing_zeros());
        let section_bits = need_number(info, "SECTION_SIZE_BITS", "NUMBER(SECTION_SIZE_BITS)")?;
        if !(page_shift + 1..=40).contains(&section_bits) {
            return Err(bad("NUMBER(SECTION_SIZE_BITS)", section_bits, "outside PAGE_SHIFT + 1..=40"));
        }
        let phys_bits = need_number(info, "MAX_PHYSMEM_BITS", "NUMBER(MAX_PHYSMEM_BITS)")?;
        if !(section_bits..=MAX_PHYSMEM_BITS_LIMIT).contains(&phys_bits) {
            return Err(bad("NUMBER(MAX_PHYSMEM_BITS)", phys_bits, "outside SECTION_SIZE_BITS..=56"));
        }
        let size = info.size("mem_section").ok_or(XlatError::MissingKey("SIZE(mem_section)"))?;
        if size < 8 || size > page_size || size % 8 != 0 {
            return Err(bad("SIZE(mem_section)", size, "not a multiple of 8 in 8..=PAGESIZE"));
        }
        let map_offset = info
            .offset("mem_section.section_mem_map")
            .ok_or(XlatError::MissingKey("OFFSET(mem_section.section_mem_map)"))?;
        if map_offset + 8 > size {
            return Err(bad("OFFSET(mem_section.section_mem_map)", map_offset, "beyond SIZE(mem_section)"));
        }
        let struct_page_size = info.size("page").ok_or(XlatError::MissingKey("SIZE(page)"))?;
        if struct_page_size == 0 || struct_page_size > page_size {
            return Err(bad("SIZE(page)", struct_page_size, "outside 1..=PAGESIZE"));
        }
        let nr_mem_sections = 1u64 << (phys_bits - section_bits);
        let sections_per_root = page_size / size;
        let nr_roots = nr_mem_sections.div_ceil(sections_per_root);
        if let Some(len) = info.length("mem_section")
            && len != nr_roots
        {
            return Err(bad(
                "LENGTH(mem_section)",
                len,
                "not NR_MEM_SECTIONS / SECTIONS_PER_ROOT: not SPARSEMEM_EXTREME",
            ));
        }
        Ok(SectionGeometry {
            page_size,
            pfn_section_shift: (section_bits - page_shift) as u32,
            nr_mem_sections,
            mem_section_size: size,
            map_offset,
            struct_page_size,
            sections_per_root,
            nr_roots,
        })
    }

    /// Pfns per section.
    pub fn pfns_per_section(&self) -> u64 {
        1 << self.pfn_section_shift
    }
}

/// A present memory section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    /// Section number: its first pfn is `nr · pfns_per_section`.
    pub nr: u64,
    /// Virtual address of the struct page of its first pfn.
    pub mem_map: u64,
}

/// The present sections of a SPARSEMEM_EXTREME kernel, ascending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionTable {
    geometry: SectionGeometry,
    sections: Vec<Section>,
}

impl SectionTable {
    /// Reads the sections covering pfns below `max_pfn_hint` (the dump's
    /// `max_mapnr`). `SYMBOL(mem_section)` is tried as the root array and,
    /// if that is not valid, as a pointer to it (the 4.15+ vmlinux case,
    /// §5.2).
    ///
    /// # Errors
    ///
    /// Missing or bad keys ([`SectionGeometry::from_vmcoreinfo`]),
    /// [`XlatError::MissingKey`] for `SYMBOL(mem_section)`, or
    /// [`XlatError::MemSectionSymbol`] with both reasons.
    pub fn read<R: PhysRead + ?Sized>(
        mem: &KernelMemory<'_, R>,
        info: &VmcoreInfo,
        max_pfn_hint: u64,
    ) -> Result<Self, XlatError> {
        let geometry = SectionGeometry::from_vmcoreinfo(info)?;
        let symbol = info.symbol("mem_section").ok_or(XlatError::MissingKey("SYMBOL(mem_section)"))?;
        let as_array = match Self::read_at(mem, geometry, symbol, max_pfn_hint) {
            Ok(table) => return Ok(table),
            Err(e) => e,
        };
        let as_pointer = match mem.read_u64(symbol) {
            Ok(roots) => match Self::read_at(mem, geometry, roots, max_pfn_hint) {
                Ok(table) => return Ok(table),
                Err(e) => e,
            },
            Err(e) => e,
        };
        Err(XlatError::MemSectionSymbol {
            symbol,
            as_array: Box::new(as_array),
            as_pointer: Box::new(as_pointer),
        })
    }

    /// Reads the table whose root array is at `roots`; valid iff every
    /// non-zero root and every present section's mem_map is a kernel
    /// address ([`KernelMemory::is_kernel_address`]) and at least one section is present.
    ///
    /// # Errors
    ///
    /// [`XlatError::MemSection`] naming the root array and what failed.
    pub fn read_at<R: PhysRead + ?Sized>(
        mem: &KernelMemory<'_, R>,
        geometry: SectionGeometry,
        roots: u64,
        max_pfn_hint: u64,
    ) -> Result<Self, XlatError> {
        let fail = |reason: String| XlatError::MemSection { addr: roots, reason };
        let kernel = |addr: u64| mem.is_kernel_address(addr);
        if !kernel(roots) {
            return Err(fail("not a kernel address".into()));
        }
        let g = geometry;
        let nr_sections = max_pfn_hint.div_ceil(g.pfns_per_section()).min(g.nr_mem_sections);
        let nr_roots = nr_sections.div_ceil(g.sections_per_root).min(g.nr_roots);
        if nr_roots > MAX_ROOTS_READ {
            return Err(fail(format!("{nr_roots} roots to read: more than {MAX_ROOTS_READ}")));
        }
        let mut raw = vec![0u8; (nr_roots * 8) as usize];
        mem.read_virt(roots, &mut raw).map_err(|e| fail(format!("reading {nr_roots} roots: {e}")))?;
        let mut sections = Vec::new();
        for (i, chunk) in (0u64..).zip(raw.chunks_exact(8)) {
            let root = mem.arch().endian().u64(chunk, 0);
            if root == 0 {
                continue;
            }
            if !kernel(root) {
                return Err(fail(format!("root {i} is {root:#x}, not a kernel address")));
            }
            let first = i * g.sections_per_root;
            let count = g.sections_per_root.min(nr_sections - first);
            read_root(mem, &g, root, first, count, &mut sections).map_err(fail)?;
        }
        if sections.is_empty() {
            return Err(fail(format!("no present section below pfn {max_pfn_hint:#x}")));
        }
        Ok(SectionTable { geometry, sections })
    }

    /// The geometry used.
    pub fn geometry(&self) -> &SectionGeometry {
        &self.geometry
    }

    /// The present sections, ascending by number.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// One past the last pfn of the last present section: makedumpfile
    /// reduces `max_mapnr` to this (§5.2).
    pub fn present_pfn_end(&self) -> u64 {
        self.sections.last().map_or(0, |s| (s.nr + 1) << self.geometry.pfn_section_shift)
    }

    /// Virtual address of the struct page of `pfn`, if its section is present.
    pub fn mem_map_of(&self, pfn: u64) -> Option<u64> {
        let nr = pfn >> self.geometry.pfn_section_shift;
        let s = self.sections[self.sections.binary_search_by_key(&nr, |s| s.nr).ok()?];
        let index = pfn - (nr << self.geometry.pfn_section_shift);
        s.mem_map.checked_add(index * self.geometry.struct_page_size)
    }
}

/// Reads `count` sections of one root (section numbers from `first`) in
/// one read and appends the present ones.
fn read_root<R: PhysRead + ?Sized>(
    mem: &KernelMemory<'_, R>,
    g: &SectionGeometry,
    root: u64,
    first: u64,
    count: u64,
    out: &mut Vec<Section>,
) -> Result<(), String> {
    let mut raw = vec![0u8; (count * g.mem_section_size) as usize];
    mem.read_virt(root, &mut raw).map_err(|e| format!("reading sections {first}..{}: {e}", first + count))?;
    for (j, entry) in (0u64..).zip(raw.chunks_exact(g.mem_section_size as usize)) {
        let at = g.map_offset as usize;
        let map = mem.arch().endian().u64(entry, at);
        let encoded = map & !SECTION_MAP_FLAGS;
        if map & SECTION_MARKED_PRESENT == 0 || encoded == 0 {
            continue; // no memory, or present without a mem_map yet
        }
        let nr = first + j;
        let mem_map = encoded.wrapping_add((nr << g.pfn_section_shift).wrapping_mul(g.struct_page_size));
        if !mem.is_kernel_address(mem_map) {
            return Err(format!(
                "section {nr}: mem_map {mem_map:#x} (entry {map:#x}) is not a kernel address"
            ));
        }
        out.push(Section { nr, mem_map });
    }
    Ok(())
}
