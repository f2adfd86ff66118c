#!/usr/bin/env bash
# Benchmark (not a test): vmdump against makedumpfile on the real vmcores of
# ../shared/fixtures (and any vmcore given), same dump level and format,
# alternating runs; prints time, size and RSS ratios.
# Usage: scripts/bench-dump.sh [--runs N] [--zlib-level L] [--formats] [VMCORE...]
# --formats: ELF output, split, reassembly and refiltering instead of dumps.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
apt_ensure makedumpfile:makedumpfile zstd:zstd
prepare_fixtures
cargo build --release --locked
opts=() vmcores=()
while (($#)); do
    case $1 in
        --runs|--zlib-level) opts+=("$1" "$2"); shift 2 ;;
        --formats) opts+=("$1"); shift ;;
        *) vmcores+=("$1"); shift ;;
    esac
done
if ((${#vmcores[@]} == 0)); then
    [[ -n ${VMDUMP_FIXTURE_DIR:-} ]] || { echo "no vmcore given and no fixtures" >&2; exit 1; }
    vmcores=("$VMDUMP_FIXTURE_DIR/vmcore-S" "$VMDUMP_FIXTURE_DIR/vmcore-SK")
fi
exec python3 bench/dump_vs_makedumpfile.py "${opts[@]}" target/release/vmdump "${vmcores[@]}"
