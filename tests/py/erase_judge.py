#!/usr/bin/python3
"""Judges an erased dump with libkdumpfile (0.5.2 or later: the caller puts
one on LD_LIBRARY_PATH), against the vmcore it was made from.

usage: erase_judge.py DUMP ELF SPEC_JSON

SPEC_JSON gives the addresses the test looked up (kallsyms, BTF) and the
erasures the config asks for, in its own terms:
  {"fill": 88, "symbols": {"NAME": [ADDRESS, SIZE or null]}, "ranges":
   [["NAME", SIZE]], "strings": ["NAME"], "task_list": {"init_task": A,
   "tasks": OFFSET, "comm": OFFSET, "comm_len": 16}}
This script works out every erased range itself: a symbol's SIZE bytes
(its kallsyms size when null), the string a `char *` symbol points to
(read in the ELF), and each task's comm, walking the task list in the ELF.
Then, reading through libkdumpfile's own address translation:
  - every erased byte of the dump is the fill byte, and was not all fill in the ELF;
  - every other byte of the pages those ranges touch is as in the ELF.
Prints one JSON line: ranges, bytes erased, bytes kept around them, the
eraseinfo text (`file.eraseinfo.raw`), and the problems found (exit 1 if any).
"""
import json
import sys

import kdumpfile
import kdumpfile.exceptions

PAGE = 4096


def read(k, addr, size):
    return bytes(k.read(kdumpfile.KDUMP_KVADDR, addr, size))


def u64(k, addr):
    return int.from_bytes(read(k, addr, 8), "little")


def c_string_len(k, addr):
    data = read(k, addr, 1024)
    return data.index(0) if 0 in data else 1024


def erased_ranges(elf, spec):
    symbols = spec["symbols"]
    ranges = []
    for name, size in spec["ranges"]:
        address, kallsyms_size = symbols[name]
        ranges.append((name, address, size or kallsyms_size))
    for name in spec["strings"]:
        pointer = u64(elf, symbols[name][0])
        ranges.append((name, pointer, c_string_len(elf, pointer)))
    tl = spec["task_list"]
    head = tl["init_task"] + tl["tasks"]
    ranges.append(("init_task.comm", tl["init_task"] + tl["comm"], tl["comm_len"]))
    pos = u64(elf, head)
    while pos != head:
        task = pos - tl["tasks"]
        ranges.append(("t.comm", task + tl["comm"], tl["comm_len"]))
        pos = u64(elf, pos)
        if len(ranges) > 100000:
            sys.exit("the task list does not come back to init_task")
    return ranges


def main():
    dump_path, elf_path, spec_path = sys.argv[1:4]
    spec = json.load(open(spec_path))
    fill = spec["fill"]
    dump, elf = kdumpfile.kdumpfile(dump_path), kdumpfile.kdumpfile(elf_path)
    for k in (dump, elf):
        k.attr["addrxlat.ostype"] = "linux"
    ranges = erased_ranges(elf, spec)
    problems, erased, kept = [], 0, 0
    erased_bytes = {}
    for name, address, size in ranges:
        try:
            got = read(dump, address, size)
        except kdumpfile.exceptions.NoDataException as e:
            problems.append(f"{name} at {address:#x}: its page is not in the dump ({e}): the check proves nothing")
            continue
        was = read(elf, address, size)
        if got != bytes([fill]) * size:
            problems.append(f"{name} at {address:#x}: not erased in the dump")
        if was == bytes([fill]) * size:
            problems.append(f"{name} at {address:#x}: already all fill in the ELF (the check proves nothing)")
        for a in range(address, address + size):
            erased_bytes[a] = True
        erased += size
    pages = sorted({a // PAGE * PAGE for a in erased_bytes})
    for page in pages:
        got, was = read(dump, page, PAGE), read(elf, page, PAGE)
        for i in range(PAGE):
            if page + i in erased_bytes:
                continue
            kept += 1
            if got[i] != was[i]:
                problems.append(f"byte {page + i:#x} differs from the ELF but was not to be erased")
                break
    info = bytes(dump.attr["file.eraseinfo.raw"]).decode() if "file.eraseinfo.raw" in dump.attr else None
    print(json.dumps({"ranges": len(ranges), "erased": erased, "kept": kept, "pages": len(pages),
                      "eraseinfo": info, "problems": problems[:20]}))
    sys.exit(1 if problems else 0)


main()
