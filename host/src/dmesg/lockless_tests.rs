//! The lockless ring walk on hand-built rings (layout of Linux 6.1 x86_64).

use super::{Escape, ID_MASK, Layout, Rings, kernel_log_of};
use vmdump_format::elf::Endian;

const LAYOUT: Layout = Layout {
    desc_size: 24,
    state_var: 0,
    blk_begin: 8,
    blk_next: 16,
    info_size: 88,
    ts_nsec: 8,
    text_len: 16,
    caller_id: None,
};
const COMMITTED: u64 = 1 << 62;
const FINALIZED: u64 = 2 << 62;
const REUSABLE: u64 = 3 << 62;

/// A ring of 4 descriptors and 64 bytes of text.
fn rings(head_id: u64, tail_id: u64) -> Rings {
    Rings {
        layout: LAYOUT,
        endian: Endian::Little,
        count: 4,
        head_id,
        tail_id,
        descs: vec![0; 4 * 24],
        infos: vec![0; 4 * 88],
        data: vec![0; 64],
    }
}

/// Stores record `id` with `state`, block `[begin, next)` and `text`
/// written at `data_at` (after the id).
fn put(r: &mut Rings, id: u64, state: u64, (begin, next): (u64, u64), data_at: usize, text: &[u8]) {
    let (slot, e) = ((id % 4) as usize, r.endian);
    let d = &mut r.descs[slot * 24..slot * 24 + 24];
    e.put_u64(d, 0, state | id);
    e.put_u64(d, 8, begin);
    e.put_u64(d, 16, next);
    let i = &mut r.infos[slot * 88..slot * 88 + 88];
    e.put_u64(i, 8, id * 1_000_000_000);
    e.put_u16(i, 16, text.len() as u16);
    e.put_u64(&mut r.data, data_at, id);
    r.data[data_at + 8..data_at + 8 + text.len()].copy_from_slice(text);
}

fn text(r: &Rings) -> String {
    String::from_utf8(kernel_log_of(r, Escape::SignedChar)).expect("ASCII")
}

/// A kernel that records callers: VMCOREINFO's `OFFSET(printk_info.caller_id)`.
#[test]
fn the_caller_id_of_each_record_is_printed_where_the_kernel_records_it() {
    let mut r = rings(6, 5);
    r.layout.caller_id = Some(20);
    put(&mut r, 5, FINALIZED, (80, 96), 16, b"task");
    put(&mut r, 6, FINALIZED, (96, 112), 32, b"cpu");
    r.infos[88 + 20..88 + 24].copy_from_slice(&42u32.to_le_bytes());
    r.infos[2 * 88 + 20..2 * 88 + 24].copy_from_slice(&(0x8000_0000u32 | 3).to_le_bytes());
    assert_eq!(text(&r), "[    5.000000] [     T42] task\n[    6.000000] [      C3] cpu\n");
}

/// s390x: every field of the rings big-endian.
#[test]
fn a_big_endian_machines_rings_read_in_its_byte_order() {
    let mut r = Rings { endian: Endian::Big, ..rings(6, 5) };
    put(&mut r, 5, FINALIZED, (80, 96), 16, b"big");
    put(&mut r, 6, FINALIZED, (96, 112), 32, b"endian");
    assert_eq!(&r.descs[24..32], &(FINALIZED | 5).to_be_bytes(), "record 5 in slot 1");
    assert_eq!(text(&r), "[    5.000000] big\n[    6.000000] endian\n");
}

#[test]
fn records_in_id_order_with_a_wrapped_block() {
    let mut r = rings(8, 5);
    put(&mut r, 5, FINALIZED, (80, 96), 16, b"one");
    put(&mut r, 6, COMMITTED, (96, 112), 32, b"two\nx");
    put(&mut r, 7, 0, (112, 120), 48, b""); // reserved: skipped
    // Does not fit in the last 8 bytes: placed at index 0 of the next wrap.
    put(&mut r, 8, FINALIZED, (120, 144), 0, b"wrapped!");
    assert_eq!(
        text(&r),
        "[    5.000000] one\n[    6.000000] two\n               x\n[    8.000000] wrapped!\n"
    );
}

#[test]
fn block_ending_at_the_end_of_the_array() {
    let mut r = rings(3, 3);
    put(&mut r, 3, FINALIZED, (48, 64), 48, b"end");
    assert_eq!(text(&r), "[    3.000000] end\n");
}

#[test]
fn stale_and_reusable_descriptors_are_skipped() {
    let mut r = rings(6, 4);
    put(&mut r, 4, REUSABLE, (0, 16), 0, b"gone");
    put(&mut r, 1, FINALIZED, (16, 32), 16, b"old id in slot 1"[..8].as_ref());
    put(&mut r, 6, FINALIZED, (32, 48), 32, b"six");
    assert_eq!(text(&r), "[    6.000000] six\n");
}

#[test]
fn corrupt_block_ends_the_log() {
    let mut r = rings(7, 5);
    put(&mut r, 5, FINALIZED, (0, 16), 0, b"ok");
    put(&mut r, 6, FINALIZED, (16, 32), 16, b"bad");
    r.data[16] = 99; // block id no longer matches
    put(&mut r, 7, FINALIZED, (32, 48), 32, b"after");
    assert_eq!(text(&r), "[    5.000000] ok\n");
    // Positions several wraps apart, or reversed, are corrupt too.
    let mut r = rings(5, 5);
    put(&mut r, 5, FINALIZED, (0, 1024), 0, b"far");
    assert_eq!(text(&r), "");
    let mut r = rings(5, 5);
    put(&mut r, 5, FINALIZED, (16, 8), 0, b"rev");
    assert_eq!(text(&r), "");
}

#[test]
fn text_len_is_bounded_by_the_block_and_the_walk_by_the_ring() {
    let mut r = rings(5, 5);
    put(&mut r, 5, FINALIZED, (0, 16), 0, b"abc");
    r.infos[88 + 16] = 200; // text_len of slot 1 (id 5), beyond the block
    assert_eq!(text(&r), "[    5.000000] abc\0\0\0\0\0".replace('\0', "\\x00") + "\n");
    // A head that is never reached: at most `count` descriptors are visited.
    let mut r = rings(ID_MASK, 5);
    put(&mut r, 5, FINALIZED, (0, 16), 0, b"x");
    assert_eq!(text(&r), "[    5.000000] x\n");
}
