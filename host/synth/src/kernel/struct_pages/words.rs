//! The bytes of one synthetic `struct page` for a planned [`Slot`], at
//! the offsets both flavours share (`flavour::off`).

use super::super::flavour::{COMPOUND_DTOR, Flavour, HUGETLB_DTOR, Numbers, TAIL_MAPPING, THP_DTOR, off};
use super::{Folio, Single, Slot, hash};

/// Zone bits in the top of `page.flags` (as the kernel packs them).
const ZONE_BITS: u64 = 2 << 62;

/// The words of one `struct page` the generator sets.
struct Fields {
    flags: u64,
    compound_head: u64,
    mapping: u64,
    mapcount: i32,
    refcount: u32,
    private: u64,
    /// 6.1 first tail: (`compound_dtor`, `compound_order`).
    tail_bytes: Option<(u8, u8)>,
}

/// What the struct pages point at (kernel addresses, 64-byte aligned).
pub(super) struct Ptrs {
    pub(super) seed: u64,
    pub(super) vmemmap: u64,
}

impl Ptrs {
    fn kernel(&self, pfn: u64, what: u64) -> u64 {
        0xffff_8881_0000_0000 | (hash(self.seed, pfn ^ (what << 40)) & 0x0fff_ffc0)
    }
}

fn bit(nr: u32) -> u64 {
    1 << nr
}

/// Marks a slab page: `PG_slab` (6.1) or the slab page type (6.10+).
fn set_slab(f: &mut Fields, n: &Numbers) {
    match (n.slab, n.slab_type) {
        (Some(nr), _) => f.flags |= bit(nr),
        (None, t) => f.mapcount = t.unwrap_or(-1),
    }
}

fn single_fields(s: Single, pfn: u64, h: u64, n: &Numbers, p: &Ptrs, f: &mut Fields) {
    match s {
        Single::Cache | Single::Shmem | Single::CachePrivate => {
            f.flags |= bit(n.lru) | bit(n.uptodate);
            f.mapping = p.kernel(pfn, 1);
            f.mapcount = (h % 2) as i32 - 1;
        }
        Single::Anon | Single::AnonSwapcache => {
            f.flags |= bit(n.lru) | bit(n.uptodate) | bit(n.swapbacked);
            f.mapping = p.kernel(pfn, 2) | 1;
            f.mapcount = 0;
        }
        Single::ShmemSwapcache => {
            f.flags |= bit(n.swapcache) | bit(n.swapbacked) | bit(n.uptodate);
            f.mapping = p.kernel(pfn, 1);
        }
        Single::Slab | Single::SlabOddMapping => {
            set_slab(f, n);
            f.mapping = p.kernel(pfn, 3) | u64::from(s == Single::SlabOddMapping);
        }
        Single::Checked => {
            f.flags |= bit(n.swapcache) | bit(n.uptodate);
            f.mapping = p.kernel(pfn, 1);
        }
        Single::Hwpoison => f.flags |= bit(n.hwpoison),
        Single::Offline => f.mapcount = n.offline,
        Single::BadOrderBuddy => {
            (f.mapcount, f.refcount, f.private) = (n.buddy, 0, u64::from(n.free_orders) + 2);
        }
        Single::Kernel => {}
        Single::Reserved => f.flags |= bit(n.reserved),
    }
    match s {
        Single::CachePrivate => {
            f.flags |= bit(n.private);
            f.private = p.kernel(pfn, 4);
        }
        Single::Shmem => f.flags |= bit(n.swapbacked),
        Single::AnonSwapcache => {
            f.flags |= bit(n.swapcache);
            f.private = (h & 0xffff) << 6;
        }
        _ => {}
    }
}

fn folio_head(kind: Folio, pfn: u64, n: &Numbers, p: &Ptrs, f: &mut Fields) {
    f.flags |= bit(n.head) | bit(n.uptodate);
    match kind {
        Folio::Hugetlb => {
            f.mapping = p.kernel(pfn, 5);
            if let Some(t) = n.hugetlb_type {
                f.mapcount = t;
            }
        }
        Folio::AnonThp => {
            f.flags |= bit(n.lru) | bit(n.swapbacked);
            f.mapping = p.kernel(pfn, 2) | 1;
        }
        Folio::File => {
            f.flags |= bit(n.lru);
            f.mapping = p.kernel(pfn, 1);
        }
        Folio::Slab => {
            set_slab(f, n);
            f.mapping = p.kernel(pfn, 3);
        }
    }
}

/// A tail: `compound_head` points at the head (| 1); the first tail holds
/// the order (and, in 6.1, the destructor).
fn folio_tail(kind: Folio, order: u8, index: u64, pfn: u64, flavour: Flavour, p: &Ptrs, f: &mut Fields) {
    f.compound_head = (p.vmemmap + (pfn - index) * 64) | 1;
    f.mapping = if index == 1 { 0 } else { TAIL_MAPPING };
    if index != 1 {
        return;
    }
    match flavour {
        Flavour::Linux6_1 => {
            let dtor = match kind {
                Folio::Hugetlb => HUGETLB_DTOR,
                Folio::AnonThp => THP_DTOR,
                _ => COMPOUND_DTOR,
            };
            f.tail_bytes = Some((dtor, order));
        }
        // folio._flags_1: the order in the low byte, other flags above.
        Flavour::Linux6_12 => f.flags |= u64::from(order) | bit(10),
    }
}

/// The struct page of `pfn`.
pub(super) fn struct_page(slot: Slot, pfn: u64, n: &Numbers, flavour: Flavour, p: &Ptrs) -> [u8; 64] {
    let h = hash(p.seed, pfn ^ 0xabc);
    let mut f = Fields {
        flags: ZONE_BITS,
        // lru.next: another page's lru, an even address.
        compound_head: p.vmemmap + (h % (1 << 20)) * 64 + 8,
        mapping: 0,
        mapcount: -1,
        refcount: 1,
        private: 0,
        tail_bytes: None,
    };
    match slot {
        Slot::Single(s) => single_fields(s, pfn, h, n, p, &mut f),
        Slot::Free { order, index } => {
            f.refcount = 0;
            match index {
                0 => (f.mapcount, f.private) = (n.buddy, u64::from(order)),
                _ => f.compound_head = 0,
            }
        }
        Slot::Unaccepted { index } => {
            f.refcount = 0;
            match index {
                0 => f.mapcount = n.unaccepted_type.unwrap_or(-1),
                _ => f.compound_head = 0,
            }
        }
        Slot::Folio { kind, index: 0, .. } => folio_head(kind, pfn, n, p, &mut f),
        Slot::Folio { kind, order, index } => folio_tail(kind, order, index, pfn, flavour, p, &mut f),
    }
    encode(&f)
}

fn encode(f: &Fields) -> [u8; 64] {
    let mut b = [0u8; 64];
    let mut put = |at: usize, bytes: &[u8]| b[at..at + bytes.len()].copy_from_slice(bytes);
    put(off::FLAGS, &f.flags.to_le_bytes());
    put(off::COMPOUND_HEAD, &f.compound_head.to_le_bytes());
    put(off::MAPPING, &f.mapping.to_le_bytes());
    put(off::PRIVATE, &f.private.to_le_bytes());
    put(off::MAPCOUNT, &f.mapcount.to_le_bytes());
    put(off::REFCOUNT, &f.refcount.to_le_bytes());
    if let Some((dtor, order)) = f.tail_bytes {
        // 6.1 first tail: compound_dtor, compound_order, compound_mapcount
        // (-1), compound_pincount (0), compound_nr; no mapping there.
        put(off::DTOR, &[dtor, order]);
        put(off::TAIL_MAPCOUNT, &u32::MAX.to_le_bytes());
        put(off::TAIL_NR - 4, &0u32.to_le_bytes());
        put(off::TAIL_NR, &(1u32 << order).to_le_bytes());
    }
    b
}
