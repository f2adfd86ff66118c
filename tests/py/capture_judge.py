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

# The command lines both tools ran, with makedumpfile's options.
PAIRS = [("kdump-tools", "-F -c -d 31"), ("kdump-utils", "-l --message-level 7 -d 31")]
RUNS = [f"{tool}.{line}" for line in ("check-params", "kdump-tools", "kdump-utils", "dmesg")
        for tool in ("vmdump", "makedumpfile")] + ["vmdump.default"]
DUMPS = [f"{tool}.{line}" for line, _ in PAIRS for tool in ("vmdump", "makedumpfile")] + ["vmdump.default"]


class Judge:
    def __init__(self):
        self.failed = []

    def check(self, ok, what, detail=""):
        """Prints the verdict; the detail only when the check failed."""
        print(f"{'ok  ' if ok else 'FAIL'}  {what}" + (f": {detail}" if detail and not ok else ""))
        if not ok:
            self.failed.append(what)
        return ok

    def guard(self, what, fn, *args):
        """Runs a judging step; an exception (a missing or unreadable file)
        is a failed check, and the other steps still run."""
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001: any error is the verdict
            self.check(False, what, f"{type(e).__name__}: {e}")
            return None


def info(text):
    print(f"      {text}")


def read_stat(path):
    if not path.exists():
        return {}
    return {k: float(v) for k, v in (line.split("=", 1) for line in path.read_text().split())}


def tail(path, lines=5):
    text = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
    return " | ".join(text[-lines:])


def run_json(cmd):
    """Runs a judge script; its JSON line (or {}) and the whole output."""
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    result = json.loads(p.stdout) if p.stdout.startswith("{") else {}
    return p.returncode, result, (p.stdout + p.stderr).strip()


def judge_runs(j, out):
    """Every run exited 0; vmdump's dumps read /proc/vmcore through mmap:
    runstat -m saw it in the process's maps, and `vmdump dump`'s report
    (the only one that would say so) has no mmap failure."""
    for name in RUNS + ["vmcore"]:
        stat = read_stat(out / f"{name}.stat")
        ok = stat.get("exit") == 0
        j.check(ok, f"{name} ran in the capture kernel and exited 0",
                f"exit {stat.get('exit')}; stderr: {tail(out / f'{name}.stderr')}")
    for name in ("vmdump.kdump-tools", "vmdump.kdump-utils", "vmdump.default"):
        mapped = read_stat(out / f"{name}.stat").get("mapped")
        err = (out / f"{name}.stderr").read_text(errors="replace")
        j.check(mapped == 1 and "mmap failed" not in err, f"{name} read /proc/vmcore through mmap",
                f"mapped={mapped}; " + next((line for line in err.splitlines() if "mmap" in line), ""))
    mapped = {n: read_stat(out / f"{n}.stat").get("mapped") == 1 for n in RUNS}
    info("/proc/vmcore mapped: " + ", ".join(f"{n} {'yes' if m else 'no'}" for n, m in mapped.items()))


def judge_modes(j, out):
    """Files vmdump creates are 0600 (the -F stream is the shell's file)."""
    modes = {Path(p).name: m for m, _size, p in
             (line.split(None, 2) for line in (out / "modes.txt").read_text().splitlines())}
    for name in ("vmdump.kdump-utils", "vmdump.dmesg", "vmdump.default"):
        j.check(modes.get(name) == "600", f"{name} is mode 0600 in the guest", f"mode {modes.get(name)}")
    info("modes in the guest (umask 022): " + ", ".join(
        f"{n} {m}" for n, m in sorted(modes.items()) if not n.endswith((".stat", ".stderr", ".stdout"))))


def judge_install(j, out):
    """The capture kernel's vmdump found what install.sh put in the tree."""
    text = (out / "plugins.txt").read_text(errors="replace")
    j.check("system profile: /etc/vmdump/vmdump.toml" in text and "absent" not in text
            and "/usr/lib/vmdump/plugins/libvmdump_c_zlib.so" in text and "skipped" not in text,
            "vmdump in the capture kernel finds /etc/vmdump/vmdump.toml and the installed plugins", text)


def describe_kernel(out):
    """What the crashed kernel was, from VMCOREINFO (makedumpfile's dump)."""
    lines = kdumpfile.kdumpfile(str(out / "makedumpfile.kdump-utils")).attr["linux.vmcoreinfo.lines"]
    levels = 5 if str(lines["NUMBER(pgtable_l5_enabled)"]) == "1" else 4
    info(f"crashed kernel {lines['OSRELEASE']}: {levels}-level paging, "
         f"KERNELOFFSET={lines['KERNELOFFSET']} (KASLR), phys_base {lines['NUMBER(phys_base)']}")


def read_back(j, args, dump, vmcore):
    """Every page of the dump equal to the vmcore, read by vmdump verify and
    libkdumpfile (and drgn for vmdump's dumps); returns the dump's counts and
    libkdumpfile's attributes."""
    c = counts(dump)
    held = c["pages_in_file"]
    p = subprocess.run([args.vmdump, "verify", dump, "--against", vmcore], capture_output=True, text=True)
    m = re.search(r"verified (\d+) pages: .*; (\d+) equal to the source; 0 problems", p.stdout)
    j.check(p.returncode == 0 and m is not None and int(m[1]) == int(m[2]) == held,
            f"vmdump verify {dump.name} --against vmcore: {held} pages equal", (p.stdout + p.stderr).strip())
    rc, r, text = run_json(["/usr/bin/python3", HERE / "compare_dump.py", dump, vmcore, "--excluded-ok"])
    j.check(rc == 0 and r.get("different") == 0 and r.get("equal") == held,
            f"libkdumpfile reads every page of {dump.name} equal to the vmcore", text)
    if dump.name.startswith("vmdump."):
        rc, d, text = run_json([args.drgn_python, HERE / "drgn_compare.py", dump, vmcore])
        j.check(rc == 0 and d.get("different") == 0 and d.get("equal") == held
                and d.get("missing") == d.get("compared", 0) - held,
                f"drgn reads every page of {dump.name} equal to the vmcore, refuses the others", text)
        rc, u, text = run_json([args.drgn_python, HERE / "drgn_uts.py", dump, vmcore])
        header = {k.removeprefix("linux.uts."): v for k, v in r.get("attrs", {}).items() if "uts" in k}
        j.check(rc == 0 and u == {"equal_to_vmcore": True, **header},
                f"drgn reads init_uts_ns of {dump.name} (kallsyms, page tables) equal to the vmcore "
                "and to the header's utsname", f"{text}; header {header}")
    return c, r.get("attrs")


def judge_pair(j, out, line, options, read):
    """vmdump's dump of a command line against makedumpfile's."""
    (cm, am), (ct, at) = read[f"vmdump.{line}"], read[f"makedumpfile.{line}"]
    j.check(cm["pages_in_file"] == ct["pages_in_file"] and cm["ram_pages"] == ct["ram_pages"],
            f"{line} ({options}): pages in the file equal makedumpfile's ({ct['pages_in_file']})",
            f"vmdump {cm}, makedumpfile {ct}")
    j.check(am is not None and am.get("arch.name") == "x86_64" and am == at,
            f"{line}: libkdumpfile's arch.name and linux.uts.* equal makedumpfile's",
            f"vmdump {am}, makedumpfile {at}")
    same = (out / f"vmdump.{line}").read_bytes() == (out / f"makedumpfile.{line}").read_bytes()
    info(f"{line}: vmdump's file is {'' if same else 'not '}byte-identical to makedumpfile's")


def judge_dmesg(j, out):
    mine, theirs = out / "vmdump.dmesg", out / "makedumpfile.dmesg"
    j.check(mine.read_bytes() == theirs.read_bytes(),
            "--dump-dmesg: vmdump's log equals makedumpfile's byte for byte", f"cmp {mine} {theirs}")


def summary(out, read):
    print(f"\n{'run':<26} {'wall s':>7} {'user s':>7} {'sys s':>6} {'peak RSS':>10} "
          f"{'output bytes':>13} {'pages':>7} {'zero':>6}")
    for name in (n for n in RUNS + ["vmcore"] if "check-params" not in n):
        s = read_stat(out / f"{name}.stat")
        f = out / (f"{name}.flat" if name.endswith("kdump-tools") else name)
        c = (read.get(name) or ({}, None))[0]
        print(f"{name:<26} {s.get('wall_s', 0):7.2f} {s.get('user_s', 0):7.2f} {s.get('sys_s', 0):6.2f} "
              f"{s.get('maxrss_kib', 0) / 1024:6.1f} MiB {f.stat().st_size if f.exists() else 0:13,} "
              f"{c.get('pages_in_file', ''):>7} {c.get('zero_pages', ''):>6}")
    for line in ("kdump-tools", "kdump-utils", "dmesg"):
        m, t = (read_stat(out / f"{tool}.{line}.stat") for tool in ("vmdump", "makedumpfile"))
        if m.get("wall_s") and t.get("wall_s") and t.get("maxrss_kib"):
            print(f"{line}: vmdump/makedumpfile wall {m['wall_s'] / t['wall_s']:.2f}x, "
                  f"peak RSS {m['maxrss_kib'] / t['maxrss_kib']:.2f}x")
    print("(timings in a TCG guest, every instruction emulated; kdump-tools' size is the flattened stream's)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vmdump", required=True)
    ap.add_argument("--drgn-python", required=True)
    ap.add_argument("out", type=Path)
    args = ap.parse_args()
    out, j = args.out, Judge()
    judge_runs(j, out)
    j.guard("modes", judge_modes, j, out)
    j.guard("install tree", judge_install, j, out)
    j.guard("VMCOREINFO", describe_kernel, out)
    read = {name: j.guard(f"{name}: read back", read_back, j, args, out / name, out / "vmcore")
            for name in DUMPS}
    for line, options in PAIRS:
        if read[f"vmdump.{line}"] and read[f"makedumpfile.{line}"]:
            j.guard(f"{line}: vmdump against makedumpfile", judge_pair, j, out, line, options, read)
    j.guard("--dump-dmesg", judge_dmesg, j, out)
    summary(out, read)
    if j.failed:
        print(f"\n{len(j.failed)} checks FAILED:\n  " + "\n  ".join(j.failed))
    return 1 if j.failed else 0


if __name__ == "__main__":
    sys.exit(main())
