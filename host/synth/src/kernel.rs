//! Kernel structures in synthetic RAM: what a dump tool walks to find
//! `mem_map` (kdump-format.md §5.2, §5.6).
//!
//! With [`SynthSpec::kernel`] set, the generator places in RAM:
//! * a 1 MiB kernel image at a 2 MiB-aligned physical address, mapped with
//!   4 KiB pages at `_text = 0xffffffff81000000 + KERNELOFFSET`; it holds
//!   `init_top_pgt` (the top page table), `init_uts_ns` (a `new_utsname`
//!   whose release is OSRELEASE) and the `mem_section` pointer variable;
//! * x86_64 page tables (4- or 5-level): the direct map at `PAGE_OFFSET`
//!   with 4 KiB pages for the first 2 MiB, 2 MiB pages for the rest of the
//!   first GiB and 1 GiB pages for every further whole GiB;
//! * a SPARSEMEM_EXTREME `mem_section` root array (`LENGTH(mem_section)`
//!   pointers), one 4 KiB array of 16-byte `struct mem_section` per used
//!   root, each present section's `section_mem_map` = `vmemmap_base | 0xf`
//!   (the encoded pointer, §5.2), and the vmemmap mapped with 4 KiB pages
//!   for the struct pages of every 512-pfn subsection below the end of RAM
//!   (struct pages are zero for now);
//! * optionally a 256 KiB BIOS ROM PT_LOAD at 0xfffc0000 beyond the last
//!   memory section, like the QEMU fixture `vmcore-S`.
//!
//! With `kaslr`, KERNELOFFSET, the physical load address (hence a negative
//! `phys_base`), `page_offset_base` and `vmemmap_base` are drawn from the
//! seed at the granularity the kernel uses (2 MiB, 2 MiB, 1 GiB, 1 GiB).
//! The VMCOREINFO keys (§4.3) are rewritten to match.
//!
//! These pages replace [`super::page()`] content for their pfns, so
//! [`super::expected_page`] and the written file agree. The layout is built
//! once per spec and cached per thread.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::sync::Arc;

use super::{PAGE_SIZE, SynthSpec};

mod build;
mod flavour;
mod struct_pages;

pub use flavour::{Class, Flavour};

/// `__START_KERNEL_map`.
pub const START_KERNEL_MAP: u64 = 0xffff_ffff_8000_0000;
/// Direct-map base without KASLR, 4-level (`__PAGE_OFFSET_BASE_L4`).
pub const PAGE_OFFSET_L4: u64 = 0xffff_8880_0000_0000;
/// Direct-map base without KASLR, 5-level (`__PAGE_OFFSET_BASE_L5`).
pub const PAGE_OFFSET_L5: u64 = 0xff11_0000_0000_0000;
/// vmemmap base without KASLR, 4-level.
pub const VMEMMAP_L4: u64 = 0xffff_ea00_0000_0000;
/// vmemmap base without KASLR, 5-level.
pub const VMEMMAP_L5: u64 = 0xffd4_0000_0000_0000;
/// The BIOS ROM segment of a QEMU dump.
pub const BIOS_ROM: Range<u64> = 0xfffc_0000..0x1_0000_0000;
/// Size of the synthetic kernel image.
pub const IMAGE_BYTES: u64 = 1 << 20;
/// `NUMBER(SECTION_SIZE_BITS)`.
pub const SECTION_SIZE_BITS: u32 = 27;
/// `SIZE(page)`.
pub const STRUCT_PAGE_SIZE: u64 = 64;
/// `SIZE(mem_section)`: `section_mem_map` and `usage`.
pub const MEM_SECTION_SIZE: u64 = 16;
/// OSRELEASE, also the release in `init_uts_ns`.
pub const OSRELEASE: &str = "6.1.0-synth-amd64";

/// The kernel structures to place in RAM (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KernelSpec {
    /// 5-level paging (`NUMBER(pgtable_l5_enabled)=1`, 52 physical bits).
    pub five_level: bool,
    /// Random KERNELOFFSET, load address, `page_offset_base`, `vmemmap_base`.
    pub kaslr: bool,
    /// AMD SME C-bit set in every page-table entry and exported as
    /// `NUMBER(sme_mask)` (0: none; e.g. `1 << 47`).
    pub sme_mask: u64,
    /// Add a 256 KiB PT_LOAD at 0xfffc0000 (`p_vaddr` 0) that no memory
    /// section covers; needs RAM to end below it.
    pub bios_rom: bool,
    /// Fill the vmemmap with struct pages of this kernel flavour (module
    /// `struct_pages`) and export its `struct page` keys in VMCOREINFO;
    /// `None` leaves the struct pages zero (the output of earlier versions).
    pub struct_pages: Option<Flavour>,
    /// A present memory section whose struct pages the vmemmap leaves
    /// unmapped, as in a vmcore that lacks the memory holding them: a dump
    /// tool cannot classify its pfns, so [`KernelLayout::expected_class`]
    /// says none of them is excluded.
    pub vmemmap_hole: Option<u64>,
}

/// Where the generator put the kernel structures (all addresses virtual
/// unless named `phys`).
#[derive(Clone, PartialEq, Eq)]
pub struct KernelLayout {
    /// 5-level paging.
    pub five_level: bool,
    /// `NUMBER(phys_base)`: `_text` physical − (`_text` virtual − `__START_KERNEL_map`).
    pub phys_base: i64,
    /// `KERNELOFFSET`.
    pub kerneloffset: u64,
    /// `NUMBER(sme_mask)`.
    pub sme_mask: u64,
    /// Direct-map base (`page_offset_base`).
    pub page_offset: u64,
    /// `vmemmap_base`: the struct page of pfn p is at `vmemmap_base + 64·p`.
    pub vmemmap_base: u64,
    /// Physical address of the kernel image.
    pub image_phys: u64,
    /// `_text` (= `_stext`).
    pub text_vaddr: u64,
    /// `SYMBOL(init_top_pgt)` (= `swapper_pg_dir`).
    pub init_top_pgt: u64,
    /// `SYMBOL(init_uts_ns)`.
    pub init_uts_ns: u64,
    /// `SYMBOL(node_online_map)`.
    pub node_online_map: u64,
    /// `SYMBOL(mem_section)`: the root array, in the direct map.
    pub mem_section: u64,
    /// The kernel variable `mem_section` (a pointer to the root array), in
    /// the image: what a vmlinux symbol would give on 4.15+ kernels.
    pub mem_section_ptr: u64,
    /// `LENGTH(mem_section)`: `NR_SECTION_ROOTS`.
    pub nr_section_roots: u64,
    /// `NUMBER(MAX_PHYSMEM_BITS)`.
    pub max_physmem_bits: u32,
    /// Numbers of the present sections, ascending.
    pub present_sections: Vec<u64>,
    /// The flavour of the struct pages, if they are filled.
    pub struct_pages: Option<Flavour>,
    /// The section whose struct pages are not mapped ([`KernelSpec::vmemmap_hole`]).
    pub vmemmap_hole: Option<u64>,
    /// Class code of each pfn below the vmemmap's end (empty without struct pages).
    classes: Vec<u8>,
    /// Non-zero kernel pages by pfn.
    pages: BTreeMap<u64, Box<[u8; PAGE_SIZE]>>,
    /// Zero kernel pages (pfn ranges, sorted).
    zero: Vec<Range<u64>>,
}

/// What a kernel page replaces the synthetic content with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Override<'a> {
    Zero,
    Bytes(&'a [u8; PAGE_SIZE]),
}

impl KernelLayout {
    /// Pfns per section (`2^(SECTION_SIZE_BITS − PAGE_SHIFT)`).
    pub const PFNS_PER_SECTION: u64 = 1 << (SECTION_SIZE_BITS - 12);

    /// One past the last pfn of the last present section.
    pub fn present_pfn_end(&self) -> u64 {
        self.present_sections.last().map_or(0, |&nr| (nr + 1) * Self::PFNS_PER_SECTION)
    }

    /// The struct page address of `pfn`, if its section is present.
    pub fn mem_map_of(&self, pfn: u64) -> Option<u64> {
        let nr = pfn / Self::PFNS_PER_SECTION;
        self.present_sections.binary_search(&nr).ok()?;
        Some(self.vmemmap_base + pfn * STRUCT_PAGE_SIZE)
    }

    /// Pfns whose content the kernel structures define, ascending.
    pub fn kernel_pfns(&self) -> Vec<u64> {
        let mut pfns: Vec<u64> = self.pages.keys().copied().collect();
        pfns.extend(self.zero.iter().flat_map(|r| r.clone()));
        pfns.sort_unstable();
        pfns
    }

    /// The class a dump tool should give `pfn` (if it excludes it; see
    /// [`Class::excluded_at`]), from the struct pages generated.
    pub fn expected_class(&self, pfn: u64) -> Option<Class> {
        flavour::class_from_code(*self.classes.get(usize::try_from(pfn).ok()?)?)
    }

    pub(crate) fn override_at(&self, pfn: u64) -> Option<Override<'_>> {
        if let Some(bytes) = self.pages.get(&pfn) {
            return Some(Override::Bytes(bytes));
        }
        let i = self.zero.partition_point(|r| r.end <= pfn);
        self.zero.get(i).filter(|r| r.start <= pfn).map(|_| Override::Zero)
    }
}

impl std::fmt::Debug for KernelLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelLayout")
            .field("five_level", &self.five_level)
            .field("phys_base", &self.phys_base)
            .field("kerneloffset", &format_args!("{:#x}", self.kerneloffset))
            .field("page_offset", &format_args!("{:#x}", self.page_offset))
            .field("vmemmap_base", &format_args!("{:#x}", self.vmemmap_base))
            .field("image_phys", &format_args!("{:#x}", self.image_phys))
            .field("init_top_pgt", &format_args!("{:#x}", self.init_top_pgt))
            .field("mem_section", &format_args!("{:#x}", self.mem_section))
            .field("present_sections", &self.present_sections)
            .field("struct_pages", &self.struct_pages)
            .field("data_pages", &self.pages.len())
            .field("zero_ranges", &self.zero.len())
            .finish_non_exhaustive()
    }
}

type Cached = Result<Arc<KernelLayout>, String>;

thread_local! {
    static CACHE: RefCell<Option<(SynthSpec, Cached)>> = const { RefCell::new(None) };
}

/// The layout of `spec` (cached per thread), or the reason it cannot be built.
pub(crate) fn cached(spec: &SynthSpec) -> Option<Cached> {
    spec.kernel?;
    CACHE.with(|cell| {
        if let Some((s, layout)) = &*cell.borrow()
            && s == spec
        {
            return Some(layout.clone());
        }
        let layout = build::build(spec).map(Arc::new);
        *cell.borrow_mut() = Some((spec.clone(), layout.clone()));
        Some(layout)
    })
}

/// The kernel layout `spec` generates: `None` without [`SynthSpec::kernel`].
///
/// # Errors
///
/// `InvalidInput` naming what does not fit (RAM too small for the image or
/// the tables, or reaching the BIOS ROM).
pub fn kernel_layout(spec: &SynthSpec) -> io::Result<Option<Arc<KernelLayout>>> {
    cached(spec).transpose().map_err(|why| io::Error::new(io::ErrorKind::InvalidInput, why))
}

/// The layout if there is one and it could be built.
pub(crate) fn layout(spec: &SynthSpec) -> Option<Arc<KernelLayout>> {
    cached(spec)?.ok()
}

/// Rewrites the VMCOREINFO keys that describe the kernel structures.
pub(crate) fn patch_vmcoreinfo(text: &str, l: &KernelLayout) -> String {
    let values: [(&str, String); 14] = [
        ("SYMBOL(init_uts_ns)", format!("{:x}", l.init_uts_ns)),
        ("SYMBOL(node_online_map)", format!("{:x}", l.node_online_map)),
        ("SYMBOL(swapper_pg_dir)", format!("{:x}", l.init_top_pgt)),
        ("SYMBOL(_stext)", format!("{:x}", l.text_vaddr)),
        ("SYMBOL(mem_section)", format!("{:x}", l.mem_section)),
        ("LENGTH(mem_section)", l.nr_section_roots.to_string()),
        ("SIZE(mem_section)", MEM_SECTION_SIZE.to_string()),
        ("NUMBER(SECTION_SIZE_BITS)", SECTION_SIZE_BITS.to_string()),
        ("NUMBER(MAX_PHYSMEM_BITS)", l.max_physmem_bits.to_string()),
        ("NUMBER(phys_base)", l.phys_base.to_string()),
        ("SYMBOL(init_top_pgt)", format!("{:x}", l.init_top_pgt)),
        ("NUMBER(pgtable_l5_enabled)", u8::from(l.five_level).to_string()),
        ("KERNELOFFSET", format!("{:x}", l.kerneloffset)),
        ("NUMBER(sme_mask)", l.sme_mask.to_string()),
    ];
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.lines() {
        let key = line.split_once('=').map_or(line, |(k, _)| k);
        match values.iter().find(|(k, _)| *k == key) {
            Some((k, v)) => out.push_str(&format!("{k}={v}")),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    match l.struct_pages {
        Some(flavour) => flavour::patch_vmcoreinfo(&out, flavour),
        None => out,
    }
}

#[cfg(test)]
mod tests;
