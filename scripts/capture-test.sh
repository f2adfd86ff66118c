#!/usr/bin/env bash
# Crashes a real Debian kernel under QEMU and runs vmdump in its kdump
# capture kernel on the real /proc/vmcore, side by side with Debian's
# makedumpfile, with the command lines of kdump-tools, kdump-utils and SUSE
# (their threaded ones with --cpus N); then
# judges every dump on the host (tests/py/capture_judge.py).
#
#   1. host tools (apt-get); the kernel of a Debian suite, fetched with
#      apt-get download in an apt state of its own (scripts/lib/debian.sh:
#      sid's split packages and its vmlinuz under /usr/lib/modules handled)
#      into target/capture/; vmdump built and installed by
#      scripts/install.sh into a staging root
#   2. one busybox initramfs for both kernels (tests/capture/): the install
#      tree, makedumpfile -> vmdump on PATH, Debian's makedumpfile as
#      /opt/real/makedumpfile, the static C helpers, virtio and ext4 modules
#   3. QEMU with TCG (KVM hangs on these machines): the workload, sysrq c,
#      the capture kernel runs tests/capture/capture.sh and saves /proc/vmcore
#   4. the output disk read back with debugfs; the judge (a makedumpfile
#      run on the host on the saved vmcore) dumps it at -d 31 and -d 1 and
#      writes its kernel log; every dump judged
#
# Usage: scripts/capture-test.sh [--suite SUITE] [--kernel PACKAGE]
#            [--judge debian|PATH|none] [--summary FILE] [--keep]
#            [--timeout SECONDS] [--4level] [--cpus N] [--no-build]
#   --suite    the Debian suite whose kernel crashes: bookworm (default: 6.1,
#              the shared fixtures' kernel), trixie, sid, experimental, or
#              newest (experimental's when its kernel series is newer than
#              sid's, else sid's)
#   --kernel   a kernel package of that suite (default: the one
#              linux-image-amd64 depends on there)
#   --judge    who judges the page counts and the kernel log:
#              debian: this machine's makedumpfile (Debian 12's 1.7.2), run
#                in the guest beside vmdump and on the host; right for
#                bookworm's kernel only (the default there)
#              PATH: a makedumpfile binary run on the host, e.g. upstream's
#                built from its newest commit for kernels newer than
#                Debian's knows (scripts/kernel-matrix.sh)
#              none: only the checks that need no judge (every page read
#                back, drgn, both command lines agree, levels and kernel log
#                consistent); the in-guest makedumpfile is then timed only
#              Other suites have no default: say which.
#   --summary  write the run's figures as JSON to FILE (for the matrix)
#   --keep     keep this run's folder (dumps, vmcore, serial log) and say where
#   --timeout  kill QEMU after this many seconds (default 900)
#   --4level   hide LA57 from the guest CPU: 4-level paging, as in the shared
#              fixtures (-cpu max has LA57 under TCG, so the kernel runs 5-level)
#   --cpus     a capture kernel with N CPUs (nr_cpus=N; QEMU -smp N, at
#              least 2) instead of one: capture.sh then runs kdump-utils'
#              and SUSE's threaded command lines (--num-threads=N, and
#              --num-threads N) and each tool at 1, 2 and 4 threads for its
#              memory, judged too (default 1: no threaded runs)
#   --no-build installs the binaries already in target/release (scripts/install.sh
#              --no-build) instead of building them first
# As root. Exit status 0 when every check passed. Kept between runs in
# target/capture: the apt states, the kernel packages and their unpacked
# trees, the data disks (and drgn's venv in target/venv-drgn, ensure_drgn
# of scripts/lib/tools.sh).
set -euo pipefail
caller_dir=$PWD
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
source scripts/lib/debian.sh
source scripts/lib/garage.sh
export PYTHONDONTWRITEBYTECODE=1 # the judges import each other: no __pycache__ in tests/py

cache=$PWD/target/capture
keep=0 qemu_timeout=900 cpu=max suite=bookworm kernel_pkg='' judge='' summary='' install_build=() cpus=1
while (($#)); do
    case $1 in
        --suite) suite=$2; shift 2 ;;
        --kernel) kernel_pkg=$2; shift 2 ;;
        --judge) judge=$2; shift 2 ;;
        --summary) summary=$(cd "$caller_dir" && realpath -m "$2"); shift 2 ;;
        --keep) keep=1; shift ;;
        --timeout) qemu_timeout=$2; shift 2 ;;
        --4level) cpu=max,la57=off; shift ;;
        --cpus) cpus=$2; shift 2 ;;
        --no-build) install_build=(--no-build); shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "capture-test.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
[[ $cpus =~ ^[1-9][0-9]*$ ]] || { echo "capture-test.sh: --cpus $cpus: not a number of CPUs" >&2; exit 2; }
if [[ -z $judge ]]; then
    [[ $suite == bookworm ]] || {
        echo "capture-test.sh: --suite $suite needs --judge: Debian 12's makedumpfile misjudges newer kernels" \
            "(give upstream makedumpfile's path, or none)" >&2
        exit 2
    }
    judge=debian
fi
if [[ $judge != debian && $judge != none ]]; then
    judge=$(cd "$caller_dir" && realpath -m "$judge")
    [[ -x $judge ]] || { echo "capture-test.sh: --judge $judge: not debian, none or an executable" >&2; exit 2; }
fi

die() { echo "capture-test: FAILED: $*" >&2; exit 1; }

# The kernel of the suite (its own apt state, target/capture/apt-SUITE):
# sets kernel_pkg, kver, kroot (with depmod's modules.dep) and vmlinuz.
fetch_suite_kernel() {
    if [[ $suite == newest ]]; then
        suite=$(newest_kernel_suite "$cache")
        echo "the newest kernel series is $suite's"
    fi
    apt_state "$cache/apt-$suite" amd64 "$suite"
    fetch_kernel "$cache" "$kernel_pkg"
}

# Debian's makedumpfile, the reference: refuses to go on when the name is
# taken by something else (a symlink to vmdump, a package that diverts it).
find_real_makedumpfile() {
    real_makedumpfile=/usr/bin/makedumpfile
    local version
    version=$("$real_makedumpfile" -v 2>&1 | head -n 1) || true
    [[ ! -L $real_makedumpfile && $version == "makedumpfile: version "* ]] ||
        die "$real_makedumpfile is not Debian's makedumpfile (-v: $version)"
    echo "reference: $version"
}

# copy_libraries ROOT FILE...: every shared library that ldd lists for the
# FILEs, at the same path under ROOT. ldd names the dynamic loader by the
# path the binary asks for (PT_INTERP), so the loader lands there too.
copy_libraries() {
    local root=$1 file lib
    shift
    for file in "$@"; do
        ldd "$file" 2>/dev/null || true # a static binary needs nothing
    done | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u |
        while read -r lib; do
            install -D -m 0755 "$lib" "$root$lib"
        done
}

make_cpio() {
    (cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -1)
}

# The keys of the encrypted dumps: their private halves in $work/keys (the
# host decrypts), the public ones as the profile section capture.sh adds to
# /etc/vmdump/vmdump.toml in the capture kernel (written to $1).
make_keys() {
    local keys=$work/keys
    mkdir -p "$keys"
    age-keygen -o "$keys/age.key" 2> /dev/null
    ssh-keygen -q -t ed25519 -N '' -C capture-test -f "$keys/id_ed25519"
    local age ssh
    age=$(sed -n 's/^# public key: //p' "$keys/age.key")
    ssh=$(cat "$keys/id_ed25519.pub")
    printf '\n[output]\nrecipients = ["%s", "%s"]\n' "$age" "$ssh" > "$1"
}

# The host's object store for the capture kernel's uploads (issue 42): a
# Garage node on 127.0.0.1, which the guest reaches at 10.0.2.100:3900
# through QEMU's user network restricted to that one forward (socat per
# connection): nothing else is reachable from the guest. Its key goes into
# the initramfs as the capture kernel's 0600 credentials file. Beside it,
# s3s-fs, the store that refuses what AWS refuses, at 10.0.2.101:3900, for
# one more upload of kdump-utils' line.
start_store() {
    garage_single_node "$(ensure_garage)" "$work/store"
    store_pid=$(sed -n 's/^GARAGE_PID=//p' "$work/store/env")
    store_port=$(sed -n 's/^AWS_ENDPOINT_URL=.*://p' "$work/store/env")
    s3s_fs_node "$(ensure_s3s_fs)" "$work/strict"
    strict_pid=$(sed -n 's/^S3S_FS_PID=//p' "$work/strict/env")
    strict_port=$(sed -n 's/^AWS_ENDPOINT_URL=.*://p' "$work/strict/env")
}

# The section of the capture kernel's profile ($2; @LINE@ names the command
# line) for the store of env file $1 at $3 (the guest's address), and its
# credentials file ($4, 0600).
write_store_profile() {
    local key secret region
    key=$(sed -n 's/^AWS_ACCESS_KEY_ID=//p' "$1")
    secret=$(sed -n 's/^AWS_SECRET_ACCESS_KEY=//p' "$1")
    region=$(sed -n 's/^AWS_REGION=//p' "$1")
    printf '\n[output]\ntarget = "s3://dumps/capture/{release}/@LINE@/vmcore"\nendpoint = "http://%s"\nregion = "%s"\nallow_http = true\ncredentials = "/%s"\n' \
        "$3" "$region" "${4#"$work/initramfs/"}" > "$2"
    (umask 077 && mkdir -p "$(dirname "$4")" &&
        printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$key" "$secret" > "$4")
}

# The guest's initramfs. The capture kernel boots from the same tree; the
# first kernel's copy also holds the kernel and the capture initramfs, for
# kexec_file_load.
build_initramfs() {
    local tree=$work/initramfs
    # makedumpfile writes VMCOREINFO to a temporary file: /tmp must exist.
    mkdir -p "$tree"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,modules,capture,opt/real}
    cp -a "$work/stage/." "$tree/"
    # vmdump behaves as makedumpfile under that name; kdump tools find it on PATH.
    ln -s vmdump "$tree/usr/sbin/makedumpfile"
    install -m 0755 "$real_makedumpfile" "$tree/opt/real/makedumpfile"
    install -m 0755 /bin/busybox "$tree/bin/busybox"
    local helper
    for helper in kexec_load runstat memfill asuser; do
        gcc -O2 -Wall -Werror -static -o "$tree/usr/bin/$helper" "tests/capture/$helper.c"
    done
    install -m 0755 tests/capture/init "$tree/init"
    make_keys "$tree/capture/recipients.toml"
    write_store_profile "$work/store/env" "$tree/capture/store.toml" 10.0.2.100:3900 "$tree/etc/vmdump/s3-credentials"
    write_store_profile "$work/strict/env" "$tree/capture/strict.toml" 10.0.2.101:3900 "$tree/etc/vmdump/s3-strict-credentials"
    install -m 0644 tests/capture/workload.sh tests/capture/live.sh tests/capture/capture.sh "$tree/capture/"
    copy_libraries "$tree" "$tree/usr/sbin/vmdump" "$tree"/usr/lib/vmdump/plugins/*.so \
        "$real_makedumpfile" /bin/busybox
    # glibc's pthread_exit loads libgcc_s.so.1 (to unwind the thread), which
    # ldd does not list: makedumpfile --num-threads aborts without it
    # ("libgcc_s.so.1 must be installed for pthread_exit to work"), as it
    # would in no distribution's initramfs.
    local libgcc
    libgcc=$(ldconfig -p | awk '$1 == "libgcc_s.so.1" && /x86-64/ {print $NF; exit}')
    [[ -n $libgcc ]] || die "no libgcc_s.so.1 on this machine (ldconfig -p)"
    install -D -m 0755 "$libgcc" "$tree$libgcc"
    # crc32c first: ext4 asks for it by name (a soft dependency; gone in 6.14+).
    copy_modules "$kroot" "$kver" "$tree/modules" virtio_pci virtio_blk crc32c_generic ext4 virtio_net
    make_cpio "$tree" > "$work/initrd-capture.gz"
    install -D -m 0644 "$vmlinuz" "$tree/boot/vmlinuz"
    install -m 0644 "$work/initrd-capture.gz" "$tree/boot/initrd-capture.gz"
    make_cpio "$tree" > "$work/initrd.gz"
    stat -c '%n: %s bytes' "$work"/initrd*.gz
}

# The data disk (vda, read-only): real files for the page cache, the
# kernel's file system modules (38 MiB). The output disk (vdb): ext4 with
# room for the vmcore and every dump, its inode tables written here
# rather than by the guest's lazy init.
make_disks() {
    data_img=$cache/data-$kver.img
    if [[ ! -s $data_img ]]; then
        mke2fs -q -t ext4 -d "$kroot/lib/modules/$kver/kernel/fs" "$data_img.tmp" 64M
        mv "$data_img.tmp" "$data_img"
    fi
    # The threaded runs of --cpus N write a dozen more -d 31 dumps (25 MiB each).
    truncate -s $((cpus > 1 ? 2400 : 1600))M "$work/out.img"
    mke2fs -q -F -t ext4 -E lazy_itable_init=0,lazy_journal_init=0 "$work/out.img"
}

# stamp: each line read, after the seconds since this step began.
stamp() {
    local start=$SECONDS line
    while IFS= read -r line; do
        printf '[%3d s] %s\n' $((SECONDS - start)) "${line%$'\r'}"
    done
}

# Boots, shows the guest's CAPTURE: lines as they come, and fails with the
# serial log's tail unless the capture kernel said DONE in time. A first
# kernel that dies before its init runs (seen here once, on 7.2 under TCG
# with two CPUs: an int3 oops in sched_clock_cpu at 1.4 s, while the kernel
# still patches its own text) never reached the test: it is booted once more, saying
# so; the second such death fails the test.
boot_guest() {
    local attempt
    for attempt in 1 2; do
        boot_guest_once && return 0
        ((attempt == 1)) || break
        if [[ -e $work/stalled ]] && ! grep -q '^CAPTURE: makedumpfile on PATH' "$work/serial.log"; then
            tail -n 25 "$work/serial.log" >&2
            echo "capture-test: a kernel hung in its own boot (above; TCG with several CPUs), before any dump ran: booting again" >&2
            continue
        fi
        grep -q '^CAPTURE: first kernel' "$work/serial.log" && break
        tail -n 25 "$work/serial.log" >&2
        echo "capture-test: the first kernel died before its init ran (above), before anything was tested: booting it again" >&2
    done
    cat "$work/qemu.out" >&2
    tail -n 40 "$work/serial.log" >&2
    die "the guest stopped before the capture kernel was done; the serial log's last lines are above"
}

# watch_serial PID: stops QEMU (the timeout command PID that runs it) when
# the serial log has not grown for $stall_seconds: a guest that hangs is
# known in minutes, not at --timeout (a capture kernel of four CPUs under
# TCG hung once in a few boots, in its own start-up), and says so with
# $work/stalled. Every step of the guest writes a line well within it.
stall_seconds=300
watch_serial() {
    local pid=$1 size=-1 now still=0
    while kill -0 "$pid" 2> /dev/null; do
        sleep 5
        now=$(stat -c %s "$work/serial.log" 2> /dev/null || echo 0)
        if ((now == size)); then still=$((still + 5)); else still=0 size=$now; fi
        if ((still >= stall_seconds)); then
            echo "no serial output for $still s" > "$work/stalled"
            kill "$pid" 2> /dev/null
            return
        fi
    done
}

# One boot: fails (status 1) when the capture kernel did not say DONE or
# the guest stalled (watch_serial); dies when QEMU had to be killed at the
# timeout.
boot_guest_once() {
    local log=$work/serial.log rc=0
    # The first kernel has two CPUs, or the capture kernel's N (init hands
    # capture_cpus=N to the capture kernel as nr_cpus=N; nr_cpus=1 without it).
    local smp=$((cpus > 2 ? cpus : 2)) append="console=ttyS0 panic=-1 crashkernel=192M"
    ((cpus == 1)) || append+=" capture_cpus=$cpus"
    # shellcheck disable=SC2054 # q35,accel=tcg is one argument
    local qemu=(qemu-system-x86_64 -machine q35,accel=tcg -cpu "$cpu" -smp "$smp" -m 512M
        -nodefaults -display none -no-reboot -serial "file:$log"
        -kernel "$vmlinuz" -initrd "$work/initrd.gz"
        -append "$append"
        -drive "file=$data_img,if=virtio,format=raw,snapshot=on"
        -drive "file=$work/out.img,if=virtio,format=raw"
        -netdev "user,id=n0,restrict=on,guestfwd=tcp:10.0.2.100:3900-cmd:socat - TCP:127.0.0.1:$store_port,guestfwd=tcp:10.0.2.101:3900-cmd:socat - TCP:127.0.0.1:$strict_port"
        -device virtio-net-pci,netdev=n0)
    echo "${qemu[*]}"
    : > "$log"
    rm -f "$work/stalled"
    timeout --kill-after=10 "$qemu_timeout" "${qemu[@]}" > "$work/qemu.out" 2>&1 &
    local pid=$!
    watch_serial "$pid" &
    local watchdog=$!
    tail -n +1 -F --pid="$pid" "$log" 2> /dev/null | grep -a --line-buffered '^CAPTURE:' | stamp || true
    wait "$pid" || rc=$?
    kill "$watchdog" 2> /dev/null || true
    wait "$watchdog" 2> /dev/null || true
    if [[ -e $work/stalled ]]; then
        echo "capture-test: the guest stalled ($(cat "$work/stalled")) and was stopped" >&2
        return 1
    fi
    if ((rc == 124 || rc == 137)); then
        tail -n 40 "$log" >&2
        die "QEMU did not finish within $qemu_timeout s and was killed; the serial log's last lines are above"
    fi
    ((rc == 0)) && grep -q '^CAPTURE: DONE' "$log"
}

extract_results() {
    debugfs -R "rdump /out $work" "$work/out.img" 2> "$work/debugfs.err" ||
        die "debugfs could not read the output disk: $(cat "$work/debugfs.err")"
    [[ -s $work/out/vmcore ]] || die "no vmcore on the output disk"
}

# The judge's own runs on the saved vmcore, beside vmdump's in out/:
# judge.version, judge.d31 and judge.d1 (-l) with their reports, judge.dmesg.
run_judge() {
    local bin=$1 out=$work/out level
    "$bin" -v 2>&1 | head -n 1 > "$out/judge.version"
    echo "judge: $bin, $(cat "$out/judge.version")"
    for level in 31 1; do
        timeout 600 "$bin" --message-level 22 -l -d "$level" "$out/vmcore" "$out/judge.d$level" \
            > "$out/judge.d$level.report" 2>&1 ||
            die "the judge's -d $level dump failed: $(tail -n 5 "$out/judge.d$level.report")"
    done
    timeout 120 "$bin" --dump-dmesg "$out/vmcore" "$out/judge.dmesg" > "$out/judge.dmesg.stdout" 2>&1 ||
        die "the judge's --dump-dmesg failed: $(tail -n 5 "$out/judge.dmesg.stdout")"
}

judge() {
    local out=$work/out flat kind=$judge
    # The flattened streams: kdump-tools' lines, and vmdump's of SUSE's
    # threaded lines (--cpus N; makedumpfile's are timed, not judged).
    for flat in "$out"/*.kdump-tools*.flat "$out"/vmdump.suse-t*.flat; do
        # makedumpfile 1.7.2 -R spins forever on an empty stream: a failed
        # run is left to the judge, which says why it failed.
        [[ -s $flat ]] || continue
        timeout 120 "$real_makedumpfile" -R "${flat%.flat}" < "$flat" > /dev/null ||
            die "makedumpfile -R could not rearrange $(basename "$flat")"
    done
    case $judge in
        debian) run_judge "$real_makedumpfile" ;;
        none) echo "judge: none (the checks that need no judge)" ;;
        *) run_judge "$judge"; kind=upstream ;;
    esac
    # Its verdict is kept, so that the timings are printed either way.
    /usr/bin/python3 tests/py/capture_judge.py --vmdump target/release/vmdump \
        --drgn-python "${VMDUMP_DRGN_VENV:-$PWD/target/venv-drgn}/bin/python" \
        --judge "$kind" --cpus "$cpus" --serial "$work/serial.log" --keys "$work/keys" \
        --store-env "$work/store/env" --strict-env "$work/strict/env" --other-kernel target/fixtures/vmcore-SK72 \
        ${summary:+--summary "$summary"} "$out" ||
        verdict=1
}

cleanup() {
    [[ -n ${store_pid-} ]] && kill "$store_pid" 2> /dev/null
    [[ -n ${strict_pid-} ]] && kill "$strict_pid" 2> /dev/null
    echo
    printf '%s\n' "${timings[@]}"
    printf '%-10s %4d s\n' total "$SECONDS"
    if ((keep)); then
        echo "kept: $work (serial.log, out/)"
    else
        rm -rf "$work"
    fi
}

main() {
    ensure_capture_tools
    find_real_makedumpfile
    # The 7.2 fixture: another kernel's dump beside the capture's for vmdump list.
    prepare_fixtures
    mkdir -p "$cache"
    work=$(mktemp -d "$cache/run.XXXXXX")
    trap cleanup EXIT
    step store start_store
    step kernel fetch_suite_kernel
    step build scripts/install.sh "${install_build[@]}" --destdir "$work/stage"
    step initramfs build_initramfs
    step disks make_disks
    step qemu boot_guest
    step extract extract_results
    verdict=0
    step judge judge
    ((verdict == 0)) || die "some checks failed (above)"
    echo "capture-test: PASSED"
}

main
