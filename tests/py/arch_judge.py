#!/usr/bin/python3
"""Judges vmdump's dumps of a real vmcore of another architecture against
that architecture's makedumpfile run on the same vmcore
(scripts/arm64-test.sh, scripts/kdump-arch-test.sh).

usage: arch_judge.py ELF REFERENCE_DIR|none VMDUMP_DIR ARCH_NAME UTS_MACHINE

ARCH_NAME is libkdumpfile's arch.name for the machine (aarch64, ppc64), or
none where this libkdumpfile does not know the machine (Debian 12's 0.5.1
predates riscv64: it reads the pages by physical address, and names no
machine for makedumpfile's dumps either); UTS_MACHINE the kernel's uname -m
(aarch64, ppc64le, riscv64).
REFERENCE_DIR is what scripts/make-arm64-fixture.sh or
make-kdump-fixture.sh leaves in
NAME.reference: makedumpfile's d1.kdump, d31.kdump, their reports
(dN.report.txt) and dmesg.txt. VMDUMP_DIR holds vmdump's d1.kdump,
d31.kdump, their reports on stderr (dN.stderr.txt), dmesg.txt and
refiltered.kdump (d1.kdump converted to -d 31).

For each dump of vmdump, every check prints one line, PASS or FAIL:
libkdumpfile reads every page it holds equal to the ELF; it holds exactly
the pfns makedumpfile's dump of that level holds (bitmaps compared pfn by
pfn); each count of the report equals makedumpfile's (less the pages it
counts twice where two PT_LOADs overlap: a capture kernel's /proc/vmcore
on arm64 maps the kernel image again over RAM); its attributes name
the machine (arch.name, linux.uts.machine) and the kernel's release. Then
the kernel logs are compared (vmdump's without the caller ids 1.7.2 does
not print, when makedumpfile's has none). Exits 1 when a check failed.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_dump import attributes, elf_loads, elf_page, ram_pfns, vmcoreinfo_page_size  # noqa: E402
from kdump_bitmap import dumpable_pfns  # noqa: E402
from kernel_log import without_caller_ids  # noqa: E402

REPORT_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z ]*[a-z])\s*:\s*(0x[0-9a-f]+)\s*$")

failures = []


def check(ok, what):
    print(f"{'PASS' if ok else 'FAIL'}: {what}")
    if not ok:
        failures.append(what)


def report_counts(path):
    """makedumpfile's report lines ("Free pages : 0x...") as {label: count}."""
    with open(path, errors="replace") as f:
        return {m[1]: int(m[2], 16) for m in map(REPORT_LINE.match, f) if m}


def vmcoreinfo_release(elf_path):
    with open(elf_path, "rb") as f:
        head = f.read(1 << 20)
    m = re.search(rb"OSRELEASE=([^\n]+)\n", head)
    return m[1].decode() if m else None


def read_back(dump_path, elf_path):
    """(pages equal, pfns whose bytes differ, pfns held) read by libkdumpfile."""
    import kdumpfile
    dump = kdumpfile.kdumpfile(dump_path)
    equal, different, held = 0, [], []
    with open(elf_path, "rb") as f:
        page_size = int(dump.attr["arch.page_size"])
        check(page_size == vmcoreinfo_page_size(f),
              f"{dump_path}: libkdumpfile's page size {page_size} is the ELF's PAGESIZE")
        loads = elf_loads(f)
        for pfn in ram_pfns(loads, int(dump.attr["max_pfn"]), page_size):
            try:
                got = bytes(dump.read(kdumpfile.KDUMP_MACHPHYSADDR, pfn * page_size, page_size))
            except kdumpfile.exceptions.NoDataException:
                continue
            held.append(pfn)
            if got == elf_page(f, loads, pfn, page_size)[1]:
                equal += 1
            else:
                different.append(pfn)
    return equal, different, held, attributes(dump)


def counted_twice(elf_path):
    """The pages makedumpfile's report counts twice: it adds up the pages
    of each PT_LOAD, so a page that two of them cover (the kernel image's
    segment over the linear map's) is counted twice."""
    with open(elf_path, "rb") as f:
        page_size, loads = vmcoreinfo_page_size(f), elf_loads(f)
    each = sum(len(ram_pfns([load], 2**64, page_size)) for load in loads)
    return each - len(ram_pfns(loads, 2**64, page_size))


def as_makedumpfile_counts(counts, twice):
    """vmdump's report counts as makedumpfile counts them, with `twice`
    pages counted twice."""
    moved = {"Original pages": twice, "Remaining pages": twice, "Memory Hole": -twice}
    return {label: n + moved.get(label, 0) for label, n in counts.items()}


def judge_dump(name, ours, theirs, their_report, our_report, elf_path, machine):
    equal, different, held, attrs = read_back(ours, elf_path)
    check(not different and equal == len(held) and held,
          f"{name}: libkdumpfile reads {equal} of {len(held)} pages equal to the ELF"
          + (f", first different {[hex(p) for p in different[:8]]}" if different else ""))
    ours_pfns, their_pfns = dumpable_pfns(ours), dumpable_pfns(theirs)
    only_ours = sorted(set(ours_pfns) - set(their_pfns))
    only_theirs = sorted(set(their_pfns) - set(ours_pfns))
    check(not only_ours and not only_theirs and ours_pfns == held,
          f"{name}: {len(ours_pfns)} pfns in the file, makedumpfile's has {len(their_pfns)}"
          f" (only in vmdump's {[hex(p) for p in only_ours[:8]]}, only in makedumpfile's"
          f" {[hex(p) for p in only_theirs[:8]]})")
    if our_report is not None:
        twice = counted_twice(elf_path)
        mine, reference = as_makedumpfile_counts(report_counts(our_report), twice), report_counts(their_report)
        # Upstream makedumpfile (after 1.7.9) prints "Extension filter
        # pages" always, 0 without --extension; vmdump when filters ran.
        unfiltered = reference.get("Extension filter pages") == 0 and "Extension filter pages" not in mine
        labels = [label for label in reference
                  if label != "Write bytes" and not (unfiltered and label == "Extension filter pages")]
        wrong = {label: (mine.get(label), reference[label]) for label in labels if mine.get(label) != reference[label]}
        check(labels and not wrong,
              f"{name}: the report's {len(labels)} counts equal makedumpfile's"
              + (f" ({twice} pages of overlapping PT_LOADs it counts twice)" if twice else "")
              + (f"; differing (vmdump, makedumpfile): {wrong}" if wrong else ""))
    expected = {"arch.name": machine["arch"], "linux.uts.machine": machine["uts"], "linux.uts.release": machine["release"]}
    got = {k: attrs.get(k) for k in expected}
    check(got == expected, f"{name}: attributes {got}")


def judge_unjudged(elf, ours, machine):
    """REFERENCE_DIR none: no makedumpfile judges this kernel here (upstream's
    source out of reach). The checks that need none: every page each dump
    holds equal to the ELF, the attributes, the -d 31 dump and the -d 1 one
    refiltered holding the same pfns, fewer than -d 1's, the log naming
    the kernel's release, and the classifier's self-check agreeing with the
    kernel's own counters."""
    held = {}
    for name in ("d1", "d31", "refiltered"):
        equal, different, pages, attrs = read_back(f"{ours}/{name}.kdump", elf)
        check(not different and equal == len(pages) and pages,
              f"{name}.kdump: libkdumpfile reads {equal} of {len(pages)} pages equal to the ELF")
        expected = {"arch.name": machine["arch"], "linux.uts.machine": machine["uts"],
                    "linux.uts.release": machine["release"]}
        got = {k: attrs.get(k) for k in expected}
        check(got == expected, f"{name}.kdump: attributes {got}")
        held[name] = dumpable_pfns(f"{ours}/{name}.kdump")
    check(held["d31"] == held["refiltered"] and len(held["d31"]) < len(held["d1"]),
          f"-d 31 holds {len(held['d31'])} pfns, the -d 1 dump refiltered {len(held['refiltered'])}, -d 1 {len(held['d1'])}")
    with open(f"{ours}/dmesg.txt", "rb") as f:
        log = f.read()
    check(f"Linux version {machine['release']} ".encode() in log,
          f"vmdump dmesg: {len(log)} bytes, with the kernel's banner for {machine['release']}")
    # The classifier's self-check: its free, page cache and user counts
    # beside the kernel's own counters (vmstat) in the -d 31 run's report.
    with open(f"{ours}/d31.stderr.txt", errors="replace") as f:
        line = next((line.strip() for line in f if line.startswith("Self-check")), "no Self-check line")
    check(": agree" in line, f"-d 31 {line}")


def main():
    elf, ref, ours, arch_name, uts_machine = sys.argv[1:6]
    release = vmcoreinfo_release(elf)
    check(release is not None, f"the ELF's VMCOREINFO has OSRELEASE={release}")
    machine = {"arch": None if arch_name == "none" else arch_name, "uts": uts_machine, "release": release}
    if ref == "none":
        judge_unjudged(elf, ours, machine)
        print(f"{'FAILED' if failures else 'passed'} (no makedumpfile judged): {len(failures)} check(s) failed")
        sys.exit(1 if failures else 0)
    for level in (1, 31):
        judge_dump(f"-d {level}", f"{ours}/d{level}.kdump", f"{ref}/d{level}.kdump", f"{ref}/d{level}.report.txt",
                   f"{ours}/d{level}.stderr.txt", elf, machine)
    judge_dump("d1.kdump refiltered to -d 31", f"{ours}/refiltered.kdump", f"{ref}/d31.kdump", None, None,
               elf, machine)
    # Debian 12's makedumpfile 1.7.2 prints no caller ids (1.7.5 and later,
    # and vmdump, do): its log is then compared with vmdump's without them.
    with open(f"{ours}/dmesg.txt", "rb") as a, open(f"{ref}/dmesg.txt", "rb") as b:
        mine, theirs = a.read(), b.read()
    how = "as written"
    if mine != theirs:
        mine, how = without_caller_ids(mine), "without caller ids"
    check(mine == theirs and theirs,
          f"vmdump dmesg: {len(mine)} bytes {how}, equal to makedumpfile's --dump-dmesg ({len(theirs)})")
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} check(s) failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
