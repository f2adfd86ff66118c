# shellcheck shell=bash
# Chroots for the project's tests (scripts/test-packages.sh): the kernel's
# file systems mounted in them, commands run in them with a clean
# environment, trees removed without crossing into a mount.

# proc, a /dev of its own on a tmpfs (no device node of the host is ever
# reachable from the chroot, so removing the tree cannot remove one), and /tmp.
mount_api() {
    local root=$1
    mount -t proc proc "$root/proc"
    mount -t tmpfs -o mode=0755,nosuid tmpfs "$root/dev"
    mknod -m 0666 "$root/dev/null" c 1 3
    mknod -m 0666 "$root/dev/zero" c 1 5
    mknod -m 0666 "$root/dev/full" c 1 7
    mknod -m 0666 "$root/dev/random" c 1 8
    mknod -m 0666 "$root/dev/urandom" c 1 9
    mknod -m 0666 "$root/dev/tty" c 5 0
    # /tmp in memory: the images, their unpacked trees and the dumps (about
    # 500 MiB) never touch the disk, and nothing of them is left to remove.
    mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/tmp"
    ln -s /proc/self/fd "$root/dev/fd"
    ln -s /proc/self/fd/0 "$root/dev/stdin"
    ln -s /proc/self/fd/1 "$root/dev/stdout"
    ln -s /proc/self/fd/2 "$root/dev/stderr"
    mkdir "$root/dev/pts" "$root/dev/shm"
}

# Unmount everything under DIR, deepest first.
unmount_under() {
    local dir mnt
    dir=$(realpath -m "$1")
    while read -r mnt; do
        umount -l "$mnt"
    done < <(awk -v d="$dir" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r)
}

remove_tree() {
    [[ -e $1 ]] || return 0
    unmount_under "$1"
    rm -rf --one-file-system "$1"
}

# in_chroot ROOT CMD...: run CMD in the chroot ROOT with a clean environment.
in_chroot() {
    local root=$1
    shift
    chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
apt_in() {
    local root=$1
    shift
    in_chroot "$root" apt-get -y -q -o Dpkg::Use-Pty=0 -o APT::Install-Recommends=false "$@"
}
