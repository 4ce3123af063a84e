#!/usr/bin/env python3
"""The end of `make demo`: two VMs on one segment, cx4's netdev in vm0 and NVIDIA's mlx5e in
vm1, each on its own modelled ConnectX-4; vm0 pings vm1 and runs iperf3 to it. Prints one line
saying what happened.

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

VM0 = CX4_UP + """
cx4_up
reach $PEER
section ping; ping -c 3 -i 0.2 $PEER
wait_signal server
section iperf; iperf3 -c $PEER -t 3 -f m
signal done
section driver; ethtool -i "$IF" | head -1; echo "netdev $IF"
rmmod cx4
"""

VM1 = """
eth_up
reach $PEER
iperf3 -s -D
sleep 1
signal server
wait_signal done 300
rmmod mlx5_core
"""


def main() -> int:
    kdir, tree, model, ko = (Path(a) for a in sys.argv[1:5])
    env = Env(root=ROOT, kdir=kdir, tree=tree, model=model)
    res = eth_vms(env, [VM0, VM1], timeout=300, files=[ko])
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
