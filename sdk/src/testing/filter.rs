//! The filter conformance kit: [`check_filter`] runs a filter plugin through
//! its ABI table on pages with known verdicts.
//!
//! ```ignore
//! #[test]
//! fn conformance() {
//!     let cases = [(PageCase::at(0x100), Verdict::Exclude), (PageCase::at(0x200), Verdict::Keep)];
//!     check_filter(crate::vmdump_filter(), &Params::new([("ranges", "0x100-0x200")]), &cases).unwrap();
//! }
//! ```
//!
//! The kit acts as the host does: it gives the filter only what its `needs`
//! declare (exactly one page of bytes, the struct page bytes of the case), so
//! a filter that looks at more than it declared gets other verdicts than
//! expected (or, in C, reads a NULL).

use std::sync::Arc;

use super::{Failure, PAGE_SIZE, Rng, check_unknown_key_refused, corpus, fail};
use crate::client::{FilterContext, FilterModule, FilterPlugin, StderrHost};
use crate::{Needs, Params, Verdict};

/// `SIZE(page)` of x86_64 kernels: the struct page length of the kit's own
/// pages when no case gives one.
const STRUCT_PAGE_SIZE: usize = 64;
/// Threads of the threads check, each with its own context.
const THREADS: usize = 4;
/// Rounds over the cases per thread.
const ROUNDS: usize = 16;
/// Pages a context classifies before it is checked on the cases again.
const WARM_UP_PAGES: usize = 1000;

/// A page for [`check_filter`]: its pfn and, as far as the filter needs them,
/// its bytes and its `struct page` bytes. The physical address is
/// `pfn * PAGE_SIZE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageCase {
    /// Page frame number.
    pub pfn: u64,
    /// The page bytes ([`PAGE_SIZE`] of them), for a filter that needs them.
    pub data: Option<Vec<u8>>,
    /// The struct page bytes, for a filter that needs them.
    pub struct_page: Option<Vec<u8>>,
}

impl PageCase {
    /// A page known by its pfn only.
    pub fn at(pfn: u64) -> Self {
        Self { pfn, data: None, struct_page: None }
    }

    /// The same page with its bytes.
    pub fn with_data(self, data: Vec<u8>) -> Self {
        Self { data: Some(data), ..self }
    }

    /// The same page with its struct page bytes.
    pub fn with_struct_page(self, bytes: Vec<u8>) -> Self {
        Self { struct_page: Some(bytes), ..self }
    }

    /// The physical address of the page.
    pub fn paddr(&self) -> u64 {
        self.pfn.wrapping_mul(PAGE_SIZE as u64)
    }

    fn label(&self) -> String {
        format!("pfn {:#x}", self.pfn)
    }
}

/// What the kit saw on a passing filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterReport {
    /// Plugin name.
    pub name: String,
    /// What it declared it looks at.
    pub needs: Needs,
    /// Cases checked.
    pub cases: usize,
    /// Cases it excluded (as expected).
    pub excluded: usize,
    /// Classify calls made.
    pub classified: usize,
}

/// Every case must carry what the filter needs (a kit usage error otherwise).
fn check_cases_fit(needs: Needs, cases: &[(PageCase, Verdict)]) -> Result<(), Failure> {
    if cases.is_empty() {
        return Err(fail("cases", "", "no cases: give pages with their expected verdicts"));
    }
    for (case, _) in cases {
        let data_len = case.data.as_ref().map_or(0, Vec::len);
        if needs.contains(Needs::PAGE) && data_len != PAGE_SIZE {
            let detail = format!("the filter needs the page bytes: give {PAGE_SIZE} ({data_len} given)");
            return Err(fail("cases", &case.label(), detail));
        }
        if needs.contains(Needs::STRUCT_PAGE) && case.struct_page.as_ref().is_none_or(Vec::is_empty) {
            return Err(fail("cases", &case.label(), "the filter needs struct page bytes: give them"));
        }
    }
    Ok(())
}

fn classify_case(
    check: &'static str,
    ctx: &mut FilterContext<'_>,
    case: &PageCase,
) -> Result<Verdict, Failure> {
    let page = (case.pfn, case.data.as_deref(), case.struct_page.as_deref());
    classify_bytes(ctx, page).map_err(|e| fail(check, &case.label(), e))
}

/// Classifies the page `(pfn, data, struct_page)` at `pfn * PAGE_SIZE`.
fn classify_bytes(
    ctx: &mut FilterContext<'_>,
    (pfn, data, struct_page): (u64, Option<&[u8]>, Option<&[u8]>),
) -> Result<Verdict, crate::client::CallError> {
    ctx.classify(pfn, pfn.wrapping_mul(PAGE_SIZE as u64), data, struct_page)
}

/// Classifies `cases` with `ctx` and compares each verdict with the expected one.
fn expect_verdicts<'c>(
    check: &'static str,
    ctx: &mut FilterContext<'_>,
    cases: impl Iterator<Item = &'c (PageCase, Verdict)>,
) -> Result<(), Failure> {
    for (case, expected) in cases {
        let got = classify_case(check, ctx, case)?;
        if got != *expected {
            return Err(fail(check, &case.label(), format!("verdict {got:?}, expected {expected:?}")));
        }
    }
    Ok(())
}

fn new_context<'m>(module: &'m FilterModule) -> Result<FilterContext<'m>, Failure> {
    module.new_context().map_err(|e| fail("ctx_init", "", e))
}

/// Feeds `ctx` ordinary pages it must classify without failing: corpus pages
/// with random struct pages, at pfn 0, at random pfns and next to the cases.
fn warm_up(ctx: &mut FilterContext<'_>, cases: &[(PageCase, Verdict)]) -> Result<(), Failure> {
    let pages = corpus();
    let struct_len = cases.iter().find_map(|(c, _)| c.struct_page.as_ref().map(Vec::len));
    let mut struct_page = vec![0u8; struct_len.unwrap_or(STRUCT_PAGE_SIZE)];
    let mut rng = Rng(0x5EED_F11E_0000_0001);
    for i in 0..WARM_UP_PAGES {
        let near = cases[i % cases.len()].0.pfn;
        let pfn = [0, rng.next() >> 12, near.wrapping_add(1), near.wrapping_sub(1)][i % 4] & (u64::MAX >> 12);
        struct_page.iter_mut().for_each(|b| *b = rng.next() as u8);
        let page = &pages[i % pages.len()];
        classify_bytes(ctx, (pfn, Some(&page.bytes), Some(&struct_page)))
            .map_err(|e| fail("robustness", &format!("{} (pfn {pfn:#x})", page.kind), e))?;
    }
    Ok(())
}

/// A context that classified many pages gives the verdicts of a fresh one.
fn check_context_reuse(module: &FilterModule, cases: &[(PageCase, Verdict)]) -> Result<(), Failure> {
    let mut ctx = new_context(module)?;
    warm_up(&mut ctx, cases)?;
    expect_verdicts("context reuse", &mut ctx, cases.iter().rev())
}

/// Contexts on separate threads, each starting at another case, agree.
fn check_threads(module: &FilterModule, cases: &[(PageCase, Verdict)]) -> Result<(), Failure> {
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                scope.spawn(move || {
                    let mut ctx = new_context(module)?;
                    let rotated = cases.iter().cycle().skip(t % cases.len()).take(cases.len() * ROUNDS);
                    expect_verdicts("threads", &mut ctx, rotated)
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().map_err(|_| fail("threads", "", "a thread panicked"))?)
    })
}

/// Each case gets its expected verdict from a fresh context of `module`,
/// from a context that classified many other pages first, and from four
/// threads with their own contexts.
pub(super) fn check_verdicts(
    module: &FilterModule,
    needs: Needs,
    cases: &[(PageCase, Verdict)],
) -> Result<(), Failure> {
    check_cases_fit(needs, cases)?;
    expect_verdicts("verdicts", &mut new_context(module)?, cases.iter())?;
    check_context_reuse(module, cases)?;
    check_threads(module, cases)
}

/// Checks filter `plugin` with `params`: an unknown parameter is refused;
/// each case gets its expected verdict from a fresh context, from a context
/// that classified many other pages first, and from four threads with
/// their own contexts; ordinary pages never make it fail. The filter only
/// ever gets what its `needs` declare.
///
/// # Errors
/// The first rule the plugin breaks, or `cases` that lack what the filter needs.
pub fn check_filter(
    plugin: FilterPlugin,
    params: &Params,
    cases: &[(PageCase, Verdict)],
) -> Result<FilterReport, Failure> {
    let info = plugin.info();
    let host = Arc::new(StderrHost);
    check_unknown_key_refused(params, |bogus| plugin.init(bogus, host.clone()).is_ok())?;
    if info.needs.contains(Needs::KERNEL) {
        return Err(fail("needs", "", "the filter has a prepare hook: check it with check_kernel_filter"));
    }
    let module = plugin.init(params, host).map_err(|e| fail("module_init", "", e))?;
    check_verdicts(&module, info.needs, cases)?;
    Ok(FilterReport {
        name: info.name,
        needs: info.needs,
        cases: cases.len(),
        excluded: cases.iter().filter(|(_, v)| *v == Verdict::Exclude).count(),
        classified: WARM_UP_PAGES + cases.len() * (2 + THREADS * ROUNDS),
    })
}
