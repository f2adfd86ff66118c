#!/usr/bin/env bash
# Not a test: writes host/link-order.txt, the functions of the vmdump
# binary in the order a dump in a capture kernel first runs them, which
# host/build.rs hands the linker (lld, as a script of section patterns)
# so that they lie side by side. The kernel maps a binary's pages 64 KiB around
# each one touched (fault-around): scattered, the code a dump runs (about
# 0.8 MB for every run here, 0.43 MB for one -l -d 31 dump) touched
# 2.5 MiB of the binary; side by side about 0.55 MiB, the capture
# kernel's peak RSS that much lower.
# The order comes from callgrind runs of the release binary, pinned to one
# CPU as in a capture kernel, on the real fixtures (Linux 6.1 and 7.2), with
# the command lines of kdump-tools and kdump-utils at -d 31 and -d 1, the
# kernel log, vmdump's own default, then kdump-utils' and SUSE's threaded
# lines (two workers). Run it again after large changes:
# tests/link_order.rs says when too few of the listed functions are left.
# Vmcores given as arguments are run too, after the fixtures' (6.1 and
# 7.2): a kernel whose dump runs code of its own, e.g. trixie's 6.12, whose
# vmcore `scripts/capture-test.sh --suite trixie --judge none --keep` saves
# in its run's out/vmcore.
# --append keeps the list's order as it is and appends the functions it
# lacks, in the order found: a list made afresh can place a line's code
# worse than the one it replaces (callgrind's order of first sight moves
# with the code), as it did for kdump-utils' -l line when the threaded
# lines came in (1.08 MiB of vmdump's code resident against 0.96 MiB
# appended); check with the capture test's breakdown of vmdump's peak RSS.
# Usage: scripts/link-order.sh [--append] [VMCORE...]
set -euo pipefail
append=0
[[ ${1:-} == --append ]] && { append=1; shift; }
extra=()
for vmcore in "$@"; do extra+=("$(realpath "$vmcore")"); done
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
ensure_build_deps
apt_ensure valgrind:valgrind taskset:util-linux zstd:zstd
prepare_fixtures
cargo build --release --locked -p vmdump
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp host/link-order.txt "$work/kept"
bin=$PWD/target/release/vmdump
# As installed: the binary alone (its built-in codecs, no plugin files
# beside it) with the profile scripts/install.sh puts in /etc/vmdump (its
# TOML parsed in every run), its makedumpfile lines run through a
# makedumpfile symlink as the capture kernels' scripts run it (no vmdump
# command line parsed).
mkdir "$work/bin"
cp "$bin" "$work/bin/vmdump"
ln -s vmdump "$work/bin/makedumpfile"
export VMDUMP_PROFILE=$PWD/config/system.toml
run=0
for vmcore in target/fixtures/vmcore-SK target/fixtures/vmcore-SK72 "${extra[@]}"; do
    # Then the threaded lines of a capture kernel of several CPUs
    # (kdump-utils' --num-threads=$(nproc), SUSE's -F -c --num-threads N),
    # whose workers, channels and threads come after the code of one worker.
    for args in "-l --message-level 7 -d 31 @ OUT" "-F -c -d 31 @" "-c -d 31 @ OUT" "-l -d 1 @ OUT" \
        "--dump-dmesg @ OUT" "dump @ OUT" "-l --message-level 7 -d 31 --num-threads=2 @ OUT" \
        "-F -c --num-threads 2 --message-level 6 -d 31 @"; do
        run=$((run + 1))
        words=${args//@/$vmcore}
        words=${words//OUT/$work/out}
        tool=$work/bin/makedumpfile
        [[ $words == dump* ]] && tool=$work/bin/vmdump
        rm -f "$work/out"
        # shellcheck disable=SC2086 # the words are the command line
        taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$work/cg.$(printf %02d $run)" \
            --compress-strings=no --demangle=no "$tool" $words > /dev/null 2>&1
    done
done
# The functions of vmdump's own object in each profile, first seen first
# (callgrind names the fixed-address binary's object "???").
awk '/^ob=/ { mine = ($0 ~ /\/(vmdump|makedumpfile)$/ || $0 == "ob=???") } /^fn=/ && mine { name = substr($0, 4); if (!(name in seen)) { seen[name] = 1; print name } }' \
    "$work"/cg.* > "$work/order"
# A function's symbol carries a hash of its crate's build (legacy mangling:
# 17h<16 hex>E), which differs between the builds that make the binary:
# `-p vmdump` (scripts/install.sh, the packages), `--workspace`
# (scripts/test.sh) and the tests' (cargo test and nextest, with the
# dev-dependencies' features). The list names each function as every one
# of them does.
nm "$bin" > "$work/nm.install"
cargo build --release --locked --workspace
nm "$bin" > "$work/nm.workspace"
cargo test --release --locked --workspace --no-run
nm "$bin" > "$work/nm.tests"
/usr/bin/python3 - "$work/order" "$work"/nm.* > host/link-order.txt <<'PY'
import collections
import re
import sys

def unhashed(name):
    return re.sub(r"17h[0-9a-f]{16}E$", "E", name)

def symbol(name):
    """A function as the list names it: without callgrind's recursion mark
    ('2) and without the suffix ThinLTO gives a local function it exports
    from its module (.llvm.<hash of the module>), which changes with any
    change of the module's code (host/build.rs matches it by pattern)."""
    return re.sub(r"\.llvm\.[0-9]+$", "", re.sub(r"'[0-9]+$", "", name))

order, *tables = sys.argv[1:]
# In each build, the symbols of each unhashed name; a name shared by
# several (the instances of a generic function) cannot be told apart.
builds = []
for table in tables:
    names = collections.defaultdict(list)
    for line in open(table):
        words = line.split()
        if len(words) == 3 and words[1] in "tT":
            names[unhashed(symbol(words[2]))].append(symbol(words[2]))
    builds.append(names)
# A generic function's instances, and any function of a crate whose code
# changed, get new hashes; named with the hash left open (host/build.rs
# hands the list to the linker as section patterns), a function stays in
# the list through such changes. A name with many instances (drop_in_place,
# grow_one) keeps the hashes of those that ran, so as not to pull them all.
MAX_INSTANCES = 4
printed = set()
for line in open(order):
    name = symbol(line.strip())
    if not re.fullmatch(r"[A-Za-z0-9_.$]+", name) or re.fullmatch(r"0x[0-9a-f]+", name):
        continue  # callgrind's "(below main)", and code it could name only by address
    plain = unhashed(name)
    few = all(len(b[plain]) <= MAX_INSTANCES for b in builds)
    if plain != name and few:
        entries = [plain[:-1] + "17h*E"]
    else:
        entries = [name] + [b[plain][0] for b in builds if len(b[plain]) == 1]
    for entry in entries:
        if entry not in printed:
            printed.add(entry)
            print(entry)
PY
if ((append)); then
    mv host/link-order.txt "$work/fresh"
    { cat "$work/kept"; grep -vxF -f "$work/kept" "$work/fresh" || true; } > host/link-order.txt
fi
echo "host/link-order.txt: $(wc -l < host/link-order.txt) symbols of $(wc -l < "$work/order") functions from $run runs"
