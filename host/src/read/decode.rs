//! Decompressing stored pages through the compressor plugins, found by
//! the on-disk format code (kdump-format.md §1.8).

use std::sync::Arc;

use vmdump_sdk::client::{CompressorContext, CompressorModule, StderrHost};
use vmdump_sdk::{KdumpFormat, Params};

use crate::plugin::Registry;

/// One initialised module per standard format the registry has a plugin for.
pub struct Modules {
    modules: Vec<(u32, String, CompressorModule)>,
    /// Formats whose plugin failed to initialise, with the reason.
    pub failed: Vec<(u32, String)>,
}

impl Modules {
    /// Initialises the first plugin of each standard format with default parameters.
    pub fn new(registry: &Registry) -> Self {
        let mut modules = Vec::new();
        let mut failed = Vec::new();
        for format in KdumpFormat::STANDARD {
            let Some(c) = registry.compressors.iter().find(|c| c.info.format == format) else { continue };
            match c.plugin.init(&Params::default(), Arc::new(StderrHost)) {
                Ok(m) => modules.push((format.code(), c.info.name.clone(), m)),
                Err(e) => {
                    failed.push((format.code(), format!("plugin {} does not initialise: {e}", c.info.name)))
                }
            }
        }
        Modules { modules, failed }
    }

    /// One context per module.
    pub fn decoder(&self) -> Decoder<'_> {
        let mut contexts = Vec::new();
        let mut failed = self.failed.clone();
        for (code, name, module) in &self.modules {
            match module.new_context() {
                Ok(ctx) => contexts.push((*code, ctx)),
                Err(e) => failed.push((*code, format!("plugin {name} gives no context: {e}"))),
            }
        }
        Decoder { contexts, failed }
    }
}

/// Decompresses pages, one context per format.
pub struct Decoder<'m> {
    contexts: Vec<(u32, CompressorContext<'m>)>,
    failed: Vec<(u32, String)>,
}

/// The name of a page flag, for messages.
pub fn format_name(flags: u32) -> String {
    match KdumpFormat::from_code(flags) {
        Some(f) if flags != 0 => f.to_string(),
        _ if flags == 0 => "raw".into(),
        _ => format!("flags {flags:#x}"),
    }
}

impl Decoder<'_> {
    /// Fills `page` (exactly one page) from the stored `bytes` with `flags`.
    ///
    /// # Errors
    /// Why the page does not decode to exactly one page, in words.
    pub fn decode(&mut self, flags: u32, bytes: &[u8], page: &mut [u8]) -> Result<(), String> {
        if flags == 0 {
            if bytes.len() != page.len() {
                return Err(format!("raw page of {:#x} bytes", bytes.len()));
            }
            page.copy_from_slice(bytes);
            return Ok(());
        }
        let name = format_name(flags);
        let Some((_, ctx)) = self.contexts.iter_mut().find(|(c, _)| *c == flags) else {
            let why = self
                .failed
                .iter()
                .find(|(c, _)| *c == flags)
                .map_or("no plugin for it was found", |(_, w)| w);
            return Err(format!("{name} page cannot be decompressed: {why}"));
        };
        let n = ctx.decompress(bytes, page).map_err(|e| format!("{name} page does not decompress: {e}"))?;
        if n != page.len() {
            return Err(format!(
                "{name} page decompresses to {n:#x} bytes, not one page ({:#x})",
                page.len()
            ));
        }
        Ok(())
    }
}
