#!/bin/bash
# dracut module: puts vmdump, its plugins and its system profile into the
# initramfs. kdump-utils' 99kdumpbase installs /sbin/makedumpfile; with
# vmdump offered as makedumpfile, that is vmdump, and this module adds the
# plugins and the profile it reads.

check() {
    require_binaries /usr/sbin/vmdump || return 1
    # Only when asked for (dracut -a vmdump) or when building the kdump initramfs.
    return 255
}

depends() {
    return 0
}

install() {
    inst_binary /usr/sbin/vmdump
    local plugin
    for plugin in /usr/lib/vmdump/plugins/*.so; do
        [[ -e $plugin ]] && inst_library "$plugin"
    done
    [[ -e /etc/vmdump/vmdump.toml ]] && inst_simple /etc/vmdump/vmdump.toml
}
