#!/usr/bin/python3
"""Page counts of a plain kdump-compressed file, read from its own bitmaps
and descriptors (x86_64 layout, shared/docs/kdump-format.md), with no
library: a judge that shares no code with vmdump or libkdumpfile.
makedumpfile writes the headers and descriptors in the dumped machine's
byte order (big-endian on s390x): the order is the one in which the
header's header_version is small.

usage: kdump_bitmap.py DUMP  (prints the counts as one JSON line)
"""
import json
import struct
import sys

DESC = "qIIQ"  # page_desc: offset, size, flags, page_flags


def byte_order(head):
    """"<" or ">": the order in which header_version (offset 8) is 1 to 64."""
    for order in "<>":
        if 1 <= struct.unpack_from(order + "i", head, 8)[0] <= 64:
            return order
    raise ValueError("header_version is no small number in either byte order")


def _layout(f):
    head = f.read(464)
    if head[:8] != b"KDUMP   ":
        raise ValueError("not a plain kdump-compressed file (flattened? makedumpfile -R first)")
    order = byte_order(head)
    block_size, sub_hdr_size, bitmap_blocks = struct.unpack_from(order + "iiI", head, 428)
    f.seek(block_size + 8)
    dump_level, = struct.unpack(order + "i", f.read(4))
    half = bitmap_blocks // 2 * block_size
    bitmap1 = (1 + sub_hdr_size) * block_size
    return block_size, dump_level, bitmap1, half, order


def _bits(bitmap):
    """The pfns whose bit is set (bit i of byte n is pfn 8n+i)."""
    for n, byte in enumerate(bitmap):
        while byte:
            low = byte & -byte
            yield 8 * n + low.bit_length() - 1
            byte ^= low


def bitmaps(path):
    """(1st bitmap, 2nd bitmap) as bytes: RAM pfns, pfns in the file."""
    with open(path, "rb") as f:
        _, _, bitmap1, half, _ = _layout(f)
        f.seek(bitmap1)
        both = f.read(2 * half)
    return both[:half], both[half:]


def dumpable_pfns(path):
    """The pfns the file holds, in order."""
    return list(_bits(bitmaps(path)[1]))


def excluded_pfns(path):
    """RAM pfns the file leaves out, in order."""
    ram, kept = bitmaps(path)
    return list(_bits(bytes(a & ~b for a, b in zip(ram, kept))))


def counts(path):
    """Set bits of both bitmaps, and descriptors of the shared zero page
    (at -d 1 and above every zero page points at the start of the data)."""
    ram, kept = bitmaps(path)
    pages = sum(bin(b).count("1") for b in kept)
    with open(path, "rb") as f:
        block_size, dump_level, bitmap1, half, order = _layout(f)
        desc = struct.Struct(order + DESC)
        descs = bitmap1 + 2 * half
        f.seek(descs)
        table = f.read(pages * desc.size)
    data = descs + pages * desc.size
    zero = 0
    if dump_level & 1:
        zero = sum(1 for (offset, *_rest) in desc.iter_unpack(table) if offset == data)
    return {
        "dump_level": dump_level,
        "ram_pages": sum(bin(b).count("1") for b in ram),
        "pages_in_file": pages,
        "zero_pages": zero,
    }


if __name__ == "__main__":
    print(json.dumps(counts(sys.argv[1])))
