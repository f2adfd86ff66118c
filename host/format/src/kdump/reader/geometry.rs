//! Validating the headers of a kdump-compressed file against its size
//! (kdump-format.md §1.1-§1.7): where the notes, bitmaps and descriptor
//! table are, every offset checked before anything is read or allocated.

use super::super::{
    DISK_DUMP_HEADER_SIZE, DUMP_DH_COMPRESSION_MASK, DiskDumpHeader, SUB_HEADER_SIZE, SubHeader,
};
use crate::FormatError;
use crate::elf::Endian;
use crate::phys::check_page_size;

/// Offsets of a validated file (descriptor table and data excluded: they
/// need the popcount of the 2nd bitmap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Block (= page) size.
    pub block_size: u64,
    /// Number of pfns: `max_mapnr_64` for v ≥ 6, else the header field.
    pub max_mapnr: u64,
    /// Bytes of one bitmap.
    pub bitmap_len: u64,
    /// File offset of the 1st bitmap.
    pub bitmap1_offset: u64,
    /// File offset of the 2nd bitmap.
    pub bitmap2_offset: u64,
    /// File offset of the descriptor table.
    pub page_desc_offset: u64,
    /// Notes copy (offset, length); (0, 0) without notes.
    pub notes: (u64, u64),
    /// VMCOREINFO text (offset, length); (0, 0) without.
    pub vmcoreinfo: (u64, u64),
    /// The pfns `[start, end)` of a split piece (§2.3); `None` for a whole dump.
    pub piece: Option<(u64, u64)>,
    /// The byte order of the file's integers (the header's).
    pub endian: Endian,
}

fn bad(what: &'static str, offset: u64, reason: String) -> FormatError {
    FormatError::BadKdump { what, offset, reason }
}

fn checked(v: Option<u64>, what: &'static str, offset: u64) -> Result<u64, FormatError> {
    v.ok_or_else(|| bad(what, offset, "offsets overflow 64 bits".into()))
}

/// Checks `[offset, offset + len)` lies inside `[lo, hi)`.
fn inside(what: &'static str, offset: u64, len: u64, lo: u64, hi: u64) -> Result<(), FormatError> {
    match offset.checked_add(len) {
        Some(end) if offset >= lo && end <= hi => Ok(()),
        _ => Err(bad(what, offset, format!("{len:#x} bytes at {offset:#x} are outside {lo:#x}..{hi:#x}"))),
    }
}

fn check_header(h: &DiskDumpHeader, file_size: u64) -> Result<u64, FormatError> {
    let hdr = "disk_dump_header";
    if h.header_version < 1 {
        return Err(bad(
            hdr,
            8,
            format!("header_version {} is not supported (need 1 or later)", h.header_version),
        ));
    }
    let bs = h.block_size as u32 as u64;
    check_page_size(bs)
        .map_err(|_| bad(hdr, 428, format!("block_size {:#x} is not a page size", h.block_size)))?;
    if h.sub_hdr_size < 1 {
        return Err(bad(hdr, 432, format!("sub_hdr_size {} must be at least 1", h.sub_hdr_size)));
    }
    let compression = h.status & DUMP_DH_COMPRESSION_MASK;
    if compression.count_ones() > 1 {
        return Err(bad(hdr, 424, format!("status {:#x} names several compression methods", h.status)));
    }
    if (DISK_DUMP_HEADER_SIZE as u64) > bs || file_size < bs {
        return Err(FormatError::Truncated { what: hdr, offset: 0, len: bs, size: file_size });
    }
    Ok(bs)
}

/// Where the notes and VMCOREINFO are (v4+ / v3+), inside the sub-header blocks.
fn notes_ranges(
    h: &DiskDumpHeader,
    sub: &SubHeader,
    bs: u64,
    end: u64,
) -> Result<[(u64, u64); 2], FormatError> {
    let lo = bs + SUB_HEADER_SIZE as u64;
    let mut notes = (0, 0);
    if h.header_version >= 4 && sub.size_note > 0 {
        inside("notes", sub.offset_note, sub.size_note, lo, end)?;
        notes = (sub.offset_note, sub.size_note);
    }
    let mut info = (0, 0);
    if h.header_version >= 3 && sub.size_vmcoreinfo > 0 {
        let (nlo, nhi) = if notes.1 > 0 { (notes.0, notes.0 + notes.1) } else { (lo, end) };
        inside("VMCOREINFO", sub.offset_vmcoreinfo, sub.size_vmcoreinfo, nlo, nhi)?;
        info = (sub.offset_vmcoreinfo, sub.size_vmcoreinfo);
    }
    Ok([notes, info])
}

/// The pfns of a split piece: sub header `split` set (from version 2),
/// the 64-bit fields from version 6 on; they must lie in `[0, max_mapnr]`.
fn split_piece(h: &DiskDumpHeader, sub: &SubHeader, max_mapnr: u64) -> Result<Option<(u64, u64)>, String> {
    if h.header_version < 2 || sub.split == 0 {
        return Ok(None);
    }
    let (start, end) = match h.header_version >= 6 {
        true => (sub.start_pfn_64, sub.end_pfn_64),
        false => (sub.start_pfn, sub.end_pfn),
    };
    if start > end || end > max_mapnr {
        return Err(format!("split piece pfns {start:#x}..{end:#x} are not within max_mapnr {max_mapnr:#x}"));
    }
    Ok(Some((start, end)))
}

impl Geometry {
    /// Validates header and sub header against a file of `file_size` bytes.
    ///
    /// # Errors
    /// [`FormatError::BadKdump`] naming the field and its offset,
    /// [`FormatError::Truncated`] when a region ends beyond the file.
    pub fn new(h: &DiskDumpHeader, sub: &SubHeader, file_size: u64) -> Result<Self, FormatError> {
        let bs = check_header(h, file_size)?;
        let sh = "kdump_sub_header";
        let max_mapnr = if h.header_version >= 6 { sub.max_mapnr_64 } else { u64::from(h.max_mapnr) };
        let piece = split_piece(h, sub, max_mapnr).map_err(|reason| bad(sh, bs + 12, reason))?;
        let bitmap1_offset = checked((1 + h.sub_hdr_size as u64).checked_mul(bs), sh, bs)?;
        let [notes, vmcoreinfo] = notes_ranges(h, sub, bs, bitmap1_offset)?;
        let half_blocks = max_mapnr.div_ceil(8).div_ceil(bs);
        let blocks = u64::from(h.bitmap_blocks);
        if blocks % 2 != 0 || blocks < 2 * half_blocks || blocks == 0 {
            let reason = format!(
                "bitmap_blocks {blocks} does not hold two bitmaps of max_mapnr {max_mapnr:#x} bits ({half_blocks} blocks each)"
            );
            return Err(bad("disk_dump_header", 436, reason));
        }
        let bitmap_len = blocks / 2 * bs;
        let bitmap2_offset = checked(bitmap1_offset.checked_add(bitmap_len), "2nd bitmap", bitmap1_offset)?;
        let page_desc_offset = checked(bitmap2_offset.checked_add(bitmap_len), "page_desc", bitmap2_offset)?;
        if page_desc_offset > file_size {
            let len = page_desc_offset - bitmap1_offset;
            return Err(FormatError::Truncated {
                what: "bitmaps",
                offset: bitmap1_offset,
                len,
                size: file_size,
            });
        }
        Ok(Geometry {
            block_size: bs,
            max_mapnr,
            bitmap_len,
            bitmap1_offset,
            bitmap2_offset,
            page_desc_offset,
            notes,
            vmcoreinfo,
            piece,
            endian: h.endian,
        })
    }
}
