"""cx4's Ethernet netdev on the model, judged against NVIDIA's upstream mlx5e: one VM runs cx4,
the other mlx5_core + mlx5e, each on its own modelled card on the run's segment (the harness
of model_eth.py), and they move real traffic.
"""

from __future__ import annotations

import json
import re
import sys

from harness import Env, check_clean_dmesg, describe, estimate, soak
from model_eth import (DCB_JOB, DCB_MODEL, MS_RSS_KEY, NTUPLE_JOB, PFC_TOOL, PHC_JOB, PTP_JOB,
                       QSTATS_JOB, RSS_RECONF_JOB, RXFH_FIELDS_JOB, XFER, assert_clean, check_dcb,
                       check_napi_links, check_ntuple, check_phc, check_ptp, check_qstats,
                       check_rss_reconf, check_rxfh_fields, eth_vms, ethtool_stats, iperf_rate,
                       rise, section)

DEVLINK = "pci/0000:01:00.0"


def devlink_json(job_log: str, name: str) -> dict:
    """The JSON `devlink -j ...` printed first in section `name` (one line)."""
    text = (section(job_log, name).strip().splitlines() or [""])[0]
    try:
        return json.loads(text)
    except ValueError:
        raise AssertionError(f"section {name!r} is not devlink JSON:\n{text}") from None


# Guest helper for the cx4 side: load cx4.ko and bring its netdev up like eth_up does for
# mlx5e.
CX4_UP = r"""
cx4_up() {
    insmod /cx4/cx4.ko
    for i in $(seq 200); do
        IF=$(ls /sys/bus/pci/devices/0000:01:00.0/net/ 2>/dev/null | head -1)
        [ -n "$IF" ] && break
        sleep 0.1
    done
    [ -n "$IF" ] || { echo "no netdev from cx4"; dmesg | tail -30; return 1; }
    ip link set "$IF" up
    ip addr add $IP/24 dev "$IF"
    ip -6 addr add $IP6/64 dev "$IF" nodad
    for i in $(seq 300); do
        [ "$(cat /sys/class/net/$IF/carrier 2>/dev/null)" = 1 ] && break
        sleep 0.1
    done
}
"""


def cx4_errors(dmesg: str) -> list[str]:
    """Lines where cx4 reported a problem (errors, warnings, failed commands)."""
    return [l for l in dmesg.splitlines()
            if "cx4" in l and re.search(r"fail|error|warn|timeout|bad|BUG|WARNING", l, re.I)]


def tests(env: Env):
    @estimate(240)
    def cx4_and_mlx5e_ping_iperf():
        """cx4 (vm0) and mlx5e (vm1): link up, ethtool shows cx4, IPv4/IPv6 ping both ways,
        iperf3 TCP both directions with TSO and checksum offload counted on both sides,
        clean unload with every object returned to the model."""
        vm0 = CX4_UP + """
            cx4_up
            section link; ip -d link show "$IF"; ethtool "$IF"; ethtool -i "$IF"; ethtool -k "$IF"
            section before; stats
            reach $PEER
            section ping4; ping -c 5 -i 0.2 $PEER
            section ping6; ping -c 5 -i 0.2 $PEER6
            # Frames of 256 bytes (copied out of their page) and 257 (built over it); ping
            # checks the echoed payload.
            section ping-copybreak
            for s in 32 214 215 1400; do ping -c 2 -i 0.2 -s $s $PEER | grep -E "loss|wrong"; done
            wait_signal server
            section model-pre; req ctl stats
            section iperf-tx; iperf -c $PEER -t 5 -f m
            section iperf-rx; iperf -c $PEER -t 5 -f m -R
            section model-post; req ctl stats
            section after; stats
            # CQ moderation (ethtool -c/-C): mlx5e's defaults, the CQ context's limits, and a
            # change that reaches the card: off, no event is held back; on, a stream's are.
            section coal-default; ethtool -c "$IF"
            section coal-range
            ethtool -C "$IF" rx-usecs 4096 2>&1 && echo "4096 accepted" || echo "4096 refused"
            ethtool -C "$IF" adaptive-rx off adaptive-tx off rx-usecs 0 rx-frames 0 tx-usecs 0 tx-frames 0
            section coal-off; ethtool -c "$IF"
            section model-0; req ctl stats
            iperf3 -c $PEER -t 2 > /dev/null
            section model-1; req ctl stats
            ethtool -C "$IF" rx-usecs 4000 rx-frames 64 tx-usecs 4000 tx-frames 64
            section coal-on; ethtool -c "$IF"
            iperf3 -c $PEER -t 2 > /dev/null
            section model-2; req ctl stats
            signal done
            ip link set "$IF" down
            rmmod cx4
            echo unloaded
        """
        vm1 = """
            eth_up
            section coal; ethtool -c "$IF"
            section before; stats
            reach $PEER
            section ping4; ping -c 5 -i 0.2 $PEER
            section ping6; ping -c 5 -i 0.2 $PEER6
            iperf3 -s -D
            sleep 1
            signal server
            wait_signal done 600
            section after; stats
            rmmod mlx5_core
            echo unloaded
        """
        res = eth_vms(env, [vm0, vm1], timeout=400, files=[env.ko])
        assert_clean(res)
        r0, r1 = res
        for r in res:
            assert "unloaded" in r.job_log, describe(r)
            for s in ("ping4", "ping6"):
                assert " 0% packet loss" in section(r.job_log, s), f"{r.name}: {section(r.job_log, s)}"
        link = section(r0.job_log, "link")
        assert "driver: cx4" in link and "Link detected: yes" in link, link
        assert re.search(r"tcp-segmentation-offload: on", link), link
        tx, rx = iperf_rate(section(r0.job_log, "iperf-tx")), iperf_rate(section(r0.job_log, "iperf-rx"))
        b0, a0 = ethtool_stats(section(r0.job_log, "before")), ethtool_stats(section(r0.job_log, "after"))
        b1, a1 = ethtool_stats(section(r1.job_log, "before")), ethtool_stats(section(r1.job_log, "after"))
        assert rise(b0, a0, "tx_tso_packets") > 0, f"cx4: no TSO: {a0}"
        assert rise(b0, a0, "tx_csum_partial") > 0, f"cx4: no TX checksum offload: {a0}"
        assert rise(b0, a0, "rx_csum_unnecessary") > 0, f"cx4: no RX checksum verdicts: {a0}"
        cb = section(r0.job_log, "ping-copybreak")
        assert cb.count(" 0% packet loss") == 4 and "wrong" not in cb, cb
        # Echo replies and ACKs are copied; the stream's full-size frames are not.
        assert 0 < rise(b0, a0, "rx_copybreak") < rise(b0, a0, "rx_packets"), a0
        assert rise(b1, a1, "tx_tso_packets") > 0, f"mlx5e: no TSO: {a1}"
        assert rise(b1, a1, "rx_csum_complete") + rise(b1, a1, "rx_csum_unnecessary") > 0, a1
        coal = lambda s: {k: int(v) for k, v in re.findall(
            r"^(rx-usecs|rx-frames|tx-usecs|tx-frames):\s+(\d+)", section(r0.job_log, s), re.M)}
        # The defaults are mlx5e's on the same card: DIM on both ways, from its default
        # profiles (receive CQs restarting their period at each completion).
        mlx5e_coal = section(r1.job_log, "coal")
        want = {k: int(v) for k, v in re.findall(
            r"^(rx-usecs|rx-frames|tx-usecs|tx-frames):\s+(\d+)", mlx5e_coal, re.M)}
        assert len(want) == 4 and re.search(r"Adaptive RX: on\s+TX: on", mlx5e_coal), mlx5e_coal
        assert coal("coal-default") == want, section(r0.job_log, "coal-default") + mlx5e_coal
        assert re.search(r"Adaptive RX: on\s+TX: on", section(r0.job_log, "coal-default")), \
            section(r0.job_log, "coal-default")
        assert re.search(r"Adaptive RX: off\s+TX: off", section(r0.job_log, "coal-off")), \
            section(r0.job_log, "coal-off")
        # DIM (on by default) moved the CQs' moderation under the streams, and the card took
        # every change.
        mcq = [re.search(r"\bMODIFY_CQ=(\d+)/(\d+)", section(r0.job_log, s))
               for s in ("model-pre", "model-post")]
        assert all(mcq), [section(r0.job_log, s) for s in ("model-pre", "model-post")]
        assert int(mcq[1].group(1)) > int(mcq[0].group(1)) and mcq[1].group(2) == "0", \
            f"no DIM moderation change: {mcq[0].group(0)} -> {mcq[1].group(0)}"
        assert "4096 refused" in section(r0.job_log, "coal-range"), section(r0.job_log, "coal-range")
        assert set(coal("coal-off").values()) == {0}, section(r0.job_log, "coal-off")
        assert coal("coal-on") == {"rx-usecs": 4000, "rx-frames": 64, "tx-usecs": 4000,
                                   "tx-frames": 64}, section(r0.job_log, "coal-on")
        held = [int(m.group(1)) if m else -1 for m in (
            re.search(r"\bcq_moderated=(\d+)", section(r0.job_log, f"model-{i}")) for i in range(3))]
        # (Whether the default 8/16 µs hold anything back depends on how fast the TCG guest
        # re-arms; 4 ms between a stream's completions always does.)
        assert held[0] >= 0 and held[1] == held[0], f"moderation off, yet events were held back: {held}"
        assert held[2] > held[1], f"moderation on, no event held back: {held}"
        errs = cx4_errors(r0.dmesg)
        assert not errs, "cx4 reported:\n" + "\n".join(errs)
        print(f"    iperf3 cx4->mlx5e {tx:.0f} Mbit/s, mlx5e->cx4 {rx:.0f} Mbit/s; "
              f"events held back by CQ moderation: {held}")

    @estimate(300)
    def jumbo_and_tunnels():
        """MTU 9000 between cx4 and mlx5e, then VXLAN, GENEVE and GRE (gretap with a key)
        tunnels over the two netdevs with iperf3 through each: cx4 offloads inner checksum and
        TSO on VXLAN and GRE (the device parses them); GENEVE needs the software parser,
        which ConnectX-4 lacks, so it is checksummed and segmented by the stack (as mlx5e)."""
        common = """
            ip link set "$IF" mtu 9000
            ip link add vx0 type vxlan id 42 remote $PEER dstport 4789 dev "$IF"
            ip link add gn0 type geneve id 43 remote $PEER
            ip link add gt0 type gretap key 44 local $IP remote $PEER
            k=10
            for t in vx0 gn0 gt0; do
                ip addr add 192.168.$k.$((me + 1))/24 dev $t; ip link set $t up; k=$((k + 1))
            done
            section features; ethtool -k "$IF" | grep -E "udp_tnl|gre|tx-checksum|segmentation"
            # Both sides at MTU 9000 before any jumbo frame (an MTU change reopens the rings).
            signal mtu-$me
            wait_signal mtu-$peer
        """
        vm0 = CX4_UP + "cx4_up\n" + common + """
            reach $PEER
            section jumbo; ping -c 3 -M do -s 8972 $PEER
            wait_signal server
            k=10
            for t in vx0 gn0 gt0; do
                reach 192.168.$k.2
                section before-$t; stats
                section iperf-$t; iperf -c 192.168.$k.2 -t 4 -f m
                section after-$t; stats
                k=$((k + 1))
            done
            signal done
            ip link del vx0; ip link del gn0; ip link del gt0
            rmmod cx4
            echo unloaded
        """
        vm1 = "eth_up\n" + common + """
            reach $PEER
            section jumbo; ping -c 3 -M do -s 8972 $PEER
            iperf3 -s -D
            sleep 1
            signal server
            wait_signal done 600
            rmmod mlx5_core
            echo unloaded
        """
        res = eth_vms(env, [vm0, vm1], timeout=500, files=[env.ko])
        assert_clean(res)
        r0 = res[0]
        for r in res:
            assert "unloaded" in r.job_log, describe(r)
            assert " 0% packet loss" in section(r.job_log, "jumbo"), section(r.job_log, "jumbo")
        feats = section(r0.job_log, "features")
        assert "tx-udp_tnl-segmentation: on" in feats and "tx-gre-segmentation: on" in feats, feats
        rates = {}
        for t in ("vx0", "gn0", "gt0"):
            rates[t] = iperf_rate(section(r0.job_log, f"iperf-{t}"))
            assert rates[t] > 0, section(r0.job_log, f"iperf-{t}")
            b = ethtool_stats(section(r0.job_log, f"before-{t}"))
            a = ethtool_stats(section(r0.job_log, f"after-{t}"))
            inner = rise(b, a, "tx_csum_partial_inner")
            if t == "gn0":
                # ConnectX-4 has no software parser (swp caps 0, as the model says): GENEVE
                # TX stays in software on cx4 as on mlx5e; ndo_features_check says so.
                assert inner == 0, f"{t}: inner offload without a software parser: {a}"
            else:
                assert inner > 0, f"{t}: no inner checksum offload counted by cx4: {a}"
                assert rise(b, a, "tx_tso_packets") > 0, f"{t}: no TSO through the tunnel: {a}"
        errs = cx4_errors(r0.dmesg)
        assert not errs, "cx4 reported:\n" + "\n".join(errs)
        print("    " + ", ".join(f"{t} {v:.0f} Mbit/s" for t, v in rates.items()))

    @estimate(300)
    def rss_rings_channels_promisc_link():
        """cx4 with 2 channels: RSS spreads 8 flows over both; ethtool -G, -X and -L under
        traffic; promiscuous mode shows foreign unicast to tcpdump; link down/up from the
        model's control socket drops and restores the carrier."""
        vm0 = CX4_UP + """
            cx4_up
            section channels; ethtool -l "$IF"
            # Toeplitz is linear: with a random key, the few key bits that the low bits of
            # consecutive source ports meet are all 0 one boot in ~16, and every flow lands
            # on one channel. The Microsoft verification key has them set (set with -X hkey).
            ethtool -X "$IF" hkey $MSKEY
            section key; ethtool -x "$IF" | sed -n '/hash key/,/^$/p'
            reach $PEER
            iperf3 -s -D
            sleep 1
            signal server
            wait_signal rss-done 300
            section rss; stats
            section promisc
            timeout 60 tcpdump -i "$IF" -n -e -c 3 ether dst 02:00:00:00:00:99 2>&1 &
            sleep 3
            signal sniffing
            wait_signal foreign-sent 300
            wait $! || true
            section reconf
            iperf3 -c $PEER -n $((72 / SLOW))M -f m > /tmp/reconf.log 2>&1 &
            sleep 2
            ethtool -G "$IF" rx 512 tx 512
            sleep 2
            ethtool -X "$IF" equal 1
            sleep 2
            ethtool -X "$IF" default
            ethtool -L "$IF" combined 1
            sleep 2
            ethtool -L "$IF" combined 2
            wait $! || echo "iperf3 exited with $?"
            cat /tmp/reconf.log
            ethtool -g "$IF"
            ethtool -x "$IF" | head -5
            reach $PEER 30
            section link-down; req ctl link state=down
            for i in $(seq 100); do [ "$(cat /sys/class/net/$IF/carrier)" = 0 ] && break; sleep 0.1; done
            echo "carrier $(cat /sys/class/net/$IF/carrier)"
            ping -c 2 -W 1 $PEER > /dev/null 2>&1 && echo "ping while down: answered" || echo "ping while down: lost"
            section link-up; req ctl link state=up
            for i in $(seq 100); do [ "$(cat /sys/class/net/$IF/carrier)" = 1 ] && break; sleep 0.1; done
            echo "carrier $(cat /sys/class/net/$IF/carrier)"
            reach $PEER 30
            ping -c 3 $PEER
            signal done
            rmmod cx4
            echo unloaded
        """
        vm1 = """
            eth_up
            reach $PEER
            wait_signal server
            section iperf-rss; iperf -c $PEER -P 8 -n 4M -f m
            signal rss-done
            wait_signal sniffing
            ip neigh replace 10.99.0.99 lladdr 02:00:00:00:00:99 dev "$IF"
            ping -c 10 -i 0.2 -W 1 10.99.0.99 > /dev/null 2>&1 || true
            # The server listens before vm0 is told to connect to it.
            iperf3 -s -D
            sleep 1
            signal foreign-sent
            wait_signal done 600
            rmmod mlx5_core
            echo unloaded
        """
        vm0 = vm0.replace("$MSKEY", MS_RSS_KEY)
        res = eth_vms(env, [vm0, vm1], timeout=600, smp=2, files=[env.ko])
        assert_clean(res)
        log0 = res[0].job_log
        assert re.search(r"Current hardware settings:.*?Combined:\s+2", section(log0, "channels"), re.S), \
            section(log0, "channels")
        assert MS_RSS_KEY.replace(":", "") in section(log0, "key").replace(":", "").replace("\n", ""), \
            section(log0, "key")
        st = ethtool_stats(section(log0, "rss"))
        per_ch = [st.get(f"ch{c}_rx_packets", 0) for c in (0, 1)]
        assert all(n > 100 for n in per_ch), f"RSS did not spread 8 flows over 2 channels: {per_ch}"
        prom = section(log0, "promisc")
        assert "02:00:00:00:00:99" in prom and "3 packets captured" in prom, prom
        rec = section(log0, "reconf")
        assert iperf_rate(rec) > 0, rec
        assert re.search(r"Current hardware settings:\s+RX:\s+512", rec), rec
        down, up = section(log0, "link-down"), section(log0, "link-up")
        assert "carrier 0" in down and "ping while down: lost" in down, down
        assert "carrier 1" in up and " 0% packet loss" in up, up
        errs = cx4_errors(res[0].dmesg)
        assert not errs, "cx4 reported:\n" + "\n".join(errs)

    @estimate(300)
    def unload_under_traffic_and_cycles():
        """rmmod cx4 while TCP streams both ways, then 20 insmod/rmmod cycles with the netdev
        up and a ping through it each time; kmemleak finds nothing and the model gets every
        object and page back."""
        vm0 = CX4_UP + """
            cx4_up
            reach $PEER
            iperf3 -s -D
            wait_signal server
            iperf3 -c $PEER -t 30 -f m > /tmp/tx.log 2>&1 &
            sleep 4
            rmmod cx4
            echo "unloaded under traffic"
            kill %1 2>/dev/null || true
            signal unloaded
            echo clear > /sys/kernel/debug/kmemleak
            section cycles
            ok=0
            for i in $(seq 20); do
                IF=; cx4_up > /dev/null 2>&1 || { echo "cycle $i: no netdev"; break; }
                ping -c 1 -W 2 $PEER > /dev/null 2>&1 || { reach $PEER 20 > /dev/null && true; }
                ping -c 1 -W 2 $PEER > /dev/null 2>&1 && ok=$((ok + 1))
                rmmod cx4
            done
            echo "cycles with traffic: $ok/20"
            signal done
            echo scan > /sys/kernel/debug/kmemleak
            sleep 6
            echo scan > /sys/kernel/debug/kmemleak
            section kmemleak
            cat /sys/kernel/debug/kmemleak
            section end
            echo unloaded
        """
        vm1 = """
            eth_up
            reach $PEER
            iperf3 -s -D
            sleep 1
            signal server
            iperf3 -c $PEER -t 30 -f m > /tmp/tx.log 2>&1 &
            wait_signal unloaded 300
            kill %1 2>/dev/null || true
            wait_signal done 900
            rmmod mlx5_core
            echo unloaded
        """
        res = eth_vms(env, [vm0, vm1], timeout=900, files=[env.ko], cmdline="kmemleak=on")
        assert_clean(res)
        r0 = res[0]
        assert "unloaded under traffic" in r0.job_log, describe(r0)
        cyc = section(r0.job_log, "cycles")
        m = re.search(r"cycles with traffic: (\d+)/20", cyc)
        assert m and int(m.group(1)) == 20, cyc
        leaks = section(r0.job_log, "kmemleak")
        ours = [b for b in leaks.split("unreferenced object") if "cx4" in b]
        assert not ours, "kmemleak found cx4 leaks:\n" + "\n".join(ours)[:3000]
        errs = cx4_errors(r0.dmesg)
        assert not errs, "cx4 reported:\n" + "\n".join(errs)

    @estimate(120)
    def sq_error_recovery():
        """A send WQE the card refuses (injected in the model) completes with an error CQE;
        cx4 counts it, resets the SQ (MODIFY_SQ ERR -> RST -> RDY) and traffic to the host
        side of the segment flows again. devlink's `tx` health reporter counts the error and
        its recovery and its diagnosis lists the SQs; `devlink dev info` names the driver
        and the firmware."""
        vm0 = CX4_UP + """
            cx4_up
            HOST=10.99.0.254
            reach $HOST
            section before; stats
            section inject; req ctl wqe-error count=1
            ping -c 3 -W 1 $HOST > /dev/null 2>&1 || echo "ping during the error: lost"
            for i in $(seq 100); do
                [ "$(stats | sed -n 's/^tx_recover: //p')" -ge 1 ] 2>/dev/null && break
                sleep 0.1
            done
            reach $HOST 60
            section after-ping; ping -c 5 -i 0.2 $HOST
            section after; stats
            # The report is made by a work item after the recovery: give it a moment.
            for i in $(seq 50); do
                devlink health show $DEVLINK reporter tx | grep -q "recover [1-9]" && break
                sleep 0.1
            done
            section devlink-health; devlink -j health show $DEVLINK reporter tx
            section devlink-diagnose; devlink -j health diagnose $DEVLINK reporter tx
            section devlink-info; devlink -j dev info $DEVLINK
            section devlink-text
            devlink health show
            devlink health diagnose $DEVLINK reporter tx
            devlink dev info $DEVLINK
            rmmod cx4
            echo unloaded
        """.replace("$DEVLINK", DEVLINK)
        r = eth_vms(env, [vm0], timeout=240, files=[env.ko])[0]
        assert r.status == 0, describe(r)
        b, a = ethtool_stats(section(r.job_log, "before")), ethtool_stats(section(r.job_log, "after"))
        assert rise(b, a, "tx_cqe_err") >= 1, f"no error CQE counted: {a}"
        assert rise(b, a, "tx_recover") >= 1, f"no SQ recovery counted: {a}"
        assert " 0% packet loss" in section(r.job_log, "after-ping"), section(r.job_log, "after-ping")
        assert re.search(r"SQ 0x\w+ of channel \d+ recovered", r.dmesg), r.dmesg[-3000:]
        recovered_sqs = set(re.findall(r"SQ (0x[0-9a-f]+) of channel \d+ recovered", r.dmesg))

        # devlink health: the tx reporter counted the error and devlink's (auto-)recovery,
        # which reports the recovery cx4 did, and is healthy again.
        j = devlink_json(r.job_log, "devlink-health")
        reps = [x for x in j.get("health", {}).get(DEVLINK, []) if x.get("reporter") == "tx"]
        assert len(reps) == 1, f"expected one tx reporter of {DEVLINK}: {j}"
        tx = reps[0]
        assert tx["error"] >= 1 and tx["recover"] >= 1, f"tx reporter: {tx}"
        assert tx["state"] == "healthy" and tx.get("auto_recover") is True, f"tx reporter: {tx}"

        # The diagnosis lists the channels' SQs with their state and counters; the recovered
        # SQ is there, healthy, with its error and recovery counted.
        d = devlink_json(r.job_log, "devlink-diagnose")
        sqs = d.get("SQs")
        assert d.get("open") is True and isinstance(sqs, list) and sqs, f"diagnose: {d}"
        for sq in sqs:
            assert {"channel", "sqn", "in_error", "state", "tx_cqe_err", "tx_recover"} <= sq.keys(), sq
        hit = [sq for sq in sqs if sq["sqn"] in recovered_sqs]
        assert hit, f"the recovered SQ(s) {recovered_sqs} are not in the diagnosis: {sqs}"
        assert all(sq["state"] == "ok" and sq["in_error"] is False for sq in sqs), sqs
        assert sum(sq["tx_cqe_err"] for sq in sqs) >= 1 and sum(sq["tx_recover"] for sq in sqs) >= 1, sqs

        # devlink dev info: driver cx4, the model's firmware version as mlx5 formats it
        # ("%d.%d.%04d"), running and stored, and the board's PSID.
        m = re.search(r"firmware (\d+)\.(\d+)\.(\d+)", r.model_log)
        assert m, f"no firmware version in the model log:\n{r.model_log[-2000:]}"
        fw = f"{int(m[1])}.{int(m[2])}.{int(m[3]):04d}"
        info = devlink_json(r.job_log, "devlink-info").get("info", {}).get(DEVLINK)
        assert info, f"no {DEVLINK} in devlink dev info: {section(r.job_log, 'devlink-info')}"
        assert info.get("driver") == "cx4", info
        versions = info.get("versions", {})
        for kind in ("running", "stored"):
            assert versions.get(kind, {}).get("fw.version") == fw, \
                f"devlink {kind} fw.version: expected {fw}: {info}"
            assert versions.get(kind, {}).get("fw") == fw, info
        assert versions.get("fixed", {}).get("fw.psid") in ("MT_2190110032", "MT_2420110034"), info
        check_clean_dmesg(r.dmesg)

    @estimate(150)
    def rq_error_recovery():
        """A frame the card cannot receive (injected in the model: a bad lkey in the receive
        WQE) completes with an error CQE and moves the RQ to error; cx4 counts it, resets the
        RQ (MODIFY_RQ ERR -> RST -> RDY) with fresh buffers and traffic from the host side
        flows again. devlink's `rx` reporter counts the error and the recovery and its
        diagnosis lists the RQs. The port's PPCNT counters in ethtool -S follow the traffic,
        the frame dropped in the error included; global pause set with ethtool -A reads back
        from the card."""
        vm0 = CX4_UP + """
            cx4_up
            HOST=10.99.0.254
            reach $HOST
            section before; stats
            section inject; req ctl rq-error count=1
            ping -c 3 -W 1 $HOST > /dev/null 2>&1 || echo "ping during the error: lost"
            for i in $(seq 100); do
                [ "$(stats | sed -n 's/^rx_recover: //p')" -ge 1 ] 2>/dev/null && break
                sleep 0.1
            done
            reach $HOST 60
            section after-ping; ping -c 5 -i 0.2 $HOST
            section after; stats
            section pause
            ethtool -a "$IF"
            ethtool -A "$IF" rx on tx on
            ethtool -a "$IF"
            ethtool -A "$IF" autoneg on 2>&1 && echo "autoneg accepted" || echo "autoneg refused"
            ethtool -A "$IF" rx off tx on
            ethtool -a "$IF"
            for i in $(seq 50); do
                devlink health show $DEVLINK reporter rx | grep -q "recover [1-9]" && break
                sleep 0.1
            done
            section devlink-health; devlink -j health show $DEVLINK reporter rx
            section devlink-diagnose; devlink -j health diagnose $DEVLINK reporter rx
            section devlink-text
            devlink health show
            devlink health diagnose $DEVLINK reporter rx
            rmmod cx4
            echo unloaded
        """.replace("$DEVLINK", DEVLINK)
        r = eth_vms(env, [vm0], timeout=240, files=[env.ko])[0]
        assert r.status == 0, describe(r)
        b, a = ethtool_stats(section(r.job_log, "before")), ethtool_stats(section(r.job_log, "after"))
        assert rise(b, a, "rx_wqe_err") >= 1, f"no receive error CQE counted: {a}"
        assert rise(b, a, "rx_recover") >= 1, f"no RQ recovery counted: {a}"
        assert " 0% packet loss" in section(r.job_log, "after-ping"), section(r.job_log, "after-ping")
        recovered = set(re.findall(r"RQ (0x[0-9a-f]+) of channel \d+ recovered", r.dmesg))
        assert recovered, r.dmesg[-3000:]

        # Port counters (PPCNT): the frames crossed the port, more than the driver took in
        # (the one the RQ refused is a port discard).
        for name in ("rx_packets_phy", "tx_packets_phy", "rx_bytes_phy", "tx_bytes_phy",
                     "rx_prio0_packets", "tx_prio0_packets"):
            assert rise(b, a, name) >= 5, f"{name} did not follow the traffic: {b.get(name)} -> {a.get(name)}"
        assert rise(b, a, "rx_packets_phy") > rise(b, a, "rx_packets"), (a, b)
        assert rise(b, a, "rx_discards_phy") >= 1, f"the refused frame is no port discard: {a}"
        assert rise(b, a, "rx_bytes_phy") >= 64 * rise(b, a, "rx_packets_phy"), a

        # Global pause (ethtool -a/-A) is PFCC on the card: each setting reads back from it;
        # pause autonegotiation is refused as mlx5e refuses it.
        pause = section(r.job_log, "pause")
        states = re.findall(r"RX:\s+(on|off)\s+TX:\s+(on|off)", pause)
        assert states == [("off", "off"), ("on", "on"), ("off", "on")], pause
        assert "autoneg refused" in pause, pause

        j = devlink_json(r.job_log, "devlink-health")
        reps = [x for x in j.get("health", {}).get(DEVLINK, []) if x.get("reporter") == "rx"]
        assert len(reps) == 1, f"expected one rx reporter of {DEVLINK}: {j}"
        rx = reps[0]
        assert rx["error"] >= 1 and rx["recover"] >= 1, f"rx reporter: {rx}"
        assert rx["state"] == "healthy", f"rx reporter: {rx}"
        d = devlink_json(r.job_log, "devlink-diagnose")
        rqs = d.get("RQs")
        assert d.get("open") is True and isinstance(rqs, list) and rqs, f"diagnose: {d}"
        for rq in rqs:
            assert {"channel", "rqn", "in_error", "state", "rx_wqe_err", "rx_recover"} <= rq.keys(), rq
        assert recovered <= {rq["rqn"] for rq in rqs}, (recovered, rqs)
        assert all(rq["state"] == "ok" and rq["in_error"] is False for rq in rqs), rqs
        assert sum(rq["rx_recover"] for rq in rqs) >= 1, rqs
        check_clean_dmesg(r.dmesg)

    @estimate(90)
    def rss_reconf():
        """cx4's RSS and TX queues under reconfiguration, the job mlx5e passes in model_eth:
        key and table set in place (MODIFY_TIR/MODIFY_RQT, no carrier change), a channel count
        too low for a user-set table refused (the binding answers the core's table query), a
        user table kept across a channel change, every TX queue started on open (no false
        watchdog timeout after down/up with fewer channels than TX queues); per-queue statistics
        over netlink (QSTATS_JOB) that add up to the interface counters across a channel
        change; rx-flow-hash; ntuple rules into queues and RSS contexts (NTUPLE_JOB)."""
        vm0 = CX4_UP + "cx4_up\n" + RSS_RECONF_JOB.replace("$MSKEY", MS_RSS_KEY) + QSTATS_JOB \
            + RXFH_FIELDS_JOB + NTUPLE_JOB.replace("$MSKEY", MS_RSS_KEY) + """
            rmmod cx4
            echo unloaded
        """
        r = eth_vms(env, [vm0], timeout=240, smp=2, files=[env.ko])[0]
        assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        check_rss_reconf(r.job_log)
        check_qstats(r.job_log)
        check_napi_links(r.job_log)
        check_rxfh_fields(r.job_log)
        check_ntuple(r.job_log)
        errs = cx4_errors(r.dmesg)
        assert not errs, "cx4 reported:\n" + "\n".join(errs)
        check_clean_dmesg(r.dmesg)

    @estimate(120)
    def ptp_two_vms():
        """PTP under cx4, model_eth's mlx5e test with its assertions: ethtool -T shows hardware
        TX/RX timestamping and a PHC (cx4's clock over the card's internal timer, core/clock.rs),
        ptp4l with hardware timestamps from the CQEs locks vm1's PHC to vm0's within
        PTP_RMS_NS; then phc_ctl reads, shifts and sets each PHC (PHC_JOB)."""
        job = CX4_UP + "cx4_up\n" + PTP_JOB + PHC_JOB + "rmmod cx4\necho unloaded\n"
        res = eth_vms(env, [job, job], timeout=300, files=[env.ko])
        for r in res:
            assert r.status == 0 and "unloaded" in r.job_log, describe(r)
            errs = cx4_errors(r.dmesg)
            assert not errs, "cx4 reported:\n" + "\n".join(errs)
            check_clean_dmesg(r.dmesg)
            check_phc(r.job_log)
        got = check_ptp([r.job_log for r in res])
        print(f"    cx4: vm1's rms offsets (ns) per second once locked: {got['rms']}; mean path "
              f"delays {min(got['delays'])}..{max(got['delays'])} ns", file=sys.stderr)

    @estimate(240)
    def dcb_pfc_ets_app():
        """DCB on cx4 (iproute2's `dcb`): PFC, ETS, rate limits and DSCP trust read back from
        the card, whose registers the model shows; bad requests refused. Then the host side
        of the segment, as a link partner with full buffers, sends PFC XOFF frames for
        priorities 3 and 5: cx4's port honours them for priority 3 only (PFC on): frames of
        priority 5 leave at once, those of priority 3 wait for the pause to end and none is
        lost; the per-priority pause counters count both (model_eth's DCB_JOB, which mlx5e
        passes too)."""
        vm0 = CX4_UP + "cx4_up\n" + DCB_JOB + """
            rmmod cx4
            echo unloaded
        """
        r = eth_vms(env, [vm0], timeout=300, files=[env.ko, PFC_TOOL], model_args=DCB_MODEL)[0]
        assert r.status == 0, describe(r)
        check_dcb(r.job_log)
        assert "unloaded" in r.job_log, describe(r)
        errs = cx4_errors(r.dmesg)
        assert not errs, "cx4 reported:\n" + "\n".join(errs)
        check_clean_dmesg(r.dmesg)

    @estimate(120)
    def lro_file_intact():
        """LRO on cx4 (ethtool -K lro, off by default as in mlx5e): the channels reopen with
        TIRs that merge TCP segments and 17-page RQ WQEs; a 24 MiB random file from mlx5e
        arrives intact over IPv4 and IPv6, the TAPs carrying superframes that land whole
        in cx4's WQEs (cx4 rebuilds the merged packets' IP and TCP
        headers from the CQE: a wrong length, ACK, window or checksum breaks the stream, and
        the stack checks the TCP checksum of a forwarded GSO packet), cx4 counts as many
        merged packets as the model made, and none once LRO is off again."""
        vm0 = CX4_UP + XFER + """
            cx4_up
            section feature; ethtool -k "$IF" | grep large-receive
            reach $PEER
            wait_signal server
            ethtool -K "$IF" lro on
            ethtool -k "$IF" | grep large-receive
            reach $PEER 30
            section lro-before; stats
            section lro-v4; fetch $PEER 0
            section lro-v6; fetch $PEER6 0
            section lro-after; stats
            section model-lro; req ctl stats
            ethtool -K "$IF" lro off
            reach $PEER 30
            section plain; fetch $PEER 0
            section plain-after; stats
            signal done
            rmmod cx4
            echo unloaded
        """
        vm1 = XFER + """
            head -c 25165824 /dev/urandom > /tmp/blob
            section sha; sha256sum /tmp/blob
            eth_up
            reach $PEER
            serve 0 3 &
            sleep 1
            signal server
            wait_signal done 600
            rmmod mlx5_core
            echo unloaded
        """
        # The TAPs carry GSO superframes (`--wire-gso`): mlx5e's TSO output arrives whole and
        # lands in one of cx4's LRO WQEs (or is cut where LRO is off).
        res = eth_vms(env, [vm0, vm1], timeout=420, files=[env.ko], model_args=["--wire-gso"])
        assert_clean(res)
        log0, log1 = res[0].job_log, res[1].job_log
        feat = section(log0, "feature")
        assert "large-receive-offload: off" in feat and "[fixed]" not in feat, feat
        want = section(log1, "sha").split()[0]
        for s in ("lro-v4", "lro-v6", "plain"):
            got = section(log0, s).split()
            assert got[:3] == ["got", want, "25165824"], f"{s}: {section(log0, s)} (sent {want})"
        b, a = ethtool_stats(section(log0, "lro-before")), ethtool_stats(section(log0, "lro-after"))
        p = ethtool_stats(section(log0, "plain-after"))
        lro = rise(b, a, "rx_lro_packets")
        assert lro > 0 and rise(b, a, "rx_lro_bytes") > 2 * 25165824 * 0.5, a
        assert a.get("rx_lro_err", 0) == 0, a
        # rx_packets counts the segments, as mlx5e does.
        assert rise(b, a, "rx_packets") > 2 * 25165824 // 1500, a
        assert rise(a, p, "rx_lro_packets") == 0, f"LRO off, still merged: {p}"
        stats = section(log0, "model-lro")
        merged = re.search(r"lro (\d+) merged into (\d+) packets", stats)
        assert merged and int(merged.group(2)) == a.get("rx_lro_packets"), \
            f"{stats}\ncx4 counted {a.get('rx_lro_packets')}"
        sf = re.search(r"superframes tx \d+ rx (\d+)", stats)
        assert sf and int(sf.group(1)) > 0, f"no superframe from the wire: {stats}"
        print(f"    {lro} LRO packets of {int(merged.group(1)) / lro + 1:.1f} segments on average, "
              f"{sf.group(1)} superframes from the wire")
        errs = cx4_errors(res[0].dmesg)
        assert not errs, "cx4 reported:\n" + "\n".join(errs)

    @soak
    def reconfigure_under_tcp_rounds():
        """Soak: 8 rounds of a 20 s TCP stream from cx4 to mlx5e while cx4 is reconfigured
        under it (ethtool -G, -X, -L 1, -L 2, -G): every round ends with the receiver's
        summary and no second without data. Packets the stack requeued while the queues
        were stopped must go out when they reopen (before the fix: a sender stuck behind its
        own requeued packets, RTO backing off to 8 s, in the first round)."""
        vm0 = CX4_UP + """
            cx4_up
            reach $PEER
            wait_signal server
            for r in $(seq 8); do
                iperf3 -c $PEER -t 20 -f m --forceflush > /tmp/ip.log 2>&1 &
                P=$!
                sleep 2; ethtool -G "$IF" rx 512 tx 512
                sleep 2; ethtool -X "$IF" equal 1
                sleep 2; ethtool -X "$IF" default; ethtool -L "$IF" combined 1
                sleep 2; ethtool -L "$IF" combined 2
                sleep 2; ethtool -G "$IF" rx 1024 tx 1024
                wait $P || echo "iperf3 exited $?"
                section round-$r; cat /tmp/ip.log
                section qdisc-$r; tc -s qdisc show dev "$IF"
            done
            signal done
            rmmod cx4
            echo unloaded
        """
        vm1 = """
            eth_up
            reach $PEER
            iperf3 -s -D
            sleep 1
            signal server
            wait_signal done 900
            rmmod mlx5_core
            echo unloaded
        """
        res = eth_vms(env, [vm0, vm1], timeout=900, smp=2, files=[env.ko])
        assert_clean(res)
        log0 = res[0].job_log
        for r in range(1, 9):
            out = section(log0, f"round-{r}")
            assert "receiver" in out and " 0.00 Bytes" not in out, \
                f"round {r} stalled:\n{out}\n{section(log0, f'qdisc-{r}')}"
        errs = cx4_errors(res[0].dmesg)
        assert not errs, "cx4 reported:\n" + "\n".join(errs)

    yield "cx4 <-> mlx5e: link, ping v4/v6, iperf3 both ways with TSO/csum, clean unload", \
        cx4_and_mlx5e_ping_iperf
    yield "cx4 <-> mlx5e: MTU 9000, VXLAN/GENEVE/GRE tunnels (inner offloads on VXLAN, GRE)", \
        jumbo_and_tunnels
    yield "cx4: an RQ error CQE is recovered, devlink rx reporter, PPCNT port counters, pause", \
        rq_error_recovery
    yield "cx4: RSS over 2 channels, ethtool -G/-X/-L under traffic, promiscuous, link down/up", \
        rss_rings_channels_promisc_link
    yield "cx4: LRO on/off, a file intact over IPv4/IPv6, merged packets as the model made them", \
        lro_file_intact
    yield "soak: cx4 reconfigured (ethtool -G/-X/-L) under 8 TCP streams, none stalls", \
        reconfigure_under_tcp_rounds
    yield "cx4: rmmod under traffic, 20 load/unload cycles with traffic, kmemleak clean", \
        unload_under_traffic_and_cycles
    yield "cx4: SQ error CQE -> SQ recovery, traffic resumes", sq_error_recovery
    yield "cx4: RSS key/table in place, too few channels refused, user table kept, no stopped TX queue; " \
        "qstats per queue and device, NAPI links, rx-flow-hash, ntuple rules and RSS contexts", \
        rss_reconf
    yield "cx4: DCB (dcb pfc/ets/maxrate/app) on the card's registers; PFC frames honoured per priority", \
        dcb_pfc_ets_app
    yield "cx4: PTP between two VMs, hardware timestamps, ptp4l locks within the bound", \
        ptp_two_vms
