//! A kdump-compressed dump as physical memory, so that address translation
//! and everything built on it (the kernel log, classification) can read a
//! dump as they read an ELF vmcore.

use std::sync::Mutex;

use vmdump_format::ReadAt;
use vmdump_format::kdump::reader::{KdumpReader, StoredPage};

use super::Decoder;
use crate::xlat::{PhysRead, XlatError};

/// The pages of a dump, decompressed on demand (the last page is kept).
pub struct DumpMemory<'m, R> {
    reader: KdumpReader<R>,
    decoder: Mutex<Decoder<'m>>,
    last: Mutex<Option<(u64, Vec<u8>)>>,
}

impl<'m, R: ReadAt> DumpMemory<'m, R> {
    /// Pages of `reader`, decompressed with `decoder`.
    pub fn new(reader: KdumpReader<R>, decoder: Decoder<'m>) -> Self {
        Self { reader, decoder: Mutex::new(decoder), last: Mutex::new(None) }
    }

    /// The dump.
    pub fn reader(&self) -> &KdumpReader<R> {
        &self.reader
    }

    /// The whole page `pfn`, decompressed.
    fn load(&self, pfn: u64, paddr: u64) -> Result<Vec<u8>, XlatError> {
        let failed = |cause: String| XlatError::PhysRead { paddr, len: 0, cause: cause.into() };
        match self.reader.page(pfn).map_err(|e| failed(e.to_string()))? {
            StoredPage::Stored { desc, bytes } => {
                let mut page = vec![0u8; self.reader.block_size() as usize];
                if desc.flags == 0 {
                    page.copy_from_slice(&bytes);
                } else {
                    let mut decoder = self.decoder.lock().map_err(|_| failed("decoder poisoned".into()))?;
                    decoder.decode(desc.flags, &bytes, &mut page).map_err(failed)?;
                }
                Ok(page)
            }
            _ => Err(XlatError::NotInDump { paddr }),
        }
    }
}

impl<R: ReadAt> PhysRead for DumpMemory<'_, R> {
    fn read_phys(&self, paddr: u64, buf: &mut [u8]) -> Result<(), XlatError> {
        let ps = self.reader.block_size();
        let (pfn, at) = (paddr / ps, (paddr % ps) as usize);
        if at + buf.len() > ps as usize {
            return Err(XlatError::PhysRead {
                paddr,
                len: buf.len(),
                cause: "the read crosses a page".into(),
            });
        }
        let mut last = self.last.lock().map_err(|_| XlatError::NotInDump { paddr })?;
        if last.as_ref().is_none_or(|(p, _)| *p != pfn) {
            *last = Some((pfn, self.load(pfn, paddr)?));
        }
        let (_, page) = last.as_ref().expect("just loaded");
        buf.copy_from_slice(&page[at..at + buf.len()]);
        Ok(())
    }
}
