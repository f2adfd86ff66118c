#!/usr/bin/env python3
"""Opens a kdump-compressed file with drgn, as a kernel developer would, and
compares what it reads with the ELF vmcore the dump was made from. Needs no
debug information: physical pages, and init_uts_ns found through the
kallsyms tables that VMCOREINFO points at, read through the dump's page
tables (virtual addresses, KASLR applied).

usage: PYTHON-WITH-DRGN drgn_check.py DUMP VMCORE [PAGES]

Reads PAGES (default 32) pages spread over the pfns the dump holds, and one
pfn it leaves out (drgn must refuse it). Prints one JSON line; exits 1 on
any difference.
"""
import json
import sys
import types
from pathlib import Path

import drgn
from drgn.helpers.linux.kallsyms import load_vmlinux_kallsyms

sys.path.insert(0, str(Path(__file__).parent))
# compare_dump's ELF helpers need no libkdumpfile: a stand-in keeps
# Debian's libkdumpfile out of the process that loads drgn's own.
sys.modules.setdefault("kdumpfile", types.ModuleType("kdumpfile"))
from compare_dump import PAGE, elf_loads, elf_page  # noqa: E402
from kdump_bitmap import dumpable_pfns, excluded_pfns  # noqa: E402


def program(path):
    prog = drgn.Program()
    prog.set_core_dump(str(path))
    return prog


def init_uts_name(prog):
    """struct new_utsname at init_uts_ns (6 fields of 65 bytes)."""
    prog.register_symbol_finder("kallsyms", load_vmlinux_kallsyms(prog), enable_index=0)
    return prog.read(prog.symbol("init_uts_ns").address, 6 * 65, False)


def main():
    dump_path, elf_path = sys.argv[1], sys.argv[2]
    wanted = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    prog = program(dump_path)
    held = dumpable_pfns(dump_path)
    step = max(1, len(held) // wanted)
    pfns = held[::step][:wanted]
    different = []
    with open(elf_path, "rb") as f:
        loads = elf_loads(f)
        for pfn in pfns:
            if prog.read(pfn * PAGE, PAGE, True) != elf_page(f, loads, pfn)[1]:
                different.append(hex(pfn))
    left_out = excluded_pfns(dump_path)[:1]
    refused = True
    for pfn in left_out:
        try:
            prog.read(pfn * PAGE, PAGE, True)
            refused = False
        except drgn.FaultError:
            pass
    uts = init_uts_name(prog)
    uts_equal = uts == init_uts_name(program(elf_path))
    fields = [uts[i * 65:(i + 1) * 65].split(b"\0")[0].decode() for i in range(6)]
    result = {
        "drgn": drgn.__version__,
        "with_libkdumpfile": drgn._with_libkdumpfile,
        "pages_read": len(pfns),
        "different": different,
        "excluded_pfn_refused": refused,
        "init_uts_ns_equal_to_vmcore": uts_equal,
        "sysname": fields[0],
        "release": fields[2],
    }
    print(json.dumps(result))
    sys.exit(0 if pfns and not different and refused and uts_equal else 1)


if __name__ == "__main__":
    main()
