#!/usr/bin/env python3
"""vmdump and makedumpfile side by side on the same vmcores: same dump
level, same page format, runs alternated, medians compared as ratios.
A benchmark, never a test: it prints, it does not judge.

usage: dump_vs_makedumpfile.py [--runs N] [--zlib-level L] [--formats | --refilter] [--pin CPU]
                               VMDUMP VMCORE...

--formats compares the other outputs instead: ELF (-E), split into 3 pieces
(sizes summed), reassembly, and refiltering a dump file (vmdump convert).
--refilter compares only refiltering: a -d 0 and a -d 1 dump of each vmcore
(made by makedumpfile) refiltered to -d 31 by `vmdump convert`, by vmdump
under makedumpfile's command line, and by makedumpfile.
--pin CPU runs every command under `taskset -c CPU` (per-core figures).
"""
import glob
import argparse
import os
import statistics
import subprocess
import tempfile
import time


# The command prefix of every timed run (--pin).
PIN = []


def run(cmd, out):
    """Runs cmd once; returns (seconds, max RSS MiB, output bytes: every
    file whose name starts with `out`, for split pieces)."""
    for old in glob.glob(glob.escape(out) + "*"):
        os.remove(old)
    # stderr to a file: a pipe nobody reads until the end would block a
    # program that writes much (makedumpfile -E does).
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        proc = subprocess.Popen(PIN + cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        log.seek(0)
        err = log.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err}")
    return seconds, usage.ru_maxrss / 1024, sum(map(os.path.getsize, glob.glob(glob.escape(out) + "*")))


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
    p.add_argument("--formats", action="store_true")
    p.add_argument("--refilter", action="store_true")
    p.add_argument("--pin")
    p.add_argument("vmdump")
    p.add_argument("vmcores", nargs="+")
    args = p.parse_args()
    if args.pin is not None:
        global PIN
        PIN = ["taskset", "-c", args.pin]
    def vm(vmcore, *opts, level=1):
        return lambda out: [args.vmdump, "dump", "--no-progress", "-d", str(level), *opts, vmcore, out]

    def mdf(vmcore, *opts, level=1):
        return lambda out: ["makedumpfile", *opts, "-d", str(level), vmcore, out]
    print(f"medians of {args.runs} alternating runs; ratios: speed = other time / first time, "
          f"size and RSS = first / other")
    with tempfile.TemporaryDirectory(prefix="vmdump-bench-", dir=os.environ.get("BENCH_TMP")) as tmp:
        if args.formats or args.refilter:
            for vmcore in args.vmcores:
                (formats if args.formats else refilter)(args, vmcore, tmp)
            return
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


def formats(args, vmcore, tmp):
    """ELF output, split, reassembly and refiltering, against makedumpfile."""
    name, v = os.path.basename(vmcore), args.vmdump
    compare(f"{name} -E -d 31",
            ("vmdump --elf -d31", lambda o: [v, "dump", "--no-progress", "--elf", "-d", "31", vmcore, o]),
            ("makedumpfile -E -d31", lambda o: ["makedumpfile", "-E", "-d", "31", vmcore, o]), args.runs, tmp)
    pieces = lambda o: [f"{o}.{i}" for i in (1, 2, 3)]
    compare(f"{name} --split 3 lzo -d 31",
            ("vmdump --split 3", lambda o: [v, "dump", "--no-progress", "--compress", "lzo", "-d", "31",
                                            "--split", "3", "--splitblock-size", "64M", vmcore, o]),
            ("makedumpfile --split", lambda o: ["makedumpfile", "--split", "--splitblock-size", "65536", "-l",
                                                "-d", "31", vmcore, *pieces(o)]), args.runs, tmp)
    made = os.path.join(tmp, f"pieces-{name}")
    subprocess.run(["makedumpfile", "--split", "--splitblock-size", "65536", "-l", "-d", "31", vmcore,
                    *pieces(made)], check=True, capture_output=True)
    compare(f"{name} reassemble 3 pieces",
            ("vmdump reassemble", lambda o: [v, "reassemble", *pieces(made), o]),
            ("makedumpfile --reassemble", lambda o: ["makedumpfile", "--reassemble", *pieces(made), o]),
            args.runs, tmp)
    whole = os.path.join(tmp, f"whole-{name}")
    subprocess.run(["makedumpfile", "-l", vmcore, whole], check=True, capture_output=True)
    compare(f"{name} refilter -l -d0 dump to -d 31",
            ("vmdump convert -d31 lzo", lambda o: [v, "convert", "--no-progress", "--compress", "lzo", "-d", "31",
                                                   whole, o]),
            ("makedumpfile -l -d31", lambda o: ["makedumpfile", "-l", "-d", "31", whole, o]), args.runs, tmp)



def refilter(args, vmcore, tmp):
    """A makedumpfile -l -d 0 and -d 1 dump refiltered to -d 31 lzo: vmdump
    convert, vmdump as makedumpfile, makedumpfile."""
    name, v = os.path.basename(vmcore), args.vmdump
    for level in (0, 1):
        dump = os.path.join(tmp, f"d{level}-{name}")
        subprocess.run(["makedumpfile", "-l", "-d", str(level), vmcore, dump], check=True, capture_output=True)
        mdf = ("makedumpfile -l -d31", lambda o: ["makedumpfile", "-l", "-d", "31", dump, o])
        compare(f"{name} -d{level} dump refiltered to -d31",
                ("vmdump convert -d31 lzo", lambda o: [v, "convert", "--no-progress", "--compress", "lzo",
                                                       "-d", "31", dump, o]), mdf, args.runs, tmp)
        compare(f"{name} -d{level} dump refiltered to -d31",
                ("vmdump makedumpfile -l", lambda o: [v, "makedumpfile", "-l", "-d", "31", dump, o]),
                mdf, args.runs, tmp)


if __name__ == "__main__":
    main()
