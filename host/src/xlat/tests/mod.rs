//! Tests of address translation and the section table: hand-built tables
//! (independent of the generator's builder), builder tables, and whole
//! synthetic vmcores read through the ELF reader; arm64 over tables built
//! from the descriptor formats (`arm64*.rs`); ppc64le over tables built
//! from its entry format (`ppc64.rs`).

use std::cell::Cell;
use std::collections::HashMap;

use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::{PhysRead, X86_64_PAGE_SIZE as PAGE_SIZE, XlatError};

mod arm64;
mod arm64_52;
mod arm64_granules;
mod e2e;
mod ppc64;
mod riscv64;
mod s390x;
mod sections;
mod walk;

/// Physical memory as a map of pages (4 KiB unless made
/// [`MemPhys::with_page_size`]); counts page reads.
pub(super) struct MemPhys {
    page_size: u64,
    pages: HashMap<u64, Box<[u8]>>,
    reads: Cell<u64>,
}

/// The page count only: the contents would bury the message of a failed `unwrap_err`.
impl std::fmt::Debug for MemPhys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MemPhys {{ {} pages of {:#x} bytes }}", self.pages.len(), self.page_size)
    }
}

impl Default for MemPhys {
    fn default() -> Self {
        MemPhys::with_page_size(PAGE_SIZE)
    }
}

impl MemPhys {
    /// Empty memory of `page_size`-byte pages (arm64: 4, 16 or 64 KiB):
    /// a read may not cross one.
    pub(super) fn with_page_size(page_size: u64) -> Self {
        MemPhys { page_size, pages: HashMap::new(), reads: Cell::new(0) }
    }

    /// The page holding `paddr` (zeroed when new) and the offset in it.
    fn page_mut(&mut self, paddr: u64) -> (&mut [u8], usize) {
        let size = self.page_size;
        let page = self.pages.entry(paddr / size).or_insert_with(|| vec![0; size as usize].into());
        (page, (paddr % size) as usize)
    }

    pub(super) fn put_u64(&mut self, paddr: u64, value: u64) {
        self.put_bytes(paddr, &value.to_le_bytes());
    }

    pub(super) fn put_bytes(&mut self, paddr: u64, bytes: &[u8]) {
        let (page, at) = self.page_mut(paddr);
        page[at..at + bytes.len()].copy_from_slice(bytes);
    }

    pub(super) fn put_page(&mut self, paddr: u64, bytes: Box<[u8; 4096]>) {
        assert_eq!(self.page_size, 4096, "builder pages are 4 KiB");
        self.pages.insert(paddr / self.page_size, bytes);
    }

    pub(super) fn reads(&self) -> u64 {
        self.reads.get()
    }
}

impl PhysRead for MemPhys {
    fn read_phys(&self, paddr: u64, buf: &mut [u8]) -> Result<(), XlatError> {
        let at = (paddr % self.page_size) as usize;
        assert!(at + buf.len() <= self.page_size as usize, "read at {paddr:#x} crosses a page");
        self.reads.set(self.reads.get() + 1);
        let page = self.pages.get(&(paddr / self.page_size)).ok_or(XlatError::NotInDump { paddr })?;
        buf.copy_from_slice(&page[at..at + buf.len()]);
        Ok(())
    }
}

/// VMCOREINFO for translation tests.
pub(super) fn info(five_level: bool, phys_base: i64, root: u64, sme_mask: u64) -> VmcoreInfo {
    let text = format!(
        "OSRELEASE=test\nPAGESIZE=4096\nSYMBOL(init_top_pgt)={root:x}\nNUMBER(phys_base)={phys_base}\n\
         NUMBER(pgtable_l5_enabled)={}\nNUMBER(sme_mask)={sme_mask}\nKERNELOFFSET=0\n",
        u8::from(five_level)
    );
    VmcoreInfo::parse(text.as_bytes()).unwrap()
}
