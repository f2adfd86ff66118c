//! A run's plan, built once from the command line, the profile and the
//! input (house style point 14: TOML → `Profile` → `Plan` → run): the dump
//! level, decided here and only here; the pages to read; the exclusion
//! stages; the compressor; how the pipeline runs. It is the only way into
//! the dump engine (`crate::dump`). `vmdump dump`, `vmdump convert` and
//! the makedumpfile mode each build one, nothing more.

use std::sync::Arc;

use anyhow::bail;
use vmdump_format::kdump::Utsname;
use vmdump_format::phys::PhysMap;
use vmdump_format::vmcoreinfo::VmcoreInfo;
use vmdump_sdk::client::HostServices;
use vmdump_sdk::{KdumpFormat, LogLevel};

use crate::classify::PageClassifier;
use crate::codec::Codec;
use crate::exclude::{Exclusion, FilterSet, MetadataFilter};
use crate::input::{Input, ReadMode};
use crate::interrupt::Interrupt;
use crate::kernel::KernelView;
use crate::level::DumpLevel;
use crate::plugin::{LoadError, Registry};
use crate::profile::Profile;
use crate::progress::ProgressOptions;

/// What comes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// kdump-compressed (a plain file or the flattened stream: the sink decides).
    Kdump,
    /// An ELF core, uncompressed.
    Elf,
}

/// How the pipeline runs.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Compression workers (at least 1).
    pub threads: usize,
    /// mmap windows or pread.
    pub read_mode: ReadMode,
    /// Pages per batch.
    pub batch_pages: usize,
    /// How to show progress.
    pub progress: ProgressOptions,
    /// When the disk fills or the size limit is reached, close the file as
    /// an incomplete dump (status flag, readable up to where it stopped)
    /// instead of failing; only for outputs that can be rewritten.
    pub close_incomplete: bool,
    /// Stop at the next batch when a signal arrives (closing the file as
    /// incomplete when `close_incomplete`).
    pub interrupt: Interrupt,
}

/// What the command line and the profile ask for.
pub struct Asked<'a> {
    /// The profile, with the command line's overrides.
    pub profile: &'a Profile,
    /// The plugins found for this run.
    pub registry: &'a Registry,
    /// Dump at the bits VMCOREINFO allows when it lacks what others need
    /// (`--allow-lower-level`; always in the makedumpfile mode).
    pub allow_lower: bool,
    /// The output format.
    pub format: Format,
    /// Progress display.
    pub progress: ProgressOptions,
    /// Whether the output can be closed as an incomplete dump.
    pub close_incomplete: bool,
    /// A metadata stage of the caller's own, after the others.
    pub extra: Option<&'a dyn MetadataFilter>,
}

/// A dump, planned.
pub struct Plan<'a> {
    input: &'a dyn Input,
    ram: PhysMap,
    utsname: Option<Utsname>,
    exclusion: Exclusion<'a>,
    codec: Option<Codec>,
    format: Format,
    run: RunSettings,
    eraseinfo: Vec<u8>,
    notes: Vec<String>,
}

impl<'a> Plan<'a> {
    /// Plans the dump of `input`, whose kernel `kernel` is (opened once,
    /// [`open_kernel`]). Resolves and initialises the plugins.
    ///
    /// # Errors
    /// A dump level that cannot be honoured (nothing is written), a plugin
    /// that cannot be found or initialised.
    pub fn build(
        asked: &Asked<'a>,
        input: &'a dyn Input,
        kernel: Option<&'a KernelView<'a>>,
    ) -> anyhow::Result<Self> {
        let profile = asked.profile;
        let mut notes = Vec::new();
        let earlier = input.earlier().map_or(DumpLevel::NONE, |(_, level)| level);
        let level = decide_level(profile.dump.level, earlier, input, kernel, asked.allow_lower, &mut notes)?;
        let host: Arc<dyn HostServices> = Arc::new(DumpHost { vmcoreinfo: input.vmcoreinfo().cloned() });
        let loaded = profile
            .filters
            .iter()
            .map(|f| Ok((asked.registry.filter(&f.name)?, f.params())))
            .collect::<Result<Vec<_>, LoadError>>()?;
        let mut plugins = FilterSet::new(&loaded, &host)?;
        let marks = plugins.prepare(kernel, input.phys().max_pfn());
        let others = input.earlier().map(|(stage, _)| stage).into_iter().chain(asked.extra).collect();
        let mut exclusion = Exclusion::new(level, kernel, (plugins, marks), others, input.page_size())?
            .keeping_unreadable(asked.allow_lower);
        let codec = match asked.format {
            Format::Kdump => open_codec(profile, asked.registry, host, input)?,
            Format::Elf => None,
        };
        let (ram, utsname) = kernel_facts(input, kernel, &mut notes);
        if input.is_live() {
            // A running kernel's struct pages move: classified once (exclude::recorded).
            exclusion = exclusion.recording(ram.max_pfn());
        }
        let eraseinfo = eraseinfo(input, &exclusion, &mut notes);
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let run = RunSettings {
            threads: if profile.dump.threads == 0 { cores } else { profile.dump.threads },
            read_mode: match profile.input.mmap {
                true => ReadMode::Mmap { window_bytes: profile.input.window_mib as usize * (1 << 20) },
                false => ReadMode::Pread,
            },
            batch_pages: 256,
            progress: asked.progress.clone(),
            close_incomplete: asked.close_incomplete,
            interrupt: Interrupt::default(),
        };
        Ok(Self { input, ram, utsname, exclusion, codec, format: asked.format, run, eraseinfo, notes })
    }

    /// The input.
    pub fn input(&self) -> &'a dyn Input {
        self.input
    }

    /// The RAM to dump: the input's, up to where the kernel's memory ends.
    pub fn ram(&self) -> &PhysMap {
        &self.ram
    }

    /// The kernel's utsname, for the header.
    pub fn utsname(&self) -> Option<&Utsname> {
        self.utsname.as_ref()
    }

    /// The dump level.
    pub fn level(&self) -> DumpLevel {
        self.exclusion.level()
    }

    /// What is left out, and by which stage.
    pub fn exclusion(&self) -> &Exclusion<'a> {
        &self.exclusion
    }

    /// The compressor; `None` stores pages raw.
    pub fn codec(&self) -> Option<&Codec> {
        self.codec.as_ref()
    }

    /// The output format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// How the pipeline runs.
    pub fn run(&self) -> &RunSettings {
        &self.run
    }

    /// The plan, stopping at the next batch when `interrupt` fires.
    pub fn with_interrupt(mut self, interrupt: Interrupt) -> Self {
        self.run.interrupt = interrupt;
        self
    }

    /// The eraseinfo the dump records: the input's own (a dump converted
    /// or refiltered keeps it), then this run's erasures.
    pub fn eraseinfo(&self) -> &[u8] {
        &self.eraseinfo
    }

    /// What the plan chose that the user should know (a lower level, what
    /// the kernel's tables did not give): warnings to print.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// The input's eraseinfo followed by the lines of this run's erasures.
fn eraseinfo(input: &dyn Input, exclusion: &Exclusion<'_>, notes: &mut Vec<String>) -> Vec<u8> {
    let mut text = input.eraseinfo().unwrap_or_else(|e| {
        notes.push(format!(
            "the eraseinfo of {} cannot be read ({e}): it is not carried over",
            input.path().display()
        ));
        Vec::new()
    });
    text.extend_from_slice(exclusion.marks().erasures.eraseinfo().as_bytes());
    text
}

/// The kernel of `input`, opened once for the run; `None`, with a note,
/// when its page tables cannot be read (or there is no VMCOREINFO).
pub fn open_kernel<'v>(input: &'v dyn Input, notes: &mut Vec<String>) -> Option<KernelView<'v>> {
    if input.vmcoreinfo().is_none() {
        notes.push(format!(
            "{} has no VMCOREINFO note: the dump is complete, but its header has no kernel release, \
             crash time or phys_base (crash then needs a vmlinux)",
            input.path().display()
        ));
    }
    KernelView::open(input).unwrap_or_else(|e| {
        notes.push(format!(
            "cannot read the kernel's page tables ({e}); every PT_LOAD page is dumped and the header's \
             utsname has the release only"
        ));
        None
    })
}

/// The RAM to dump (to the kernel's memory end) and the kernel's utsname.
fn kernel_facts(
    input: &dyn Input,
    kernel: Option<&KernelView<'_>>,
    notes: &mut Vec<String>,
) -> (PhysMap, Option<Utsname>) {
    let Some(kernel) = kernel else { return (input.phys().clone(), None) };
    let ram = match (kernel.memory_end(), kernel.sections()) {
        (Some(end), _) if end < input.phys().max_pfn() => input.phys().truncated(end),
        (_, Err(e)) => {
            notes.push(format!(
                "cannot read the kernel's memory sections ({e}); every PT_LOAD page is dumped"
            ));
            input.phys().clone()
        }
        _ => input.phys().clone(),
    };
    let utsname = kernel.utsname().unwrap_or_else(|e| {
        notes.push(format!("cannot read the kernel's utsname ({e}); the header has the release only"));
        None
    });
    (ram, utsname)
}

/// The dump level, decided here: the asked level and every bit the input
/// already left out (a converted dump cannot give back what it lacks);
/// when VMCOREINFO lacks keys some bits need, nothing is dumped, unless
/// `allow_lower` (`--allow-lower-level`, and always in the makedumpfile
/// mode, which a capture kernel runs): then the bits that can be honoured,
/// with a note naming the missing keys and the bits dropped.
fn decide_level(
    asked: DumpLevel,
    earlier: DumpLevel,
    input: &dyn Input,
    kernel: Option<&KernelView<'_>>,
    allow_lower: bool,
    notes: &mut Vec<String>,
) -> anyhow::Result<DumpLevel> {
    let wanted = asked | earlier;
    if wanted != asked {
        notes.push(format!("the input was dumped at level {earlier}: converting at level {wanted}"));
    }
    if wanted.classified().is_empty() {
        return Ok(wanted);
    }
    let honoured = match kernel {
        None => Err(format!(
            "dump level {wanted} needs the kernel's VMCOREINFO note and page tables, which {} does not give",
            input.path().display()
        )),
        Some(kernel) => kernel.classifier(wanted).map(drop).map_err(|e| e.to_string()),
    };
    let Err(error) = honoured else { return Ok(wanted) };
    if !allow_lower {
        bail!("{error}; nothing was written (--allow-lower-level dumps with the bits that can be honoured)");
    }
    let supported = supported_bits(input.vmcoreinfo(), kernel);
    let lower = wanted & (supported | DumpLevel::ZERO);
    let kept = wanted.without(lower);
    notes.push(format!(
        "{error}; dumping at level {lower} instead of {wanted}: the pages bits {} would leave out are kept",
        kept.list()
    ));
    Ok(lower)
}

/// The classified bits a classifier can honour for this kernel.
fn supported_bits(info: Option<&VmcoreInfo>, kernel: Option<&KernelView<'_>>) -> DumpLevel {
    match (info, kernel.map(KernelView::sections)) {
        (Some(info), Some(Ok(_))) => PageClassifier::<dyn Input>::supported_bits(info),
        _ => DumpLevel::NONE,
    }
}

/// Plugin messages go to stderr; VMCOREINFO look-ups are answered from the vmcore.
struct DumpHost {
    vmcoreinfo: Option<VmcoreInfo>,
}

impl HostServices for DumpHost {
    fn log(&self, plugin: &str, level: LogLevel, message: &str) {
        eprintln!("vmdump: plugin {plugin}: {}: {message}", format!("{level:?}").to_lowercase());
    }

    fn vmcoreinfo(&self, key: &str) -> Option<String> {
        self.vmcoreinfo.as_ref()?.get(key).map(str::to_owned)
    }
}

/// The profile's compressor, `None` for raw pages.
fn open_codec(
    profile: &Profile,
    registry: &Registry,
    host: Arc<dyn HostServices>,
    input: &dyn Input,
) -> anyhow::Result<Option<Codec>> {
    if profile.compress.plugin == "none" {
        return Ok(None);
    }
    let plugin = registry.compressor(&profile.compress.plugin)?;
    if plugin.info.format == KdumpFormat::Custom {
        bail!(
            "plugin `{}` writes a custom page format that crash, libkdumpfile and makedumpfile cannot read; \
             choose a plugin of a standard format (zlib, lzo, snappy, zstd)",
            plugin.info.name
        );
    }
    let codec = Codec::new(plugin, &profile.plugin_params(), host, input.page_size() as usize)?;
    let skip_random = profile.compress.skips_random_pages(plugin.info.format);
    Ok(Some(codec.skipping_random_pages(skip_random)))
}
