#!/usr/bin/python3
"""Judges what scripts/capture-test.sh brought back from the kdump capture
kernel, and prints a summary table of the runs.

usage: capture_judge.py --vmdump BIN --drgn-python PYTHON OUT

OUT is the output disk's /out: for each run NAME (vmdump.X and
makedumpfile.X for X in kdump-tools, kdump-utils, dmesg, and vmdump.default)
NAME.stat (runstat's key=value lines), NAME.stderr and the output (the
kdump-tools files as NAME.kdump-tools.flat and, after makedumpfile -R,
NAME.kdump-tools); modes.txt (stat -c '%a %s %n' in the guest); and the
saved /proc/vmcore as vmcore. Exits 1 if any check failed.
"""
import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import kdumpfile

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from kdump_bitmap import counts  # noqa: E402

# The command lines run by both tools, with makedumpfile's options.
PAIRS = [
    ("kdump-tools", "-F -c -d 31"),
    ("kdump-utils", "-l --message-level 7 -d 31"),
]
UTS = ["sysname", "nodename", "release", "version", "machine", "domainname"]


class Judge:
    def __init__(self):
        self.failed = []

    def guard(self, what, fn, *args):
        """Runs a judging step; an exception (a missing or unreadable file)
        is a failed check, and the other steps still run."""
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001: any error is the verdict
            self.check(False, what, f"{type(e).__name__}: {e}")
            return None

    def check(self, ok, what, detail=""):
        """Prints the verdict; the detail only when the check failed."""
        print(f"{'ok  ' if ok else 'FAIL'}  {what}" + (f": {detail}" if detail and not ok else ""))
        if not ok:
            self.failed.append(what)
        return ok


def read_stat(path):
    if not path.exists():
        return None
    return {k: float(v) for k, v in (line.split("=", 1) for line in path.read_text().split())}


def tail(path, lines=5):
    text = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
    return " | ".join(text[-lines:])


def run(cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)


def judge_runs(j, out, names):
    """Every run exited 0; vmdump's dumps read /proc/vmcore through mmap."""
    for name in names + ["vmcore"]:
        stat = read_stat(out / f"{name}.stat")
        ok = stat is not None and stat["exit"] == 0
        j.check(ok, f"{name} ran in the capture kernel and exited 0",
                "" if ok else f"{stat and int(stat['exit'])}; stderr: {tail(out / f'{name}.stderr')}")
    # runstat -m saw /proc/vmcore in the process's maps (mapped=1); an
    # mmap failure would also be in `vmdump dump`'s report.
    for name in ("vmdump.kdump-tools", "vmdump.kdump-utils", "vmdump.default"):
        stat = read_stat(out / f"{name}.stat") or {}
        err = (out / f"{name}.stderr").read_text(errors="replace")
        j.check(stat.get("mapped") == 1 and "mmap failed" not in err,
                f"{name} read /proc/vmcore through mmap",
                f"mapped={stat.get('mapped')}; " + next((l for l in err.splitlines() if "mmap" in l), ""))
    print("      /proc/vmcore mapped: " + ", ".join(
        f"{n} {'yes' if (read_stat(out / f'{n}.stat') or {}).get('mapped') == 1 else 'no'}" for n in names))


def judge_modes(j, out):
    """Files vmdump creates are 0600 (the -F stream is the shell's file)."""
    modes = {Path(p).name: m for m, _size, p in
             (line.split(None, 2) for line in (out / "modes.txt").read_text().splitlines())}
    for name in ["vmdump.kdump-utils", "vmdump.dmesg", "vmdump.default"]:
        j.check(modes.get(name) == "600", f"{name} is mode 0600 in the guest", f"mode {modes.get(name)}")
    print("      modes in the guest (umask 022): " +
          ", ".join(f"{n} {m}" for n, m in sorted(modes.items()) if not n.endswith((".stat", ".stderr", ".stdout"))))


def judge_dump(j, args, dump, vmcore, in_file):
    """vmdump verify, libkdumpfile and drgn read every page equal to the vmcore."""
    v = run([args.vmdump, "verify", dump, "--against", vmcore])
    m = re.search(r"verified (\d+) pages: .*; (\d+) equal to the source; 0 problems", v.stdout)
    j.check(v.returncode == 0 and m and m[1] == m[2] == str(in_file),
            f"vmdump verify {dump.name} --against vmcore", (v.stdout + v.stderr).strip())
    c = run(["/usr/bin/python3", HERE / "compare_dump.py", dump, vmcore, "--excluded-ok"])
    r = json.loads(c.stdout) if c.stdout.startswith("{") else {}
    j.check(c.returncode == 0 and r.get("different") == 0 and r.get("equal") == in_file,
            f"libkdumpfile reads every page of {dump.name} equal to the vmcore",
            c.stdout.strip() or c.stderr.strip())


def judge_drgn(j, args, dump, vmcore):
    d = run([args.drgn_python, HERE / "drgn_check.py", dump, vmcore])
    ok = j.check(d.returncode == 0, f"drgn opens {dump.name}, its pages and init_uts_ns equal the vmcore's",
                 d.stdout.strip() or d.stderr.strip()[-400:])
    if ok and dump.name == "vmdump.default":
        r = json.loads(d.stdout)
        print(f"      drgn {r['drgn']}, pip wheel with libkdumpfile: {r['with_libkdumpfile']}")


def attrs(path):
    a = kdumpfile.kdumpfile(str(path)).attr
    return {"arch.name": str(a["arch.name"]), **{f"linux.uts.{k}": str(a[f"linux.uts.{k}"]) for k in UTS}}


def judge_pair(j, out, line, args_text):
    """vmdump's dump of a command line against makedumpfile's."""
    mine, theirs = out / f"vmdump.{line}", out / f"makedumpfile.{line}"
    cm, ct = counts(mine), counts(theirs)
    j.check(cm["pages_in_file"] == ct["pages_in_file"],
            f"{line} ({args_text}): pages in the file equal makedumpfile's",
            f"vmdump {cm}, makedumpfile {ct}")
    same = mine.read_bytes() == theirs.read_bytes()
    print(f"      {line}: vmdump's file is {'byte-identical to' if same else 'not byte-identical to'} makedumpfile's")
    am, at = attrs(mine), attrs(theirs)
    j.check(am["arch.name"] == "x86_64" and am == at,
            f"{line}: libkdumpfile's arch.name and linux.uts.* equal makedumpfile's",
            "" if am == at else f"vmdump {am}, makedumpfile {at}")
    return cm, ct


def describe_kernel(out):
    """What the crashed kernel was, from VMCOREINFO (makedumpfile's dump)."""
    lines = kdumpfile.kdumpfile(str(out / "makedumpfile.kdump-utils")).attr["linux.vmcoreinfo.lines"]
    levels = 5 if str(lines["NUMBER(pgtable_l5_enabled)"]) == "1" else 4
    print(f"      crashed kernel {lines['OSRELEASE']}: {levels}-level paging, "
          f"KERNELOFFSET={lines['KERNELOFFSET']} (KASLR), phys_base {lines['NUMBER(phys_base)']}")


def judge_dmesg(j, out):
    mine, theirs = out / "vmdump.dmesg", out / "makedumpfile.dmesg"
    same = mine.read_bytes() == theirs.read_bytes()
    j.check(same, "--dump-dmesg: vmdump's log equals makedumpfile's byte for byte",
            "" if same else f"cmp {mine} {theirs}")


def summary(out, names, pages):
    print(f"\n{'run':<26} {'wall s':>7} {'user s':>7} {'sys s':>6} {'peak RSS':>10} "
          f"{'output bytes':>13} {'pages':>7} {'zero':>6}")
    for name in names + ["vmcore"]:
        s = read_stat(out / f"{name}.stat") or {}
        f = out / (name if name != "vmcore" else "vmcore")
        if name.endswith("kdump-tools"):
            f = out / f"{name}.flat"
        size = f.stat().st_size if f.exists() else 0
        p = pages.get(name, {})
        print(f"{name:<26} {s.get('wall_s', 0):7.2f} {s.get('user_s', 0):7.2f} {s.get('sys_s', 0):6.2f} "
              f"{s.get('maxrss_kib', 0) / 1024:7.1f} MiB {size:13,} "
              f"{p.get('pages_in_file', ''):>7} {p.get('zero_pages', ''):>6}")
    for line, _ in PAIRS + [("dmesg", "")]:
        m, t = (read_stat(out / f"{tool}.{line}.stat") or {} for tool in ("vmdump", "makedumpfile"))
        if m.get("wall_s") and t.get("wall_s"):
            print(f"{line}: vmdump/makedumpfile wall {m['wall_s'] / t['wall_s']:.2f}x, "
                  f"peak RSS {m['maxrss_kib'] / t['maxrss_kib']:.2f}x")
    print("(timings in a TCG guest: instructions emulated; kdump-tools size is the flattened stream's)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vmdump", required=True)
    ap.add_argument("--drgn-python", required=True)
    ap.add_argument("out", type=Path)
    args = ap.parse_args()
    out, j = args.out, Judge()
    vmcore = out / "vmcore"
    names = [f"{t}.{x}" for x in ("kdump-tools", "kdump-utils", "dmesg") for t in ("vmdump", "makedumpfile")]
    names.append("vmdump.default")
    judge_runs(j, out, names)
    j.guard("modes", judge_modes, j, out)
    j.guard("VMCOREINFO", describe_kernel, out)
    pages = {}
    for line, args_text in PAIRS:
        pair = j.guard(f"{line}: vmdump against makedumpfile", judge_pair, j, out, line, args_text)
        if pair:
            pages[f"vmdump.{line}"], pages[f"makedumpfile.{line}"] = pair
    default = j.guard("vmdump.default: counts", counts, out / "vmdump.default")
    if default:
        pages["vmdump.default"] = default
    for name, c in pages.items():
        j.guard(f"{name}: pages", judge_dump, j, args, out / name, vmcore, c["pages_in_file"])
    for name in (n for n in pages if n.startswith("vmdump.")):
        j.guard(f"{name}: drgn", judge_drgn, j, args, out / name, vmcore)
    j.guard("--dump-dmesg", judge_dmesg, j, out)
    summary(out, names, pages)
    if j.failed:
        print(f"\n{len(j.failed)} checks FAILED:\n  " + "\n  ".join(j.failed))
    return 1 if j.failed else 0


if __name__ == "__main__":
    sys.exit(main())
