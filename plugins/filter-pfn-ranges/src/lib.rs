//! vmdump filter plugin `pfn-ranges`: leaves the pages of given pfn ranges out
//! of the dump (device memory, a firmware area, a huge buffer known to be
//! useless). It needs the pfn only, so the host runs it before reading any
//! page byte: excluded pages are never read.
//!
//! Parameter `ranges`: comma-separated half-open ranges `start-end` of pfns,
//! decimal or hex; `paddr:start-end` gives physical byte addresses instead,
//! on page boundaries (the page size is VMCOREINFO's `PAGESIZE`, else 4096).
//!
//! ```
//! use vmdump_sdk::{Params, Verdict, client::StderrHost};
//! let params = Params::new([("ranges", "0x100000-0x140000, paddr:0xfe000000-0xff000000")]);
//! let module = vmdump_filter_pfn_ranges::vmdump_filter().init(&params, std::sync::Arc::new(StderrHost)).unwrap();
//! let mut ctx = module.new_context().unwrap();
//! assert_eq!(ctx.classify(0x100000, 0x100000 << 12, None, None).unwrap(), Verdict::Exclude);
//! assert_eq!(ctx.classify(0x140000, 0x140000 << 12, None, None).unwrap(), Verdict::Keep);
//! ```
#![deny(unsafe_code)]

mod ranges;

use std::sync::Arc;

use ranges::{PfnRanges, parse_entries};
use vmdump_sdk::{Filter, FilterFactory, Host, Needs, PageView, Params, SdkError, Verdict};

/// Page size when VMCOREINFO has no `PAGESIZE` (x86_64).
const DEFAULT_PAGE_SIZE: u64 = 4096;

/// Shared state: the merged ranges.
pub struct PfnRangesFilter {
    ranges: Arc<PfnRanges>,
}

/// Per-thread state: the same ranges (a context cannot borrow the module).
pub struct PfnRangesContext {
    ranges: Arc<PfnRanges>,
}

impl FilterFactory for PfnRangesFilter {
    type Context = PfnRangesContext;
    const NAME: &'static std::ffi::CStr = c"pfn-ranges";
    const NEEDS: Needs = Needs::NOTHING;
    const DESCRIPTION: &'static std::ffi::CStr = c"excludes pfn ranges, param ranges = \"start-end,...\"";

    fn init(params: &Params, host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&["ranges"])?;
        let invalid = |why: String| SdkError::InvalidParam(format!("`ranges`: {why}"));
        let text = params
            .get_str("ranges")
            .ok_or_else(|| invalid("required (e.g. \"0x100000-0x140000\")".into()))?;
        let entries = parse_entries(text).map_err(invalid)?;
        let page_size = if entries.iter().any(|e| e.paddr) { page_size(host)? } else { DEFAULT_PAGE_SIZE };
        let ranges = PfnRanges::new(&entries, page_size).map_err(invalid)?;
        Ok(Self { ranges: Arc::new(ranges) })
    }

    fn new_context(&self) -> Result<PfnRangesContext, SdkError> {
        Ok(PfnRangesContext { ranges: Arc::clone(&self.ranges) })
    }
}

/// The dumped kernel's page size, for `paddr:` entries.
fn page_size(host: &Host) -> Result<u64, SdkError> {
    let Some(text) = host.vmcoreinfo("PAGESIZE") else { return Ok(DEFAULT_PAGE_SIZE) };
    match vmdump_sdk::parse_u64(text.trim()) {
        Some(size) if size.is_power_of_two() => Ok(size),
        _ => Err(SdkError::failed(format!("VMCOREINFO PAGESIZE `{text}` is not a page size"))),
    }
}

impl Filter for PfnRangesContext {
    fn classify(&mut self, page: &PageView<'_>) -> Result<Verdict, SdkError> {
        Ok(if self.ranges.contains(page.pfn) { Verdict::Exclude } else { Verdict::Keep })
    }
}

vmdump_sdk::export_filter!(PfnRangesFilter);

#[cfg(test)]
mod tests {
    use vmdump_sdk::testing::{PageCase, check_filter};
    use vmdump_sdk::{Needs, Params, Verdict};

    #[test]
    fn conformance() {
        let params = Params::new([("ranges", "0x100-0x200, 0x1000-0x1001, paddr:0x400000-0x500000")]);
        let excluded = [0x100, 0x1ff, 0x1000, 0x400, 0x4ff];
        let kept = [0, 0xff, 0x200, 0xfff, 0x1001, 0x3ff, 0x500, u64::MAX >> 12];
        let cases: Vec<_> = (excluded.iter().map(|&p| (PageCase::at(p), Verdict::Exclude)))
            .chain(kept.iter().map(|&p| (PageCase::at(p), Verdict::Keep)))
            .collect();
        let report = check_filter(crate::vmdump_filter(), &params, &cases).unwrap();
        assert_eq!((report.needs, report.excluded), (Needs::NOTHING, excluded.len()));
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        let host = std::sync::Arc::new(vmdump_sdk::client::StderrHost);
        let refusal =
            |params: Params| crate::vmdump_filter().init(&params, host.clone()).err().unwrap().message;
        assert!(refusal(Params::default()).contains("`ranges`: required"));
        assert!(refusal(Params::new([("range", "1-2")])).contains("unknown key `range`"));
        assert!(refusal(Params::new([("ranges", "1-2,0x30-0x2z")])).contains("`0x2z` is not a number"));
    }
}
