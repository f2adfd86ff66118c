#!/usr/bin/env bash
# Proves, in a throwaway Debian 12 chroot and with Debian's own tools
# (apt, dpkg, dpkg-divert, mkinitramfs, dracut), that:
#
#   1. the packages of scripts/build-deb.sh install, upgrade, remove and purge
#      cleanly: vmdump-makedumpfile diverts Debian's makedumpfile, so that
#      kdump-tools' `command -v makedumpfile` finds vmdump, and its removal
#      gives the original back byte for byte; installing, reinstalling and
#      removing Debian's makedumpfile while diverted, and installing
#      vmdump-makedumpfile without it, behave; after the purge no file is left;
#   2. the initramfs-tools hook puts a working vmdump into kdump-tools' initrd
#      (and only there unless asked): unpacked, the image runs vmdump, which
#      lists its plugins, dumps a synthetic vmcore with a plugin and the real
#      vmcore of ../shared/fixtures with kdump-tools' command line, each dump
#      verified by the host; an S3 key beside the profile goes with it, 0600
#      and root's as on the system (issue 42);
#   3. the dracut module does the same in an initramfs built as kdump-utils'
#      mkdumprd builds it (kdumpbase, here a stand-in that installs
#      /sbin/makedumpfile as the real one does), with the S3 key 0600, and
#      stays out of others.
#
# Usage: scripts/test-packages.sh [--debs DIR] [--no-build] [--keep] [--refresh-cache]
#   --debs DIR       test the .deb files in DIR instead of building them
#   --no-build       build the packages from the binaries already in target/release
#   --keep           keep the chroot (a copy of the cached tree in target/pkgtest/run/root,
#                    not an overlay on it) even when every check passed
#   --refresh-cache  bootstrap the cached Debian tree anew
# Runs as root. The first run bootstraps Debian 12 (minbase) from
# deb.debian.org into target/pkgtest/cache (360 MB) and downloads the
# packages the test installs; later runs put an overlay on that tree and need
# no network.
# Ends with "test-packages: N passed, M failed"; exit status 0 when none failed.
set -euo pipefail
SELF=$(realpath "$0")
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
source scripts/lib/chroot.sh
source scripts/lib/checks.sh # ok, check, step, summary
CHECKS_NAME=test-packages

MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
# Bump when the cached tree must change (its packages, its setup).
CACHE_KEY="5 $SUITE minbase; installed: initramfs-tools zstd dracut-core; downloaded: makedumpfile"
# VMDUMP_PKGTEST_CACHE: a cache outside the work tree, e.g. one that outlives CI's fresh clones.
CACHE=${VMDUMP_PKGTEST_CACHE:-target/pkgtest/cache}
BASE=$CACHE/$SUITE
RUN=target/pkgtest/run
ROOT=$RUN/root
LOGS=target/pkgtest/logs
# A kernel version for the images: a modules directory and a config of its own
# (mkinitramfs reads /boot/config-KVER for its compressor), no real kernel.
KVER=6.1.0-0-vmdumptest
KDUMP_PATH=/bin:/usr/bin:/sbin:/usr/sbin # kdump-config's PATH
HOST_VMDUMP=target/release/vmdump
UPGRADE_VERSION=999+upgradetest # higher than any version build-deb.sh makes

debs_dir='' build_args=() keep=0 refresh=0

parse_args() {
    while (($#)); do
        case $1 in
            --debs) debs_dir=$2; shift 2 ;;
            --no-build) build_args+=(--no-build); shift ;;
            --keep) keep=1; shift ;;
            --refresh-cache) refresh=1; shift ;;
            -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
            *) echo "test-packages.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        esac
    done
}

# ---- reporting -------------------------------------------------------------

now() { date +%s; }
phase_start=''
# phase TITLE: ends the phase before (with its time) and starts one.
phase() {
    [[ -z $phase_start ]] || printf '   (%ds)\n' $(($(now) - phase_start))
    printf '\n== %s\n' "$*"
    phase_start=$(now)
}

# ---- the host --------------------------------------------------------------

require_root() {
    [[ $(id -u) == 0 ]] || { echo "test-packages.sh: run as root (chroot, mount, debootstrap)" >&2; exit 1; }
}

# Everything below mounts (proc, a /dev of its own) inside the chroot: do it in
# a private mount namespace, so that no mount is seen from the host or outlives
# this script, whatever stops it.
enter_mount_namespace() {
    if [[ -z ${VMDUMP_PKGTEST_NS-} ]]; then
        VMDUMP_PKGTEST_NS=1 exec unshare --mount --propagation private -- "$SELF" "$@"
    fi
}

ensure_host_tools() {
    # zstd: to decompress the fixtures (prepare_fixtures)
    apt_ensure debootstrap:debootstrap zstd:zstd
}

# The version of the workspace ([workspace.package] in Cargo.toml), as build-deb.sh reads it.
workspace_version() {
    awk '/^\[/ { in_ws = ($0 == "[workspace.package]") }
         in_ws && /^version *=/ { gsub(/.*= *"|".*/, ""); print; exit }' Cargo.toml
}

# one_deb DIR PACKAGE: the one .deb of PACKAGE in DIR (of the workspace's
# version when there are several).
one_deb() {
    local debs=("$1/$2"_*.deb)
    if ((${#debs[@]} > 1)); then
        debs=("$1/$2_$(workspace_version)"_*.deb)
    fi
    [[ ${#debs[@]} == 1 && -f ${debs[0]} ]] || { echo "test-packages.sh: no single $2 .deb in $1: ${debs[*]}" >&2; return 1; }
    echo "${debs[0]}"
}

build_debs() {
    if [[ -z $debs_dir ]]; then
        scripts/build-deb.sh "${build_args[@]}" --out target/debian
        debs_dir=target/debian
    fi
    VMDUMP_DEB=$(one_deb "$debs_dir" vmdump)
    MKD_DEB=$(one_deb "$debs_dir" vmdump-makedumpfile)
    [[ -x $HOST_VMDUMP ]] || { echo "test-packages.sh: $HOST_VMDUMP is needed to make and verify dumps" >&2; exit 1; }
}

# ---- chroots (helpers in scripts/lib/chroot.sh) ------------------------------

r() { in_chroot "$ROOT" "$@"; }
# Offline: every package the test installs was downloaded into the cache.
apt_r() { apt_in "$ROOT" --no-download "$@"; }
# Local .deb files: apt resolves their Depends from what is installed
# (--no-download would refuse to "fetch" the local files, an apt quirk).
apt_local() { apt_in "$ROOT" "$@"; }

bootstrap() {
    local new=$BASE.new
    remove_tree "$new"
    mkdir -p "$CACHE"
    debootstrap --variant=minbase "$SUITE" "$new" "$MIRROR"
    mount_api "$new"
    # No service may start in a chroot.
    printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
    chmod 0755 "$new/usr/sbin/policy-rc.d"
    cp /etc/resolv.conf "$new/etc/resolv.conf"
    apt_in "$new" update
    # zstd: initramfs-tools' default compressor (a Recommends of it)
    apt_in "$new" install initramfs-tools zstd dracut-core
    # makedumpfile is installed by the test itself; its .deb (and those of its
    # dependencies) stay in /var/cache/apt/archives for the offline runs.
    apt_in "$new" install --download-only makedumpfile
    mkdir -p "$new/lib/modules/$KVER"
    : >"$new/lib/modules/$KVER/modules.order"
    : >"$new/lib/modules/$KVER/modules.builtin"
    printf 'CONFIG_RD_GZIP=y\nCONFIG_RD_ZSTD=y\n' >"$new/boot/config-$KVER"
    # The files depmod makes there, made now, so that the tree compares equal after the test.
    in_chroot "$new" depmod "$KVER"
    unmount_under "$new"
    remove_tree "$BASE"
    mv "$new" "$BASE"
    echo "$CACHE_KEY" >"$BASE.key"
}

ensure_base() {
    if ((refresh)) || [[ ! -d $BASE || $(cat "$BASE.key" 2>/dev/null) != "$CACHE_KEY" ]]; then
        phase "bootstrapping Debian $SUITE into $BASE (cached for later runs)"
        step "debootstrap $SUITE and the packages the test needs" bootstrap
    fi
}

# The test's root: an overlay on the cached tree (no copy; the cache stays
# pristine), or a copy of it with --keep or where overlayfs is not to be had.
fresh_root() {
    remove_tree "$RUN"
    mkdir -p "$RUN/upper" "$RUN/work" "$ROOT"
    if ((keep)) || ! mount -t overlay overlay \
        -o "lowerdir=$(realpath "$BASE"),upperdir=$(realpath "$RUN/upper"),workdir=$(realpath "$RUN/work")" "$ROOT"; then
        rmdir "$ROOT"
        cp -a "$BASE" "$ROOT"
    fi
    mount_api "$ROOT"
    mkdir -p "$ROOT/tmp/debs"
    cp "$VMDUMP_DEB" "$MKD_DEB" "$ROOT/tmp/debs/"
    chmod 0644 "$ROOT"/tmp/debs/*.deb
}

# ---- assertions --------------------------------------------------------------

sha_of() { sha256sum <"$ROOT$1" | cut -d' ' -f1; }

same_as_original() {
    [[ -f $ROOT$1 && ! -L $ROOT$1 ]] || { echo "$1 is not a regular file"; ls -l "$ROOT$1"; return 1; }
    [[ $(sha_of "$1") == "$ORIG_SHA" ]] || { echo "sha256 of $1 differs from the original makedumpfile"; return 1; }
}

absent() {
    local p
    for p; do
        if [[ -e $ROOT$p || -L $ROOT$p ]]; then echo "$p exists"; return 1; fi
    done
}

# `command -v makedumpfile` with kdump-config's PATH, fully resolved, is $1.
makedumpfile_resolves_to() {
    local found
    found=$(r sh -c "PATH=$KDUMP_PATH; readlink -f \"\$(command -v makedumpfile)\"") || true
    [[ $found == "$1" ]] || { echo "makedumpfile resolves to '$found', not $1"; return 1; }
}

# makedumpfile -v, run as kdump-config runs it, answers with the pattern $1.
makedumpfile_answers() {
    local out
    out=$(r sh -c "PATH=$KDUMP_PATH; makedumpfile -v" 2>&1) || { echo "$out"; return 1; }
    grep -q -- "$1" <<<"$out" || { echo "makedumpfile -v said:"; echo "$out"; return 1; }
}

diverted() {
    local list
    list=$(r dpkg-divert --list)
    if ! grep -qxF "diversion of /usr/bin/makedumpfile to /usr/bin/makedumpfile.distrib by vmdump-makedumpfile" <<<"$list" ||
        ! grep -qxF "diversion of /usr/sbin/makedumpfile to /usr/sbin/makedumpfile.distrib by vmdump-makedumpfile" <<<"$list"; then
        echo "dpkg-divert --list:"; echo "$list"; return 1
    fi
}

not_diverted() {
    local list
    list=$(r dpkg-divert --list)
    ! grep -q makedumpfile <<<"$list" || { echo "dpkg-divert --list:"; echo "$list"; return 1; }
}

package_state() {
    local state
    # shellcheck disable=SC2016 # a dpkg-query format, not a shell expression
    state=$(r dpkg-query -W -f '${db:Status-Abbrev}' "$1" 2>/dev/null) || state='(unknown)'
    [[ ${state%% *} == "$2" ]] || { echo "$1 is '$state', not $2"; return 1; }
}
# Purged: dpkg knows nothing of it, or only the name (state "un").
not_installed() {
    local state
    # shellcheck disable=SC2016 # a dpkg-query format
    state=$(r dpkg-query -W -f '${db:Status-Abbrev}' "$1" 2>/dev/null) || return 0
    [[ ${state%% *} == un ]] || { echo "$1 is '$state'"; return 1; }
}

verified() { r dpkg --verify "$@"; }

# The tree's files, their types, modes, link targets and contents, less what
# dpkg and apt keep for themselves and the API mounts.
snapshot() {
    (cd "$ROOT" && find . -xdev \( -path ./proc -o -path ./dev -o -path ./sys -o -path ./run -o -path ./tmp \
        -o -path ./var/lib/dpkg -o -path ./var/lib/apt -o -path ./var/cache -o -path ./var/log \) -prune \
        -o -printf '%y %m %p -> %l\n' | LC_ALL=C sort
     find . -xdev \( -path ./proc -o -path ./dev -o -path ./sys -o -path ./run -o -path ./tmp \
        -o -path ./var/lib/dpkg -o -path ./var/lib/apt -o -path ./var/cache -o -path ./var/log \) -prune \
        -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
}

same_tree_as() {
    snapshot >"$RUN/after.txt"
    diff "$1" "$RUN/after.txt" >"$RUN/tree.diff" || { echo "the tree differs:"; head -n 40 "$RUN/tree.diff"; return 1; }
}

# Every file and symlink that dpkg -L listed (saved in $1) is gone, and so are
# the directories only vmdump had.
all_gone() {
    local p left=0
    while read -r p; do
        [[ -d $ROOT$p && ! -L $ROOT$p ]] && continue
        if [[ -e $ROOT$p || -L $ROOT$p ]]; then echo "left: $p"; left=1; fi
    done <"$1"
    absent /usr/lib/vmdump /usr/include/vmdump /usr/share/doc/vmdump /usr/lib/dracut/modules.d/95vmdump || left=1
    return "$left"
}

# ---- 1. packages and the diversion -----------------------------------------

edit_conffile() { printf '\n# changed by the administrator\n' >>"$ROOT/etc/vmdump/vmdump.toml"; }
conffile_kept() { grep -q '^# changed by the administrator' "$ROOT/etc/vmdump/vmdump.toml"; }
lists_plugins() {
    local out
    out=$(r vmdump plugins) || { echo "$out"; return 1; }
    for want in '^zlib .*built in' '^zstd .*built in' '^lzo .*built in' '^snappy .*built in' \
        'libvmdump_c_zlib.so' 'libvmdump_filter_pfn_ranges.so' 'libvmdump_filter_pattern.so' \
        'libvmdump_filter_erase.so' 'libvmdump_filter_keep_tasks.so' 'libvmdump_filter_drop_tasks.so' \
        '^system profile: /etc/vmdump/vmdump.toml$'; do
        grep -q -- "$want" <<<"$out" || { echo "no line matching '$want' in:"; echo "$out"; return 1; }
    done
}

# The ISA-L zlib is shipped where no run looks unless told (lists_plugins:
# zlib is still the built-in one); with its directory, zlib is that file.
isal_zlib_off_until_asked() {
    local out
    out=$(r vmdump --plugin-dir /usr/lib/vmdump/plugins-isal plugins) || { echo "$out"; return 1; }
    grep -q '^zlib .* /usr/lib/vmdump/plugins-isal/libvmdump_compress_zlib.so (replaces the built-in one)$' <<<"$out" ||
        { echo "no ISA-L zlib in:"; echo "$out"; return 1; }
    grep -q '^dirs = \["/usr/lib/vmdump/plugins-isal"\]$' "$ROOT/usr/share/vmdump/isal-zlib.toml"
}

test_install() {
    phase "1. packages: install next to Debian's makedumpfile"
    step "apt-get install makedumpfile (Debian's)" apt_r install makedumpfile
    ORIG_SHA=$(sha_of /usr/bin/makedumpfile)
    check "Debian's makedumpfile answers as makedumpfile" makedumpfile_answers '^makedumpfile: version '
    snapshot >"$RUN/before.txt"
    step "apt-get install vmdump vmdump-makedumpfile" apt_local install "/tmp/debs/${VMDUMP_DEB##*/}" "/tmp/debs/${MKD_DEB##*/}"
    check "dpkg-divert --list shows /usr/bin and /usr/sbin makedumpfile diverted" diverted
    check "command -v makedumpfile (kdump-config's PATH) resolves to /usr/sbin/vmdump" makedumpfile_resolves_to /usr/sbin/vmdump
    check "makedumpfile -v answers as vmdump" makedumpfile_answers '^makedumpfile: vmdump '
    # shellcheck disable=SC2016 # expanded by the chroot's shell
    check "root's PATH finds vmdump too (/usr/sbin/makedumpfile)" \
        test "$(r sh -c 'readlink -f "$(command -v makedumpfile)"')" = /usr/sbin/vmdump
    check "Debian's makedumpfile is at /usr/bin/makedumpfile.distrib, byte-identical" same_as_original /usr/bin/makedumpfile.distrib
    check "/usr/bin/makedumpfile.distrib still runs" r /usr/bin/makedumpfile.distrib -v
    check "dpkg -S names the diversion" sh -c "chroot '$ROOT' dpkg -S /usr/bin/makedumpfile | grep -q 'diversion by vmdump-makedumpfile'"
    check "dpkg --verify: makedumpfile vmdump vmdump-makedumpfile intact" verified makedumpfile vmdump vmdump-makedumpfile
    check "vmdump plugins: built-in codecs, the three plugins, the profile" lists_plugins
    check "the ISA-L zlib is off until its directory is given" isal_zlib_off_until_asked
    check "man makedumpfile is vmdump's page (section 1 link)" test "$(readlink "$ROOT/usr/share/man/man1/makedumpfile.1.gz")" = vmdump.1.gz
    check "man 8 makedumpfile is still Debian's" test -f "$ROOT/usr/share/man/man8/makedumpfile.8.gz"
    r dpkg -L vmdump >"$RUN/vmdump.list"

    phase "1. packages: Debian's makedumpfile reinstalled and removed while diverted; vmdump-makedumpfile upgraded"
    step "apt-get install --reinstall makedumpfile" apt_r install --reinstall makedumpfile
    check "the reinstalled file went to .distrib" same_as_original /usr/bin/makedumpfile.distrib
    check "makedumpfile is still vmdump" makedumpfile_answers '^makedumpfile: vmdump '
    step "apt-get remove makedumpfile" apt_r remove makedumpfile
    check "its .distrib file is gone, the diversion stays" sh -c "test ! -e '$ROOT/usr/bin/makedumpfile.distrib'"
    check "makedumpfile is still vmdump" makedumpfile_answers '^makedumpfile: vmdump '
    check "dpkg --verify vmdump-makedumpfile" verified vmdump-makedumpfile
    step "apt-get install makedumpfile (while diverted)" apt_r install makedumpfile
    check "the new file went to .distrib, byte-identical" same_as_original /usr/bin/makedumpfile.distrib
    step "reinstall vmdump-makedumpfile (the upgrade path of its scripts)" apt_local install --reinstall "/tmp/debs/${MKD_DEB##*/}"
    check "diversions kept over the upgrade" diverted
    check "makedumpfile is still vmdump" makedumpfile_answers '^makedumpfile: vmdump '
    check "the original is still at .distrib" same_as_original /usr/bin/makedumpfile.distrib
    step "the same packages as version $UPGRADE_VERSION (dpkg-deb -R, new Version)" repack_upgrade
    step "apt-get install: upgrade both to $UPGRADE_VERSION" \
        apt_local install "/tmp/debs/${VMDUMP_DEB##*/}" "/tmp/debs/${MKD_DEB##*/}"
    check "both at $UPGRADE_VERSION" both_at "$UPGRADE_VERSION"
    check "diversions kept over the upgrade" diverted
    check "makedumpfile is still vmdump" makedumpfile_answers '^makedumpfile: vmdump '
    check "the original is still at .distrib" same_as_original /usr/bin/makedumpfile.distrib
    check "dpkg --verify vmdump vmdump-makedumpfile" verified vmdump vmdump-makedumpfile
}

both_at() {
    local versions
    # shellcheck disable=SC2016 # a dpkg-query format
    versions=$(r dpkg-query -W -f '${Version}\n' vmdump vmdump-makedumpfile)
    [[ $(sort -u <<<"$versions") == "$1" ]] || { echo "$versions"; return 1; }
}

# The two packages again with a higher version (the same files), in /tmp/debs;
# VMDUMP_DEB and MKD_DEB name them from then on.
repack_upgrade() {
    local deb old tree
    for deb in "$VMDUMP_DEB" "$MKD_DEB"; do
        tree=$ROOT/tmp/repack
        rm -rf "$tree"
        dpkg-deb -R "$deb" "$tree"
        old=$(sed -n 's/^Version: //p' "$tree/DEBIAN/control")
        sed -i "s/^Version: .*/Version: $UPGRADE_VERSION/; s/(= $old)/(= $UPGRADE_VERSION)/" "$tree/DEBIAN/control"
        dpkg-deb --root-owner-group -Zgzip --build "$tree" "$ROOT/tmp/debs/$(basename "${deb/_${old}_/_${UPGRADE_VERSION}_}")"
        rm -rf "$tree"
    done
    VMDUMP_DEB=$(ls "$ROOT"/tmp/debs/vmdump_"${UPGRADE_VERSION}"_*.deb)
    MKD_DEB=$(ls "$ROOT"/tmp/debs/vmdump-makedumpfile_"${UPGRADE_VERSION}"_*.deb)
}

test_remove() {
    phase "1. packages: remove vmdump-makedumpfile"
    step "apt-get remove vmdump-makedumpfile" apt_r remove vmdump-makedumpfile
    check "no diversion left" not_diverted
    check "/usr/bin/makedumpfile is Debian's again, byte-identical" same_as_original /usr/bin/makedumpfile
    check "makedumpfile -v answers as makedumpfile" makedumpfile_answers '^makedumpfile: version '
    check "no .distrib file, no /usr/sbin/makedumpfile" absent /usr/bin/makedumpfile.distrib /usr/sbin/makedumpfile.distrib /usr/sbin/makedumpfile
    check "dpkg --verify makedumpfile" verified makedumpfile
    step "dpkg --purge vmdump-makedumpfile (its postrm purge after remove)" r dpkg --purge vmdump-makedumpfile
    check "makedumpfile is still Debian's, byte-identical" same_as_original /usr/bin/makedumpfile

    phase "1. packages: vmdump-makedumpfile without Debian's makedumpfile"
    step "apt-get purge makedumpfile" apt_r purge makedumpfile
    step "apt-get install vmdump-makedumpfile" apt_local install "/tmp/debs/${MKD_DEB##*/}"
    check "makedumpfile is vmdump" makedumpfile_answers '^makedumpfile: vmdump '
    check "no .distrib file was made" absent /usr/bin/makedumpfile.distrib
    step "apt-get install makedumpfile (after vmdump-makedumpfile)" apt_r install makedumpfile
    check "makedumpfile is still vmdump" makedumpfile_answers '^makedumpfile: vmdump '
    check "Debian's went to .distrib, byte-identical" same_as_original /usr/bin/makedumpfile.distrib
    step "apt-get remove vmdump-makedumpfile" apt_r remove vmdump-makedumpfile
    check "/usr/bin/makedumpfile is Debian's again, byte-identical" same_as_original /usr/bin/makedumpfile
    check "no diversion left" not_diverted

    phase "1. packages: remove and purge vmdump"
    step "edit the conffile /etc/vmdump/vmdump.toml" edit_conffile
    step "apt-get remove vmdump" apt_r remove vmdump
    check "vmdump is removed, its conffiles kept (rc)" package_state vmdump rc
    check "the edited conffile is kept" conffile_kept
    step "dpkg --purge vmdump" r dpkg --purge vmdump
    check "vmdump is purged (dpkg: not installed, no conffiles)" not_installed vmdump
    check "every file of dpkg -L vmdump is gone, /etc/vmdump too" all_gone "$RUN/vmdump.list"
    check "/etc/vmdump is gone" absent /etc/vmdump
    # The libraries apt installed for vmdump alone (libisal2) go as a user's would.
    step "apt-get autoremove --purge (what came with vmdump)" apt_r autoremove --purge
    check "the tree is as before vmdump was installed (files, modes, contents)" same_tree_as "$RUN/before.txt"
}

# ---- 2. and 3. the initramfs -------------------------------------------------

# synth a vmcore into an unpacked image, as the capture kernel's /proc/vmcore.
make_vmcore() { "$HOST_VMDUMP" synth --size 256M "$1/vmcore" >/dev/null; }

has_files() {
    local listing=$1 want
    shift
    for want; do
        grep -qE "(^|[ /])${want}( |$)" "$listing" || { echo "not in the image: $want"; return 1; }
    done
}
# An S3 key beside the profile (issue 42), which the images must carry
# readable by root alone, as it is on the system.
S3_CREDENTIALS=etc/vmdump/s3-credentials
write_s3_credentials() {
    r sh -c "umask 077 && printf '[default]\naws_access_key_id = GKtest\naws_secret_access_key = not-a-secret\n' > /$S3_CREDENTIALS"
}
only_root_reads() {
    local mode
    mode=$(stat -c '%a %U' "$1") || return 1
    [[ $mode == "600 root" ]] || { echo "$1: mode and owner $mode"; return 1; }
}
lacks_vmdump() {
    ! grep -qE '(^|[ /])usr/sbin/vmdump( |$)' "$1" || { echo "usr/sbin/vmdump is in the image"; return 1; }
}

# The unpacked image runs vmdump: plugins listed (every library they need is
# in the image), a dump of a synthetic vmcore with a plugin, and the
# distribution's own command line (DUMPER, run by the image's sh, @VMCORE@
# replaced) on the real capture-kernel vmcore of ../shared/fixtures,
# each verified by the host page by page.
runs_in_image() {
    local img=$1 label=$2 dumper=$3 output=$4 vmcore=/vmcore level=1 source
    mkdir -p "$img/proc" "$img/tmp"
    mount -t proc proc "$img/proc"
    check "$label: vmdump plugins lists the built-in codecs, the three plugins and the profile" \
        plugins_in "$img"
    step "$label: vmdump synth --size 256M (on the host, into the image)" make_vmcore "$img"
    check "$label: vmdump dump --compress c-zlib /vmcore (a plugin dlopened in the image)" \
        chroot "$img" /usr/sbin/vmdump dump --compress c-zlib /vmcore /dump-c-zlib.kdump
    check "$label: host vmdump verify of that dump against the vmcore" \
        "$HOST_VMDUMP" verify "$img/dump-c-zlib.kdump" --against "$img/vmcore"
    source=$img/vmcore
    if [[ -n ${VMDUMP_FIXTURE_DIR-} ]]; then
        # Read-only, bound in: 400 MiB need not be copied.
        source=$VMDUMP_FIXTURE_DIR/vmcore-SK vmcore=/vmcore-SK level=31
        touch "$img/vmcore-SK"
        mount --bind -o ro "$source" "$img/vmcore-SK"
    else
        echo "NOTE: no ../shared/fixtures: the distribution's command line runs on the synthetic vmcore at -d 1" \
            "(its VMCOREINFO does not allow -d 31), not on a real one"
    fi
    dumper=${dumper//@VMCORE@/$vmcore}
    dumper=${dumper//-d 31/-d $level}
    check "$label: $dumper" chroot "$img" sh -c "$dumper"
    check "$label: host vmdump verify of that dump against ${source##*/}" \
        "$HOST_VMDUMP" verify "$img$output" --against "$source"
    unmount_under "$img"
}

plugins_in() {
    local out want
    out=$(chroot "$1" /usr/sbin/vmdump plugins 2>&1) || { echo "$out"; return 1; }
    for want in '^zlib .*built in' '^zstd .*built in' '^lzo .*built in' '^snappy .*built in' \
        ' /usr/lib/vmdump/plugins/libvmdump_c_zlib.so$' ' /usr/lib/vmdump/plugins/libvmdump_filter_pfn_ranges.so$' \
        ' /usr/lib/vmdump/plugins/libvmdump_filter_pattern.so$' ' /usr/lib/vmdump/plugins/libvmdump_filter_erase.so$' \
        ' /usr/lib/vmdump/plugins/libvmdump_filter_keep_tasks.so$' ' /usr/lib/vmdump/plugins/libvmdump_filter_drop_tasks.so$' \
        '^system profile: /etc/vmdump/vmdump.toml$'; do
        grep -q -- "$want" <<<"$out" || { echo "no line matching '$want' in:"; echo "$out"; return 1; }
    done
    ! grep -qi 'skipped' <<<"$out" || { echo "$out"; return 1; }
}

# kdump-tools' /etc/kernel/postinst.d/kdump-tools: a copy of /etc/initramfs-tools
# in /var/lib/kdump, then mkinitramfs -d on it. (kdump-tools also sets
# MODULES=dep there, which needs the root file system's device: not in a
# chroot. The kernel modules are not what this test is about.)
kdump_tools_confdir() {
    rm -rf /var/lib/kdump/initramfs-tools
    mkdir -p /var/lib/kdump
    cp -pr /etc/initramfs-tools /var/lib/kdump
}

mkinitramfs_to() { r mkinitramfs "$@" "$KVER"; }
unpack_initramfs() {
    r sh -c "rm -rf '$2' && unmkinitramfs '$1' '$2'"
    # With an early (microcode) archive, the main one is in main/.
    if [[ -d $ROOT$2/main ]]; then UNPACKED=$ROOT$2/main; else UNPACKED=$ROOT$2; fi
}

test_initramfs_tools() {
    phase "2. initramfs-tools hook"
    r sh -c 'rm -f /etc/initramfs-tools/conf.d/vmdump'
    step "mkinitramfs: the boot initramfs (VMDUMP_INITRAMFS unset: auto)" mkinitramfs_to -o /tmp/boot.img
    r lsinitramfs /tmp/boot.img >"$RUN/boot.lst"
    check "the boot initramfs has no vmdump" lacks_vmdump "$RUN/boot.lst"

    step "kdump-tools' initramfs-tools copy in /var/lib/kdump" r sh -c "$(declare -f kdump_tools_confdir); kdump_tools_confdir"
    step "an S3 key beside the profile, 0600" write_s3_credentials
    step "mkinitramfs -d /var/lib/kdump/initramfs-tools (kdump-tools' initrd)" \
        mkinitramfs_to -d /var/lib/kdump/initramfs-tools -o /tmp/kdump.img
    r lsinitramfs /tmp/kdump.img >"$RUN/kdump.lst"
    check "lsinitramfs: vmdump, the plugins, the profile, makedumpfile -> vmdump" has_files "$RUN/kdump.lst" \
        usr/sbin/vmdump usr/sbin/makedumpfile etc/vmdump/vmdump.toml usr/lib/vmdump/plugins/libvmdump_c_zlib.so \
        usr/lib/vmdump/plugins/libvmdump_filter_pfn_ranges.so usr/lib/vmdump/plugins/libvmdump_filter_pattern.so
    step "unmkinitramfs kdump.img" unpack_initramfs /tmp/kdump.img /tmp/kdump.d
    check "the S3 key is in the image, mode 0600, root's" only_root_reads "$UNPACKED/$S3_CREDENTIALS"
    # kdump-tools' default MAKEDUMP_ARGS, as kdump-config runs them (the flattened format to stdout).
    runs_in_image "$UNPACKED" "initramfs-tools image" 'makedumpfile -F -c -d 31 @VMCORE@ > /dump.flat' /dump.flat

    printf 'VMDUMP_INITRAMFS=no\n' >"$ROOT/var/lib/kdump/initramfs-tools/conf.d/vmdump"
    step "mkinitramfs -d /var/lib/kdump/initramfs-tools with VMDUMP_INITRAMFS=no in its conf.d" \
        mkinitramfs_to -d /var/lib/kdump/initramfs-tools -o /tmp/kdump-no.img
    r lsinitramfs /tmp/kdump-no.img >"$RUN/kdump-no.lst"
    check "VMDUMP_INITRAMFS=no leaves vmdump out" lacks_vmdump "$RUN/kdump-no.lst"
    printf 'VMDUMP_INITRAMFS=yes\n' >"$ROOT/etc/initramfs-tools/conf.d/vmdump"
    step "mkinitramfs with VMDUMP_INITRAMFS=yes in /etc/initramfs-tools/conf.d" mkinitramfs_to -o /tmp/boot-yes.img
    r lsinitramfs /tmp/boot-yes.img >"$RUN/boot-yes.lst"
    check "VMDUMP_INITRAMFS=yes puts vmdump into the boot initramfs" has_files "$RUN/boot-yes.lst" usr/sbin/vmdump etc/vmdump/vmdump.toml
    # What the test made outside /tmp goes, so that the tree compares equal at the end.
    r sh -c 'rm -rf /var/lib/kdump /etc/initramfs-tools/conf.d/vmdump'
}

# A stand-in for kdump-utils' 99kdumpbase with the two lines that matter here:
# its check() (IN_KDUMP) and `inst "/sbin/makedumpfile" "/sbin/makedumpfile"`.
write_kdumpbase_standin() {
    mkdir -p "$ROOT/usr/lib/dracut/modules.d/99kdumpbase"
    cat >"$ROOT/usr/lib/dracut/modules.d/99kdumpbase/module-setup.sh" <<'EOF'
#!/bin/bash
# test stand-in for kdump-utils' dracut/99kdumpbase/module-setup.sh
check() { [[ $IN_KDUMP ]] || return 1; return 0; }
depends() { echo base; return 0; }
install() { inst "/sbin/makedumpfile" "/sbin/makedumpfile"; }
EOF
}

dracut_to() { r dracut --no-kernel --no-hostonly --force "$@" "$KVER"; }
# mkdumprd: IN_KDUMP=1 exported, --add kdumpbase (dracut 059 has no --add-confdir).
mkdumprd_like() { r env IN_KDUMP=1 dracut --no-kernel --no-hostonly --force --add kdumpbase "$@" "$KVER"; }
unpack_dracut() { r sh -c "rm -rf '$2' && mkdir -p '$2' && cd '$2' && lsinitrd --unpack '$1'"; }

test_dracut() {
    phase "3. dracut module"
    step "dracut: a plain image (no kdumpbase)" dracut_to /tmp/dracut-plain.img
    r lsinitrd /tmp/dracut-plain.img >"$RUN/dracut-plain.lst"
    check "a plain dracut image has no vmdump (check() answers 255)" lacks_vmdump "$RUN/dracut-plain.lst"
    step "dracut -a vmdump" dracut_to -a vmdump /tmp/dracut-asked.img
    r lsinitrd /tmp/dracut-asked.img >"$RUN/dracut-asked.lst"
    check "dracut -a vmdump: vmdump, the plugins, the profile" has_files "$RUN/dracut-asked.lst" \
        usr/sbin/vmdump etc/vmdump/vmdump.toml usr/lib/vmdump/plugins/libvmdump_c_zlib.so

    write_kdumpbase_standin
    step "dracut as kdump-utils' mkdumprd runs it (IN_KDUMP=1 --add kdumpbase)" mkdumprd_like /tmp/dracut-kdump.img
    r lsinitrd /tmp/dracut-kdump.img >"$RUN/dracut-kdump.lst"
    check "the module came in by itself: vmdump, the plugins, the profile, /sbin/makedumpfile" \
        has_files "$RUN/dracut-kdump.lst" usr/sbin/vmdump usr/sbin/makedumpfile etc/vmdump/vmdump.toml \
        usr/lib/vmdump/plugins/libvmdump_c_zlib.so usr/lib/vmdump/plugins/libvmdump_filter_pfn_ranges.so \
        usr/lib/vmdump/plugins/libvmdump_filter_pattern.so
    step "lsinitrd --unpack dracut-kdump.img" unpack_dracut /tmp/dracut-kdump.img /tmp/dracut-kdump.d
    check "the S3 key is in the image, mode 0600, root's" only_root_reads "$ROOT/tmp/dracut-kdump.d/$S3_CREDENTIALS"
    # kdump-utils' default core_collector, as its kdump.sh runs it to a file.
    runs_in_image "$ROOT/tmp/dracut-kdump.d" "dracut image" \
        '/sbin/makedumpfile -l --message-level 7 -d 31 @VMCORE@ /dump.kdump' /dump.kdump
    rm -rf "$ROOT/usr/lib/dracut/modules.d/99kdumpbase" "$ROOT/$S3_CREDENTIALS"
}

main() {
    parse_args "$@"
    require_root
    enter_mount_namespace "$@"
    local t0 t1 t2
    t0=$(now)
    ensure_host_tools
    prepare_fixtures
    phase "building the packages"
    build_debs
    t1=$(now)
    rm -rf "$LOGS"
    mkdir -p "$RUN" "$LOGS"
    ensure_base
    trap 'unmount_under "$RUN"' EXIT
    fresh_root
    t2=$(now)
    test_install
    test_initramfs_tools
    test_dracut
    test_remove
    phase "done"
    printf 'times: packages %ds, Debian tree %ds, checks %ds, total %ds\n' \
        $((t1 - t0)) $((t2 - t1)) $(($(now) - t2)) $(($(now) - t0))
    summary
    unmount_under "$RUN"
    # The overlay's upper layer goes when every check passed (the listings
    # stay); a failed run keeps it: mount it on the cache to look.
    if ((failed == 0 && keep == 0)); then
        remove_tree "$ROOT"
        remove_tree "$RUN/upper"
        remove_tree "$RUN/work"
    elif ((failed)) && [[ -d $RUN/upper ]]; then
        echo "to look: mount -t overlay overlay -o lowerdir=$BASE,upperdir=$RUN/upper,workdir=$RUN/work $ROOT"
    fi
    ((failed == 0))
}

main "$@"
