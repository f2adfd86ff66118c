#!/bin/bash
# dracut module of vmdump: puts vmdump, the plugins that are not built in, and
# the system profile into the initramfs.
#
# When it is included:
# - asked for: `dracut -a vmdump`, `add_dracutmodules+=" vmdump "` in a
#   dracut.conf.d file, or `dracut_args --add vmdump` in kdump-utils'
#   /etc/kdump.conf;
# - by itself in the kdump initramfs that kdump-utils (Fedora, RHEL) builds,
#   when makedumpfile is vmdump there (package vmdump-makedumpfile, or a
#   symlink /usr/sbin/makedumpfile -> vmdump): its mkdumprd exports
#   IN_KDUMP=1 (which kdump-utils' own modules test), adds the module
#   kdumpbase (`--add kdumpbase`, or add_dracutmodules=' kdumpbase ' in its
#   /usr/lib/kdump/dracut.conf.d/99-kdump.conf) and lets dracut choose the
#   rest, and 99kdumpbase installs /sbin/makedumpfile, so vmdump itself is
#   already in; this module adds what it reads besides (a profile that names
#   a filter or a vendor plugin would otherwise fail in the capture kernel);
# - in no other image: check() answers 255 (only when asked), as a boot
#   initramfs gains nothing from a dump tool, and a kdump initramfs with the
#   real makedumpfile does not run vmdump.

# Where vmdump is installed; scripts/install.sh rewrites these three lines for
# another --prefix, --plugindir or --sysconfdir.
VMDUMP_BIN=/usr/sbin/vmdump
VMDUMP_PLUGINDIR=/usr/lib/vmdump/plugins
VMDUMP_SYSCONF=/etc/vmdump/vmdump.toml

# /sbin/makedumpfile, the path 99kdumpbase installs, is vmdump.
makedumpfile_is_vmdump() {
    local mk
    mk=$(readlink -f "${dracutsysrootdir-}/sbin/makedumpfile") || return 1
    [[ -x $mk && $mk == "$(readlink -f "${dracutsysrootdir-}$VMDUMP_BIN")" ]]
}

# kdump-utils' mkdumprd is building: it exports IN_KDUMP, or asks for kdumpbase.
building_kdump_initramfs() {
    [[ -n ${IN_KDUMP-} ]] ||
        [[ " ${add_dracutmodules-} ${force_add_dracutmodules-} " == *" kdumpbase "* ]]
}

check() {
    require_binaries "$VMDUMP_BIN" || return 1
    if building_kdump_initramfs && makedumpfile_is_vmdump; then
        return 0
    fi
    return 255
}

depends() {
    return 0
}

# dracut ignores what install() returns, so a file that cannot be installed
# stops the build here: an initramfs without it would lose the dump.
must() {
    "$@" && return 0
    dfatal "vmdump: could not install ${*: -1} into the initramfs"
    exit 1
}

install() {
    local plugin
    must inst_binary "$VMDUMP_BIN"
    # inst_library brings the libraries each plugin needs (vmdump dlopens them).
    for plugin in "${dracutsysrootdir-}$VMDUMP_PLUGINDIR"/*.so; do
        [[ -e $plugin ]] || continue
        must inst_library "${plugin#"${dracutsysrootdir-}"}"
    done
    if [[ -e ${dracutsysrootdir-}$VMDUMP_SYSCONF ]]; then
        must inst_simple "$VMDUMP_SYSCONF"
    fi
    # The files beside the profile: the configs its filters name (erase.conf).
    local conf
    for conf in "${dracutsysrootdir-}${VMDUMP_SYSCONF%/*}"/*; do
        [[ -f $conf && $conf != *.new && $conf != *.dpkg-* ]] || continue
        must inst_simple "${conf#"${dracutsysrootdir-}"}"
    done
    # A capture script written for makedumpfile then finds vmdump under that
    # name (99kdumpbase installs the same link; the second inst is a no-op).
    if makedumpfile_is_vmdump; then
        must inst /sbin/makedumpfile
    fi
    return 0
}
