#!/usr/bin/env bash
# Builds vmdump's Debian binary packages with dpkg-deb alone (no debhelper),
# from what scripts/install.sh installs into a staging directory:
#
#   vmdump               /usr/sbin/vmdump, the plugins, the header, the man page,
#                        /etc/vmdump/vmdump.toml (a conffile), the initramfs-tools
#                        hook and the dracut module; the ISA-L zlib in
#                        /usr/lib/vmdump/plugins-isal, off until a profile names it
#   vmdump-makedumpfile  vmdump as makedumpfile: /usr/bin/makedumpfile and
#                        /usr/sbin/makedumpfile are symlinks to vmdump, and the
#                        distribution's files of those names are diverted
#                        (dpkg-divert) to makedumpfile.distrib, back on removal
#
# Usage: scripts/build-deb.sh [--out DIR] [--no-build] [--no-lzo] [--lintian]
#   --out DIR   where the .deb files go (default target/debian)
#   --no-build  package the binaries already in target/release (install.sh --no-build)
#   --no-lzo    build without the GPL-2.0 LZO code (the binary is then MIT OR Apache-2.0)
#   --lintian   run lintian on the packages (installed with apt-get when missing)
# Maintainer: DEBFULLNAME and DEBEMAIL when set, else the author of the commit.
# Runs as root on Debian 12; installs dpkg-dev (dpkg-shlibdeps, strip) when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/crates.sh # workspace_version, linked_crates

OUT=target/debian
install_args=() lintian=0

parse_args() {
    while (($#)); do
        case $1 in
            --out) OUT=$2; shift 2 ;;
            --no-build) install_args+=(--no-build); shift ;;
            --no-lzo) install_args+=(--no-lzo); shift ;;
            --lintian) lintian=1; shift ;;
            -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
            *) echo "build-deb.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        esac
    done
}

apt_updated=0
apt_install() {
    ((apt_updated)) || { apt-get update -qq; apt_updated=1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_tools() {
    command -v dpkg-deb >/dev/null || { echo "build-deb.sh: needs dpkg (a Debian system)" >&2; exit 1; }
    # dpkg-dev: dpkg-shlibdeps; it pulls binutils (strip).
    if ! command -v dpkg-shlibdeps >/dev/null || ! command -v strip >/dev/null; then
        apt_install dpkg-dev
    fi
    if ((lintian)); then command -v lintian >/dev/null || apt_install lintian; fi
    # The lzo codec links liblzo2; the C plugins build against the system
    # zlib and ISA-L (as scripts/lib/tools.sh ensure_build_deps).
    [[ -e /usr/include/lzo/lzo1x.h ]] || apt_install liblzo2-dev
    [[ -e /usr/include/zlib.h ]] || apt_install zlib1g-dev
    [[ -e /usr/include/isa-l/igzip_lib.h ]] || apt_install libisal-dev
}

# Run install.sh into the staging tree of the package vmdump, with the
# distribution's directories whatever the environment says.
stage() {
    env -u DESTDIR -u PREFIX -u SYSCONFDIR -u PLUGINDIR \
        scripts/install.sh --destdir "$1" --prefix /usr --sysconfdir /etc "${install_args[@]}"
}

# As dh_strip: debug symbols out, the dynamic symbol table (the plugins' exported entry) kept.
strip_elf() {
    local root=$1 f
    strip --remove-section=.comment --remove-section=.note "$root/usr/sbin/vmdump"
    for f in "$root"/usr/lib/vmdump/plugins/*.so "$root"/usr/lib/vmdump/plugins-isal/*.so; do
        strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f"
    done
}

# The licence line that the binary prints about itself (LZO built in or not).
binary_licence() {
    VMDUMP_PLUGIN_PATH='' VMDUMP_PROFILE=builtin "$1/usr/sbin/vmdump" plugins |
        sed -n 's/^licence of this binary: //; T; s/ (.*//; p'
}

write_copyright() {
    local file=$1 licence=$2 crate crates years no_lzo=()
    [[ " ${install_args[*]} " == *" --no-lzo "* ]] && no_lzo=(--no-lzo)
    # First, so that a failing cargo tree stops the build (set -e does not see
    # into a process substitution).
    crates=$(linked_crates "${no_lzo[@]}")
    years=$(git log --reverse --format=%ad --date=format:%Y | sed -n '1p;$p' | uniq | paste -sd-)
    {
        cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: vmdump
Comment: The source of vmdump (host, SDK, plugins) is MIT OR Apache-2.0,
 except the LZO code (plugins/compress-lzo, which links Debian's liblzo2 and
 decodes with the crate lzo1x), which is GPL-2.0. The Rust crates listed below are compiled into
 /usr/sbin/vmdump and the plugins (linked statically), so their licences apply
 to those files as well.
 .
EOF
        if [[ $licence == GPL-2.0* ]]; then
            cat <<EOF
 /usr/sbin/vmdump as built for this package has the LZO code built in, so the
 binary as a whole is licensed under ${licence}. (A build without it,
 scripts/build-deb.sh --no-lzo, is MIT OR Apache-2.0.)
EOF
        else
            cat <<EOF
 /usr/sbin/vmdump as built for this package has no LZO code in it (the LZO
 plugin, not part of this package, is GPL-2.0): the binary is licensed under
 ${licence}.
EOF
        fi
        cat <<EOF
 The plugins in /usr/lib/vmdump/plugins and /usr/lib/vmdump/plugins-isal, the
 header /usr/include/vmdump/vmdump_plugin.h, the profiles
 /etc/vmdump/vmdump.toml and /usr/share/vmdump/isal-zlib.toml, the
 initramfs-tools hook and the dracut module are MIT OR Apache-2.0. The ISA-L
 zlib plugin links the system's ISA-L (package libisal2) dynamically.

Files: *
Copyright: ${years} the vmdump developers
License: MIT or Apache-2.0

Files: plugins/compress-lzo/*
Copyright: ${years} the vmdump developers
License: GPL-2.0-only
EOF
        while IFS='|' read -r crate licence; do
            [[ $crate == vmdump* ]] && continue
            printf '\nFiles: cargo-crates/%s/*\nCopyright: the authors of the crate %s (see its Cargo.toml and licence files)\nLicense: %s\nComment: statically linked\n' \
                "${crate/ /-}" "${crate/ / }" "$(sed 's/ OR / or /g; s/ AND / and /g' <<<"$licence")"
        done <<<"$crates"
        echo
        cat dist/debian/copyright.licences
    } >"$file"
}

write_changelog() {
    local file=$1 pkg=$2
    gzip -9n >"$file" <<EOF
$pkg ($VERSION) unstable; urgency=medium

  * Built by scripts/build-deb.sh from commit $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD -- 2>/dev/null || printf '\n    (with uncommitted changes)').

 -- $MAINTAINER  $(date -R -u -d "@$SOURCE_DATE_EPOCH")
EOF
}

write_docs() {
    local root=$1 pkg=$2 licence=$3
    install -d -m 0755 "$root/usr/share/doc/$pkg"
    write_copyright "$root/usr/share/doc/$pkg/copyright" "$licence"
    # A native version (no Debian revision): lintian wants changelog.gz, not changelog.Debian.gz.
    write_changelog "$root/usr/share/doc/$pkg/changelog.gz" "$pkg"
}

installed_size() {
    du -s -k --apparent-size --exclude=DEBIAN "$1" | cut -f1
}

# Depends of the ELF files under $1, from dpkg-shlibdeps (it wants a debian/control).
shlib_depends() {
    local root=$1 tmp elf args=()
    for elf in "$root"/usr/sbin/vmdump "$root"/usr/lib/vmdump/plugins/*.so "$root"/usr/lib/vmdump/plugins-isal/*.so; do
        args+=("-e$elf")
    done
    tmp=$(mktemp -d)
    mkdir "$tmp/debian"
    printf 'Source: vmdump\n\nPackage: vmdump\nArchitecture: any\n' >"$tmp/debian/control"
    (cd "$tmp" && dpkg-shlibdeps -O "${args[@]}") | sed -n 's/^shlibs:Depends=//p'
    rm -rf "$tmp"
}

# write_control ROOT FIELD... DESCRIPTION: Installed-Size goes before the
# description, which ends the stanza by custom.
write_control() {
    local root=$1
    shift
    install -d -m 0755 "$root/DEBIAN"
    {
        printf '%s\n' "${@:1:$#-1}"
        printf 'Installed-Size: %s\n' "$(installed_size "$root")"
        printf '%s\n' "${!#}"
    } >"$root/DEBIAN/control"
}

write_md5sums() {
    local root=$1
    (cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
        xargs -0 -r md5sum) >"$root/DEBIAN/md5sums"
    [[ -s $root/DEBIAN/md5sums ]] || rm "$root/DEBIAN/md5sums"
}

# Modes as dpkg expects them (root:root comes from --root-owner-group), and
# every time stamp the commit's, so that two builds of one commit give the same .deb.
normalise() {
    local root=$1
    find "$root" -type d -exec chmod 0755 {} +
    find "$root" -type f -exec chmod go-w {} +
    find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
}

build_vmdump() {
    local root=$1 licence description
    strip_elf "$root"
    gzip -9n "$root/usr/share/man/man1/vmdump.1"
    licence=$(binary_licence "$root")
    [[ -n $licence ]] || { echo "build-deb.sh: vmdump plugins printed no licence line" >&2; exit 1; }
    write_docs "$root" vmdump "$licence"
    install -d -m 0755 "$root/DEBIAN"
    echo /etc/vmdump/vmdump.toml >"$root/DEBIAN/conffiles"
    # As dh_installinitramfs does for a package with a hook: update-initramfs -u
    # once dpkg is done, so that an image that takes vmdump (VMDUMP_INITRAMFS=yes)
    # gets the new one, or loses it on removal.
    echo "activate-noawait update-initramfs" >"$root/DEBIAN/triggers"
    description="Description: crash-dump tool for Linux, compatible with makedumpfile
 vmdump turns a kdump vmcore (/proc/vmcore in the capture kernel, or any ELF
 vmcore) into a small kdump-compressed file that crash, libkdumpfile, drgn and
 makedumpfile read. Compressors and filters are plugins behind a stable C ABI
 (the header is /usr/include/vmdump/vmdump_plugin.h); $(builtin_codecs "$root")
 are built in. A zlib over Intel's ISA-L ships in /usr/lib/vmdump/plugins-isal,
 used only where a profile names that directory
 (/usr/share/vmdump/isal-zlib.toml).
 .
 Started under the name makedumpfile it takes makedumpfile's options; the
 package vmdump-makedumpfile installs it under that name. An initramfs-tools
 hook and a dracut module put vmdump into a kdump initramfs."
    write_control "$root" "Package: vmdump" "Version: $VERSION" "Architecture: $ARCH" \
        "Maintainer: $MAINTAINER" "Depends: $(shlib_depends "$root")" \
        "Suggests: vmdump-makedumpfile, kdump-tools" "Section: admin" "Priority: optional" "$description"
    write_md5sums "$root"
}

# "zlib, zstd, lzo and snappy", as `vmdump plugins` lists the built-in codecs.
builtin_codecs() {
    VMDUMP_PLUGIN_PATH='' VMDUMP_PROFILE=builtin "$1/usr/sbin/vmdump" plugins |
        awk '$NF == "in" && $(NF-1) == "built" { n[++c] = $1 }
             END { for (i = 1; i <= c; i++) printf "%s%s", n[i], (i == c ? "" : i == c - 1 ? " and " : ", ") }'
}

build_makedumpfile() {
    local root=$1 licence=$2
    install -d -m 0755 "$root/usr/bin" "$root/usr/sbin" "$root/usr/share/man/man1"
    # Relative links, within /usr: they hold in a chroot or an image too.
    ln -s ../sbin/vmdump "$root/usr/bin/makedumpfile"
    ln -s vmdump "$root/usr/sbin/makedumpfile"
    # man makedumpfile shows the tool that runs (section 1 is searched before
    # 8); man 8 makedumpfile is still the distribution's page, not diverted.
    ln -s vmdump.1.gz "$root/usr/share/man/man1/makedumpfile.1.gz"
    write_docs "$root" vmdump-makedumpfile "$licence"
    install -d -m 0755 "$root/DEBIAN"
    install -m 0755 dist/debian/vmdump-makedumpfile.preinst "$root/DEBIAN/preinst"
    install -m 0755 dist/debian/vmdump-makedumpfile.postrm "$root/DEBIAN/postrm"
    write_control "$root" "Package: vmdump-makedumpfile" "Version: $VERSION" "Architecture: $ARCH" \
        "Maintainer: $MAINTAINER" "Depends: vmdump (= $VERSION)" "Section: admin" "Priority: optional" \
        "Description: vmdump installed as makedumpfile (diverts the distribution's)
 Makes vmdump answer to the name makedumpfile (/usr/bin/makedumpfile and
 /usr/sbin/makedumpfile), so that kdump-tools, and any script that runs
 makedumpfile, dump with vmdump. The makedumpfile package's binary, when it is
 installed, is kept as /usr/bin/makedumpfile.distrib (dpkg-divert) and gets its
 name back when this package is removed."
    write_md5sums "$root"
}

deb() {
    local root=$1 pkg
    pkg=$(sed -n 's/^Package: //p' "$root/DEBIAN/control")
    normalise "$root"
    dpkg-deb --root-owner-group -Zxz --build "$root" "$OUT/${pkg}_${VERSION}_${ARCH}.deb" >/dev/null
    echo "$OUT/${pkg}_${VERSION}_${ARCH}.deb"
}

main() {
    parse_args "$@"
    ensure_tools
    VERSION=$(workspace_version)
    ARCH=$(dpkg --print-architecture)
    MAINTAINER=${DEBEMAIL:+${DEBFULLNAME:-vmdump} <$DEBEMAIL>}
    MAINTAINER=${MAINTAINER:-$(git log -1 --format='%an <%ae>')}
    [[ $VERSION =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || { echo "build-deb.sh: no usable version in Cargo.toml: '$VERSION'" >&2; exit 1; }

    local debs=()
    mkdir -p "$OUT"
    # global: the EXIT trap runs after main has returned
    work=$(mktemp -d "${TMPDIR:-/tmp}/vmdump-deb.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    stage "$work/vmdump"
    # After the build: exported during it, it would make cargo rebuild the C
    # code (cc-rs watches it) each time this script and test.sh take turns.
    SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
    export SOURCE_DATE_EPOCH
    build_vmdump "$work/vmdump"
    build_makedumpfile "$work/vmdump-makedumpfile" "$(binary_licence "$work/vmdump")"
    debs+=("$(deb "$work/vmdump")" "$(deb "$work/vmdump-makedumpfile")")
    printf 'built %s\n' "${debs[@]}"
    if ((lintian)); then
        # Tags are reported, not fatal: the report names the ones left and why.
        lintian --display-info --pedantic "${debs[@]}" || true
    fi
}

main "$@"
