//! The struct page classifier (`crate::classify`) as the engine's metadata
//! filter: each pass gets its own classifier over the shared kernel memory
//! view and memory section table.

use std::ops::Range;

use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::{DumpError, MetadataFilter, WindowFilter};
use crate::classify::{ClassCounts, ClassifyError, PageClassifier};
use crate::input::Vmcore;
use crate::level::DumpLevel;
use crate::xlat::{KernelMemory, SectionTable};

/// The dumped kernel's memory as the filters see it: address translation,
/// the memory sections and where each pfn's struct page is.
pub struct KernelView<'v> {
    memory: KernelMemory<'v, Vmcore>,
    sections: SectionTable,
    info: &'v VmcoreInfo,
}

impl<'v> KernelView<'v> {
    /// Opens the kernel's memory of `vmcore` and reads its memory sections.
    ///
    /// # Errors
    /// [`DumpError::Unsupported`] without VMCOREINFO or when the tables
    /// cannot be read; `why` says what needed them.
    pub fn open(vmcore: &'v Vmcore, why: &str) -> Result<Self, DumpError> {
        let info = vmcore.vmcoreinfo().ok_or_else(|| {
            DumpError::Unsupported(format!(
                "{why} needs the kernel's VMCOREINFO note, which {} does not have",
                vmcore.path().display()
            ))
        })?;
        let memory = KernelMemory::open(vmcore, info, &vmcore.elf().loads)
            .map_err(|e| DumpError::Unsupported(format!("{why}: reading the kernel's memory: {e}")))?;
        let sections = SectionTable::read(&memory, info, vmcore.phys().max_pfn()).map_err(|e| {
            DumpError::Unsupported(format!("{why}: reading the kernel's memory sections: {e}"))
        })?;
        Ok(Self { memory, sections, info })
    }

    /// A reader of struct pages for one thread.
    pub fn struct_pages(&self) -> StructPages<'_, 'v> {
        let size = self.info.size("page").unwrap_or(64) as usize;
        StructPages { view: self, size, chunk: None, bytes: Vec::new() }
    }
}

/// Struct pages read 64 at a time (one read per 64 pfns, never per page).
pub struct StructPages<'a, 'v> {
    view: &'a KernelView<'v>,
    size: usize,
    chunk: Option<u64>,
    bytes: Vec<u8>,
}

/// Pfns per struct page read (sections hold a multiple of it).
const STRUCT_PAGE_CHUNK: u64 = 64;

impl StructPages<'_, '_> {
    /// The struct page of `pfn`, or `None` when it cannot be read.
    pub fn get(&mut self, pfn: u64) -> Option<&[u8]> {
        let chunk = pfn / STRUCT_PAGE_CHUNK;
        if self.chunk != Some(chunk) {
            self.chunk = None;
            let vaddr = self.view.sections.mem_map_of(chunk * STRUCT_PAGE_CHUNK)?;
            self.bytes.resize(self.size * STRUCT_PAGE_CHUNK as usize, 0);
            self.view.memory.read_virt(vaddr, &mut self.bytes).ok()?;
            self.chunk = Some(chunk);
        }
        let at = (pfn % STRUCT_PAGE_CHUNK) as usize * self.size;
        Some(&self.bytes[at..at + self.size])
    }
}

/// Excludes page cache, user data and free pages as the dump level asks.
pub struct StructPageFilter<'v> {
    view: KernelView<'v>,
    dump_level: DumpLevel,
}

impl From<ClassifyError> for DumpError {
    fn from(e: ClassifyError) -> Self {
        DumpError::Classify(e)
    }
}

impl<'v> StructPageFilter<'v> {
    /// Reads the kernel's memory sections and checks that VMCOREINFO has
    /// every key `dump_level` needs.
    ///
    /// # Errors
    /// [`DumpError::Classify`] naming the missing keys and the dump level
    /// bits they block, or the translation error.
    pub fn new(vmcore: &'v Vmcore, dump_level: DumpLevel) -> Result<Self, DumpError> {
        let view = KernelView::open(vmcore, &format!("dump level {dump_level}"))?;
        PageClassifier::new(&view.memory, view.info, &view.sections, dump_level)?;
        Ok(Self { view, dump_level })
    }
}

impl MetadataFilter for StructPageFilter<'_> {
    fn cursor(&self) -> Result<Box<dyn WindowFilter + '_>, DumpError> {
        let v = &self.view;
        Ok(Box::new(PageClassifier::new(&v.memory, v.info, &v.sections, self.dump_level)?))
    }
}

impl WindowFilter for PageClassifier<'_, Vmcore> {
    fn exclude(
        &mut self,
        window: Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        counts: &mut ClassCounts,
    ) -> Result<(), DumpError> {
        Ok(self.classify(window, is_ram, excluded, counts)?)
    }
}
