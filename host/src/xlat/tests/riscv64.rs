//! riscv64 translation over Sv39, Sv48 and Sv57 tables built by hand from
//! the privileged specification's entry format (docs/riscv64.md §3),
//! never by the code under test: V (bit 0), R/W/X (bits 1..3) making a
//! leaf, the PPN in bits 53:10, Svpbmt bits above it. The layouts are
//! those of Linux's Documentation/arch/riscv/vm-layout.rst for each mode;
//! expected addresses are worked out by hand.

use std::collections::HashMap;

use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::super::{KernelMemory, Level, Riscv64, XlatError};
use super::MemPhys;

const TABLE: u64 = 1;
/// V, R, W, G, A, D.
const LEAF: u64 = 0xe7;
/// Svpbmt's NC memory type (bits 62:61 = 01): not address bits.
const PBMT_NC: u64 = 1 << 61;

/// A mode's layout: (VA bits, PAGE_OFFSET, vmalloc, vmemmap).
struct Layout {
    va_bits: u32,
    page_offset: u64,
    vmalloc: (u64, u64),
    vmemmap: (u64, u64),
}

const SV39: Layout = Layout {
    va_bits: 39,
    page_offset: 0xffff_ffd6_0000_0000,
    vmalloc: (0xffff_ffc6_0000_0000, 0xffff_ffd5_ffff_ffff),
    vmemmap: (0xffff_ffc4_0000_0000, 0xffff_ffc5_ffff_ffff),
};
const SV48: Layout = Layout {
    va_bits: 48,
    page_offset: 0xffff_af80_0000_0000,
    vmalloc: (0xffff_8f80_0000_0000, 0xffff_af7f_ffff_ffff),
    vmemmap: (0xffff_8d80_0000_0000, 0xffff_8f7f_ffff_ffff),
};
const SV57: Layout = Layout {
    va_bits: 57,
    page_offset: 0xff60_0000_0000_0000,
    vmalloc: (0xff20_0000_0000_0000, 0xff5f_ffff_ffff_ffff),
    vmemmap: (0xff1c_0000_0000_0000, 0xff1f_ffff_ffff_ffff),
};

const MODULES: (u64, u64) = (0xffff_ffff_0000_0000, 0xffff_ffff_7fff_ffff);
const KERNEL_LINK_ADDR: u64 = 0xffff_ffff_8000_0000;
/// The image at physical 0x80200000 (OpenSBI below it), RAM from 0x80000000.
const VA_KERNEL_PA_OFFSET: u64 = KERNEL_LINK_ADDR - 0x8020_0000;
const PHYS_RAM_BASE: u64 = 0x8000_0000;

struct Tables {
    m: MemPhys,
    levels: u32,
    root: u64,
    next: u64,
    children: HashMap<(u64, u64), u64>,
}

impl Tables {
    fn new(va_bits: u32, root: u64) -> Self {
        let mut m = MemPhys::with_page_size(4096);
        m.put_u64(root, 0);
        Tables { m, levels: (va_bits - 12) / 9, root, next: 0x8100_0000, children: HashMap::new() }
    }

    fn entry(pa: u64, flags: u64) -> u64 {
        ((pa >> 12) << 10) | flags
    }

    /// Maps `va` to `pa` with a leaf at `depth` below the root (levels − 1:
    /// a 4 KiB page).
    fn map(&mut self, va: u64, pa: u64, depth: u32, extra: u64) {
        let mut table = self.root;
        for d in 0..self.levels {
            let shift = 12 + 9 * (self.levels - 1 - d);
            let index = (va >> shift) & 511;
            let slot = table + index * 8;
            if d == depth {
                self.m.put_u64(slot, Self::entry(pa, LEAF | extra));
                return;
            }
            table = *self.children.entry((table, index)).or_insert_with(|| {
                let child = self.next;
                self.next += 4096;
                child
            });
            self.m.put_u64(slot, Self::entry(table, TABLE));
            self.m.put_u64(table + 4088, 0); // the page exists
        }
    }
}

fn info(l: &Layout, with_va_bits: bool) -> VmcoreInfo {
    let va_bits = if with_va_bits { format!("NUMBER(VA_BITS)={}\n", l.va_bits) } else { String::new() };
    let text = format!(
        "OSRELEASE=6.12.0-test-riscv64\nPAGESIZE=4096\nSYMBOL(swapper_pg_dir)={:x}\n{va_bits}\
         NUMBER(phys_ram_base)=0x{PHYS_RAM_BASE:x}\nNUMBER(PAGE_OFFSET)=0x{:x}\n\
         NUMBER(VMALLOC_START)=0x{:x}\nNUMBER(VMALLOC_END)=0x{:x}\n\
         NUMBER(VMEMMAP_START)=0x{:x}\nNUMBER(VMEMMAP_END)=0x{:x}\n\
         NUMBER(MODULES_VADDR)=0x{:x}\nNUMBER(MODULES_END)=0x{:x}\n\
         NUMBER(KERNEL_LINK_ADDR)=0x{KERNEL_LINK_ADDR:x}\nNUMBER(va_kernel_pa_offset)=0x{VA_KERNEL_PA_OFFSET:x}\n",
        KERNEL_LINK_ADDR + 0x0140_0000,
        l.page_offset,
        l.vmalloc.0,
        l.vmalloc.1,
        l.vmemmap.0,
        l.vmemmap.1,
        MODULES.0,
        MODULES.1,
    );
    VmcoreInfo::parse(text.as_bytes()).unwrap()
}

/// swapper_pg_dir's physical address: the image's formula.
const ROOT: u64 = 0x8160_0000;

fn check(mem: &KernelMemory<'_, MemPhys>, cases: &[(u64, u64)]) {
    for &(va, pa) in cases {
        assert_eq!(mem.translate(va).unwrap(), pa, "{va:#x}");
    }
}

#[test]
fn riscv64_every_mode() {
    for (l, levels) in [(&SV39, 3), (&SV48, 4), (&SV57, 5)] {
        for with_va_bits in [true, false] {
            let mut t = Tables::new(l.va_bits, ROOT);
            let vmalloc = l.vmalloc.0 + 0x1234_5000;
            let vmemmap = l.vmemmap.0 + 0x40_0000;
            t.map(vmalloc, 0x9abc_d000, levels - 1, 0);
            t.map(vmalloc + 0x1000, 0x8765_4000, levels - 1, PBMT_NC);
            t.map(vmemmap, 0xbfe0_0000, levels - 2, 0); // 2 MiB leaf
            t.map(MODULES.0 + 0x7000, 0x8888_8000, levels - 1, 0);
            t.map(l.vmemmap.0 + 0x4000_0000, 0x1_0000_0000, levels - 3, 0); // 1 GiB leaf
            let mem = KernelMemory::open(&t.m, &info(l, with_va_bits), &[]).unwrap();
            let arch = mem.arch();
            assert_eq!((arch.machine().name(), arch.levels()), ("riscv64", levels as u8), "Sv{}", l.va_bits);
            assert_eq!(
                (arch.root_paddr(), arch.phys_base(), mem.page_offset()),
                (ROOT, 0x8000_0000, l.page_offset)
            );
            check(
                &mem,
                &[
                    (vmalloc + 0xff8, 0x9abc_dff8),
                    (vmalloc + 0x1008, 0x8765_4008),
                    (vmemmap + 0x1f_fff8, 0xbfff_fff8),
                    (l.vmemmap.0 + 0x7fff_fff0, 0x1_3fff_fff0),
                    (MODULES.0 + 0x7010, 0x8888_8010),
                    (l.page_offset, 0x8000_0000),
                    (l.page_offset + 0x1234_5678, 0x9234_5678),
                    (KERNEL_LINK_ADDR, 0x8020_0000),
                    (KERNEL_LINK_ADDR + 0x0140_0008, ROOT + 8),
                ],
            );
            match mem.translate(vmalloc + 0x2000).unwrap_err() {
                XlatError::NotPresent { level: Level::Pte, entry: 0, .. } => {}
                other => panic!("Sv{}: {other}", l.va_bits),
            }
            // The formulas do not reach into vmalloc: an unmapped one is not present.
            match mem.translate(l.vmalloc.0).unwrap_err() {
                XlatError::NotPresent { .. } => {}
                other => panic!("Sv{}: {other}", l.va_bits),
            }
        }
    }
}

#[test]
fn riscv64_canonical_and_reserved() {
    let mut t = Tables::new(39, ROOT);
    let va = SV39.vmalloc.0;
    t.map(va, 0x9000_0000, 2, 0);
    // A pointer at the last level (no R, W, X) is reserved.
    let pte = t.children.values().max().copied().unwrap() + ((va >> 12) & 511) * 8 + 8;
    t.m.put_u64(pte, Tables::entry(0x9000_0000, TABLE));
    let mem = KernelMemory::open(&t.m, &info(&SV39, true), &[]).unwrap();
    match mem.translate(va + 0x1000).unwrap_err() {
        XlatError::Reserved { level: Level::Pte, .. } => {}
        other => panic!("{other}"),
    }
    // Sv39: bits 63:39 must copy bit 38.
    for bad in [0xffff_fe00_0000_0000u64, 0x0000_0080_0000_0000] {
        assert!(matches!(mem.walk(bad).unwrap_err(), XlatError::NonCanonical { levels: 3, .. }), "{bad:#x}");
    }
}

#[test]
fn riscv64_refusals() {
    let base = info(&SV48, true);
    let text = base.text().to_string();
    let cases = [
        (text.replace("PAGESIZE=4096", "PAGESIZE=65536"), "PAGESIZE"),
        (text.replace("NUMBER(VA_BITS)=48", "NUMBER(VA_BITS)=47"), "VA_BITS"),
        (text.replace("NUMBER(VMEMMAP_END)", "NUMBER(X)"), "VMEMMAP_END"),
        (
            text.replace(
                "SYMBOL(swapper_pg_dir)=ffffffff81400000",
                "SYMBOL(swapper_pg_dir)=ffffffff81400800",
            ),
            "swapper_pg_dir",
        ),
    ];
    for (text, key) in cases {
        let info = VmcoreInfo::parse(text.as_bytes()).unwrap();
        let err = Riscv64::new(&info, &[]).unwrap_err();
        assert!(err.to_string().contains(key), "{key}: {err}");
    }
}
