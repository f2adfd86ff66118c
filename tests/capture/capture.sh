#!/bin/sh
# Runs in the kdump capture kernel, on the real /proc/vmcore: the dump
# commands of kdump-tools (Debian) and kdump-utils (Fedora, RHEL), once with
# vmdump under the name makedumpfile and once with Debian's makedumpfile,
# each timed by runstat, and vmdump's at -d 1 too; vmdump's own default;
# the same command lines encrypted to the recipients of the system profile;
# then /proc/vmcore itself is saved, so that the host can judge every page
# of every dump against it.
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
