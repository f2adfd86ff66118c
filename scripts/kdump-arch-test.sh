#!/usr/bin/env bash
# vmdump on real vmcores of other architectures made through kdump in the
# guest (scripts/make-kdump-fixture.sh: Debian's kernel under QEMU TCG,
# kexec -p, sysrq c, the capture kernel's /proc/vmcore), judged against
# that architecture's Debian makedumpfile run on the same vmcore:
#
#   1. make-kdump-fixture.sh makes the vmcore anew and runs makedumpfile
#      through qemu-user: -l -d 1, -l -d 31, --dump-dmesg
#   2. vmdump dumps it at -d 1 and -d 31, refilters its -d 1 dump to -d 31
#      and writes the log
#   3. tests/py/arch_judge.py: libkdumpfile reads every page equal to the
#      vmcore, the files hold the same pfns as makedumpfile's, the reports'
#      counts are equal, the attributes name the machine, the logs are
#      equal; drgn reads every page of both dumps equal to the vmcore
#
# Each vmcore is judged by makedumpfile's run on the same file, never by
# recorded numbers. Prints a table line per variant: architecture, kernel,
# page size, MMU, pages in the file (vmdump / makedumpfile) at -d 1 and
# -d 31, seconds.
#
# Usage: scripts/kdump-arch-test.sh [--keep] [--variant ppc64el-radix|ppc64el-hash]...
#   default: every variant. As root; downloads stay in target/kdump.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
export PYTHONDONTWRITEBYTECODE=1

keep=0 variants=()
while (($#)); do
    case $1 in
        --keep) keep=1; shift ;;
        --variant) variants+=("$2"); shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "kdump-arch-test.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
((${#variants[@]})) || variants=(ppc64el-radix ppc64el-hash)
[[ $(id -u) -eq 0 ]] || { echo "kdump-arch-test.sh: run as root (make-kdump-fixture.sh needs it)" >&2; exit 1; }
ensure_build_deps
[[ -x target/release/vmdump ]] || cargo build --release --locked -p vmdump
ensure_drgn
drgn_python=${VMDUMP_DRGN_VENV:-$PWD/target/venv-drgn}/bin/python
vmdump=$PWD/target/release/vmdump
out=$(mktemp -d /tmp/vmdump-kdump-arch-test.XXXXXX)
((keep)) || trap 'rm -rf "$out"' EXIT

# pages_in FILE: the pages a kdump file holds (its 2nd bitmap).
pages_in() {
    /usr/bin/python3 tests/py/kdump_bitmap.py "$1" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["pages_in_file"])'
}

# test_variant ARCH MMU ARCH_NAME UTS_MACHINE
table=()
test_variant() {
    local arch=$1 mmu=$2 arch_name=$3 uts=$4 start=$SECONDS name elf ref dir level verdict
    name=vmcore-$arch-$mmu-test
    echo "== $name"
    scripts/make-kdump-fixture.sh --arch "$arch" --mmu "$mmu" --name "$name" --zstd-level 1 > "$out/$name.fixture.log" 2>&1 ||
        { tail -n 40 "$out/$name.fixture.log" >&2; echo "kdump-arch-test: making $name failed" >&2; return 1; }
    grep -E '^(kernel:|page size|guest: mmu)' "target/kdump/$arch/$name.info"
    elf=target/kdump/$arch/$name ref=target/kdump/$arch/$name.reference dir=$out/$name
    mkdir -p "$dir"
    for level in 1 31; do
        "$vmdump" dump --no-progress --compress lzo -d "$level" "$elf" "$dir/d$level.kdump" 2> "$dir/d$level.stderr.txt" ||
            { cat "$dir/d$level.stderr.txt" >&2; return 1; }
    done
    "$vmdump" convert --no-progress --compress lzo -d 31 "$dir/d1.kdump" "$dir/refiltered.kdump" 2> "$dir/refilter.stderr.txt" ||
        { cat "$dir/refilter.stderr.txt" >&2; return 1; }
    "$vmdump" dmesg "$elf" "$dir/dmesg.txt"
    /usr/bin/python3 tests/py/arch_judge.py "$elf" "$ref" "$dir" "$arch_name" "$uts" || return 1
    for level in 1 31; do
        verdict=$("$drgn_python" tests/py/drgn_compare.py "$dir/d$level.kdump" "$elf") ||
            { echo "FAIL: drgn on -d $level: $verdict" >&2; return 1; }
        echo "PASS: drgn on -d $level: $verdict"
    done
    table+=("$(printf '| %s | %s | %s | %s | %s / %s | %s / %s | %d |' "$arch" \
        "$(sed -n 's/^kernel: [^ ]* \([^ ]*\) (\(.*\)), MMU .*/\2 (\1)/p' "target/kdump/$arch/$name.info")" \
        "$(sed -n 's/^page size: //p' "target/kdump/$arch/$name.info")" "$mmu" \
        "$(pages_in "$dir/d1.kdump")" "$(pages_in "$ref/d1.kdump")" \
        "$(pages_in "$dir/d31.kdump")" "$(pages_in "$ref/d31.kdump")" $((SECONDS - start)))")
}

status=0
for variant in "${variants[@]}"; do
    case $variant in
        ppc64el-radix) test_variant ppc64el radix ppc64 ppc64le || status=1 ;;
        ppc64el-hash) test_variant ppc64el hash ppc64 ppc64le || status=1 ;;
        *) echo "kdump-arch-test.sh: unknown variant $variant" >&2; exit 2 ;;
    esac
done
echo "| arch | kernel | page size | MMU | pages -d 1 (vmdump / makedumpfile) | pages -d 31 | seconds |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${table[@]}"
((keep)) && echo "vmdump's outputs: $out"
((status == 0)) && echo "kdump-arch test: every check passed" || echo "kdump-arch test: FAILED" >&2
exit "$status"
