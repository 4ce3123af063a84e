#!/usr/bin/env python3
"""cx4 test runner: `make test` (or `python3 tests/run.py [NAME-FILTER...]`).

Sets up what the tests need (host packages, test kernel, guest tree, model, cx4.ko: cached
builds, so a second run takes minutes), then runs host checks (rustfmt, clippy, cargo tests,
the module under the kernel's CLIPPY=1) and VM tests. Ends with the line `N passed, N failed`.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TB = ROOT / "tools/testbed"
sys.path.insert(0, str(TB))
sys.path.insert(0, str(ROOT / "tests"))

import harness  # noqa: E402

# Test modules, each with a `tests(env)` generator of (name, callable).
SUITES = ["host", "testbed", "model_core", "driver_core"]


def sh(cmd: list[str] | str, **kw) -> str:
    kw.setdefault("check", True)
    r = subprocess.run(cmd, shell=isinstance(cmd, str), text=True, stdout=subprocess.PIPE,
                       stderr=sys.stderr, cwd=ROOT, **kw)
    return r.stdout


def setup() -> harness.Env:
    t0 = time.time()
    stage = lambda s: print(f"\n==> [{time.strftime('%T')}] {s}", file=sys.stderr, flush=True)
    stage("setup: host prerequisites, test kernel, guest tree (cached)")
    sh(["bash", str(TB / "host-deps.sh")])
    kdir = Path(sh(["bash", str(TB / "kernel.sh")]).strip().splitlines()[-1])
    tree = Path(sh(["bash", str(TB / "guest.sh"), str(kdir)]).strip().splitlines()[-1])
    stage("setup: device model (release)")
    sh(["cargo", "build", "--release", "--locked", "--quiet", "-p", "cx4-model"])
    print(f"    setup took {time.time() - t0:.0f} s", file=sys.stderr)
    return harness.Env(root=ROOT, kdir=kdir, tree=tree,
                       model=ROOT / "target/release/cx4-model")


def main(argv: list[str]) -> int:
    filters = argv
    try:
        env = setup()
    except subprocess.CalledProcessError as e:
        print(f"setup failed: {e}", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1
    passed = failed = 0
    failures = []
    t_all = time.time()
    for suite in SUITES:
        mod = importlib.import_module(suite)
        for name, fn in mod.tests(env):
            full = f"{suite}::{name}"
            if filters and not any(re.search(f, full) for f in filters):
                continue
            t0 = time.time()
            print(f"--- {full} ...", flush=True)
            try:
                fn()
                dt = time.time() - t0
                print(f"PASS {full} ({dt:.1f} s)", flush=True)
                passed += 1
            except harness.SubResults as sr:
                # A step that reports several counted results (e.g. cargo test).
                passed += sr.passed
                failed += sr.failed
                status = "PASS" if sr.failed == 0 else "FAIL"
                print(f"{status} {full}: {sr.passed} passed, {sr.failed} failed "
                      f"({time.time() - t0:.1f} s)", flush=True)
                if sr.failed:
                    failures.append(full)
                    print(sr.detail)
            except Exception as e:  # noqa: BLE001 - a test failure of any kind
                dt = time.time() - t0
                msg = str(e) if isinstance(e, AssertionError) else traceback.format_exc()
                print(f"FAIL {full} ({dt:.1f} s): {msg}", flush=True)
                failed += 1
                failures.append(full)
    print(f"\n{len(failures)} failing: {', '.join(failures)}" if failures else "", file=sys.stderr)
    print(f"tests took {time.time() - t_all:.0f} s", file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
