#!/usr/bin/python3
"""Reads every RAM page of a source ELF vmcore back from an ELF dump (vmdump
dump --elf) with libkdumpfile, and checks which pages the dump holds.

usage: compare_elf_dump.py DUMP SOURCE

A page covered by a PT_LOAD of the dump must read equal to the source. A
page the dump leaves out must be absent: libkdumpfile raises NoData, except
for the page right before a PT_LOAD, which it reads as zeros (a quirk of its
ELF reader, seen on any ELF vmcore with a hole). Prints one JSON line; exits
1 on any difference.
"""
import json
import sys

import kdumpfile

from compare_dump import PAGE, attributes, elf_loads, elf_page, ram_pfns


def main():
    dump_path, source_path = sys.argv[1], sys.argv[2]
    dump = kdumpfile.kdumpfile(dump_path)
    with open(dump_path, "rb") as d:
        dump_loads = elf_loads(d)
    present = set()
    for paddr, _off, filesz, memsz in dump_loads:
        present.update(range(paddr // PAGE, (paddr + filesz) // PAGE))
    starts = {paddr // PAGE for paddr, *_ in dump_loads}
    counts = {"present": 0, "equal": 0, "different": [], "absent": 0, "absent_read_as_zero": 0,
              "absent_but_read": []}
    with open(source_path, "rb") as f:
        loads = elf_loads(f)
        for pfn in ram_pfns(loads, 2**52):
            _, expected = elf_page(f, loads, pfn)
            try:
                got = bytes(dump.read(kdumpfile.KDUMP_MACHPHYSADDR, pfn * PAGE, PAGE))
            except kdumpfile.exceptions.NoDataException:
                got = None
            if pfn in present:
                counts["present"] += 1
                if got == expected:
                    counts["equal"] += 1
                else:
                    counts["different"].append(pfn)
            elif got is None:
                counts["absent"] += 1
            elif pfn + 1 in starts and not any(got):
                counts["absent_read_as_zero"] += 1
            else:
                counts["absent_but_read"].append(pfn)
    bad = counts["different"] or counts["absent_but_read"]
    for key in ("different", "absent_but_read"):
        counts[key + "_first"] = [hex(p) for p in counts[key][:8]]
        counts[key] = len(counts[key])
    counts["segments"] = len(dump_loads)
    counts["attrs"] = attributes(dump)
    print(json.dumps(counts))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
