"""The benchmarks' VM runs: VMs on one segment, each running its job script (after the tests'
PRELUDE) with a relay to the control socket of its first modelled card, so the job can ask the
host for the model's CPU time (`req cpu`) and counters (`req ctl ...`)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools/testbed"))

import harness  # noqa: E402
import vmrun  # noqa: E402
from model_eth import PRELUDE, Relay  # noqa: E402

# Guest helpers: `cpu` prints this VM's busy CPU ticks so far (USER_HZ, 100 a second) from
# /proc/stat, user + nice and system + irq + softirq; `now` the time in seconds.
GUEST_CPU = r"""
cpu() { awk '/^cpu / {print $2 + $3, $4 + $7 + $8}' /proc/stat; }
now() { date +%s.%N; }
"""
USER_HZ = 100


def run_jobs(env, specs: list[vmrun.VmSpec], jobs: list[str], timeout: float,
             files: list[Path] = ()) -> list[vmrun.VmResult] | None:
    """Boots `specs` (one job script each, `files` shared into every VM) and returns the
    results; None, after printing why, if a VM's job failed."""
    with vmrun.Run(env.kdir, env.tree, env.model, specs, net=True, log=lambda m: None) as run:
        relays = []
        for spec, job in zip(specs, jobs):
            # `{card}` is the card's name: the first card of a VM is named after the VM.
            spec.model_args += ["--control", str(run.dir / "{card}.ctl")]
            (run.dir / f"job-{spec.name}.sh").write_text("set -e\n" + PRELUDE + job)
            run.put(run.dir / f"job-{spec.name}.sh", "job.sh", vms=[spec.name])
            relays.append(Relay(run, spec.name, run.dir / f"{spec.name}.ctl"))
        for f in files:
            run.put(f)
        for r in relays:
            r.__enter__()
        try:
            res = run.boot(timeout=timeout)
        finally:
            for r in relays:
                r.__exit__()
    for r in res:
        if r.status != 0:
            print(harness.describe(r))
            return None
    return res


def busy(before: str, after: str) -> tuple[float, float]:
    """Seconds of user and of kernel time between two `cpu` readings ("USER KERNEL")."""
    (u0, k0), (u1, k1) = (map(float, x.split()) for x in (before, after))
    return (u1 - u0) / USER_HZ, (k1 - k0) / USER_HZ


def cpu_seconds(line: str) -> float:
    """The model's CPU seconds in a job's `req cpu` answer (`ticks=N hz=N`; 0 if absent)."""
    m = re.search(r"ticks=(\d+) hz=(\d+)", line)
    return int(m.group(1)) / int(m.group(2)) if m else 0.0
