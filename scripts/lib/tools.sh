# Outside tools the tests and benchmarks use, installed with apt-get where
# missing (CI runs as root). Sourced by scripts/*.sh.

# Installs the Debian packages whose commands are missing.
# Arguments: pairs of "command:package".
apt_ensure() {
    local missing=()
    for pair in "$@"; do
        local cmd=${pair%%:*} pkg=${pair#*:}
        if [[ $cmd == py:* ]]; then
            /usr/bin/python3 -c "import ${cmd#py:}" 2>/dev/null || missing+=("$pkg")
        else
            command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
        fi
    done
    ((${#missing[@]} == 0)) && return 0
    if [[ $(id -u) -ne 0 ]]; then
        echo "error: missing ${missing[*]} and not root: install them with apt-get" >&2
        return 1
    fi
    echo "installing ${missing[*]} with apt-get" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

ensure_test_tools() {
    apt_ensure cc:gcc zstd:zstd
}
