#!/usr/bin/python3
"""Reads the kernel log out of a dump with drgn and no debug information,
and sets it beside the log the running kernel itself printed (busybox
dmesg) before and after the dump was taken: a live dump's log must hold
every line of the first and no line the second lacks. Run by the python of
the drgn venv (ensure_drgn, scripts/lib/tools.sh).

The log is the kernel's lockless ring buffer (Linux 5.10 and later), found
through the dump's VMCOREINFO (drgn's VMCOREINFO object): SYMBOL(prb) is
the pointer to the ring buffer; the OFFSET() and SIZE() lines give the
layout. Descriptors are read from the tail id to the head id; one whose
state_var (id in the low 62 bits, state in the top 2) names another id, or
a state other than committed (1) or finalized (2), is skipped. Its text
block is [begin, next) in logical positions of the data ring (index: lpos
mod size): a block that wraps starts over at index 0; its first 8 bytes
are the descriptor's id, then text_len bytes of text.

usage: drgn_dmesg.py DUMP DMESG_BEFORE DMESG_AFTER

Prints one JSON line (records, lines, missing: lines of BEFORE the dump
lacks, extra: lines of the dump AFTER lacks, with a few of each); exits 1
unless both are none.
"""
import json
import re
import sys

import drgn

ID_MASK = (1 << 62) - 1
READABLE = (1, 2)  # committed, finalized
DMESG_LINE = re.compile(rb"^\[ *(\d+\.\d{6})\] ?(.*)$")


class Layout:
    def __init__(self, text):
        self.values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)

    def off(self, name):
        return int(self.values[f"OFFSET({name})"])

    def size(self, name):
        return int(self.values[f"SIZE({name})"])

    def symbol(self, name):
        return int(self.values[f"SYMBOL({name})"], 16)


def records(prog):
    """(seconds.micros, text) of every readable record, oldest first."""
    v = Layout(bytes(prog["VMCOREINFO"].value_()).decode())
    u64 = lambda addr: int.from_bytes(prog.read(addr, 8), "little")  # noqa: E731
    u32 = lambda addr: int.from_bytes(prog.read(addr, 4), "little")  # noqa: E731
    counter = v.off("atomic_long_t.counter")
    prb = u64(v.symbol("prb"))
    ring = prb + v.off("printk_ringbuffer.desc_ring")
    count = 1 << u32(ring + v.off("prb_desc_ring.count_bits"))
    descs, infos = u64(ring + v.off("prb_desc_ring.descs")), u64(ring + v.off("prb_desc_ring.infos"))
    head = u64(ring + v.off("prb_desc_ring.head_id") + counter)
    tail = u64(ring + v.off("prb_desc_ring.tail_id") + counter)
    data_ring = prb + v.off("printk_ringbuffer.text_data_ring")
    size = 1 << u32(data_ring + v.off("prb_data_ring.size_bits"))
    data = u64(data_ring + v.off("prb_data_ring.data"))
    lpos = v.off("prb_desc.text_blk_lpos")
    out, rid = [], tail
    while True:
        desc = descs + (rid % count) * v.size("prb_desc")
        state = u64(desc + v.off("prb_desc.state_var") + counter)
        if state & ID_MASK == rid and state >> 62 in READABLE:
            info = infos + (rid % count) * v.size("printk_info")
            ts = u64(info + v.off("printk_info.ts_nsec"))
            text_len = int.from_bytes(prog.read(info + v.off("printk_info.text_len"), 2), "little")
            begin = u64(desc + lpos + v.off("prb_data_blk_lpos.begin"))
            end = u64(desc + lpos + v.off("prb_data_blk_lpos.next"))
            text = b""
            if not (begin & 1 or end & 1) and end > begin:
                start = begin % size if begin // size == end // size else 0
                text = prog.read(data + start + 8, text_len) if text_len else b""
            out.append((f"{ts // 10**9}.{ts % 10**9 // 1000:06d}", text))
        if rid == head:
            return out
        rid = (rid + 1) & ID_MASK


def lines_of_records(recs):
    return {(stamp, line) for stamp, text in recs for line in text.split(b"\n")}


def lines_of_dmesg(path):
    lines = set()
    for raw in open(path, "rb").read().split(b"\n"):
        m = DMESG_LINE.match(raw)
        if m:
            lines.add((m[1].decode(), m[2]))
    return lines


def main():
    dump, before, after = sys.argv[1:4]
    prog = drgn.Program()
    prog.set_core_dump(dump)
    recs = records(prog)
    mine = lines_of_records(recs)
    missing = sorted(lines_of_dmesg(before) - mine)
    extra = sorted(mine - lines_of_dmesg(after))
    show = lambda pairs: [f"[{s}] {t.decode(errors='replace')}" for s, t in pairs[:3]]  # noqa: E731
    print(json.dumps({"records": len(recs), "lines": len(mine), "missing": len(missing),
                      "extra": len(extra), "first_missing": show(missing), "first_extra": show(extra)}))
    sys.exit(0 if recs and not missing and not extra else 1)


if __name__ == "__main__":
    main()
