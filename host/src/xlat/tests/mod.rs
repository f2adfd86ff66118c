//! Tests of address translation and the section table: hand-built tables
//! (independent of the generator's builder), builder tables, and whole
//! synthetic vmcores read through the ELF reader.

use std::cell::Cell;
use std::collections::HashMap;

use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::{PhysRead, X86_64_PAGE_SIZE as PAGE_SIZE, XlatError};

mod e2e;
mod sections;
mod walk;

/// Physical memory as a map of pages; counts page reads.
#[derive(Default)]
pub(super) struct MemPhys {
    pages: HashMap<u64, Box<[u8; 4096]>>,
    reads: Cell<u64>,
}

impl MemPhys {
    pub(super) fn put_u64(&mut self, paddr: u64, value: u64) {
        let page = self.pages.entry(paddr / PAGE_SIZE).or_insert_with(|| Box::new([0; 4096]));
        let at = (paddr % PAGE_SIZE) as usize;
        page[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }

    pub(super) fn put_bytes(&mut self, paddr: u64, bytes: &[u8]) {
        let page = self.pages.entry(paddr / PAGE_SIZE).or_insert_with(|| Box::new([0; 4096]));
        let at = (paddr % PAGE_SIZE) as usize;
        page[at..at + bytes.len()].copy_from_slice(bytes);
    }

    pub(super) fn put_page(&mut self, paddr: u64, bytes: Box<[u8; 4096]>) {
        self.pages.insert(paddr / PAGE_SIZE, bytes);
    }

    pub(super) fn reads(&self) -> u64 {
        self.reads.get()
    }
}

impl PhysRead for MemPhys {
    fn read_phys(&self, paddr: u64, buf: &mut [u8]) -> Result<(), XlatError> {
        let at = (paddr % PAGE_SIZE) as usize;
        assert!(at + buf.len() <= PAGE_SIZE as usize, "read at {paddr:#x} crosses a page");
        self.reads.set(self.reads.get() + 1);
        let page = self.pages.get(&(paddr / PAGE_SIZE)).ok_or(XlatError::NotInDump { paddr })?;
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
