//! `vmdump info DUMP`: what a kdump-compressed file holds.

use crate::read::DumpSource;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use vmdump_format::kdump::{KdumpReader, PAGE_DESC_SIZE, PageDesc, Utsname};

use crate::read::decode::format_name;

/// Arguments of `vmdump info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// A kdump-compressed file (plain or flattened), or every piece of a split dump.
    #[arg(required = true, num_args = 1.., value_name = "DUMP")]
    pub dump: Vec<PathBuf>,
    /// The private keys of an encrypted dump.
    #[command(flatten)]
    pub keys: super::decrypt::IdentityArgs,
}

/// Descriptors pointing at the shared zero page, read in 64 KiB chunks.
fn count_zero_pages(r: &KdumpReader<DumpSource>) -> anyhow::Result<u64> {
    let Some(zero) = r.zero_page_offset() else { return Ok(0) };
    let start = r.geometry().page_desc_offset;
    let end = (start + r.num_dumpable() * PAGE_DESC_SIZE as u64).min(r.file_size());
    let mut buf = vec![0u8; 2730 * PAGE_DESC_SIZE];
    let (mut at, mut n) = (start, 0);
    while at < end {
        let len = (buf.len() as u64).min(end - at) as usize / PAGE_DESC_SIZE * PAGE_DESC_SIZE;
        if len == 0 {
            break;
        }
        vmdump_format::ReadAt::read_exact_at(r.source(), &mut buf[..len], at)
            .with_context(|| format!("reading descriptors at {at:#x}"))?;
        for d in buf[..len].chunks(PAGE_DESC_SIZE) {
            n += u64::from(PageDesc::decode(d, r.header().endian)?.offset == zero);
        }
        at += len as u64;
    }
    Ok(n)
}

/// phys_base as [`KdumpReader::phys_base`] takes it, saying where from and
/// when the sub header disagrees (QEMU's hex parsing, kdump-format.md §9).
fn phys_base(r: &KdumpReader<DumpSource>) -> String {
    let (value, sub) = (r.phys_base(), r.sub_header().phys_base);
    match r.vmcoreinfo().and_then(|i| i.phys_base()) {
        None => format!("{value} (sub header)"),
        Some(_) if value as u64 == sub => format!("{value} (VMCOREINFO, sub header agrees)"),
        Some(_) => format!("{value} (VMCOREINFO; the sub header's {sub:#x} is ignored)"),
    }
}

fn count_ram(r: &KdumpReader<DumpSource>) -> anyhow::Result<u64> {
    let mut cursor = r.ram_cursor();
    let mut n = 0;
    for pfn in 0..r.max_mapnr() {
        n += u64::from(cursor.bit(pfn)?);
    }
    Ok(n)
}

/// Prints the summary of `args.dump` to `out`.
///
/// # Errors
/// The dump is invalid, or writing fails.
pub fn run(args: &InfoArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let r = {
        let (paths, _decrypted) = super::decrypt::plain_paths(&args.dump, &args.keys)?;
        crate::read::open_dump_set(&paths)?
    };
    let name = args.dump.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ");
    let (h, sub) = (r.header(), r.sub_header());
    let text = |i| String::from_utf8_lossy(h.utsname.get(i)).into_owned();
    // QEMU fills only `machine` (kdump-format.md §9): the release then comes from VMCOREINFO.
    let mut release = text(Utsname::RELEASE);
    if release.is_empty()
        && let Some(osrelease) = r.vmcoreinfo().and_then(|i| i.osrelease())
    {
        release = format!("{osrelease} (OSRELEASE; the header's utsname has none)");
    }
    writeln!(out, "file             : {name} ({:#x} bytes)", r.file_size())?;
    if args.dump.len() > 1 {
        writeln!(out, "split dump       : {} pieces, read as one", args.dump.len())?;
    }
    if let Some(piece) = r.piece() {
        writeln!(
            out,
            "split piece      : pfns {:#x}..{:#x} (the other pieces hold the rest)",
            piece.start, piece.end
        )?;
    }
    writeln!(out, "header version   : {}", h.header_version)?;
    let kernel = [text(Utsname::SYSNAME), release, text(Utsname::MACHINE)];
    let kernel: Vec<&str> = kernel.iter().map(String::as_str).filter(|s| !s.is_empty()).collect();
    writeln!(out, "kernel           : {}", kernel.join(" "))?;
    writeln!(
        out,
        "status           : {:#x}{}",
        h.status,
        if r.is_incomplete() { " (INCOMPLETE)" } else { "" }
    )?;
    writeln!(out, "incomplete       : {}", if r.is_incomplete() { "yes" } else { "no" })?;
    writeln!(out, "compression      : {}", format_name(r.compression()).replace("raw", "none"))?;
    writeln!(out, "dump level       : {}", sub.dump_level)?;
    writeln!(out, "block size       : {:#x}", r.block_size())?;
    writeln!(out, "max_mapnr        : {:#x}", r.max_mapnr())?;
    writeln!(out, "nr_cpus          : {}", h.nr_cpus)?;
    writeln!(out, "phys_base        : {}", phys_base(&r))?;
    writeln!(out, "RAM pages        : {:#x}", count_ram(&r)?)?;
    writeln!(out, "pages in file    : {:#x}", r.num_dumpable())?;
    if args.dump.iter().any(|p| crate::store::ObjectName::of_path(p).is_some()) {
        // Counting them reads every descriptor: 4 to 5 % of a -d 1 dump,
        // fetched from the store for one line.
        writeln!(out, "zero pages       : not counted in an object (`vmdump verify` counts them)")?;
    } else {
        writeln!(out, "zero pages       : {:#x}", count_zero_pages(&r)?)?;
    }
    let g = r.geometry();
    writeln!(out, "notes            : {:#x} bytes at {:#x}", g.notes.1, g.notes.0)?;
    writeln!(out, "bitmaps          : 2 x {:#x} bytes at {:#x}", g.bitmap_len, g.bitmap1_offset)?;
    writeln!(
        out,
        "descriptors      : {:#x} bytes at {:#x}",
        r.num_dumpable() * PAGE_DESC_SIZE as u64,
        g.page_desc_offset
    )?;
    writeln!(
        out,
        "page data        : {:#x} bytes at {:#x}",
        r.file_size().saturating_sub(r.data_offset()),
        r.data_offset()
    )?;
    match r.vmcoreinfo() {
        None => writeln!(out, "VMCOREINFO       : none")?,
        Some(info) => {
            writeln!(out, "VMCOREINFO       : {:#x} bytes at {:#x}", g.vmcoreinfo.1, g.vmcoreinfo.0)?;
            for key in ["OSRELEASE", "PAGESIZE", "CRASHTIME", "KERNELOFFSET"] {
                writeln!(out, "  {key}={}", info.get(key).unwrap_or("(absent)"))?;
            }
        }
    }
    Ok(())
}
