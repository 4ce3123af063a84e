"""Host-side checks: formatting, lints, unit tests of the Rust crates, the module under clippy."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import Env, SubResults, soak


# Module paths of the test hooks, as they appear in cx4.ko's (mangled) symbol names.
TEST_HOOKS = ["testhook", "selftest"]


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
        # Rebuild from scratch so every object is checked: first as `make module` builds it,
        # then with the test hooks the test bed adds. Both builds run whatever the first gives:
        # the second leaves the cx4.ko the VM suites load.
        subprocess.run(["make", "-s", "clean"], cwd=env.root, capture_output=True)
        problems = []
        for hooks in (False, True):
            argv = ["bash", "tools/testbed/module.sh", str(env.kdir), "CLIPPY=1"]
            argv += ["CX4_TEST_HOOKS=y"] if hooks else []
            r = _run(env, argv)
            out = r.stdout + r.stderr
            what = "with" if hooks else "without"
            if r.returncode != 0:
                problems.append(f"module build {what} test hooks failed:\n" + out[-4000:])
                continue
            warn = [l for l in out.splitlines() if re.search(r"\b(warning|error)\b", l)]
            if warn:
                problems.append(f"clippy/rustc warnings in the module {what} test hooks:\n" +
                                "\n".join(warn[-40:]))
            if not env.ko.exists():
                problems.append(f"cx4.ko was not produced {what} test hooks")
                continue
            # The hooks only tests use (the EC request file, the selftests) are in the module
            # exactly when asked for.
            syms = _run(env, ["nm", str(env.ko)]).stdout
            for hook in TEST_HOOKS:
                if (hook in syms) != hooks:
                    problems.append(f"{hook!r} {'missing from' if hooks else 'present in'} "
                                    f"cx4.ko built {what} CX4_TEST_HOOKS=y")
        assert not problems, "\n".join(problems)

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

    @soak
    def bench_report_from_sample_results():
        # report.py over what a bench saves (results.py): the Markdown table with its cells
        # formatted, n/m where nothing was measured, and a PNG per plot that has lines.
        sys.path.insert(0, str(env.root / "tools/bench"))
        from results import Results
        with tempfile.TemporaryDirectory() as d:
            os.environ["CX4_BENCH_DIR"] = d
            try:
                res = Results("ai", "Sample bench")
                res.table("all-reduce, ms", ["size", "tcp", "cx4", "tcp / cx4"],
                          [["1 KiB", 0.51234, float("nan"), None], ["64 MiB", 1234.5, 617.25, 2.0]],
                          show=False)
                res.note("How it was measured.")
                res.plot("allreduce", "All-reduce time", "bytes", "ms")
                res.plot("empty", "Nothing measured", "bytes", "ms")
                res.series("allreduce", "tcp", [(1024, 0.51234), (64 << 20, 1234.5)])
                res.series("allreduce", "cx4", [(1024, float("nan")), (64 << 20, 617.25)])
                res.series("empty", "cx4", [(1024, None)])
                res.save()
            finally:
                del os.environ["CX4_BENCH_DIR"]
            r = _run(env, ["python3", "tools/bench/report.py", "--dir", d])
            assert r.returncode == 0, "report.py failed:\n" + (r.stdout + r.stderr)[-3000:]
            md = (Path(d) / "report.md").read_text()
            for want in ("## Sample bench", "| size | tcp | cx4 | tcp / cx4 |",
                         "| 1 KiB | 0.512 | n/m | n/m |", "| 64 MiB | 1,234 | 617 | 2 |",
                         "How it was measured.", "![All-reduce time](allreduce.png)"):
                assert want in md, f"report.md lacks {want!r}:\n{md}"
            assert "empty.png" not in md and not (Path(d) / "empty.png").exists(), md
            png = (Path(d) / "allreduce.png").read_bytes()
            assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000, len(png)

    def docs_name_only_files_in_the_repo():
        r = _run(env, ["python3", "tools/lint/doc_paths.py"])
        assert r.returncode == 0, \
            "documentation names files that are not in the repository:\n" + r.stdout[-3000:]

    def cx4_layers_import_down_only():
        r = _run(env, ["python3", "tools/lint/layers.py"])
        assert r.returncode == 0, "cx4's layering rule (drivers/cx4/README.md) broken:\n" + \
            r.stdout[-3000:]

    def no_source_file_over_1000_lines():
        r = _run(env, ["python3", "tools/lint/sizes.py", "1000"])
        assert r.returncode == 0, "non-test source files over 1000 lines:\n" + r.stdout

    yield "rustfmt", rustfmt
    yield "clippy (workspace, warnings are errors)", clippy
    yield "cargo test (workspace)", cargo_test
    yield "libcx4ec field arithmetic = ISA-L, GF-Complete, Jerasure", cx4ec_field_arithmetic
    yield "VM runs retry only the early-boot IO-APIC race", boot_race_detector
    yield "bench report: Markdown table and plots from a bench's saved results", \
        bench_report_from_sample_results
    yield "docs name only files that are in the repository", docs_name_only_files_in_the_repo
    yield "cx4: the core imports no layer, en/ib/ec import no other layer", cx4_layers_import_down_only
    yield "no non-test source file over 1000 lines", no_source_file_over_1000_lines
    yield "cx4.ko builds under CLIPPY=1 with no warnings, with and without the test hooks", module_builds_clean_under_kernel_clippy
