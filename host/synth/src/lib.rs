//! Synthetic vmcore generator for tests, benchmarks and `vmdump synth`.
//!
//! [`write()`] produces an ELF64 little-endian x86_64 `ET_CORE` shaped like
//! the real fixtures (fixtures/README.md): per-CPU `NT_PRSTATUS` notes, a
//! VMCOREINFO note, RAM PT_LOADs with holes, optionally a kernel-text
//! PT_LOAD overlapping RAM (first program header, like `/proc/vmcore`),
//! program headers not at offset 64, and a last segment ending mid-page.
//!
//! The file is *sparse*: its length is set first and only non-zero pages are
//! written, gathered into large chunks. Page content is the pure function
//! [`page()`] of (seed, pfn), so readers can check any page without the file.
//!
//! With [`SynthSpec::kernel`] the RAM also holds real x86_64 page tables,
//! a kernel image and SPARSEMEM_EXTREME `mem_section` (module [`kernel`]);
//! those pages are part of [`page()`]'s answer too.
//!
//! The file formats themselves (reading what this crate writes) are the
//! crate `vmdump-format`.
//!
//! # Example
//!
//! ```
//! use vmdump_format::{elf::ElfVmcore, phys::PhysMap};
//! use vmdump_synth as synth;
//!
//! let spec = synth::SynthSpec { ram_bytes: 4 << 20, ..Default::default() };
//! let image = synth::to_vec(&spec).unwrap();
//! let core = ElfVmcore::parse(&image).unwrap();
//! let map = PhysMap::new(&core.loads, 4096).unwrap();
//! assert_eq!(map.ram_pages(), synth::summarize(&spec).ram_pages);
//! let info = core.vmcoreinfo().unwrap().unwrap();
//! assert_eq!(info.page_size(), Some(4096));
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod image;
pub mod kernel;
mod page;
pub mod pagetable;

pub use image::{PRSTATUS_DESC_SIZE, crashtime, vmcoreinfo_text};
pub use kernel::{Class, Flavour, KernelLayout, KernelSpec, kernel_layout};
pub use page::{PAGE_SIZE, PageKind, page, page_kind};

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

use vmdump_format::elf::write::{elf_header, note_program_header, program_header};
use vmdump_format::elf::{ELF64_EHDR_SIZE, ELF64_PHDR_SIZE, EM_X86_64, Endian, LoadSegment, PT_LOAD};

/// Legacy hole of x86 PCs: 640 KiB to 1 MiB is not RAM.
const LEGACY_HOLE: Range<u64> = 0xA_0000..0x10_0000;
/// The second hole (like a PCI window or a crashkernel reservation).
const SECOND_HOLE_BYTES: u64 = 16 << 20;
/// Virtual address of the kernel-text PT_LOAD.
pub const KERNEL_TEXT_VADDR: u64 = 0xffff_ffff_8100_0000;
/// Base of the x86_64 direct map used as `p_vaddr` of RAM PT_LOADs.
pub const DIRECT_MAP_BASE: u64 = 0xffff_8880_0000_0000;
/// Bytes missing from the last page when `partial_tail` is set.
pub const PARTIAL_TAIL_MISSING: u64 = 2048;
/// Where program headers start when `phoff_gap` is set (QEMU 7.2 style).
pub const GAP_PHOFF: u64 = 192;
/// Largest chunk gathered before a write.
const CHUNK_BYTES: usize = 4 << 20;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthSpec {
    /// Bytes of RAM (rounded up to whole pages).
    pub ram_bytes: u64,
    /// Seed of all page contents and KASLR values.
    pub seed: u64,
    /// Share of non-zero RAM pages, in percent (0..=100).
    pub data_percent: u8,
    /// Leave the legacy 640K-1M hole and a 16 MiB hole in the middle of RAM.
    pub holes: bool,
    /// Add a first PT_LOAD at vaddr 0xffffffff81000000 covering RAM already
    /// covered by another PT_LOAD (its own copy of the same bytes).
    pub kernel_text_overlap: bool,
    /// The last RAM segment ends 2048 bytes before a page boundary.
    pub partial_tail: bool,
    /// Add a VMCOREINFO note.
    pub with_vmcoreinfo: bool,
    /// Number of CORE/NT_PRSTATUS notes.
    pub nr_cpus: u32,
    /// Put the program headers at offset 192 instead of 64.
    pub phoff_gap: bool,
    /// Place segment data right after the notes, not page aligned (QEMU style).
    pub unaligned_offsets: bool,
    /// Place x86_64 page tables, a kernel image and `mem_section` in RAM
    /// and describe them in VMCOREINFO (module [`kernel`]); `None` keeps the
    /// output of earlier versions byte for byte.
    pub kernel: Option<KernelSpec>,
    /// RAM as these physical byte ranges (page aligned, ascending), in
    /// place of `ram_bytes` and `holes`; for specs without a kernel.
    pub ram_map: Option<Vec<Range<u64>>>,
}

impl Default for SynthSpec {
    fn default() -> Self {
        SynthSpec {
            ram_bytes: 64 << 20,
            seed: 0x5eed,
            data_percent: 40,
            holes: true,
            kernel_text_overlap: true,
            partial_tail: false,
            with_vmcoreinfo: true,
            nr_cpus: 2,
            phoff_gap: false,
            unaligned_offsets: false,
            kernel: None,
            ram_map: None,
        }
    }
}

/// What was generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthSummary {
    /// Distinct RAM pages (1st-bitmap bits).
    pub ram_pages: u64,
    /// RAM pages whose content is all zero.
    pub zero_pages: u64,
    /// RAM pages with non-zero content.
    pub data_pages: u64,
    /// Length of the ELF file.
    pub file_size: u64,
    /// One past the highest RAM pfn (max_mapnr).
    pub max_pfn: u64,
    /// The PT_LOADs in program-header order.
    pub loads: Vec<LoadSegment>,
}

/// Physical byte ranges of the PT_LOADs (RAM, and the BIOS ROM of
/// [`KernelSpec::bios_rom`]), sorted, non-overlapping, page-aligned starts.
pub fn ram_ranges(spec: &SynthSpec) -> Vec<Range<u64>> {
    let mut ranges = ram_only(spec);
    if spec.kernel.is_some_and(|k| k.bios_rom)
        && ranges.last().is_some_and(|r| r.end <= kernel::BIOS_ROM.start)
    {
        ranges.push(kernel::BIOS_ROM);
    }
    ranges
}

/// Physical byte ranges of RAM (what the kernel's memory sections cover).
fn ram_only(spec: &SynthSpec) -> Vec<Range<u64>> {
    let total = spec.ram_bytes.div_ceil(PAGE_SIZE as u64).max(1) * PAGE_SIZE as u64;
    let mut ranges = Vec::new();
    if let Some(map) = &spec.ram_map {
        ranges.clone_from(map);
    } else if !spec.holes {
        ranges.push(0..total);
    } else {
        let low = total.min(LEGACY_HOLE.start);
        ranges.push(0..low);
        let rest = total - low;
        let first = rest / 2 / PAGE_SIZE as u64 * PAGE_SIZE as u64;
        if first > 0 {
            ranges.push(LEGACY_HOLE.end..LEGACY_HOLE.end + first);
        }
        if rest > first {
            let start = LEGACY_HOLE.end + first + SECOND_HOLE_BYTES;
            ranges.push(start..start + rest - first);
        }
    }
    if spec.partial_tail {
        let last = ranges.last_mut().expect("at least one range");
        last.end -= PARTIAL_TAIL_MISSING;
    }
    ranges
}

/// The kernel-text range: 8 MiB (or less) at a 2 MiB boundary inside the
/// largest RAM range, if the spec asks for it and RAM is large enough.
fn kernel_text_range(spec: &SynthSpec, ram: &[Range<u64>]) -> Option<Range<u64>> {
    if !spec.kernel_text_overlap {
        return None;
    }
    let big = ram.iter().max_by_key(|r| r.end - r.start)?;
    let start = big.start.next_multiple_of(2 << 20) + (2 << 20);
    let room = big.end.saturating_sub(start) / 2 / PAGE_SIZE as u64 * PAGE_SIZE as u64;
    let len = room.min(8 << 20);
    (len > 0).then_some(start..start + len)
}

/// The file layout: header bytes (ELF header, program headers, notes) and loads.
struct Plan {
    headers: Vec<u8>,
    loads: Vec<LoadSegment>,
    file_size: u64,
}

/// (physical range, `p_vaddr`) of every PT_LOAD, in program-header order.
fn segments(spec: &SynthSpec) -> Vec<(Range<u64>, u64)> {
    let ram = ram_only(spec);
    let mut segs: Vec<(Range<u64>, u64)> = Vec::new();
    let Some(k) = kernel::layout(spec) else {
        if let Some(text) = kernel_text_range(spec, &ram) {
            segs.push((text, KERNEL_TEXT_VADDR));
        }
        segs.extend(ram.iter().map(|r| (r.clone(), DIRECT_MAP_BASE + r.start)));
        return segs;
    };
    if spec.kernel_text_overlap {
        segs.push((k.image_phys..k.image_phys + kernel::IMAGE_BYTES, k.text_vaddr));
    }
    segs.extend(ram.iter().map(|r| (r.clone(), k.page_offset + r.start)));
    segs.extend(ram_ranges(spec).get(ram.len()).map(|rom| (rom.clone(), 0))); // QEMU: p_vaddr 0
    segs
}

fn plan(spec: &SynthSpec) -> Plan {
    let e = Endian::Little;
    let segs = segments(spec);
    let notes = image::notes(e, spec);
    let phoff = if spec.phoff_gap { GAP_PHOFF } else { ELF64_EHDR_SIZE as u64 };
    let phnum = 1 + segs.len();
    let notes_off = phoff + (phnum * ELF64_PHDR_SIZE) as u64;
    let align = |x: u64| if spec.unaligned_offsets { x } else { x.next_multiple_of(PAGE_SIZE as u64) };
    let mut cursor = align(notes_off + notes.len() as u64);
    let mut loads = Vec::with_capacity(segs.len());
    for (range, vaddr) in segs {
        let len = range.end - range.start;
        loads.push(LoadSegment {
            paddr: range.start,
            vaddr,
            file_offset: cursor,
            file_size: len,
            mem_size: len,
        });
        cursor = align(cursor + len);
    }
    let last = loads.last().expect("at least one load");
    let file_size = last.file_offset + last.file_size;
    let mut headers = elf_header(e, EM_X86_64, phoff, phnum as u16).to_vec();
    headers.resize(phoff as usize, 0);
    headers.extend(note_program_header(e, notes_off, notes.len() as u64));
    for load in &loads {
        headers.extend(program_header(e, PT_LOAD, load));
    }
    headers.extend(notes);
    Plan { headers, loads, file_size }
}

/// Fills `buf` with what a correct reader must return for page `pfn`:
/// the [`page()`] content, with bytes beyond the end of RAM zeroed (for a
/// segment ending mid-page). Returns false (and zeroes `buf`) for a hole.
pub fn expected_page(spec: &SynthSpec, pfn: u64, buf: &mut [u8; PAGE_SIZE]) -> bool {
    let start = pfn.saturating_mul(PAGE_SIZE as u64);
    let Some(range) =
        ram_ranges(spec).into_iter().find(|r| r.start < start + PAGE_SIZE as u64 && start < r.end)
    else {
        buf.fill(0);
        return false;
    };
    page(spec, pfn, buf);
    if range.end < start + PAGE_SIZE as u64 {
        buf[(range.end - start) as usize..].fill(0);
    }
    true
}

/// The class a dump tool should give `pfn` by its struct page, when the
/// spec asks for [`KernelSpec::struct_pages`]: `None` for pages no dump
/// level excludes (kernel, slab, reserved pages, holes, pfns beyond RAM).
/// Whether a level excludes the page is [`Class::excluded_at`].
pub fn expected_class(spec: &SynthSpec, pfn: u64) -> Option<Class> {
    kernel::layout(spec)?.expected_class(pfn)
}

/// Counts pages and computes the file size without writing anything.
pub fn summarize(spec: &SynthSpec) -> SynthSummary {
    let plan = plan(spec);
    let ram = ram_ranges(spec);
    let (mut ram_pages, mut zero_pages) = (0, 0);
    let mut buf = [0u8; PAGE_SIZE];
    for r in &ram {
        let pfns = r.start / PAGE_SIZE as u64..r.end.div_ceil(PAGE_SIZE as u64);
        ram_pages += pfns.end - pfns.start;
        for pfn in pfns {
            let zero = if (pfn + 1) * PAGE_SIZE as u64 > r.end {
                expected_page(spec, pfn, &mut buf);
                buf.iter().all(|&b| b == 0)
            } else {
                page_kind(spec, pfn) == PageKind::Zero
            };
            zero_pages += u64::from(zero);
        }
    }
    let max_pfn = ram.last().map_or(0, |r| r.end.div_ceil(PAGE_SIZE as u64));
    SynthSummary {
        ram_pages,
        zero_pages,
        data_pages: ram_pages - zero_pages,
        file_size: plan.file_size,
        max_pfn,
        loads: plan.loads,
    }
}

/// Where generated bytes go.
trait Sink {
    fn put(&mut self, data: &[u8], offset: u64) -> io::Result<()>;
}

impl Sink for File {
    fn put(&mut self, data: &[u8], offset: u64) -> io::Result<()> {
        self.write_all_at(data, offset)
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, data: &[u8], offset: u64) -> io::Result<()> {
        let start = offset as usize;
        self[start..start + data.len()].copy_from_slice(data);
        Ok(())
    }
}

/// Writes the non-zero pages of one segment, gathering adjacent ones.
fn write_segment(spec: &SynthSpec, load: &LoadSegment, sink: &mut impl Sink) -> io::Result<()> {
    let mut chunk: Vec<u8> = Vec::with_capacity(CHUNK_BYTES);
    let mut chunk_offset = 0u64;
    let mut buf = [0u8; PAGE_SIZE];
    let pages = load.file_size.div_ceil(PAGE_SIZE as u64);
    for i in 0..pages {
        let pfn = load.paddr / PAGE_SIZE as u64 + i;
        let at = load.file_offset + i * PAGE_SIZE as u64;
        if page_kind(spec, pfn) == PageKind::Zero {
            sink.put(&chunk, chunk_offset)?;
            chunk.clear();
            continue;
        }
        if chunk.is_empty() {
            chunk_offset = at;
        }
        page(spec, pfn, &mut buf);
        let len = (load.file_size - i * PAGE_SIZE as u64).min(PAGE_SIZE as u64) as usize;
        chunk.extend_from_slice(&buf[..len]);
        if chunk.len() >= CHUNK_BYTES {
            sink.put(&chunk, chunk_offset)?;
            chunk.clear();
        }
    }
    sink.put(&chunk, chunk_offset)
}

fn generate(spec: &SynthSpec, sink: &mut impl Sink) -> io::Result<SynthSummary> {
    let plan = plan(spec);
    sink.put(&plan.headers, 0)?;
    for load in &plan.loads {
        write_segment(spec, load, sink)?;
    }
    Ok(summarize(spec))
}

/// Writes a sparse synthetic vmcore to `path` (created mode 0600, as every
/// file vmdump writes, or truncated; a symbolic link is followed only to a
/// regular file of this user: `vmdump_format::output::create`).
///
/// # Errors
///
/// Any I/O error from creating, sizing or writing the file; `InvalidInput`
/// if the [`KernelSpec`] does not fit in the RAM ([`kernel_layout`]).
pub fn write(spec: &SynthSpec, path: &Path) -> io::Result<SynthSummary> {
    kernel_layout(spec)?;
    let mut file = vmdump_format::output::create(path, true).map_err(io::Error::other)?;
    file.set_len(plan(spec).file_size)?;
    generate(spec, &mut file)
}

/// Builds a synthetic vmcore in memory (for small specs in unit tests).
///
/// # Errors
///
/// `InvalidInput` if the image would exceed 1 GiB or the [`KernelSpec`]
/// does not fit in the RAM ([`kernel_layout`]).
pub fn to_vec(spec: &SynthSpec) -> io::Result<Vec<u8>> {
    kernel_layout(spec)?;
    let size = plan(spec).file_size;
    if size > 1 << 30 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("synthetic image of {size:#x} bytes is too large for memory"),
        ));
    }
    let mut image = vec![0u8; size as usize];
    generate(spec, &mut image)?;
    Ok(image)
}

#[cfg(test)]
mod tests;
