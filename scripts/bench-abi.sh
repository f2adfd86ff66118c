#!/usr/bin/env bash
# Benchmark (not a test): per-page throughput of every compressor plugin
# through the C ABI against its codec called directly. Prints one table.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tools.sh
ensure_build_deps
cargo build --workspace --release --locked
exec target/release/abi-overhead target/release
