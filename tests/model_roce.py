"""The model's RoCE layer with upstream mlx5_ib and the guest's unmodified rdma-core as the
oracle: the device registers with the RDMA core, its port and GID table follow the netdev,
and verbs objects (PDs, CQs, QPs through their states) are created by libmlx5 from user
space. The model runs with `--roce` (RoCE on, implying the Ethernet layer)."""

from __future__ import annotations

import ipaddress
import json
import re
import sys
from pathlib import Path

from harness import Env, check_clean_dmesg, describe, estimate, soak
from model_core import mlx5_errors
from model_eth import eth_vms, section

ROCE_MODEL = ["--roce"]


def perftest_row(s: str, name: str) -> re.Match:
    """perftest's result row ("#bytes #iterations" then figures) in the output `s` of one run.
    perftest prints `inf`/`-nan`/`0.00` figures when its own clock calibration failed (a linear
    fit of the TSC against gettimeofday over a few usleeps, "Correlation coefficient r^2 < 0.9";
    a TCG guest on a loaded host misses it): the run itself completed and its row still counts
    the bytes and iterations, only its rate or latency is unknown. Any other non-number fails."""
    row = re.search(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)", s, re.M)
    assert row, f"{name}: no result row:\n{s}"
    calibrated = "Correlation coefficient r^2" not in s
    for fig in row.group(3, 4):
        assert re.fullmatch(r"[\d.]+", fig) or (not calibrated and fig in ("inf", "-nan", "nan")), \
            f"{name}: result row {row.group(0).strip()!r}:\n{s}"
    return row


VERBS_TOOL = Path(__file__).resolve().parent / "verbs_objects.py"
RESIZE_TOOL = Path(__file__).resolve().parent / "verbs_resize_cq.py"
SMALL_TOOL = Path(__file__).resolve().parent / "verbs_small.py"
CLOCK_TOOL = Path(__file__).resolve().parent / "verbs_clock.py"
MW_TOOL = Path(__file__).resolve().parent / "verbs_mw.py"
RAW_TOOL = Path(__file__).resolve().parent / "verbs_raw.py"
DC_TOOL = Path(__file__).resolve().parent / "verbs_dc.py"
ODP_RACE_TOOL = Path(__file__).resolve().parent / "verbs_odp_race.py"
# The RC QP set-up the pyverbs tools above share: a file of the share beside them.
RC_FIXTURE = Path(__file__).resolve().parent / "verbs_rc.py"

# Guest helpers: the IB device of the modelled card, and its GID table from sysfs
# (`gid INDEX GID TYPE NETDEV`, unused entries skipped).
# perftest's QP ACK timeout exponent (-u) against rxe: 18 (4.096 us << 18 = 1.07 s) instead
# of its default 14 (67 ms), 20 (4.3 s) on the slow debug kernel. rxe is a TCG guest's softirq
# answering 128 outstanding 64 KiB WRITEs: on a loaded host (CI: two VMs per core) it can leave
# a busy QP's ACKs waiting longer than seven 67 ms timeouts ("retry exceeded", status 12, in a
# clean-clone run on the default kernel; under KASAN often). The wire loses nothing here, so a
# longer timeout costs nothing; the lossy-wire tests keep their own timeouts.
QPTO = """
QPTO=$((SLOW > 1 ? 20 : 18))
"""

IB = r"""
# The IB device of the modelled card, in $IBDEV (waits for it to register).
ib_dev() {
    for i in $(seq $((100 * SLOW))); do
        IBDEV=$(ls /sys/bus/pci/devices/0000:01:00.0/infiniband/ 2>/dev/null | head -1)
        [ -n "$IBDEV" ] && break
        sleep 0.1
    done
    [ -n "$IBDEV" ] || { echo "no IB device on the modelled card"; dmesg | tail -30; return 1; }
}
ib_up() {
    modprobe mlx5_ib
    ib_dev
    for i in $(seq $((100 * SLOW))); do
        grep -q ACTIVE /sys/class/infiniband/$IBDEV/ports/1/state && break
        sleep 0.1
    done
}
gids() {
    d=/sys/class/infiniband/$IBDEV/ports/1
    for f in $d/gids/*; do
        i=${f##*/}
        t=$(cat $d/gid_attrs/types/$i 2>/dev/null) || continue
        echo "gid $i $(cat $f) $t $(cat $d/gid_attrs/ndevs/$i 2>/dev/null)"
    done
}
# A VM without a modelled card: soft-RoCE (rxe) on its virtio-net NIC, as $IBDEV.
rxe_up() {
    virtio_up
    modprobe rdma_rxe
    rdma link add rxe0 type rxe netdev $IF
    IBDEV=rxe0
    for i in $(seq $((100 * SLOW))); do
        grep -q ACTIVE /sys/class/infiniband/$IBDEV/ports/1/state && break
        sleep 0.1
    done
}
# Waits until the GID table shows (or, with !, no longer shows) an address.
wait_gid() {
    for i in $(seq $((100 * SLOW))); do
        if [ "${1#!}" = "$1" ]; then gids | grep -qi "$1" && return 0
        else gids | grep -qi "${1#!}" || return 0; fi
        sleep 0.1
    done
    echo "GID table never settled on $1"; gids; return 1
}
"""

# Guest helper: the RoCE v2 GID index of the VM's IPv4 address, in $GIDX (after ib_up).
GIDX = r"""
    wait_gid ffff:0a63:000$((me + 1))
    d=/sys/class/infiniband/$IBDEV/ports/1
    GIDX=$(for f in $d/gids/*; do i=${f##*/};
           grep -qi ffff:0a63:000$((me + 1)) $f && grep -q "RoCE v2" $d/gid_attrs/types/$i 2>/dev/null && echo $i;
           done | head -1)
    echo "RoCE v2 GID of $IP: index $GIDX"
"""


def sysfs_gids(text: str) -> set[tuple[int, str, int]]:
    """(index, address, RoCE version) of each `gid` line."""
    out = set()
    for m in re.finditer(r"^gid (\d+) ([0-9a-f:]+) (.*?RoCE v(\d)|IB/RoCE v1)", text, re.M):
        version = 1 if "IB/RoCE v1" in m.group(3) else int(m.group(4))
        out.add((int(m.group(1)), str(ipaddress.IPv6Address(m.group(2))), version))
    return out


def model_gids(text: str) -> set[tuple[int, str, int]]:
    """(index, address, RoCE version) of the model's table (`roce` control line)."""
    m = re.search(r"^gids=\d+ qps=\d+.*$", text, re.M)
    assert m, f"no roce line from the model:\n{text}"
    return {(int(i), str(ipaddress.IPv6Address(a)), int(v))
            for i, v, a in re.findall(r"\bgid=(\d+)/v(\d)/([0-9a-f:.]+)/", m.group(0))}


def v6(a: str) -> str:
    """An address as `sysfs_gids` and `model_gids` spell it."""
    return str(ipaddress.IPv6Address(a))


def addresses(gids: set[tuple[int, str, int]]) -> dict[str, set[int]]:
    """Address → RoCE versions present."""
    out: dict[str, set[int]] = {}
    for _, a, v in gids:
        out.setdefault(a, set()).add(v)
    return out


def check_gid_sections(log: str) -> tuple[set, set, set]:
    """The `gids-up`, `gids-added` and `gids-removed` sections of a job (sysfs GIDs and the
    card's `roce` line printed together): at each point the RDMA core's GID table equals the
    card's RoCE address table, with v1 and v2 entries for the link-local, IPv4 and IPv6
    addresses; 10.99.7.1 and fd07::1 appear when added and are gone when removed. Returns the
    three tables."""
    def same(name: str) -> set[tuple[int, str, int]]:
        s, m = sysfs_gids(section(log, name)), model_gids(section(log, name))
        assert s == m, f"{name}: the RDMA core and the card disagree:\ncore {sorted(s)}\ncard {sorted(m)}"
        return s

    tables = same("gids-up"), same("gids-added"), same("gids-removed")
    up, added, removed = (addresses(t) for t in tables)
    for a in (v6("::ffff:10.99.0.1"), "fd00::1"):
        assert up.get(a) == {1, 2}, f"{a}: versions {up.get(a)} in {up}"
    assert any(a.startswith("fe80::") and v == {1, 2} for a, v in up.items()), up
    for a in (v6("::ffff:10.99.7.1"), "fd07::1"):
        assert added.get(a) == {1, 2}, f"{a}: versions {added.get(a)} in {added}"
    assert v6("::ffff:10.99.7.1") not in removed and "fd07::1" not in removed, removed
    return tables


def logs(rs) -> str:
    """Every VM's job log, console and model log, for a failure message."""
    return "\n".join(describe(r) for r in rs)


# The two-VM cases below, as pieces tests/ib.py reuses with cx4 in place of mlx5_ib: each
# `*_steps` is one side's job steps (after the side's driver is up, $GIDX set and the peer
# reached), each `check_*` the assertions over the VM results `rs`. `tag` prefixes the
# sections and signals, so that several cases share one VM pair.

ERRORS_TOOL = Path(__file__).resolve().parent / "verbs_errors.py"
MCKEY_GROUP = "239.1.2.3"


def hw_counters_fn(names: str) -> str:
    """Guest helper `hw`: prints `hw NAME VALUE` for each of the port's hw_counters `names`."""
    return f"""
            d=/sys/class/infiniband/$IBDEV/ports/1/hw_counters
            hw() {{ for c in {names}; do echo "hw $c $(cat $d/$c)"; done; }}
    """


def hw_values(log: str, name: str) -> dict[str, int]:
    """The `hw NAME VALUE` lines of section `name`."""
    return {k: int(v) for k, v in re.findall(r"^hw (\w+) (\d+)$", section(log, name), re.M)}


def hw_rise(log: str, tag: str) -> dict[str, int]:
    """How much each counter rose from section `tag`hw0 to `tag`hw."""
    before, after = hw_values(log, f"{tag}hw0"), hw_values(log, f"{tag}hw")
    return {k: v - before.get(k, 0) for k, v in after.items()}


def server_step(tag: str, name: str, cmd: str, limit: int, ready: int = 2) -> str:
    """Server steps: section `tag+name`, `cmd` in the background, signal `tag`server-`name`
    `ready` seconds later (when it listens), `rc=N` when it ends, then its output."""
    return f"""
            section {tag}{name}
            timeout $(({limit} * SLOW)) {cmd} > /tmp/{name}.txt 2>&1 & pid=$!
            sleep $(({ready} * SLOW)); signal {tag}server-{name}; rc=0; wait $pid || rc=$?; echo "rc=$rc"
            cat /tmp/{name}.txt
    """


def client_step(tag: str, name: str, cmd: str, limit: int) -> str:
    """Client steps: wait for the server's signal, then section `tag+name`: `cmd`'s output and
    `rc=N`."""
    return f"""
            wait_signal {tag}server-{name}
            section {tag}{name}; timeout $(({limit} * SLOW)) {cmd} 2>&1 && echo rc=0 || echo "rc=$?"
    """


def check_ok(rs, name: str) -> None:
    """Section `name` of each VM says `rc=0`."""
    for r in rs:
        s = section(r.job_log, name)
        assert re.search(r"^rc=0$", s, re.M), f"{r.name}: {name} failed:\n{s}\n{logs(rs)}"


def mckey_steps(receiver: bool, tag: str = "") -> str:
    """rdma_cm multicast (mckey): the receiver joins MCKEY_GROUP (its UD QP attached with
    ATTACH_TO_MCG) and takes 20 datagrams; the sender joins and sends them to the group (BTH
    destination QP 0xFFFFFF)."""
    if receiver:
        return server_step(tag, "mckey", f"mckey -m {MCKEY_GROUP} -b $IP -C 20", 90, ready=3)
    return client_step(tag, "mckey", f"mckey -m {MCKEY_GROUP} -b $IP -s -C 20", 60)


def check_mckey(rs, receiver: int, tag: str = "") -> None:
    """Both sides' mckey exited 0; the receiver got every datagram."""
    check_ok(rs, f"{tag}mckey")
    s = section(rs[receiver].job_log, f"{tag}mckey")
    assert "data transfers complete" in s, f"{rs[receiver].name}: mckey:\n{s}\n{logs(rs)}"


def udaddy_steps(server: bool, tag: str = "") -> str:
    """rdma_cm's udaddy: SIDR REQ/REP through the GSI QPs, then 20 UD datagrams each way."""
    if server:
        return server_step(tag, "udaddy", "udaddy -C 20", 90)
    return client_step(tag, "udaddy", "udaddy -s $PEER -C 20", 60)


def check_udaddy(rs, tag: str = "") -> None:
    """udaddy exited 0 with its transfers complete on both sides."""
    for r in rs:
        s = section(r.job_log, f"{tag}udaddy")
        assert re.search(r"^rc=0$", s, re.M) and "data transfers complete" in s, \
            f"{r.name}: udaddy failed:\n{s}\n{logs(rs)}"


def errors_steps(server: bool, tag: str = "") -> str:
    """tests/verbs_errors.py (send it with `files`) as the server or the client."""
    tool = "python3 /cx4/verbs_errors.py"
    if server:
        return server_step(tag, "errors", f"{tool} server $IBDEV $GIDX 18600", 260, ready=3)
    return client_step(tag, "errors", f"{tool} client $IBDEV $GIDX $PEER 18600", 240)


def check_error_paths(rs, tag: str = "") -> dict:
    """verbs_errors.py passed on both sides, and each scenario's completion statuses, async
    events and QP states are the RC error paths' (see its doc). Returns the records by
    (side, scenario)."""
    check_ok(rs, f"{tag}errors")
    recs = {}
    for r in rs:
        for line in section(r.job_log, f"{tag}errors").splitlines():
            if line.startswith("{") and '"scenario"' in line:
                d = json.loads(line)
                recs[(d["side"], d["scenario"])] = d
    for (side, name), d in sorted(recs.items()):
        print(f"{side} {name}: {json.dumps(d)}", file=sys.stderr)
    # ibv_wc_status and ibv_event_type values (verbs.h); QP state 6 = IBV_QPS_ERR, 3 = RTS.
    SUCCESS, LOC_LEN, FLUSH, REM_INV_REQ, REM_ACCESS, RNR_EXC = 0, 1, 5, 9, 10, 13
    QP_ACCESS_ERR, RTS, ERR = 3, 3, 6
    st = lambda side, name: [w["status"] for w in recs[(side, name)]["wcs"]]
    assert st("client", "rnr_exceeded") == [RNR_EXC, FLUSH], recs[("client", "rnr_exceeded")]
    assert recs[("client", "rnr_exceeded")]["qp_state"] == ERR
    assert st("server", "rnr_exceeded") == [] and \
        recs[("server", "rnr_exceeded")]["qp_state"] == RTS, recs[("server", "rnr_exceeded")]
    assert st("client", "rnr_recovers") == [SUCCESS], recs[("client", "rnr_recovers")]
    assert st("server", "rnr_recovers") == [SUCCESS] and \
        recs[("server", "rnr_recovers")]["data_ok"], recs[("server", "rnr_recovers")]
    assert recs[("client", "rnr_recovers")]["counters"]["rnr_nak_retry_err"] >= 1, \
        recs[("client", "rnr_recovers")]
    for name in ("remote_access", "read_out_of_bounds"):
        assert st("client", name) == [REM_ACCESS], recs[("client", name)]
        srv = recs[("server", name)]
        assert srv["qp_state"] == ERR and QP_ACCESS_ERR in srv["events"], srv
    assert st("server", "remote_access") == [FLUSH], recs[("server", "remote_access")]
    assert st("client", "too_long") == [REM_INV_REQ], recs[("client", "too_long")]
    assert st("server", "too_long") == [LOC_LEN] and \
        recs[("server", "too_long")]["qp_state"] == ERR, recs[("server", "too_long")]
    return recs


# The lossy wire: what each card does to the RoCE frames it receives, and the
# retransmission counters that show it.
LOSSY_WIRE = "drop=1 reorder=1"
LOSSY_COUNTERS = "packet_seq_err local_ack_timeout_err out_of_sequence duplicate_request " \
    "implied_nak_seq_err"


def lossy_steps(server: bool, tag: str = "", n: int = 150) -> str:
    """RC over a lossy wire: this side's card drops and reorders (LOSSY_WIRE) what it
    receives while ibv_rc_pingpong --chk (16 KiB, `n` iterations), rping -V (20 × 65000
    bytes) and ib_write_bw (`n` × 64 KiB) run, the server in this VM or the peer's; then the
    retransmission counters (section `hw`) and the card's line (`roce`), and the wire is
    clean again."""
    pp = f"ibv_rc_pingpong -d $IBDEV -g $GIDX -m 1024 -s 16384 -c -n {n}"
    bw = f"ib_write_bw -d $IBDEV -x $GIDX -F -s 65536 -n {n}"
    rping = "rping -C 20 -S 65000 -V"
    steps = hw_counters_fn(LOSSY_COUNTERS) + f"""
            section {tag}hw0; hw
            req ctl roce-wire {LOSSY_WIRE}
    """
    if server:
        steps += server_step(tag, "rc", pp, 260) \
            + server_step(tag, "rping", f"{rping} -s -a $IP", 260) \
            + server_step(tag, "bw", bw, 260)
    else:
        steps += client_step(tag, "rc", f"{pp} $PEER", 240) \
            + client_step(tag, "rping", f"{rping} -c -a $PEER", 240) \
            + client_step(tag, "bw", f"{bw} $PEER", 240)
    return steps + f"""
            section {tag}hw; hw
            section {tag}roce; req ctl roce
            req ctl roce-wire off
    """


def check_lossy(rs, tag: str = "", n: int = 150) -> dict[str, dict[str, int]]:
    """Every tool completed over the lossy wire, each card applied its faults, and the
    retransmission counters rose (summed over the sides). Returns each side's rises."""
    out, retrans = {}, 0
    for kind in ("rc", "rping", "bw"):
        check_ok(rs, f"{tag}{kind}")
    for r in rs:
        s = section(r.job_log, f"{tag}rc")
        assert re.search(rf"^{n} iters in", s, re.M), s
        roce = section(r.job_log, f"{tag}roce")
        m = re.search(r"wire faults: (\d+) dropped (\d+) reordered", roce)
        assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, roce
        hw = out[r.name] = hw_rise(r.job_log, tag)
        print(f"{r.name}: {hw}; {m.group(0)}", file=sys.stderr)
        retrans += sum(hw.values())
    assert retrans > 0, "no retransmission counted by either side"
    return out


ECN_COUNTERS = "np_ecn_marked_roce_packets np_cnp_sent rp_cnp_handled rp_cnp_ignored"


def ecn_steps(receiver: bool, tag: str = "", n: int = 400) -> str:
    """ECN → CNP → DCQCN: the receiver's card marks half the RoCE requests it receives CE
    (`roce-wire ecn=50`, as a congested switch would) while ib_write_bw (`n` × 64 KiB) runs
    from the sender; then the congestion counters (section `hw`) and the card's line
    (`roce`, with its `cong:` statistics)."""
    bw = f"ib_write_bw -d $IBDEV -x $GIDX -F -s 65536 -n {n}"
    steps = hw_counters_fn(ECN_COUNTERS) + f"section {tag}hw0; hw\n"
    if receiver:
        steps += "req ctl roce-wire ecn=50\n" + server_step(tag, "bw", bw, 260)
    else:
        steps += client_step(tag, "bw", f"{bw} $PEER", 240)
    return steps + f"""
            section {tag}hw; hw
            section {tag}roce; req ctl roce
            {"req ctl roce-wire off" if receiver else ""}
    """


def check_ecn(rs, sender: int, receiver: int, tag: str = "") -> dict[str, dict[str, int]]:
    """The transfer completed under ECN marking; the receiver's notification point marked
    packets and sent CNPs, the sender's reaction point handled (at most as many) CNPs, as
    the counters' rises over the transfer say. Returns each side's rises."""
    check_ok(rs, f"{tag}bw")
    hw = {}
    for r in rs:
        hw[r.name] = hw_rise(r.job_log, tag)
        assert len(hw[r.name]) == 4, f"{r.name}: congestion hw_counters missing:\n" \
            f"{section(r.job_log, f'{tag}hw')}\n{describe(r)}"
    print(f"hw_counters: {hw}", file=sys.stderr)
    np, rp = hw[rs[receiver].name], hw[rs[sender].name]
    assert np["np_ecn_marked_roce_packets"] > 0 and np["np_cnp_sent"] > 0, hw
    assert rp["rp_cnp_handled"] > 0, hw
    assert rp["rp_cnp_handled"] <= np["np_cnp_sent"], hw
    return hw


def resize_steps(text: str) -> dict[str, dict]:
    """The JSON steps of verbs_resize_cq.py, by name."""
    return {d["step"]: d for d in (json.loads(l) for l in text.splitlines() if l.startswith("{"))}


def check_resize(text: str, model_log: str | None = None) -> dict[str, dict]:
    """Checks verbs_resize_cq.py's report (and, for the model, its resize log lines): the
    grow and shrink took, with completions waiting in the old ring; the refused resizes kept
    the CQ; every completion seen exactly once, in order."""
    by = resize_steps(text)
    assert "closed" in by, f"the resize program did not finish:\n{text}"
    assert by["created"]["cqe"] == 15, by["created"]
    assert (by["grow"]["ok"], by["grow"]["cqe"]) == (True, 63), by["grow"]
    assert (by["shrink"]["ok"], by["shrink"]["cqe"]) == (True, 15), by["shrink"]
    for bad in ("too-small", "zero", "huge"):
        assert not by[bad]["ok"] and by[bad]["cqe"] == 15, by[bad]
    assert by["too-small"]["errno"] == 22, by["too-small"]  # EINVAL
    assert by["same"]["ok"] and by["same"]["cqe"] == 15, by["same"]
    done = by["done"]
    assert (done["posted"], done["seen"], done["ordered"], done["dups"], done["bad"]) == \
        (74, 74, True, 0, []), done
    if model_log is not None:
        sizes = re.findall(r"resized from (\d+) to (\d+) entries at pi \d+ \((\d+) outstanding\)",
                           model_log)
        assert [(a, b) for a, b, _ in sizes] == [("16", "64"), ("64", "16")], sizes
        # Completions were waiting in the old ring each time (7 and 10 when all had come).
        assert all(int(n) > 0 for _, _, n in sizes), sizes
        assert "more outstanding CQEs than the rings hold" in model_log, model_log[-2000:]
    return by


# The steps of verbs_small.py, each of which must report ok.
SMALL_STEPS = ["atomic-allowed", "atomic-refused", "write-allowed", "read-refused",
               "write-refused", "read-refused-no-resources", "atomic-after-modify",
               "write-refused-after-modify", "atomic-refused-by-mr",
               "srq-bad-modify", "srq-armed", "srq-not-yet", "srq-limit-event", "srq-disarmed",
               "rereg-before-write-refused", "rereg-write-new-key", "rereg-write-old-key",
               "rereg-atomic", "rereg-less", "dyn-uar-alloc", "dyn-uar-bf-refused",
               "dyn-uar-post"]


def check_steps(text: str, steps: list[str], what: str) -> dict[str, dict]:
    """Checks the report of a guest program that prints one JSON line per step: it finished
    ("closed") and every one of `steps` passed."""
    by = resize_steps(text)
    assert "closed" in by, f"the {what} program did not finish:\n{text}"
    bad = [by.get(s, {"step": s, "missing": True}) for s in steps
           if not by.get(s, {}).get("ok")]
    assert not bad, "failed steps:\n" + "\n".join(map(json.dumps, bad)) + "\n" + text
    return by


def check_small(text: str) -> dict[str, dict]:
    """Checks verbs_small.py's report: it finished and every step passed (the same checks for
    mlx5_ib and for cx4 on the model)."""
    return check_steps(text, SMALL_STEPS, "small-verbs")


# The steps of verbs_clock.py, each of which must report ok.
CLOCK_STEPS = ["caps", "rt-clock", "clock-info", "cq-timestamps", "wallclock", "adjfine",
               "adjtime"]


def check_clock(text: str) -> dict[str, dict]:
    """Checks verbs_clock.py's report: it finished, every step passed, and the card's
    frequency is ConnectX-4's 156.25 MHz (the same checks for mlx5_ib and cx4 on the model)."""
    by = check_steps(text, CLOCK_STEPS, "clock")
    assert by["caps"]["hca_core_clock"] == 156_250, by["caps"]
    return by


# The steps of verbs_mw.py, each of which must report ok.
MW_STEPS = ["mw-caps", "mw1-bind-access", "mw1-outside-refused", "mw1-rights",
            "mw1-old-key-refused", "mw2-bind-access", "mw2-other-qp-refused", "mw2-remote-inval",
            "mw2-local-inval"]


def check_mw(text: str) -> dict[str, dict]:
    """Checks verbs_mw.py's report (the same checks for mlx5_ib and cx4 on the model)."""
    return check_steps(text, MW_STEPS, "memory-window")


# The steps of verbs_dc.py, each of which must report ok.
DC_STEPS = ["send", "rdma-write", "rdma-read", "two-dcts", "bad-key", "bad-key-took-nothing",
            "query-dct", "bad-attrs"]


def check_dc(text: str, role: str = "both") -> dict[str, dict]:
    """Checks verbs_dc.py's report of one side (`role`; only the target queries its DCT)."""
    steps = [s for s in DC_STEPS if role != "initiator" or s != "query-dct"]
    return check_steps(text, steps, "DC")


def dc_check_vm(r, role: str, errors) -> None:
    """One VM of a verbs_dc.py run (`dc_one_vm`, `dc_between_vms`) whose program was side
    `role`: it finished, every step passed, the program's DCIs and DCTs were gone before the
    driver was unloaded; on the target's card the wrong key's request was dropped and counted
    (nothing misdirected), the two DCTs were drained (DRAIN_DCT, the DCT_DRAINED event the
    driver waits for) and destroyed, QUERY_DCT answered, and no command failed on either
    card; `errors(dmesg)` empty."""
    assert r.status == 0 and "unloaded" in r.job_log, describe(r)
    check_dc(section(r.job_log, "tool"), role)
    roce = section(r.job_log, "after")
    assert "/DCI/" not in roce and "dct=" not in roce, roce
    # The DCIs' connections are counted by the initiator's card, the violation by the
    # target's.
    m = re.search(r"dc: (\d+) connects (\d+) misdirected (\d+) key violations", roce)
    assert m and m[2] == "0", roce
    assert (int(m[1]) >= 8) == (role != "target"), roce
    ops = model_ops(section(r.job_log, "model"))
    made = ops.get("CREATE_DCT", (0, 0))[0]
    if role == "initiator":
        assert made == 0 and m[3] == "0", (ops, roce)
    else:
        assert int(m[3]) >= 1, roce
        assert made == 2, ops
        for o in ("DRAIN_DCT", "DESTROY_DCT"):
            assert ops.get(o, (0, 0)) == (made, 0), f"{o}: {ops}"
        assert ops.get("QUERY_DCT", (0, 0)) == (1, 0), ops
    check_commands_clean(r, ops, errors=errors)


def dc_steps(up: str, role: str, unload: str) -> str:
    """The guest steps of one verbs_dc.py side (`role`) on a driver `up` brings up (with
    $IBDEV and $IF) and `unload` unloads: the program, the card's `roce` line, the unload,
    the model's command counts."""
    peer = "--peer $PEER" if role == "initiator" else ""
    return up + GIDX + f"""
        {"reach $PEER" if role != "both" else ""}
        section tool
        python3 /cx4/verbs_dc.py $IBDEV --gid-index $GIDX --settle $SLOW --role {role} {peer} 2>&1
        section after; req ctl roce
        {unload}
        echo unloaded
        section model; req ctl stats
    """


def dc_one_vm(env: Env, up: str, unload: str, files: list[Path], errors) -> None:
    """tests/verbs_dc.py as both sides on one card (looping back through its GID), on the
    driver the guest steps `up` bring up and `unload` unload; `dc_check_vm`'s checks."""
    r = eth_vms(env, [dc_steps(up, "both", unload)], timeout=300, model_args=ROCE_MODEL,
                files=[*files, DC_TOOL, SMALL_TOOL, RC_FIXTURE])[0]
    dc_check_vm(r, "both", errors)


def dc_between_vms(env: Env, up: str, unload: str, files: list[Path], errors) -> None:
    """tests/verbs_dc.py between two VMs: vm0's program the target (the DCTs), vm1's the
    initiator (the DCIs), each on the driver `up` brings up; `dc_check_vm`'s checks on
    each."""
    rs = eth_vms(env, [dc_steps(up, "target", unload), dc_steps(up, "initiator", unload)],
                 timeout=300, model_args=ROCE_MODEL,
                 files=[*files, DC_TOOL, SMALL_TOOL, RC_FIXTURE])
    for r, role in zip(rs, ("target", "initiator")):
        dc_check_vm(r, role, errors)


# The steps of verbs_raw.py, each of which must report ok (sent-N on the sender, the receive
# checks on the other VM).
RAW_SETUP_STEPS = ["caps", "objects", "flows-created", "flows-refused"]
RAW_RX_STEPS = ["raw-steered-tagged", "rss-spread", "dropped-not-received"]

# Guest helper: the barriers of verbs_raw.py (it creates /tmp/raw-NAME.mine and waits for
# /tmp/raw-NAME.go) met with the other VM's through signals, while the program ($RAWPID) runs.
RAW_BARRIER = r"""
raw_barriers() {
    for b in "$@"; do   # (not $n: req uses that name)
        while [ ! -e /tmp/raw-$b.mine ]; do
            kill -0 $RAWPID 2>/dev/null || { echo "verbs_raw.py ended at barrier $b"; return 0; }
            sleep 0.1
        done
        signal vm$me-$b
        wait_signal vm$peer-$b 300 || return 0
        touch /tmp/raw-$b.go
    done
}
"""


# Guest helpers: dpdk-testpmd in interactive mode, fed commands through a FIFO (`pmd CMD`),
# its output line-buffered in /cx4/pmd.txt (`pmd_wait TEXT` waits for TEXT there; the host
# sees it while the test runs; PMDLOG=debug in the job shows the PMD's own steps). 64 2-MiB
# hugepages; two lcores on the VM's one CPU (testpmd forwards on a lcore other than its main
# one); the modelled card by its PCI address with the PMD's Verbs engine (dv_flow_en=0) and
# without CQE compression (rxq_cqe_comp_en=0: the card has none).
DPDK = r"""
pmd_start() {
    echo 64 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
    rm -f /tmp/pmd.in; mkfifo /tmp/pmd.in
    stdbuf -oL -eL dpdk-testpmd --lcores=0@0,1@0 --in-memory \
        --log-level=pmd.net.mlx5:${PMDLOG:-notice} -a 0000:01:00.0,dv_flow_en=0,rxq_cqe_comp_en=0 \
        -- -i --nb-cores=1 --rxq=1 --txq=1 --total-num-mbufs=2048 "$@" \
        < /tmp/pmd.in > /cx4/pmd.txt 2>&1 &
    PMDPID=$!
    exec 3> /tmp/pmd.in
    pmd_wait "testpmd> " || { cat /cx4/pmd.txt; return 1; }
}
pmd() { echo "$*" >&3; }
pmd_wait() {
    for i in $(seq $((600 * SLOW))); do
        grep -q "$1" /cx4/pmd.txt 2>/dev/null && return 0
        kill -0 $PMDPID 2>/dev/null || { echo "dpdk-testpmd ended waiting for $1"; return 1; }
        sleep 0.1
    done
    echo "dpdk-testpmd: no $1"; return 1
}
"""


def pmd_port_stats(text: str) -> dict[str, int]:
    """testpmd's `show port stats 0` counters (RX-packets, RX-missed, RX-errors, TX-packets,
    TX-errors, ...), the last such block in `text`."""
    block = text.rsplit("NIC statistics for port 0", 1)
    assert len(block) == 2, f"no port statistics:\n{text}"
    return {k: int(v) for k, v in re.findall(r"([A-Z][A-Za-z-]+):\s+(\d+)", block[1])}


def check_raw(text: str, me: int) -> dict[str, dict]:
    """Checks one VM's verbs_raw.py report: set-up, its sends and its receive checks."""
    return check_steps(text, RAW_SETUP_STEPS + [f"sent-{me}"] + RAW_RX_STEPS, "raw packet")


def model_ops(stats: str) -> dict[str, tuple[int, int]]:
    """opcode name → (count, errors) from the model's `stats` line (`NAME=count/errors`)."""
    return {m.group(1): (int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"\b([A-Z][A-Z0-9_]+)=(\d+)/(\d+)", stats)}


def check_commands_clean(r, ops: dict[str, tuple[int, int]], ignore: tuple[str, ...] = (),
                         errors=None) -> None:
    """No command in the model's counts `ops` failed (but those named in `ignore`), no
    driver error in VM `r`'s dmesg (`errors`, mlx5's by default), and a clean dmesg."""
    bad = {k: v for k, v in ops.items() if v[1] and k not in ignore}
    assert not bad, f"{r.name}: failed commands {bad}"
    errs = (errors or mlx5_errors)(r.dmesg)
    assert not errs, "\n".join(errs)
    check_clean_dmesg(r.dmesg)


# The card's Ethernet objects, each created and destroyed once the drivers are unloaded.
ETH_OBJECTS = ["SQ", "RQ", "TIS", "TIR", "RQT", "FLOW_TABLE", "FLOW_GROUP"]

def raw_between_vms(env: Env, up: str, unload: str, files: list[Path], errors) -> None:
    """tests/verbs_raw.py on two VMs whose driver the guest steps `up` bring up (with $IBDEV
    and $IF) and `unload` unload, checked the same for every driver: each VM's report, every
    Ethernet object the QPs, WQs, tables and rules made on the card destroyed again (the
    model's counts after the unload), no command failed, and `errors(dmesg)` empty."""
    script = up + RAW_BARRIER + f"""
        reach $PEER
        PEERMAC=$(ip neigh show $PEER | awk '{{print $5}}')
        MAC=$(cat /sys/class/net/$IF/address)
        section raw
        python3 /cx4/verbs_raw.py $IBDEV --me $me --mac $MAC --peer-mac $PEERMAC \\
            --settle $SLOW > /cx4/raw.txt 2>&1 &
        RAWPID=$!
        raw_barriers ready sent-0 checked-0 sent-1 checked-1
        wait $RAWPID || echo "verbs_raw.py failed rc=$?"
        cat /cx4/raw.txt
        signal vm$me-done; wait_signal vm$peer-done 300
        {unload}
        echo unloaded
        section model; req ctl stats
    """
    rs = eth_vms(env, [script, script], timeout=400, model_args=ROCE_MODEL,
                 files=[*files, RAW_TOOL, RC_FIXTURE])
    for i, r in enumerate(rs):
        assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        check_raw(section(r.job_log, "raw"), i)
        # Every object the QPs, WQs, tables and rules made on the card is gone again, and
        # no command the driver sent for them failed (MODIFY_SQ/RQ among them).
        ops = model_ops(section(r.job_log, "model"))
        for o in ETH_OBJECTS:
            made, gone = ops.get(f"CREATE_{o}", (0, 0))[0], ops.get(f"DESTROY_{o}", (0, 0))[0]
            assert made == gone, f"vm{i}: {made} CREATE_{o}, {gone} DESTROY_{o}: {ops}"
        assert ops.get("SET_FLOW_TABLE_ENTRY", (0, 0))[0] >= 5, ops
        check_commands_clean(r, ops, errors=errors)


def dpdk_between_vms(env: Env, up: str, unload: str, files: list[Path], errors) -> None:
    """dpdk-testpmd forwarding between two VMs whose driver the guest steps `up` bring up
    and `unload` unload, checked the same for every driver: testpmd's port counters on both
    sides (the burst bounced both ways, nothing lost or in error), the commands the PMD
    caused on each card (printed: what it asked for) with none failed, and `errors(dmesg)`
    empty."""
    script = up + DPDK + """
        reach $PEER
        PEERMAC=$(ip neigh show $PEER | awk '{print $5}')
        section model-before; req ctl stats
        section testpmd
        pmd_start --eth-peer=0,$PEERMAC
        pmd set fwd macswap
        if [ $me = 1 ]; then
            pmd start; pmd_wait "packet forwarding - ports="
            signal vm1-forwarding; wait_signal vm0-stopped 300
        else
            wait_signal vm1-forwarding 300
            pmd start tx_first; pmd_wait "packet forwarding - ports="
            sleep $((10 * SLOW))
        fi
        pmd stop; pmd_wait "Accumulated forward statistics"
        pmd show port stats 0; pmd quit
        wait $PMDPID || echo "dpdk-testpmd failed rc=$?"
        cat /cx4/pmd.txt
        section model-after; req ctl stats
        [ $me = 0 ] && signal vm0-stopped
        """ + unload + """
        echo unloaded
    """
    rs = eth_vms(env, [script, script], timeout=400, model_args=ROCE_MODEL, files=files)
    got = []
    for i, r in enumerate(rs):
        assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        pmd = section(r.job_log, "testpmd")
        assert "failed" not in pmd, pmd
        st = pmd_port_stats(pmd)
        got.append(st)
        print(f"vm{i} testpmd port 0: {st}", file=sys.stderr)
        # What the PMD asked of the card, through the driver: the commands it caused, none
        # failed (DEVX is refused by the driver itself, before any command).
        before = model_ops(section(r.job_log, "model-before"))
        after = model_ops(section(r.job_log, "model-after"))
        rise = {k: (v[0] - before.get(k, (0, 0))[0], v[1] - before.get(k, (0, 0))[1])
                for k, v in after.items() if v != before.get(k)}
        print(f"vm{i} commands during testpmd: {rise}", file=sys.stderr)
        assert not any(e for _, e in rise.values()), f"vm{i}: failed commands {rise}"
        errs = errors(r.dmesg)
        assert not errs, "\n".join(errs)
        check_clean_dmesg(r.dmesg)
    # vm0's burst (32) bounced between the VMs many times and the card lost nothing: vm1
    # received every packet vm0 sent (vm0 stopped first; vm1 still counted its last
    # ones) and sent each back, vm0 sent what it received plus the first burst. Slack
    # of a few packets: a frame the peer's kernel sent before testpmd took the port
    # bounces along, testpmd drops a packet its TX ring has no room for, and the host's TAP
    # segment (the wire) may drop a frame on a loaded host (seen once: 1 of 257,932).
    v0, v1 = got
    assert v0["TX-packets"] >= 32 * 10, got
    assert abs(v1["RX-packets"] - v0["TX-packets"]) <= 4, got
    assert abs(v1["TX-packets"] - v1["RX-packets"]) <= 4, got
    assert abs(v0["TX-packets"] - v0["RX-packets"] - 32) <= 4, got
    for v in got:
        assert v["RX-errors"] == v["RX-missed"] == v["TX-errors"] == 0, got


def tests(env: Env):
    @estimate(150)
    def mlx5_ib_registers_port_and_gids():
        """mlx5_ib binds the modelled card: ibv_devices and ibv_devinfo -v report it with sane
        attributes, `rdma link` shows the port ACTIVE on its netdev, and the model's RoCE
        address table holds exactly the GIDs the RDMA core shows (v1 and v2 for each IPv4
        and IPv6 address), following addresses as they come and go; rmmod leaves no object."""
        vm0 = IB + """
            eth_up
            ib_up
            section devices; ibv_devices
            section devinfo; ibv_devinfo -v -d $IBDEV
            section link; rdma link show
            wait_gid ffff:0a63:0001
            wait_gid fd00:0000:0000:0000:0000:0000:0000:0001
            section gids-up; gids; req ctl roce
            ip addr add 10.99.7.1/24 dev $IF
            ip -6 addr add fd07::1/64 dev $IF nodad
            wait_gid ffff:0a63:0701
            wait_gid fd07:0000:0000:0000:0000:0000:0000:0001
            section gids-added; gids; req ctl roce
            ip addr del 10.99.7.1/24 dev $IF
            ip -6 addr del fd07::1/64 dev $IF
            wait_gid '!ffff:0a63:0701'
            wait_gid '!fd07:0000:0000:0000:0000:0000:0000:0001'
            section gids-removed; gids; req ctl roce
            rmmod mlx5_ib
            section after-rmmod; req ctl roce
            rmmod mlx5_core
            echo unloaded
        """
        r = eth_vms(env, [vm0], timeout=400, model_args=ROCE_MODEL)[0]
        assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        log = r.job_log

        devices = section(log, "devices")
        assert re.search(r"^\s+mlx5_\d+\s+[0-9a-f]{16}\s*$", devices, re.M), devices
        info = section(log, "devinfo")
        for want in (r"transport:\s+InfiniBand \(0\)", r"link_layer:\s+Ethernet",
                     r"state:\s+PORT_ACTIVE \(4\)", r"vendor_id:\s+0x02c9",
                     r"vendor_part_id:\s+4115", r"phys_port_cnt:\s+1",
                     r"fw_ver:\s+12\.28\.\d+", r"max_qp:\s+262144"):
            assert re.search(want, info), f"ibv_devinfo lacks {want!r}:\n{info}"
        link = section(log, "link")
        assert re.search(r"link mlx5_\d+/1 state ACTIVE physical_state LINK_UP netdev \S+", link), link

        check_gid_sections(log)
        # The GSI QP (QP1) and mlx5_ib's UMR QP were created and brought to RTS.
        roce = section(log, "gids-up")
        assert re.search(r"qp=0x[0-9a-f]+/QP1/RTS", roce), roce
        after = section(log, "after-rmmod")
        assert re.search(r"^gids=0 qps=0", after, re.M), after
        errs = mlx5_errors(r.dmesg)
        assert not errs, "\n".join(errs)
        check_clean_dmesg(r.dmesg)

    yield "mlx5_ib: ibv_devinfo, rdma link ACTIVE, GID table = the card's, follows addresses", \
        mlx5_ib_registers_port_and_gids

    @estimate(150)
    def verbs_objects_from_user_space():
        """Unmodified libmlx5 (pyverbs) creates a PD, an MR, a CQ and RC, UC and UD QPs on the
        model, walks each through INIT, RTR and RTS, and reads every attribute back through
        QUERY_QP; the card holds the QPs in RTS meanwhile; a transition from the wrong state
        is refused; ERR and RESET, then every object is destroyed."""
        vm0 = IB + """
            eth_up
            ib_up
            wait_gid ffff:0a63:0001
            d=/sys/class/infiniband/$IBDEV/ports/1
            GIDX=$(for f in $d/gids/*; do i=${f##*/};
                   grep -qi ffff:0a63:0001 $f && grep -q "RoCE v2" $d/gid_attrs/types/$i 2>/dev/null && echo $i;
                   done | head -1)
            echo "RoCE v2 GID of $IP: index $GIDX"
            section verbs
            python3 /cx4/verbs_objects.py $IBDEV --gid-index $GIDX --ready /tmp/v-ready --go /tmp/v-go \
                --wait $((120 * SLOW)) 2>&1 &
            for i in $(seq $((600 * SLOW))); do [ -e /tmp/v-ready ] && break; sleep 0.1; done
            req ctl roce
            touch /tmp/v-go
            wait
            section after; req ctl roce
            rmmod mlx5_ib
            rmmod mlx5_core
            echo unloaded
        """
        r = eth_vms(env, [vm0], timeout=400, model_args=ROCE_MODEL, files=[VERBS_TOOL])[0]
        assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        v = section(r.job_log, "verbs")
        steps = [json.loads(l) for l in v.splitlines() if l.startswith("{")]
        by = {}
        for s in steps:
            by.setdefault(s["step"], []).append(s)
        assert "closed" in by, f"the verbs program did not finish:\n{v}\n{describe(r)}"
        dev = by["device"][0]
        assert dev["max_qp"] == 1 << 18 and dev["port_state"] == 4 and dev["link_layer"] == 2, dev
        mr = by["mr"][0]
        assert mr["length"] == 65536 and mr["lkey"] and mr["rkey"], mr
        qps = {q["type"]: q for q in by["qp"]}
        assert set(qps) == {"rc", "uc", "ud"}, qps
        for t in ("rc", "uc"):
            q = qps[t]
            want = dict(state=3, path_mtu=3, dest_qp_num=q["qpn"], rq_psn=0x4242, sq_psn=0x5151,
                        hop_limit=64)
            assert {k: q[k] for k in want} == want, (t, q)
        rc = qps["rc"]
        assert (rc["timeout"], rc["retry_cnt"], rc["rnr_retry"], rc["min_rnr_timer"]) == \
            (14, 7, 6, 12), rc
        assert rc["max_rd_atomic"] == 2 and rc["max_dest_rd_atomic"] == 4, rc
        assert qps["ud"]["state"] == 3 and qps["ud"]["qkey"] == 0x11111111, qps["ud"]
        assert by["bad-transition"][0]["refused"], by["bad-transition"]
        # The card held the three user QPs in RTS (beside mlx5_ib's own GSI and UMR QPs).
        m = re.search(r"^gids=\d+ qps=\d+.*$", v, re.M)
        assert m, v
        for t, st in (("rc", "RC"), ("uc", "UC"), ("ud", "UD")):
            assert f"qp={qps[t]['qpn']:#x}/{st}/RTS" in m.group(0), (t, m.group(0))
        for t in by["teardown"]:
            assert (t["err"], t["reset"]) == (6, 0), t
        after = section(r.job_log, "after")
        for q in qps.values():
            assert f"qp={q['qpn']:#x}/" not in after, after
        errs = mlx5_errors(r.dmesg)
        assert not errs, "\n".join(errs)
        check_clean_dmesg(r.dmesg)

    yield "libmlx5 from user space: PD, MR, CQ, RC/UC/UD QPs to RTS and back, queried", \
        verbs_objects_from_user_space

    @estimate(120)
    def resize_cq_from_user_space():
        """ibv_resize_cq through libmlx5 and mlx5_ib on the model: a CQ grown and shrunk
        while RDMA WRITE completions of a self-connected RC QP wait in its old ring and more
        arrive after; every completion is seen once and in order across the switch; resizes
        below the waiting completions, to 0 and beyond the device's maximum are refused and
        lose nothing."""
        vm0 = IB + """
            eth_up
            ib_up
        """ + GIDX + """
            section resize
            python3 /cx4/verbs_resize_cq.py $IBDEV --gid-index $GIDX --settle $SLOW 2>&1
            section after; req ctl roce
            rmmod mlx5_ib
            rmmod mlx5_core
            echo unloaded
        """
        r = eth_vms(env, [vm0], timeout=300, model_args=ROCE_MODEL, files=[RESIZE_TOOL, RC_FIXTURE])[0]
        assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        check_resize(section(r.job_log, "resize"), r.model_log)
        # The refused resize is a failed MODIFY_CQ that mlx5_core reports; nothing else.
        errs = [l for l in mlx5_errors(r.dmesg) if "MODIFY_CQ" not in l]
        assert not errs, "\n".join(errs)
        check_clean_dmesg(r.dmesg)

    yield "mlx5_ib: ibv_resize_cq with completions in flight, each seen once, bad sizes refused", \
        resize_cq_from_user_space

    def mlx5_ib_tool(tool, args, extra, stats=False):
        """Runs the guest program `tool` (tests/verbs_*.py, with `args`, the RC fixture and the
        `extra` files) through libmlx5 and mlx5_ib on the model, then unloads mlx5_ib; returns its
        report (and with `stats` the model's command counts after the unload, `model_ops`, and
        its `roce` line before it)
        after checking that the VM finished, that the program's QPs and DCTs are gone
        (mlx5_ib's own GSI and UMR QPs stay) and that mlx5 reported nothing."""
        vm0 = IB + """
            eth_up
            ib_up
        """ + GIDX + f"""
            section tool
            python3 /cx4/{tool.name} $IBDEV --gid-index $GIDX {args} 2>&1
            section after; req ctl roce
            rmmod mlx5_ib
            rmmod mlx5_core
            echo unloaded
            section model; req ctl stats
        """
        r = eth_vms(env, [vm0], timeout=300, model_args=ROCE_MODEL,
                    files=[tool, *extra, RC_FIXTURE])[0]
        assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        after = section(r.job_log, "after")
        assert "/RC/" not in after and "/DCI/" not in after and "dct=" not in after, after
        errs = mlx5_errors(r.dmesg)
        assert not errs, "\n".join(errs)
        check_clean_dmesg(r.dmesg)
        if stats:
            return section(r.job_log, "tool"), model_ops(section(r.job_log, "model")), after
        return section(r.job_log, "tool")

    @estimate(120)
    def small_verbs_from_user_space():
        """tests/verbs_small.py through libmlx5 and mlx5_ib on the model (ib.py runs it on
        cx4 with the same checks): remote operations the responder's QP access flags do not
        grant complete with remote access errors, those they grant work, rights changed in
        RTS take effect, and the MR's rights are checked too; an SRQ's armed limit raises
        one IBV_EVENT_SRQ_LIMIT_REACHED when fewer WQEs are left, and disarms; dynamic UARs
        (UAR objects) are allocated, mapped and rung through."""
        check_small(mlx5_ib_tool(SMALL_TOOL, "--settle $SLOW", []))

    yield "mlx5_ib: QP remote rights, SRQ limit event (verbs_small.py)", \
        small_verbs_from_user_space

    @estimate(120)
    def clock_from_user_space():
        """tests/verbs_clock.py through libmlx5 and mlx5_ib on the model (ib.py runs it on cx4
        with the same checks): completion timestamps of an extended CQ increase and lie
        between reads of the internal timer (ibv_query_rt_values_ex, the core-clock page); the
        clock-info page converts them to the PHC's time and follows phc_ctl's frequency and
        time adjustments; wall-clock completion times come through it."""
        check_clock(mlx5_ib_tool(CLOCK_TOOL, "", []))

    yield "mlx5_ib: completion timestamps, clock-info page, PHC adjustments (verbs_clock.py)", \
        clock_from_user_space

    @estimate(120)
    def memory_windows_from_user_space():
        """tests/verbs_mw.py through libmlx5 and mlx5_ib on the model (ib.py runs it on cx4
        with the same checks): type 1 and type 2 memory windows bound by UMR WQEs give remote
        access inside the window with its own rights and refuse it outside; a type 2 window
        serves its bound QP only and is invalidated by SEND_WITH_INV and LOCAL_INV."""
        check_mw(mlx5_ib_tool(MW_TOOL, "--settle $SLOW", [SMALL_TOOL]))

    yield "mlx5_ib: memory windows type 1 and 2 (verbs_mw.py)", memory_windows_from_user_space

    @estimate(150)
    def dc_transport_from_user_space():
        """tests/verbs_dc.py through libmlx5's mlx5dv and mlx5_ib on the model, one card
        looping back (`dc_one_vm`; ib.py runs it on cx4 with the same checks): DCIs and DCTs
        as rdma-core's test_mlx5_dc.py makes them; SEND into a DCT's SRQ, RDMA WRITE and READ,
        one DCI alternating between two DCTs, data checked; a wrong access key goes
        unanswered (the card counts the violation), the DCI's retries run out, and it takes
        no receive WQE; QUERY_DCT answers. Every DCT was drained (DRAIN_DCT, the DCT_DRAINED
        event mlx5_ib waits for) and destroyed, and no command failed."""
        dc_one_vm(env, IB + "eth_up\nib_up\n", "rmmod mlx5_ib; rmmod mlx5_core", [],
                  mlx5_errors)

    yield "mlx5_ib: DC transport, DCIs to DCTs, SEND/WRITE/READ and the access key " \
        "(verbs_dc.py)", dc_transport_from_user_space

    @soak
    @estimate(180)
    def dc_transport_between_vms():
        """tests/verbs_dc.py between two VMs with mlx5_ib on modelled cards (`dc_between_vms`;
        ib.py runs it on cx4 with the same checks): vm0's DCTs, vm1's DCIs, the model's DC
        packets on the wire between the cards; the steps and checks of the one-card run on
        each side."""
        dc_between_vms(env, IB + "eth_up\nib_up\n", "rmmod mlx5_ib; rmmod mlx5_core", [],
                       mlx5_errors)

    yield "mlx5_ib: DC transport between two VMs (verbs_dc.py)", dc_transport_between_vms

    @estimate(150)
    def odp_against_an_invalidation_racer():
        """tests/verbs_odp_race.py through libmlx5 and mlx5_ib on the model, one card looping
        back: RDMA WRITE, READ and SEND of 16 KiB between two RC QPs from and into an explicit
        and then the implicit ODP MR over a memfd mapping that a thread zaps (MADV_DONTNEED)
        every half millisecond. Every completion succeeds with retry_cnt 2 — a page fault in
        the middle of a message stalls the send queue and costs no transport retry — and
        every byte lands where it belongs; the card took page faults and mlx5_ib resumed
        each without error."""
        text, _, roce = mlx5_ib_tool(ODP_RACE_TOOL, "--settle $SLOW --rounds 30", [SMALL_TOOL],
                                     stats=True)
        by = check_steps(text, ["explicit", "implicit"], "ODP race")
        assert by["closed"]["zaps"] >= 10, by["closed"]
        m = re.search(r"odp: (\d+) faults (\d+) resumes (\d+) failed", roce)
        assert m, roce
        faults, resumes, failed = map(int, m.groups())
        print(f"{m.group(0)}, {by['closed']['zaps']} zaps", file=sys.stderr)
        assert faults > 0 and resumes == faults and failed == 0, roce

    yield "mlx5_ib: ODP against an invalidation racer (MADV_DONTNEED loop), data checked " \
        "(verbs_odp_race.py)", odp_against_an_invalidation_racer

    @estimate(150)
    def raw_packet_qps_between_vms():
        """Two VMs with mlx5_ib on modelled cards, tests/verbs_raw.py on both (libmlx5 through
        pyverbs): raw packet QPs, ibv_create_flow rules (Ethernet + IPv4/IPv6 + UDP/TCP specs,
        flow tag and drop actions) ahead of the netdev, an RSS QP over four WQs; frames each
        way arrive on the QP their rule names with its flow tag, RSS spreads over the WQs,
        dropped frames reach nothing; wrong requests are refused; the program's QPs are gone
        afterwards and mlx5 reported nothing (ib.py runs it on cx4 with the same checks)."""
        raw_between_vms(env, IB + "eth_up\nib_up\n", "rmmod mlx5_ib; rmmod mlx5_core", [],
                        mlx5_errors)

    yield "mlx5_ib: raw packet QPs, flow steering with tags and drop, RSS QP, between two VMs " \
        "(verbs_raw.py)", raw_packet_qps_between_vms

    @estimate(180)
    def dpdk_testpmd_between_vms():
        """Unmodified DPDK (the guest's dpdk-testpmd and mlx5 PMD) on mlx5_ib on the model in
        two VMs, hugepages in the guest: the PMD opens the device without DEVX (refused) and
        uses its Verbs path (dv_flow_en=0: ibv_create_flow rules; rxq_cqe_comp_en=0: the
        card has no CQE compression), RX through an RSS QP over WQs, TX through a raw
        packet QP. vm1 forwards (macswap), vm0 sends a first burst (tx_first) at vm1's MAC
        and forwards what comes back: the burst bounces between the VMs, and both sides'
        port counters show it went through both ways (ib.py runs it on cx4 with the same
        checks)."""
        dpdk_between_vms(env, IB + "eth_up\nib_up\n", "rmmod mlx5_ib; rmmod mlx5_core", [],
                         mlx5_errors)

    yield "DPDK dpdk-testpmd (mlx5 PMD, Verbs path) forwarding between two VMs on mlx5_ib", \
        dpdk_testpmd_between_vms

    gidx = GIDX

    @estimate(300)
    def rc_uc_pingpong_between_vms():
        """Two VMs, each with upstream mlx5_ib on its own modelled card, one Ethernet segment:
        unmodified ibv_rc_pingpong, ibv_uc_pingpong and ibv_srq_pingpong (16 RC QPs on one
        SRQ) (RoCE v2, 4 KiB messages over a
        1024-byte path MTU, every received buffer checked with --chk) complete all their
        iterations both ways; the cards' RoCE counters show the packets went over the wire."""
        common = IB + """
            eth_up
            ib_up
        """ + gidx
        opts = "-d $IBDEV -g $GIDX -m 1024 -s 4096 -c"
        vm0 = common + f"""
            reach $PEER
            wait_signal server-rc
            section rc; timeout $((120 * SLOW)) ibv_rc_pingpong {opts} -n 200 $PEER
            wait_signal server-uc
            section uc; timeout $((120 * SLOW)) ibv_uc_pingpong {opts} -n 200 $PEER
            wait_signal server-srq
            section srq; timeout $((120 * SLOW)) ibv_srq_pingpong {opts} -n 200 $PEER
            section roce; req ctl roce
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        vm1 = common + f"""
            reach $PEER
            section rc
            timeout $((150 * SLOW)) ibv_rc_pingpong {opts} -n 200 > /tmp/rc.txt 2>&1 &
            listening 18515; signal server-rc; wait; cat /tmp/rc.txt
            section uc
            timeout $((150 * SLOW)) ibv_uc_pingpong {opts} -n 200 > /tmp/uc.txt 2>&1 &
            listening 18515; signal server-uc; wait; cat /tmp/uc.txt
            section srq
            timeout $((150 * SLOW)) ibv_srq_pingpong {opts} -n 200 > /tmp/srq.txt 2>&1 &
            listening 18515; signal server-srq; wait; cat /tmp/srq.txt
            section roce; req ctl roce
            wait_signal done 600
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=600, model_args=ROCE_MODEL)
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, describe(r)
            for kind in ("rc", "uc", "srq"):
                s = section(r.job_log, kind)
                # "8192000 bytes in 0.50 seconds = ..." and "200 iters in ..." from each side.
                assert re.search(r"^\d+ bytes in [\d.]+ seconds", s, re.M) and \
                    re.search(r"^200 iters in", s, re.M), f"{kind} pingpong failed:\n{s}\n{describe(r)}"
                assert "Failed" not in s and "error" not in s.lower(), s
                for line in re.findall(r"^\d+ (?:bytes|iters) in .*$", s, re.M):
                    print(f"vm{rs.index(r)} {kind}: {line}", file=sys.stderr)
            roce = section(r.job_log, "roce")
            m = re.search(r"roce: tx (\d+) pkts \d+ bytes; rx (\d+) pkts", roce)
            assert m and int(m.group(1)) >= 400 and int(m.group(2)) >= 400, roce
            errs = mlx5_errors(r.dmesg)
            assert not errs, "\n".join(errs)
            check_clean_dmesg(r.dmesg)

    yield "ibv_rc_pingpong, ibv_uc_pingpong, ibv_srq_pingpong between two VMs, data checked", \
        rc_uc_pingpong_between_vms

    @estimate(300)
    def odp_pingpong_between_vms():
        """On-demand paging (Documentation/odp.md): mlx5_ib reports ODP and implicit ODP on
        the modelled ConnectX-4 (ibv_devinfo -v), and unmodified ibv_rc_pingpong runs with an
        explicit ODP MR (-o), the same prefetched (-o -P: ibv_advise_mr) and an implicit ODP MR
        (-O) between two VMs, every received buffer checked (--chk), while memory compaction
        migrates the pages under the MRs (MMU notifier invalidations, UMR zaps) in a loop on
        both sides. The card raised page faults and mlx5_ib resumed every one without error;
        both sides unload cleanly."""
        common = IB + """
            eth_up
            ib_up
        """ + gidx + """
            # Invalidations racing the traffic: compaction migrates the ODP pages.
            ( while :; do echo 1 > /proc/sys/vm/compact_memory; sleep 0.2; done ) &
            COMPACT=$!
        """
        opts = "-d $IBDEV -g $GIDX -m 1024 -s 16384 -c -n 100"
        runs = [("odp", "-o"), ("odp-prefetch", "-o -P"), ("implicit", "-O")]
        vm0 = common + "reach $PEER\nsection caps; ibv_devinfo -v -d $IBDEV | grep -A12 -i odp\n"
        vm1 = common + "reach $PEER\n"
        for tag, flag in runs:
            vm0 += f"""
            wait_signal server-{tag}
            section {tag}; timeout $((150 * SLOW)) ibv_rc_pingpong {opts} {flag} $PEER
            """
            vm1 += f"""
            section {tag}
            timeout $((180 * SLOW)) ibv_rc_pingpong {opts} {flag} > /tmp/{tag}.txt 2>&1 &
            listening 18515; signal server-{tag}; wait $!; cat /tmp/{tag}.txt
            """
        tail = """
            kill $COMPACT
            section roce; req ctl roce
        """
        vm0 += tail + """
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        vm1 += tail + """
            wait_signal done 600
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=900, model_args=ROCE_MODEL)
        caps = section(rs[0].job_log, "caps")
        assert "ODP_SUPPORT_IMPLICIT" in caps and "SUPPORT_SEND" in caps and \
            "SUPPORT_RECV" in caps, caps
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, describe(r)
            for tag, _ in runs:
                t = section(r.job_log, tag)
                assert re.search(r"^\d+ bytes in [\d.]+ seconds", t, re.M) and \
                    re.search(r"^100 iters in", t, re.M), f"{tag} pingpong failed:\n{t}\n{describe(r)}"
                assert "Failed" not in t and "error" not in t.lower(), t
            roce = section(r.job_log, "roce")
            m = re.search(r"odp: (\d+) faults (\d+) resumes (\d+) failed", roce)
            assert m, roce
            faults, resumes, failed = map(int, m.groups())
            print(f"vm{rs.index(r)} {m.group(0)}", file=sys.stderr)
            assert faults > 0 and resumes == faults and failed == 0, roce
            errs = mlx5_errors(r.dmesg)
            assert not errs, "\n".join(errs)
            check_clean_dmesg(r.dmesg)

    yield "ODP: ibv_rc_pingpong -o, -o -P and -O between two VMs with compaction racing, " \
        "data checked", odp_pingpong_between_vms


    # perftest runs between two mlx5_ib guests: (tool, options) in order.
    perftests = [("ib_write_bw", "-s 65536 -n 200"), ("ib_read_bw", "-s 65536 -n 200"),
                 ("ib_send_bw", "-s 65536 -n 200"), ("ib_atomic_bw", "-n 200"),
                 ("ib_write_lat", "-s 8 -n 200"), ("ib_read_lat", "-s 8 -n 200"),
                 ("ib_send_lat", "-s 8 -n 200"), ("ib_atomic_lat", "-n 200")]
    # Each once with its connection exchanged over TCP and once through rdma_cm (-R: CM MADs
    # on QP1), named `tool` and `tool-cm`.
    perftests = [(t, t, o) for t, o in perftests] + [(f"{t}-cm", t, o + " -R") for t, o in perftests]

    @soak
    @estimate(300)
    def perftest_between_vms():
        """Unmodified perftest between two mlx5_ib guests on the model: ib_write/read/send/
        atomic, bandwidth (64 KiB, 200 iterations) and latency (8 B), connected over TCP and
        through rdma_cm (-R); each completes and reports a result; the cards count the
        packets."""
        common = IB + """
            eth_up
            ib_up
        """ + gidx
        server = "".join(f"""
            timeout $((200 * SLOW)) {tool} -d $IBDEV -x $GIDX -F {o} > /tmp/{name}.txt 2>&1 &
            {"sleep $((2 * SLOW))" if "-R" in o else "listening 18515"}; signal {name}
            wait || echo "{name} server failed rc=$?"
            section {name}; cat /tmp/{name}.txt
        """ for name, tool, o in perftests)
        client = "".join(f"""
            wait_signal {name}
            section {name}
            timeout $((180 * SLOW)) {tool} -d $IBDEV -x $GIDX -F {o} $PEER || echo "{name} failed rc=$?"
        """ for name, tool, o in perftests)
        vm0 = common + "reach $PEER\n" + client + """
            section roce; req ctl roce
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        vm1 = common + "reach $PEER\n" + server + """
            section roce; req ctl roce
            wait_signal done 600
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=900, model_args=ROCE_MODEL)
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        client_log = rs[0].job_log
        for name, _, _ in perftests:
            s = section(client_log, name)
            assert "failed" not in s, f"{name}:\n{s}\n{describe(rs[0])}\n{section(rs[1].job_log, name)}"
            # The result row: "#bytes #iterations ..." then numbers.
            row = perftest_row(s, name)
            assert row.group(2) == "200", f"{name}: {row.group(0)}"
            print(f"{name}: {row.group(0).strip()}", file=sys.stderr)
        for r in rs:
            roce = section(r.job_log, "roce")
            m = re.search(r"roce: tx (\d+) pkts \d+ bytes; rx (\d+) pkts", roce)
            assert m and int(m.group(1)) > 1000 and int(m.group(2)) > 1000, roce
            errs = mlx5_errors(r.dmesg)
            assert not errs, "\n".join(errs)
            check_clean_dmesg(r.dmesg)

    yield "perftest ib_write/read/send/atomic bw and lat, with and without rdma_cm, between two VMs", \
        perftest_between_vms

    @estimate(300)
    def ud_pingpong_and_rdma_cm_between_vms():
        """Two VMs with mlx5_ib on modelled cards: unmodified ibv_ud_pingpong (UD SENDs, 1 KiB,
        --chk: the data after the 40-byte GRH area), then rdma_cm, whose connection setup is
        MADs on mlx5_ib's hardware GSI QP (QP1): udaddy (SIDR REQ/REP, UD QPs) and rping (CM
        REQ/REP/RTU, an RC QP, data checked with -V). The cards' UD counters show the
        traffic, nothing dropped for a wrong Q_Key."""
        common = IB + """
            eth_up
            ib_up
        """ + gidx
        opts = "-d $IBDEV -g $GIDX -s 1024 -c"
        vm0 = common + f"""
            reach $PEER
            wait_signal server-ud
            section ud; timeout $((120 * SLOW)) ibv_ud_pingpong {opts} -n 200 $PEER
            {udaddy_steps(server=False)}
            wait_signal server-rping
            section rping; timeout $((60 * SLOW)) rping -c -a $PEER -C 20 -S 64 -V -v; echo "rc=$?"
            section roce; req ctl roce
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        vm1 = common + f"""
            reach $PEER
            section ud
            timeout $((150 * SLOW)) ibv_ud_pingpong {opts} -n 200 > /tmp/ud.txt 2>&1 &
            sleep $((2 * SLOW)); signal server-ud; wait; cat /tmp/ud.txt
            {udaddy_steps(server=True)}
            section rping
            timeout $((90 * SLOW)) rping -s -a $IP -C 20 -S 64 -V -v > /tmp/rping.txt 2>&1 & pid=$!
            sleep $((2 * SLOW)); signal server-rping; wait $pid; echo "rc=$?"; cat /tmp/rping.txt
            section roce; req ctl roce
            wait_signal done 600
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=600, model_args=ROCE_MODEL)
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, describe(r)
            s = section(r.job_log, "ud")
            assert re.search(r"^\d+ bytes in [\d.]+ seconds", s, re.M) and \
                re.search(r"^200 iters in", s, re.M), f"ud pingpong failed:\n{s}\n{describe(r)}"
            assert "invalid data" not in s and "Failed" not in s, s
            s = section(r.job_log, "rping")
            assert "rc=0" in s, f"rping failed:\n{s}\n{describe(r)}"
            roce = section(r.job_log, "roce")
            m = re.search(r"ud: tx (\d+) \(\d+ bad av, \d+ mc looped\) rx (\d+) \(dropped: (\d+) qkey",
                          roce)
            assert m and int(m.group(1)) >= 200 and int(m.group(2)) >= 200, roce
            assert m.group(3) == "0", f"packets dropped for their Q_Key:\n{roce}"
            errs = mlx5_errors(r.dmesg)
            assert not errs, "\n".join(errs)
            check_clean_dmesg(r.dmesg)
        check_udaddy(rs)

    yield "ibv_ud_pingpong, rdma_cm over QP1 (udaddy, rping) between two VMs", \
        ud_pingpong_and_rdma_cm_between_vms

    @estimate(200)
    def rdma_cm_multicast_between_vms():
        """mckey: vm1 joins 239.1.2.3 through rdma_cm (mlx5_ib attaches its UD QP to the group
        with ATTACH_TO_MCG) and receives the 20 datagrams vm0 sends to the group (BTH
        destination QP 0xFFFFFF)."""
        common = IB + """
            eth_up
            ib_up
        """ + gidx + "reach $PEER\n"
        vm0 = common + mckey_steps(receiver=False) + """
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        vm1 = common + mckey_steps(receiver=True) + """
            section roce; req ctl roce
            wait_signal done 600
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=400, model_args=ROCE_MODEL)
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, describe(r)
            check_clean_dmesg(r.dmesg)
        check_mckey(rs, receiver=1)

    yield "rdma_cm multicast (mckey) between two VMs", rdma_cm_multicast_between_vms

    @estimate(250)
    def rc_error_paths_between_vms():
        """The RC error paths through mlx5_ib and libmlx5 on both sides (tests/verbs_errors.py):
        RNR retries exhausted (RNR_RETRY_EXC_ERR, the next WQE flushed, the responder still
        RTS) and an RNR recovered when the receive comes late (the requester's
        rnr_nak_retry_err counter rises); an RDMA WRITE to a read-only buffer and a READ past a
        buffer's end (REM_ACCESS_ERR at the requester; at the responder the QP in ERR, the
        IBV_EVENT_QP_ACCESS_ERR async event, the posted receive flushed); a SEND longer than the
        receive (REM_INV_REQ_ERR and LOC_LEN_ERR)."""
        common = IB + """
            eth_up
            ib_up
        """ + gidx + "reach $PEER\n"
        vm0 = common + errors_steps(server=False) + """
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        vm1 = common + errors_steps(server=True) + """
            wait_signal done 600
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=700, model_args=ROCE_MODEL, files=[ERRORS_TOOL])
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, logs(rs)
            check_clean_dmesg(r.dmesg)
        check_error_paths(rs)
        for r in rs:
            errs = [l for l in mlx5_errors(r.dmesg) if "QP" not in l and "qp" not in l]
            assert not errs, "\n".join(errs)

    yield "RC error paths: RNR exhausted and recovered, remote access errors with the async " \
        "event, too-long SEND — statuses on both sides", rc_error_paths_between_vms

    @estimate(300)
    def rc_over_a_lossy_wire():
        """Both cards drop 1 % and reorder 1 % of the RoCE frames they receive (`roce-wire`):
        ibv_rc_pingpong --chk (16 KiB messages, 150 iterations each way), rping -V (RDMA READ
        and WRITE of 65000 bytes, verified) and ib_write_bw all complete with correct data; the
        wire faults were applied and mlx5_ib's retransmission counters (hw_counters:
        packet_seq_err, local_ack_timeout_err, out_of_sequence, duplicate_request) rose."""
        common = IB + """
            eth_up
            ib_up
        """ + gidx + "reach $PEER\n"
        vm0 = common + lossy_steps(server=False) + """
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        vm1 = common + lossy_steps(server=True) + """
            wait_signal done 900
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=1000, model_args=ROCE_MODEL)
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, logs(rs)
            check_clean_dmesg(r.dmesg)
        check_lossy(rs)

    yield "RC over a lossy wire (1% drop, 1% reorder): pingpong, rping -V, ib_write_bw " \
        "complete, retransmission counters rise", rc_over_a_lossy_wire

    @estimate(250)
    def xrc_and_ucmatose_between_vms():
        """XRC through mlx5_ib and libmlx5: unmodified ibv_xsrq_pingpong with a server serving
        two clients (XRC initiator QPs in vm0 sending to the XRC SRQs behind vm1's target QPs,
        and back), 100 messages each; then rdma_cm's ucmatose (4 connections, RC QPs, 50
        messages each way) — the cards count the XRC packets and refuse none."""
        common = IB + """
            eth_up
            ib_up
        """ + gidx
        xopts = "-d $IBDEV -g $GIDX -m 1024 -n 100"
        vm0 = common + f"""
            reach $PEER
            wait_signal server-xrc
            section xrc
            timeout $((120 * SLOW)) ibv_xsrq_pingpong {xopts} $PEER > /tmp/x1.txt 2>&1 & p1=$!
            timeout $((120 * SLOW)) ibv_xsrq_pingpong {xopts} $PEER > /tmp/x2.txt 2>&1 & p2=$!
            rc1=0; wait $p1 || rc1=$?; rc2=0; wait $p2 || rc2=$?; echo "rc1=$rc1 rc2=$rc2"; cat /tmp/x1.txt /tmp/x2.txt
            wait_signal server-cma
            section cma; timeout $((120 * SLOW)) ucmatose -s $PEER -b $IP -c 4 -C 50 && echo rc=0 || echo "rc=$?"
            section roce; req ctl roce
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        vm1 = common + f"""
            reach $PEER
            section xrc
            timeout $((150 * SLOW)) ibv_xsrq_pingpong {xopts} -c 2 > /tmp/x.txt 2>&1 & pid=$!
            sleep $((2 * SLOW)); signal server-xrc; rc=0; wait $pid || rc=$?; echo "rc=$rc"; cat /tmp/x.txt
            section cma
            timeout $((150 * SLOW)) ucmatose -b $IP -c 4 -C 50 > /tmp/c.txt 2>&1 & pid=$!
            sleep $((2 * SLOW)); signal server-cma; rc=0; wait $pid || rc=$?; echo "rc=$rc"; cat /tmp/c.txt
            section roce; req ctl roce
            wait_signal done 600
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=600, model_args=ROCE_MODEL)
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, logs(rs)
            s = section(r.job_log, "xrc")
            ok = ("rc1=0" in s and "rc2=0" in s) if r.name == "vm0" else "rc=0" in s
            assert ok and s.count("success") == (2 if r.name == "vm0" else 1), \
                f"{r.name}: ibv_xsrq_pingpong failed:\n{s}\n{logs(rs)}"
            s = section(r.job_log, "cma")
            assert "rc=0" in s and "data transfers complete" in s, \
                f"{r.name}: ucmatose failed:\n{s}\n{logs(rs)}"
            roce = section(r.job_log, "roce")
            m = re.search(r"xrc: (\d+) bad srq (\d+) misdirected", roce)
            assert m and m.groups() == ("0", "0"), roce
            errs = mlx5_errors(r.dmesg)
            assert not errs, "\n".join(errs)
            check_clean_dmesg(r.dmesg)

    yield "ibv_xsrq_pingpong (XRC, two clients) and ucmatose between two VMs", \
        xrc_and_ucmatose_between_vms

    @soak
    @estimate(300)
    def ecn_cnp_and_dcqcn_between_vms():
        """Congestion control seen through mlx5_ib: vm1's card marks half the RoCE requests it
        receives CE (`roce-wire ecn=50`, as a congested switch would); while ib_write_bw runs
        from vm0, vm1's notification point answers with CNPs (hw_counters
        np_ecn_marked_roce_packets, np_cnp_sent) and vm0's reaction point handles them
        (rp_cnp_handled) — the transfer still completes. mlx5_ib's cc_params debugfs reads the
        card's parameters and a write changes them (MODIFY/QUERY_CONG_PARAMS)."""
        common = IB + """
            eth_up
            ib_up
        """ + gidx + """
            mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
            cc=/sys/kernel/debug/mlx5/0000:01:00.0/cc_params
            reach $PEER
        """
        vm0 = common + """
            section cc
            echo "before $(cat $cc/rp_ai_rate)"
            echo 17 > $cc/rp_ai_rate
            echo "after $(cat $cc/rp_ai_rate)"
        """ + ecn_steps(receiver=False) + """
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        vm1 = common + ecn_steps(receiver=True) + """
            wait_signal done 600
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=700, model_args=ROCE_MODEL)
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, logs(rs)
            errs = mlx5_errors(r.dmesg)
            assert not errs, "\n".join(errs)
            check_clean_dmesg(r.dmesg)
        check_ecn(rs, sender=0, receiver=1)
        cc = section(rs[0].job_log, "cc")
        assert re.search(r"^after 17$", cc, re.M) and re.search(r"^before \d+$", cc, re.M), cc

    yield "ECN marks -> CNPs -> DCQCN between two VMs, cc_params through mlx5_ib's debugfs", \
        ecn_cnp_and_dcqcn_between_vms

    # make soak: ib.py's cx4 <-> rxe test runs the same model against rxe in make test.
    @soak
    @estimate(350)
    def more_traffic_with_rxe():
        """mlx5_ib on the model (vm0) and soft-RoCE (vm1, virtio-net), each as the server in
        turn, so that the model's RoCEv2 packets (headers, ICRC, ACKs) are what another RoCE
        stack accepts and vice versa: ib_write_bw (64 KiB), ib_read_lat (8 B), ibv_ud_pingpong
        --chk, ibv_rc_pingpong --chk (4 KiB over MTU 1024) and rping -V all complete both ways;
        the model rejects none of rxe's packets. (ib_read_lat runs with
        -o 16: perftest gives each QP the peer's outstanding-READ count, rxe offers 128 and the
        card takes 16, its log_max_ra_req_qp, as a real ConnectX-4 does. perftest's QP ACK timeout
        is raised from 14 (67 ms) to 20 (4.3 s) on the debug kernel, where rxe under KASAN
        answers 128 outstanding 64 KiB WRITEs slower than seven 67 ms timeouts allow.)"""
        def side(server: bool) -> str:
            if server:
                return QPTO + """
                section bw-S; timeout $((200 * SLOW)) ib_write_bw -d $IBDEV -x $GIDX -F -s 65536 -n 200 -u $QPTO > /tmp/o.txt 2>&1 & pid=$!
                sleep $((2 * SLOW)); signal s-bw-$me; rc=0; wait $pid || rc=$?; echo "rc=$rc"; cat /tmp/o.txt
                section lat-S; timeout $((200 * SLOW)) ib_read_lat -d $IBDEV -x $GIDX -F -s 8 -n 200 -o 16 -u $QPTO > /tmp/o.txt 2>&1 & pid=$!
                sleep $((2 * SLOW)); signal s-lat-$me; rc=0; wait $pid || rc=$?; echo "rc=$rc"; cat /tmp/o.txt
                section ud-S; timeout $((200 * SLOW)) ibv_ud_pingpong -d $IBDEV -g $GIDX -s 1024 -c -n 200 > /tmp/o.txt 2>&1 & pid=$!
                sleep $((2 * SLOW)); signal s-ud-$me; rc=0; wait $pid || rc=$?; echo "rc=$rc"; cat /tmp/o.txt
                section rc-S; timeout $((200 * SLOW)) ibv_rc_pingpong -d $IBDEV -g $GIDX -m 1024 -s 4096 -c -n 200 > /tmp/o.txt 2>&1 & pid=$!
                sleep $((2 * SLOW)); signal s-rc-$me; rc=0; wait $pid || rc=$?; echo "rc=$rc"; cat /tmp/o.txt
                section rping-S; timeout $((200 * SLOW)) rping -s -a $IP -C 20 -S 4096 -V > /tmp/o.txt 2>&1 & pid=$!
                sleep $((2 * SLOW)); signal s-rping-$me; rc=0; wait $pid || rc=$?; echo "rc=$rc"; cat /tmp/o.txt
                """
            return QPTO + """
                wait_signal s-bw-$peer
                section bw-C; timeout $((180 * SLOW)) ib_write_bw -d $IBDEV -x $GIDX -F -s 65536 -n 200 -u $QPTO $PEER && echo rc=0 || echo "rc=$?"
                wait_signal s-lat-$peer
                section lat-C; timeout $((180 * SLOW)) ib_read_lat -d $IBDEV -x $GIDX -F -s 8 -n 200 -o 16 -u $QPTO $PEER && echo rc=0 || echo "rc=$?"
                wait_signal s-ud-$peer
                section ud-C; timeout $((180 * SLOW)) ibv_ud_pingpong -d $IBDEV -g $GIDX -s 1024 -c -n 200 $PEER && echo rc=0 || echo "rc=$?"
                wait_signal s-rc-$peer
                section rc-C; timeout $((180 * SLOW)) ibv_rc_pingpong -d $IBDEV -g $GIDX -m 1024 -s 4096 -c -n 200 $PEER && echo rc=0 || echo "rc=$?"
                wait_signal s-rping-$peer
                section rping-C; timeout $((180 * SLOW)) rping -c -a $PEER -C 20 -S 4096 -V && echo rc=0 || echo "rc=$?"
                """
        vm0 = IB + """
            eth_up
            ib_up
        """ + gidx + "reach $PEER\n" + side(True) + "signal half\n" + side(False) + """
            section roce; req ctl roce
            signal done
            rmmod mlx5_ib; rmmod mlx5_core
            echo unloaded
        """
        vm1 = IB + """
            rxe_up
        """ + gidx + "reach $PEER\n" + side(False) + "wait_signal half\n" + side(True) + """
            wait_signal done 900
            rdma link delete rxe0
            echo unloaded
        """
        rs = eth_vms(env, [vm0, vm1], timeout=1000, model_args=ROCE_MODEL, virtio=(1,))
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, logs(rs)
            for tool in ("bw", "lat", "ud", "rc", "rping"):
                for role in ("S", "C"):
                    s = section(r.job_log, f"{tool}-{role}")
                    assert "rc=0" in s, f"{r.name} {tool} as {role}:\n{s}\n{logs(rs)}"
                    if tool in ("ud", "rc"):
                        assert re.search(r"^200 iters in", s, re.M), s
                    if tool in ("bw", "lat"):
                        row = re.search(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)", s, re.M)
                        if row:
                            print(f"{r.name} {tool}-{role}: {row.group(0).strip()}", file=sys.stderr)
            check_clean_dmesg(r.dmesg)
        roce = section(rs[0].job_log, "roce")
        m = re.search(r"rx (\d+) pkts \d+ bytes \((\d+) malformed", roce)
        assert m and int(m.group(1)) > 1000 and m.group(2) == "0", roce
        errs = mlx5_errors(rs[0].dmesg)
        assert not errs, "\n".join(errs)

    yield "mlx5_ib on the model <-> rxe: ib_write_bw, ib_read_lat, ibv_ud/rc_pingpong, " \
        "rping both ways", more_traffic_with_rxe
