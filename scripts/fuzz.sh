#!/usr/bin/env bash
# Fuzzing campaign for the parsers of vmdump-format (cargo-fuzz, libFuzzer).
# A benchmark-style script: slow, never run by CI (.ci/run does not call it).
#
# Usage:
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   default: 600 s, every target
#   scripts/fuzz.sh --export [TARGET...]                copy the minimised corpus into
#                                                       host/fuzzing/tests/fuzz-corpus/
#
# Targets (fuzz/fuzz_targets/, harness in the crate vmdump-fuzzing, host/fuzzing/):
#   elf kdump flat vmcoreinfo btf
#
# Steps: install cargo-fuzz if missing; build the release binary and make
# seeds (fuzz/seeds/<target>: small synthetic ELF vmcores, kdump files and
# flattened streams written by vmdump, VMCOREINFO texts, BTF from gcc -gbtf); build the targets
# with AddressSanitizer, debug assertions and overflow checks (`cargo fuzz
# build -a`); run each target for SECONDS_PER_TARGET on one core (a single
# libFuzzer process: -jobs=1 would only add a supervising parent that
# sends the output to fuzz-0.log); minimise the corpus as `cargo fuzz cmin`
# does (libFuzzer -merge=1 into an empty folder); write
# fuzz/report.md (per target: seconds, executions, cov, ft, corpus before
# and after minimisation, crashes). Crashes are kept in fuzz/artifacts/<target>/.
#
# The toolchain is stable: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its
# nightly flags (-Zsanitizer, sancov). FUZZ_SANITIZER=none builds without
# ASan if a machine cannot run it. Outputs (corpus, artifacts, seeds, logs,
# report) are ignored by git (fuzz/.gitignore).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
FUZZ=$ROOT/fuzz
ALL_TARGETS=(elf kdump flat vmcoreinfo btf)
SANITIZER=${FUZZ_SANITIZER:-address}
MAX_LEN=$((1 << 20))
# Export limits of the regression corpus, per target.
EXPORT_MAX_FILES=200
EXPORT_MAX_BYTES=$((2 << 20))

export RUSTC_BOOTSTRAP=1
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
MAIN_TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

LIBFUZZER_LIMITS=(-max_len=$MAX_LEN -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512)
FUZZ_FLAGS=(-a -s "$SANITIZER")

check_targets() {
    local t ok
    for t in "$@"; do
        ok=0
        for a in "${ALL_TARGETS[@]}"; do [[ $t == "$a" ]] && ok=1; done
        if ((!ok)); then
            echo "unknown target '$t' (targets: ${ALL_TARGETS[*]})" >&2
            exit 2
        fi
    done
}

count_files() { find "$1" -maxdepth 1 -type f 2>/dev/null | wc -l; }

build_targets() {
    echo "== building fuzz targets (sanitizer: $SANITIZER)"
    (cd "$FUZZ" && cargo fuzz build "${FUZZ_FLAGS[@]}")
    BUILT=${CARGO_TARGET_DIR:-$FUZZ/target}/$(rustc -vV | sed -n 's/^host: //p')/release
}

work=$(mktemp -d "${TMPDIR:-/tmp}/vmdump-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --export: the minimised corpus becomes the regression corpus of
# host/fuzzing/tests/fuzz_corpus.rs. Files named regress-* (inputs that
# crashed once) are kept; the rest is replaced by a greedy set cover of the
# corpus's coverage (from a libFuzzer -merge control file): edges first,
# then features, the file with the most new ones per byte first, within
# EXPORT_MAX_FILES and EXPORT_MAX_BYTES.
export_corpus() {
    local t src dst bin ctl
    build_targets
    for t in "$@"; do
        src=$FUZZ/corpus/$t
        dst=$ROOT/host/fuzzing/tests/fuzz-corpus/$t
        bin=$BUILT/$t
        if [[ ! -d $src ]] || (($(count_files "$src") == 0)); then
            echo "no corpus for $t in $src: run scripts/fuzz.sh first" >&2
            exit 1
        fi
        ctl=$work/merge-$t.txt
        mkdir -p "$work/scratch-$t"
        "$bin" -merge=1 -merge_control_file="$ctl" "${LIBFUZZER_LIMITS[@]}" "$work/scratch-$t" "$src" \
            >"$work/merge-$t.log" 2>&1 || { tail "$work/merge-$t.log"; exit 1; }
        mkdir -p "$dst"
        find "$dst" -maxdepth 1 -type f ! -name 'regress-*' -delete
        python3 - "$ctl" "$dst" "$EXPORT_MAX_FILES" "$EXPORT_MAX_BYTES" <<'PY'
import os, shutil, sys
ctl, dst, max_files, max_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lines = open(ctl).read().split("\n")
n = int(lines[0])
paths = lines[2:2 + n]
sets = {"COV": {}, "FT": {}}
for line in lines[2 + n:]:
    parts = line.split()
    if parts and parts[0] in sets:
        sets[parts[0]][int(parts[1])] = set(parts[2:])
sizes = {i: os.path.getsize(paths[i]) for i in range(n) if os.path.exists(paths[i])}
# A file costs its size, but at least its share of the byte budget: the
# count limit ranks small files by gain alone, the byte limit big ones by
# gain per byte.
floor = max_bytes / max_files
chosen, used = [], 0
summary = []
for kind in ("COV", "FT"):  # edges first, then features
    sets_k = {i: f for i, f in sets[kind].items() if i in sizes}
    covered = set().union(*(sets_k[i] for i in chosen if i in sets_k))
    total = len(set().union(*sets_k.values())) if sets_k else 0
    while len(chosen) < max_files:
        best = None
        for i, f in sets_k.items():
            if i in chosen or used + sizes[i] > max_bytes:
                continue
            gain = len(f - covered)
            if gain:
                key = (gain / max(sizes[i], floor), -sizes[i])
                if best is None or key > best[0]:
                    best = (key, i)
        if best is None:
            break
        i = best[1]
        chosen.append(i)
        covered |= sets_k[i]
        used += sizes[i]
    summary.append(f"{len(covered)}/{total} {'edges' if kind == 'COV' else 'features'}")
for i in chosen:
    shutil.copy(paths[i], dst)
print(f"{len(chosen)} of {n} files ({used} bytes), {', '.join(summary)}", end="")
PY
        echo " -> ${dst#"$ROOT"/} ($t)"
    done
}

if [[ ${1:-} == --export ]]; then
    shift
    targets=("$@")
    ((${#targets[@]})) || targets=("${ALL_TARGETS[@]}")
    check_targets "${targets[@]}"
    export_corpus "${targets[@]}"
    exit 0
fi

SECONDS_PER_TARGET=${1:-600}
[[ $SECONDS_PER_TARGET =~ ^[0-9]+$ ]] || {
    echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...] | --export [TARGET...]" >&2
    exit 2
}
(($# > 0)) && shift
targets=("$@")
((${#targets[@]})) || targets=("${ALL_TARGETS[@]}")
check_targets "${targets[@]}"

# 1. cargo-fuzz
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# 2. seeds
echo "== seeds"
source scripts/lib/tools.sh
ensure_build_deps
cargo build --release --locked -q
cargo run --release --locked -q -p vmdump-fuzzing --example fuzz_seeds -- "$FUZZ/seeds"
VMDUMP=$MAIN_TARGET/release/vmdump
"$VMDUMP" synth --size 8M --data-percent 1 "$work/vmcore" >/dev/null
mkdir -p "$FUZZ/seeds/kdump" "$FUZZ/seeds/flat"
dump() { "$VMDUMP" dump --no-progress --threads 1 -f "$@" 2>/dev/null >/dev/null; }
dump -d 1 --compress none "$work/vmcore" "$FUZZ/seeds/kdump/d1-none"
dump -d 0 --compress zlib "$work/vmcore" "$FUZZ/seeds/kdump/d0-zlib"
dump -d 17 --compress zstd "$work/vmcore" "$FUZZ/seeds/kdump/d17-zstd"
dump -d 31 --allow-lower-level --compress snappy "$work/vmcore" "$FUZZ/seeds/kdump/d31-snappy"
# Cut short by -L: flagged incomplete (exit status 1); a limit below the
# metadata leaves no file, so try a few.
for limit in 80K 96K 128K; do
    dump -d 1 --compress lzo -L $limit "$work/vmcore" "$FUZZ/seeds/kdump/d1-lzo-incomplete" || true
    [[ -f $FUZZ/seeds/kdump/d1-lzo-incomplete ]] && break
done
dump -d 1 -F --compress zstd "$work/vmcore" "$FUZZ/seeds/flat/d1-zstd"
"$VMDUMP" dump --no-progress --threads 1 -d 17 --compress lzo "$work/vmcore" - \
    2>/dev/null >"$FUZZ/seeds/flat/d17-lzo-stdout"
# Tiny ones (64 pages, no kernel structures): most mutations land in headers.
"$VMDUMP" synth --size 256K --no-kernel --no-holes --data-percent 10 "$work/tiny" >/dev/null
dump -d 1 --compress zlib "$work/tiny" "$FUZZ/seeds/kdump/tiny-d1-zlib"
dump -d 0 --compress none -L 16K "$work/tiny" "$FUZZ/seeds/kdump/tiny-d0-none-incomplete" || true
dump -d 1 -F --compress snappy "$work/tiny" "$FUZZ/seeds/flat/tiny-d1-snappy"
# BTF as gcc writes it (-gbtf) for the types of the parser's own test.
mkdir -p "$FUZZ/seeds/btf"
gcc -c -gbtf -O0 host/format/tests/btf/types.c -o "$work/types.o"
objcopy --dump-section=.BTF="$FUZZ/seeds/btf/gcc-types" "$work/types.o" "$work/types-copy.o"
for t in "${ALL_TARGETS[@]}"; do
    echo "   $t: $(count_files "$FUZZ/seeds/$t") seeds, $(du -sh "$FUZZ/seeds/$t" | cut -f1)"
done

# 3. build the targets once; the campaign runs copies of these binaries, so
# that every target and every minimisation uses one build even if the tree
# changes meanwhile (`cargo fuzz run` and `cargo fuzz cmin` rebuild first).
build_targets
mkdir -p "$work/bin"
for t in "${targets[@]}"; do cp "$BUILT/$t" "$work/bin/"; done

# 4. run, minimise, record
mkdir -p "$FUZZ/logs"
for t in "${targets[@]}"; do
    corpus=$FUZZ/corpus/$t
    artifacts=$FUZZ/artifacts/$t
    log=$FUZZ/logs/$t.log
    mkdir -p "$corpus" "$artifacts"
    cp -n "$FUZZ/seeds/$t/"* "$corpus/" 2>/dev/null || true
    crashes_before=$(count_files "$artifacts")
    echo "== $t: fuzzing ${SECONDS_PER_TARGET}s on $(count_files "$corpus") inputs (log: ${log#"$ROOT"/})"
    start=$(date +%s)
    status=0
    (cd "$FUZZ" && "$work/bin/$t" -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "${LIBFUZZER_LIMITS[@]}" "$corpus") >"$log" 2>&1 || status=$?
    elapsed=$(($(date +%s) - start))
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    last=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
    cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || true)
    ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || true)
    before=$(count_files "$corpus")
    echo "   exit $status after ${elapsed}s, ${execs:-?} executions, cov ${cov:-?}, ft ${ft:-?}; minimising"
    # What `cargo fuzz cmin` does: merge the corpus into an empty folder.
    merged=$work/cmin-$t
    mkdir -p "$merged"
    if (cd "$FUZZ" && "$work/bin/$t" -merge=1 "${LIBFUZZER_LIMITS[@]}" "$merged" "$corpus") \
        >"$FUZZ/logs/$t-cmin.log" 2>&1 && (($(count_files "$merged") > 0)); then
        rm -rf "$corpus"
        mv "$merged" "$corpus"
    else
        echo "   cmin failed: see fuzz/logs/$t-cmin.log"
    fi
    after=$(count_files "$corpus")
    crashes=$(($(count_files "$artifacts") - crashes_before))
    if ((status != 0 || crashes > 0)); then
        echo "   CRASH: $crashes new artifact(s) in ${artifacts#"$ROOT"/}; from the log:"
        grep -E -A1 'panicked at|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)' "$log" | head -n 6 | sed 's/^/   | /'
        grep -E 'Test unit written to' "$log" | sed 's/^/   | /'
    fi
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$elapsed" "${execs:-?}" \
        "$(( ${execs:-0} / (elapsed > 0 ? elapsed : 1) ))" "${cov:-?}" "${ft:-?}" "$before" "$after" \
        "$crashes" >"$FUZZ/logs/$t.row"
    echo "   corpus $before -> $after files after cmin; $crashes crash(es)"
done

# 5. report (rows of earlier runs of the other targets are kept)
{
    echo "# vmdump-format fuzzing report"
    echo
    echo "Written by scripts/fuzz.sh on $(date -u '+%Y-%m-%d %H:%M UTC'); sanitizer $SANITIZER,"
    echo "debug assertions and overflow checks on, one core, ${LIBFUZZER_LIMITS[*]}."
    echo "Corpus: files before and after minimisation (libFuzzer -merge=1, as \`cargo fuzz cmin\`). Crashes: new files in fuzz/artifacts/<target>/."
    echo
    echo '| target | seconds | executions | exec/s | cov | ft | corpus before | corpus after | crashes |'
    echo '|---|---|---|---|---|---|---|---|---|'
    for t in "${ALL_TARGETS[@]}"; do
        if [[ -f $FUZZ/logs/$t.row ]]; then cat "$FUZZ/logs/$t.row"; fi
    done
} >"$FUZZ/report.md"
echo "== report: fuzz/report.md"
cat "$FUZZ/report.md"
