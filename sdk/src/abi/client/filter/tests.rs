//! The filter client against tables a plugin could get wrong: each load-time
//! check, a bad verdict, a panic, a missing declared input, VMCOREINFO.

use std::ffi::{CStr, c_int, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::abi::RawError;
use crate::abi::export::{cstr, filter_table};
use crate::client::StderrHost;
use crate::{Filter, FilterFactory, Host, LogLevel, PageView, SdkError};

static CLASSIFIED: AtomicUsize = AtomicUsize::new(0);

/// Excludes pages whose first byte is 0xff, and panics on pfn 13; its
/// init needs VMCOREINFO `SIZE(page)` when given `needs-vmcoreinfo`.
struct FirstByte;

impl FilterFactory for FirstByte {
    type Context = FirstByte;
    const NAME: &'static CStr = c"first-byte";
    const NEEDS: Needs = Needs::PAGE;
    fn init(params: &Params, host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&["needs-vmcoreinfo"])?;
        if params.get_str("needs-vmcoreinfo").is_some()
            && host.vmcoreinfo("SIZE(page)").as_deref() != Some("64")
        {
            return Err(SdkError::failed("no SIZE(page) in VMCOREINFO"));
        }
        Ok(FirstByte)
    }
    fn new_context(&self) -> Result<FirstByte, SdkError> {
        Ok(FirstByte)
    }
}

impl Filter for FirstByte {
    fn classify(&mut self, page: &PageView<'_>) -> Result<Verdict, SdkError> {
        CLASSIFIED.fetch_add(1, Ordering::Relaxed);
        assert!(page.pfn != 13, "unlucky pfn");
        let data = page.data.expect("declared");
        Ok(if data[0] == 0xff { Verdict::Exclude } else { Verdict::Keep })
    }
}

fn good_table() -> &'static FilterV1 {
    Box::leak(Box::new(filter_table::<FirstByte>(cstr("1.0\0")))).as_raw()
}

/// `from_raw` on a leaked copy of a table, as ABI 1.1 lays it out (with
/// no `prepare`; `struct_size` says whether the host may read that field).
fn load(table: FilterV1) -> Result<FilterPlugin, TableError> {
    load_1_1(table, None)
}

/// `from_raw` on a leaked 1.1 table with `prepare`.
fn load_1_1(v1_0: FilterV1, prepare: Option<crate::abi::PrepareFn>) -> Result<FilterPlugin, TableError> {
    let table: &'static FilterV1_1 = Box::leak(Box::new(FilterV1_1 { v1_0, prepare }));
    // SAFETY: a complete, leaked table whose pointers come from a valid one.
    unsafe { FilterPlugin::from_raw(&table.v1_0) }
}

/// A `prepare` that does nothing.
///
/// # Safety
/// As [`crate::abi::PrepareFn`].
unsafe extern "C" fn prepares_nothing(
    _: *mut c_void,
    _: *const crate::abi::RawKernel,
    _: *mut RawError,
) -> c_int {
    status::OK
}

#[test]
fn each_table_defect_gets_its_own_error() {
    let base = good_table();
    // SAFETY: null is allowed and refused.
    assert_eq!(unsafe { FilterPlugin::from_raw(std::ptr::null()) }.unwrap_err(), TableError::Refused);
    assert!(matches!(load(FilterV1 { magic: 1, ..*base }), Err(TableError::BadMagic(1))));
    assert!(matches!(
        load(FilterV1 { abi_major: 2, ..*base }),
        Err(TableError::AbiMajor { plugin: (2, 1), .. })
    ));
    assert!(matches!(
        load(FilterV1 { struct_size: 88, ..*base }),
        Err(TableError::ShortTable { size: 88, .. })
    ));
    assert_eq!(
        load(FilterV1 { classify: None, ..*base }).unwrap_err(),
        TableError::MissingCallback("classify")
    );
    assert_eq!(load(FilterV1 { needs: 0x8, ..*base }).unwrap_err(), TableError::BadNeeds(0x8));
    // ABI 1.1: a filter that needs the kernel has a prepare hook, in a table
    // long enough to hold it; one that decides there alone may not classify.
    let kernel = crate::abi::needs::KERNEL;
    assert_eq!(
        load(FilterV1 { needs: kernel, ..*base }).unwrap_err(),
        TableError::MissingCallback("prepare")
    );
    let short = FilterV1 { needs: kernel, struct_size: 96, ..*base };
    assert_eq!(load_1_1(short, Some(prepares_nothing)).unwrap_err(), TableError::MissingCallback("prepare"));
    let kernel_only = FilterV1 { needs: kernel, classify: None, ..*base };
    assert!(!load_1_1(kernel_only, Some(prepares_nothing)).unwrap().classifies());
    let both = FilterV1 { needs: kernel | crate::abi::needs::PAGE, classify: None, ..*base };
    assert_eq!(load_1_1(both, Some(prepares_nothing)).unwrap_err(), TableError::MissingCallback("classify"));
    // A 1.0 table (96 bytes) loads; the host never reads past it.
    assert!(load_1_1(FilterV1 { struct_size: 96, abi_minor: 0, ..*base }, None).is_ok());
    let bad_name = load(FilterV1 { name: c"First Byte".as_ptr(), ..*base }).unwrap_err();
    assert!(matches!(bad_name, TableError::BadName(_)), "{bad_name}");
    let info = load(FilterV1 { ..*base }).unwrap().info();
    assert_eq!((info.name.as_str(), info.needs, info.abi), ("first-byte", Needs::PAGE, (1, 1)));
}

#[test]
fn verdicts_pass_through_and_undeclared_inputs_are_dropped() {
    let module =
        load(FilterV1 { ..*good_table() }).unwrap().init(&Params::default(), Arc::new(StderrHost)).unwrap();
    let mut ctx = module.new_context().unwrap();
    let (ones, zeros) = ([0xffu8; 4096], [0u8; 4096]);
    assert_eq!(ctx.classify(1, 4096, Some(&ones), Some(&[1; 64])), Ok(Verdict::Exclude));
    assert_eq!(ctx.classify(2, 8192, Some(&zeros), None), Ok(Verdict::Keep));
}

#[test]
fn a_missing_declared_input_is_refused_without_calling_the_plugin() {
    let module =
        load(FilterV1 { ..*good_table() }).unwrap().init(&Params::default(), Arc::new(StderrHost)).unwrap();
    let mut ctx = module.new_context().unwrap();
    let before = CLASSIFIED.load(Ordering::Relaxed);
    let err = ctx.classify(1, 4096, None, None).unwrap_err();
    assert_eq!((err.call, err.status), ("classify", None), "{err}");
    assert_eq!(CLASSIFIED.load(Ordering::Relaxed), before, "the plugin was called");
}

#[test]
fn a_panic_comes_back_as_a_status() {
    let module =
        load(FilterV1 { ..*good_table() }).unwrap().init(&Params::default(), Arc::new(StderrHost)).unwrap();
    let err = module.new_context().unwrap().classify(13, 13 * 4096, Some(&[0; 4096]), None).unwrap_err();
    assert!(err.is_panic() && err.message.contains("unlucky pfn"), "{err}");
}

/// A `classify` that answers verdict 7.
///
/// # Safety
/// As [`crate::abi::ClassifyFn`].
unsafe extern "C" fn writes_seven(
    _: *mut c_void,
    _: *const RawPage,
    verdict: *mut u32,
    _: *mut RawError,
) -> c_int {
    // SAFETY: the client passes a valid out-pointer.
    unsafe { *verdict = 7 };
    status::OK
}

#[test]
fn a_verdict_that_is_not_one_is_misbehaviour() {
    let plugin = load(FilterV1 { classify: Some(writes_seven), ..*good_table() }).unwrap();
    let module = plugin.init(&Params::default(), Arc::new(StderrHost)).unwrap();
    let err = module.new_context().unwrap().classify(1, 4096, Some(&[0; 4096]), None).unwrap_err();
    assert_eq!(err.status, None);
    assert!(err.to_string().contains("misbehaved") && err.message.contains("verdict 7"), "{err}");
}

/// Host services that know one VMCOREINFO key.
struct KnowsPageSize;

impl HostServices for KnowsPageSize {
    fn log(&self, _: &str, _: LogLevel, _: &str) {}
    fn vmcoreinfo(&self, key: &str) -> Option<String> {
        (key == "SIZE(page)").then(|| "64".to_owned())
    }
}

#[test]
fn a_filter_reads_vmcoreinfo_through_the_host_and_refuses_unknown_keys() {
    let plugin = load(FilterV1 { ..*good_table() }).unwrap();
    let wants = Params::new([("needs-vmcoreinfo", "1")]);
    assert!(plugin.init(&wants, Arc::new(KnowsPageSize)).is_ok());
    let err = plugin.init(&wants, Arc::new(StderrHost)).map(|_| ()).unwrap_err();
    assert!(err.message.contains("SIZE(page)"), "{err}");
    let err = plugin.init(&Params::new([("bogus", "1")]), Arc::new(StderrHost)).map(|_| ()).unwrap_err();
    assert_eq!(err.status, Some(status::INVALID_PARAM), "{err}");
}
