#!/usr/bin/python3
"""Reads the crashed kernel's init_uts_ns through a dump with drgn and no
debug information: the symbol from the kallsyms tables that VMCOREINFO
points at, the bytes through the dump's own page tables (a kernel virtual
address, KASLR applied), compared with the same read from the ELF vmcore.
Run by the python of the drgn venv (ensure_drgn, scripts/lib/tools.sh).

usage: drgn_uts.py DUMP VMCORE

Prints one JSON line (the fields read from the dump); exits 1 if the dump
and the vmcore disagree.
"""
import json
import sys

import drgn
from drgn.helpers.linux.kallsyms import load_vmlinux_kallsyms

FIELDS = ["sysname", "nodename", "release", "version", "machine", "domainname"]


def init_uts_name(path):
    """struct new_utsname, at the start of init_uts_ns: 6 fields of 65 bytes."""
    prog = drgn.Program()
    prog.set_core_dump(path)
    prog.register_symbol_finder("kallsyms", load_vmlinux_kallsyms(prog), enable_index=0)
    return prog.read(prog.symbol("init_uts_ns").address, len(FIELDS) * 65, False)


def main():
    dump, vmcore = init_uts_name(sys.argv[1]), init_uts_name(sys.argv[2])
    fields = {f: dump[i * 65:(i + 1) * 65].split(b"\0")[0].decode() for i, f in enumerate(FIELDS)}
    print(json.dumps({"equal_to_vmcore": dump == vmcore, **fields}))
    sys.exit(0 if dump == vmcore else 1)


if __name__ == "__main__":
    main()
