#!/usr/bin/env python3
"""Benchmark (not a test): md RAID-6 with and without the card — the ec_dma array (tests/
ec_dma.py: md raid456 over loop disks in tmpfs, async_tx offloading P+Q to cx4's dmaengine
provider on the `--ec-8bit` profile) timed in one TCG guest, first with cx4's channel, then
with the CPU (async_tx's synchronous path, the kernel's raid6 library) after cx4 and async_tx
are unloaded.

Each pass builds a fresh array of --disks loop disks of --disk-mib MiB (chunk 64 KiB, md's
speed limits lifted) and times, as MB/s of array capacity (data disks x disk size; MB =
10^6 B):

- resync: `mdadm --create` to the end of the initial resync (`mdadm --wait`): every stripe
  read, P and Q validated (the disks are zero, so nothing is rewritten);
- write: dd over the array (as many 4 MiB requests as fit) from random data in tmpfs,
  O_DIRECT (full stripes: P and Q generated without reading);
- rebuild: two disks failed and removed, two spares added, to the end of the recovery (two
  data blocks recovered from the survivors per stripe).

Around each: the guest's busy CPU (/proc/stat), the card model's host CPU (`req cpu`) and, with
cx4, the channel's operation counters (debugfs `ec`: memcpy, xor, pq, pq_val...): the time per
operation and who was busy say what bounds the throughput.

Writes target/bench/raid6.json (report.py).

    python3 tools/bench/raid6_bench.py [--disks 6] [--disk-mib 32] [--quick]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools/testbed"))

import run as testrun  # noqa: E402
from ec_dma import DMA, UNLOAD, counts  # noqa: E402
from ec_kernel import run  # noqa: E402
from results import Results  # noqa: E402
from vmpair import GUEST_CPU, busy, cpu_seconds  # noqa: E402

OPS = ("resync", "write", "rebuild")
# The channel's operations that carry RAID-6 work (the rest are counters of other kinds).
DMA_OPS = ("memcpy", "xor", "xor_val", "pq", "pq_val")

# One pass: `md_pass TAG`. `snap` prints "time | cpu | model cpu | dma counters" (the last
# empty without cx4); a phase prints "phase TAG OP BYTES | before | after".
MD_BENCH = GUEST_CPU + r"""
snap() { echo "$(now) | $(cpu) | $(req cpu) | $(grep '^dma interrupt' $DBG/ec 2>/dev/null || true)"; }
md_pass() {
    modprobe raid456
    echo 2000000 > /proc/sys/dev/raid/speed_limit_max
    echo 2000000 > /proc/sys/dev/raid/speed_limit_min
    mkdir -p /tmp/md
    for i in $(seq 0 $((NDISK + 1))); do
        rm -f /tmp/md/d$i; truncate -s DISKM /tmp/md/d$i; losetup /dev/loop$i /tmp/md/d$i
    done
    s0=$(snap)
    mdadm --create /dev/md0 --run --level=6 --raid-devices=$NDISK --chunk=64 \
        $(seq -f /dev/loop%g 0 $((NDISK - 1))) > /tmp/md/create.log 2>&1 || cat /tmp/md/create.log
    mdadm --wait /dev/md0 || true
    size=$(blockdev --getsize64 /dev/md0)
    echo "phase $1 resync $size | $s0 | $(snap)"
    s0=$(snap)
    n=$((size / 4194304))
    dd if=/tmp/md/data of=/dev/md0 bs=4M count=$n oflag=direct status=none
    echo "phase $1 write $((n * 4194304)) | $s0 | $(snap)"
    mdadm /dev/md0 --fail /dev/loop1 --fail /dev/loop3 > /dev/null 2>&1
    mdadm /dev/md0 --remove /dev/loop1 --remove /dev/loop3 > /dev/null 2>&1
    s0=$(snap)
    mdadm /dev/md0 --add /dev/loop$NDISK --add /dev/loop$((NDISK + 1)) > /dev/null 2>&1
    sleep 0.5; mdadm --wait /dev/md0 || true
    echo "phase $1 rebuild $size | $s0 | $(snap)"
    grep -A2 '^md0' /proc/mdstat | sed "s/^/mdstat $1 /"
    mdadm --stop /dev/md0 > /dev/null 2>&1
    for i in $(seq 0 $((NDISK + 1))); do losetup -d /dev/loop$i; rm -f /tmp/md/d$i; done
}
NDISK=DISKS
mkdir -p /tmp/md
head -c $(( (NDISK - 2) * DISKMIB ))M /dev/urandom > /tmp/md/data
"""

WITH_CARD = DMA + MD_BENCH + r"""
echo "chan $(chan)"
md_pass cx4
""" + UNLOAD

WITHOUT = r"""
ls /sys/class/dma/ 2>/dev/null | grep -q . && echo "a DMA channel is still there"
md_pass cpu
rm -f /tmp/md/data
"""


def phases(log: str) -> dict[tuple[str, str], dict]:
    """(pass, op) -> seconds, bytes, guest busy seconds, model CPU seconds, channel ops."""
    out = {}
    for m in re.finditer(r"^phase (\w+) (\w+) (\d+) \| (.*)$", log, re.M):
        f = [x.strip() for x in m.group(4).split("|")]
        if len(f) != 8:
            continue
        user, kern = busy(f[1], f[5])
        ops = {}
        if f[3] and f[7]:
            c0, c1 = counts(f[3]), counts(f[7])
            ops = {k: c1.get(k, 0) - c0.get(k, 0) for k in DMA_OPS}
        out[(m.group(1), m.group(2))] = {
            "seconds": float(f[4]) - float(f[0]), "bytes": int(m.group(3)), "user": user,
            "kernel": kern, "model": cpu_seconds(f[6]) - cpu_seconds(f[2]), "ops": ops}
    return out


def bound(p: dict, card: bool) -> str:
    """What the figures say bounds a phase: whoever was busy nearly all of the time, else
    the wait for each operation's round trip."""
    t = p["seconds"]
    guest = (p["user"] + p["kernel"]) / t
    if not card:
        return f"guest CPU {guest:.0%} busy (raid6 library under TCG)" if guest > 0.8 \
            else f"guest CPU {guest:.0%} busy: md and the loop disks' I/O path"
    model = p["model"] / t
    n = sum(p["ops"].values())
    if model > 0.8:
        return f"the model's engine ({model:.0%} of a host CPU)"
    if guest > 0.8:
        return f"guest CPU {guest:.0%} busy (submission, completion, md)"
    return (f"per-operation round trip: {n} ops, {t / n * 1e6:.0f} us each, guest "
            f"{guest:.0%} and model {model:.0%} busy" if n else "n/m (no channel operations)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--disks", type=int, default=6, help="array members (RAID-6: 2 of them parity)")
    ap.add_argument("--disk-mib", type=int, default=32, help="size of each member")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 8 MiB members")
    args = ap.parse_args()
    if args.quick:
        args.disk_mib = 8
    env = testrun.setup()
    subst = lambda s: (s.replace("DISKMIB", str(args.disk_mib))
                       .replace("DISKM", f"{args.disk_mib}M").replace("DISKS", str(args.disks)))
    problems = []
    r = None
    try:
        r = run(env, ["--ec-8bit"], subst(WITH_CARD), after=subst(WITHOUT))
    except AssertionError as e:
        problems.append(f"the VM run failed: {str(e)[-3000:]}")
    log = r.job_log if r else ""
    got = phases(log)
    if "a DMA channel is still there" in log:
        problems.append("the CPU pass ran with a DMA channel present")
    res = Results("raid6", f"md RAID-6 with and without the card ({args.disks} x "
                           f"{args.disk_mib} MiB loop disks in tmpfs, one TCG guest)")
    rows = []
    for op in OPS:
        c, k = got.get(("cpu", op)), got.get(("cx4", op))
        if not c or not k:
            problems.append(f"{op}: no figures (cpu {bool(c)}, cx4 {bool(k)})")
        rate = lambda p: p["bytes"] / p["seconds"] / 1e6 if p and p["seconds"] > 0 else None
        pct = lambda p, v: 100 * v / p["seconds"] if p and p["seconds"] > 0 else None
        if k and sum(k["ops"].values()) == 0:
            problems.append(f"{op}: the card's channel did no operation in the cx4 pass")
        rows.append([op, rate(c), rate(k), rate(k) / rate(c) if rate(c) and rate(k) else None,
                     pct(c, c["user"] + c["kernel"]) if c else None,
                     pct(k, k["user"] + k["kernel"]) if k else None,
                     pct(k, k["model"]) if k else None,
                     " ".join(f"{n}={v}" for n, v in k["ops"].items() if v) if k else None,
                     bound(k, True) if k else None, bound(c, False) if c else None])
    res.table("md RAID-6 throughput, MB/s of array capacity; busy: % of the phase's time",
              ["", "CPU MB/s", "cx4 MB/s", "cx4 / CPU", "guest busy, CPU", "guest busy, cx4",
               "model busy, cx4", "channel ops, cx4", "bound, cx4", "bound, CPU"], rows)
    algo = re.findall(r"raid6: using algorithm (\S+)", r.dmesg) if r else []
    res.note(f"One guest (1 vCPU, TCG), the `--ec-8bit` card: the cx4 pass first (async_tx "
             f"through cx4's channel), then cx4 and async_tx unloaded and the same passes with "
             f"the kernel's raid6 library ({', '.join(sorted(set(algo))) or 'algorithm n/m'}). "
             "md raid456 hands async_tx one operation per stripe (4 KiB pages of every member), "
             "so the card sees many small operations, each a round trip through the guest's "
             "submit path, the vfio-user doorbell, the model and a completion interrupt.")
    return res.finish(problems)


if __name__ == "__main__":
    sys.exit(main())
