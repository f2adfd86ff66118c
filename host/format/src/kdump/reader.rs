//! Reading a plain kdump-compressed file (kdump-format.md §1, §1.14).
//!
//! [`KdumpReader::open`] validates the header, sub header, notes, bitmap
//! sizes and the descriptor table position against the file size, and
//! builds a prefix count table of the 2nd bitmap (one u64 per 4096 pfns).
//! Bitmaps are read on demand or in 64 KiB chunks, never whole. Pages come
//! back still compressed: decompressing is the host's job (plugins).

mod bitmap;
mod geometry;
mod pages;

pub use bitmap::{BUCKET_PFNS, BitCursor, BitmapRegion, PrefixTable, SetBits};
pub use geometry::Geometry;

use super::{
    DISK_DUMP_HEADER_SIZE, DUMP_DH_COMPRESSED_INCOMPLETE, DUMP_DH_COMPRESSION_MASK, DiskDumpHeader,
    PAGE_DESC_SIZE, PageDesc, SUB_HEADER_SIZE, SubHeader, Utsname,
};
use crate::machine::Machine;
use crate::vmcoreinfo::VmcoreInfo;
use crate::{FormatError, ReadAt};

/// What a dump holds for one pfn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredPage {
    /// Not RAM (1st bitmap clear), or at or beyond `max_mapnr`.
    Hole,
    /// RAM left out of the dump (2nd bitmap clear).
    Excluded,
    /// Descriptor offset 0 in an incomplete dump (§1.11): the data never reached the disk.
    Lost,
    /// Dumpable, but outside the pfns of this split piece (§2.3): another
    /// piece of the set holds it.
    OtherPiece,
    /// The page's descriptor and its stored bytes (compressed when `desc.flags != 0`).
    Stored {
        /// The descriptor.
        desc: PageDesc,
        /// `desc.size` bytes read at `desc.offset`.
        bytes: Vec<u8>,
    },
}

/// An opened, validated kdump-compressed file.
pub struct KdumpReader<R> {
    src: R,
    file_size: u64,
    header: DiskDumpHeader,
    sub: SubHeader,
    geometry: Geometry,
    prefix: PrefixTable,
    /// Descriptors of pfns before this split piece's start (0 unless split).
    first_index: u64,
    data_offset: u64,
    /// The shared zero page's offset, when dump level bit 1 is set.
    zero_page: Option<u64>,
    notes: Vec<u8>,
    vmcoreinfo: Option<VmcoreInfo>,
}

impl<R> std::fmt::Debug for KdumpReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KdumpReader")
            .field("file_size", &self.file_size)
            .field("geometry", &self.geometry)
            .field("data_offset", &self.data_offset)
            .field("zero_page", &self.zero_page)
            .finish_non_exhaustive()
    }
}

fn read_vec<R: ReadAt + ?Sized>(
    src: &R,
    what: &'static str,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>, FormatError> {
    let size = src.size();
    if offset.checked_add(len).is_none_or(|end| end > size) {
        return Err(FormatError::Truncated { what, offset, len, size });
    }
    let mut buf = vec![0u8; len as usize];
    src.read_exact_at(&mut buf, offset).map_err(|e| FormatError::io(offset, len, e))?;
    Ok(buf)
}

fn read_headers<R: ReadAt + ?Sized>(src: &R) -> Result<(DiskDumpHeader, SubHeader), FormatError> {
    let header =
        DiskDumpHeader::decode(&read_vec(src, "disk_dump_header", 0, DISK_DUMP_HEADER_SIZE as u64)?)?;
    let bs = header.block_size as u32 as u64;
    if crate::phys::check_page_size(bs).is_err() {
        let reason = format!("block_size {:#x} is not a page size", header.block_size);
        return Err(FormatError::BadKdump { what: "disk_dump_header", offset: 428, reason });
    }
    let sub =
        SubHeader::decode(&read_vec(src, "kdump_sub_header", bs, SUB_HEADER_SIZE as u64)?, header.endian)?;
    Ok((header, sub))
}

/// Where the shared zero page of an incomplete dump is. The 2nd bitmap of
/// an incomplete dump may leave out pages that got a descriptor slot but
/// were never written (vmdump clears them, so that readers see them absent),
/// so the data area can start past where the bitmap's count places it. The
/// zero page is the first page of the data area and the first page written
/// follows it: the first descriptor points at one or the other. It is the
/// zero page when it is a raw page of zeros (no page of a dump that left
/// zero pages out is stored as one). `fallback` when there is no first
/// descriptor.
fn incomplete_zero_page<R: ReadAt>(src: &R, geometry: &Geometry, fallback: u64) -> Result<u64, FormatError> {
    let at = geometry.page_desc_offset;
    let mut buf = [0u8; PAGE_DESC_SIZE];
    if at + PAGE_DESC_SIZE as u64 > src.size() {
        return Ok(fallback);
    }
    src.read_exact_at(&mut buf, at).map_err(|e| FormatError::io(at, PAGE_DESC_SIZE as u64, e))?;
    let first = PageDesc::decode(&buf, geometry.endian)?;
    let bs = geometry.block_size;
    if first.offset < fallback || first.offset.saturating_add(bs) > src.size() {
        return Ok(fallback); // lost, or not a descriptor of this file: checked when read
    }
    let mut page = vec![0u8; bs as usize];
    src.read_exact_at(&mut page, first.offset).map_err(|e| FormatError::io(first.offset, bs, e))?;
    let is_zero_page = first.flags == 0 && u64::from(first.size) == bs && page.iter().all(|&b| b == 0);
    Ok(if is_zero_page { first.offset } else { (first.offset - bs).max(fallback) })
}

impl<R: ReadAt> KdumpReader<R> {
    /// Opens and validates a plain (not flattened) kdump-compressed file.
    ///
    /// # Errors
    /// [`FormatError::Truncated`], [`FormatError::BadKdump`] or
    /// [`FormatError::Io`] naming the structure and its offset; a bad
    /// VMCOREINFO text gives [`FormatError::BadVmcoreinfoLine`].
    pub fn open(src: R) -> Result<Self, FormatError> {
        let file_size = src.size();
        let (header, sub) = read_headers(&src)?;
        let geometry = Geometry::new(&header, &sub, file_size)?;
        let region = |offset, what| BitmapRegion { offset, bits: geometry.max_mapnr, what };
        let prefix = PrefixTable::build(&src, region(geometry.bitmap2_offset, "2nd bitmap"))?;
        let table_len = prefix.total().checked_mul(PAGE_DESC_SIZE as u64);
        let data_offset = table_len.and_then(|l| l.checked_add(geometry.page_desc_offset));
        let incomplete = header.status & DUMP_DH_COMPRESSED_INCOMPLETE != 0;
        let data_offset = match data_offset {
            Some(end) if end <= file_size || incomplete => end,
            _ => {
                let (offset, len) = (geometry.page_desc_offset, table_len.unwrap_or(u64::MAX));
                return Err(FormatError::Truncated { what: "page_desc table", offset, len, size: file_size });
            }
        };
        let first_index = match geometry.piece {
            Some((start, _)) if start < geometry.max_mapnr => prefix.rank(&src, start)?,
            Some(_) => prefix.total(),
            None => 0,
        };
        let notes = read_vec(&src, "notes", geometry.notes.0, geometry.notes.1)?;
        let (info_at, info_len) = geometry.vmcoreinfo;
        let vmcoreinfo = match info_len {
            0 => None,
            _ => Some(VmcoreInfo::parse(&read_vec(&src, "VMCOREINFO", info_at, info_len)?)?),
        };
        let zero_page = match (sub.dump_level & 1 != 0, incomplete) {
            (false, _) => None,
            (true, false) => Some(data_offset),
            (true, true) => Some(incomplete_zero_page(&src, &geometry, data_offset)?),
        };
        Ok(KdumpReader {
            src,
            file_size,
            header,
            sub,
            geometry,
            prefix,
            first_index,
            data_offset,
            zero_page,
            notes,
            vmcoreinfo,
        })
    }

    /// The disk dump header.
    pub fn header(&self) -> &DiskDumpHeader {
        &self.header
    }

    /// The sub header.
    pub fn sub_header(&self) -> &SubHeader {
        &self.sub
    }

    /// Where everything is.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The underlying source.
    pub fn source(&self) -> &R {
        &self.src
    }

    /// Size of the file.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The copied ELF notes (empty before v4).
    pub fn notes(&self) -> &[u8] {
        &self.notes
    }

    /// The eraseinfo text (kdump-format.md §1.9): what an erase filter
    /// overwrote, one `erase ...` line each; empty when the dump has none.
    ///
    /// # Errors
    /// [`FormatError::BadKdump`] when the sub header places it outside the
    /// file (or claims more than 64 MiB), [`FormatError::Io`].
    pub fn eraseinfo(&self) -> Result<Vec<u8>, FormatError> {
        let sub = &self.sub;
        if sub.size_eraseinfo == 0 {
            return Ok(Vec::new());
        }
        let end = sub.offset_eraseinfo.checked_add(sub.size_eraseinfo);
        if sub.size_eraseinfo > 64 << 20 || end.is_none_or(|end| end > self.file_size) {
            let reason = format!("{} bytes there lie outside the file", sub.size_eraseinfo);
            return Err(FormatError::BadKdump { what: "eraseinfo", offset: sub.offset_eraseinfo, reason });
        }
        let mut text = vec![0; sub.size_eraseinfo as usize];
        self.src
            .read_exact_at(&mut text, sub.offset_eraseinfo)
            .map_err(|e| FormatError::io(sub.offset_eraseinfo, sub.size_eraseinfo, e))?;
        Ok(text)
    }

    /// The parsed VMCOREINFO, if the dump has one.
    pub fn vmcoreinfo(&self) -> Option<&VmcoreInfo> {
        self.vmcoreinfo.as_ref()
    }

    /// Number of pfns.
    pub fn max_mapnr(&self) -> u64 {
        self.geometry.max_mapnr
    }

    /// Block (page) size.
    pub fn block_size(&self) -> u64 {
        self.geometry.block_size
    }

    /// Whether the dump was truncated (status bit 0x8, §1.11).
    pub fn is_incomplete(&self) -> bool {
        self.header.status & DUMP_DH_COMPRESSED_INCOMPLETE != 0
    }

    /// The kernel's phys_base (kdump-format.md §5.6): `NUMBER(phys_base)` of
    /// the VMCOREINFO when the dump has it, else the sub header's value.
    /// VMCOREINFO wins because QEMU's `dump-guest-memory` fills the sub
    /// header from that same line parsed as hex although the kernel prints
    /// it in decimal (§9): its value is wrong whenever it is not 0..=9.
    /// On arm64 the value is `NUMBER(PHYS_OFFSET)` ([`Machine::header_phys_base`]).
    pub fn phys_base(&self) -> i64 {
        let machine = self.machine().unwrap_or(Machine::X86_64);
        self.vmcoreinfo
            .as_ref()
            .and_then(|i| machine.header_phys_base(i))
            .unwrap_or(self.sub.phys_base as i64)
    }

    /// The dumped machine: the header's `utsname.machine`, else what
    /// VMCOREINFO's keys point to ([`Machine::from_vmcoreinfo`]; QEMU leaves
    /// the utsname empty, §9); `None` for a machine vmdump does not know.
    pub fn machine(&self) -> Option<Machine> {
        Machine::from_utsname(self.header.utsname.get(Utsname::MACHINE))
            .or_else(|| self.vmcoreinfo.as_ref().and_then(Machine::from_vmcoreinfo))
    }

    /// The pfns of this piece of a split dump (§2.3), `None` for a whole dump.
    pub fn piece(&self) -> Option<std::ops::Range<u64>> {
        self.geometry.piece.map(|(start, end)| start..end)
    }

    /// The dump level of the sub header.
    pub fn dump_level(&self) -> i32 {
        self.sub.dump_level
    }

    /// The header's compression bit (`DUMP_DH_COMPRESSED_*`), 0 for none.
    pub fn compression(&self) -> u32 {
        self.header.status & DUMP_DH_COMPRESSION_MASK
    }

    /// Number of page descriptors (set bits of the 2nd bitmap).
    pub fn num_dumpable(&self) -> u64 {
        self.prefix.total()
    }

    /// File offset of the first data byte.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// The shared zero page's offset: the data area start when bit 1 of
    /// the dump level is set (§1.8), else `None`.
    pub fn zero_page_offset(&self) -> Option<u64> {
        self.zero_page
    }

    /// The 1st (RAM) bitmap.
    pub fn ram_bitmap(&self) -> BitmapRegion {
        BitmapRegion {
            offset: self.geometry.bitmap1_offset,
            bits: self.geometry.max_mapnr,
            what: "1st bitmap",
        }
    }

    /// The 2nd (dumpable) bitmap.
    pub fn dumpable_bitmap(&self) -> BitmapRegion {
        BitmapRegion {
            offset: self.geometry.bitmap2_offset,
            bits: self.geometry.max_mapnr,
            what: "2nd bitmap",
        }
    }

    /// Whether `pfn` is RAM (1st bitmap).
    ///
    /// # Errors
    /// [`FormatError::Io`].
    pub fn is_ram(&self, pfn: u64) -> Result<bool, FormatError> {
        self.ram_bitmap().bit(&self.src, pfn)
    }

    /// Whether `pfn` has a descriptor (2nd bitmap).
    ///
    /// # Errors
    /// [`FormatError::Io`].
    pub fn is_dumpable(&self, pfn: u64) -> Result<bool, FormatError> {
        self.dumpable_bitmap().bit(&self.src, pfn)
    }

    /// Chunked lookups in the 1st bitmap.
    pub fn ram_cursor(&self) -> BitCursor<'_, R> {
        BitCursor::new(&self.src, self.ram_bitmap())
    }

    /// Chunked lookups in the 2nd bitmap.
    pub fn dumpable_cursor(&self) -> BitCursor<'_, R> {
        BitCursor::new(&self.src, self.dumpable_bitmap())
    }

    /// Every dumpable pfn in order with its descriptor index.
    pub fn dumpable_pfns(&self) -> SetBits<'_, R> {
        SetBits::new(&self.src, self.dumpable_bitmap())
    }

    /// [`KdumpReader::dumpable_pfns`] from `pfn` on (the bitmap before it is not read).
    ///
    /// # Errors
    /// [`FormatError::Io`] if the bucket of `pfn` cannot be read.
    pub fn dumpable_pfns_from(&self, pfn: u64) -> Result<SetBits<'_, R>, FormatError> {
        let rank =
            if pfn < self.max_mapnr() { self.prefix.rank(&self.src, pfn)? } else { self.prefix.total() };
        Ok(self.dumpable_pfns().starting_at(pfn, rank))
    }
}

#[cfg(test)]
mod tests;
