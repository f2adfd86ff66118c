#!/usr/bin/env bash
# Fault injection at every I/O step of a dump (issue 12). Each case runs
# under `timeout` (a hang is a failure) and is judged against README "Exit
# status": the exit status, then the file left behind:
#   complete    exit 0 (3 when a plugin failed): `vmdump verify --against`
#               passes and the header is not incomplete
#   incomplete  exit 1, the file kept: `vmdump info` says incomplete, plain
#               `vmdump verify` fails, `verify --allow-incomplete --against` passes
#   removed     exit 1, no file
#   lost        (the input-fault contract: a page that cannot be read is
#               recorded as lost, the dump goes on) exit 1, the file kept and
#               incomplete as above, stderr names the pfns in a line with
#               "could not be read"
# Kinds: output EIO, ENOSPC, short writes and input EIO, short reads, early
# EOF through an LD_PRELOAD shim (tests/faults/faultshim.c); a full tmpfs; a
# closed pipe after -F; the vmcore truncated before and during a dump, with
# mmap and with --no-mmap; compressor and filter plugins that fail, report a
# panic or crash (tests/faults/fault_plugins.c); SIGINT, SIGTERM, SIGHUP and
# SIGKILL at random moments.
#
# Usage: scripts/faults.sh [--seed N] [--keep] [--only KIND[,KIND]] [ROUNDS]
#   ROUNDS  random cases per kind (default 20; scripts/test.sh runs 3)
# Prints per kind: runs, faults injected, failures, slowest exit; writes
# target/faults-report.txt. Exit status: 0 no failure, 1 failures.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=20 seed=$(( $(date +%s%N) % 1000000 )) keep=0 only=""
while (($#)); do
    case $1 in
        --seed) seed=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        --only) only=,$2,; shift 2 ;;
        -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        [0-9]*) rounds=$1; shift ;;
        *) echo "faults.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

source scripts/lib/tools.sh
ensure_build_deps  # the fault plugins link zlib too
apt_ensure timeout:coreutils
target=${CARGO_TARGET_DIR:-$PWD/target}
vmdump=$target/release/vmdump
[[ -x $vmdump ]] || cargo build --release --locked -p vmdump
work=$target/faults
rm -rf "$work/run"
mkdir -p "$work/run" "$work/plugins"
run=$work/run
report=$target/faults-report.txt

cc=${CC:-cc}
$cc -shared -fPIC -O1 -Wall -Werror -o "$work/faultshim.so" tests/faults/faultshim.c -ldl
$cc -shared -fPIC -O1 -Wall -Werror -std=c11 -Isdk/include -DFAULT_COMPRESSOR \
    -o "$work/plugins/libvmdump_compress_fault_zlib.so" tests/faults/fault_plugins.c -lz
$cc -shared -fPIC -O1 -Wall -Werror -std=c11 -Isdk/include -DFAULT_FILTER \
    -o "$work/plugins/libvmdump_filter_fault_filter.so" tests/faults/fault_plugins.c
chmod 755 "$work/plugins"  # the host refuses plugin dirs others can write

mnt="" main_pid=$BASHPID
cleanup() {
    # only the main shell cleans up (a background subshell ending must not)
    [[ $BASHPID == "$main_pid" ]] || return 0
    if [[ -n $mnt ]]; then umount "$mnt" 2>/dev/null || true; fi
    ((keep)) || rm -rf "$run"
}
trap cleanup EXIT

vmcore=$run/vmcore
"$vmdump" synth --size 128M --data-percent 30 --seed "$seed" "$vmcore" >/dev/null
ref=$run/reference
"$vmdump" dump --no-progress --threads 1 "$vmcore" "$ref" >/dev/null 2>&1
ref_size=$(stat -c %s "$ref")
data_start=$(( $("$vmdump" info "$ref" | awk '/^page data/ {print $NF}') ))
vm_size=$(stat -c %s "$vmcore")
echo "faults: $rounds rounds, seed $seed; reference dump $ref_size bytes, page data from $data_start"

RANDOM=$seed
rand() { local -n into=$1; into=$(( ($2) + (RANDOM * 32768 + RANDOM) % (($3) - ($2) + 1) )); }
pick() { local -n into=$1; shift; local a=("$@"); into=${a[RANDOM % ${#a[@]}]}; }

declare -A k_runs=() k_faults=() k_fail=() k_slow=()
kinds=()
failed_cases=()

# The command of the case being run, its output file, its environment.
cmd=() out="" envs=()
# Runs cmd with envs under timeout; sets rc, secs, err.
launch() {
    local limit=${1:-60} start
    err=$run/stderr
    start=$(date +%s%N)
    rc=0
    env "${envs[@]}" timeout -k 5 "$limit" "${cmd[@]}" >/dev/null 2>"$err" || rc=$?
    secs=$(( ($(date +%s%N) - start) / 1000000 ))
}

info_incomplete() { "$vmdump" info "$1" 2>/dev/null | grep -E '^incomplete +: yes' >/dev/null; }  # no -q: pipefail
verify_full() { "$vmdump" verify --against "${2:-$vmcore}" "$1" >"$run/verify" 2>&1; }
verify_partial() { "$vmdump" verify --allow-incomplete --against "${2:-$vmcore}" "$1" >"$run/verify" 2>&1; }

# What a file left behind reads as, for failure messages.
describe() {
    if [[ ! -e $1 ]]; then echo absent
    elif [[ ! -s $1 ]]; then echo "empty (0 bytes: no kdump header, vmdump info rejects it)"
    elif info_incomplete "$1"; then echo incomplete
    else echo "complete or unreadable"; fi
}

# judge KIND EXPECTED... : the outcome of the last launch must be one of
# EXPECTED (complete, degraded, incomplete, removed, lost, killed); prints
# and counts a failure otherwise.
judge() {
    local kind=$1 why="" ok=0 e; shift
    local against=${against:-$vmcore}
    # no case takes 20 s when all is well (the slowest ~1 s): longer is a hang,
    # even when the timeout's SIGTERM then ended it with exit 1
    if ((rc == 124 || secs >= 20000)); then
        why="hung: killed by timeout after ${secs} ms"
    else
        for e in "$@"; do
            case $e in
                complete|degraded)
                    local want=0; [[ $e == degraded ]] && want=3
                    ((rc == want)) && [[ -f $out ]] && ! info_incomplete "$out" && verify_full "$out" "$against" && ok=1 ;;
                incomplete|lost)
                    if ((rc == 1)) && [[ -f $out ]] && info_incomplete "$out" \
                        && ! "$vmdump" verify "$out" >/dev/null 2>&1 && verify_partial "$out" "$against"; then
                        [[ $e == incomplete ]] || grep -q "could not be read" "$err" && ok=1
                    fi ;;
                removed) ((rc == 1)) && [[ ! -e $out ]] && ok=1 ;;
                killed)  # died by a signal: a file left must read as incomplete
                    if ((rc > 128)); then
                        if [[ ! -e $out ]]; then ok=1
                        elif info_incomplete "$out" && verify_partial "$out" "$against"; then ok=1; fi
                    fi ;;
            esac
            ((ok)) && break
        done
        ((ok)) || why="expected $*; got exit $rc, file $(describe "$out")"
    fi
    [[ -n ${k_runs[$kind]+x} ]] || kinds+=("$kind")
    k_runs[$kind]=$(( ${k_runs[$kind]:-0} + 1 ))
    k_fail[$kind]=${k_fail[$kind]:-0}
    k_faults[$kind]=$(( ${k_faults[$kind]:-0} + ${injected:-0} ))
    ((secs > ${k_slow[$kind]:-0})) && k_slow[$kind]=$secs
    if [[ -n $why ]]; then
        k_fail[$kind]=$(( k_fail[$kind] + 1 ))
        failed_cases+=("$kind")
        echo "FAIL $kind: $why (${secs} ms)" >&2
        echo "  ${envs[*]} ${cmd[*]}" >&2
        sed 's/^/  | /' "$err" | grep -v '^  | *\(Write bytes\|Compression\|Classification\|Excluded\|Pages\|Total\|Dump\|Original\|Filter\)' | tail -n 4 >&2 || true
        tail -n 2 "$run/verify" 2>/dev/null | sed 's/^/  verify: /' >&2 || true
    fi
    injected=0
}

wanted() { [[ -z $only || $only == *,$1,* ]]; }
dump_cmd() { cmd=("$vmdump" --plugin-dir "$work/plugins" dump --no-progress "$@"); }

# Faults through the shim on the output (pwrite64) or the input (pread64).
shim_case() {
    local kind=$1 op=$2 mode=$3 path=$4; shift 4
    rm -f "$out" "$run/log"
    envs=(LD_PRELOAD="$work/faultshim.so" FAULT_PATH="$path" FAULT_OP="$op" FAULT_MODE="$mode"
          FAULT_LOG="$run/log" "${shim_env[@]}")
    dump_cmd "$@" "$vmcore" "$out"
    launch 60
    injected=$( [[ -f $run/log ]] && wc -l <"$run/log" || echo 0)
}

# judge_shim KIND EXPECTED...: as judge, but a run the shim never faulted
# (the fault point lay past its last call) must be complete.
judge_shim() {
    local kind=$1; shift
    if ((injected == 0)); then judge "$kind" complete; else judge "$kind" "$@"; fi
}

out=$run/out
for ((r = 1; r <= rounds; r++)); do
    pick threads 1 2 4 8
    pick codec zstd zlib:1 lzo snappy
    base=(--threads "$threads" --compress "$codec" -d 1)

    if wanted out-eio; then
        rand call 1 200; shim_env=(FAULT_CALL=$call)
        shim_case out-eio write eio "$out" "${base[@]}"
        judge_shim out-eio removed
    fi
    if wanted out-enospc; then
        # disk full from a random offset on: writes below it still succeed
        rand off "$data_start" "$ref_size"; shim_env=(FAULT_OFFSET=$off)
        shim_case out-enospc write enospc "$out" "${base[@]}"
        judge_shim out-enospc incomplete
    fi
    if wanted out-short; then
        rand call 1 200; shim_env=(FAULT_CALL=$call)
        shim_case out-short write short "$out" "${base[@]}"
        judge_shim out-short complete
    fi
    if wanted flat-eio; then
        rand call 1 20; shim_env=(FAULT_CALL=$call)
        shim_case flat-eio write eio "$out" -F "${base[@]}"
        judge_shim flat-eio removed
    fi
    if wanted in-short; then
        rand call 1 100; shim_env=(FAULT_CALL=$call)
        shim_case in-short read short "$vmcore" --no-mmap "${base[@]}"
        judge_shim in-short complete
    fi
    for mode in eio eof; do
        kind=in-$mode
        wanted "$kind" || continue
        # one bad range of 1 to 64 pages somewhere in the vmcore
        rand off 0 $((vm_size - 4096)); rand pages 1 64
        shim_env=(FAULT_OFFSET=$off FAULT_LEN=$((pages * 4096)))
        shim_case "$kind" read "$mode" "$vmcore" --no-mmap "${base[@]}"
        judge_shim "$kind" lost
    done

    if wanted tmpfs-enospc && (( $(id -u) != 0 )); then
        echo "FAIL tmpfs-enospc: mounting a tmpfs needs root: run scripts/faults.sh as root" >&2
        failed_cases+=(tmpfs-enospc)
    elif wanted tmpfs-enospc; then
        if [[ -z $mnt ]]; then
            mnt=$run/tmpfs; mkdir -p "$mnt"; mount -t tmpfs -o size=8m,mode=0700 vmdump-faults "$mnt"
        fi
        rm -f "$mnt"/*
        out=$mnt/out envs=() injected=1
        dump_cmd "${base[@]}" "$vmcore" "$out"
        launch 60
        judge tmpfs-enospc incomplete
        rm -f "$out"; out=$run/out
    fi

    if wanted closed-pipe; then
        envs=() injected=1
        rm -f "$out"
        start=$(date +%s%N)
        err=$run/stderr
        set +e
        timeout -k 5 30 "$vmdump" dump --no-progress "${base[@]}" "$vmcore" - 2>"$err" | head -c 100000 >/dev/null
        codes=("${PIPESTATUS[@]}")
        set -e
        rc=${codes[0]} secs=$(( ($(date +%s%N) - start) / 1000000 ))
        cmd=("$vmdump" dump --no-progress "${base[@]}" "$vmcore" - "| head -c 100000")
        judge closed-pipe removed
        if ((rc == 1)) && ! grep -qiE 'pipe|closed|stdout' "$err"; then
            echo "FAIL closed-pipe: the error does not say what happened: $(tail -n 1 "$err")" >&2
            k_fail[closed-pipe]=$(( k_fail[closed-pipe] + 1 )); failed_cases+=(closed-pipe)
        fi
    fi

    for input in mmap no-mmap; do
        kind=truncate-$input
        wanted "$kind" || continue
        flags=(--threads 1 --compress zlib:6 -d 0)
        [[ $input == no-mmap ]] && flags+=(--no-mmap)
        copy=$run/vmcore.copy
        rand pct 5 95
        pick when before during during during
        cp --sparse=always "$vmcore" "$copy"
        rm -f "$out"; envs=() injected=1
        dump_cmd "${flags[@]}" "$copy" "$out"
        against=$vmcore
        if [[ $when == before ]]; then
            truncate -s $((vm_size * pct / 100)) "$copy"
            launch 60
            judge "$kind-before" removed
        else
            rand delay 0 400
            start=$(date +%s%N)
            err=$run/stderr rc=0
            timeout -k 5 20 "${cmd[@]}" >/dev/null 2>"$err" & pid=$!
            # a cut before vmdump checked the headers against the file size
            # is the "before" case; it creates the output once it has
            until [[ -e $out ]] || ! kill -0 "$pid" 2>/dev/null; do sleep 0.002; done
            sleep "0.$(printf %03d "$delay")"
            truncate -s $((vm_size * pct / 100)) "$copy"
            wait "$pid" || rc=$?
            secs=$(( ($(date +%s%N) - start) / 1000000 ))
            # the dump may have read past the cut before it happened
            judge "$kind-during" complete lost
        fi
        unset against
    done

    for plugin in compressor filter-meta filter-page; do
        pick pmode fail panicked crash
        kind=$plugin-$pmode
        wanted "$plugin" || wanted "$kind" || continue
        rm -f "$out"; injected=1
        if [[ $plugin == compressor ]]; then
            rand at 1 9000
            envs=(FAULT_PLUGIN_MODE=$pmode FAULT_PLUGIN_AT=$at)
            dump_cmd --threads "$threads" --compress fault-zlib -d 1 "$vmcore" "$out"
        else
            rand at 0 $((0x9000))
            printf '[[filters]]\nname = "fault-filter"\n' >"$run/profile.toml"
            envs=(FAULT_PLUGIN_MODE=$pmode FAULT_PLUGIN_AT=$at FAULT_FILTER_NEEDS=${plugin#filter-})
            dump_cmd --profile "$run/profile.toml" "${base[@]}" "$vmcore" "$out"
        fi
        launch 60
        # the fault point may lie past the last page the plugin was given
        if [[ $pmode == crash ]]; then
            ((rc == 0)) && injected=0
            judge "$kind" killed complete
        elif grep -q "injected fault" "$err"; then
            judge "$kind" degraded
        else
            injected=0
            judge "$kind" complete
        fi
    done

    if wanted signals; then
        pick sig INT TERM HUP KILL
        rand delay 0 600
        rm -f "$out"; envs=() injected=1
        dump_cmd --threads 1 --compress zlib:6 -d 0 "$vmcore" "$out"
        start=$(date +%s%N)
        err=$run/stderr rc=0
        "${cmd[@]}" >/dev/null 2>"$err" & pid=$!
        sleep "0.$(printf %03d "$delay")"
        kill -s "$sig" "$pid" 2>/dev/null || injected=0
        sent=$(date +%s%N)
        ( sleep 30; kill -s KILL "$pid" 2>/dev/null ) & watchdog=$!
        wait "$pid" || rc=$?
        kill "$watchdog" 2>/dev/null || true; wait "$watchdog" 2>/dev/null || true
        secs=$(( ($(date +%s%N) - sent) / 1000000 ))
        ((secs >= 30000)) && rc=124
        if [[ $sig == KILL ]]; then judge "signal-$sig" killed complete
        else judge "signal-$sig" incomplete killed complete; fi
    fi
done

{
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?') scripts/faults.sh --seed $seed $rounds"
    printf '  %-26s %5s %7s %9s %13s\n' kind runs faults failures "slowest (s)"
    total_runs=0 total_fail=0
    for kind in "${kinds[@]}"; do
        printf '  %-26s %5d %7d %9d %13s\n' "$kind" "${k_runs[$kind]}" "${k_faults[$kind]}" "${k_fail[$kind]}" \
            "$(printf '%d.%03d' $((k_slow[$kind] / 1000)) $((k_slow[$kind] % 1000)))"
        total_runs=$((total_runs + k_runs[$kind])) total_fail=$((total_fail + k_fail[$kind]))
    done
    echo "  total: $total_runs runs, $((${#failed_cases[@]})) failures"
} | tee -a "$report"
echo "(appended to $report)"
((${#failed_cases[@]} == 0))
