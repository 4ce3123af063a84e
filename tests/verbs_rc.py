"""Guest-side fixture of the pyverbs tools that loop RC traffic back through one card
(verbs_mr.py, verbs_resize_cq.py, verbs_small.py): RC QPs created and connected through INIT, RTR and RTS to a
QP of the same device over a RoCE GID of port 1 (the destination GID the source GID, so the
card loops the packets back). The tests put it in the VM's share with the tool
(`files=[..., RC_FIXTURE]`); Python finds it next to the script in /cx4.
"""

import argparse

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr


def rc_qp(pd, scq, rcq, max_send_wr, max_recv_wr, srq=None):
    """An RC QP in `pd` (one SGE each way) completing to `scq` and `rcq` (receiving from
    `srq` if given), in RESET."""
    cap = QPCap(max_send_wr=max_send_wr, max_recv_wr=0 if srq else max_recv_wr,
                max_send_sge=1, max_recv_sge=1)
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=scq, rcq=rcq, cap=cap, srq=srq))


def connect_rc(qp, dest_qpn, gid, gid_index, access, timeout, retry_cnt, rnr_retry,
               dest_rd_atomic=4):
    """Moves `qp` to RTS connected to QP `dest_qpn` at `gid` (ours: GID `gid_index` of port 1),
    MTU 1024, both PSNs 0, with remote `access` rights, the ACK `timeout` exponent and the
    retry and RNR retry counts given, `dest_rd_atomic` responder resources (without any the
    responder serves no READ or atomic, whatever `access` says) and 4 outstanding READs and
    atomics as the requester."""
    init = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
    init.pkey_index = 0
    init.qp_access_flags = access
    qp.to_init(init)
    rtr = QPAttr(qp_state=e.IBV_QPS_RTR, port_num=1)
    rtr.path_mtu = e.IBV_MTU_1024
    rtr.dest_qp_num = dest_qpn
    rtr.rq_psn = 0
    rtr.min_rnr_timer = 12
    rtr.max_dest_rd_atomic = dest_rd_atomic
    gr = GlobalRoute(dgid=gid, sgid_index=gid_index, hop_limit=64)
    rtr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    qp.to_rtr(rtr)
    rts = QPAttr(qp_state=e.IBV_QPS_RTS)
    rts.sq_psn = 0
    rts.timeout = timeout
    rts.retry_cnt = retry_cnt
    rts.rnr_retry = rnr_retry
    rts.max_rd_atomic = 4
    qp.to_rts(rts)


def tool_args():
    """The command line of the tools: DEVICE --gid-index N [--settle SECONDS] (how long a
    test waits for what must not happen)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("device")
    ap.add_argument("--gid-index", type=int, required=True)
    ap.add_argument("--settle", type=float, default=1.0,
                    help="seconds a test waits for what must not happen")
    return ap.parse_args()


def errno_of(f):
    """Runs `f`; its errno (0 when it succeeded)."""
    try:
        f()
        return 0
    except (PyverbsRDMAError, PyverbsError) as ex:
        return getattr(ex, "error_code", None) or -1
