"""The hostile card (issue 32): cx4 probes, moves Ethernet, RDMA and erasure-coding traffic
and tears down while the model lies to it (`lie` in Documentation/model.md: command outputs,
events, completions, init-segment reads, interrupt storms, phantom completions in its rings),
then loads honestly and works. Nothing may oops, trip KASAN/UBSAN/lockdep, hang or leak; the
lies and cx4's answers are tallied.

vm0 runs the driver under attack on its card; vm1 is an honest mlx5e peer on its own card.
`make test` runs a short campaign with fixed seeds; `make soak` a long one
(`CX4_FUZZ_SECONDS`, random seeds printed, a failing seed replays with `CX4_FUZZ_SEEDS`), and
the same campaign against mlx5_core/mlx5e/mlx5_ib for the record.
"""

from __future__ import annotations

import os
import random
import re
import sys
from dataclasses import dataclass, field

from ec_kernel import HOOK
from en import CX4_UP
from harness import BAD_DMESG, Env, describe, estimate, soak
from ib import CX4_IB
from model_eth import eth_vms, section

# One round of the campaign on vm0, `$1` the seed: probe, traffic and teardown each under
# their own lies, then whatever is left unloaded honestly and the tally printed. Every step
# has a timeout: a hang fails the round visibly instead of the whole VM.
ROUND = r"""
lie() { req ctl "lie seed=$1 rate=$RATE budget=$BUDGET classes=$2"; }
state() {
    NETDEV=$(ls /sys/bus/pci/devices/0000:01:00.0/net/ 2>/dev/null | head -1)
    IBDEV=$(ls /sys/bus/pci/devices/0000:01:00.0/infiniband/ 2>/dev/null | head -1)
    echo "state netdev=${NETDEV:-none} ib=${IBDEV:-none} bound=$(test -e $BOUND && echo 1 || echo 0)"
}
# Traffic on whatever the driver brought up, each result line prefixed by phase `$1`.
# Each phase of each round has its own iperf3 server on vm1: a client killed by its timeout
# leaves its server waiting for the test to end, busy for the next client.
PIX=0
traffic() {
    PORT=$((5201 + PIX)); PIX=$((PIX + 1))
    if [ -n "$NETDEV" ]; then
        timeout $((30 * SLOW)) ping -q -c 30 -i 0.05 -W 1 $PEER 2>&1 | grep transmitted \
            | sed "s/^/$1 ping: /" || true
        timeout $((40 * SLOW)) iperf3 -c $PEER -p $PORT -t 3 -f m 2>&1 | grep -E "receiver|error" \
            | sed "s/^/$1 iperf: /" || true
    fi
    if [ -n "$IBDEV" ] && grep -q ACTIVE /sys/class/infiniband/$IBDEV/ports/1/state 2>/dev/null; then
        GIDX=$(for f in /sys/class/infiniband/$IBDEV/ports/1/gids/*; do
                   grep -qi ffff:0a63:000$((me + 1)) $f && echo ${f##*/}; done | head -1)
        if [ -n "$GIDX" ]; then
            timeout $((40 * SLOW)) ibv_rc_pingpong -d $IBDEV -g $GIDX -n 40 > /tmp/rc-s.txt 2>&1 &
            sleep 1
            timeout $((40 * SLOW)) ibv_rc_pingpong -d $IBDEV -g $GIDX -n 40 127.0.0.1 2>&1 \
                | tail -1 | sed "s/^/$1 rc: /" || true
            wait || true
        fi
    fi
    EC_REQUEST
}
# Extra probe/teardown cycles before the round's own (the long campaign's: most of the card's
# commands are the probe's and the teardown's), each load and unload under its own lies.
cycles() {
    s=$1
    section cycles-$s
    for c in $(seq 2 $CYCLES); do
        lie $((s + 5000 + c)) cmd,bar,eqe,irq
        timeout $((180 * SLOW)) LOAD > /dev/null 2>&1; echo "cycle $c load rc=$?"
        sleep 1
        lie $((s + 7000 + c)) cmd,eqe,irq,bar
        timeout $((180 * SLOW)) UNLOAD > /dev/null 2>&1; echo "cycle $c unload rc=$?"
        req ctl "lie off"
        if lsmod | grep -q "^MODNAME "; then
            timeout $((180 * SLOW)) UNLOAD > /dev/null 2>&1 && echo "cycle $c honest unload ok"
        fi
        if lsmod | grep -q "^MODNAME "; then echo "still loaded after cycle $c"; fi
    done
}
round() {
    s=$1
    cycles $s
    section probe-$s
    lie $s cmd,bar,eqe,irq
    timeout $((180 * SLOW)) LOAD && echo "load ok" || echo "load failed rc=$?"
    sleep 2
    req ctl "lie off"
    state
    section traffic-$s
    # A probe the lies failed leaves nothing for the data path's lies: load honestly.
    if [ ! -e $BOUND ] || [ -z "$NETDEV" ]; then
        if lsmod | grep -q "^MODNAME "; then timeout $((180 * SLOW)) UNLOAD > /dev/null 2>&1; fi
        timeout $((180 * SLOW)) LOAD > /dev/null 2>&1 && echo "honest load ok" || echo "honest load failed"
        sleep 2
        state
    fi
    if [ -n "$NETDEV" ]; then
        ip link set "$NETDEV" up 2>&1 || true
        ip addr add $IP/24 dev "$NETDEV" 2>/dev/null || true
        sleep 1
    fi
    # The data path's lies alone (completions, phantoms), then the control path's (commands,
    # events, storms), then no lies: did the traffic come back without a reload?
    lie $((s + 1000)) cqe,ring
    for r in $(seq $REPEAT); do traffic data; done
    req ctl "lie off"
    lie $((s + 3000)) cmd,eqe,irq
    for r in $(seq $REPEAT); do traffic events; done
    req ctl "lie off"
    traffic after
    section diag-$s
    dmesg | grep -E "cx4|mlx5" | tail -25
    [ -n "$NETDEV" ] && ethtool -S "$NETDEV" 2>/dev/null | grep -E "err|drop|recover|timeout|arm|events" | grep -v ": 0$" | head -30
    cat /sys/kernel/debug/cx4/0000:01:00.0/cqs 2>/dev/null | tail -3
    section teardown-$s
    lie $((s + 2000)) cmd,eqe,irq,bar
    [ -n "$NETDEV" ] && ip link set "$NETDEV" down 2>/dev/null
    timeout $((180 * SLOW)) UNLOAD && echo "unload ok" || echo "unload failed rc=$?"
    req ctl "lie off"
    if lsmod | grep -q "^MODNAME "; then
        timeout $((180 * SLOW)) UNLOAD && echo "honest unload ok" || echo "honest unload failed rc=$?"
    fi
    lsmod | grep -q "^MODNAME " && echo "still loaded"
    section tally-$s
    req ctl lies
}
"""

# The end of a campaign: the card, lied to no more, loads and moves traffic; kmemleak (on by
# the command line) is asked what leaked.
FINAL = r"""
section final
timeout $((180 * SLOW)) LOAD && echo "load ok" || echo "load failed rc=$?"
state
if [ -n "$NETDEV" ]; then
    ip link set "$NETDEV" up; ip addr add $IP/24 dev "$NETDEV" 2>/dev/null || true
    for i in $(seq $((100 * SLOW))); do
        [ "$(cat /sys/class/net/$NETDEV/carrier 2>/dev/null)" = 1 ] && break; sleep 0.1
    done
    ping -c 3 -i 0.2 -W 2 $PEER > /dev/null 2>&1 && echo "final ping ok" || echo "final ping failed"
fi
timeout $((180 * SLOW)) UNLOAD && echo "final unload ok" || echo "final unload failed"
echo scan > /sys/kernel/debug/kmemleak; sleep 6; echo scan > /sys/kernel/debug/kmemleak
section kmemleak; cat /sys/kernel/debug/kmemleak
section end
signal done
"""

# How each driver under attack loads and unloads.
DRIVERS = {
    "cx4": dict(load="insmod /cx4/cx4.ko", unload="rmmod cx4", modname="cx4",
                ec="[ -e $DBG/ec ] && timeout $((60 * SLOW)) sh -c \"echo op=encode field=gf16 k=4 m=2 "
                   "len=16384 seed=7 mat=0101010101010101 > $DBG/ec\" 2>&1 | tail -1 "
                   "| sed \"s/^/$1 ec: /\" || true"),
    "mlx5": dict(load="modprobe mlx5_ib", unload="sh -c 'rmmod mlx5_ib; rmmod mlx5_core'",
                 modname="mlx5_core", ec=": no EC under mlx5"),
}

# Kernel reports that are the kernel's own answer to a lying card, not a driver bug: the TX
# watchdog of a queue whose completions the card withheld (a WARN with a trace, as for mlx5e).
ALLOWED_WARN = re.compile(r"dev_watchdog|sch_generic\.c|NETDEV WATCHDOG")


def kernel_reports(dmesg: str) -> list[str]:
    """The lines of `dmesg` that report a kernel problem (oops, KASAN, UBSAN, lockdep, hung
    task, a Rust panic, a WARN...), leaving out the allowed warnings with their traces."""
    bad, skipping, recent = [], False, []
    for line in dmesg.splitlines():
        if ALLOWED_WARN.search(line):
            skipping = True
        if skipping:
            if "---[ end trace" in line:
                skipping = False
            continue
        if BAD_DMESG.search(line) or re.search(
                r"possible circular locking|inconsistent lock state|hung_task|blocked for more "
                r"than", line):
            # A trace whose header no pattern names (an RCU stall, a soft lockup's cousins):
            # the lines before it say what it is.
            if "Call Trace" in line and not any(b in recent for b in bad[-8:]):
                bad += [f"  (before the trace) {r}" for r in recent[-8:]]
            bad.append(line)
        recent = (recent + [line])[-8:]
    return bad


@dataclass
class Tally:
    """What one campaign did: lies per class and per kind (the model's `lies` line), rounds,
    and how the driver answered."""
    lies: int = 0
    classes: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    rounds: int = 0
    bound: int = 0
    with_traffic: int = 0
    unloaded: int = 0
    honest_unloads: int = 0
    driver_errors: int = 0
    recovered: int = 0
    reports: list[str] = field(default_factory=list)

    def line(self, name: str) -> str:
        cls = " ".join(f"{c} {v}" for c, v in self.classes.items())
        return (f"{name}: {self.lies} lies in {self.rounds} rounds ({cls}); probes bound under lies "
                f"{self.bound}/{self.rounds}, unloads under lies {self.unloaded}/"
                f"{self.rounds} (+{self.honest_unloads} honest), traffic back after the lies without "
                f"a reload {self.recovered}/{self.with_traffic}, {self.driver_errors} driver error "
                f"lines, {len(self.reports)} kernel reports")


def parse_lies(line: str, t: Tally) -> None:
    """Fills `t` from the model's `lies` line (cumulative)."""
    m = re.search(r"total (\d+)((?: \w+ \d+/\d+)+); kinds(.*)", line)
    assert m, f"no tally in {line!r}"
    t.lies = int(m.group(1))
    t.classes = dict(re.findall(r" (\w+) (\d+/\d+)", m.group(2)))
    t.kinds = {k: int(v) for k, v in re.findall(r" ([\w-]+)=(\d+)", m.group(3))}


def campaign(env: Env, driver: str, seeds: list[int], rate: int, budget: int, cycles: int = 1,
             repeat: int = 1) -> tuple[Tally, object]:
    """Runs the rounds of `seeds` against `driver` ("cx4" or "mlx5") on vm0 and returns the
    tally and vm0's result. Each round makes `cycles` probe/teardown cycles under lies (the
    last with traffic between) and runs each lied traffic phase `repeat` times."""
    d = DRIVERS[driver]
    # The rounds, then FINAL: ROUND defines the functions, FINAL must run after the rounds.
    vm0 = CX4_UP + CX4_IB + HOOK + f"""
        RATE={rate}; BUDGET={budget}; CYCLES={cycles}; REPEAT={repeat}
        BOUND=/sys/bus/pci/drivers/{'cx4' if driver == 'cx4' else 'mlx5_core'}/0000:01:00.0
        echo clear > /sys/kernel/debug/kmemleak
    """ + ROUND.replace("UNLOAD", d["unload"]).replace("LOAD", d["load"]) \
        .replace("MODNAME", d["modname"]).replace("EC_REQUEST", d["ec"]) + """
        wait_signal peer
    """ + "".join(f"round {s}\n" for s in seeds) + FINAL.replace("UNLOAD", d["unload"]) \
        .replace("LOAD", d["load"])
    vm1 = """
        eth_up
        for p in $(seq 5201 $((5200 + PHASES * ROUNDS))); do iperf3 -s -D -p $p; done
        signal peer
        wait_signal done $((600 + PER_ROUND * ROUNDS))
    """.replace("ROUNDS", str(len(seeds))).replace("PHASES", str(2 * repeat + 1)) \
        .replace("PER_ROUND", str(300 + 60 * (cycles - 1) + 90 * (repeat - 1)))
    timeout = 300 + (240 + 60 * (cycles - 1) + 90 * (repeat - 1)) * len(seeds)
    r0, _ = eth_vms(env, [vm0, vm1], timeout=timeout, model_args=["--roce"],
                    files=[env.ko], cmdline="kmemleak=on")
    assert r0.status == 0, describe(r0)
    t = Tally(rounds=len(seeds))
    log = r0.job_log
    t.bound = sum(1 for s in seeds if "bound=1" in section(log, f"probe-{s}"))
    for s in seeds:
        tr = section(log, f"traffic-{s}")
        t.with_traffic += "data ping:" in tr
        t.recovered += bool(re.search(r"^after ping: \d+ packets transmitted, [1-9]", tr, re.M))
        td = section(log, f"teardown-{s}")
        t.unloaded += "\nunload ok" in "\n" + td
        t.honest_unloads += "honest unload ok" in td
        cy = section(log, f"cycles-{s}")
        assert "still loaded" not in td + cy, \
            f"round {s}: the driver could not be unloaded even honestly:\n{cy}{td}"
    parse_lies(section(log, f"tally-{seeds[-1]}").strip().splitlines()[-1], t)
    t.driver_errors = sum(1 for l in r0.dmesg.splitlines()
                          if re.search(rf"\b{d['modname'].split('_')[0]}", l)
                          and re.search(r"error|fail|timeout|bad|invalid|syndrome", l, re.I))
    t.reports = kernel_reports(r0.dmesg)
    mod = d["modname"].split("_")[0]
    # kmemleak's own dmesg line counts every leak; the ones whose trace names the driver are
    # its own (the others come with the boot, as in driver_core's cycles).
    t.reports += [f"kmemleak: {b.strip()[:600]}"
                  for b in section(log, "kmemleak").split("unreferenced object")[1:] if mod in b]
    return t, r0


def fuzz_seeds(default: list[int]) -> tuple[list[int], bool]:
    """The seeds to run: CX4_FUZZ_SEEDS (a replay), else `default`."""
    env_seeds = os.environ.get("CX4_FUZZ_SEEDS")
    if env_seeds:
        return [int(s) for s in env_seeds.replace(",", " ").split()], True
    return default, False


def tests(env: Env):
    @estimate(200)
    def cx4_survives_a_lying_card():
        """One round with a fixed seed (rate 40/1000, 300 lies per phase at most; 81-95 lies,
        every class, on 1f6b245 — `make soak` runs the many-seed campaign): probe,
        Ethernet/RDMA/EC traffic and teardown under lies, then an honest load that moves
        traffic; no kernel report, no hang, the model's tally shows every class lied."""
        seeds, _ = fuzz_seeds([101])
        t, r0 = campaign(env, "cx4", seeds, rate=40, budget=300)
        print("    " + t.line("cx4"), file=sys.stderr)
        for s in seeds:
            if os.environ.get("CX4_FUZZ_VERBOSE"):
                print(section(r0.job_log, f"diag-{s}"), file=sys.stderr)
            for line in section(r0.job_log, f"traffic-{s}").splitlines():
                if re.match(r"(data|events|after) ", line):
                    print(f"      {s} {line}", file=sys.stderr)
        assert not t.reports, "kernel reports under a lying card:\n" + "\n".join(t.reports[:30])
        fin = section(r0.job_log, "final")
        assert "load ok" in fin and "final ping ok" in fin and "final unload ok" in fin, \
            f"after the lies the card must work again:\n{fin}\n" + r0.dmesg[-4000:]
        for c in ("cmd", "eqe", "cqe", "bar", "irq", "ring"):
            told = int(t.classes.get(c, "0/0").split("/")[0])
            assert told > 0, f"class {c} never lied: {t.line('cx4')}"
        # The runner stops a model still serving with SIGTERM (-15) once QEMU is gone; a
        # model that died of the lies panicked (101) or was killed by a fault of its own.
        assert r0.model_rc in (0, None, -15) and "panicked" not in r0.model_log, \
            f"the model itself failed: rc {r0.model_rc}\n" + r0.model_log[-3000:]

    @soak
    def cx4_and_mlx5_campaigns():
        """The long campaign (CX4_FUZZ_SECONDS, default 1200; random seeds, printed) against
        cx4 and, for the record, the same seeds against mlx5_core/mlx5e/mlx5_ib; cx4 must
        stay clean, mlx5's tally is printed beside it."""
        secs = int(os.environ.get("CX4_FUZZ_SECONDS", "1200"))
        knobs = dict(rate=int(os.environ.get("CX4_FUZZ_RATE", "60")),
                     budget=int(os.environ.get("CX4_FUZZ_BUDGET", "600")),
                     cycles=int(os.environ.get("CX4_FUZZ_CYCLES", "1")),
                     repeat=int(os.environ.get("CX4_FUZZ_REPEAT", "1")))
        per_round = (120 + 20 * (knobs["cycles"] - 1) + 30 * (knobs["repeat"] - 1)) * env.slow
        n = max(2, int(secs / per_round / 2))
        seeds, replay = fuzz_seeds([random.randrange(1, 1 << 31) for _ in range(n)])
        print(f"    seeds ({'replay' if replay else 'random'}): {' '.join(map(str, seeds))}",
              file=sys.stderr)
        print(f"    knobs: {knobs}", file=sys.stderr)
        t, r0 = campaign(env, "cx4", seeds, **knobs)
        print("    " + t.line("cx4"), file=sys.stderr)
        m, _ = campaign(env, "mlx5", seeds, **knobs)
        print("    " + m.line("mlx5"), file=sys.stderr)
        for line in m.reports[:10]:
            print(f"      mlx5: {line}", file=sys.stderr)
        assert not t.reports, "kernel reports under a lying card:\n" + "\n".join(t.reports[:30])
        assert "final ping ok" in section(r0.job_log, "final"), section(r0.job_log, "final")

    yield "cx4 survives a lying card: probe, traffic, teardown under lies (fixed seeds)", \
        cx4_survives_a_lying_card
    yield "hostile card campaign, cx4 and mlx5 side by side (make soak)", cx4_and_mlx5_campaigns
