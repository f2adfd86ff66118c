#!/usr/bin/env bash
# Makes a real vmcore of another architecture through kdump in the guest:
# Debian's kernel of that architecture booted under QEMU (TCG) with
# crashkernel=, the capture kernel loaded with Debian's kexec-tools
# (`kexec -p`), the workload of tests/fixtures/workload.sh, sysrq c; the
# capture kernel copies its /proc/vmcore to a disk the host reads. Then
# the reference results of that architecture's Debian makedumpfile, run
# through qemu-user, read back by the host's libkdumpfile.
#
#   1. host tools (apt-get): QEMU, qemu-user-static, the cross compiler
#   2. a second apt state for the architecture in target/kdump/ARCH/apt
#      (scripts/lib/debian.sh): the machine's apt sources are left alone
#   3. apt-get download there: the kernel, busybox-static, kexec-tools with
#      its libraries, makedumpfile's closure (unpacked, never installed)
#   4. two initramfs: the capture kernel's (busybox, the init, modules) and
#      the first kernel's (that, the kernel itself, the capture initramfs,
#      kexec and memfill); an ext4 data disk for the page cache
#   5. boot; wait for DONE on the console (QEMU is killed after --timeout)
#   6. the vmcore is the output disk cut to the size the capture kernel
#      gave; checks (VMCOREINFO note, OSRELEASE), the info file, zstd
#   7. makedumpfile -l -d 1 and -d 31, --dump-dmesg (scripts/lib/fixture.sh)
#
# Usage: scripts/make-kdump-fixture.sh --arch ppc64el|arm64|riscv64 [--mmu radix|hash]
#            [--name NAME] [--timeout SECONDS] [--suite SUITE] [--kernel PACKAGE]
#            [--zstd-level N] [--refresh] [--no-reference] [--install-expected]
#   --arch              ppc64el (pseries, 64 KiB pages) or arm64 (virt,
#                       4 KiB pages; kexec-tools is shown a kallsyms with
#                       _text, which Debian's arm64 kernels leave out)
#                       or riscv64 (virt, Sv57 on QEMU's rv64; kexec-tools
#                       from sid, shown an /proc/iomem and a kallsyms it
#                       gets the vmcore right from; judged by upstream
#                       makedumpfile: scripts/lib/fixture.sh)
#   --mmu               ppc64el: radix (POWER9's default) or hash
#                       (disable_radix on the kernel command line)
#   --flavour           arm64: the kernel flavour, arm64 (4 KiB pages) or
#                       arm64-16k (Debian 13 and later: 16 KiB pages; the
#                       suite defaults to trixie)
#   --cpu               arm64: QEMU's CPU model (default
#                       max,pauth-impdef=on; its LPA2 gives a 16 KiB kernel
#                       52-bit VA, max,pauth-impdef=on,lpa2=off 47-bit)
#   --judge             debian (the suite's makedumpfile), upstream
#                       (upstream's newest commit, built static for the
#                       architecture: scripts/lib/fixture.sh) or none (as
#                       --no-reference); default: debian, upstream for
#                       riscv64 and arm64-16k, which Debian's misjudges or
#                       refuses
#   --name              the fixture's name (default vmcore-ARCH[-hash])
#   --timeout           kill QEMU when the guest is not DONE after this many
#                       seconds (default 1500)
#   --suite             the Debian release of the kernel (default bookworm;
#                       riscv64: trixie, the first release that has it)
#   --kernel            the kernel package (default: the one the flavour's
#                       meta package depends on)
#   --zstd-level        zstd's level for NAME.zst (default 9)
#   --refresh           apt-get update the lists even when under a day old
#   --no-reference      stop after the fixture (no makedumpfile runs)
#   --install-expected  copy the reference results to
#                       tests/fixtures/kdump/expected/NAME
# As root. Results in target/kdump/ARCH (arm64-16k: target/kdump/arm64-16k): NAME (the capture kernel's
# /proc/vmcore), NAME.zst, NAME.info, NAME.vmcoreinfo, NAME.serial.log,
# NAME.reference/. Downloads stay there between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
source scripts/lib/debian.sh
source scripts/lib/fixture.sh
export PYTHONDONTWRITEBYTECODE=1

arch='' mmu=radix flavour='' cpu='' judge='' fixture='' zstd_level=9 qemu_timeout=1500 suite='' kernel_pkg='' refresh=0 reference=1 install_expected=0
while (($#)); do
    case $1 in
        --arch) arch=$2; shift 2 ;;
        --mmu) mmu=$2; shift 2 ;;
        --flavour) flavour=$2; shift 2 ;;
        --cpu) cpu=$2; shift 2 ;;
        --judge) judge=$2; shift 2 ;;
        --name) fixture=$2; shift 2 ;;
        --timeout) qemu_timeout=$2; shift 2 ;;
        --suite) suite=$2; shift 2 ;;
        --kernel) kernel_pkg=$2; shift 2 ;;
        --zstd-level) zstd_level=$2; shift 2 ;;
        --refresh) refresh=1; shift ;;
        --no-reference) reference=0; shift ;;
        --install-expected) install_expected=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "make-kdump-fixture.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

die() { echo "make-kdump-fixture: FAILED: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "run as root (apt-get, mknod for the initramfs)"

[[ -z $flavour || $arch == arm64 ]] || die "--flavour is for arm64"
# What each architecture needs: the kernel flavour's meta package, QEMU's
# system and user emulators, the cross compiler (for memfill), the
# console, QEMU's machine and the guest's RAM and crashkernel=.
case $arch in
    ppc64el)
        flavour=powerpc64le qemu_system=qemu-system-ppc64:qemu-system-ppc
        qemu_user=qemu-ppc64le-static cross=powerpc64le-linux-gnu console=hvc0
        # pseries: the console is the spapr VTY QEMU makes for -serial;
        # POWER9 uses the radix MMU unless the kernel is told disable_radix.
        machine=(-M pseries -cpu power9 -m 1G) crashkernel=384M
        case $mmu in
            radix) mmu_append='' ;;
            hash) mmu_append=' disable_radix' ;;
            *) die "--mmu $mmu: radix or hash" ;;
        esac
        ;;
    arm64)
        flavour=${flavour:-arm64} qemu_system=qemu-system-aarch64:qemu-system-arm
        qemu_user=qemu-aarch64-static cross=aarch64-linux-gnu console=ttyAMA0 mdf_target=aarch64
        # Every feature TCG has, with the cheap pointer-auth hash; KASLR
        # seeded by QEMU's device tree.
        machine=(-M virt -cpu "${cpu:-max,pauth-impdef=on}" -m 1G) crashkernel=256M
        [[ $mmu == radix ]] || die "--mmu is for ppc64el"
        mmu=va mmu_append=''  # the VA width: NUMBER(VA_BITS), once booted
        case $flavour in
            arm64) ;;
            # Debian 13's makedumpfile (1.7.6) refuses 16 KiB kernels.
            arm64-16k) default_suite=trixie default_judge=upstream ;;
            *) die "--flavour $flavour: arm64 or arm64-16k" ;;
        esac
        ;;
    riscv64)
        flavour=riscv64 qemu_system=qemu-system-riscv64:qemu-system-misc
        qemu_user=qemu-riscv64-static cross=riscv64-linux-gnu console=ttyS0
        # QEMU's rv64 has Sv57, which the kernel takes; OpenSBI is QEMU's own.
        machine=(-M virt -m 1G) crashkernel=256M
        [[ $mmu == radix ]] || die "--mmu is for ppc64el"
        mmu=sv57 mmu_append='' default_suite=trixie
        # Debian 13 has no kexec-tools for riscv64: sid's. Its makedumpfile
        # (1.7.6) excludes no free page at -d 31 on 6.12: upstream's judges.
        kexec_suite=sid default_judge=upstream mdf_target=riscv64
        ;;
    '') die "--arch is required (ppc64el, arm64 or riscv64)" ;;
    *) die "--arch $arch: ppc64el, arm64 or riscv64" ;;
esac
suite=${suite:-${default_suite:-bookworm}} kexec_suite=${kexec_suite:-$suite} judge=${judge:-${default_judge:-debian}}
[[ -z $cpu || $arch == arm64 ]] || die "--cpu is for arm64"
case $judge in
    debian | upstream) ;;
    none) reference=0 ;;
    *) die "--judge $judge: debian, upstream or none" ;;
esac
((reference)) || judge=none
if [[ -z $fixture ]]; then
    fixture=vmcore-$arch
    [[ $mmu != hash ]] || fixture+=-hash
fi
# (arm64-16k has a cache of its own: its suite's apt state)
cache=$PWD/target/kdump/$arch
[[ $flavour != arm64-16k ]] || cache+=-16k


host_tools() {
    apt_ensure "${qemu_system}" "$qemu_user:qemu-user-static" "$cross-gcc:gcc-$cross" cpio:cpio \
        mke2fs:e2fsprogs modprobe:kmod zstd:zstd readelf:binutils timeout:coreutils \
        py/kdumpfile:python3-libkdumpfile
    # A static memfill needs the cross libc's libc.a, only a Recommends of
    # the cross compiler.
    [[ -e /usr/$cross/lib/libc.a ]] || apt_ensure "/usr/$cross/lib/libc.a:libc6-dev-$arch-cross"
}

setup_apt() {
    ((refresh)) && rm -f "$cache/apt/sources.list"
    apt_state "$cache/apt" "$arch" "$suite"
}

fetch_guest_kernel() {
    if [[ -z $kernel_pkg ]]; then
        kernel_pkg=$(apt_cache_in depends "linux-image-$flavour" | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
        [[ -n $kernel_pkg ]] || die "apt-cache finds no kernel package that linux-image-$flavour depends on"
    fi
    fetch_kernel "$cache" "$kernel_pkg"
    kernel_config | tr '\n' ' '
    echo
}

# The kernel's options that matter to kdump and to its page tables.
kernel_config() {
    grep -E '^CONFIG_(PPC_64K_PAGES|PPC_4K_PAGES|PPC_RADIX_MMU|ARM64_[0-9]+K_PAGES|ARM64_VA_BITS|KEXEC|KEXEC_FILE|CRASH_DUMP|RELOCATABLE|RANDOMIZE_BASE|PGTABLE_LEVELS)=' \
        "$kconfig"
}

# Unpacks busybox-static (scripts/lib/fixture.sh) and kexec-tools with the
# libraries kexec needs (its NEEDED entries and the ELF interpreter, from
# the closure's packages), kexec-tools from its own suite's apt state where
# the kernel's has none.
fetch_guest_tools() {
    fetch_busybox > /dev/null
    [[ $kexec_suite == "$suite" ]] || apt_state "$cache/apt-$kexec_suite" "$arch" "$kexec_suite"
    kexec_version=$(candidate kexec-tools)
    [[ -n $kexec_version ]] || die "no kexec-tools for $arch in $kexec_suite"
    kexec_root=$cache/kexec-tools-${kexec_version/:/%3a}
    if [[ ! -d $kexec_root ]]; then
        local pkg
        mkdir -p "$kexec_root.tmp"
        for pkg in $(depends_closure kexec-tools | grep -vxE 'debconf|debconf-2.0|cdebconf'); do
            dpkg-deb -x "$(fetch_deb "$cache/debs" "$pkg")" "$kexec_root.tmp"
        done
        mv "$kexec_root.tmp" "$kexec_root"
    fi
    [[ $kexec_suite == "$suite" ]] || apt_state "$cache/apt" "$arch" "$suite"
    for kexec_bin in "$kexec_root"/{sbin,usr/sbin}/kexec; do [[ -x $kexec_bin ]] && break; done
    [[ -x $kexec_bin ]] || die "kexec-tools has no sbin/kexec"
    echo "busybox-static $busybox_version, kexec-tools $kexec_version ($kexec_suite)"
}

# copy_with_libraries ROOT BIN TREE: BIN into TREE/sbin, and the shared
# libraries it needs from ROOT, theirs too (arm64's kexec links Xen's
# libraries, which link others), at the same paths in TREE.
copy_with_libraries() {
    local root=$1 bin=$2 tree=$3 lib path interp queue=() done=' '
    install -D -m 0755 "$bin" "$tree/sbin/${bin##*/}"
    interp=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
    queue=(${interp:+"${interp##*/}"} $(needed "$bin"))
    while ((${#queue[@]})); do
        lib=${queue[0]} queue=("${queue[@]:1}")
        [[ $done == *" $lib "* ]] && continue
        done+="$lib "
        path=$(cd "$root" && find . \( -type f -o -type l \) -name "$lib" | head -n 1)
        [[ -n $path ]] || die "no $lib for ${bin##*/} in $root"
        install -D -m 0755 "$(readlink -f "$root/$path")" "$tree/${path#./}"
        queue+=($(needed "$tree/${path#./}"))
    done
    if [[ -n $interp && ! -e $tree$interp ]]; then
        path=$(cd "$tree" && find . -name "${interp##*/}" | head -n 1)
        mkdir -p "$tree$(dirname "$interp")"
        ln -s "/${path#./}" "$tree$interp"
    fi
}

# needed ELF: the shared libraries ELF names (its NEEDED entries).
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# The makedumpfile that judges: Debian's of the kernel's release, or
# upstream's newest where Debian's is wrong for the kernel.
fetch_judge() {
    case $judge in
        debian) fetch_makedumpfile "$cache" "$qemu_user" ;;
        upstream) build_upstream_makedumpfile "$cache" "$qemu_user" "$cross" "$mdf_target" ;;
    esac
}

# The capture kernel's initramfs, then the first kernel's around it.
build_initramfs() {
    local capture=$work/capture first=$work/first
    mkdir -p "$capture"/{bin,sbin,dev,proc,sys,tmp,data,modules}
    mknod -m 600 "$capture/dev/console" c 5 1
    install -m 0755 "$busybox_bin" "$capture/bin/busybox"
    install -m 0755 tests/fixtures/kdump/guest/init "$capture/init"
    install -m 0644 tests/fixtures/workload.sh "$capture/workload.sh"
    # crc32c first: ext4 asks for it by name (a soft dependency).
    copy_modules "$kroot" "$kver" "$capture/modules" virtio_pci virtio_blk crc32c_generic ext4
    make_cpio "$capture" > "$work/initrd-capture.gz"
    cp -a "$capture" "$first"
    mkdir -p "$first/boot"
    "$cross-gcc" -O2 -Wall -Werror -static -o "$first/bin/memfill" tests/capture/memfill.c
    copy_with_libraries "$kexec_root" "$kexec_bin" "$first"
    cp "$vmlinuz" "$first/boot/vmlinux"
    cp "$work/initrd-capture.gz" "$first/boot/initrd-capture.gz"
    make_cpio "$first" > "$work/initrd.gz"
    echo "initramfs: first kernel's $(stat -c %s "$work/initrd.gz") bytes," \
        "capture kernel's $(stat -c %s "$work/initrd-capture.gz"), modules: $(tr '\n' ' ' < "$capture/modules/order")"
}

# The data disk (scripts/lib/fixture.sh), with its own UUID.
make_disk() { make_data_disk 6b64756d-702d-6669-7874; }


boot_and_crash() {
    local log=$work/serial.log out_img=$cache/$fixture.disk size
    elf=$cache/$fixture
    rm -f "$elf" "$elf.zst"
    # The output disk: larger than the guest's RAM, sparse.
    rm -f "$out_img"
    truncate -s 1200M "$out_img"
    local append="console=$console crashkernel=$crashkernel panic=-1 loglevel=6$mmu_append"
    # shellcheck disable=SC2054 # the commas are inside single arguments
    qemu=("${qemu_system%%:*}" "${machine[@]}" -accel tcg -smp 1
        -nodefaults -display none -no-reboot -serial "file:$log"
        -kernel "$vmlinuz" -initrd "$work/initrd.gz" -append "$append"
        -drive "if=none,id=data,file=$data_img,format=raw,snapshot=on"
        -device virtio-blk-pci,drive=data,serial=data
        -drive "if=none,id=out,file=$out_img,format=raw"
        -device virtio-blk-pci,drive=out,serial=vmcore)
    echo "${qemu[*]}"
    : > "$log"
    timeout --kill-after=10 $((qemu_timeout + 300)) "${qemu[@]}" > "$work/qemu.out" 2>&1 &
    qpid=$!
    wait_ready KDUMP "$log"
    # The capture kernel powers off after DONE.
    local waited=0
    while kill -0 "$qpid" 2> /dev/null && ((waited++ < 120)); do sleep 0.5; done
    kill "$qpid" 2> /dev/null || true
    wait "$qpid" || true
    qpid=
    cp "$log" "$cache/$fixture.serial.log"
    size=$(grep -a '^KDUMP: vmcore: ' "$log" | tr -d '\r' | sed -n 's/^KDUMP: vmcore: \([0-9]*\) bytes.*/\1/p')
    [[ -n $size ]] || die "the capture kernel gave no vmcore size"
    truncate -s "$size" "$out_img"
    mv "$out_img" "$elf"
    chmod 0644 "$elf"
}

check_and_describe() {
    readelf -n -W "$elf" | grep -q VMCOREINFO || die "$elf has no VMCOREINFO note"
    python3 scripts/lib/elfcore.py vmcoreinfo "$elf" > "$cache/$fixture.vmcoreinfo"
    local release
    release=$(vmcoreinfo_value OSRELEASE)
    # arm64: the VA width the kernel runs with (64 - T1SZ: a 52-bit kernel
    # falls back to 47 or 48 bits without LPA2), else the one it is built for.
    local t1sz
    t1sz=$(vmcoreinfo_value 'NUMBER(TCR_EL1_T1SZ)')
    [[ $mmu != va ]] || mmu=va$( ((t1sz)) && echo $((64 - t1sz)) || vmcoreinfo_value 'NUMBER(VA_BITS)')
    [[ $release == "$kver" ]] || die "OSRELEASE=$release in VMCOREINFO, the kernel is $kver"
    {
        echo "$arch vmcore fixture (kdump in the guest), made by scripts/make-kdump-fixture.sh on $(date -u +%F)"
        echo "kernel: $kernel_pkg $(candidate "$kernel_pkg") ($release), MMU $mmu"
        echo "kernel config: $(kernel_config | tr '\n' ' ')"
        echo "busybox-static: $busybox_version  kexec-tools: $kexec_version ($kexec_suite)"
        echo "qemu: $("${qemu_system%%:*}" --version | head -n 1)"
        local command="${qemu[*]}"
        command=${command//$work/\$WORK}
        echo "qemu command: ${command//$PWD\//}"
        grep -a '^KDUMP: ' "$cache/$fixture.serial.log" | tr -d '\r' | grep -E 'page size|mmu|kallsyms|crashkernel|meminfo|capture kernel' |
            sed 's/^KDUMP: /guest: /'
        echo "page size: $(vmcoreinfo_value PAGESIZE)"
        echo "layout keys of VMCOREINFO:"
        grep -E 'KERNEL|PAGESIZE|RADIX|mmu_|vmemmap|VMEMMAP|MODULES|VMALLOC|mem_section|SECTION_SIZE|MAX_PHYSMEM|swapper|_stext|SIZE\(page\)' \
            "$cache/$fixture.vmcoreinfo" | sed 's/^/  /'
        echo "ELF (scripts/lib/elfcore.py summary):"
        python3 scripts/lib/elfcore.py summary "$elf" | sed 's/^/  /'
        echo "boot to DONE: $boot_seconds s"
    } > "$cache/$fixture.info"
    grep -E '^(kernel|page size|guest: mmu)' "$cache/$fixture.info"
}


reference_of_vmcore() {
    new_reference
    make_reference "$fixture"
    rm -f "$ref/$fixture"
}

main() {
    local start=$SECONDS
    work=$(mktemp -d /tmp/make-kdump-fixture.XXXXXX)
    trap cleanup EXIT
    mkdir -p "$cache"
    step tools host_tools
    step apt setup_apt
    step kernel fetch_guest_kernel
    step guest-tools fetch_guest_tools
    if ((reference)); then step judge fetch_judge; fi
    step initramfs build_initramfs
    step disk make_disk
    step boot+crash boot_and_crash
    step check check_and_describe
    step zstd compress
    if ((reference)); then
        step reference reference_of_vmcore
        if ((install_expected)); then install_reference "tests/fixtures/kdump/expected/$fixture"; fi
    fi
    print_timings "$start"
}

main
