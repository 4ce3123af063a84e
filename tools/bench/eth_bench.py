#!/usr/bin/env python3
"""Benchmark (not a test): Ethernet between two VMs: cx4 and upstream mlx5e on the same model,
both against virtio-net.

Boots two VMs on one segment, each with a virtio-net NIC (10.99.1.N) and two modelled
ConnectX-4 cards whose ports are TAPs on the same bridge: card 0 driven by mlx5_core + mlx5e
(10.99.0.N), card 1 by cx4 (10.99.2.N). vm0 runs, for each NIC in turn (the order rotating
by one each round), iperf3 TCP to vm1 and back, a ping request/response series and a small-packet UDP rate; around the mlx5e and cx4 runs
it asks the host for the CPU time of the card's model (/proc/PID/stat) and its counters (control
socket `stats`: frames, doorbells, BAR accesses). Prints medians side by side with the
cx4/mlx5e, cx4/virtio and mlx5e/virtio ratios and, per driver, the model's host CPU cost and
vfio-user BAR accesses per frame.

    python3 tools/bench/eth_bench.py [--rounds 3] [--seconds 10] [--no-moderation]  (make bench)

The cards are ConnectX-4 Lx models by default (--chip cx4lx: mlx5e uses striding RQs there);
--lro turns LRO on for mlx5e and cx4 (off by default in both, as in mlx5e on real cards),
--wire-gso lets the TAPs carry TCP superframes (then a superframe for an LRO RQ lands whole).

--no-moderation turns mlx5e's CQ moderation off on both VMs (`ethtool -C`: no DIM, period 0,
every armed completion raises its event at once, as before the model had moderation), so
two runs show what moderation buys.
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
from results import Results  # noqa: E402
from vmpair import cpu_seconds, run_jobs  # noqa: E402

# Both VMs: the virtio NIC and the mlx5e netdev up; ARP answered only on the NIC that owns the
# address (both NICs share the segment).
SETUP = r"""
want() { case " ONLY " in *" $1 "*) return 0;; esac; return 1; }
sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
VIF=$(for d in /sys/class/net/*; do
        [ "$(basename $(readlink $d/device/driver 2>/dev/null) 2>/dev/null)" = virtio_net ] && basename $d
      done | head -1)
ip link set "$VIF" up
ip addr add 10.99.1.$((me + 1))/24 dev "$VIF"
eth_up
MODERATION
echo "coalesce $(ethtool -c "$IF" | grep -E '^(Adaptive|rx-usecs:|tx-usecs:)' | tr -s ' \n' ' ')"
# Card 1 goes to cx4: mlx5_core lets go of it, cx4 probes it.
echo 0000:02:00.0 > /sys/bus/pci/drivers/mlx5_core/unbind
insmod /cx4/cx4.ko
for i in $(seq 200); do
    CIF=$(ls /sys/bus/pci/devices/0000:02:00.0/net/ 2>/dev/null | head -1)
    [ -n "$CIF" ] && break
    sleep 0.1
done
ip link set "$CIF" up
ip addr add 10.99.2.$((me + 1))/24 dev "$CIF"
CX4_LRO
# The NICs in round $1's order: the list rotated by one each round, so that no NIC always runs
# right after the same other one (a UDP flood's aftermath, say) and position biases even out.
order() {
    local k
    k=$(( ($1 - 1) % $(echo NICS | wc -w) ))
    set -- NICS
    while [ $k -gt 0 ]; do set -- "$@" "$1"; shift; k=$((k - 1)); done
    echo "$@"
}
# Counters of a NIC (ethtool -S, and its interrupts summed over CPUs) and what changed.
snap() {
    { ethtool -S $1 2>/dev/null | tr -d ' ' | tr ':' ' '
      awk '/^cpu / {print "cpu_user", $2; print "cpu_system", $4; print "cpu_idle", $5; print "cpu_irq", $7; print "cpu_softirq", $8}' /proc/stat
      grep "$2" /proc/interrupts | awk '{s=0; for (i=2;i<=NF;i++) { if ($i !~ /^[0-9]+$/) break; s+=$i }; t+=s} END {print "interrupts", t+0}'
      # Every interrupt and exception line of the VM (LOC, RES, TLB, ...), summed over CPUs.
      awk 'NR > 1 {s=0; for (i=2;i<=NF;i++) { if ($i !~ /^[0-9]+$/) break; s+=$i }; print "irq_" $1, s}' /proc/interrupts
      grep -E "^(pgfault|pgalloc_normal|pgfree|nr_tlb)" /proc/vmstat
    } > $3
}
delta() { awk 'NR==FNR {a[$1]=$2; next} {d=$2-a[$1]; if (d) printf "%s=%d ", $1, d}' $1 $2; }
# A kernel profile of this VM over one row (ksample.py), for the rows in --profile.
prof_start() { case " PROFILE " in *" $1 "*) python3 /cx4/ksample.py $((SECONDS - 2)) 25 > /tmp/prof.out 2>&1 & PROF=$!;; esac; }
prof_end() { case " PROFILE " in *" $1 "*) wait $PROF; sed "s/^/prof $1 $2 /" /tmp/prof.out;; esac; }
"""

CLIENT = SETUP + r"""
reach $PEER; reach 10.99.1.$((peer + 1)); reach 10.99.2.$((peer + 1))
wait_signal server
for r in $(seq ROUNDS); do
  for nic in $(order $r); do
    case $nic in mlx5e) dst=$PEER;; cx4) dst=10.99.2.$((peer + 1));; *) dst=10.99.1.$((peer + 1));; esac
    # The model of the card under test (card 0 for mlx5e, card 1 for cx4): CPU and counters.
    case $nic in mlx5e) card=0;; cx4) card=1;; *) card=;; esac
    [ -n "$card" ] && { echo "cpu0 $nic $(req cpu$card)"; echo "stats0 $nic $(req ctl$card stats)"; }
    want tx && { prof_start tx; echo "tx $nic $(iperf3 -c $dst -t SECONDS -f m | grep receiver)"; prof_end tx $nic; }
    want rx && { prof_start rx; echo "rx $nic $(iperf3 -c $dst -t SECONDS -f m -R | grep receiver)"; prof_end rx $nic; }
    want rr && echo "rr $nic $(ping -q -c 200 -i 0.02 $dst | grep rtt)"
    case $nic in mlx5e) nif=$IF; pci=0000:01:00.0;; cx4) nif=$CIF; pci=0000:02:00.0;; *) nif=$VIF; pci=none;; esac
    COUNTERS && snap $nif $pci /tmp/c0
    # The receiver snapshots its counters and starts its profile before the run.
    want udp && { signal udpgo-$nic-$r; wait_signal udpready-$nic-$r 600; }
    want udp && { prof_start udp; iperf3 -c $dst -u -b 0 -l 64 -t SECONDS -f m > /tmp/udp.out; prof_end udp $nic; }
    COUNTERS && snap $nif $pci /tmp/c1 && echo "ctr $nic $(delta /tmp/c0 /tmp/c1)"
    want udp && echo "udp $nic $(grep receiver /tmp/udp.out)"
    want udp && echo "udps $nic $(grep sender /tmp/udp.out)"
    want udp && signal udp-$nic-$r
    [ -n "$card" ] && { echo "cpu1 $nic $(req cpu$card)"; echo "stats1 $nic $(req ctl$card stats)"; }
  done
done
signal done
"""

SERVER = SETUP + r"""
reach $PEER; reach 10.99.1.$((peer + 1)); reach 10.99.2.$((peer + 1))
iperf3 -s -D
nstat -n
sleep 1
signal server
# The receiver's UDP counters over each UDP run (nstat prints what changed since its last call).
for r in $(seq ROUNDS); do
  for nic in $(order $r); do
    if want udp; then
      case $nic in mlx5e) nif=$IF; pci=0000:01:00.0;; cx4) nif=$CIF; pci=0000:02:00.0;; *) nif=$VIF; pci=none;; esac
      wait_signal udpgo-$nic-$r 3600
      COUNTERS && snap $nif $pci /tmp/c0
      prof_start udprx
      signal udpready-$nic-$r
      wait_signal udp-$nic-$r 3600
      prof_end udprx $nic
      COUNTERS && snap $nif $pci /tmp/c1 && echo "ctr $nic $(delta /tmp/c0 /tmp/c1)"
      echo "udpr $nic $(nstat -z UdpInDatagrams UdpRcvbufErrors | awk '/^Udp/ {printf "%s=%s ", $1, $2}')"
    fi
  done
done
wait_signal done 3600
"""


def mbits(line: str) -> float:
    m = re.search(r"([\d.]+) ([KMG])bits/sec", line)
    return float(m.group(1)) * {"K": 1e-3, "M": 1.0, "G": 1e3}[m.group(2)] if m else float("nan")


def model_counts(stats: str) -> dict[str, float]:
    """The data path's counters in a `stats` line: SQ doorbells, frames sent and delivered,
    seconds in the send and receive paths, BAR reads and writes (vfio-user messages)."""
    out: dict[str, float] = {}
    m = re.search(r"tx: (\d+) doorbells \d+ wqes (\d+) frames.*rx: \d+ from wire, (\d+) delivered"
                  r".*time tx (\d+) us rx (\d+) us", stats)
    if m:
        g = [int(x) for x in m.groups()]
        out.update(db=g[0], tx=g[1], rx=g[2], tx_s=g[3] / 1e6, rx_s=g[4] / 1e6)
    m = re.search(r"bar_reads=(\d+) bar_writes=(\d+)", stats)
    if m:
        out.update(reads=int(m.group(1)), writes=int(m.group(2)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--no-moderation", action="store_true",
                    help="mlx5e without CQ moderation (ethtool -C adaptive off, 0 us)")
    ap.add_argument("--only", default="tx,rx,rr,udp",
                    help="rows to measure, from tx,rx,rr,udp (default all)")
    ap.add_argument("--nics", default="virtio,mlx5e,cx4",
                    help="NICs to measure, from virtio,mlx5e,cx4 (default all)")
    ap.add_argument("--counters", action="store_true",
                    help="print the sender's and the receiver's NIC counters (ethtool -S, interrupts) "
                         "over each UDP run")
    ap.add_argument("--profile", default="",
                    help="rows (tx,rx,udp) over which vm0 samples its kernel (ksample.py) and "
                         "prints its busiest functions; udprx: vm1, the UDP receiver")
    ap.add_argument("--wire-gso", action="store_true",
                    help="the models' TAPs carry GSO superframes (cx4-model --wire-gso)")
    ap.add_argument("--chip", default="cx4lx", choices=("cx4", "cx4lx"),
                    help="the modelled card (cx4lx: striding RQs, which mlx5e needs for LRO)")
    ap.add_argument("--lro", action="store_true",
                    help="LRO on for mlx5e and cx4 (ethtool -K lro on; mlx5e needs --chip cx4lx)")
    args = ap.parse_args()
    moderation = ("ethtool -C \"$IF\" adaptive-rx off adaptive-tx off rx-usecs 0 rx-frames 0 "
                  "tx-usecs 0 tx-frames 0" if args.no_moderation else "")
    if args.lro:
        moderation += "\nethtool -K \"$IF\" lro on\necho \"lro $(ethtool -k \"$IF\" | grep large-receive)\""

    env = testrun.setup()
    specs = [vmrun.VmSpec(name=f"vm{i}", wire=True, cards=2, mac=f"52:54:00:c4:00:{i + 1:02x}")
             for i in range(2)]
    for s in specs:
        s.model_args += ["--chip", args.chip] + (["--wire-gso"] if args.wire_gso else [])
    only = " ".join(args.only.split(","))
    nics = " ".join(args.nics.split(","))
    jobs = [job.replace("ROUNDS", str(args.rounds)).replace("SECONDS", str(args.seconds))
            .replace("MODERATION", moderation)
            .replace("CX4_LRO", "ethtool -K \"$CIF\" lro on\necho \"cx4 lro $(ethtool -k \"$CIF\" | grep large-receive)\""
                     if args.lro else "").replace("ONLY", only).replace("NICS", nics)
            .replace("COUNTERS", "true" if args.counters else "false")
            .replace("PROFILE", " ".join(args.profile.split(",")))
            for job in (CLIENT, SERVER)]
    files = [env.ko] + ([Path(__file__).with_name("ksample.py")] if args.profile else [])
    res = run_jobs(env, specs, jobs, 600 + args.rounds * 9 * (args.seconds + 30), files=files)
    if res is None:
        return 1
    tput: dict[tuple[str, str], list[float]] = {}
    rtt: dict[str, list[float]] = {}
    loss: dict[str, list[float]] = {}
    # Per NIC (mlx5e, cx4): the model's CPU seconds and data-path counters over its runs.
    cost: dict[str, dict[str, float]] = {}
    t0: dict[str, float] = {}
    f0: dict[str, dict[str, float]] = {}
    rcvbuf: dict[str, list[float]] = {}
    for line in res[1].job_log.splitlines():
        w = line.split(maxsplit=2)
        m = re.search(r"UdpInDatagrams=(\d+) UdpRcvbufErrors=(\d+)", line)
        if len(w) == 3 and w[0] == "udpr" and m:
            got, full = int(m.group(1)), int(m.group(2))
            if got + full:
                rcvbuf.setdefault(w[1], []).append(100.0 * full / (got + full))
    for line in res[0].job_log.splitlines():
        w = line.split(maxsplit=2)
        if len(w) == 3 and w[0] in ("tx", "rx", "udp", "udps"):
            tput.setdefault((w[0], w[1]), []).append(mbits(w[2]))
            m = re.search(r"(\d+)/(\d+) \(", w[2])
            if w[0] == "udp" and m and int(m.group(2)):
                loss.setdefault(w[1], []).append(100.0 * int(m.group(1)) / int(m.group(2)))
        elif len(w) == 3 and w[0] == "rr":
            m = re.search(r"= [\d.]+/([\d.]+)/", w[2])
            if m:
                rtt.setdefault(w[1], []).append(float(m.group(1)))
        elif len(w) == 3 and w[0] in ("cpu0", "cpu1"):
            t = cpu_seconds(line)
            if w[0] == "cpu0":
                t0[w[1]] = t
            elif w[1] in t0:
                acc = cost.setdefault(w[1], {})
                acc["cpu"] = acc.get("cpu", 0.0) + t - t0.pop(w[1])
        elif len(w) == 3 and w[0] in ("stats0", "stats1"):
            c = model_counts(w[2])
            if w[0] == "stats0":
                f0[w[1]] = c
            elif w[1] in f0:
                acc = cost.setdefault(w[1], {})
                for k, v in c.items():
                    acc[k] = acc.get(k, 0.0) + v - f0[w[1]].get(k, 0.0)
                del f0[w[1]]
    med = lambda v: statistics.median(v) if v else float("nan")
    ratio = lambda a, b: b / a if a else float("nan")
    coalesce = next((l.split(maxsplit=1)[1] for l in res[0].job_log.splitlines()
                     if l.startswith("coalesce ")), "?")
    title = (f"Ethernet between two TCG VMs, {args.rounds} rounds of {args.seconds} s (medians); "
             f"mlx5e coalescing: {coalesce}")
    out = Results("eth" + ("-lro" if args.lro else "") + ("-gso" if args.wire_gso else ""),
                  title.split(";")[0] + (", LRO on" if args.lro else "")
                  + (", GSO superframes on the wire" if args.wire_gso else ""))
    rows = ((("tx",), "iperf3 TCP vm0->vm1 (Mbit/s)"), (("rx",), "iperf3 TCP vm1->vm0 (Mbit/s)"),
            (("udp",), "UDP 64-byte rate (Mbit/s)"), (("udps",), "  UDP 64-byte sent (Mbit/s)"))
    cells = []
    for key, name in rows:
        v, m, c = (med(tput.get((key[0], n), [])) for n in ("virtio", "mlx5e", "cx4"))
        cells.append([name, v, m, c, ratio(m, c), ratio(v, c), ratio(v, m)])
    v, m, c = (med(rtt.get(n, [])) for n in ("virtio", "mlx5e", "cx4"))
    # Latency: lower is better, so the ratios are inverted (higher is better everywhere).
    cells.append(["ping request/response (ms)", v, m, c, ratio(c, m), ratio(c, v), ratio(m, v)])
    for name, d in (("  UDP datagrams lost (%)", loss), ("  dropped at the receiving socket (%)", rcvbuf)):
        cells.append([name] + [med(d.get(n, [])) for n in ("virtio", "mlx5e", "cx4")] + [""] * 3)
    out.table(title, ["", "virtio-net", "mlx5e", "cx4", "cx4/mlx5e", "cx4/virtio", "mlx5e/virtio"],
              cells)
    # The spread behind each median: every round's figure, in round order.
    print("\nper round (round order; the NICs' order rotates each round):")
    for key, name in rows:
        print(f"  {name.strip():32} " + "   ".join(
            f"{n} " + " ".join(f"{x:.1f}" for x in tput.get((key[0], n), []))
            for n in ("virtio", "mlx5e", "cx4") if tput.get((key[0], n))))
    print(f"  {'ping request/response (ms)':32} " + "   ".join(
        f"{n} " + " ".join(f"{x:.3f}" for x in rtt.get(n, []))
        for n in ("virtio", "mlx5e", "cx4") if rtt.get(n)))
    for vm, who in ((0, "vm0 kernel profile"), (1, "vm1 (receiver) kernel profile")):
        for line in res[vm].job_log.splitlines() if args.profile else ():
            if line.startswith("prof "):
                print(f"{who}, {line[5:]}")
    for vm, who in ((0, "sender"), (1, "receiver")):
        for line in res[vm].job_log.splitlines() if args.counters else ():
            if line.startswith("ctr "):
                print(f"{who}'s counters over a UDP run: {line[4:]}")
    line = f"the models' TAPs carry {'GSO superframes' if args.wire_gso else 'single frames only'}"
    print("\n" + line)
    out.note(line)
    print("\nratios: higher is better (latency ratios are inverted); goal cx4/mlx5e >= 1 on every row")
    for nic in ("mlx5e", "cx4"):
        c = cost.get(nic, {})
        nframes = c.get("tx", 0) + c.get("rx", 0)
        if not nframes:
            continue
        cpu_s, path_s = c.get("cpu", 0.0), c.get("tx_s", 0.0) + c.get("rx_s", 0.0)
        per = lambda k, n: c.get(k, 0.0) / n * 1e6 if n else float("nan")
        line = (f"model of vm0's {nic} card over its runs: {cpu_s:.2f} s CPU for {nframes:.0f} frames "
              f"(sent + delivered) = {cpu_s / nframes * 1e6:.1f} us per frame; {c.get('db', 0):.0f} SQ "
              f"doorbells ({c.get('db', 0) / nframes:.2f} per frame), BAR writes "
              f"{c.get('writes', 0) / nframes:.2f} and reads {c.get('reads', 0) / nframes:.3f} per "
              f"frame; data path (engine, guest memory, TAP) {path_s / nframes * 1e6:.1f} us per "
              f"frame (send {per('tx_s', c.get('tx', 0)):.1f} us per frame sent, receive "
              f"{per('rx_s', c.get('rx', 0)):.1f} us per frame delivered), the rest "
              f"({(cpu_s - path_s) / nframes * 1e6:.1f} us) is vfio-user messages, locking and threads")
        print("\n" + line)
        out.note(line)
    m = re.findall(r"\bcq_moderated=(\d+)", res[0].job_log)
    if m:
        print(f"completion events held back by CQ moderation (vm0's cards, last reading): {m[-1]}")
    out.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
