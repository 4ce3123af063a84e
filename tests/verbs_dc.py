#!/usr/bin/env python3
"""Guest side of the DC transport test (tests/model_roce.py, mlx5_ib on the model): with the
guest's unmodified rdma-core (pyverbs' mlx5dv over libmlx5), as rdma-core's own
tests/test_mlx5_dc.py builds its players, on one card looping back through its own GID:

- a DCT (mlx5dv_create_qp, MLX5DV_DCTYPE_DCT, access key KEY) on an SRQ, moved to RTR (where
  mlx5_ib sends CREATE_DCT), and DCIs (MLX5DV_DCTYPE_DCI) moved to RTS;
- send: a DCI SENDs through mlx5dv_wr_set_dc_addr (the AH, the DCT number, KEY) into the
  DCT's SRQ: both completions, the receive's on the DCT's number, the data whole;
- rdma-write and rdma-read through the DCT (the DCT's remote rights), data checked;
- two-dcts: one DCI alternates between two DCTs; each receives its own messages;
- bad-key: a DCI naming the wrong key gets no answer and takes no receive WQE (the next good
  SEND lands in the WQE posted before); the card counts the violation;
- query-dct: ibv_query_qp of the DCT (QUERY_DCT) gives RTR and its MTU;
- then everything is destroyed (the DCTs through DRAIN_DCT, the DCT_DRAINED event and
  DESTROY_DCT: a missing event would hang here).

One JSON line per step ({"step": name, "ok": bool, ...}); the last is {"step": "closed"}.

usage: verbs_dc.py DEVICE --gid-index N [--settle SECONDS]
(verbs_small.py and verbs_rc.py beside it)
"""

import sys
import time

import pyverbs.enums as e
import pyverbs.providers.mlx5.mlx5_enums as dve
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.providers.mlx5.mlx5dv import (Mlx5Context, Mlx5DVContextAttr, Mlx5DVDCInitAttr,
                                           Mlx5DVQPInitAttr, Mlx5QP)
from pyverbs.qp import QPAttr, QPCap, QPInitAttrEx
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR
from verbs_rc import tool_args
from verbs_small import LW, RR, RW, check, out

KEY = 0x1f2e3d4c5b6a7988
SZ = 1 << 16
SEND_OPS = e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_RDMA_WRITE | e.IBV_QP_EX_WITH_RDMA_READ


class Dc:
    def __init__(self, a):
        self.ctx = Mlx5Context(Mlx5DVContextAttr(), name=a.device)
        self.gid_index = a.gid_index
        self.gid = self.ctx.query_gid(1, a.gid_index)
        self.settle = a.settle
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 256)
        self.srq = SRQ(self.pd, SrqInitAttr(SrqAttr(max_wr=64, max_sge=1)))
        self.mr = MR(self.pd, SZ, LW | RW | RR)
        gr = GlobalRoute(dgid=self.gid, sgid_index=a.gid_index, hop_limit=64)
        self.ah = AH(self.pd, attr=AHAttr(port_num=1, is_global=1, gr=gr))
        self.qps = []

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

    def dci(self, timeout=14):
        dv = Mlx5DVQPInitAttr(comp_mask=dve.MLX5DV_QP_INIT_ATTR_MASK_DC,
                              dc_init_attr=Mlx5DVDCInitAttr())
        q = Mlx5QP(self.ctx, self.init_attr(SEND_OPS), dv)
        q.to_rts(self.attr(timeout))
        self.qps.append(q)
        return q

    def dct(self, key=KEY):
        dv = Mlx5DVQPInitAttr(comp_mask=dve.MLX5DV_QP_INIT_ATTR_MASK_DC,
                              dc_init_attr=Mlx5DVDCInitAttr(dc_type=dve.MLX5DV_DCTYPE_DCT,
                                                            dct_access_key=key))
        q = Mlx5QP(self.ctx, self.init_attr(0), dv)
        q.to_rtr(self.attr(14))
        self.qps.append(q)
        return q

    def recv(self, at, n):
        self.srq.post_recv(RecvWR(wr_id=at, num_sge=1, sg=[SGE(self.mr.buf + at, n, self.mr.lkey)]))

    def post(self, qp, op, dctn, key, at, n, remote=None):
        """One signaled DC work request of `op` from mr[at:at+n] (a READ: into it) to DCT
        `dctn` with access key `key` (RDMA: at mr.buf + `remote`)."""
        qp.wr_start()
        qp.wr_id = at
        qp.wr_flags = e.IBV_SEND_SIGNALED
        if op == e.IBV_WR_SEND:
            qp.wr_send()
        elif op == e.IBV_WR_RDMA_WRITE:
            qp.wr_rdma_write(self.mr.rkey, self.mr.buf + remote)
        else:
            qp.wr_rdma_read(self.mr.rkey, self.mr.buf + remote)
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

    def close(self):
        for q in reversed(self.qps):
            q.close()
        for o in (self.ah, self.mr, self.srq, self.cq, self.pd, self.ctx):
            o.close()


def main() -> int:
    a = tool_args()
    r = Dc(a)
    dct = r.dct()
    dci = r.dci()
    dctn = dct.qp_num
    out(step="created", dct=dctn, dci=dci.qp_num)
    OK = e.IBV_WC_SUCCESS

    msg = bytes((i * 13 + 1) & 0xff for i in range(3000))
    r.mr.write(msg, len(msg), 0)
    r.recv(0x8000, 4096)
    r.post(dci, e.IBV_WR_SEND, dctn, KEY, 0, len(msg))
    got = r.poll(2)
    check("send", r.sent(got, dci.qp_num, e.IBV_WC_SEND) == [(OK, 0)]
          and got.get((dctn, e.IBV_WC_RECV)) == [(OK, len(msg), 0x8000)]
          and r.mr.read(len(msg), 0x8000) == msg, got=str(got))

    r.mr.write(b"dc-write-" * 100, 900, 0x1000)
    r.post(dci, e.IBV_WR_RDMA_WRITE, dctn, KEY, 0x1000, 900, remote=0x9000)
    w = r.poll(1)
    r.mr.write(b"dc-read--" * 100, 900, 0xa000)
    r.post(dci, e.IBV_WR_RDMA_READ, dctn, KEY, 0x2000, 900, remote=0xa000)
    rd = r.poll(1)
    check("rdma-write", list(w) == [(dci.qp_num, e.IBV_WC_RDMA_WRITE)]
          and r.sent(w, dci.qp_num, e.IBV_WC_RDMA_WRITE) == [(OK, 0x1000)]
          and r.mr.read(900, 0x9000) == b"dc-write-" * 100, got=str(w))
    check("rdma-read", rd == {(dci.qp_num, e.IBV_WC_RDMA_READ): [(OK, 900, 0x2000)]}
          and r.mr.read(900, 0x2000) == b"dc-read--" * 100, got=str(rd))

    dct2 = r.dct()
    for k in range(6):
        r.recv(0xc000 + k * 0x100, 0x100)
    for k in range(6):
        r.mr.write(bytes([0x40 + k]) * 32, 32, 0x3000 + k * 0x40)
        r.post(dci, e.IBV_WR_SEND, (dctn, dct2.qp_num)[k % 2], KEY, 0x3000 + k * 0x40, 32)
    got = r.poll(12)
    recvs = sorted(got.get((dctn, e.IBV_WC_RECV), []) + got.get((dct2.qp_num, e.IBV_WC_RECV), []))
    check("two-dcts", len(got.get((dci.qp_num, e.IBV_WC_SEND), [])) == 6
          and len(got.get((dctn, e.IBV_WC_RECV), [])) == 3
          and len(got.get((dct2.qp_num, e.IBV_WC_RECV), [])) == 3
          and all(s == OK and n == 32 for s, n, _ in recvs)
          and sorted(r.mr.read(32, w)[0] for _, _, w in recvs) == [0x40 + k for k in range(6)],
          got=str(got))

    bad = r.dci(timeout=10)
    r.recv(0xe000, 64)
    r.mr.write(b"K" * 16, 16, 0x4000)
    r.post(bad, e.IBV_WR_SEND, dctn, KEY ^ 1, 0x4000, 16)
    # The DCT drops it unanswered (the model counts the violation: model_roce checks its
    # `roce` line): the DCI's ACK timer runs out its retries (timeout 10: ~4 ms each, 2
    # retries) and the request completes in error; nothing is received. (An error CQE's
    # opcode is not defined: any of the DCI's completions counts.)
    got = r.poll(1, timeout=2 * r.settle + 2)
    mine = [s for (q, _), l in got.items() if q == bad.qp_num for s, _, _ in l]
    check("bad-key", mine == [e.IBV_WC_RETRY_EXC_ERR]
          and not got.get((dctn, e.IBV_WC_RECV)), got=str(got))
    r.mr.write(b"G" * 16, 16, 0x4000)
    r.post(dci, e.IBV_WR_SEND, dctn, KEY, 0x4000, 16)
    got = r.poll(2)
    check("bad-key-took-nothing", got.get((dctn, e.IBV_WC_RECV)) == [(OK, 16, 0xe000)]
          and r.mr.read(16, 0xe000) == b"G" * 16, got=str(got))

    qa, _ = dct.query(e.IBV_QP_STATE | e.IBV_QP_PATH_MTU)
    check("query-dct", qa.qp_state == e.IBV_QPS_RTR and qa.path_mtu == e.IBV_MTU_1024,
          state=qa.qp_state, mtu=qa.path_mtu)
    r.close()
    out(step="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
