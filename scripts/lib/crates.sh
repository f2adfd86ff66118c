# shellcheck shell=bash
# What the packages say about the Rust crates linked into vmdump: sourced by
# scripts/build-deb.sh (debian/copyright) and scripts/build-rpm.sh (the
# License tag and the licence file). Run from the top of the work tree.

# The workspace's version ([workspace.package] in Cargo.toml).
workspace_version() {
    awk '/^\[/ { in_ws = ($0 == "[workspace.package]") }
         in_ws && /^version *=/ { gsub(/.*= *"|".*/, ""); print; exit }' Cargo.toml
}

# linked_crates [--no-lzo]: the crates linked into the binary and the
# plugins, one "name version|licence" a line, sorted. --no-lzo: the binary
# built without its default features (install.sh --no-lzo).
linked_crates() {
    local features=()
    [[ ${1-} == --no-lzo ]] && features=(--no-default-features)
    { cargo tree --locked --offline -p vmdump "${features[@]}" -e normal,no-proc-macro --prefix none -f '{p}|{l}'
      cargo tree --locked --offline -p vmdump-compress-c-zlib -p vmdump-filter-pfn-ranges -p vmdump-filter-pattern \
          -p vmdump-filter-erase -p vmdump-filter-keep-tasks -p vmdump-filter-c-drop-tasks \
          -e normal,no-proc-macro --prefix none -f '{p}|{l}'
    } | sed '/^$/d; s/ (\*)$//; s/^\([^ ]*\) v\([^ |]*\)[^|]*|/\1 \2|/' | sort -u
}
