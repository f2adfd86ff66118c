# shellcheck shell=bash
# What the tests of other architectures' vmcores share (scripts/arm64-test.sh,
# scripts/kdump-arch-test.sh): their command line, the tools, and the judging
# of vmdump's dumps of one vmcore against makedumpfile's run on the same
# file. Sourced after scripts/lib/tools.sh.

# judge_options SCRIPT "$@": --keep, --variant NAME (repeated) and
# --upstream-judge upstream|none into $keep, $variants and $upstream_judge;
# --help prints the script's opening comment.
judge_options() {
    local script=$1
    shift
    keep=0 variants=() upstream_judge=upstream
    while (($#)); do
        case $1 in
            --keep) keep=1; shift ;;
            --upstream-judge) upstream_judge=$2; shift 2 ;;
            --variant) variants+=("$2"); shift 2 ;;
            -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
            *) echo "$script: unknown option $1 (see --help)" >&2; exit 2 ;;
        esac
    done
}

# judge_setup SCRIPT: as root, with the release binary and drgn; $out is a
# scratch folder, removed at exit unless --keep.
judge_setup() {
    [[ $(id -u) -eq 0 ]] || { echo "$1: run as root (the fixture scripts need it)" >&2; exit 1; }
    ensure_build_deps
    [[ -x target/release/vmdump ]] || cargo build --release --locked -p vmdump
    ensure_drgn
    drgn_python=${VMDUMP_DRGN_VENV:-$PWD/target/venv-drgn}/bin/python
    vmdump=$PWD/target/release/vmdump
    out=$(mktemp -d "/tmp/vmdump-${1%.sh}.XXXXXX")
    ((keep)) || trap 'rm -rf "$out"' EXIT
}

# judge_vmcore ELF REF DIR ARCH_NAME UTS_MACHINE: vmdump dumps ELF at -d 1
# and -d 31, refilters its -d 1 dump to -d 31 and writes the log into DIR;
# tests/py/arch_judge.py compares them with makedumpfile's in REF (the
# same pfns, the same report counts, every page equal through
# libkdumpfile, the attributes, the logs; REF none: only the checks that
# need no makedumpfile); drgn reads every page of both dumps equal to ELF.
judge_vmcore() {
    local elf=$1 ref=$2 dir=$3 arch_name=$4 uts=$5 level verdict
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
}

# judge_symbols ELF DIR: every vmlinux symbol (address, name) vmdump reads
# from ELF's kallsyms equals drgn's load_vmlinux_kallsyms.
judge_symbols() {
    local elf=$1 dir=$2
    "$vmdump" symbols "$elf" | grep -v $'\t\[' | cut -d' ' -f1,3 > "$dir/symbols.vmdump"
    "$drgn_python" tests/py/drgn_kallsyms.py "$elf" | cut -d' ' -f1,4 > "$dir/symbols.drgn"
    if [[ -s $dir/symbols.drgn ]] && cmp -s "$dir/symbols.vmdump" "$dir/symbols.drgn"; then
        echo "PASS: vmdump symbols: $(wc -l < "$dir/symbols.drgn") symbols, each equal to drgn's load_vmlinux_kallsyms"
    else
        echo "FAIL: vmdump symbols differ from drgn's: $(diff "$dir/symbols.vmdump" "$dir/symbols.drgn" | head -n 4)" >&2
        return 1
    fi
}

# judge_summary NAME STATUS: the last line, and the exit status.
judge_summary() {
    ((keep)) && echo "vmdump's outputs: $out"
    if (($2 == 0)); then echo "$1 test: every check passed"; else echo "$1 test: FAILED" >&2; fi
    return "$2"
}
