//! `vmdump synth`: a synthetic ELF vmcore, sparse on disk.

use std::path::PathBuf;

use anyhow::Context;
use vmdump_synth::{self as synth, KernelSpec, SynthSpec};

/// Options of `vmdump synth`.
#[derive(Debug, clap::Args)]
pub struct SynthArgs {
    /// RAM size, with an optional unit: 512M, 4G, 256G (binary units).
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    pub size: u64,
    /// Share of non-zero pages, in percent (zero pages cost no disk).
    #[arg(long, default_value_t = 40)]
    pub data_percent: u8,
    /// Seed of the page contents.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// No memory holes.
    #[arg(long)]
    pub no_holes: bool,
    /// No VMCOREINFO note.
    #[arg(long)]
    pub no_vmcoreinfo: bool,
    /// No kernel structures (page tables, mem_section, vmemmap) in RAM.
    #[arg(long, conflicts_with_all = ["five_level", "kaslr"])]
    pub no_kernel: bool,
    /// 5-level page tables.
    #[arg(long)]
    pub five_level: bool,
    /// Randomise the kernel's placement as KASLR does.
    #[arg(long)]
    pub kaslr: bool,
    /// The file to write.
    pub output: PathBuf,
}

/// Parses "512M", "4G", "1T" or a byte count.
pub(super) fn parse_size(text: &str) -> Result<u64, String> {
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" => 0,
        "K" | "KIB" => 10,
        "M" | "MIB" => 20,
        "G" | "GIB" => 30,
        "T" | "TIB" => 40,
        _ => return Err(format!("unknown unit `{unit}` (use K, M, G or T)")),
    };
    let value: u64 = digits.parse().map_err(|_| format!("`{text}` is not a size"))?;
    value.checked_shl(shift).filter(|v| v >> shift == value).ok_or_else(|| format!("`{text}` is too large"))
}

/// Runs `vmdump synth`.
///
/// # Errors
/// Writing the file failed.
pub fn run(args: &SynthArgs) -> anyhow::Result<()> {
    let spec = SynthSpec {
        ram_bytes: args.size,
        seed: args.seed,
        data_percent: args.data_percent.min(100),
        holes: !args.no_holes,
        with_vmcoreinfo: !args.no_vmcoreinfo,
        kernel: (!args.no_kernel).then(|| KernelSpec {
            five_level: args.five_level,
            kaslr: args.kaslr,
            ..KernelSpec::default()
        }),
        ..SynthSpec::default()
    };
    let summary =
        synth::write(&spec, &args.output).with_context(|| format!("writing {}", args.output.display()))?;
    println!(
        "{}: {} RAM pages ({} zero, {} data), max pfn {:#x}, {} bytes (sparse)",
        args.output.display(),
        summary.ram_pages,
        summary.zero_pages,
        summary.data_pages,
        summary.max_pfn,
        summary.file_size
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("256G"), Ok(256 << 30));
        assert!(parse_size("12X").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
