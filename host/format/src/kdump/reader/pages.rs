//! A kdump file's pages: each pfn's descriptor found by its rank in the
//! 2nd bitmap, checked, and its data read (still compressed).

use super::{KdumpReader, StoredPage};
use crate::kdump::{DUMP_DH_COMPRESSION_MASK, PAGE_DESC_SIZE, PageDesc};
use crate::{FormatError, ReadAt};

impl<R: ReadAt> KdumpReader<R> {
    /// What the dump holds for `pfn`.
    ///
    /// # Errors
    /// [`FormatError::BadKdump`] naming the pfn and the descriptor's offset
    /// when the descriptor is invalid or its data lies beyond the file.
    pub fn page(&self, pfn: u64) -> Result<StoredPage, FormatError> {
        if !self.is_ram(pfn)? && !self.is_dumpable(pfn)? {
            return Ok(StoredPage::Hole);
        }
        if !self.is_dumpable(pfn)? {
            return Ok(StoredPage::Excluded);
        }
        let index = self.prefix.rank(&self.src, pfn)?;
        self.page_at(pfn, index)
    }

    /// The index in this file's descriptor table of dumpable `pfn` (its
    /// rank in the 2nd bitmap, from this file's first descriptor).
    ///
    /// # Errors
    /// The bitmap cannot be read.
    pub fn descriptor_index(&self, pfn: u64) -> Result<u64, FormatError> {
        Ok(self.prefix.rank(&self.src, pfn)?.saturating_sub(self.first_index))
    }

    /// The descriptor number `index`, for `pfn` (messages only).
    ///
    /// # Errors
    /// As [`KdumpReader::page`]; `Ok(None)` for a descriptor beyond the end
    /// of an incomplete dump.
    pub fn descriptor(&self, pfn: u64, index: u64) -> Result<Option<PageDesc>, FormatError> {
        if index >= self.num_dumpable() {
            let reason = format!(
                "pfn {pfn:#x}: descriptor index {index} beyond the {} descriptors",
                self.num_dumpable()
            );
            let at =
                index.saturating_mul(PAGE_DESC_SIZE as u64).saturating_add(self.geometry.page_desc_offset);
            return Err(FormatError::BadKdump { what: "page_desc", offset: at, reason });
        }
        // No overflow: `open` checked page_desc_offset + 24 * num_dumpable.
        let at = self.geometry.page_desc_offset + index * PAGE_DESC_SIZE as u64;
        if at + PAGE_DESC_SIZE as u64 > self.file_size && self.is_incomplete() {
            return Ok(None);
        }
        let mut buf = [0u8; PAGE_DESC_SIZE];
        self.src.read_exact_at(&mut buf, at).map_err(|e| FormatError::io(at, PAGE_DESC_SIZE as u64, e))?;
        PageDesc::decode(&buf, self.geometry.endian).map(Some)
    }

    /// [`KdumpReader::page`] for a dumpable pfn whose rank in the 2nd
    /// bitmap is known (from [`KdumpReader::dumpable_pfns`]).
    ///
    /// # Errors
    /// As [`KdumpReader::page`].
    pub fn page_at(&self, pfn: u64, rank: u64) -> Result<StoredPage, FormatError> {
        if self.piece().is_some_and(|p| !p.contains(&pfn)) {
            return Ok(StoredPage::OtherPiece);
        }
        let index = rank - self.first_index;
        let Some(desc) = self.descriptor(pfn, index)? else { return Ok(StoredPage::Lost) };
        if desc.offset == 0 && self.is_incomplete() {
            return Ok(StoredPage::Lost);
        }
        let at = self.geometry.page_desc_offset + index * PAGE_DESC_SIZE as u64;
        self.check_desc(pfn, &desc).map_err(|reason| FormatError::BadKdump {
            what: "page_desc",
            offset: at,
            reason,
        })?;
        let mut bytes = vec![0u8; desc.size as usize];
        self.src
            .read_exact_at(&mut bytes, desc.offset)
            .map_err(|e| FormatError::io(desc.offset, desc.size.into(), e))?;
        Ok(StoredPage::Stored { desc, bytes })
    }

    /// Checks that descriptor `d` of `pfn` points at one page's worth of
    /// data inside the data area, with one known compression flag.
    ///
    /// # Errors
    /// Why not, in words naming the pfn.
    pub fn check_desc(&self, pfn: u64, d: &PageDesc) -> Result<(), String> {
        let bs = self.geometry.block_size;
        let end = d.offset.checked_add(u64::from(d.size));
        if end.is_none_or(|end| end > self.file_size) {
            return Err(format!(
                "pfn {pfn:#x}: descriptor offset {:#x} + size {:#x} beyond the end of the file ({:#x})",
                d.offset, d.size, self.file_size
            ));
        }
        if d.offset < self.data_offset {
            return Err(format!(
                "pfn {pfn:#x}: descriptor offset {:#x} is before the data area ({:#x})",
                d.offset, self.data_offset
            ));
        }
        if d.size == 0 || u64::from(d.size) > bs {
            return Err(format!("pfn {pfn:#x}: descriptor size {:#x} is not in 1..={bs:#x}", d.size));
        }
        if d.flags == 0 && u64::from(d.size) != bs {
            return Err(format!("pfn {pfn:#x}: raw page of {:#x} bytes, not one page ({bs:#x})", d.size));
        }
        if d.flags & !DUMP_DH_COMPRESSION_MASK != 0 || d.flags.count_ones() > 1 {
            return Err(format!(
                "pfn {pfn:#x}: descriptor flags {:#x} are not one compression method",
                d.flags
            ));
        }
        Ok(())
    }
}
