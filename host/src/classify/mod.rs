//! Page classification from the kernel's `struct page` array, as
//! makedumpfile does for dump-level bits 2, 4, 8 and 16 (kdump-format.md
//! §5.1–§5.3; report categories §7.4).
//!
//! | item | what |
//! |---|---|
//! | [`Rules`] | kernel-version dependent values, all from VMCOREINFO |
//! | [`decide`] | the §5.3 decision list over one decoded [`PageInfo`] |
//! | [`PageClassifier`] | reads struct pages in 512-page batches through [`KernelMemory`] and marks excluded pfns window by window |
//!
//! ```text
//! SectionTable ─► mem_map of a 512-pfn batch ─► KernelMemory::read_virt
//!   ─► decode (+ next struct page for compound heads) ─► decide ─► bitset + ClassCounts
//! ```
//!
//! Counting follows makedumpfile's report: an excluded page counts once, in
//! the first matching category; a compound head excludes its whole folio
//! (2^order) and a free buddy head 2^`private` pages, whose struct pages are
//! then not looked at; pfns that are not RAM are never marked or counted.
//! Free pages are found only through their struct pages (§5.3); the
//! free-list walk of old kernels (§5.4) is not implemented, so bit 16 is
//! unsupported when VMCOREINFO cannot identify buddy pages.
#![forbid(unsafe_code)]

mod decide;
mod rules;
mod scan;

#[cfg(test)]
mod tests;

use std::ops::{AddAssign, Range};

use vmdump_format::vmcoreinfo::VmcoreInfo;

use crate::xlat::{KernelMemory, PhysRead, SectionTable, XlatError};

pub use decide::{Decision, PageInfo, decide, decode};
pub use rules::{CompoundRule, PageLayout, Rules, TailField};

use crate::level::DumpLevel;

/// Report category of an excluded page (§7.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageClass {
    /// "Non-private cache pages".
    Cache,
    /// "Private cache pages".
    CachePrivate,
    /// "User process data pages".
    User,
    /// "Free pages".
    Free,
    /// "Hwpoison pages".
    Hwpoison,
    /// "Offline pages".
    Offline,
}

/// Excluded pages per report category.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassCounts {
    /// Non-private cache pages.
    pub cache: u64,
    /// Private cache pages.
    pub cache_private: u64,
    /// User process data pages.
    pub user: u64,
    /// Free pages.
    pub free: u64,
    /// Hwpoison pages.
    pub hwpoison: u64,
    /// Offline pages.
    pub offline: u64,
    /// Pages the input dump had already left out (`vmdump convert`).
    pub earlier: u64,
    /// Pages kept because their struct pages could not be read (a
    /// classifier [`PageClassifier::keeping_unreadable`]): not excluded,
    /// not counted in [`ClassCounts::total`].
    pub unclassified: u64,
    /// The first of them: its pfn and the address of its struct page.
    pub first_unclassified: Option<(u64, u64)>,
    /// Pages of the kernel image in use that their struct pages would
    /// have left out ([`PageClassifier::protecting`]): kept, not counted
    /// in [`ClassCounts::total`].
    pub image_kept: u64,
    /// Pages filter plugins marked to keep that their struct pages would
    /// have left out ([`PageClassifier::keeping`]), by [`PageClass`] (its
    /// index): not counted in [`ClassCounts::total`].
    pub filter_kept: [u64; 6],
}

impl ClassCounts {
    /// Pages filter plugins kept that the classes would have left out.
    pub fn filter_kept_total(&self) -> u64 {
        self.filter_kept.iter().sum()
    }

    /// Pages of `class` as the kernel counts them: those left out and
    /// those a filter kept.
    pub fn classified(&self, class: PageClass) -> u64 {
        let left_out = match class {
            PageClass::Cache => self.cache,
            PageClass::CachePrivate => self.cache_private,
            PageClass::User => self.user,
            PageClass::Free => self.free,
            PageClass::Hwpoison => self.hwpoison,
            PageClass::Offline => self.offline,
        };
        left_out + self.filter_kept[class as usize]
    }

    /// Adds `n` pages to `class`.
    pub fn add(&mut self, class: PageClass, n: u64) {
        *match class {
            PageClass::Cache => &mut self.cache,
            PageClass::CachePrivate => &mut self.cache_private,
            PageClass::User => &mut self.user,
            PageClass::Free => &mut self.free,
            PageClass::Hwpoison => &mut self.hwpoison,
            PageClass::Offline => &mut self.offline,
        } += n;
    }

    /// All excluded pages.
    pub fn total(&self) -> u64 {
        self.cache + self.cache_private + self.user + self.free + self.hwpoison + self.offline + self.earlier
    }
}

impl AddAssign for ClassCounts {
    fn add_assign(&mut self, o: Self) {
        self.cache += o.cache;
        self.cache_private += o.cache_private;
        self.user += o.user;
        self.free += o.free;
        self.hwpoison += o.hwpoison;
        self.offline += o.offline;
        self.earlier += o.earlier;
        self.unclassified += o.unclassified;
        self.image_kept += o.image_kept;
        self.filter_kept.iter_mut().zip(o.filter_kept).for_each(|(a, b)| *a += b);
        self.first_unclassified = match (self.first_unclassified, o.first_unclassified) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Why pages cannot be classified.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClassifyError {
    /// VMCOREINFO lacks keys the requested dump level needs.
    #[error(
        "dump level {level}: VMCOREINFO lacks {}, so bits {} cannot be honoured",
        keys.join(", "),
        unusable_bits.list()
    )]
    MissingKeys {
        /// The requested dump level.
        level: DumpLevel,
        /// The requested bits of {2, 4, 8, 16} the missing keys block.
        unusable_bits: DumpLevel,
        /// The missing keys.
        keys: Vec<&'static str>,
    },
    /// The kernel's memory sections, where the struct pages are, cannot be read.
    #[error("the kernel's memory sections cannot be read: {0}")]
    Sections(String),
    /// A VMCOREINFO value is out of the range this code supports.
    #[error("VMCOREINFO {key}={value} is unusable: {reason}")]
    BadKey {
        /// The key, e.g. `OFFSET(page.mapping)`.
        key: &'static str,
        /// Its value.
        value: i128,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Struct pages could not be read.
    #[error("reading the struct pages of pfns {:#x}..{:#x} at {vaddr:#x}: {cause}", pfns.start, pfns.end)]
    Xlat {
        /// The pfns whose struct pages were read.
        pfns: Range<u64>,
        /// Virtual address of the first struct page.
        vaddr: u64,
        /// The translation or read error.
        cause: XlatError,
    },
    /// The caller's bitset is too short for the window.
    #[error("window {:#x}..{:#x} needs {need} bitset words, got {got}", window.start, window.end)]
    Bitset {
        /// The window.
        window: Range<u64>,
        /// Words needed.
        need: usize,
        /// Words given.
        got: usize,
    },
    /// Windows must come in increasing order.
    #[error("window {:#x}..{:#x} starts before the end {previous_end:#x} of the previous one", window.start, window.end)]
    WindowOrder {
        /// The window.
        window: Range<u64>,
        /// End of the previous window.
        previous_end: u64,
    },
}

/// A multi-page exclusion that ran past the end of a window (§5.3).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pending {
    pfns: Range<u64>,
    class: PageClass,
}

/// Classifies pages window by window (see the module docs).
///
/// Owns its state (the pending exclusion carried between windows): use one
/// per pass over the dump, windows in increasing order.
pub struct PageClassifier<'m, R: PhysRead + ?Sized> {
    memory: &'m KernelMemory<'m, R>,
    sections: SectionTable,
    rules: Rules,
    level: DumpLevel,
    pending: Option<Pending>,
    previous_end: u64,
    invalid_free_orders: u64,
    keep_unreadable: bool,
    protected: Vec<Range<u64>>,
    kept: Vec<Range<u64>>,
    buf: Vec<u8>,
}

impl<'m, R: PhysRead + ?Sized> PageClassifier<'m, R> {
    /// Checks that VMCOREINFO has every key the requested bits need and
    /// derives the kernel-version dependent rules ([`Rules`]).
    ///
    /// # Errors
    ///
    /// [`ClassifyError::MissingKeys`] naming the keys and the bits they
    /// block, [`ClassifyError::BadKey`].
    pub fn new(
        memory: &'m KernelMemory<'m, R>,
        info: &VmcoreInfo,
        sections: &SectionTable,
        dump_level: DumpLevel,
    ) -> Result<Self, ClassifyError> {
        let wanted = dump_level.classified();
        let Some(rules) = Rules::from_vmcoreinfo(info)?.map(|r| r.in_byte_order(memory.arch().endian()))
        else {
            let keys = rules::BASE_KEYS.into_iter().filter(|k| info.get(k).is_none()).collect();
            return Err(ClassifyError::MissingKeys { level: dump_level, unusable_bits: wanted, keys });
        };
        let (blocked, keys) = rules.missing(dump_level);
        if !blocked.is_empty() {
            return Err(ClassifyError::MissingKeys { level: dump_level, unusable_bits: blocked, keys });
        }
        Ok(PageClassifier {
            memory,
            sections: sections.clone(),
            rules,
            level: dump_level,
            pending: None,
            previous_end: 0,
            invalid_free_orders: 0,
            keep_unreadable: false,
            protected: Vec::new(),
            kept: Vec::new(),
            buf: Vec::new(),
        })
    }

    /// With `keep`, a batch of struct pages that cannot be read (the
    /// memory holding them is not in the dump) is not an error: its pfns
    /// are kept, counted in [`ClassCounts::unclassified`], and the next
    /// batch is classified as usual. For the runs that must not end
    /// without a dump (the makedumpfile command line, `--allow-lower-level`).
    pub fn keeping_unreadable(mut self, keep: bool) -> Self {
        self.keep_unreadable = keep;
        self
    }

    /// Keeps the pfns of `ranges` (sorted: the kernel image in use,
    /// `crate::kernel::image`) whatever their struct pages say, counted in
    /// [`ClassCounts::image_kept`].
    pub fn protecting(mut self, ranges: Vec<Range<u64>>) -> Self {
        self.protected = ranges;
        self
    }

    /// Keeps the pfns of `ranges` (sorted, disjoint: what filter plugins
    /// marked to keep) whatever their struct pages say, counted in
    /// [`ClassCounts::filter_kept`].
    pub fn keeping(mut self, ranges: Vec<Range<u64>>) -> Self {
        self.kept = ranges;
        self
    }

    /// The bits of {2, 4, 8, 16} a classifier can honour with this
    /// VMCOREINFO (none if it lacks `SIZE(page)` or `OFFSET(page.flags)`, or a
    /// value is unusable).
    pub fn supported_bits(info: &VmcoreInfo) -> DumpLevel {
        match Rules::from_vmcoreinfo(info) {
            Ok(Some(rules)) => rules.supported_bits(),
            _ => DumpLevel::NONE,
        }
    }

    /// The rules in use.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Buddy pages kept because their order was invalid (makedumpfile
    /// prints "WARNING: Invalid free page order" for each).
    pub fn invalid_free_orders(&self) -> u64 {
        self.invalid_free_orders
    }

    /// Classifies the pfns of `window`. Sets bit `pfn − window.start` of
    /// `excluded` (cleared by the caller) for every excluded pfn for which
    /// `is_ram(pfn)`, and adds it to `counts`. A multi-page exclusion that
    /// runs past the window end is finished in the next call.
    ///
    /// # Errors
    ///
    /// [`ClassifyError::Xlat`] if a batch of struct pages cannot be read,
    /// [`ClassifyError::Bitset`] or [`ClassifyError::WindowOrder`] for a
    /// caller error.
    pub fn classify(
        &mut self,
        window: Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        counts: &mut ClassCounts,
    ) -> Result<(), ClassifyError> {
        let need = (window.end.saturating_sub(window.start)).div_ceil(64) as usize;
        if excluded.len() < need {
            return Err(ClassifyError::Bitset { window, need, got: excluded.len() });
        }
        if window.start < self.previous_end {
            return Err(ClassifyError::WindowOrder { window, previous_end: self.previous_end });
        }
        self.previous_end = window.end;
        // The scan borrows the classifier: the ranges are lent to the marker.
        let (protected, kept) = (std::mem::take(&mut self.protected), std::mem::take(&mut self.kept));
        let mut out = scan::Marker {
            window: window.clone(),
            is_ram,
            excluded,
            counts,
            protected: &protected,
            kept: &kept,
        };
        let mut pfn = window.start;
        if let Some(p) = self.pending.take() {
            out.exclude(p.pfns.start.max(window.start)..p.pfns.end, p.class);
            if p.pfns.end > window.end {
                self.pending = Some(p);
                (self.protected, self.kept) = (protected, kept);
                return Ok(());
            }
            pfn = pfn.max(p.pfns.end);
        }
        let scanned = self.scan(pfn, &mut out);
        (self.protected, self.kept) = (protected, kept);
        scanned
    }
}
