#!/usr/bin/env bash
# The kernel matrix: scripts/capture-test.sh on the kernel of each Debian
# suite (bookworm's 6.1, trixie's 6.12, sid's newest, experimental's when
# it has a newer series than sid), each crashed under QEMU with vmdump run
# in its capture kernel as kdump-tools and kdump-utils call it, judged on
# the host by one makedumpfile for every kernel; then a table: kernel,
# pages in the file (vmdump's two command lines and the judge's) at -d 1
# and -d 31, sizes (-l, vmdump's and the judge's), kernel log equal.
#
# The judge should be upstream makedumpfile built from its newest commit:
# Debian's own releases misjudge kernels newer than they know (sid's 1.7.8
# predates the 7.1 fix). Build it by hand from a snapshot of
# github.com/makedumpfile/makedumpfile (its README: make LINKTYPE=dynamic
# USELZO=on USEZSTD=on USESNAPPY=on); the project carries neither its
# source nor a recipe of its own for it. CI runs the oldest and the newest
# kernel through scripts/capture-test.sh instead (scripts/test.sh).
#
# Usage: scripts/kernel-matrix.sh --judge MAKEDUMPFILE [--suites "S..."] [--keep]
#   --judge   the makedumpfile binary that judges every kernel
#   --suites  default "bookworm trixie sid experimental"; experimental is
#             left out when its kernel series is not newer than sid's
#   --keep    keep each run's folder (capture-test.sh --keep)
# As root. Exit status 0 when every kernel passed. Each run's output is in
# target/capture/matrix/SUITE.log, its figures in SUITE.json.
set -euo pipefail
caller_dir=$PWD
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
source scripts/lib/debian.sh

judge='' suites="bookworm trixie sid experimental" keep=()
while (($#)); do
    case $1 in
        --judge) judge=$(cd "$caller_dir" && realpath -m "$2"); shift 2 ;;
        --suites) suites=$2; shift 2 ;;
        --keep) keep=(--keep); shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "kernel-matrix.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
die() { echo "kernel-matrix: FAILED: $*" >&2; exit 1; }
[[ -x $judge ]] || die "--judge MAKEDUMPFILE is required (upstream makedumpfile, see --help)"
[[ $(id -u) -eq 0 ]] || die "run as root (scripts/capture-test.sh needs it)"
"$judge" -v 2>&1 | head -n 1 | grep -q '^makedumpfile: version' || die "$judge -v does not say makedumpfile"

dir=$PWD/target/capture/matrix
mkdir -p "$dir"

status=0 ran=()
for suite in $suites; do
    if [[ $suite == experimental && $(newest_kernel_suite "$PWD/target/capture") != experimental ]]; then
        echo "== experimental: no kernel series newer than sid's, left out"
        continue
    fi
    echo "== $suite"
    start=$SECONDS
    rm -f "$dir/$suite.json"
    if scripts/capture-test.sh --suite "$suite" --judge "$judge" --summary "$dir/$suite.json" "${keep[@]}" \
        > "$dir/$suite.log" 2>&1; then
        echo "   passed in $((SECONDS - start)) s"
    else
        status=1
        echo "   FAILED in $((SECONDS - start)) s: $dir/$suite.log"
        grep -E '^FAIL|FAILED' "$dir/$suite.log" | head -n 20 | sed 's/^/   /'
    fi
    ran+=("$suite=$((SECONDS - start))")
done

/usr/bin/python3 - "$dir" "${ran[@]}" << 'EOF'
import json, sys
from pathlib import Path
folder = Path(sys.argv[1])
seconds = dict(arg.split("=") for arg in sys.argv[2:])
suites = list(seconds)
figures = {s: json.loads((folder / f"{s}.json").read_text()) for s in suites if (folder / f"{s}.json").exists()}
print("\njudge: " + ", ".join(sorted({r["judge"].get("version", "?") for r in figures.values()})))
print("| suite | kernel | -d 1 pages (vmdump -l, -c; judge) | -d 31 pages (vmdump -l, -c; judge) "
      "| -d 1 -l bytes (vmdump; judge) | -d 31 -l bytes (vmdump; judge) | dmesg equal | checks failed | time s |")
print("|---|---|---|---|---|---|---|---|---|")
for suite in suites:
    if suite not in figures:
        print(f"| {suite} | (no figures: see {suite}.log) | | | | | | | {seconds[suite]} |")
        continue
    r = figures[suite]
    v, j = r["vmdump"], r["judge"]
    pages = lambda d: f"{v[d]['pages'][1]:,}, {v[d]['pages'][0]:,}; {j[d]['pages']:,}"
    size = lambda d: f"{v[d]['bytes']:,}; {j[d]['bytes']:,}"
    print(f"| {suite} | {r['release']} | {pages('d1')} | {pages('d31')} | {size('d1')} | {size('d31')} "
          f"| {'yes' if r['dmesg_equal'] else 'NO'} | {len(r['failed'])} | {seconds[suite]} |")
EOF
exit "$status"
