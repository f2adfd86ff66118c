#!/usr/bin/env bash
# Makes a real s390x vmcore: Debian's own s390x kernel booted under
# qemu-system-s390x (TCG) with a small deterministic workload, its memory
# dumped by QEMU (dump-guest-memory, ELF, paging off), the VMCOREINFO note
# QEMU leaves out added from the guest's lowcore; then makedumpfile's
# reference results for it, from Debian's s390x makedumpfile run through
# qemu-user, read back by the host's libkdumpfile. (Debian's s390x kernels
# have no CONFIG_CRASH_DUMP, so there is no kdump fixture of s390x:
# docs/s390x.md.)
#
#   1. host tools (apt-get): qemu-system-misc, qemu-user-static, the s390x
#      cross compiler, ...
#   2. a second apt state for s390x in target/s390x/apt (its own sources.list,
#      lists, cache and an empty dpkg status): the machine's apt sources and
#      dpkg architectures are left alone
#   3. apt-get download there: the kernel that linux-image-s390x depends on,
#      busybox-static, makedumpfile and the libraries it needs (unpacked with
#      dpkg-deb -x, never installed)
#   4. an initramfs (tests/fixtures/s390x/guest/init, busybox, memfill built
#      from tests/capture/memfill.c) and an ext4 data disk for the page cache
#      (virtio-blk-ccw)
#   5. boot, wait for READY on the console (QEMU is killed after --timeout
#      seconds), stop the VM, dump over QMP, quit
#   6. the VMCOREINFO note added (scripts/lib/s390x_vmcoreinfo.py: found
#      through the lowcore's 0xe0c); checks (the note's address against the
#      guest's /sys/kernel/vmcoreinfo, SYMBOL(_stext) against kallsyms), the
#      info file, zstd
#   7. makedumpfile -l -d 1 and -d 31, --dump-dmesg; page counts from the
#      bitmaps; libkdumpfile reads the ELF and the dumps
#
# Usage: scripts/make-s390x-fixture.sh [--name NAME] [--timeout SECONDS]
#            [--memory SIZE] [--kernel PACKAGE] [--suite SUITE] [--judge debian|upstream|none]
#            [--zstd-level N] [--refresh]
#            [--no-reference] [--install-expected]
#   --name              the fixture's name (default vmcore-s390x)
#   --timeout           kill QEMU when the guest is not READY after this many
#                       seconds (default 600)
#   --memory            the guest's RAM, QEMU's -m (default 512M)
#   --kernel            the s390x kernel package (default: the one
#                       linux-image-s390x depends on)
#   --suite             the Debian release of the kernel (default bookworm;
#                       another's downloads stay in target/s390x-SUITE)
#   --judge             debian (bookworm's makedumpfile), upstream
#                       (upstream's newest commit, built static for s390x:
#                       scripts/lib/fixture.sh) or none (as --no-reference);
#                       default: debian for bookworm, upstream for the
#                       others (6.10 and later: the virtual layout, which
#                       bookworm's 1.7.2 does not read)
#   --zstd-level        zstd's level for NAME.zst (default 9)
#   --refresh           apt-get update the s390x lists even when under a day old
#   --no-reference      stop after the fixture (no makedumpfile runs)
#   --install-expected  copy the reference results to
#                       tests/fixtures/s390x/expected/NAME
# As root. Results in target/s390x: NAME (QEMU's ELF with the VMCOREINFO
# note added, program headers at 64), NAME.qemu (the ELF as QEMU wrote it,
# no VMCOREINFO note), NAME.zst, NAME.info, NAME.vmcoreinfo,
# NAME.serial.log, NAME.reference/ (makedumpfile's outputs and reports).
# Downloads stay in target/s390x (apt/, debs/, the unpacked kernel, busybox
# and sysroot) between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
source scripts/lib/debian.sh
source scripts/lib/fixture.sh
export PYTHONDONTWRITEBYTECODE=1

suite=bookworm judge='' fixture=vmcore-s390x zstd_level=9 qemu_timeout=600 memory=512M kernel_pkg='' refresh=0 reference=1 install_expected=0
while (($#)); do
    case $1 in
        --timeout) qemu_timeout=$2; shift 2 ;;
        --name) fixture=$2; shift 2 ;;
        --memory) memory=$2; shift 2 ;;
        --zstd-level) zstd_level=$2; shift 2 ;;
        --kernel) kernel_pkg=$2; shift 2 ;;
        --suite) suite=$2; shift 2 ;;
        --judge) judge=$2; shift 2 ;;
        --refresh) refresh=1; shift ;;
        --no-reference) reference=0; shift ;;
        --install-expected) install_expected=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "make-s390x-fixture.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

# bookworm's in target/s390x, another suite's in target/s390x-SUITE
cache=$PWD/target/s390x
[[ $suite == bookworm ]] || cache=$PWD/target/s390x-$suite

die() { echo "make-s390x-fixture: FAILED: $*" >&2; exit 1; }
[[ $suite == bookworm ]] && judge=${judge:-debian}
judge=${judge:-upstream}
case $judge in
    debian | upstream) ;;
    none) reference=0 ;;
    *) die "--judge $judge: debian, upstream or none" ;;
esac
((reference)) || judge=none
[[ $(id -u) -eq 0 ]] || die "run as root (apt-get, mknod for the initramfs)"

config_keys='^CONFIG_(KEXEC|CRASH_DUMP|RANDOMIZE_BASE|PGTABLE_LEVELS|SPARSEMEM_VMEMMAP|VIRTIO_CCW|VIRTIO_BLK)='

host_tools() {
    apt_ensure qemu-system-s390x:qemu-system-misc qemu-s390x-static:qemu-user-static \
        s390x-linux-gnu-gcc:gcc-s390x-linux-gnu cpio:cpio mke2fs:e2fsprogs modprobe:kmod \
        zstd:zstd readelf:binutils eu-readelf:elfutils timeout:coreutils py/kdumpfile:python3-libkdumpfile
    # A static memfill needs the cross libc's libc.a, only a Recommends of
    # the cross compiler.
    [[ -e /usr/s390x-linux-gnu/lib/libc.a ]] || install_package libc6-dev-s390x-cross
}

# ---- the s390x apt state ----------------------------------------------------
# Everything apt reads or writes for s390x lives under target/s390x/apt
# (scripts/lib/debian.sh): the suite's, security updates included.
setup_apt() {
    ((refresh)) && rm -f "$cache/apt/sources.list"
    apt_state "$cache/apt" s390x "$suite"
}

fetch_s390x_kernel() {
    fetch_kernel "$cache" "$kernel_pkg"
    grep -E "$config_keys" "$kconfig" | tr '\n' ' '
    grep -q '^CONFIG_CRASH_DUMP=y' "$kconfig" ||
        echo "(no CONFIG_CRASH_DUMP: the dump is QEMU's, not a /proc/vmcore)"
}

# The makedumpfile that judges: Debian's (bookworm's 1.7.2 reads kernels
# before 6.10), or upstream's newest, built against bookworm's s390x
# libraries (the archive this machine reaches has no trixie s390x libc6).
fetch_judge() {
    case $judge in
        debian) fetch_makedumpfile "$cache" qemu-s390x-static ;;
        upstream)
            apt_state "$PWD/target/s390x/apt" s390x bookworm
            build_upstream_makedumpfile "$PWD/target/s390x" qemu-s390x-static s390x-linux-gnu s390x
            apt_state "$cache/apt" s390x "$suite" ;;
    esac
}

# ---- the guest ----------------------------------------------------------------
build_initramfs() {
    # crc32c first: ext4 asks for it by name (a soft dependency). The
    # virtio-ccw transport is built in (CONFIG_S390_GUEST).
    build_guest_initramfs s390x-linux-gnu-gcc tests/fixtures/s390x/guest/init virtio_blk crc32c_generic ext4
}

make_disk() { make_data_disk 73333930-782d-6669-7874; }

# ---- boot and dump ---------------------------------------------------------------

boot_and_dump() {
    local log=$work/serial.log qmp_sock=$work/qmp.sock
    elf=$cache/$fixture qemu_elf=$cache/$fixture.qemu
    rm -f "$elf" "$elf.zst" "$qemu_elf"
    # The SCLP line console is -serial's chardev on s390-ccw-virtio. No
    # -device vmcoreinfo: it needs fw_cfg, which this machine has not.
    # shellcheck disable=SC2054 # the commas are inside single arguments
    qemu=(qemu-system-s390x -M s390-ccw-virtio -accel tcg -m "$memory" -smp 1
        -nodefaults -display none -no-reboot -serial "file:$log"
        -kernel "$vmlinuz" -initrd "$work/initrd.gz" -append "console=ttysclp0 panic=-1 loglevel=6"
        -drive "if=none,id=data,file=$data_img,format=raw,snapshot=on"
        -device virtio-blk-ccw,drive=data
        -qmp "unix:$qmp_sock,server=on,wait=off")
    dump_guest S390X "$qemu_elf"
}

# ---- the VMCOREINFO note, checks and info -------------------------------------------

add_vmcoreinfo() {
    # (QEMU 7.2 writes the section header of its string table in the wrong
    # byte order on a big-endian machine: readelf complains about it)
    readelf -n -W "$qemu_elf" 2> /dev/null | grep VMCOREINFO > /dev/null && die "QEMU's dump has a VMCOREINFO note already"
    python3 scripts/lib/s390x_vmcoreinfo.py lowcore "$qemu_elf" | tee "$work/lowcore.txt"
    python3 scripts/lib/s390x_vmcoreinfo.py add "$qemu_elf" "$elf"
    chmod 0644 "$elf"
    # Two readers that share no code with the helper (grep reads all: with
    # pipefail, grep -q's early exit would fail the reader).
    readelf -n -W "$elf" | grep 'VMCOREINFO *0x00000' > /dev/null || die "readelf finds no VMCOREINFO note in $elf"
    eu-readelf -n "$elf" | grep '^  VMCOREINFO ' > /dev/null || die "eu-readelf finds no VMCOREINFO note in $elf"
    readelf -l -W "$elf" | sed -n '/Program Headers/,$p'
    python3 scripts/lib/s390x_vmcoreinfo.py vmcoreinfo "$elf" > "$cache/$fixture.vmcoreinfo"
}

check_and_describe() {
    local note_addr guest stext_guest stext_info
    # The note's address in the lowcore is the one the guest's sysfs gave.
    note_addr=$(sed -n 's/^lowcore 0xe0c: 0x\([0-9a-f]*\):.*/\1/p' "$work/lowcore.txt")
    guest=$(grep -a '^S390X: vmcoreinfo:' "$cache/$fixture.serial.log" | tr -d '\r' | awk '{print $3}')
    [[ $((0x$note_addr)) -eq $((${guest:-0})) ]] ||
        die "the lowcore's 0xe0c gives $note_addr, the guest's /sys/kernel/vmcoreinfo '$guest'"
    stext_guest=$(grep -a '^S390X: kallsyms:' "$cache/$fixture.serial.log" | tr -d '\r' | grep -oE '[0-9a-f]{16} . _stext' | cut -c1-16 || true)
    stext_info=$(vmcoreinfo_value 'SYMBOL(_stext)')
    [[ -n $stext_guest && $((0x$stext_guest)) -eq $((0x$stext_info)) ]] ||
        die "SYMBOL(_stext)=$stext_info in VMCOREINFO, the guest's kallsyms says '${stext_guest}'"
    {
        echo "s390x vmcore fixture, made by scripts/make-s390x-fixture.sh on $(date -u +%F)"
        # DAT: the region and segment tables from swapper_pg_dir (docs/s390x.md §5).
        echo "kernel: $kernel_pkg $(candidate "$kernel_pkg") ($(vmcoreinfo_value OSRELEASE)), MMU dat"
        echo "page size: $(vmcoreinfo_value PAGESIZE)"
        echo "kernel config: $(grep -E "$config_keys" "$kconfig" | tr '\n' ' ')"
        echo "busybox-static: $busybox_version"
        echo "qemu: $(qemu-system-s390x --version | head -n 1)"
        local command="${qemu[*]}"
        command=${command//$work/\$WORK}
        echo "qemu command: ${command//$PWD\//}"
        echo "guest: $(grep -a '^S390X: vmcoreinfo' "$cache/$fixture.serial.log" | tr -d '\r')"
        echo "guest: $(grep -a '^S390X: meminfo' "$cache/$fixture.serial.log" | tr -d '\r')"
        echo "VMCOREINFO: $(cat "$work/lowcore.txt"); added as a note by scripts/lib/s390x_vmcoreinfo.py"
        echo "SYMBOL(_stext) $stext_info equals the guest's kallsyms; KERNELOFFSET: $(vmcoreinfo_value KERNELOFFSET)"
        echo "s390x and layout keys of VMCOREINFO:"
        grep -E 'KERNEL|PAGESIZE|swapper_pg_dir|_stext|lowcore|high_memory|MODE31|vmemmap|mem_section|SECTION_SIZE|MAX_PHYSMEM|SIZE\(page\)' \
            "$cache/$fixture.vmcoreinfo" | sed 's/^/  /'
        echo "ELF as QEMU wrote it ($fixture.qemu; scripts/lib/s390x_vmcoreinfo.py summary):"
        python3 scripts/lib/s390x_vmcoreinfo.py summary "$qemu_elf" | sed 's/^/  /'
        echo "ELF with the VMCOREINFO note ($fixture):"
        python3 scripts/lib/s390x_vmcoreinfo.py summary "$elf" | sed 's/^/  /'
        echo "readelf -n ($fixture):"
        readelf -n -W "$elf" | awk '/^ +[A-Z]/ {print "  " $1, $2, $3, $4, $5}'
        echo "dump over QMP:"
        sed 's/^/  /' "$work/qmp.log"
        echo "boot to READY: $boot_seconds s"
    } > "$cache/$fixture.info"
    grep -E '^(kernel|VMCOREINFO|SYMBOL)' "$cache/$fixture.info"
}

# ---- the reference: Debian's s390x makedumpfile -----------------------------------
# What makedumpfile says about the ELF as QEMU wrote it (no VMCOREINFO,
# e_phoff 192), then the reference runs on the ELF with the note.
make_s390x_reference() {
    new_reference
    ln -s "../$fixture.qemu" "$ref/$fixture.qemu"
    run_makedumpfile qemu-layout --message-level 22 -l -d 1 "$fixture.qemu" qemu-layout.kdump
    make_reference "$fixture"
    rm -f "$ref/$fixture" "$ref/$fixture.qemu"
}

main() {
    local start=$SECONDS
    work=$(mktemp -d /tmp/make-s390x-fixture.XXXXXX)
    trap cleanup EXIT
    mkdir -p "$cache"
    step tools host_tools
    step apt setup_apt
    step kernel fetch_s390x_kernel
    step busybox fetch_busybox
    if ((reference)); then step judge fetch_judge; fi
    step initramfs build_initramfs
    step disk make_disk
    step boot+dump boot_and_dump
    step note add_vmcoreinfo
    step check check_and_describe
    step zstd compress
    if ((reference)); then
        step reference make_s390x_reference
        if ((install_expected)); then install_reference "tests/fixtures/s390x/expected/$fixture"; fi
    fi
    print_timings "$start"
}

main
