//! Tests of page classification: the rules derived from VMCOREINFO per
//! kernel flavour and the decision list rule by rule ([`decide`]), then
//! whole synthetic cores page by page ([`synth`]).

mod decide;
mod synth;

use vmdump_format::vmcoreinfo::VmcoreInfo;

/// The `struct page` keys of the fixtures' Debian 6.1 kernel.
pub(super) const V6_1: &str = "OSRELEASE=6.1.0-57-amd64
PAGESIZE=4096
SIZE(page)=64
OFFSET(page.flags)=0
OFFSET(page._refcount)=52
OFFSET(page.mapping)=24
OFFSET(page.lru)=8
OFFSET(page._mapcount)=48
OFFSET(page.private)=40
OFFSET(page.compound_dtor)=16
OFFSET(page.compound_order)=17
OFFSET(page.compound_head)=8
LENGTH(zone.free_area)=11
NUMBER(PG_lru)=4
NUMBER(PG_private)=13
NUMBER(PG_swapcache)=10
NUMBER(PG_swapbacked)=19
NUMBER(PG_slab)=9
NUMBER(PG_hwpoison)=23
NUMBER(PG_head_mask)=65536
NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)=-129
NUMBER(HUGETLB_PAGE_DTOR)=2
NUMBER(PAGE_OFFLINE_MAPCOUNT_VALUE)=-257
";

/// A 6.12-like kernel: page types `PGTY << 24`, no PG_slab, folio order
/// in the first tail's flags.
pub(super) const V6_12: &str = "OSRELEASE=6.12.9-amd64
PAGESIZE=4096
SIZE(page)=64
OFFSET(page.flags)=0
OFFSET(page._refcount)=52
OFFSET(page.mapping)=24
OFFSET(page.lru)=8
OFFSET(page._mapcount)=48
OFFSET(page.private)=40
OFFSET(page.compound_head)=8
LENGTH(zone.free_area)=11
NUMBER(PG_lru)=5
NUMBER(PG_private)=14
NUMBER(PG_swapcache)=10
NUMBER(PG_swapbacked)=17
NUMBER(PAGE_SLAB_MAPCOUNT_VALUE)=-184549376
NUMBER(PG_hwpoison)=21
NUMBER(PG_head_mask)=64
NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)=-268435456
NUMBER(PAGE_HUGETLB_MAPCOUNT_VALUE)=-201326592
NUMBER(PAGE_OFFLINE_MAPCOUNT_VALUE)=-251658240
NUMBER(PAGE_UNACCEPTED_MAPCOUNT_VALUE)=-150994944
";

pub(super) fn info(text: &str) -> VmcoreInfo {
    VmcoreInfo::parse(text.as_bytes()).unwrap()
}

/// `text` without the lines of `keys` and with `extra` appended.
pub(super) fn edit(text: &str, drop: &[&str], extra: &str) -> VmcoreInfo {
    let mut out: String = text
        .lines()
        .filter(|l| !drop.iter().any(|k| l.starts_with(&format!("{k}="))))
        .map(|l| format!("{l}\n"))
        .collect();
    out.push_str(extra);
    info(&out)
}

/// A classifier can move between threads (the dump engine may hand it to one).
#[test]
fn a_classifier_over_a_vmcore_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<super::PageClassifier<'static, crate::input::Vmcore>>();
}
