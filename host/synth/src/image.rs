//! The PT_NOTE payload of a synthetic ELF64 core: per-CPU notes and the
//! VMCOREINFO text (the file and program headers come from
//! `vmdump_format::elf::write`).

use std::fmt::Write as _;

use vmdump_format::elf::write::note;
use vmdump_format::elf::{Endian, NT_PRSTATUS};

use super::SynthSpec;
use super::page::page_hash;

/// Size of an x86_64 `NT_PRSTATUS` descriptor (`struct elf_prstatus`).
pub const PRSTATUS_DESC_SIZE: usize = 336;

/// The PT_NOTE payload: `nr_cpus` CORE/NT_PRSTATUS notes, then VMCOREINFO.
pub(crate) fn notes(e: Endian, spec: &SynthSpec) -> Vec<u8> {
    let mut out = Vec::new();
    for cpu in 0..spec.nr_cpus {
        let mut desc = [0u8; PRSTATUS_DESC_SIZE];
        e.put_u32(&mut desc, 32, cpu + 1); // pr_pid
        out.extend(note(e, b"CORE", NT_PRSTATUS, &desc));
    }
    if spec.with_vmcoreinfo {
        out.extend(note(e, b"VMCOREINFO", 0, vmcoreinfo_text(spec).as_bytes()));
    }
    out
}

/// KASLR-like values derived from the seed: (kernel offset, phys_base).
pub(crate) fn kaslr(spec: &SynthSpec) -> (u64, i64) {
    let h = page_hash(spec.seed, u64::MAX);
    let kerneloffset = (1 + h % 500) * 0x20_0000;
    let phys_base = -(((1 + (h >> 16) % 200) * 0x20_0000) as i64);
    (kerneloffset, phys_base)
}

/// The crash time written as `CRASHTIME=`.
pub fn crashtime(spec: &SynthSpec) -> u64 {
    1_700_000_000 + page_hash(spec.seed, u64::MAX - 1) % 10_000_000
}

/// A realistic x86_64 VMCOREINFO text (keys as a 6.1 kernel exports them, §4.3).
pub fn vmcoreinfo_text(spec: &SynthSpec) -> String {
    let (koff, phys_base) = kaslr(spec);
    let sym = |base: u64| format!("{:x}", base + koff);
    let mut t = String::new();
    let _ = write!(
        t,
        "OSRELEASE=6.1.0-synth-amd64\nBUILD-ID={:016x}{:016x}{:08x}\nPAGESIZE=4096\n",
        page_hash(spec.seed, 1),
        page_hash(spec.seed, 2),
        page_hash(spec.seed, 3) as u32
    );
    let _ = write!(t, "SYMBOL(init_uts_ns)={}\nOFFSET(uts_namespace.name)=0\n", sym(0xffff_ffff_82bf_b000));
    let _ = write!(
        t,
        "SYMBOL(node_online_map)={}\nSYMBOL(swapper_pg_dir)={}\nSYMBOL(_stext)={}\n",
        sym(0xffff_ffff_82c3_df40),
        sym(0xffff_ffff_82a1_0000),
        sym(0xffff_ffff_8100_0000)
    );
    t.push_str("SYMBOL(mem_section)=ffff888217fd5000\nLENGTH(mem_section)=4096\nSIZE(mem_section)=32\n");
    t.push_str(
        "OFFSET(mem_section.section_mem_map)=0\nNUMBER(SECTION_SIZE_BITS)=27\nNUMBER(MAX_PHYSMEM_BITS)=46\n",
    );
    t.push_str("SIZE(page)=64\nSIZE(pglist_data)=174208\nSIZE(zone)=1536\nSIZE(free_area)=88\n");
    t.push_str("SIZE(list_head)=16\nSIZE(nodemask_t)=128\nOFFSET(page.flags)=0\nOFFSET(page._refcount)=52\n");
    t.push_str(
        "OFFSET(page.mapping)=24\nOFFSET(page.lru)=8\nOFFSET(page._mapcount)=48\nOFFSET(page.private)=40\n",
    );
    t.push_str("OFFSET(page.compound_head)=8\nOFFSET(zone.free_area)=256\nOFFSET(free_area.free_list)=0\n");
    t.push_str("LENGTH(zone.free_area)=11\nLENGTH(free_area.free_list)=5\nNUMBER(NR_FREE_PAGES)=0\n");
    t.push_str(
        "NUMBER(PG_lru)=4\nNUMBER(PG_private)=13\nNUMBER(PG_swapcache)=10\nNUMBER(PG_swapbacked)=19\n",
    );
    t.push_str("NUMBER(PG_slab)=9\nNUMBER(PG_hwpoison)=23\nNUMBER(PG_head_mask)=65536\n");
    t.push_str("NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)=-129\nNUMBER(PAGE_OFFLINE_MAPCOUNT_VALUE)=-257\n");
    let _ = write!(
        t,
        "NUMBER(phys_base)={phys_base}\nSYMBOL(init_top_pgt)={}\nNUMBER(pgtable_l5_enabled)=0\n",
        sym(0xffff_ffff_82a1_0000)
    );
    let _ = write!(t, "KERNELOFFSET={koff:x}\nNUMBER(KERNEL_IMAGE_SIZE)=1073741824\nNUMBER(sme_mask)=0\n");
    let _ = writeln!(t, "CRASHTIME={}", crashtime(spec));
    match super::kernel::layout(spec) {
        Some(layout) => {
            // 6.1's compound page fields (no page is a compound head here),
            // so that dump level 31 can be honoured (cache and user pages
            // need them); images without kernel structures stay as they were.
            t.push_str("OFFSET(page.compound_dtor)=16\nOFFSET(page.compound_order)=17\nNUMBER(HUGETLB_PAGE_DTOR)=2\n");
            super::kernel::patch_vmcoreinfo(&t, &layout)
        }
        None => t,
    }
}
