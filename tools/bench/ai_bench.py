#!/usr/bin/env python3
"""Benchmark (not a test): the AI-cluster case — an MPI all-reduce (Open MPI 5 + UCX, the
guest's mpi4py running tests/mpi_allreduce.py --bench) across 2 and 4 VMs over four stacks on
the same VMs in one run, and perftest's guest CPU beside iperf3's for the same bytes.

Every VM has a virtio-net NIC (10.99.1.N; rxe0 on it) and two modelled ConnectX-4s with
`--roce`: card 0 under mlx5_core + mlx5_ib (10.99.0.N), card 1 under cx4 (10.99.2.N) — the
set-up of roce_bench.py. One rank per VM; PRRTE starts its daemons through tests/mpi_rsh.py
(the guests have no ssh), as tests/ucx_mpi.py does. The stacks, UCX restricted to each:

- tcp:  UCX_TLS=self,tcp on the virtio-net NIC (the kernel's TCP stack);
- rxe:  UCX_TLS=self,rc_verbs on rxe0 (soft-RoCE over the same virtio-net NIC), with tcp on
        that NIC for UCX's wireup only: ud_verbs over rxe failed UCX's UD wireup ("ud_ep.c:
        Fatal: UD endpoint ...: unhandled timeout error");
- mlx5: UCX_TLS=self,rc_mlx5,ud_mlx5 on mlx5_ib (NVIDIA's driver, the modelled card);
- cx4:  UCX_TLS=self,rc_mlx5,ud_mlx5 on cx4's RDMA device (the modelled card).

Open MPI's UCX PML is forced, its own transport and device filters off (`pml_ucx_tls` and
`pml_ucx_devices` `any`: by default it takes only mlx* devices and verbs/mlx5 transports), so
UCX_TLS and UCX_NET_DEVICES alone choose; UCX's UD timer at 1 s as in tests/ucx_mpi.py. Every
inter-node protocol UCX reports (UCX_PROTO_INFO) must run on the stack's own transport and
device, else the bench says so.

Per size (1 KiB to 64 MiB, x4 steps by default): the time per all-reduce (the slowest rank's
loop over as many all-reduces as fit in --seconds), the guests' busy CPU over that loop (every
VM's /proc/stat: user, and system + irq + softirq) per GB reduced (GB = 10^9 bytes of vector,
counted once per all-reduce), and between ranks 0 and 1 the MPI ping-pong latency and
windowed bandwidth (osu_latency / osu_bw style). Each round launches every stack once, the
stacks' order rotating; medians over the rounds.

Then, on the two VMs: ib_write_bw (64 KiB writes, --bytes in total) over rxe, mlx5_ib and cx4,
and iperf3 TCP (-n: the same bytes) over virtio-net, mlx5e's and cx4's netdevs — each VM's
busy CPU per GB moved, sender and receiver apart: kernel bypass (no system time) and zero
copy (an idle receiver), measured.

Writes target/bench/ai.json (report.py: tables and the plots).

    python3 tools/bench/ai_bench.py [--vms 2,4] [--rounds 2] [--seconds 1]
                                    [--sizes 1K,4K,...] [--bytes 256M] [--quick]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools/testbed"))

import run as testrun  # noqa: E402
import vmrun  # noqa: E402
from model_eth import section  # noqa: E402
from results import Results, results_dir  # noqa: E402
from roce_bench import SETUP  # noqa: E402
from vmpair import GUEST_CPU, busy, run_jobs  # noqa: E402

TESTS = ROOT / "tests"
# The stacks, in the tables' order: key -> (label, UCX's devices and transports).
STACKS = {
    "tcp": ("TCP on virtio-net", "$VIF", "self,tcp"),
    "rxe": ("rxe (soft-RoCE)", "rxe0:1,$VIF", "self,rc_verbs,tcp"),
    "mlx5": ("mlx5_ib on the model", "$MDEV:1", "self,rc_mlx5,ud_mlx5"),
    "cx4": ("cx4 RoCE", "$CDEV:1", "self,rc_mlx5,ud_mlx5"),
}
LABEL = {k: v[0] for k, v in STACKS.items()}
# The transport/device every inter-node protocol of a stack must run on (UCX_PROTO_INFO).
WANT_TL = {"tcp": r"tcp/\S+", "rxe": r"rc_verbs/rxe0:1", "mlx5": r"rc_mlx5/mlx5_\d+:1",
           "cx4": r"rc_mlx5/cx4_\d+:1"}
SIZES = [1 << s for s in range(10, 27, 2)]          # 1 KiB .. 64 MiB
QUICK_SIZES = [1 << 10, 64 << 10, 1 << 20]
# perftest devices (roce_bench's `pick`) and iperf3 NICs, with their labels.
PERFTEST = [("rxe", "rxe"), ("mlx5", "mlx5_ib"), ("cx4", "cx4")]
IPERF = [("virtio", "virtio-net", "10.99.1"), ("mlx5e", "mlx5e", "10.99.0"), ("cx4", "cx4", "10.99.2")]

# Every VM: host names (the virtio-net addresses; the root is read-only), the ssh stand-in,
# every peer reachable on every network.
COMMON = SETUP + GUEST_CPU + r"""
cp /etc/hosts /tmp/hosts
for vm in $(seq 0 $((NVMS - 1))); do echo "10.99.1.$((vm + 1)) vm$vm" >> /tmp/hosts; done
mount --bind /tmp/hosts /etc/hosts
python3 /cx4/mpi_rsh.py --serve > /tmp/rsh.log 2>&1 &
# (`reach` and `wait_signal` count in $i: the loops here use their own names.)
for vm in $(seq 0 $((NVMS - 1))); do
    [ $vm = $me ] || for net in 0 1 2; do reach 10.99.$net.$((vm + 1)); done
done
signal ready-$me
"""

LAUNCH = r"""
for vm in $(seq 1 $((NVMS - 1))); do wait_signal ready-$vm 900; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PRTE_MCA_plm_ssh_agent="python3 /cx4/mpi_rsh.py" PRTE_MCA_plm_ssh_no_tree_spawn=1
"""

MPIRUN = r"""
section ar-{key}-{rnd}
timeout $((LIMIT * SLOW)) mpirun --allow-run-as-root -np NVMS --host {hosts} \
    --mca pml ucx --mca btl ^uct --mca pml_ucx_tls any --mca pml_ucx_devices any \
    -x UCX_NET_DEVICES={devs} -x UCX_TLS={tls} -x UCX_UD_TIMER_TICK=1s -x UCX_PROTO_INFO=y \
    python3 /cx4/mpi_allreduce.py --bench {sizes} {seconds} 1 2>&1 \
    && echo "mpirun rc=0" || echo "mpirun rc=$?"
"""

# vm0 (sender) and vm1 (receiver) after the all-reduce: ib_write_bw, then iperf3.
PT_CLIENT = r"""
for dev in rxe mlx5 cx4; do
    pick $dev
    wait_signal pt-$dev 600
    c0=$(cpu); t0=$(now)
    out=$(timeout $((600 * SLOW)) ib_write_bw -s 65536 -n ITERS -d $D -x $G -F $dst 2>&1 \
          | grep -E '^ *65536 +[0-9]+ ' | tail -1) || true
    echo "pt $dev | $c0 | $(cpu) | $t0 | $(now) | $out"
done
for nic in NICS; do
    set -- $(echo $nic | tr : ' ')
    wait_signal ip-$1 600
    c0=$(cpu); t0=$(now)
    out=$(timeout $((600 * SLOW)) iperf3 -c $2.$((peer + 1)) -n BYTES -f m 2>&1 | grep receiver) || true
    echo "ip $1 | $c0 | $(cpu) | $t0 | $(now) | $out"
done
"""

PT_SERVER = r"""
for dev in rxe mlx5 cx4; do
    pick $dev
    c0=$(cpu)
    timeout $((620 * SLOW)) ib_write_bw -s 65536 -n ITERS -d $D -x $G -F > /tmp/s.txt 2>&1 & pid=$!
    listening 18515; signal pt-$dev
    wait $pid || { echo "pt $dev server failed"; cat /tmp/s.txt; }
    echo "pts $dev | $c0 | $(cpu)"
done
for nic in NICS; do
    set -- $(echo $nic | tr : ' ')
    c0=$(cpu)
    timeout $((620 * SLOW)) iperf3 -s -1 > /tmp/s.txt 2>&1 & pid=$!
    listening 5201; signal ip-$1
    wait $pid || { echo "ip $1 server failed"; cat /tmp/s.txt; }
    echo "ips $1 | $c0 | $(cpu)"
done
"""


def parse_size(s: str) -> int:
    m = re.fullmatch(r"(\d+)([KMG]?)", s.strip().upper())
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {s!r}")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def size_name(n: int) -> str:
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}iB"
    return f"{n} B"


def jobs(nvms: int, stacks: list[str], sizes: list[int], seconds: float, rounds: int,
         nbytes: int, pt: bool) -> tuple[list[str], float]:
    """The VMs' job scripts (vm0 launches `stacks`) and the run's timeout."""
    hosts = ",".join(f"vm{i}:1" for i in range(nvms))
    # Each size: a warm-up and about `seconds` of each of three measurements, per stack.
    limit = int(300 + len(sizes) * (6 * seconds + 120))
    launch = COMMON + LAUNCH
    for rnd in range(rounds):
        # The stacks' order rotates by one each round.
        for key in stacks[rnd % len(stacks):] + stacks[:rnd % len(stacks)]:
            _, devs, tls = STACKS[key]
            launch += MPIRUN.format(key=key, rnd=rnd, hosts=hosts, devs=devs, tls=tls, seconds=seconds,
                                    sizes=",".join(map(str, sizes))).replace("LIMIT", str(limit))
    launch += "section ar-end; signal ar-done\n"
    other = COMMON + "wait_signal ar-done $((LIMIT * SLOW))\n".replace(
        "LIMIT", str(limit * len(stacks) * rounds))
    nics = " ".join(f"{k}:{net}" for k, _, net in IPERF)
    if pt:
        launch += "section pt\n" + PT_CLIENT
        other += "section pt\n" + PT_SERVER
    scripts = [launch] + [other] * (nvms - 1)
    scripts = [s.replace("NVMS", str(nvms)).replace("ITERS", str(nbytes // 65536))
               .replace("BYTES", str(nbytes)).replace("NICS", nics) + "echo finished\n"
               for s in scripts]
    return scripts, 600 + limit * len(stacks) * rounds + (1800 if pt else 0)


def rows_of(text: str) -> list[dict]:
    return [json.loads(l) for l in text.splitlines() if l.startswith('{"kind"')]


def med(v: list[float]) -> float | None:
    return statistics.median(v) if v else None


def div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def allreduce_results(res: Results, log: str, nvms: int, stacks: list[str], sizes: list[int],
                      rounds: int) -> list[str]:
    """The all-reduce tables of one VM count from vm0's log; returns the problems seen."""
    problems = []
    t: dict[tuple[str, int], list[float]] = {}
    cpu: dict[tuple[str, int], list[tuple[float, float]]] = {}
    lat: dict[tuple[str, int], list[float]] = {}
    bw: dict[tuple[str, int], list[float]] = {}
    for key in stacks:
        for rnd in range(rounds):
            try:
                out = section(log, f"ar-{key}-{rnd}")
            except AssertionError:
                problems.append(f"{nvms} VMs, {key}, round {rnd}: never launched")
                continue
            if "mpirun rc=0" not in out:
                errs = [l for l in out.splitlines()
                        if re.search(r"ERROR|Assertion|[Ee]rror|failed|abort", l)][:20]
                problems.append(f"{nvms} VMs, {key}, round {rnd}: mpirun failed:\n"
                                + "\n".join(errs) + f"\n...\n{out[-1500:]}")
            # UCX_PROTO_INFO's rows: `| SIZE-RANGE | PROTOCOL | TRANSPORT/DEVICE |`.
            tls = {tl for tl in re.findall(r"\|\s+[\d.KMGinf]+\.\.[\d.KMGinf]+ \| .*?\s+\| (\S+)\s+\|",
                                            out) if tl != "self/memory"}
            stray = {tl for tl in tls if not re.fullmatch(WANT_TL[key], tl)}
            if stray or not tls:
                problems.append(f"{nvms} VMs, {key}, round {rnd}: inter-node protocols on "
                                f"{sorted(tls)}, not all {WANT_TL[key]}")
            for j in rows_of(out):
                k = (key, j["bytes"])
                if j["kind"] == "allreduce":
                    if not j["ok"]:
                        problems.append(f"{nvms} VMs, {key}, {j['bytes']} B: wrong all-reduce sum")
                    t.setdefault(k, []).append(j["seconds"])
                    gb = j["bytes"] * j["cpu_allreduces"] / 1e9
                    cpu.setdefault(k, []).append((j["cpu_user"] / gb, j["cpu_sys"] / gb))
                elif j["kind"] == "latency":
                    lat.setdefault(k, []).append(j["seconds"])
                elif j["kind"] == "bandwidth":
                    bw.setdefault(k, []).append(j["mbps"])
    keys = list(STACKS)
    ms = {k: med(v) * 1e3 for k, v in t.items()}
    res.table(f"MPI all-reduce, int64 SUM, {nvms} VMs (one rank each): ms per all-reduce "
              f"(median of {rounds})",
              ["size"] + [LABEL[k] for k in keys] + ["tcp / cx4 (goal >= 2 from 2 MiB)",
                                                     "mlx5_ib / cx4"],
              [[size_name(n)] + [ms.get((k, n)) for k in keys]
               + [div(ms.get(("tcp", n)), ms.get(("cx4", n))),
                  div(ms.get(("mlx5", n)), ms.get(("cx4", n)))] for n in sizes])
    tot = {k: med([u + s for u, s in v]) for k, v in cpu.items()}
    kern = {k: med([s / (u + s) for u, s in v if u + s]) for k, v in cpu.items()}
    res.table(f"MPI all-reduce, {nvms} VMs: guest CPU seconds per GB reduced (all VMs' busy "
              f"time; kernel = system + irq + softirq)",
              ["size"] + [LABEL[k] for k in keys] + ["cx4 / tcp (goal <= 0.25 from 2 MiB)"]
              + [f"kernel share, {k}" for k in keys],
              [[size_name(n)] + [tot.get((k, n)) for k in keys]
               + [div(tot.get(("cx4", n)), tot.get(("tcp", n)))]
               + [kern.get((k, n)) for k in keys] for n in sizes])
    for k in keys:
        for plot, v in (("allreduce", ms), ("allreduce_cpu", tot)):
            res.series(plot, f"{LABEL[k]}, {nvms} VMs", [(n, v.get((k, n))) for n in sizes],
                       group=k, dashed=nvms > 2)
    if nvms == 2:
        us = {k: med(v) * 1e6 for k, v in lat.items()}
        mb = {k: med(v) for k, v in bw.items()}
        res.table("MPI point to point, rank 0 <-> 1, 2 VMs: ping-pong latency (us, half the round "
                  "trip) and windowed bandwidth (MB/s, 16 sends in flight, at most 16 MiB)",
                  ["size"] + [f"latency, {k}" for k in keys] + [f"bandwidth, {k}" for k in keys],
                  [[size_name(n)] + [us.get((k, n)) for k in keys] + [mb.get((k, n)) for k in keys]
                   for n in sizes])
        for k in keys:
            res.series("latency", LABEL[k], [(n, us.get((k, n))) for n in sizes])
            res.series("bandwidth", LABEL[k], [(n, mb.get((k, n))) for n in sizes])
    return problems


def perftest_results(res: Results, client: str, server: str, nbytes: int) -> list[str]:
    """perftest beside iperf3 for the same bytes: each side's CPU per GB."""
    problems, rows = [], []
    srv = {}
    for line in server.splitlines():
        f = line.split(" | ")
        if len(f) == 3 and f[0].split()[0] in ("pts", "ips"):
            srv[tuple(f[0].split())] = busy(f[1], f[2])
        elif "server failed" in line:
            problems.append(f"perftest/iperf3: {line}")
    gb = nbytes / 1e9
    names = dict(PERFTEST) | {k: label for k, label, _ in IPERF}
    for line in client.splitlines():
        f = line.split(" | ")
        if len(f) != 6 or f[0].split()[0] not in ("pt", "ip"):
            continue
        kind, dev = f[0].split()
        user, kern = busy(f[1], f[2])
        secs = float(f[4]) - float(f[3])
        if kind == "pt":
            w = f[5].split()
            what = f"ib_write_bw 64 KiB, {names[dev]}"
            # "#bytes #iterations BW-peak BW-average[MB/s] MsgRate"
            mbit = float(w[3]) * 8 if len(w) >= 4 else None
        else:
            m = re.search(r"([\d.]+) ([KMG])bits/sec", f[5])
            what = f"iperf3 TCP, {names[dev]}"
            mbit = float(m.group(1)) * {"K": 1e-3, "M": 1.0, "G": 1e3}[m.group(2)] if m else None
        if mbit is None:
            problems.append(f"{what}: no result ({f[5].strip() or 'empty'})")
        su, sk = srv.get((kind + "s", dev), (None, None))
        per = lambda v: v / gb if v is not None else None
        rows.append([what, secs, mbit, per(user), per(kern), per(su), per(sk)])
    res.table(f"perftest beside iperf3, {nbytes >> 20} MiB from vm0 to vm1: guest CPU seconds "
              f"per GB moved (kernel = system + irq + softirq)",
              ["", "seconds", "Mbit/s", "sender user", "sender kernel", "receiver user",
               "receiver kernel"], rows)
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vms", default="2,4", help="VM counts to run, comma-separated (2,4)")
    ap.add_argument("--rounds", type=int, default=2, help="launches of every stack (medians)")
    ap.add_argument("--seconds", type=float, default=1.0, help="time per measurement and size")
    ap.add_argument("--sizes", default=None, help="all-reduce sizes (bytes, K/M suffixes)")
    ap.add_argument("--bytes", type=parse_size, default=256 << 20,
                    help="bytes of the perftest / iperf3 runs (256M)")
    ap.add_argument("--stacks", default=",".join(STACKS),
                    help="stacks to run the all-reduce over (tcp,rxe,mlx5,cx4)")
    ap.add_argument("--no-transfers", action="store_true", help="no perftest / iperf3 part")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: 1K,64K,1M, 1 round, 0.2 s, 16 MiB transfers")
    args = ap.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else SIZES
    if args.quick:
        sizes = sizes if args.sizes else QUICK_SIZES
        args.rounds, args.seconds, args.bytes = 1, 0.2, 16 << 20
    stacks = [k for k in STACKS if k in args.stacks.split(",")]
    env = testrun.setup()
    res = Results("ai", "The AI case: MPI all-reduce over TCP, rxe, mlx5_ib and cx4; perftest "
                        "and iperf3 CPU")
    res.plot("allreduce", "MPI all-reduce: time per all-reduce", "vector size (bytes)", "ms")
    res.plot("allreduce_cpu", "MPI all-reduce: guest CPU per GB reduced", "vector size (bytes)",
             "CPU s / GB")
    res.plot("latency", "MPI ping-pong latency, 2 VMs", "message size (bytes)", "us")
    res.plot("bandwidth", "MPI bandwidth (16 sends in flight, <= 16 MiB), 2 VMs", "message size (bytes)", "MB/s")
    problems = []
    for nvms in (int(v) for v in args.vms.split(",")):
        pt = nvms == 2 and not args.no_transfers
        print(f"{nvms} VMs: all-reduce over {', '.join(stacks)}"
              f"{', then perftest and iperf3' if pt else ''} ...", file=sys.stderr, flush=True)
        specs = [vmrun.VmSpec(name=f"vm{i}", wire=True, cards=2, mac=f"52:54:00:c4:00:{i + 1:02x}",
                              model_args=["--roce"], mem_mb=1536) for i in range(nvms)]
        scripts, timeout = jobs(nvms, stacks, sizes, args.seconds, args.rounds, args.bytes, pt)
        out = run_jobs(env, specs, scripts, timeout,
                       files=[env.ko, TESTS / "mpi_rsh.py", TESTS / "mpi_allreduce.py"])
        if out is None:
            problems.append(f"{nvms} VMs: the run failed")
            continue
        results_dir().mkdir(parents=True, exist_ok=True)
        for r in out:
            # The VMs' job logs beside the results (mpirun's and UCX's own words).
            (results_dir() / f"ai-{nvms}vms-{r.name}.log").write_text(r.job_log)
        problems += allreduce_results(res, out[0].job_log, nvms, stacks, sizes, args.rounds)
        if pt:
            problems += perftest_results(res, section(out[0].job_log, "pt"),
                                         section(out[1].job_log, "pt"), args.bytes)
    res.note("All-reduce: Open MPI 5 with the UCX PML, one rank per TCG VM (1 vCPU); time per "
             "all-reduce is the slowest rank's loop over as many all-reduces as fit in "
             f"{args.seconds} s; CPU: every VM's busy time from /proc/stat over that loop, per "
             "10^9 bytes of vector reduced. UCX polls for completions, so a rank's CPU is busy "
             "for the whole all-reduce on every stack: the kernel share tells where it goes.")
    res.note("perftest and iperf3: each VM's busy time over its side's run, per 10^9 bytes "
             "moved; ib_write_bw polls its completion queue (the sender's user time), its "
             "receiver is one-sided and idle.")
    return res.finish(problems)


if __name__ == "__main__":
    sys.exit(main())
