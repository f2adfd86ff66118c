#!/usr/bin/python3
"""Reads every RAM page of an ELF vmcore back from a dump with drgn (run by
the python of a venv with `pip install drgn`), and compares bytes: the check
that drgn opens a dump, without a vmlinux, and reads it right.

usage: drgn_compare.py DUMP ELF

Prints one JSON line: drgn's version and platform, pages compared, equal,
different (first pfns), missing (pages drgn cannot read: those the dump left
out). Exits 1 on any difference or if drgn cannot open the dump.
"""
import json
import os
import sys

import drgn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_dump import elf_loads, elf_page, ram_pfns, vmcoreinfo_page_size  # noqa: E402


def main():
    dump_path, elf_path = sys.argv[1], sys.argv[2]
    prog = drgn.Program()
    prog.set_core_dump(dump_path)
    equal, different, missing = 0, [], 0
    with open(elf_path, "rb") as f:
        page = vmcoreinfo_page_size(f)
        loads = elf_loads(f)
        pfns = ram_pfns(loads, 2**52 // page, page)
        for pfn in pfns:
            try:
                got = prog.read(pfn * page, page, True)
            except drgn.FaultError:
                missing += 1
                continue
            if got == elf_page(f, loads, pfn, page)[1]:
                equal += 1
            else:
                different.append(pfn)
    print(json.dumps({
        "drgn": drgn.__version__,
        "platform": str(prog.platform.arch),
        "page_size": page,
        "compared": len(pfns),
        "equal": equal,
        "different": len(different),
        "first_different": [hex(p) for p in different[:8]],
        "missing": missing,
    }))
    sys.exit(1 if different else 0)


if __name__ == "__main__":
    main()
