"""Test-bed tests: the modelled card as the guest sees it, the driver skeleton, the runner."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import vmrun
from harness import (Env, check_clean_dmesg, describe, estimate, exclusive, leftovers, one_vm,
                     random_fw, run_vm)


def tests(env: Env):
    def guest_lists_the_card():
        r = one_vm(env, """
            lspci -nn -vv -d 15b3: > /cx4/lspci.txt
            cat /cx4/lspci.txt
        """)
        assert r.status == 0, describe(r)
        out = r.job_log
        assert re.search(r"Ethernet controller \[0200\]: .*\[15b3:1013\]", out), out
        assert re.search(r"Region 0: Memory at \w+ \(64-bit, prefetchable\) \[size=32M\]", out), out
        assert re.search(r"MSI-X: Enable\S+ Count=4 Masked", out), out
        assert "Express (v2) Endpoint" in out, out

    def lx_profile_is_15b3_1015():
        r = one_vm(env, "lspci -n -d 15b3:", model_args=["--chip", "cx4lx"])
        assert r.status == 0 and "15b3:1015" in r.job_log, describe(r)

    def insmod_logs_the_modelled_firmware_version():
        fw = random_fw()
        r = one_vm(env, """
            insmod /cx4/cx4.ko
            dmesg | grep cx4
            test -e /sys/bus/pci/drivers/cx4/0000:01:00.0
        """, model_args=["--fw-version", fw], files=[env.ko])
        assert r.status == 0, describe(r)
        lines = [l for l in r.dmesg.splitlines() if "firmware version" in l]
        assert lines, "no firmware version line:\n" + r.dmesg[-2000:]
        assert f"firmware version {fw}," in lines[0], f"expected {fw}, saw: {lines[0]}"
        assert "ConnectX-4:" in lines[0], lines[0]
        check_clean_dmesg(r.dmesg)

    def lx_binds_too():
        fw = random_fw(14)
        r = one_vm(env, "insmod /cx4/cx4.ko", model_args=["--chip", "cx4lx", "--fw-version", fw],
                   files=[env.ko])
        assert r.status == 0, describe(r)
        assert f"ConnectX-4 Lx: firmware version {fw}," in r.dmesg, r.dmesg[-2000:]

    @estimate(120)
    def twenty_insmod_rmmod_cycles():
        r = one_vm(env, """
            for i in $(seq 20); do
                insmod /cx4/cx4.ko
                test -e /sys/bus/pci/drivers/cx4/0000:01:00.0
                rmmod cx4
            done
            echo cycles-done
        """, files=[env.ko], timeout=240)
        assert r.status == 0 and "cycles-done" in r.job_log, describe(r)
        assert r.dmesg.count("firmware version") == 20, r.dmesg[-2000:]
        assert r.dmesg.count("unbound") == 20, r.dmesg[-2000:]
        check_clean_dmesg(r.dmesg)

    def unsupported_cmdif_revision_fails_probe():
        r = one_vm(env, """
            insmod /cx4/cx4.ko
            sleep 0.2
            ! test -e /sys/bus/pci/drivers/cx4/0000:01:00.0
            rmmod cx4
            echo survived
        """, model_args=["--cmdif-rev", "4"], files=[env.ko])
        assert r.status == 0 and "survived" in r.job_log, describe(r)
        assert "unsupported command interface revision 4 (driver supports 5)" in r.dmesg, r.dmesg[-2000:]
        assert "firmware version" not in r.dmesg
        check_clean_dmesg(r.dmesg)

    def stuck_initializing_bit_times_out():
        r = one_vm(env, """
            insmod /cx4/cx4.ko
            ! test -e /sys/bus/pci/drivers/cx4/0000:01:00.0
            rmmod cx4
        """, model_args=["--init-delay-ms", "600000"], files=[env.ko], timeout=180)
        assert r.status == 0, describe(r)
        assert "firmware stuck in initializing state" in r.dmesg, r.dmesg[-2000:]
        check_clean_dmesg(r.dmesg)

    def two_vms_share_an_l2_segment():
        rs = run_vm(env, """
            ip link set eth0 up
            me=$(hostname)
            if [ "$me" = vm0 ]; then ip addr add 10.99.0.1/24 dev eth0; peer=10.99.0.2;
            else ip addr add 10.99.0.2/24 dev eth0; peer=10.99.0.1; fi
            ok=0
            for i in $(seq 60); do ping -c1 -W1 $peer >/dev/null 2>&1 && { ok=1; break; }; done
            test $ok = 1
            echo reached $peer
        """, model=False, vms=2, net=True, timeout=180)
        for r in rs:
            assert r.status == 0, describe(r)

    @exclusive
    def runner_leaves_nothing_behind_after_timeout():
        before = leftovers()
        assert not before, "leftovers before the test: " + "; ".join(before)
        t0 = time.time()
        rs = run_vm(env, "sleep 1000", vms=2, net=True, timeout=20)
        assert all(r.status is None for r in rs), "the job should have been killed"
        # run_vm scales the timeout by the flavour's slowness (200 s on the debug kernel).
        took, limit = time.time() - t0, 20 * env.slow + 40
        assert took < limit, f"timeout not enforced: {took:.0f} s, limit {limit:.0f} s"
        assert all("timed out" in r.console for r in rs)
        # The report of a timed-out run says what the host looked like: its load and the
        # packet counters of the run's segment (the two VMs' TAPs and the bridge).
        for r in rs:
            assert "[host] loadavg" in r.console, r.console[-2000:]
            segment = re.findall(r"^\[segment\] (\S+):", r.console, re.M)
            assert {"br0", "tap0", "tap1"} <= set(segment), r.console[-2000:]
        after = leftovers()
        assert not after, "left behind: " + "; ".join(after)

    @exclusive
    def runner_leaves_nothing_behind_after_success():
        one_vm(env, "true")
        after = leftovers()
        assert not after, "left behind: " + "; ".join(after)

    @estimate(60)
    def make_shell_two_vms_ping_and_rc_pingpong():
        """`make shell VMS=2`, typed into by a program (vmrun.py --shell --drive: the same run,
        job and banner, the consoles driven instead of this terminal): after `insmod cx4.ko`
        each VM has eth0 with a carrier and cx4_0 ACTIVE, and the banner's own commands give
        the addresses, ping the other VM and run ibv_rc_pingpong between them."""
        up = {n: f"ip link set eth0 up; ip addr add 10.99.0.{n + 1}/24 dev eth0" for n in (0, 1)}
        server = "ibv_rc_pingpong -d cx4_0 -g $(gidx)"
        client = server + " 10.99.0.2"
        wait_up = ("for i in $(seq 100); do grep -qs 1 /sys/class/net/eth0/carrier && "
                   "rdma link | grep -q ACTIVE && break; sleep 0.1; done")
        steps = [f"vm{n}# {cmd}" for n in (0, 1) for cmd in (
            "insmod /cx4/cx4.ko", up[n], wait_up, "ip -br link", "rdma link")]
        steps += ["vm0# ping -c 3 10.99.0.2",
                  f"vm1# {server} > /tmp/server.txt 2>&1 &", "vm1# sleep 2",
                  f"vm0# {client}", "vm1# wait; cat /tmp/server.txt"]
        with tempfile.NamedTemporaryFile("w", suffix=".steps") as f:
            f.write("\n".join(steps) + "\n")
            f.flush()
            r = subprocess.run(
                [sys.executable, str(Path(vmrun.__file__)), "--shell", "--vms", "2",
                 "--kdir", str(env.kdir), "--tree", str(env.tree), "--model", str(env.model),
                 "--file", str(env.ko), "--timeout", str(240 * env.slow), "--drive", f.name],
                capture_output=True, text=True, timeout=400 * env.slow)
        out = r.stdout
        report = f"{out[-6000:]}\n{r.stderr[-2000:]}"
        assert r.returncode == 0, report

        def answer(vm: str, cmd: str) -> str:
            m = re.search(rf"^{vm}# {re.escape(cmd)}\n(.*?)^\[{vm}: exit (\d+)\]$", out,
                          re.M | re.S)
            assert m, f"no answer to {vm}# {cmd}:\n{report}"
            assert m.group(2) == "0", f"{vm}# {cmd} failed:\n{m.group(1)}"
            return m.group(1)
        # Every step answered; the first that failed is the one to look at.
        failed = re.search(r"^(vm\d# .*)\n(?:(?!vm\d# ).*\n)*?\[vm\d: exit [1-9]\d*\]$", out, re.M)
        assert not failed, f"failed: {failed.group(0)[-3000:]}\n{report}"
        # The banner names the commands run here, each VM its own address.
        for n in (0, 1):
            assert f"cx4 shell on vm{n}" in out and f"then:           {up[n]}" in out, report
        for line in ("vm0# ping -c 3 10.99.0.2", f"vm1# {server}", f"vm0# {client}"):
            assert line in out.split("vm0# insmod")[0], f"banner lacks {line!r}:\n{report}"
        for vm in ("vm0", "vm1"):
            assert re.search(r"^eth0\s+UP\s.*LOWER_UP", answer(vm, "ip -br link"), re.M), report
            assert re.search(r"^link cx4_0/1 state ACTIVE .*netdev eth0", answer(vm, "rdma link"),
                             re.M), report
        assert re.search(r"^3 packets transmitted, 3 received",
                         answer("vm0", "ping -c 3 10.99.0.2"), re.M), report
        for text in (answer("vm0", client), answer("vm1", "wait; cat /tmp/server.txt")):
            assert re.search(r"^\d+ bytes in [\d.]+ seconds", text, re.M) and \
                re.search(r"^1000 iters in", text, re.M), report

    yield "guest lists 15b3:1013 with a 32M 64-bit BAR0, MSI-X and PCIe", guest_lists_the_card
    yield "ConnectX-4 Lx profile presents 15b3:1015", lx_profile_is_15b3_1015
    yield "insmod binds and logs the modelled firmware version", insmod_logs_the_modelled_firmware_version
    yield "cx4 binds the ConnectX-4 Lx", lx_binds_too
    yield "20 insmod/rmmod cycles, clean dmesg", twenty_insmod_rmmod_cycles
    yield "unsupported cmdif revision makes probe fail cleanly", unsupported_cmdif_revision_fails_probe
    yield "stuck initializing bit makes probe time out cleanly", stuck_initializing_bit_times_out
    yield "two VMs reach each other on the runner's L2 segment", two_vms_share_an_l2_segment
    yield "runner leaves nothing behind after a timeout", runner_leaves_nothing_behind_after_timeout
    yield "runner leaves nothing behind after a run", runner_leaves_nothing_behind_after_success
    yield "make shell VMS=2: eth0 with carrier, cx4_0 ACTIVE, ping and ibv_rc_pingpong between the VMs", \
        make_shell_two_vms_ping_and_rc_pingpong
