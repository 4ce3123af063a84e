"""cx4's KUnit suites in a VM: the driver's pure logic (GF arithmetic and matrix inversion,
command status -> errno, RSS indirection, QP state transitions and their optional parameters
against mlx5_ib's tables, the mailbox layout, the PTP clock's timecounter), compiled into
cx4.ko with `#[kunit_tests]` and run by KUnit when the module loads (issue 29). Each KTAP
test case counts as one test here; a suite that reports no cases is a failure. (cx4_gf is in
the module the test bed builds: the EC helpers it tests are built with the test hooks, their
only user.)"""

from __future__ import annotations

import re

from harness import Env, SubResults, check_clean_dmesg, describe, one_vm

# The suites cx4.ko carries; each must report, none may be missing.
SUITES = ["cx4_gf", "cx4_cmd_status", "cx4_mbox_layout", "cx4_rss", "cx4_qp_transitions",
          "cx4_ib_qp_states", "cx4_clock"]


def parse_ktap(dmesg: str) -> dict[str, list[tuple[str, bool]]]:
    """The KTAP results in the kernel log, by suite: [(case, passed)]."""
    suites: dict[str, list[tuple[str, bool]]] = {}
    current = None
    for line in dmesg.splitlines():
        line = re.sub(r"^\s*\[[\s\d.]+\]\s?", "", line)
        m = re.search(r"# Subtest: (\S+)\s*$", line)
        if m:
            current = m.group(1)
            suites.setdefault(current, [])
            continue
        m = re.match(r"^\s*(not ok|ok) \d+ (\S+)", line)
        if m and current:
            suites[current].append((m.group(2), m.group(1) == "ok"))
    return suites


def tests(env: Env):
    def kunit_suites_pass_when_cx4_loads():
        # No card: the module's KUnit suites run at load, before (and without) any probe. (The
        # VM runner boots with kunit.enable=0 for every other test; this one turns it on.)
        r = one_vm(env, """
            insmod /cx4/cx4.ko
            echo "=== results ==="
            for s in /sys/kernel/debug/kunit/cx4_*; do echo "$s"; cat "$s/results"; done
            rmmod cx4
            echo unloaded
        """, model=False, files=[env.ko], cmdline="kunit.enable=1")
        assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        check_clean_dmesg(r.dmesg)
        # The kernel log carries the KTAP of every suite the module registered.
        got = parse_ktap(r.dmesg)
        passed = failed = 0
        detail = []
        for suite in SUITES:
            cases = got.get(suite)
            if not cases:
                failed += 1
                detail.append(f"suite {suite} did not run (suites seen: {sorted(got)})")
                continue
            for case, ok in cases:
                # The suite's own summary line repeats its name: count cases only.
                if case == suite:
                    continue
                if ok:
                    passed += 1
                else:
                    failed += 1
                    detail.append(f"{suite}.{case} failed")
        unknown = sorted(s for s in got if s.startswith("cx4_") and s not in SUITES)
        if unknown:
            failed += 1
            detail.append(f"suites not listed in tests/kunit.py: {unknown}")
        if failed:
            detail.append(r.dmesg[-4000:])
        raise SubResults(passed, failed, "\n".join(detail))

    yield "KUnit: cx4's pure-logic suites pass when the module loads", kunit_suites_pass_when_cx4_loads
