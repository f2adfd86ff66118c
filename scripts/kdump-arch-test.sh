#!/usr/bin/env bash
# vmdump on real vmcores of other architectures made through kdump in the
# guest (scripts/make-kdump-fixture.sh: Debian's kernel under QEMU TCG,
# kexec -p, sysrq c, the capture kernel's /proc/vmcore: ppc64el with the
# radix and the hash MMU, arm64, riscv64; and s390x, whose Debian kernels
# have no kdump: QEMU's dump of the running guest with the kernel's
# VMCOREINFO added, scripts/make-s390x-fixture.sh), judged against that
# architecture's makedumpfile run on the same vmcore (Debian's; upstream's
# for riscv64):
#
#   1. make-kdump-fixture.sh makes the vmcore anew and runs makedumpfile
#      through qemu-user: -l -d 1, -l -d 31, --dump-dmesg
#   2. vmdump dumps it at -d 1 and -d 31, refilters its -d 1 dump to -d 31
#      and writes the log
#   3. tests/py/arch_judge.py: libkdumpfile reads every page equal to the
#      vmcore, the files hold the same pfns as makedumpfile's, the reports'
#      counts are equal, the attributes name the machine, the logs are
#      equal; drgn reads every page of both dumps equal to the vmcore
#      (scripts/lib/judge.sh, shared with scripts/arm64-test.sh); on arm64,
#      every kallsyms symbol vmdump reads equals drgn's; on s390x,
#      makedumpfile refilters vmdump's big-endian -d 1 dump to its own -d 31
#      pages and -R rebuilds vmdump's flattened -d 31 dump byte for byte
#
# Each vmcore is judged by makedumpfile's run on the same file, never by
# recorded numbers. Prints a table line per variant: architecture, kernel,
# page size, MMU, pages in the file (vmdump / makedumpfile) at -d 1 and
# -d 31, seconds.
#
# Usage: scripts/kdump-arch-test.sh [--keep] [--upstream-judge upstream|none]
#            [--variant ppc64el-radix|ppc64el-hash|arm64|riscv64|arm64-16k-va47|arm64-16k-va52|s390x|s390x-trixie|s390x-sid]...
#   default: every variant. As root; downloads stay in target/kdump.
#   --keep keeps each variant's vmcores and vmdump's dumps (else removed
#   once it is judged: each vmcore is as large as the guest's memory).
#   riscv64, arm64-16k-va47, s390x-trixie and s390x-sid are judged by
#   upstream makedumpfile's newest commit (Debian 13's 1.7.6 misjudges
#   riscv64's 6.12 and refuses 16 KiB arm64 kernels; Debian 12's reads no
#   s390x kernel of 6.10 or later), built from VMDUMP_MAKEDUMPFILE_GIT (a clone) or
#   a clone of GitHub's (scripts/lib/fixture.sh); --upstream-judge none
#   (scripts/test.sh: CI reaches no GitHub) runs the checks that need no
#   makedumpfile instead: every page equal to the vmcore through
#   libkdumpfile and drgn, -d 31 equal to -d 1 refiltered, the log, the
#   classifier's self-check. arm64-16k-va52 (16 KiB pages, 52-bit VA with
#   LPA2), which no makedumpfile reads, always gets those.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
source scripts/lib/judge.sh
export PYTHONDONTWRITEBYTECODE=1

judge_options kdump-arch-test.sh "$@"
((${#variants[@]})) || variants=(ppc64el-radix ppc64el-hash arm64 riscv64 arm64-16k-va47 arm64-16k-va52 s390x s390x-trixie s390x-sid)
judge_setup kdump-arch-test.sh

# pages_in FILE: the pages a kdump file holds (its 2nd bitmap).
pages_in() {
    /usr/bin/python3 tests/py/kdump_bitmap.py "$1" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["pages_in_file"])'
}

# test_variant ARCH MMU ARCH_NAME UTS_MACHINE: makes the vmcore, judges
# vmdump's dumps of it, and adds its line to the table.
table=()
test_variant() {
    local arch=$1 mmu=$2 arch_name=$3 uts=$4 judge=${5:-debian} variant=$6 start=$SECONDS name info elf ref dir
    local options=() cache=target/kdump/$arch
    shift 6
    options=("$@")
    name=vmcore-$variant-test
    echo "== $name"
    [[ $judge == none ]] && options+=(--no-reference)
    [[ " ${options[*]} " != *" --flavour arm64-16k "* ]] || cache+=-16k
    local make=(scripts/make-kdump-fixture.sh --arch "$arch" ${mmu:+--mmu "$mmu"})
    # s390x: no kdump in Debian's kernels; QEMU's dump with the kernel's
    # VMCOREINFO added from the lowcore (docs/s390x.md).
    if [[ $arch == s390x ]]; then
        # (s390x-SUITE: that suite's kernel, in target/s390x-SUITE)
        make=(scripts/make-s390x-fixture.sh) cache=target/s390x
        [[ $variant != s390x-* ]] || cache+=-${variant#s390x-}
    fi
    "${make[@]}" --name "$name" --zstd-level 1 "${options[@]}" > "$out/$name.fixture.log" 2>&1 ||
        { tail -n 40 "$out/$name.fixture.log" >&2; echo "kdump-arch-test: making $name failed" >&2; return 1; }
    info=$cache/$name.info elf=$cache/$name ref=$cache/$name.reference dir=$out/$name
    [[ $judge == none ]] && ref=none
    grep -E '^(kernel:|page size|guest: mmu)' "$info"
    judge_vmcore "$elf" "$ref" "$dir" "$arch_name" "$uts" || return 1
    if [[ $arch == arm64 ]]; then judge_symbols "$elf" "$dir" || return 1; fi
    if [[ $arch == s390x ]]; then judge_s390x_lowcore "$elf" "$dir" || return 1; fi
    if [[ $arch == s390x && $judge == debian ]]; then judge_s390x_refilter "$elf" "$dir" "$ref" || return 1; fi
    table+=("$(printf '| %s | %s | %s | %s | %s / %s | %s / %s | %d |' "$variant" \
        "$(sed -n 's/^kernel: [^ ]* \([^ ]*\) (\(.*\)), MMU .*/\2 (\1)/p' "$info")" \
        "$(sed -n 's/^page size: //p' "$info")" "$(sed -n 's/^kernel: .*, MMU //p' "$info")" \
        "$(pages_in "$dir/d1.kdump")" "$(reference_pages "$ref" d1)" \
        "$(pages_in "$dir/d31.kdump")" "$(reference_pages "$ref" d31)" $((SECONDS - start)))")
}

# judge_s390x_refilter ELF DIR REF: s390x's makedumpfile reads vmdump's
# big-endian -d 1 dump as one made on s390x: refiltered to -d 31 it holds
# the pages of makedumpfile's own -d 31 dump, and -R rebuilds the flattened
# form of vmdump's -d 31 dump into a file identical to it.
judge_s390x_refilter() {
    local elf=$1 dir=$2 ref=$3 root=$PWD/target/s390x/sysroot
    local mdf=(qemu-s390x-static -L "$root" "$root/usr/bin/makedumpfile")
    "${mdf[@]}" -l -d 31 "$dir/d1.kdump" "$dir/mdf-refiltered.kdump" > "$dir/mdf-refilter.txt" 2>&1 ||
        { cat "$dir/mdf-refilter.txt" >&2; echo "FAIL: s390x makedumpfile refilters vmdump's -d 1 dump" >&2; return 1; }
    if [[ $(pages_in "$dir/mdf-refiltered.kdump") == "$(pages_in "$ref/d31.kdump")" ]]; then
        echo "PASS: s390x makedumpfile refilters vmdump's -d 1 dump to -d 31: $(pages_in "$ref/d31.kdump") pages, as its own -d 31 dump"
    else
        echo "FAIL: s390x makedumpfile's refiltering of vmdump's -d 1 dump holds $(pages_in "$dir/mdf-refiltered.kdump") pages, its own -d 31 dump $(pages_in "$ref/d31.kdump")" >&2
        return 1
    fi
    "$vmdump" dump --no-progress --compress lzo -d 31 "$elf" - > "$dir/d31.flat" 2> "$dir/d31.flat.stderr.txt" ||
        { cat "$dir/d31.flat.stderr.txt" >&2; return 1; }
    "${mdf[@]}" -R "$dir/mdf-rebuilt.kdump" < "$dir/d31.flat" > "$dir/mdf-rebuild.txt" 2>&1 ||
        { cat "$dir/mdf-rebuild.txt" >&2; echo "FAIL: s390x makedumpfile -R of vmdump's flattened -d 31 dump" >&2; return 1; }
    same_bytes "$dir/mdf-rebuilt.kdump" "$dir/d31.kdump" \
        "s390x makedumpfile -R rebuilds vmdump's flattened -d 31 dump byte for byte as vmdump's -d 31 file"
}

# same_bytes A B CLAIM: PASS: CLAIM when files A and B are identical, else
# FAIL: not CLAIM and status 1.
same_bytes() {
    if cmp -s "$1" "$2"; then echo "PASS: $3"; else echo "FAIL: not so: $3 ($1, $2)" >&2; return 1; fi
}

# judge_s390x_lowcore ELF DIR: vmdump finds the VMCOREINFO QEMU's dump
# leaves out through the lowcore itself: its -d 31 dump of QEMU's file as
# written (ELF.qemu) is byte for byte its dump of ELF, which has the note.
judge_s390x_lowcore() {
    local elf=$1 dir=$2
    "$vmdump" dump --no-progress --compress lzo -d 31 "$elf.qemu" "$dir/qemu-d31.kdump" 2> "$dir/qemu-d31.stderr.txt" ||
        { cat "$dir/qemu-d31.stderr.txt" >&2; echo "FAIL: vmdump on QEMU's dump without VMCOREINFO" >&2; return 1; }
    same_bytes "$dir/qemu-d31.kdump" "$dir/d31.kdump" \
        "vmdump's -d 31 dump of QEMU's file without VMCOREINFO (found through the lowcore) is its dump of the ELF with the note"
}

# reference_pages REF dN: the pages in makedumpfile's dump, or "not judged".
reference_pages() {
    if [[ $1 == none ]]; then echo "not judged"; else pages_in "$1/$2.kdump"; fi
}

# drop_variant NAME: unless --keep, removes the variant's vmcores (each as
# large as the guest's memory; remade on every run) and vmdump's dumps of
# them, passed or failed, so that the next variant finds the disk as this
# one did.
drop_variant() {
    local name=vmcore-$1-test
    ((keep)) && return 0
    rm -rf "$out/$name"
    rm -f target/kdump/*/"$name"{,.zst,.disk} target/s390x*/"$name"{,.zst,.qemu}
}

status=0
for variant in "${variants[@]}"; do
    case $variant in
        ppc64el-radix) test_variant ppc64el radix ppc64 ppc64le debian "$variant" || status=1 ;;
        ppc64el-hash) test_variant ppc64el hash ppc64 ppc64le debian "$variant" || status=1 ;;
        arm64) test_variant arm64 '' aarch64 aarch64 debian "$variant" || status=1 ;;
        # Debian 12's libkdumpfile (0.5.1) has no riscv64: no arch.name.
        riscv64) test_variant riscv64 '' none riscv64 "$upstream_judge" "$variant" || status=1 ;;
        # Debian 13's 16 KiB kernel: a 52-bit VA kernel on a CPU without
        # LPA2 (47 bits), judged by upstream makedumpfile (Debian 13's
        # refuses it); with LPA2 (52 bits), which no makedumpfile reads.
        arm64-16k-va47) test_variant arm64 '' aarch64 aarch64 "$upstream_judge" "$variant" \
            --flavour arm64-16k --cpu max,pauth-impdef=on,lpa2=off || status=1 ;;
        arm64-16k-va52) test_variant arm64 '' aarch64 aarch64 none "$variant" --flavour arm64-16k || status=1 ;;
        s390x) test_variant s390x '' s390x s390x debian "$variant" || status=1 ;;
        # Debian 13's kernel (6.12: the virtual layout), judged by upstream
        # makedumpfile (bookworm's 1.7.2 reads only the older layout; the
        # archive this machine reaches lacks trixie's s390x libc6 for
        # Debian 13's), pinned to a kernel whose package it has.
        s390x-trixie) test_variant s390x '' s390x s390x "$upstream_judge" "$variant" \
            --suite trixie --kernel linux-image-6.12.113+deb13-s390x || status=1 ;;
        # sid's newest (7.x), judged the same way.
        s390x-sid) test_variant s390x '' s390x s390x "$upstream_judge" "$variant" --suite sid || status=1 ;;
        *) echo "kdump-arch-test.sh: unknown variant $variant" >&2; exit 2 ;;
    esac
    drop_variant "$variant"
done
echo "| variant | kernel | page size | paging | pages -d 1 (vmdump / makedumpfile) | pages -d 31 | seconds |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${table[@]}"
judge_summary kdump-arch "$status"
