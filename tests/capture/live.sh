#!/bin/sh
# Runs in the first kernel once the workload is ready, before the crash: a
# live system's /proc/kcore. makedumpfile --mem-usage (Debian's, before and
# after) and vmdump's, between them; vmdump's estimate of the live dump; a
# live dump by vmdump with the kernel's
# own utsname and log beside it (before and after the dump: the log grows
# while it runs), for the host to judge with drgn and libkdumpfile; vmdump
# refusing to read /proc/kcore as a user that is not root.
# Results go to /out/live on the output disk (/dev/vdb, ext4).
real=/opt/real/makedumpfile
out=/disk/out/live
say() { echo "CAPTURE: $*" > /dev/console; }

mkdir -p /disk
mount -t ext4 /dev/vdb /disk || exit 1
mkdir -p "$out"
k=/proc/kcore
# Each output to /tmp first: a write to the disk would add page cache between the runs.
sync
for run in makedumpfile.mem-usage.1 vmdump.mem-usage makedumpfile.mem-usage.2; do
    case $run in makedumpfile*) tool=$real ;; *) tool=makedumpfile ;; esac
    runstat "/tmp/$run.stat" $tool --mem-usage $k > "/tmp/$run" 2> "/tmp/$run.stderr"
done
cp /tmp/*mem-usage* "$out/"
say "live: --mem-usage of /proc/kcore by makedumpfile, vmdump and makedumpfile again: $(cat /tmp/*mem-usage*.stat | grep -c exit=0) of 3 exit 0"

for field in -s -n -r -v -m; do uname $field; done > "$out/uname"
vmdump estimate --json -d 31 --compress lzo $k > "$out/vmdump.estimate.json" 2> "$out/vmdump.estimate.stderr"
dmesg > "$out/dmesg.before"
runstat "$out/vmdump.live.stat" vmdump dump --no-progress -d 31 --compress lzo $k "$out/vmdump.live" \
    > "$out/vmdump.live.stdout" 2> "$out/vmdump.live.stderr"
dmesg > "$out/dmesg.after"
say "live: vmdump dump -d 31 /proc/kcore: $(tr '\n' ' ' < "$out/vmdump.live.stat")"

# A user that is not root: the live dump and makedumpfile's --mem-usage refused, no file left.
asuser 65534 vmdump dump -d 31 $k /tmp/live.user > /dev/null 2> "$out/vmdump.user.stderr"
echo "$?" > "$out/vmdump.user.exit"
asuser 65534 makedumpfile --mem-usage $k > /dev/null 2> "$out/vmdump.user-mem-usage.stderr"
echo "$?" > "$out/vmdump.user-mem-usage.exit"
[ -e /tmp/live.user ] && echo present > "$out/vmdump.user.file"
say "live: as user 65534, vmdump exited $(cat "$out/vmdump.user.exit") and $(cat "$out/vmdump.user-mem-usage.exit")"
umount /disk || exit 1
