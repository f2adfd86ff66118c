#!/usr/bin/env bash
# Benchmark (not a test): vmdump against makedumpfile on the real vmcores of
# ../shared/fixtures (and any vmcore given), same dump level and format,
# alternating runs; prints time, size and RSS ratios.
# Usage: scripts/bench-dump.sh [--runs N] [--zlib-level L] [--formats | --refilter] [--pin CPU] [VMCORE...]
# --formats: ELF output, split, reassembly and refiltering instead of dumps.
# --refilter: refiltering -d 0 and -d 1 dumps to -d 31 only (convert and the
# makedumpfile command line). --pin CPU: every run under taskset -c CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
apt_ensure makedumpfile:makedumpfile zstd:zstd
ensure_build_deps
prepare_fixtures
cargo build --release --locked
opts=() vmcores=()
while (($#)); do
    case $1 in
        --runs|--zlib-level|--pin) opts+=("$1" "$2"); shift 2 ;;
        --formats|--refilter) opts+=("$1"); shift ;;
        *) vmcores+=("$1"); shift ;;
    esac
done
if ((${#vmcores[@]} == 0)); then
    [[ -n ${VMDUMP_FIXTURE_DIR:-} ]] || { echo "no vmcore given and no fixtures" >&2; exit 1; }
    vmcores=("$VMDUMP_FIXTURE_DIR/vmcore-S" "$VMDUMP_FIXTURE_DIR/vmcore-SK")
fi
exec python3 bench/dump_vs_makedumpfile.py "${opts[@]}" target/release/vmdump "${vmcores[@]}"
