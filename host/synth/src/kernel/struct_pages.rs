//! Synthetic `struct page` contents ([`super::KernelSpec::struct_pages`]):
//! a realistic mix of page-cache, private-cache, anonymous, shmem, slab,
//! kernel, hwpoison and offline pages, buddy free blocks of orders 0–10,
//! compound folios (hugetlb, anonymous THP, large file folios, slab) and,
//! for 6.12, unaccepted memory, plus the class each pfn should get.
//!
//! The plan is drawn from the seed per 1024-pfn chunk (a whole free block
//! of order 10, an unaccepted block, two hugetlb folios, a THP plus mixed
//! pages, or 64 blocks of 16 mixed pages). A multi-page unit that touches a
//! kernel page (page tables, vmemmap, image, `mem_section`) or a pfn that
//! is not RAM is demoted to reserved pages, so the kernel structures a
//! dump tool needs are never classified as excludable.

use super::super::page::page_hash;
use super::flavour::{Class, Flavour, class_code};

mod words;

use words::{Ptrs, struct_page};

/// Pfns per planning chunk (a free block of the highest order).
const CHUNK: u64 = 1024;
/// Salt of the plan's hashes, so they differ from page contents.
const SALT: u64 = 0x5712_c7a6_e5a9_e000;

/// A page on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Single {
    Cache,
    CachePrivate,
    Anon,
    AnonSwapcache,
    Shmem,
    /// Shmem in the swap cache, off the LRU (isolated).
    ShmemSwapcache,
    Slab,
    /// A slab page whose `mapping` word has bit 0 set.
    SlabOddMapping,
    /// `PG_owner_priv_1` (= PG_swapcache's number) on a non-swap-backed page.
    Checked,
    Hwpoison,
    Offline,
    /// Buddy page type with an order ≥ `LENGTH(zone.free_area)`.
    BadOrderBuddy,
    Kernel,
    Reserved,
}

/// What a compound folio holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Folio {
    Hugetlb,
    AnonThp,
    File,
    Slab,
}

/// What one pfn's struct page describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Single(Single),
    /// Part of a free buddy block (`index` 0 = head).
    Free {
        order: u8,
        index: u64,
    },
    /// Part of an unaccepted block (6.12).
    Unaccepted {
        index: u64,
    },
    /// Part of a compound folio (`index` 0 = head).
    Folio {
        kind: Folio,
        order: u8,
        index: u64,
    },
}

/// A planned unit: `2^order` pfns from `start`.
struct Unit {
    start: u64,
    order: u8,
    slot: fn(u64, u8) -> Slot,
}

fn hash(seed: u64, x: u64) -> u64 {
    page_hash(seed ^ SALT, x)
}

fn single(seed: u64, pfn: u64) -> Single {
    match hash(seed, pfn) % 100 {
        0..25 => Single::Cache,
        25..28 => Single::CachePrivate,
        28..45 => Single::Anon,
        45..48 => Single::AnonSwapcache,
        48..53 => Single::Shmem,
        53..55 => Single::ShmemSwapcache,
        55..65 => Single::Slab,
        65..67 => Single::SlabOddMapping,
        67..69 => Single::Checked,
        69..70 => Single::Hwpoison,
        70..71 => Single::Offline,
        71..72 => Single::BadOrderBuddy,
        _ => Single::Kernel,
    }
}

fn singles(seed: u64, pfns: std::ops::Range<u64>, out: &mut [Slot], base: u64) {
    for pfn in pfns {
        out[(pfn - base) as usize] = Slot::Single(single(seed, pfn));
    }
}

/// Free blocks inside `2^order` pfns from `start`: whole, or split in
/// halves (the second sometimes in use).
fn free_region(seed: u64, start: u64, order: u8, units: &mut Vec<Unit>) {
    let h = hash(seed, start ^ (u64::from(order) << 56));
    if order == 0 || h.is_multiple_of(3) {
        units.push(Unit { start, order, slot: |i, o| Slot::Free { order: o, index: i } });
        return;
    }
    // Split in halves; the second half sometimes stays in use (single pages).
    let half = 1u64 << (order - 1);
    free_region(seed, start, order - 1, units);
    if h % 3 != 1 {
        free_region(seed, start + half, order - 1, units);
    }
}

fn folio(start: u64, order: u8, kind: Folio) -> Unit {
    let slot: fn(u64, u8) -> Slot = match kind {
        Folio::Hugetlb => |i, o| Slot::Folio { kind: Folio::Hugetlb, order: o, index: i },
        Folio::AnonThp => |i, o| Slot::Folio { kind: Folio::AnonThp, order: o, index: i },
        Folio::File => |i, o| Slot::Folio { kind: Folio::File, order: o, index: i },
        Folio::Slab => |i, o| Slot::Folio { kind: Folio::Slab, order: o, index: i },
    };
    Unit { start, order, slot }
}

/// The multi-page units of one 16-pfn block (single pages are left to the caller).
fn block_units(seed: u64, start: u64, units: &mut Vec<Unit>) {
    match hash(seed, start) % 16 {
        0..3 => free_region(seed, start, 4, units),
        3 => units.push(folio(start, 4, Folio::AnonThp)),
        4 => units.extend((0..4).map(|i| folio(start + 4 * i, 2, Folio::File))),
        5 => units.extend((0..2).map(|i| folio(start + 8 * i, 3, Folio::Slab))),
        _ => {}
    }
}

/// The multi-page units of the chunk at `start`.
fn chunk_units(seed: u64, start: u64, flavour: Flavour, units: &mut Vec<Unit>) {
    let r = hash(seed, start / CHUNK) % 100;
    match r {
        0..5 => units.push(Unit { start, order: 10, slot: |i, o| Slot::Free { order: o, index: i } }),
        5..8 if flavour == Flavour::Linux6_12 => {
            units.push(Unit { start, order: 10, slot: |i, _| Slot::Unaccepted { index: i } });
        }
        8..11 => units.extend([folio(start, 9, Folio::Hugetlb), folio(start + 512, 9, Folio::Hugetlb)]),
        _ => {
            let mixed_from = if (11..15).contains(&r) {
                units.push(folio(start, 9, Folio::AnonThp));
                start + 512
            } else {
                start
            };
            for block in (mixed_from..start + CHUNK).step_by(16) {
                block_units(seed, block, units);
            }
        }
    }
}

/// The slot of every pfn below `n`; `usable(pfn)` is false for kernel
/// pages and pfns that are not RAM.
fn plan(seed: u64, flavour: Flavour, n: u64, usable: &dyn Fn(u64) -> bool) -> Vec<Slot> {
    let mut slots = vec![Slot::Single(Single::Reserved); n as usize];
    let mut units = Vec::new();
    for chunk in (0..n).step_by(CHUNK as usize) {
        singles(seed, chunk..(chunk + CHUNK).min(n), &mut slots, 0);
        units.clear();
        chunk_units(seed, chunk, flavour, &mut units);
        for u in &units {
            let pfns = u.start..(u.start + (1 << u.order)).min(n);
            let ok = pfns.end.saturating_sub(pfns.start) == 1 << u.order && pfns.clone().all(usable);
            for pfn in pfns.clone() {
                slots[pfn as usize] =
                    if ok { (u.slot)(pfn - u.start, u.order) } else { Slot::Single(Single::Reserved) };
            }
        }
    }
    for (pfn, slot) in (0u64..).zip(slots.iter_mut()) {
        if !usable(pfn) {
            *slot = Slot::Single(Single::Reserved);
        }
    }
    slots
}

fn class_of(slot: Slot) -> Option<Class> {
    match slot {
        Slot::Single(Single::Cache | Single::Shmem | Single::ShmemSwapcache) => Some(Class::Cache),
        Slot::Single(Single::CachePrivate) => Some(Class::CachePrivate),
        Slot::Single(Single::Anon | Single::AnonSwapcache) => Some(Class::User),
        Slot::Single(Single::Hwpoison) => Some(Class::Hwpoison),
        Slot::Single(Single::Offline) => Some(Class::Offline),
        Slot::Single(_) => None,
        Slot::Free { .. } | Slot::Unaccepted { .. } => Some(Class::Free),
        Slot::Folio { kind: Folio::Hugetlb | Folio::AnonThp, .. } => Some(Class::User),
        Slot::Folio { kind: Folio::File, .. } => Some(Class::Cache),
        Slot::Folio { kind: Folio::Slab, .. } => None,
    }
}

/// The struct pages of pfns `0..n` and the class code of each pfn.
pub(crate) struct StructPages {
    /// 64 bytes per pfn.
    pub(crate) bytes: Vec<u8>,
    /// Class code per pfn (`flavour::class_from_code`).
    pub(crate) classes: Vec<u8>,
}

/// Builds the struct pages of pfns below `n` for `flavour`.
pub(crate) fn build(
    seed: u64,
    flavour: Flavour,
    n: u64,
    vmemmap: u64,
    usable: &dyn Fn(u64) -> bool,
) -> StructPages {
    let slots = plan(seed, flavour, n, usable);
    let numbers = flavour.numbers();
    let ptrs = Ptrs { seed, vmemmap };
    let mut bytes = Vec::with_capacity(slots.len() * 64);
    for (pfn, &slot) in (0u64..).zip(&slots) {
        bytes.extend_from_slice(&struct_page(slot, pfn, &numbers, flavour, &ptrs));
    }
    let classes = slots.iter().map(|&s| class_code(class_of(s))).collect();
    StructPages { bytes, classes }
}

#[cfg(test)]
mod tests;
