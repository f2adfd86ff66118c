//! The lockless printk ring buffer (Linux 5.10+).
//!
//! `prb` points at a `struct printk_ringbuffer`, which holds two rings:
//!
//! - the descriptor ring: `1 << count_bits` descriptors (`descs`) and as
//!   many `printk_info` (`infos`: seq, ts_nsec, text_len, dev_info). A
//!   descriptor's `state_var` holds its id in the low 62 bits and its state
//!   in the top 2 (0 reserved, 1 committed, 2 finalized, 3 reusable); only
//!   committed and finalized records whose id matches are readable. Ids
//!   grow by one per record; the slot is `id & (count - 1)`. Live ids run
//!   from `tail_id` to `head_id`.
//! - the text data ring: `1 << size_bits` bytes (`data`). A record's text
//!   block is `[begin, next)` in logical positions (`lpos`, growing without
//!   wrapping); the byte index is `lpos & (size - 1)`. A block starts with
//!   the record's id (8 bytes), then the text. A block that would cross the
//!   end of the array is placed at index 0 instead; its `begin` then stays
//!   in the previous wrap. A position with bit 0 set means "no data".

use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::format::{Escape, LogRecord, format_record};
use super::{DmesgError, field, optional_field, read_bytes, size, symbol, uint};
use crate::xlat::{KernelMemory, PhysRead};
use vmdump_format::elf::Endian;

/// Bits of `state_var` holding the id.
const ID_MASK: u64 = (1 << 62) - 1;
/// Committed and finalized: the readable states.
const READABLE: [u64; 2] = [1, 2];
/// Largest descriptor ring accepted (2^24 records).
const MAX_COUNT_BITS: u64 = 24;
/// Largest text ring accepted (256 MiB).
const MAX_SIZE_BITS: u64 = 28;
/// Largest descriptor or info array accepted.
const MAX_ARRAY: u64 = 1 << 28;
/// Bytes of the id at the start of a text block.
const ID_BYTES: u64 = 8;

#[cfg(test)]
#[path = "lockless_tests.rs"]
mod tests;

/// Where the fields are, from VMCOREINFO.
struct Layout {
    desc_size: u64,
    state_var: usize,
    blk_begin: usize,
    blk_next: usize,
    info_size: u64,
    ts_nsec: usize,
    text_len: usize,
    /// `OFFSET(printk_info.caller_id)` (u32), exported with CONFIG_PRINTK_CALLER.
    caller_id: Option<usize>,
}

impl Layout {
    pub(super) fn from_info(info: &VmcoreInfo) -> Result<Self, DmesgError> {
        let desc_size = size(info, "prb_desc")?;
        let info_size = size(info, "printk_info")?;
        let lpos = field(info, "prb_desc.text_blk_lpos", 16, desc_size)?;
        Ok(Layout {
            desc_size,
            state_var: field(info, "prb_desc.state_var", 8, desc_size)?,
            blk_begin: lpos + field(info, "prb_data_blk_lpos.begin", 8, 16)?,
            blk_next: lpos + field(info, "prb_data_blk_lpos.next", 8, 16)?,
            info_size,
            ts_nsec: field(info, "printk_info.ts_nsec", 8, info_size)?,
            text_len: field(info, "printk_info.text_len", 2, info_size)?,
            caller_id: optional_field(info, "printk_info.caller_id", 4, info_size)?,
        })
    }
}

/// The two rings, read in bulk.
struct Rings {
    layout: Layout,
    /// The dumped machine's byte order.
    endian: Endian,
    count: u64,
    head_id: u64,
    tail_id: u64,
    descs: Vec<u8>,
    infos: Vec<u8>,
    data: Vec<u8>,
}

/// The log of a kernel with the lockless ring buffer.
pub(super) fn kernel_log<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    info: &VmcoreInfo,
    escape: Escape,
) -> Result<Vec<u8>, DmesgError> {
    Ok(kernel_log_of(&read_rings(memory, info)?, escape))
}

/// Formats every readable record from `tail_id` to `head_id`.
fn kernel_log_of(rings: &Rings, escape: Escape) -> Vec<u8> {
    let mut out = Vec::with_capacity(rings.data.len());
    let mut id = rings.tail_id;
    // At most one pass over the descriptor ring, whatever head_id says.
    for _ in 0..rings.count {
        match rings.record(id) {
            Record::Text(record) => format_record(&mut out, escape, &record),
            Record::Skip => {}
            Record::Corrupt => break,
        }
        if id == rings.head_id {
            break;
        }
        id = id.wrapping_add(1) & ID_MASK;
    }
    out
}

/// Reads `prb`, its two rings and the three arrays.
fn read_rings<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    info: &VmcoreInfo,
) -> Result<Rings, DmesgError> {
    let layout = Layout::from_info(info)?;
    let rb_size = size(info, "printk_ringbuffer")?;
    let desc_ring = field(info, "printk_ringbuffer.desc_ring", size(info, "prb_desc_ring")?, rb_size)?;
    let text_ring = field(info, "printk_ringbuffer.text_data_ring", 32, rb_size)?;
    let off = |name: &str, width: u64, within: u64| field(info, name, width, within);

    let prb_ptr = symbol(info, "prb")?;
    let e = memory.arch().endian();
    let prb = read_bytes(memory, "prb", prb_ptr, 8).map(|b| uint(e, &b, 0, 8).unwrap_or(0))?;
    let rb = read_bytes(memory, "printk_ringbuffer", prb, rb_size as usize)?;
    let dr_size = size(info, "prb_desc_ring")?;
    let get = |base: usize, name: &str, width: u64, within: u64| -> Result<u64, DmesgError> {
        let at = base + off(name, width, within)?;
        uint(e, &rb, at, width as usize).ok_or(DmesgError::Bad {
            what: "ring field",
            value: at as u64,
            reason: "beyond struct",
        })
    };
    let count_bits = get(desc_ring, "prb_desc_ring.count_bits", 4, dr_size)?;
    let descs_va = get(desc_ring, "prb_desc_ring.descs", 8, dr_size)?;
    let infos_va = get(desc_ring, "prb_desc_ring.infos", 8, dr_size)?;
    let head_id = get(desc_ring, "prb_desc_ring.head_id", 8, dr_size)?;
    let tail_id = get(desc_ring, "prb_desc_ring.tail_id", 8, dr_size)?;
    let size_bits = get(text_ring, "prb_data_ring.size_bits", 4, 32)?;
    let data_va = get(text_ring, "prb_data_ring.data", 8, 32)?;

    if count_bits > MAX_COUNT_BITS {
        return Err(DmesgError::Bad {
            what: "prb_desc_ring.count_bits",
            value: count_bits,
            reason: "over 24",
        });
    }
    if !(4..=MAX_SIZE_BITS).contains(&size_bits) {
        return Err(DmesgError::Bad {
            what: "prb_data_ring.size_bits",
            value: size_bits,
            reason: "not in 4..=28",
        });
    }
    let count = 1u64 << count_bits;
    let array_len = |what: &'static str, elem: u64| match count.checked_mul(elem) {
        Some(len) if len <= MAX_ARRAY => Ok(len as usize),
        _ => Err(DmesgError::Bad { what, value: elem, reason: "array of 2^count_bits over 256 MiB" }),
    };
    let descs_len = array_len("SIZE(prb_desc)", layout.desc_size)?;
    let infos_len = array_len("SIZE(printk_info)", layout.info_size)?;
    let descs = read_bytes(memory, "prb descriptors", descs_va, descs_len)?;
    let infos = read_bytes(memory, "printk_info array", infos_va, infos_len)?;
    let data = read_bytes(memory, "printk text data ring", data_va, 1usize << size_bits)?;
    Ok(Rings {
        layout,
        endian: e,
        count,
        head_id: head_id & ID_MASK,
        tail_id: tail_id & ID_MASK,
        descs,
        infos,
        data,
    })
}

/// What a descriptor gives.
enum Record<'a> {
    /// A readable record.
    Text(LogRecord<'a>),
    /// Not readable now (reserved, reusable, or an older id): no output.
    Skip,
    /// Readable but its data is not where it says: the log ends here.
    Corrupt,
}

impl Rings {
    /// The record with id `id`.
    fn record(&self, id: u64) -> Record<'_> {
        let l = &self.layout;
        let slot = (id & (self.count - 1)) as usize;
        let desc = slot * l.desc_size as usize;
        let inf = slot * l.info_size as usize;
        let Some(state_var) = uint(self.endian, &self.descs, desc + l.state_var, 8) else {
            return Record::Corrupt;
        };
        if state_var & ID_MASK != id || !READABLE.contains(&(state_var >> 62)) {
            return Record::Skip;
        }
        let (Some(begin), Some(next), Some(ts_nsec), Some(text_len)) = (
            uint(self.endian, &self.descs, desc + l.blk_begin, 8),
            uint(self.endian, &self.descs, desc + l.blk_next, 8),
            uint(self.endian, &self.infos, inf + l.ts_nsec, 8),
            uint(self.endian, &self.infos, inf + l.text_len, 2),
        ) else {
            return Record::Corrupt;
        };
        let caller = match l.caller_id.map(|at| uint(self.endian, &self.infos, inf + at, 4)) {
            None => None,
            Some(Some(id)) => Some(id as u32),
            Some(None) => return Record::Corrupt,
        };
        if begin & 1 == 1 || next & 1 == 1 {
            // A record without text (data-less): printed with an empty text.
            return Record::Text(LogRecord { ts_nsec, caller, text: &[] });
        }
        match self.block(id, begin, next) {
            Some(body) => {
                Record::Text(LogRecord { ts_nsec, caller, text: &body[..body.len().min(text_len as usize)] })
            }
            None => Record::Corrupt,
        }
    }

    /// The text bytes (after the id) of the block `[begin, next)`, if it
    /// lies inside the ring and starts with `id`.
    fn block(&self, id: u64, begin: u64, next: u64) -> Option<&[u8]> {
        let size = self.data.len() as u64;
        let wrap = |lpos: u64| lpos / size;
        let index = |lpos: u64| lpos % size;
        let (start, end) = if wrap(begin) == wrap(next) && begin <= next {
            (index(begin), index(next))
        } else if wrap(begin).wrapping_add(1) == wrap(next) && index(next) == 0 {
            // Ends exactly at the end of the array.
            (index(begin), size)
        } else if wrap(begin).wrapping_add(1) == wrap(next) {
            // Wrapped: the block was placed at index 0.
            (0, index(next))
        } else {
            return None;
        };
        if end < start + ID_BYTES {
            return None;
        }
        let block = self.data.get(start as usize..end as usize)?;
        if uint(self.endian, block, 0, 8)? & ID_MASK != id {
            return None;
        }
        Some(&block[ID_BYTES as usize..])
    }
}
