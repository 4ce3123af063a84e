"""The model's InfiniBand port (`--link ib`) with upstream mlx5_core + mlx5_ib and Debian's
opensm and infiniband-diags as the oracle: two VMs back to back, their cards' ports on the
run's segment (IB packets in frames of the model's private EtherType), mlx5_ib binds each
port in IB mode (link layer InfiniBand, port INIT without a LID), opensm in vm0 sweeps the
two-node subnet over QP0 — its own port through the local SMA, the peer's by directed route
across the wire — and brings both ports to ACTIVE with LIDs; ibstat, sminfo, smpquery and
ibnetdiscover show what it set. Then IPoIB (ib_ipoib over mlx5_ib's verbs) on the
subnet opensm runs: the broadcast group joined through the SA, ARP and IPv4 over UD
multicast and unicast, TCP in datagram and connected mode, and rdma_cm (rping) resolving
through IPoIB ARP and the SA's PathRecord."""

from __future__ import annotations

import re

from harness import Env, check_clean_dmesg, describe, estimate
from model_eth import eth_vms, section
from model_roce import IB, check_commands_clean, model_ops

IB_MODEL = ["--link", "ib"]

# Guest helpers: mlx5_core + mlx5_ib (+ ib_umad for opensm and the diags) on the modelled card,
# its IB device in $IBDEV and port directory in $P; `wait_state S [seconds]` polls the port.
IB_UP = IB + r"""
ib_load() {
    modprobe mlx5_core
    modprobe mlx5_ib
    modprobe ib_umad
    ib_dev
    P=/sys/class/infiniband/$IBDEV/ports/1
}
wait_state() {
    for i in $(seq $((${2:-60} * 10 * SLOW))); do
        grep -q "$1" $P/state && return 0
        sleep 0.1
    done
    echo "port never $1: $(cat $P/state)"; return 1
}
"""


# opensm in the background on the SM's node (its cache and dump files in /tmp: the guest's
# root is read-only), its PID in $OSM; ipoib_up ADDR brings the port's IPoIB interface ($IPIF)
# up with ADDR/24 and waits for its broadcast join.
OSM = r"""
osm_start() {
    mkdir -p /tmp/osm
    OSM_CACHE_DIR=/tmp/osm OSM_TMP_DIR=/tmp/osm \
        opensm -t 1000 -f /tmp/opensm.log > /tmp/opensm.out 2>&1 &
    OSM=$!
}
ipoib_up() {
    modprobe ib_ipoib
    IPIF=$(ls /sys/bus/pci/devices/0000:01:00.0/net/ | head -1)
    ip link set $IPIF up
    ip addr add $1/24 dev $IPIF
    mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
    for i in $(seq $((60 * 10 * SLOW))); do
        grep -A3 "ff12:401b:ffff:0:0:0:ffff:ffff" /sys/kernel/debug/ipoib/${IPIF}_mcg 2>/dev/null \
            | grep -q "complete: *yes" && return 0
        sleep 0.1
    done
    echo "no broadcast join"; cat /sys/kernel/debug/ipoib/${IPIF}_mcg; dmesg | tail -20
    return 1
}
"""
IPOIB = ("192.168.77.1", "192.168.77.2")
# The card's objects IPoIB and rdma_cm make, each created and destroyed again by rmmod.
IB_OBJECTS = [("CREATE_QP", "DESTROY_QP"), ("CREATE_CQ", "DESTROY_CQ"),
              ("CREATE_MKEY", "DESTROY_MKEY"), ("ALLOC_PD", "DEALLOC_PD"),
              ("CREATE_SRQ", "DESTROY_SRQ"), ("ATTACH_TO_MCG", "DETACH_FROM_MCG")]


def field(text: str, name: str) -> str:
    """`name: value` (ibstat) or `Name:....value` (smpquery) in `text`."""
    m = re.search(rf"^\s*{re.escape(name)}:[\s.]*(.*?)\s*$", text, re.M)
    assert m, f"no {name!r} in:\n{text}"
    return m.group(1)


def tests(env: Env):
    @estimate(170)
    def opensm_brings_two_ib_ports_to_active():
        """Both ports come up in INIT with link layer InfiniBand and no LID; opensm in vm0
        assigns LIDs (its own port first, as the LID manager does) and moves both ports
        Armed then Active; ibstat shows them Active with the SM's LID, sminfo finds vm0's
        SM master at its own LID (an SMP looped back inside the card), smpquery reads the
        peer's PortInfo by directed route and by LID across the wire, and ibnetdiscover
        finds the two CAs linked; ibv_rc_pingpong then runs RC between them by LID; an
        attribute a CA does not have gets MAD status 0x000C; after a cable pull and plug the
        next sweep brings the port back to ACTIVE with its LID."""
        vm0 = IB_UP + """
            ib_load
            section devinfo; ibv_devinfo -v -d $IBDEV
            section before; ibstat $IBDEV
            signal up0; wait_signal up1
            # The guest's root is read-only: opensm's cache and dump files go to /tmp.
            mkdir -p /tmp/osm
            OSM_CACHE_DIR=/tmp/osm OSM_TMP_DIR=/tmp/osm \
                timeout 150 opensm -t 1000 -f /tmp/opensm.log > /tmp/opensm.out 2>&1 &
            wait_state ACTIVE 120 || {
                section opensm-failed; ls -l /dev/infiniband; cat /tmp/opensm.out
                tail -40 /tmp/opensm.log; exit 1
            }
            wait_signal active1 120
            # The sweep that activated the ports ends with "SUBNET UP".
            for i in $(seq $((60 * SLOW))); do
                grep -q "SUBNET UP" /tmp/opensm.log && break
                sleep 1
            done
            section ibstat; ibstat $IBDEV
            section sminfo; sminfo
            section peer-dr; smpquery -D portinfo 0,1
            PEERLID=$(smpquery -D portinfo 0,1 | sed -n 's/^Lid:\\.*//p')
            section peer-lid; smpquery portinfo $PEERLID
            section peer-node; smpquery -D nodedesc 0,1
            section discover; ibnetdiscover
            # Its errors but the tolerated ones: ExtendedPortInfo 0xFF90 is not modelled
            # (status 0x000C, the capability is left off); an SA response umad refuses as a
            # duplicate (ERR 5430/4C04: a requester's retry met the first answer still
            # queued — seen once under load, see Documentation/infiniband.md).
            section opensm; grep -m1 "SUBNET UP" /tmp/opensm.log || true
            grep ERR /tmp/opensm.log | grep -v -e "error status = 0xC" -e "ERR 5430" -e "ERR 4C04" \
                | head -20 || true
            # LID-routed RC (no GID): the out-of-band exchange over the virtio NIC.
            virtio_up; reach $PEER
            wait_signal server-up 60
            section rc-pingpong
            timeout 60 ibv_rc_pingpong -d $IBDEV -n 100 -s 4096 $PEER || echo "rc=$?"
            # An attribute a CA's SMA does not have, across the wire: MAD status 0x000C (a
            # longer MAD timeout than smpquery's 1 s: a TCG guest on a loaded host; -d prints
            # the status).
            section bad-attr; smpquery -d -t 5000 -D switchinfo 0,1 2>&1 || echo "rc=$?"
            signal flap
            # vm1's cable is pulled and put back: opensm's next sweep brings it back.
            wait_signal flapped1 120
            section after-flap; smpquery portinfo $PEERLID
            signal done0
            echo ib-done
        """
        vm1 = IB_UP + """
            ib_load
            section before; ibstat $IBDEV
            signal up1; wait_signal up0
            wait_state ACTIVE 150
            section ibstat; ibstat $IBDEV
            section devinfo; ibv_devinfo -d $IBDEV
            signal active1
            virtio_up
            timeout 90 ibv_rc_pingpong -d $IBDEV -n 100 -s 4096 > /tmp/pp.out 2>&1 &
            PP=$!
            sleep 2; signal server-up
            wait $PP || echo "rc=$?" >> /tmp/pp.out
            section rc-pingpong; cat /tmp/pp.out
            wait_signal flap 120
            req ctl link state=down
            wait_state DOWN 30
            section flap-down; cat $P/state $P/phys_state
            req ctl link state=up
            wait_state ACTIVE 60
            section flap-up; ibstat $IBDEV
            signal flapped1
            wait_signal done0 200
            echo ib-done
        """
        rs = eth_vms(env, [vm0, vm1], timeout=300, model_args=IB_MODEL, mgmt=True)
        for r in rs:
            assert r.status == 0 and "ib-done" in r.job_log, describe(r)
            check_clean_dmesg(r.dmesg)
        l0, l1 = rs[0].job_log, rs[1].job_log
        info = section(l0, "devinfo")
        for want in (r"link_layer:\s+InfiniBand", r"state:\s+PORT_INIT \(2\)",
                     r"vendor_part_id:\s+4115", r"sm_lid:\s+0\b", r"port_lid:\s+0\b",
                     r"max_mtu:\s+4096", r"active_mtu:\s+4096"):
            assert re.search(want, info), f"{want!r} not in ibv_devinfo:\n{info}"
        for log in (l0, l1):
            before = section(log, "before")
            assert field(before, "State") == "Initializing", before
            assert field(before, "Physical state") == "LinkUp", before
            assert field(before, "Link layer") == "InfiniBand", before
        a0, a1 = section(l0, "ibstat"), section(l1, "ibstat")
        lid0, lid1 = int(field(a0, "Base lid")), int(field(a1, "Base lid"))
        assert lid0 > 0 and lid1 > 0 and lid0 != lid1, (a0, a1)
        for a in (a0, a1):
            assert field(a, "State") == "Active", a
            assert int(field(a, "SM lid")) == lid0, a
            assert field(a, "Rate") == "100", a
        sm = section(l0, "sminfo")
        assert re.search(rf"sm lid {lid0} .*SMINFO_MASTER", sm), sm
        for name in ("peer-dr", "peer-lid"):
            pi = section(l0, name)
            assert int(field(pi, "Lid")) == lid1, pi
            assert int(field(pi, "SMLid")) == lid0, pi
            assert field(pi, "LinkState") == "Active", pi
        # NodeDescription from the peer's SMA (the NODE_DESC register's default).
        assert "cx4-model ConnectX-4" in section(l0, "peer-node"), section(l0, "peer-node")
        disc = section(l0, "discover")
        assert len(re.findall(r"^Ca\s", disc, re.M)) == 2, disc
        assert "SUBNET UP" in section(l0, "opensm"), section(l0, "opensm")
        assert "ERR" not in section(l0, "opensm"), section(l0, "opensm")
        # RC between the two ports by LID (ibv_rc_pingpong without -g: no GRH), both ways.
        for log in (l0, l1):
            pp = section(log, "rc-pingpong")
            assert "rc=" not in pp and re.search(r"819200 bytes in [\d.]+ seconds", pp), pp
            assert re.search(r"100 iters in", pp), pp
        bad = section(l0, "bad-attr")
        assert re.search(r"error status 0xc\b", bad) and "rc=" in bad, bad
        # The flap: Down/Polling without the cable, Active again with the same LID after the
        # next sweep, as opensm's view of the peer says too.
        down = section(l1, "flap-down")
        assert "1: DOWN" in down and "2: Polling" in down, down
        up = section(l1, "flap-up")
        assert field(up, "State") == "Active" and int(field(up, "Base lid")) == lid1, up
        assert field(section(l0, "after-flap"), "LinkState") == "Active", l0
        # The local address lines name the LIDs opensm assigned.
        assert re.search(rf"local address:\s+LID 0x{lid0:04x}", section(l0, "rc-pingpong")), l0

    yield "opensm: two mlx5_ib IB ports ACTIVE with LIDs, diags see them, RC by LID, cable flap", \
        opensm_brings_two_ib_ports_to_active

    @estimate(150)
    def ipoib_and_rdma_cm_over_ib():
        """IPoIB over mlx5_ib (ConnectX-4 IB mode without enhanced IPoIB: ib_ipoib's own UD
        QP, see Documentation/infiniband.md) on the subnet opensm in vm0 brings up: each
        ib0 joins the IPv4 broadcast group ff12:401b:ffff::ffff:ffff through the SA
        (MCMemberRecord Set on QP1 to the SM's LID, looped back inside vm0's card), attaches
        its UD QP to it (the model lists the group) and sends ARP to the MLID opensm chose
        (saquery shows the group and its MLID). IPv4 ping both ways; 4 MiB over TCP
        (socat) with the SHA-256 the sender computed, sent with TSO and checksum offload
        (the card cuts LSO WQEs into datagrams); the same in connected mode (ipoib_cm:
        RC QPs and an SRQ, connections by the CM over QP1), with pings larger than the
        datagram MTU; rping (rdma_cm: the address resolved by IPoIB ARP, the route by an SA
        PathRecord, the connection by CM MADs) 10 pings checked by the client. At rmmod
        every QP, CQ, MKey, PD, SRQ and group attachment made is destroyed again and no
        command failed."""
        a0, a1 = IPOIB
        vm0 = IB_UP + OSM + f"""
            ib_load; modprobe rdma_ucm
            signal up0; wait_signal up1
            osm_start
            wait_state ACTIVE 120
            ipoib_up {a0}
            signal ipoib0; wait_signal ipoib1 120
            section ping; timeout $((30 * SLOW)) ping -c 3 -W $((3 * SLOW)) {a1} && echo rc=0 || echo "rc=$?"
            section saquery; saquery -g; saquery -m | head -40
            section groups; req ctl roce
            section tcp-dgram
            wait_signal sink-dgram 60
            head -c 4194304 /dev/urandom > /tmp/blob; sha256sum < /tmp/blob
            timeout $((60 * SLOW)) socat -u FILE:/tmp/blob TCP:{a1}:5001 && echo rc=0 || echo "rc=$?"
            ethtool -k $IPIF | grep -E "^(tcp-segmentation-offload|tx-checksumming):"; req ctl roce
            section rping
            wait_signal rping-server 60
            timeout $((60 * SLOW)) rping -c -a {a1} -C 10 -S 64 -V -v 2>&1 && echo rc=0 || echo "rc=$?"
            section cm-mode
            echo connected > /sys/class/net/$IPIF/mode; ip link set $IPIF mtu 16384
            ip neigh flush dev $IPIF
            signal cm0; wait_signal cm1 60
            timeout $((30 * SLOW)) ping -c 3 -M do -s 6000 -W $((3 * SLOW)) {a1} && echo rc=0 || echo "rc=$?"
            cat /sys/class/net/$IPIF/mode; req ctl roce
            section tcp-cm
            wait_signal sink-cm 60
            sha256sum < /tmp/blob
            timeout $((60 * SLOW)) socat -u FILE:/tmp/blob TCP:{a1}:5002 && echo rc=0 || echo "rc=$?"
            signal done0; wait_signal done1 120
            section opensm; grep -m1 "SUBNET UP" /tmp/opensm.log || true
            grep ERR /tmp/opensm.log | grep -v -e "error status = 0xC" | head -20 || true
            ip link set $IPIF down; rmmod ib_ipoib
            kill $OSM; wait $OSM || true
            rmmod mlx5_ib mlx5_core
            echo unloaded
            section model; req ctl stats
        """
        vm1 = IB_UP + OSM + f"""
            ib_load; modprobe rdma_ucm
            signal up1; wait_signal up0
            wait_state ACTIVE 150
            ipoib_up {a1}
            signal ipoib1; wait_signal ipoib0 120
            section ping; timeout $((30 * SLOW)) ping -c 3 -W $((3 * SLOW)) {a0} && echo rc=0 || echo "rc=$?"
            section groups; req ctl roce
            section tcp-dgram
            timeout $((60 * SLOW)) socat -u TCP-LISTEN:5001,reuseaddr - > /tmp/got & pid=$!
            sleep 1; signal sink-dgram; wait $pid && echo rc=0 || echo "rc=$?"
            sha256sum < /tmp/got
            section rping
            timeout $((60 * SLOW)) rping -s -a {a1} -C 10 -S 64 -v > /tmp/rps.txt 2>&1 & pid=$!
            sleep $((2 * SLOW)); signal rping-server; wait $pid && echo rc=0 || echo "rc=$?"
            cat /tmp/rps.txt
            section cm-mode
            echo connected > /sys/class/net/$IPIF/mode; ip link set $IPIF mtu 16384
            ip neigh flush dev $IPIF
            signal cm1; wait_signal cm0 60
            timeout $((30 * SLOW)) ping -c 3 -M do -s 6000 -W $((3 * SLOW)) {a0} && echo rc=0 || echo "rc=$?"
            section tcp-cm
            timeout $((60 * SLOW)) socat -u TCP-LISTEN:5002,reuseaddr - > /tmp/got & pid=$!
            sleep 1; signal sink-cm; wait $pid && echo rc=0 || echo "rc=$?"
            sha256sum < /tmp/got
            signal done1; wait_signal done0 120
            ip link set $IPIF down; rmmod ib_ipoib
            rmmod mlx5_ib mlx5_core
            echo unloaded
            section model; req ctl stats
        """
        rs = eth_vms(env, [vm0, vm1], timeout=300, model_args=IB_MODEL)
        for r in rs:
            assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        l0, l1 = rs[0].job_log, rs[1].job_log
        for r in rs:
            for name in ("ping", "cm-mode"):
                s = section(r.job_log, name)
                assert re.search(r"^rc=0$", s, re.M) and " 0% packet loss" in s, (r.name, s)
        # The broadcast group: opensm's MCMemberRecord with its MLID, both ports members,
        # and each card's UD QP attached to it.
        sa = section(l0, "saquery")
        m = re.search(r"MGID\.+ff12:401b:ffff::ffff:ffff.*?Mlid\.+(0x[0-9a-fA-F]+)", sa, re.S)
        assert m and int(m.group(1), 16) >= 0xC000, sa
        for r in rs:
            g = section(r.job_log, "groups")
            assert "mcg=ff12:401b:ffff::ffff:ffff/1" in g, (r.name, g)
        # TCP in both modes: what vm1 received hashes to what vm0 sent.
        for name in ("tcp-dgram", "tcp-cm"):
            sent, got = section(l0, name), section(l1, name)
            assert re.search(r"^rc=0$", sent, re.M) and re.search(r"^rc=0$", got, re.M), (sent, got)
            h = re.search(r"^([0-9a-f]{64})  -$", sent, re.M)
            assert h and h.group(1) in got, (sent, got)
        # Connected mode: 6000-byte pings unfragmented (-M do) over the 16384-byte MTU only
        # RC carries (the datagram MTU is 2044), on the RC QPs ipoib_cm made.
        cm = section(l0, "cm-mode")
        assert "connected" in cm and re.search(r"qp=0x[0-9a-f]+/RC/RTS", cm), cm
        # Datagram mode used the card's UD offloads (ipoib_basic_offloads): TSO and checksums
        # on, LSO WQEs cut into datagrams by the card.
        dg = section(l0, "tcp-dgram")
        assert re.search(r"^tcp-segmentation-offload: on", dg, re.M), dg
        assert re.search(r"^tx-checksumming: on", dg, re.M), dg
        m = re.search(r"ipoib offloads: (\d+) wqes (\d+) lso segments", dg)
        assert m and int(m.group(1)) > 0 and int(m.group(2)) > int(m.group(1)), dg
        # rping: the client checked every echo (-V) and both ends exited 0.
        for log in (l0, l1):
            rp = section(log, "rping")
            assert re.search(r"^rc=0$", rp, re.M), rp
            assert rp.count("ping data: rdma-ping-") == 10, rp
        assert "SUBNET UP" in section(l0, "opensm") and "ERR" not in section(l0, "opensm"), l0
        for r in rs:
            ops = model_ops(section(r.job_log, "model"))
            for made, gone in IB_OBJECTS:
                n, d = ops.get(made, (0, 0))[0], ops.get(gone, (0, 0))[0]
                assert n == d, f"{r.name}: {n} {made}, {d} {gone}: {ops}"
            assert ops.get("ATTACH_TO_MCG", (0, 0))[0] >= 1, ops
            check_commands_clean(r, ops)

    yield "ipoib: opensm's broadcast group, ping, TCP in datagram and connected mode, rping over " \
        "rdma_cm on IB", ipoib_and_rdma_cm_over_ib
