//! The dumped kernel as one run sees it, opened once: its memory through
//! its own page tables (`crate::xlat`), its memory sections, where its
//! memory ends, its utsname and its struct pages. The dump level's
//! classifier, the filter plugins that read struct pages and the dump
//! header all take what they need from here (kdump-format.md §4, §5.2).
//! Its own map, the symbols and types it carries ([`Kallsyms`], [`btf`]),
//! is read on first use (docs/kernel-map.md).

pub mod btf;
pub mod counters;
mod error;
pub mod image;
pub mod kallsyms;
pub mod modules;
pub mod object;

use std::ops::Range;
use std::sync::OnceLock;

use vmdump_format::kdump::Utsname;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use crate::classify::{ClassifyError, PageClassifier};
use crate::input::Input;
use crate::level::DumpLevel;
use crate::xlat::{Arch, KernelMemory, PhysRead, SectionTable, XlatError};

pub use btf::KernelTypes;
pub use error::MapError;
use error::needing;
pub use kallsyms::{Kallsyms, SomeSymbols, Symbol};
pub use modules::{Module, Modules};
pub use object::Object;

/// The kernel's memory and tables.
pub struct KernelView<'v> {
    memory: KernelMemory<'v, dyn Input + 'v>,
    info: &'v VmcoreInfo,
    /// The memory sections, or why they cannot be read.
    sections: Result<SectionTable, String>,
    symbols: OnceLock<Result<Kallsyms, MapError>>,
    landmarks: OnceLock<Result<SomeSymbols, MapError>>,
    types: OnceLock<Result<KernelTypes, MapError>>,
    modules: OnceLock<Result<Modules, MapError>>,
    image: OnceLock<Result<Vec<Range<u64>>, MapError>>,
}

impl<'v> KernelView<'v> {
    /// Opens the kernel's memory of `input`, with the architecture it
    /// names, and reads its memory sections; `None` when the input has no
    /// VMCOREINFO.
    ///
    /// # Errors
    /// A machine vmdump has no translation for, or page tables that cannot
    /// be read (an unreadable section table is not an error here:
    /// [`KernelView::sections`] says why).
    pub fn open(input: &'v (dyn Input + 'v)) -> Result<Option<Self>, XlatError> {
        let Some(info) = input.vmcoreinfo() else { return Ok(None) };
        let (e_machine, endian) = input.machine();
        let machine = Arch::machine_of_elf(e_machine, endian)?;
        let memory = KernelMemory::open_as(input, machine, info, input.loads())?;
        let sections = match info.symbol("mem_section") {
            Some(_) => SectionTable::read(&memory, info, input.phys().max_pfn()).map_err(|e| e.to_string()),
            None => Err("VMCOREINFO has no SYMBOL(mem_section)".to_owned()),
        };
        Ok(Some(Self {
            memory,
            info,
            sections,
            symbols: OnceLock::new(),
            landmarks: OnceLock::new(),
            types: OnceLock::new(),
            modules: OnceLock::new(),
            image: OnceLock::new(),
        }))
    }

    /// Kernel virtual memory.
    pub fn memory(&self) -> &KernelMemory<'v, dyn Input + 'v> {
        &self.memory
    }

    /// The VMCOREINFO it was opened with.
    pub fn info(&self) -> &'v VmcoreInfo {
        self.info
    }

    /// The kernel's symbols, read on first use.
    ///
    /// # Errors
    /// Why kallsyms could not be read (the same error on every call).
    pub fn symbols(&self) -> Result<&Kallsyms, &MapError> {
        self.symbols.get_or_init(|| Kallsyms::read(&self.memory, self.info)).as_ref()
    }

    /// The few symbols a dump reads the kernel with (the kernel image's
    /// bounds, its page counters, where its BTF is), found on first use by
    /// one pass over kallsyms that keeps nothing else (docs/kernel-map.md
    /// §10): a dump that needs no more never holds the whole table.
    ///
    /// # Errors
    /// Why kallsyms could not be read (the same error on every call).
    pub fn landmarks(&self) -> Result<&SomeSymbols, &MapError> {
        self.landmarks
            .get_or_init(|| {
                let wanted: Vec<&'static str> =
                    image::SYMBOLS.iter().chain(&counters::SYMBOLS).chain(&btf::BOUNDS).copied().collect();
                Kallsyms::find(&self.memory, self.info, &wanted)
            })
            .as_ref()
    }

    /// The kernel's types (its BTF), read on first use.
    ///
    /// # Errors
    /// Why they could not be read: no kallsyms, or no BTF in the kernel
    /// (the same error on every call).
    pub fn types(&self) -> Result<&KernelTypes, &MapError> {
        self.types
            .get_or_init(|| {
                let symbols = self.symbols().map_err(needing("BTF", "kallsyms"))?;
                KernelTypes::read(&self.memory, symbols)
            })
            .as_ref()
    }

    /// The kernel's loaded modules, read on first use.
    ///
    /// # Errors
    /// Why they could not be read (no symbols or types, or a bad list).
    pub fn modules(&self) -> Result<&Modules, &MapError> {
        self.modules
            .get_or_init(|| {
                let symbols = self.symbols().map_err(needing("modules", "kallsyms"))?;
                let types = self.types().map_err(needing("modules", "BTF"))?;
                Modules::read(&self.memory, symbols, types)
            })
            .as_ref()
    }

    /// A structure of the kernel, `type_name` at `vaddr`, read whole.
    ///
    /// # Errors
    /// No BTF, no such type, or a failed read.
    pub fn object(&self, type_name: &str, vaddr: u64) -> Result<Object<'_>, MapError> {
        let types = self.types().map_err(needing("kernel structures", "BTF"))?;
        Object::read(&self.memory, types.vmlinux(), type_name, vaddr)
    }

    /// The memory sections.
    ///
    /// # Errors
    /// Why they could not be read.
    pub fn sections(&self) -> Result<&SectionTable, &str> {
        self.sections.as_ref().map_err(String::as_str)
    }

    /// Where the kernel's memory ends: one past the last pfn of its last
    /// present memory section (§5.2). makedumpfile reduces max_mapnr to it,
    /// which drops segments the kernel does not manage, such as the BIOS
    /// ROM of a QEMU dump.
    pub fn memory_end(&self) -> Option<u64> {
        self.sections.as_ref().ok().map(SectionTable::present_pfn_end)
    }

    /// The kernel's `init_uts_ns.name`, as the dump header carries it
    /// (§1.2); `Ok(None)` without its symbol.
    ///
    /// # Errors
    /// It cannot be read, or does not look like a utsname of this kernel.
    pub fn utsname(&self) -> Result<Option<Utsname>, XlatError> {
        read_utsname(&self.memory, self.info)
    }

    /// A classifier of struct pages for `level` (one per pass).
    ///
    /// # Errors
    /// VMCOREINFO lacks what the level's bits need, or the sections are
    /// unreadable.
    /// It keeps the kernel image in use ([`KernelView::image_pfns`]),
    /// when the kernel's symbols give it.
    pub fn classifier(&self, level: DumpLevel) -> Result<PageClassifier<'_, dyn Input + 'v>, ClassifyError> {
        let sections = self.sections.as_ref().map_err(|why| ClassifyError::Sections(why.clone()))?;
        let classifier = PageClassifier::new(&self.memory, self.info, sections, level)?;
        Ok(classifier.protecting(self.image_pfns().map(<[_]>::to_vec).unwrap_or_default()))
    }

    /// The pfns of the kernel image that the kernel still uses (`image`),
    /// sorted, found on first use.
    ///
    /// # Errors
    /// Why they cannot be found (no kallsyms: kernels before 6.0).
    pub fn image_pfns(&self) -> Result<&[Range<u64>], &MapError> {
        self.image
            .get_or_init(|| {
                let symbols = self.landmarks().map_err(needing("the kernel image", "kallsyms"))?;
                image::in_use_pfns(&self.memory, symbols)
            })
            .as_ref()
            .map(Vec::as_slice)
    }

    /// A reader of struct pages for one thread; `None` without sections.
    pub fn struct_pages(&self) -> Option<StructPages<'_, 'v>> {
        let sections = self.sections.as_ref().ok()?;
        let size = self.info.size("page").unwrap_or(64) as usize;
        Some(StructPages { view: self, sections, size, chunk: None, bytes: Vec::new() })
    }
}

/// Struct pages read 64 at a time (one read per 64 pfns, never per page).
pub struct StructPages<'a, 'v> {
    view: &'a KernelView<'v>,
    sections: &'a SectionTable,
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
            let vaddr = self.sections.mem_map_of(chunk * STRUCT_PAGE_CHUNK)?;
            self.bytes.resize(self.size * STRUCT_PAGE_CHUNK as usize, 0);
            self.view.memory.read_virt(vaddr, &mut self.bytes).ok()?;
            self.chunk = Some(chunk);
        }
        let at = (pfn % STRUCT_PAGE_CHUNK) as usize * self.size;
        Some(&self.bytes[at..at + self.size])
    }
}

/// Where `init_uts_ns.name` is: `OFFSET(uts_namespace.name)` into
/// `init_uts_ns`, or 4 (after the `kref`) for kernels that do not say.
fn uts_address(info: &VmcoreInfo) -> Option<u64> {
    let offset = info.offset("uts_namespace.name").unwrap_or(4);
    info.symbol("init_uts_ns")?.checked_add(offset)
}

/// The kernel's `new_utsname`; `Ok(None)` without its symbol, an error
/// when it cannot be read or does not look like one.
fn read_utsname<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    info: &VmcoreInfo,
) -> Result<Option<Utsname>, XlatError> {
    let Some(vaddr) = uts_address(info) else { return Ok(None) };
    let mut raw = [0u8; Utsname::SIZE];
    memory.read_virt(vaddr, &mut raw)?;
    let osrelease = info.osrelease();
    Utsname::from_kernel(&raw, osrelease)
        .map(Some)
        .ok_or_else(|| XlatError::NotUtsname { vaddr, osrelease: osrelease.unwrap_or("?").to_owned() })
}
