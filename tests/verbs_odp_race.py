#!/usr/bin/env python3
"""Guest side of the ODP invalidation race (tests/model_roce.py, mlx5_ib on the model; the
card's side is Documentation/odp.md): RC traffic between two QPs of one card looping back
through its own GID, from and into on-demand-paging MRs, while a thread zaps the pages under
them as fast as it can.

The buffers are a MAP_SHARED memfd mapping: MADV_DONTNEED drops the process's page-table
entries (mlx5_ib's MMU interval notifier zaps the MTTs by UMR, the next card access faults)
but the contents stay in the file, so every byte can be checked. Per MR kind (an explicit
ODP MR over the buffer, and the implicit ODP MR of the whole address space), rounds of
RDMA WRITE, RDMA READ and SEND of 16 KiB each, each round with new contents, every
completion successful and every byte where it belongs. The card's page faults land in the
middle of messages: the requester's gather after its WQE was fetched, the responder's
placement; neither may cost a transport retry (retry_cnt is 2, the racer zaps far more often
than that) nor lose or misplace data.

One JSON line per step ({"step": name, "ok": bool, ...}): explicit, implicit, then
{"step": "closed", "zaps": N}.

usage: verbs_odp_race.py DEVICE --gid-index N [--settle SECONDS] [--rounds N]
(verbs_small.py and verbs_rc.py beside it)
"""

import ctypes
import mmap
import os
import sys
import threading
import time

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.wr import SGE, RecvWR, SendWR
from verbs_rc import connect_rc, rc_qp, tool_args
from verbs_small import LW, RR, RW, check, out

MSG = 16 << 10
# Source, WRITE target, READ target (the READ reads the WRITE target back), receive buffer.
SRC, DST, BACK, RECV = 0, 1 << 16, 2 << 16, 3 << 16
SIZE = 4 << 16
MADV_DONTNEED = 4
libc = ctypes.CDLL(None, use_errno=True)
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


class Racer(threading.Thread):
    """Zaps every page of [addr, addr + size) in a loop until stopped (ctypes drops the GIL
    for the call, so the zaps run beside the traffic)."""

    def __init__(self, addr, size):
        super().__init__(daemon=True)
        self.addr, self.size, self.zaps = addr, size, 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            if libc.madvise(self.addr, self.size, MADV_DONTNEED) != 0:
                raise OSError(ctypes.get_errno(), "madvise")
            self.zaps += 1
            time.sleep(0.0005)


def poll(cq, n, timeout):
    """`n` completions of `cq` as (status, opcode, wr_id), or fewer at the timeout."""
    got, deadline = [], time.time() + timeout
    while len(got) < n and time.time() < deadline:
        k, wcs = cq.poll(1)
        got += [(w.status, w.opcode, w.wr_id) for w in wcs[:k]]
    return got


def rounds(mr, base, a, b, cq, n, racer):
    """`n` rounds of WRITE, READ and SEND from A to B through `mr` (lkey and rkey) over the
    buffer at `base`; the first failure, or None."""
    buf = (ctypes.c_char * SIZE).from_address(base)
    for k in range(n):
        data = bytes((i * 7 + k * 13 + 1) & 0xff for i in range(MSG))
        buf[SRC:SRC + MSG] = data
        b.post_recv(RecvWR(wr_id=RECV, num_sge=1, sg=[SGE(base + RECV, MSG, mr.lkey)]))
        for wr_id, op, at, remote in ((DST, e.IBV_WR_RDMA_WRITE, SRC, DST),
                                      (BACK, e.IBV_WR_RDMA_READ, BACK, DST),
                                      (SRC, e.IBV_WR_SEND, SRC, None)):
            wr = SendWR(wr_id=wr_id, opcode=op, num_sge=1,
                        sg=[SGE(base + at, MSG, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
            if remote is not None:
                wr.set_wr_rdma(mr.rkey, base + remote)
            a.post_send(wr)
            got = poll(cq, 2 if op == e.IBV_WR_SEND else 1, 60)
            if len(got) != (2 if op == e.IBV_WR_SEND else 1) or \
                    any(s != e.IBV_WC_SUCCESS for s, _, _ in got):
                return dict(round=k, op=op, got=str(got))
        for at in (DST, BACK, RECV):
            seen = bytes(buf[at:at + MSG])
            if seen != data:
                bad = next(i for i in range(MSG) if seen[i] != data[i])
                return dict(round=k, buffer=hex(at), first_bad_byte=bad)
    return None


def main() -> int:
    ap_rounds = 40
    if "--rounds" in sys.argv:
        i = sys.argv.index("--rounds")
        ap_rounds = int(sys.argv[i + 1])
        del sys.argv[i:i + 2]
    args = tool_args()
    ctx = Context(name=args.device)
    gid = ctx.query_gid(1, args.gid_index)
    pd = PD(ctx)
    cq = CQ(ctx, 64)
    a, b = rc_qp(pd, cq, cq, 8, 8), rc_qp(pd, cq, cq, 8, 8)
    access = LW | RW | RR
    # timeout 14 (~67 ms), retry_cnt 2: three lost requests in a row fail the QP; RNR retries
    # unbounded (the responder's faults are RNR NAKs).
    connect_rc(a, b.qp_num, gid, args.gid_index, access, 14, 2, 7)
    connect_rc(b, a.qp_num, gid, args.gid_index, access, 14, 2, 7)
    fd = os.memfd_create("odp-race")
    os.ftruncate(fd, SIZE)
    m = mmap.mmap(fd, SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    racer = Racer(base, SIZE)
    racer.start()
    try:
        mr = MR(pd, SIZE, access | e.IBV_ACCESS_ON_DEMAND, address=base)
        bad = rounds(mr, base, a, b, cq, ap_rounds, racer)
        check("explicit", bad is None, zaps=racer.zaps, **(bad or {}))
        mr.close()
        imr = MR(pd, 0, access | e.IBV_ACCESS_ON_DEMAND, implicit=True)
        bad = rounds(imr, base, a, b, cq, ap_rounds, racer)
        check("implicit", bad is None, zaps=racer.zaps, **(bad or {}))
        imr.close()
    finally:
        racer.stop.set()
        racer.join()
    for o in (a, b, cq, pd):
        o.close()
    ctx.close()
    out(step="closed", zaps=racer.zaps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
