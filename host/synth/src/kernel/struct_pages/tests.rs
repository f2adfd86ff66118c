//! The generated struct pages: every page reads back, VMCOREINFO carries
//! the flavour's keys, the mix holds every class and kernel pages are
//! never excludable.

use std::collections::HashMap;

use vmdump_format::elf::ElfVmcore;

use super::super::super::tests::verify_all_pages;
use super::super::super::{SynthSpec, expected_class, ram_ranges, summarize, to_vec};
use super::super::flavour::class_from_code;
use super::super::{KernelSpec, kernel_layout};
use super::*;

fn spec(flavour: Flavour, five_level: bool) -> SynthSpec {
    SynthSpec {
        ram_bytes: 300 << 20,
        data_percent: 3,
        seed: 0x51 + u64::from(five_level),
        kernel: Some(KernelSpec {
            five_level,
            kaslr: true,
            struct_pages: Some(flavour),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn cores_read_back_and_export_the_flavours_keys() {
    for (flavour, five_level) in [(Flavour::Linux6_1, false), (Flavour::Linux6_12, true)] {
        let spec = spec(flavour, five_level);
        let image = to_vec(&spec).unwrap();
        let s = summarize(&spec);
        assert_eq!(verify_all_pages(&spec, &image), (s.ram_pages, s.zero_pages));
        let info = ElfVmcore::parse(&image[..]).unwrap().vmcoreinfo().unwrap().unwrap();
        let n = flavour.numbers();
        assert_eq!(info.number("PG_lru"), Some(i64::from(n.lru)));
        assert_eq!(info.number("PG_head_mask"), Some(1 << n.head));
        assert_eq!(info.number("PAGE_BUDDY_MAPCOUNT_VALUE"), Some(i64::from(n.buddy)));
        assert_eq!(info.offset("page.compound_head"), Some(8));
        assert_eq!(info.length("zone.free_area"), Some(11));
        let v61 = flavour == Flavour::Linux6_1;
        assert_eq!(info.number("PG_slab").is_some(), v61);
        assert_eq!(info.offset("page.compound_order").is_some(), v61);
        assert_eq!(info.number("HUGETLB_PAGE_DTOR").is_some(), v61);
        assert_eq!(info.number("PAGE_HUGETLB_MAPCOUNT_VALUE"), (!v61).then_some(-201_326_592));
        assert_eq!(info.number("PAGE_SLAB_MAPCOUNT_VALUE"), (!v61).then_some(-184_549_376));
        assert_eq!(info.number("PAGE_UNACCEPTED_MAPCOUNT_VALUE").is_some(), !v61);
        let keys: Vec<&str> = info.entries().map(|(k, _)| k).collect();
        let mut unique = keys.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), keys.len(), "no key twice");
    }
}

#[test]
fn every_class_appears_and_kernel_pages_and_holes_are_never_excluded() {
    for flavour in [Flavour::Linux6_1, Flavour::Linux6_12] {
        let spec = spec(flavour, false);
        let layout = kernel_layout(&spec).unwrap().unwrap();
        let ram = ram_ranges(&spec);
        let mut counts: HashMap<Option<Class>, u64> = HashMap::new();
        for pfn in 0..layout.present_pfn_end() + 10 {
            let class = expected_class(&spec, pfn);
            *counts.entry(class).or_default() += 1;
            let is_ram = ram.iter().any(|r| r.start <= pfn * 4096 && pfn * 4096 < r.end);
            if !is_ram {
                assert_eq!(class, None, "pfn {pfn:#x} is not RAM");
            }
        }
        for pfn in layout.kernel_pfns() {
            assert_eq!(expected_class(&spec, pfn), None, "kernel pfn {pfn:#x}");
        }
        for class in
            [Class::Cache, Class::CachePrivate, Class::User, Class::Free, Class::Hwpoison, Class::Offline]
        {
            assert!(counts.get(&Some(class)).copied().unwrap_or(0) > 20, "{flavour:?} {class:?}: {counts:?}");
        }
        assert!(counts[&None] > 1000, "{counts:?}");
        let without =
            SynthSpec { kernel: Some(KernelSpec { struct_pages: None, ..spec.kernel.unwrap() }), ..spec };
        assert_eq!(expected_class(&without, 0x5000), None, "no classes without struct pages");
    }
}

#[test]
fn class_codes_round_trip_and_levels_exclude_their_classes() {
    for class in [None, Some(Class::Cache), Some(Class::Free), Some(Class::Offline)] {
        assert_eq!(class_from_code(class_code(class)), class);
    }
    assert!(Class::Cache.excluded_at(2) && Class::Cache.excluded_at(4) && !Class::Cache.excluded_at(8));
    assert!(!Class::CachePrivate.excluded_at(2) && Class::CachePrivate.excluded_at(4));
    assert!(Class::User.excluded_at(8) && Class::Free.excluded_at(16) && !Class::Free.excluded_at(15));
    assert!(Class::Hwpoison.excluded_at(2) && Class::Offline.excluded_at(16));
}
