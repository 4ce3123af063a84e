#!/usr/bin/env python3
"""The end of `make demo`: two VMs on one segment, cx4 in vm0 and NVIDIA's mlx5_core/mlx5e/
mlx5_ib in vm1, each on its own modelled ConnectX-4 (RoCE on). vm0 pings vm1 and runs iperf3 to
it over cx4's netdev; then unmodified rdma-core's rping connects through rdma_cm (cx4's GSI QP
and kernel verbs carry the CM) and moves verified pings over RC between cx4's RDMA device and
mlx5_ib's. Prints two lines saying what happened.

    python3 tools/testbed/demo_traffic.py KDIR TREE MODEL KO
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools/testbed"))

from harness import Env  # noqa: E402
from model_eth import eth_vms, iperf_rate, section  # noqa: E402
from en import CX4_UP  # noqa: E402
from ib import CX4_IB  # noqa: E402
from model_roce import IB, ROCE_MODEL  # noqa: E402

PINGS = 10

VM0 = CX4_UP + IB + CX4_IB + f"""
cx4_up
cx4_ib_up
reach $PEER
section ping; ping -c 3 -i 0.2 $PEER
wait_signal server
section iperf; iperf3 -c $PEER -t 3 -f m
section driver; ethtool -i "$IF" | head -1; echo "netdev $IF"; echo "ibdev $IBDEV"
wait_signal rping-server
section rping; timeout $((60 * SLOW)) rping -c -a $PEER -C {PINGS} -S 64 -V -v 2>&1 && echo rc=0 || echo "rc=$?"
signal done
rmmod cx4
"""

VM1 = IB + f"""
eth_up
ib_up
reach $PEER
iperf3 -s -D
sleep 1
signal server
section ibdev; echo "ibdev $IBDEV"
timeout $((90 * SLOW)) rping -s -a $IP -C {PINGS} -S 64 -V > /tmp/rps.txt 2>&1 &
sleep $((2 * SLOW))
signal rping-server
wait_signal done 300
rmmod mlx5_ib
rmmod mlx5_core
"""


def main() -> int:
    kdir, tree, model, ko = (Path(a) for a in sys.argv[1:5])
    env = Env(root=ROOT, kdir=kdir, tree=tree, model=model)
    res = eth_vms(env, [VM0, VM1], timeout=300, files=[ko], model_args=ROCE_MODEL)
    r0 = res[0]
    try:
        ping = section(r0.job_log, "ping")
        rate = iperf_rate(section(r0.job_log, "iperf"))
        drv = section(r0.job_log, "driver")
    except AssertionError:
        print("demo traffic FAILED: cx4's netdev did not pass traffic\n" + r0.job_log[-2000:],
              file=sys.stderr)
        return 1
    loss = re.search(r"(\d+)% packet loss", ping)
    ifname = re.search(r"netdev (\S+)", drv)
    if r0.status != 0 or not loss or loss.group(1) != "0" or "driver: cx4" not in drv:
        print("demo traffic FAILED:\n" + r0.job_log[-2000:], file=sys.stderr)
        return 1
    print(f"cx4's netdev {ifname.group(1) if ifname else '?'} in vm0 passed traffic to NVIDIA's "
          f"mlx5e in vm1 over the modelled cards: ping 0% loss, iperf3 {rate:.0f} Mbit/s")
    rping = section(r0.job_log, "rping")
    pings = re.findall(r"^ping data: rdma-ping-(\d+): ", rping, re.M)
    ibdev = re.search(r"ibdev (\S+)", drv)
    peer = re.search(r"ibdev (\S+)", section(res[1].job_log, "ibdev"))
    if not re.search(r"^rc=0$", rping, re.M) or [int(n) for n in pings] != list(range(PINGS)):
        print("demo rping FAILED:\n" + rping[-2000:], file=sys.stderr)
        return 1
    print(f"unmodified rdma-core rping connected {ibdev.group(1) if ibdev else '?'} (cx4) to "
          f"{peer.group(1) if peer else '?'} (mlx5_ib) through rdma_cm and RDMA-read/wrote "
          f"{PINGS} pings, each verified (-V)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
