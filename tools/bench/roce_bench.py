#!/usr/bin/env python3
"""Benchmark (not a test): RoCE between two VMs: cx4 and upstream mlx5_ib, each on its own
modelled card, against soft-RoCE (rxe) over virtio-net, on the same VMs, in one run.

Boots two VMs on one segment, each with a virtio-net NIC (10.99.1.N, rxe0 on top of it) and two
modelled ConnectX-4s with `--roce`: card 0 driven by mlx5_core + mlx5_ib (10.99.0.N), card 1
by cx4 (10.99.2.N). vm0 runs, for each device in turn, perftest's ib_write_bw (64 KiB
messages, for a fixed time) and ib_write_lat and ib_send_lat (8 bytes) against vm1, then —
every NIC of both VMs at MTU 9000, so that each RoCE device's active MTU is 4096 —
ib_write_bw again at path MTU 4096 (the rows "at the same MTU"); around the
mlx5_ib runs it asks the host for card 0's model CPU time (/proc/PID/stat) and RoCE packet
counters (control socket `roce`). Prints medians side by side with the cx4/mlx5_ib,
mlx5_ib/rxe and cx4/rxe ratios and the model's host CPU per RoCE packet.

    python3 tools/bench/roce_bench.py [--rounds 3] [--seconds 10]      (make bench)
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools/testbed"))

import run as testrun  # noqa: E402
import vmrun  # noqa: E402
from model_roce import IB  # noqa: E402
from results import Results, results_dir  # noqa: E402
from vmpair import cpu_seconds, run_jobs  # noqa: E402

# Both VMs: the virtio NIC with rxe on it, the modelled card with mlx5_ib; ARP answered only
# on the NIC that owns the address (both NICs share the segment). MG/RG: the RoCE v2 GID
# index of each device's IPv4 address.
SETUP = IB + r"""
sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
VIF=$(for d in /sys/class/net/*; do
        [ "$(basename $(readlink $d/device/driver 2>/dev/null) 2>/dev/null)" = virtio_net ] && basename $d
      done | head -1)
ip link set "$VIF" up
ip addr add 10.99.1.$((me + 1))/24 dev "$VIF"
eth_up
ib_up
MDEV=$IBDEV
# Card 1 goes to cx4: mlx5_core lets go of it, cx4 probes it (netdev and RDMA device).
echo 0000:02:00.0 > /sys/bus/pci/drivers/mlx5_core/unbind
insmod /cx4/cx4.ko
for i in $(seq $((200 * SLOW))); do
    CIF=$(ls /sys/bus/pci/devices/0000:02:00.0/net/ 2>/dev/null | head -1)
    CDEV=$(ls /sys/bus/pci/devices/0000:02:00.0/infiniband/ 2>/dev/null | head -1)
    [ -n "$CIF" ] && [ -n "$CDEV" ] && break
    sleep 0.1
done
ip link set "$CIF" up
ip addr add 10.99.2.$((me + 1))/24 dev "$CIF"
modprobe rdma_rxe
rdma link add rxe0 type rxe netdev $VIF
gid_of() {
    d=/sys/class/infiniband/$1/ports/1
    for i in $(seq $((100 * SLOW))); do
        for f in $d/gids/*; do
            k=${f##*/}
            grep -qi "$2" $f && grep -q "RoCE v2" $d/gid_attrs/types/$k 2>/dev/null && { echo $k; return 0; }
        done
        sleep 0.1
    done
    echo "no RoCE v2 GID $2 on $1" >&2; return 1
}
MG=$(gid_of $MDEV ffff:0a63:000$((me + 1)))
RG=$(gid_of rxe0 ffff:0a63:010$((me + 1)))
CG=$(gid_of $CDEV ffff:0a63:020$((me + 1)))
echo "mlx5_ib $MDEV gid $MG, rxe0 gid $RG, cx4 $CDEV gid $CG"
pick() {
    case $1 in
        mlx5) D=$MDEV; G=$MG; dst=10.99.0.$((peer + 1));;
        rxe) D=rxe0; G=$RG; dst=10.99.1.$((peer + 1));;
        cx4) D=$CDEV; G=$CG; dst=10.99.2.$((peer + 1));;
    esac
}
"""

TESTS = {
    "bw": "ib_write_bw -s 65536 -D SECONDS",
    "wlat": "ib_write_lat -s 8 -n 2000",
    "slat": "ib_send_lat -s 8 -n 2000",
}
# The same bandwidth test at path MTU 4096, after every NIC of both VMs went to MTU 9000.
TESTS_4K = {"bw4k": "ib_write_bw -s 65536 -m 4096 -D SECONDS"}

# Every NIC of this VM (the virtio NIC, the mlx5e and the cx4 netdev) to MTU $1: a RoCE
# device's active MTU follows its netdev's (9000 gives 4096).
MTU = r"""
set_mtu() {
    for i in "$VIF" "$IF" "$CIF"; do ip link set "$i" mtu "$1"; done
    for d in $MDEV rxe0 $CDEV; do
        for k in $(seq $((100 * SLOW))); do
            ibv_devinfo -d $d | grep -q "active_mtu:.*$2" && break; sleep 0.1
        done
        echo "$d $(ibv_devinfo -d $d | grep active_mtu)"
    done
}
"""


def client_loop(tests: dict[str, str], cpu: bool) -> str:
    """vm0's side: each round, each device, the tests in turn (model CPU and packets around
    the mlx5_ib runs when `cpu`)."""
    mark = lambda n: f'    [ $dev = mlx5 ] && {{ echo "cpu{n} $(req cpu)"; echo "roce{n} $(req ctl roce)"; }}\n'
    return (r"""
for r in $(seq ROUNDS); do
  for dev in mlx5 rxe cx4; do
    pick $dev
""" + (mark(0) if cpu else "") + "".join(f"""
    wait_signal {t}-$r-$dev 600
    echo "{t} $dev $(timeout $((300 * SLOW)) {cmd} -d $D -x $G -F $dst | grep -E '^ *[0-9]+ +[0-9]+ ' | tail -1)"
""" for t, cmd in tests.items()) + (mark(1) if cpu else "") + r"""
  done
done
""")


def server_loop(tests: dict[str, str]) -> str:
    """vm1's side of [`client_loop`]."""
    return (r"""
for r in $(seq ROUNDS); do
  for dev in mlx5 rxe cx4; do
    pick $dev
""" + "".join(f"""
    timeout $((320 * SLOW)) {cmd} -d $D -x $G -F > /tmp/s.txt 2>&1 & pid=$!
    sleep 1; signal {t}-$r-$dev; wait $pid || {{ echo "{t} $dev server failed"; cat /tmp/s.txt; }}
""" for t, cmd in tests.items()) + r"""
  done
done
""")


REACH = r"""
reach 10.99.0.$((peer + 1)); reach 10.99.1.$((peer + 1)); reach 10.99.2.$((peer + 1))
"""
CLIENT = (SETUP + MTU + REACH + client_loop(TESTS, True) + "set_mtu 9000 4096\n" + REACH
          + client_loop(TESTS_4K, False) + "signal done\n")
SERVER = (SETUP + MTU + REACH + server_loop(TESTS) + "set_mtu 9000 4096\n" + REACH
          + server_loop(TESTS_4K) + "wait_signal done 3600\n")


def roce_packets(line: str) -> int:
    m = re.search(r"roce: tx (\d+) pkts \d+ bytes; rx (\d+) pkts", line)
    return int(m.group(1)) + int(m.group(2)) if m else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    args = ap.parse_args()
    env = testrun.setup()
    specs = [vmrun.VmSpec(name=f"vm{i}", wire=True, cards=2, mac=f"52:54:00:c4:00:{i + 1:02x}",
                          model_args=["--roce"])
             for i in range(2)]
    jobs = [job.replace("ROUNDS", str(args.rounds)).replace("SECONDS", str(args.seconds))
            for job in (CLIENT, SERVER)]
    res = run_jobs(env, specs, jobs, 600 + args.rounds * 3 * (args.seconds + 180),
                   files=[env.ko])
    if res is None:
        return 1
    # The VMs' job logs beside the results (perftest's and the servers' own words).
    for r in res:
        (results_dir() / f"roce-{r.name}.log").write_text(r.job_log)
    bw: dict[tuple[str, str], list[float]] = {}
    lat: dict[tuple[str, str], list[float]] = {}
    cpu_s, pkts = 0.0, 0
    t0 = p0 = None
    for line in res[0].job_log.splitlines():
        w = line.split()
        if len(w) >= 6 and w[0] in ("bw", "bw4k"):
            # "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]"
            bw.setdefault((w[0], w[1]), []).append(float(w[5]) * 8)  # Mbit/s
        elif len(w) >= 7 and w[0] in ("wlat", "slat"):
            # "#bytes #iterations t_min t_max t_typical t_avg ..." (µs)
            lat.setdefault((w[0], w[1]), []).append(float(w[6]))
        elif w and w[0] in ("cpu0", "cpu1"):
            t = cpu_seconds(line)
            if w[0] == "cpu0":
                t0 = t
            elif t0 is not None:
                cpu_s += t - t0
        elif w and w[0] in ("roce0", "roce1"):
            if w[0] == "roce0":
                p0 = roce_packets(line)
            elif p0 is not None:
                pkts += roce_packets(line) - p0
    med = lambda v: statistics.median(v) if v else float("nan")
    res = Results("roce", f"RoCE between two TCG VMs: rxe, mlx5_ib and cx4 ({args.rounds} rounds, "
                          "medians)")
    div = lambda a, b: a / b if b else float("nan")
    rows = []
    for name, key, goal in (("ib_write_bw 64 KiB, MTU 1024 (Mbit/s)", "bw", ">= 20"),
                            ("ib_write_bw 64 KiB, MTU 4096 (Mbit/s)", "bw4k", ">= 20"),
                            ("ib_write_lat 8 B, t_typical (us)", "wlat", "<= 0.2"),
                            ("ib_send_lat 8 B, t_typical (us)", "slat", "<= 0.2")):
        r, m, c = (med(bw.get((key, d), []) if key.startswith("bw") else lat.get((key, d), []))
                   for d in ("rxe", "mlx5", "cx4"))
        rows.append([name, r, m, c, div(c, m), div(m, r), div(c, r), goal])
    res.table(f"RoCE between two TCG VMs, {args.rounds} rounds (medians)",
              ["", "rxe", "mlx5_ib", "cx4", "cx4/mlx5_ib", "mlx5_ib/rxe", "cx4/rxe", "goal vs rxe"],
              rows)
    print("\nbandwidth ratios: higher is better; latency ratios: lower is better (cx4's goal: "
          "cx4/mlx5_ib >= 1 for bandwidth, <= 1 for latency)")
    if pkts:
        line = (f"model of vm0 over the mlx5_ib runs: {cpu_s:.2f} s CPU for {pkts} RoCE packets "
                f"(sent + received) = {cpu_s / pkts * 1e6:.1f} us per packet")
        print("\n" + line)
        res.note(line)
    res.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
