"""NFS over RDMA between two VMs: a second kernel RDMA user nobody patched for us, after NVMe-oF
(tests/nvmeof.py). vm1 is the server: nfsd with its RDMA listener (svcrdma) on port 20049,
exporting a tmpfs; vm0 is the client: the NFS client over xprtrdma (`mount -o rdma`). The
client's RDMA traffic is rdma_cm's connection, fast-registration MRs (IB_WR_REG_MR) for the
chunks, LOCAL_INV and the server's SEND with invalidate; the server's is rdma_rw (RDMA READ of
the client's write chunks, RDMA WRITE of its read chunks) over the local DMA lkey. NFSv3 and
NFSv4.1 each mount, write a file of random data, the server reads it from its tmpfs, the client
reads it back after dropping its caches, and unmount.

The test kernel's client has NFSv3, 4.0 and 4.1 (CONFIG_NFS_V4_2 is not set), so 4.1 is the
newest minor version a mount can ask for; the server speaks 4.2 as well.

The oracle runs the same rounds with nfsd over mlx5_ib on the model and the client over cx4.
"""

from __future__ import annotations

import re
import sys

from en import CX4_UP, cx4_errors
from harness import Env, check_clean_dmesg, estimate
from ib import CX4_IB, CX4_ULP_DONE, cmd_counts
from model_core import mlx5_errors
from model_eth import eth_vms, section
from model_roce import IB, ROCE_MODEL, logs

# The file each round writes (KiB): large WRITEs and READs, so their data moves in chunks
# (RDMA READ / WRITE by the server), not inline in the RPC messages.
FILE_KIB = 4096
# (tag, version, the path the client mounts): NFSv4 sees the export as its pseudo root (fsid=0;
# the server's own root, a 9p file system, cannot be exported, not even as NFSv4's pseudo root).
ROUNDS = [("v3", "3", "/mnt/export"), ("v41", "4.1", "/")]
PORT = 20049
EXPORT = "/mnt/export"

SERVER = r"""
# nfsd with an RDMA listener, exporting a tmpfs. The root is read-only: rpcbind, mountd and
# nfsdcld get tmpfs directories (rpc_pipefs where the guest's nfs.conf puts it); nfsdcld
# (client tracking) lets nfsd skip the NFSv4 grace period on a fresh start.
nfs_server_up() {
    mount -t tmpfs run /run
    mkdir -p /run/rpcbind
    mount -t tmpfs nfs /var/lib/nfs
    mkdir -p /run/rpc_pipefs /var/lib/nfs/v4recovery /var/lib/nfs/nfsdcld
    touch /var/lib/nfs/etab /var/lib/nfs/rmtab /var/lib/nfs/state
    mkdir -p EXPORT
    mount -t tmpfs -o size=64m export EXPORT
    rpcbind
    modprobe nfsd
    mount -t nfsd nfsd /proc/fs/nfsd
    mount -t rpc_pipefs sunrpc /run/rpc_pipefs
    # nfsd gives nfsdcld about a second to open its pipe: start nfsd once nfsdcld waits
    # for it (its inotify watch is set up).
    nfsdcld -F > /tmp/nfsdcld.log 2>&1 &
    for i in $(seq $((100 * SLOW))); do
        ls -l /proc/$!/fd 2>/dev/null | grep -q inotify && break
        sleep 0.1
    done
    exportfs -o rw,sync,no_root_squash,no_subtree_check,insecure,fsid=0 "10.99.0.0/24:EXPORT"
    rpc.mountd
    rpc.nfsd 2
    echo rdma PORT > /proc/fs/nfsd/portlist
}
nfs_server_down() {
    exportfs -ua
    rpc.nfsd 0
    for p in rpc.mountd nfsdcld rpcbind; do kill $(pidof $p) 2>/dev/null || true; done
    umount /run/rpc_pipefs /proc/fs/nfsd
    for i in $(seq $((50 * SLOW))); do rmmod nfsd 2>/dev/null && break; sleep 0.2; done
    grep -q "^nfsd " /proc/modules && echo "nfsd still loaded" || echo "server down"
}
""".replace("EXPORT", EXPORT).replace("PORT", str(PORT))


def client_round(tag: str, vers: str, path: str) -> str:
    """The client's steps of one round: mount over RDMA, write, wait for the server's check,
    drop the caches and read back, the transport's counters, unmount."""
    return f"""
            section mount-{tag}
            mount -t nfs -o rdma,port={PORT},vers={vers},nolock $PEER:{path} /mnt/nfs 2>&1
            grep " /mnt/nfs " /proc/mounts
            section write-{tag}
            head -c {FILE_KIB}K /dev/urandom > /tmp/{tag}
            dd if=/tmp/{tag} of=/mnt/nfs/{tag} bs=1M conv=fsync status=none
            echo "sum $(sha256sum < /tmp/{tag} | cut -c1-64)"
            signal written-{tag}
            wait_signal checked-{tag} 600
            section read-{tag}
            echo 3 > /proc/sys/vm/drop_caches
            echo "sum $(sha256sum < /mnt/nfs/{tag} | cut -c1-64)"
            section stats-{tag}
            sed -n '\\|/mnt/nfs|,/^device/p' /proc/self/mountstats | grep -E "xprt:|^\\s*(READ|WRITE):"
            section umount-{tag}
            umount /mnt/nfs && echo unmounted
    """


def server_round(tag: str) -> str:
    return f"""
            wait_signal written-{tag} 600
            section file-{tag}
            echo "sum $(sha256sum < {EXPORT}/{tag} | cut -c1-64)"
            signal checked-{tag}
    """


def check_rounds(client: str, server: str, rs) -> None:
    """Each round: the mount is over RDMA on the port, the server's file and the client's
    read-back equal what the client wrote, the data went through READ and WRITE RPCs of the
    RDMA transport, the unmount succeeded."""
    for tag, vers, _ in ROUNDS:
        m = section(client, f"mount-{tag}")
        assert re.search(rf"proto=rdma,port={PORT}\b", m) and f"vers={vers}" in m, \
            f"NFS {vers} mount over RDMA failed:\n{m}\n{logs(rs)}"
        one = lambda t: re.findall(r"^sum ([0-9a-f]{64})$", t, re.M)
        wrote, stored = one(section(client, f"write-{tag}")), one(section(server, f"file-{tag}"))
        back = one(section(client, f"read-{tag}"))
        assert len(wrote) == 1 and wrote == stored == back, \
            f"NFS {vers}: wrote {wrote}, the server holds {stored}, read back {back}\n{logs(rs)}"
        st = section(client, f"stats-{tag}")
        assert re.search(r"xprt:\s+rdma\b", st), st
        # Per-op counters: `OP: ops trans timeouts bytes_sent bytes_recv ...`.
        ops = {o: [int(v) for v in rest.split()]
               for o, rest in re.findall(r"^\s*(READ|WRITE):\s+(.*)$", st, re.M)}
        assert ops.get("WRITE", [0])[0] >= 1 and ops["WRITE"][3] >= FILE_KIB * 1024, st
        assert ops.get("READ", [0])[0] >= 1 and ops["READ"][4] >= FILE_KIB * 1024, st
        assert "unmounted" in section(client, f"umount-{tag}"), section(client, f"umount-{tag}")


def check_kernel_logs(rs) -> None:
    for r in rs:
        rpc = [l for l in r.dmesg.splitlines()
               if re.search(r"rpcrdma|svcrdma|nfs|NFSD|rpc", l)
               and re.search(r"error|fail|timeout|unable|refused|flush", l, re.I)]
        errs = cx4_errors(r.dmesg) + mlx5_errors(r.dmesg) + rpc
        assert not errs, "\n".join(errs)
        check_clean_dmesg(r.dmesg)


def tests(env: Env):
    common = CX4_UP + IB + CX4_IB + """
        cx4_up
        cx4_ib_up
        reach $PEER
    """
    client = common + """
        mkdir -p /mnt/nfs
        section cmds-before; cmds
        wait_signal server 600
    """ + "".join(client_round(*r) for r in ROUNDS) + CX4_ULP_DONE

    def server(up: str, down: str) -> str:
        return CX4_UP + IB + CX4_IB + SERVER + up + """
            section server
            nfs_server_up
            cat /proc/fs/nfsd/portlist
            cat /proc/fs/nfsd/versions
            dmesg | grep NFSD || true
            signal server
        """ + "".join(server_round(t) for t, _, _ in ROUNDS) + f"""
            wait_signal done 600
            section teardown
            nfs_server_down
            {down}
            section after-rmmod; req ctl roce
            echo unloaded
        """

    def run(server_vm: str):
        rs = eth_vms(env, [client, server_vm], timeout=600, model_args=ROCE_MODEL, files=[env.ko])
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, logs(rs)
        c, s = rs[0].job_log, rs[1].job_log
        assert re.search(rf"^rdma {PORT}$", section(s, "server"), re.M), section(s, "server")
        check_rounds(c, s, rs)
        assert "server down" in section(s, "teardown"), section(s, "teardown")
        # The client's connections (a QP each) and its fast-registration MRs: created for
        # the mounts, destroyed at the unmounts; no command failed; the card has no QP left
        # on either side after rmmod.
        before, after = cmd_counts(section(c, "cmds-before")), cmd_counts(section(c, "cmds-after"))
        rise = {k: after.get(k, (0, 0))[0] - before.get(k, (0, 0))[0] for k in after}
        for made, gone in (("CREATE_QP", "DESTROY_QP"), ("CREATE_MKEY", "DESTROY_MKEY")):
            assert rise.get(made, 0) >= len(ROUNDS) and rise.get(made) == rise.get(gone), \
                (made, before, after)
        assert all(e == 0 for _, e in after.values()), after
        for r in rs:
            assert re.search(r"^gids=0 qps=0", section(r.job_log, "after-rmmod"), re.M), \
                section(r.job_log, "after-rmmod")
        check_kernel_logs(rs)
        print(f"    client: {rise['CREATE_QP']} QPs, {rise['CREATE_MKEY']} mkeys created and "
              "destroyed", file=sys.stderr)

    @estimate(200)
    def nfs_rdma_between_cx4_vms():
        """NFSv3 and NFSv4.1 over RDMA (RoCE v2) between two cx4 VMs: nfsd listens for RDMA
        on port 20049 (`/proc/fs/nfsd/portlist`) and exports a tmpfs; per version the client
        mounts with `-o rdma,port=20049` (the mount says proto=rdma), writes 4 MiB of random
        data with fsync, the server's copy has the same checksum, the client reads it back
        equal after drop_caches; the mount's statistics show the RDMA transport and READ and
        WRITE RPCs that carried at least the file's bytes; the unmount succeeds. nfsd stops
        and unloads, cx4 unloads on both sides with no QP left on the card; every QP and mkey
        the client's mounts made was destroyed, no cx4 command failed, no NFS, RPC/RDMA or
        kernel report in either log."""
        run(server("""
            cx4_up
            cx4_ib_up
            reach $PEER
        """, """
            ip link set "$IF" down
            rmmod cx4
        """))

    @estimate(200)
    def nfs_rdma_mlx5_ib_server_cx4_client():
        """The oracle for the server side: the same rounds with nfsd over upstream mlx5_ib on
        the model (svcrdma's RDMA READ / WRITE through rdma_rw, SEND with invalidate) and the
        client over cx4. Same checks."""
        run(server(r"""
            eth_up
            ib_up
            reach $PEER
            cmds() { :; }
        """, """
            ip link set "$IF" down
            rmmod mlx5_ib mlx5_core
        """))

    yield "NFSv3 and NFSv4.1 over RDMA between two cx4 VMs, data checked", nfs_rdma_between_cx4_vms
    yield "NFS over RDMA: nfsd on mlx5_ib-over-model, the client on cx4", \
        nfs_rdma_mlx5_ib_server_cx4_client
