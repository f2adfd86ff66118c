#!/bin/sh
# The first kernel's memory before the crash: every kind of page that
# makedumpfile's dump levels tell apart, in modest amounts (TCG is slow).
# All data is deterministic (fixed seeds, files of the kernel package).
say() { echo "CAPTURE: $*" > /dev/console; }
set -e
mkdir -p /tmp /data
mount -t tmpfs -o size=64m tmpfs /tmp

say "workload: free pages holding stale data (24 MiB, the process exits)"
memfill -x 24 mixed 31 > /dev/null
say "workload: page cache (reading the data disk, ext4)"
mount -t ext4 -o ro /dev/vda /data
find /data -type f -exec cat {} + > /dev/null
say "workload: shmem (8 MiB file in tmpfs)"
memfill -f /tmp/shmem 8 text 32 > /dev/null
say "workload: anonymous user data (24 MiB mixed + 8 MiB zero-filled, held)"
memfill 24 mixed 33 > /tmp/anon.log &
memfill 8 zero 34 > /tmp/zero.log &
say "workload: two named processes for the task filters (8 MiB each, every page tagged with its name)"
memfill -n keeper 8 mixed 35 > /tmp/keeper.log &
memfill -n bystander 8 mixed 36 > /tmp/bystander.log &
tries=0
until [ "$(cat /tmp/anon.log /tmp/zero.log /tmp/keeper.log /tmp/bystander.log 2>/dev/null | grep -c ready)" = 4 ]; do
    tries=$((tries + 1))
    [ $tries -lt 600 ] || { say "workload: memfill did not get ready"; exit 1; }
    sleep 0.2
done
say "workload: ready: $(grep -E '^(MemFree|Cached|AnonPages|Shmem):' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"
