//! Builds a [`KernelLayout`]: chooses addresses, allocates physical pages
//! from RAM, writes page tables, `mem_section` and the image's variables.

use std::collections::BTreeMap;
use std::ops::Range;

use super::super::page::page_hash;
use super::super::pagetable::{MapSize, PageTables};
use super::super::{PAGE_SIZE, SynthSpec, ram_only};
use super::*;

const PAGE: u64 = PAGE_SIZE as u64;
const MIB2: u64 = 2 << 20;
const GIB: u64 = 1 << 30;
/// `__START_KERNEL − __START_KERNEL_map` (CONFIG_PHYSICAL_START).
const TEXT_OFFSET: u64 = 16 << 20;
/// Largest KERNELOFFSET: the image ends below `__START_KERNEL_map + 1 GiB`.
const KOFF_MAX: u64 = GIB - TEXT_OFFSET - MIB2;
/// Offsets of the kernel variables inside the image.
const PGD_OFF: u64 = 0x8_0000;
const UTS_OFF: u64 = 0x9_0000;
const VARS_OFF: u64 = 0x9_1000;
/// PRESENT | HAS_MEM_MAP | ONLINE | EARLY in `section_mem_map`.
const SECTION_FLAGS: u64 = 0xf;
/// Pfns of a vmemmap subsection.
const SUBSECTION_PFNS: u64 = 512;

/// Free physical pages, handed out lowest first.
struct Alloc {
    free: Vec<Range<u64>>, // pfn ranges
}

impl Alloc {
    /// RAM from 1 MiB up in whole pages, without the image.
    fn new(ram: &[Range<u64>], image: Range<u64>) -> Alloc {
        let mut free = Vec::new();
        for r in ram {
            let pfns = r.start.max(1 << 20).div_ceil(PAGE)..r.end / PAGE;
            let img = image.start / PAGE..image.end / PAGE;
            for part in [pfns.start..pfns.end.min(img.start), pfns.start.max(img.end)..pfns.end] {
                if part.start < part.end {
                    free.push(part);
                }
            }
        }
        Alloc { free }
    }

    /// `n` contiguous pages; returns the physical address of the first.
    fn pages(&mut self, n: u64) -> Option<u64> {
        let r = self.free.iter_mut().find(|r| r.end - r.start >= n)?;
        r.start += n;
        Some((r.start - n) * PAGE)
    }
}

/// Kernel pages under construction.
#[derive(Default)]
struct Pages {
    bytes: BTreeMap<u64, Box<[u8; PAGE_SIZE]>>,
    zero: Vec<Range<u64>>,
    /// vmemmap backing pages: (first pfn described, physical address).
    vmemmap: Vec<(u64, u64)>,
}

impl Pages {
    fn page_mut(&mut self, paddr: u64) -> &mut [u8; PAGE_SIZE] {
        self.bytes.entry(paddr / PAGE).or_insert_with(|| Box::new([0u8; PAGE_SIZE]))
    }

    fn put_u64(&mut self, paddr: u64, value: u64) {
        let at = (paddr % PAGE) as usize;
        self.page_mut(paddr)[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }

    fn zero_pages(&mut self, paddr: u64, n: u64) {
        self.zero.push(paddr / PAGE..paddr / PAGE + n);
    }
}

/// Addresses drawn from the seed (or the non-KASLR defaults).
struct Choice {
    kerneloffset: u64,
    image_phys: u64,
    page_offset: u64,
    vmemmap_base: u64,
}

fn choose(spec: &SynthSpec, k: &KernelSpec, ram: &[Range<u64>]) -> Result<Choice, String> {
    let h = |salt: u64| page_hash(spec.seed, u64::MAX - 100 - salt);
    let slots: Vec<u64> = ram
        .iter()
        .flat_map(|r| {
            let first = r.start.max(MIB2).next_multiple_of(MIB2);
            (first..).step_by(MIB2 as usize).take_while(move |a| a + IMAGE_BYTES <= r.end / PAGE * PAGE)
        })
        .take(4096)
        .collect();
    let Some(&first) = slots.first() else {
        return Err("no 2 MiB-aligned RAM for the 1 MiB kernel image".into());
    };
    let (po, vm) = if k.five_level { (PAGE_OFFSET_L5, VMEMMAP_L5) } else { (PAGE_OFFSET_L4, VMEMMAP_L4) };
    if !k.kaslr {
        let image_phys = if slots.contains(&TEXT_OFFSET) { TEXT_OFFSET } else { first };
        return Ok(Choice { kerneloffset: 0, image_phys, page_offset: po, vmemmap_base: vm });
    }
    let (span, vm_kaslr) =
        if k.five_level { (65536, 0xffa0_0000_0000_0000) } else { (8192, 0xffff_d400_0000_0000) };
    // The virtual offset is drawn above the load address (while the image
    // stays below __START_KERNEL_map + 1 GiB), so phys_base is negative as
    // on the fixtures unless the image is loaded above ~1 GiB.
    let image_phys = slots[(h(2) % slots.len() as u64) as usize];
    let top = KOFF_MAX / MIB2;
    let lowest = (image_phys / MIB2 + 1).min(top - 1);
    Ok(Choice {
        kerneloffset: (lowest + h(1) % (top - lowest)) * MIB2,
        image_phys,
        page_offset: po + h(3) % span * GIB,
        vmemmap_base: vm_kaslr + h(4) % span * GIB,
    })
}

/// Direct map of `[0, top)`: 4 KiB, then 2 MiB, then 1 GiB pages.
fn map_direct(pt: &mut PageTables, base: u64, top: u64, alloc: &mut Alloc) -> Result<(), String> {
    let mut next = || alloc.pages(1);
    let low = top.min(MIB2);
    pt.map_range(base, 0, low, MapSize::Page4K, &mut next)?;
    let first_gib_end = top.min(GIB);
    if first_gib_end > low {
        pt.map_range(base + low, low, first_gib_end - low, MapSize::Page2M, &mut next)?;
    }
    let whole_gibs_end = (top / GIB * GIB).max(first_gib_end);
    if whole_gibs_end > first_gib_end {
        let len = whole_gibs_end - first_gib_end;
        pt.map_range(base + first_gib_end, first_gib_end, len, MapSize::Page1G, &mut next)?;
    }
    if top > whole_gibs_end {
        let len = top - whole_gibs_end;
        pt.map_range(base + whole_gibs_end, whole_gibs_end, len, MapSize::Page2M, &mut next)?;
    }
    Ok(())
}

/// Sections holding RAM below `top`, ascending.
fn present_sections(ram: &[Range<u64>]) -> Vec<u64> {
    let bytes = KernelLayout::PFNS_PER_SECTION * PAGE;
    let mut nrs: Vec<u64> = ram.iter().flat_map(|r| r.start / bytes..r.end.div_ceil(bytes)).collect();
    nrs.dedup();
    nrs
}

/// The root array, the section arrays and the vmemmap backing pages.
struct Sections {
    roots_paddr: u64,
    nr_roots: u64,
}

fn build_sections(
    l: &KernelLayout,
    top_pfn: u64,
    pt: &mut PageTables,
    alloc: &mut Alloc,
    pages: &mut Pages,
) -> Result<Sections, String> {
    let nomem = |what: &str| format!("RAM too small for {what}");
    let nr_roots = 1u64 << (l.max_physmem_bits - SECTION_SIZE_BITS) >> 8; // 256 sections per root
    let roots_pages = nr_roots * 8 / PAGE;
    let roots_paddr = alloc.pages(roots_pages).ok_or_else(|| nomem("the mem_section roots"))?;
    pages.page_mut(roots_paddr);
    pages.zero_pages(roots_paddr + PAGE, roots_pages - 1);
    let mut root_pages: BTreeMap<u64, u64> = BTreeMap::new();
    for &nr in &l.present_sections {
        let root = nr / 256;
        let root_paddr = match root_pages.get(&root) {
            Some(&p) => p,
            None => {
                let p = alloc.pages(1).ok_or_else(|| nomem("a mem_section array"))?;
                pages.put_u64(roots_paddr + root * 8, l.page_offset + p);
                root_pages.insert(root, p);
                p
            }
        };
        pages.put_u64(root_paddr + (nr % 256) * MEM_SECTION_SIZE, l.vmemmap_base | SECTION_FLAGS);
        if l.vmemmap_hole != Some(nr) {
            map_vmemmap(l, nr, top_pfn, pt, alloc, pages)?;
        }
    }
    Ok(Sections { roots_paddr, nr_roots })
}

/// Maps struct pages (filled later by [`fill_struct_pages`]) for the subsections of section `nr` below `top_pfn`.
fn map_vmemmap(
    l: &KernelLayout,
    nr: u64,
    top_pfn: u64,
    pt: &mut PageTables,
    alloc: &mut Alloc,
    pages: &mut Pages,
) -> Result<(), String> {
    let start = nr * KernelLayout::PFNS_PER_SECTION;
    let end = (start + KernelLayout::PFNS_PER_SECTION).min(top_pfn.next_multiple_of(SUBSECTION_PFNS));
    let n = (end - start) * STRUCT_PAGE_SIZE / PAGE;
    for i in 0..n {
        let backing = alloc.pages(1).ok_or_else(|| "RAM too small for the vmemmap".to_string())?;
        pages.vmemmap.push((start + i * (PAGE / STRUCT_PAGE_SIZE), backing));
        let va = l.vmemmap_base + start * STRUCT_PAGE_SIZE + i * PAGE;
        pt.map(va, backing, MapSize::Page4K, &mut || alloc.pages(1))?;
    }
    Ok(())
}

/// Writes the struct pages into the vmemmap backing pages (zero pages
/// without [`KernelSpec::struct_pages`]); returns the class code per pfn.
fn fill_struct_pages(spec: &SynthSpec, l: &KernelLayout, ram: &[Range<u64>], pages: &mut Pages) -> Vec<u8> {
    let Some(flavour) = l.struct_pages else {
        for (_, backing) in std::mem::take(&mut pages.vmemmap) {
            pages.zero_pages(backing, 1);
        }
        return Vec::new();
    };
    let per_page = PAGE / STRUCT_PAGE_SIZE;
    let n = pages.vmemmap.iter().map(|&(first, _)| first + per_page).max().unwrap_or(0);
    let mut kernel = vec![false; n as usize];
    let mut mark = |pfns: Range<u64>| {
        for pfn in pfns.start.min(n)..pfns.end.min(n) {
            kernel[pfn as usize] = true;
        }
    };
    pages.bytes.keys().for_each(|&pfn| mark(pfn..pfn + 1));
    pages.zero.iter().for_each(|r| mark(r.clone()));
    pages.vmemmap.iter().for_each(|&(_, pa)| mark(pa / PAGE..pa / PAGE + 1));
    mark(l.image_phys / PAGE..(l.image_phys + IMAGE_BYTES) / PAGE);
    let usable =
        |pfn: u64| !kernel[pfn as usize] && ram.iter().any(|r| r.start <= pfn * PAGE && pfn * PAGE < r.end);
    let mut built = struct_pages::build(spec.seed, flavour, n, l.vmemmap_base, &usable);
    for (first, backing) in std::mem::take(&mut pages.vmemmap) {
        let from = (first * STRUCT_PAGE_SIZE) as usize;
        pages.page_mut(backing).copy_from_slice(&built.bytes[from..from + PAGE_SIZE]);
    }
    if let Some(nr) = l.vmemmap_hole {
        // No tool can see these struct pages: nothing there is excluded.
        let pfns = nr * KernelLayout::PFNS_PER_SECTION..(nr + 1) * KernelLayout::PFNS_PER_SECTION;
        built.classes.iter_mut().take(pfns.end as usize).skip(pfns.start as usize).for_each(|c| *c = 0);
    }
    built.classes
}

/// A `struct new_utsname`: six 65-byte strings.
fn utsname(pages: &mut Pages, paddr: u64) {
    let page = pages.page_mut(paddr);
    let fields = ["Linux", "synth", OSRELEASE, "#1 SMP PREEMPT_DYNAMIC synth", "x86_64", "(none)"];
    for (i, field) in fields.iter().enumerate() {
        let at = (paddr % PAGE) as usize + i * 65;
        page[at..at + field.len()].copy_from_slice(field.as_bytes());
    }
}

/// Lays out every kernel structure of `spec` (see the module docs).
pub(super) fn build(spec: &SynthSpec) -> Result<KernelLayout, String> {
    let k = spec.kernel.ok_or("no kernel spec")?;
    let ram = ram_only(spec);
    let top = ram.last().map_or(0, |r| r.end);
    if k.bios_rom && top > BIOS_ROM.start {
        return Err(format!("RAM ends at {top:#x}, beyond the BIOS ROM at {:#x}", BIOS_ROM.start));
    }
    let c = choose(spec, &k, &ram)?;
    let text_vaddr = START_KERNEL_MAP + TEXT_OFFSET + c.kerneloffset;
    let mut l = KernelLayout {
        five_level: k.five_level,
        phys_base: c.image_phys as i64 - (TEXT_OFFSET + c.kerneloffset) as i64,
        kerneloffset: c.kerneloffset,
        sme_mask: k.sme_mask,
        page_offset: c.page_offset,
        vmemmap_base: c.vmemmap_base,
        image_phys: c.image_phys,
        text_vaddr,
        init_top_pgt: text_vaddr + PGD_OFF,
        init_uts_ns: text_vaddr + UTS_OFF,
        node_online_map: text_vaddr + VARS_OFF + 8,
        mem_section: 0,
        mem_section_ptr: text_vaddr + VARS_OFF,
        nr_section_roots: 0,
        max_physmem_bits: if k.five_level { 52 } else { 46 },
        present_sections: present_sections(&ram),
        struct_pages: None,
        vmemmap_hole: k.vmemmap_hole,
        classes: Vec::new(),
        pages: BTreeMap::new(),
        zero: Vec::new(),
    };
    let mut alloc = Alloc::new(&ram, c.image_phys..c.image_phys + IMAGE_BYTES);
    let mut pages = Pages::default();
    let mut pt = PageTables::new(k.five_level, c.image_phys + PGD_OFF, k.sme_mask);
    pt.map_range(text_vaddr, c.image_phys, IMAGE_BYTES, MapSize::Page4K, &mut || alloc.pages(1))?;
    map_direct(&mut pt, c.page_offset, top.next_multiple_of(MIB2), &mut alloc)?;
    let s = build_sections(&l, top.div_ceil(PAGE), &mut pt, &mut alloc, &mut pages)?;
    l.mem_section = c.page_offset + s.roots_paddr;
    l.nr_section_roots = s.nr_roots;
    utsname(&mut pages, c.image_phys + UTS_OFF);
    pages.put_u64(c.image_phys + VARS_OFF, l.mem_section);
    pages.put_u64(c.image_phys + VARS_OFF + 8, 1); // node 0 online
    pages.bytes.extend(pt.pages().map(|(pa, bytes)| (pa / PAGE, bytes)));
    l.struct_pages = k.struct_pages;
    l.classes = fill_struct_pages(spec, &l, &ram, &mut pages);
    let blank: Vec<u64> =
        pages.bytes.iter().filter(|(_, b)| b.iter().all(|&x| x == 0)).map(|(&p, _)| p).collect();
    for pfn in blank {
        pages.bytes.remove(&pfn);
        pages.zero.push(pfn..pfn + 1);
    }
    pages.zero.sort_unstable_by_key(|r| r.start);
    l.pages = pages.bytes;
    l.zero = pages.zero;
    Ok(l)
}
