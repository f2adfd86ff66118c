//! vmdump filter plugin `erase`: overwrites kernel data before the dump
//! leaves the machine, named in a config of makedumpfile.conf(5)'s erase
//! commands and loops, and resolved from the dump itself: symbols from its
//! kallsyms, members from its BTF (no vmlinux, no debuginfo). The host
//! overwrites the bytes in the page data before compression and records
//! each erased expression in the dump's eraseinfo, as makedumpfile does.
//!
//! It decides in its `prepare` hook alone (ABI 1.1): no page is asked.
//!
//! Parameters: `config` (required) the config file; `fill` the byte written
//! (default `0x58`, makedumpfile's `X`); `skip-missing` (`true`/`false`,
//! default `false`): a line naming what the dumped kernel lacks (a symbol
//! of a module not loaded, a member of another kernel version) is logged
//! and skipped instead of failing the filter; any other failure (memory
//! not in the dump, no kallsyms or BTF) still fails it.
#![deny(unsafe_code)]

pub mod config;
mod eval;

use config::Command;
use eval::Eraser;
use vmdump_sdk::{Filter, FilterFactory, Host, Kernel, LogLevel, Needs, PageView, Params, SdkError, Verdict};

/// makedumpfile's fill byte, `X`.
pub const DEFAULT_FILL: u8 = 0x58;

/// The parsed config and how to run it.
pub struct EraseFilter {
    commands: Vec<Command>,
    fill: u8,
    skip_missing: bool,
    host: Host,
}

/// Never asked about a page: the filter decides in `prepare`.
pub struct NoPages;

impl FilterFactory for EraseFilter {
    type Context = NoPages;
    const NAME: &'static std::ffi::CStr = c"erase";
    const NEEDS: Needs = Needs::KERNEL;
    const CLASSIFIES: bool = false;
    const DESCRIPTION: &'static std::ffi::CStr =
        c"erases kernel data named in a makedumpfile.conf(5)-style config, param config = PATH";

    fn init(params: &Params, host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&["config", "fill", "skip-missing"])?;
        let path = params
            .get_str("config")
            .ok_or_else(|| SdkError::InvalidParam("`config`: required (the erase config file)".into()))?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| SdkError::InvalidParam(format!("`config`: cannot read {path}: {e}")))?;
        let commands =
            config::parse(&text).map_err(|e| SdkError::InvalidParam(format!("`config` {path}: {e}")))?;
        let fill = match params.get_str("fill") {
            None => DEFAULT_FILL,
            Some(text) => vmdump_sdk::parse_u64(text)
                .and_then(|n| u8::try_from(n).ok())
                .ok_or_else(|| SdkError::InvalidParam(format!("`fill`: `{text}` is not a byte value")))?,
        };
        let skip_missing = params.get_or("skip-missing", false)?;
        Ok(Self { commands, fill, skip_missing, host: *host })
    }

    fn new_context(&self) -> Result<NoPages, SdkError> {
        Ok(NoPages)
    }

    fn prepare(&mut self, kernel: &Kernel<'_>) -> Result<(), SdkError> {
        let eraser = Eraser::new(kernel, self.fill);
        for command in &self.commands {
            match eraser.run(command) {
                Ok(()) => {}
                Err(why) if self.skip_missing && why.missing => {
                    self.host.log(LogLevel::Warn, &format!("skipped: {}", why.message))
                }
                Err(why) => return Err(SdkError::failed(why.message)),
            }
        }
        Ok(())
    }
}

impl Filter for NoPages {
    fn classify(&mut self, _page: &PageView<'_>) -> Result<Verdict, SdkError> {
        Ok(Verdict::Keep)
    }
}

vmdump_sdk::export_filter!(EraseFilter);
