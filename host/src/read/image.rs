//! A dump as an ELF vmcore again, so that the dump engine can take it as
//! input (`vmdump convert`): the stored pages decompressed into a sparse
//! file, one PT_LOAD per run of stored pages, all-zero pages left as holes,
//! the dump's notes (VMCOREINFO among them) copied. Pages the dump left
//! out are in no PT_LOAD, so they stay out of whatever is made from it.

use std::fs::File;
use std::os::unix::fs::FileExt;

use anyhow::Context;
use vmdump_format::elf::write::{
    e_phnum, elf_header, note_program_header, point_at_section0, program_header, section0,
};
use vmdump_format::elf::{ELF64_EHDR_SIZE, LoadSegment, PN_XNUM, PT_LOAD};
use vmdump_format::kdump::{KdumpReader, PageDesc};
use vmdump_format::machine::Machine;

use std::ops::Range;

use vmdump_format::kdump::reader::BitCursor;

use super::Decoder;
use super::descs::Descriptors;
use crate::classify::ClassCounts;
use crate::exclude::content::is_zero_page;
use crate::exclude::{ExcludeError, MetadataFilter, WindowFilter};

/// What the image holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImageStats {
    /// Pages in PT_LOADs.
    pub pages: u64,
    /// Of which all zero (holes in the file).
    pub zero: u64,
    /// Descriptors lost in an incomplete dump (left out).
    pub lost: u64,
}

/// Writes the pages of `reader` into `out` as an ELF vmcore: PT_LOADs over
/// the RAM of its 1st bitmap, data for the pages it stored. Returns the
/// counts and the exclusions to apply when dumping the image.
///
/// # Errors
/// A page that cannot be read or decoded (named by pfn), or a failed write.
pub fn write_image<'r>(
    reader: &'r KdumpReader<File>,
    decoder: &mut Decoder<'_>,
    out: &File,
) -> anyhow::Result<(ImageStats, InputExclusions<'r>)> {
    if let Some(piece) = reader.piece() {
        anyhow::bail!(
            "a piece of a split dump (pfns {:#x}..{:#x}): give the other pieces too (--piece FILE)",
            piece.start,
            piece.end
        );
    }
    let ps = reader.block_size();
    let notes = reader.notes();
    let notes_at = ELF64_EHDR_SIZE as u64;
    out.write_all_at(notes, notes_at).context("writing the notes")?;
    let mut offset = (notes_at + notes.len() as u64).div_ceil(ps) * ps;
    let mut loads = Vec::<LoadSegment>::new();
    let mut pages = ImagePages {
        reader,
        decoder,
        out,
        input: Window::default(),
        output: Pending::default(),
        page: vec![0u8; ps as usize],
        stats: ImageStats::default(),
        lost: Vec::new(),
    };
    let (mut ram, mut stored) = (reader.ram_cursor(), reader.dumpable_cursor());
    let mut descs = Descriptors::new(reader);
    let mut rank = 0;
    for pfn in 0..reader.max_mapnr() {
        let (is_ram, is_stored) = (ram.bit(pfn)?, stored.bit(pfn)?);
        if is_stored {
            let desc = descs.get(rank).with_context(|| format!("pfn {pfn:#x}"))?;
            rank += 1;
            pages.store(pfn, &desc, offset)?;
        } else if !is_ram {
            continue;
        }
        match loads.last_mut().filter(|l| l.paddr + l.mem_size == pfn * ps) {
            Some(load) => (load.file_size, load.mem_size) = (load.file_size + ps, load.mem_size + ps),
            None => loads.push(LoadSegment {
                paddr: pfn * ps,
                vaddr: 0,
                file_offset: offset,
                file_size: ps,
                mem_size: ps,
            }),
        }
        offset += ps;
    }
    let ImagePages { mut output, mut stats, lost, .. } = pages;
    output.flush(out)?;
    stats.lost = lost.len() as u64;
    // The machine the dump says it is of (x86_64 when it does not say).
    let machine = reader.machine().unwrap_or(Machine::X86_64);
    write_headers(out, machine, offset, (notes_at, notes.len() as u64), &loads)?;
    out.set_len(offset.max(out.metadata()?.len())).context("sizing the image")?;
    Ok((stats, InputExclusions { reader, lost }))
}

/// The stored pages on their way into the image.
struct ImagePages<'r, 'd, 'm> {
    reader: &'r KdumpReader<File>,
    decoder: &'d mut Decoder<'m>,
    out: &'d File,
    input: Window,
    output: Pending,
    page: Vec<u8>,
    stats: ImageStats,
    lost: Vec<u64>,
}

impl ImagePages<'_, '_, '_> {
    /// Page `pfn`, described by `desc`, into the image at `offset`: left a
    /// hole when it is all zero, left out when an incomplete dump lost it.
    fn store(&mut self, pfn: u64, desc: &PageDesc, offset: u64) -> anyhow::Result<()> {
        let r = self.reader;
        if desc.offset == 0 && r.is_incomplete() {
            self.lost.push(pfn);
            return Ok(());
        }
        self.stats.pages += 1;
        if r.zero_page_offset() == Some(desc.offset) {
            self.stats.zero += 1;
            return Ok(());
        }
        r.check_desc(pfn, desc).map_err(anyhow::Error::msg)?;
        let stored = self.input.get(r, desc.offset, desc.size as usize)?;
        self.decoder
            .decode(desc.flags, stored, &mut self.page)
            .map_err(|why| anyhow::anyhow!("pfn {pfn:#x}: {why}"))?;
        if is_zero_page(&self.page) {
            self.stats.zero += 1;
            return Ok(());
        }
        self.output.put(self.out, &self.page, offset)
    }
}

/// The pages the input dump did not store (excluded, or lost in an
/// incomplete dump): a metadata filter that keeps them out of what is
/// made from the image, where they read as zeros.
pub struct InputExclusions<'r> {
    reader: &'r KdumpReader<File>,
    lost: Vec<u64>,
}

impl MetadataFilter for InputExclusions<'_> {
    fn cursor(&self) -> Result<Box<dyn WindowFilter + '_>, ExcludeError> {
        Ok(Box::new(InputCursor { stored: self.reader.dumpable_cursor(), lost: &self.lost }))
    }
}

struct InputCursor<'r> {
    stored: BitCursor<'r, File>,
    lost: &'r [u64],
}

impl WindowFilter for InputCursor<'_> {
    fn exclude(
        &mut self,
        window: Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        counts: &mut ClassCounts,
    ) -> Result<(), ExcludeError> {
        for pfn in window.clone().filter(|&pfn| is_ram(pfn)) {
            if !self.stored.bit(pfn)? || self.lost.binary_search(&pfn).is_ok() {
                let i = pfn - window.start;
                excluded[(i / 64) as usize] |= 1 << (i % 64);
                counts.earlier += 1;
            }
        }
        Ok(())
    }
}

/// Bytes read or written at once.
const WINDOW_BYTES: usize = 1 << 20;

/// A window of the input: stored pages come in file order, so one read
/// serves the many pages it holds.
#[derive(Default)]
struct Window {
    buf: Vec<u8>,
    start: u64,
}

impl Window {
    /// `len` bytes at `offset` (checked to lie in the file).
    fn get(&mut self, reader: &KdumpReader<File>, offset: u64, len: usize) -> anyhow::Result<&[u8]> {
        let end = self.start + self.buf.len() as u64;
        if offset < self.start || offset + len as u64 > end {
            let n = (WINDOW_BYTES as u64).max(len as u64).min(reader.file_size() - offset);
            self.buf.resize(n as usize, 0);
            reader
                .source()
                .read_exact_at(&mut self.buf, offset)
                .with_context(|| format!("reading at {offset:#x}"))?;
            self.start = offset;
        }
        let at = (offset - self.start) as usize;
        Ok(&self.buf[at..at + len])
    }
}

/// Pages to write, gathered while they are contiguous in the image.
#[derive(Default)]
struct Pending {
    buf: Vec<u8>,
    at: u64,
}

impl Pending {
    fn put(&mut self, out: &File, page: &[u8], offset: u64) -> anyhow::Result<()> {
        if self.at + self.buf.len() as u64 != offset || self.buf.len() >= WINDOW_BYTES {
            self.flush(out)?;
            self.at = offset;
        }
        self.buf.extend_from_slice(page);
        Ok(())
    }

    fn flush(&mut self, out: &File) -> anyhow::Result<()> {
        out.write_all_at(&self.buf, self.at)
            .with_context(|| format!("writing the image at {:#x}", self.at))?;
        self.buf.clear();
        Ok(())
    }
}

/// The program headers at `table_at` (after the data), then the file header.
fn write_headers(
    out: &File,
    machine: Machine,
    table_at: u64,
    notes: (u64, u64),
    loads: &[LoadSegment],
) -> anyhow::Result<()> {
    let e = machine.endian();
    let mut table = note_program_header(e, notes.0, notes.1).to_vec();
    loads.iter().for_each(|l| table.extend_from_slice(&program_header(e, PT_LOAD, l)));
    let phnum = loads.len() as u64 + 1;
    let mut header = elf_header(e, machine.e_machine(), table_at, e_phnum(phnum));
    if phnum >= u64::from(PN_XNUM) {
        point_at_section0(e, &mut header, table_at + table.len() as u64);
        table.extend_from_slice(&section0(e, phnum));
    }
    out.write_all_at(&table, table_at).context("writing the program headers")?;
    out.write_all_at(&header, 0).context("writing the ELF header")?;
    Ok(())
}
