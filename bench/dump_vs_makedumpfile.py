#!/usr/bin/env python3
"""vmdump and makedumpfile side by side on the same vmcores: same dump
level, same page format, runs alternated, medians compared as ratios.
A benchmark, never a test: it prints, it does not judge.

usage: dump_vs_makedumpfile.py [--runs N] [--zlib-level L] VMDUMP VMCORE...
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time


def run(cmd, out):
    """Runs cmd once; returns (seconds, max RSS MiB, output bytes)."""
    if os.path.exists(out):
        os.remove(out)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err}")
    return seconds, usage.ru_maxrss / 1024, os.path.getsize(out)


def compare(name, a, b, runs, tmp):
    """a and b are (label, command builder); returns the row of medians."""
    results = {a[0]: [], b[0]: []}
    for i in range(runs):
        order = (a, b) if i % 2 == 0 else (b, a)
        for label, build in order:
            out = os.path.join(tmp, label.replace(" ", "_"))
            results[label].append(run(build(out), out))
    med = {k: [statistics.median(x[j] for x in v) for j in range(3)] for k, v in results.items()}
    (ta, ra, sa), (tb, rb, sb) = med[a[0]], med[b[0]]
    print(f"{name:<34} {a[0]:>22} {ta:7.2f}s {sa:>12,} B {ra:6.1f} MiB | "
          f"{b[0]:>22} {tb:7.2f}s {sb:>12,} B {rb:6.1f} MiB | "
          f"speed {tb / ta:5.2f}x  size {sa / sb:5.3f}x  RSS {ra / rb:5.2f}x")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--zlib-level", type=int, default=2)
    p.add_argument("--zlib-profile", default="config/zlib.toml")
    p.add_argument("vmdump")
    p.add_argument("vmcores", nargs="+")
    args = p.parse_args()
    def vm(vmcore, *opts, level=1):
        return lambda out: [args.vmdump, "dump", "--no-progress", "-d", str(level), *opts, vmcore, out]

    def mdf(vmcore, *opts, level=1):
        return lambda out: ["makedumpfile", *opts, "-d", str(level), vmcore, out]
    print(f"medians of {args.runs} alternating runs; ratios: speed = other time / first time, "
          f"size and RSS = first / other")
    with tempfile.TemporaryDirectory(prefix="vmdump-bench-", dir=os.environ.get("BENCH_TMP")) as tmp:
        for vmcore in args.vmcores:
            name = os.path.basename(vmcore)
            z = f"zlib:{args.zlib_level}"
            zp = ("--profile", args.zlib_profile, "--compress", z)
            compare(f"{name} zlib, 1 thread",
                    (f"vmdump {z} -t1", vm(vmcore, *zp, "--threads", "1")),
                    ("makedumpfile -c", mdf(vmcore, "-c")), args.runs, tmp)
            compare(f"{name} lzo, 1 thread",
                    ("vmdump lzo -t1", vm(vmcore, "--compress", "lzo", "--threads", "1")),
                    ("makedumpfile -l", mdf(vmcore, "-l")), args.runs, tmp)
            # Whole runs as users run them: vmdump on every core (its
            # default), makedumpfile single-threaded (its default).
            compare(f"{name} -d 31 lzo, defaults",
                    ("vmdump lzo -d31", vm(vmcore, "--compress", "lzo", level=31)),
                    ("makedumpfile -l -d31", mdf(vmcore, "-l", level=31)), args.runs, tmp)
            compare(f"{name} -d 31 zlib, defaults",
                    (f"vmdump {z} -d31", vm(vmcore, *zp, level=31)),
                    ("makedumpfile -c -d31", mdf(vmcore, "-c", level=31)), args.runs, tmp)
            compare(f"{name} zlib, 2 threads vs 1",
                    (f"vmdump {z} -t2", vm(vmcore, *zp, "--threads", "2")),
                    (f"vmdump {z} -t1", vm(vmcore, *zp, "--threads", "1")), args.runs, tmp)


if __name__ == "__main__":
    main()
