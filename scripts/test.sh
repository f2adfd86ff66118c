#!/usr/bin/env bash
# Runs every test of the workspace: one release build of the host and every
# plugin (the tests load the real .so files), then the whole suite, then the
# tests of the whole system (a real kernel crashed under QEMU).
# Usage: scripts/test.sh [extra nextest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/tools.sh
source scripts/lib/garage.sh

# free_space STAGE: the free space where the tests write, before STAGE (a
# full disk fails a test far from its cause; the log shows it).
free_space() {
    local tmp=${TMPDIR:-/tmp}
    echo "== free space before $1: $(df -h --output=avail "$tmp" | tail -n 1 | tr -d ' ') in $tmp, $(df -h --output=avail . | tail -n 1 | tr -d ' ') in the checkout"
}

ensure_test_tools
# The object stores of tests/object_store.rs (issue 42), built once into a
# cache outside the checkout (about 15 minutes the first time), and curl,
# the client that is not vmdump.
apt_ensure curl:curl
ensure_garage > /dev/null
ensure_s3s_fs > /dev/null
prepare_fixtures

# A test keeps its temporary folder when it fails (tests/support/mod.rs);
# clear those of earlier runs so repeated runs do not fill the disk.
rm -rf "${TMPDIR:-/tmp}"/vmdump-test-* 2>/dev/null || true

export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
free_space "the build"
cargo build --workspace --release --locked
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --release --locked --no-fail-fast "$@"
    # nextest does not run doctests (the SDK README's plugin is one)
    cargo test --workspace --release --locked --doc
else
    echo "cargo-nextest not found: running cargo test" >&2
    cargo test --workspace --release --locked --no-fail-fast "$@"
fi

# The binary without the GPL-2.0 LZO code still builds (README, Licences).
cargo check --locked -p vmdump --no-default-features

# Proof under stress (issue 12), reduced forms (about 3 minutes): 40 random
# dumps, each byte-identical to the --threads 1 dump of its codec and level
# and verified against the vmcore; 3 rounds of every fault kind (I/O errors,
# a full tmpfs, a closed pipe, a truncated vmcore, failing plugins,
# signals). By hand: scripts/stress.sh (1000 runs), scripts/faults.sh 20.
scripts/stress.sh 40
scripts/faults.sh 3

# Whole-system tests, as root (CI is): real Debian kernels crashed under
# QEMU with vmdump in their capture kernels, the oldest and the newest of
# the kernel matrix (scripts/kernel-matrix.sh runs them all): bookworm's
# 6.1, judged by Debian's makedumpfile, with one CPU in the capture kernel
# (nr_cpus=1, kdump-tools' and kdump-utils' default) and again with four
# (--cpus 4: kdump-utils' and SUSE's threaded lines, each tool's memory at
# 1, 2 and 4 threads; about 4.5 minutes), and sid's or experimental's newest,
# which no makedumpfile of Debian's judges right and CI cannot build
# upstream's: the checks that need no judge (about 3 minutes each; the
# vmcore-SK72 tests judge 7.2 by upstream's files); Debian's arm64 kernel
# under qemu-system-aarch64, dumped beside Debian's arm64 makedumpfile
# (about 1 minute); kdump in the guest (about 1 minute each): Debian's
# ppc64el kernel under qemu-system-ppc64 (radix and hash MMU) and its arm64
# one under qemu-system-aarch64, dumped beside their Debian makedumpfile,
# and trixie's riscv64 kernel under qemu-system-riscv64, which only
# upstream's makedumpfile judges right (CI cannot build it: the checks
# that need no judge); s390x, whose Debian kernels have no kdump: QEMU's
# dump of bookworm's 6.1, judged by Debian's s390x makedumpfile, and of
# trixie's 6.12 and sid's 7.x (the checks that need no judge); the Debian
# packages,
# the diversion, the initramfs-tools hook and the dracut module in a
# debootstrap chroot (1 to 5 minutes); the RPM packages.
if [[ $(id -u) -ne 0 ]]; then
    echo "error: scripts/capture-test.sh, arm64-test.sh, kdump-arch-test.sh, test-packages.sh and test-rpm.sh need root: run scripts/test.sh as root" >&2
    exit 1
fi
free_space capture-test; scripts/capture-test.sh
free_space "capture-test --suite newest"; scripts/capture-test.sh --suite newest --judge none
free_space arm64-test; scripts/arm64-test.sh
free_space kdump-arch-test; scripts/kdump-arch-test.sh --upstream-judge none
free_space test-packages; scripts/test-packages.sh --no-build
# The RPM packages for Fedora, RHEL and SUSE: rpmlint, and dnf swap both
# ways against stand-ins of makedumpfile and kdump-utils in a scratch
# installroot (half a minute).
free_space test-rpm; scripts/test-rpm.sh --no-build
# Last, so that its verdict (vmdump's memory per worker thread against
# makedumpfile's, issue 41) does not keep the others from running.
free_space "capture-test --cpus 4"; scripts/capture-test.sh --cpus 4
free_space "the end"
