//! The fuzzing harness of `vmdump-format`: one function per fuzz target,
//! shared by the cargo-fuzz targets in `fuzz/` and the regression test
//! `tests/fuzz_corpus.rs`, which runs them on the minimised corpus
//! `tests/fuzz-corpus/<target>/`.
//!
//! Each function feeds untrusted bytes to a parser, walks everything the
//! parsed value offers (bounded, so that one input costs milliseconds), and
//! asserts invariants a correct parser keeps. Errors are fine; a panic, a
//! hang or an allocation not bounded by the input size is a bug.
//!
//! A test tool, not an API: it changes whenever the parsers do.
//!
//! # Example
//!
//! ```
//! assert!(vmdump_fuzzing::run("vmcoreinfo", b"PAGESIZE=4096\n"));
//! assert!(!vmdump_fuzzing::run("no-such-target", b""));
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::io::{self, Cursor, Seek, SeekFrom, Write};

use vmdump_format::btf::{Btf, Kind};
use vmdump_format::elf::{ElfVmcore, Endian, NOTE_NAME_CORE, NT_PRSTATUS, Notes};
use vmdump_format::flat::{self, FlatWriter};
use vmdump_format::kdump::{
    DISK_DUMP_HEADER_SIZE, DiskDumpHeader, KdumpReader, Layout, PAGE_DESC_SIZE, PageDesc, SUB_HEADER_SIZE,
    StoredPage, SubHeader, Utsname,
};
use vmdump_format::machine::Machine;
use vmdump_format::phys::{PhysMap, check_page_size};
use vmdump_format::vmcoreinfo::VmcoreInfo;

/// The fuzz targets, in the order `scripts/fuzz.sh` runs them.
pub const TARGETS: &[&str] = &["elf", "kdump", "flat", "vmcoreinfo", "btf"];

/// Runs target `name` on `data`; `false` for an unknown name.
pub fn run(name: &str, data: &[u8]) -> bool {
    match name {
        "elf" => elf(data),
        "kdump" => kdump(data),
        "flat" => flat(data),
        "vmcoreinfo" => vmcoreinfo(data),
        "btf" => btf(data),
        _ => return false,
    }
    true
}

/// Most pages one input may have read through a [`PhysMap`] (bytes).
const ELF_READ_BUDGET: u64 = 4 << 20;
/// Most runs of a [`PhysMap`] whose edges are probed.
const ELF_PROBED_RUNS: usize = 32;

/// `elf`: [`ElfVmcore::parse`], its notes and VMCOREINFO, the
/// [`PhysMap`] of its PT_LOADs, pages read through it, the kdump
/// [`Layout`] the dump writer would compute.
pub fn elf(data: &[u8]) {
    let Ok(core) = ElfVmcore::parse(data) else { return };
    assert!(!core.loads.is_empty(), "parse accepted a vmcore without PT_LOAD");
    let size = data.len() as u64;
    for l in &core.loads {
        assert!(l.file_offset.checked_add(l.file_size).is_some_and(|e| e <= size), "{l:?}");
        assert!(l.file_size <= l.mem_size, "{l:?}");
    }

    // The payload alone (as the kdump notes copy holds it). It may not
    // re-parse: zero padding ends a note segment only when segments are
    // apart, so several PT_NOTEs with padding are not one valid blob.
    if let Ok(again) = Notes::from_bytes(core.notes.bytes.clone(), core.notes.endian) {
        let _ = (again.iter().count(), again.vmcoreinfo_bytes());
    }
    let mut cpus = 0;
    for note in core.notes.iter() {
        let note = note.expect("notes were validated");
        cpus += usize::from(note.name == NOTE_NAME_CORE && note.note_type == NT_PRSTATUS);
    }
    assert_eq!(cpus, core.notes.nr_cpus as usize);

    let info = core.vmcoreinfo();
    if let Some(text) = core.notes.vmcoreinfo_bytes() {
        assert_eq!(info.is_ok(), VmcoreInfo::parse(text).is_ok());
    } else {
        assert!(matches!(info, Ok(None)));
    }
    let page_size = match info {
        Ok(Some(ref info)) => {
            vmcoreinfo_accessors(info);
            info.page_size().filter(|&ps| check_page_size(ps).is_ok())
        }
        _ => None,
    };
    let mut budget = ELF_READ_BUDGET;
    let mut sizes = vec![4096];
    sizes.extend(page_size.filter(|&ps| ps != 4096));
    for ps in sizes {
        let Ok(map) = PhysMap::new(&core.loads, ps) else { continue };
        phys_map(data, &map, &mut budget);
        let limit = map.max_pfn() / 2;
        let cut = map.truncated(limit);
        assert_eq!(cut.ram_pages(), map.count_in(0..limit));
        assert!(cut.max_pfn() <= limit);
        if let Ok(layout) = Layout::from_notes(map.max_pfn(), ps as u32, &core.notes, map.ram_pages()) {
            let h = layout.disk_dump_header(0, core.notes.nr_cpus, core.notes.endian);
            assert_eq!(DiskDumpHeader::decode(&h.encode()).expect("own header decodes"), h);
            let s = layout.sub_header(0, 31);
            assert_eq!(SubHeader::decode(&s.encode(h.endian), h.endian).expect("own sub header decodes"), s);
        }
    }
}

fn phys_map(data: &[u8], map: &PhysMap, budget: &mut u64) {
    let ps = map.page_size();
    let runs = map.runs();
    let mut total = 0;
    for w in runs.windows(2) {
        assert!(w[0].end_pfn <= w[1].start_pfn, "runs overlap or are unsorted: {w:?}");
    }
    for r in runs {
        assert!(r.start_pfn < r.end_pfn, "empty run {r:?}");
        total += r.end_pfn - r.start_pfn;
    }
    assert_eq!(map.ram_pages(), total);
    assert_eq!(map.count_in(0..u64::MAX), total);
    assert_eq!(map.max_pfn(), runs.last().map_or(0, |r| r.end_pfn));

    let mut pfns = vec![0, 1, map.max_pfn().saturating_sub(1), map.max_pfn(), u64::MAX];
    for r in runs.iter().take(ELF_PROBED_RUNS) {
        pfns.extend([r.start_pfn, r.start_pfn + 1, r.end_pfn - 1, r.end_pfn]);
    }
    let mut buf = Vec::new();
    for pfn in pfns {
        let run = map.run_of(pfn);
        assert_eq!(map.is_ram(pfn), run.is_some());
        let loc = map.locate(pfn);
        assert_eq!(loc.is_some(), run.is_some());
        if let Some(loc) = loc {
            assert_eq!(u64::from(loc.page_size), ps);
            assert!(u64::from(loc.lead_zero) + u64::from(loc.file_bytes) <= ps, "{loc:?}");
            let _ = loc.tail_zero();
            if loc.file_bytes > 0 {
                let end = loc.file_offset.checked_add(u64::from(loc.file_bytes));
                assert!(
                    end.is_some_and(|e| e <= data.len() as u64),
                    "page {pfn:#x} beyond the file: {loc:?}"
                );
            }
        }
        if *budget < ps {
            continue;
        }
        *budget -= ps;
        buf.resize(ps as usize, 0xa5);
        let ram = map.read_page(data, pfn, &mut buf).expect("a page of a validated vmcore reads");
        assert_eq!(ram, run.is_some());
        if let Some(loc) = loc {
            let (lead, n) = (loc.lead_zero as usize, loc.file_bytes as usize);
            assert!(buf[..lead].iter().chain(&buf[lead + n..]).all(|&b| b == 0));
            if n > 0 {
                let at = loc.file_offset as usize;
                assert_eq!(&buf[lead..lead + n], &data[at..at + n]);
            }
        } else {
            assert!(buf.iter().all(|&b| b == 0));
        }
    }
    let mut short = [0u8; 16];
    assert!(map.read_page(data, 0, &mut short).is_err(), "a 16-byte buffer is never a page");
}

/// Most descriptors walked by [`kdump`].
const KDUMP_WALKED: usize = 4096;
/// Most pages read (with their data) by [`kdump`].
const KDUMP_PAGES: usize = 64;

/// `kdump`: the structure decoders, [`KdumpReader::open`], its accessors,
/// the dumpable pfns (bounded), pages and both bitmap cursors.
pub fn kdump(data: &[u8]) {
    structures(data);
    let Ok(r) = KdumpReader::open(data) else { return };
    let size = data.len() as u64;
    assert_eq!(r.file_size(), size);
    let g = *r.geometry();
    assert!(g.bitmap1_offset <= g.bitmap2_offset && g.bitmap2_offset <= g.page_desc_offset);
    assert!(g.page_desc_offset <= size, "{g:?}");
    assert!(g.max_mapnr.div_ceil(8) <= g.bitmap_len, "{g:?}");
    assert!(r.data_offset() <= size || r.is_incomplete());
    let _ = (r.header(), r.sub_header(), r.notes().len(), r.source().len(), r.block_size());
    let _ = (r.dump_level(), r.compression(), r.zero_page_offset());
    if let Some(info) = r.vmcoreinfo() {
        vmcoreinfo_accessors(info);
    }
    let max = r.max_mapnr();
    let mut walked = Vec::new();
    for (n, item) in r.dumpable_pfns().take(KDUMP_WALKED).enumerate() {
        let Ok((pfn, index)) = item else { break };
        assert_eq!(index, n as u64, "ranks are consecutive");
        assert!(pfn < max, "dumpable pfn {pfn:#x} at or beyond max_mapnr {max:#x}");
        assert!(walked.last().is_none_or(|&(p, _)| p < pfn));
        walked.push((pfn, index));
    }
    let mut ram = r.ram_cursor();
    let mut dumpable = r.dumpable_cursor();
    for &(pfn, index) in walked.iter().take(KDUMP_PAGES) {
        assert_eq!(dumpable.bit(pfn).ok(), Some(true));
        assert_eq!(r.is_dumpable(pfn).ok(), Some(true));
        assert_eq!(ram.bit(pfn).ok(), r.is_ram(pfn).ok());
        let at = r.page_at(pfn, index);
        let by_pfn = r.page(pfn);
        match (&at, &by_pfn) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(_), Err(_)) => {}
            _ => panic!("page_at({pfn:#x}, {index}) = {at:?} but page({pfn:#x}) = {by_pfn:?}"),
        }
        match at {
            Ok(StoredPage::Stored { desc, bytes }) => {
                assert_eq!(bytes.len(), desc.size as usize);
                assert!(u64::from(desc.size) <= r.block_size());
                assert!(desc.offset >= r.data_offset() && desc.offset + u64::from(desc.size) <= size);
            }
            Ok(StoredPage::Lost) => assert!(r.is_incomplete()),
            Ok(StoredPage::OtherPiece) => assert!(r.piece().is_some_and(|p| !p.contains(&pfn))),
            Ok(other) => panic!("dumpable pfn {pfn:#x} read as {other:?}"),
            Err(_) => {}
        }
    }
    let probes = [0, 1, 7, 8, 4095, 4096, max.saturating_sub(1), max, max.saturating_add(1), u64::MAX];
    for pfn in probes {
        let page = r.page(pfn);
        if pfn >= max {
            assert!(matches!(page, Ok(StoredPage::Hole)), "pfn {pfn:#x} beyond max_mapnr: {page:?}");
            assert_eq!(ram.bit(pfn).ok(), Some(false));
            assert_eq!(dumpable.bit(pfn).ok(), Some(false));
        } else {
            let _ = (ram.bit(pfn), dumpable.bit(pfn));
        }
        let _ = r.descriptor(pfn, pfn);
    }
    let _ = r.descriptor(0, r.num_dumpable());
}

/// The fixed-layout decoders of the kdump module, fed from where a dump
/// has them, and the [`Layout`] computed from the decoded fields.
fn structures(data: &[u8]) {
    let Ok(h) = DiskDumpHeader::decode(data) else { return };
    assert_eq!(DiskDumpHeader::decode(&h.encode()).expect("re-encoded header decodes"), h);
    let _ = (h.utsname.get(Utsname::RELEASE), h.utsname.get(Utsname::MACHINE));
    let bs = h.block_size as u32;
    let e = h.endian;
    let Some(sub) = data.get(bs as usize..).and_then(|b| SubHeader::decode(b, e).ok()) else { return };
    assert_eq!(SubHeader::decode(&sub.encode(e), e).expect("re-encoded sub header decodes"), sub);
    if let Some(d) = data.get(DISK_DUMP_HEADER_SIZE..).and_then(|b| PageDesc::decode(b, e).ok()) {
        assert_eq!(PageDesc::decode(&d.encode(e), e).expect("re-encoded page_desc decodes"), d);
    }
    let info =
        sub.offset_vmcoreinfo.checked_sub(sub.offset_note).map(|s| s..s.saturating_add(sub.size_vmcoreinfo));
    let num_dumpable = data.len().saturating_sub(bs as usize + SUB_HEADER_SIZE) / PAGE_DESC_SIZE;
    let _ = Layout::new(sub.max_mapnr_64, bs, sub.size_note, info, num_dumpable as u64);
}

/// Offsets beyond this are refused by the in-memory output of [`flat()`].
pub const FLAT_OUTPUT_LIMIT: u64 = 64 << 20;

/// A seekable in-memory file that refuses to grow beyond
/// [`FLAT_OUTPUT_LIMIT`], so a hostile record offset cannot make the
/// harness allocate without bound.
#[derive(Debug, Default)]
pub struct BoundedOutput {
    inner: Cursor<Vec<u8>>,
}

impl BoundedOutput {
    /// The bytes written.
    pub fn into_inner(self) -> Vec<u8> {
        self.inner.into_inner()
    }
}

fn too_far(at: u64) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("offset {at:#x} beyond the fuzzing limit"))
}

impl Write for BoundedOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let end = self.inner.position().saturating_add(buf.len() as u64);
        if end > FLAT_OUTPUT_LIMIT {
            return Err(too_far(end));
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for BoundedOutput {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let at = self.inner.seek(pos)?;
        if at > FLAT_OUTPUT_LIMIT {
            return Err(too_far(at));
        }
        Ok(at)
    }
}

/// `flat`: [`flat::rearrange`] into a [`BoundedOutput`]; a rearranged
/// file of at most 4 MiB is flattened again with [`FlatWriter`] (records
/// in reverse order) and must rearrange to the same bytes.
pub fn flat(data: &[u8]) {
    let mut out = BoundedOutput::default();
    let Ok(stats) = flat::rearrange(&mut &data[..], &mut out) else { return };
    let file = out.into_inner();
    assert_eq!(stats.end, file.len() as u64);
    assert!(stats.bytes <= data.len() as u64 && stats.records <= stats.bytes);
    assert!(stats.records > 0 || stats.end == 0);
    if file.len() > 4 << 20 {
        return;
    }
    let mut w = FlatWriter::new(Vec::new()).expect("writes to a Vec");
    for (i, chunk) in file.chunks(1000).enumerate().rev() {
        w.write_at(i as u64 * 1000, chunk).expect("writes to a Vec");
    }
    let stream = w.finish().expect("writes to a Vec");
    let mut again = BoundedOutput::default();
    let stats2 = flat::rearrange(&mut &stream[..], &mut again).expect("own stream rearranges");
    assert_eq!((stats2.end, stats2.bytes), (stats.end, stats.end));
    assert_eq!(again.into_inner(), file);
}

/// `vmcoreinfo`: [`VmcoreInfo::parse`] and every accessor.
pub fn vmcoreinfo(data: &[u8]) {
    let Ok(info) = VmcoreInfo::parse(data) else { return };
    vmcoreinfo_accessors(&info);
}

fn vmcoreinfo_accessors(info: &VmcoreInfo) {
    assert!(!info.text().ends_with('\0'));
    let mut first: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for (key, value) in info.entries() {
        assert!(!key.is_empty());
        first.entry(key).or_insert(value);
        assert_eq!(info.get(key), Some(first[key]), "first occurrence of {key:?} wins");
        let wrapped = ["SYMBOL", "SIZE", "OFFSET", "LENGTH", "NUMBER"]
            .into_iter()
            .find_map(|f| Some((f, key.strip_prefix(f)?.strip_prefix('(')?.strip_suffix(')')?)));
        if let Some((family, name)) = wrapped {
            let value = match family {
                "SYMBOL" => info.symbol(name).map(|v| v as i128),
                "SIZE" => info.size(name).map(i128::from),
                "OFFSET" => info.offset(name).map(i128::from),
                "LENGTH" => info.length(name).map(i128::from),
                _ => info.number(name).map(i128::from),
            };
            assert!(value.is_none() || info.get(key).is_some());
        }
    }
    let _ = (info.page_size(), info.osrelease(), info.crashtime(), info.kerneloffset(), info.phys_base());
    let _ = (info.symbol("mem_section"), info.size("page"), info.offset("page.flags"));
    let _ = (info.length("mem_section"), info.number("PG_slab"));
    let mut h =
        Layout::new(1, 4096, 0, None, 0).expect("a trivial layout").disk_dump_header(0, 1, Endian::Little);
    h.fill_from_vmcoreinfo(info, Machine::from_vmcoreinfo(info));
    let release = info.osrelease().unwrap_or("").as_bytes();
    let got = h.utsname.get(Utsname::RELEASE);
    assert!(release.starts_with(got), "utsname release {got:?} is not a prefix of {release:?}");
}

/// Most types of one [`Btf`] walked.
const BTF_WALKED_TYPES: u32 = 4096;
/// Most enumerator lookups of one input.
const BTF_ENUMERATOR_LOOKUPS: u32 = 64;

/// `btf`: [`Btf::parse`], then every type (up to [`BTF_WALKED_TYPES`]):
/// its name, size, C name, members found again by name, and the
/// enumerators; the same bytes split on themselves.
pub fn btf(data: &[u8]) {
    let Ok(btf) = Btf::parse(data.to_vec()) else { return };
    assert_eq!(btf.bytes(), data);
    let walked = (btf.len() as u32).min(BTF_WALKED_TYPES);
    for id in 0..=walked + 1 {
        // A record whose name is not UTF-8 reads as none (parse checks
        // only that each name is inside the strings).
        let Some(t) = btf.get(id) else { continue };
        assert_eq!(t.id, id);
        let _ = (btf.size_of(id), btf.type_name(id), btf.resolve(id), t.referred());
        if !t.name.is_empty() {
            assert!(btf.named(t.name).any(|n| n.id == id), "{} not found by name", t.name);
        }
        if matches!(t.kind, Kind::Struct | Kind::Union) {
            for (name, _) in btf.members(t).take(64) {
                // A path splits at dots: a name with one is not a path.
                if !name.is_empty() && !name.contains('.') {
                    assert!(
                        btf.member(t, name).is_some(),
                        "member {name:?} of {:?} not found by name",
                        t.name
                    );
                }
            }
            let _ = btf.aggregate(t.name);
        }
        if id <= BTF_ENUMERATOR_LOOKUPS {
            let _ = btf.enumerator(t.name); // each is a walk of every type
        }
    }
    let base = std::sync::Arc::new(btf);
    if let Ok(split) = Btf::parse_split(data.to_vec(), base.clone()) {
        let first = base.len() as u32 + 1;
        for id in first..first + (split.len() as u32).min(64) {
            let _ = (split.get(id).map(|t| t.name), split.type_name(id), split.size_of(id));
        }
    }
}
