#!/usr/bin/env python3
"""Benchmark (not a test): cx4 vs upstream mlx5_core on the same modelled card, side by side.

Boots one VM with the model and, in alternating rounds, loads each driver, measures
probe-to-ready time (module load until probe returned), runs an event-mode mailbox command from
user space QUERIES times (QUERY_EQ: mlx5 sends it for each read of debugfs EQs/<n>/num_eqes,
cx4 for each `query-eq` written to its selftest hook), and reads each driver's per-command
latency statistics. Both count the same span: from handing the command entry to the device
(just before the doorbell) until the completion is seen, in the EQ interrupt handler or the
poll loop (mlx5: cmd.c ts1/ts2, debugfs commands/<NAME>/average; cx4: its `commands` table,
which also says how each completion was seen and how many commands carried mailboxes).

Prints, per command, the median over the rounds of each round's mean, the ratio cx4/mlx5
(below 1.0: cx4 is faster), and the geometric mean of the ratios of the mailbox commands and of
the event-mode commands. Commands sent once per probe are dominated by TCG translating code on
first use; QUERY_EQ is the steady-state comparison.

    python3 tools/bench/core_bench.py [--rounds 5] [--queries 100] [--table]      (make bench)
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools/testbed"))

import harness  # noqa: E402
import run as testrun  # noqa: E402
from results import Results  # noqa: E402

JOB = r"""
set +e
PCI=0000:01:00.0
for r in $(seq ROUNDS); do
  for drv in mlx5_core cx4; do
    if [ $drv = cx4 ]; then load="insmod /cx4/cx4.ko"; else load="modprobe mlx5_core"; fi
    t0=$(date +%s%N); $load; t1=$(date +%s%N)
    test -e /sys/bus/pci/drivers/$drv/$PCI || echo "bench: $drv did not bind"
    echo "probe $drv $(( (t1 - t0) / 1000 ))"
    # An event-mode mailbox command from user space, one per action, QUERIES times: QUERY_EQ
    # (mlx5: reading an EQ's debugfs field; cx4: its selftest hook).
    if [ $drv = mlx5_core ]; then
      eqd=$(ls -d /sys/kernel/debug/mlx5/$PCI/EQs/*/ 2>/dev/null | head -1)
      for i in $(seq QUERIES); do cat $eqd/num_eqes >/dev/null; done
    else
      sd=$(ls /sys/kernel/debug/cx4/*/selftest 2>/dev/null | head -1)
      for i in $(seq QUERIES); do echo query-eq > $sd; done
    fi
    if [ $drv = mlx5_core ]; then
      for d in /sys/kernel/debug/mlx5/$PCI/commands/*/; do
        n=$(cat $d/n 2>/dev/null); a=$(cat $d/average 2>/dev/null)
        [ -n "$n" ] && [ "$n" != 0 ] && echo "cmd mlx5 $(basename $d) $n $((a / 1000)).$((a / 100 % 10)) - -"
      done
    else
      f=$(ls /sys/kernel/debug/cx4/*/commands 2>/dev/null | head -1)
      [ -n "$f" ] && awk 'NR > 1 { mode = ($8 > 0) ? "event" : "polled"; if ($8 > 0 && $7 > 0) mode = "mixed";
                                  print "cmd cx4", $1, $3, $5, mode, ($11 > 0) ? "mbox" : "inline" }' "$f"
      [ $r = ROUNDS ] && sed 's/^/table /' "$f"
    fi
    t0=$(date +%s%N); rmmod $drv; t1=$(date +%s%N)
    echo "remove $drv $(( (t1 - t0) / 1000 ))"
  done
done
"""


def geomean(v: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--queries", type=int, default=100, help="QUERY_EQ commands per round (event mode)")
    ap.add_argument("--table", action="store_true", help="also print cx4's debugfs table of the last round")
    args = ap.parse_args()
    env = testrun.setup()
    job = JOB.replace("ROUNDS", str(args.rounds)).replace("QUERIES", str(args.queries))
    r = harness.one_vm(env, job, files=[env.ko], timeout=120 + 60 * args.rounds)
    if r.status != 0:
        print(harness.describe(r))
        return 1
    probe: dict[str, list[float]] = {"cx4": [], "mlx5_core": []}
    remove: dict[str, list[float]] = {"cx4": [], "mlx5_core": []}
    cmds: dict[tuple[str, str], list[float]] = {}
    modes: dict[str, str] = {}
    mbox: dict[str, bool] = {}
    table: list[str] = []
    for line in r.job_log.splitlines():
        w = line.split()
        if len(w) == 3 and w[0] in ("probe", "remove"):
            (probe if w[0] == "probe" else remove)[w[1]].append(int(w[2]) / 1000)
        elif len(w) == 7 and w[0] == "cmd":
            cmds.setdefault((w[1], w[2]), []).append(float(w[4]))
            if w[1] == "cx4":
                modes[w[2]] = w[5]
                mbox[w[2]] = mbox.get(w[2], False) or w[6] == "mbox"
        elif line.startswith("table "):
            table.append(line[len("table "):])
        elif line.startswith("bench:"):
            print(line)
    med = lambda v: statistics.median(v) if v else float("nan")
    res = Results("core", "Driver core: cx4 vs upstream mlx5_core on the same model")
    res.table(f"cx4 vs upstream mlx5_core, same model, TCG guest, {args.rounds} rounds (medians)",
              ["", "mlx5_core", "cx4", "cx4/mlx5"],
              [[name, med(d["mlx5_core"]), med(d["cx4"]),
                med(d["cx4"]) / med(d["mlx5_core"]) if med(d["mlx5_core"]) else None]
               for name, d in (("probe-to-ready (ms)", probe), ("remove (ms)", remove))])
    names = sorted({n for (_, n) in cmds}, key=lambda n: n)
    ratios: dict[str, float] = {}
    rows = []
    for n in names:
        a, b = med(cmds.get(("mlx5", n), [])), med(cmds.get(("cx4", n), []))
        if cmds.get(("mlx5", n)) and cmds.get(("cx4", n)):
            ratio = b / a if a else float("nan")
            if a and b:
                ratios[n] = ratio
            rows.append([n, a, b, ratio, modes.get(n, ""), "yes" if mbox.get(n) else ""])
    res.table("command latency, posting to completion seen, mean per command (us), median of rounds "
              "(mode: how cx4 saw completions, both drivers poll until the command EQ exists, then "
              "use events; mbox: the command carries mailbox blocks)",
              ["command", "mlx5_core", "cx4", "cx4/mlx5", "mode", "mbox"], rows)
    groups = (("mailbox commands", [n for n in ratios if mbox.get(n)]),
              ("event-mode commands", [n for n in ratios if modes.get(n) in ("event", "mixed")]),
              ("all commands", list(ratios)))
    print()
    for label, members in groups:
        worst = max(members, key=lambda n: ratios[n]) if members else "-"
        line = (f"{label + ':':28} geometric mean cx4/mlx5 {geomean([ratios[n] for n in members]):5.2f}"
                f" over {len(members)}; highest {ratios.get(worst, float('nan')):.2f} ({worst})")
        print(line)
        res.note(" ".join(line.split()))
    res.save()
    only = [n for n in names if not (cmds.get(("mlx5", n)) and cmds.get(("cx4", n)))]
    if only:
        print(f"\nsent by one driver only: {', '.join(only)}")
    if args.table and table:
        print("\ncx4 debugfs commands, last round:")
        print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
