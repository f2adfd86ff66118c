//! [`Rules`]: everything kernel-version dependent about `struct page`,
//! taken from VMCOREINFO (kdump-format.md §4.3, §5.3), and the keys each
//! dump-level bit needs.

use vmdump_format::elf::Endian;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::ClassifyError;
use crate::level::DumpLevel;

/// Where the fields of a `struct page` are (`SIZE(page)`, `OFFSET(page.*)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// `SIZE(page)`.
    pub size: usize,
    /// `OFFSET(page.flags)` (u64).
    pub flags: usize,
    /// `OFFSET(page._refcount)` (u32; `page._count` on old kernels).
    pub refcount: Option<usize>,
    /// `OFFSET(page.mapping)` (u64).
    pub mapping: Option<usize>,
    /// `OFFSET(page._mapcount)` (u32, also the `page_type` word).
    pub mapcount: Option<usize>,
    /// `OFFSET(page.private)` (u64).
    pub private: Option<usize>,
    /// `OFFSET(page.compound_head)`, named `OFFSET(page.compound_info)`
    /// since Linux 7.1 (u64; bit 0 marks a tail page in both).
    pub compound_head: Option<usize>,
}

/// An unsigned field of the first tail page (in the machine's byte order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailField {
    /// Byte offset inside the tail's `struct page`.
    pub offset: usize,
    /// 1, 2 or 8 bytes.
    pub width: usize,
}

/// How a compound head's order and "is hugetlb" are found (§5.3): in
/// every case from the head and the next (first tail) struct page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompoundRule {
    /// Linux ≥ 6.9/6.10 (`NUMBER(PAGE_HUGETLB_MAPCOUNT_VALUE)`): order =
    /// low byte of the tail's flags; hugetlb iff the head's `page_type`
    /// equals the value.
    PageType {
        /// `PAGE_HUGETLB_MAPCOUNT_VALUE` as a 32-bit word.
        hugetlb: u32,
    },
    /// ≈ 6.6–6.9 (`NUMBER(PG_hugetlb)`): order = low byte of the tail's
    /// flags; hugetlb iff the tail's flags have bit `PG_hugetlb`.
    TailFlag {
        /// `PG_hugetlb`.
        bit: u32,
    },
    /// Older kernels: order and destructor are fields of the first tail
    /// (`folio._folio_order`/`_folio_dtor` on 6.3+, else
    /// `page.compound_order`/`compound_dtor`); hugetlb iff the destructor
    /// equals `NUMBER(HUGETLB_PAGE_DTOR)` (or `SYMBOL(free_huge_page)`
    /// when the destructor is a pointer, before 4.4).
    Fields {
        /// The order.
        order: TailField,
        /// The destructor and its hugetlb value, if known.
        dtor: Option<(TailField, u64)>,
    },
    /// No order source: every compound head counts as one page.
    Unknown,
}

/// The kernel-version dependent classification rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// Field offsets.
    pub layout: PageLayout,
    /// The dumped machine's byte order, which its struct pages are in
    /// (little-endian unless [`Rules::in_byte_order`] says otherwise).
    pub endian: Endian,
    /// `NUMBER(PG_lru)`.
    pub pg_lru: Option<u32>,
    /// `NUMBER(PG_private)`.
    pub pg_private: Option<u32>,
    /// `NUMBER(PG_swapcache)`.
    pub pg_swapcache: Option<u32>,
    /// `NUMBER(PG_swapbacked)` (absent before 4.10: swapcache alone counts).
    pub pg_swapbacked: Option<u32>,
    /// `NUMBER(PG_slab)` (gone in 6.10+).
    pub pg_slab: Option<u32>,
    /// `NUMBER(PG_buddy)` (2.6.17–2.6.37 only).
    pub pg_buddy: Option<u32>,
    /// `NUMBER(PG_hwpoison)`.
    pub pg_hwpoison: Option<u32>,
    /// `NUMBER(PG_head_mask)`.
    pub head_mask: Option<u64>,
    /// `PAGE_BUDDY_MAPCOUNT_VALUE` (needs `_mapcount`).
    pub buddy_type: Option<u32>,
    /// `PAGE_OFFLINE_MAPCOUNT_VALUE`.
    pub offline_type: Option<u32>,
    /// `PAGE_SLAB_MAPCOUNT_VALUE` (6.10+).
    pub slab_type: Option<u32>,
    /// `PAGE_UNACCEPTED_MAPCOUNT_VALUE`.
    pub unaccepted_type: Option<u32>,
    /// `LENGTH(zone.free_area)`: number of buddy orders.
    pub free_orders: Option<u64>,
    /// Compound order and hugetlb detection.
    pub compound: CompoundRule,
}

fn bad(key: &'static str, value: impl Into<i128>, reason: &'static str) -> ClassifyError {
    ClassifyError::BadKey { key, value: value.into(), reason }
}

/// `OFFSET(page.NAME)`, checked to hold `width` bytes inside `size`.
fn field(
    info: &VmcoreInfo,
    name: &str,
    key: &'static str,
    size: usize,
    width: usize,
) -> Result<Option<usize>, ClassifyError> {
    match info.offset(name) {
        None => Ok(None),
        Some(off) if off as usize + width <= size => Ok(Some(off as usize)),
        Some(off) => Err(bad(key, off, "the field does not fit in SIZE(page)")),
    }
}

/// A `NUMBER(PG_*)` bit number (0..64).
fn bit(info: &VmcoreInfo, name: &str, key: &'static str) -> Result<Option<u32>, ClassifyError> {
    match info.number(name) {
        None => Ok(None),
        Some(n) if (0..64).contains(&n) => Ok(Some(n as u32)),
        Some(n) => Err(bad(key, n, "not a bit number 0..64")),
    }
}

/// A `*_MAPCOUNT_VALUE`: printed as a signed 32-bit value, compared as the
/// raw `_mapcount` / `page_type` word.
fn word(info: &VmcoreInfo, name: &str, key: &'static str) -> Result<Option<u32>, ClassifyError> {
    match info.number(name) {
        None => Ok(None),
        Some(n) if (i64::from(i32::MIN)..=i64::from(u32::MAX)).contains(&n) => Ok(Some(n as u32)),
        Some(n) => Err(bad(key, n, "not a 32-bit value")),
    }
}

impl PageLayout {
    fn from_vmcoreinfo(info: &VmcoreInfo) -> Result<Option<Self>, ClassifyError> {
        let Some(size) = info.size("page") else { return Ok(None) };
        if !(8..=4096).contains(&size) {
            return Err(bad("SIZE(page)", size, "outside 8..=4096"));
        }
        let size = size as usize;
        let Some(flags) = field(info, "page.flags", "OFFSET(page.flags)", size, 8)? else { return Ok(None) };
        let refcount = match field(info, "page._refcount", "OFFSET(page._refcount)", size, 4)? {
            Some(off) => Some(off),
            None => field(info, "page._count", "OFFSET(page._count)", size, 4)?,
        };
        Ok(Some(PageLayout {
            size,
            flags,
            refcount,
            mapping: field(info, "page.mapping", "OFFSET(page.mapping)", size, 8)?,
            mapcount: field(info, "page._mapcount", "OFFSET(page._mapcount)", size, 4)?,
            private: field(info, "page.private", "OFFSET(page.private)", size, 8)?,
            compound_head: match field(info, "page.compound_head", "OFFSET(page.compound_head)", size, 8)? {
                Some(off) => Some(off),
                None => field(info, "page.compound_info", "OFFSET(page.compound_info)", size, 8)?,
            },
        }))
    }
}

/// An order or destructor field of the first tail, given as an offset in
/// the head (folio) or in the tail page itself.
fn tail_field(
    offset: u64,
    base: u64,
    width: usize,
    key: &'static str,
    size: usize,
) -> Result<TailField, ClassifyError> {
    let off = offset.checked_sub(base).ok_or_else(|| bad(key, offset, "not inside the first tail page"))?;
    if off as usize + width > size {
        return Err(bad(key, offset, "not inside the first tail page"));
    }
    Ok(TailField { offset: off as usize, width })
}

fn compound_rule(info: &VmcoreInfo, l: &PageLayout) -> Result<CompoundRule, ClassifyError> {
    if let Some(hugetlb) = word(info, "PAGE_HUGETLB_MAPCOUNT_VALUE", "NUMBER(PAGE_HUGETLB_MAPCOUNT_VALUE)")?
        && l.mapcount.is_some()
    {
        return Ok(CompoundRule::PageType { hugetlb });
    }
    if let Some(bit) = bit(info, "PG_hugetlb", "NUMBER(PG_hugetlb)")? {
        return Ok(CompoundRule::TailFlag { bit });
    }
    let size = l.size;
    let dtor_value =
        || info.number("HUGETLB_PAGE_DTOR").map(|v| v as u64).or_else(|| info.symbol("free_huge_page"));
    if let Some(order) = info.offset("folio._folio_order") {
        let order = tail_field(order, size as u64, 1, "OFFSET(folio._folio_order)", size)?;
        let dtor = match (info.offset("folio._folio_dtor"), dtor_value()) {
            (Some(d), Some(v)) => {
                Some((tail_field(d, size as u64, 1, "OFFSET(folio._folio_dtor)", size)?, v))
            }
            _ => None,
        };
        return Ok(CompoundRule::Fields { order, dtor });
    }
    let version = info.kernel_version().unwrap_or((u32::MAX, 0));
    let (order, dtor, width, dtor_width) = match (info.offset("page.compound_order"), info.offset("page.lru"))
    {
        // 4.16+: u8 fields; 4.4–4.15: u16 fields.
        (Some(o), _) if version >= (4, 16) => (o, info.offset("page.compound_dtor"), 1, 1),
        (Some(o), _) if version >= (4, 4) => (o, info.offset("page.compound_dtor"), 2, 2),
        // Before 4.4: order in the first tail's lru.prev, destructor
        // (a function pointer) in lru.next.
        (_, Some(lru)) if version < (4, 4) => (lru + 8, Some(lru), 8, 8),
        _ => return Ok(CompoundRule::Unknown),
    };
    let order = tail_field(order, 0, width, "OFFSET(page.compound_order)", size)?;
    let dtor = match (dtor, dtor_value()) {
        (Some(d), Some(v)) => Some((tail_field(d, 0, dtor_width, "OFFSET(page.compound_dtor)", size)?, v)),
        _ => None,
    };
    Ok(CompoundRule::Fields { order, dtor })
}

impl Rules {
    /// Derives the rules; `Ok(None)` if `SIZE(page)` or
    /// `OFFSET(page.flags)` is missing (nothing can be classified).
    ///
    /// # Errors
    ///
    /// [`ClassifyError::BadKey`] for a value out of range.
    pub fn from_vmcoreinfo(info: &VmcoreInfo) -> Result<Option<Self>, ClassifyError> {
        let Some(layout) = PageLayout::from_vmcoreinfo(info)? else { return Ok(None) };
        let type_word = |name, key| if layout.mapcount.is_some() { word(info, name, key) } else { Ok(None) };
        Ok(Some(Rules {
            layout,
            endian: Endian::Little,
            pg_lru: bit(info, "PG_lru", "NUMBER(PG_lru)")?,
            pg_private: bit(info, "PG_private", "NUMBER(PG_private)")?,
            pg_swapcache: bit(info, "PG_swapcache", "NUMBER(PG_swapcache)")?,
            pg_swapbacked: bit(info, "PG_swapbacked", "NUMBER(PG_swapbacked)")?,
            pg_slab: bit(info, "PG_slab", "NUMBER(PG_slab)")?,
            pg_buddy: bit(info, "PG_buddy", "NUMBER(PG_buddy)")?,
            pg_hwpoison: bit(info, "PG_hwpoison", "NUMBER(PG_hwpoison)")?,
            head_mask: info.number("PG_head_mask").filter(|&m| m > 0).map(|m| m as u64),
            buddy_type: type_word("PAGE_BUDDY_MAPCOUNT_VALUE", "NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)")?,
            offline_type: type_word("PAGE_OFFLINE_MAPCOUNT_VALUE", "NUMBER(PAGE_OFFLINE_MAPCOUNT_VALUE)")?,
            slab_type: type_word("PAGE_SLAB_MAPCOUNT_VALUE", "NUMBER(PAGE_SLAB_MAPCOUNT_VALUE)")?,
            unaccepted_type: type_word(
                "PAGE_UNACCEPTED_MAPCOUNT_VALUE",
                "NUMBER(PAGE_UNACCEPTED_MAPCOUNT_VALUE)",
            )?,
            free_orders: info.length("zone.free_area"),
            compound: compound_rule(info, &layout)?,
        }))
    }

    /// The rules for struct pages stored in `endian` order.
    pub fn in_byte_order(self, endian: Endian) -> Self {
        Rules { endian, ..self }
    }

    /// Buddy pages can be told from their struct page (§5.3; without it
    /// makedumpfile walks the free lists, §5.4, which vmdump does not).
    pub fn can_find_buddies(&self) -> bool {
        self.layout.private.is_some()
            && (self.pg_buddy.is_some() || (self.buddy_type.is_some() && self.layout.mapcount.is_some()))
    }

    /// The keys missing for each requested bit, and the bits they block.
    pub fn missing(&self, level: DumpLevel) -> (DumpLevel, Vec<&'static str>) {
        let mut blocked = DumpLevel::NONE;
        let mut keys: Vec<&'static str> = Vec::new();
        let mut need = |bits: DumpLevel, ok: bool, key: &'static str| {
            if !(level & bits).is_empty() && !ok {
                blocked = blocked | (level & bits);
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
        };
        let l = &self.layout;
        let folio = DumpLevel::CACHE | DumpLevel::CACHE_PRIVATE | DumpLevel::USER;
        need(folio, l.mapping.is_some(), "OFFSET(page.mapping)");
        need(
            folio,
            l.compound_head.is_some(),
            "OFFSET(page.compound_head) (OFFSET(page.compound_info) on 7.1+)",
        );
        need(folio, self.head_mask.is_some(), "NUMBER(PG_head_mask)");
        need(
            folio,
            self.compound != CompoundRule::Unknown,
            "OFFSET(page.compound_order) (or OFFSET(folio._folio_order), NUMBER(PG_hugetlb), \
             NUMBER(PAGE_HUGETLB_MAPCOUNT_VALUE))",
        );
        let cache = DumpLevel::CACHE | DumpLevel::CACHE_PRIVATE;
        need(cache, self.pg_lru.is_some(), "NUMBER(PG_lru)");
        need(cache, self.pg_private.is_some(), "NUMBER(PG_private)");
        let hugetlb_known = !matches!(self.compound, CompoundRule::Fields { dtor: None, .. });
        need(DumpLevel::USER, hugetlb_known, "NUMBER(HUGETLB_PAGE_DTOR) and OFFSET(page.compound_dtor)");
        need(DumpLevel::FREE, l.private.is_some(), "OFFSET(page.private)");
        need(
            DumpLevel::FREE,
            self.pg_buddy.is_some() || self.buddy_type.is_some(),
            "NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)",
        );
        need(DumpLevel::FREE, self.pg_buddy.is_some() || l.mapcount.is_some(), "OFFSET(page._mapcount)");
        (blocked, keys)
    }

    /// The bits of {2, 4, 8, 16} these rules can honour.
    pub fn supported_bits(&self) -> DumpLevel {
        DumpLevel::CLASSIFIED.without(self.missing(DumpLevel::CLASSIFIED).0)
    }
}

/// The keys every classification needs, for the error when they are absent.
pub(crate) const BASE_KEYS: [&str; 2] = ["SIZE(page)", "OFFSET(page.flags)"];
