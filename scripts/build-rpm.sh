#!/usr/bin/env bash
# Builds vmdump's RPM packages for Fedora, RHEL and SUSE with rpmbuild and
# the hand-written dist/rpm/vmdump.spec, from what scripts/install.sh
# installs into a staging directory (prebuilt binaries, as build-deb.sh):
#
#   vmdump               /usr/sbin/vmdump, the plugins, /etc/vmdump/vmdump.toml
#                        (%config(noreplace)), the man page, the dracut module;
#                        the ISA-L zlib in /usr/lib/vmdump/plugins-isal, off until
#                        a profile names it
#   vmdump-makedumpfile  /usr/sbin/makedumpfile -> vmdump, in the place of the
#                        distribution's makedumpfile (Provides and Conflicts:
#                        makedumpfile): dnf swap makedumpfile vmdump-makedumpfile
#                        (noarch: links and scriptlets)
#   vmdump-devel         the plugin header (noarch)
#
# Usage: scripts/build-rpm.sh [--out DIR] [--no-build] [--no-lzo]
#   --out DIR   where the .rpm files go (default target/rpm)
#   --no-build  package the binaries already in target/release (install.sh --no-build)
#   --no-lzo    build without the GPL-2.0 LZO code (the binary is then MIT OR Apache-2.0)
# Packager: DEBFULLNAME and DEBEMAIL when set, else the author of the commit.
# Two builds of one commit give the same bytes (time stamps are the commit's).
# Runs as root on Debian 12; installs rpm (rpmbuild), binutils and file when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/crates.sh # workspace_version, linked_crates

OUT=target/rpm
SPEC=dist/rpm/vmdump.spec
install_args=()

parse_args() {
    while (($#)); do
        case $1 in
            --out) OUT=$2; shift 2 ;;
            --no-build) install_args+=(--no-build); shift ;;
            --no-lzo) install_args+=(--no-lzo); shift ;;
            -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
            *) echo "build-rpm.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        esac
    done
}

apt_updated=0
apt_install() {
    ((apt_updated)) || { apt-get update -qq; apt_updated=1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_tools() {
    command -v rpmbuild >/dev/null || apt_install rpm
    # binutils: strip and objdump; file: what brp-strip-comment-note runs
    # to find the ELF files.
    command -v strip >/dev/null && command -v objdump >/dev/null || apt_install binutils
    command -v file >/dev/null || apt_install file
}

# Run install.sh into the staging tree, with the distribution's directories
# whatever the environment says (build-deb.sh does the same).
stage() {
    env -u DESTDIR -u PREFIX -u SYSCONFDIR -u PLUGINDIR \
        scripts/install.sh --destdir "$1" --prefix /usr --sysconfdir /etc "${install_args[@]}"
}

# As build-deb.sh (dh_strip): debug symbols out, the dynamic symbol table
# (the plugins' exported entry) kept. rpmbuild's brp-strip would keep the
# symbol table (strip -g), for a -debuginfo package that this build does not make.
strip_elf() {
    local root=$1 f
    strip "$root/usr/sbin/vmdump"
    for f in "$root"/usr/lib/vmdump/plugins/*.so "$root"/usr/lib/vmdump/plugins-isal/*.so; do
        strip --strip-unneeded "$f"
    done
}

no_lzo() { [[ " ${install_args[*]} " == *" --no-lzo "* ]]; }

# The licence line that the binary prints about itself (LZO built in or not).
binary_licence() {
    VMDUMP_PLUGIN_PATH='' VMDUMP_PROFILE=builtin "$1/usr/sbin/vmdump" plugins |
        sed -n 's/^licence of this binary: //; T; s/ (.*//; p'
}

# The License tag, as Fedora writes it for Rust packages: the licence of
# every crate linked in (vmdump's own among them), SPDX ids, each term once,
# joined with AND. Cargo's "A/B" is "A OR B"; its deprecated GPL-2.0 is GPL-2.0-only.
license_tag() {
    awk -F'|' '
        function term(t,   n, alt, i, j, tmp, out) {
            gsub(/^ +| +$/, "", t)
            if (t ~ /[()]/) return "(" t ")"
            n = split(t, alt, / OR /)
            for (i = 1; i <= n; i++) {
                if (alt[i] == "GPL-2.0") alt[i] = "GPL-2.0-only"
                if (alt[i] == "GPL-2.0+") alt[i] = "GPL-2.0-or-later"
            }
            for (i = 2; i <= n; i++)             # sort the alternatives
                for (j = i; j > 1 && alt[j-1] > alt[j]; j--) { tmp = alt[j]; alt[j] = alt[j-1]; alt[j-1] = tmp }
            out = alt[1]
            for (i = 2; i <= n; i++) out = out " OR " alt[i]
            return n > 1 ? "(" out ")" : out
        }
        {
            l = $2
            gsub(/\//, " OR ", l)
            if (l ~ /[()]/) { seen[term(l)] = 1; next }
            n = split(l, parts, / AND /)
            for (i = 1; i <= n; i++) seen[term(parts[i])] = 1
        }
        END { for (t in seen) print t }' | LC_ALL=C sort | paste -sd'\n' | sed ':a; N; s/\n/ AND /; ba'
}

# The licence file (%license LICENSES): what is under which licence, the
# crates linked in, and the licence texts.
write_licences() {
    local file=$1 licence=$2 crates=$3
    {
        cat <<EOF
vmdump: licences

The source of vmdump (host, SDK, plugins) is MIT OR Apache-2.0, except the
LZO code (plugins/compress-lzo, which links liblzo2's encoder and decodes
with the crate lzo1x), which is GPL-2.0-only. The Rust crates listed below
are compiled into /usr/sbin/vmdump and the plugins (linked statically), so
their licences apply to those files as well.

/usr/sbin/vmdump as built for this package is licensed under ${licence}
$(if [[ $licence == GPL-2.0* ]]; then echo "(the LZO code is built in; a build without it is MIT OR Apache-2.0)."; else echo "(no LZO code is built in)."; fi)
The plugins in /usr/lib/vmdump/plugins and /usr/lib/vmdump/plugins-isal,
the header /usr/include/vmdump/vmdump_plugin.h, the profiles
/etc/vmdump/vmdump.toml and /usr/share/vmdump/*.toml, and the dracut module
are MIT OR Apache-2.0. The ISA-L zlib plugin links the system's ISA-L
(libisal.so.2) dynamically.

Crates linked in (name version: licence):
EOF
        sed 's/^\([^|]*\)|\(.*\)$/  \1: \2/' <<<"$crates"
        echo
        echo "Licence texts:"
        echo
        # The texts are kept in debian/copyright's form (paragraphs, " ." blank lines).
        sed 's/^ \.$//; s/^ //' dist/debian/copyright.licences
    } >"$file"
}

# The %changelog entry: which commit the packages were built from.
changelog_entry() {
    printf '* %s %s - %s-1\n- Built by scripts/build-rpm.sh from commit %s%s\n' \
        "$(LC_ALL=C date -u -d "@$SOURCE_DATE_EPOCH" '+%a %b %d %Y')" "$PACKAGER" "$VERSION" \
        "$(git rev-parse --short=12 HEAD)" \
        "$(git diff --quiet HEAD -- 2>/dev/null || printf ' (with uncommitted changes)')"
}

main() {
    parse_args "$@"
    ensure_tools
    VERSION=$(workspace_version)
    [[ $VERSION =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || { echo "build-rpm.sh: no usable version in Cargo.toml: '$VERSION'" >&2; exit 1; }
    # rpm's Version has no '-': a Cargo pre-release 1.0.0-rc1 is 1.0.0~rc1 (sorts before 1.0.0).
    VERSION=${VERSION//-/\~}
    PACKAGER=${DEBEMAIL:+${DEBFULLNAME:-vmdump} <$DEBEMAIL>}
    PACKAGER=${PACKAGER:-$(git log -1 --format='%an <%ae>')}
    local url crates licence no_lzo_arg=()
    url=$(sed -n 's/^repository *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)
    no_lzo && no_lzo_arg=(--no-lzo)
    crates=$(linked_crates "${no_lzo_arg[@]}")

    mkdir -p "$OUT"
    # global: the EXIT trap runs after main has returned
    work=$(mktemp -d "${TMPDIR:-/tmp}/vmdump-rpm.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$work/SOURCES" "$work/SPECS" "$work/BUILD"
    stage "$work/stage"
    strip_elf "$work/stage"
    # After the build: exported during it, it would make cargo rebuild the C
    # code (cc-rs watches it) each time this script and test.sh take turns.
    SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
    export SOURCE_DATE_EPOCH
    licence=$(binary_licence "$work/stage")
    [[ -n $licence ]] || { echo "build-rpm.sh: vmdump plugins printed no licence line" >&2; exit 1; }
    write_licences "$work/SOURCES/LICENSES" "$licence" "$crates"
    cp sdk/README.md "$work/SOURCES/README.md"
    { cat "$SPEC"; changelog_entry; } >"$work/SPECS/vmdump.spec"

    # Debian's rpm is not Fedora's: no redhat-rpm-config, so every setting
    # the packages depend on is given here rather than taken from its defaults.
    #  _sbindir: /usr/sbin, the makedumpfile path of every target (Fedora 42's
    #    own is /usr/bin, where /usr/sbin is a link to bin); Debian's is the same
    #  _binary_payload: xz, which every rpm of these distributions reads
    #  _buildhost, SOURCE_DATE_EPOCH as build time and clamped file times:
    #    reproducible packages
    #  _rpmdir, _build_name_fmt: every package in OUT, named as dnf names them
    #  _docdir_fmt: /usr/share/licenses/vmdump, Fedora's (Debian's adds the version)
    #  __os_install_post: the man pages gzipped (Debian's brp-compress is
    #    bash, run by /bin/sh, dash, it fails) and .comment and .note out;
    #    strip_elf has stripped (no -debuginfo package to keep symbols for)
    rpmbuild -bb --quiet \
        --define "_topdir $work" \
        --define "_builddir $work/BUILD" \
        --define "_rpmdir $(realpath "$OUT")" \
        --define "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm" \
        --define "_docdir_fmt %%{NAME}" \
        --define "__os_install_post bash /usr/lib/rpm/brp-compress; /usr/lib/rpm/brp-strip-comment-note /usr/bin/strip /usr/bin/objdump" \
        --define "_sbindir /usr/sbin" \
        --define "_binary_payload w6.xzdio" \
        --define "_buildhost reproducible" \
        --define "use_source_date_epoch_as_buildtime 1" \
        --define "clamp_mtime_to_source_date_epoch 1" \
        --define "packager $PACKAGER" \
        --define "vmdump_version $VERSION" \
        --define "vmdump_stage $work/stage" \
        --define "vmdump_license $(license_tag <<<"$crates")" \
        --define "vmdump_url $url" \
        "$work/SPECS/vmdump.spec"
    local rpm arch
    arch=$(rpm --eval %_arch)
    for rpm in "vmdump-$VERSION-1.$arch" "vmdump-makedumpfile-$VERSION-1.noarch" "vmdump-devel-$VERSION-1.noarch"; do
        [[ -f $OUT/$rpm.rpm ]] || { echo "build-rpm.sh: rpmbuild made no $OUT/$rpm.rpm" >&2; exit 1; }
        echo "built $OUT/$rpm.rpm"
    done
}

main "$@"
