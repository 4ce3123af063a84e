#!/usr/bin/env python3
"""Guest side of the raw packet tests (tests/model_roce.py, mlx5_ib on the model, two VMs):
with the guest's unmodified rdma-core (pyverbs over libmlx5), each VM builds

- a raw packet QP (IBV_QPT_RAW_PACKET: an SQ, an RQ and a TIR behind it) whose receive CQ is
  an extended CQ reporting flow tags;
- ibv_create_flow rules steering its card's frames ahead of the kernel netdev: UDP/IPv4 to
  port 7000 → the raw QP with tag 0x1230 + VM; TCP/IPv4 to port 7003 → tag 0x4560 + VM;
  UDP/IPv6 to port 7004 → tag 0x7890 + VM; UDP/IPv4 to port 7001 → DROP; UDP/IPv4 to port
  7002 → an RSS QP (four WQs, ibv_create_wq, under an indirection table, Toeplitz over the
  IPv4 addresses and UDP ports);
- refused requests: a flow tag of 2^24 (EINVAL), a priority beyond the last (ENOMEM).

Then one VM sends and the other receives, and the other way round: 20 UDP frames to 7000,
10 to 7001, 32 to 7002 (source ports 10000..10031), 5 TCP to 7003 and 5 UDP/IPv6 to 7004,
each with a payload naming its number. The receiver checks every frame arrived whole on the
QP its rule names with the rule's flow tag (the RSS QP's WQs: spread over at least two), none
of the dropped ones anywhere, and the sender that every send completed.

The two VMs meet at barriers: the program creates /tmp/raw-NAME.mine and waits for
/tmp/raw-NAME.go, which the job script creates once the other VM reached the same point.

One JSON line per step ({"step": name, "ok": bool, ...}); the last is {"step": "closed"}.

usage: verbs_raw.py DEVICE --me N --mac MAC --peer-mac MAC
"""

import argparse
import ctypes
import errno
import faulthandler
import json
import os
import socket
import struct
import sys
import time

import pyverbs.enums as e
from pyverbs.cq import CQ, CQEX, CqInitAttrEx, PollCqAttr
from pyverbs.device import Context
from pyverbs.flow import Flow, FlowAttr
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr, QPInitAttrEx
from pyverbs.spec import EthSpec, Ipv4ExtSpec, Ipv6Spec, TcpUdpSpec
from pyverbs.wq import WQ, RwqIndTable, RwqIndTableInitAttr, RxHashConf, WQAttr, WQInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR
from verbs_rc import errno_of

FRAME = 128                      # bytes per frame sent
SLOT = 2048                      # receive buffer per WQE
N_RX = 64                        # receive WQEs on the raw QP
N_WQ, WQ_DEPTH = 4, 32           # RSS WQs and their depth
UDP, TCP = 17, 6
# Frames each side sends: (name, dport, count, ipv6, proto).
PLAN = [("udp", 7000, 20, False, UDP), ("drop", 7001, 10, False, UDP),
        ("rss", 7002, 32, False, UDP), ("tcp", 7003, 5, False, TCP),
        ("udp6", 7004, 5, True, UDP)]
TOEPLITZ_KEY = bytes([0x2c, 0xc6, 0x81, 0xd1, 0x5b, 0xdb, 0xf4, 0xf7, 0xfc, 0xa2, 0x83, 0x19,
                      0xdb, 0x1a, 0x3e, 0x94, 0x6b, 0x9e, 0x38, 0xd9, 0x2c, 0x9c, 0x03, 0xd1,
                      0xad, 0x99, 0x44, 0xa7, 0xd9, 0x56, 0x3d, 0x59, 0x06, 0x3c, 0x25, 0xf3,
                      0xfc, 0x1f, 0xdc, 0x2a])
IBV_FLOW_SPEC_ACTION_TAG, IBV_FLOW_SPEC_ACTION_DROP = 0x1000, 0x1001


def out(**kw):
    print(json.dumps(kw), flush=True)


def check(step, ok, **kw):
    out(step=step, ok=bool(ok), **kw)


class ActionSpec:
    """A flow action spec pyverbs has no class for (struct ibv_flow_spec_action_tag {type,
    size, tag_id} or ibv_flow_spec_action_drop {type, size}, verbs.h): pyverbs' Flow copies
    each spec through its `_copy_data(address)` and advances by its `size`."""

    def __init__(self, kind, tag=None):
        self.raw = (struct.pack("=IH2xI", kind, 12, tag) if tag is not None
                    else struct.pack("=IH2x", kind, 8))
        self.size = len(self.raw)

    def _copy_data(self, addr):
        ctypes.memmove(addr, self.raw, self.size)


def barrier(name, timeout=300):
    open(f"/tmp/raw-{name}.mine", "w").close()
    deadline = time.time() + timeout
    while not os.path.exists(f"/tmp/raw-{name}.go"):
        if time.time() > deadline:
            raise TimeoutError(f"barrier {name}")
        time.sleep(0.05)


def ip4(vm):
    return f"10.99.0.{vm + 1}"


def ip6(vm):
    return f"fd00::{vm + 1}"


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def frame(dmac, smac, src, dst, v6, proto, sport, dport, payload):
    """An Ethernet frame of FRAME bytes: IPv4 or IPv6, UDP or TCP, then `payload` padded."""
    l4len = 8 if proto == UDP else 20
    iplen = 40 if v6 else 20
    body = payload.ljust(FRAME - 14 - iplen - l4len, b"\0")
    if proto == UDP:
        l4 = struct.pack("!HHHH", sport, dport, 8 + len(body), 0)
    else:
        l4 = struct.pack("!HHIIHHHH", sport, dport, 1, 0, 0x5010, 4096, 0, 0)
    if v6:
        ip = struct.pack("!IHBB", 6 << 28, len(l4) + len(body), proto, 64)
        ip += socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst)
        et = 0x86DD
    else:
        hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4) + len(body), 0, 0x4000, 64,
                          proto, 0, socket.inet_aton(src), socket.inet_aton(dst))
        ip = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
        et = 0x0800
    return dmac + smac + struct.pack("!H", et) + ip + l4 + body


def mac_bytes(m):
    return bytes(int(x, 16) for x in m.split(":"))


class Side:
    def __init__(self, a):
        self.a = a
        self.ctx = Context(name=a.device)
        self.pd = PD(self.ctx)
        self.scq = CQ(self.ctx, 256)
        flags = e.IBV_WC_EX_WITH_BYTE_LEN | e.IBV_WC_EX_WITH_FLOW_TAG
        self.rcq = CQEX(self.ctx, CqInitAttrEx(cqe=256, wc_flags=flags))
        self.wcq = CQ(self.ctx, 256)
        self.txbuf = MR(self.pd, 256 * FRAME, e.IBV_ACCESS_LOCAL_WRITE)
        self.rxbuf = MR(self.pd, N_RX * SLOT, e.IBV_ACCESS_LOCAL_WRITE)
        self.wqbuf = MR(self.pd, N_WQ * WQ_DEPTH * SLOT, e.IBV_ACCESS_LOCAL_WRITE)
        self.flows = []
        self.qp = None
        self.rss = None
        self.wqs = []
        self.table = None

    def raw_qp(self):
        cap = QPCap(max_send_wr=256, max_recv_wr=N_RX, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RAW_PACKET, scq=self.scq,
                                         rcq=self.rcq, cap=cap))
        self.qp.modify(QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1),
                       e.IBV_QP_STATE | e.IBV_QP_PORT)
        self.qp.modify(QPAttr(qp_state=e.IBV_QPS_RTR), e.IBV_QP_STATE)
        self.qp.modify(QPAttr(qp_state=e.IBV_QPS_RTS), e.IBV_QP_STATE)
        for i in range(N_RX):
            self.qp.post_recv(RecvWR(wr_id=i, num_sge=1,
                                     sg=[SGE(self.rxbuf.buf + i * SLOT, SLOT, self.rxbuf.lkey)]))

    def rss_qp(self):
        for k in range(N_WQ):
            wq = WQ(self.ctx, WQInitAttr(wq_pd=self.pd, wq_cq=self.wcq, wq_type=e.IBV_WQT_RQ,
                                         max_wr=WQ_DEPTH, max_sge=1))
            wq.modify(WQAttr(attr_mask=e.IBV_WQ_ATTR_STATE, wq_state=e.IBV_WQS_RDY))
            for i in range(WQ_DEPTH):
                at = self.wqbuf.buf + (k * WQ_DEPTH + i) * SLOT
                wq.post_recv(RecvWR(wr_id=k << 16 | i, num_sge=1,
                                    sg=[SGE(at, SLOT, self.wqbuf.lkey)]))
            self.wqs.append(wq)
        self.table = RwqIndTable(self.ctx, RwqIndTableInitAttr(2, self.wqs))
        conf = RxHashConf(rx_hash_function=e.IBV_RX_HASH_FUNC_TOEPLITZ,
                          rx_hash_key_len=len(TOEPLITZ_KEY), rx_hash_key=list(TOEPLITZ_KEY),
                          rx_hash_fields_mask=e.IBV_RX_HASH_SRC_IPV4 | e.IBV_RX_HASH_DST_IPV4
                          | e.IBV_RX_HASH_SRC_PORT_UDP | e.IBV_RX_HASH_DST_PORT_UDP)
        mask = (e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_RX_HASH
                | e.IBV_QP_INIT_ATTR_IND_TABLE)
        self.rss = QP(self.ctx, QPInitAttrEx(qp_type=e.IBV_QPT_RAW_PACKET, comp_mask=mask,
                                             pd=self.pd, hash_conf=conf, ind_table=self.table))

    def specs(self, dport, v6, proto, mac=None):
        me = self.a.me
        eth = EthSpec(dst_mac=mac or self.a.mac, ether_type=0x86DD if v6 else 0x0800)
        # (pyverbs' Ipv6Spec needs a source address even when its mask is empty.)
        l3 = (Ipv6Spec(dst_ip=ip6(me), src_ip="::", src_ip_mask="::") if v6
              else Ipv4ExtSpec(dst_ip=ip4(me)))
        l4 = TcpUdpSpec(e.IBV_FLOW_SPEC_TCP if proto == TCP else e.IBV_FLOW_SPEC_UDP,
                        dst_port=dport)
        return [eth, l3, l4]

    def flow(self, qp, specs, priority=0):
        attr = FlowAttr(num_of_specs=len(specs), priority=priority, port=1)
        attr.specs.extend(specs)
        f = Flow(qp, attr)
        self.flows.append(f)
        return f

    def steering(self):
        me = self.a.me
        tags = {"udp": 0x1230 + me, "tcp": 0x4560 + me, "udp6": 0x7890 + me}
        errs = {}
        for name, dport, _, v6, proto in PLAN:
            s = self.specs(dport, v6, proto)
            if name in tags:
                s.append(ActionSpec(IBV_FLOW_SPEC_ACTION_TAG, tags[name]))
                qp = self.qp
            elif name == "drop":
                s.append(ActionSpec(IBV_FLOW_SPEC_ACTION_DROP))
                qp = self.qp
            else:
                qp = self.rss
            errs[name] = errno_of(lambda: self.flow(qp, s))
        check("flows-created", all(v == 0 for v in errs.values()), errno=errs)
        big = self.specs(7100, False, UDP) + [ActionSpec(IBV_FLOW_SPEC_ACTION_TAG, 1 << 24)]
        e_tag = errno_of(lambda: self.flow(self.qp, big))
        e_prio = errno_of(lambda: self.flow(self.qp, self.specs(7101, False, UDP), priority=0x4000))
        # (mlx5_ib fs.c: a priority past MLX5_IB_FLOW_LAST_PRIO is ENOMEM.)
        check("flows-refused", e_tag == errno.EINVAL and e_prio == errno.ENOMEM, tag=e_tag,
              priority=e_prio)
        return tags

    def send_all(self):
        """Sends the PLAN to the peer through the raw QP's SQ; (sent, completed OK)."""
        me, peer = self.a.me, 1 - self.a.me
        dmac, smac = mac_bytes(self.a.peer_mac), mac_bytes(self.a.mac)
        n = 0
        for name, dport, count, v6, proto in PLAN:
            src, dst = (ip6(me), ip6(peer)) if v6 else (ip4(me), ip4(peer))
            for i in range(count):
                sport = 10000 + i if name == "rss" else 5000 + me
                f = frame(dmac, smac, src, dst, v6, proto, sport, dport,
                          f"raw {name} {i} from vm{me}".encode())
                slot = n % 256
                self.txbuf.write(f, FRAME, slot * FRAME)
                wr = SendWR(wr_id=n, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[SGE(self.txbuf.buf + slot * FRAME, FRAME, self.txbuf.lkey)],
                            send_flags=e.IBV_SEND_SIGNALED)
                self.qp.post_send(wr)
                n += 1
                if n == 1:
                    out(step="first-posted")
                if n % 32 == 0:
                    self.reap_sends(32)
        done = self.reap_sends(n % 32) + (n // 32) * 32
        return n, done

    def reap_sends(self, want, timeout=30.0):
        got, ok = 0, 0
        deadline = time.time() + timeout
        while got < want and time.time() < deadline:
            k, wcs = self.scq.poll(want - got)
            for wc in wcs:
                got += 1
                ok += wc.status == e.IBV_WC_SUCCESS
            if not k:
                time.sleep(0.01)
        self.bad_sends = getattr(self, "bad_sends", 0) + (want - ok)
        return ok

    def drain_raw(self):
        """Receive completions of the raw QP: [(wr_id, status, byte_len, flow_tag)]."""
        res = []
        if self.rcq.start_poll(PollCqAttr()) != 0:
            return res
        while True:
            res.append((self.rcq.wr_id, self.rcq.status, self.rcq.read_byte_len(),
                        self.rcq.read_flow_tag()))
            if self.rcq.poll_next() != 0:
                break
        self.rcq.end_poll()
        return res

    def receive_all(self, tags, settle):
        peer = 1 - self.a.me
        want_raw = sum(c for n, _, c, _, _ in PLAN if n in tags)
        want_rss = sum(c for n, _, c, _, _ in PLAN if n == "rss")
        raw, rss = [], []
        deadline = time.time() + 30
        while (len(raw) < want_raw or len(rss) < want_rss) and time.time() < deadline:
            raw += self.drain_raw()
            k, wcs = self.wcq.poll(64)
            rss += [(wc.wr_id, wc.status, wc.byte_len) for wc in wcs]
            if not k:
                time.sleep(0.02)
        time.sleep(settle)     # anything more (the dropped frames) would come now
        raw += self.drain_raw()
        rss += [(wc.wr_id, wc.status, wc.byte_len) for wc in self.wcq.poll(64)[1]]
        # Raw QP: each frame whole, in its rule's tag, payload intact.
        seen, bad = {}, []
        for wr_id, st, ln, tag in raw:
            data = self.rxbuf.read(FRAME, wr_id * SLOT)
            text = data[data.find(b"raw "):].split(b"\0")[0].decode(errors="replace")
            parts = text.split()
            name = parts[1] if len(parts) > 1 else "?"
            ok = st == e.IBV_WC_SUCCESS and ln == FRAME and tags.get(name) == tag \
                and text.endswith(f"from vm{peer}")
            if ok:
                seen[name] = seen.get(name, 0) + 1
            else:
                bad.append([wr_id, st, ln, tag, text])
        want = {n: c for n, _, c, _, _ in PLAN if n in tags}
        check("raw-steered-tagged", seen == want and not bad, seen=seen, want=want, bad=bad[:5],
              tags={n: hex(t) for n, t in tags.items()})
        per_wq = [0] * N_WQ
        rbad = []
        for wr_id, st, ln in rss:
            k, i = wr_id >> 16, wr_id & 0xffff
            data = self.wqbuf.read(FRAME, (k * WQ_DEPTH + i) * SLOT)
            if st == e.IBV_WC_SUCCESS and ln == FRAME and b"raw rss " in data:
                per_wq[k] += 1
            else:
                rbad.append([wr_id, st, ln])
        check("rss-spread", sum(per_wq) == want_rss and sum(1 for c in per_wq if c) >= 2
              and not rbad, per_wq=per_wq, bad=rbad[:5])
        check("dropped-not-received", not any(t[4].startswith("raw drop") for t in bad)
              and len(raw) == want_raw, received=len(raw), want=want_raw)

    def close(self):
        for f in self.flows:
            f.close()
        for o in [self.rss, self.table, *self.wqs, self.qp]:
            if o is not None:
                o.close()
        for o in [self.txbuf, self.rxbuf, self.wqbuf, self.scq, self.rcq, self.wcq, self.pd,
                  self.ctx]:
            o.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("device")
    ap.add_argument("--me", type=int, required=True)
    ap.add_argument("--mac", required=True)
    ap.add_argument("--peer-mac", required=True)
    ap.add_argument("--settle", type=float, default=1.0)
    a = ap.parse_args()
    # A program stuck in a verbs call shows where, long before the test gives up on it.
    faulthandler.dump_traceback_later(90, repeat=True)
    s = Side(a)
    attr = s.ctx.query_device_ex()
    # ConnectX-4 strips C-VLANs and checksums IP on raw packet QPs.
    caps = attr.raw_packet_caps
    want = e.IBV_RAW_PACKET_CAP_CVLAN_STRIPPING | e.IBV_RAW_PACKET_CAP_IP_CSUM
    check("caps", attr.orig_attr.device_cap_flags & e.IBV_DEVICE_MANAGED_FLOW_STEERING
          and caps & want == want
          and attr.rss_caps.supported_qpts & (1 << e.IBV_QPT_RAW_PACKET)
          and attr.rss_caps.max_rwq_indirection_table_size >= 4,
          flags=attr.orig_attr.device_cap_flags, raw=caps,
          rss_qpts=attr.rss_caps.supported_qpts,
          table=attr.rss_caps.max_rwq_indirection_table_size)
    s.raw_qp()
    s.rss_qp()
    check("objects", True, qpn=s.qp.qp_num, wqs=[w.wqn for w in s.wqs])
    tags = s.steering()
    barrier("ready")
    for sender in (0, 1):
        if a.me == sender:
            n, done = s.send_all()
            check(f"sent-{sender}", n == done == sum(c for _, _, c, _, _ in PLAN),
                  sent=n, completed=done)
            barrier(f"sent-{sender}")
        else:
            barrier(f"sent-{sender}")
            s.receive_all(tags, a.settle)
        barrier(f"checked-{sender}")
    s.close()
    out(step="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
