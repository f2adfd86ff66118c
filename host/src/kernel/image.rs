//! The pages of the kernel image that the kernel still uses: its text,
//! read-only data, data and bss, found by the symbols that bound them
//! (docs/kernel-map.md §6). What the kernel frees after boot is left out:
//! the init sections, the gaps between text, read-only data and data, and
//! the part of `.bss..decrypted` that it does not use. A dump keeps these
//! pages whatever their struct pages say: a kernel whose bss pages carry
//! PG_lru (makedumpfile issue #21, Linux 6.6) would otherwise lose them as
//! page cache, and crash could not start on the dump.

use std::ops::Range;

use super::error::MapError;
use super::kallsyms::SomeSymbols;
use crate::xlat::{KernelMemory, PhysRead};

/// The parts of the image in use, each from its first symbol to its last
/// (exclusive), and the part of bss the kernel frees.
const PARTS: [(&str, &str); 4] = [
    ("_text", "_etext"),
    ("__start_rodata", "__end_rodata"),
    ("_sdata", "_edata"),
    ("__bss_start", "__bss_stop"),
];
const FREED_BSS: (&str, &str) = ("__start_bss_decrypted_unused", "__end_bss_decrypted");

/// Every symbol it reads.
pub const SYMBOLS: [&str; 10] = [
    PARTS[0].0,
    PARTS[0].1,
    PARTS[1].0,
    PARTS[1].1,
    PARTS[2].0,
    PARTS[2].1,
    PARTS[3].0,
    PARTS[3].1,
    FREED_BSS.0,
    FREED_BSS.1,
];

/// Pfn ranges of the image in use, sorted and merged.
///
/// # Errors
/// kallsyms lacks a bound, or a page of the image does not translate.
pub fn in_use_pfns<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    symbols: &SomeSymbols,
) -> Result<Vec<Range<u64>>, MapError> {
    if !symbols.has_data_symbols() {
        return Err(MapError::MissingSymbol {
            table: "the kernel image",
            symbol: "its bounds in kallsyms, which lists functions alone (CONFIG_KALLSYMS_ALL unset)".into(),
        });
    }
    let page = memory.page_size();
    let freed = match (symbols.lookup(FREED_BSS.0), symbols.lookup(FREED_BSS.1)) {
        (Some(a), Some(b)) => a.div_ceil(page) * page..b,
        _ => 0..0,
    };
    let mut pfns = Vec::new();
    for (first, last) in PARTS {
        let (start, end) = (symbols.address_of(first)?, symbols.address_of(last)?);
        // Whole pages the part touches, less the freed part of bss.
        let mut vaddr = start / page * page;
        while vaddr < end {
            if !freed.contains(&vaddr) {
                let paddr = memory.translate(vaddr).map_err(super::error::read_error(
                    "the kernel image",
                    first,
                    vaddr,
                ))?;
                push_pfn(&mut pfns, paddr / page);
            }
            vaddr += page;
        }
    }
    Ok(crate::ranges::merge(pfns))
}

/// Adds `pfn`, growing the last range when it follows it.
fn push_pfn(pfns: &mut Vec<Range<u64>>, pfn: u64) {
    match pfns.last_mut() {
        Some(last) if last.end == pfn => last.end += 1,
        _ => pfns.push(pfn..pfn + 1),
    }
}
