#!/usr/bin/env bash
# vmdump on real arm64 vmcores, judged against Debian's arm64 makedumpfile.
#
#   1. scripts/make-arm64-fixture.sh makes each vmcore anew (Debian's arm64
#      kernel under qemu-system-aarch64, TCG; memory dumped by QEMU with the
#      vmcoreinfo device) and runs Debian's arm64 makedumpfile on it through
#      qemu-aarch64-static: -l -d 1, -l -d 31, --dump-dmesg
#   2. vmdump dumps the ELF as QEMU wrote it (program headers at 192) at
#      -d 1 and -d 31, refilters its -d 1 dump to -d 31 and writes the log
#   3. tests/py/arch_judge.py: libkdumpfile reads every page equal to the
#      ELF, the files hold the same pfns as makedumpfile's, the reports'
#      counts are equal, the attributes name aarch64, the logs are equal;
#      drgn (scripts/lib/tools.sh ensure_drgn) reads every page of the -d 1
#      and -d 31 dumps equal to the ELF (tests/py/drgn_compare.py), and
#      every symbol vmdump reads from the ELF's kallsyms equals drgn's
#
# The vmcores differ from run to run (KASLR, timing), so each is judged by
# makedumpfile's run on the same file, never by recorded numbers.
#
# Usage: scripts/arm64-test.sh [--keep] [--variant max|a57]...
#   --variant  max: -cpu max (PAC, SVE, 48-bit PA); a57: -cpu cortex-a57
#              (44-bit PA: the kernel randomises its linear map too, a
#              negative PHYS_OFFSET). Default: both.
#   --keep     keep vmdump's outputs and say where
# As root. Exit status 0 when every check passed. The downloads stay in
# target/arm64 between runs (make-arm64-fixture.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
export PYTHONDONTWRITEBYTECODE=1

keep=0 variants=()
while (($#)); do
    case $1 in
        --keep) keep=1; shift ;;
        --variant) variants+=("$2"); shift 2 ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) echo "arm64-test.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
((${#variants[@]})) || variants=(max a57)
[[ $(id -u) -eq 0 ]] || { echo "arm64-test.sh: run as root (make-arm64-fixture.sh needs it)" >&2; exit 1; }
ensure_build_deps
[[ -x target/release/vmdump ]] || cargo build --release --locked -p vmdump
ensure_drgn
drgn_python=${VMDUMP_DRGN_VENV:-$PWD/target/venv-drgn}/bin/python
vmdump=$PWD/target/release/vmdump
out=$(mktemp -d /tmp/vmdump-arm64-test.XXXXXX)
((keep)) || trap 'rm -rf "$out"' EXIT

# test_variant NAME CPU: makes the vmcore NAME with QEMU's CPU model, then
# dumps and judges it.
test_variant() {
    local name=$1 cpu=$2 elf ref dir level verdict
    echo "== $name (-cpu $cpu)"
    scripts/make-arm64-fixture.sh --name "$name" --cpu "$cpu" --zstd-level 1 > "$out/$name.fixture.log" 2>&1 ||
        { tail -n 40 "$out/$name.fixture.log" >&2; echo "arm64-test: making $name failed" >&2; return 1; }
    grep -E '^(kernel:|KERNELOFFSET|kimage|page size)' "target/arm64/$name.info"
    elf=target/arm64/$name ref=target/arm64/$name.reference dir=$out/$name
    mkdir -p "$dir"
    for level in 1 31; do
        "$vmdump" dump --no-progress --compress lzo -d "$level" "$elf" "$dir/d$level.kdump" 2> "$dir/d$level.stderr.txt" ||
            { cat "$dir/d$level.stderr.txt" >&2; return 1; }
    done
    "$vmdump" convert --no-progress --compress lzo -d 31 "$dir/d1.kdump" "$dir/refiltered.kdump" 2> "$dir/refilter.stderr.txt" ||
        { cat "$dir/refilter.stderr.txt" >&2; return 1; }
    "$vmdump" dmesg "$elf" "$dir/dmesg.txt"
    /usr/bin/python3 tests/py/arch_judge.py "$elf" "$ref" "$dir" aarch64 aarch64 || return 1
    for level in 1 31; do
        verdict=$("$drgn_python" tests/py/drgn_compare.py "$dir/d$level.kdump" "$elf") ||
            { echo "FAIL: drgn on -d $level: $verdict" >&2; return 1; }
        echo "PASS: drgn on -d $level: $verdict"
    done
    # The kernel's map on arm64, whose kallsyms offsets are base-relative:
    # every vmlinux symbol (address, name) equals drgn's.
    "$vmdump" symbols "$elf" | grep -v $'\t\[' | cut -d' ' -f1,3 > "$dir/symbols.vmdump"
    "$drgn_python" tests/py/drgn_kallsyms.py "$elf" | cut -d' ' -f1,4 > "$dir/symbols.drgn"
    if [[ -s $dir/symbols.drgn ]] && cmp -s "$dir/symbols.vmdump" "$dir/symbols.drgn"; then
        echo "PASS: vmdump symbols: $(wc -l < "$dir/symbols.drgn") symbols, each equal to drgn's load_vmlinux_kallsyms"
    else
        echo "FAIL: vmdump symbols differ from drgn's: $(diff "$dir/symbols.vmdump" "$dir/symbols.drgn" | head -n 4)" >&2
        return 1
    fi
}

status=0
for variant in "${variants[@]}"; do
    case $variant in
        max) test_variant vmcore-arm64-test max,pauth-impdef=on || status=1 ;;
        a57) test_variant vmcore-arm64-test-a57 cortex-a57 || status=1 ;;
        *) echo "arm64-test.sh: unknown variant $variant (max or a57)" >&2; exit 2 ;;
    esac
done
((keep)) && echo "vmdump's outputs: $out"
((status == 0)) && echo "arm64 test: every check passed" || echo "arm64 test: FAILED" >&2
exit "$status"
