#!/usr/bin/env bash
# Builds vmdump and installs it, as `make install` would:
#
#   $PREFIX/sbin/vmdump                      the binary (zlib, zstd, lzo, snappy built in)
#   $PLUGINDIR/*.so                          the plugins that are not built in
#                                            (c-zlib, filter-pfn-ranges, filter-pattern,
#                                            erase, keep-tasks, drop-tasks)
#   $PREFIX/share/vmdump/erase.conf          the erase filter's sample config
#   $PLUGINDIR-isal/libvmdump_compress_zlib.so  the ISA-L zlib, which replaces the built-in
#                                            zlib only where a profile names its directory
#   $PREFIX/share/vmdump/isal-zlib.toml      that profile (config/isal-zlib.toml)
#   $PREFIX/include/vmdump/vmdump_plugin.h   the plugin contract, for vendors
#   $PREFIX/share/man/man1/vmdump.1          the man page
#   $SYSCONFDIR/vmdump/vmdump.toml           the system profile (kept if it exists)
#   $PREFIX/share/initramfs-tools/hooks/vmdump     initramfs-tools hook
#   $PREFIX/lib/dracut/modules.d/95vmdump/         dracut module
#
# Usage: scripts/install.sh [--destdir DIR] [--prefix DIR] [--sysconfdir DIR]
#                           [--plugindir DIR] [--no-build] [--no-lzo]
# The same settings may come from the environment: DESTDIR, PREFIX (default
# /usr), SYSCONFDIR (default /etc), PLUGINDIR (default $PREFIX/lib/vmdump/plugins).
# PLUGINDIR and SYSCONFDIR are compiled into the binary (where it looks for
# plugins and for the system profile), so they are set at build time;
# DESTDIR is only where the files are staged (packages).
# --no-lzo builds without the GPL-2.0 LZO code: the binary is then
# MIT OR Apache-2.0, and the LZO plugin file (GPL-2.0) is installed beside
# it so that -l still works (README, Licences).
set -euo pipefail
cd "$(dirname "$0")/.."

DESTDIR=${DESTDIR:-} PREFIX=${PREFIX:-/usr} SYSCONFDIR=${SYSCONFDIR:-/etc} PLUGINDIR=${PLUGINDIR:-}
build=1 features=()
# The plugin files installed, as "cargo package:file": those the binary has
# not built in.
plugins=(vmdump-compress-c-zlib:libvmdump_c_zlib.so vmdump-filter-pfn-ranges:libvmdump_filter_pfn_ranges.so
    vmdump-filter-pattern:libvmdump_filter_pattern.so vmdump-filter-erase:libvmdump_filter_erase.so
    vmdump-filter-keep-tasks:libvmdump_filter_keep_tasks.so vmdump-filter-c-drop-tasks:libvmdump_filter_drop_tasks.so)
# Named like the built-in zlib (it replaces it by name), so kept apart: in
# $PLUGINDIR it would replace it for every run (build.rs of the crate).
isal=vmdump-compress-isal-zlib:isal/libvmdump_compress_zlib.so
while (($#)); do
    case $1 in
        --destdir) DESTDIR=$2; shift 2 ;;
        --prefix) PREFIX=$2; shift 2 ;;
        --sysconfdir) SYSCONFDIR=$2; shift 2 ;;
        --plugindir) PLUGINDIR=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        --no-lzo) features=(--no-default-features) plugins+=(vmdump-compress-lzo-so:libvmdump_compress_lzo.so); shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
PLUGINDIR=${PLUGINDIR:-$PREFIX/lib/vmdump/plugins}
ISALDIR=$PLUGINDIR-isal
for dir in "$PREFIX" "$SYSCONFDIR" "$PLUGINDIR"; do
    [[ $dir == /* ]] || { echo "install.sh: $dir is not an absolute path" >&2; exit 2; }
done

# Compiled in only when they differ from the binary's defaults, so that the
# default install reuses the build of `cargo build --release` (a change of
# these variables rebuilds the host).
compiled_in() { # VARIABLE VALUE DEFAULT
    if [[ $2 == "$3" ]]; then unset "$1"; else export "$1=$2"; fi
}
compiled_in VMDUMP_PLUGIN_DIR "$PLUGINDIR" /usr/lib/vmdump/plugins
compiled_in VMDUMP_SYSCONFDIR "$SYSCONFDIR" /etc
release=${CARGO_TARGET_DIR:-target}/release
if ((build)); then
    source scripts/lib/tools.sh
    ensure_build_deps
    cargo build --release --locked -p vmdump "${features[@]}"
    packages=()
    for plugin in "${plugins[@]}" "$isal"; do packages+=(-p "${plugin%%:*}"); done
    cargo build --release --locked "${packages[@]}"
fi
# The directories the binary was built for (`vmdump plugins` names them).
built=$(env -u VMDUMP_PLUGIN_PATH "$release/vmdump" plugins)
if ! grep -q "^search path: .*$PLUGINDIR\$" <<<"$built" || ! grep -q "^system profile: $SYSCONFDIR/vmdump/vmdump.toml" <<<"$built"; then
    echo "install.sh: $release/vmdump was built for other directories:" >&2
    grep -E '^(search path|system profile):' <<<"$built" >&2
    echo "(run without --no-build, or build with VMDUMP_PLUGIN_DIR and VMDUMP_SYSCONFDIR set)" >&2
    exit 1
fi

root=$DESTDIR
install -D -m 0755 "$release/vmdump" "$root$PREFIX/sbin/vmdump"
install -d -m 0755 "$root$PLUGINDIR"
for plugin in "${plugins[@]}"; do
    install -m 0644 "$release/${plugin#*:}" "$root$PLUGINDIR/${plugin#*:}"
done
install -d -m 0755 "$root$ISALDIR"
install -m 0644 "$release/${isal#*:}" "$root$ISALDIR/libvmdump_compress_zlib.so"
install -d -m 0755 "$root$PREFIX/share/vmdump"
sed "s|\"/usr/lib/vmdump/plugins-isal\"|\"$ISALDIR\"|" config/isal-zlib.toml >"$root$PREFIX/share/vmdump/isal-zlib.toml"
chmod 0644 "$root$PREFIX/share/vmdump/isal-zlib.toml"
install -m 0644 plugins/filter-erase/erase.conf "$root$PREFIX/share/vmdump/erase.conf"
install -D -m 0644 sdk/include/vmdump_plugin.h "$root$PREFIX/include/vmdump/vmdump_plugin.h"
install -D -m 0644 man/vmdump.1 "$root$PREFIX/share/man/man1/vmdump.1"
profile=$root$SYSCONFDIR/vmdump/vmdump.toml
if [[ -e $profile ]]; then
    echo "install.sh: keeping the existing $profile (the new one is $profile.new)" >&2
    profile=$profile.new
fi
install -D -m 0644 config/system.toml "$profile"
# The hook and the module name the installed paths in three lines of their
# own: set them to this install's.
install_naming_paths() {
    install -d -m 0755 "$(dirname "$2")"
    sed -e "s|^VMDUMP_BIN=.*|VMDUMP_BIN=$PREFIX/sbin/vmdump|" \
        -e "s|^VMDUMP_PLUGINDIR=.*|VMDUMP_PLUGINDIR=$PLUGINDIR|" \
        -e "s|^VMDUMP_SYSCONF=.*|VMDUMP_SYSCONF=$SYSCONFDIR/vmdump/vmdump.toml|" "$1" >"$2"
    chmod 0755 "$2"
}
install_naming_paths dist/initramfs-tools/hooks/vmdump "$root$PREFIX/share/initramfs-tools/hooks/vmdump"
install_naming_paths dist/dracut/95vmdump/module-setup.sh "$root$PREFIX/lib/dracut/modules.d/95vmdump/module-setup.sh"
echo "installed vmdump into ${root:-/}: $PREFIX/sbin/vmdump, plugins in $PLUGINDIR, profile $SYSCONFDIR/vmdump/vmdump.toml," \
    "the ISA-L zlib in $ISALDIR (on with $PREFIX/share/vmdump/isal-zlib.toml)"
