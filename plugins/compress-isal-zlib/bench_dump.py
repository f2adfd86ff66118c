#!/usr/bin/env python3
"""Whole dumps with zlib pages, one thread on one CPU: this plugin against
vmdump's built-in zlib (zlib-rs) and the system makedumpfile's -c (the
system zlib). A benchmark, never a test: it prints, it does not judge.

usage: bench_dump.py [--runs N] [--cpu CPU] [--level D] TARGET_DIR VMCORE...

TARGET_DIR is a cargo profile directory (target/release): its vmdump is
copied alone into a temporary directory, so that no plugin file beside it
replaces the built-in zlib, and its isal/ directory is the plugin's. Runs go
in turns (each round starts with the next case), the vmcore is read once
first so that it is in the page cache, and the median of each case is
printed with its size.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time


def run(cmd, out, env):
    if os.path.exists(out):
        os.remove(out)
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.decode(errors='replace')}")
    return seconds, os.path.getsize(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--cpu", default="1")
    p.add_argument("--level", default="1", help="dump level (-d)")
    p.add_argument("target")
    p.add_argument("vmcores", nargs="+")
    args = p.parse_args()
    isal = os.path.abspath(os.path.join(args.target, "isal"))
    env = {k: v for k, v in os.environ.items() if k != "VMDUMP_PLUGIN_PATH"}
    env["VMDUMP_PROFILE"] = "builtin"
    pin = ["taskset", "-c", args.cpu]
    with tempfile.TemporaryDirectory() as tmp:
        vmdump = os.path.join(tmp, "vmdump")
        shutil.copy(os.path.join(args.target, "vmdump"), vmdump)

        def vm(*opts):
            return lambda vmcore, out: [*pin, vmdump, "dump", "--no-progress", "--threads", "1",
                                        "-d", args.level, *opts, vmcore, out]

        cases = [
            ("isal-zlib level 3 (default)", vm("--plugin-dir", isal, "--compress", "zlib")),
            ("isal-zlib level 0", vm("--plugin-dir", isal, "--compress", "zlib:0")),
            ("built-in zlib-rs level 1", vm("--compress", "zlib:1")),
            ("built-in zlib-rs level 2 (-c)", vm("--compress", "zlib:2")),
            ("makedumpfile -c (system zlib 1)",
             lambda vmcore, out: [*pin, "makedumpfile", "-c", "-d", args.level, vmcore, out]),
        ]
        for vmcore in args.vmcores:
            with open(vmcore, "rb") as f:
                while f.read(1 << 24):
                    pass
            times = {label: [] for label, _ in cases}
            sizes = {}
            for i in range(args.runs):
                for k in range(len(cases)):
                    label, build = cases[(i + k) % len(cases)]
                    out = os.path.join(tmp, "out")
                    seconds, size = run(build(vmcore, out), out, env)
                    times[label].append(seconds)
                    sizes[label] = size
            ref = "makedumpfile -c (system zlib 1)"
            print(f"{os.path.basename(vmcore)}, -d {args.level}, 1 thread on CPU {args.cpu}, "
                  f"median of {args.runs} runs in turns")
            for label, _ in cases:
                t = statistics.median(times[label])
                print(f"  {label:<34} {t:7.3f} s {sizes[label]:>12,} B   "
                      f"speed {statistics.median(times[ref]) / t:5.2f}x  size {sizes[label] / sizes[ref]:6.4f}x")


if __name__ == "__main__":
    main()
