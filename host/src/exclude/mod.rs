//! Exclusion: which pages a dump leaves out, decided in two stages.
//!
//! - **Metadata** ([`MetadataFilter`], one cursor per pass over windows of
//!   pfns in increasing order, one bitset per window): the dump level's
//!   struct page classifier (`classifier`), the filter plugins that need
//!   the pfn or the struct page only (`plugins::PluginWindows`), and the
//!   pages a converted dump had already left out. Composed into one
//!   ([`Composed`]), it runs twice, as makedumpfile's cyclic mode does:
//!   once to write the bitmaps and count the pages (the data starts after
//!   one descriptor per page kept), once as the pipeline reads, to skip the
//!   excluded pages ([`DumpableRanges`]), which are never read.
//! - **Content** ([`content::ContentStage`], on the workers): zero pages
//!   (dump level bit 1) and the filter plugins that need the page bytes.
//!
//! [`Counts`] holds what every stage left out, by reason: the one shape of
//! the counts, from the first pass and from the workers alike.
//!
//! The dump engine (`crate::dump`) uses this module; it does not use the
//! engine: its errors are [`ExcludeError`].

mod classifier;
pub mod content;
pub mod marks;
pub mod plugins;
mod prepare;
mod recorded;
mod windows;

use std::ops::Range;

use vmdump_format::FormatError;

use crate::classify::{ClassCounts, ClassifyError};
use crate::kernel::KernelView;
use crate::level::DumpLevel;
use content::ContentStage;
use marks::{MarkedWindows, Marks};
use plugins::PluginWindows;
use recorded::Record;

pub use plugins::{FilterError, FilterSet, PluginFilter};
pub use windows::{Composed, DumpableRanges, WINDOW_PFNS, bit, for_each_window};

/// Why pages cannot be told apart.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExcludeError {
    /// The struct page classifier failed (missing VMCOREINFO keys,
    /// unreadable struct pages).
    #[error("{0}")]
    Classify(#[from] ClassifyError),
    /// Something a stage needs is missing.
    #[error("{0}")]
    Unsupported(String),
    /// The input's own record of what it holds cannot be read (a converted dump).
    #[error("{0}")]
    Input(#[from] FormatError),
    /// A filter plugin failed while the pages were read, after it had
    /// answered for the same pages in the first pass: the pages it would
    /// have left out cannot be told from the others any more.
    #[error("filter `{name}` failed on the second pass over the pages ({cause}); the dump stops there")]
    Changed {
        /// The plugin.
        name: String,
        /// Its error.
        cause: String,
    },
}

/// Shared state of a metadata filter; hands out one cursor per pass.
pub trait MetadataFilter: Sync {
    /// A cursor over windows in increasing order.
    ///
    /// # Errors
    /// When the filter cannot start (its kernel structures are unreadable).
    fn cursor(&self) -> Result<Box<dyn WindowFilter + '_>, ExcludeError>;
}

/// Classifies windows of pfns, in increasing order (state such as a free
/// block running past a window's end carries into the next call).
pub trait WindowFilter: Send {
    /// Sets bit `pfn - window.start` of `excluded` (cleared by the caller)
    /// for every excluded pfn of `window` that `is_ram`, and counts it.
    ///
    /// # Errors
    /// When the kernel structures of the window cannot be read.
    fn exclude(
        &mut self,
        window: Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        counts: &mut ClassCounts,
    ) -> Result<(), ExcludeError>;

    /// Pages each filter plugin of this cursor excluded so far, by name.
    fn plugin_counts(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
}

/// What the stages left out, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// By the struct page classifier (and a converted dump's own), by category.
    pub classes: ClassCounts,
    /// By each filter plugin, by name.
    pub plugins: Vec<(String, u64)>,
    /// Zero pages (dump level bit 1): they point at the shared zero page.
    pub zero: u64,
}

impl Counts {
    /// Adds `other` in.
    pub fn absorb(&mut self, other: Counts) {
        self.classes += other.classes;
        self.zero += other.zero;
        for (name, n) in other.plugins {
            match self.plugins.iter_mut().find(|(known, _)| *known == name) {
                Some((_, sum)) => *sum += n,
                None => self.plugins.push((name, n)),
            }
        }
    }
}

/// Everything a dump leaves out: the dump level's classes (through the
/// kernel's struct pages), the filter plugins, and other metadata stages:
/// the pages the input itself lacks (a dump's), a caller's own.
pub struct Exclusion<'a> {
    level: DumpLevel,
    kernel: Option<&'a KernelView<'a>>,
    plugins: FilterSet,
    /// What the filters' `prepare` hooks marked.
    marks: Marks,
    others: Vec<&'a dyn MetadataFilter>,
    page_size: u64,
    /// Keep pages whose struct pages cannot be read.
    keep_unreadable: bool,
    /// On a live system, the first pass's exclusions, which later passes replay.
    record: Option<Record>,
}

impl<'a> Exclusion<'a> {
    /// The stages of `level` and `plugins` (whose `prepare` hooks have run
    /// and made `marks`), then the `others`, in order.
    ///
    /// # Errors
    /// The level's classified bits or a plugin need the kernel's struct
    /// pages and `kernel` cannot give them.
    pub fn new(
        level: DumpLevel,
        kernel: Option<&'a KernelView<'a>>,
        (plugins, marks): (FilterSet, Marks),
        others: Vec<&'a dyn MetadataFilter>,
        page_size: u64,
    ) -> Result<Self, ExcludeError> {
        let wants_kernel = |why: &str| match kernel {
            None => Err(ExcludeError::Unsupported(format!("{why} needs the kernel's VMCOREINFO note"))),
            Some(kernel) => kernel.sections().map(|_| ()).map_err(|e| {
                ExcludeError::Unsupported(format!("{why}: the kernel's memory sections cannot be read: {e}"))
            }),
        };
        if !level.classified().is_empty() {
            wants_kernel(&format!("dump level {level}"))?;
            kernel.expect("checked").classifier(level)?;
        }
        if plugins.needs_struct_pages() {
            wants_kernel("a filter plugin that reads struct pages")?;
        }
        Ok(Self { level, kernel, plugins, marks, others, page_size, keep_unreadable: false, record: None })
    }

    /// With `keep`, pages whose struct pages cannot be read are kept
    /// instead of failing the dump ([`PageClassifier::keeping_unreadable`](crate::classify::PageClassifier::keeping_unreadable)).
    pub fn keeping_unreadable(mut self, keep: bool) -> Self {
        self.keep_unreadable = keep;
        self
    }

    /// For a live system of `max_pfn` pfns: the first pass over the whole
    /// machine is recorded and every later pass replays it ([`recorded`]).
    pub fn recording(mut self, max_pfn: u64) -> Self {
        self.record = Some(Record::new(max_pfn));
        self
    }

    /// The dump level.
    pub fn level(&self) -> DumpLevel {
        self.level
    }

    /// The kernel whose struct pages are classified, if any.
    pub fn kernel(&self) -> Option<&'a KernelView<'a>> {
        self.kernel
    }

    /// The filter plugins.
    pub fn plugins(&self) -> &FilterSet {
        &self.plugins
    }

    /// What the filters' `prepare` hooks marked.
    pub fn marks(&self) -> &Marks {
        &self.marks
    }

    /// The metadata stages as one filter, `None` when there is none.
    pub fn metadata(&self) -> Option<&dyn MetadataFilter> {
        let any = !self.level.classified().is_empty() || !self.plugins.metadata.is_empty();
        let any = any || self.marks.excludes();
        (any || !self.others.is_empty()).then_some(self as &dyn MetadataFilter)
    }

    /// Whether the content stage looks at the page bytes.
    pub fn reads_pages(&self) -> bool {
        self.level.excludes_zero_pages() || !self.plugins.content.is_empty()
    }

    /// A content stage for one worker.
    pub fn content_stage(&self) -> ContentStage<'_> {
        ContentStage::new(self.level, &self.plugins.content, &self.marks.erasures, self.page_size)
    }
}

impl MetadataFilter for Exclusion<'_> {
    fn cursor(&self) -> Result<Box<dyn WindowFilter + '_>, ExcludeError> {
        match &self.record {
            Some(record) => record.cursor(|| self.stages()),
            None => self.stages(),
        }
    }
}

impl Exclusion<'_> {
    /// The metadata stages, composed.
    fn stages(&self) -> Result<Box<dyn WindowFilter + '_>, ExcludeError> {
        let mut cursors: Vec<Box<dyn WindowFilter + '_>> = Vec::new();
        if let Some(kernel) = self.kernel.filter(|_| !self.level.classified().is_empty()) {
            let classifier = kernel.classifier(self.level)?.keeping_unreadable(self.keep_unreadable);
            cursors.push(Box::new(classifier.keeping(self.marks.keep.clone())));
        }
        if self.marks.excludes() {
            cursors.push(Box::new(MarkedWindows::new(&self.marks)));
        }
        if !self.plugins.metadata.is_empty() {
            let struct_pages = self.kernel.and_then(KernelView::struct_pages);
            cursors.push(Box::new(PluginWindows::new(&self.plugins.metadata, struct_pages, self.page_size)));
        }
        for other in &self.others {
            cursors.push(other.cursor()?);
        }
        Ok(Box::new(Composed::new(cursors)))
    }
}
