"""Shared helpers of the cx4 tests: the environment, VM runs, dmesg checks, leak checks."""

from __future__ import annotations

import functools
import os
import random
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import vmrun


@dataclass
class Env:
    root: Path
    kdir: Path
    tree: Path
    model: Path
    flavour: str = "default"

    @property
    def slow(self) -> float:
        """How much slower the guest runs than on the default kernel (KASAN, lockdep).

        Measured under TCG on 2 cores: the debug kernel boots in ~200 s against ~7 s, and
        commands and traffic in the guest run 5-30x slower; 10 covers a test whose time is
        not all boot."""
        return 10.0 if self.flavour == "debug" else 1.0

    @property
    def ko(self) -> Path:
        return self.root / "cx4.ko"


def exclusive(fn):
    """Marks a test that must run alone (it inspects the whole machine or measures time)."""
    fn.exclusive = True
    return fn


def soak(fn):
    """Marks a long-running test: run by `make soak`, not by `make test`."""
    fn.soak = True
    return fn


def estimate(seconds: float):
    """Declares a test's expected duration; the runner starts the longest first."""
    def mark(fn):
        fn.estimate = seconds
        return fn
    return mark


def retry_boot_race(fn):
    """Runs a VM-booting helper once more if a guest died in the early-boot IO-APIC race
    (VmResult.early_boot_race) before its job started; the retry is written to stderr so the
    run's log shows it. Any other failure is returned as it is."""
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        res = fn(*a, **kw)
        rs = res if isinstance(res, list) else [res]
        if any(r.early_boot_race for r in rs):
            sys.stderr.write(f"note: {fn.__name__}: a guest died in IO-APIC set-up before its "
                             "job ran (TCG early-boot race); booting once more\n")
            res = fn(*a, **kw)
        return res
    return wrapper


class SubResults(Exception):
    """Raised by a test step that stands for several counted tests."""

    def __init__(self, passed: int, failed: int, detail: str = ""):
        super().__init__(f"{passed} passed, {failed} failed")
        self.passed, self.failed, self.detail = passed, failed, detail


# Kernel messages that mean something went wrong, whatever the test.
BAD_DMESG = re.compile(r"(WARNING:|BUG:|Oops|general protection|Call Trace|kernel panic|"
                       r"UBSAN|KASAN|refcount_t|list_add corruption|rust_panic|panicked at)")


def check_clean_dmesg(dmesg: str) -> None:
    bad = [l for l in dmesg.splitlines() if BAD_DMESG.search(l)]
    assert not bad, "kernel reported problems:\n" + "\n".join(bad[:20])


@retry_boot_race
def run_vm(env: Env, script: str, *, model: bool = True, model_args: list[str] | None = None,
           files: list[Path] | None = None, timeout: float = 120, cmdline: str = "",
           vms: int = 1, net: bool = False, cards: int = 1) -> list[vmrun.VmResult]:
    """Boots `vms` VMs running `script` (sh) and returns their results."""
    specs = [vmrun.VmSpec(name=f"vm{i}", model=model, model_args=list(model_args or []), cards=cards,
                          cmdline=cmdline, mac=f"52:54:00:c4:00:{i + 1:02x}" if net else None)
             for i in range(vms)]
    timeout *= env.slow
    with vmrun.Run(env.kdir, env.tree, env.model if model else None, specs, net=net,
                   log=lambda m: None) as run:
        job = run.dir / "job.sh"
        job.write_text("set -e\n" + textwrap.dedent(script))
        run.put(job, "job.sh")
        for f in files or []:
            run.put(f)
        # Logs, dmesg and the job's output are read into the results; the share directory
        # itself goes with the run.
        return run.boot(timeout=timeout)


def one_vm(env: Env, script: str, **kw) -> vmrun.VmResult:
    return run_vm(env, script, **kw)[0]


_COUNTER = re.compile(r"^\s*[\w.:\[\]-]+: -?\d+\s*$")


def compact(log: str) -> str:
    """A log with each run of more than eight counter lines (`name: N`, as `ethtool -S` prints
    them) folded into one line: a failure's tail then shows where the job was, not counters."""
    out, run = [], []
    for line in log.splitlines() + [""]:
        if _COUNTER.match(line):
            run.append(line)
            continue
        out += run if len(run) <= 8 else [f"[{len(run)} counter lines: {run[0].strip()} ...]"]
        run = []
        out.append(line)
    return "\n".join(out[:-1])


def describe(r: vmrun.VmResult) -> str:
    sections = re.findall(r"^=== (\S+) ===$", r.job_log, re.M)
    return (f"status={r.status}, sections reached: {' '.join(sections) or '-'}\n"
            f"--- job log (tail) ---\n{compact(r.job_log)[-3000:]}\n"
            f"--- model log (tail) ---\n{r.model_log[-2000:]}\n"
            f"--- console (tail) ---\n{r.console[-2500:]}")


def random_fw(major: int = 12) -> str:
    return f"{major}.{random.randint(10, 40)}.{random.randint(1000, 9999)}"


def _owned_by(pid: str, owner: int) -> bool:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"CX4_RUN_OWNER={owner}".encode() in env


def leftovers(owner: int | None = None) -> list[str]:
    """Processes, mounts, network namespaces and sockets a run must not leave behind.

    Only what runners of process `owner` (default: this one) started is considered, so the
    check holds while other runs share the machine."""
    owner = os.getpid() if owner is None else owner
    tag = f"cx4-run-{owner}-"
    found = []
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    for line in ps.splitlines()[1:]:
        pid, _, args = line.strip().partition(" ")
        if re.search(r"qemu-system|cx4-model|unshare", args) and _owned_by(pid, owner):
            found.append(f"process {pid}: {args[:100]}")
    for line in Path("/proc/self/mounts").read_text().splitlines():
        # QEMU's binds live in its private mount namespace; none may reach the host's.
        if tag in line or "/var/cache/cx4/guest" in line:
            found.append(f"mount: {line}")
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [f"netns: {l}" for l in ns.splitlines() if l.startswith(f"{vmrun.NETNS_PREFIX}{owner}-")]
    found += [f"run dir: {p}" for p in Path("/tmp").glob(tag + "*")]
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        if tag in line:
            found.append(f"socket: {line.split()[-1]}")
    return found
