# shellcheck shell=bash
# Outside tools the tests and benchmarks use, installed with apt-get where
# missing (CI runs as root). Sourced by scripts/*.sh.

# Installs the Debian packages whose commands are missing.
# Arguments: "command:package" pairs; "py/MODULE:package" checks that
# Debian's /usr/bin/python3 imports MODULE, "/PATH:package" that the file
# exists (a header).
apt_ensure() {
    local missing=()
    for pair in "$@"; do
        local cmd=${pair%%:*} pkg=${pair#*:}
        if [[ $cmd == py/* ]]; then
            /usr/bin/python3 -c "import ${cmd#py/}" 2>/dev/null || missing+=("$pkg")
        elif [[ $cmd == /* ]]; then
            [[ -e $cmd ]] || missing+=("$pkg")
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

# What `cargo build` of the workspace needs besides Rust: a C compiler
# (libdeflate, the C plugins), liblzo2 (the lzo codec links makedumpfile's
# own LZO encoder) and the headers and libraries of the C plugins
# (plugins/compress-c-zlib: the system zlib; plugins/compress-isal-zlib: ISA-L).
ensure_build_deps() {
    apt_ensure cc:gcc /usr/include/lzo/lzo1x.h:liblzo2-dev /usr/include/zlib.h:zlib1g-dev \
        /usr/include/isa-l/igzip_lib.h:libisal-dev
}

ensure_test_tools() {
    ensure_build_deps
    apt_ensure zstd:zstd makedumpfile:makedumpfile py/kdumpfile:python3-libkdumpfile groff:groff-base \
        age:age age-keygen:age ssh-keygen:openssh-client
    ensure_drgn
}

# The drgn the tests judge dumps with: a venv of Debian's python3 under
# target/ with drgn from PyPI (its wheel has libkdumpfile built in; Debian 12
# packages no drgn). Prints nothing when it is already there.
DRGN_VERSION=0.3.0
ensure_drgn() {
    local venv=${VMDUMP_DRGN_VENV:-$PWD/target/venv-drgn}
    mkdir -p "$(dirname "$venv")"
    # One installer at a time: tests running side by side may both ask.
    (
        flock 9
        if "$venv/bin/python" -c "import drgn; assert drgn.__version__ == '$DRGN_VERSION'" 2>/dev/null; then
            exit 0
        fi
        /usr/bin/python3 -c "import ensurepip" 2>/dev/null || apt_ensure py/ensurepip:python3-venv
        echo "installing drgn $DRGN_VERSION into $venv" >&2
        rm -rf "$venv"
        /usr/bin/python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "drgn==$DRGN_VERSION"
    ) 9>"$venv.lock"
}

# libkdumpfile 0.5.2 or later (Debian 12 has 0.5.1), which shows a dump's
# eraseinfo as `file.eraseinfo.raw`: built from the upstream tarball of
# trixie's source package (apt-get source, in an apt state of its own)
# into target/libkdumpfile. It keeps Debian 12's soname (10), so Debian's
# python3-libkdumpfile loads it with LD_LIBRARY_PATH. Prints the library
# directory.
ensure_libkdumpfile_eraseinfo() {
    local root=$PWD/target/libkdumpfile
    mkdir -p "$root"
    (
        flock 9
        [[ -e $root/inst/lib/libkdumpfile.so.10 ]] && exit 0
        apt_ensure autoreconf:autoconf automake:automake libtoolize:libtool pkg-config:pkg-config \
            /usr/include/zlib.h:zlib1g-dev /usr/include/zstd.h:libzstd-dev
        die() { echo "error: $*" >&2; exit 1; }
        # shellcheck source=scripts/lib/debian.sh
        source "$(dirname "${BASH_SOURCE[0]}")/debian.sh"
        apt_state "$root/apt" amd64 trixie deb-src > /dev/null
        local orig
        orig=$(fetch_orig "$root/src" libkdumpfile)
        echo "building libkdumpfile from $(basename "$orig") into $root/inst" >&2
        rm -rf "$root/build" && mkdir -p "$root/build"
        tar -xf "$orig" -C "$root/build" --strip-components=1
        cd "$root/build" && autoreconf -fi > build.log 2>&1 &&
            ./configure --without-python --disable-static --prefix="$root/inst" >> build.log 2>&1 &&
            make -j"$(nproc)" >> build.log 2>&1 && make install >> build.log 2>&1 ||
            die "building libkdumpfile failed: see $root/build/build.log"
        [[ -e $root/inst/lib/libkdumpfile.so.10 ]] || die "libkdumpfile's soname is no longer 10: $root/inst/lib"
    ) 9> "$root.lock" || return 1
    echo "$root/inst/lib"
}

# Decompresses the real vmcores of ../shared/fixtures into target/fixtures
# (once; checked against the sha256 in the fixtures README) and exports
# VMDUMP_FIXTURES and VMDUMP_FIXTURE_DIR for the tests. Without the shared
# folder, says so: the tests on the real vmcores then report that they did
# not run.
prepare_fixtures() {
    local shared
    shared=$(cd .. && pwd)/shared/fixtures
    if [[ ! -d $shared ]]; then
        echo "NOTE: $shared not found: the tests on the real vmcores will not run" >&2
        return 0
    fi
    mkdir -p target/fixtures
    local name
    for name in vmcore-S vmcore-SK vmcore-SK72; do
        if [[ ! -f target/fixtures/$name ]]; then
            echo "decompressing $name" >&2
            zstd -q -d -f "$shared/$name.zst" -o "target/fixtures/$name.tmp"
            local want got
            want=$(grep -F "$name.zst" "$shared/README.md" | grep -oE '[0-9a-f]{64}' | head -n1)
            got=$(sha256sum "target/fixtures/$name.tmp" | cut -d' ' -f1)
            if [[ -n $want && $want != "$got" ]]; then
                echo "error: $name decompressed to sha256 $got, the fixtures README says $want" >&2
                return 1
            fi
            mv "target/fixtures/$name.tmp" "target/fixtures/$name"
        fi
    done
    export VMDUMP_FIXTURES=$shared VMDUMP_FIXTURE_DIR=$PWD/target/fixtures
}

# What scripts/capture-test.sh needs: QEMU, a busybox for the guest, the
# tools that build its initramfs and disks and read the output disk back,
# and the judges (makedumpfile, libkdumpfile, drgn).
ensure_capture_tools() {
    apt_ensure qemu-system-x86_64:qemu-system-x86 busybox:busybox-static cpio:cpio xz:xz-utils zstd:zstd \
        debugfs:e2fsprogs modprobe:kmod cc:gcc makedumpfile:makedumpfile py/kdumpfile:python3-libkdumpfile \
        age-keygen:age ssh-keygen:openssh-client socat:socat curl:curl
    ensure_drgn
}

# step NAME COMMAND...: runs it and notes how long it took, for the summary.
timings=()
step() {
    local name=$1 start=$SECONDS
    shift
    echo "== $name"
    "$@"
    timings+=("$(printf '%-10s %4d s' "$name" $((SECONDS - start)))")
}
