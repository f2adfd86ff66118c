//! Joining the pieces of a split dump into one kdump-compressed file
//! (kdump-format.md §2.3), as `makedumpfile --reassemble` does: the
//! headers, notes and bitmaps of the first piece (the same in every one),
//! then each piece's descriptors and data in pfn order. Page data is copied
//! as it is stored, in runs of contiguous bytes, never recompressed; the
//! pieces' shared zero pages become one.

use crate::read::DumpSource;
use std::ops::Range;

use anyhow::{Context, bail, ensure};
use vmdump_format::ReadAt;
use vmdump_format::elf::Endian;
use vmdump_format::kdump::{DUMP_DH_COMPRESSED_INCOMPLETE, KdumpReader, PAGE_DESC_SIZE, PageDesc};

use super::descs::Descriptors;
use vmdump_format::sink::Sink;

/// Bytes copied per read.
const COPY_BYTES: usize = 1 << 20;
/// Descriptors read or written at once (64 KiB).
const DESC_CHUNK: usize = (64 << 10) / PAGE_DESC_SIZE;

/// What the reassembly wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reassembled {
    /// Descriptors written.
    pub pages: u64,
    /// Whether a piece was incomplete (so is the result).
    pub incomplete: bool,
    /// Bytes of the result.
    pub bytes: u64,
}

/// A named piece.
pub type Piece = (String, KdumpReader<DumpSource>);

/// Sorts the pieces by start pfn and checks that they form one dump: split
/// pieces of the same machine and dump, covering `[0, max_mapnr)` without
/// gap or overlap.
fn check_set(pieces: &mut [Piece]) -> anyhow::Result<()> {
    ensure!(!pieces.is_empty(), "no piece to reassemble");
    for (name, r) in pieces.iter() {
        ensure!(r.piece().is_some(), "{name}: not a piece of a split dump (its sub header says split = 0)");
    }
    pieces.sort_by_key(|(_, r)| r.piece().map_or(0, |p| p.start));
    let (first_name, first) = &pieces[0];
    let same = |r: &KdumpReader<DumpSource>| {
        let mut a = *r.header();
        let mut b = *first.header();
        a.status &= !DUMP_DH_COMPRESSED_INCOMPLETE;
        b.status &= !DUMP_DH_COMPRESSED_INCOMPLETE;
        a == b && r.num_dumpable() == first.num_dumpable() && r.dump_level() == first.dump_level()
    };
    let mut next = 0;
    for (name, r) in pieces.iter() {
        ensure!(same(r), "{name}: its header differs from {first_name}'s: not a piece of the same dump");
        let piece = r.piece().expect("checked");
        ensure!(
            piece.start == next,
            "{name}: starts at pfn {:#x}, but the pieces before end at {next:#x}",
            piece.start
        );
        next = piece.end;
    }
    ensure!(
        next == first.max_mapnr(),
        "the pieces end at pfn {next:#x}, before max_mapnr {:#x}: a piece is missing",
        first.max_mapnr()
    );
    Ok(())
}

/// Copies `len` bytes at `from` in `src` to `to` in `sink`.
fn copy_bytes(src: &DumpSource, from: u64, len: u64, sink: &mut dyn Sink, to: u64) -> anyhow::Result<()> {
    let mut buf = vec![0u8; COPY_BYTES.min(len as usize)];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(COPY_BYTES as u64) as usize;
        src.read_exact_at(&mut buf[..n], from + done)
            .with_context(|| format!("reading at {:#x}", from + done))?;
        sink.write_at(to + done, &buf[..n])?;
        done += n as u64;
    }
    Ok(())
}

/// The output side: descriptors queued, data placed in runs.
struct Joiner<'s> {
    sink: &'s mut dyn Sink,
    descs: Vec<u8>,
    descs_at: u64,
    data_end: u64,
    zero_page: Option<u64>,
    pages: u64,
    /// The run of contiguous source bytes being gathered: source offset,
    /// length, offset in the output.
    run: (u64, u64, u64),
    /// Pfns whose data an incomplete piece lost: left out of the 2nd bitmap.
    lost: Vec<Range<u64>>,
    /// The pieces' byte order.
    endian: Endian,
}

impl Joiner<'_> {
    fn push_desc(&mut self, desc: &PageDesc) -> anyhow::Result<()> {
        self.descs.extend_from_slice(&desc.encode(self.endian));
        self.pages += 1;
        if self.descs.len() >= DESC_CHUNK * PAGE_DESC_SIZE {
            self.sink.write_at(self.descs_at, &self.descs)?;
            self.descs_at += self.descs.len() as u64;
            self.descs.clear();
        }
        Ok(())
    }

    fn flush_run(&mut self, src: &DumpSource) -> anyhow::Result<()> {
        let (from, len, to) = self.run;
        if len > 0 {
            copy_bytes(src, from, len, self.sink, to)?;
        }
        self.data_end = to + len;
        self.run = (0, 0, self.data_end);
        Ok(())
    }

    /// Where stored data at `offset` of `src` lands in the output.
    fn place(&mut self, src: &DumpSource, offset: u64, size: u64) -> anyhow::Result<u64> {
        let (from, len, _) = self.run;
        if len == 0 || offset != from + len {
            self.flush_run(src)?;
            self.run = (offset, 0, self.data_end);
        }
        self.run.1 += size;
        Ok(self.run.2 + (offset - self.run.0))
    }

    /// Descriptors and data of one piece, in pfn order.
    fn piece(&mut self, name: &str, r: &KdumpReader<DumpSource>, pfns: Range<u64>) -> anyhow::Result<()> {
        let zero = r.zero_page_offset();
        let mut descs = Descriptors::new(r);
        for (local, item) in (0u64..).zip(r.dumpable_pfns_from(pfns.start)?) {
            let (pfn, _) = item.with_context(|| format!("{name}: 2nd bitmap"))?;
            if pfn >= pfns.end {
                break;
            }
            let desc = descs.get(local).with_context(|| format!("{name}: pfn {pfn:#x}"))?;
            self.page(name, r, pfn, desc, zero)?;
        }
        self.flush_run(r.source())
    }

    fn page(
        &mut self,
        name: &str,
        r: &KdumpReader<DumpSource>,
        pfn: u64,
        mut desc: PageDesc,
        zero: Option<u64>,
    ) -> anyhow::Result<()> {
        if desc.offset == 0 && r.is_incomplete() {
            match self.lost.last_mut().filter(|l| l.end == pfn) {
                Some(run) => run.end += 1,
                None => self.lost.push(pfn..pfn + 1),
            }
            return Ok(());
        }
        if zero.is_some_and(|z| z == desc.offset) {
            let offset = self.zero_page.with_context(|| format!("{name}: pfn {pfn:#x}: zero page"))?;
            return self.push_desc(&PageDesc { offset, ..desc });
        }
        r.check_desc(pfn, &desc).map_err(|why| anyhow::anyhow!("{name}: {why}"))?;
        desc.offset = self.place(r.source(), desc.offset, u64::from(desc.size))?;
        self.push_desc(&desc)
    }
}

/// Clears the bits of the `lost` pfns in the 2nd bitmap copied from
/// `first`, so that readers see those pages absent, not corrupt (§1.11).
fn clear_lost(
    first: &KdumpReader<DumpSource>,
    lost: &[Range<u64>],
    sink: &mut dyn Sink,
) -> anyhow::Result<()> {
    let bitmap = first.geometry().bitmap2_offset;
    let mut buf = Vec::new();
    // The last byte written: the next run may start in it (runs increase).
    let mut written: Option<(u64, u8)> = None;
    for run in lost {
        let mut pfn = run.start;
        while pfn < run.end {
            let byte = pfn / 8;
            let last = (run.end - 1).min(pfn + 8 * COPY_BYTES as u64 - 1) / 8;
            buf.resize((last - byte + 1) as usize, 0);
            first.source().read_exact_at(&mut buf, bitmap + byte).context("reading the 2nd bitmap")?;
            if let Some((at, value)) = written.filter(|(at, _)| *at == byte) {
                buf[(at - byte) as usize] = value;
            }
            let end = run.end.min((last + 1) * 8);
            for p in pfn..end {
                buf[(p / 8 - byte) as usize] &= !(1 << (p % 8));
            }
            sink.write_at(bitmap + byte, &buf)?;
            written = Some((last, buf[(last - byte) as usize]));
            pfn = end;
        }
    }
    Ok(())
}

/// Writes the dump the `pieces` make into `sink`.
///
/// # Errors
/// The pieces do not form one dump, a piece cannot be read or holds a bad
/// descriptor (named by file and pfn), or the sink fails.
pub fn reassemble(mut pieces: Vec<Piece>, sink: &mut dyn Sink) -> anyhow::Result<Reassembled> {
    check_set(&mut pieces)?;
    let incomplete = pieces.iter().any(|(_, r)| r.is_incomplete());
    let first = &pieces[0].1;
    let g = first.geometry();
    copy_bytes(first.source(), 0, g.page_desc_offset, sink, 0)?;
    let mut header = *first.header();
    if incomplete {
        header.status |= DUMP_DH_COMPRESSED_INCOMPLETE;
    }
    sink.write_at(0, &header.encode())?;
    let mut sub = *first.sub_header();
    (sub.split, sub.start_pfn, sub.end_pfn, sub.start_pfn_64, sub.end_pfn_64) = (0, 0, 0, 0, 0);
    sink.write_at(first.block_size(), &sub.encode(header.endian))?;
    let data_offset = first.data_offset();
    let mut joiner = Joiner {
        sink,
        descs: Vec::with_capacity(DESC_CHUNK * PAGE_DESC_SIZE),
        descs_at: g.page_desc_offset,
        data_end: data_offset,
        zero_page: None,
        pages: 0,
        run: (0, 0, data_offset),
        lost: Vec::new(),
        endian: header.endian,
    };
    if first.zero_page_offset().is_some() {
        joiner.sink.write_at(data_offset, &vec![0u8; first.block_size() as usize])?;
        joiner.zero_page = Some(data_offset);
        joiner.data_end += first.block_size();
        joiner.run.2 = joiner.data_end;
    }
    for (name, r) in &pieces {
        let range = r.piece().expect("checked");
        joiner.piece(name, r, range)?;
    }
    if joiner.pages != first.num_dumpable() && !incomplete {
        bail!("the pieces hold {} descriptors, the bitmap has {}", joiner.pages, first.num_dumpable());
    }
    let descs = std::mem::take(&mut joiner.descs);
    joiner.sink.write_at(joiner.descs_at, &descs)?;
    clear_lost(first, &joiner.lost, joiner.sink)?;
    let pages = joiner.pages;
    joiner.sink.finish()?;
    Ok(Reassembled { pages, incomplete, bytes: joiner.sink.bytes_written() })
}
