//! The filter conformance kit passes an honest filter, exported with the
//! macro, and fails each deliberately wrong one (built with `filter_table`,
//! no macro) at the check that catches it.

use std::ffi::CStr;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::ThreadId;

use vmdump_sdk::abi::export::{ExportedFilterTable, cstr, filter_table};
use vmdump_sdk::client::FilterPlugin;
use vmdump_sdk::testing::{PAGE_SIZE, PageCase, check_filter};
use vmdump_sdk::{Filter, FilterFactory, Host, Needs, PageView, Params, SdkError, Verdict};

/// How a test filter decides: excluded or not, from the page and whether the
/// context runs on the thread that initialised the module.
trait Judge: Send + Sync + 'static {
    const NAME: &'static CStr;
    const NEEDS: Needs = Needs::NOTHING;
    fn excludes(page: &PageView<'_>, on_init_thread: bool) -> bool;
}

/// The filter (factory and context alike) of a [`Judge`].
struct Judged<J> {
    init_thread: ThreadId,
    judge: PhantomData<fn() -> J>,
}

impl<J: Judge> FilterFactory for Judged<J> {
    type Context = Judged<J>;
    const NAME: &'static CStr = J::NAME;
    const NEEDS: Needs = J::NEEDS;
    fn init(params: &Params, _host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&[])?;
        Ok(Judged { init_thread: std::thread::current().id(), judge: PhantomData })
    }
    fn new_context(&self) -> Result<Self, SdkError> {
        Ok(Judged { init_thread: self.init_thread, judge: PhantomData })
    }
}

impl<J: Judge> Filter for Judged<J> {
    fn classify(&mut self, page: &PageView<'_>) -> Result<Verdict, SdkError> {
        let on_init_thread = std::thread::current().id() == self.init_thread;
        Ok(if J::excludes(page, on_init_thread) { Verdict::Exclude } else { Verdict::Keep })
    }
}

/// Honest: excludes odd pfns.
struct OddPfns;
impl Judge for OddPfns {
    const NAME: &'static CStr = c"odd-pfns";
    fn excludes(page: &PageView<'_>, _: bool) -> bool {
        page.pfn % 2 == 1
    }
}
vmdump_sdk::export_filter!(Judged<OddPfns>);

/// Honest: excludes pages of 0xff bytes.
struct AllOnes;
impl Judge for AllOnes {
    const NAME: &'static CStr = c"all-ones";
    const NEEDS: Needs = Needs::PAGE;
    fn excludes(page: &PageView<'_>, _: bool) -> bool {
        page.data.is_some_and(|d| d.iter().all(|&b| b == 0xff))
    }
}

/// Honest metadata filter: excludes pages whose struct page's first byte has
/// bit 0 set; it must never see the page bytes.
struct FlagBit;
impl Judge for FlagBit {
    const NAME: &'static CStr = c"flag-bit";
    const NEEDS: Needs = Needs::STRUCT_PAGE;
    fn excludes(page: &PageView<'_>, _: bool) -> bool {
        assert!(page.data.is_none(), "a metadata filter got page bytes");
        page.struct_page.is_some_and(|s| s.len() == 64 && s[0] & 1 == 1)
    }
}

/// Wrong verdicts: the even pfns.
struct EvenPfns;
impl Judge for EvenPfns {
    const NAME: &'static CStr = c"even-pfns";
    fn excludes(page: &PageView<'_>, _: bool) -> bool {
        page.pfn.is_multiple_of(2)
    }
}

/// Looks at page bytes it did not declare.
struct Peeking;
impl Judge for Peeking {
    const NAME: &'static CStr = c"peeking";
    fn excludes(page: &PageView<'_>, _: bool) -> bool {
        page.data.is_some_and(|d| d[0] == 0xff)
    }
}

/// Right on the thread that built the module only.
struct ThreadBound;
impl Judge for ThreadBound {
    const NAME: &'static CStr = c"thread-bound";
    fn excludes(page: &PageView<'_>, on_init_thread: bool) -> bool {
        (page.pfn % 2 == 1) == on_init_thread
    }
}

/// Panics on pfn 0, which no case has.
struct PanicsAtZero;
impl Judge for PanicsAtZero {
    const NAME: &'static CStr = c"panics-at-zero";
    fn excludes(page: &PageView<'_>, _: bool) -> bool {
        assert!(page.pfn != 0, "pfn 0 is not expected");
        page.pfn % 2 == 1
    }
}

/// Excludes everything once it has seen 200 pages (counted over all contexts).
struct Stateful;
static SEEN: AtomicU64 = AtomicU64::new(0);
impl Judge for Stateful {
    const NAME: &'static CStr = c"stateful";
    fn excludes(page: &PageView<'_>, _: bool) -> bool {
        SEEN.fetch_add(1, Ordering::Relaxed) >= 200 || page.pfn % 2 == 1
    }
}

/// Accepts any parameter.
struct Lenient;
impl FilterFactory for Lenient {
    type Context = Judged<OddPfns>;
    const NAME: &'static CStr = c"lenient";
    const NEEDS: Needs = Needs::NOTHING;
    fn init(_params: &Params, _host: &Host) -> Result<Self, SdkError> {
        Ok(Lenient)
    }
    fn new_context(&self) -> Result<Judged<OddPfns>, SdkError> {
        Judged::init(&Params::default(), &Host::detached())
    }
}

fn plugin_of<F: FilterFactory>() -> FilterPlugin {
    let table: &'static ExportedFilterTable = Box::leak(Box::new(filter_table::<F>(cstr("0.0\0"))));
    FilterPlugin::from_exported(table)
}

fn odd_pfn_cases() -> Vec<(PageCase, Verdict)> {
    (1..=6u64)
        .map(|pfn| (PageCase::at(pfn), if pfn % 2 == 1 { Verdict::Exclude } else { Verdict::Keep }))
        .collect()
}

fn failed_check<F: FilterFactory>(cases: &[(PageCase, Verdict)]) -> &'static str {
    let failure =
        check_filter(plugin_of::<F>(), &Params::default(), cases).expect_err("a wrong filter passed");
    eprintln!("{failure}");
    failure.check
}

#[test]
fn an_honest_filter_passes_through_the_exported_table_and_entry() {
    let report = check_filter(vmdump_filter(), &Params::default(), &odd_pfn_cases()).unwrap();
    assert_eq!(
        (report.name.as_str(), report.needs, report.cases, report.excluded),
        ("odd-pfns", Needs::NOTHING, 6, 3)
    );
    assert!(!vmdump_filter_entry_v1(1, 0).is_null());
    assert!(vmdump_filter_entry_v1(2, 0).is_null(), "another major is refused");
    assert_eq!(vmdump_filter().info().version, env!("CARGO_PKG_VERSION"));
}

#[test]
fn a_wrong_verdict_fails_the_verdicts_check() {
    assert_eq!(failed_check::<Judged<EvenPfns>>(&odd_pfn_cases()), "verdicts");
}

#[test]
fn a_filter_that_remembers_pages_fails_context_reuse() {
    assert_eq!(failed_check::<Judged<Stateful>>(&odd_pfn_cases()), "context reuse");
}

#[test]
fn a_filter_whose_verdict_depends_on_the_thread_fails_threads() {
    assert_eq!(failed_check::<Judged<ThreadBound>>(&odd_pfn_cases()), "threads");
}

#[test]
fn a_filter_accepting_unknown_keys_fails() {
    assert_eq!(failed_check::<Lenient>(&odd_pfn_cases()), "unknown parameter");
}

#[test]
fn a_panic_on_an_ordinary_page_fails_robustness() {
    assert_eq!(failed_check::<Judged<PanicsAtZero>>(&odd_pfn_cases()), "robustness");
}

#[test]
fn a_filter_never_sees_what_it_did_not_declare() {
    let ones = vec![0xff; PAGE_SIZE];
    let cases = [(PageCase::at(1).with_data(ones.clone()), Verdict::Exclude)];
    assert_eq!(
        failed_check::<Judged<Peeking>>(&cases),
        "verdicts",
        "undeclared page bytes must not reach it"
    );
    let report = check_filter(plugin_of::<Judged<AllOnes>>(), &Params::default(), &cases).unwrap();
    assert_eq!(report.needs, Needs::PAGE);
}

#[test]
fn cases_must_carry_one_page_for_a_page_filter() {
    assert_eq!(failed_check::<Judged<AllOnes>>(&[(PageCase::at(1), Verdict::Keep)]), "cases");
    let short = [(PageCase::at(1).with_data(vec![0xff; 100]), Verdict::Exclude)];
    assert_eq!(failed_check::<Judged<AllOnes>>(&short), "cases");
    assert_eq!(failed_check::<Judged<OddPfns>>(&[]), "cases");
}

#[test]
fn a_metadata_filter_gets_the_struct_page_and_nothing_more() {
    let flagged = |pfn, flags: u8| {
        let mut struct_page = vec![0u8; 64];
        struct_page[0] = flags;
        PageCase::at(pfn).with_data(vec![0xff; PAGE_SIZE]).with_struct_page(struct_page)
    };
    let cases = [(flagged(1, 1), Verdict::Exclude), (flagged(2, 2), Verdict::Keep)];
    let report = check_filter(plugin_of::<Judged<FlagBit>>(), &Params::default(), &cases).unwrap();
    assert_eq!((report.needs, report.excluded), (Needs::STRUCT_PAGE, 1));
    assert_eq!(failed_check::<Judged<FlagBit>>(&[(PageCase::at(1), Verdict::Keep)]), "cases");
}
