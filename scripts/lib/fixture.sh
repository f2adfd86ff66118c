# shellcheck shell=bash
# What the scripts that make a real vmcore of another architecture share
# (scripts/make-arm64-fixture.sh, scripts/make-kdump-fixture.sh): the
# guest's initramfs, waiting for its console lines, and the reference
# results of that architecture's makedumpfile, run through qemu-user with
# its packages unpacked into a sysroot. Sourced after scripts/lib/tools.sh
# and scripts/lib/debian.sh (an apt state set up); each caller has its own
# die().
#
#   depends_closure PKG...      the packages and what they depend on
#   fetch_makedumpfile CACHE QEMU_USER
#                               the architecture's makedumpfile in
#                               CACHE/sysroot: sets sysroot and mdf
#   build_upstream_makedumpfile CACHE QEMU_USER CROSS TARGET
#                               upstream makedumpfile's newest commit,
#                               built static for the architecture: sets mdf
#   cleanup                     kills QEMU (qpid) if it runs, removes work
#   make_cpio DIR               DIR as a gzip'd newc cpio on stdout
#   make_data_disk UUID_PREFIX  the guest's ext4 data disk: sets data_img
#   compress                    zstd of $elf, its sizes in the info file
#   wait_ready PREFIX LOG       the guest's PREFIX: lines until READY (or
#                               DONE); needs qpid, qemu_timeout, work
#   make_reference              makedumpfile -l -d 1, -d 31, --dump-dmesg on
#                               $elf into $ref, read back by libkdumpfile;
#                               needs fixture, cache, elf, mdf, ref
#   install_reference DEST      copies the reference results to DEST

# depends_closure PKG...: the packages and, recursively, what they Depend or
# Pre-Depend on (the first of alternatives), one a line. perl is left out:
# makedumpfile needs it only for its makedumpfile-R.pl script, not for the
# binary.
depends_closure() {
    local queue=("$@") seen=" " pkg
    while ((${#queue[@]})); do
        pkg=${queue[0]} queue=("${queue[@]:1}")
        [[ $seen == *" $pkg "* ]] && continue
        seen+="$pkg "
        echo "$pkg"
        mapfile -t -O "${#queue[@]}" queue < <(apt_cache_in show --no-all-versions "$pkg" |
            awk -F': ' '/^(Pre-)?Depends:/ {print $2}' | tr ',' '\n' |
            sed -E 's/\|.*//; s/\(.*\)//; s/:any//; s/[[:space:]]//g' | grep -vxE 'perl|perl-base|' || true)
    done
}

# The apt state's makedumpfile in a sysroot for QEMU_USER -L (unpacked
# again when a package's version changed).
fetch_makedumpfile() {
    local cache=$1 qemu_user=$2 pkgs pkg stamp bin
    mapfile -t pkgs < <(depends_closure makedumpfile)
    stamp=$(for pkg in "${pkgs[@]}"; do echo "$pkg=$(candidate "$pkg")"; done)
    sysroot=$cache/sysroot
    if [[ $(cat "$sysroot/.packages" 2> /dev/null) != "$stamp" ]]; then
        rm -rf "$sysroot"
        mkdir -p "$sysroot"
        for pkg in "${pkgs[@]}"; do
            dpkg-deb -x "$(fetch_deb "$cache/debs" "$pkg")" "$sysroot"
        done
        # qemu-user's -L prefixes the paths a program opens, not the
        # targets of absolute links (ppc64el's /lib64/ld64.so.2): those are
        # made relative.
        local link target
        find "$sysroot" -type l -lname '/*' | while read -r link; do
            target=$(readlink "$link")
            ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$sysroot$target")" "$link"
        done
        echo "$stamp" > "$sysroot/.packages"
    fi
    echo "sysroot: $(echo "$stamp" | tr '\n' ' ')"
    # Debian 12 ships it as /usr/bin/makedumpfile (older releases: /usr/sbin).
    for bin in "$sysroot"/usr/{bin,sbin}/makedumpfile; do [[ -x $bin ]] && break; done
    mdf=("$qemu_user" -L "$sysroot" "$bin")
    "${mdf[@]}" -v 2>&1 | head -n 1 | grep -q '^makedumpfile: version' ||
        die "Debian's $apt_arch makedumpfile does not run under $qemu_user: $("${mdf[@]}" -v 2>&1 | head -n 3)"
    "${mdf[@]}" -v 2>&1 | head -n 1
}

# Where upstream makedumpfile's source comes from: a git repository (bare
# or not) named by VMDUMP_MAKEDUMPFILE_GIT, else a clone of GitHub's.
upstream_makedumpfile_git() {
    local git=${VMDUMP_MAKEDUMPFILE_GIT:-$PWD/target/src/makedumpfile.git}
    if [[ -z ${VMDUMP_MAKEDUMPFILE_GIT:-} ]]; then
        if [[ -d $git ]]; then
            git --git-dir="$git" fetch -q origin '+refs/heads/*:refs/heads/*' 2> /dev/null ||
                echo "upstream makedumpfile: GitHub unreachable, building $git's newest commit" >&2
        else
            git clone -q --bare https://github.com/makedumpfile/makedumpfile.git "$git" ||
                die "upstream makedumpfile: cannot clone GitHub's repository; give a clone as VMDUMP_MAKEDUMPFILE_GIT"
        fi
    fi
    [[ -d $git ]] || die "VMDUMP_MAKEDUMPFILE_GIT=$git is not a folder"
    echo "$git"
}

# build_upstream_makedumpfile CACHE QEMU_USER CROSS TARGET: upstream
# makedumpfile (its default branch's newest commit) built static for its
# TARGET (aarch64, riscv64) with CROSS-gcc against
# the apt state's -dev packages, unpacked into CACHE/build-sysroot (the
# architecture's own libc, libdw and compressors: the release the kernel is
# from), run through QEMU_USER. Kept per commit in CACHE. The judge where
# the architecture's Debian makedumpfile is wrong (riscv64 before 1.7.9's
# fixes) or refuses the kernel (16 KiB arm64 kernels).
build_upstream_makedumpfile() {
    local cache=$1 qemu_user=$2 cross=$3 target=$4 git commit dir root pkgs pkg stamp
    apt_ensure "$cross-gcc:gcc-$cross" make:make git:git
    git=$(upstream_makedumpfile_git)
    commit=$(git --git-dir="$git" rev-parse HEAD) || die "$git has no HEAD"
    dir=$cache/makedumpfile-${commit:0:12}
    if [[ ! -x $dir/makedumpfile ]]; then
        root=$cache/build-sysroot
        mapfile -t pkgs < <(depends_closure libc6-dev linux-libc-dev libdw-dev libelf-dev zlib1g-dev libbz2-dev \
            liblzma-dev liblzo2-dev libzstd-dev | grep -vxE 'gcc-[0-9]+-base|libgcc-s1|libc-dev-bin|rpcsvc-proto')
        stamp=$(for pkg in "${pkgs[@]}"; do echo "$pkg=$(candidate "$pkg")"; done)
        if [[ $(cat "$root/.packages" 2> /dev/null) != "$stamp" ]]; then
            rm -rf "$root"
            mkdir -p "$root"
            for pkg in "${pkgs[@]}"; do dpkg-deb -x "$(fetch_deb "$cache/debs" "$pkg")" "$root"; done
            echo "$stamp" > "$root/.packages"
        fi
        rm -rf "$dir.tmp"
        mkdir -p "$dir.tmp"
        git --git-dir="$git" archive HEAD | tar -x -C "$dir.tmp"
        # The cross compiler's own libc (the host release's, older) is
        # searched before the sysroot's: the sysroot's headers, start files
        # and libraries are named first.
        # The host's binutils (2.40) crash linking Debian 13's riscv64
        # libraries, and its lld (14) cannot relax riscv64 code: the Rust
        # toolchain's lld links instead.
        local lld
        lld=$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/rust-lld
        [[ -x $lld ]] || die "no rust-lld at $lld (rustup installs it with rustc)"
        mkdir -p "$dir.tmp/ld"
        printf '#!/bin/sh\nexec %s -flavor gnu "$@"\n' "$lld" > "$dir.tmp/ld/ld"
        chmod +x "$dir.tmp/ld/ld"
        local cc="$cross-gcc --sysroot=$root -isystem $root/usr/include/$cross -isystem $root/usr/include"
        cc+=" -B$dir.tmp/ld/ -B$root/usr/lib/$cross -L$root/usr/lib/$cross"
        $cc -O2 -Wall -Werror -c -o "$dir.tmp/eu_search.o" scripts/lib/eu_search.c
        # LIBS in the order a static link needs (libdw before libelf before
        # the compressors both use).
        make -C "$dir.tmp" -j"$(nproc)" CC="$cc" TARGET="$target" USELZO=on USEZSTD=on \
            LIBS="-static -ldw -lelf $dir.tmp/eu_search.o -lbz2 -llzma -lzstd -llzo2 -lz -ldl -lpthread" \
            makedumpfile > "$cache/makedumpfile-${commit:0:12}.build.log" 2>&1 ||
            die "building upstream makedumpfile ${commit:0:12}: $(tail -n 5 "$cache/makedumpfile-${commit:0:12}.build.log")"
        rm -rf "$dir"
        mv "$dir.tmp" "$dir"
    fi
    mdf=("$qemu_user" "$dir/makedumpfile")
    "${mdf[@]}" -v 2>&1 | head -n 1 | grep -q '^makedumpfile: version' ||
        die "upstream makedumpfile does not run under $qemu_user: $("${mdf[@]}" -v 2>&1 | head -n 3)"
    echo "upstream makedumpfile ${commit:0:12} ($(git --git-dir="$git" log -1 --format=%cs HEAD)): $("${mdf[@]}" -v 2>&1 | head -n 1)"
}

qpid=
cleanup() {
    if [[ -n $qpid ]] && kill -0 "$qpid" 2> /dev/null; then
        kill "$qpid" 2> /dev/null || true
        wait "$qpid" 2> /dev/null || true
    fi
    rm -rf "$work"
}

# The data disk, read-only in the guest: real files for the page cache,
# some of the kernel package's file system modules (10 MiB: enough pages of
# each kind, little for zstd to carry), the same bytes every run (fixed
# UUID, hash seed and time). Needs cache, kroot, kver, work.
make_data_disk() {
    local uuid=$1 dirs=(btrfs ext4 nfs xfs) dir root=$work/diskroot
    data_img=$cache/data-$kver-$(IFS=-; echo "${dirs[*]}").img
    [[ -s $data_img ]] && return 0
    mkdir -p "$root"
    for dir in "${dirs[@]}"; do
        cp -a "$kroot/lib/modules/$kver/kernel/fs/$dir" "$root/"
    done
    E2FSPROGS_FAKE_TIME=1700000000 mke2fs -q -t ext4 -b 4096 -U "$uuid-000000000001" \
        -E "root_owner=0:0,hash_seed=$uuid-000000000002" \
        -d "$root" "$data_img.tmp" 32M
    mv "$data_img.tmp" "$data_img"
}

compress() {
    zstd -q -f -T0 "-$zstd_level" "$elf" -o "$elf.zst"
    elf_bytes=$(stat -c %s "$elf") zst_bytes=$(stat -c %s "$elf.zst") elf_sha=$(sha256sum "$elf" | cut -d' ' -f1)
    {
        echo "files:"
        echo "  $fixture      $elf_bytes bytes  sha256 $elf_sha"
        echo "  $fixture.zst  $zst_bytes bytes (zstd -$zstd_level)"
    } >> "$cache/$fixture.info"
    echo "$fixture: $elf_bytes bytes, zstd $zst_bytes bytes, sha256 $elf_sha"
}

# install_package PKG: for packages no command stands for (a library).
install_package() {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" > /dev/null
}

# fetch_busybox: busybox-static of the apt state, unpacked under $cache;
# sets busybox_version and busybox_bin.
fetch_busybox() {
    local root
    busybox_version=$(candidate busybox-static)
    root=$cache/busybox-static-${busybox_version/:/%3a}
    unpack "$(fetch_deb "$cache/debs" busybox-static)" "$root"
    # (Debian 13 has merged /usr: usr/bin/busybox)
    for busybox_bin in "$root"/{bin,usr/bin}/busybox; do [[ -x $busybox_bin ]] && break; done
    [[ -x $busybox_bin ]] || die "busybox-static has no bin/busybox"
    echo "busybox-static $busybox_version"
}

# build_guest_initramfs CROSS_GCC INIT MODULE...: $work/initrd.gz of the
# guest that runs the shared workload: busybox, memfill built static with
# CROSS_GCC, INIT as /init, tests/fixtures/workload.sh and the kernel's
# MODULEs (in load order). Needs busybox_bin, kroot, kver, work.
build_guest_initramfs() {
    local gcc=$1 init=$2 tree=$work/initramfs
    shift 2
    mkdir -p "$tree"/{bin,dev,proc,sys,tmp,data,modules}
    # The kernel gives PID 1 /dev/console as stdin/out before devtmpfs is up.
    mknod -m 600 "$tree/dev/console" c 5 1
    install -m 0755 "$busybox_bin" "$tree/bin/busybox"
    "$gcc" -O2 -Wall -Werror -static -o "$tree/bin/memfill" tests/capture/memfill.c
    install -m 0755 "$init" "$tree/init"
    install -m 0644 tests/fixtures/workload.sh "$tree/workload.sh"
    copy_modules "$kroot" "$kver" "$tree/modules" "$@"
    touch "$tree/modules/order"
    make_cpio "$tree" > "$work/initrd.gz"
    echo "initramfs: $(stat -c %s "$work/initrd.gz") bytes, modules: $(tr '\n' ' ' < "$tree/modules/order")"
}

# new_reference: an empty $cache/$fixture.reference as $ref, holding the
# judge's version line and a link to the fixture.
new_reference() {
    ref=$cache/$fixture.reference
    rm -rf "$ref"
    mkdir -p "$ref"
    "${mdf[@]}" -v 2>&1 | head -n 1 > "$ref/version.txt"
    ln -s "../$fixture" "$ref/$fixture"
}

make_cpio() {
    (cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -1)
}

# wait_ready PREFIX LOG: shows the guest's PREFIX: lines as they come;
# returns when it says READY (or DONE), fails when it says FAILED, panics
# outside a crash it was asked for, QEMU exits, or the timeout passes (then
# QEMU is killed). Sets boot_seconds.
wait_ready() {
    local prefix=$1 log=$2 start=$SECONDS shown=0 lines=() text
    while :; do
        # One read of the log for every check below: the guest's "crashing"
        # line and the panic after it may land between two reads.
        text=$(tr -d '\r' < "$log" 2> /dev/null || true)
        mapfile -t lines < <(grep -a "^$prefix:" <<< "$text")
        for (( ; shown < ${#lines[@]}; shown++)); do
            printf '[%3d s] %s\n' $((SECONDS - start)) "${lines[shown]}"
        done
        # Searched as a here-string, not through a pipe: grep -q leaves at
        # its first match, and a printf still writing more than a pipe's
        # buffer then dies of SIGPIPE, which pipefail made a failed search
        # (a riscv64 guest, whose lines run past 4 KiB, was taken for one
        # that panicked before its crash).
        local said
        said=$(printf '%s\n' "${lines[@]}")
        if grep -qxE "$prefix: (READY|DONE)" <<< "$said"; then
            boot_seconds=$((SECONDS - start))
            return 0
        fi
        if grep -q "^$prefix: FAILED" <<< "$said" ||
            { grep -qa 'Kernel panic' <<< "$text" && ! grep -q "^$prefix: crashing" <<< "$said"; }; then
            tail -n 30 "$log" >&2
            die "the guest failed; the serial log's last lines are above"
        fi
        if ! kill -0 "$qpid" 2> /dev/null; then
            cat "$work/qemu.out" >&2
            tail -n 30 "$log" >&2
            die "QEMU exited before the guest said READY or DONE"
        fi
        if ((SECONDS - start >= qemu_timeout)); then
            kill "$qpid" 2> /dev/null || true
            tail -n 30 "$log" >&2
            die "the guest was not done after $qemu_timeout s: QEMU killed (the serial log's last lines are above; --timeout to wait longer)"
        fi
        sleep 0.5
    done
}

# dump_guest PREFIX ELF: runs "${qemu[@]}" (its -serial file:$work/serial.log,
# its -qmp unix:$work/qmp.sock) in the background, waits for PREFIX: READY
# (wait_ready), then stops the VM, so the dump is one consistent moment,
# has QEMU write its memory as an ELF core into ELF over QMP, and quits.
# The serial log is kept as $cache/$fixture.serial.log.
dump_guest() {
    local prefix=$1 elf=$2 log=$work/serial.log
    echo "${qemu[*]}"
    : > "$log"
    # timeout(1) as a net: QEMU dies even if this script is killed outright.
    timeout --kill-after=10 $((qemu_timeout + 300)) "${qemu[@]}" > "$work/qemu.out" 2>&1 &
    qpid=$!
    wait_ready "$prefix" "$log"
    python3 scripts/lib/qmp.py "$work/qmp.sock" stop \
        dump-guest-memory "{\"paging\": false, \"protocol\": \"file:$elf\", \"format\": \"elf\"}" \
        quit | tee "$work/qmp.log"
    wait "$qpid" || true
    qpid=
    cp "$log" "$cache/$fixture.serial.log"
    chmod 0644 "$elf"
}

# print_timings START: each step's seconds and the total since START, also
# added to the fixture's info file.
print_timings() {
    echo "== timings"
    printf '%s\n' "${timings[@]}" "$(printf '%-10s %4d s' total $((SECONDS - $1)))" |
        tee -a "$cache/$fixture.info"
}

# ---- the reference ------------------------------------------------------------------
# run_makedumpfile NAME ARGS...: runs it in the reference folder (relative
# names, so the reports name no host path), stdout and stderr kept apart,
# with its exit status and time.
run_makedumpfile() {
    local name=$1 start=$EPOCHREALTIME rc=0
    shift
    (cd "$ref" && "${mdf[@]}" "$@" > "$name.stdout.txt" 2> "$name.stderr.txt") || rc=$?
    printf '%s: exit %d, %s s: makedumpfile %s\n' "$name" "$rc" \
        "$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}')" "$*" | tee -a "$ref/runs.txt"
}

# The report part of makedumpfile's output, as ../shared/fixtures/expected has it.
report_of() {
    sed -n '/^Original pages/,/^Total pages/p' "$1"
}

vmcoreinfo_value() { sed -n "s/^$1=//p" "$cache/$fixture.vmcoreinfo"; }

# libkdumpfile_read FILE: what libkdumpfile (python3-libkdumpfile) makes of
# a vmcore or dump: its attributes, and init_uts_ns read through the
# kernel's page tables (at the kernel virtual address VMCOREINFO gives), as
# one JSON line.
libkdumpfile_read() {
    /usr/bin/python3 - "$1" "$(vmcoreinfo_value 'SYMBOL(init_uts_ns)')" \
        "$(vmcoreinfo_value 'OFFSET(uts_namespace.name)')" << 'EOF'
import json, sys, kdumpfile
d = kdumpfile.kdumpfile(sys.argv[1])
out = {}
for name in ("file.format", "arch.name", "arch.page_size", "linux.uts.release", "linux.uts.machine"):
    try:
        out[name] = str(d.attr[name])
    except Exception as e:
        out[name] = f"error: {type(e).__name__}: {e}"
uts, name = int(sys.argv[2], 16), int(sys.argv[3])
key = "init_uts_ns at KVADDR %#x: sysname, release" % uts
try:
    d.attr["addrxlat.ostype"] = "linux"
    # the utsname (sysname[65], nodename[65], release[65], ...) is at
    # OFFSET(uts_namespace.name) of VMCOREINFO
    raw = bytes(d.read(kdumpfile.KDUMP_KVADDR, uts + name, 3 * 65))
    out[key] = [raw[i:i + 65].split(b"\0")[0].decode() for i in (0, 130)]
except Exception as e:
    out[key] = f"error: {type(e).__name__}: {e}"
print(json.dumps(out))
EOF
}

# make_reference [INPUT]: makedumpfile's -l -d 1, -l -d 31 and --dump-dmesg
# of INPUT (default: the fixture's ELF, linked into the reference folder),
# their reports, page counts from the bitmaps, libkdumpfile's reading of
# the ELF and of both dumps.
make_reference() {
    local input=${1:-$fixture} level
    for level in 1 31; do
        run_makedumpfile "d$level" --message-level 22 -l -d "$level" "$input" "d$level.kdump"
        report_of "$ref/d$level.stdout.txt" > "$ref/d$level.report.txt"
    done
    run_makedumpfile dmesg --dump-dmesg "$input" dmesg.txt
    {
        for level in 1 31; do
            [[ -s $ref/d$level.kdump ]] || { echo "d$level: no output"; continue; }
            echo "d$level bitmaps (tests/py/kdump_bitmap.py): $(/usr/bin/python3 tests/py/kdump_bitmap.py "$ref/d$level.kdump")"
            echo "d$level libkdumpfile vs the ELF (tests/py/compare_dump.py): $(/usr/bin/python3 tests/py/compare_dump.py \
                "$ref/d$level.kdump" "$elf" --excluded-ok 2>&1 || true)"
        done
        echo "libkdumpfile on the ELF: $(libkdumpfile_read "$elf" 2>&1 || true)"
        for level in 1 31; do
            echo "libkdumpfile on d$level.kdump: $(libkdumpfile_read "$ref/d$level.kdump" 2>&1 || true)"
        done
    } > "$ref/readers.txt"
    cat "$ref/readers.txt"
    summarize_reference > "$ref/summary.md"
    cat "$ref/summary.md"
}

# summarize_reference: one table line per dump level, in decimal: what
# makedumpfile's report counts, pages set in the output's 2nd bitmap, its
# size and time.
summarize_reference() {
    local level report pages wall
    # count LABEL: the report's hexadecimal count on that line, in decimal
    count() { printf '%d' "$(sed -n "s/^ *$1 *: \(0x[0-9a-f]*\)$/\1/p" "$report")"; }
    echo "| -d | comp | wall s | output bytes | pages in file | zero | cache | cache priv | user | free | remaining |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    for level in 1 31; do
        report=$ref/d$level.report.txt
        pages=$(/usr/bin/python3 tests/py/kdump_bitmap.py "$ref/d$level.kdump" |
            /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["pages_in_file"])')
        wall=$(sed -n "s/^d$level: exit 0, \([0-9.]*\) s:.*/\1/p" "$ref/runs.txt")
        printf '| %s | lzo | %s | %d | %d | %d | %d | %d | %d | %d | %d |\n' "$level" "$wall" \
            "$(stat -c %s "$ref/d$level.kdump")" "$pages" "$(count 'Pages filled with zero')" \
            "$(count 'Non-private cache pages')" "$(count 'Private cache pages')" \
            "$(count 'User process data pages')" "$(count 'Free pages')" "$(count 'Remaining pages')"
    done
}

install_reference() {
    local dest=$1
    mkdir -p "$dest"
    cp "$ref"/{version.txt,runs.txt,readers.txt,summary.md} "$dest/"
    cp "$ref"/*.std{out,err}.txt "$dest/"
    cp "$ref"/d{1,31}.report.txt "$ref/dmesg.txt" "$dest/"
    cp "$cache/$fixture.info" "$dest/info.txt"
    cp "$cache/$fixture.vmcoreinfo" "$dest/vmcoreinfo.txt"
    echo "reference results copied to $dest"
}
