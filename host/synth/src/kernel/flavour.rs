//! Kernel flavours of synthetic `struct page`s: the numbers a kernel of
//! that generation exports in VMCOREINFO (kdump-format.md §4.3, §5.3) and
//! the page classes a dump tool should find.

/// Which kernel generation the struct pages imitate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flavour {
    /// Linux 6.1 (the fixtures' Debian kernel): `PG_slab`, page types as
    /// cleared bits (`PAGE_BUDDY_MAPCOUNT_VALUE` = −129), compound order
    /// and destructor as bytes of the first tail (`OFFSET(page.compound_order)`,
    /// `NUMBER(HUGETLB_PAGE_DTOR)`).
    Linux6_1,
    /// Linux 6.12-like: page types `PGTY_x << 24` (buddy, offline, hugetlb,
    /// slab, unaccepted), no `PG_slab`, the folio order in the low byte of
    /// the first tail's flags. Flag numbers are plausible, not copied from
    /// a particular build: a classifier must take them from VMCOREINFO.
    Linux6_12,
}

/// What a dump tool should report a page as (kdump-format.md §7.4), if it
/// excludes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Page cache without PG_private ("Non-private cache pages").
    Cache,
    /// Page cache with PG_private ("Private cache pages").
    CachePrivate,
    /// Anonymous or hugetlbfs pages ("User process data pages").
    User,
    /// Free buddy pages, unaccepted memory ("Free pages").
    Free,
    /// PG_hwpoison pages.
    Hwpoison,
    /// Logically offline pages.
    Offline,
}

impl Class {
    /// Whether dump level `level` excludes pages of this class (HWPoison
    /// and offline pages are excluded whenever pages are classified).
    pub fn excluded_at(self, level: u8) -> bool {
        match self {
            Class::Cache => level & (2 | 4) != 0,
            Class::CachePrivate => level & 4 != 0,
            Class::User => level & 8 != 0,
            Class::Free => level & 16 != 0,
            Class::Hwpoison | Class::Offline => true,
        }
    }
}

/// Encodes `Option<Class>` in a byte (0 = none).
pub(crate) fn class_code(class: Option<Class>) -> u8 {
    match class {
        None => 0,
        Some(Class::Cache) => 1,
        Some(Class::CachePrivate) => 2,
        Some(Class::User) => 3,
        Some(Class::Free) => 4,
        Some(Class::Hwpoison) => 5,
        Some(Class::Offline) => 6,
    }
}

/// Decodes [`class_code`].
pub(crate) fn class_from_code(code: u8) -> Option<Class> {
    [Class::Cache, Class::CachePrivate, Class::User, Class::Free, Class::Hwpoison, Class::Offline]
        .get(usize::from(code).checked_sub(1)?)
        .copied()
}

/// Offsets in the 64-byte `struct page` (the same in both flavours).
pub(crate) mod off {
    pub const FLAGS: usize = 0;
    /// `lru.next` of a head; `compound_head` (| 1) of a tail.
    pub const COMPOUND_HEAD: usize = 8;
    /// 6.1 first tail: `compound_dtor` (u8), `compound_order` (u8),
    /// `compound_mapcount` (u32), `compound_pincount` (u32), `compound_nr` (u32).
    pub const DTOR: usize = 16;
    pub const ORDER: usize = 17;
    pub const TAIL_MAPCOUNT: usize = 20;
    pub const TAIL_NR: usize = 28;
    pub const MAPPING: usize = 24;
    pub const PRIVATE: usize = 40;
    pub const MAPCOUNT: usize = 48;
    pub const REFCOUNT: usize = 52;
}

/// The numbers of a flavour.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Numbers {
    pub lru: u32,
    pub head: u32,
    pub private: u32,
    pub swapcache: u32,
    pub swapbacked: u32,
    pub uptodate: u32,
    pub reserved: u32,
    /// `PG_slab` (6.1) or none (a page type in 6.12).
    pub slab: Option<u32>,
    pub hwpoison: u32,
    pub buddy: i32,
    pub offline: i32,
    /// 6.12: page types for hugetlb, slab, unaccepted.
    pub hugetlb_type: Option<i32>,
    pub slab_type: Option<i32>,
    pub unaccepted_type: Option<i32>,
    /// `LENGTH(zone.free_area)`.
    pub free_orders: u32,
}

/// `HUGETLB_PAGE_DTOR` / `COMPOUND_PAGE_DTOR` / `TRANSHUGE_PAGE_DTOR` of 6.1.
pub(crate) const HUGETLB_DTOR: u8 = 2;
pub(crate) const COMPOUND_DTOR: u8 = 1;
pub(crate) const THP_DTOR: u8 = 3;
/// 6.1 `TAIL_MAPPING` (0x400 + POISON_POINTER_DELTA).
pub(crate) const TAIL_MAPPING: u64 = 0xdead_0000_0000_0400;

const fn pgty(t: u32) -> i32 {
    (t << 24) as i32
}

impl Flavour {
    pub(crate) fn numbers(self) -> Numbers {
        match self {
            Flavour::Linux6_1 => Numbers {
                lru: 4,
                head: 16,
                private: 13,
                swapcache: 10,
                swapbacked: 19,
                uptodate: 2,
                reserved: 11,
                slab: Some(9),
                hwpoison: 23,
                buddy: -129,
                offline: -257,
                hugetlb_type: None,
                slab_type: None,
                unaccepted_type: None,
                free_orders: 11,
            },
            Flavour::Linux6_12 => Numbers {
                lru: 5,
                head: 6,
                private: 14,
                swapcache: 10,
                swapbacked: 17,
                uptodate: 3,
                reserved: 13,
                slab: None,
                hwpoison: 21,
                buddy: pgty(0xf0),
                offline: pgty(0xf1),
                hugetlb_type: Some(pgty(0xf4)),
                slab_type: Some(pgty(0xf5)),
                unaccepted_type: Some(pgty(0xf7)),
                free_orders: 11,
            },
        }
    }

    /// Whether a VMCOREINFO key is one this module writes (and so replaces).
    pub(crate) fn manages(key: &str) -> bool {
        key.starts_with("NUMBER(PG_")
            || key.starts_with("NUMBER(PAGE_")
            || key.starts_with("OFFSET(page.")
            || key == "NUMBER(HUGETLB_PAGE_DTOR)"
            || key == "LENGTH(zone.free_area)"
    }

    /// The `struct page` keys of this flavour, in the order a kernel prints them.
    pub(crate) fn vmcoreinfo_lines(self) -> Vec<String> {
        let n = self.numbers();
        let mut v: Vec<String> = vec![
            format!("OFFSET(page.flags)={}", off::FLAGS),
            format!("OFFSET(page._refcount)={}", off::REFCOUNT),
            format!("OFFSET(page.mapping)={}", off::MAPPING),
            format!("OFFSET(page.lru)={}", off::COMPOUND_HEAD),
            format!("OFFSET(page._mapcount)={}", off::MAPCOUNT),
            format!("OFFSET(page.private)={}", off::PRIVATE),
        ];
        if self == Flavour::Linux6_1 {
            v.push(format!("OFFSET(page.compound_dtor)={}", off::DTOR));
            v.push(format!("OFFSET(page.compound_order)={}", off::ORDER));
        }
        v.push(format!("OFFSET(page.compound_head)={}", off::COMPOUND_HEAD));
        v.push(format!("LENGTH(zone.free_area)={}", n.free_orders));
        for (name, nr) in [("lru", n.lru), ("private", n.private), ("swapcache", n.swapcache)] {
            v.push(format!("NUMBER(PG_{name})={nr}"));
        }
        v.push(format!("NUMBER(PG_swapbacked)={}", n.swapbacked));
        if let Some(slab) = n.slab {
            v.push(format!("NUMBER(PG_slab)={slab}"));
        }
        if let Some(slab) = n.slab_type {
            v.push(format!("NUMBER(PAGE_SLAB_MAPCOUNT_VALUE)={slab}"));
        }
        v.push(format!("NUMBER(PG_hwpoison)={}", n.hwpoison));
        v.push(format!("NUMBER(PG_head_mask)={}", 1u64 << n.head));
        v.push(format!("NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)={}", n.buddy));
        match n.hugetlb_type {
            Some(t) => v.push(format!("NUMBER(PAGE_HUGETLB_MAPCOUNT_VALUE)={t}")),
            None => v.push(format!("NUMBER(HUGETLB_PAGE_DTOR)={HUGETLB_DTOR}")),
        }
        v.push(format!("NUMBER(PAGE_OFFLINE_MAPCOUNT_VALUE)={}", n.offline));
        if let Some(t) = n.unaccepted_type {
            v.push(format!("NUMBER(PAGE_UNACCEPTED_MAPCOUNT_VALUE)={t}"));
        }
        v
    }
}

/// Replaces the `struct page` keys of a VMCOREINFO text by `flavour`'s,
/// where the first of them was.
pub(crate) fn patch_vmcoreinfo(text: &str, flavour: Flavour) -> String {
    let mut out = String::with_capacity(text.len() + 512);
    let mut inserted = false;
    for line in text.lines() {
        let key = line.split_once('=').map_or(line, |(k, _)| k);
        if Flavour::manages(key) {
            if !inserted {
                for l in flavour.vmcoreinfo_lines() {
                    out.push_str(&l);
                    out.push('\n');
                }
                inserted = true;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
