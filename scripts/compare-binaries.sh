#!/usr/bin/env bash
# Not a test: compares the outputs of two vmdump binaries byte for byte on
# the real fixtures, for refactors that must not change what is written.
# Dumps (plain -d 31, 3-piece split, flattened), and convert, makedumpfile
# mode and convert --elf of makedumpfile -d 0, -d 1, flattened and vmdump
# dumps, and of a makedumpfile split pair. A flattened stream that differs is
# compared again after makedumpfile -R.
# Usage: scripts/compare-binaries.sh OLD_VMDUMP NEW_VMDUMP
# Prints "same NAME BYTES" or "DIFF NAME" per output; exit 1 on any DIFF.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
apt_ensure makedumpfile:makedumpfile
prepare_fixtures
OLD=$(realpath "$1") NEW=$(realpath "$2") F=$VMDUMP_FIXTURE_DIR
work=$(mktemp -d /tmp/vmdump-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
status=0
same() { if cmp -s "OLD-$1" "NEW-$1"; then echo "same $1 $(stat -c %s "NEW-$1")"; else echo "DIFF $1"; status=1; fi; }
for v in vmcore-S vmcore-SK; do
    makedumpfile -l -d 0 "$F/$v" "mdf0-$v" > /dev/null 2>&1
    makedumpfile -l -d 1 "$F/$v" "mdf1-$v" > /dev/null 2>&1
    makedumpfile -F -l -d 1 "$F/$v" > "flat-in-$v" 2> /dev/null
    makedumpfile --split -l -d 1 "$F/$v" "piece1-$v" "piece2-$v" > /dev/null 2>&1
    "$NEW" dump --no-progress -d 1 --compress zstd "$F/$v" "vm1-$v" 2> /dev/null
    for b in OLD NEW; do
        bin=${!b}
        "$bin" dump --no-progress -d 31 --compress lzo "$F/$v" "$b-d31-$v" 2> /dev/null || echo "FAILED $b dump $v"
        "$bin" dump --no-progress -d 1 --compress zstd "$F/$v" - > "$b-flat-$v" 2> /dev/null || echo "FAILED $b -F $v"
        "$bin" dump --no-progress -d 31 --compress lzo --split 3 "$F/$v" "$b-split-$v" 2> /dev/null || echo "FAILED $b split $v"
        for src in "mdf0-$v" "mdf1-$v" "vm1-$v" "flat-in-$v"; do
            "$bin" convert --no-progress --compress lzo -d 31 "$src" "$b-conv-$src" 2> /dev/null || echo "FAILED $b convert $src"
            "$bin" makedumpfile -l -d 31 "$src" "$b-mk-$src" > /dev/null 2>&1 || echo "FAILED $b makedumpfile $src"
            "$bin" convert --no-progress --elf -d 31 "$src" "$b-elf-$src" 2> /dev/null || echo "FAILED $b convert --elf $src"
        done
        "$bin" convert --no-progress --compress lzo -d 31 "piece1-$v" "$b-pieces-$v" --piece "piece2-$v" 2> /dev/null ||
            echo "FAILED $b convert pieces $v"
    done
    for k in "d31-$v" "split-$v".{1,2,3} "pieces-$v" {conv,mk,elf}-{mdf0,mdf1,vm1,flat-in}-"$v"; do same "$k"; done
    if ! cmp -s "OLD-flat-$v" "NEW-flat-$v"; then
        makedumpfile -R "OLD-flat-$v.plain" < "OLD-flat-$v" > /dev/null 2>&1
        makedumpfile -R "NEW-flat-$v.plain" < "NEW-flat-$v" > /dev/null 2>&1
        echo "flat-$v: the streams differ; after makedumpfile -R:"
        same "flat-$v.plain"
    else
        echo "same flat-$v"
    fi
done
exit "$status"
