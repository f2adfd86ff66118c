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
source scripts/lib/judge.sh
export PYTHONDONTWRITEBYTECODE=1

judge_options arm64-test.sh "$@"
((${#variants[@]})) || variants=(max a57)
judge_setup arm64-test.sh

# test_variant NAME CPU: makes the vmcore NAME with QEMU's CPU model, then
# dumps and judges it; the kernel's map on arm64, whose kallsyms offsets
# are base-relative, is judged too.
test_variant() {
    local name=$1 cpu=$2
    echo "== $name (-cpu $cpu)"
    scripts/make-arm64-fixture.sh --name "$name" --cpu "$cpu" --zstd-level 1 > "$out/$name.fixture.log" 2>&1 ||
        { tail -n 40 "$out/$name.fixture.log" >&2; echo "arm64-test: making $name failed" >&2; return 1; }
    grep -E '^(kernel:|KERNELOFFSET|kimage|page size)' "target/arm64/$name.info"
    judge_vmcore "target/arm64/$name" "target/arm64/$name.reference" "$out/$name" aarch64 aarch64 &&
        judge_symbols "target/arm64/$name" "$out/$name"
}

status=0
for variant in "${variants[@]}"; do
    case $variant in
        max) test_variant vmcore-arm64-test max,pauth-impdef=on || status=1 ;;
        a57) test_variant vmcore-arm64-test-a57 cortex-a57 || status=1 ;;
        *) echo "arm64-test.sh: unknown variant $variant (max or a57)" >&2; exit 2 ;;
    esac
done
judge_summary arm64 "$status"
