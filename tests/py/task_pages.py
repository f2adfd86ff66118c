#!/usr/bin/python3
"""Judges the task filters (keep-tasks, drop-tasks) on a real vmcore, with
a walk of its own: libkdumpfile (python3-libkdumpfile) reads the ELF vmcore,
this script walks the task list from init_task and the chosen process's
page tables (x86_64, 4 or 5 levels by VMCOREINFO's pgtable_l5_enabled),
then looks for those pages in each dump.

usage: task_pages.py ELF SPEC_JSON [--kept DUMP]... [--dropped DUMP]... [--baseline DUMP]...

SPEC_JSON: {"init_task": ADDRESS, "tasks": OFFSET, "tgid": OFFSET, "mm":
OFFSET, "comm": OFFSET, "pgd": OFFSET (in mm_struct), "pid": N}: addresses
and BTF offsets the test looked up; which pages the process maps is this
script's own finding.
  --kept: every mapped page that is not all zero is in the dump, bytes
    equal to the ELF's (zero pages may be left out: -d 1 and above);
  --dropped: no mapped page is in the dump;
  --baseline: only counted (the dump made without the filter).
Prints one JSON line; exits 1 on any problem.
"""
import json
import sys

import kdumpfile

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from kdump_bitmap import dumpable_pfns  # noqa: E402

PAGE = 4096
PRESENT, PSE = 0x1, 0x80
ADDRESS_BITS = 0x000F_FFFF_FFFF_F000
MAX_TASKS = 1 << 22


def kvirt(k, addr, size):
    return bytes(k.read(kdumpfile.KDUMP_KVADDR, addr, size))


def phys(k, addr, size=PAGE):
    return bytes(k.read(kdumpfile.KDUMP_MACHPHYSADDR, addr, size))


def u64(data, at=0):
    return int.from_bytes(data[at:at + 8], "little")


def process(k, spec):
    """(comm, mm) of the process whose tgid is spec["pid"]."""
    head = spec["init_task"] + spec["tasks"]
    entry = head
    for _ in range(MAX_TASKS):
        task = entry - spec["tasks"]
        tgid = int.from_bytes(kvirt(k, task + spec["tgid"], 4), "little")
        if tgid == spec["pid"]:
            comm = kvirt(k, task + spec["comm"], 16).split(b"\0")[0].decode(errors="replace")
            return comm, u64(kvirt(k, task + spec["mm"], 8))
        entry = u64(kvirt(k, entry, 8))
        if entry == head:
            break
    sys.exit(f"no process with pid {spec['pid']} on the task list")


def five_level(k):
    raw = k.attr["linux.vmcoreinfo.raw"]
    return "NUMBER(pgtable_l5_enabled)=1" in str(raw).splitlines()


def mapped_pfns(k, pgd, levels):
    """Every pfn the user half of the tables at pgd (the top table's kernel
    virtual address; the lower tables are found by physical address) maps."""
    pfns = set()

    def walk(data, level, entries):
        for i in range(entries):
            e = u64(data, 8 * i)
            if not e & PRESENT:
                continue
            base = (e & ADDRESS_BITS) >> 12
            if level == 1 or (level in (2, 3) and e & PSE):
                # a 4 KiB page, or a 2 MiB / 1 GiB page (its low pfn bits are flags)
                span = 1 << (9 * (level - 1))
                first = base & ~(span - 1)
                pfns.update(range(first, first + span))
            else:
                walk(phys(k, e & ADDRESS_BITS), level - 1, 512)

    walk(kvirt(k, pgd, PAGE), levels, 256)
    return pfns


def main():
    elf_path, spec = sys.argv[1], json.load(open(sys.argv[2]))
    roles, args = [], sys.argv[3:]
    while args:
        roles.append((args[0].lstrip("-"), args[1]))
        args = args[2:]
    elf = kdumpfile.kdumpfile(elf_path)
    elf.attr["addrxlat.ostype"] = "linux"
    comm, mm = process(elf, spec)
    if mm == 0:
        sys.exit(f"pid {spec['pid']} ({comm}) is a kernel thread")
    pgd = u64(kvirt(elf, mm + spec["pgd"], 8))
    pfns = sorted(mapped_pfns(elf, pgd, 5 if five_level(elf) else 4))
    nonzero = [p for p in pfns if any(phys(elf, p * PAGE))]
    result = {"pid": spec["pid"], "comm": comm, "pages": len(pfns), "nonzero": len(nonzero), "dumps": {}}
    problems = []
    for role, path in roles:
        present = set(dumpable_pfns(path)).intersection(pfns)
        entry = {"role": role, "present": len(present)}
        if role == "kept":
            dump = kdumpfile.kdumpfile(path)
            missing = [p for p in nonzero if p not in present]
            different = [p for p in sorted(present) if phys(dump, p * PAGE) != phys(elf, p * PAGE)]
            entry.update(missing=len(missing), different=len(different))
            if missing or different:
                problems.append(f"{path}: {len(missing)} nonzero pages missing (first {missing[:4]}), "
                                f"{len(different)} different (first {different[:4]})")
        elif role == "dropped" and present:
            problems.append(f"{path}: {len(present)} of the process's pages are in the dump "
                            f"(first {sorted(present)[:4]})")
        result["dumps"][path.rsplit("/", 1)[-1]] = entry
    if not nonzero:
        problems.append(f"pid {spec['pid']} ({comm}) maps no nonzero page: nothing to judge")
    result["problems"] = problems
    print(json.dumps(result))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
