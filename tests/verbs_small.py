#!/usr/bin/env python3
"""Guest side of the "small verbs" tests (tests/model_roce.py with mlx5_ib, tests/ib.py with
cx4; the same checks, `check_small` in model_roce.py): with the guest's unmodified rdma-core
(pyverbs over libmlx5), RC QPs of one card connected to each other through it.

- rights: the responder's QP access flags decide which remote operations it serves: an
  atomic to a QP without IBV_ACCESS_REMOTE_ATOMIC, a READ without REMOTE_READ (or without
  responder resources, max_dest_rd_atomic 0), a WRITE without REMOTE_WRITE complete with
  IBV_WC_REM_ACCESS_ERR at the requester, even though the MR allows them; with the rights
  they work, and rights changed in RTS (IBV_QP_ACCESS_FLAGS) take effect; the MR's rights
  are still checked (an atomic to an MR without REMOTE_ATOMIC is refused).
- srq-limit: ibv_modify_srq(IBV_SRQ_LIMIT) arms an SRQ's limit (a limit not below the SRQ's
  size and a resize, IBV_SRQ_MAX_WR, are EINVAL), ibv_query_srq reads it back; SENDs to a QP
  on the SRQ take its WQEs, and once fewer than the limit are left (not before) the context
  gets one IBV_EVENT_SRQ_LIMIT_REACHED; the limit then reads 0 (disarmed) and no second
  event comes.
- rereg-access: ibv_rereg_mr(IBV_REREG_MR_CHANGE_ACCESS) on an MR the peer already holds
  the keys of: the MR keeps its lkey and rkey (mlx5_ib changes the rights in place, by UMR),
  so RDMA through the keys handed out before works with the new rights (WRITE and atomic
  once granted, WRITE refused again once taken away, READ throughout).
- dyn-uar: libmlx5 asks for dynamic UARs (MLX5_LIB_CAP_DYN_UAR): its uncached page for QP and
  CQ doorbells is a UAR object (MLX5_IB_METHOD_UAR_OBJ_ALLOC) mapped at a driver-object
  offset (command byte >= 9), and mlx5dv_devx_alloc_uar(NC_DEDICATED) gets further ones (four
  doorbells a page, each page an object of its own); the CQs' doorbell page is that UAR, and RC WRITEs posted through it complete;
  a BlueFlame UAR is refused on a card without write-combining. The pages are destroyed with
  the context (the tests count ALLOC_UAR/DEALLOC_UAR on cx4).

One JSON line per step ({"step": name, "ok": bool, ...}); the last is {"step": "closed"}.

usage: verbs_small.py DEVICE --gid-index N [--settle SECONDS]
(verbs_rc.py, the shared RC QP set-up, beside it)
"""

import errno
import json
import signal
import struct
import sys
import time

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.providers.mlx5 import mlx5_enums as dve
from pyverbs.providers.mlx5.mlx5dv import Mlx5UAR
from pyverbs.providers.mlx5.mlx5dv_objects import Mlx5DvObj
from pyverbs.qp import QPAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR
from verbs_rc import connect_rc, errno_of, rc_qp, tool_args

LW, RW, RR, RA = (e.IBV_ACCESS_LOCAL_WRITE, e.IBV_ACCESS_REMOTE_WRITE,
                  e.IBV_ACCESS_REMOTE_READ, e.IBV_ACCESS_REMOTE_ATOMIC)
SZ = 65536


def out(**kw):
    print(json.dumps(kw), flush=True)


def check(step, ok, **kw):
    out(step=step, ok=bool(ok), **kw)


class Run:
    def __init__(self, a):
        self.ctx = Context(name=a.device)
        self.gid_index = a.gid_index
        self.gid = self.ctx.query_gid(1, a.gid_index)
        self.settle = a.settle
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 64)
        self.src = MR(self.pd, SZ, LW)
        self.qp = self.peer = None

    def pair(self, access, dest_rd_atomic=4, srq=None, peer_cq=None):
        """A fresh pair of connected RC QPs: `qp` requests, `peer` responds with the remote
        `access` rights and `dest_rd_atomic` responder resources (and receives from `srq`
        into `peer_cq` if given)."""
        self.close_pair()
        self.qp = rc_qp(self.pd, self.cq, self.cq, max_send_wr=16, max_recv_wr=4)
        self.peer = rc_qp(self.pd, self.cq, peer_cq or self.cq, max_send_wr=4, max_recv_wr=4,
                          srq=srq)
        connect_rc(self.qp, self.peer.qp_num, self.gid, self.gid_index, RW | RR | RA,
                   timeout=10, retry_cnt=1, rnr_retry=1)
        connect_rc(self.peer, self.qp.qp_num, self.gid, self.gid_index, access,
                   timeout=10, retry_cnt=1, rnr_retry=1, dest_rd_atomic=dest_rd_atomic)

    def close(self):
        self.close_pair()
        self.src.close()
        self.cq.close()
        self.pd.close()
        self.ctx.close()

    def close_pair(self):
        for q in (self.qp, self.peer):
            if q is not None:
                q.close()
        self.qp = self.peer = None

    def op(self, opcode, rkey, raddr, n=8, add=0, timeout=30.0):
        """One signaled SEND or RDMA WRITE (of src[0:n]), READ (into src[0:n]) or fetch-and-add
        of `add` (the original value into src[0:8]); the completion status (-1: none came)."""
        sge = SGE(self.src.buf, n, self.src.lkey)
        wr = SendWR(wr_id=1, opcode=opcode, num_sge=1, sg=[sge], send_flags=e.IBV_SEND_SIGNALED)
        if opcode == e.IBV_WR_ATOMIC_FETCH_AND_ADD:
            wr.set_wr_atomic(rkey, raddr, add, 0)
        elif opcode != e.IBV_WR_SEND:
            wr.set_wr_rdma(rkey, raddr)
        self.qp.post_send(wr)
        deadline = time.time() + timeout
        while time.time() < deadline:
            k, wcs = self.cq.poll(1)
            if k:
                return wcs[0].status
        return -1

    def fetch_add(self, mr, at, add):
        st = self.op(e.IBV_WR_ATOMIC_FETCH_AND_ADD, mr.rkey, mr.buf + at, add=add)
        return st, struct.unpack("<Q", self.src.read(8, 0))[0]

    def modify_access(self, qp, access):
        a = QPAttr()
        a.qp_access_flags = access
        qp.modify(a, e.IBV_QP_ACCESS_FLAGS)


def u64(mr, at):
    return struct.unpack("<Q", mr.read(8, at))[0]


def rights_tests(r):
    OK, REM_ACC = e.IBV_WC_SUCCESS, e.IBV_WC_REM_ACCESS_ERR
    FA, WRITE, READ = e.IBV_WR_ATOMIC_FETCH_AND_ADD, e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_READ
    mr = MR(r.pd, SZ, LW | RW | RR | RA)
    mr.write(struct.pack("<Q", 100), 8, 0)

    # Every right: the atomic works (a user QP created with remote-atomic access).
    r.pair(RW | RR | RA)
    st, orig = r.fetch_add(mr, 0, 5)
    check("atomic-allowed", st == OK and orig == 100 and u64(mr, 0) == 105, status=st, orig=orig)
    # No remote atomic on the responder's QP: refused although the MR allows it.
    r.pair(RW | RR)
    st, _ = r.fetch_add(mr, 0, 5)
    check("atomic-refused", st == REM_ACC and u64(mr, 0) == 105, status=st)
    # Remote write only: WRITEs land, READs are refused.
    r.pair(RW)
    r.src.write(b"\x11" * 64, 64, 0)
    st = r.op(WRITE, mr.rkey, mr.buf + 4096, 64)
    check("write-allowed", st == OK and mr.read(64, 4096) == b"\x11" * 64, status=st)
    st = r.op(READ, mr.rkey, mr.buf + 4096, 64)
    check("read-refused", st == REM_ACC, status=st)
    # Read and atomic but no write: WRITEs are refused.
    r.pair(RR | RA)
    r.src.write(b"\x22" * 64, 64, 0)
    st = r.op(WRITE, mr.rkey, mr.buf + 8192, 64)
    check("write-refused", st == REM_ACC and mr.read(64, 8192) == b"\0" * 64, status=st)
    # Every right but no responder resources: only remote writes stay.
    r.pair(RW | RR | RA, dest_rd_atomic=0)
    st = r.op(READ, mr.rkey, mr.buf + 4096, 64)
    check("read-refused-no-resources", st == REM_ACC, status=st)
    # Rights changed in RTS (RTS2RTS with the RRE/RWE/RAE optional parameters).
    r.pair(RW | RR)
    r.modify_access(r.peer, RW | RR | RA)
    st, orig = r.fetch_add(mr, 0, 1)
    check("atomic-after-modify", st == OK and orig == 105 and u64(mr, 0) == 106, status=st)
    r.modify_access(r.peer, RR | RA)
    r.src.write(b"\x33" * 64, 64, 0)
    st = r.op(WRITE, mr.rkey, mr.buf + 12288, 64)
    check("write-refused-after-modify", st == REM_ACC and mr.read(64, 12288) == b"\0" * 64,
          status=st)
    # The MR's rights are checked as well: every QP right, an MR without remote atomic.
    nomr = MR(r.pd, SZ, LW | RW | RR)
    r.pair(RW | RR | RA)
    st, _ = r.fetch_add(nomr, 0, 1)
    check("atomic-refused-by-mr", st == REM_ACC and u64(nomr, 0) == 0, status=st)
    r.close_pair()
    nomr.close()
    mr.close()


def take_events(ctx, timeout):
    """The async events of `ctx` that come within `timeout` seconds (their types).

    ibv_get_async_event blocks (and pyverbs holds the interpreter meanwhile), so a timer
    signal interrupts the read when nothing more comes."""
    got = []
    end = time.time() + timeout
    signal.signal(signal.SIGALRM, lambda *_: None)
    while (left := end - time.time()) > 0:
        signal.setitimer(signal.ITIMER_REAL, left)
        try:
            ev = ctx.get_async_event()
        except Exception:
            break
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        got.append(ev.event_type)
        ev.ack()
        if ev.event_type == e.IBV_EVENT_SRQ_LIMIT_REACHED:
            break
    return got


def srq_limit_tests(r):
    LIMIT = e.IBV_EVENT_SRQ_LIMIT_REACHED
    srq = SRQ(r.pd, SrqInitAttr(SrqAttr(max_wr=15, max_sge=1)))
    size = srq.query().max_wr + 1
    out(step="srq", max_wr=size - 1)
    bad = {"limit-too-big": errno_of(lambda: srq.modify(SrqAttr(srq_limit=size), e.IBV_SRQ_LIMIT)),
           "resize": errno_of(lambda: srq.modify(SrqAttr(max_wr=31), e.IBV_SRQ_MAX_WR))}
    check("srq-bad-modify", bad == {"limit-too-big": 22, "resize": 22}, errnos=bad)
    rcq = CQ(r.ctx, 32)
    dst = MR(r.pd, SZ, LW)
    r.pair(RW, srq=srq, peer_cq=rcq)
    for k in range(8):
        srq.post_recv(RecvWR(wr_id=k, num_sge=1, sg=[SGE(dst.buf + k * 256, 256, dst.lkey)]))
    srq.modify(SrqAttr(srq_limit=5), e.IBV_SRQ_LIMIT)
    armed = srq.query().srq_limit
    check("srq-armed", armed == 5, srq_limit=armed)

    def sends(n):
        sts = [r.op(e.IBV_WR_SEND, 0, 0, 16) for _ in range(n)]
        return sts, rcq.poll(n)[0]

    # 8 posted, 3 taken: 5 left, not below the limit.
    sts, recvd = sends(3)
    early = take_events(r.ctx, r.settle)
    check("srq-not-yet", sts == [e.IBV_WC_SUCCESS] * 3 and LIMIT not in early,
          statuses=sts, events=early)
    # The fourth leaves 4: the event, then the limit reads 0.
    sts, _ = sends(1)
    ev = take_events(r.ctx, 10 * r.settle)
    after = srq.query().srq_limit
    check("srq-limit-event", sts == [e.IBV_WC_SUCCESS] and ev.count(LIMIT) == 1 and after == 0,
          statuses=sts, events=ev, srq_limit=after)
    sts, _ = sends(2)
    again = take_events(r.ctx, r.settle)
    check("srq-disarmed", sts == [e.IBV_WC_SUCCESS] * 2 and LIMIT not in again,
          statuses=sts, events=again)
    r.close_pair()
    srq.close()
    rcq.close()
    dst.close()


def rereg_access_tests(r):
    OK, REM_ACC = e.IBV_WC_SUCCESS, e.IBV_WC_REM_ACCESS_ERR
    WRITE, READ = e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_READ
    mr = MR(r.pd, SZ, LW | RR)
    mr.write(struct.pack("<Q", 7), 8, 0)
    keys = (mr.lkey, mr.rkey)   # what the peer was told
    r.pair(RW | RR | RA)
    r.src.write(b"\x44" * 64, 64, 0)
    st = r.op(WRITE, keys[1], mr.buf + 4096, 64)
    check("rereg-before-write-refused", st == REM_ACC, status=st)
    r.pair(RW | RR | RA)
    err = errno_of(lambda: mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, r.pd, 0, 0, LW | RW | RR | RA))
    now = (mr.lkey, mr.rkey)
    out(step="rereg-access", errno=err, old_keys=list(keys), new_keys=list(now))
    st = r.op(WRITE, now[1], mr.buf + 4096, 64)
    check("rereg-write-new-key", err == 0 and st == OK and mr.read(64, 4096) == b"\x44" * 64,
          status=st)
    r.src.write(b"\x55" * 64, 64, 0)
    st = r.op(WRITE, keys[1], mr.buf + 8192, 64)
    check("rereg-write-old-key", st == OK and mr.read(64, 8192) == b"\x55" * 64, status=st,
          same_keys=now == keys)
    st = r.op(e.IBV_WR_ATOMIC_FETCH_AND_ADD, keys[1], mr.buf, add=3)
    check("rereg-atomic", st == OK and u64(mr, 0) == 10, status=st)
    err = errno_of(lambda: mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, r.pd, 0, 0, LW | RR))
    r.src.write(b"\x66" * 64, 64, 0)
    st = r.op(WRITE, keys[1], mr.buf + 12288, 64)
    r.pair(RW | RR | RA)   # the refused WRITE left the last pair in error
    st2 = r.op(READ, keys[1], mr.buf + 4096, 64)
    check("rereg-less", err == 0 and (mr.lkey, mr.rkey) == keys and st == REM_ACC
          and st2 == OK and r.src.read(64, 0) == b"\x44" * 64
          and mr.read(64, 12288) == b"\0" * 64, status=[st, st2])
    r.close_pair()
    mr.close()


def uar_cmd(u):
    """The mmap command byte of a UAR's offset (libmlx5 `set_command`: bits 8..16 of the page
    offset); 9 and above are driver objects' entries (MLX5_IB_MMAP_OFFSET_START)."""
    return (u.mmap_off >> 12 >> 8) & 0xff


def dyn_uar_tests(r):
    # MLX5DV_UAR_ALLOC_TYPE_BF, _NC, _NC_DEDICATED (mlx5_api.h)
    BF, NC, NC_DEDICATED = 0, 1, 1 << 31
    nc = Mlx5UAR(r.ctx, NC)
    # libmlx5 hands out the doorbells of an uncached page four at a time (two UARs of two
    # registers): five dedicated ones take two new pages.
    more = [Mlx5UAR(r.ctx, NC_DEDICATED) for _ in range(5)]
    uars = [nc] + more
    pages = {}
    for u in uars:
        pages.setdefault(u.page_id, set()).add((u.base_addr, u.mmap_off))
    check("dyn-uar-alloc", len(pages) == 3 and all(len(v) == 1 for v in pages.values())
          and all(uar_cmd(u) >= 9 and 0 < u.reg_addr - u.base_addr < 4096 for u in uars)
          and len({u.reg_addr for u in uars}) == 6
          and len({u.mmap_off for u in uars}) == 3,
          page_ids=[u.page_id for u in uars], offsets=[u.mmap_off for u in uars])
    bf = errno_of(lambda: Mlx5UAR(r.ctx, BF))
    check("dyn-uar-bf-refused", bf == errno.EOPNOTSUPP, errno=bf)
    # libmlx5's QPs and CQs ring through its uncached UAR: the CQ's doorbell page is it.
    cq_uar = Mlx5DvObj(dve.MLX5DV_OBJ_CQ, cq=r.cq).dvcq.cq_uar
    mr = MR(r.pd, SZ, LW | RW)
    r.pair(RW)
    sts = []
    for k in range(4):
        r.src.write(bytes([k + 1]) * 64, 64, 0)
        sts.append(r.op(e.IBV_WR_RDMA_WRITE, mr.rkey, mr.buf + 256 * k, 64))
    data = [mr.read(64, 256 * k) for k in range(4)]
    check("dyn-uar-post", sts == [e.IBV_WC_SUCCESS] * 4
          and data == [bytes([k + 1]) * 64 for k in range(4)]
          and cq_uar == nc.base_addr, statuses=sts, cq_uar=cq_uar, nc_uar=nc.base_addr)
    r.close_pair()
    mr.close()
    for u in more:
        u.close()


def main() -> int:
    a = tool_args()
    r = Run(a)
    out(step="created")
    rights_tests(r)
    r.close()
    # A context of its own: the refused requests above raised QP events on this one.
    r = Run(a)
    srq_limit_tests(r)
    rereg_access_tests(r)
    dyn_uar_tests(r)
    r.close()
    out(step="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
