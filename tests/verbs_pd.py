#!/usr/bin/env python3
"""Guest side of tests/ib.py: with the guest's unmodified rdma-core (pyverbs over libibverbs
and libmlx5), opens DEVICE (libmlx5's user context: its mlx5 ABI request and response, the
static UAR pages mapped), queries the device and port, allocates PDs and frees them, and
prints one JSON line per step.

With --hold READY GO it keeps the context and its PDs open instead: it writes READY, waits for
GO (the driver may be removed meanwhile), then tries to allocate one more PD and prints
whether the device refused it (after a disassociation every call fails).

usage: verbs_pd.py DEVICE [--pds N] [--hold READY GO]
"""

import argparse
import json
import os
import time

from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError


def out(**kw):
    print(json.dumps(kw), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("device")
    ap.add_argument("--pds", type=int, default=4)
    ap.add_argument("--hold", nargs=2, metavar=("READY", "GO"))
    a = ap.parse_args()

    ctx = Context(name=a.device)
    d = ctx.query_device()
    p = ctx.query_port(1)
    out(step="device", vendor_id=d.vendor_id, vendor_part_id=d.vendor_part_id, max_qp=d.max_qp,
        max_qp_wr=d.max_qp_wr, max_cq=d.max_cq, max_cqe=d.max_cqe, max_mr=d.max_mr,
        max_pd=d.max_pd, max_sge=d.max_sge, port_state=p.state, active_mtu=p.active_mtu,
        gid_tbl_len=p.gid_tbl_len, link_layer=p.link_layer)
    pds = [PD(ctx) for _ in range(a.pds)]
    out(step="pds", handles=[pd.handle for pd in pds])
    if a.hold:
        open(a.hold[0], "w").close()
        while not os.path.exists(a.hold[1]):
            time.sleep(0.1)
        try:
            PD(ctx)
            out(step="after-removal", refused=False)
        except PyverbsError as e:
            out(step="after-removal", refused=True, error=str(e)[:200])
        return 0
    for pd in pds:
        pd.close()
    out(step="freed", count=len(pds))
    ctx.close()
    out(step="closed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
