#!/usr/bin/python3
"""Reads every RAM page of an ELF vmcore back from a dump with libkdumpfile
(python3-libkdumpfile), a reader vmdump did not write, and compares bytes.

usage: compare_dump.py DUMP ELF [--excluded-ok]

Prints one JSON line: pages compared, equal, different (first pfns), missing
(pages the dump does not have; an error unless --excluded-ok), and the
dump's attributes that tests check (arch.name, linux.uts.*; null when
libkdumpfile has no value). Exits 1 on any difference. The ELF helpers are
shared with drgn_compare.py.
"""
import json
import struct
import sys

PAGE = 4096
PT_LOAD = 1


def elf_loads(f):
    head = f.read(64)
    if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        sys.exit("not a little-endian ELF64 file")
    phoff, = struct.unpack_from("<Q", head, 32)
    phentsize, phnum = struct.unpack_from("<HH", head, 54)
    if phnum == 0xFFFF:  # PN_XNUM: the count is sh_info of section header 0
        shoff, = struct.unpack_from("<Q", head, 40)
        f.seek(shoff + 44)
        phnum, = struct.unpack("<I", f.read(4))
    loads = []
    for i in range(phnum):
        f.seek(phoff + i * phentsize)
        p_type, _flags, off, _vaddr, paddr, filesz, memsz = struct.unpack("<IIQQQQQ", f.read(48))
        if p_type == PT_LOAD and paddr != 2**64 - 1 and memsz:
            loads.append((paddr, off, filesz, memsz))
    return loads


def elf_page(f, loads, pfn):
    """The page as the ELF holds it: the first PT_LOAD that covers each byte
    wins; bytes past p_filesz are zero."""
    start = pfn * PAGE
    page = bytearray(PAGE)
    covered = False
    for paddr, off, filesz, memsz in loads:
        lo, hi = max(start, paddr), min(start + PAGE, paddr + memsz)
        if lo >= hi:
            continue
        covered = True
        file_hi = min(hi, paddr + filesz)
        if file_hi > lo:
            f.seek(off + lo - paddr)
            page[lo - start:file_hi - start] = f.read(file_hi - lo)
        break
    return covered, bytes(page)


def ram_pfns(loads, max_pfn):
    pfns = set()
    for paddr, _off, _filesz, memsz in loads:
        pfns.update(range(paddr // PAGE, min(-(-(paddr + memsz) // PAGE), max_pfn)))
    return sorted(pfns)


ATTRS = ["arch.name"] + [f"linux.uts.{f}" for f in
                         ("sysname", "nodename", "release", "version", "machine", "domainname")]


def attributes(dump):
    """The attributes readers show a user, None where libkdumpfile has none."""
    values = {}
    for name in ATTRS:
        try:
            values[name] = str(dump.attr[name])
        except (KeyError, Exception):  # libkdumpfile raises its own NoKey
            values[name] = None
    return values


def main():
    import kdumpfile
    dump_path, elf_path = sys.argv[1], sys.argv[2]
    excluded_ok = "--excluded-ok" in sys.argv[3:]
    dump = kdumpfile.kdumpfile(dump_path)
    max_pfn = int(dump.attr["max_pfn"])
    equal, different, missing = 0, [], []
    with open(elf_path, "rb") as f:
        loads = elf_loads(f)
        pfns = ram_pfns(loads, max_pfn)
        for pfn in pfns:
            _, expected = elf_page(f, loads, pfn)
            try:
                got = dump.read(kdumpfile.KDUMP_MACHPHYSADDR, pfn * PAGE, PAGE)
            except kdumpfile.exceptions.NoDataException:
                missing.append(pfn)
                continue
            if bytes(got) == expected:
                equal += 1
            else:
                different.append(pfn)
    result = {
        "format": str(dump.attr["file.format"]),
        "max_pfn": max_pfn,
        "compared": len(pfns),
        "equal": equal,
        "different": len(different),
        "first_different": [hex(p) for p in different[:8]],
        "missing": len(missing),
        "first_missing": [hex(p) for p in missing[:8]],
        "attrs": attributes(dump),
    }
    print(json.dumps(result))
    failed = different or (missing and not excluded_ok)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
