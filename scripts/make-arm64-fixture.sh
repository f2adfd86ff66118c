#!/usr/bin/env bash
# Makes a real arm64 vmcore: Debian's own arm64 kernel booted under
# qemu-system-aarch64 (TCG) with a small deterministic workload, its memory
# dumped by QEMU (dump-guest-memory, ELF, paging off); then makedumpfile's
# reference results for it, from Debian's arm64 makedumpfile run through
# qemu-user, read back by the host's libkdumpfile.
#
#   1. host tools (apt-get): qemu-system-arm, qemu-user-static, the aarch64
#      cross compiler, ...
#   2. a second apt state for arm64 in target/arm64/apt (its own sources.list,
#      lists, cache and an empty dpkg status): the machine's apt sources and
#      dpkg architectures are left alone
#   3. apt-get download there: the kernel that linux-image-arm64 depends on,
#      busybox-static, makedumpfile and the libraries it needs (unpacked with
#      dpkg-deb -x, never installed)
#   4. an initramfs (tests/fixtures/arm64/guest/init, busybox, memfill built
#      from tests/capture/memfill.c) and an ext4 data disk for the page cache
#   5. boot, wait for READY on the serial console (QEMU is killed after
#      --timeout seconds), stop the VM, dump over QMP, quit
#   6. checks (VMCOREINFO note, KERNELOFFSET against kallsyms), the info
#      file, zstd
#   7. makedumpfile -l -d 1 and -d 31, --dump-dmesg; page counts from the
#      bitmaps; libkdumpfile reads the ELF and the dumps
#
# Usage: scripts/make-arm64-fixture.sh [--name NAME] [--timeout SECONDS]
#            [--nokaslr] [--cpu MODEL] [--kernel PACKAGE] [--zstd-level N] [--refresh]
#            [--no-reference] [--install-expected]
#   --name              the fixture's name (default vmcore-arm64)
#   --timeout           kill QEMU when the guest is not READY after this many
#                       seconds (default 600)
#   --nokaslr           boot with nokaslr (default: KASLR, seeded by QEMU's DT)
#   --cpu               QEMU CPU model (default max,pauth-impdef=on: every
#                       feature TCG has, with the cheap pointer-auth hash;
#                       cortex-a57 has 44 physical address bits, so the
#                       kernel randomises its linear map too)
#   --kernel            the arm64 kernel package (default: the one
#                       linux-image-arm64 depends on)
#   --zstd-level        zstd's level for NAME.zst (default 9: 5 s; 19
#                       saves a tenth and takes 2.5 minutes)
#   --refresh           apt-get update the arm64 lists even when under a day old
#   --no-reference      stop after the fixture (no makedumpfile runs)
#   --install-expected  copy the reference results to
#                       tests/fixtures/arm64/expected/NAME
# As root. Results in target/arm64: NAME (the ELF as QEMU wrote it),
# NAME.zst, NAME.info, NAME.vmcoreinfo, NAME.serial.log, NAME.reference/
# (makedumpfile's outputs and reports). Downloads stay in target/arm64
# (apt/, debs/, the unpacked kernel, busybox and sysroot) between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
source scripts/lib/debian.sh
source scripts/lib/fixture.sh
export PYTHONDONTWRITEBYTECODE=1

cache=$PWD/target/arm64
fixture=vmcore-arm64 zstd_level=9 qemu_timeout=600 kaslr=1 cpu=max,pauth-impdef=on kernel_pkg='' refresh=0 reference=1 install_expected=0
while (($#)); do
    case $1 in
        --timeout) qemu_timeout=$2; shift 2 ;;
        --name) fixture=$2; shift 2 ;;
        --nokaslr) kaslr=0; shift ;;
        --zstd-level) zstd_level=$2; shift 2 ;;
        --cpu) cpu=$2; shift 2 ;;
        --kernel) kernel_pkg=$2; shift 2 ;;
        --refresh) refresh=1; shift ;;
        --no-reference) reference=0; shift ;;
        --install-expected) install_expected=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "make-arm64-fixture.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

die() { echo "make-arm64-fixture: FAILED: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "run as root (apt-get, mknod for the initramfs)"


host_tools() {
    apt_ensure qemu-system-aarch64:qemu-system-arm qemu-aarch64-static:qemu-user-static \
        aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu cpio:cpio mke2fs:e2fsprogs modprobe:kmod \
        zstd:zstd readelf:binutils timeout:coreutils py/kdumpfile:python3-libkdumpfile
    # A static memfill needs the cross libc's libc.a, only a Recommends of
    # the cross compiler.
    [[ -e /usr/aarch64-linux-gnu/lib/libc.a ]] || install_package libc6-dev-arm64-cross
}

# ---- the arm64 apt state ----------------------------------------------------
# Everything apt reads or writes for arm64 lives under target/arm64/apt
# (scripts/lib/debian.sh): the bookworm suites, as the machine's own sources
# (security updates included, so the kernel is the one linux-image-amd64
# gets here: the x86_64 fixtures' 6.1 kernel), for arm64.
setup_apt() {
    ((refresh)) && rm -f "$cache/apt/sources.list"
    apt_state "$cache/apt" arm64 bookworm
}

# Sets kernel_pkg, kver, kroot (the unpacked package, with modules.dep).
fetch_arm64_kernel() {
    fetch_kernel "$cache" "$kernel_pkg"
    # The kernel's own word on what the fixture must handle.
    grep -E '^CONFIG_(ARM64_PAGE_SHIFT|ARM64_VA_BITS|ARM64_PA_BITS|PGTABLE_LEVELS|RANDOMIZE_BASE|FW_CFG_SYSFS)=' \
        "$kconfig" | tr '\n' ' '
    echo
}

# ---- the guest ----------------------------------------------------------------
build_initramfs() {
    # crc32c first: ext4 asks for it by name (a soft dependency).
    build_guest_initramfs aarch64-linux-gnu-gcc tests/fixtures/arm64/guest/init \
        qemu_fw_cfg virtio_mmio virtio_blk crc32c_generic ext4
}

# The data disk (scripts/lib/fixture.sh), with its own UUID.
make_disk() { make_data_disk 61726d36-342d-6669-7874; }

# ---- boot and dump ---------------------------------------------------------------

boot_and_dump() {
    local log=$work/serial.log qmp_sock=$work/qmp.sock
    elf=$cache/$fixture
    rm -f "$elf" "$elf.zst"
    local append="console=ttyAMA0 panic=-1 loglevel=6"
    ((kaslr)) || append+=" nokaslr"
    # -M virt: dtb-randomness is on by default in QEMU 7.2, so the DT's
    # /chosen has a kaslr-seed (and rng-seed) and the kernel randomises its
    # base. The console is a file (not -nographic's stdio) so this script
    # can read it while QEMU runs in the background.
    # shellcheck disable=SC2054 # the commas are inside single arguments
    qemu=(qemu-system-aarch64 -M virt -cpu "$cpu" -accel tcg -m 256M -smp 1
        -nodefaults -display none -no-reboot -serial "file:$log"
        -kernel "$vmlinuz" -initrd "$work/initrd.gz" -append "$append"
        -device vmcoreinfo
        -drive "if=none,id=data,file=$data_img,format=raw,snapshot=on"
        -device virtio-blk-device,drive=data
        -qmp "unix:$qmp_sock,server=on,wait=off")
    dump_guest ARM64 "$elf"
}

# ---- checks and info ---------------------------------------------------------------

check_and_describe() {
    readelf -n -W "$elf" | grep -q VMCOREINFO || die "$elf has no VMCOREINFO note (was qemu_fw_cfg loaded?)"
    python3 scripts/lib/elfcore.py vmcoreinfo "$elf" > "$cache/$fixture.vmcoreinfo"
    local offset stext_guest stext_info link kaslr_check
    offset=$(vmcoreinfo_value KERNELOFFSET)
    # Debian's System.map is a stub (the real one is in the -dbg package), so
    # the check is against the guest's own kallsyms: SYMBOL(_stext) must be
    # where the running kernel has _stext, and _stext - KERNELOFFSET is its
    # link-time address, which does not move.
    stext_guest=$(grep -a '^ARM64: kallsyms:' "$cache/$fixture.serial.log" | tr -d '\r' | grep -oE '[0-9a-f]{16} . _stext' | cut -c1-16 || true)
    stext_info=$(vmcoreinfo_value 'SYMBOL(_stext)')
    [[ -n $stext_guest && $stext_guest == "$stext_info" ]] ||
        die "SYMBOL(_stext)=$stext_info in VMCOREINFO, the guest's kallsyms says '${stext_guest}'"
    link=$(printf '%x' $((0x$stext_info - 0x$offset)))
    kaslr_check="SYMBOL(_stext) $stext_info equals the guest's kallsyms; link-time _stext = $link"
    {
        echo "arm64 vmcore fixture, made by scripts/make-arm64-fixture.sh on $(date -u +%F)"
        echo "kernel: $kernel_pkg $(candidate "$kernel_pkg") ($(vmcoreinfo_value OSRELEASE))"
        echo "kernel config: $(grep -E '^CONFIG_(ARM64_PAGE_SHIFT|ARM64_VA_BITS|ARM64_PA_BITS|PGTABLE_LEVELS|RANDOMIZE_BASE)=' \
            "$kconfig" | tr '\n' ' ')"
        echo "variant: cpu $cpu, $( ((kaslr)) && echo "KASLR on" || echo nokaslr)"
        echo "busybox-static: $busybox_version"
        echo "qemu: $(qemu-system-aarch64 --version | head -n 1)"
        local command="${qemu[*]}"
        command=${command//$work/\$WORK}
        echo "qemu command: ${command//$PWD\//}"
        echo "guest: $(grep -a '^ARM64: kernel page size' "$cache/$fixture.serial.log" | tr -d '\r')"
        echo "guest: $(grep -a '^ARM64: meminfo' "$cache/$fixture.serial.log" | tr -d '\r')"
        echo "page size: $(vmcoreinfo_value PAGESIZE)  VA_BITS: $(vmcoreinfo_value 'NUMBER(VA_BITS)')" \
            " TCR_EL1_T1SZ: $(vmcoreinfo_value 'NUMBER(TCR_EL1_T1SZ)')" \
            " (T1SZ = 64 - VA_BITS of the kernel half)"
        echo "KERNELOFFSET: 0x$offset ($( ((kaslr)) && echo "KASLR on" || echo "nokaslr")); $kaslr_check"
        echo "kimage_voffset: $(vmcoreinfo_value 'NUMBER(kimage_voffset)')  PHYS_OFFSET: $(vmcoreinfo_value 'NUMBER(PHYS_OFFSET)')"
        echo "swapper_pg_dir: $(vmcoreinfo_value 'SYMBOL(swapper_pg_dir)')  _stext: $(vmcoreinfo_value 'SYMBOL(_stext)')" \
            " mem_section: $(vmcoreinfo_value 'SYMBOL(mem_section)')  vmemmap: $(vmcoreinfo_value 'SYMBOL(vmemmap)')"
        echo "arm64 and layout keys of VMCOREINFO:"
        grep -E 'VA_BITS|TCR_EL1|KERNEL|kimage|PHYS_OFFSET|PAGESIZE|swapper_pg_dir|_stext|vmemmap|VMEMMAP|MODULES|VMALLOC|mem_section|SECTION_SIZE|MAX_PHYSMEM|SIZE\(page\)|PG_|PAGE_' \
            "$cache/$fixture.vmcoreinfo" | sed 's/^/  /'
        echo "ELF (scripts/lib/elfcore.py summary):"
        python3 scripts/lib/elfcore.py summary "$elf" | sed 's/^/  /'
        echo "readelf -n:"
        readelf -n -W "$elf" | awk '/^ +[A-Z]/ {print "  " $1, $2, $3, $4, $5}'
        echo "dump over QMP:"
        sed 's/^/  /' "$work/qmp.log"
        echo "boot to READY: $boot_seconds s"
    } > "$cache/$fixture.info"
    grep -E '^(kernel|page size|KERNELOFFSET|kimage)' "$cache/$fixture.info"
}


# ---- the reference: Debian's arm64 makedumpfile -----------------------------------
# As QEMU wrote it (e_phoff 192): what makedumpfile says about it; the
# reference runs read a copy with its program headers at 64.
make_arm64_reference() {
    new_reference
    run_makedumpfile qemu-layout --message-level 22 -l -d 1 "$fixture" qemu-layout.kdump
    python3 scripts/lib/elfcore.py phdrs-at-64 "$elf" "$ref/$fixture.phdr64"
    make_reference "$fixture.phdr64"
    rm -f "$ref/$fixture.phdr64" "$ref/$fixture"
}


main() {
    local start=$SECONDS
    work=$(mktemp -d /tmp/make-arm64-fixture.XXXXXX)
    trap cleanup EXIT
    mkdir -p "$cache"
    step tools host_tools
    step apt setup_apt
    step kernel fetch_arm64_kernel
    step busybox fetch_busybox
    if ((reference)); then step mdf-root fetch_makedumpfile "$cache" qemu-aarch64-static; fi
    step initramfs build_initramfs
    step disk make_disk
    step boot+dump boot_and_dump
    step check check_and_describe
    step zstd compress
    if ((reference)); then
        step reference make_arm64_reference
        if ((install_expected)); then install_reference "tests/fixtures/arm64/expected/$fixture"; fi
    fi
    print_timings "$start"
}

main
