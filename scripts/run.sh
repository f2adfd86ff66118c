#!/usr/bin/env bash
# The main job with nothing from the user: build vmdump and its plugins,
# make a synthetic 2 GiB vmcore (sparse: it costs little disk), dump it with
# the default profile (config/default.toml: zstd level -1, zero pages
# dropped), print makedumpfile's report, then read the dump back and
# compare every page with the vmcore (vmdump verify).
# Usage: scripts/run.sh [vmdump dump options...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
ensure_build_deps
cargo build --release --locked
mkdir -p target/demo
vmdump=target/release/vmdump
[[ -f target/demo/vmcore ]] || "$vmdump" synth --size 2G --seed 7 target/demo/vmcore
"$vmdump" dump --force --profile config/default.toml "$@" target/demo/vmcore target/demo/vmcore.kdump
ls -l target/demo/vmcore.kdump
case " $* " in
    *" --elf "*|*" -E "*|*" --split "*|*" -F "*|*" --flattened "*) ;;
    *) "$vmdump" verify target/demo/vmcore.kdump --against target/demo/vmcore ;;
esac
