"""cx4's EC engine as a DMA engine (drivers/cx4/ec/dma.rs over drivers/dmaengine/,
Documentation/ec.md): dmatest through the channel (memcpy, XOR, P+Q, every result verified by
dmatest), async_tx's own RAID-6 self-test (raid6test: P+Q generation, every one- and two-disk
recovery and validation for 4 to 64 disks) and md RAID-6 over five loop disks — written, two
disks failed, read degraded, rebuilt, scrubbed (`check`: P+Q validation) — with the card doing
the work (the channel's counters in the debugfs `ec` file and the model's vector-calc count) and
an injected engine error retried without loss. On the ConnectX-4 profile (no GF(2^8) matrices)
the channel offers copy and XOR only, says in dmesg why md will not use it, and md does not."""

from __future__ import annotations

import re
import sys

from ec_kernel import run
from harness import Env, estimate
from model_eth import section

# Guest helpers: the channel's name; dmatest over it; the channel's counters.
DMA = r"""
chan() { sed -n 's/^dma chan //p' $DBG/ec; }
dmacount() { grep '^dma ' $DBG/ec; }
dmatest_run() {  # iterations, then the module parameters of one run
    modprobe dmatest timeout=60000 iterations=$1 test_buf_size=16384 verbose=0
    shift
    for p in "$@"; do echo "${p#*=}" > /sys/module/dmatest/parameters/${p%%=*}; done
    echo "$CHAN" > /sys/module/dmatest/parameters/channel
    echo 1 > /sys/module/dmatest/parameters/run
    cat /sys/module/dmatest/parameters/wait > /dev/null
    rmmod dmatest
    dmesg | grep 'dmatest: .*summary' | tail -5 || true
}
"""

# md RAID-6 over five 24 MiB loop disks in tmpfs, 32 MiB of random data.
MD = r"""
mkdir -p /tmp/md
for i in 0 1 2 3 4 5 6; do
    truncate -s 24M /tmp/md/d$i
    losetup /dev/loop$i /tmp/md/d$i
done
head -c 32M /dev/urandom > /tmp/md/data
sum0=$(md5sum < /tmp/md/data)
md_wait() { for i in $(seq 600); do
    grep -q 'resync\|recovery\|check' /proc/mdstat || return 0; sleep 1; done
    echo "md: still busy"; cat /proc/mdstat; return 1; }
section md-create
mdadm --create /dev/md0 --run --level=6 --raid-devices=5 --chunk=64 /dev/loop[0-4] 2>&1
md_wait
cat /proc/mdstat
dd if=/tmp/md/data of=/dev/md0 bs=1M oflag=direct status=none
sync
echo 3 > /proc/sys/vm/drop_caches
section md-read
[ "$(head -c 32M /dev/md0 | md5sum)" = "$sum0" ] && echo "md: data ok"
section md-degraded
mdadm /dev/md0 --fail /dev/loop1 --fail /dev/loop3 2>&1
mdadm /dev/md0 --remove /dev/loop1 --remove /dev/loop3 2>&1
echo 3 > /proc/sys/vm/drop_caches
[ "$(head -c 32M /dev/md0 | md5sum)" = "$sum0" ] && echo "md: degraded data ok"
section md-rebuild
mdadm /dev/md0 --add /dev/loop5 --add /dev/loop6 2>&1
sleep 1; md_wait
cat /proc/mdstat
echo 3 > /proc/sys/vm/drop_caches
[ "$(head -c 32M /dev/md0 | md5sum)" = "$sum0" ] && echo "md: rebuilt data ok"
section md-check
echo check > /sys/block/md0/md/sync_action
sleep 1; md_wait
echo "mismatch_cnt $(cat /sys/block/md0/md/mismatch_cnt)"
section md-fault
req ctl ec-error count=2
head -c 8M /dev/urandom > /tmp/md/data2
dd if=/tmp/md/data2 of=/dev/md0 bs=1M seek=8 oflag=direct status=none
sync
echo check > /sys/block/md0/md/sync_action
sleep 1; md_wait
echo "mismatch_cnt $(cat /sys/block/md0/md/mismatch_cnt)"
echo 3 > /proc/sys/vm/drop_caches
[ "$(dd if=/dev/md0 bs=1M skip=8 count=8 status=none | md5sum)" = "$(md5sum < /tmp/md/data2)" ] \
    && echo "md: data after fault ok"
section md-stop
mdadm --stop /dev/md0 2>&1
"""

# After cx4 is gone (and with it the channel): the same array assembled again, md's scrub now
# computing P and Q with the kernel's own raid6 library (lib/raid6, async_tx's CPU path) over
# everything the card wrote, and the data read back through it.
MD_CPU = r"""
section md-cpu
ls /sys/class/dma/ 2>/dev/null | grep . && echo "a DMA channel is still there"
modprobe raid456
mdadm --assemble /dev/md0 /dev/loop0 /dev/loop2 /dev/loop4 /dev/loop5 /dev/loop6 2>&1
md_wait
cat /proc/mdstat
echo check > /sys/block/md0/md/sync_action
sleep 1; md_wait
echo "mismatch_cnt $(cat /sys/block/md0/md/mismatch_cnt)"
echo 3 > /proc/sys/vm/drop_caches
[ "$(head -c 8M /dev/md0 | md5sum)" = "$(head -c 8M /tmp/md/data | md5sum)" ] && \
[ "$(dd if=/dev/md0 bs=1M skip=8 count=8 status=none | md5sum)" = "$(md5sum < /tmp/md/data2)" ] && \
[ "$(dd if=/dev/md0 bs=1M skip=16 count=16 status=none | md5sum)" = \
  "$(dd if=/tmp/md/data bs=1M skip=16 count=16 status=none | md5sum)" ] && echo "md: cpu data ok"
mdadm --stop /dev/md0 2>&1
for i in 0 1 2 3 4 5 6; do losetup -d /dev/loop$i; done
"""

# Everything that holds the channel (async_tx pins it and so cx4) goes before cx4 is unloaded.
UNLOAD = r"""
section unload-async
for m in raid456 async_raid6_recov async_pq async_xor async_memcpy async_tx; do
    rmmod $m 2>/dev/null || true
done
lsmod | grep -E '^async_|^raid456' || echo "async_tx unloaded"
"""


def counts(text: str) -> dict[str, int]:
    """The `dma ...` counter line of the debugfs `ec` file."""
    m = re.search(r"^dma (interrupt .*)$", text, re.M)
    assert m, f"no dma counter line:\n{text}"
    w = m.group(1).split()
    return {w[i]: int(w[i + 1]) for i in range(0, len(w), 2)}


def summaries(log: str, name: str) -> dict[str, tuple[int, int]]:
    """dmatest's summaries in a section: thread kind -> (tests, failures)."""
    out = {}
    for kind, t, f in re.findall(r"dmatest: \S+-(copy|xor|pq)\d+: summary (\d+) tests, (\d+) failures",
                                 section(log, name)):
        out[kind] = (int(t), int(f))
    return out


def model_calcs(log: str) -> int:
    m = re.search(r"ec: (\d+) calcs", section(log, "roce"))
    assert m, section(log, "roce")
    return int(m.group(1))


def tests(env: Env):
    @estimate(600)
    def dmaengine_8bit_md_raid6():
        """`--ec-8bit`: the channel offers all six operations (dmesg); dmatest copy, XOR (8
        sources) and P+Q (7 sources) pass with every result verified; raid6test's 2429 tests
        pass through the channel; md RAID-6 on five loop disks keeps 32 MiB of data through
        creation, a two-disk failure (degraded reads), the rebuild and a scrub (mismatch_cnt
        0); two injected engine errors are retried (counted, nothing aborted) and the data and
        parity stay right; the channel's counters and the model's calculation count prove the
        card did the work; async_tx and cx4 unload cleanly; then, without cx4, md's scrub with
        the kernel's raid6 library finds every P and Q the card wrote right (mismatch_cnt 0)
        and the data reads back."""
        body = DMA + r"""
            CHAN=$(chan)
            section chan; echo "chan $CHAN"; dmesg | grep 'EC dmaengine' || true
            section dmatest
            dmatest_run 40 xor_sources=8 pq_sources=7
            section after-dmatest; dmacount
            section raid6test
            modprobe raid6test
            dmesg | grep 'raid6test: complete' || true
            dmesg | grep 'raid6test: ' | grep -v ' OK$\|testing the\|complete\|raid6test: $' | head -20 || true
            rmmod raid6test
            section after-raid6test; dmacount
        """ + MD + r"""
            section after-md; dmacount
        """ + UNLOAD
        r = run(env, ["--ec-8bit"], body, after=MD_CPU)
        log = r.job_log
        assert re.search(r"EC dmaengine dma\d+chan\d+: memcpy xor xor_val pq pq_val interrupt",
                         r.dmesg), r.dmesg[-3000:]
        s = summaries(log, "dmatest")
        print(f"    dmatest: {s}", file=sys.stderr)
        assert set(s) == {"copy", "xor", "pq"} and all(t == 40 and f == 0 for t, f in s.values()), \
            section(log, "dmatest")
        c1 = counts(section(log, "after-dmatest"))
        assert c1["memcpy"] >= 40 and c1["xor"] >= 40 and c1["pq"] >= 40 and c1["aborted"] == 0, c1
        m = re.search(r"raid6test: complete \((\d+) tests, (\d+) failures?\)", section(log, "raid6test"))
        assert m and int(m.group(1)) > 2000 and m.group(2) == "0", section(log, "raid6test")
        c2 = counts(section(log, "after-raid6test"))
        print(f"    raid6test: {m.group(1)} tests; channel: {c2}", file=sys.stderr)
        # raid6test went through the channel: P+Q, recoveries (P+Q with P disabled), validations.
        assert c2["pq"] - c1["pq"] > 2000 and c2["pq_val"] > c1["pq_val"], (c1, c2)
        for what in ("md: data ok", "md: degraded data ok", "md: rebuilt data ok",
                     "md: data after fault ok"):
            assert what in log, f"{what!r} missing:\n" + log[-4000:]
        for name in ("md-check", "md-fault"):
            assert "mismatch_cnt 0" in section(log, name), section(log, name)
        c3 = counts(section(log, "after-md"))
        print(f"    md: channel: {c3}", file=sys.stderr)
        # md's resync, writes, degraded reads, rebuild and scrubs used the card.
        for op in ("xor", "pq", "pq_val"):
            assert c3[op] > c2[op], (op, c2, c3)
        assert c3["errors"] >= 1 and c3["retries"] >= 1 and c3["aborted"] == 0, c3
        # Every request named good mappings (a failed one is refused and counted).
        assert re.search(r"^dma refused 0$", section(log, "after-md"), re.M), section(log, "after-md")
        assert model_calcs(log) >= c3["calcs"] - c3["errors"], (section(log, "roce"), c3)
        assert "async_tx unloaded" in section(log, "unload-async"), section(log, "unload-async")
        # The kernel's raid6 library agrees with every P and Q the card wrote (32 MiB of
        # stripes, 8 MiB of them rewritten during the injected errors), and the data is intact.
        cpu = section(log, "md-cpu")
        assert "a DMA channel is still there" not in cpu and "mismatch_cnt 0" in cpu and \
            "md: cpu data ok" in cpu, cpu

    yield "EC dmaengine on cx4, --ec-8bit: dmatest, raid6test, md RAID-6 rebuild/scrub, engine error", \
        dmaengine_8bit_md_raid6

    @estimate(300)
    def dmaengine_gf16():
        """ConnectX-4 profile: the channel offers memcpy, XOR, XOR validation and interrupt and
        dmesg says why md will not use it; dmatest copy and XOR (8 sources) pass through it; an
        md RAID-6 array's resync and writes do not touch it (async_tx's CPU path)."""
        body = DMA + r"""
            CHAN=$(chan)
            section chan; echo "chan $CHAN"; dmesg | grep 'EC dmaengine' || true
            section dmatest
            dmatest_run 30 xor_sources=8
            section after-dmatest; dmacount
            mkdir -p /tmp/md
            for i in 0 1 2 3 4; do truncate -s 16M /tmp/md/d$i; losetup /dev/loop$i /tmp/md/d$i; done
            section md
            mdadm --create /dev/md0 --run --level=6 --raid-devices=5 /dev/loop[0-4] 2>&1
            for i in $(seq 600); do grep -q resync /proc/mdstat || break; sleep 1; done
            head -c 4M /dev/urandom | dd of=/dev/md0 bs=1M oflag=direct status=none
            mdadm --stop /dev/md0 2>&1
            for i in 0 1 2 3 4; do losetup -d /dev/loop$i; done
            section after-md; dmacount
        """ + UNLOAD
        r = run(env, [], body)
        log = r.job_log
        assert re.search(r"EC dmaengine dma\d+chan\d+: memcpy xor xor_val interrupt; no pq: .*"
                         r"calc_matrix_type_8bit = 0.*will not use this channel", r.dmesg), \
            r.dmesg[-3000:]
        s = summaries(log, "dmatest")
        print(f"    dmatest: {s}", file=sys.stderr)
        assert set(s) == {"copy", "xor"} and all(t == 30 and f == 0 for t, f in s.values()), \
            section(log, "dmatest")
        c1 = counts(section(log, "after-dmatest"))
        c2 = counts(section(log, "after-md"))
        assert c1["memcpy"] >= 30 and c1["xor"] >= 30 and c1["pq"] == 0, c1
        assert c2 == c1, ("md used a channel async_tx should not pick", c1, c2)

    yield "EC dmaengine on cx4, ConnectX-4 profile: copy/XOR only, dmatest, md stays on the CPU", \
        dmaengine_gf16
