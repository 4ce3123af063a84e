"""Driver core tests in a VM: command queue, bring-up and teardown, EQs on MSI-X, CQs, health,
and fault injection through the model (issue 4)."""

from __future__ import annotations

import json
import re
import socket
import textwrap
import threading
import time

from pathlib import Path

import vmrun
from harness import Env, retry_boot_race, check_clean_dmesg, describe, estimate, one_vm, soak

DBG = "/sys/kernel/debug/cx4/0000:01:00.0"
BOUND = "/sys/bus/pci/drivers/cx4/0000:01:00.0"
DEVLINK = "pci/0000:01:00.0"

# Every command of the probe path, by occurrence (opcode, nth): the second QUERY_PAGES and
# MANAGE_PAGES are the init-page ones, QUERY_HCA_CAP 1/2/3 are general max, general cur and
# the caps kept after INIT_HCA, CREATE_EQ 1..4 the command, async, pages and completion EQs.
PROBE_PATH = [
    ("ENABLE_HCA", 0x104, 1), ("QUERY_ISSI", 0x10a, 1), ("SET_ISSI", 0x10b, 1),
    ("QUERY_PAGES", 0x107, 1), ("MANAGE_PAGES", 0x108, 1), ("ACCESS_REG", 0x805, 1),
    ("QUERY_HCA_CAP", 0x100, 1), ("QUERY_HCA_CAP", 0x100, 2), ("SET_HCA_CAP", 0x109, 1),
    # The atomic caps, set to host endianness.
    ("QUERY_HCA_CAP", 0x100, 3), ("SET_HCA_CAP", 0x109, 2),
    ("QUERY_PAGES", 0x107, 2), ("MANAGE_PAGES", 0x108, 2), ("INIT_HCA", 0x102, 1),
    ("QUERY_HCA_CAP", 0x100, 4), ("ALLOC_UAR", 0x802, 1), ("CREATE_EQ", 0x301, 1),
    ("CREATE_EQ", 0x301, 2), ("CREATE_EQ", 0x301, 3), ("CREATE_EQ", 0x301, 4),
]

# Guest helper: ask the host (the test) to send one line to the model's control socket.
CTL = r"""
n=0
ctl() {
    n=$((n + 1))
    echo "$1" > /cx4/req-$n.tmp && mv /cx4/req-$n.tmp /cx4/req-$n
    # Not `i`: a shell function shares the caller's variables (the soak loop counts in `i`).
    for _try in $(seq 300); do
        if [ -e /cx4/rep-$n ]; then cat /cx4/rep-$n; return 0; fi
        sleep 0.1
    done
    echo "no answer from the host"; return 1
}
"""


def page_reports(model_log: str) -> list[str]:
    return [l for l in model_log.splitlines() if "page accounting" in l]


def assert_balanced(r: vmrun.VmResult, at_least: int = 1) -> None:
    reps = [l for l in page_reports(r.model_log) if "teardown" in l]
    assert len(reps) >= at_least, \
        f"expected {at_least} teardown page reports, saw:\n" + "\n".join(page_reports(r.model_log))
    bad = [l for l in page_reports(r.model_log) if "UNBALANCED" in l]
    assert not bad, "page accounting unbalanced:\n" + "\n".join(bad)


def section(job_log: str, name: str) -> str:
    """The lines the job printed after `=== name ===` up to the next such marker."""
    m = re.search(rf"^=== {re.escape(name)} ===\n(.*?)(?=^=== |\Z)", job_log, re.M | re.S)
    assert m, f"no section {name!r} in the job log:\n{job_log[-3000:]}"
    return m.group(1)


def devlink_json(job_log: str, name: str) -> dict:
    """The JSON `devlink -j ...` printed first in section `name` (one line)."""
    text = (section(job_log, name).strip().splitlines() or [""])[0]
    try:
        return json.loads(text)
    except ValueError:
        raise AssertionError(f"section {name!r} is not devlink JSON:\n{text}") from None


def fw_fatal(job_log: str, name: str) -> dict:
    """The fw_fatal reporter of 0000:01:00.0 in the `devlink -j health show` of section `name`."""
    j = devlink_json(job_log, name)
    reps = [r for r in j.get("health", {}).get(DEVLINK, []) if r.get("reporter") == "fw_fatal"]
    assert len(reps) == 1, f"{name}: expected one fw_fatal reporter of {DEVLINK}, saw {j}"
    return reps[0]


def diagnose(job_log: str, name: str) -> dict:
    """The pairs of the `devlink -j health diagnose` of section `name`."""
    j = devlink_json(job_log, name)
    assert isinstance(j, dict) and "state" in j, f"{name}: no state in the diagnosis {j}"
    return j


def debugfs_counter(text: str, pattern: str) -> int:
    m = re.search(pattern, text)
    assert m, f"{pattern!r} not found in:\n{text}"
    return int(m.group(1))


def _serve_control(share: Path, ctl: Path, stop: threading.Event) -> None:
    """Forwards the guest's requests (share/req-N) to the control socket (answers rep-N)."""
    n = 1
    sock = None
    while not stop.is_set():
        req = share / f"req-{n}"
        if not req.exists():
            time.sleep(0.05)
            continue
        line = req.read_text().strip()
        try:
            if sock is None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(str(ctl))
                sock.settimeout(10)
            sock.sendall((line + "\n").encode())
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = sock.recv(4096)
                if not chunk:
                    break
                reply += chunk
            answer = reply.decode(errors="replace").strip()
        except OSError as e:
            answer = f"error: control socket: {e}"
        tmp = share / f"rep-{n}.tmp"
        tmp.write_text(answer + "\n")
        tmp.rename(share / f"rep-{n}")
        n += 1
    if sock is not None:
        sock.close()


@retry_boot_race
def run_with_control(env: Env, script: str, model_args: list[str] | None = None,
                     timeout: float = 180, cmdline: str = "") -> vmrun.VmResult:
    """One VM whose job can drive the model's control socket through `ctl SPEC`."""
    spec = vmrun.VmSpec(name="vm0", model_args=list(model_args or []), cmdline=cmdline)
    with vmrun.Run(env.kdir, env.tree, env.model, [spec], log=lambda m: None) as run:
        ctl = run.dir / "vm0.ctl"
        spec.model_args += ["--control", str(ctl)]
        job = run.dir / "job.sh"
        job.write_text("set -e\n" + CTL + textwrap.dedent(script))
        run.put(job, "job.sh")
        run.put(env.ko)
        stop = threading.Event()
        t = threading.Thread(target=_serve_control, args=(run.share("vm0"), ctl, stop),
                             daemon=True)
        t.start()
        try:
            r = run.boot(timeout=timeout * env.slow)[0]
        finally:
            stop.set()
            t.join(5)
    return r


# Guest helper: wait until dmesg shows a line (grep pattern).
WAIT_FOR = r"""
wait_for() {
    for i in $(seq 150); do dmesg | grep -q "$1" && return 0; sleep 0.2; done
    echo "timed out waiting for: $1"; dmesg | tail -20; return 1
}
"""


def tests(env: Env):
    def bring_up_in_event_mode_with_eq_counters():
        r = one_vm(env, f"""
            insmod /cx4/cx4.ko
            test -e {BOUND}
            echo "=== cmds-before ==="; cat {DBG}/commands {DBG}/cmdq
            echo "=== eqs-before ==="; cat {DBG}/eqs
            echo "query 25" > {DBG}/selftest
            for i in 1 2 3 4; do echo "query 10" > {DBG}/selftest & done
            wait
            echo "=== cmds-after ==="; cat {DBG}/commands {DBG}/cmdq
            echo "=== eqs-after ==="; cat {DBG}/eqs
            echo "=== misc ==="; cat {DBG}/pages {DBG}/health
            grep -q '^log_max_qp = 18' {DBG}/caps
            echo "=== end ==="
            grep cx4 /proc/interrupts
            rmmod cx4
            echo unloaded
        """, files=[env.ko])
        assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        assert "command queue in event mode" in r.dmesg, r.dmesg[-2000:]
        rd = lambda n: section(r.job_log, n)
        before, after = rd("cmds-before"), rd("cmds-after")
        assert "mode event" in after, after
        ev0 = debugfs_counter(before, r"total \d+ commands: \d+ polled, (\d+) event")
        ev1 = debugfs_counter(after, r"total \d+ commands: \d+ polled, (\d+) event")
        assert ev1 - ev0 >= 65, f"expected >= 65 more event-mode commands:\n{before}\n{after}"
        issi = debugfs_counter(after, r"QUERY_ISSI\s+0x010a\s+(\d+)")
        assert issi >= 66, after
        e0 = debugfs_counter(rd("eqs-before"), r"eq \d+ Cmd: .* events (\d+)")
        e1 = debugfs_counter(rd("eqs-after"), r"eq \d+ Cmd: .* events (\d+)")
        assert e1 - e0 >= 65, f"command EQ events did not increase:\n{rd('eqs-after')}"
        i0 = debugfs_counter(rd("eqs-before"), r"vector 0 irqs (\d+)")
        i1 = debugfs_counter(rd("eqs-after"), r"vector 0 irqs (\d+)")
        assert i1 > i0, rd("eqs-after")
        assert re.search(r"eq \d+ Pages: .*PAGE_REQUEST=1", rd("eqs-after")), rd("eqs-after")
        assert "state ok" in rd("misc"), rd("misc")
        assert "cx4-ctrl" in r.job_log and "cx4-comp" in r.job_log, r.job_log
        check_clean_dmesg(r.dmesg)
        assert_balanced(r)
        assert "given 56, returned 56" in r.model_log, "boot + init + regular pages expected"

    @estimate(300)
    def insmod_rmmod_cycles():
        # 25 here; `make soak` runs 300 with recoveries.
        r = one_vm(env, f"""
            echo clear > /sys/kernel/debug/kmemleak
            for i in $(seq 25); do
                insmod /cx4/cx4.ko
                test -e {BOUND}
                echo "query 2" > {DBG}/selftest
                rmmod cx4
            done
            echo cycles-done
            echo scan > /sys/kernel/debug/kmemleak
            sleep 6
            echo scan > /sys/kernel/debug/kmemleak
            echo "=== kmemleak ==="
            cat /sys/kernel/debug/kmemleak
            echo "=== end ==="
        """, files=[env.ko], timeout=600, cmdline="kmemleak=on")
        assert r.status == 0 and "cycles-done" in r.job_log, describe(r)
        assert r.dmesg.count("command queue in event mode") == 25, r.dmesg[-3000:]
        assert r.dmesg.count("unbound") == 25, r.dmesg[-3000:]
        check_clean_dmesg(r.dmesg)
        assert_balanced(r, at_least=25)
        leaks = section(r.job_log, "kmemleak")
        ours = [b for b in leaks.split("unreferenced object") if "cx4" in b]
        assert not ours, "kmemleak found cx4 leaks:\n" + "\n".join(ours)[:3000]

    @estimate(150)
    def each_probe_command_failed_once():
        """One VM: for each command of the probe path in turn, the model fails its nth
        occurrence from then on (control socket); that probe fails cleanly, naming the command
        and its syndrome, pages balance, and the next probe works. One boot for all of them
        keeps this affordable on the debug kernel."""
        steps = []
        for i, (name, op, nth) in enumerate(PROBE_PATH):
            syn = 0x5a0000 + i
            steps.append(f"""
                dmesg -C
                echo "=== fault {i} ==="
                ctl "fail opcode={op:#x} nth={nth} status=0x3 syndrome={syn:#x}"
                # A failed probe does not fail insmod (the driver stays registered, unbound).
                insmod /cx4/cx4.ko
                if test -e {BOUND}; then echo "first probe unexpectedly succeeded"; fi
                rmmod cx4
                insmod /cx4/cx4.ko
                test -e {BOUND} && echo second-probe-ok
                rmmod cx4
                echo "--- dmesg"
                dmesg
            """)
        r = run_with_control(env, "".join(textwrap.dedent(x) for x in steps), timeout=600)
        assert r.status == 0, describe(r)
        failures = []
        for i, (name, op, nth) in enumerate(PROBE_PATH):
            syn = 0x5a0000 + i
            what = f"{name} #{nth}"
            try:
                out = section(r.job_log, f"fault {i}")
                assert "unexpectedly" not in out and "second-probe-ok" in out, out[-2000:]
                dmesg = out.split("--- dmesg", 1)[-1]
                msg = f"{name}({op:#x}) op_mod 0x"
                lines = [l for l in dmesg.splitlines() if msg in l and "failed" in l]
                assert lines, f"no failure message naming {msg}:\n{dmesg[-2000:]}"
                assert any(f"status BAD_PARAM_ERR(0x3) syndrome {syn:#x}" in l
                           for l in lines), "\n".join(lines)
                assert "probe failed" in dmesg, dmesg[-2000:]
                check_clean_dmesg(dmesg)
            except AssertionError as e:
                failures.append(f"--- {what}: {e}")
        assert not failures, "\n".join(failures)
        # A probe that got past ENABLE_HCA tears down with DISABLE_HCA, where the model
        # reports its page accounting; every second probe does.
        at_least = sum(1 if op == 0x104 else 2 for _, op, _ in PROBE_PATH)
        assert_balanced(r, at_least=at_least)
        check_clean_dmesg(r.dmesg)

    def stalled_command_times_out():
        # The firmware stops answering from INIT_HCA on. The teardown after the timeout sends
        # MANAGE_PAGES and DISABLE_HCA: the first gets the fenced (1 s) timeout, then the
        # command interface counts as unresponsive and DISABLE_HCA fails at once, so giving
        # up costs one timeout plus ~1 s, not one timeout per teardown command.
        r = one_vm(env, f"""
            t0=$(date +%s%N)
            insmod /cx4/cx4.ko cmd_timeout_ms=6000
            echo "insmod returned after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
            if test -e {BOUND}; then echo "probe succeeded?"; exit 1; fi
            rmmod cx4
            t0=$(date +%s)
            insmod /cx4/cx4.ko cmd_timeout_ms=1500
            if test -e {BOUND}; then echo "second probe succeeded?"; exit 1; fi
            rmmod cx4
            echo "second attempt returned after $(( $(date +%s) - t0 )) s"
            echo survived
        """, model_args=["--fault", "stall opcode=0x102"], files=[env.ko], timeout=240)
        assert r.status == 0 and "survived" in r.job_log, describe(r)
        assert "INIT_HCA(0x102) op_mod 0x0 timed out after 6000 ms" in r.dmesg, r.dmesg[-2000:]
        assert re.search(r"MANAGE_PAGES\(0x108\) op_mod 0x\w+ timed out after 1000 ms", r.dmesg), \
            "the teardown command after a timeout should get the fenced 1000 ms:\n" + r.dmesg[-2000:]
        assert "command interface unresponsive" in r.dmesg, r.dmesg[-2000:]
        assert "DISABLE_HCA(0x105) op_mod 0x0 timed out" not in r.dmesg, r.dmesg[-2000:]
        assert "probe failed: ETIMEDOUT" in r.dmesg, r.dmesg[-2000:]
        # From the probe's first line to its failure, in the guest kernel's own clock (the
        # shell's time would include loading the module, slow on a loaded host).
        stamp = lambda pat: float(re.search(r"\[\s*(\d+\.\d+)\][^\n]*" + pat, r.dmesg).group(1))
        ms = (stamp("probe failed: ETIMEDOUT") - stamp("firmware version")) * 1000
        assert ms < (6000 + 1000 + 2000) * env.slow, \
            f"probe took {ms:.0f} ms to give up (timeout 6000 + fenced 1000 expected)"
        check_clean_dmesg(r.dmesg)

    def fatal_health_syndrome_fails_commands_fast():
        r = run_with_control(env, f"""
            insmod /cx4/cx4.ko auto_recover=0
            test -e {BOUND}
            echo "query 3" > {DBG}/selftest
            ctl "health synd=5"
            # The health poll (2 s) marks the device failed, the watcher (1 s) then logs it.
            for i in $(seq 100); do
                dmesg | grep -q "automatic recovery is off" && break
                sleep 0.2
            done
            dmesg | grep "device in error state"
            grep "state error" {DBG}/health
            t0=$(date +%s%N)
            if echo "query 1" > {DBG}/selftest; then echo "command succeeded?"; exit 1; fi
            echo "failed command took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
            # The recovery watcher looks every second: let it see the error before the unbind.
            for i in $(seq 50); do
                dmesg | grep -q "automatic recovery is off" && break
                sleep 0.2
            done
            rmmod cx4
            ! test -e {BOUND}
            echo removed
        """)
        assert r.status == 0 and "removed" in r.job_log, describe(r)
        assert re.search(r"device in error state: Syndrome\(5\); health syndrome 0x5", r.dmesg), \
            r.dmesg[-2000:]
        ms = int(re.search(r"failed command took (\d+) ms", r.job_log).group(1))
        assert ms < 1000 * env.slow, f"a command on a failed device took {ms} ms"
        assert "automatic recovery is off" in r.dmesg, r.dmesg[-2000:]
        assert "recovered" not in r.dmesg, r.dmesg[-2000:]
        check_clean_dmesg(r.dmesg)

    def fatal_error_is_recovered_by_reset_and_reload():
        # A hardware fault that survives function resets: recovery attempts fail (the device
        # still reports it) until the fault is cleared, then the next reset + reload brings the
        # device back and commands work again.
        r = run_with_control(env, f"""
            wait_for() {{
                for i in $(seq 150); do dmesg | grep -q "$1" && return 0; sleep 0.2; done
                echo "timed out waiting for: $1"; dmesg | tail -20; return 1
            }}
            insmod /cx4/cx4.ko
            echo "query 2" > {DBG}/selftest
            ctl "health synd=0x8 persist=1"
            wait_for "fatal error (health syndrome 0x8"
            wait_for "recovery attempt 1 failed"
            sleep 2
            if test -e {DBG}/selftest; then echo "debugfs of a failed device still there?"; exit 1; fi
            ctl "clear"
            wait_for "recovered after"
            echo "query 5" > {DBG}/selftest
            echo "=== health ==="; cat {DBG}/health
            echo "=== end ==="
            test -e {BOUND}
            rmmod cx4
            echo recovered-and-removed
        """, timeout=240)
        assert r.status == 0 and "recovered-and-removed" in r.job_log, describe(r)
        d = r.dmesg
        order = ["device in error state: Syndrome(8)",
                 "fatal error (health syndrome 0x8: unrecoverable hardware error); recovering",
                 "recovery attempt 1 failed", "recovered after"]
        pos = [d.find(m) for m in order]
        assert all(p >= 0 for p in pos) and pos == sorted(pos), \
            f"expected in order {order}, positions {pos}:\n{d[-3000:]}"
        n = int(re.search(r"recovered after (\d+) attempt", d).group(1))
        assert n >= 2, f"recovered after {n} attempt(s): the persisting fault should fail the first"
        assert "state ok" in section(r.job_log, "health"), r.job_log
        assert d.count("HCA up:") >= 2, "the reload did not bring the HCA up again"
        assert r.model_log.count("device reset") >= 3, "expected a reset per recovery attempt"
        assert "persists across the reset" in r.model_log, r.model_log[-2000:]
        assert "fatal health syndrome cleared" in r.model_log, r.model_log[-2000:]
        teardown = [l for l in page_reports(r.model_log) if "teardown" in l]
        assert teardown and "UNBALANCED" not in teardown[-1], \
            "the final teardown must return every page:\n" + "\n".join(page_reports(r.model_log))
        check_clean_dmesg(d)

    def devlink_fw_fatal_reporter_tracks_fault_and_recovery():
        # The reporter as user space sees it: healthy; one error (and a diagnosis naming the
        # syndrome) while a fault persists across resets; healthy again with one recovery once
        # the fault clears and the watcher's retry brings the device back.
        r = run_with_control(env, WAIT_FOR + f"""
            insmod /cx4/cx4.ko
            echo "=== dev ==="; devlink -j dev show
            echo "=== healthy ==="; devlink -j health show {DEVLINK} reporter fw_fatal
            echo "=== diagnose-ok ==="; devlink -j health diagnose {DEVLINK} reporter fw_fatal
            ctl "health synd=0x8 persist=1"
            wait_for "recovery attempt 1 failed"
            echo "=== error ==="; devlink -j health show {DEVLINK} reporter fw_fatal
            echo "=== diagnose-error ==="; devlink -j health diagnose {DEVLINK} reporter fw_fatal
            echo "=== text ==="; devlink health show {DEVLINK} reporter fw_fatal
            devlink health diagnose {DEVLINK} reporter fw_fatal
            ctl "clear"
            wait_for "recovered after"
            echo "query 2" > {DBG}/selftest
            echo "=== recovered ==="; devlink -j health show {DEVLINK} reporter fw_fatal
            echo "=== diagnose-recovered ==="
            devlink -j health diagnose {DEVLINK} reporter fw_fatal
            echo "=== end ==="
            rmmod cx4
            echo "=== gone ==="; devlink -j dev show
            echo "=== end ==="
            echo devlink-done
        """, timeout=240)
        assert r.status == 0 and "devlink-done" in r.job_log, describe(r)
        log = r.job_log
        devs = devlink_json(log, "dev").get("dev", {})
        assert DEVLINK in devs, f"devlink dev show does not list {DEVLINK}: {devs}"
        assert DEVLINK not in devlink_json(log, "gone").get("dev", {}), \
            "the devlink instance outlived rmmod"

        ok = fw_fatal(log, "healthy")
        assert (ok["state"], ok["error"], ok["recover"]) == ("healthy", 0, 0), ok
        assert ok.get("auto_recover") is True, ok
        d = diagnose(log, "diagnose-ok")
        assert (d["state"], d["syndrome"], d["errors"]) == ("ok", "0x0", 0), d

        err = fw_fatal(log, "error")
        assert (err["state"], err["error"], err["recover"]) == ("error", 1, 0), \
            f"expected one error and no recovery while the fault persists: {err}"
        d = diagnose(log, "diagnose-error")
        assert d["state"] == "error" and d["syndrome"] == "0x8", d
        assert d["syndrome_name"] == "unrecoverable hardware error", d
        assert "health syndrome 0x8" in d["reason"], d
        assert d["errors"] == 1 and d["failed_attempts"] >= 1, d

        back = fw_fatal(log, "recovered")
        assert (back["state"], back["error"], back["recover"]) == ("healthy", 1, 1), \
            f"expected healthy with one error and one recovery: {back}"
        d = diagnose(log, "diagnose-recovered")
        assert (d["state"], d["recoveries"], d["errors"]) == ("ok", 1, 1), d
        check_clean_dmesg(r.dmesg)

    def devlink_recover_brings_back_a_device_left_failed():
        # auto_recover=0: devlink's automatic recovery is declined, the device stays failed
        # (commands fail fast) until user space asks: `devlink health recover`.
        r = run_with_control(env, WAIT_FOR + f"""
            insmod /cx4/cx4.ko auto_recover=0
            ctl "health synd=0x8"
            wait_for "automatic recovery is off"
            sleep 3
            echo "=== error ==="; devlink -j health show {DEVLINK} reporter fw_fatal
            if echo "query 1" > {DBG}/selftest; then echo "command succeeded?"; exit 1; fi
            devlink health recover {DEVLINK} reporter fw_fatal
            echo "=== recovered ==="; devlink -j health show {DEVLINK} reporter fw_fatal
            echo "=== end ==="
            echo "query 2" > {DBG}/selftest
            rmmod cx4
            echo recover-done
        """, timeout=240)
        assert r.status == 0 and "recover-done" in r.job_log, describe(r)
        err = fw_fatal(r.job_log, "error")
        assert (err["state"], err["error"], err["recover"]) == ("error", 1, 0), err
        back = fw_fatal(r.job_log, "recovered")
        assert (back["state"], back["error"], back["recover"]) == ("healthy", 1, 1), back
        assert "recovered after 1 attempt(s)" in r.dmesg, r.dmesg[-2000:]
        check_clean_dmesg(r.dmesg)

    def fatal_health_at_probe_fails_probe():
        # The fault is raised after the guest booted: a function reset clears the model's
        # health buffer, so `--fault health` at model start would not survive the boot.
        r = run_with_control(env, f"""
            ctl "health synd=5"
            insmod /cx4/cx4.ko cmd_timeout_ms=2000
            if test -e {BOUND}; then echo "probe succeeded?"; exit 1; fi
            rmmod cx4
            echo survived
        """)
        assert r.status == 0 and "survived" in r.job_log, describe(r)
        assert "device in error state: Syndrome(5)" in r.dmesg, r.dmesg[-2000:]
        check_clean_dmesg(r.dmesg)

    def cq_gets_completion_events():
        r = run_with_control(env, f"""
            insmod /cx4/cx4.ko
            echo cq > {DBG}/selftest
            cqn=$(dmesg | sed -n 's/.*selftest: CQ \\(0x[0-9a-f]*\\) armed.*/\\1/p' | tail -1)
            echo "test CQ $cqn"
            ctl "gen-cqe cqn=$cqn"
            sleep 1
            echo cq-poll > {DBG}/selftest
            ctl "gen-cqe cqn=$cqn"
            ctl "gen-cqe cqn=$cqn"
            sleep 1
            echo cq-poll > {DBG}/selftest
            # Moderation from the first completion: 4 ms or 3 CQEs, whichever comes first.
            echo "cq-moderate 4000 3 1" > {DBG}/selftest && echo moderation-accepted
            echo cq-poll > {DBG}/selftest
            # Two CQEs: the event waits for the period (the model's timer raises it).
            ctl "gen-cqe cqn=$cqn count=2"
            sleep 1
            echo cq-poll > {DBG}/selftest
            # Three: the third releases the event at once.
            ctl "gen-cqe cqn=$cqn count=3"
            sleep 1
            echo cq-poll > {DBG}/selftest
            ctl stats
            # Bad requests: an unknown period mode is refused by the driver, nothing sent.
            echo "cq-moderate 10 8 2" > {DBG}/selftest 2>/dev/null && echo "mode 2 accepted"
            cat {DBG}/cqs
            cat {DBG}/eqs
            echo cq-destroy > {DBG}/selftest
            rmmod cx4
            echo done
        """)
        assert r.status == 0 and "done" in r.job_log, describe(r)
        polls = re.findall(r"selftest: CQ 0x\w+ polled (\d+) CQEs, (\d+) events", r.dmesg)
        # One event per poll before moderation; then none for the empty poll, one for the two
        # CQEs held by the period, one for the three released by the count.
        assert polls == [("1", "1"), ("2", "2"), ("0", "2"), ("2", "3"), ("3", "4")], \
            f"CQE/event counts {polls}:\n{r.dmesg[-2000:]}"
        # QUERY_CQ: the device saw the consumer index the poll published, and the moderation.
        counters = re.findall(r"device: producer (\d+) consumer (\d+), moderation (\d+) us/(\d+) "
                              r"CQEs mode (\d+)", r.dmesg)
        assert counters == [("1", "1", "0", "0", "0"), ("3", "3", "0", "0", "0"),
                            ("3", "3", "4000", "3", "1"), ("5", "5", "4000", "3", "1"),
                            ("8", "8", "4000", "3", "1")], counters
        assert "moderation-accepted" in r.job_log and "mode 2 accepted" not in r.job_log, r.job_log
        # Both events of the moderated CQ were held back first (one by the period, one until
        # the count), as the model counts them.
        assert re.search(r"\bcq_moderated=2\b", r.job_log), r.job_log
        assert "MODIFY_CQ" not in "\n".join(l for l in r.dmesg.splitlines() if "failed" in l), \
            r.dmesg[-2000:]
        assert re.search(r"eq \d+ Comp\(0\): .* COMP=4", r.job_log), r.job_log
        check_clean_dmesg(r.dmesg)
        assert_balanced(r)

    def en_objects_accepted_by_the_model():
        """The Ethernet layer's object set (PD, TD, PA mkey, TIS, SQ, RQ, RSS RQT and TIRs,
        steering tables) is created, a broadcast frame is sent and completes without error,
        and everything is destroyed: the model ends with no object alive."""
        r = run_with_control(env, f"""
            insmod /cx4/cx4.ko
            echo en-objects > {DBG}/selftest
            echo en-objects > {DBG}/selftest
            ctl stats
            rmmod cx4
            echo done
        """, model_args=["--eth"])
        assert r.status == 0 and "done" in r.job_log, describe(r)
        runs = re.findall(r"selftest: en objects: .*send 0x\w+: (\d+) completed, (\d+) bad CQEs",
                          r.dmesg)
        assert runs == [("1", "0"), ("1", "0")], f"{runs}:\n{r.dmesg[-3000:]}"
        assert re.search(r"\((\d+) L2 entries with a multicast address\)", r.dmesg), r.dmesg[-2000:]
        alive = [l for l in r.model_log.splitlines() if "objects alive" in l]
        assert not alive, "the model still holds objects:\n" + "\n".join(alive)
        check_clean_dmesg(r.dmesg)
        assert_balanced(r)

    def two_cards_each_get_their_own_state_and_debugfs():
        r = one_vm(env, f"""
            insmod /cx4/cx4.ko
            for pci in 0000:01:00.0 0000:02:00.0; do
                test -e /sys/bus/pci/drivers/cx4/$pci
                test -e /sys/kernel/debug/cx4/$pci/commands
                echo "=== $pci ==="
                grep -E "^(ENABLE_HCA|INIT_HCA) " /sys/kernel/debug/cx4/$pci/commands
            done
            rmmod cx4
            ! test -e /sys/kernel/debug/cx4
            echo two-cards-done
        """, files=[env.ko], cards=2, timeout=180)
        assert r.status == 0 and "two-cards-done" in r.job_log, describe(r)
        for pci in ("0000:01:00.0", "0000:02:00.0"):
            sec = section(r.job_log, pci)
            assert re.search(r"^ENABLE_HCA\s+0x0104\s+1\s+0\b", sec, re.M), \
                f"{pci}: expected one successful ENABLE_HCA of its own, saw:\n{sec}"
        assert r.dmesg.count("firmware version") == 2, r.dmesg[-2000:]
        check_clean_dmesg(r.dmesg)
        assert_balanced(r, at_least=2)

    @soak
    def three_hundred_cycles_with_recoveries():
        # Soak: 300 load/unload cycles, every 30th with a fatal error recovered in between;
        # kmemleak must find nothing of cx4's and pages must balance at every teardown.
        r = run_with_control(env, f"""
            echo clear > /sys/kernel/debug/kmemleak
            for i in $(seq 300); do
                insmod /cx4/cx4.ko
                echo "query 2" > {DBG}/selftest
                if [ $((i % 30)) = 0 ]; then
                    ctl "health synd=0x1"
                    for k in $(seq 100); do
                        [ "$(dmesg | grep -c 'recovered after')" -ge $((i / 30)) ] && break
                        sleep 0.2
                    done
                    echo "query 2" > {DBG}/selftest
                fi
                rmmod cx4
            done
            echo cycles-done
            echo scan > /sys/kernel/debug/kmemleak; sleep 6
            echo scan > /sys/kernel/debug/kmemleak
            echo "=== kmemleak ==="; cat /sys/kernel/debug/kmemleak; echo "=== end ==="
        """, timeout=3600, cmdline="kmemleak=on")
        assert r.status == 0 and "cycles-done" in r.job_log, describe(r)
        assert r.dmesg.count("recovered after") == 10, r.dmesg[-3000:]
        check_clean_dmesg(r.dmesg)
        ours = [b for b in section(r.job_log, "kmemleak").split("unreferenced object") if "cx4" in b]
        assert not ours, "kmemleak found cx4 leaks:\n" + "\n".join(ours)[:3000]
        teardown = [l for l in page_reports(r.model_log) if "teardown" in l]
        assert len(teardown) >= 300 and not [l for l in teardown if "UNBALANCED" in l], \
            "\n".join(teardown[-5:])

    yield "bring-up completes, commands complete in event mode, EQ counters rise", \
        bring_up_in_event_mode_with_eq_counters
    yield "25 insmod/rmmod cycles: clean dmesg, no kmemleak, pages balanced", \
        insmod_rmmod_cycles
    yield "each probe command failed once: clean failure, pages balanced, reprobe works", \
        each_probe_command_failed_once
    yield "a stalled command times out and probe/rmmod return", stalled_command_times_out
    yield "fatal health syndrome: device in error, commands fail fast, remove works", \
        fatal_health_syndrome_fails_commands_fast
    yield "fatal health syndrome before probe fails the probe", fatal_health_at_probe_fails_probe
    yield "fatal error: reset + reload recovers once the fault clears", \
        fatal_error_is_recovered_by_reset_and_reload
    yield "devlink: fw_fatal reporter shows the error, diagnoses the syndrome, counts the recovery", \
        devlink_fw_fatal_reporter_tracks_fault_and_recovery
    yield "devlink: health recover brings back a device left failed (auto_recover=0)", \
        devlink_recover_brings_back_a_device_left_failed
    yield "soak: 300 load/unload cycles with 10 recoveries, no leaks", \
        three_hundred_cycles_with_recoveries
    yield "en objects: the Ethernet object set is accepted, a frame completes, all freed", \
        en_objects_accepted_by_the_model
    yield "two cards: each has its own state and debugfs directory", \
        two_cards_each_get_their_own_state_and_debugfs
    yield "CQ: armed CQ gets completion events, poll consumes CQEs, query/modify", \
        cq_gets_completion_events
