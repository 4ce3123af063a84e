"""cx4's RDMA device on the model in RoCE mode, judged by the guest's unmodified rdma-core and
by the card: the ib device registers on cx4's netdev with driver id MLX5, so libibverbs binds
rdma-core's mlx5 provider (libmlx5) to it; its port follows the netdev; the GID table the RDMA
core manages is the card's RoCE address table (programmed with SET_ROCE_ADDRESS) as addresses
come and go; libmlx5 opens a user context (the mlx5 user ABI, static UAR pages mapped) and
allocates PDs through it; rmmod leaves the card's table empty. With cx4's kernel verbs and
its GSI QP (QP1) the kernel's connection manager runs over the device: rdma_cm tools (rping,
ucmatose, perftest -R, udaddy, mckey through multicast groups) connect to upstream mlx5_ib on
another modelled card. model_roce's RoCE cases run again with cx4 in place of mlx5_ib, on
one side or both, through the same guest steps and checks (model_roce's `*_steps`,
`check_*`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from en import CX4_UP, cx4_errors
from harness import Env, check_clean_dmesg, describe, estimate
from model_eth import eth_vms, section
from model_core import mlx5_errors
from model_roce import GIDX as gidx
from model_roce import (CLOCK_TOOL, MW_TOOL, RC_FIXTURE, RESIZE_TOOL, SMALL_TOOL, check_clock,
                        check_mw, check_resize, check_small, dc_between_vms, dc_one_vm,
                        dpdk_between_vms, raw_between_vms)
from model_roce import (ERRORS_TOOL, perftest_row, IB, QPTO, ROCE_MODEL, check_ecn, check_error_paths,
                        check_gid_sections, check_lossy, check_mckey, check_udaddy, ecn_steps,
                        errors_steps, logs, lossy_steps, mckey_steps, udaddy_steps)

VERBS_PD = Path(__file__).resolve().parent / "verbs_pd.py"
UDATA_TOOL = Path(__file__).resolve().parent / "ib_udata.py"
BAD_TOOL = Path(__file__).resolve().parent / "ib_objects_bad.py"
MR_TOOL = Path(__file__).resolve().parent / "verbs_mr.py"
KVERBS = Path(__file__).resolve().parent / "kverbs"
# The checks kverbs_test.ko runs over each GID type, in order.
KVERBS_CHECKS = ["connect", "send+imm", "rdma write", "rdma write+imm", "rdma read",
                 "atomic without the MR's atomic right", "flush after error",
                 "reset and reconnect", "fast registration", "fetch-add", "compare-swap",
                 "local invalidate", "write after invalidate refused",
                 "ud send without AH refused", "cq event", "cq moderation",
                 "srq receives inline sends", "srq reuse", "srq full",
                 "inline beyond the QP's size refused"]


def kverbs_ko(env: Env) -> Path:
    """Builds tests/kverbs/kverbs_test.ko (a kernel verbs user) against the run's kernel."""
    makevars = (env.kdir / ".cx4-make-vars").read_text().split("\n")
    r = subprocess.run(["make", "-C", str(env.kdir), f"M={KVERBS}",
                        *[v for v in makevars if v], "modules"],
                       capture_output=True, text=True)
    assert r.returncode == 0, "building kverbs_test.ko failed:\n" + (r.stdout + r.stderr)[-3000:]
    return KVERBS / "kverbs_test.ko"

# Guest helper: the ib device cx4 registered on the modelled card, its port ACTIVE.
CX4_IB = r"""
DBG=/sys/kernel/debug/cx4/0000:01:00.0
cx4_ib_up() {
    for i in $(seq $((100 * SLOW))); do
        IBDEV=$(ls /sys/bus/pci/devices/0000:01:00.0/infiniband/ 2>/dev/null | head -1)
        [ -n "$IBDEV" ] && break
        sleep 0.1
    done
    [ -n "$IBDEV" ] || { echo "no IB device from cx4"; dmesg | tail -30; return 1; }
    for i in $(seq $((100 * SLOW))); do
        grep -q ACTIVE /sys/class/infiniband/$IBDEV/ports/1/state && break
        sleep 0.1
    done
}
cmds() { grep -E "^(ALLOC_PD|DEALLOC_PD|ALLOC_UAR|DEALLOC_UAR|SET_ROCE_ADDRESS|CREATE_CQ|DESTROY_CQ|CREATE_MKEY|DESTROY_MKEY|CREATE_QP|DESTROY_QP|RST2INIT_QP|INIT2RTR_QP|RTR2RTS_QP|2ERR_QP|2RST_QP|CREATE_RMP|DESTROY_RMP|ALLOC_XRCD|DEALLOC_XRCD|CREATE_XRC_SRQ|DESTROY_XRC_SRQ|ATTACH_TO_MCG|DETACH_FROM_MCG) " $DBG/commands; }
"""

# Guest steps that end a kernel ULP's run on cx4 (nvmeof.py, nfs_rdma.py): cx4's command counts,
# the peer told, cx4 unloaded and the card's RoCE state read (`gids=0 qps=0` when all went).
CX4_ULP_DONE = r"""
section cmds-after; cmds
signal done
ip link set "$IF" down
rmmod cx4
section after-rmmod; req ctl roce
echo unloaded
"""


def rping_payload(n: int, size: int) -> str:
    """The text rping's client puts in its buffer for ping `n` of a `size`-byte run, as
    `-v` prints it (rping_test_client): "rdma-ping-N: ", then letters from 'A' + N (mod 58)
    upward, wrapping from 'z' to 'A', up to the buffer's last byte (a NUL)."""
    prefix = f"rdma-ping-{n}: "
    return prefix + "".join(chr(65 + (n + k) % 58) for k in range(size - 1 - len(prefix)))


def cmd_counts(text: str) -> dict[str, tuple[int, int]]:
    """opcode name → (count, errors) from cx4's debugfs `commands` lines."""
    return {m.group(1): (int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"^(\w+)\s+0x[0-9a-f]+\s+(\d+)\s+(\d+)", text, re.M)}


def check_objects_paired(log: str, at_least: int) -> None:
    """Between the `cmds-before` and `cmds-after` sections of `log`: at least `at_least` QPs,
    CQs and mkeys were created and each destroyed again, at least `at_least` QPs went
    RST→INIT→RTR→RTS, and no command failed."""
    before, after = cmd_counts(section(log, "cmds-before")), cmd_counts(section(log, "cmds-after"))
    rise = {k: after.get(k, (0, 0))[0] - before.get(k, (0, 0))[0] for k in after}
    for made, gone in (("CREATE_QP", "DESTROY_QP"), ("CREATE_CQ", "DESTROY_CQ"),
                       ("CREATE_MKEY", "DESTROY_MKEY")):
        assert rise.get(made, 0) >= at_least and rise.get(made) == rise.get(gone), (made, before, after)
    for t in ("RST2INIT_QP", "INIT2RTR_QP", "RTR2RTS_QP"):
        assert rise.get(t, 0) >= at_least, (t, before, after)
    assert all(e == 0 for _, e in after.values()), after


# Iterations of the lossy-wire and ECN runs between two cx4 VMs (fewer than model_roce's
# 150 and 400: the test budget).
LOSSY_N, ECN_N = 100, 200


def tests(env: Env):
    @estimate(200)
    def cx4_ib_device_gids_pd():
        """cx4's ib device: ibv_devices lists it, ibv_devinfo -v shows the port ACTIVE on
        Ethernet with the card's identity and limits, `rdma link` binds it to cx4's netdev;
        the GID table equals the card's RoCE address table (v1 and v2 for each address) as
        IPv4/IPv6 addresses are added and removed; libmlx5 (pyverbs) opens the device and
        allocates and frees PDs (ALLOC_PD/DEALLOC_PD and the context's UAR pages seen by
        the card's command counters); malformed mlx5 ABI requests and bad UAR mmaps are
        refused; the port follows the link down and up, and user space gets the PORT_ERR and
        PORT_ACTIVE events; rmmod cx4 while a process holds a context disassociates it (its
        next verb fails) and leaves no GID on the card."""
        vm0 = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
            PORT=/sys/class/infiniband/$IBDEV/ports/1
            section devices; ibv_devices 2>&1
            section devinfo; ibv_devinfo -v -d $IBDEV 2>&1
            section link; rdma link show
            section driver; basename $(readlink /sys/class/infiniband/$IBDEV/device/driver)
            wait_gid ffff:0a63:0001
            wait_gid fd00:0000:0000:0000:0000:0000:0000:0001
            section gids-up; gids; req ctl roce
            ip addr add 10.99.7.1/24 dev $IF
            ip -6 addr add fd07::1/64 dev $IF nodad
            wait_gid ffff:0a63:0701
            wait_gid fd07:0000:0000:0000:0000:0000:0000:0001
            section gids-added; gids; req ctl roce
            ip addr del 10.99.7.1/24 dev $IF
            ip -6 addr del fd07::1/64 dev $IF
            wait_gid '!ffff:0a63:0701'
            wait_gid '!fd07:0000:0000:0000:0000:0000:0000:0001'
            section gids-removed; gids; req ctl roce
            section cmds-before; cmds
            section verbs; python3 /cx4/verbs_pd.py $IBDEV --pds 4 2>&1
            section cmds-after; cmds
            section udata; python3 /cx4/ib_udata.py /dev/infiniband/$(ls /sys/class/infiniband/$IBDEV/device/infiniband_verbs/) 2>&1
            section cmds-udata; cmds
            stdbuf -oL ibv_asyncwatch -d $IBDEV > /tmp/async.txt 2>&1 &
            AW=$!
            for i in $(seq $((100 * SLOW))); do grep -q "async event FD" /tmp/async.txt && break; sleep 0.1; done
            ip link set "$IF" down
            for i in $(seq $((100 * SLOW))); do grep -q DOWN $PORT/state && break; sleep 0.1; done
            section port-down; cat $PORT/state; rdma link show
            ip link set "$IF" up
            for i in $(seq $((300 * SLOW))); do grep -q ACTIVE $PORT/state && break; sleep 0.1; done
            section port-up; cat $PORT/state
            for i in $(seq $((100 * SLOW))); do grep -q PORT_ACTIVE /tmp/async.txt && break; sleep 0.1; done
            { kill $AW; wait $AW; } 2>/dev/null || true
            section async; cat /tmp/async.txt
            python3 /cx4/verbs_pd.py $IBDEV --pds 2 --hold /tmp/h-ready /tmp/h-go > /tmp/hold.txt 2>&1 &
            HP=$!
            for i in $(seq $((300 * SLOW))); do [ -e /tmp/h-ready ] && break; sleep 0.1; done
            ip link set "$IF" down
            section rmmod-busy; timeout $((120 * SLOW)) rmmod cx4 && echo removed
            section after-rmmod; req ctl roce
            touch /tmp/h-go; wait $HP || true
            section holder; cat /tmp/hold.txt
            echo unloaded
        """
        r = eth_vms(env, [vm0], timeout=400, model_args=ROCE_MODEL, files=[env.ko, VERBS_PD, UDATA_TOOL])[0]
        assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        log = r.job_log

        devices = section(log, "devices")
        assert re.search(r"^\s+cx4_\d+\s+[0-9a-f]{16}\s*$", devices, re.M), devices
        assert "couldn't load driver" not in devices, devices
        info = section(log, "devinfo")
        for want in (r"hca_id:\s+cx4_\d+", r"transport:\s+InfiniBand \(0\)",
                     r"link_layer:\s+Ethernet", r"state:\s+PORT_ACTIVE \(4\)",
                     r"vendor_id:\s+0x02c9", r"vendor_part_id:\s+4115",
                     r"phys_port_cnt:\s+1", r"fw_ver:\s+12\.\d+\.\d+", r"max_pkeys:\s+1",
                     r"active_mtu:\s+1024 \(3\)", r"max_mtu:\s+4096 \(5\)"):
            assert re.search(want, info), f"ibv_devinfo lacks {want!r}:\n{info}"
        lim = {k: int(v) for k, v in re.findall(r"^\s+(max_qp|max_cq|max_pd|max_mr|max_qp_wr):\s+(\d+)",
                                                 info, re.M)}
        for k in ("max_qp", "max_cq", "max_pd", "max_mr", "max_qp_wr"):
            v = lim.get(k, 0)
            assert v >= 1024 and v & (v - 1) == 0, f"{k} = {v}: not a power of two ≥ 1024\n{info}"
        link = section(log, "link")
        assert re.search(r"link cx4_\d+/1 state ACTIVE physical_state LINK_UP netdev \S+", link), link
        assert section(log, "driver").strip() == "cx4", section(log, "driver")

        gids = check_gid_sections(log)

        v = section(log, "verbs")
        steps = {s["step"]: s for s in (json.loads(l) for l in v.splitlines() if l.startswith("{"))}
        assert "closed" in steps, f"the verbs program did not finish:\n{v}"
        dev = steps["device"]
        assert (dev["vendor_id"], dev["vendor_part_id"], dev["port_state"], dev["link_layer"]) == \
            (0x2c9, 4115, 4, 2), dev
        assert dev["max_qp"] == lim["max_qp"] and dev["gid_tbl_len"] > 0, (dev, lim)
        assert len(set(steps["pds"]["handles"])) == 4, steps["pds"]
        before, after = cmd_counts(section(log, "cmds-before")), cmd_counts(section(log, "cmds-after"))
        rise = {k: after.get(k, (0, 0))[0] - before.get(k, (0, 0))[0] for k in after}
        # One user context: libmlx5 asks for dynamic UARs and allocates one uncached page (a
        # UAR object) for its doorbells, freed when it closes; 4 PDs; nothing failed.
        assert (rise.get("ALLOC_PD"), rise.get("DEALLOC_PD")) == (4, 4), (before, after)
        assert (rise.get("ALLOC_UAR"), rise.get("DEALLOC_UAR")) == (1, 1), (before, after)
        assert all(e == 0 for _, e in after.values()), after

        down = section(log, "port-down")
        assert re.search(r"^1: DOWN$", down, re.M) and re.search(r"state DOWN physical_state DISABLED", down), down
        # Malformed requests are refused before anything is allocated; a good one without
        # MLX5_LIB_CAP_DYN_UAR gets the static geometry (and the core clock's page, the
        # clock-info page); bad mmaps are refused; closing frees the context's UAR pages.
        u = {c["case"]: c for c in (json.loads(l) for l in section(log, "udata").splitlines()
                                    if l.startswith("{"))}
        assert "closed" in u, section(log, "udata")
        want = {"short": 22, "devx": 95, "unknown-flag": 95, "comp-mask": 95, "reserved": 95,
                "longer-dirty": 95, "good": 0, "second-context": 22, "uar-0": 0, "uar-7": 0,
                "uar-8": 22, "two-pages": 22, "private": 22, "unknown-cmd": 22}
        got = {k: u[k]["errno"] for k in want if k in u}
        assert got == want, f"errnos {got}, wanted {want}"
        good = u["good"]
        assert (good["tot_bfregs"], good["bf_reg_size"], good["cache_line_size"], good["num_ports"],
                good["response_length"], good["log_uar_size"], good["num_uars_per_page"],
                good["num_dyn_bfregs"], good["comp_mask"], good["hca_core_clock_offset"],
                good["clock_info_versions"]) == (16, 0, 64, 1, 72, 12, 1, 0, 1, 0, 1), good
        assert good["cqe_version"] in (0, 1) and good["qp_tab_size"] == lim["max_qp"], good
        c2 = cmd_counts(section(log, "cmds-udata"))
        rise2 = {k: c2.get(k, (0, 0))[0] - after.get(k, (0, 0))[0] for k in c2}
        assert (rise2.get("ALLOC_UAR"), rise2.get("DEALLOC_UAR")) == (8, 8), (after, c2)
        assert all(e == 0 for _, e in c2.values()), c2
        assert section(log, "port-up").strip().splitlines()[0] == "4: ACTIVE", section(log, "port-up")
        # The port's events reach user space: the link went down, then up again.
        # GID_CHANGE events (the link-local address going and coming back) interleave with
        # them in any order; the port events themselves are ordered.
        events = re.findall(r"event_type (IBV_EVENT_\w+) \(\d+\), port 1", section(log, "async"))
        port_events = [e for e in events if e != "IBV_EVENT_GID_CHANGE"]
        assert port_events[-2:] == ["IBV_EVENT_PORT_ERR", "IBV_EVENT_PORT_ACTIVE"], section(log, "async")
        # rmmod while a process holds a user context and PDs: the context is disassociated
        # (its objects destroyed, its UAR mappings zapped), the module goes, the process's
        # next verb fails.
        assert "removed" in section(log, "rmmod-busy"), section(log, "rmmod-busy") + describe(r)
        assert re.search(r"^gids=0 qps=0", section(log, "after-rmmod"), re.M), section(log, "after-rmmod")
        held = {j["step"]: j for j in (json.loads(l) for l in section(log, "holder").splitlines()
                                       if l.startswith("{"))}
        assert held.get("after-removal", {}).get("refused") is True, section(log, "holder")
        errs = cx4_errors(r.dmesg)
        assert not errs, "cx4 reported:\n" + "\n".join(errs)
        check_clean_dmesg(r.dmesg)
        name = re.search(r"hca_id:\s+(\S+)", info).group(1)
        print(f"    {name}: max_qp {lim['max_qp']}, max_qp_wr {lim['max_qp_wr']}, GIDs up/added/removed "
              f"{'/'.join(str(len(t)) for t in gids)}, "
              f"libmlx5: 4 PDs, one dynamic UAR page; {section(log, 'link').strip()}")

    yield "cx4 ib device: ibv_devinfo, rdma link ACTIVE, GID table = the card's, libmlx5 PD", \
        cx4_ib_device_gids_pd


    @estimate(300)
    def cx4_rc_pingpong_with_mlx5_ib():
        """cx4 (vm0) and upstream mlx5_ib (vm1), each on its own modelled card, one Ethernet
        segment: unmodified ibv_rc_pingpong (RoCE v2, 4 KiB messages over a 1024-byte path
        MTU, every received buffer checked with --chk) completes all its iterations with cx4
        as the client (both sides waiting on completion events, -e: the card's completion
        events reach libibverbs through cx4's CQ table and ib_core) and as the server
        (polling); so does ibv_ud_pingpong (UD QPs, 1 KiB sends through address handles
        whose destination MAC cx4 answers libmlx5) both ways. libmlx5 created user CQs, MRs and RC QPs on cx4 and took them through
        RST→INIT→RTR→RTS; every object was destroyed (the card's command counts pair up, no
        command failed) and after rmmod the card has no QP and no GID left."""
        opts = "-d $IBDEV -g $GIDX -m 1024 -s 4096 -c -n 200"
        ud = "-d $IBDEV -g $GIDX -s 1024 -c -n 200"
        vm0 = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
        """ + gidx + f"""
            reach $PEER
            section cmds-before; cmds
            wait_signal server-1
            section client; timeout $((120 * SLOW)) ibv_rc_pingpong {opts} -e $PEER 2>&1
            section server
            timeout $((150 * SLOW)) ibv_rc_pingpong {opts} > /tmp/s.txt 2>&1 &
            sleep $((2 * SLOW)); signal server-2; wait; cat /tmp/s.txt
            wait_signal server-3
            section ud-client; timeout $((120 * SLOW)) ibv_ud_pingpong {ud} $PEER 2>&1
            section ud-server
            timeout $((150 * SLOW)) ibv_ud_pingpong {ud} > /tmp/u.txt 2>&1 &
            sleep $((2 * SLOW)); signal server-4; wait; cat /tmp/u.txt
            section cmds-after; cmds
            section cqs; cat $DBG/cqs 2>/dev/null || true
            section roce; req ctl roce
            wait_signal done 600
            ip link set "$IF" down
            rmmod cx4
            section after-rmmod; req ctl roce
            echo unloaded
        """
        vm1 = IB + """
            eth_up
            ib_up
        """ + gidx + f"""
            reach $PEER
            section server
            timeout $((150 * SLOW)) ibv_rc_pingpong {opts} -e > /tmp/s.txt 2>&1 &
            sleep $((2 * SLOW)); signal server-1; wait; cat /tmp/s.txt
            wait_signal server-2
            section client; timeout $((120 * SLOW)) ibv_rc_pingpong {opts} $PEER 2>&1
            section ud-server
            timeout $((150 * SLOW)) ibv_ud_pingpong {ud} > /tmp/u.txt 2>&1 &
            sleep $((2 * SLOW)); signal server-3; wait; cat /tmp/u.txt
            wait_signal server-4
            section ud-client; timeout $((120 * SLOW)) ibv_ud_pingpong {ud} $PEER 2>&1
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=600, model_args=ROCE_MODEL, files=[env.ko])
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, describe(r)
            for kind in ("client", "server", "ud-client", "ud-server"):
                s = section(r.job_log, kind)
                # "819200 bytes in 0.50 seconds = ..." and "200 iters in ..." from each side.
                assert re.search(r"^\d+ bytes in [\d.]+ seconds", s, re.M) and \
                    re.search(r"^200 iters in", s, re.M), \
                    f"vm{rs.index(r)} {kind} pingpong failed:\n{s}\n{describe(r)}"
                assert "Failed" not in s and "error" not in s.lower(), s
                for line in re.findall(r"^\d+ (?:bytes|iters) in .*$", s, re.M):
                    print(f"    vm{rs.index(r)} {kind}: {line}", file=sys.stderr)
        log = rs[0].job_log
        # Two runs, each: one RC QP, one CQ (send and receive share it), one MR, all destroyed;
        # each QP went RST→INIT→RTR→RTS.
        check_objects_paired(log, 2)
        assert re.search(r"^gids=0 qps=0", section(log, "after-rmmod"), re.M), section(log, "after-rmmod")
        errs = cx4_errors(rs[0].dmesg) + mlx5_errors(rs[1].dmesg)
        assert not errs, "\n".join(errs)
        for r in rs:
            check_clean_dmesg(r.dmesg)

    yield "ibv_rc_pingpong, ibv_ud_pingpong between cx4 and mlx5_ib, both ways, data checked", \
        cx4_rc_pingpong_with_mlx5_ib

    @estimate(240)
    def cx4_rc_pingpong_between_cx4_vms():
        """Two VMs with cx4 on their own modelled cards: unmodified ibv_rc_pingpong (RoCE v2,
        4 KiB over MTU 1024, --chk) between them, events on both sides."""
        opts = "-d $IBDEV -g $GIDX -m 1024 -s 4096 -c -n 200 -e"
        common = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
        """ + gidx
        vm0 = common + f"""
            reach $PEER
            wait_signal server
            section client; timeout $((120 * SLOW)) ibv_rc_pingpong {opts} $PEER 2>&1
            signal done
            echo unloaded
        """
        vm1 = common + f"""
            reach $PEER
            section server
            timeout $((150 * SLOW)) ibv_rc_pingpong {opts} > /tmp/s.txt 2>&1 &
            sleep $((2 * SLOW)); signal server; wait; cat /tmp/s.txt
            wait_signal done 600
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=400, model_args=ROCE_MODEL, files=[env.ko])
        for r, kind in zip(rs, ("client", "server")):
            assert r.status == 0 and "unloaded" in r.job_log, describe(r)
            s = section(r.job_log, kind)
            assert re.search(r"^\d+ bytes in [\d.]+ seconds", s, re.M) and \
                re.search(r"^200 iters in", s, re.M), f"{kind} pingpong failed:\n{s}\n{describe(r)}"
            for line in re.findall(r"^\d+ (?:bytes|iters) in .*$", s, re.M):
                print(f"    vm{rs.index(r)} {kind}: {line}", file=sys.stderr)
            errs = cx4_errors(r.dmesg)
            assert not errs, "\n".join(errs)
            check_clean_dmesg(r.dmesg)

    yield "ibv_rc_pingpong between two cx4 VMs, data checked", cx4_rc_pingpong_between_cx4_vms

    @estimate(120)
    def cx4_xsrq_pingpong_with_mlx5_ib():
        """XRC between cx4 (vm0) and upstream mlx5_ib (vm1): unmodified ibv_xsrq_pingpong
        (libmlx5's XRC domain, XRC SRQ with its CQ and user index, an XRC initiator QP from
        user space and the XRC target QP the kernel creates for the process) runs 50 messages
        each way with mlx5_ib as the server (cx4 waiting on completion events) and with cx4
        as the server; both sides print the peer's QPNs and SRQN and succeed. On cx4's card
        ALLOC_XRCD, CREATE_XRC_SRQ and the XRC QPs pair up with their destruction, no command
        failed, the card refused no XRC request (no bad SRQ, nothing misdirected), and after
        rmmod it has no QP left."""
        xopts = "-d $IBDEV -g $GIDX -m 1024 -s 1024 -n 50"
        vm0 = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
        """ + gidx + f"""
            reach $PEER
            section cmds-before; cmds
            wait_signal server-1
            section client
            rc=0; timeout $((60 * SLOW)) ibv_xsrq_pingpong {xopts} -e $PEER > /tmp/c.txt 2>&1 || rc=$?
            echo "rc=$rc"; cat /tmp/c.txt
            section server
            timeout $((60 * SLOW)) ibv_xsrq_pingpong {xopts} > /tmp/s.txt 2>&1 & pid=$!
            sleep $((2 * SLOW)); signal server-2; rc=0; wait $pid || rc=$?; echo "rc=$rc"; cat /tmp/s.txt
            section cmds-after; cmds
            section roce; req ctl roce
            wait_signal done 300
            ip link set "$IF" down
            rmmod cx4
            section after-rmmod; req ctl roce
            echo unloaded
        """
        vm1 = IB + """
            eth_up
            ib_up
        """ + gidx + f"""
            reach $PEER
            section server
            timeout $((60 * SLOW)) ibv_xsrq_pingpong {xopts} > /tmp/s.txt 2>&1 & pid=$!
            sleep $((2 * SLOW)); signal server-1; rc=0; wait $pid || rc=$?; echo "rc=$rc"; cat /tmp/s.txt
            wait_signal server-2
            section client
            rc=0; timeout $((60 * SLOW)) ibv_xsrq_pingpong {xopts} $PEER > /tmp/c.txt 2>&1 || rc=$?
            echo "rc=$rc"; cat /tmp/c.txt
            section roce; req ctl roce
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=400, model_args=ROCE_MODEL, files=[env.ko])
        addr = re.compile(r"^\s*(local|remote): LID \w+, QPN RECV ([0-9a-f]{6}) "
                          r"SEND ([0-9a-f]{6}), PSN [0-9a-f]{6}, SRQN ([0-9a-f]{6}), GID ", re.M)
        seen = {}
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, describe(r)
            for kind in ("client", "server"):
                s = section(r.job_log, kind)
                a = {m.group(1): m.groups()[1:] for m in addr.finditer(s)}
                assert "rc=0" in s and s.count("success") == 1 and set(a) == {"local", "remote"}, \
                    f"{r.name} {kind}: ibv_xsrq_pingpong failed:\n{s}\n{describe(r)}"
                assert all(int(n, 16) for v in a.values() for n in v), s
                seen[(r.name, kind)] = a
                print(f"    {r.name} {kind}: local QPN RECV/SEND/SRQN {'/'.join(a['local'])}, "
                      f"remote {'/'.join(a['remote'])}", file=sys.stderr)
            m = re.search(r"xrc: (\d+) bad srq (\d+) misdirected", section(r.job_log, "roce"))
            assert m and m.groups() == ("0", "0"), section(r.job_log, "roce")
        # Each side's view of the other agrees: what one prints as local the peer prints
        # as remote (the target QP, initiator QP and XRC SRQ numbers cx4 answered libmlx5).
        for k0, k1 in (("client", "server"), ("server", "client")):
            assert seen[("vm0", k0)]["local"] == seen[("vm1", k1)]["remote"], seen
            assert seen[("vm1", k1)]["local"] == seen[("vm0", k0)]["remote"], seen
        log = rs[0].job_log
        # Two runs on cx4, each: a target and an initiator QP (RST→INIT→RTR→RTS), two CQs,
        # one MR, an XRC domain and an XRC SRQ, all destroyed; no command failed.
        check_objects_paired(log, 2)
        before, after = cmd_counts(section(log, "cmds-before")), cmd_counts(section(log, "cmds-after"))
        rise = {k: after.get(k, (0, 0))[0] - before.get(k, (0, 0))[0] for k in after}
        for made, gone in (("ALLOC_XRCD", "DEALLOC_XRCD"), ("CREATE_XRC_SRQ", "DESTROY_XRC_SRQ")):
            assert rise.get(made) == rise.get(gone) == 2, (made, before, after)
        assert rise.get("CREATE_QP") == rise.get("DESTROY_QP") == 4, (before, after)
        assert re.search(r"^gids=0 qps=0", section(log, "after-rmmod"), re.M), section(log, "after-rmmod")
        errs = cx4_errors(rs[0].dmesg) + mlx5_errors(rs[1].dmesg)
        assert not errs, "\n".join(errs)
        for r in rs:
            check_clean_dmesg(r.dmesg)

    yield "ibv_xsrq_pingpong (XRC) between cx4 and mlx5_ib, both ways", \
        cx4_xsrq_pingpong_with_mlx5_ib

    @estimate(90)
    def cx4_xsrq_pingpong_between_cx4_vms():
        """XRC between two cx4 VMs: an ibv_xsrq_pingpong server in vm1 serving two clients in
        vm0 at once (two XRC target QPs in vm1's domain, each client's messages landing in
        the XRC SRQ it names), 50 messages each; all three succeed and neither card refused
        an XRC request."""
        xopts = "-d $IBDEV -g $GIDX -m 1024 -s 1024 -n 50"
        common = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
        """ + gidx
        vm0 = common + f"""
            reach $PEER
            wait_signal server
            section clients
            timeout $((60 * SLOW)) ibv_xsrq_pingpong {xopts} $PEER > /tmp/x1.txt 2>&1 & p1=$!
            timeout $((60 * SLOW)) ibv_xsrq_pingpong {xopts} $PEER > /tmp/x2.txt 2>&1 & p2=$!
            rc1=0; wait $p1 || rc1=$?; rc2=0; wait $p2 || rc2=$?; echo "rc1=$rc1 rc2=$rc2"
            cat /tmp/x1.txt /tmp/x2.txt
            section roce; req ctl roce
            signal done
            echo unloaded
        """
        vm1 = common + f"""
            reach $PEER
            section server
            timeout $((90 * SLOW)) ibv_xsrq_pingpong {xopts} -c 2 > /tmp/x.txt 2>&1 & pid=$!
            sleep $((2 * SLOW)); signal server; rc=0; wait $pid || rc=$?; echo "rc=$rc"; cat /tmp/x.txt
            section roce; req ctl roce
            wait_signal done 300
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=300, model_args=ROCE_MODEL, files=[env.ko])
        for r, kind in zip(rs, ("clients", "server")):
            assert r.status == 0 and "unloaded" in r.job_log, describe(r)
            s = section(r.job_log, kind)
            ok = "rc1=0 rc2=0" in s if kind == "clients" else "rc=0" in s
            assert ok and s.count("success") == (2 if kind == "clients" else 1) and \
                len(re.findall(r"^\s*remote: LID", s, re.M)) == 2, \
                f"{r.name} {kind}: ibv_xsrq_pingpong failed:\n{s}\n{describe(r)}"
            m = re.search(r"xrc: (\d+) bad srq (\d+) misdirected", section(r.job_log, "roce"))
            assert m and m.groups() == ("0", "0"), section(r.job_log, "roce")
            errs = cx4_errors(r.dmesg)
            assert not errs, "\n".join(errs)
            check_clean_dmesg(r.dmesg)

    yield "ibv_xsrq_pingpong between two cx4 VMs, one server, two clients", \
        cx4_xsrq_pingpong_between_cx4_vms

    @estimate(150)
    def cx4_verbs_objects_bad_input():
        """Hostile CQ, SRQ, XRC SRQ, QP and MR requests from user space (raw uverbs commands with
        libmlx5's driver data): short or dirty requests, unknown flags, bad CQE sizes, queue geometry
        that is not a power of two, huge sizes, rings, doorbell records and MRs over unmapped
        memory, a foreign UAR page, a raw packet QP: each gets its errno, nothing oopses; the
        good objects work and are destroyed (a CQ in use by QPs is busy), every object the
        card created is destroyed again. A kernel verbs user (tests/kverbs/kverbs_test.c: two RC
        QPs of the card connected to each other, over a RoCE v2 and a RoCE v1 GID) gets SEND
        with immediate, RDMA WRITE (+immediate) and READ right to the byte; an atomic through
        the PD's global rkey (read/write rights only) refused with a remote access error and
        the next request flushed; both QPs reset and reconnected; a fast registration
        (IB_WR_REG_MR, atomic rights) and fetch-add and compare-swap through its rkey right to
        the word; LOCAL_INV, then a WRITE through the invalidated rkey refused with nothing
        written; EINVAL for a UD send without an AH; a completion event on an armed CQ; the port's
        hardware counters (sysfs hw_counters and `rdma statistic`) count the requests the card
        answered. rmmod while ibv_rc_pingpong
        holds a CQ, an MR and a QP in INIT disassociates its context: the module goes, the
        card has no QP left."""
        vm0 = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
            section cmds-before; cmds
            section bad; python3 /cx4/ib_objects_bad.py /dev/infiniband/$(ls /sys/class/infiniband/$IBDEV/device/infiniband_verbs/) 2>&1
            section cmds-after; cmds
            hw() { for f in /sys/class/infiniband/$IBDEV/ports/1/hw_counters/*; do echo "hw ${f##*/} $(cat $f)"; done; }
            section counters-before; hw
            section kverbs; insmod /cx4/kverbs_test.ko dev=$IBDEV && rmmod kverbs_test
            dmesg | grep "kverbs: "
            section counters-after; hw; rdma statistic show link $IBDEV/1
            section roce-kverbs; req ctl roce
            ibv_rc_pingpong -d $IBDEV -g 1 > /tmp/hold.txt 2>&1 &
            HP=$!
            for i in $(seq $((100 * SLOW))); do req ctl roce | grep -q "/RC/INIT" && break; sleep 0.1; done
            section roce-held; req ctl roce
            ip link set "$IF" down
            section rmmod-busy; timeout $((120 * SLOW)) rmmod cx4 && echo removed
            section after-rmmod; req ctl roce
            kill $HP 2>/dev/null || true; wait $HP 2>/dev/null || true
            echo unloaded
        """
        ko = kverbs_ko(env)
        r = eth_vms(env, [vm0], timeout=300, model_args=ROCE_MODEL,
                    files=[env.ko, BAD_TOOL, ko])[0]
        assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        log = r.job_log
        u = {c["case"]: c for c in (json.loads(l) for l in section(log, "bad").splitlines()
                                    if l.startswith("{"))}
        assert "closed" in u, section(log, "bad") + describe(r)
        EINVAL, EFAULT, EOPNOTSUPP, EBUSY = 22, 14, 95, 16
        want = {"pd": 0, "cq-short": EINVAL, "cq-cqe-size": EINVAL, "cq-flags": EINVAL,
                "cq-reserved": EINVAL, "cq-compression": EOPNOTSUPP, "cq-foreign-uar": EINVAL,
                "cq-misaligned": EINVAL, "cq-unmapped-ring": EFAULT, "cq-unmapped-dbrec": EFAULT,
                "cq-longer-dirty": EOPNOTSUPP, "cq-huge": EINVAL, "cq-good": 0,
                "resize-zero": EINVAL, "resize-huge": EINVAL, "resize-short": EINVAL,
                "resize-cqe-size": EINVAL, "resize-reserved": EINVAL,
                "resize-misaligned": EINVAL, "resize-unmapped": EFAULT, "resize-same": 0,
                "resize-good": 0,
                "qp-short": EINVAL, "qp-flags": EINVAL, "qp-sq-not-pow2": EINVAL,
                "qp-rq-stride": EINVAL, "qp-huge": EINVAL, "qp-empty": EINVAL,
                "qp-sq-buf": EINVAL, "qp-unmapped": EFAULT, "qp-misaligned": EINVAL,
                # A raw packet QP whose separate SQ buffer (sq_buf_addr 0) is not mapped:
                # ib_umem_get's EFAULT, as mlx5_ib's create_raw_packet_qp_sq.
                "qp-raw-packet": EFAULT, "qp-good-rc": 0, "qp-good-ud": 0, "qp-good-srq": 0,
                "srq-short": EINVAL, "srq-flags": EINVAL, "srq-reserved": EINVAL,
                "srq-misaligned": EINVAL, "srq-unmapped": EFAULT, "srq-huge": EINVAL,
                "srq-good": 0, "srq-destroyed": 0,
                "xrcd": 0, "xsrq-bad-xrcd": EINVAL, "xsrq-no-uidx": EINVAL, "xsrq-good": 0,
                "xsrq-destroyed": 0, "xrcd-closed": 0,
                "mr-unmapped": EFAULT, "mr-offset-mismatch": EINVAL, "mr-good": 0, "mr-good-dereg": 0,
                "cq-busy": EBUSY, "qp-destroyed": 0, "cq-destroyed": 0, "pd-freed": 0}
        got = {k: u[k]["errno"] for k in want if k in u}
        assert got == want, f"errnos {got},\nwanted {want}\n" + section(log, "bad")
        assert u["cq-good"]["cqe"] == 255 and u["cq-good"]["cqn"], u["cq-good"]
        assert (u["resize-same"]["cqe"], u["resize-good"]["cqe"]) == (255, 511), \
            (u["resize-same"], u["resize-good"])
        assert u["qp-good-rc"]["qpn"] != u["qp-good-ud"]["qpn"], u
        before, after = cmd_counts(section(log, "cmds-before")), cmd_counts(section(log, "cmds-after"))
        rise = {k: after.get(k, (0, 0))[0] - before.get(k, (0, 0))[0] for k in after}
        # The good objects reached the card and went again; the bad ones never reached it.
        assert (rise.get("CREATE_CQ"), rise.get("DESTROY_CQ")) == (1, 1), (before, after)
        assert (rise.get("CREATE_QP"), rise.get("DESTROY_QP")) == (3, 3), (before, after)
        assert (rise.get("CREATE_RMP"), rise.get("DESTROY_RMP")) == (1, 1), (before, after)
        assert u["xsrq-good"]["srqn"], u["xsrq-good"]
        for made, gone in (("ALLOC_XRCD", "DEALLOC_XRCD"), ("CREATE_XRC_SRQ", "DESTROY_XRC_SRQ")):
            assert (rise.get(made), rise.get(gone)) == (1, 1), (made, before, after)
        assert (rise.get("CREATE_MKEY"), rise.get("DESTROY_MKEY")) == (1, 1), (before, after)
        assert all(e == 0 for _, e in after.values()), after
        # Kernel verbs (kverbs_test.ko, a kernel ULP's calls): two RC QPs looped back through
        # the card over a RoCE v2 GID (IPv4) and over the RoCE v1 link-local GID: every check
        # passes, in order, and the card carried the packets (v1 as EtherType 0x8915).
        kv = section(log, "kverbs")
        for what in ("RoCE v2", "RoCE v1"):
            run = kv.split(f"kverbs: {what}: GID index", 1)[-1].split(f"kverbs: {what} done", 1)[0]
            passed = re.findall(r"kverbs: PASS (.+)$", run, re.M)
            assert passed == KVERBS_CHECKS and "FAIL" not in run, f"{what}:\n{kv}"
            assert re.search(rf"kverbs: {what} done: {len(KVERBS_CHECKS)} passed, 0 failed", kv), kv
        m = re.search(r"roce: tx (\d+) pkts", section(log, "roce-kverbs"))
        assert m and int(m.group(1)) >= 20, section(log, "roce-kverbs")
        # The port's hardware counters (the device's queue counter set, which both QPs name):
        # the card counted, as the responder, the WRITEs (with and without immediate), the
        # READ and the two atomics of each run; `rdma statistic` shows the same numbers.
        hw = lambda sec: {k: int(v) for k, v in re.findall(r"^hw (\w+) (\d+)$", section(log, sec), re.M)
                          if k != "lifespan"}
        c0, c1 = hw("counters-before"), hw("counters-after")
        names = ("rx_write_requests", "rx_read_requests", "rx_atomic_requests", "out_of_sequence",
                 "duplicate_request", "local_ack_timeout_err", "np_cnp_sent", "rp_cnp_handled")
        assert all(n in c1 for n in names), f"hw_counters: {sorted(c1)}"
        rise = {k: c1[k] - c0.get(k, 0) for k in c1}
        assert rise["rx_write_requests"] >= 4 and rise["rx_read_requests"] >= 2 and \
            rise["rx_atomic_requests"] >= 4, f"hw_counters rose by {rise}"
        stat = section(log, "counters-after")
        for n in ("rx_write_requests", "rx_read_requests", "rx_atomic_requests"):
            m = re.search(rf"\b{n} (\d+)", stat.split("link ", 1)[-1])
            assert m and int(m.group(1)) >= c1[n], f"rdma statistic: {n}:\n{stat}"
        print(f"    hw counters over the kernel verbs run: " +
              ", ".join(f"{k} +{v}" for k, v in rise.items() if v), file=sys.stderr)
        # rmmod while ibv_rc_pingpong holds a context, PD, MR, CQ and an RC QP (in INIT,
        # waiting for a client): the context is disassociated, its objects destroyed. The
        # card's other QPs are cx4's GSI QP (ib_mad's QP1), its UMR QP (drivers/cx4/ib/umr.rs)
        # and the EC engine's RC QP, connected to itself (drivers/cx4/ec).
        held = section(log, "roce-held")
        assert re.search(r"qps=4 ", held) and re.search(r"qp=0x[0-9a-f]+/RC/INIT", held) \
            and re.search(r"qp=0x[0-9a-f]+/RC/RTS", held) \
            and re.search(r"qp=0x[0-9a-f]+/REG_UMR/RTS", held) \
            and re.search(r"qp=0x[0-9a-f]+/QP1/RTS", held), held
        assert "removed" in section(log, "rmmod-busy"), section(log, "rmmod-busy") + describe(r)
        assert re.search(r"^gids=0 qps=0", section(log, "after-rmmod"), re.M), section(log, "after-rmmod")
        errs = cx4_errors(r.dmesg)
        assert not errs, "cx4 reported:\n" + "\n".join(errs)
        check_clean_dmesg(r.dmesg)

    yield "cx4 verbs objects: malformed CQ/SRQ/QP/MR requests refused, no leak; kernel verbs", \
        cx4_verbs_objects_bad_input

    @estimate(120)
    def cx4_resize_cq_from_user_space():
        """ibv_resize_cq through libmlx5 on cx4 (tests/verbs_resize_cq.py, as model_roce runs
        it with mlx5_ib): a CQ grown and shrunk while RDMA WRITE completions of a
        self-connected RC QP wait in its old ring and more arrive after; every completion
        seen once and in order across the switch; resizes below the waiting completions (the
        card's BAD_SIZE_OUTS_CQES → EINVAL), to 0 and far beyond the maximum are refused and
        lose nothing. Each accepted resize is one MODIFY_CQ, the refused one a failed one."""
        vm0 = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
        """ + gidx + """
            section mod-before; grep -E "^MODIFY_CQ " $DBG/commands || echo "MODIFY_CQ 0x403 0 0"
            section resize
            python3 /cx4/verbs_resize_cq.py $IBDEV --gid-index $GIDX --settle $SLOW 2>&1
            section mod-after; grep -E "^MODIFY_CQ " $DBG/commands || true
            echo finished
        """
        r = eth_vms(env, [vm0], timeout=300, model_args=ROCE_MODEL,
                    files=[env.ko, RESIZE_TOOL, RC_FIXTURE])[0]
        assert r.status == 0 and "finished" in r.job_log, describe(r)
        log = r.job_log
        check_resize(section(log, "resize"), r.model_log)
        before = cmd_counts(section(log, "mod-before")).get("MODIFY_CQ", (0, 0))
        after = cmd_counts(section(log, "mod-after")).get("MODIFY_CQ", (0, 0))
        # grow, shrink: accepted; too-small: refused by the card. zero, huge, same: never sent.
        assert (after[0] - before[0], after[1] - before[1]) == (3, 1), (before, after)
        errs = [l for l in cx4_errors(r.dmesg) if "MODIFY_CQ" not in l]
        assert not errs, "\n".join(errs)
        check_clean_dmesg(r.dmesg)

    yield "cx4: ibv_resize_cq with completions in flight, each seen once, bad sizes refused", \
        cx4_resize_cq_from_user_space

    def cx4_tool(tool, args, extra, pairs):
        """Runs the guest program `tool` (tests/verbs_*.py, with `args`, model_roce's RC fixture
        and the `extra` files) through libmlx5 on cx4 and returns its report, after checking that
        the VM finished, that for each (made, gone) command pair in `pairs` the card made
        some and destroyed as many, that no command failed and that cx4 reported nothing but
        the QP errors of refused requests."""
        vm0 = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
        """ + gidx + f"""
            section cmds-before; cmds
            section tool
            python3 /cx4/{tool.name} $IBDEV --gid-index $GIDX {args} 2>&1
            section cmds-after; cmds
            echo finished
        """
        r = eth_vms(env, [vm0], timeout=300, model_args=ROCE_MODEL,
                    files=[env.ko, tool, *extra, RC_FIXTURE])[0]
        assert r.status == 0 and "finished" in r.job_log, describe(r)
        log = r.job_log
        before, after = cmd_counts(section(log, "cmds-before")), cmd_counts(section(log, "cmds-after"))
        rise = {k: after.get(k, (0, 0))[0] - before.get(k, (0, 0))[0] for k in after}
        for made, gone in pairs:
            assert rise.get(made, 0) > 0 and rise.get(made) == rise.get(gone), (made, before, after)
        assert all(e == 0 for _, e in after.values()), after
        errs = [l for l in cx4_errors(r.dmesg) if "QP" not in l and "qp" not in l]
        assert not errs, "\n".join(errs)
        check_clean_dmesg(r.dmesg)
        return section(log, "tool")

    @estimate(120)
    def cx4_small_verbs():
        """tests/verbs_small.py through libmlx5 on cx4, with model_roce's checks for mlx5_ib
        (`check_small`): the responder QP's remote rights as mlx5_ib writes them (QPC
        rre/rwe/rae and the optional-parameter bits on modify) refuse what they do not grant
        and serve what they do; ibv_modify_srq arms an SRQ's limit (MODIFY_RMP), the card's
        SRQ_RQ_LIMIT event reaches the process as IBV_EVENT_SRQ_LIMIT_REACHED once, and
        ibv_query_srq reads the limit; libmlx5's dynamic UARs are UAR objects (ALLOC_UAR, one
        DEALLOC_UAR each when the context closes) that its QPs and CQs ring through. Every
        object the card created is destroyed again and no command failed."""
        check_small(cx4_tool(SMALL_TOOL, "--settle $SLOW", [], (
            ("CREATE_QP", "DESTROY_QP"), ("CREATE_MKEY", "DESTROY_MKEY"),
            ("CREATE_CQ", "DESTROY_CQ"), ("CREATE_RMP", "DESTROY_RMP"),
            ("ALLOC_UAR", "DEALLOC_UAR"))))

    yield "cx4: QP remote rights, SRQ limit event (verbs_small.py)", cx4_small_verbs

    @estimate(120)
    def cx4_clock():
        """tests/verbs_clock.py through libmlx5 on cx4, with model_roce's checks for mlx5_ib
        (`check_clock`): ibv_query_device_ex's timestamp mask and core clock, the internal
        timer through the read-only core-clock mapping (ibv_query_rt_values_ex), completion
        timestamps of an extended CQ between two timer reads, the clock-info page (the PHC's
        timecounter) converting them, kept up to date after phc_ctl's adjfine and adjtime."""
        check_clock(cx4_tool(CLOCK_TOOL, "", [], (("CREATE_CQ", "DESTROY_CQ"),)))

    yield "cx4: completion timestamps, clock-info page, PHC adjustments (verbs_clock.py)", \
        cx4_clock

    @estimate(120)
    def cx4_memory_windows():
        """tests/verbs_mw.py through libmlx5 on cx4, with model_roce's checks for mlx5_ib
        (`check_mw`): windows are free KLM mkeys (CREATE_MKEY, one DESTROY_MKEY each) that
        libmlx5's UMR WQEs bind; RDMA through them is served inside the window with its
        rights, refused outside, through another QP (type 2) and after SEND_WITH_INV or
        LOCAL_INV."""
        check_mw(cx4_tool(MW_TOOL, "--settle $SLOW", [SMALL_TOOL], (
            ("CREATE_QP", "DESTROY_QP"), ("CREATE_MKEY", "DESTROY_MKEY"))))

    yield "cx4: memory windows type 1 and 2 (verbs_mw.py)", cx4_memory_windows

    # What the shared verbs bodies of model_roce (dc_*, raw_*, dpdk_between_vms) take for cx4:
    # the guest's set-up, its teardown, the module to copy in and cx4's own error reports.
    cx4_side = (CX4_UP + IB + CX4_IB + "cx4_up\ncx4_ib_up\n", 'ip link set "$IF" down; rmmod cx4',
                [env.ko], cx4_errors)

    @estimate(150)
    def cx4_dc_transport():
        """tests/verbs_dc.py through libmlx5's mlx5dv on cx4, one card looping back, with
        model_roce's checks for mlx5_ib (`dc_one_vm`): DCIs are QPs of service type DCI, DCTs
        are created on the card at INIT→RTR (CREATE_DCT, the number answered to libmlx5);
        SEND, RDMA WRITE and READ through a DCT, one DCI to two DCTs, data checked; the wrong
        key unanswered and counted, the DCI's retries run out, no receive WQE taken;
        QUERY_DCT; every DCT drained (DRAIN_DCT, the DCT_DRAINED event cx4 waits for) and
        destroyed, no command failed and cx4 reported nothing."""
        dc_one_vm(env, *cx4_side)

    yield "cx4: DC transport, DCIs to DCTs, SEND/WRITE/READ and the access key (verbs_dc.py)", \
        cx4_dc_transport

    @estimate(180)
    def cx4_dc_transport_between_vms():
        """tests/verbs_dc.py between two cx4 VMs, with model_roce's checks for mlx5_ib
        (`dc_between_vms`): vm0's DCTs, vm1's DCIs; the steps and checks of the one-card run
        on each side."""
        dc_between_vms(env, *cx4_side)

    yield "cx4: DC transport between two VMs (verbs_dc.py)", cx4_dc_transport_between_vms

    @estimate(150)
    def cx4_raw_packet_qps_between_vms():
        """tests/verbs_raw.py on two cx4 VMs, with model_roce's checks for mlx5_ib
        (`raw_between_vms`): raw packet QPs (TIS, SQ, RQ and a direct TIR in the context's
        transport domain), ibv_create_flow rules in BYPASS tables ahead of cx4's own steering
        (Ethernet + IPv4/IPv6 + UDP/TCP specs, flow tag, drop), an RSS QP over four WQs (RQs,
        an RQT, an indirect Toeplitz TIR); frames each way arrive where their rule says with
        its tag, RSS spreads, dropped frames reach nothing, a tag of 2^24 (EINVAL) and a
        priority past the last (ENOMEM) are refused; after rmmod every object is paired on
        the card, no command failed and cx4 reported nothing."""
        raw_between_vms(env, *cx4_side)

    yield "cx4: raw packet QPs, flow steering with tags and drop, RSS QP, between two VMs " \
        "(verbs_raw.py)", cx4_raw_packet_qps_between_vms

    @estimate(180)
    def cx4_dpdk_testpmd_between_vms():
        """Unmodified DPDK (the guest's dpdk-testpmd and mlx5 PMD, Verbs path) on cx4 in two
        VMs, with model_roce's checks for mlx5_ib (`dpdk_between_vms`): cx4 refuses DEVX, the
        PMD's RX is an RSS QP over WQs, its TX a raw packet QP, its control flows
        ibv_create_flow rules; a burst bounces between the VMs with both sides' port counters
        agreeing, no command failed and cx4 reported nothing. The commands the PMD caused are
        printed (Documentation/raw-packet.md lists them)."""
        dpdk_between_vms(env, *cx4_side)

    yield "cx4: DPDK dpdk-testpmd (mlx5 PMD, Verbs path) forwarding between two VMs", \
        cx4_dpdk_testpmd_between_vms

    @estimate(150)
    def cx4_mr_rereg_and_dmabuf():
        """User MRs re-registered and dma-buf MRs, through libmlx5 (pyverbs, tests/verbs_mr.py)
        and a self-connected RC QP on cx4: ibv_rereg_mr to another range (TRANSLATION) gives new
        keys, RDMA WRITE lands in the new range and the old rkey and addresses outside the new
        range get remote access errors; rights and PD change in place, keeping the keys (as
        mlx5_ib does by UMR: cx4's UMR QP): a remote-read-only MR (pages pinned read-only)
        cannot gain write rights (EACCES), an MR pinned writable gains remote write and loses
        it again, reads working throughout; an MR moved to another PD is refused to the QP's
        PD and works when moved back; all three at once; bad re-registrations (unmapped range EFAULT, length 0,
        no flags, on-demand paging, remote write without local write) leave the MR with its
        keys and translation. dma-buf: a bad fd is EBADF, a non-dma-buf fd EINVAL; over the
        VM's virtio-gpu a DRM dumb buffer exported as a dma-buf is registered (48 KiB at offset
        8 KiB, range past the end EINVAL), an RDMA WRITE into it is read back through the dumb
        buffer's mmap and bytes written there come back by RDMA READ. Every mkey the card
        created is destroyed again, no command failed, no oops."""
        vm0 = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
        """ + gidx + """
            section cmds-before; cmds
            # The debug kernel has no DRM: the dma-buf data steps need the virtio-gpu's card.
            section drm; DB=; [ -e /dev/dri/card0 ] && DB="--dmabuf /dev/dri/card0" && echo card0
            section mr; python3 /cx4/verbs_mr.py $IBDEV --gid-index $GIDX $DB 2>&1
            section cmds-after; cmds
            echo finished
        """
        r = eth_vms(env, [vm0], timeout=300, model_args=ROCE_MODEL,
                    files=[env.ko, MR_TOOL, RC_FIXTURE], gpu=(0,))[0]
        assert r.status == 0 and "finished" in r.job_log, describe(r)
        log = r.job_log
        steps = {}
        for l in section(log, "mr").splitlines():
            if l.startswith("{"):
                j = json.loads(l)
                steps[j["step"]] = j
        assert "closed" in steps, section(log, "mr") + describe(r)
        bad = [s for s in steps.values() if s.get("ok") is False]
        assert not bad, "failed steps:\n" + "\n".join(map(json.dumps, bad)) + "\n" \
            + section(log, "mr")
        checks = ["reg-write", "trans-write", "trans-old-rkey", "trans-outside", "ro-read",
                  "ro-write-refused", "access-needs-writable", "access-write", "access-read",
                  "access-less", "pd-other-refused", "pd-back-write", "all-write", "bad-kept"]
        # DRM (virtio-gpu) is in the default kernel; the debug flavour has none.
        drm = "card0" in section(log, "drm")
        assert drm or env.flavour == "debug", "no /dev/dri/card0 from the virtio-gpu\n" + describe(r)
        if drm:
            checks += ["dmabuf-write", "dmabuf-read", "dmabuf-outside", "dmabuf-rereg-refused"]
        assert all(steps.get(c, {}).get("ok") for c in checks), \
            [c for c in checks if c not in steps]
        EINVAL, EFAULT, EBADF, EOPNOTSUPP = 22, 14, 9, 95
        assert steps["bad-kept"]["errnos"] == {
            "unmapped": EFAULT, "len0": EINVAL, "flags0": EINVAL, "odp": EOPNOTSUPP,
            "remote-write-no-local": EINVAL}, steps["bad-kept"]
        assert steps["dmabuf-errors"]["errnos"] == {"bad-fd": EBADF, "not-dmabuf": EINVAL}, \
            steps["dmabuf-errors"]
        assert not drm or steps["dmabuf-range-errors"]["errnos"] == {"past-end": EINVAL}, \
            steps["dmabuf-range-errors"]
        before, after = cmd_counts(section(log, "cmds-before")), cmd_counts(section(log, "cmds-after"))
        rise = {k: after.get(k, (0, 0))[0] - before.get(k, (0, 0))[0] for k in after}
        # src, mr + 2 re-registrations to new ranges (rights and PD change in place), ro, the
        # MR gaining and losing write rights in place, the dma-buf MR: 7 mkeys, all gone again.
        assert rise.get("CREATE_MKEY") == rise.get("DESTROY_MKEY") == 6 + drm, (before, after)
        assert all(e == 0 for _, e in after.values()), after
        print(f"    mkeys created and destroyed: {rise['CREATE_MKEY']}", file=sys.stderr)
        errs = [l for l in cx4_errors(r.dmesg) if "QP" not in l and "qp" not in l]
        assert not errs, "\n".join(errs)
        check_clean_dmesg(r.dmesg)

    yield "cx4 MRs: ibv_rereg_mr (range, rights, PD) checked with RDMA; dma-buf MR over virtio-gpu", \
        cx4_mr_rereg_and_dmabuf

    # perftest with the connection exchanged over TCP (rdma_cm, -R: the test below): cx4 is
    # the client, mlx5_ib the server. (name, tool, options).
    perftests = [("uc", "ibv_uc_pingpong", "-g $GIDX -m 1024 -s 4096 -c -n 200"),
                 ("srq", "ibv_srq_pingpong", "-g $GIDX -m 1024 -s 4096 -c -n 200"),
                 ("write", "ib_write_bw", "-x $GIDX -F -s 65536 -n 200"),
                 ("read", "ib_read_bw", "-x $GIDX -F -s 65536 -n 200"),
                 ("send", "ib_send_bw", "-x $GIDX -F -s 65536 -n 200"),
                 ("atomic", "ib_atomic_bw", "-x $GIDX -F -n 200"),
                 ("write-lat", "ib_write_lat", "-x $GIDX -F -s 8 -n 200")]

    @estimate(300)
    def cx4_perftest_with_mlx5_ib():
        """cx4 (vm0, client) and mlx5_ib (vm1, server): unmodified ibv_uc_pingpong (UC, data
        checked), ibv_srq_pingpong (16 RC QPs receiving through one SRQ, cx4's an RMP) and
        perftest ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw and
        ib_write_lat (RDMA writes into and reads from the peer's MR by rkey, atomics: the
        remote access rights of cx4's MRs and QPs) complete and report a result."""
        server = "".join(f"""
            timeout $((200 * SLOW)) {tool} -d $IBDEV {o} > /tmp/{name}.txt 2>&1 &
            listening 18515; signal {name}; wait || echo "{name} server failed rc=$?"
            section {name}; cat /tmp/{name}.txt
        """ for name, tool, o in perftests)
        client = "".join(f"""
            wait_signal {name}
            section {name}
            timeout $((180 * SLOW)) {tool} -d $IBDEV {o} $PEER 2>&1 || echo "{name} failed rc=$?"
        """ for name, tool, o in perftests)
        vm0 = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
        """ + gidx + "reach $PEER\nsection cmds-before; cmds\n" + client + """
            section cmds-after; cmds
            signal done
            echo unloaded
        """
        vm1 = IB + """
            eth_up
            ib_up
        """ + gidx + "reach $PEER\n" + server + """
            wait_signal done 600
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=900, model_args=ROCE_MODEL, files=[env.ko])
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        log = rs[0].job_log
        for name in ("uc", "srq"):
            s = section(log, name)
            assert re.search(r"^200 iters in", s, re.M), f"{name}:\n{s}\n{describe(rs[0])}"
        for name, _, _ in perftests[2:]:
            s = section(log, name)
            assert "failed" not in s, f"{name}:\n{s}\n{describe(rs[0])}\n{section(rs[1].job_log, name)}"
            row = perftest_row(s, name)
            print(f"    {name}: {row.group(0).strip()}", file=sys.stderr)
        after = cmd_counts(section(log, "cmds-after"))
        assert all(e == 0 for _, e in after.values()), after
        errs = cx4_errors(rs[0].dmesg) + mlx5_errors(rs[1].dmesg)
        assert not errs, "\n".join(errs)
        for r in rs:
            check_clean_dmesg(r.dmesg)

    yield "cx4 -> mlx5_ib: ibv_uc/srq_pingpong, perftest write/read/send/atomic bw, write lat", \
        cx4_perftest_with_mlx5_ib

    # rping: pings per run, bytes per ping; -V the client checks each echo, -v both sides
    # print each ping's buffer.
    RPING_COUNT, RPING_SIZE = 20, 64
    RPING = f"-C {RPING_COUNT} -S {RPING_SIZE} -V -v"
    SEND_BW = "-F -s 65536 -n 100 -R"

    @estimate(300)
    def cx4_rdma_cm_with_mlx5_ib():
        """rdma_cm over cx4: its kernel verbs and GSI QP (QP1) carry the connection manager's
        MADs (REQ/REP/RTU, DREQ/DREP) to and from upstream mlx5_ib on another modelled card.
        Unmodified rping (RC; the server RDMA-READs the client's buffer and RDMA-WRITEs it
        back, 20 pings of 64 bytes, -V: the client compares every echo) with cx4 as the server,
        then as the client: both exit 0 and both sides print all 20 pings with the exact text
        rping's client generated. ucmatose with cx4 as the server (4 connections accepted at
        once, 50 messages each way): "data transfers complete", "return status 0" on both
        sides. ib_send_bw -R (QPs connected by rdma_cm, 100 SENDs of 64 KiB) with cx4 as the
        client: both sides report rdma_cm QPs and a result row, the client's bandwidth is not
        zero. The card shows cx4's QP1 in RTS and counted the MADs as UD packets, none dropped
        for its Q_Key (nor on the mlx5_ib side); every user QP, CQ and MR rdma_cm made on cx4
        went RST→INIT→RTR→RTS and was destroyed, no command failed; after rmmod the card has no
        QP (QP1 included) and no GID."""
        vm0 = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
        """ + gidx + f"""
            reach $PEER
            section cmds-before; cmds
            section rping-server
            timeout $((90 * SLOW)) rping -s -a $IP {RPING} > /tmp/rps.txt 2> /tmp/rps.err & pid=$!
            sleep $((2 * SLOW)); signal server-rping-0; rc=0; wait $pid || rc=$?; echo "rc=$rc"
            cat /tmp/rps.txt /tmp/rps.err
            wait_signal server-rping-1
            section rping-client
            timeout $((60 * SLOW)) rping -c -a $PEER {RPING} > /tmp/rpc.txt 2> /tmp/rpc.err \\
                && echo rc=0 || echo "rc=$?"
            cat /tmp/rpc.txt /tmp/rpc.err
            section cma
            timeout $((150 * SLOW)) ucmatose -b $IP -c 4 -C 50 > /tmp/c.txt 2>&1 & pid=$!
            sleep $((2 * SLOW)); signal server-cma; rc=0; wait $pid || rc=$?; echo "rc=$rc"; cat /tmp/c.txt
            wait_signal server-bw
            section bw
            timeout $((180 * SLOW)) ib_send_bw -d $IBDEV -x $GIDX {SEND_BW} $PEER 2>&1 \\
                && echo rc=0 || echo "rc=$?"
            section cmds-after; cmds
            section roce; req ctl roce
            wait_signal done 600
            ip link set "$IF" down
            rmmod cx4
            section after-rmmod; req ctl roce
            echo unloaded
        """
        vm1 = IB + """
            eth_up
            ib_up
        """ + gidx + f"""
            reach $PEER
            wait_signal server-rping-0
            section rping-client
            timeout $((60 * SLOW)) rping -c -a $PEER {RPING} > /tmp/rpc.txt 2> /tmp/rpc.err \\
                && echo rc=0 || echo "rc=$?"
            cat /tmp/rpc.txt /tmp/rpc.err
            section rping-server
            timeout $((90 * SLOW)) rping -s -a $IP {RPING} > /tmp/rps.txt 2> /tmp/rps.err & pid=$!
            sleep $((2 * SLOW)); signal server-rping-1; rc=0; wait $pid || rc=$?; echo "rc=$rc"
            cat /tmp/rps.txt /tmp/rps.err
            wait_signal server-cma
            section cma
            timeout $((120 * SLOW)) ucmatose -s $PEER -b $IP -c 4 -C 50 2>&1 && echo rc=0 || echo "rc=$?"
            section bw
            timeout $((200 * SLOW)) ib_send_bw -d $IBDEV -x $GIDX {SEND_BW} > /tmp/bw.txt 2>&1 & pid=$!
            sleep $((2 * SLOW)); signal server-bw; rc=0; wait $pid || rc=$?; echo "rc=$rc"; cat /tmp/bw.txt
            section roce; req ctl roce
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=600, model_args=ROCE_MODEL, files=[env.ko])
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, logs(rs)
        ok = lambda s: re.search(r"^rc=0$", s, re.M)
        for r in rs:
            who = "cx4" if r is rs[0] else "mlx5_ib"
            # rping: the client checked every echo (-V: "data mismatch!" and a failure
            # otherwise); both sides print each ping's buffer (-v), the server what it read from
            # the client, the client what the server wrote back: all 20, in order, the text the
            # client generated.
            for role, tag in (("server", "server ping data: "), ("client", "ping data: ")):
                s = section(r.job_log, f"rping-{role}")
                assert ok(s) and "data mismatch" not in s, \
                    f"rping with {who} as the {role} failed:\n{s}\n{logs(rs)}"
                pings = re.findall(rf"^{tag}(rdma-ping-(\d+): \S*)$", s, re.M)
                assert [int(n) for _, n in pings] == list(range(RPING_COUNT)), \
                    f"{who} rping {role}: pings {[n for _, n in pings]}:\n{s}"
                bad = [p for p, n in pings if p != rping_payload(int(n), RPING_SIZE)]
                assert not bad, f"{who} rping {role}: wrong data {bad[:3]}, wanted e.g. " \
                    f"{rping_payload(0, RPING_SIZE)!r}"
            s = section(r.job_log, "cma")
            for want in ("data transfers complete", "test complete", "return status 0"):
                assert ok(s) and want in s, f"ucmatose on {who} lacks {want!r}:\n{s}\n{logs(rs)}"
            # perftest -R: the test QPs connected through rdma_cm, a result row
            # "#bytes #iterations BW-peak BW-average MsgRate".
            s = section(r.job_log, "bw")
            assert ok(s), f"ib_send_bw -R on {who} failed:\n{s}\n{logs(rs)}"
            assert re.search(r"rdma_cm QPs\s*:\s*ON", s) and \
                re.search(r"Data ex\. method\s*:\s*rdma_cm", s), s
            row = re.search(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+([\d.]+)", s, re.M)
            assert row and int(row.group(1)) == 65536, f"ib_send_bw -R on {who}: no result row:\n{s}"
            print(f"    ib_send_bw -R {who}: {row.group(0).strip()}", file=sys.stderr)
            # CM MADs are UD packets on the card; none was dropped for a wrong Q_Key.
            roce = section(r.job_log, "roce")
            m = re.search(r"ud: tx (\d+) \(\d+ bad av, \d+ mc looped\) rx (\d+) \(dropped: (\d+) qkey",
                          roce)
            assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0 and m.group(3) == "0", \
                f"{who}: {roce}"
        log = rs[0].job_log
        assert re.search(r"Device\s*:\s*cx4_\d+", section(log, "bw")), section(log, "bw")
        bw = section(log, "bw")
        row = re.search(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+([\d.]+)", bw, re.M)
        # perftest reports 0.00 when its own clock calibration failed (a linear fit of TSC
        # against gettimeofday over a few usleeps; a loaded TCG guest on the debug kernel can
        # miss its r^2 >= 0.9): the transfer completed (rc=0, 100 iterations), its rate is
        # unknown.
        assert int(row.group(2)) == 100 and \
            (float(row.group(4)) > 0 or "Correlation coefficient r^2" in bw), bw
        # cx4's QP1 on the card, in RTS; seven connections (2 rping, 4 ucmatose, 1 perftest)
        # each took at least one MAD each way through it.
        roce = section(log, "roce")
        assert re.search(r"qp=0x[0-9a-f]+/QP1/RTS", roce), roce
        m = re.search(r"ud: tx (\d+) \(\d+ bad av, \d+ mc looped\) rx (\d+)", roce)
        assert int(m.group(1)) >= 7 and int(m.group(2)) >= 7, roce
        check_objects_paired(log, 7)
        assert re.search(r"^gids=0 qps=0", section(log, "after-rmmod"), re.M), section(log, "after-rmmod")
        errs = cx4_errors(rs[0].dmesg) + mlx5_errors(rs[1].dmesg)
        assert not errs, "\n".join(errs)
        for r in rs:
            check_clean_dmesg(r.dmesg)

    yield "rdma_cm between cx4 and mlx5_ib: rping -V both ways, ucmatose, ib_send_bw -R", \
        cx4_rdma_cm_with_mlx5_ib

    # cx4 <-> rxe: the tools and options of model_roce's rxe test (the same on both sides;
    # the server gets no address), RC and UD pingpong and rping both ways, perftest with cx4
    # the client. rping also prints every ping's buffer (-v), 4 KiB: several packets per READ
    # and WRITE.
    RXE_SIZE = 4096
    RXE_TOOLS = {
        "ud": "ibv_ud_pingpong -d $IBDEV -g $GIDX -s 1024 -c -n 200",
        "rc": "ibv_rc_pingpong -d $IBDEV -g $GIDX -m 1024 -s 4096 -c -n 200",
        "rping": f"rping -C {RPING_COUNT} -S {RXE_SIZE} -V -v",
        "bw": "ib_write_bw -d $IBDEV -x $GIDX -F -s 65536 -n 200 -u $QPTO",
        "lat": "ib_read_lat -d $IBDEV -x $GIDX -F -s 8 -n 200 -o 16 -u $QPTO",
    }

    def rxe_steps(server: bool, tools: list[str]) -> str:
        """The job steps of one side: as the server each tool starts, signals s-TOOL-$me and
        is waited for; as the client each waits for the peer's signal and connects. Sections
        TOOL-S / TOOL-C hold `rc=N`, the tool's stdout, then its stderr."""
        out = QPTO
        for t in tools:
            cmd = RXE_TOOLS[t]
            if server:
                cmd += " -s -a $IP" if t == "rping" else ""
                out += f"""
                section {t}-S
                timeout $((200 * SLOW)) {cmd} > /tmp/o.txt 2> /tmp/e.txt & pid=$!
                sleep $((2 * SLOW)); signal s-{t}-$me; rc=0; wait $pid || rc=$?; echo "rc=$rc"
                cat /tmp/o.txt /tmp/e.txt
                """
            else:
                cmd += " -c -a $PEER" if t == "rping" else " $PEER"
                out += f"""
                wait_signal s-{t}-$peer
                section {t}-C
                timeout $((180 * SLOW)) {cmd} > /tmp/o.txt 2> /tmp/e.txt && echo rc=0 || echo "rc=$?"
                cat /tmp/o.txt /tmp/e.txt
                """
        return out

    @estimate(330)
    def cx4_rxe_interop():
        """cx4 (vm0, on the modelled card) and soft-RoCE (vm1: rxe on a virtio-net NIC, no
        card), so that cx4's RoCEv2 packets (headers, ICRC, ACKs, READ responses) are what
        another RoCE stack accepts and vice versa — model_roce's rxe test with cx4 in place of
        mlx5_ib, in one VM pair. cx4 the server, then the client: ibv_ud_pingpong --chk (1 KiB)
        and ibv_rc_pingpong --chk (4 KiB over MTU 1024) exit 0 with all 200 iterations on both
        sides; rping -V (rdma_cm through cx4's GSI QP; 20 pings of 4 KiB the server
        RDMA-READs and RDMA-WRITEs back) exits 0 on both sides, which print every ping with
        the exact text rping's client generated. cx4 the client only: ib_write_bw (64 KiB, 200
        WRITEs) and ib_read_lat -o 16 (8 B, 200 READs answered by rxe) exit 0 on both sides
        and cx4's side reports its result row. The card took over 1000 of rxe's packets and
        found none malformed, counted the CM MADs as UD with none dropped for its Q_Key, and
        holds cx4's QP1 in RTS; every user QP, CQ and MR made on cx4 went RST→INIT→RTR→RTS and
        was destroyed, no command failed; after rmmod the card has no QP and no GID."""
        both, cx4_client = ["ud", "rc", "rping"], ["bw", "lat", "ud", "rc", "rping"]
        vm0 = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
        """ + gidx + """
            reach $PEER
            section cmds-before; cmds
        """ + rxe_steps(True, both) + "signal half\n" + rxe_steps(False, cx4_client) + """
            wait_signal rxe-done 600
            section cmds-after; cmds
            section roce; req ctl roce
            signal done
            ip link set "$IF" down
            rmmod cx4
            section after-rmmod; req ctl roce
            echo unloaded
        """
        vm1 = IB + """
            rxe_up
        """ + gidx + "reach $PEER\n" + rxe_steps(False, both) + "wait_signal half\n" \
            + rxe_steps(True, cx4_client) + """
            signal rxe-done
            wait_signal done 900
            rdma link delete rxe0
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=1000, model_args=ROCE_MODEL, virtio=(1,),
                     files=[env.ko])
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, logs(rs)
        for r in rs:
            who = "cx4" if r is rs[0] else "rxe"
            for t in cx4_client:
                for role in ("S", "C") if t in both else (("C",) if who == "cx4" else ("S",)):
                    s = section(r.job_log, f"{t}-{role}")
                    what = f"{t} with {who} as the {'server' if role == 'S' else 'client'}"
                    assert re.search(r"^rc=0$", s, re.M), f"{what} failed:\n{s[:3000]}\n{logs(rs)}"
                    if t in ("ud", "rc"):
                        # "819200 bytes in 0.50 seconds = ..." and "200 iters in ...".
                        assert re.search(r"^\d+ bytes in [\d.]+ seconds", s, re.M) and \
                            re.search(r"^200 iters in", s, re.M), f"{what}:\n{s}"
                        assert "Failed" not in s and "error" not in s.lower(), f"{what}:\n{s}"
                    if t == "rping":
                        # The client compared every echo (-V); each side printed each ping's
                        # buffer (-v): the server what it read from the client, the client
                        # what came back; all 20, in order, the client's text.
                        assert "data mismatch" not in s, f"{what}:\n{s[:3000]}"
                        tag = "server ping data: " if role == "S" else "ping data: "
                        pings = re.findall(rf"^{tag}(rdma-ping-(\d+): \S*)$", s, re.M)
                        assert [int(n) for _, n in pings] == list(range(RPING_COUNT)), \
                            f"{what}: pings {[n for _, n in pings]}:\n{s[:3000]}"
                        bad = [n for p, n in pings if p != rping_payload(int(n), RXE_SIZE)]
                        assert not bad, f"{what}: wrong data in pings {bad}:\n{s[:3000]}"
                    if t in ("bw", "lat") and who == "cx4":
                        # "#bytes #iterations ...": the run cx4 asked for, all of it.
                        row = re.search(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+([\d.]+)", s, re.M)
                        want = "65536" if t == "bw" else "8"
                        assert row and row.group(1) == want and row.group(2) == "200", \
                            f"{what}: no result row:\n{s}"
                        assert t != "bw" or float(row.group(4)) > 0, row.group(0)
                        print(f"    cx4 -> rxe {t}: {row.group(0).strip()}", file=sys.stderr)
                    if t in ("ud", "rc"):
                        for line in re.findall(r"^\d+ (?:bytes|iters) in .*$", s, re.M):
                            print(f"    {who} {t}-{role}: {line}", file=sys.stderr)
            check_clean_dmesg(r.dmesg)
        log = rs[0].job_log
        roce = section(log, "roce")
        m = re.search(r"rx (\d+) pkts \d+ bytes \((\d+) malformed", roce)
        assert m and int(m.group(1)) > 1000 and m.group(2) == "0", roce
        # rxe's CM MADs reached cx4's QP1 (the GSI QP, in RTS) as UD packets, none dropped
        # for a wrong Q_Key; cx4's went out.
        assert re.search(r"qp=0x[0-9a-f]+/QP1/RTS", roce), roce
        m = re.search(r"ud: tx (\d+) \(\d+ bad av, \d+ mc looped\) rx (\d+) \(dropped: (\d+) qkey",
                      roce)
        assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0 and m.group(3) == "0", roce
        # Eight runs on cx4 (RC, UD and rping twice, ib_write_bw, ib_read_lat): a QP, a CQ and
        # an MR at least each, all destroyed; each QP went RST→INIT→RTR→RTS.
        check_objects_paired(log, 8)
        assert re.search(r"^gids=0 qps=0", section(log, "after-rmmod"), re.M), section(log, "after-rmmod")
        errs = cx4_errors(rs[0].dmesg)
        assert not errs, "cx4 reported:\n" + "\n".join(errs)

    yield "cx4 <-> rxe: ibv_rc/ud_pingpong and rping -V both ways, ib_write_bw, ib_read_lat", \
        cx4_rxe_interop

    @estimate(90)
    def cx4_multicast_and_udaddy_with_mlx5_ib():
        """rdma_cm datagrams between cx4 (vm0) and upstream mlx5_ib (vm1) — model_roce's mckey
        and udaddy cases with cx4 on one side, both ways. mckey: cx4 joins the group (its UD
        QP attached with ATTACH_TO_MCG) and receives the 20 datagrams mlx5_ib sends to it
        (BTH destination QP 0xFFFFFF), then mlx5_ib receives what cx4 sends; udaddy (SIDR
        REQ/REP through cx4's GSI QP, 20 UD datagrams each way) with cx4 as the server, then
        as the client. Every run exits 0 with its transfers complete; each of cx4's QPs that
        joined left the group again (ATTACH_TO_MCG and DETACH_FROM_MCG pair up, no command
        failed), the card counted the UD traffic and dropped none for its Q_Key; after rmmod
        it has no QP, no group and no GID."""
        vm0 = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
        """ + gidx + "reach $PEER\nsection cmds-before; cmds\n" \
            + mckey_steps(receiver=True, tag="in-") + mckey_steps(receiver=False, tag="out-") \
            + udaddy_steps(server=True, tag="s-") + udaddy_steps(server=False, tag="c-") + """
            section cmds-after; cmds
            section roce; req ctl roce
            wait_signal done 300
            ip link set "$IF" down
            rmmod cx4
            section after-rmmod; req ctl roce
            echo unloaded
        """
        vm1 = IB + """
            eth_up
            ib_up
        """ + gidx + "reach $PEER\n" \
            + mckey_steps(receiver=False, tag="in-") + mckey_steps(receiver=True, tag="out-") \
            + udaddy_steps(server=False, tag="s-") + udaddy_steps(server=True, tag="c-") + """
            section roce; req ctl roce
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=400, model_args=ROCE_MODEL, files=[env.ko])
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, logs(rs)
        check_mckey(rs, receiver=0, tag="in-")
        check_mckey(rs, receiver=1, tag="out-")
        check_udaddy(rs, tag="s-")
        check_udaddy(rs, tag="c-")
        log = rs[0].job_log
        before, after = cmd_counts(section(log, "cmds-before")), cmd_counts(section(log, "cmds-after"))
        rise = {k: after.get(k, (0, 0))[0] - before.get(k, (0, 0))[0] for k in after}
        print("    cx4 commands: " + ", ".join(f"{k} +{v}" for k, v in sorted(rise.items()) if v),
              file=sys.stderr)
        # Two joins (mckey joins as a full member when sending too), two leaves.
        assert rise.get("ATTACH_TO_MCG") == 2 and \
            rise.get("ATTACH_TO_MCG") == rise.get("DETACH_FROM_MCG"), (before, after)
        assert all(e == 0 for _, e in after.values()), after
        for r in rs:
            m = re.search(r"ud: tx (\d+) \(\d+ bad av, \d+ mc looped\) rx (\d+) \(dropped: (\d+) qkey",
                          section(r.job_log, "roce"))
            assert m and int(m.group(1)) >= 20 and int(m.group(2)) >= 20 and m.group(3) == "0", \
                f"{r.name}: {section(r.job_log, 'roce')}"
        after_rmmod = section(log, "after-rmmod")
        assert re.search(r"^gids=0 qps=0", after_rmmod, re.M) and "mcg=" not in after_rmmod, \
            after_rmmod
        errs = cx4_errors(rs[0].dmesg) + mlx5_errors(rs[1].dmesg)
        assert not errs, "\n".join(errs)
        for r in rs:
            check_clean_dmesg(r.dmesg)

    yield "rdma_cm between cx4 and mlx5_ib: mckey multicast and udaddy, both ways", \
        cx4_multicast_and_udaddy_with_mlx5_ib

    @estimate(150)
    def cx4_rc_errors_lossy_wire_ecn_between_cx4_vms():
        """model_roce's RC error-path, lossy-wire and ECN cases between two cx4 VMs, in one
        boot. Error paths (tests/verbs_errors.py through libmlx5 on cx4, vm0 the requester):
        RNR retries exhausted and an RNR recovered (cx4's rnr_nak_retry_err counter rises),
        remote access errors (REM_ACCESS_ERR; the responder's QP in ERR with the
        IBV_EVENT_QP_ACCESS_ERR async event from cx4), a SEND longer than the receive — the
        statuses on both sides as with mlx5_ib. Lossy wire (both cards drop 1 % and reorder 1 %
        of what they receive): ibv_rc_pingpong --chk, rping -V (rdma_cm through cx4's GSI QPs)
        and ib_write_bw complete with correct data and cx4's retransmission hw_counters rise.
        ECN (vm1's card marks half the requests CE, congestion parameters at the card's
        defaults): ib_write_bw completes; vm1's notification point marked packets and sent
        CNPs, vm0's reaction point handled them, as cx4's hw_counters say and the cards'
        congestion statistics agree, and the card's DCQCN rate-limited vm0's QP."""
        common = CX4_UP + IB + CX4_IB + """
            cx4_up
            cx4_ib_up
        """ + gidx + "reach $PEER\n"
        vm0 = common + errors_steps(server=False) + lossy_steps(server=False, n=LOSSY_N) \
            + ecn_steps(receiver=False, tag="ecn-", n=ECN_N) + """
            signal done
            echo unloaded
        """
        vm1 = common + errors_steps(server=True) + lossy_steps(server=True, n=LOSSY_N) \
            + ecn_steps(receiver=True, tag="ecn-", n=ECN_N) + """
            wait_signal done 600
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=1000, model_args=ROCE_MODEL,
                     files=[env.ko, ERRORS_TOOL])
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, logs(rs)
        check_error_paths(rs)
        lossy = check_lossy(rs, n=LOSSY_N)
        hw = check_ecn(rs, sender=0, receiver=1, tag="ecn-")
        # What cx4 reports is what the cards counted (QUERY_CONG_STATISTICS): each card's
        # congestion statistics (`cong: ...;` in its `roce` line), read after its hw_counters
        # with the transfer over.
        for r in rs:
            cong = re.search(r"\bcong: [^;]*", section(r.job_log, "ecn-roce"))
            assert cong, section(r.job_log, "ecn-roce")
            card = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)\b", cong.group(0))}
            mine = {k: int(v) for k, v in re.findall(r"^hw (\w+) (\d+)$",
                                                     section(r.job_log, "ecn-hw"), re.M)}
            assert all(card[k] == v for k, v in mine.items()), f"{r.name}: {mine} vs {cong.group(0)}"
            print(f"    {r.name} {cong.group(0)}", file=sys.stderr)
        assert re.search(r"\bsum_flows=[1-9]", section(rs[0].job_log, "ecn-roce")), \
            f"DCQCN never limited vm0's QP: {section(rs[0].job_log, 'ecn-roce')}"
        print(f"    lossy wire, retransmission counters rose by {lossy}; ECN rises {hw}",
              file=sys.stderr)
        for r in rs:
            errs = [l for l in cx4_errors(r.dmesg) if "QP" not in l and "qp" not in l]
            assert not errs, f"{r.name}:\n" + "\n".join(errs)
            check_clean_dmesg(r.dmesg)

    yield "RC error paths, RC over a lossy wire, ECN -> CNPs -> DCQCN between two cx4 VMs", \
        cx4_rc_errors_lossy_wire_ecn_between_cx4_vms
