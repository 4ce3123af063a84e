#!/usr/bin/env python3
"""Guest side of the DC transport test (tests/model_roce.py `dc_one_vm` and `dc_between_vms`,
for mlx5_ib and for cx4 on the model): with the guest's unmodified rdma-core (pyverbs'
mlx5dv over libmlx5), as rdma-core's own tests/test_mlx5_dc.py builds its players. The target
side has the DCTs, their SRQ and CQ; the initiator side the DCIs. With `--role both` one
program on one card is both, looping back through its own GID; with `--role target` and
`--role initiator` two programs on two cards (two VMs) are one side each, meeting over TCP
(the target listens, the initiator connects to `--peer`). Every step runs the same body:
each side does and checks its half.

- a DCT (mlx5dv_create_qp, MLX5DV_DCTYPE_DCT, access key KEY) on an SRQ, moved to RTR (where
  the driver sends CREATE_DCT), and DCIs (MLX5DV_DCTYPE_DCI) moved to RTS;
- send: a DCI SENDs through mlx5dv_wr_set_dc_addr (the AH, the DCT number, KEY) into the
  DCT's SRQ: both completions, the receive's on the DCT's number, the data whole;
- rdma-write and rdma-read through the DCT (the DCT's remote rights), data checked;
- two-dcts: one DCI alternates between two DCTs; each receives its own messages;
- bad-key: a DCI naming the wrong key gets no answer: its retries run out
  (IBV_WC_RETRY_EXC_ERR) and no receive WQE is taken (the next good SEND lands in the WQE
  posted before, bad-key-took-nothing); the card counts the violation;
- query-dct: ibv_query_qp of the DCT (QUERY_DCT) gives RTR and its MTU;
- bad-attrs: mlx5_ib's errnos for what DC QPs refuse: a DCT without an SRQ, a DCT's
  RESET→INIT with an attribute it does not take or straight to RTR, a query before RTR; a
  DCI with a receive queue, a DCI's RESET→INIT without its port, a read/atomic depth beyond
  the DC limit;
- then everything is destroyed (the DCTs through DRAIN_DCT, the DCT_DRAINED event and
  DESTROY_DCT: a missing event would hang here).

One JSON line per step ({"step": name, "ok": bool, ...}); the last is {"step": "closed"}.

usage: verbs_dc.py DEVICE --gid-index N [--settle SECONDS]
                   [--role both|target|initiator] [--port P] [--peer HOST]
(verbs_small.py and verbs_rc.py beside it)
"""

import argparse
import errno
import json
import socket
import sys
import time

import pyverbs.enums as e
import pyverbs.providers.mlx5.mlx5_enums as dve
from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.providers.mlx5.mlx5dv import (Mlx5Context, Mlx5DVContextAttr, Mlx5DVDCInitAttr,
                                           Mlx5DVQPInitAttr, Mlx5QP)
from pyverbs.qp import QPAttr, QPCap, QPInitAttrEx
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR
from verbs_rc import errno_of
from verbs_small import LW, RR, RW, check, out

KEY = 0x1f2e3d4c5b6a7988
SZ = 1 << 16
SEND_OPS = e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_RDMA_WRITE | e.IBV_QP_EX_WITH_RDMA_READ
OK = e.IBV_WC_SUCCESS
MSG = bytes((i * 13 + 1) & 0xff for i in range(3000))


class Link:
    """The two sides' meeting points: one JSON line each way per `meet` over TCP; nothing
    to exchange when one program is both sides (`sock` None)."""

    def __init__(self, sock):
        self.f = sock.makefile("rw") if sock else None

    def meet(self, **mine) -> dict:
        """Gives the peer `mine` and returns what it gave (the barrier of one step)."""
        if not self.f:
            return mine
        self.f.write(json.dumps(mine) + "\n")
        self.f.flush()
        line = self.f.readline()
        if not line:
            raise RuntimeError("the peer closed the connection")
        return json.loads(line)


class Dc:
    def __init__(self, a):
        self.ctx = Mlx5Context(Mlx5DVContextAttr(), name=a.device)
        self.gid_index = a.gid_index
        self.gid = self.ctx.query_gid(1, a.gid_index)
        self.settle = a.settle
        self.target = a.role in ("both", "target")
        self.initiator = a.role in ("both", "initiator")
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 256)
        self.srq = SRQ(self.pd, SrqInitAttr(SrqAttr(max_wr=64, max_sge=1)))
        self.mr = MR(self.pd, SZ, LW | RW | RR)
        self.ah = None
        self.qps = []

    def peer(self, info: dict):
        """The target's address, key and buffer, for the initiator's work requests."""
        gr = GlobalRoute(dgid=GID(info["gid"]), sgid_index=self.gid_index, hop_limit=64)
        self.ah = AH(self.pd, attr=AHAttr(port_num=1, is_global=1, gr=gr))
        self.rkey, self.raddr = info["rkey"], info["addr"]

    def attr(self, timeout):
        """What rdma-core's Mlx5DcResources.create_qp_attr gives every DC QP (RNR values as
        its set_rnr_attributes; our ACK timeout)."""
        qa = QPAttr(port_num=1)
        qa.min_rnr_timer = 12
        qa.timeout = timeout
        qa.retry_cnt = 2
        qa.rnr_retry = 7
        qa.qp_access_flags = LW | RW | RR
        qa.path_mtu = e.IBV_MTU_1024
        gr = GlobalRoute(dgid=self.gid, sgid_index=self.gid_index, hop_limit=64)
        qa.ah_attr = AHAttr(port_num=1, is_global=1, gr=gr)
        return qa

    def init_attr(self, send_ops):
        mask = e.IBV_QP_INIT_ATTR_PD | (e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS if send_ops else 0)
        return QPInitAttrEx(cap=QPCap(64, 0, 1, 0), pd=self.pd, scq=self.cq, rcq=self.cq,
                            srq=self.srq, qp_type=e.IBV_QPT_DRIVER, send_ops_flags=send_ops,
                            comp_mask=mask, sq_sig_all=1)

    def dci(self, timeout=14, to_rts=True, init=None):
        dv = Mlx5DVQPInitAttr(comp_mask=dve.MLX5DV_QP_INIT_ATTR_MASK_DC,
                              dc_init_attr=Mlx5DVDCInitAttr())
        q = Mlx5QP(self.ctx, init or self.init_attr(SEND_OPS), dv)
        self.qps.append(q)
        if to_rts:
            q.to_rts(self.attr(timeout))
        return q

    def dct(self, key=KEY, to_rtr=True, init=None):
        dv = Mlx5DVQPInitAttr(comp_mask=dve.MLX5DV_QP_INIT_ATTR_MASK_DC,
                              dc_init_attr=Mlx5DVDCInitAttr(dc_type=dve.MLX5DV_DCTYPE_DCT,
                                                            dct_access_key=key))
        q = Mlx5QP(self.ctx, init or self.init_attr(0), dv)
        self.qps.append(q)
        if to_rtr:
            q.to_rtr(self.attr(14))
        return q

    def recv(self, at, n):
        self.srq.post_recv(RecvWR(wr_id=at, num_sge=1, sg=[SGE(self.mr.buf + at, n, self.mr.lkey)]))

    def post(self, qp, op, dctn, key, at, n, remote=None):
        """One signaled DC work request of `op` from mr[at:at+n] (a READ: into it) to DCT
        `dctn` with access key `key` (RDMA: at the target's buffer + `remote`)."""
        qp.wr_start()
        qp.wr_id = at
        qp.wr_flags = e.IBV_SEND_SIGNALED
        if op == e.IBV_WR_SEND:
            qp.wr_send()
        elif op == e.IBV_WR_RDMA_WRITE:
            qp.wr_rdma_write(self.rkey, self.raddr + remote)
        else:
            qp.wr_rdma_read(self.rkey, self.raddr + remote)
        qp.wr_set_dc_addr(self.ah, dctn, key)
        qp.wr_set_sge(SGE(self.mr.buf + at, n, self.mr.lkey))
        qp.wr_complete()

    @staticmethod
    def sent(got, qpn, opcode):
        """The (status, wr_id) of `qpn`'s requester completions of `opcode` (libmlx5 leaves
        byte_len unset but for READs)."""
        return [(s, w) for s, _, w in got.get((qpn, opcode), [])]

    def poll(self, want, timeout=30.0):
        """Up to `want` completions: {(qp_num, opcode): [(status, byte_len, wr_id)...]}."""
        got, deadline = {}, time.time() + timeout
        n = 0
        while n < want and time.time() < deadline:
            k, wcs = self.cq.poll(1)
            for wc in wcs[:k]:
                got.setdefault((wc.qp_num, wc.opcode), []).append((wc.status, wc.byte_len, wc.wr_id))
                n += 1
        return got

    def mine(self, t, i):
        """How many completions of a step this program sees: `t` of the target's, `i` of the
        initiator's."""
        return (t if self.target else 0) + (i if self.initiator else 0)

    def close(self):
        for q in reversed(self.qps):
            q.close()
        for o in (self.ah, self.mr, self.srq, self.cq, self.pd, self.ctx):
            if o is not None:
                o.close()


def steps(r: Dc, link: Link):
    """The steps, each side doing its half (`r.target`, `r.initiator`); `link.meet` where
    one side must wait for the other's half."""
    T, I = r.target, r.initiator
    dct = r.dct() if T else None
    dct2 = r.dct() if T else None
    mine = {"gid": str(r.gid), "rkey": r.mr.rkey, "addr": r.mr.buf} if T else {}
    if T:
        mine.update(dct=dct.qp_num, dct2=dct2.qp_num)
    peer = link.meet(**mine)
    tinfo = mine if T else peer
    dctn, dct2n = tinfo["dct"], tinfo["dct2"]
    dci = None
    if I:
        r.peer(tinfo)
        dci = r.dci()
    out(step="created", dct=dctn, dct2=dct2n, dci=dci.qp_num if dci else None)

    # send
    if T:
        r.recv(0x8000, 4096)
    link.meet(step="send")
    if I:
        r.mr.write(MSG, len(MSG), 0)
        r.post(dci, e.IBV_WR_SEND, dctn, KEY, 0, len(MSG))
    got = r.poll(r.mine(1, 1))
    check("send", (not I or r.sent(got, dci.qp_num, e.IBV_WC_SEND) == [(OK, 0)])
          and (not T or (got.get((dctn, e.IBV_WC_RECV)) == [(OK, len(MSG), 0x8000)]
                         and r.mr.read(len(MSG), 0x8000) == MSG)), got=str(got))

    # rdma-write, rdma-read
    if T:
        r.mr.write(b"dc-read--" * 100, 900, 0xa000)
    link.meet(step="rdma")
    w = rd = {}
    if I:
        r.mr.write(b"dc-write-" * 100, 900, 0x1000)
        r.post(dci, e.IBV_WR_RDMA_WRITE, dctn, KEY, 0x1000, 900, remote=0x9000)
        w = r.poll(1)
        r.post(dci, e.IBV_WR_RDMA_READ, dctn, KEY, 0x2000, 900, remote=0xa000)
        rd = r.poll(1)
    link.meet(step="rdma-done")
    check("rdma-write", (not I or (list(w) == [(dci.qp_num, e.IBV_WC_RDMA_WRITE)]
                                   and r.sent(w, dci.qp_num, e.IBV_WC_RDMA_WRITE) == [(OK, 0x1000)]))
          and (not T or r.mr.read(900, 0x9000) == b"dc-write-" * 100), got=str(w))
    check("rdma-read", not I or (rd == {(dci.qp_num, e.IBV_WC_RDMA_READ): [(OK, 900, 0x2000)]}
                                 and r.mr.read(900, 0x2000) == b"dc-read--" * 100), got=str(rd))

    # two-dcts
    if T:
        for k in range(6):
            r.recv(0xc000 + k * 0x100, 0x100)
    link.meet(step="two-dcts")
    if I:
        for k in range(6):
            r.mr.write(bytes([0x40 + k]) * 32, 32, 0x3000 + k * 0x40)
            r.post(dci, e.IBV_WR_SEND, (dctn, dct2n)[k % 2], KEY, 0x3000 + k * 0x40, 32)
    got = r.poll(r.mine(6, 6))
    recvs = sorted(got.get((dctn, e.IBV_WC_RECV), []) + got.get((dct2n, e.IBV_WC_RECV), []))
    check("two-dcts", (not I or (len(got.get((dci.qp_num, e.IBV_WC_SEND), [])) == 6
                                 and all(s == OK for s, _ in
                                         r.sent(got, dci.qp_num, e.IBV_WC_SEND))))
          and (not T or (len(got.get((dctn, e.IBV_WC_RECV), [])) == 3
                         and len(got.get((dct2n, e.IBV_WC_RECV), [])) == 3
                         and all(s == OK and n == 32 for s, n, _ in recvs)
                         and sorted(r.mr.read(32, w)[0] for _, _, w in recvs)
                         == [0x40 + k for k in range(6)])), got=str(got))

    # bad-key: the DCT drops the request unanswered (the card counts the violation: the
    # host checks its `roce` line); the DCI's retries run out.
    bad = r.dci(timeout=10) if I else None
    if T:
        r.recv(0xe000, 64)
    link.meet(step="bad-key")
    if I:
        r.mr.write(b"K" * 16, 16, 0x4000)
        r.post(bad, e.IBV_WR_SEND, dctn, KEY ^ 1, 0x4000, 16)
    got = r.poll(r.mine(0, 1), timeout=2 * r.settle + 10)
    if T:
        # Nothing may arrive meanwhile (the initiator's wait is over, or ours is).
        got.update(r.poll(1, timeout=r.settle) if not I else {})
    link.meet(step="bad-key-done")
    # (An error completion's opcode and length are undefined: only its QP, status, wr_id.)
    failed = [(s, w) for (q, _), wcs in got.items() if bad and q == bad.qp_num for s, _, w in wcs]
    check("bad-key", (not I or failed == [(e.IBV_WC_RETRY_EXC_ERR, 0x4000)])
          and (not T or not got.get((dctn, e.IBV_WC_RECV))), got=str(got))
    if I:
        r.mr.write(b"G" * 16, 16, 0x4000)
        r.post(dci, e.IBV_WR_SEND, dctn, KEY, 0x4000, 16)
    got = r.poll(r.mine(1, 1))
    check("bad-key-took-nothing", (not I or r.sent(got, dci.qp_num, e.IBV_WC_SEND) == [(OK, 0x4000)])
          and (not T or (got.get((dctn, e.IBV_WC_RECV)) == [(OK, 16, 0xe000)]
                         and r.mr.read(16, 0xe000) == b"G" * 16)), got=str(got))

    if T:
        qa, _ = dct.query(e.IBV_QP_STATE | e.IBV_QP_PATH_MTU)
        check("query-dct", qa.qp_state == e.IBV_QPS_RTR and qa.path_mtu == e.IBV_MTU_1024,
              state=qa.qp_state, mtu=qa.path_mtu)
    bad_attrs(r)
    link.meet(step="close")


def bad_attrs(r: Dc):
    """What DC QPs refuse, with mlx5_ib's errnos (qp.c `check_qp_attr`,
    `mlx5_ib_modify_dct`, `mlx5_ib_dct_query_qp`, `modify_dci_qp_is_ok`,
    `validate_rd_atomic`): each side tries its own kind."""
    got = {}
    init = 0
    if r.target:
        no_srq = QPInitAttrEx(cap=QPCap(64, 0, 1, 0), pd=r.pd, scq=r.cq, rcq=r.cq,
                              qp_type=e.IBV_QPT_DRIVER, comp_mask=e.IBV_QP_INIT_ATTR_PD)
        got["dct-without-srq"] = errno_of(lambda: r.dct(to_rtr=False, init=no_srq))
        q = r.dct(to_rtr=False)
        got["dct-query-before-rtr"] = errno_of(lambda: q.query(e.IBV_QP_STATE))
        a = r.attr(14)
        a.qp_state = e.IBV_QPS_INIT
        base = e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS
        got["dct-init-with-timeout"] = errno_of(lambda: q.modify(a, base | e.IBV_QP_TIMEOUT))
        a.qp_state = e.IBV_QPS_RTR
        got["dct-reset-to-rtr"] = errno_of(lambda: q.modify(
            a, e.IBV_QP_STATE | e.IBV_QP_MIN_RNR_TIMER | e.IBV_QP_AV | e.IBV_QP_PATH_MTU))
        a.qp_state = e.IBV_QPS_INIT
        init = errno_of(lambda: q.modify(a, base))
    if r.initiator:
        with_rq = QPInitAttrEx(cap=QPCap(64, 4, 1, 1), pd=r.pd, scq=r.cq, rcq=r.cq,
                               qp_type=e.IBV_QPT_DRIVER, send_ops_flags=SEND_OPS,
                               comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
        got["dci-with-rq"] = errno_of(lambda: r.dci(to_rts=False, init=with_rq))
        q = r.dci(to_rts=False)
        a = r.attr(14)
        a.qp_state = e.IBV_QPS_INIT
        got["dci-init-without-port"] = errno_of(
            lambda: q.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX))
        a.max_rd_atomic = 32
        q.to_rtr(r.attr(14))
        a.qp_state = e.IBV_QPS_RTS
        got["dci-rd-atomic-32"] = errno_of(lambda: q.modify(
            a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY
            | e.IBV_QP_MAX_QP_RD_ATOMIC | e.IBV_QP_SQ_PSN))
    check("bad-attrs", init == 0 and all(v == errno.EINVAL for v in got.values()), got=got)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("device")
    ap.add_argument("--gid-index", type=int, required=True)
    ap.add_argument("--settle", type=float, default=1.0,
                    help="seconds a test waits for what must not happen")
    ap.add_argument("--role", choices=["both", "target", "initiator"], default="both")
    ap.add_argument("--port", type=int, default=18515)
    ap.add_argument("--peer", help="the target's host (--role initiator)")
    a = ap.parse_args()
    sock = None
    if a.role == "target":
        ls = socket.create_server(("", a.port))
        out(step="listening", port=a.port)
        sock, _ = ls.accept()
    elif a.role == "initiator":
        for _ in range(600):
            try:
                sock = socket.create_connection((a.peer, a.port))
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError(f"no target at {a.peer}:{a.port}")
    r = Dc(a)
    steps(r, Link(sock))
    r.close()
    out(step="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
