//! The host's compression policy around a plugin (house style point 9).
//!
//! The plugin only transforms bytes. The host sizes the output buffer from
//! the plugin's bound, stores a page raw when the result does not shrink it,
//! and, when the plugin fails, stores the page raw, disables the plugin for
//! the rest of the run and keeps the first error for the report (D5): a
//! plugin failure never loses a page.

use std::sync::Arc;

use vmdump_sdk::client::{CallError, CompressorContext, CompressorModule, HostServices};
use vmdump_sdk::{KdumpFormat, Params};

use crate::health::Health;
use crate::plugin::LoadedCompressor;

/// An initialised compressor shared by all workers.
pub struct Codec {
    name: String,
    format: KdumpFormat,
    module: CompressorModule,
    bound: usize,
    page_size: usize,
    skip_random: bool,
    health: Health,
}

/// Why a codec could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// module_init refused the parameters or failed.
    #[error("plugin `{name}` ({path}): {cause}")]
    Init {
        /// Plugin name.
        name: String,
        /// Its file.
        path: String,
        /// The plugin's error.
        cause: CallError,
    },
    /// The plugin's bound cannot hold a compressed page.
    #[error("plugin `{name}`: bound({page_size}) = {bound} is not a usable output size")]
    BadBound {
        /// Plugin name.
        name: String,
        /// Page size asked for.
        page_size: usize,
        /// What the plugin answered.
        bound: usize,
    },
}

impl Codec {
    /// Initialises `plugin` with `params` for pages of `page_size` bytes.
    ///
    /// # Errors
    /// [`CodecError`] when the plugin refuses the parameters or its bound is unusable.
    pub fn new(
        plugin: &LoadedCompressor,
        params: &Params,
        host: Arc<dyn HostServices>,
        page_size: usize,
    ) -> Result<Self, CodecError> {
        let name = plugin.info.name.clone();
        let module = plugin.plugin.init(params, host).map_err(|cause| CodecError::Init {
            name: name.clone(),
            path: plugin.origin.to_string(),
            cause,
        })?;
        let bound = module.bound(page_size);
        if bound < page_size || bound > 64 * page_size {
            return Err(CodecError::BadBound { name, page_size, bound });
        }
        Ok(Self {
            name,
            format: plugin.info.format,
            module,
            bound,
            page_size,
            skip_random: false,
            health: Health::default(),
        })
    }

    /// Whether pages that look random are stored raw without compressing
    /// them ([`crate::entropy`]); off by default. A win for slow codecs
    /// (zlib spends as long on a random page as on any other), a loss for
    /// fast ones (lzo and snappy give up on random data sooner than the test
    /// costs).
    pub fn skipping_random_pages(mut self, skip: bool) -> Self {
        self.skip_random = skip;
        self
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kdump format of compressed pages.
    pub fn format(&self) -> KdumpFormat {
        self.format
    }

    /// The first failure of the run, if the plugin failed.
    pub fn failure(&self) -> Option<CallError> {
        self.health.failure()
    }

    /// One worker's encoder with its own plugin context. A context that cannot
    /// be created disables the plugin (pages are then stored raw).
    pub fn encoder(&self) -> PageEncoder<'_> {
        let ctx = match self.module.new_context() {
            Ok(ctx) => Some(ctx),
            Err(e) => {
                self.health.fail(e);
                None
            }
        };
        PageEncoder {
            codec: Some(self),
            ctx,
            dst: vec![0; self.output_capacity()],
            stats: EncodeStats::default(),
        }
    }

    /// Size of each worker's output buffer: the plugin's bound, and at least
    /// two pages, because deflate encoders run faster when they have room for
    /// their worst case without checking (zlib-rs, measured with
    /// bench/abi-overhead: 309 vs 225 MiB/s at level 1; libdeflate likewise).
    pub fn output_capacity(&self) -> usize {
        self.bound.max(2 * self.page_size)
    }
}

/// How one page is stored.
#[derive(Debug, PartialEq, Eq)]
pub enum Encoded<'a> {
    /// Compressed bytes in the codec's format.
    Compressed(&'a [u8], KdumpFormat),
    /// The page itself.
    Raw,
}

/// Per-worker counts, summed by the caller at the end (no global counters).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EncodeStats {
    /// Pages stored compressed.
    pub compressed: u64,
    /// Pages stored raw because compression did not shrink them.
    pub incompressible: u64,
    /// Pages stored raw without compressing them: they look random.
    pub random: u64,
    /// Pages stored raw because the plugin failed or was disabled.
    pub plugin_failed: u64,
    /// Pages stored raw with no compressor at all (`none`, ELF output).
    pub uncompressed: u64,
}

impl std::ops::AddAssign for EncodeStats {
    fn add_assign(&mut self, o: Self) {
        self.compressed += o.compressed;
        self.incompressible += o.incompressible;
        self.random += o.random;
        self.plugin_failed += o.plugin_failed;
        self.uncompressed += o.uncompressed;
    }
}

/// Compresses pages on one worker thread.
pub struct PageEncoder<'c> {
    codec: Option<&'c Codec>,
    ctx: Option<CompressorContext<'c>>,
    dst: Vec<u8>,
    stats: EncodeStats,
}

impl<'c> PageEncoder<'c> {
    /// An encoder that stores every page raw (no compression chosen).
    pub fn raw() -> Self {
        Self { codec: None, ctx: None, dst: Vec::new(), stats: EncodeStats::default() }
    }

    /// The counts so far.
    pub fn stats(&self) -> EncodeStats {
        self.stats
    }

    /// Encodes one page: compressed when the plugin works and shrinks it,
    /// raw otherwise. Never fails.
    pub fn encode(&mut self, page: &[u8]) -> Encoded<'_> {
        let Some(codec) = self.codec else {
            self.stats.uncompressed += 1;
            return Encoded::Raw;
        };
        let (Some(ctx), false) = (self.ctx.as_mut(), codec.health.is_disabled()) else {
            self.stats.plugin_failed += 1;
            return Encoded::Raw;
        };
        if codec.skip_random && crate::entropy::looks_incompressible(page) {
            self.stats.random += 1;
            return Encoded::Raw;
        }
        let result = ctx.compress(page, &mut self.dst);
        if let Err(e) = ctx.reset() {
            codec.health.fail(e);
        }
        match result {
            Ok(n) if n > 0 && n < page.len() => {
                self.stats.compressed += 1;
                Encoded::Compressed(&self.dst[..n], codec.format)
            }
            Ok(_) => {
                self.stats.incompressible += 1;
                Encoded::Raw
            }
            Err(e) => {
                codec.health.fail(e);
                self.stats.plugin_failed += 1;
                Encoded::Raw
            }
        }
    }
}
