#!/usr/bin/env python3
"""cx4 test runner: `make test` (or `python3 tests/run.py [NAME-FILTER...]`).

Sets up what the tests need (host packages, test kernel, guest tree, model, cx4.ko: cached
builds, so a second run takes minutes), then runs the suites and ends with the line
`N passed, N failed`, after a table of each suite's wall time.

The host suite runs first, one test at a time. VM tests then run `CX4_JOBS` at a time
(default: the number of CPUs), each VM a TCG process of its own, with the set-up suite's chain
of checks in one of the slots; a test marked `exclusive` (it checks the
machine for leftovers, or measures time) runs alone. Tests marked `soak` (hundreds of cycles,
long runs) run only with `--soak` (`make soak`).

    CX4_KERNEL_FLAVOUR=debug  (make test KERNEL=debug) the VM suites on the debug kernel
    CX4_JOBS=N                how many VM tests run at once
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import importlib
import os
import re
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TB = ROOT / "tools/testbed"
sys.path.insert(0, str(TB))
sys.path.insert(0, str(ROOT / "tests"))

import harness  # noqa: E402

# Test modules, each with a `tests(env)` generator of (name, callable).
HOST_SUITES = ["host"]
# Suites whose tests depend on each other in order: run as one chain beside the VM tests
# (the set-up checks are mostly network and disk, one CPU at most).
CHAINED_SUITES = ["setup"]
VM_SUITES = ["testbed", "kunit", "model_core", "driver_core", "model_eth", "en", "en_xdp", "model_roce", "model_ib",
             "ib", "nvmeof", "nfs_rdma", "ec_user", "ec_kernel", "ec_dma", "ucx_mpi", "hostile", "hostile_user",
             "endurance"]


def sh(cmd: list[str] | str, **kw) -> str:
    kw.setdefault("check", True)
    r = subprocess.run(cmd, shell=isinstance(cmd, str), text=True, stdout=subprocess.PIPE,
                       stderr=sys.stderr, cwd=ROOT, **kw)
    return r.stdout


def flavour() -> str:
    return os.environ.get("CX4_KERNEL_FLAVOUR", "default") or "default"


def setup() -> harness.Env:
    t0 = time.time()
    stage = lambda s: print(f"\n==> [{time.strftime('%T')}] {s}", file=sys.stderr, flush=True)
    stage(f"setup: host prerequisites, test kernel ({flavour()} flavour), guest tree (cached)")
    sh(["bash", str(TB / "host-deps.sh")])
    kdir = Path(sh(["bash", str(TB / "kernel.sh")]).strip().splitlines()[-1])
    tree = Path(sh(["bash", str(TB / "guest.sh"), str(kdir)]).strip().splitlines()[-1])
    stage("setup: device model (release), tools/cx4ec, cx4.ko")
    sh(["cargo", "build", "--release", "--locked", "--quiet", "-p", "cx4-model"])
    # The erasure-coding user library and CLI (run in the guest) and the host reference.
    sh(["make", "-s", "-C", "tools/cx4ec"])
    sh(["bash", str(TB / "module.sh"), str(kdir), "CX4_TEST_HOOKS=y"])
    print(f"    setup took {time.time() - t0:.0f} s", file=sys.stderr)
    return harness.Env(root=ROOT, kdir=kdir, tree=tree,
                       model=ROOT / "target/release/cx4-model", flavour=flavour())


@dataclass
class Tally:
    passed: int = 0
    failed: int = 0
    tests: int = 0
    busy: float = 0.0                      # sum of its tests' times
    first: float | None = None
    last: float | None = None
    failures: list[str] = field(default_factory=list)


def cpu_times() -> list[int]:
    """The host's CPU time so far (/proc/stat `cpu`: user nice system idle iowait irq softirq
    steal), in clock ticks."""
    try:
        return [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return [0] * 8


def host_share(before: list[int], after: list[int]) -> str:
    """How the host's CPUs spent a span: a failed test on a starved host (steal time, another
    load) says so, not only that it timed out."""
    d = [b - a for a, b in zip(before, after)]
    total = sum(d) or 1
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    return ", ".join(f"{n} {100 * v / total:.0f}%" for n, v in zip(names, d) if v or n == "steal")


class Runner:
    def __init__(self, env: harness.Env, filters: list[str], soak: bool):
        self.env, self.filters, self.soak = env, filters, soak
        self.lock = threading.Lock()
        self.tally: dict[str, Tally] = {}

    def selected(self, suite: str) -> list[tuple[str, object]]:
        mod = importlib.import_module(suite)
        out = []
        for name, fn in mod.tests(self.env):
            full = f"{suite}::{name}"
            if self.filters and not any(re.search(f, full) for f in self.filters):
                continue
            # Soak tests run under --soak only (`make soak TESTS=...` picks among them), so a
            # filter on `make test` never drags in a multi-hour run.
            if getattr(fn, "soak", False) != self.soak:
                continue
            out.append((full, fn))
        self.tally.setdefault(suite, Tally())
        return out

    def run_one(self, full: str, fn) -> None:
        suite = full.split("::")[0]
        t0, cpu0 = time.time(), cpu_times()
        with self.lock:
            print(f"--- {full} ...", flush=True)
        passed = failed = 0
        detail = ""
        try:
            fn()
            passed, status = 1, "PASS"
        except harness.SubResults as sr:
            passed, failed, detail = sr.passed, sr.failed, sr.detail if sr.failed else ""
            status = "PASS" if sr.failed == 0 else "FAIL"
        except Exception as e:  # noqa: BLE001 - a test failure of any kind
            failed, status = 1, "FAIL"
            detail = str(e) if isinstance(e, AssertionError) else traceback.format_exc()
        t1 = time.time()
        if failed:
            detail = f"[host CPUs during the test: {host_share(cpu0, cpu_times())}] " + detail
        with self.lock:
            t = self.tally[suite]
            t.passed += passed
            t.failed += failed
            t.tests += 1
            t.busy += t1 - t0
            t.first = t0 if t.first is None else min(t.first, t0)
            t.last = t1 if t.last is None else max(t.last, t1)
            counts = f": {passed} passed, {failed} failed" if passed + failed > 1 else ""
            print(f"{status} {full}{counts} ({t1 - t0:.1f} s)" + (f": {detail}" if detail else ""),
                  flush=True)
            if failed:
                t.failures.append(full)

    def run_serial(self, tests) -> None:
        for full, fn in tests:
            self.run_one(full, fn)

    def run_parallel(self, tests, jobs: int, chains=()) -> None:
        shared = [(f, fn) for f, fn in tests if not getattr(fn, "exclusive", False)]
        alone = [(f, fn) for f, fn in tests if getattr(fn, "exclusive", False)]
        # Longest first keeps the pool busy to the end (tests may declare an estimate).
        shared.sort(key=lambda t: -getattr(t[1], "estimate", 60))
        with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(self.run_serial, chain) for chain in chains if chain]
            futures += [pool.submit(self.run_one, full, fn) for full, fn in shared]
            for f in futures:
                f.result()
        self.run_serial(alone)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("filters", nargs="*", help="run the tests whose suite::name matches")
    ap.add_argument("--soak", action="store_true", help="run the soak tests (make soak)")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("CX4_JOBS", os.cpu_count() or 1)))
    args = ap.parse_args(argv)
    t_all = time.time()
    try:
        env = setup()
    except subprocess.CalledProcessError as e:
        print(f"setup failed: {e}", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1
    runner = Runner(env, args.filters, args.soak)
    t_tests, cpu_tests = time.time(), cpu_times()
    # The debug flavour is about the kernel: its run is the VM suites.
    default_run = env.flavour == "default" and not args.soak
    for suite in HOST_SUITES if default_run else []:
        runner.run_serial(runner.selected(suite))
    chains = [runner.selected(suite) for suite in CHAINED_SUITES] if default_run else []
    vm_tests = [t for suite in VM_SUITES for t in runner.selected(suite)]
    runner.run_parallel(vm_tests, args.jobs, chains)

    print(f"\n==> suite wall times ({env.flavour} kernel, {args.jobs} VM test(s) at a time)",
          file=sys.stderr)
    print(f"    {'suite':14} {'tests':>5} {'pass':>5} {'fail':>5} {'wall s':>7} {'busy s':>7}",
          file=sys.stderr)
    passed = failed = 0
    failures = []
    for suite, t in runner.tally.items():
        if not t.tests:
            continue
        wall = (t.last or 0) - (t.first or 0)
        print(f"    {suite:14} {t.tests:5} {t.passed:5} {t.failed:5} {wall:7.0f} {t.busy:7.0f}",
              file=sys.stderr)
        passed += t.passed
        failed += t.failed
        failures += t.failures
    print(f"    tests took {time.time() - t_tests:.0f} s, {time.time() - t_all:.0f} s with set-up",
          file=sys.stderr)
    print(f"    host CPUs during the tests: {host_share(cpu_tests, cpu_times())}", file=sys.stderr)
    print(f"\n{len(failures)} failing: {', '.join(failures)}" if failures else "", file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
