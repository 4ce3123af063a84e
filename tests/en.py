"""cx4's Ethernet netdev on the model, judged against NVIDIA's upstream mlx5e: one VM runs cx4,
the other mlx5_core + mlx5e, each on its own modelled card on the run's segment (the harness
of model_eth.py), and they move real traffic.
"""

from __future__ import annotations

import re

from harness import Env, check_clean_dmesg, describe, estimate
from model_eth import (assert_clean, eth_vms, ethtool_stats, iperf_rate, rise, section)

# Guest helper for the cx4 side: load cx4.ko and bring its netdev up like eth_up does for
# mlx5e.
CX4_UP = r"""
cx4_up() {
    insmod /cx4/cx4.ko
    for i in $(seq 200); do
        IF=$(ls /sys/bus/pci/devices/0000:01:00.0/net/ 2>/dev/null | head -1)
        [ -n "$IF" ] && break
        sleep 0.1
    done
    [ -n "$IF" ] || { echo "no netdev from cx4"; dmesg | tail -30; return 1; }
    ip link set "$IF" up
    ip addr add $IP/24 dev "$IF"
    ip -6 addr add $IP6/64 dev "$IF" nodad
    for i in $(seq 300); do
        [ "$(cat /sys/class/net/$IF/carrier 2>/dev/null)" = 1 ] && break
        sleep 0.1
    done
}
"""


def cx4_errors(dmesg: str) -> list[str]:
    """Lines where cx4 reported a problem (errors, warnings, failed commands)."""
    return [l for l in dmesg.splitlines()
            if "cx4" in l and re.search(r"fail|error|warn|timeout|bad|BUG|WARNING", l, re.I)]


def tests(env: Env):
    @estimate(240)
    def cx4_and_mlx5e_ping_iperf():
        """cx4 (vm0) and mlx5e (vm1): link up, ethtool shows cx4, IPv4/IPv6 ping both ways,
        iperf3 TCP both directions with TSO and checksum offload counted on both sides,
        clean unload with every object returned to the model."""
        vm0 = CX4_UP + """
            cx4_up
            section link; ip -d link show "$IF"; ethtool "$IF"; ethtool -i "$IF"; ethtool -k "$IF"
            section before; stats
            reach $PEER
            section ping4; ping -c 5 -i 0.2 $PEER
            section ping6; ping -c 5 -i 0.2 $PEER6
            wait_signal server
            section iperf-tx; iperf3 -c $PEER -t 5 -f m
            section iperf-rx; iperf3 -c $PEER -t 5 -f m -R
            signal done
            section after; stats
            ip link set "$IF" down
            rmmod cx4
            echo unloaded
        """
        vm1 = """
            eth_up
            section before; stats
            reach $PEER
            section ping4; ping -c 5 -i 0.2 $PEER
            section ping6; ping -c 5 -i 0.2 $PEER6
            iperf3 -s -D
            sleep 1
            signal server
            wait_signal done 600
            section after; stats
            rmmod mlx5_core
            echo unloaded
        """
        res = eth_vms(env, [vm0, vm1], timeout=400, files=[env.ko])
        assert_clean(res)
        r0, r1 = res
        for r in res:
            assert "unloaded" in r.job_log, describe(r)
            for s in ("ping4", "ping6"):
                assert " 0% packet loss" in section(r.job_log, s), f"{r.name}: {section(r.job_log, s)}"
        link = section(r0.job_log, "link")
        assert "driver: cx4" in link and "Link detected: yes" in link, link
        assert re.search(r"tcp-segmentation-offload: on", link), link
        tx, rx = iperf_rate(section(r0.job_log, "iperf-tx")), iperf_rate(section(r0.job_log, "iperf-rx"))
        b0, a0 = ethtool_stats(section(r0.job_log, "before")), ethtool_stats(section(r0.job_log, "after"))
        b1, a1 = ethtool_stats(section(r1.job_log, "before")), ethtool_stats(section(r1.job_log, "after"))
        assert rise(b0, a0, "tx_tso_packets") > 0, f"cx4: no TSO: {a0}"
        assert rise(b0, a0, "tx_csum_partial") > 0, f"cx4: no TX checksum offload: {a0}"
        assert rise(b0, a0, "rx_csum_unnecessary") > 0, f"cx4: no RX checksum verdicts: {a0}"
        assert rise(b1, a1, "tx_tso_packets") > 0, f"mlx5e: no TSO: {a1}"
        assert rise(b1, a1, "rx_csum_complete") + rise(b1, a1, "rx_csum_unnecessary") > 0, a1
        errs = cx4_errors(r0.dmesg)
        assert not errs, "cx4 reported:\n" + "\n".join(errs)
        print(f"    iperf3 cx4->mlx5e {tx:.0f} Mbit/s, mlx5e->cx4 {rx:.0f} Mbit/s")

    yield "cx4 <-> mlx5e: link, ping v4/v6, iperf3 both ways with TSO/csum, clean unload", \
        cx4_and_mlx5e_ping_iperf
