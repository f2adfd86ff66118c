#!/usr/bin/env bash
# Proves, with rpm, rpmlint, createrepo_c and dnf (Debian's packages of
# them) and no Fedora userspace, that the RPM packages of
# scripts/build-rpm.sh replace makedumpfile as dist/README.md says:
#
#   1. rpmlint finds no error in the packages and the spec, and every
#      warning left is one this script accepts, for the reason given with it;
#      what the packages declare (Provides, Conflicts, Requires, scriptlets,
#      config files, modes) is what the spec means; two builds of one commit
#      give the same bytes;
#   2. in a scratch root (dnf --installroot) with a local repository holding
#      them and stand-ins for the distribution's packages (makedumpfile
#      1.7.9-1, which owns /usr/sbin/makedumpfile as a plain file, as
#      Fedora's does; kdump-utils, which requires makedumpfile and owns
#      /etc/kdump.conf; a base that provides /bin/sh, busybox's): a plain
#      `dnf install vmdump-makedumpfile` is refused, `dnf swap makedumpfile
#      vmdump-makedumpfile` replaces it and keeps kdump-utils, the files,
#      modes and the makedumpfile link are as packaged, vmdump runs in the
#      root (under the name makedumpfile too, with its plugins and profile),
#      the scriptlets touch /etc/kdump.conf (so that kdumpctl rebuilds its
#      initramfs), on the swap, on an update of kdump-utils or vmdump, and on
#      the swap back, which gives the stand-in's file back; a fresh install of
#      kdump-utils with both in the repository takes the distribution's
#      makedumpfile; with SUSE's kdump (a stand-in that owns
#      /etc/sysconfig/kdump) instead of kdump-utils, the scriptlets touch that;
#   3. the same swap both ways where /usr/sbin is a link to bin and
#      makedumpfile is /usr/bin/makedumpfile (Fedora 42 and later).
#
# Usage: scripts/test-rpm.sh [--rpms DIR] [--no-build] [--keep]
#   --rpms DIR  test the .rpm files in DIR instead of building them
#   --no-build  build the packages from the binaries already in target/release
#   --keep      keep the scratch roots (target/rpmtest/run) even when every check passed
# Runs as root (chroot, rpm's scriptlets); installs rpm, rpmlint, dnf and
# createrepo-c with apt-get when missing, and keeps Debian's busybox-static
# (the roots' /bin/sh) in target/rpmtest/cache. About half a minute.
# Ends with "test-rpm: N passed, M failed"; exit status 0 when none failed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/crates.sh # workspace_version
source scripts/lib/checks.sh # ok, check, step, summary
CHECKS_NAME=test-rpm

WORK=target/rpmtest
CACHE=$WORK/cache
RUN=$WORK/run
LOGS=$RUN/logs
REPO=$RUN/repo
ROOT=$RUN/root
FRESH=$RUN/fresh
F42=$RUN/f42
SUSE=$RUN/suse
# kdump.conf's time stamp before each step that must touch it: older than
# any kdump initramfs.
OLD_STAMP=946684800 # 2000-01-01
STANDIN_MKD=makedumpfile-1.7.9-1
# The scriptlets' command (dist/rpm/vmdump.spec, kdump_rebuild_next_start).
TOUCH_LINE='if [ -e /etc/kdump.conf ]; then touch /etc/kdump.conf; elif [ -e /etc/sysconfig/kdump ]; then touch /etc/sysconfig/kdump; fi || :'

rpms_dir='' build_args=() keep=0 built=0

parse_args() {
    while (($#)); do
        case $1 in
            --rpms) rpms_dir=$2; shift 2 ;;
            --no-build) build_args+=(--no-build); shift ;;
            --keep) keep=1; shift ;;
            -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
            *) echo "test-rpm.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        esac
    done
}

# ---- reporting (scripts/lib/checks.sh) ---------------------------------------

step_failed() { echo "scratch roots kept in $RUN"; }

finish() {
    if ((failed == 0 && !keep)); then rm -rf "$RUN"; else echo "scratch roots kept in $RUN"; fi
    summary
    ((failed == 0)) || exit 1
    exit 0
}

# ---- the host ------------------------------------------------------------------

apt_updated=0
apt_install() {
    ((apt_updated)) || { apt-get update -qq; apt_updated=1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_tools() {
    [[ $(id -u) == 0 ]] || { echo "test-rpm.sh: run as root (chroot, rpm's scriptlets)" >&2; exit 1; }
    local missing=() pair
    for pair in rpmbuild:rpm rpmlint:rpmlint dnf:dnf createrepo_c:createrepo-c; do
        command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
    done
    ((${#missing[@]} == 0)) || apt_install "${missing[@]}"
}

# Debian's busybox-static: the roots' /bin/sh (rpm runs scriptlets inside the
# root) and the commands the checks run there. Downloaded once.
ensure_busybox() {
    local deb
    mkdir -p "$CACHE"
    deb=$(find "$CACHE" -maxdepth 1 -name 'busybox-static_*.deb' | head -n 1)
    if [[ -z $deb ]]; then
        ((apt_updated)) || { apt-get update -qq; apt_updated=1; }
        (cd "$CACHE" && apt-get download -qq busybox-static)
        deb=$(find "$CACHE" -maxdepth 1 -name 'busybox-static_*.deb' | head -n 1)
    fi
    mkdir -p "$RUN/busybox"
    dpkg -x "$deb" "$RUN/busybox"
    BUSYBOX=$RUN/busybox/bin/busybox
    [[ -x $BUSYBOX ]] || { echo "test-rpm.sh: no bin/busybox in $deb" >&2; exit 1; }
}

# The packages under test: the workspace's version, as build-rpm.sh names them.
find_rpms() {
    if [[ -z $rpms_dir ]]; then
        scripts/build-rpm.sh "${build_args[@]}" --out target/rpm
        rpms_dir=target/rpm built=1
    fi
    VERSION=$(workspace_version)
    VERSION=${VERSION//-/\~}
    ARCH=$(rpm --eval %_arch)
    VMDUMP_RPM=$rpms_dir/vmdump-$VERSION-1.$ARCH.rpm
    MKD_RPM=$rpms_dir/vmdump-makedumpfile-$VERSION-1.noarch.rpm
    DEVEL_RPM=$rpms_dir/vmdump-devel-$VERSION-1.noarch.rpm
    local f
    for f in "$VMDUMP_RPM" "$MKD_RPM" "$DEVEL_RPM"; do
        [[ -f $f ]] || { echo "test-rpm.sh: no $f" >&2; exit 1; }
    done
}

# ---- 1. the packages themselves ---------------------------------------------------

# rpmlint's warnings that are accepted, as "package: W: tag[ detail]"
# patterns (extended regular expressions, whole line), each for the reason
# in the comment above it. Errors are never accepted.
RPMLINT_ACCEPTED=(
    # The spec has no BuildRoot tag: rpm has ignored it since 4.6 (Fedora's
    # guidelines drop it; Fedora's rpmlint configuration filters this).
    'vmdump\.spec: W: no-buildroot-tag'
    # vmdump-makedumpfile requires vmdump of its own version and release, as
    # Fedora's guidelines want for a subpackage (%{version}-%{release}): the
    # link must point at the vmdump of the same build. Fedora's rpmlint
    # configuration filters this warning.
    'vmdump-makedumpfile\.noarch: W: requires-on-release vmdump = [^ ]+'
    # vmdump is linked at a fixed address, not as a PIE, on purpose: a PIE's
    # relocations are read and its pages written at every start, in the
    # capture kernel's small memory (host/build.rs). Shared libraries keep
    # their random addresses.
    'vmdump\.x86_64: W: position-independent-executable-suggested /usr/sbin/vmdump'
    # rpmlint 2.4 (Debian's) records a man page's section instead of its name
    # (FilesCheck: man_basenames.add(res.group('category'))), so it reports
    # every command; upstream has fixed it. vmdump.1.gz and makedumpfile.1.gz
    # are in the packages (checked below).
    '(vmdump\.x86_64|vmdump-makedumpfile\.noarch): W: no-manual-page-for-binary (vmdump|makedumpfile)'
    # The links of vmdump-makedumpfile point into vmdump, which it requires
    # at the same version: rpmlint looks for the targets in the one package.
    'vmdump-makedumpfile\.noarch: W: dangling-relative-symlink /usr/sbin/makedumpfile vmdump'
    'vmdump-makedumpfile\.noarch: W: dangling-relative-symlink /usr/share/man/man1/makedumpfile\.1\.gz vmdump\.1\.gz'
)

# rpmlint on the three packages and the spec, with dist/rpm/rpmlint.toml
# (Fedora's conventions where upstream's defaults differ).
lint() {
    local out line pattern accepted unexpected=() errors=()
    out=$(rpmlint -c dist/rpm/rpmlint.toml "$VMDUMP_RPM" "$MKD_RPM" "$DEVEL_RPM" dist/rpm/vmdump.spec 2>&1) || true
    printf '%s\n' "$out" >"$LOGS/rpmlint.log"
    if ! grep -Eq '^ *[0-9]+ packages and [0-9]+ specfiles checked' <<<"$out"; then
        not_ok "rpmlint ran (log: $LOGS/rpmlint.log)"
        sed 's/^/     | /' <<<"$out" | tail -n 20
        return
    fi
    while IFS= read -r line; do
        case $line in
            *': E: '*) errors+=("$line") ;;
            *': W: '*)
                accepted=0
                for pattern in "${RPMLINT_ACCEPTED[@]}"; do
                    if [[ $line =~ ^${pattern}$ ]]; then accepted=1; break; fi
                done
                if ((accepted)); then echo "     accepted: $line"; else unexpected+=("$line"); fi ;;
        esac
    done <<<"$out"
    check "rpmlint: no error in the packages and the spec" none "${errors[@]}"
    check "rpmlint: every warning is one accepted above" none "${unexpected[@]}"
}

# contains TEXT PATTERN: TEXT has a line that matches PATTERN (grep -E), else TEXT is printed.
contains() {
    grep -Eq -- "$2" <<<"$1" || { printf 'no line matches "%s" in:\n%s\n' "$2" "$1"; return 1; }
}

# none LINE...: there is none (else they are printed).
none() {
    (($# == 0)) || { printf '%s\n' "$@"; return 1; }
}

qp() { rpm -qp "$@" 2>/dev/null; }

# has_line TEXT LINE: TEXT holds LINE (whole), else prints TEXT.
has_line() {
    grep -Fxq -- "$2" <<<"$1" || { printf 'no line "%s" in:\n%s\n' "$2" "$1"; return 1; }
}

# The file list of a package as "mode user group flags path" (flags: c
# config, n noreplace, d doc, l licence; a link: "-> target" after).
manifest() {
    qp --qf '[%{FILEMODES:perms} %{FILEUSERNAME} %{FILEGROUPNAME} %{FILEFLAGS:fflags} %{FILENAMES}%|FILELINKTOS?{ -> %{FILELINKTOS}}|\n]' "$1" |
        sed 's/ -> $//'
}

# No file of PACKAGE.rpm is writable by group or others, or owned by another than root.
owned_by_root_not_writable() {
    manifest "$1" | awk '$1 !~ /^l/ && (substr($1, 6, 1) == "w" || substr($1, 9, 1) == "w" || $2 != "root" || $3 != "root") { print; bad = 1 } END { exit bad }'
}

check_declarations() {
    local vmdump mkd devel scripts
    vmdump=$(manifest "$VMDUMP_RPM")
    mkd=$(manifest "$MKD_RPM")
    devel=$(manifest "$DEVEL_RPM")
    check "vmdump-makedumpfile provides makedumpfile 1.7.0-0.vmdump (below the distribution's)" \
        has_line "$(qp --provides "$MKD_RPM")" "makedumpfile = 1.7.0-0.vmdump"
    check "vmdump-makedumpfile conflicts with makedumpfile" has_line "$(qp --conflicts "$MKD_RPM")" "makedumpfile"
    check "vmdump-makedumpfile conflicts with kexec-tools < 2.0.28-5 (as Fedora's makedumpfile)" \
        has_line "$(qp --conflicts "$MKD_RPM")" "kexec-tools < 2.0.28-5"
    check "vmdump-makedumpfile requires vmdump = $VERSION-1" has_line "$(qp --requires "$MKD_RPM")" "vmdump = $VERSION-1"
    check "vmdump-makedumpfile obsoletes nothing (a dnf upgrade never takes makedumpfile's place)" \
        test -z "$(qp --obsoletes "$MKD_RPM")"
    scripts=$(qp --scripts --triggers "$MKD_RPM")
    check "vmdump-makedumpfile: %posttrans, %postun and %triggerin -- kdump-utils, kdump, vmdump touch kdump's config" \
        test "$(grep -cFx "$TOUCH_LINE" <<<"$scripts")" -eq 3 -a \
        -n "$(grep '^posttrans scriptlet' <<<"$scripts")" -a -n "$(grep '^postuninstall scriptlet' <<<"$scripts")" -a \
        -n "$(grep -x 'triggerin scriptlet (using /bin/sh) -- kdump, kdump-utils, vmdump' <<<"$scripts")"
    check "vmdump has no scriptlet" test -z "$(qp --scripts --triggers "$VMDUMP_RPM")"
    check "vmdump: /usr/sbin/vmdump 0755" has_line "$vmdump" "-rwxr-xr-x root root  /usr/sbin/vmdump"
    check "vmdump: /etc/vmdump/vmdump.toml 0644, %config(noreplace)" \
        has_line "$vmdump" "-rw-r--r-- root root cn /etc/vmdump/vmdump.toml"
    check "vmdump: the dracut module, /usr/lib/dracut/modules.d/95vmdump/module-setup.sh 0755" \
        has_line "$vmdump" "-rwxr-xr-x root root  /usr/lib/dracut/modules.d/95vmdump/module-setup.sh"
    check "vmdump: the plugins in /usr/lib/vmdump/plugins, 0644" \
        has_line "$vmdump" "-rw-r--r-- root root  /usr/lib/vmdump/plugins/libvmdump_c_zlib.so"
    check "vmdump: the ISA-L zlib in /usr/lib/vmdump/plugins-isal, 0644" \
        has_line "$vmdump" "-rw-r--r-- root root  /usr/lib/vmdump/plugins-isal/libvmdump_compress_zlib.so"
    check "vmdump: the man page, gzipped" has_line "$vmdump" "-rw-r--r-- root root d /usr/share/man/man1/vmdump.1.gz"
    check "vmdump: the licences" has_line "$vmdump" "-rw-r--r-- root root l /usr/share/licenses/vmdump/LICENSES"
    check "vmdump: no initramfs-tools hook (Debian's), no header (vmdump-devel)" \
        test -z "$(grep -E 'initramfs-tools|/usr/include' <<<"$vmdump")"
    check "vmdump: every file and folder root's, none writable by others" owned_by_root_not_writable "$VMDUMP_RPM"
    check "vmdump-makedumpfile: /usr/sbin/makedumpfile -> vmdump" \
        has_line "$mkd" "lrwxrwxrwx root root  /usr/sbin/makedumpfile -> vmdump"
    check "vmdump-makedumpfile: man1/makedumpfile.1.gz -> vmdump.1.gz" \
        has_line "$mkd" "lrwxrwxrwx root root d /usr/share/man/man1/makedumpfile.1.gz -> vmdump.1.gz"
    check "vmdump-makedumpfile holds those two links only" test "$(wc -l <<<"$mkd")" -eq 2
    check "vmdump-devel: the header" has_line "$devel" "-rw-r--r-- root root  /usr/include/vmdump/vmdump_plugin.h"
}

# Two builds of one commit give the same bytes.
check_reproducible() {
    local again=$RUN/rebuild f
    scripts/build-rpm.sh --no-build --out "$again" >"$LOGS/rebuild.log" 2>&1 ||
        { not_ok "a second build (log: $LOGS/rebuild.log)"; return; }
    for f in "$VMDUMP_RPM" "$MKD_RPM" "$DEVEL_RPM"; do
        check "a second build gives the same bytes: ${f##*/}" cmp "$f" "$again/${f##*/}"
    done
}

# ---- stand-ins and the repository -----------------------------------------------

# build_standin NAME SPEC-BODY: a package of the distribution, as far as the
# swap needs it, into the repository.
build_standin() {
    local name=$1 top=$RUN/standins/$1
    mkdir -p "$top"
    printf '%s\n' "$2" >"$top/$name.spec"
    # Its files' time stamps OLD_STAMP (kdump.conf's, which a reinstall
    # writes back): only a scriptlet makes kdump.conf newer.
    SOURCE_DATE_EPOCH=$OLD_STAMP rpmbuild -bb --quiet --define "clamp_mtime_to_source_date_epoch 1" \
        --define "_topdir $PWD/$top" --define "_rpmdir $PWD/$3" \
        --define "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm" \
        --define "_sbindir ${4:-/usr/sbin}" "$top/$name.spec"
}

STANDIN_HEAD='Release: 1
License: MIT
BuildArch: noarch
%description
A stand-in made by scripts/test-rpm.sh.'

# makedumpfile as Fedora's: %{_sbindir}/makedumpfile, a plain file.
standin_makedumpfile() {
    build_standin makedumpfile "Name: makedumpfile
Version: 1.7.9
Summary: Stand-in for the distribution's makedumpfile
Conflicts: kexec-tools < 2.0.28-5
$STANDIN_HEAD
%install
install -d %{buildroot}%{_sbindir}
printf '#!/bin/sh\necho \"makedumpfile: version 1.7.9 (the stand-in)\"\n' >%{buildroot}%{_sbindir}/makedumpfile
chmod 0755 %{buildroot}%{_sbindir}/makedumpfile
%files
%{_sbindir}/makedumpfile" "$1" "${2-}"
}

# kdump-utils: requires makedumpfile (unversioned, as the real one) and owns
# /etc/kdump.conf, whose time stamp kdumpctl compares with its initramfs.
standin_kdump_utils() {
    build_standin kdump-utils "Name: kdump-utils
Version: 1.0.61
Summary: Stand-in for kdump-utils
Requires: makedumpfile
$STANDIN_HEAD
%install
install -d %{buildroot}/etc
echo 'core_collector makedumpfile -l --message-level 7 -d 31' >%{buildroot}/etc/kdump.conf
%files
%config(noreplace) /etc/kdump.conf" "$1"
}

# SUSE's kdump: requires makedumpfile and owns /etc/sysconfig/kdump, whose
# time stamp its mkdumprd compares with its initrd.
standin_suse_kdump() {
    build_standin kdump "Name: kdump
Version: 2.1.9
Summary: Stand-in for SUSE's kdump
Requires: makedumpfile
$STANDIN_HEAD
%install
install -d %{buildroot}/etc/sysconfig
echo 'KDUMP_DUMPLEVEL=31' >%{buildroot}/etc/sysconfig/kdump
%files
%config(noreplace) /etc/sysconfig/kdump" "$1"
}

# What the roots have instead of Fedora's base packages: /bin/sh (busybox,
# put there by make_root) and the libraries vmdump's packages require,
# copied from this host when vmdump is run there (run_vmdump_in_root).
standin_base() {
    local provides
    provides=$({ qp --requires "$VMDUMP_RPM"; qp --requires "$MKD_RPM"; } |
        grep -Ev '^(rpmlib\(|vmdump|config\()' | sed 's/ .*//' | LC_ALL=C sort -u | sed 's/^/Provides: /')
    build_standin testroot-base "Name: testroot-base
Version: 1
Summary: Stand-in for the base system of the scratch roots
Provides: /bin/sh
$provides
$STANDIN_HEAD
%files" "$1"
}

make_repo() {
    mkdir -p "$REPO"
    cp "$VMDUMP_RPM" "$MKD_RPM" "$DEVEL_RPM" "$REPO/"
    standin_makedumpfile "$REPO"
    standin_kdump_utils "$REPO"
    standin_suse_kdump "$REPO"
    standin_base "$REPO"
    createrepo_c "$REPO"
}

# ---- scratch roots ----------------------------------------------------------------

# make_root DIR [f42]: an empty root with Fedora's merged /usr (/bin, /sbin,
# /lib, /lib64 links into /usr; with f42, /usr/sbin a link to bin too) and
# busybox as /bin/sh and its commands.
make_root() {
    local root=$1 applet
    mkdir -p "$root"/usr/{bin,lib,lib64} "$root"/{etc,tmp,var/tmp,proc}
    if [[ ${2-} == f42 ]]; then ln -s bin "$root/usr/sbin"; else mkdir "$root/usr/sbin"; fi
    ln -s usr/bin "$root/bin"
    ln -s usr/sbin "$root/sbin"
    ln -s usr/lib "$root/lib"
    ln -s usr/lib64 "$root/lib64"
    install -m 0755 "$BUSYBOX" "$root/usr/bin/busybox"
    for applet in $("$BUSYBOX" --list); do
        [[ -e $root/usr/bin/$applet ]] || ln -s busybox "$root/usr/bin/$applet"
    done
    # rpm's database where Fedora keeps it (Debian's rpm says ~/.rpmdb),
    # for rpm and dnf alike (both read ~/.rpmmacros): HOME is this run's.
    mkdir -p "$RUN/home"
    echo '%_dbpath /var/lib/rpm' >"$RUN/home/.rpmmacros"
}

# dnf_in ROOT ARGS...: dnf in ROOT, with the local repository alone.
dnf_in() {
    local root=$1
    shift
    HOME=$PWD/$RUN/home dnf -y --installroot="$PWD/$root" --releasever=1 --disableplugin='*' \
        --setopt=reposdir=/nonexistent --setopt=install_weak_deps=0 \
        --repofrompath="local,file://$PWD/$REPO" --setopt=local.gpgcheck=0 --setopt=local.metadata_expire=0 \
        "$@"
}

# rpm_in ROOT ARGS...: rpm on ROOT's database.
rpm_in() {
    local root=$1 out rc=0
    shift
    out=$(HOME=$PWD/$RUN/home rpm --root="$PWD/$root" "$@" 2>&1) || rc=$?
    # Debian's rpm says this on every install and erase.
    [[ -z $out ]] || grep -Ev '^rpm: (RPM should not be used directly|However assuming you know)' <<<"$out" || true
    return $rc
}

installed() { # ROOT PACKAGE: installed in ROOT
    rpm_in "$1" -q "$2"
}

not_installed() {
    ! rpm_in "$1" -q "$2"
}

# set_old_stamp ROOT [FILE]: FILE (kdump's config, /etc/kdump.conf by
# default) as old as OLD_STAMP, and the time the step that must touch it starts.
set_old_stamp() {
    touch -d "@$OLD_STAMP" "$1${2:-/etc/kdump.conf}"
    since=$(date +%s)
}

# touched ROOT [FILE]: FILE was touched (by a scriptlet) since set_old_stamp.
touched() {
    local m file=${2:-/etc/kdump.conf}
    m=$(stat -c %Y "$1$file")
    ((m >= since)) || { echo "$file is dated $(date -u -d "@$m"), before the step ($(date -u -d "@$since"))"; return 1; }
}

# is_link ROOT PATH TARGET: PATH is a symbolic link to TARGET, and resolves
# (inside ROOT) to /usr/sbin/vmdump.
is_link_to_vmdump() {
    local root=$1 path=$2 target
    target=$(readlink "$root$path") || { echo "$path is not a link"; ls -l "$root$path"; return 1; }
    [[ $target == "$3" ]] || { echo "$path -> $target, not $3"; return 1; }
    [[ $(chroot "$root" readlink -f "$path") == "$(chroot "$root" readlink -f /usr/sbin/vmdump)" ]] ||
        { echo "$path resolves to $(chroot "$root" readlink -f "$path")"; return 1; }
}

# is_standin ROOT PATH: PATH is the stand-in makedumpfile's plain file, as packaged.
is_standin() {
    local root=$1 path=$2
    [[ -f $root$path && ! -L $root$path ]] || { ls -l "$root$path"; return 1; }
    [[ $(chroot "$root" "$path") == "makedumpfile: version 1.7.9 (the stand-in)" ]] || { chroot "$root" "$path"; return 1; }
    rpm_in "$root" -V makedumpfile
}

# mode_of ROOT PATH MODE [USER:GROUP]
has_mode() {
    local st
    st=$(stat -c '%a %U:%G' "$1$2") || return 1
    [[ $st == "$3 root:root" ]] || { echo "$2: $st, not $3 root:root"; return 1; }
}

# The libraries that vmdump and its plugins link, copied from this host
# (the binaries were built here), so that vmdump runs inside ROOT.
copy_host_libraries() {
    local root=$1 lib
    for lib in $(ldd "$root/usr/sbin/vmdump" "$root"/usr/lib/vmdump/plugins/*.so |
        awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }' | sort -u); do
        [[ -e $root$lib ]] || install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
    done
}

# vmdump, run inside ROOT, under the name makedumpfile: its version line,
# and the plugins and profile it finds there.
runs_as_makedumpfile() {
    local out
    out=$(env -u VMDUMP_PLUGIN_PATH -u VMDUMP_PROFILE chroot "$1" /sbin/makedumpfile -v 2>&1) || { echo "$out"; return 1; }
    grep -q "^makedumpfile: vmdump $VERSION" <<<"$out" || { echo "$out"; return 1; }
}

finds_its_plugins_and_profile() {
    local out
    out=$(env -u VMDUMP_PLUGIN_PATH -u VMDUMP_PROFILE chroot "$1" /usr/sbin/vmdump plugins 2>&1) || { echo "$out"; return 1; }
    grep -Eq '^c-zlib .* /usr/lib/vmdump/plugins/libvmdump_c_zlib\.so$' <<<"$out" &&
        grep -q '^search path: /usr/lib/vmdump/plugins$' <<<"$out" &&
        grep -q '^system profile: /etc/vmdump/vmdump.toml$' <<<"$out" || { echo "$out"; return 1; }
}

# ---- 2. the swap, both ways ---------------------------------------------------------

test_swap() {
    local r=$ROOT out
    make_root "$r"
    step "install the stand-ins: makedumpfile, kdump-utils (requires makedumpfile)" \
        dnf_in "$r" install testroot-base makedumpfile kdump-utils
    check "makedumpfile is the stand-in's file" is_standin "$r" /usr/sbin/makedumpfile

    if out=$(dnf_in "$r" install vmdump-makedumpfile 2>&1); then
        not_ok "plain dnf install vmdump-makedumpfile is refused (it was installed)"
    else
        check "plain dnf install vmdump-makedumpfile is refused: it conflicts with makedumpfile" \
            contains "$out" 'conflicts with makedumpfile provided by makedumpfile-1\.7\.9-1' 
    fi
    check "... and changed nothing" not_installed "$r" vmdump
    if out=$(rpm_in "$r" -U --test "$PWD/$VMDUMP_RPM" "$PWD/$MKD_RPM" 2>&1); then
        not_ok "rpm -U vmdump-makedumpfile is refused too (rpm -U --test passed)"
    else
        check "rpm -U vmdump-makedumpfile is refused too: makedumpfile conflicts with it" \
            contains "$out" 'makedumpfile conflicts with vmdump-makedumpfile' 
    fi

    set_old_stamp "$r"
    step "dnf swap makedumpfile vmdump-makedumpfile" dnf_in "$r" swap makedumpfile vmdump-makedumpfile
    check "vmdump-makedumpfile and vmdump installed, makedumpfile gone" \
        eval "installed $r vmdump-makedumpfile && installed $r vmdump && not_installed $r makedumpfile"
    check "kdump-utils stays: vmdump-makedumpfile provides its makedumpfile" \
        eval "installed $r kdump-utils && [[ \$(rpm_in $r -q --whatprovides makedumpfile) == vmdump-makedumpfile-* ]]"
    check "every dependency of the root is met (rpm -Va --nofiles)" rpm_in "$r" -Va --nofiles
    check "the files are as packaged (rpm -V vmdump vmdump-makedumpfile)" rpm_in "$r" -V vmdump vmdump-makedumpfile
    check "/usr/sbin/makedumpfile -> vmdump" is_link_to_vmdump "$r" /usr/sbin/makedumpfile vmdump
    check "/sbin/makedumpfile, the path kdump-utils' dracut module installs, is vmdump" \
        is_link_to_vmdump "$r" /sbin/makedumpfile vmdump
    check "/usr/sbin/vmdump 0755" has_mode "$r" /usr/sbin/vmdump 755
    check "/etc/vmdump/vmdump.toml 0644, a config file" \
        eval "has_mode $r /etc/vmdump/vmdump.toml 644 && rpm_in $r -qc vmdump | grep -qx /etc/vmdump/vmdump.toml"
    check "the dracut module: /usr/lib/dracut/modules.d/95vmdump/module-setup.sh 0755, naming /usr/sbin/vmdump" \
        eval "has_mode $r /usr/lib/dracut/modules.d/95vmdump/module-setup.sh 755 &&
              grep -qx VMDUMP_BIN=/usr/sbin/vmdump $r/usr/lib/dracut/modules.d/95vmdump/module-setup.sh"
    check "the plugins 0644 in /usr/lib/vmdump/plugins" \
        eval "has_mode $r /usr/lib/vmdump/plugins/libvmdump_c_zlib.so 644 && has_mode $r /usr/lib/vmdump/plugins 755"
    check "man makedumpfile: man1/makedumpfile.1.gz -> vmdump.1.gz" \
        eval "[[ \$(readlink $r/usr/share/man/man1/makedumpfile.1.gz) == vmdump.1.gz && -f $r/usr/share/man/man1/vmdump.1.gz ]]"
    check "%posttrans touched /etc/kdump.conf (kdumpctl rebuilds at its next start)" touched "$r"

    copy_host_libraries "$r"
    check "vmdump runs in the root as makedumpfile (makedumpfile -v)" runs_as_makedumpfile "$r"
    check "vmdump in the root finds its plugins and /etc/vmdump/vmdump.toml" finds_its_plugins_and_profile "$r"

    set_old_stamp "$r"
    step "dnf reinstall kdump-utils" dnf_in "$r" reinstall kdump-utils
    check "%triggerin -- kdump-utils touched /etc/kdump.conf" touched "$r"
    set_old_stamp "$r"
    step "dnf reinstall vmdump" dnf_in "$r" reinstall vmdump
    check "%triggerin -- vmdump touched /etc/kdump.conf" touched "$r"

    # What dist/README.md warns of: remove, not swap, takes kdump-utils along.
    out=$(dnf_in "$r" remove --assumeno vmdump-makedumpfile 2>&1) || true
    check "dnf remove vmdump-makedumpfile would remove kdump-utils too (use dnf swap)" \
        contains "$out" '^ kdump-utils +noarch' 

    set_old_stamp "$r"
    step "dnf swap vmdump-makedumpfile makedumpfile" dnf_in "$r" swap vmdump-makedumpfile makedumpfile
    check "makedumpfile back, vmdump-makedumpfile gone, kdump-utils stays" \
        eval "installed $r makedumpfile && not_installed $r vmdump-makedumpfile && installed $r kdump-utils"
    # dnf's clean_requirements_on_remove: vmdump came in for vmdump-makedumpfile alone.
    check "vmdump, which the first swap brought in, left with vmdump-makedumpfile" not_installed "$r" vmdump
    check "/usr/sbin/makedumpfile is the stand-in's file again" is_standin "$r" /usr/sbin/makedumpfile
    check "%postun touched /etc/kdump.conf" touched "$r"
    check "man1/makedumpfile.1.gz gone with it" test ! -e "$r/usr/share/man/man1/makedumpfile.1.gz" -a ! -L "$r/usr/share/man/man1/makedumpfile.1.gz"
    check "every dependency of the root is met (rpm -Va --nofiles)" rpm_in "$r" -Va --nofiles
}

# A fresh install of kdump-utils, both providers of makedumpfile in the
# repository: dnf takes the distribution's.
test_fresh_install() {
    make_root "$FRESH"
    step "fresh dnf install kdump-utils" dnf_in "$FRESH" install testroot-base kdump-utils
    check "a fresh install takes the distribution's makedumpfile, not vmdump-makedumpfile" \
        eval "installed $FRESH makedumpfile && not_installed $FRESH vmdump-makedumpfile"
    test_fresh_install_control
}

# The control of the check above: it is the version provided that decides.
# A package that provides makedumpfile above the distribution's
# (1.7.9-100) is taken instead.
test_fresh_install_control() {
    local r=$RUN/control repo=$RUN/repo-control
    mkdir -p "$repo"
    cp "$REPO"/*.rpm "$repo/"
    build_standin makedumpfile-hijack "Name: makedumpfile-hijack
Version: 0.1.0
Summary: Provides makedumpfile above the distribution's version
Provides: makedumpfile = 1.7.9-100
Conflicts: makedumpfile
$STANDIN_HEAD
%files" "$repo" >/dev/null
    createrepo_c "$repo" >/dev/null
    make_root "$r"
    REPO=$repo step "control: fresh dnf install kdump-utils, with a provider of makedumpfile = 1.7.9-100" \
        dnf_in "$r" install testroot-base kdump-utils
    check "control: that provider is taken, not makedumpfile 1.7.9-1 (the check above tells)" \
        eval "installed $r makedumpfile-hijack && not_installed $r makedumpfile"
}

# SUSE's kdump: /etc/sysconfig/kdump is the file touched (no kdump.conf there).
test_suse_kdump() {
    local r=$SUSE
    make_root "$r"
    step "SUSE: install the stand-ins: makedumpfile, kdump (requires makedumpfile)" \
        dnf_in "$r" install testroot-base makedumpfile kdump
    set_old_stamp "$r" /etc/sysconfig/kdump
    step "SUSE: dnf swap makedumpfile vmdump-makedumpfile" dnf_in "$r" swap makedumpfile vmdump-makedumpfile
    check "SUSE: kdump stays" installed "$r" kdump
    check "SUSE: %posttrans touched /etc/sysconfig/kdump (mkdumprd rebuilds at the next start)" \
        touched "$r" /etc/sysconfig/kdump
    set_old_stamp "$r" /etc/sysconfig/kdump
    step "SUSE: dnf reinstall kdump" dnf_in "$r" reinstall kdump
    check "SUSE: %triggerin -- kdump touched /etc/sysconfig/kdump" touched "$r" /etc/sysconfig/kdump
    set_old_stamp "$r" /etc/sysconfig/kdump
    step "SUSE: dnf swap vmdump-makedumpfile makedumpfile" dnf_in "$r" swap vmdump-makedumpfile makedumpfile
    check "SUSE: %postun touched /etc/sysconfig/kdump" touched "$r" /etc/sysconfig/kdump
    check "SUSE: /usr/sbin/makedumpfile is the stand-in's file again" is_standin "$r" /usr/sbin/makedumpfile
}

# ---- 3. Fedora 42's layout: /usr/sbin -> bin ---------------------------------------

# The stand-in makedumpfile owns /usr/bin/makedumpfile (%_sbindir is /usr/bin
# there); vmdump-makedumpfile's /usr/sbin/makedumpfile is the same file.
test_f42_layout() {
    local r=$F42 repo=$RUN/repo-f42
    mkdir -p "$repo"
    cp "$REPO"/*.rpm "$repo/"
    rm "$repo/$STANDIN_MKD.noarch.rpm"
    standin_makedumpfile "$repo" /usr/bin >/dev/null
    createrepo_c "$repo" >/dev/null
    make_root "$r" f42
    REPO=$repo step "F42 layout: install the stand-ins (makedumpfile in /usr/bin)" \
        dnf_in "$r" install testroot-base makedumpfile kdump-utils
    REPO=$repo step "F42 layout: dnf swap makedumpfile vmdump-makedumpfile" \
        dnf_in "$r" swap makedumpfile vmdump-makedumpfile
    check "F42 layout: /usr/bin/makedumpfile is vmdump (through /usr/sbin -> bin)" \
        is_link_to_vmdump "$r" /usr/bin/makedumpfile vmdump
    check "F42 layout: the files are as packaged" rpm_in "$r" -V vmdump vmdump-makedumpfile
    REPO=$repo step "F42 layout: dnf swap vmdump-makedumpfile makedumpfile" \
        dnf_in "$r" swap vmdump-makedumpfile makedumpfile
    check "F42 layout: /usr/bin/makedumpfile is the stand-in's file again" is_standin "$r" /usr/bin/makedumpfile
}

main() {
    parse_args "$@"
    ensure_tools
    rm -rf "$RUN"
    mkdir -p "$LOGS"
    ensure_busybox
    find_rpms
    lint
    check_declarations
    # Only for packages built here and now, from target/release.
    ((built)) && check_reproducible
    step "stand-in packages and the local repository (createrepo_c)" make_repo
    test_swap
    test_fresh_install
    test_suse_kdump
    test_f42_layout
    finish
}

main "$@"
