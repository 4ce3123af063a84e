"""The endurance soak (issue 32, part 5; `make soak` only): four cx4 VMs in two pairs for
`CX4_SOAK_SECONDS` (default 3600) with TCP (iperf3), RoCE (ibv_rc_pingpong to the partner)
and erasure coding (the kernel engine through the test hook) running all the time, the link
flapped now and then, and each VM unloading and reloading cx4 in its turn while the others
keep going. Afterwards every VM reaches every other, each pair moves RoCE, kmemleak finds
nothing of cx4's and the kernel reported nothing; each VM's log shows its work went on
through the whole run (no stall: every quarter of the run saw successful traffic).
Run it on the debug flavour: `CX4_KERNEL_FLAVOUR=debug make soak TESTS='endurance'`.
"""

from __future__ import annotations

import os
import re
import sys

from ec_kernel import HOOK
from en import CX4_UP
from harness import Env, describe, estimate, soak
from hostile import kernel_reports
from ib import CX4_IB
from model_eth import eth_vms, section

# Each VM: the partner is me ^ 1. A persistent RC server answers the partner's client; the
# loop does one unit of work per pass and logs a tagged line with the elapsed seconds.
VM = CX4_UP + CX4_IB + HOOK + r"""
peer=$((me ^ 1)); PEER=10.99.0.$((peer + 1))
echo clear > /sys/kernel/debug/kmemleak
cx4_up
cx4_ib_up
gidx() { for f in /sys/class/infiniband/$IBDEV/ports/1/gids/*; do
             grep -qi ffff:0a63:000$((me + 1)) $f && echo ${f##*/}; done | head -1; }
GIDX=$(gidx)
iperf3 -s -D
rc_server() {
    while [ ! -e /tmp/stop ]; do
        IBDEV=$(ls /sys/bus/pci/devices/0000:01:00.0/infiniband/ 2>/dev/null | head -1)
        G=$(gidx)
        if [ -n "$IBDEV" ] && [ -n "$G" ]; then
            timeout $((45 * SLOW)) ibv_rc_pingpong -d $IBDEV -g $G -n 50 > /dev/null 2>&1 || sleep 1
        else
            sleep 1
        fi
    done
}
rc_server &
signal up-$me
for v in 0 1 2 3; do wait_signal up-$v $((300 * SLOW)); done
START=$(date +%s); END=$((START + SECS))
RELOAD_AT=$((START + (me + 1) * SECS / 5))
reloaded=0; n=0
t() { echo "$(( $(date +%s) - START )) $*"; }
section loop
while [ $(date +%s) -lt $END ]; do
    n=$((n + 1))
    if [ $reloaded = 0 ] && [ $(date +%s) -ge $RELOAD_AT ]; then
        reloaded=1
        ip link set $IF down
        timeout $((180 * SLOW)) rmmod cx4 && t "unload ok" || t "unload FAILED rc=$?"
        sleep 2
        if cx4_up && cx4_ib_up; then t "reload ok"; else t "reload FAILED"; fi
        GIDX=$(gidx)
        continue
    fi
    case $((n % 5)) in
    0) timeout $((30 * SLOW)) iperf3 -c $PEER -t 5 -f m > /tmp/tcp.txt 2>&1 \
           && grep -q receiver /tmp/tcp.txt && t "tcp ok" || t "tcp failed: $(tail -1 /tmp/tcp.txt)" ;;
    1|3) timeout $((45 * SLOW)) ibv_rc_pingpong -d $IBDEV -g $GIDX -n 50 $PEER > /tmp/rc.txt 2>&1 \
           && t "rc ok" || t "rc failed: $(tail -1 /tmp/rc.txt)" ;;
    2) if timeout $((60 * SLOW)) sh -c "echo op=encode field=gf16 k=4 m=2 len=65536 seed=$n \
               mat=0102040801030507 > $DBG/ec" 2>/dev/null && grep -q '^ok' $DBG/ec; then
           t "ec ok"
       else
           t "ec failed"
       fi ;;
    4) if [ $(( $(od -An -N1 -tu1 /dev/urandom) % 4 )) = 0 ]; then
           ip link set $IF down; sleep 1; ip link set $IF up
           for i in $(seq $((300 * SLOW))); do
               [ "$(cat /sys/class/net/$IF/carrier 2>/dev/null)" = 1 ] && break; sleep 0.1
           done
           t "flap $(cat /sys/class/net/$IF/carrier)"
       else
           ping -q -c 20 -i 0.05 -W 1 $PEER > /dev/null 2>&1 && t "ping ok" || t "ping failed"
       fi ;;
    esac
done
section final
signal loopdone-$me
for v in 0 1 2 3; do wait_signal loopdone-$v $((600 * SLOW)); done
for v in 0 1 2 3; do
    [ $v = $me ] && continue
    ping -c 3 -i 0.2 -W 2 10.99.0.$((v + 1)) > /dev/null 2>&1 && echo "reach $v ok" || echo "reach $v failed"
done
timeout $((90 * SLOW)) ibv_rc_pingpong -d $IBDEV -g $GIDX -n 50 $PEER > /dev/null 2>&1 \
    && echo "final rc ok" || echo "final rc failed"
signal finaldone-$me
for v in 0 1 2 3; do wait_signal finaldone-$v $((300 * SLOW)); done
touch /tmp/stop
pkill ibv_rc_pingpong || true
section unload
ip link set $IF down
timeout $((180 * SLOW)) rmmod cx4 && echo "unload ok" || echo "unload failed"
echo scan > /sys/kernel/debug/kmemleak; sleep 6; echo scan > /sys/kernel/debug/kmemleak
section kmemleak; cat /sys/kernel/debug/kmemleak
section end
"""


def quarters(loop: str, secs: int) -> list[set[str]]:
    """The kinds of work that succeeded in each quarter of the run (from the loop's
    `SECONDS what ok` lines)."""
    q = [set() for _ in range(4)]
    for m in re.finditer(r"^(\d+) (\w+) ok$", loop, re.M):
        q[min(3, int(m.group(1)) * 4 // max(1, secs))].add(m.group(2))
    return q


def tests(env: Env):
    @soak
    @estimate(3900)
    def four_cx4_vms_for_an_hour():
        """Four cx4 VMs, TCP + RoCE + EC traffic, link flaps and a reload of cx4 on each VM in
        turn, for CX4_SOAK_SECONDS (default 3600): every kind of work succeeds in every
        quarter of the run on every VM, each reload works, every VM reaches every other and
        each pair moves RoCE at the end, cx4 unloads, kmemleak and the kernel report nothing."""
        secs = int(os.environ.get("CX4_SOAK_SECONDS", "3600"))
        script = VM.replace("SECS", str(secs))
        results = eth_vms(env, [script] * 4, timeout=secs / env.slow + 1200,
                          model_args=["--roce"], files=[env.ko], cmdline="kmemleak=on")
        problems = []
        for i, r in enumerate(results):
            if r.status != 0 or "=== end ===" not in r.job_log:
                problems.append(f"vm{i} did not finish: {describe(r)}")
                continue
            log = r.job_log
            loop = section(log, "loop")
            counts = {k: len(re.findall(rf"^\d+ {k} ok$", loop, re.M))
                      for k in ("tcp", "rc", "ec", "ping")}
            fails = len(re.findall(r"^\d+ [\w ]+ (failed|FAILED)", loop, re.M))
            print(f"    vm{i}: {counts}, {fails} failed units, "
                  f"{len(re.findall(r' flap 1$', loop, re.M))} flaps", file=sys.stderr)
            stalled = [n + 1 for n, q in enumerate(quarters(loop, secs)) if not {"tcp", "rc", "ec"} <= q]
            if stalled:
                problems.append(f"vm{i}: quarters {stalled} missed some work; the loop's end:\n"
                                + "\n".join(loop.splitlines()[-25:]) + "\n"
                                + "\n".join([l for l in r.dmesg.splitlines() if "cx4" in l][-15:]))
            if "reload ok" not in loop or "unload ok" not in loop:
                problems.append(f"vm{i}: the reload in turn failed:\n{loop[-1500:]}")
            fin = section(log, "final")
            if "failed" in fin:
                problems.append(f"vm{i}: final checks:\n{fin}")
            if "unload ok" not in section(log, "unload"):
                problems.append(f"vm{i}: cx4 would not unload at the end")
            problems += [f"vm{i}: {l}" for l in kernel_reports(r.dmesg)]
            problems += [f"vm{i} kmemleak: {b.strip()[:500]}" for b in
                         section(log, "kmemleak").split("unreferenced object")[1:] if "cx4" in b]
            if "TEARDOWN_HCA with objects alive" in r.model_log:
                problems.append(f"vm{i}: objects left on the card at teardown")
        assert not problems, "\n".join(problems[:40])

    yield "endurance: four cx4 VMs, TCP + RoCE + EC, flaps and reloads in turn (make soak)", \
        four_cx4_vms_for_an_hour
