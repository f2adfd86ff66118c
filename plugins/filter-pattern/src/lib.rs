//! vmdump filter plugin `pattern`: leaves out of the dump a page made of one
//! 64-bit pattern repeated, by default the kernel's poison values
//! (0x6b: freed slab objects, 0x5a: uninitialised ones), which hold nothing a
//! debugger can use. It reads the page bytes, so the host runs it on the
//! workers, after the zero-page check.
//!
//! Parameter `patterns`: comma-separated 64-bit values, decimal or hex, read
//! as the little-endian words an x86_64 kernel writes. The check is a compare
//! of the first word, then of the page against a prepared block: most pages
//! are rejected after 8 bytes.
//!
//! ```
//! use vmdump_sdk::{Params, Verdict, client::StderrHost};
//! let module = vmdump_filter_pattern::vmdump_filter().init(&Params::default(), std::sync::Arc::new(StderrHost)).unwrap();
//! let mut ctx = module.new_context().unwrap();
//! assert_eq!(ctx.classify(1, 4096, Some(&[0x6b; 4096]), None).unwrap(), Verdict::Exclude);
//! assert_eq!(ctx.classify(1, 4096, Some(&[0x00; 4096]), None).unwrap(), Verdict::Keep);
//! ```
#![deny(unsafe_code)]

mod patterns;

use std::sync::Arc;

use patterns::Pattern;
use vmdump_sdk::{Filter, FilterFactory, Host, Needs, PageView, Params, SdkError, Verdict};

/// The kernel's slab poison (`POISON_FREE`) and uninitialised-memory poison
/// (`POISON_INUSE`), as 64-bit words.
pub const DEFAULT_PATTERNS: &str = "0x6b6b6b6b6b6b6b6b,0x5a5a5a5a5a5a5a5a";

/// Shared state: the prepared patterns.
pub struct PatternFilter {
    patterns: Arc<[Pattern]>,
}

/// Per-thread state: the same patterns (a context cannot borrow the module).
pub struct PatternContext {
    patterns: Arc<[Pattern]>,
}

impl FilterFactory for PatternFilter {
    type Context = PatternContext;
    const NAME: &'static std::ffi::CStr = c"pattern";
    const NEEDS: Needs = Needs::PAGE;
    const DESCRIPTION: &'static std::ffi::CStr =
        c"excludes pages of one repeated 64-bit pattern, param patterns (default slab poison)";

    fn init(params: &Params, _host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&["patterns"])?;
        let text = params.get_str("patterns").unwrap_or(DEFAULT_PATTERNS);
        let patterns =
            patterns::parse(text).map_err(|why| SdkError::InvalidParam(format!("`patterns`: {why}")))?;
        Ok(Self { patterns: patterns.into() })
    }

    fn new_context(&self) -> Result<PatternContext, SdkError> {
        Ok(PatternContext { patterns: Arc::clone(&self.patterns) })
    }
}

impl Filter for PatternContext {
    fn classify(&mut self, page: &PageView<'_>) -> Result<Verdict, SdkError> {
        let data = page.data.ok_or_else(|| SdkError::failed("no page bytes"))?;
        let repeated = self.patterns.iter().any(|p| p.fills(data));
        Ok(if repeated { Verdict::Exclude } else { Verdict::Keep })
    }
}

vmdump_sdk::export_filter!(PatternFilter);

#[cfg(test)]
mod tests {
    use vmdump_sdk::testing::{PAGE_SIZE, PageCase, check_filter};
    use vmdump_sdk::{Params, Verdict};

    fn page_of(word: u64) -> Vec<u8> {
        word.to_le_bytes().repeat(PAGE_SIZE / 8)
    }

    fn case(pfn: u64, data: Vec<u8>, verdict: Verdict) -> (PageCase, Verdict) {
        (PageCase::at(pfn).with_data(data), verdict)
    }

    #[test]
    fn conformance_with_the_default_poison_patterns() {
        let mut poison_end = page_of(0x6b6b_6b6b_6b6b_6b6b);
        poison_end[PAGE_SIZE - 1] = 0xa5; // a freed object: the poison ends with POISON_END
        let mut mixed = page_of(0x6b6b_6b6b_6b6b_6b6b);
        mixed[PAGE_SIZE - 8..].fill(0x5a);
        let cases = [
            case(1, page_of(0x6b6b_6b6b_6b6b_6b6b), Verdict::Exclude),
            case(2, page_of(0x5a5a_5a5a_5a5a_5a5a), Verdict::Exclude),
            case(3, vec![0; PAGE_SIZE], Verdict::Keep),
            case(4, poison_end, Verdict::Keep),
            case(5, mixed, Verdict::Keep),
            case(6, page_of(0xdead_beef_dead_beef), Verdict::Keep),
        ];
        let report = check_filter(crate::vmdump_filter(), &Params::default(), &cases).unwrap();
        assert_eq!(report.excluded, 2);
    }

    #[test]
    fn conformance_with_given_patterns() {
        let params = Params::new([("patterns", "0xdeadbeefdeadbeef, 0x0123456789abcdef")]);
        let cases = [
            case(1, page_of(0xdead_beef_dead_beef), Verdict::Exclude),
            case(2, page_of(0x0123_4567_89ab_cdef), Verdict::Exclude),
            case(3, page_of(0xefcd_ab89_6745_2301), Verdict::Keep), // the other byte order
            case(4, page_of(0x6b6b_6b6b_6b6b_6b6b), Verdict::Keep), // defaults replaced
        ];
        check_filter(crate::vmdump_filter(), &params, &cases).unwrap();
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        let host = std::sync::Arc::new(vmdump_sdk::client::StderrHost);
        let refusal = |p: Params| crate::vmdump_filter().init(&p, host.clone()).err().unwrap().message;
        assert!(refusal(Params::new([("pattern", "1")])).contains("unknown key `pattern`"));
        assert!(
            refusal(Params::new([("patterns", "0x6b6b,0xzz")])).contains("`0xzz` is not a 64-bit number")
        );
    }
}
