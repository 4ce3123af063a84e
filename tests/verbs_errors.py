#!/usr/bin/env python3
"""Guest side of the RC error-path test (tests/model_roce.py): two VMs, one `server` and one
`client`, each with the guest's unmodified rdma-core (pyverbs over libibverbs and libmlx5).
For every scenario both sides create a fresh RC QP pair, exchange QP numbers, PSNs and the
server's buffer over TCP, connect, and then drive one error path; each side prints one JSON
line per scenario with the completion statuses, async events and QP states it saw, and the
change of its port's `hw_counters` (mlx5_ib's queue counters) over the scenario.

Scenarios:
- `rnr_exceeded`: no receive posted, the client's rnr_retry is 0: the client's SEND completes
  RNR_RETRY_EXC_ERR and the one behind it WR_FLUSH_ERR; the server's QP stays RTS.
- `rnr_recovers`: rnr_retry 7, the server posts its receive 0.5 s late: the SEND succeeds,
  the data arrives, and the client's `rnr_nak_retry_err` counter rises.
- `remote_access`: an RDMA WRITE to a buffer registered for remote read only: the client
  completes REM_ACCESS_ERR; the server gets the IBV_EVENT_QP_ACCESS_ERR async event, its QP is
  in ERR and its posted receive is flushed.
- `read_out_of_bounds`: an RDMA READ past the end of the server's buffer: REM_ACCESS_ERR.
- `too_long`: a SEND longer than the posted receive: the client completes REM_INV_REQ_ERR, the
  server's receive LOC_LEN_ERR, and its QP is in ERR.

usage: verbs_errors.py server DEVICE GID_INDEX PORT
       verbs_errors.py client DEVICE GID_INDEX SERVER_IP PORT
"""

import json
import os
import signal
import socket
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

SCENARIOS = ["rnr_exceeded", "rnr_recovers", "remote_access", "read_out_of_bounds", "too_long"]
BUF = 8192
COUNTERS = ["rnr_nak_retry_err", "out_of_sequence", "packet_seq_err", "local_ack_timeout_err",
            "duplicate_request", "rx_write_requests", "rx_read_requests"]


class Link:
    """One JSON message per line over a TCP connection."""

    def __init__(self, sock: socket.socket):
        self.f = sock.makefile("rw")

    def send(self, **kw):
        self.f.write(json.dumps(kw) + "\n")
        self.f.flush()

    def recv(self) -> dict:
        line = self.f.readline()
        if not line:
            raise RuntimeError("peer closed the connection")
        return json.loads(line)


def counters(dev: str) -> dict:
    d = f"/sys/class/infiniband/{dev}/ports/1/hw_counters"
    out = {}
    for c in COUNTERS:
        try:
            with open(os.path.join(d, c)) as f:
                out[c] = int(f.read())
        except OSError:
            out[c] = None
    return out


def delta(before: dict, after: dict) -> dict:
    return {k: (after[k] - before[k]) if None not in (before[k], after[k]) else None
            for k in before}


def poll(cq: CQ, n: int, timeout: float = 20.0) -> list:
    """Up to `n` completions, waiting at most `timeout` seconds for them all."""
    wcs = []
    end = time.time() + timeout
    while len(wcs) < n and time.time() < end:
        got, w = cq.poll(num_entries=n - len(wcs))
        if got:
            wcs += w[:got]
        else:
            time.sleep(0.005)
    return wcs


def wc_list(wcs: list) -> list:
    return [{"status": w.status, "opcode": w.opcode, "byte_len": w.byte_len} for w in wcs]


def qp_state(qp: QP) -> int:
    attr, _ = qp.query(e.IBV_QP_STATE)
    return attr.qp_state


def take_event(ctx: Context, timeout: float) -> list:
    """The next async event of the device, if one comes within `timeout` seconds.

    ibv_get_async_event blocks (and pyverbs holds the interpreter meanwhile), so a timer
    signal interrupts the read if nothing comes."""
    signal.signal(signal.SIGALRM, lambda *_: None)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        ev = ctx.get_async_event()
    except Exception:
        return []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    t = ev.event_type
    ev.ack()
    return [t]


def make_qp(pd: PD, cq: CQ) -> QP:
    cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))


def connect(qp: QP, gid_index: int, peer: dict, my_psn: int, rnr_retry: int, access: int):
    init = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
    init.pkey_index = 0
    init.qp_access_flags = access
    qp.to_init(init)
    rtr = QPAttr(qp_state=e.IBV_QPS_RTR, port_num=1)
    rtr.path_mtu = e.IBV_MTU_1024
    rtr.dest_qp_num = peer["qpn"]
    rtr.rq_psn = peer["psn"]
    rtr.max_dest_rd_atomic = 4
    rtr.min_rnr_timer = 1  # 0.01 ms: RNR retries come fast
    from pyverbs.addr import GID
    gr = GlobalRoute(dgid=GID(peer["gid"]), sgid_index=gid_index, hop_limit=64)
    rtr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    qp.to_rtr(rtr)
    rts = QPAttr(qp_state=e.IBV_QPS_RTS)
    rts.sq_psn = my_psn
    rts.timeout = 14
    rts.retry_cnt = 7
    rts.rnr_retry = rnr_retry
    rts.max_rd_atomic = 4
    qp.to_rts(rts)


def server(dev: str, gid_index: int, port: int) -> int:
    ctx = Context(name=dev)
    gid = str(ctx.query_gid(1, gid_index))
    pd = PD(ctx)
    ls = socket.create_server(("", port))
    print(json.dumps({"listening": port}), flush=True)
    conn, _ = ls.accept()
    link = Link(conn)
    for name in SCENARIOS:
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ
        if name != "remote_access":
            access |= e.IBV_ACCESS_REMOTE_WRITE
        mr = MR(pd, BUF, access)
        cq = CQ(ctx, 32)
        qp = make_qp(pd, cq)
        psn = 0x1000 + SCENARIOS.index(name)
        link.send(qpn=qp.qp_num, psn=psn, gid=gid, rkey=mr.rkey, addr=mr.buf)
        peer = link.recv()
        connect(qp, gid_index, peer, psn, 7, e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ)
        before = counters(dev)
        rec = {"side": "server", "scenario": name}
        recv_len = 64 if name == "too_long" else BUF
        if name in ("remote_access", "too_long"):
            qp.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(mr.buf, recv_len, mr.lkey)]))
        link.send(ready=True)
        if name == "rnr_recovers":
            link.recv()  # the client has posted its SEND
            time.sleep(0.5)
            qp.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(mr.buf, recv_len, mr.lkey)]))
        msg = link.recv()  # the client's outcome is known
        rec["client_done"] = msg
        if name == "rnr_recovers":
            wcs = poll(cq, 1)
            rec["data_ok"] = bytes(mr.read(msg["len"], 0)) == bytes(range(256)) * (msg["len"] // 256)
        elif name in ("remote_access", "too_long"):
            wcs = poll(cq, 1)
        else:
            wcs = poll(cq, 1, timeout=1.0)
        rec["wcs"] = wc_list(wcs)
        # The responder's failures without a receive to report them raise an event.
        rec["events"] = take_event(ctx, 10.0) if name in ("remote_access", "read_out_of_bounds") else []
        rec["qp_state"] = qp_state(qp)
        rec["counters"] = delta(before, counters(dev))
        print(json.dumps(rec), flush=True)
        link.send(done=True)
        qp.close()
        cq.close()
        mr.close()
    return 0


def client(dev: str, gid_index: int, host: str, port: int) -> int:
    ctx = Context(name=dev)
    gid = str(ctx.query_gid(1, gid_index))
    pd = PD(ctx)
    mr = MR(pd, BUF, e.IBV_ACCESS_LOCAL_WRITE)
    mr.write(bytes(range(256)) * (BUF // 256), BUF, 0)
    for _ in range(300):
        try:
            sock = socket.create_connection((host, port))
            break
        except OSError:
            time.sleep(0.2)
    else:
        print(json.dumps({"error": "cannot connect"}), flush=True)
        return 1
    link = Link(sock)
    for name in SCENARIOS:
        cq = CQ(ctx, 32)
        qp = make_qp(pd, cq)
        psn = 0x2000 + SCENARIOS.index(name)
        peer = link.recv()
        link.send(qpn=qp.qp_num, psn=psn, gid=gid)
        rnr_retry = 0 if name == "rnr_exceeded" else 7
        connect(qp, gid_index, peer, psn, rnr_retry, 0)
        link.recv()  # the server is ready
        before = counters(dev)
        rec = {"side": "client", "scenario": name}
        sig = e.IBV_SEND_SIGNALED
        expect = 1
        length = 0
        if name in ("rnr_exceeded", "rnr_recovers", "too_long"):
            length = 1024 if name == "too_long" else 512
            for k in range(2 if name == "rnr_exceeded" else 1):
                qp.post_send(SendWR(wr_id=10 + k, opcode=e.IBV_WR_SEND, num_sge=1,
                                    sg=[SGE(mr.buf, length, mr.lkey)], send_flags=sig))
            expect = 2 if name == "rnr_exceeded" else 1
            if name == "rnr_recovers":
                link.send(posted=True)
        elif name == "remote_access":
            wr = SendWR(wr_id=10, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                        sg=[SGE(mr.buf, 256, mr.lkey)], send_flags=sig)
            wr.set_wr_rdma(peer["rkey"], peer["addr"])
            qp.post_send(wr)
        elif name == "read_out_of_bounds":
            wr = SendWR(wr_id=10, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
                        sg=[SGE(mr.buf, 4096, mr.lkey)], send_flags=sig)
            wr.set_wr_rdma(peer["rkey"], peer["addr"] + BUF - 1024)
            qp.post_send(wr)
        wcs = poll(cq, expect, timeout=30.0)
        rec["wcs"] = wc_list(wcs)
        rec["qp_state"] = qp_state(qp)
        link.send(len=length, statuses=[w.status for w in wcs])
        link.recv()  # the server has looked
        rec["counters"] = delta(before, counters(dev))
        print(json.dumps(rec), flush=True)
        qp.close()
        cq.close()
    return 0


def main() -> int:
    role = sys.argv[1]
    if role == "server":
        return server(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    return client(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))


if __name__ == "__main__":
    sys.exit(main())
