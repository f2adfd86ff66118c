#!/usr/bin/env bash
# Benchmark (not a test): vmdump against makedumpfile on the real vmcores of
# ../shared/fixtures, a synthetic vmcore of kernel-like pages and any vmcore
# given: same dump level and format, alternating runs, medians; prints time,
# size and RSS ratios, and how close each codec's dump comes to the codec
# alone on the same pages (codec-limit).
# Usage: scripts/bench-dump.sh [--runs N] [--formats | --refilter | --encryption] [--pin CPU]
#                              [--synthetic SIZE | --no-synthetic] [VMCORE...]
# --pin CPU: every run under taskset -c CPU (per-core figures: --pin 0).
# --synthetic SIZE: the synthetic vmcore's RAM (default 4G; made once in
# target/bench, sparse: about 40 % of it on disk).
# --formats: ELF output, split, reassembly and refiltering instead of dumps.
# --refilter: refiltering -d 0 and -d 1 dumps to -d 31 only.
# --encryption: dumps encrypted to an age key against the same unencrypted.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
ensure_build_deps
apt_ensure makedumpfile:makedumpfile zstd:zstd taskset:util-linux /usr/bin/time:time age-keygen:age
prepare_fixtures
cargo build --workspace --release --locked
opts=() vmcores=() synthetic=4G
while (($#)); do
    case $1 in
        --runs|--pin) opts+=("$1" "$2"); shift 2 ;;
        --formats|--refilter|--encryption) opts+=("$1"); shift ;;
        --synthetic) synthetic=$2; shift 2 ;;
        --no-synthetic) synthetic=; shift ;;
        *) vmcores+=("$1"); shift ;;
    esac
done
if ((${#vmcores[@]} == 0)); then
    [[ -n ${VMDUMP_FIXTURE_DIR:-} ]] || { echo "no vmcore given and no fixtures" >&2; exit 1; }
    vmcores=("$VMDUMP_FIXTURE_DIR/vmcore-S" "$VMDUMP_FIXTURE_DIR/vmcore-SK")
fi
if [[ -n $synthetic ]]; then
    mkdir -p target/bench
    synth=target/bench/synthetic-$synthetic
    [[ -f $synth ]] || target/release/vmdump synth --size "$synthetic" --seed 13 "$synth"
    vmcores+=("$synth")
fi
exec python3 bench/dump_vs_makedumpfile.py "${opts[@]}" --limit target/release/codec-limit \
    target/release/vmdump "${vmcores[@]}"
