#!/usr/bin/env python3
"""Guest side of the memory-window tests (tests/model_roce.py with mlx5_ib, tests/ib.py with
cx4; the same checks, `check_mw` in model_roce.py): with the guest's unmodified rdma-core
(pyverbs over libmlx5), RC QPs of one card connected to each other through it
(verbs_small.py's `Run`), an MR the responder side binds windows on (IBV_ACCESS_MW_BIND).

- caps: ibv_query_device reports IBV_DEVICE_MEM_WINDOW and TYPE_2B and max_mw.
- type 1 (ibv_bind_mw, libmlx5's UMR WQE): RDMA through the window's rkey works inside the
  window with the window's own rights (WRITE and READ granted), is refused outside it and for
  a right it lacks (READ-only window: WRITE refused); after a re-bind the old rkey is refused.
- type 2 (IBV_WR_BIND_MW on the responder's QP): the window serves its bound QP only (through
  another QP: refused); SEND_WITH_INV invalidates it remotely (the receive completion carries
  IBV_WC_WITH_INV and the key; then refused); bound again, LOCAL_INV invalidates it (then
  refused).

One JSON line per step ({"step": name, "ok": bool, ...}); the last is {"step": "closed"}.

usage: verbs_mw.py DEVICE --gid-index N [--settle SECONDS]
(verbs_small.py and verbs_rc.py beside it)
"""

import sys
import time

import pyverbs.enums as e
from pyverbs.mr import MR, MW, MWBind, MWBindInfo
from pyverbs.wr import SGE, RecvWR, SendWR
from verbs_rc import tool_args
from verbs_small import LW, RR, RW, SZ, Run, check, errno_of, out

OK, REM_ACC = e.IBV_WC_SUCCESS, e.IBV_WC_REM_ACCESS_ERR
WRITE, READ = e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_READ
WIN, LEN = 4096, 4096          # the window: [mr.buf + WIN, mr.buf + WIN + LEN)


def poll_one(cq, timeout=30.0):
    """The next completion of `cq` (None if none comes)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        k, wcs = cq.poll(1)
        if k:
            return wcs[0]
    return None


def write_read(r, rkey, mr, at, byte):
    """A WRITE of 64 `byte`s at mr.buf + at through `rkey` and a READ back; their statuses and
    whether the data landed."""
    r.src.write(bytes([byte]) * 64, 64, 0)
    w = r.op(WRITE, rkey, mr.buf + at, 64)
    r.src.write(b"\0" * 64, 64, 0)
    rd = r.op(READ, rkey, mr.buf + at, 64) if w == OK else -1
    return w, rd, mr.read(64, at) == bytes([byte]) * 64 and r.src.read(64, 0) == bytes([byte]) * 64


def bind_type2(r, mw, mr, access):
    """Binds the type-2 window `mw` on the responder's QP (IBV_WR_BIND_MW): (status, opcode,
    new rkey)."""
    wr = SendWR(wr_id=7, opcode=e.IBV_WR_BIND_MW, send_flags=e.IBV_SEND_SIGNALED)
    wr.set_bind_wr(mw, MWBindInfo(mr, mr.buf + WIN, LEN, access))
    r.peer.post_send(wr)
    wc = poll_one(r.cq)
    return (wc.status, wc.opcode, wr.rkey) if wc else (-1, -1, wr.rkey)


def caps(r):
    a = r.ctx.query_device()
    flags = a.device_cap_flags
    want = e.IBV_DEVICE_MEM_WINDOW | e.IBV_DEVICE_MEM_WINDOW_TYPE_2B
    check("mw-caps", flags & want == want and a.max_mw > 0, flags=flags, max_mw=a.max_mw)


def type1_tests(r, mr):
    r.pair(RW | RR)
    mw = MW(r.pd, e.IBV_MW_TYPE_1)
    key0 = mw.rkey
    bind = MWBind(MWBindInfo(mr, mr.buf + WIN, LEN, RW | RR), e.IBV_SEND_SIGNALED)
    err = errno_of(lambda: r.peer.bind_mw(mw, bind))
    wc = poll_one(r.cq)
    key1 = mw.rkey
    st = (wc.status, wc.opcode) if wc else None
    w, rd, landed = write_read(r, key1, mr, WIN + 128, 0x31)
    check("mw1-bind-access", err == 0 and st == (OK, e.IBV_WC_BIND_MW) and key1 != key0
          and (w, rd, landed) == (OK, OK, True), errno=err, bind=st, keys=[key0, key1],
          statuses=[w, rd])
    w = r.op(WRITE, key1, mr.buf + WIN + LEN, 64)
    check("mw1-outside-refused", w == REM_ACC and mr.read(64, WIN + LEN) == b"\0" * 64, status=w)
    # A READ-only window: WRITEs through it are refused, READs work.
    r.pair(RW | RR)
    bind = MWBind(MWBindInfo(mr, mr.buf + WIN, LEN, RR), e.IBV_SEND_SIGNALED)
    err = errno_of(lambda: r.peer.bind_mw(mw, bind))
    wc = poll_one(r.cq)
    key2 = mw.rkey
    rd = r.op(READ, key2, mr.buf + WIN + 128, 64)
    w = r.op(WRITE, key2, mr.buf + WIN + 256, 64)
    check("mw1-rights", err == 0 and wc is not None and wc.status == OK and key2 != key1
          and rd == OK and w == REM_ACC and mr.read(64, WIN + 256) == b"\0" * 64,
          statuses=[rd, w], keys=[key1, key2])
    # The key of the first binding is no longer valid.
    r.pair(RW | RR)
    w = r.op(WRITE, key1, mr.buf + WIN + 512, 64)
    check("mw1-old-key-refused", w == REM_ACC and mr.read(64, WIN + 512) == b"\0" * 64, status=w)
    r.close_pair()
    mw.close()


def type2_tests(r, mr):
    mw = MW(r.pd, e.IBV_MW_TYPE_2)
    r.pair(RW | RR)
    st, op, key = bind_type2(r, mw, mr, RW | RR)
    w, rd, landed = write_read(r, key, mr, WIN + 1024, 0x41)
    check("mw2-bind-access", (st, op) == (OK, e.IBV_WC_BIND_MW)
          and (w, rd, landed) == (OK, OK, True), bind=[st, op], statuses=[w, rd])
    # Through another pair (its responder is not the bound QP): refused.
    bound = (r.qp, r.peer)
    r.qp = r.peer = None
    r.pair(RW | RR)
    w = r.op(WRITE, key, mr.buf + WIN + 1536, 64)
    check("mw2-other-qp-refused", w == REM_ACC and mr.read(64, WIN + 1536) == b"\0" * 64,
          status=w)
    r.close_pair()
    r.qp, r.peer = bound
    # SEND_WITH_INV from the bound QP's peer invalidates it at the responder.
    rbuf = MR(r.pd, 4096, LW)
    r.peer.post_recv(RecvWR(wr_id=9, num_sge=1, sg=[SGE(rbuf.buf, 256, rbuf.lkey)]))
    wr = SendWR(wr_id=8, opcode=e.IBV_WR_SEND_WITH_INV, num_sge=1,
                sg=[SGE(r.src.buf, 16, r.src.lkey)], send_flags=e.IBV_SEND_SIGNALED,
                imm_data=key)
    r.qp.post_send(wr)
    got = [poll_one(r.cq), poll_one(r.cq)]
    recv = [w for w in got if w is not None and w.wr_id == 9]
    inv = recv[0] if recv else None
    w = r.op(WRITE, key, mr.buf + WIN + 2048, 64)
    check("mw2-remote-inval", inv is not None and inv.status == OK
          and inv.wc_flags & e.IBV_WC_WITH_INV and inv.imm_data == key
          and all(x is not None and x.status == OK for x in got)
          and w == REM_ACC and mr.read(64, WIN + 2048) == b"\0" * 64,
          statuses=[x.status if x else -1 for x in got], write=w,
          flags=inv.wc_flags if inv else None)
    # Bound again on a fresh pair, then invalidated locally.
    r.pair(RW | RR)
    st, op, key = bind_type2(r, mw, mr, RW)
    w1 = r.op(WRITE, key, mr.buf + WIN + 2560, 64)
    wr = SendWR(wr_id=6, opcode=e.IBV_WR_LOCAL_INV, send_flags=e.IBV_SEND_SIGNALED,
                imm_data=key)
    r.peer.post_send(wr)
    wc = poll_one(r.cq)
    lst = (wc.status, wc.opcode) if wc else None
    r.src.write(b"\x77" * 64, 64, 0)
    w2 = r.op(WRITE, key, mr.buf + WIN + 3072, 64)
    check("mw2-local-inval", st == OK and w1 == OK and lst == (OK, e.IBV_WC_LOCAL_INV)
          and w2 == REM_ACC and mr.read(64, WIN + 3072) == b"\0" * 64,
          bind=st, statuses=[w1, w2], local_inv=lst)
    r.close_pair()
    rbuf.close()
    mw.close()


def main() -> int:
    a = tool_args()
    r = Run(a)
    out(step="created")
    caps(r)
    mr = MR(r.pd, SZ, LW | RW | RR | e.IBV_ACCESS_MW_BIND)
    type1_tests(r, mr)
    type2_tests(r, mr)
    mr.close()
    r.close()
    out(step="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
