#!/usr/bin/python3
"""Reads every RAM page of an ELF vmcore back from a dump with libkdumpfile
(python3-libkdumpfile), a reader vmdump did not write, and compares bytes.

usage: compare_dump.py DUMP ELF [--excluded-ok] [--lost-ok] [--truncated-at BYTES]

Prints one JSON line: pages compared, equal, different (first pfns), missing
(pages the dump does not have; an error unless --excluded-ok), and the
dump's attributes that tests check (arch.name, linux.uts.*; null when
libkdumpfile has no value). Exits 1 on any difference. The ELF helpers are
shared with drgn_compare.py.

Pages libkdumpfile refuses as corrupt (a lost page of an incomplete dump:
set in the 2nd bitmap, its descriptor all zero) count as "refused", an
error unless --lost-ok.

--truncated-at BYTES: the ELF was truncated to BYTES while it was dumped.
Pages whose bytes lie wholly before BYTES must be in the dump; the others
count as "beyond" (and "beyond_present" if the dump still has them,
read before the truncation).
"""
import json
import re
import struct
import sys

PAGE = 4096  # unless the dump or the ELF's VMCOREINFO says otherwise
PT_LOAD = 1


def elf_loads(f):
    f.seek(0)
    head = f.read(64)
    if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] not in (1, 2):
        sys.exit("not an ELF64 file")
    e = "<" if head[5] == 1 else ">"  # EI_DATA: s390x's are big-endian
    phoff, = struct.unpack_from(e + "Q", head, 32)
    phentsize, phnum = struct.unpack_from(e + "HH", head, 54)
    if phnum == 0xFFFF:  # PN_XNUM: the count is sh_info of section header 0
        shoff, = struct.unpack_from(e + "Q", head, 40)
        f.seek(shoff + 44)
        phnum, = struct.unpack(e + "I", f.read(4))
    loads = []
    for i in range(phnum):
        f.seek(phoff + i * phentsize)
        p_type, _flags, off, _vaddr, paddr, filesz, memsz = struct.unpack(e + "IIQQQQQ", f.read(48))
        if p_type == PT_LOAD and paddr != 2**64 - 1 and memsz:
            loads.append((paddr, off, filesz, memsz))
    return loads


def vmcoreinfo_page_size(f):
    """PAGESIZE of the ELF's VMCOREINFO note (in its first MiB, where the
    notes are), or 4096 when there is none."""
    f.seek(0)
    m = re.search(rb"\nPAGESIZE=([0-9]+)\n", f.read(1 << 20))
    return int(m[1]) if m else PAGE


def elf_page(f, loads, pfn, page_size=PAGE):
    """The page as the ELF holds it: the first PT_LOAD that covers each byte
    wins; bytes past p_filesz are zero."""
    start = pfn * page_size
    page = bytearray(page_size)
    covered = False
    for paddr, off, filesz, memsz in loads:
        lo, hi = max(start, paddr), min(start + page_size, paddr + memsz)
        if lo >= hi:
            continue
        covered = True
        file_hi = min(hi, paddr + filesz)
        if file_hi > lo:
            f.seek(off + lo - paddr)
            page[lo - start:file_hi - start] = f.read(file_hi - lo)
        break
    return covered, bytes(page)


def ram_pfns(loads, max_pfn, page_size=PAGE):
    pfns = set()
    for paddr, _off, _filesz, memsz in loads:
        pfns.update(range(paddr // page_size, min(-(-(paddr + memsz) // page_size), max_pfn)))
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


def file_end(loads, pfn, page_size=PAGE):
    """One past the last file byte that page `pfn` is read from (0: none)."""
    start = pfn * page_size
    for paddr, off, filesz, memsz in loads:
        if paddr <= start < paddr + memsz:
            return off + min(start + page_size, paddr + filesz) - paddr if start < paddr + filesz else 0
    return 0


def main():
    import kdumpfile
    dump_path, elf_path = sys.argv[1], sys.argv[2]
    excluded_ok = "--excluded-ok" in sys.argv[3:]
    lost_ok = "--lost-ok" in sys.argv[3:]
    refused = []
    truncated_at = None
    if "--truncated-at" in sys.argv[3:]:
        truncated_at = int(sys.argv[sys.argv.index("--truncated-at") + 1])
    beyond, beyond_present, readable_missing = 0, 0, []
    dump = kdumpfile.kdumpfile(dump_path)
    max_pfn = int(dump.attr["max_pfn"])
    page = int(dump.attr["arch.page_size"])
    equal, different, missing = 0, [], []
    with open(elf_path, "rb") as f:
        loads = elf_loads(f)
        pfns = ram_pfns(loads, max_pfn, page)
        for pfn in pfns:
            _, expected = elf_page(f, loads, pfn, page)
            is_beyond = truncated_at is not None and file_end(loads, pfn, page) > truncated_at
            beyond += is_beyond
            try:
                got = dump.read(kdumpfile.KDUMP_MACHPHYSADDR, pfn * page, page)
            except (kdumpfile.exceptions.NoDataException, kdumpfile.exceptions.CorruptException) as e:
                is_lost = isinstance(e, kdumpfile.exceptions.CorruptException)
                (refused if is_lost else missing).append(pfn)
                if truncated_at is not None and not is_beyond:
                    readable_missing.append(pfn)
                continue
            beyond_present += is_beyond
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
        "refused": len(refused),
        "first_refused": [hex(p) for p in refused[:8]],
        "attrs": attributes(dump),
    }
    if truncated_at is not None:
        result.update(beyond=beyond, beyond_present=beyond_present,
                      readable_missing=len(readable_missing),
                      first_readable_missing=[hex(p) for p in readable_missing[:8]])
    print(json.dumps(result))
    failed = different or (missing and not excluded_ok) or (refused and not lost_ok) or readable_missing
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
