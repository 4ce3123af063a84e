#!/usr/bin/env python3
"""Guest side of the verbs-object test (tests/model_roce.py): with the guest's unmodified
rdma-core (pyverbs over libibverbs and libmlx5), creates a PD, an MR, CQs and RC, UC and UD
QPs, walks each QP through RESET → INIT → RTR → RTS (the connected ones looped back to
themselves through GID `--gid-index`), queries every attribute back, then walks to ERR and
RESET, and prints one JSON line per step. Between the set-up and the tear-down it writes
`--ready` and waits for `--go`, so that the host can look at the card meanwhile.

usage: verbs_objects.py DEVICE --gid-index N --ready FILE --go FILE
"""

import argparse
import json
import os
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr


def out(**kw):
    print(json.dumps(kw), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("device")
    ap.add_argument("--gid-index", type=int, required=True)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--go", required=True)
    ap.add_argument("--wait", type=float, default=300)
    a = ap.parse_args()

    ctx = Context(name=a.device)
    dattr = ctx.query_device()
    port = ctx.query_port(1)
    out(step="device", max_qp=dattr.max_qp, max_qp_wr=dattr.max_qp_wr, max_cq=dattr.max_cq,
        max_cqe=dattr.max_cqe, max_mr=dattr.max_mr, max_pd=dattr.max_pd,
        max_sge=dattr.max_sge, port_state=port.state, active_mtu=port.active_mtu,
        gid_tbl_len=port.gid_tbl_len, link_layer=port.link_layer)
    gid = ctx.query_gid(1, a.gid_index)
    pd = PD(ctx)
    mr = MR(pd, 65536, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
            | e.IBV_ACCESS_REMOTE_READ)
    out(step="mr", lkey=mr.lkey, rkey=mr.rkey, length=mr.length)
    cq = CQ(ctx, 64)
    qps = {}
    access = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC
    for name, qpt in (("rc", e.IBV_QPT_RC), ("uc", e.IBV_QPT_UC), ("ud", e.IBV_QPT_UD)):
        cap = QPCap(max_send_wr=32, max_recv_wr=32, max_send_sge=2, max_recv_sge=2)
        qp = QP(pd, QPInitAttr(qp_type=qpt, scq=cq, rcq=cq, cap=cap))
        qps[name] = qp
        init = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
        init.pkey_index = 0
        if qpt == e.IBV_QPT_UD:
            init.qkey = 0x11111111
            qp.to_init(init)
            rtr = QPAttr(qp_state=e.IBV_QPS_RTR)
            qp.to_rtr(rtr)
            rts = QPAttr(qp_state=e.IBV_QPS_RTS)
            rts.sq_psn = 0x123
            qp.to_rts(rts)
        else:
            init.qp_access_flags = access if qpt == e.IBV_QPT_RC else e.IBV_ACCESS_REMOTE_WRITE
            qp.to_init(init)
            rtr = QPAttr(qp_state=e.IBV_QPS_RTR, port_num=1)
            rtr.path_mtu = e.IBV_MTU_1024
            rtr.dest_qp_num = qp.qp_num
            rtr.rq_psn = 0x4242
            rtr.max_dest_rd_atomic = 4
            rtr.min_rnr_timer = 12
            gr = GlobalRoute(dgid=gid, sgid_index=a.gid_index, hop_limit=64)
            rtr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
            qp.to_rtr(rtr)
            rts = QPAttr(qp_state=e.IBV_QPS_RTS)
            rts.sq_psn = 0x5151
            rts.timeout = 14
            rts.retry_cnt = 7
            rts.rnr_retry = 6
            rts.max_rd_atomic = 2
            qp.to_rts(rts)
        attr, _ = qp.query(e.IBV_QP_STATE | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
                           | e.IBV_QP_RQ_PSN | e.IBV_QP_SQ_PSN | e.IBV_QP_TIMEOUT
                           | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY | e.IBV_QP_QKEY
                           | e.IBV_QP_MIN_RNR_TIMER | e.IBV_QP_MAX_QP_RD_ATOMIC
                           | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_ACCESS_FLAGS
                           | e.IBV_QP_AV)
        out(step="qp", type=name, qpn=qp.qp_num, state=attr.qp_state, path_mtu=attr.path_mtu,
            dest_qp_num=attr.dest_qp_num, rq_psn=attr.rq_psn, sq_psn=attr.sq_psn,
            timeout=attr.timeout, retry_cnt=attr.retry_cnt, rnr_retry=attr.rnr_retry,
            qkey=attr.qkey, min_rnr_timer=attr.min_rnr_timer,
            max_rd_atomic=attr.max_rd_atomic, max_dest_rd_atomic=attr.max_dest_rd_atomic,
            access=attr.qp_access_flags, sgid_index=attr.ah_attr.sgid_index,
            hop_limit=attr.ah_attr.hop_limit)

    # A transition from the wrong state is refused (RTS → RTR is not a transition).
    try:
        qps["rc"].modify(QPAttr(qp_state=e.IBV_QPS_RTR), e.IBV_QP_STATE)
        out(step="bad-transition", refused=False)
    except PyverbsRDMAError as ex:
        out(step="bad-transition", refused=True, error=str(ex)[:120])

    with open(a.ready, "w") as f:
        f.write("ready\n")
    deadline = time.time() + a.wait
    while not os.path.exists(a.go) and time.time() < deadline:
        time.sleep(0.1)

    for name, qp in qps.items():
        qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
        s_err = qp.query(e.IBV_QP_STATE)[0].qp_state
        qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
        s_rst = qp.query(e.IBV_QP_STATE)[0].qp_state
        out(step="teardown", type=name, err=s_err, reset=s_rst)
        qp.close()
    cq.close()
    mr.close()
    pd.close()
    ctx.close()
    out(step="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
