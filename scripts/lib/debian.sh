# shellcheck shell=bash
# Debian's archive without touching the machine's apt: an apt state of its
# own for one suite and architecture (its sources.list, lists, cache and an
# empty dpkg status), packages downloaded there and unpacked with dpkg-deb
# -x, never installed; and a Debian kernel package unpacked into a tree
# that modprobe and depmod read. Sourced by scripts/capture-test.sh and
# scripts/make-arm64-fixture.sh, after scripts/lib/tools.sh; each caller
# has its own die().
#
#   apt_state DIR ARCH SUITE [deb-src]
#                               sets apt_opts, apt_dir and apt_arch for DIR
#                               (its lists updated once a day); with deb-src,
#                               the suite's source packages instead
#   fetch_orig DIR SRCPKG       the upstream tarball of a source package of
#                               that state, downloaded into DIR once: prints it
#   apt_in ARGS / apt_cache_in ARGS
#                               apt-get / apt-cache in that state
#   candidate PKG               the version apt would take there
#   fetch_deb DEBS PKG          downloads it into DEBS once, prints its path
#   unpack DEB DIR              dpkg-deb -x into DIR once
#   fetch_kernel CACHE [PKG]    the kernel linux-image-ARCH depends on (or
#                               PKG), with its split packages: sets kernel_pkg,
#                               kver, kroot, vmlinuz, kconfig
#   copy_modules KROOT KVER DIR MODULE...
#                               modules and their dependencies, uncompressed,
#                               DIR/order in insmod's order
#   newest_kernel_suite CACHE   sid, or experimental when its kernel series
#                               (7.3 of 7.3~rc7-1~exp1) is newer than sid's

# The suites a name stands for: a release with its updates and security
# suites, so that its kernel is the one a machine of that release gets
# (bookworm's is the shared fixtures' 6.1); sid and experimental alone
# (experimental is NotAutomatic: with sid beside it, apt would take sid's).
suite_sources() {
    local arch=$1 suite=$2 type=${3:-deb} keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    local deb="$type [arch=$arch signed-by=$keyring]"
    case $suite in
        sid | unstable | experimental) echo "$deb http://deb.debian.org/debian $suite main" ;;
        *)
            echo "$deb http://deb.debian.org/debian $suite main"
            echo "$deb http://deb.debian.org/debian $suite-updates main"
            echo "$deb http://deb.debian.org/debian-security $suite-security main"
            ;;
    esac
}

apt_state() {
    local dir=$1 arch=$2 suite=$3 type=${4:-deb}
    apt_dir=$dir apt_arch=$arch
    apt_opts=(
        -o "Dir::State=$dir/state" -o "Dir::State::Lists=$dir/state/lists"
        -o "Dir::State::status=$dir/state/status" -o "Dir::Cache=$dir/cache"
        -o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=$dir/sources.list.d"
        -o "Dir::Etc::Preferences=$dir/preferences" -o "Dir::Etc::PreferencesParts=$dir/preferences.d"
        # ARCH is the native architecture of these commands only: no
        # `dpkg --add-architecture` (apt-get download and dpkg-deb -x never
        # consult dpkg's list).
        -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch"
        # The host's docker-clean turns apt's binary cache off: every
        # apt-cache call would then parse the lists anew (a second each).
        -o "Dir::Cache::pkgcache=$dir/cache/pkgcache.bin"
        -o "Dir::Cache::srcpkgcache=$dir/cache/srcpkgcache.bin"
        # the host's appstream hook would fetch DEP-11 metadata nobody here reads
        -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
        -o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false
        -o Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false
        -o Acquire::IndexTargets::deb::DEP-11-icons-hidpi::DefaultEnabled=false
        -o Acquire::Languages=none
        # the _apt user may not write into target/ (apt's locks are in this
        # state too, so a second run waits for the first, not for the host's apt)
        -o APT::Sandbox::User=root
    )
    mkdir -p "$dir"/{state/lists/partial,cache/archives/partial,sources.list.d,preferences.d}
    touch "$dir/state/status"
    [[ -e /usr/share/keyrings/debian-archive-keyring.gpg ]] || apt_ensure /usr/share/keyrings/debian-archive-keyring.gpg:debian-archive-keyring
    local sources
    sources=$(suite_sources "$arch" "$suite" "$type")
    # A warm cache needs no network: the lists are refreshed once a day, or
    # when the suites changed.
    if [[ $(cat "$dir/sources.list" 2> /dev/null) != "$sources" ]] ||
        [[ -z $(find "$dir/state/lists" -maxdepth 1 -name '*Packages*' -mmin -1440) ]]; then
        echo "$sources" > "$dir/sources.list"
        # A mirror caught mid-sync fails one index (seen: bookworm-security's
        # ppc64el Packages.xz "File has unexpected size"): apt keeps the
        # others, so the state is used with a warning while it has lists.
        if ! apt_in update -q | tail -n 1; then
            [[ -n $(find "$dir/state/lists" -maxdepth 1 -name '*Packages*') ]] ||
                die "apt-get update in $dir failed and left no package lists"
            echo "warning: apt-get update in $dir failed for some suites; using the lists it has" >&2
        fi
    fi
}

apt_in() { apt-get "${apt_opts[@]}" "$@"; }
apt_cache_in() { apt-cache "${apt_opts[@]}" "$@"; }

candidate() {
    apt_cache_in show --no-all-versions "$1" 2> /dev/null | awk '/^Version:/ {print $2; exit}'
}

fetch_deb() {
    local debs=$1 pkg=$2 version deb
    version=$(candidate "$pkg")
    [[ -n $version ]] || die "no package $pkg in $apt_dir/sources.list ($(tr '\n' ' ' < "$apt_dir/sources.list"))"
    mkdir -p "$debs"
    deb=$(find "$debs" -maxdepth 1 -name "${pkg}_${version/:/%3a}_*.deb" | head -n 1)
    if [[ -z $deb ]]; then
        (cd "$debs" && apt_in download -q "$pkg=$version" > /dev/null)
        deb=$(find "$debs" -maxdepth 1 -name "${pkg}_${version/:/%3a}_*.deb" | head -n 1)
    fi
    [[ -s $deb ]] || die "apt-get download $pkg=$version left no .deb in $debs"
    echo "$deb"
}

fetch_orig() {
    local dir=$1 pkg=$2 orig
    mkdir -p "$dir"
    orig=$(find "$dir" -maxdepth 1 -name "${pkg}_*.orig.tar.*" | sort -V | tail -n 1)
    if [[ -z $orig ]]; then
        # --download-only fetches the .dsc, the upstream tarball and Debian's
        # changes; only the upstream tarball is needed (the others may 404
        # when the suite moved on, which is not an error here).
        (cd "$dir" && apt_in source --download-only -q "$pkg" > /dev/null 2>&1) || true
        orig=$(find "$dir" -maxdepth 1 -name "${pkg}_*.orig.tar.*" | sort -V | tail -n 1)
    fi
    [[ -s $orig ]] || die "apt-get source $pkg left no upstream tarball in $dir"
    echo "$orig"
}

# (a .tmp first, so an interrupted run leaves no half tree)
unpack() {
    local deb=$1 dir=$2
    [[ -d $dir ]] && return 0
    rm -rf "$dir.tmp"
    dpkg-deb -x "$deb" "$dir.tmp"
    mv "$dir.tmp" "$dir"
}

# The kernel's packages: the image and, since Linux 7.x in sid, the split
# packages it depends on (linux-base-*, linux-binary-*, linux-modules-*),
# all unpacked into one tree. Merged /usr: modules and vmlinuz may be under
# usr/lib/modules/VERSION/; lib is then a link to usr/lib, so that depmod
# and modprobe -d find them.
fetch_kernel() {
    local cache=$1 pkg parts=()
    kernel_pkg=${2:-}
    if [[ -z $kernel_pkg ]]; then
        kernel_pkg=$(apt_cache_in depends "linux-image-$apt_arch" |
            awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
        [[ -n $kernel_pkg ]] || die "apt-cache finds no kernel package that linux-image-$apt_arch depends on"
    fi
    kver=${kernel_pkg#linux-image-} kroot=$cache/kernel-$kver
    echo "kernel package: $kernel_pkg $(candidate "$kernel_pkg")"
    if [[ ! -e $kroot/lib/modules/$kver/modules.dep ]]; then
        mapfile -t parts < <(apt_cache_in depends "$kernel_pkg" |
            awk '$1 == "Depends:" && $2 ~ /^linux-(base|binary|modules)-/ {print $2}')
        rm -rf "$kroot" "$kroot.tmp"
        mkdir -p "$kroot.tmp"
        for pkg in "$kernel_pkg" "${parts[@]}"; do
            echo "  $pkg"
            dpkg-deb -x "$(fetch_deb "$cache/debs" "$pkg")" "$kroot.tmp"
        done
        if [[ ! -e $kroot.tmp/lib && -d $kroot.tmp/usr/lib ]]; then
            ln -s usr/lib "$kroot.tmp/lib"
        fi
        [[ -d $kroot.tmp/lib/modules/$kver ]] || die "$kernel_pkg has no modules for $kver"
        depmod -b "$kroot.tmp" "$kver"
        mv "$kroot.tmp" "$kroot"
    fi
    # (ppc64el: an uncompressed ELF, boot/vmlinux-VERSION)
    for vmlinuz in "$kroot/boot/vmlinuz-$kver" "$kroot/lib/modules/$kver/vmlinuz" "$kroot/boot/vmlinux-$kver" ""; do
        [[ -e $vmlinuz ]] && break
    done
    [[ -n $vmlinuz ]] || die "$kernel_pkg has no boot/vmlinuz-$kver, lib/modules/$kver/vmlinuz or boot/vmlinux-$kver"
    # (7.x: lib/modules/VERSION/config)
    for kconfig in "$kroot/boot/config-$kver" "$kroot/lib/modules/$kver/config" ""; do
        [[ -e $kconfig ]] && break
    done
    [[ -n $kconfig ]] || die "$kernel_pkg has no boot/config-$kver or lib/modules/$kver/config"
}

# A module that the kernel has built in, or no longer has (crc32c_generic
# went with 6.14's crc rework), is left out; insmod is given plain .ko
# files, whatever the package compressed them with (xz, zstd since 7.x).
copy_modules() {
    local kroot=$1 kver=$2 dir=$3 module ko name
    shift 3
    for module in "$@"; do
        modprobe -d "$kroot" -S "$kver" --show-depends "$module" 2> /dev/null ||
            grep -q "/$module.ko" "$kroot/lib/modules/$kver/modules.builtin" ||
            echo "note: $kver has no module $module, built in or not: left out" >&2
    done | awk '$1 == "insmod" && !seen[$2]++ {print $2}' | while read -r ko; do
        name=$(basename "$ko")
        case $name in
            *.ko.xz) xz -dc "$ko" > "$dir/${name%.xz}" ;;
            *.ko.zst) zstd -q -dc "$ko" > "$dir/${name%.zst}" ;;
            *.ko.gz) gzip -dc "$ko" > "$dir/${name%.gz}" ;;
            *) cp "$ko" "$dir/" ;;
        esac
        echo "${name%.ko*}.ko" >> "$dir/order"
    done
}

# The series of a kernel package version: 7.3 of 7.3~rc7-1~exp1, 7.2 of 7.2.13-1.
kernel_series() { sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<< "$1"; }

newest_kernel_suite() {
    local cache=$1 sid experimental
    apt_state "$cache/apt-sid" amd64 sid > /dev/null
    sid=$(candidate linux-image-amd64)
    apt_state "$cache/apt-experimental" amd64 experimental > /dev/null
    experimental=$(candidate linux-image-amd64)
    if [[ -n $experimental ]] &&
        dpkg --compare-versions "$(kernel_series "$experimental")" gt "$(kernel_series "$sid")"; then
        echo experimental
    else
        echo sid
    fi
}
