#!/usr/bin/env python3
"""Benchmark (not a test): cx4 vs upstream mlx5_core on the same modelled card, side by side.

Boots one VM with the model and, in alternating rounds, loads each driver and measures
probe-to-ready time (module load until probe returned) and per-command round-trip latency from
each driver's own debugfs statistics (mlx5: commands/<NAME>/{n,average}; cx4: its command
table with mode columns). Prints medians and ratios cx4/mlx5 (below 1.0: cx4 is faster).

    python3 tools/bench/core_bench.py [--rounds 5]      (make bench)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools/testbed"))

import harness  # noqa: E402
import run as testrun  # noqa: E402

JOB = r"""
set +e
PCI=0000:01:00.0
for r in $(seq ROUNDS); do
  for drv in mlx5_core cx4; do
    if [ $drv = cx4 ]; then load="insmod /cx4/cx4.ko"; else load="modprobe mlx5_core"; fi
    t0=$(date +%s%N); $load; t1=$(date +%s%N)
    test -e /sys/bus/pci/drivers/$drv/$PCI || echo "bench: $drv did not bind"
    echo "probe $drv $(( (t1 - t0) / 1000 ))"
    if [ $drv = mlx5_core ]; then
      for d in /sys/kernel/debug/mlx5/$PCI/commands/*/; do
        n=$(cat $d/n 2>/dev/null); a=$(cat $d/average 2>/dev/null)
        [ -n "$n" ] && [ "$n" != 0 ] && echo "cmd mlx5 $(basename $d) $n $((a / 1000)) -"
      done
    else
      f=$(ls /sys/kernel/debug/cx4/*/commands 2>/dev/null | head -1)
      [ -n "$f" ] && awk 'NR > 1 { mode = ($8 > 0) ? "event" : "polled"; if ($8 > 0 && $7 > 0) mode = "mixed";
                                  print "cmd cx4", $1, $3, $5, mode }' "$f"
    fi
    t0=$(date +%s%N); rmmod $drv; t1=$(date +%s%N)
    echo "remove $drv $(( (t1 - t0) / 1000 ))"
  done
done
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    env = testrun.setup()
    r = harness.one_vm(env, JOB.replace("ROUNDS", str(args.rounds)), files=[env.ko],
                       timeout=120 + 60 * args.rounds)
    if r.status != 0:
        print(harness.describe(r))
        return 1
    probe: dict[str, list[float]] = {"cx4": [], "mlx5_core": []}
    remove: dict[str, list[float]] = {"cx4": [], "mlx5_core": []}
    cmds: dict[tuple[str, str], list[float]] = {}
    modes: dict[str, str] = {}
    for line in r.job_log.splitlines():
        w = line.split()
        if len(w) == 3 and w[0] in ("probe", "remove"):
            (probe if w[0] == "probe" else remove)[w[1]].append(int(w[2]) / 1000)
        elif len(w) == 6 and w[0] == "cmd":
            cmds.setdefault((w[1], w[2]), []).append(float(w[4]))
            if w[1] == "cx4":
                modes[w[2]] = w[5]
        elif line.startswith("bench:"):
            print(line)
    med = lambda v: statistics.median(v) if v else float("nan")
    print(f"\ncx4 vs upstream mlx5_core, same model, TCG guest, {args.rounds} rounds (medians)\n")
    print(f"{'':28} {'mlx5_core':>12} {'cx4':>12} {'cx4/mlx5':>9}")
    for name, d in (("probe-to-ready (ms)", probe), ("remove (ms)", remove)):
        a, b = med(d["mlx5_core"]), med(d["cx4"])
        print(f"{name:28} {a:12.1f} {b:12.1f} {b / a if a else float('nan'):9.2f}")
    print(f"\ncommand round trip, mean per command (us); mode = how cx4 saw completions")
    print(f"{'command':28} {'mlx5_core':>12} {'cx4':>12} {'cx4/mlx5':>9}  mode")
    names = sorted({n for (_, n) in cmds}, key=lambda n: n)
    for n in names:
        a, b = med(cmds.get(("mlx5", n), [])), med(cmds.get(("cx4", n), []))
        if cmds.get(("mlx5", n)) and cmds.get(("cx4", n)):
            print(f"{n:28} {a:12.0f} {b:12.0f} {b / a if a else float('nan'):9.2f}  {modes.get(n, '')}")
    only = [n for n in names if not (cmds.get(("mlx5", n)) and cmds.get(("cx4", n)))]
    if only:
        print(f"\nsent by one driver only: {', '.join(only)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
