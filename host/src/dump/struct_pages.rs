//! The struct page classifier (`crate::classify`) as the engine's metadata
//! filter: each pass gets its own classifier over the shared kernel memory
//! view and memory section table.

use std::ops::Range;

use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::{DumpError, MetadataFilter, WindowFilter};
use crate::classify::{ClassCounts, ClassifyError, PageClassifier};
use crate::input::Vmcore;
use crate::xlat::{KernelMemory, SectionTable};

/// Excludes page cache, user data and free pages as the dump level asks.
pub struct StructPageFilter<'v> {
    memory: KernelMemory<'v, Vmcore>,
    sections: SectionTable,
    info: &'v VmcoreInfo,
    dump_level: u8,
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
    pub fn new(vmcore: &'v Vmcore, dump_level: u8) -> Result<Self, DumpError> {
        let info = vmcore.vmcoreinfo().ok_or_else(|| {
            DumpError::Unsupported(format!(
                "dump level {dump_level} needs the kernel's VMCOREINFO note, which {} does not have",
                vmcore.path().display()
            ))
        })?;
        let memory = KernelMemory::open(vmcore, info, &vmcore.elf().loads)
            .map_err(|e| DumpError::Unsupported(format!("reading the kernel's memory: {e}")))?;
        let sections = SectionTable::read(&memory, info, vmcore.phys().max_pfn())
            .map_err(|e| DumpError::Unsupported(format!("reading the kernel's memory sections: {e}")))?;
        let filter = Self { memory, sections, info, dump_level };
        PageClassifier::new(&filter.memory, info, &filter.sections, dump_level)?;
        Ok(filter)
    }
}

impl MetadataFilter for StructPageFilter<'_> {
    fn cursor(&self) -> Result<Box<dyn WindowFilter + '_>, DumpError> {
        Ok(Box::new(PageClassifier::new(&self.memory, self.info, &self.sections, self.dump_level)?))
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
