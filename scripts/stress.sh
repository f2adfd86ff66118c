#!/usr/bin/env bash
# Proof under stress (issue 12): many dumps of one synthetic vmcore with
# random threads, mmap windows, mmap or pread, codec and level, dump level,
# output mode (plain, -F to a file, - to stdout) and CPU contention; every
# output must be byte-identical to the single-thread dump of the same
# codec, codec level and dump level, and `vmdump verify --against` the
# vmcore must pass on it. Flattened outputs are rearranged with
# makedumpfile -R before the comparison.
#
# Usage: scripts/stress.sh [--seed N] [--size SIZE] [--keep] [RUNS]
#   RUNS    dumps to make (default 1000; scripts/test.sh runs 40)
#   --seed  seed of the random choices (default: from the clock, printed);
#           the same seed and RUNS replay the same runs
#   --size  RAM of the synthetic vmcore (default 128M: a dump well under a second)
#   --keep  keep target/stress/ afterwards
# Prints a summary (runs, failures, slowest run) and appends it to
# target/stress-report.txt. Exit status: 0 no failure, 1 failures.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=1000 seed=$(( $(date +%s%N) % 1000000 )) size=128M keep=0
while (($#)); do
    case $1 in
        --seed) seed=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        [0-9]*) runs=$1; shift ;;
        *) echo "stress.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

source scripts/lib/tools.sh
ensure_build_deps
apt_ensure makedumpfile:makedumpfile taskset:util-linux

target=${CARGO_TARGET_DIR:-$PWD/target}
vmdump=$target/release/vmdump
if [[ ! -x $vmdump ]]; then
    cargo build --release --locked -p vmdump
fi
work=$target/stress
rm -rf "$work"
mkdir -p "$work/ref"
vmcore=$work/vmcore
report=$target/stress-report.txt

# Busy loops started for contention; stopped by pid on every exit.
hogs=()
stop_hogs() {
    local pid
    for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${hogs[@]}"; do wait "$pid" 2>/dev/null || true; done
    hogs=()
}
cleanup() {
    stop_hogs
    ((keep)) || rm -rf "$work"
}
trap cleanup EXIT

"$vmdump" synth --size "$size" --data-percent 30 --seed "$seed" "$vmcore" >/dev/null
echo "stress: $runs runs, seed $seed, vmcore $size ($(du -h "$vmcore" | cut -f1) on disk)"

RANDOM=$seed
# pick VAR CHOICE...: sets VAR to one choice (in this shell, not a
# subshell, so that the seed decides the whole sequence).
pick() { local -n into=$1; shift; local a=("$@"); into=${a[RANDOM % ${#a[@]}]}; }

# The single-thread reference of one codec:level and dump level, made once.
reference() {
    local key=$1 compress=$2 level=$3 ref=$work/ref/$1
    if [[ ! -f $ref ]]; then
        "$vmdump" dump --no-progress --threads 1 --compress "$compress" $level \
            "$vmcore" "$ref" >/dev/null 2>"$ref.err" || {
            echo "reference $key failed:" >&2; cat "$ref.err" >&2; return 1; }
    fi
    echo "$ref"
}

failures=0 slowest_ms=0 slowest_cmd="" total_ms=0
declare -A by_mode=()
for ((i = 1; i <= runs; i++)); do
    pick codec zlib zstd lzo snappy
    case $codec in
        zlib) pick clevel 1 2 3 4 5 6; compress=zlib:$clevel ;;
        zstd) pick clevel -3 -1 1 2 3 5 6; compress=zstd:$clevel ;;
        *) compress=$codec ;;
    esac
    pick level "-d 0" "-d 1" "-d 16" "-d 17" "-d 31 --allow-lower-level"
    args=(--no-progress --threads $((RANDOM % 8 + 1)) --compress "$compress" $level)
    pick window 0 1 2 3 4 7 16 64
    if ((window == 0)); then args+=(--no-mmap); else args+=(--window-mib "$window"); fi
    pick mode plain flat-file stdout
    pick contention none none none taskset hogs
    key=${compress//:/_}${level// /}
    ref=$(reference "$key" "$compress" "$level") || { failures=$((failures + 1)); continue; }
    out=$work/out
    rm -f "$out" "$out.flat"
    prefix=()
    [[ $contention == taskset ]] && prefix=(taskset -c 0)
    if [[ $contention == hogs ]]; then
        for _ in 1 2; do yes >/dev/null & hogs+=($!); done
    fi
    case $mode in
        plain) cmd=("${prefix[@]}" "$vmdump" dump "${args[@]}" "$vmcore" "$out") ;;
        flat-file) cmd=("${prefix[@]}" "$vmdump" dump -F "${args[@]}" "$vmcore" "$out.flat") ;;
        stdout) cmd=("${prefix[@]}" "$vmdump" dump "${args[@]}" "$vmcore" -) ;;
    esac
    start=$(date +%s%N)
    status=0
    if [[ $mode == stdout ]]; then
        "${cmd[@]}" >"$out.flat" 2>"$work/err" || status=$?
    else
        "${cmd[@]}" >/dev/null 2>"$work/err" || status=$?
    fi
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    stop_hogs
    shown="${cmd[*]}"
    [[ $mode == stdout ]] && shown+=" > $out.flat"
    [[ $contention == hogs ]] && shown="(2 busy loops) $shown"
    total_ms=$((total_ms + ms))
    if ((ms > slowest_ms)); then slowest_ms=$ms slowest_cmd=$shown; fi
    by_mode[$mode]=$(( ${by_mode[$mode]:-0} + 1 ))
    problem=""
    if ((status != 0)); then
        problem="exit $status: $(tail -n 3 "$work/err")"
    elif [[ $mode != plain ]] && ! makedumpfile -R "$out" <"$out.flat" >/dev/null 2>"$work/err.R"; then
        problem="makedumpfile -R failed: $(tail -n 2 "$work/err.R")"
    elif ! cmp -s "$out" "$ref"; then
        problem="differs from the --threads 1 reference $ref: $(cmp "$out" "$ref" 2>&1 | head -n 1)"
    elif ! "$vmdump" verify --against "$vmcore" "$out" >"$work/verify" 2>&1; then
        problem="vmdump verify --against failed: $(tail -n 2 "$work/verify")"
    fi
    if [[ -n $problem ]]; then
        failures=$((failures + 1))
        echo "FAIL run $i: $shown" >&2
        echo "  $problem" >&2
        if ((keep)); then cp "$out" "$work/fail-$i" 2>/dev/null || true; fi
    fi
    if ((i % 100 == 0)); then echo "  $i runs, $failures failures"; fi
done

refs=$(find "$work/ref" -type f ! -name '*.err' | wc -l)
modes=$(for m in "${!by_mode[@]}"; do printf '%s %s, ' "$m" "${by_mode[$m]}"; done)
summary=$(cat <<EOF
$(date -u +%Y-%m-%dT%H:%M:%SZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?') scripts/stress.sh --seed $seed --size $size $runs
  runs $runs, failures $failures, references $refs, outputs ${modes%, }
  mean $((runs ? total_ms / runs : 0)) ms, slowest $slowest_ms ms: $slowest_cmd
EOF
)
echo "$summary"
echo "$summary" >>"$report"
echo "(appended to $report)"
((failures == 0))
