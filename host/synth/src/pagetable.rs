//! x86_64 page tables for synthetic kernels (kdump-format.md §5.6).
//!
//! [`PageTables`] builds real 4- or 5-level tables in memory: table pages
//! are 512 little-endian `u64` entries at physical addresses handed out by
//! the caller's allocator; a leaf is a 4 KiB PTE, a 2 MiB PMD or a 1 GiB PUD
//! entry with PSE (0x80). Entries carry the flags a kernel sets (present,
//! RW, accessed, dirty; leaves also global and NX, bit 63) and the AMD SME
//! C-bit when one is given, so a reader that forgets `ENTRY_MASK` or
//! `sme_mask` (§5.6) reads the wrong frame.
//!
//! The synthetic generator places these pages in RAM; the host's address
//! translation tests reuse the builder over in-memory pages.

use std::collections::BTreeMap;

use super::PAGE_SIZE;

/// `_PAGE_PRESENT`.
pub const PAGE_PRESENT: u64 = 0x1;
/// `_PAGE_RW`.
pub const PAGE_RW: u64 = 0x2;
/// `_PAGE_ACCESSED`.
pub const PAGE_ACCESSED: u64 = 0x20;
/// `_PAGE_DIRTY`.
pub const PAGE_DIRTY: u64 = 0x40;
/// `_PAGE_PSE`: a 2 MiB (PMD) or 1 GiB (PUD) leaf.
pub const PAGE_PSE: u64 = 0x80;
/// `_PAGE_GLOBAL`.
pub const PAGE_GLOBAL: u64 = 0x100;
/// `_PAGE_NX` (bit 63).
pub const PAGE_NX: u64 = 1 << 63;
/// Bits 12..=51 of an entry: the next table or frame (§5.6 `ENTRY_MASK`).
pub const ENTRY_MASK: u64 = 0x000f_ffff_ffff_f000;

/// Flags of an entry pointing at a lower table (`_KERNPG_TABLE`).
const TABLE_FLAGS: u64 = PAGE_PRESENT | PAGE_RW | PAGE_ACCESSED | PAGE_DIRTY;
/// Flags of a leaf entry for kernel data (`__PAGE_KERNEL` with global).
const LEAF_FLAGS: u64 = TABLE_FLAGS | PAGE_GLOBAL | PAGE_NX;

/// Size of one mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapSize {
    /// A 4 KiB page (PTE).
    Page4K,
    /// A 2 MiB page (PMD with PSE).
    Page2M,
    /// A 1 GiB page (PUD with PSE).
    Page1G,
}

impl MapSize {
    /// Bytes mapped by one entry.
    pub fn bytes(self) -> u64 {
        1 << self.shift()
    }

    fn shift(self) -> u32 {
        match self {
            MapSize::Page4K => 12,
            MapSize::Page2M => 21,
            MapSize::Page1G => 30,
        }
    }
}

/// A table page: 512 entries.
type Table = [u64; 512];

/// Page tables under construction, keyed by the physical address of each
/// table page.
#[derive(Debug, Clone)]
pub struct PageTables {
    five_level: bool,
    enc_mask: u64,
    root: u64,
    tables: BTreeMap<u64, Box<Table>>,
}

impl PageTables {
    /// Empty tables whose top level (PGD) is the page at `root`; `enc_mask`
    /// (the SME C-bit, or 0) is set in every entry.
    pub fn new(five_level: bool, root: u64, enc_mask: u64) -> Self {
        let mut tables = BTreeMap::new();
        tables.insert(root, Box::new([0u64; 512]));
        PageTables { five_level, enc_mask, root, tables }
    }

    /// Physical address of the top-level table.
    pub fn root(&self) -> u64 {
        self.root
    }

    /// Index shifts from the top level down to the PTE level.
    fn shifts(&self) -> &'static [u32] {
        if self.five_level { &[48, 39, 30, 21, 12] } else { &[39, 30, 21, 12] }
    }

    /// Maps `va` to `pa` with one entry of `size`; missing intermediate
    /// tables come from `alloc` (a free, page-aligned physical address).
    ///
    /// # Errors
    ///
    /// A message if an address is misaligned, `alloc` runs out, or the
    /// range is already mapped (by a leaf or by a large page above it).
    pub fn map(
        &mut self,
        va: u64,
        pa: u64,
        size: MapSize,
        alloc: &mut dyn FnMut() -> Option<u64>,
    ) -> Result<(), String> {
        if !va.is_multiple_of(size.bytes()) || !pa.is_multiple_of(size.bytes()) {
            return Err(format!("mapping {va:#x} -> {pa:#x}: not aligned to {:#x}", size.bytes()));
        }
        let mut table = self.root;
        for &shift in self.shifts() {
            let index = ((va >> shift) & 511) as usize;
            let entry = self.tables[&table][index];
            if shift == size.shift() {
                if entry & PAGE_PRESENT != 0 {
                    return Err(format!("mapping {va:#x}: already mapped by {entry:#x}"));
                }
                let pse = if size == MapSize::Page4K { 0 } else { PAGE_PSE };
                self.set(table, index, pa | LEAF_FLAGS | pse | self.enc_mask);
                return Ok(());
            }
            table = if entry & PAGE_PRESENT == 0 {
                let next = alloc().ok_or_else(|| format!("mapping {va:#x}: no memory for a table"))?;
                self.tables.insert(next, Box::new([0u64; 512]));
                self.set(table, index, next | TABLE_FLAGS | self.enc_mask);
                next
            } else if entry & PAGE_PSE != 0 {
                return Err(format!("mapping {va:#x}: inside a large page {entry:#x}"));
            } else {
                entry & ENTRY_MASK & !self.enc_mask
            };
        }
        Err(format!("mapping {va:#x}: no level maps {:#x} bytes", size.bytes()))
    }

    /// Maps `len` bytes from `va` to `pa` with entries of `size`.
    ///
    /// # Errors
    ///
    /// As [`PageTables::map`].
    pub fn map_range(
        &mut self,
        va: u64,
        pa: u64,
        len: u64,
        size: MapSize,
        alloc: &mut dyn FnMut() -> Option<u64>,
    ) -> Result<(), String> {
        let mut done = 0;
        while done < len {
            self.map(va + done, pa + done, size, alloc)?;
            done += size.bytes();
        }
        Ok(())
    }

    fn set(&mut self, table: u64, index: usize, value: u64) {
        if let Some(t) = self.tables.get_mut(&table) {
            t[index] = value;
        }
    }

    /// The raw entry `index` of the table page at `table`, if it exists.
    pub fn entry(&self, table: u64, index: usize) -> Option<u64> {
        self.tables.get(&table).and_then(|t| t.get(index).copied())
    }

    /// Overwrites entry `index` of the table page at `table` (tests use it
    /// to clear a present bit); false if there is no such table.
    pub fn set_entry(&mut self, table: u64, index: usize, value: u64) -> bool {
        match self.tables.get_mut(&table).and_then(|t| t.get_mut(index)) {
            Some(e) => {
                *e = value;
                true
            }
            None => false,
        }
    }

    /// Every table page as (physical address, little-endian bytes).
    pub fn pages(&self) -> impl Iterator<Item = (u64, Box<[u8; PAGE_SIZE]>)> + '_ {
        self.tables.iter().map(|(&pa, table)| {
            let mut bytes = Box::new([0u8; PAGE_SIZE]);
            for (chunk, entry) in bytes.chunks_exact_mut(8).zip(table.iter()) {
                chunk.copy_from_slice(&entry.to_le_bytes());
            }
            (pa, bytes)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bump(next: &mut u64) -> impl FnMut() -> Option<u64> + '_ {
        move || {
            *next += 0x1000;
            Some(*next)
        }
    }

    #[test]
    fn four_level_walk_by_hand() {
        let mut next = 0x10_0000;
        let mut pt = PageTables::new(false, 0x1000, 1 << 47);
        let va = 0xffff_8880_0020_3000u64;
        pt.map(va, 0x7000, MapSize::Page4K, &mut bump(&mut next)).unwrap();
        let mut table = pt.root();
        for shift in [39, 30, 21] {
            let e = pt.entry(table, ((va >> shift) & 511) as usize).unwrap();
            assert_eq!(e & (1 << 47), 1 << 47, "C-bit in table entries");
            table = e & ENTRY_MASK & !(1 << 47);
        }
        let leaf = pt.entry(table, 3).unwrap();
        assert_eq!(leaf & ENTRY_MASK & !(1 << 47), 0x7000);
        assert_eq!(leaf & (PAGE_NX | PAGE_PRESENT | PAGE_PSE), PAGE_NX | PAGE_PRESENT);
        assert_eq!(pt.pages().count(), 4);
    }

    #[test]
    fn conflicts_and_misalignment_are_refused() {
        let mut next = 0x10_0000;
        let mut pt = PageTables::new(true, 0x1000, 0);
        let va = 0xff11_0000_4000_0000u64;
        pt.map(va, 0x4000_0000, MapSize::Page1G, &mut bump(&mut next)).unwrap();
        assert!(pt.map(va + 0x1000, 0, MapSize::Page4K, &mut bump(&mut next)).is_err());
        assert!(pt.map(va, 0, MapSize::Page1G, &mut bump(&mut next)).is_err());
        assert!(pt.map(va + 0x1000, 0, MapSize::Page2M, &mut bump(&mut next)).is_err());
        assert!(pt.map(0xff11_0000_0000_0000, 0, MapSize::Page2M, &mut || None).is_err());
        assert_eq!(pt.pages().count(), 3, "PGD, P4D, PUD");
    }
}
