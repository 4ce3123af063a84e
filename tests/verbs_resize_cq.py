#!/usr/bin/env python3
"""Guest side of the CQ resize tests (tests/model_roce.py with mlx5_ib, tests/ib.py with cx4):
with the guest's unmodified rdma-core (pyverbs over libmlx5), a self-connected RC QP posts
signaled RDMA WRITEs whose send completions go to the CQ under test; the CQ is resized
(ibv_resize_cq) while completions wait unpolled in its old ring and more arrive after, so
libmlx5 must copy the old ring's CQEs up to the card's RESIZE_CQ CQE and carry on in the new
ring. Every completion must be seen exactly once and in order. Then resizes the card or the
driver must refuse: smaller than the completions waiting, zero, beyond the device's maximum;
none of them may lose a completion. One JSON line per step.

usage: verbs_resize_cq.py DEVICE --gid-index N [--settle SECONDS]
(verbs_rc.py, the shared RC QP set-up, beside it)
"""

import json
import sys
import time

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError
from pyverbs.wr import SGE, SendWR
from verbs_rc import connect_rc, rc_qp, tool_args


def out(**kw):
    print(json.dumps(kw), flush=True)


class Run:
    def __init__(self, a):
        self.settle = a.settle
        self.ctx = Context(name=a.device)
        self.max_cqe = self.ctx.query_device().max_cqe
        gid = self.ctx.query_gid(1, a.gid_index)
        self.pd = PD(self.ctx)
        self.mr = MR(self.pd, 65536, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
        self.cq = CQ(self.ctx, 15)
        self.rcq = CQ(self.ctx, 4)
        self.qp = rc_qp(self.pd, self.cq, self.rcq, max_send_wr=128, max_recv_wr=4)
        connect_rc(self.qp, self.qp.qp_num, gid, a.gid_index, e.IBV_ACCESS_REMOTE_WRITE,
                   timeout=14, retry_cnt=7, rnr_retry=7)
        self.next_wr = 0
        self.seen = []
        self.bad = []

    def post(self, n):
        """n signaled 8-byte RDMA WRITEs into the MR, numbered on."""
        for _ in range(n):
            i = self.next_wr
            off = (i % 4096) * 8
            sge = SGE(self.mr.buf + off, 8, self.mr.lkey)
            wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[sge],
                        send_flags=e.IBV_SEND_SIGNALED)
            wr.set_wr_rdma(self.mr.rkey, self.mr.buf + 32768 + off)
            self.qp.post_send(wr)
            self.next_wr += 1

    def poll(self, n, timeout=30.0):
        """Polls until n completions have come (or timeout); returns how many came."""
        got = 0
        deadline = time.time() + timeout
        while got < n and time.time() < deadline:
            k, wcs = self.cq.poll(n - got)
            for wc in wcs[:k]:
                if wc.status != e.IBV_WC_SUCCESS:
                    self.bad.append((wc.wr_id, wc.status))
                self.seen.append(wc.wr_id)
            got += k
        return got

    def resize(self, step, n):
        """ibv_resize_cq(n); returns the error code (0 when it succeeded)."""
        try:
            self.cq.resize(n)
            out(step=step, asked=n, ok=True, cqe=self.cq.cqe)
            return 0
        except (PyverbsRDMAError, PyverbsError) as ex:
            code = getattr(ex, "error_code", None)
            out(step=step, asked=n, ok=False, errno=code, error=str(ex)[:160], cqe=self.cq.cqe)
            return code or -1


def main() -> int:
    a = tool_args()
    r = Run(a)
    out(step="created", cqe=r.cq.cqe, max_cqe=r.max_cqe)

    # Grow 15 → 63 with seven completions waiting in the old ring, 30 more after.
    r.post(10)
    r.poll(3)
    time.sleep(a.settle)
    r.resize("grow", 63)
    r.post(30)
    r.poll(37)
    out(step="after-grow", seen=len(r.seen))

    # Shrink 63 → 15 with ten waiting, four more after.
    r.post(12)
    r.poll(2)
    time.sleep(a.settle)
    r.resize("shrink", 15)
    r.post(4)
    r.poll(14)
    out(step="after-shrink", seen=len(r.seen))

    # Refused: 4 entries for 10 waiting; 0; far beyond max_cqe. Nothing may be lost.
    r.post(10)
    time.sleep(a.settle)
    r.resize("too-small", 3)
    r.resize("zero", 0)
    r.resize("huge", 1 << 25)  # 2 GiB of CQEs: libmlx5 refuses it (EINVAL) itself
    r.poll(10)
    out(step="after-refused", seen=len(r.seen), cqe=r.cq.cqe)

    # The same size is a no-op; the CQ still works after everything.
    r.resize("same", r.cq.cqe)
    r.post(8)
    r.poll(8)
    ordered = r.seen == list(range(r.next_wr))
    out(step="done", posted=r.next_wr, seen=len(r.seen), ordered=ordered,
        dups=len(r.seen) - len(set(r.seen)), bad=r.bad[:5],
        first_wrong=next((i for i, w in enumerate(r.seen) if w != i), None))
    r.qp.close()
    r.cq.close()
    r.rcq.close()
    r.mr.close()
    r.pd.close()
    r.ctx.close()
    out(step="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
