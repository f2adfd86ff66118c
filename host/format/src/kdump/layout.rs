//! Where everything goes in a kdump-compressed file (kdump-format.md §1.1,
//! §1.5, §1.6, §1.7, §1.13, §11 points 1-2 and 6-7).
//!
//! ```text
//! 0                                   disk_dump_header (block 0)
//! block_size                          kdump_sub_header (104 bytes)
//! block_size + 104                    notes copy (VMCOREINFO inside)
//! (1 + sub_hdr_size) * bs             1st bitmap
//! + bitmap_blocks / 2 * bs            2nd bitmap
//! (1 + sub_hdr_size + bitmap_blocks) * bs   page_desc[num_dumpable]
//! + 24 * num_dumpable                 page data
//! ```

use std::ops::Range;

use super::{
    DiskDumpHeader, HEADER_VERSION, KDUMP_SIGNATURE, PAGE_DESC_SIZE, SUB_HEADER_SIZE, SubHeader, Utsname,
};
use crate::FormatError;
use crate::elf::{Endian, Notes};
use crate::phys::check_page_size;

/// Offsets and sizes of a kdump-compressed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Block size = page size of the dumped kernel.
    pub block_size: u32,
    /// Number of pfns (full 64-bit value).
    pub max_mapnr: u64,
    /// Number of page descriptors (set bits of the 2nd bitmap).
    pub num_dumpable: u64,
    /// Length of the notes copy (`size_note`).
    pub size_note: u64,
    /// File offset of the notes copy: `block_size + 104`.
    pub offset_note: u64,
    /// File offset of the VMCOREINFO text inside the notes copy (0 if none).
    pub offset_vmcoreinfo: u64,
    /// Length of the VMCOREINFO text (0 if none).
    pub size_vmcoreinfo: u64,
    /// Blocks of sub header + notes: `ceil((104 + size_note) / bs)`.
    pub sub_hdr_size: u32,
    /// Bytes of ONE bitmap: `roundup(ceil(max_mapnr / 8), bs)`.
    pub bitmap_len: u64,
    /// Blocks of both bitmaps: `2 * bitmap_len / bs`.
    pub bitmap_blocks: u32,
    /// File offset of the 1st (RAM) bitmap.
    pub bitmap1_offset: u64,
    /// File offset of the 2nd (dumpable) bitmap.
    pub bitmap2_offset: u64,
    /// File offset of the page descriptor table.
    pub page_desc_offset: u64,
    /// File offset of the first page data byte.
    pub data_offset: u64,
}

const OVERFLOW: FormatError = FormatError::LayoutOverflow("offsets exceed 64 bits");

fn mul(a: u64, b: u64) -> Result<u64, FormatError> {
    a.checked_mul(b).ok_or(OVERFLOW)
}

fn add(a: u64, b: u64) -> Result<u64, FormatError> {
    a.checked_add(b).ok_or(OVERFLOW)
}

impl Layout {
    /// Computes the layout. `vmcoreinfo` is the byte range of the
    /// VMCOREINFO descriptor inside the notes ([`Notes::vmcoreinfo`]).
    ///
    /// # Errors
    ///
    /// [`FormatError::BadPageSize`] for a bad block size,
    /// [`FormatError::LayoutOverflow`] if a value does not fit its on-disk
    /// field (`sub_hdr_size` i32, `bitmap_blocks` u32) or the offsets
    /// overflow, [`FormatError::BadKdump`] if `vmcoreinfo` lies outside the notes.
    pub fn new(
        max_mapnr: u64,
        block_size: u32,
        size_note: u64,
        vmcoreinfo: Option<Range<u64>>,
        num_dumpable: u64,
    ) -> Result<Self, FormatError> {
        check_page_size(u64::from(block_size))?;
        let bs = u64::from(block_size);
        let offset_note = bs + SUB_HEADER_SIZE as u64;
        let (offset_vmcoreinfo, size_vmcoreinfo) = match vmcoreinfo {
            Some(r) if r.start <= r.end && r.end <= size_note => {
                (add(offset_note, r.start)?, r.end - r.start)
            }
            Some(r) => {
                let reason = format!("VMCOREINFO range {r:?} is outside the {size_note:#x}-byte notes");
                return Err(FormatError::BadKdump { what: "notes", offset: offset_note, reason });
            }
            None => (0, 0),
        };
        let sub_hdr_blocks = add(SUB_HEADER_SIZE as u64, size_note)?.div_ceil(bs);
        let sub_hdr_size = i32::try_from(sub_hdr_blocks)
            .map_err(|_| FormatError::LayoutOverflow("sub_hdr_size does not fit in i32"))?
            as u32;
        let bitmap_half_blocks = max_mapnr.div_ceil(8).div_ceil(bs);
        let bitmap_blocks = u32::try_from(mul(bitmap_half_blocks, 2)?)
            .map_err(|_| FormatError::LayoutOverflow("bitmap_blocks does not fit in u32"))?;
        let bitmap_len = mul(bitmap_half_blocks, bs)?;
        let bitmap1_offset = mul(1 + sub_hdr_blocks, bs)?;
        let bitmap2_offset = add(bitmap1_offset, bitmap_len)?;
        let page_desc_offset = add(bitmap2_offset, bitmap_len)?;
        let data_offset = add(page_desc_offset, mul(num_dumpable, PAGE_DESC_SIZE as u64)?)?;
        Ok(Layout {
            block_size,
            max_mapnr,
            num_dumpable,
            size_note,
            offset_note,
            offset_vmcoreinfo,
            size_vmcoreinfo,
            sub_hdr_size,
            bitmap_len,
            bitmap_blocks,
            bitmap1_offset,
            bitmap2_offset,
            page_desc_offset,
            data_offset,
        })
    }

    /// [`Layout::new`] with the notes of a parsed vmcore.
    ///
    /// # Errors
    ///
    /// As [`Layout::new`].
    pub fn from_notes(
        max_mapnr: u64,
        block_size: u32,
        notes: &Notes,
        num_dumpable: u64,
    ) -> Result<Self, FormatError> {
        let vmcoreinfo = notes.vmcoreinfo.clone().map(|r| r.start as u64..r.end as u64);
        Self::new(max_mapnr, block_size, notes.len() as u64, vmcoreinfo, num_dumpable)
    }

    /// File offset of descriptor number `index` (pfn order).
    pub fn page_desc_offset_of(&self, index: u64) -> u64 {
        self.page_desc_offset + index * PAGE_DESC_SIZE as u64
    }

    /// A header for this layout in byte order `endian` (the dumped
    /// machine's): version 6, `max_mapnr` saturated to u32, empty utsname
    /// and timestamp (see [`DiskDumpHeader::fill_from_vmcoreinfo`]).
    pub fn disk_dump_header(&self, status: u32, nr_cpus: u32, endian: Endian) -> DiskDumpHeader {
        DiskDumpHeader {
            signature: KDUMP_SIGNATURE,
            header_version: HEADER_VERSION,
            utsname: Utsname::default(),
            timestamp_sec: 0,
            timestamp_usec: 0,
            status,
            block_size: self.block_size as i32,
            sub_hdr_size: self.sub_hdr_size as i32,
            bitmap_blocks: self.bitmap_blocks,
            max_mapnr: u32::try_from(self.max_mapnr).unwrap_or(u32::MAX),
            total_ram_blocks: 0,
            device_blocks: 0,
            written_blocks: 0,
            current_cpu: 0,
            nr_cpus: i32::try_from(nr_cpus).unwrap_or(i32::MAX),
            endian,
        }
    }

    /// A v6 sub header for a non-split dump of this layout, without eraseinfo.
    pub fn sub_header(&self, phys_base: i64, dump_level: i32) -> SubHeader {
        SubHeader {
            phys_base: phys_base as u64,
            dump_level,
            split: 0,
            start_pfn: 0,
            end_pfn: 0,
            offset_vmcoreinfo: self.offset_vmcoreinfo,
            size_vmcoreinfo: self.size_vmcoreinfo,
            offset_note: self.offset_note,
            size_note: self.size_note,
            offset_eraseinfo: 0,
            size_eraseinfo: 0,
            start_pfn_64: 0,
            end_pfn_64: 0,
            max_mapnr_64: self.max_mapnr,
        }
    }
}
