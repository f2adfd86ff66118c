//! Rules per kernel flavour and the decision list, case by case.

use super::super::rules::{CompoundRule, Rules, TailField};
use super::super::{Decision, PageClass, PageInfo, decide, decode};
use super::{V6_1, V6_12, edit, info};
use crate::level::DumpLevel;

fn rules(text: &str) -> Rules {
    Rules::from_vmcoreinfo(&info(text)).unwrap().unwrap()
}

/// A 64-byte struct page with the fields at the offsets of both flavours.
#[derive(Default, Clone, Copy)]
struct Raw {
    flags: u64,
    head: u64,
    mapping: u64,
    mapcount: i32,
    private: u64,
    byte16: u8,
    byte17: u8,
}

impl Raw {
    fn bytes(self) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[0..8].copy_from_slice(&self.flags.to_le_bytes());
        b[8..16].copy_from_slice(&self.head.to_le_bytes());
        b[16] = self.byte16;
        b[17] = self.byte17;
        b[24..32].copy_from_slice(&self.mapping.to_le_bytes());
        b[40..48].copy_from_slice(&self.private.to_le_bytes());
        b[48..52].copy_from_slice(&self.mapcount.to_le_bytes());
        b[52..56].copy_from_slice(&1u32.to_le_bytes());
        b
    }
}

fn page(flags: u64, mapping: u64, mapcount: i32) -> PageInfo {
    PageInfo { flags, mapping, mapcount: mapcount as u32, ..PageInfo::default() }
}

fn excl(class: PageClass, pages: u64) -> Decision {
    Decision::Exclude { class, pages }
}

const ALL: DumpLevel = DumpLevel::ALL;
const ADDRESS_SPACE: u64 = 0xffff_8881_0234_5640;

#[test]
fn rules_of_each_flavour_come_from_vmcoreinfo() {
    let r = rules(V6_1);
    assert_eq!(
        r.compound,
        CompoundRule::Fields {
            order: TailField { offset: 17, width: 1 },
            dtor: Some((TailField { offset: 16, width: 1 }, 2)),
        }
    );
    assert_eq!((r.buddy_type, r.offline_type, r.slab_type), (Some(0xffff_ff7f), Some(0xffff_feff), None));
    assert_eq!(
        (r.pg_lru, r.pg_slab, r.head_mask, r.free_orders),
        (Some(4), Some(9), Some(1 << 16), Some(11))
    );
    assert_eq!(r.supported_bits(), DumpLevel::CLASSIFIED);
    let r = rules(V6_12);
    assert_eq!(r.compound, CompoundRule::PageType { hugetlb: 0xf400_0000 });
    assert_eq!(
        (r.buddy_type, r.slab_type, r.unaccepted_type),
        (Some(0xf000_0000), Some(0xf500_0000), Some(0xf700_0000))
    );
    assert_eq!(r.pg_slab, None);
    assert_eq!(r.supported_bits(), DumpLevel::CLASSIFIED);
    // ≈ 6.6–6.9: PG_hugetlb in the first tail's flags.
    let r = Rules::from_vmcoreinfo(&edit(V6_1, &["OFFSET(page.compound_order)"], "NUMBER(PG_hugetlb)=22\n"));
    assert_eq!(r.unwrap().unwrap().compound, CompoundRule::TailFlag { bit: 22 });
    // 6.3+: folio offsets count from the head.
    let folio = edit(
        V6_1,
        &["OFFSET(page.compound_order)", "OFFSET(page.compound_dtor)"],
        "OFFSET(folio._folio_dtor)=80\nOFFSET(folio._folio_order)=81\n",
    );
    assert_eq!(
        Rules::from_vmcoreinfo(&folio).unwrap().unwrap().compound,
        CompoundRule::Fields {
            order: TailField { offset: 17, width: 1 },
            dtor: Some((TailField { offset: 16, width: 1 }, 2)),
        }
    );
    // 4.4–4.15: u16 fields; before 4.4: lru.prev / lru.next and free_huge_page.
    let v4_8 = edit(V6_1, &["OSRELEASE"], "OSRELEASE=4.8.0-1-amd64\n");
    let r = Rules::from_vmcoreinfo(&v4_8).unwrap().unwrap();
    assert!(matches!(r.compound, CompoundRule::Fields { order: TailField { width: 2, .. }, .. }));
    let v3 = edit(
        V6_1,
        &[
            "OSRELEASE",
            "OFFSET(page.compound_order)",
            "OFFSET(page.compound_dtor)",
            "NUMBER(HUGETLB_PAGE_DTOR)",
        ],
        "OSRELEASE=3.10.0\nSYMBOL(free_huge_page)=ffffffff81234560\n",
    );
    assert_eq!(
        Rules::from_vmcoreinfo(&v3).unwrap().unwrap().compound,
        CompoundRule::Fields {
            order: TailField { offset: 16, width: 8 },
            dtor: Some((TailField { offset: 8, width: 8 }, 0xffff_ffff_8123_4560)),
        }
    );
}

#[test]
fn missing_keys_block_exactly_their_bits() {
    let missing = |drop: &[&str]| Rules::from_vmcoreinfo(&edit(V6_1, drop, "")).unwrap().unwrap();
    assert_eq!(
        missing(&["NUMBER(PG_lru)"]).missing(ALL),
        (DumpLevel::CACHE | DumpLevel::CACHE_PRIVATE, vec!["NUMBER(PG_lru)"])
    );
    let r = missing(&["NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)"]);
    assert_eq!(r.missing(ALL), (DumpLevel::FREE, vec!["NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)"]));
    assert_eq!(r.missing(DumpLevel::CACHE), (DumpLevel::NONE, vec![]), "only requested bits count");
    assert_eq!(r.supported_bits().bits(), 14);
    let r = missing(&["NUMBER(HUGETLB_PAGE_DTOR)"]);
    assert_eq!(r.missing(ALL).0, DumpLevel::USER);
    assert_eq!(missing(&["OFFSET(page.mapping)"]).supported_bits(), DumpLevel::FREE);
    assert_eq!(missing(&["NUMBER(PG_head_mask)", "OFFSET(page.private)"]).supported_bits(), DumpLevel::NONE);
    assert!(Rules::from_vmcoreinfo(&edit(V6_1, &["SIZE(page)"], "")).unwrap().is_none());
    let bad = Rules::from_vmcoreinfo(&edit(V6_1, &["OFFSET(page.private)"], "OFFSET(page.private)=60\n"));
    assert!(bad.unwrap_err().to_string().contains("OFFSET(page.private)=60"));
    let bad = Rules::from_vmcoreinfo(&edit(V6_1, &["NUMBER(PG_lru)"], "NUMBER(PG_lru)=64\n"));
    assert!(bad.is_err());
}

#[test]
fn tails_are_left_to_their_head() {
    let r = rules(V6_1);
    let tail = PageInfo { compound_head: 0xffff_ea00_0000_0001, flags: 1 << 4, ..page(0, 1, 0) };
    assert_eq!(decide(&tail, &r, ALL), Decision::Tail);
}

#[test]
fn free_pages_exclude_their_block_and_invalid_orders_are_kept() {
    for text in [V6_1, V6_12] {
        let r = rules(text);
        let buddy = PageInfo { private: 3, ..page(0, 0, r.buddy_type.unwrap() as i32) };
        assert_eq!(decide(&buddy, &r, DumpLevel::FREE), excl(PageClass::Free, 8));
        assert_eq!(decide(&buddy, &r, DumpLevel::CACHE | DumpLevel::USER), Decision::Keep);
        let top = PageInfo { private: 10, ..buddy };
        assert_eq!(decide(&top, &r, ALL), excl(PageClass::Free, 1024));
        let bad = PageInfo { private: 11, ..buddy };
        assert_eq!(decide(&bad, &r, ALL), Decision::InvalidFreeOrder);
    }
    let r = rules(V6_1);
    let slab_buddy = PageInfo { private: 1, ..page(1 << 9, 0, -129) };
    assert_eq!(decide(&slab_buddy, &r, ALL), Decision::Keep, "a slab page is never buddy");
    let old =
        Rules::from_vmcoreinfo(&edit(V6_1, &["NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)"], "NUMBER(PG_buddy)=19\n"));
    let old = old.unwrap().unwrap();
    assert_eq!(
        decide(&PageInfo { private: 2, ..page(1 << 19, 0, -1) }, &old, DumpLevel::FREE),
        excl(PageClass::Free, 4)
    );
}

#[test]
fn unaccepted_memory_is_free_in_max_order_blocks() {
    let r = rules(V6_12);
    let p = page(0, 0, 0xf700_0000u32 as i32);
    assert_eq!(decide(&p, &r, DumpLevel::FREE), excl(PageClass::Free, 1024));
    assert_eq!(decide(&p, &r, DumpLevel::USER | DumpLevel::CACHE), Decision::Keep);
    assert_eq!(decide(&p, &rules(V6_1), ALL), Decision::Keep, "no unaccepted type in 6.1");
}

#[test]
fn page_cache_private_and_anonymous_pages() {
    for (text, lru, private, swapcache, swapbacked) in [(V6_1, 4, 13, 10, 19), (V6_12, 5, 14, 10, 17)] {
        let r = rules(text);
        let bit = |n: u32| 1u64 << n;
        let cache = page(bit(lru), ADDRESS_SPACE, -1);
        assert_eq!(decide(&cache, &r, DumpLevel::CACHE), excl(PageClass::Cache, 1));
        assert_eq!(decide(&cache, &r, DumpLevel::CACHE_PRIVATE), excl(PageClass::Cache, 1));
        assert_eq!(decide(&cache, &r, DumpLevel::USER | DumpLevel::FREE), Decision::Keep);
        let private_cache = page(bit(lru) | bit(private), ADDRESS_SPACE, -1);
        assert_eq!(decide(&private_cache, &r, DumpLevel::CACHE), Decision::Keep);
        assert_eq!(
            decide(&private_cache, &r, DumpLevel::CACHE | DumpLevel::CACHE_PRIVATE),
            excl(PageClass::CachePrivate, 1)
        );
        let anon = page(bit(lru) | bit(swapbacked), ADDRESS_SPACE | 1, 0);
        assert_eq!(
            decide(&anon, &r, DumpLevel::CACHE | DumpLevel::CACHE_PRIVATE | DumpLevel::FREE),
            Decision::Keep
        );
        assert_eq!(decide(&anon, &r, DumpLevel::USER), excl(PageClass::User, 1));
        let swap_cache = page(bit(swapcache) | bit(swapbacked), ADDRESS_SPACE, -1);
        assert_eq!(
            decide(&swap_cache, &r, DumpLevel::CACHE),
            excl(PageClass::Cache, 1),
            "shmem in the swap cache"
        );
        let checked = page(bit(swapcache), ADDRESS_SPACE, -1);
        assert_eq!(decide(&checked, &r, ALL), Decision::Keep, "PG_owner_priv_1 without PG_swapbacked");
    }
    let pre_4_10 = Rules::from_vmcoreinfo(&edit(V6_1, &["NUMBER(PG_swapbacked)"], "")).unwrap().unwrap();
    assert_eq!(
        decide(&page(1 << 10, ADDRESS_SPACE, -1), &pre_4_10, DumpLevel::CACHE),
        excl(PageClass::Cache, 1)
    );
}

#[test]
fn slab_pages_are_never_anonymous() {
    let r = rules(V6_1);
    assert_eq!(decide(&page(1 << 9, ADDRESS_SPACE | 1, -1), &r, ALL), Decision::Keep);
    let r = rules(V6_12);
    assert_eq!(decide(&page(0, ADDRESS_SPACE | 1, 0xf500_0000u32 as i32), &r, ALL), Decision::Keep);
    assert_eq!(decide(&page(0, ADDRESS_SPACE | 1, -1), &r, DumpLevel::USER), excl(PageClass::User, 1));
}

#[test]
fn compound_heads_take_order_and_hugetlb_from_the_first_tail() {
    let tail = |b16: u8, b17: u8, flags: u64| Raw {
        head: 0xffff_ea00_0000_0001,
        byte16: b16,
        byte17: b17,
        flags,
        ..Raw::default()
    };
    // 6.1: compound_dtor / compound_order bytes.
    let r = rules(V6_1);
    let head = Raw { flags: 1 << 16, mapping: ADDRESS_SPACE, mapcount: -1, ..Raw::default() }.bytes();
    let p = decode(&head, Some(&tail(2, 9, 0).bytes()), 512, &r);
    assert_eq!((p.order, p.hugetlb), (9, true));
    assert_eq!(decide(&p, &r, DumpLevel::USER), excl(PageClass::User, 512));
    assert_eq!(decide(&p, &r, DumpLevel::CACHE | DumpLevel::CACHE_PRIVATE | DumpLevel::FREE), Decision::Keep);
    let thp = Raw { flags: 1 << 16 | 1 << 4 | 1 << 19, mapping: ADDRESS_SPACE | 1, ..Raw::default() }.bytes();
    let p = decode(&thp, Some(&tail(3, 9, 0).bytes()), 1024, &r);
    assert_eq!((p.order, p.hugetlb, decide(&p, &r, ALL)), (9, false, excl(PageClass::User, 512)));
    let file = Raw { flags: 1 << 16 | 1 << 4, mapping: ADDRESS_SPACE, ..Raw::default() }.bytes();
    let p = decode(&file, Some(&tail(1, 2, 0).bytes()), 4, &r);
    assert_eq!(decide(&p, &r, DumpLevel::CACHE), excl(PageClass::Cache, 4));
    // Misaligned, too large, or no next struct page in the batch: order 0.
    assert_eq!(decode(&file, Some(&tail(1, 2, 0).bytes()), 6, &r).order, 0);
    assert_eq!(decode(&file, Some(&tail(1, 64, 0).bytes()), 0, &r).order, 0);
    assert_eq!(decode(&file, None, 0, &r).order, 0);
    assert_eq!(
        decode(&Raw { flags: 1 << 4, ..Raw::default() }.bytes(), Some(&tail(1, 2, 0).bytes()), 0, &r).order,
        0
    );
    // 6.12: order in the tail's flags (low byte), hugetlb by the head's page type.
    let r = rules(V6_12);
    let head =
        Raw { flags: 1 << 6, mapping: ADDRESS_SPACE, mapcount: 0xf400_0000u32 as i32, ..Raw::default() };
    let p = decode(&head.bytes(), Some(&tail(0, 0, 9 | 1 << 10).bytes()), 512, &r);
    assert_eq!((p.order, p.hugetlb, decide(&p, &r, DumpLevel::USER)), (9, true, excl(PageClass::User, 512)));
    // ≈ 6.6–6.9: hugetlb by PG_hugetlb in the tail's flags.
    let r = Rules::from_vmcoreinfo(&edit(V6_1, &["OFFSET(page.compound_order)"], "NUMBER(PG_hugetlb)=22\n"));
    let r = r.unwrap().unwrap();
    let head = Raw { flags: 1 << 16, ..Raw::default() }.bytes();
    let p = decode(&head, Some(&tail(0, 0, 9 | 1 << 22).bytes()), 512, &r);
    assert_eq!((p.order, p.hugetlb), (9, true));
}

#[test]
fn hwpoison_and_offline_pages_at_any_level_after_the_other_rules() {
    let r = rules(V6_1);
    let poisoned = page(1 << 23, 0, -1);
    assert_eq!(decide(&poisoned, &r, DumpLevel::CACHE), excl(PageClass::Hwpoison, 1));
    let poisoned_cache = page(1 << 23 | 1 << 4, ADDRESS_SPACE, -1);
    assert_eq!(decide(&poisoned_cache, &r, DumpLevel::CACHE), excl(PageClass::Cache, 1), "first match wins");
    assert_eq!(decide(&poisoned_cache, &r, DumpLevel::USER), excl(PageClass::Hwpoison, 1));
    assert_eq!(decide(&page(0, 0, -257), &r, DumpLevel::FREE), excl(PageClass::Offline, 1));
    assert_eq!(decide(&page(1 << 9, 0, -257), &r, DumpLevel::FREE), Decision::Keep, "offline slab page");
    let no_numbers = Rules::from_vmcoreinfo(&edit(
        V6_1,
        &["NUMBER(PG_hwpoison)", "NUMBER(PAGE_OFFLINE_MAPCOUNT_VALUE)"],
        "",
    ));
    let no_numbers = no_numbers.unwrap().unwrap();
    assert_eq!(decide(&poisoned, &no_numbers, ALL), Decision::Keep, "missing numbers: predicates false");
    assert_eq!(decide(&page(0, 0, -257), &no_numbers, ALL), Decision::Keep);
}
