#!/bin/sh
# PID 1 of a cx4 test VM. The root is the guest tree, read-only over 9p; /run/cx4 is the
# runner's directory (also read-only here); the writable share "cx4" is mounted on /cx4.
# Runs /cx4/job.sh, records its exit status in /cx4/status, powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmp /tmp
mount -t tmpfs tmp /var/tmp
mount -t tmpfs tmp /mnt
mount -t debugfs debugfs /sys/kernel/debug
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 cx4 /cx4 || {
    echo "cx4-guest: cannot mount the share"; echo o > /proc/sysrq-trigger; }
hostname "$(cat /cx4/hostname 2>/dev/null || echo cx4-vm)"
ip link set lo up
echo "cx4-guest: $(uname -r) up in $(cut -d' ' -f1 /proc/uptime)s, running job"
cd /cx4
sh /cx4/job.sh > /cx4/job.log 2>&1
rc=$?
cat /cx4/job.log
dmesg > /cx4/dmesg.txt
echo "$rc" > /cx4/status
sync
echo "cx4-guest: job exited with status $rc"
echo o > /proc/sysrq-trigger
# PID 1 must not exit before the power-off completes ("Attempted to kill init!"), and it cannot
# exec anything from the 9p root any more: wait with shell builtins only.
while :; do :; done
