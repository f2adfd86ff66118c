#!/usr/bin/env python3
"""vmdump and makedumpfile side by side on the same vmcores: same dump
level, same page format, runs alternated, medians compared as ratios.
A benchmark, never a test: it prints, it does not judge.

usage: dump_vs_makedumpfile.py [--runs N] [--formats | --refilter] [--pin CPU] [--limit CODEC_LIMIT]
                               VMDUMP VMCORE...

By default: vmdump called as makedumpfile with makedumpfile's own options
(so the same format) for -c and -l at -d 1 and -d 31; the default profile
against makedumpfile -l -d 1 (on every core, and with --pin on one too);
--num-threads 2 against 1 (zlib, -d 1; with
--pin, the two threads get CPUs 0 and 1). --limit adds, for every codec
(-p and -z too, which Debian's makedumpfile lacks), the time the codec alone
needs for the pages the dump keeps (bench/src/bin/codec-limit.rs) against
the dump's (its fastest run against the codec's fastest round).

--formats compares the other outputs instead: ELF (-E), split into 3 pieces
(sizes summed), reassembly, and refiltering a dump file (vmdump convert).
--refilter compares only refiltering: a -d 0 and a -d 1 dump of each vmcore
(made by makedumpfile) refiltered to -d 31 by `vmdump convert`, by vmdump
under makedumpfile's command line, and by makedumpfile.
--encryption compares vmdump's dumps encrypted to an age key (the
recipient in the profile, as in a capture kernel) with the same dumps
unencrypted: -c -d 31 and -l -d 1, as a plain file and as -F.
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


def run(cmd, out, pin=None):
    """Runs cmd once (under `pin` if given, else PIN); returns (seconds,
    max RSS MiB, output bytes: every file whose name starts with `out`, for
    split pieces)."""
    for old in glob.glob(glob.escape(out) + "*"):
        os.remove(old)
    # stderr to a file: a pipe nobody reads until the end would block a
    # program that writes much (makedumpfile -E does). The peak RSS comes
    # from GNU time, which forks the command itself: a child that Python
    # starts inherits Python's peak RSS through exec (vfork), so wait4's
    # figure would be this script's whenever the command's is lower.
    with tempfile.TemporaryFile() as log, tempfile.NamedTemporaryFile() as rss:
        timed = ["/usr/bin/time", "-f", "%M", "-o", rss.name] + (PIN if pin is None else pin) + cmd
        start = time.perf_counter()
        proc = subprocess.Popen(timed, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        status = proc.wait()
        seconds = time.perf_counter() - start
        log.seek(0)
        err = log.read().decode(errors="replace")
        peak_kib = int(open(rss.name).read().split()[-1])
    if status != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err}")
    return seconds, peak_kib / 1024, sum(map(os.path.getsize, glob.glob(glob.escape(out) + "*")))



def compare(name, a, b, runs, tmp):
    """a and b are (label, command builder[, pin]); returns a's medians
    (seconds, size, RSS) and its fastest run."""
    results = {a[0]: [], b[0]: []}
    for i in range(runs):
        order = (a, b) if i % 2 == 0 else (b, a)
        for label, build, *pin in order:
            out = os.path.join(tmp, label.replace(" ", "_"))
            results[label].append(run(build(out), out, *pin))
    med = {k: [statistics.median(x[j] for x in v) for j in range(3)] for k, v in results.items()}
    (ta, ra, sa), (tb, rb, sb) = med[a[0]], med[b[0]]
    print(f"{name:<34} {a[0]:>22} {ta:7.2f}s {sa:>12,} B {ra:6.1f} MiB | "
          f"{b[0]:>22} {tb:7.2f}s {sb:>12,} B {rb:6.1f} MiB | "
          f"speed {tb / ta:5.2f}x  size {sa / sb:5.3f}x  RSS {ra / rb:5.2f}x")
    return ta, sa, ra, min(x[0] for x in results[a[0]])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--formats", action="store_true")
    p.add_argument("--refilter", action="store_true")
    p.add_argument("--encryption", action="store_true")
    p.add_argument("--pin")
    p.add_argument("--limit", help="the codec-limit benchmark binary: adds the codec-alone rows")
    p.add_argument("vmdump")
    p.add_argument("vmcores", nargs="+")
    args = p.parse_args()
    if args.pin is not None:
        global PIN
        PIN = ["taskset", "-c", args.pin]
    print(f"medians of {args.runs} alternating runs; ratios: speed = other time / first time, "
          f"size and RSS = first / other" + (f"; every run pinned to CPU {args.pin}" if args.pin else ""))
    with tempfile.TemporaryDirectory(prefix="vmdump-bench-", dir=os.environ.get("BENCH_TMP")) as tmp:
        for vmcore in args.vmcores:
            if args.formats:
                formats(args, vmcore, tmp)
            elif args.refilter:
                refilter(args, vmcore, tmp)
            elif args.encryption:
                encryption(args, vmcore, tmp)
            else:
                dumps(args, vmcore, tmp)


# makedumpfile's page formats: the option and the codec it names.
CODECS = (("-c", "zlib"), ("-l", "lzo"), ("-p", "snappy"), ("-z", "zstd"))


def dumps(args, vmcore, tmp):
    """vmdump called as makedumpfile with makedumpfile's options, so the same
    format, for -c and -l at -d 1 and -d 31 (and -p, -z with --limit); the
    default profile against makedumpfile -l -d 1; two threads against one."""
    name, v = os.path.basename(vmcore), args.vmdump
    vm = lambda *opts: lambda out: [v, "makedumpfile", *opts, vmcore, out]
    mdf = lambda *opts: lambda out: ["makedumpfile", *opts, vmcore, out]
    for level in ("1", "31"):
        for flag, codec in CODECS:
            if flag in ("-p", "-z") and not args.limit:
                continue
            opts = (flag, "-d", level)
            if flag in ("-c", "-l"):
                row = compare(f"{name} {flag} -d {level}", (f"vmdump {flag}", vm(*opts)),
                              (f"makedumpfile {flag}", mdf(*opts)), args.runs, tmp)
                seconds = row[3]
            else:  # makedumpfile 1.7.2 on Debian has no snappy or zstd
                seconds = timed_alone(vm(*opts), args.runs, tmp)
            if args.limit:
                codec_limit(args, vmcore, level, codec, seconds, tmp)
    # The default profile uses every core: with --pin, vmdump gets all the
    # CPUs this process may use (makedumpfile stays pinned, it uses one),
    # then one core, as in a capture kernel booted with nr_cpus=1.
    profile = lambda o: [v, "dump", "--no-progress", vmcore, o]
    every_core = ["taskset", "-c", ",".join(map(str, sorted(os.sched_getaffinity(0))))] if PIN else []
    compare(f"{name} default profile, every core", ("vmdump dump", profile, every_core),
            ("makedumpfile -l -d 1", mdf("-l", "-d", "1")), args.runs, tmp)
    if PIN:
        compare(f"{name} default profile, one core", ("vmdump dump", profile),
                ("makedumpfile -l -d 1", mdf("-l", "-d", "1")), args.runs, tmp)
    # Two threads against one, zlib -d 1: the scaling of the pool.
    pin2, pin1 = (["taskset", "-c", "0,1"], PIN) if PIN else ([], [])
    compare(f"{name} -c -d 1 two cores", ("--num-threads 2", vm("-c", "-d", "1", "--num-threads", "2"), pin2),
            ("--num-threads 1", vm("-c", "-d", "1", "--num-threads", "1"), pin1), args.runs, tmp)


def timed_alone(build, runs, tmp):
    """The fastest of runs of one command, in seconds."""
    out = os.path.join(tmp, "alone")
    return min(run(build(out), out)[0] for _ in range(runs))


def codec_limit(args, vmcore, level, codec, dump_seconds, tmp):
    """The codec alone on the pages a -d LEVEL dump keeps (from a dump of raw
    pages), against the whole dump: the fastest of the dump's runs against
    the fastest of the codec's rounds, like with like."""
    raw = os.path.join(tmp, f"raw-d{level}-{os.path.basename(vmcore)}")
    if not os.path.exists(raw):
        subprocess.run([args.vmdump, "makedumpfile", "-d", level, vmcore, raw], check=True, capture_output=True)
    out = subprocess.run(PIN + [args.limit, "--only", codec, raw], check=True, capture_output=True, text=True)
    row = next(line for line in out.stdout.splitlines() if line.startswith(codec + " "))
    seconds = float(row.split()[1])
    print(f"{'  codec alone, ' + codec + ' -d ' + level:<34} {seconds:7.3f}s | fastest dump {dump_seconds:7.3f}s | "
          f"dump / codec {dump_seconds / seconds:5.2f}x")


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


def encryption(args, vmcore, tmp):
    """vmdump as makedumpfile, -c -d 31 and -l -d 1, with a recipient in
    the profile against the same profile without: into a file, and -F."""
    name, v = os.path.basename(vmcore), args.vmdump
    key = os.path.join(tmp, "age.key")
    if not os.path.exists(key):
        subprocess.run(["age-keygen", "-o", key], check=True, capture_output=True)
    public = next(l.split(": ")[1].strip() for l in open(key) if l.startswith("# public key: "))
    profiles = {}
    for label, text in (("plain", ""), ("encrypted", f'[output]\nrecipients = ["{public}"]\n')):
        # (not NAME.toml: run() clears every file whose name starts with
        # the output's, and the outputs are named by these labels)
        profiles[label] = os.path.join(tmp, f"profile-{label}.toml")
        with open(profiles[label], "w") as f:
            f.write(text)
    def vm(profile, *opts):
        env = ["env", f"VMDUMP_PROFILE={profiles[profile]}"]
        return lambda out: env + [v, "makedumpfile", *opts, vmcore, out]
    def vm_flat(profile, *opts):
        env = f"VMDUMP_PROFILE={profiles[profile]}"
        return lambda out: ["sh", "-c", f'env {env} "$0" makedumpfile -F {" ".join(opts)} "$1" > "$2"', v, vmcore, out]
    for opts in (("-c", "-d", "31"), ("-l", "-d", "1")):
        flags = " ".join(opts)
        compare(f"{name} {flags} into a file", ("encrypted", vm("encrypted", *opts)),
                ("plain file", vm("plain", *opts)), args.runs, tmp)
        compare(f"{name} {flags} -F", ("encrypted -F", vm_flat("encrypted", *opts)),
                ("plain -F", vm_flat("plain", *opts)), args.runs, tmp)


if __name__ == "__main__":
    main()
