//! Filter plugins (`vmdump_filter_entry_v1`) as exclusion stages.
//!
//! A metadata filter (it needs the pfn, or the struct page too) is a
//! window stage ([`PluginWindows`]), so it takes part in the pass that
//! counts the pages and sizes the descriptor table: what it excludes leaves
//! no unused slot. It is asked again, page by page, on the reader's pass;
//! the two passes must agree. A content filter (it needs the page bytes)
//! runs on the workers ([`super::content::ContentStage`]).
//!
//! A filter that fails or panics is disabled and its pages are kept, never
//! lost: a metadata filter from the pfn where it failed in the first pass
//! on, in every pass (so the passes still agree); one that fails only in a
//! later pass, after answering for the same pages, stops the dump
//! ([`ExcludeError::Changed`]): the file is then closed as incomplete.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use vmdump_sdk::client::{CallError, FilterContext, FilterModule, HostServices};
use vmdump_sdk::{Needs, Params, Verdict};

use super::marks::Marks;
use super::prepare::PrepareHost;
use super::{ExcludeError, WindowFilter};
use crate::classify::ClassCounts;
use crate::health::Health;
use crate::kernel::{KernelView, StructPages};
use crate::plugin::LoadedFilter;
use crate::ranges;

/// Why a filter cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    /// module_init refused its parameters or failed.
    #[error("filter `{name}` ({path}): {cause}")]
    Init {
        /// Plugin name.
        name: String,
        /// Its file.
        path: String,
        /// The plugin's error.
        cause: CallError,
    },
    /// It needs both page bytes and struct page bytes, which no stage has together.
    #[error("filter `{0}` needs both the page bytes and the struct page: split it into two filters")]
    NeedsBoth(String),
}

/// One initialised filter plugin, shared by every thread.
pub struct PluginFilter {
    name: String,
    module: FilterModule,
    health: Health,
    /// The pfn where it failed in the first pass (a metadata filter): it
    /// is not asked about this pfn and the later ones in any pass.
    failed_at: AtomicU64,
    /// Passes begun over its pages (a metadata filter).
    passes: AtomicUsize,
}

impl PluginFilter {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its first failure, if it failed (it was then disabled, pages kept).
    pub fn failure(&self) -> Option<CallError> {
        self.health.failure()
    }
}

/// The filters of a dump, by where they run.
#[derive(Default)]
pub struct FilterSet {
    /// Decide from the pfn (and struct page): window stages.
    pub metadata: Vec<PluginFilter>,
    /// Decide from the page bytes: on the workers.
    pub content: Vec<PluginFilter>,
    /// Decide in their `prepare` hook alone (ABI 1.1): never asked about a page.
    pub kernel_only: Vec<PluginFilter>,
}

impl FilterSet {
    /// Initialises each filter with its parameters, in the order given.
    ///
    /// # Errors
    /// [`FilterError`] for the first filter that cannot be used.
    pub fn new(
        filters: &[(&LoadedFilter, Params)],
        host: &Arc<dyn HostServices>,
    ) -> Result<Self, FilterError> {
        let mut set = Self::default();
        for (loaded, params) in filters {
            let name = loaded.info.name.clone();
            if loaded.info.needs.contains(Needs::STRUCT_PAGE) && loaded.info.needs.contains(Needs::PAGE) {
                return Err(FilterError::NeedsBoth(name));
            }
            let module = loaded.plugin.init(params, host.clone()).map_err(|cause| FilterError::Init {
                name: name.clone(),
                path: loaded.path.display().to_string(),
                cause,
            })?;
            let filter = PluginFilter {
                name,
                module,
                health: Health::default(),
                failed_at: AtomicU64::new(u64::MAX),
                passes: AtomicUsize::new(0),
            };
            let stage = match loaded.info.needs {
                _ if !loaded.plugin.classifies() => &mut set.kernel_only,
                needs if needs.contains(Needs::PAGE) => &mut set.content,
                _ => &mut set.metadata,
            };
            stage.push(filter);
        }
        Ok(set)
    }

    /// Whether there is no filter at all.
    pub fn is_empty(&self) -> bool {
        self.all().next().is_none()
    }

    fn all(&self) -> impl Iterator<Item = &PluginFilter> {
        self.metadata.iter().chain(&self.content).chain(&self.kernel_only)
    }

    /// Runs the `prepare` hook of every filter that has one (ABI 1.1), in
    /// the order given, over `kernel`, and gathers their marks. A hook that
    /// fails leaves no mark: its filter is disabled (its pages kept) and
    /// reported, with why the kernel services it asked for were unavailable.
    pub fn prepare(&mut self, kernel: Option<&KernelView<'_>>, max_pfn: u64) -> Marks {
        let mut marks = Marks::default();
        let mut keep = Vec::new();
        let all = self.metadata.iter_mut().chain(&mut self.content).chain(&mut self.kernel_only);
        for filter in all.filter(|f| f.module.needs().contains(Needs::KERNEL)) {
            let host = PrepareHost::new(kernel, max_pfn);
            let ran = filter.module.prepare(&host);
            let (made, reasons) = host.finish();
            match ran {
                Ok(()) => {
                    keep.extend(made.keep);
                    marks.exclude.push((filter.name.clone(), ranges::merge(made.exclude)));
                    marks.erasures.absorb(made.erasures);
                }
                Err(mut e) => {
                    if !reasons.is_empty() {
                        e.message = format!("{}; the dump could not give: {}", e.message, reasons.join("; "));
                    }
                    filter.failed_at.store(0, Ordering::SeqCst);
                    filter.health.fail(e);
                }
            }
        }
        marks.keep = ranges::merge(keep);
        marks.erasures.seal();
        marks
    }

    /// Whether a metadata filter reads struct pages.
    pub fn needs_struct_pages(&self) -> bool {
        self.metadata.iter().any(|f| f.module.needs().contains(Needs::STRUCT_PAGE))
    }

    /// The filters that failed, with their first error.
    pub fn failures(&self) -> Vec<(String, String)> {
        self.all().filter_map(|f| f.failure().map(|e| (f.name.clone(), e.to_string()))).collect()
    }
}

/// One thread's contexts of a list of filters, with what each excluded.
pub struct FilterStage<'f> {
    filters: &'f [PluginFilter],
    contexts: Vec<Result<FilterContext<'f>, CallError>>,
    excluded: Vec<u64>,
}

impl<'f> FilterStage<'f> {
    /// Contexts for `filters` on this thread (a context that cannot be
    /// created fails the filter where it is first asked).
    pub fn new(filters: &'f [PluginFilter]) -> Self {
        let contexts = filters.iter().map(|f| f.module.new_context()).collect();
        Self { filters, contexts, excluded: vec![0; filters.len()] }
    }

    /// Whether any filter excludes the page (the first that does counts
    /// it); a filter that fails is disabled for the run and its pages kept.
    pub fn excludes(&mut self, pfn: u64, paddr: u64, data: Option<&[u8]>) -> bool {
        for i in 0..self.filters.len() {
            if self.filters[i].health.is_disabled() {
                continue;
            }
            match self.verdict(i, pfn, paddr, data, None) {
                Ok(Verdict::Exclude) => return true,
                Ok(Verdict::Keep) => {}
                Err(e) => self.filters[i].health.fail(e),
            }
        }
        false
    }

    /// Filter `i`'s verdict, counted when it excludes.
    fn verdict(
        &mut self,
        i: usize,
        pfn: u64,
        paddr: u64,
        data: Option<&[u8]>,
        struct_page: Option<&[u8]>,
    ) -> Result<Verdict, CallError> {
        let verdict = match &mut self.contexts[i] {
            Ok(ctx) => ctx.classify(pfn, paddr, data, struct_page),
            Err(e) => Err(e.clone()),
        };
        if matches!(verdict, Ok(Verdict::Exclude)) {
            self.excluded[i] += 1;
        }
        verdict
    }

    /// Pages each filter excluded, by name.
    pub fn counts(&self) -> Vec<(String, u64)> {
        self.filters.iter().zip(&self.excluded).map(|(f, &n)| (f.name.clone(), n)).collect()
    }
}

/// The metadata filters as one window stage, for one pass.
pub struct PluginWindows<'f> {
    filters: &'f [PluginFilter],
    stage: FilterStage<'f>,
    struct_pages: Option<StructPages<'f, 'f>>,
    page_size: u64,
    /// Whether this is the first pass over each filter's pages.
    first: Vec<bool>,
}

impl<'f> PluginWindows<'f> {
    /// A pass of `filters`, which read their struct pages from `struct_pages`.
    pub fn new(
        filters: &'f [PluginFilter],
        struct_pages: Option<StructPages<'f, 'f>>,
        page_size: u64,
    ) -> Self {
        let first = filters.iter().map(|f| f.passes.fetch_add(1, Ordering::SeqCst) == 0).collect();
        Self { filters, stage: FilterStage::new(filters), struct_pages, page_size, first }
    }

    /// Whether filter `i` excludes `pfn`.
    fn excludes(&mut self, i: usize, pfn: u64) -> Result<bool, ExcludeError> {
        let filter = &self.filters[i];
        if pfn >= filter.failed_at.load(Ordering::SeqCst) {
            return Ok(false);
        }
        let struct_page = self.struct_pages.as_mut().and_then(|s| s.get(pfn));
        match self.stage.verdict(i, pfn, pfn * self.page_size, None, struct_page) {
            Ok(verdict) => Ok(verdict == Verdict::Exclude),
            Err(e) if self.first[i] => {
                filter.failed_at.store(pfn, Ordering::SeqCst);
                filter.health.fail(e);
                Ok(false)
            }
            Err(e) => Err(ExcludeError::Changed { name: filter.name.clone(), cause: e.to_string() }),
        }
    }
}

impl WindowFilter for PluginWindows<'_> {
    fn exclude(
        &mut self,
        window: std::ops::Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        _counts: &mut ClassCounts,
    ) -> Result<(), ExcludeError> {
        for pfn in window.clone().filter(|&pfn| is_ram(pfn)) {
            for i in 0..self.filters.len() {
                if self.excludes(i, pfn)? {
                    let bit = pfn - window.start;
                    excluded[(bit / 64) as usize] |= 1 << (bit % 64);
                    break;
                }
            }
        }
        Ok(())
    }

    fn plugin_counts(&self) -> Vec<(String, u64)> {
        self.stage.counts()
    }
}
