//! Whole synthetic cores with struct pages (`KernelSpec::struct_pages`):
//! every window classified through the real page-table translation and
//! compared pfn by pfn with `synth::expected_class`.

use vmdump_format::elf::ElfVmcore;
use vmdump_format::phys::PhysMap;
use vmdump_format::vmcoreinfo::VmcoreInfo;
use vmdump_synth::{self as synth, Class, Flavour, KernelSpec, SynthSpec};

use super::super::{ClassCounts, ClassifyError, PageClass, PageClassifier};
use super::edit;
use crate::level::DumpLevel;
use crate::xlat::{KernelMemory, PhysRead, SectionTable, X86_64_PAGE_SIZE as PAGE_SIZE, XlatError};

/// Physical memory of an in-memory ELF vmcore.
struct Image {
    bytes: Vec<u8>,
    map: PhysMap,
}

impl PhysRead for Image {
    fn read_phys(&self, paddr: u64, buf: &mut [u8]) -> Result<(), XlatError> {
        let at = (paddr % PAGE_SIZE) as usize;
        let mut page = vec![0u8; PAGE_SIZE as usize];
        let ram = self.map.read_page(&self.bytes[..], paddr / PAGE_SIZE, &mut page).unwrap();
        if !ram {
            return Err(XlatError::NotInDump { paddr });
        }
        buf.copy_from_slice(&page[at..at + buf.len()]);
        Ok(())
    }
}

fn core(spec: &SynthSpec) -> (Image, VmcoreInfo, Vec<vmdump_format::elf::LoadSegment>) {
    let bytes = synth::to_vec(spec).unwrap();
    let elf = ElfVmcore::parse(&bytes[..]).unwrap();
    let info = elf.vmcoreinfo().unwrap().unwrap();
    let map = PhysMap::new(&elf.loads, PAGE_SIZE).unwrap();
    (Image { bytes, map }, info, elf.loads)
}

fn spec(flavour: Flavour, five_level: bool) -> SynthSpec {
    SynthSpec {
        ram_bytes: 200 << 20,
        data_percent: 2,
        seed: 0xc1a5 + u64::from(five_level),
        kernel: Some(KernelSpec {
            five_level,
            kaslr: true,
            struct_pages: Some(flavour),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn page_class(c: Class) -> PageClass {
    match c {
        Class::Cache => PageClass::Cache,
        Class::CachePrivate => PageClass::CachePrivate,
        Class::User => PageClass::User,
        Class::Free => PageClass::Free,
        Class::Hwpoison => PageClass::Hwpoison,
        Class::Offline => PageClass::Offline,
    }
}

/// Classifies pfns `0..end` in windows of `window` pfns; checks each pfn
/// against `expected_class` and returns the counts.
fn check_level(
    spec: &SynthSpec,
    level: DumpLevel,
    window: u64,
    is_ram: &dyn Fn(u64) -> bool,
) -> (ClassCounts, u64) {
    let (image, info, loads) = core(spec);
    let memory = KernelMemory::open(&image, &info, &loads).unwrap();
    let sections = SectionTable::read(&memory, &info, image.map.max_pfn()).unwrap();
    let mut classifier = PageClassifier::new(&memory, &info, &sections, level).unwrap();
    let end = sections.present_pfn_end().min(image.map.max_pfn());
    let (mut counts, mut want) = (ClassCounts::default(), ClassCounts::default());
    let mut start = 0;
    while start < end {
        let w = start..(start + window).min(end);
        let mut bits = vec![0u64; (w.end - w.start).div_ceil(64) as usize];
        classifier.classify(w.clone(), is_ram, &mut bits, &mut counts).unwrap();
        for pfn in w.clone() {
            let i = pfn - w.start;
            let got = bits[(i / 64) as usize] >> (i % 64) & 1 != 0;
            let class =
                synth::expected_class(spec, pfn).filter(|c| c.excluded_at(level.bits()) && is_ram(pfn));
            assert_eq!(got, class.is_some(), "-d {level}: pfn {pfn:#x} expected {class:?}");
            if let Some(c) = class {
                want.add(page_class(c), 1);
            }
        }
        start = w.end;
    }
    assert_eq!(counts, want, "-d {level}: counts");
    (counts, classifier.invalid_free_orders())
}

#[test]
fn every_pfn_of_synthetic_cores_gets_its_expected_class() {
    for (flavour, five_level) in [
        (Flavour::Linux6_1, false),
        (Flavour::Linux6_1, true),
        (Flavour::Linux6_12, false),
        (Flavour::Linux6_12, true),
    ] {
        let spec = spec(flavour, five_level);
        let (image, ..) = core(&spec);
        let is_ram = |pfn| image.map.is_ram(pfn);
        for level in [2u8, 4, 8, 16, 31].map(|b| DumpLevel::new(b).unwrap()) {
            // Windows not aligned to batches, so exclusions carry over.
            let (counts, invalid) = check_level(&spec, level, 10_000 + u64::from(level.bits()), &is_ram);
            assert!(counts.total() > 500, "{flavour:?} -d {level}: {counts:?}");
            assert!(counts.hwpoison > 0 && counts.offline > 0, "{counts:?}");
            assert_eq!(
                invalid > 0,
                level.contains(DumpLevel::FREE),
                "invalid free orders seen only with bit 16"
            );
        }
        let (whole, _) = check_level(&spec, DumpLevel::ALL, 1 << 40, &is_ram);
        let (small, _) = check_level(&spec, DumpLevel::ALL, 333, &is_ram);
        assert_eq!(whole, small);
        assert!(whole.cache > 0 && whole.cache_private > 0 && whole.user > 0 && whole.free > 0, "{whole:?}");
    }
}

#[test]
fn pfns_the_caller_says_are_not_ram_are_never_marked() {
    let spec = spec(Flavour::Linux6_1, false);
    let (image, ..) = core(&spec);
    // Every 1024th pfn hidden: never a head of a multi-page block.
    let is_ram = |pfn: u64| image.map.is_ram(pfn) && pfn % 1024 != 1023;
    check_level(&spec, DumpLevel::ALL, 4096, &is_ram);
}

#[test]
fn missing_keys_and_caller_errors_are_typed() {
    let spec = spec(Flavour::Linux6_1, false);
    let (image, info, loads) = core(&spec);
    let memory = KernelMemory::open(&image, &info, &loads).unwrap();
    let sections = SectionTable::read(&memory, &info, image.map.max_pfn()).unwrap();
    let lacking = edit(info.text(), &["NUMBER(PG_lru)", "NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)"], "");
    let err = PageClassifier::new(&memory, &lacking, &sections, DumpLevel::ALL).err().unwrap();
    let text = err.to_string();
    let blocked = DumpLevel::CACHE | DumpLevel::CACHE_PRIVATE | DumpLevel::FREE;
    assert!(
        matches!(err, ClassifyError::MissingKeys { level, unusable_bits, .. } if level == DumpLevel::ALL && unusable_bits == blocked),
        "{err:?}"
    );
    assert!(text.contains("NUMBER(PG_lru)") && text.contains("bits 2, 4, 16"), "{text}");
    assert_eq!(PageClassifier::<Image>::supported_bits(&lacking), DumpLevel::USER);
    assert!(PageClassifier::new(&memory, &lacking, &sections, DumpLevel::USER | DumpLevel::ZERO).is_ok());
    let mut c = PageClassifier::new(&memory, &info, &sections, DumpLevel::CACHE).unwrap();
    let (mut counts, is_ram) = (ClassCounts::default(), |_| true);
    let mut bits = vec![0u64; 2];
    let err = c.classify(0..200, &is_ram, &mut bits, &mut counts).unwrap_err();
    assert!(matches!(err, ClassifyError::Bitset { need: 4, got: 2, .. }), "{err}");
    c.classify(1000..1100, &is_ram, &mut bits, &mut counts).unwrap();
    let err = c.classify(1050..1060, &is_ram, &mut bits, &mut counts).unwrap_err();
    assert!(matches!(err, ClassifyError::WindowOrder { previous_end: 1100, .. }), "{err}");
}
