"""NVMe over Fabrics with the RDMA transport between two VMs on cx4: a kernel RDMA user that
nobody patched for us. vm1 is the target (nvmet + nvmet-rdma with `use_srq=1`, its queues
receiving through kernel SRQs, configured through configfs, exporting a memory-backed null_blk
disk on port 4420 of its cx4 address); vm0 is the host
(nvme-rdma through nvme-cli). Both sides' RDMA traffic is cx4's kernel verbs: rdma_cm over
its GSI QP, kernel CQs and QPs, the local DMA lkey, fast-registration MRs on the host, RDMA
READ and WRITE from the target (rdma_rw), SEND with invalidate back to the host.
"""

from __future__ import annotations

import re
import sys

from en import CX4_UP, cx4_errors
from harness import Env, check_clean_dmesg, estimate
from ib import CX4_IB, CX4_ULP_DONE, cmd_counts
from model_eth import eth_vms, section
from model_roce import IB, ROCE_MODEL, logs

NQN = "nqn.2026-12.io.cx4:nvmeof-test"
# The pattern the host writes: 4 MiB in 64 KiB requests (data through the host's fast-
# registered MRs, RDMA READ by the target), then 16 KiB in 4 KiB requests at 5 MiB
# (in-capsule data: nvmet-rdma takes up to 4 KiB inline by default).
BIG_KIB, SMALL_KIB, SMALL_AT_KIB = 4096, 16, 5120

TARGET = r"""
nvmet_up() {
    modprobe null_blk nr_devices=1 gb=1 memory_backed=1
    # Receives through kernel SRQs (one per completion vector) instead of each queue's RQ.
    modprobe nvmet_rdma use_srq=1
    mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
    c=/sys/kernel/config/nvmet
    mkdir $c/subsystems/NQN
    echo 1 > $c/subsystems/NQN/attr_allow_any_host
    mkdir $c/subsystems/NQN/namespaces/1
    echo /dev/nullb0 > $c/subsystems/NQN/namespaces/1/device_path
    echo 1 > $c/subsystems/NQN/namespaces/1/enable
    mkdir $c/ports/1
    echo rdma > $c/ports/1/addr_trtype
    echo ipv4 > $c/ports/1/addr_adrfam
    echo $IP > $c/ports/1/addr_traddr
    echo 4420 > $c/ports/1/addr_trsvcid
    ln -s $c/subsystems/NQN $c/ports/1/subsystems/NQN
}
nvmet_down() {
    c=/sys/kernel/config/nvmet
    rm $c/ports/1/subsystems/NQN
    rmdir $c/ports/1
    echo 0 > $c/subsystems/NQN/namespaces/1/enable
    rmdir $c/subsystems/NQN/namespaces/1
    rmdir $c/subsystems/NQN
    rmmod nvmet_rdma nvmet
}
""".replace("NQN", NQN)


def tests(env: Env):
    @estimate(180)
    def nvmeof_rdma_between_cx4_vms():
        """NVMe-oF over RoCE v2 between two cx4 VMs: the host connects to the target's
        subsystem with `nvme connect -t rdma`; its namespace appears as a 1 GiB block device;
        4 MiB of random data written with O_DIRECT in 64 KiB requests and 16 KiB in 4 KiB
        requests (in-capsule) land on the target's null_blk disk (the target's checksum of
        those ranges equals the host's) and read back equal through the namespace, again
        with O_DIRECT; `nvme disconnect` removes the controller; the target is torn down and
        cx4 unloaded. No NVMe or RDMA error in either kernel log, every QP, CQ and mkey the
        host's connection made on cx4 was destroyed, the target's kernel SRQs (RMPs on cx4)
        were created and destroyed, no cx4 command failed, the card has no QP left after
        rmmod."""
        common = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
            reach $PEER
        """
        vm0 = common + f"""
            modprobe nvme_rdma
            section cmds-before; cmds
            wait_signal target
            section connect
            nvme connect -t rdma -a $PEER -s 4420 -n {NQN} 2>&1
            NS=/dev/nvme0n1
            for i in $(seq $((100 * SLOW))); do [ -b $NS ] && break; sleep 0.1; done
            [ -b $NS ] || {{ echo "no namespace"; ls /dev; dmesg | tail -30; exit 1; }}
            echo "transport $(cat /sys/class/nvme/nvme0/transport)"
            echo "address $(cat /sys/class/nvme/nvme0/address)"
            echo "size $(($(blockdev --getsize64 $NS) / 1048576)) MiB"
            section write
            head -c {BIG_KIB}K /dev/urandom > /tmp/big
            head -c {SMALL_KIB}K /dev/urandom > /tmp/small
            dd if=/tmp/big of=$NS bs=64K oflag=direct status=none
            dd if=/tmp/small of=$NS bs=4K seek={SMALL_AT_KIB // 4} oflag=direct status=none
            echo "big $(sha256sum < /tmp/big | cut -c1-64)"
            echo "small $(sha256sum < /tmp/small | cut -c1-64)"
            signal written
            section read
            dd if=$NS bs=64K count={BIG_KIB // 64} iflag=direct status=none | cmp - /tmp/big \\
                && echo "big read back equal"
            dd if=$NS bs=4K skip={SMALL_AT_KIB // 4} count={SMALL_KIB // 4} iflag=direct \\
                status=none | cmp - /tmp/small && echo "small read back equal"
            section disconnect
            nvme disconnect -n {NQN} 2>&1
            for i in $(seq $((100 * SLOW))); do [ -e /sys/class/nvme/nvme0 ] || break; sleep 0.1; done
            [ -e /sys/class/nvme/nvme0 ] && echo "controller still there" || echo "controller gone"
            rmmod nvme_rdma
        """ + CX4_ULP_DONE
        vm1 = common + TARGET + f"""
            section target-cmds-before; cmds
            section target
            nvmet_up
            ls /sys/kernel/config/nvmet/ports/1/subsystems/
            signal target
            wait_signal written 600
            section disk
            echo "big $(head -c {BIG_KIB}K /dev/nullb0 | sha256sum | cut -c1-64)"
            echo "small $(dd if=/dev/nullb0 bs=4K skip={SMALL_AT_KIB // 4} count={SMALL_KIB // 4} \\
                status=none | sha256sum | cut -c1-64)"
            wait_signal done 600
            section teardown
            nvmet_down && echo "target down"
            section target-cmds-after; cmds
            ip link set "$IF" down
            rmmod cx4
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=600, model_args=ROCE_MODEL, files=[env.ko])
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, logs(rs)
        host, target = rs[0].job_log, rs[1].job_log
        s = section(host, "connect")
        assert "transport rdma" in s and re.search(r"traddr=10\.\S+,trsvcid=4420", s) and \
            "size 1024 MiB" in s, f"nvme connect over cx4 failed:\n{s}\n{logs(rs)}"
        sums = lambda t: dict(re.findall(r"^(big|small) ([0-9a-f]{64})$", t, re.M))
        wrote, disk = sums(section(host, "write")), sums(section(target, "disk"))
        assert set(wrote) == {"big", "small"} and wrote == disk, \
            f"the target's disk does not hold what the host wrote: {wrote} vs {disk}\n{logs(rs)}"
        s = section(host, "read")
        assert "big read back equal" in s and "small read back equal" in s, \
            f"read back through the namespace differs:\n{s}\n{logs(rs)}"
        assert "controller gone" in section(host, "disconnect"), section(host, "disconnect")
        assert "target down" in section(target, "teardown"), section(target, "teardown")
        # The admin and I/O queues' QPs (one I/O queue per CPU) and the host's fast-
        # registration MRs (a pool per queue): created for the connection, destroyed on
        # disconnect. Their CQs come from the RDMA core's per-device CQ pool
        # (ib_cq_pool_get), which keeps them until the device goes (rmmod: `qps=0` below).
        before, after = cmd_counts(section(host, "cmds-before")), cmd_counts(section(host, "cmds-after"))
        rise = {k: after.get(k, (0, 0))[0] - before.get(k, (0, 0))[0] for k in after}
        for made, gone in (("CREATE_QP", "DESTROY_QP"), ("CREATE_MKEY", "DESTROY_MKEY")):
            assert rise.get(made, 0) >= 2 and rise.get(made) == rise.get(gone), (made, before, after)
        assert rise.get("CREATE_CQ", 0) >= 1, (before, after)
        for t in ("RST2INIT_QP", "INIT2RTR_QP", "RTR2RTS_QP"):
            assert rise.get(t, 0) >= 2, (t, before, after)
        assert all(e == 0 for _, e in after.values()), after
        print(f"    host: {rise['CREATE_QP']} QPs, {rise['CREATE_MKEY']} mkeys created and destroyed",
              file=sys.stderr)
        # The target's queues receive through nvmet-rdma's kernel SRQs (cx4's RMPs), made
        # at the first connection and destroyed with the target.
        before = cmd_counts(section(target, "target-cmds-before"))
        after = cmd_counts(section(target, "target-cmds-after"))
        trise = {k: after.get(k, (0, 0))[0] - before.get(k, (0, 0))[0] for k in after}
        assert trise.get("CREATE_RMP", 0) >= 1 and trise["CREATE_RMP"] == trise.get("DESTROY_RMP"), \
            (before, after)
        assert all(e == 0 for _, e in after.values()), after
        assert re.search(r"^gids=0 qps=0", section(host, "after-rmmod"), re.M), \
            section(host, "after-rmmod")
        for r in rs:
            nvme = [l for l in r.dmesg.splitlines()
                    if re.search(r"nvme|nvmet", l) and re.search(r"error|fail|timeout|reset", l, re.I)]
            errs = cx4_errors(r.dmesg) + nvme
            assert not errs, "\n".join(errs)
            check_clean_dmesg(r.dmesg)
        for line in re.findall(r"^.*nvme.*$", rs[0].dmesg, re.M)[:4]:
            print(f"    {line}", file=sys.stderr)

    yield "NVMe-oF (nvme-rdma host, nvmet-rdma target) between two cx4 VMs, data checked", \
        nvmeof_rdma_between_cx4_vms
