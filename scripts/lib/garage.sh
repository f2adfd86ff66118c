# shellcheck shell=bash
# Garage, the S3-compatible store the object-storage tests run against
# (issue 42: tests/support/store.rs starts them), and s3s-fs beside it: a real, distributed store written in
# Rust (AGPL-3.0), run as a tool on 127.0.0.1, never linked. Sourced by
# scripts/*.sh after scripts/lib/tools.sh.
#
# ensure_garage: builds Garage once with `cargo install --locked` into a
# cache outside the checkout (a clean clone finds it there), keyed on its
# version: $VMDUMP_TOOL_CACHE (default ~/.cache/vmdump-tools)/garage-VERSION.
# libsodium comes from Debian (SODIUM_USE_PKG_CONFIG), so that its crate
# does not build and check libsodium itself. Prints the binary's path.
GARAGE_VERSION=2.5.0

ensure_garage() {
    local root=${VMDUMP_TOOL_CACHE:-$HOME/.cache/vmdump-tools}/garage-$GARAGE_VERSION
    mkdir -p "$root"
    (
        flock 9
        if [[ $("$root/bin/garage" --version 2>/dev/null) == *":$GARAGE_VERSION "* ]]; then
            exit 0
        fi
        apt_ensure pkg-config:pkg-config /usr/include/sodium.h:libsodium-dev make:make cc:gcc >&2
        echo "building garage $GARAGE_VERSION into $root (once; 12.5 min on two cores)" >&2
        SODIUM_USE_PKG_CONFIG=1 cargo install --quiet --locked --root "$root" garage --version "$GARAGE_VERSION" >&2
    ) 9>"$root.lock" || return 1
    echo "$root/bin/garage"
}

# A free TCP port on 127.0.0.1.
free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# await_store NAME PID DIR COMMAND...: waits until COMMAND succeeds (the
# store answers), for a minute at most; if the store exits or does not
# answer by then, says so with the end of DIR/server.log and stops it.
await_store() {
    local name=$1 pid=$2 dir=$3 tries=0
    shift 3
    until "$@" > /dev/null 2>&1; do
        if ! kill -0 "$pid" 2> /dev/null || ((++tries > 120)); then
            echo "$name did not start (its log: $dir/server.log):" >&2
            tail -n 20 "$dir/server.log" >&2
            kill "$pid" 2> /dev/null
            return 1
        fi
        sleep 0.5
    done
}

# write_store_env FILE PID_NAME PID ENDPOINT REGION KEY SECRET: what a
# client needs to reach a store, as other S3 tools read it, 0600.
write_store_env() {
    (umask 077 && printf '%s=%s\n' "$2" "$3" AWS_ENDPOINT_URL "$4" AWS_REGION "$5" \
        AWS_ACCESS_KEY_ID "$6" AWS_SECRET_ACCESS_KEY "$7" BUCKET dumps > "$1")
}

# garage_single_node GARAGE DIR: starts one node with its metadata and data
# in DIR, its S3 API and RPC on free ports of 127.0.0.1, a bucket `dumps`
# and a key that may read and write it; waits until it answers. Writes
# DIR/env (GARAGE_PID, AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID,
# AWS_SECRET_ACCESS_KEY, BUCKET: what other S3 tools read), 0600.
# A client that is not vmdump, for the tests: curl signs with
# `--aws-sigv4 aws:amz:garage:s3 --user KEY:SECRET` and Garage wants the
# payload's hash named: `-H x-amz-content-sha256:UNSIGNED-PAYLOAD` (a PUT
# with -T, a GET, a GET of a range with -r; checked by hand on a 403 MB
# vmcore: equal bytes back, Garage's start 0.65 s, its build 12.5 min on
# two cores).
garage_single_node() {
    local garage=$1 dir=$2 s3 key secret
    mkdir -p "$dir" && chmod 700 "$dir"
    s3=$(free_port)
    key=GK$(random_hex 12) secret=$(random_hex 32)
    garage_config "$dir/garage.toml" "$dir" 1 "$(random_hex 32)" "$s3"
    GARAGE_DEFAULT_ACCESS_KEY=$key GARAGE_DEFAULT_SECRET_KEY=$secret GARAGE_DEFAULT_BUCKET=dumps \
        "$garage" -c "$dir/garage.toml" server --single-node --default-bucket > "$dir/server.log" 2>&1 &
    local pid=$!
    await_store garage "$pid" "$dir" "$garage" -c "$dir/garage.toml" bucket info dumps || return 1
    write_store_env "$dir/env" GARAGE_PID "$pid" "http://127.0.0.1:$s3" garage "$key" "$secret"
}

# N random bytes in hex.
random_hex() {
    od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'
}

# garage_config FILE DIR REPLICATION RPC_SECRET S3_PORT: a node's
# configuration (0600: it holds the cluster's secret), its metadata and data
# under DIR, its RPC on a free port of 127.0.0.1.
garage_config() {
    local rpc
    rpc=$(free_port)
    (umask 077 && cat > "$1" <<EOF
metadata_dir = "$2/meta"
data_dir = "$2/data"
db_engine = "lmdb"
replication_factor = $3
rpc_bind_addr = "127.0.0.1:$rpc"
rpc_public_addr = "127.0.0.1:$rpc"
rpc_secret = "$4"

[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:$5"
EOF
    )
}

# s3s-fs, the stricter second store (issue 42): it refuses what AWS refuses
# and Garage accepts (parts under 5 MiB but the last, part numbers that are
# not 1..N). Checked by hand: two parts of 1 MiB, completed, give Garage an
# object and s3s-fs `EntityTooSmall` (with curl, a query key without a
# value is signed only when written with its `=`: `?uploads=`). Built once
# like Garage, into the same cache (2.7 min on two cores). Prints its path.
S3S_FS_VERSION=0.14.1

ensure_s3s_fs() {
    local root=${VMDUMP_TOOL_CACHE:-$HOME/.cache/vmdump-tools}/s3s-fs-$S3S_FS_VERSION
    mkdir -p "$root"
    (
        flock 9
        [[ -x $root/bin/s3s-fs ]] && exit 0
        echo "building s3s-fs $S3S_FS_VERSION into $root (once)" >&2
        cargo install --quiet --locked --root "$root" s3s-fs --version "$S3S_FS_VERSION" --features binary >&2
    ) 9>"$root.lock" || return 1
    echo "$root/bin/s3s-fs"
}

# s3s_fs_node S3S_FS DIR: serves DIR/root (a folder a bucket, `dumps`
# made) on a free port of 127.0.0.1 with a key of its own; writes DIR/env
# as garage_single_node does. s3s-fs takes its key only on its command
# line, where `ps` shows it to this machine's users: a key made for the
# run, for a store on 127.0.0.1 that holds the test's objects alone.
s3s_fs_node() {
    local s3s=$1 dir=$2 port key secret
    mkdir -p "$dir/root/dumps" && chmod 700 "$dir"
    port=$(free_port)
    key=AK$(random_hex 8) secret=$(random_hex 20)
    "$s3s" --host 127.0.0.1 --port "$port" --access-key "$key" --secret-key "$secret" "$dir/root" \
        > "$dir/server.log" 2>&1 &
    local pid=$!
    await_store s3s-fs "$pid" "$dir" bash -c "(: < /dev/tcp/127.0.0.1/$port) 2> /dev/null" || return 1
    write_store_env "$dir/env" S3S_FS_PID "$pid" "http://127.0.0.1:$port" us-east-1 "$key" "$secret"
}

# garage_cluster GARAGE DIR: three nodes on free ports of 127.0.0.1
# (DIR/n1..n3), replication factor 3 (writes need two of them), one zone
# each, connected and laid out, a bucket `dumps` and a key that may read
# and write it; writes DIR/env (node 1's S3 API as AWS_ENDPOINT_URL, and
# GARAGE_PIDS: the three pids, node 1 first), 0600.
garage_cluster() {
    local garage=$1 dir=$2 secret i pids=() ports=() key key_secret
    mkdir -p "$dir" && chmod 700 "$dir"
    secret=$(random_hex 32)
    for i in 1 2 3; do
        local s3
        s3=$(free_port)
        ports+=("$s3")
        mkdir -p "$dir/n$i"
        garage_config "$dir/n$i.toml" "$dir/n$i" 3 "$secret" "$s3"
        "$garage" -c "$dir/n$i.toml" server > "$dir/n$i/server.log" 2>&1 &
        pids+=($!)
    done
    for i in 1 2 3; do
        await_store "garage node $i" "${pids[i - 1]}" "$dir/n$i" "$garage" -c "$dir/n$i.toml" node id -q || return 1
    done
    local id
    for i in 2 3; do
        id=$("$garage" -c "$dir/n$i.toml" node id -q 2> /dev/null)
        "$garage" -c "$dir/n1.toml" node connect "$id" > /dev/null || return 1
    done
    for i in 1 2 3; do
        id=$("$garage" -c "$dir/n$i.toml" node id -q 2> /dev/null)
        "$garage" -c "$dir/n1.toml" layout assign -z "dc$i" -c 1G "${id%@*}" > /dev/null || return 1
    done
    "$garage" -c "$dir/n1.toml" layout apply --version 1 > /dev/null || return 1
    await_store "garage cluster" "${pids[0]}" "$dir/n1" "$garage" -c "$dir/n1.toml" bucket create dumps || return 1
    key=GK$(random_hex 12) key_secret=$(random_hex 32)
    "$garage" -c "$dir/n1.toml" key import --yes -n vmdump "$key" "$key_secret" > /dev/null || return 1
    "$garage" -c "$dir/n1.toml" bucket allow dumps --read --write --owner --key "$key" > /dev/null || return 1
    write_store_env "$dir/env" GARAGE_PIDS "${pids[*]}" "http://127.0.0.1:${ports[0]}" garage "$key" "$key_secret"
}
