#!/bin/sh
# Runs in the kdump capture kernel, on the real /proc/vmcore: the dump
# commands of kdump-tools (Debian) and kdump-utils (Fedora, RHEL), once with
# vmdump under the name makedumpfile and once with Debian's makedumpfile,
# each timed by runstat, and vmdump's at -d 1 too; vmdump's own default;
# the same command lines encrypted to the recipients of the system profile;
# SUSE's kernel log line; with more than one CPU (capture-test.sh --cpus N:
# nr_cpus=N), kdump-utils' and SUSE's threaded command lines, each tool at
# 1, 2 and N threads (for its memory against its threads); then
# /proc/vmcore itself is saved, so that the host can judge every page of
# every dump against it.
# Results go to /out on the output disk (/dev/vdb, ext4).
real=/opt/real/makedumpfile
out=/disk/out
say() { echo "CAPTURE: $*" > /dev/console; }

# run NAME STDOUT COMMAND...: the command's times in NAME.stat (and whether
# it mapped /proc/vmcore), its stderr in NAME.stderr, its stdout in STDOUT. Failures are the host's to judge:
# the other runs still happen.
run() {
    name=$1 stdout=$2
    shift 2
    runstat -m /proc/vmcore "$out/$name.stat" "$@" > "$stdout" 2> "$out/$name.stderr"
    rc=$?
    sync # the next run starts with no dirty pages of this one
    say "$name: exit $rc, $(tr '\n' ' ' < "$out/$name.stat")"
}

# run_fifo NAME FILE COMMAND...: as run, the command's stdout written to a
# FIFO that cat copies to FILE, as SUSE's kdump-save saves its dumps
# (openSUSE/kdump 2.1.9, dracut/kdump-save: SOURCE=/tmp/fifo and mkfifo,
# L190-192; the command runs with "> $SOURCE &", L220 and L297; for a local
# file SAVE_COMMAND is 'cat ${SOURCE} > "${DIR}/${FILENAME}"', L169).
run_fifo() {
    name=$1 file=$2
    shift 2
    rm -f /tmp/fifo
    mkfifo /tmp/fifo || return 1
    cat /tmp/fifo > "$file" &
    saver=$!
    runstat -m /proc/vmcore "$out/$name.stat" "$@" > /tmp/fifo 2> "$out/$name.stderr"
    rc=$?
    wait $saver || say "$name: the cat that saves the FIFO exited $?"
    sync
    say "$name: exit $rc, $(tr '\n' ' ' < "$out/$name.stat")"
}

mkdir -p /disk
mount -t ext4 /dev/vdb /disk || exit 1
mkdir -p "$out"
say "makedumpfile on PATH is $(readlink -f "$(command -v makedumpfile)"), the real one is $real"

mdf=makedumpfile # on PATH, a symlink to vmdump
v=/proc/vmcore
vmdump plugins > "$out/plugins.txt" 2>&1
# kdump-utils checks its core_collector line before it uses it.
run vmdump.check-params "$out/vmdump.check-params.stdout" \
    $mdf --check-params -l --message-level 7 -d 31 $v "$out/unused"
run makedumpfile.check-params "$out/makedumpfile.check-params.stdout" \
    $real --check-params -l --message-level 7 -d 31 $v "$out/unused"
# kdump-tools: makedumpfile -F -c -d 31 /proc/vmcore > FILE
run vmdump.kdump-tools "$out/vmdump.kdump-tools.flat" $mdf -F -c -d 31 $v
run makedumpfile.kdump-tools "$out/makedumpfile.kdump-tools.flat" $real -F -c -d 31 $v
# kdump-utils: makedumpfile -l --message-level 7 -d 31 /proc/vmcore FILE
run vmdump.kdump-utils "$out/vmdump.kdump-utils.stdout" \
    $mdf -l --message-level 7 -d 31 $v "$out/vmdump.kdump-utils"
run makedumpfile.kdump-utils "$out/makedumpfile.kdump-utils.stdout" \
    $real -l --message-level 7 -d 31 $v "$out/makedumpfile.kdump-utils"
# The same command lines at -d 1 (zero pages only), vmdump's alone: the
# host's judge dumps the saved vmcore at both levels.
run vmdump.kdump-tools-d1 "$out/vmdump.kdump-tools-d1.flat" $mdf -F -c -d 1 $v
run vmdump.kdump-utils-d1 "$out/vmdump.kdump-utils-d1.stdout" \
    $mdf -l --message-level 7 -d 1 $v "$out/vmdump.kdump-utils-d1"
# both: makedumpfile --dump-dmesg /proc/vmcore FILE
run vmdump.dmesg "$out/vmdump.dmesg.stdout" $mdf --dump-dmesg $v "$out/vmdump.dmesg"
run makedumpfile.dmesg "$out/makedumpfile.dmesg.stdout" $real --dump-dmesg $v "$out/makedumpfile.dmesg"
# vmdump's own command line and default profile (zstd, -d 1); its report
# says whether /proc/vmcore was read through mmap.
run vmdump.default "$out/vmdump.default.stdout" vmdump dump $v "$out/vmdump.default"
# The task filters of ABI 1.1 (installed plugins): keep-tasks keeps the
# process named keeper at -d 31, drop-tasks (C) leaves out bystander at -d 1.
printf '[[filters]]\nname = "keep-tasks"\nparams = { comm = "keeper" }\n' > /tmp/keep-tasks.toml
printf '[[filters]]\nname = "drop-tasks"\nparams = { comm = "bystander" }\n' > /tmp/drop-tasks.toml
run vmdump.keep-tasks "$out/vmdump.keep-tasks.stdout" \
    vmdump dump --profile /tmp/keep-tasks.toml -d 31 $v "$out/vmdump.keep-tasks"
run vmdump.drop-tasks "$out/vmdump.drop-tasks.stdout" \
    vmdump dump --profile /tmp/drop-tasks.toml -d 1 $v "$out/vmdump.drop-tasks"

# SUSE's kernel log (openSUSE/kdump 2.1.9, dracut/kdump-save L220):
#   makedumpfile -F --message-level 8 --dump-dmesg /proc/vmcore > $SOURCE 2> /tmp/makedumpfile_stderr &
# the log on stdout (a FIFO), OSRELEASE= and CRASHTIME= read from stderr.
run_fifo vmdump.suse-dmesg "$out/vmdump.suse-dmesg" $mdf -F --message-level 8 --dump-dmesg $v
run_fifo makedumpfile.suse-dmesg "$out/makedumpfile.suse-dmesg" $real -F --message-level 8 --dump-dmesg $v

# The threaded command lines, when the capture kernel has more than one CPU.
nproc > "$out/nproc.txt"
cpus=$(nproc)
if [ "$cpus" -gt 1 ]; then
    # The thread counts: 1, 2, 4 ... below the CPUs, and the CPUs.
    counts=1 t=2
    while [ "$t" -lt "$cpus" ]; do counts="$counts $t" t=$((t * 2)); done
    counts="$counts $cpus"
    say "$cpus CPUs: the threaded command lines at $counts threads"
    # makedumpfile's threads end with pthread_exit, for which glibc loads
    # libgcc_s.so.1 when the first one ends. Here that load failed now and
    # then in the first thread (LD_DEBUG=libs: the file found, no link map
    # made; the next thread's load succeeded, too late) and the run
    # aborted, once its pages were copied, with "libgcc_s.so.1 must be
    # installed for pthread_exit to work" (exit 134). Preloaded, it is there
    # from the start and every run ends (its 128 KiB count in its peak RSS).
    threaded_real="env LD_PRELOAD=libgcc_s.so.1 $real"
    for t in $counts; do
        # kdump-utils (rhkdump/kdump-utils v1.0.61, dracut/99kdumpbase/kdump.sh
        # L114-131): its default core_collector "makedumpfile -l
        # --message-level 7 -d 31" gets " --num-threads=$(nproc)" when nproc
        # is above 1 and the line has no -F or -E (L121-128), then
        # "/proc/vmcore $_dump_fs_path/vmcore-incomplete" (L191). At t
        # threads: the line of a capture kernel with t CPUs; at 1, vmdump
        # with --num-threads=1, one worker (kdump-utils adds nothing at one
        # CPU: Debian's makedumpfile's one thread is makedumpfile.kdump-utils).
        run vmdump.kdump-utils-t$t "$out/vmdump.kdump-utils-t$t.stdout" \
            $mdf -l --message-level 7 -d 31 --num-threads=$t $v "$out/vmdump.kdump-utils-t$t"
        [ "$t" -gt 1 ] && run makedumpfile.kdump-utils-t$t "$out/makedumpfile.kdump-utils-t$t.stdout" \
            $threaded_real -l --message-level 7 -d 31 --num-threads=$t $v "$out/makedumpfile.kdump-utils-t$t"
        # SUSE (openSUSE/kdump 2.1.9, dracut/kdump-save L276-291):
        #   DUMP_COMMAND="makedumpfile -F ${FORMAT} ${THREADS} --message-level $MSG_LEVEL -d ${KDUMP_DUMPLEVEL} ${MAKEDUMPFILE_OPTIONS} /proc/vmcore"
        # with its defaults (sysconfig.kdump.in): KDUMP_DUMPFORMAT="compressed"
        # (FORMAT=-c), KDUMP_CPUS=32, THREADS="--num-threads N" for N =
        # min(nproc, KDUMP_CPUS) when N is not 1 (L279-283), MSG_LEVEL=6
        # (L286), KDUMP_DUMPLEVEL=31, no MAKEDUMPFILE_OPTIONS; its stdout to
        # the FIFO (L297). At 1, vmdump with --num-threads 1 (SUSE adds
        # nothing at one CPU: Debian's makedumpfile's one thread is
        # makedumpfile.kdump-tools, -F -c -d 31).
        run_fifo vmdump.suse-t$t "$out/vmdump.suse-t$t.flat" \
            $mdf -F -c --num-threads $t --message-level 6 -d 31 $v
        [ "$t" -gt 1 ] && run_fifo makedumpfile.suse-t$t "$out/makedumpfile.suse-t$t.flat" \
            $threaded_real -F -c --num-threads $t --message-level 6 -d 31 $v
    done
fi

# Object storage (issue 42): kdump-tools' and kdump-utils' command lines,
# unchanged, with the system profile's [output] target naming the host's
# Garage (10.0.2.100:3900, QEMU's one forward); their file gets a manifest.
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 || say "no network: $(ip link 2>&1 | tr '\n' ' ')"
cp /etc/vmdump/vmdump.toml /tmp/profile.orig
with_target() { cp /tmp/profile.orig /etc/vmdump/vmdump.toml; sed "s/@LINE@/$1/" "/capture/${2:-store}.toml" >> /etc/vmdump/vmdump.toml; }
with_target kdump-tools
run vmdump.s3-kdump-tools "$out/vmdump.s3-kdump-tools.manifest" $mdf -F -c -d 31 $v
with_target kdump-utils
run vmdump.s3-kdump-utils "$out/vmdump.s3-kdump-utils.stdout" \
    $mdf -l --message-level 7 -d 31 $v "$out/vmdump.s3-kdump-utils.manifest"
# The same line to s3s-fs (10.0.2.101:3900), which refuses what AWS refuses.
with_target kdump-utils strict
run vmdump.s3-strict "$out/vmdump.s3-strict.stdout" \
    $mdf -l --message-level 7 -d 31 $v "$out/vmdump.s3-strict.manifest"
cp /tmp/profile.orig /etc/vmdump/vmdump.toml

# Confidential dumps: the same distribution command lines once the system
# profile names recipients (an age X25519 key and an ssh-ed25519 key; the
# host holds their private keys, the capture kernel only the public ones).
cat /capture/recipients.toml >> /etc/vmdump/vmdump.toml
run vmdump.encrypted-kdump-tools "$out/vmdump.encrypted-kdump-tools.age" $mdf -F -c -d 31 $v
run vmdump.encrypted-kdump-utils "$out/vmdump.encrypted-kdump-utils.stdout" \
    $mdf -l --message-level 7 -d 31 $v "$out/vmdump.encrypted-kdump-utils"
run vmdump.encrypted-dmesg "$out/vmdump.encrypted-dmesg.stdout" $mdf --dump-dmesg $v "$out/vmdump.encrypted-dmesg"

# The modes as the capture kernel's file system has them (umask 022).
stat -c '%a %s %n' "$out"/* > "$out/modes.txt"
cat /proc/meminfo > "$out/meminfo.txt"
run vmcore /dev/null cp /proc/vmcore "$out/vmcore"
umount /disk || exit 1
say "DONE"
