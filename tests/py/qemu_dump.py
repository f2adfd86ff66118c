#!/usr/bin/python3
"""Writes a kdump-compressed file from an ELF vmcore exactly as QEMU's
`dump-guest-memory` does (dump/dump.c: create_kdump_vmcore), so that tests
can check vmdump reads what QEMU writes without running a guest
(kdump-format.md §9).

usage: qemu_dump.py [--compression zlib|none] [--raw] [--no-vmcoreinfo] ELF OUT

Default: QEMU's `kdump-zlib`, the flattened stream (§2.1). `--raw` writes
the plain file of `kdump-raw-zlib` (real seeks, holes where QEMU writes
nothing). `--compression none` is QEMU's code path with no compression flag
(every page raw; QEMU offers no such format, but a page zlib cannot shrink
takes the same path). LZO and snappy need modules the standard library
lacks: not offered. `--no-vmcoreinfo` models a guest without the vmcoreinfo
fw_cfg device: no VMCOREINFO note, offset/size_vmcoreinfo 0, phys_base 0.

The ELF's PT_LOADs stand in for QEMU's guest RAM blocks (their union, in
physical order; where PT_LOADs overlap the first one in program-header order
gives the bytes). What QEMU does, step by step, and reproduced here:

* disk_dump_header: signature "KDUMP   ", header_version 6, utsname with
  only `machine` = "x86_64", timestamp 0, status = the compression flag,
  block_size 4096, sub_hdr_size = ceil((104 + note_size) / 4096), bitmap_blocks
  = 2 * ceil(ceil(max_mapnr / 8) / 4096), max_mapnr = end pfn of the last RAM
  block (holes included; saturated to 32 bits, full in max_mapnr_64), nr_cpus
  = number of vCPUs (here the NT_PRSTATUS notes). Only the 464 header bytes
  are written: the rest of block 0 is never written.
* kdump_sub_header (written once): phys_base, dump_level 1, split 0,
  offset_vmcoreinfo/size_vmcoreinfo (the descriptor of the guest note, which
  is the last note) or 0/0, offset_note = 4096 + 104, note_size, eraseinfo 0,
  max_mapnr_64.
* phys_base: QEMU's x86_64 guess is 0, then vmcoreinfo_update_phys_base()
  overwrites it from the line `NUMBER(phys_base)=` of the guest VMCOREINFO
  parsed with qemu_strtou64(..., 16): the kernel prints it in decimal, so the
  sub header holds a WRONG value (e.g. "-411041792" becomes
  -0x411041792 mod 2**64). The same function NUL-terminates the text
  (`*(vmci + size) = '\\0'`) in the copy that is then written into the notes:
  the byte right after the descriptor, a padding byte of the note when
  descsz is not a multiple of 4 (already 0), else one past the note (QEMU
  allocates size + 1 bytes): the descriptor itself is unchanged.
* Notes: the vCPUs' CORE/NT_PRSTATUS notes, then one "QEMU" note (type 0,
  QEMUCPUState) per vCPU, then the guest's VMCOREINFO note.
* Bitmaps: built page by page in a one-block buffer; every time the next set
  bit lies in a later block, the buffer is written to the 1st AND the 2nd
  bitmap (identical: dump level 1) and cleared, zero blocks in between
  included; the block of the last pfn is flushed at the end; blocks after it
  are never written.
* Pages: descriptors at (1 + sub_hdr_size + bitmap_blocks) * 4096, data right
  after 24 * num_dumpable bytes (not block aligned). A zero page is written
  first, always; every all-zero page gets the descriptor {offset = data start,
  size 4096, flags 0}. Other pages: compress2(level 1) (= zlib.compress(page,
  1)), stored compressed only when strictly smaller than a page, else raw
  (flags 0, size 4096). Descriptors and data go through two write caches of 4
  pages each, flushed when the next item does not fit and at the end.
* Flattened stream: a 4096-byte header ("makedumpfile", type 1, version 1,
  big-endian), one record per write (big-endian {offset, size} + payload),
  then the end marker offset = size = -1.

Only Python's standard library; prints one JSON line describing the output.
"""
import json
import struct
import sys
import zlib

PAGE = 4096
PT_LOAD = 1
PT_NOTE = 4
NT_PRSTATUS = 1
DUMP_DH_COMPRESSED_ZLIB = 0x1
DISK_DUMP_HEADER_SIZE = 464
SUB_HEADER_SIZE = 104
PAGE_DESC_SIZE = 24
BUFSIZE_DATA_CACHE = 4 * PAGE
DUMP_LEVEL = 1
UTSNAME_LEN = 65
QEMU_CPU_STATE_SIZE = 440  # target/i386/arch_dump.c: QEMUCPUState on x86_64


def align4(n):
    return (n + 3) & ~3


def die(message):
    sys.exit("qemu_dump.py: " + message)


def read_elf(f):
    head = f.read(64)
    if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        die("not a little-endian ELF64 file")
    phoff, = struct.unpack_from("<Q", head, 32)
    phentsize, phnum = struct.unpack_from("<HH", head, 54)
    loads, notes = [], b""
    for i in range(phnum):
        f.seek(phoff + i * phentsize)
        p_type, _flags, off, _vaddr, paddr, filesz, memsz = struct.unpack("<IIQQQQQ", f.read(48))
        if p_type == PT_NOTE:
            f.seek(off)
            notes += f.read(filesz)
        elif p_type == PT_LOAD and paddr != 2**64 - 1 and memsz:
            loads.append((paddr, off, filesz, memsz))
    return loads, notes


def split_notes(buf):
    """[(name, type, desc offset in the note, whole note bytes)]."""
    notes, at = [], 0
    while at + 12 <= len(buf):
        namesz, descsz, ntype = struct.unpack_from("<III", buf, at)
        if namesz == 0 and descsz == 0 and ntype == 0:
            break  # padding after the last note
        size = 12 + align4(namesz) + align4(descsz)
        if at + size > len(buf):
            die("truncated ELF note at %#x" % at)
        name = buf[at + 12:at + 12 + namesz].rstrip(b"\0")
        notes.append((name, ntype, 12 + align4(namesz), bytearray(buf[at:at + size])))
        at += size
    return notes


def note(name, ntype, desc):
    n = name + b"\0"
    return (struct.pack("<III", len(n), len(desc), ntype) + n + b"\0" * (align4(len(n)) - len(n))
            + desc + b"\0" * (align4(len(desc)) - len(desc)))


def qemu_note(cpu):
    """A "QEMU" note as cpu_write_elf64_qemunote() writes it: type 0,
    QEMUCPUState {version 1, size, registers...}."""
    desc = bytearray(QEMU_CPU_STATE_SIZE)
    struct.pack_into("<II", desc, 0, 1, QEMU_CPU_STATE_SIZE)
    for i in range(8, QEMU_CPU_STATE_SIZE, 8):
        struct.pack_into("<Q", desc, i, (0x5145_4d55_0000_0000 | cpu << 16 | i) & (2**64 - 1))
    return note(b"QEMU", 0, bytes(desc))


def strtou64_base16(text):
    """qemu_strtou64(text, NULL, 16): strtoull semantics (leading spaces, a
    sign, an optional 0x, negative values wrapped), the whole string must be
    consumed; None where QEMU warns "Failed to read" and keeps its guess."""
    s = text.lstrip(" \t\n\v\f\r")
    neg = s[:1] == "-"
    if s[:1] in "+-" and s:
        s = s[1:]
    if s[:2] in ("0x", "0X") and len(s) > 2 and s[2] in "0123456789abcdefABCDEF":
        s = s[2:]
    if not s or any(c not in "0123456789abcdefABCDEF" for c in s):
        return None
    value = int(s, 16)
    if value >= 2**64:
        return None  # ERANGE
    return (-value if neg else value) & (2**64 - 1)


def phys_base_as_qemu_reads_it(vmcoreinfo_desc):
    """vmcoreinfo_update_phys_base(): the descriptor up to its first NUL,
    split on newlines, the first NUMBER(phys_base)= line parsed as hex."""
    text = bytes(vmcoreinfo_desc).split(b"\0", 1)[0].decode("latin-1")
    prefix = "NUMBER(phys_base)="
    for line in text.split("\n"):
        if line.startswith(prefix):
            return strtou64_base16(line[len(prefix):])
    return None


class Ram:
    """The guest's RAM as QEMU's get_next_page() walks it, from the PT_LOADs."""

    def __init__(self, f, loads):
        self.f, self.loads = f, loads
        pfns = set()
        for paddr, _off, _filesz, memsz in loads:
            pfns.update(range(paddr // PAGE, -(-(paddr + memsz) // PAGE)))
        self.pfns = sorted(pfns)
        # QEMU: dump_paddr_to_pfn(last_block->target_end); guest RAM blocks
        # are page aligned, a PT_LOAD ending mid-page counts its last page.
        self.max_mapnr = self.pfns[-1] + 1 if self.pfns else 0

    def page(self, pfn):
        start, page = pfn * PAGE, bytearray(PAGE)
        for paddr, off, filesz, memsz in reversed(self.loads):  # the first PT_LOAD wins
            lo, hi = max(start, paddr), min(start + PAGE, paddr + memsz)
            if lo >= hi:
                continue
            page[lo - start:hi - start] = bytes(hi - lo)
            file_hi = min(hi, paddr + filesz)
            if file_hi > lo:
                self.f.seek(off + lo - paddr)
                page[lo - start:file_hi - start] = self.f.read(file_hi - lo)
        return bytes(page)


class Output:
    """write_buffer(): a record of the flattened stream, or a real seek."""

    def __init__(self, path, raw):
        self.out, self.raw = open(path, "wb"), raw
        self.records = 0
        if not raw:  # write_start_flat_header()
            header = bytearray(PAGE)
            header[:12] = b"makedumpfile"
            struct.pack_into(">qq", header, 16, 1, 1)
            self.out.write(header)

    def write(self, offset, buf):
        if self.raw:
            self.out.seek(offset)
        else:
            self.out.write(struct.pack(">qq", offset, len(buf)))
        self.out.write(buf)
        self.records += 1

    def close(self):
        if not self.raw:  # write_end_flat_header()
            self.out.write(struct.pack(">qq", -1, -1))
        self.out.close()


class DataCache:
    """QEMU's DataCache: 4 pages, flushed when the next item does not fit."""

    def __init__(self, out, offset):
        self.out, self.offset, self.buf = out, offset, bytearray()

    def write(self, data):
        if len(self.buf) + len(data) > BUFSIZE_DATA_CACHE:
            self.sync()
        self.buf += data

    def sync(self):
        if self.buf:
            self.out.write(self.offset, bytes(self.buf))
            self.offset += len(self.buf)
            self.buf = bytearray()


def write_dump_bitmap(out, ram, bitmap1, len_dump_bitmap):
    """write_dump_bitmap() / set_dump_bitmap() with a one-page buffer."""
    bits_per_buf = PAGE * 8
    buf = bytearray(PAGE)

    def set_bit(last_pfn, pfn, value):
        nonlocal buf
        old, new = PAGE * (last_pfn // bits_per_buf), PAGE * (pfn // bits_per_buf)
        while old < new:
            out.write(bitmap1 + old, bytes(buf))
            out.write(bitmap1 + len_dump_bitmap + old, bytes(buf))
            buf = bytearray(PAGE)
            old += PAGE
        byte, bit = (pfn % bits_per_buf) // 8, pfn % 8
        if value:
            buf[byte] |= 1 << bit
        else:
            buf[byte] &= ~(1 << bit) & 0xFF

    last_pfn = 0
    for pfn in ram.pfns:
        set_bit(last_pfn, pfn, True)
        last_pfn = pfn
    if ram.pfns:
        set_bit(last_pfn, last_pfn + bits_per_buf, False)


def write_dump_pages(out, ram, offset_page, compress):
    offset_desc = offset_page
    offset_data = offset_desc + PAGE_DESC_SIZE * len(ram.pfns)
    page_desc, page_data = DataCache(out, offset_desc), DataCache(out, offset_data)
    pd_zero = struct.pack("<QIIQ", offset_data, PAGE, 0, 0)
    page_data.write(bytes(PAGE))
    offset_data += PAGE
    counts = {"zero": 0, "compressed": 0, "raw": 0}
    for pfn in ram.pfns:
        page = ram.page(pfn)
        if page.count(0) == PAGE:
            page_desc.write(pd_zero)
            counts["zero"] += 1
            continue
        packed = zlib.compress(page, 1) if compress else None
        if packed is not None and len(packed) < PAGE:
            flags, data = DUMP_DH_COMPRESSED_ZLIB, packed
            counts["compressed"] += 1
        else:
            flags, data = 0, page
            counts["raw"] += 1
        page_data.write(data)
        page_desc.write(struct.pack("<QIIQ", offset_data, len(data), flags, 0))
        offset_data += len(data)
    page_desc.sync()
    page_data.sync()
    counts["end"] = offset_data
    return counts


def main():
    args = sys.argv[1:]
    compression, raw, with_vmcoreinfo, paths = "zlib", False, True, []
    while args:
        a = args.pop(0)
        if a == "--compression" and args:
            compression = args.pop(0)
        elif a.startswith("--compression="):
            compression = a.split("=", 1)[1]
        elif a == "--raw":
            raw = True
        elif a == "--no-vmcoreinfo":
            with_vmcoreinfo = False
        elif a.startswith("-"):
            die("unknown option %s" % a)
        else:
            paths.append(a)
    if compression not in ("zlib", "none") or len(paths) != 2:
        die("usage: qemu_dump.py [--compression zlib|none] [--raw] [--no-vmcoreinfo] ELF OUT")
    elf_path, out_path = paths

    with open(elf_path, "rb") as f:
        loads, elf_notes = read_elf(f)
        ram = Ram(f, loads)
        if not ram.pfns:
            die("the ELF has no PT_LOAD")
        notes = split_notes(elf_notes)
        cpus = [n for n in notes if n[0] == b"CORE" and n[1] == NT_PRSTATUS]
        others = [n for n in notes if n[0] != b"VMCOREINFO"]
        guest = next((n for n in notes if n[0] == b"VMCOREINFO"), None) if with_vmcoreinfo else None

        phys_base = 0  # cpu_get_dump_info() on x86_64 leaves it 0
        if guest is not None:
            _name, _type, desc_at, raw_note = guest
            descsz, = struct.unpack_from("<I", raw_note, 4)
            if desc_at + descsz < len(raw_note):
                raw_note[desc_at + descsz] = 0  # *(vmci + size) = '\0', in the padding
            parsed = phys_base_as_qemu_reads_it(raw_note[desc_at:desc_at + descsz])
            if parsed is not None:
                phys_base = parsed
        note_buf = b"".join(bytes(n[3]) for n in others)
        note_buf += b"".join(qemu_note(cpu) for cpu in range(len(cpus)))
        if guest is not None:
            note_buf += bytes(guest[3])
        note_size = len(note_buf)

        bs = PAGE
        max_mapnr = ram.max_mapnr
        sub_hdr_size = -(-(SUB_HEADER_SIZE + note_size) // bs)
        len_dump_bitmap = -(-(-(-max_mapnr // 8)) // bs) * bs
        bitmap_blocks = len_dump_bitmap // bs * 2
        offset_note = bs + SUB_HEADER_SIZE
        offset_vmcoreinfo = size_vmcoreinfo = 0
        if guest is not None:
            offset_vmcoreinfo = offset_note + note_size - len(guest[3]) + guest[2]
            size_vmcoreinfo, = struct.unpack_from("<I", guest[3], 4)
        status = DUMP_DH_COMPRESSED_ZLIB if compression == "zlib" else 0

        header = bytearray(DISK_DUMP_HEADER_SIZE)
        header[:8] = b"KDUMP   "
        struct.pack_into("<i", header, 8, 6)
        machine = 12 + 4 * UTSNAME_LEN
        header[machine:machine + 6] = b"x86_64"
        struct.pack_into("<IiiIIIIIIi", header, 424, status, bs, sub_hdr_size, bitmap_blocks,
                         min(max_mapnr, 0xFFFFFFFF), 0, 0, 0, 0, len(cpus))
        sub = struct.pack("<QiiQQQQQQQQQQQ", phys_base, DUMP_LEVEL, 0, 0, 0, offset_vmcoreinfo,
                          size_vmcoreinfo, offset_note, note_size, 0, 0, 0, 0, max_mapnr)

        out = Output(out_path, raw)
        out.write(0, bytes(header))
        out.write(bs, sub)
        out.write(offset_note, note_buf)
        offset_dump_bitmap = (1 + sub_hdr_size) * bs
        write_dump_bitmap(out, ram, offset_dump_bitmap, len_dump_bitmap)
        offset_page = (1 + sub_hdr_size + bitmap_blocks) * bs
        counts = write_dump_pages(out, ram, offset_page, compression == "zlib")
        out.close()

    print(json.dumps({
        "format": ("kdump-raw-" if raw else "kdump-") + compression,
        "compression": compression,
        "max_mapnr": max_mapnr,
        "nr_cpus": len(cpus),
        "num_dumpable": len(ram.pfns),
        "zero_pages": counts["zero"],
        "compressed_pages": counts["compressed"],
        "raw_pages": counts["raw"],
        "phys_base": phys_base,
        "offset_vmcoreinfo": offset_vmcoreinfo,
        "size_vmcoreinfo": size_vmcoreinfo,
        "note_size": note_size,
        "data_offset": offset_page + PAGE_DESC_SIZE * len(ram.pfns),
        "records": out.records,
    }))


if __name__ == "__main__":
    main()
