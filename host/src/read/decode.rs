//! Decompressing stored pages through the compressor plugins, found by
//! the on-disk format code (kdump-format.md §1.8).

use std::sync::{Arc, OnceLock};

use vmdump_sdk::client::{CompressorContext, CompressorModule, StderrHost};
use vmdump_sdk::{KdumpFormat, Params};

use crate::plugin::{SearchPath, find_compressor};

/// The decompressor of each standard format, set up on the first page of
/// that format: the compressor of the format's own name (`zlib`, `lzo`,
/// `snappy`, `zstd`), a file of that name on the search path or the
/// built-in one. Reading a vmcore, or a dump of raw pages, opens no file.
pub struct Modules {
    search_path: SearchPath,
    slots: [OnceLock<Result<(String, CompressorModule), String>>; KdumpFormat::STANDARD.len()],
}

impl Modules {
    /// Decompressors found on `search_path`, none set up yet.
    pub fn new(search_path: SearchPath) -> Self {
        Modules { search_path, slots: Default::default() }
    }

    /// The module of format `code`, set up at the first call.
    fn module(&self, code: u32) -> Result<(&str, &CompressorModule), String> {
        let Some(i) = KdumpFormat::STANDARD.iter().position(|f| f.code() == code) else {
            return Err("no plugin for it was found".into());
        };
        let format = KdumpFormat::STANDARD[i];
        let slot = self.slots[i].get_or_init(|| {
            let name = format.to_string();
            let (found, refused) = find_compressor(&self.search_path, &name);
            let refused: String = refused.iter().map(|e| format!("; {e}")).collect();
            let Some(c) = found.filter(|c| c.info.format == format) else {
                return Err(format!(
                    "no plugin `{name}` was found in {}{refused}",
                    self.search_path.display()
                ));
            };
            match c.plugin.init(&Params::default(), Arc::new(StderrHost)) {
                Ok(m) => Ok((c.info.name.clone(), m)),
                Err(e) => Err(format!("plugin {} does not initialise: {e}", c.info.name)),
            }
        });
        slot.as_ref().map(|(name, module)| (name.as_str(), module)).map_err(String::clone)
    }

    /// A decoder, whose contexts are made on the first page of each format.
    pub fn decoder(&self) -> Decoder<'_> {
        Decoder { modules: self, contexts: Vec::new(), failed: Vec::new() }
    }
}

/// Decompresses pages, one context per format.
pub struct Decoder<'m> {
    modules: &'m Modules,
    contexts: Vec<(u32, CompressorContext<'m>)>,
    failed: Vec<(u32, String)>,
}

impl<'m> Decoder<'m> {
    /// The context of format `flags`, made at the first call.
    fn context(&mut self, flags: u32) -> Result<&mut CompressorContext<'m>, String> {
        if let Some((_, why)) = self.failed.iter().find(|(c, _)| *c == flags) {
            return Err(why.clone());
        }
        if let Some(i) = self.contexts.iter().position(|(c, _)| *c == flags) {
            return Ok(&mut self.contexts[i].1);
        }
        let made = self.modules.module(flags).and_then(|(name, module)| {
            module.new_context().map_err(|e| format!("plugin {name} gives no context: {e}"))
        });
        match made {
            Ok(ctx) => {
                self.contexts.push((flags, ctx));
                Ok(&mut self.contexts.last_mut().expect("just pushed").1)
            }
            Err(why) => {
                self.failed.push((flags, why.clone()));
                Err(why)
            }
        }
    }
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
        let ctx = self.context(flags).map_err(|why| format!("{name} page cannot be decompressed: {why}"))?;
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
