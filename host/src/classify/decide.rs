//! The per-page decision of kdump-format.md §5.3: decoding one `struct page`
//! (plus the next one, for a compound head) and the first-match decision
//! list. Pure functions, unit-tested rule by rule.

use super::PageClass;
use super::rules::{CompoundRule, PageLayout, Rules, TailField};
use crate::level::DumpLevel;
use vmdump_format::elf::Endian;

/// The fields of one `struct page` the decision looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageInfo {
    /// `page.flags`.
    pub flags: u64,
    /// `page._refcount` (0 when not exported; not used by the rules).
    pub refcount: u32,
    /// `page.mapping` (bit 0 = PAGE_MAPPING_ANON).
    pub mapping: u64,
    /// `page._mapcount`, also the `page_type` word (-1 when not exported).
    pub mapcount: u32,
    /// `page.private` (the order of a free buddy block).
    pub private: u64,
    /// `page.compound_head` (bit 0 = tail page).
    pub compound_head: u64,
    /// Folio order of a compound head (0 otherwise, or when invalid).
    pub order: u8,
    /// A compound head of a hugetlb folio.
    pub hugetlb: bool,
}

/// What to do with a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Keep the page in the dump.
    Keep,
    /// A compound tail: its head decided for it.
    Tail,
    /// A buddy page whose order (`private`) is not below
    /// `LENGTH(zone.free_area)`: kept (makedumpfile warns).
    InvalidFreeOrder,
    /// Exclude `pages` pages from this pfn on.
    Exclude {
        /// The report category.
        class: PageClass,
        /// How many pages (2^order of the folio or free block).
        pages: u64,
    },
}

fn u64_at(e: Endian, raw: &[u8], offset: Option<usize>, missing: u64) -> u64 {
    offset.map_or(missing, |o| e.u64(raw, o))
}

fn u32_at(e: Endian, raw: &[u8], offset: Option<usize>, missing: u32) -> u32 {
    offset.map_or(missing, |o| e.u32(raw, o))
}

fn tail_value(e: Endian, raw: &[u8], f: TailField) -> u64 {
    e.uint(raw, f.offset, f.width)
}

/// Tests bit `nr` of `flags`; an unknown number makes the predicate false.
fn flag(flags: u64, nr: Option<u32>) -> bool {
    nr.is_some_and(|n| flags & (1u64 << n) != 0)
}

/// Decodes the struct page `raw` of `pfn` (`SIZE(page)` bytes). `next` is
/// the following struct page when it lies in the same 512-page batch
/// (makedumpfile only looks at it then); it gives a compound head's order
/// and hugetlb-ness. An order ≥ 64 or one `pfn` is not aligned to is
/// treated as 0.
pub fn decode(raw: &[u8], next: Option<&[u8]>, pfn: u64, rules: &Rules) -> PageInfo {
    let (l, e): (&PageLayout, Endian) = (&rules.layout, rules.endian);
    let mut page = PageInfo {
        flags: e.u64(raw, l.flags),
        refcount: u32_at(e, raw, l.refcount, 0),
        mapping: u64_at(e, raw, l.mapping, 0),
        mapcount: u32_at(e, raw, l.mapcount, u32::MAX),
        private: u64_at(e, raw, l.private, 0),
        compound_head: u64_at(e, raw, l.compound_head, 0),
        order: 0,
        hugetlb: false,
    };
    let head = rules.head_mask.is_some_and(|m| page.flags & m != 0);
    if let (true, Some(tail)) = (head, next) {
        let (order, hugetlb) = match rules.compound {
            CompoundRule::PageType { hugetlb } => (e.u64(tail, l.flags) & 0xff, page.mapcount == hugetlb),
            CompoundRule::TailFlag { bit } => {
                let tail_flags = e.u64(tail, l.flags);
                (tail_flags & 0xff, flag(tail_flags, Some(bit)))
            }
            CompoundRule::Fields { order, dtor } => {
                (tail_value(e, tail, order), dtor.is_some_and(|(f, v)| tail_value(e, tail, f) == v))
            }
            CompoundRule::Unknown => (0, false),
        };
        page.hugetlb = hugetlb;
        if order < 64 && pfn & ((1u64 << order) - 1) == 0 {
            page.order = order as u8;
        }
    }
    page
}

impl Rules {
    /// `is_slab`: the slab page type (6.10+) or `PG_slab`.
    pub fn is_slab(&self, p: &PageInfo) -> bool {
        self.slab_type == Some(p.mapcount) || flag(p.flags, self.pg_slab)
    }

    /// `is_anon`: PAGE_MAPPING_ANON and not slab.
    pub fn is_anon(&self, p: &PageInfo) -> bool {
        p.mapping & 1 != 0 && !self.is_slab(p)
    }

    /// `is_cache`: on an LRU list, or in the swap cache while swap-backed
    /// (or `PG_swapbacked` unknown, before 4.10).
    pub fn is_cache(&self, flags: u64) -> bool {
        flag(flags, self.pg_lru)
            || (flag(flags, self.pg_swapcache)
                && (self.pg_swapbacked.is_none() || flag(flags, self.pg_swapbacked)))
    }

    /// `is_buddy`: `PG_buddy` on 2.6.17–2.6.37, else the buddy page type
    /// on a non-slab page.
    pub fn is_buddy(&self, p: &PageInfo) -> bool {
        match self.pg_buddy {
            Some(nr) => flag(p.flags, Some(nr)),
            None => self.buddy_type == Some(p.mapcount) && !self.is_slab(p),
        }
    }
}

/// The decision list of §5.3 for dump level `level`, first match wins.
/// HWPoison and offline pages are excluded at any level.
pub fn decide(p: &PageInfo, r: &Rules, level: DumpLevel) -> Decision {
    if p.compound_head & 1 != 0 {
        return Decision::Tail;
    }
    let exclude = |class, pages| Decision::Exclude { class, pages };
    if level.contains(DumpLevel::FREE) && r.is_buddy(p) {
        if p.private >= 64 || r.free_orders.is_some_and(|n| p.private >= n) {
            return Decision::InvalidFreeOrder;
        }
        return exclude(PageClass::Free, 1 << p.private);
    }
    if level.contains(DumpLevel::FREE)
        && r.unaccepted_type == Some(p.mapcount)
        && let Some(orders @ 1..=64) = r.free_orders
    {
        return exclude(PageClass::Free, 1 << (orders - 1));
    }
    let folio = 1u64 << p.order;
    let cache = r.is_cache(p.flags);
    let anon = r.is_anon(p);
    let private = flag(p.flags, r.pg_private);
    if level.contains(DumpLevel::CACHE) && cache && !private && !anon {
        return exclude(PageClass::Cache, folio);
    }
    if level.contains(DumpLevel::CACHE_PRIVATE) && cache && !anon {
        return exclude(if private { PageClass::CachePrivate } else { PageClass::Cache }, folio);
    }
    if level.contains(DumpLevel::USER) && (anon || p.hugetlb) {
        return exclude(PageClass::User, folio);
    }
    if flag(p.flags, r.pg_hwpoison) {
        return exclude(PageClass::Hwpoison, folio);
    }
    if r.offline_type == Some(p.mapcount) && !r.is_slab(p) {
        return exclude(PageClass::Offline, folio);
    }
    Decision::Keep
}
