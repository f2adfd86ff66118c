//! `vmdump verify`: every structure of a dump, every stored page
//! decompressed, and with a source vmcore every page compared.

use crate::read::DumpSource;

use vmdump_format::kdump::{KdumpReader, StoredPage};

use super::decode::{Decoder, format_name};
use crate::input::{Input, Vmcore};

/// Problems found, the first few kept in full.
#[derive(Debug, Default)]
pub struct Problems {
    /// How many.
    pub count: u64,
    /// The first [`Problems::KEEP`] messages.
    pub first: Vec<String>,
}

impl Problems {
    /// Messages kept.
    pub const KEEP: usize = 10;

    fn push(&mut self, message: String) {
        self.count += 1;
        if self.first.len() < Self::KEEP {
            self.first.push(message);
        }
    }
}

/// What was checked.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct VerifyStats {
    /// Pages with a descriptor.
    pub stored: u64,
    /// Of which: pointing at the shared zero page.
    pub zero: u64,
    /// Of which: stored raw (not the zero page).
    pub raw: u64,
    /// Of which: compressed.
    pub compressed: u64,
    /// Descriptors lost in an incomplete dump.
    pub lost: u64,
    /// Pages of the other pieces of a split dump (not in this file).
    pub other_pieces: u64,
    /// RAM pages left out (excluded by the dump level).
    pub excluded: u64,
    /// Of the excluded pages: all zero in the source.
    pub excluded_zero: u64,
    /// Stored pages equal to the source.
    pub equal: u64,
    /// RAM pages of the source at or beyond the dump's max_mapnr (not judged).
    pub source_beyond: u64,
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

struct Checker<'a, 'm> {
    reader: &'a KdumpReader<DumpSource>,
    decoder: Decoder<'m>,
    source: Option<&'a Vmcore>,
    stats: VerifyStats,
    problems: Problems,
    page: Vec<u8>,
    src_page: Vec<u8>,
    /// End of the last non-zero page's data (they come in pfn order).
    last_end: u64,
}

impl Checker<'_, '_> {
    /// Reads the source page into `src_page`; `None` if the source has no RAM there.
    fn source_page(&mut self, pfn: u64) -> Option<bool> {
        let vmcore = self.source?;
        match vmcore.phys().read_page(&**vmcore.file(), pfn, &mut self.src_page) {
            Ok(is_ram) => Some(is_ram),
            Err(e) => {
                self.problems.push(format!("pfn {pfn:#x}: the source cannot be read: {e}"));
                Some(false)
            }
        }
    }

    fn check_stored(&mut self, pfn: u64, index: u64) {
        let (desc, bytes) = match self.reader.page_at(pfn, index) {
            Ok(StoredPage::Stored { desc, bytes }) => (desc, bytes),
            Ok(StoredPage::Lost) => return self.stats.lost += 1,
            Ok(StoredPage::OtherPiece) => return self.stats.other_pieces += 1,
            Ok(other) => return self.problems.push(format!("pfn {pfn:#x}: dumpable but read as {other:?}")),
            Err(e) => return self.problems.push(e.to_string()),
        };
        self.stats.stored += 1;
        let is_zero = self.reader.zero_page_offset() == Some(desc.offset);
        if is_zero {
            self.stats.zero += 1;
        } else {
            if desc.offset < self.last_end {
                let why = format!(
                    "data at {:#x} overlaps the previous page (ends at {:#x})",
                    desc.offset, self.last_end
                );
                self.problems.push(format!("pfn {pfn:#x}: {why}"));
            }
            self.last_end = desc.offset + u64::from(desc.size);
            if desc.flags == 0 { self.stats.raw += 1 } else { self.stats.compressed += 1 }
        }
        if let Err(why) = self.decoder.decode(desc.flags, &bytes, &mut self.page) {
            return self.problems.push(format!("pfn {pfn:#x}: {why}"));
        }
        if is_zero && self.page.iter().any(|&b| b != 0) {
            return self.problems.push(format!("pfn {pfn:#x}: the shared zero page is not all zero"));
        }
        self.compare(pfn, is_zero, desc.flags);
    }

    fn compare(&mut self, pfn: u64, is_zero: bool, flags: u32) {
        match self.source_page(pfn) {
            None => {}
            Some(false) => {
                self.problems.push(format!("pfn {pfn:#x}: stored in the dump but not RAM in the source"))
            }
            Some(true) => match first_difference(&self.page, &self.src_page) {
                None => self.stats.equal += 1,
                Some(at) if is_zero => self.problems.push(format!(
                    "pfn {pfn:#x}: stored as the zero page but the source is not all zero (byte {at})"
                )),
                Some(at) => self.problems.push(format!(
                    "pfn {pfn:#x}: differs from the source at byte {at} ({} page)",
                    format_name(flags)
                )),
            },
        }
    }

    fn check_excluded(&mut self, pfn: u64) {
        self.stats.excluded += 1;
        // An incomplete dump leaves the pages it did not reach out of its
        // 2nd bitmap: there, "excluded" may mean "not written".
        if self.reader.dump_level() & 0x1f == 0 && !self.reader.is_incomplete() {
            self.problems.push(format!("pfn {pfn:#x}: excluded, but dump level 0 excludes nothing"));
        }
        match self.source_page(pfn) {
            Some(false) => self
                .problems
                .push(format!("pfn {pfn:#x}: RAM in the dump's 1st bitmap but not in the source")),
            Some(true) if self.src_page.iter().all(|&b| b == 0) => self.stats.excluded_zero += 1,
            _ => {}
        }
    }

    /// A hole where the source has RAM is a problem, unless the dump is
    /// incomplete: a run that died in its first pass leaves its 1st bitmap
    /// unwritten, all holes.
    fn check_hole(&mut self, pfn: u64) {
        if !self.reader.is_incomplete() && self.source.is_some_and(|vmcore| vmcore.phys().is_ram(pfn)) {
            self.problems.push(format!("pfn {pfn:#x}: RAM in the source but a hole in the dump"));
        }
    }

    fn run(&mut self) {
        let mut ram = self.reader.ram_cursor();
        let mut dumpable = self.reader.dumpable_cursor();
        let mut index = 0u64;
        for pfn in 0..self.reader.max_mapnr() {
            let (r, d) = match (ram.bit(pfn), dumpable.bit(pfn)) {
                (Ok(r), Ok(d)) => (r, d),
                (Err(e), _) | (_, Err(e)) => {
                    return self.problems.push(format!("pfn {pfn:#x}: bitmap unreadable: {e}"));
                }
            };
            match (r, d) {
                (_, true) => {
                    if !r {
                        self.problems.push(format!("pfn {pfn:#x}: in the 2nd bitmap but not in the 1st"));
                    }
                    self.check_stored(pfn, index);
                    index += 1;
                }
                (true, false) => self.check_excluded(pfn),
                (false, false) => self.check_hole(pfn),
            }
        }
        if let Some(vmcore) = self.source {
            let phys = vmcore.phys();
            self.stats.source_beyond =
                phys.count_in(self.reader.max_mapnr()..phys.max_pfn().max(self.reader.max_mapnr()));
        }
    }
}

/// Checks every pfn of `reader`, decompressing with `decoder` and comparing
/// with `source` when given.
pub fn verify(
    reader: &KdumpReader<DumpSource>,
    decoder: Decoder<'_>,
    source: Option<&Vmcore>,
) -> (VerifyStats, Problems) {
    let bs = reader.block_size() as usize;
    let mut checker = Checker {
        reader,
        decoder,
        source,
        stats: VerifyStats::default(),
        problems: Problems::default(),
        page: vec![0u8; bs],
        src_page: vec![0u8; bs],
        last_end: reader.data_offset(),
    };
    if let Some(vmcore) = source.filter(|v| v.page_size() != reader.block_size()) {
        let why = format!(
            "the source's page size {:#x} is not the dump's block size {:#x}",
            vmcore.page_size(),
            bs
        );
        checker.problems.push(why);
        checker.source = None;
    }
    checker.run();
    (checker.stats, checker.problems)
}
