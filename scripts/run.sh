#!/usr/bin/env bash
# The main job with nothing from the user: build, then list the plugins.
# (The dump of a synthetic vmcore lands with the engine.)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked
target/release/vmdump plugins
