"""Host-side checks: formatting, lints, unit tests of the Rust crates, the module under clippy."""

from __future__ import annotations

import re
import subprocess

from harness import Env, SubResults


def _run(env: Env, argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=env.root, text=True, capture_output=True, **kw)


def tests(env: Env):
    def rustfmt():
        r = _run(env, ["cargo", "fmt", "--all", "--check"])
        assert r.returncode == 0, "cargo fmt --check found unformatted code:\n" + r.stdout[-3000:]

    def clippy():
        r = _run(env, ["cargo", "clippy", "--locked", "--workspace", "--all-targets", "--",
                       "-D", "warnings"])
        assert r.returncode == 0, "clippy:\n" + r.stderr[-4000:]

    def cargo_test():
        r = _run(env, ["cargo", "test", "--locked", "--workspace", "--no-fail-fast"])
        out = r.stdout + r.stderr
        passed = sum(int(m) for m in re.findall(r"test result: \w+\. (\d+) passed", out))
        failed = sum(int(m) for m in re.findall(r"; (\d+) failed", out))
        if r.returncode != 0 and failed == 0:
            failed = 1  # a build failure counts as one failure
        detail = "\n".join(l for l in out.splitlines()
                           if "FAILED" in l or "panicked" in l or l.startswith("error"))
        raise SubResults(passed, failed, detail or out[-3000:])

    def module_builds_clean_under_kernel_clippy():
        # Rebuild from scratch so every object is checked.
        subprocess.run(["make", "-s", "clean"], cwd=env.root, capture_output=True)
        r = _run(env, ["bash", "tools/testbed/module.sh", str(env.kdir), "CLIPPY=1", "CX4_TEST_HOOKS=y"])
        out = r.stdout + r.stderr
        assert r.returncode == 0, "module build failed:\n" + out[-4000:]
        warn = [l for l in out.splitlines() if re.search(r"\b(warning|error)\b", l)]
        assert not warn, "clippy/rustc warnings in the module:\n" + out[-4000:]
        assert env.ko.exists(), "cx4.ko was not produced"

    def cx4ec_field_arithmetic():
        # libcx4ec's host-side GF code (decoding matrices, Cauchy matrices, table layout)
        # against ISA-L and GF-Complete/Jerasure; the card's side is the VM suite ec_user.
        r = _run(env, ["make", "-s", "-C", "tools/cx4ec", "check"])
        out = r.stdout + r.stderr
        assert r.returncode == 0 and re.search(r"^\d+ checks passed$", r.stdout, re.M), \
            "tools/cx4ec gf_check:\n" + out[-3000:]

    def boot_race_detector():
        import vmrun
        race = ("[    0.015000] RIP: 0010:mp_irqdomain_alloc+0xcf/0x2b0\n"
                "[    0.015000]  mp_map_pin_to_irq+0x1ed/0x3a0\n"
                "[    0.015000]  setup_IO_APIC+0x22d/0x8b0\n"
                "[    0.015000] Kernel panic - not syncing: Fatal exception in interrupt\n")
        other = ("[   12.100000] RIP: 0010:cx4_probe+0x10/0x80\n"
                 "[   12.100000] Kernel panic - not syncing: Fatal exception\n")
        r = lambda console, status=None, job="": vmrun.VmResult(
            "vm0", status, console, job, "", "", None, env.root, 1.0)
        assert r(race).early_boot_race
        assert not r(other).early_boot_race, "a panic elsewhere must not be retried"
        assert not r(race, job="=== started ===\n").early_boot_race, "the job had started"
        assert not r(race, status=0).early_boot_race

    yield "rustfmt", rustfmt
    yield "clippy (workspace, warnings are errors)", clippy
    yield "cargo test (workspace)", cargo_test
    yield "libcx4ec field arithmetic = ISA-L, GF-Complete, Jerasure", cx4ec_field_arithmetic
    yield "VM runs retry only the early-boot IO-APIC race", boot_race_detector
    yield "cx4.ko builds under CLIPPY=1 with no warnings", module_builds_clean_under_kernel_clippy
