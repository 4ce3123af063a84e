#!/usr/bin/env python3
"""Guest side of tests/ib.py: malformed mlx5 user-ABI requests against cx4's ib device, sent
through the uverbs write interface (GET_CONTEXT with the driver's request appended, as
libibverbs' fallback path sends it), and bad mmaps of a context's UAR pages. Prints one JSON
line per case with the errno the kernel gave (0: accepted).

usage: ib_udata.py /dev/infiniband/uverbsN
"""

import ctypes
import errno
import json
import mmap
import os
import struct
import sys

GET_CONTEXT = 0      # IB_USER_VERBS_CMD_GET_CONTEXT
RESP_LEN = 8 + 72    # ib_uverbs_get_context_resp + mlx5_ib_alloc_ucontext_resp
PAGE = mmap.PAGESIZE


def req_v2(bfregs=16, low_lat=4, flags=0, comp_mask=0, cqe=1, r0=0, r1=0, r2=0, caps=0):
    """struct mlx5_ib_alloc_ucontext_req_v2 (32 bytes)."""
    return struct.pack("<IIIIBBHIQ", bfregs, low_lat, flags, comp_mask, cqe, r0, r1, r2, caps)


def get_context(fd, drv: bytes, out_len=RESP_LEN):
    """GET_CONTEXT with `drv` as the driver request; (errno, response bytes)."""
    resp = ctypes.create_string_buffer(out_len)
    body = struct.pack("<Q", ctypes.addressof(resp)) + drv
    hdr = struct.pack("<IHH", GET_CONTEXT, (8 + len(body)) // 4, out_len // 4)
    try:
        os.write(fd, hdr + body)
    except OSError as e:
        return e.errno, b""
    return 0, resp.raw


def out(**kw):
    print(json.dumps(kw), flush=True)


def main() -> int:
    path = sys.argv[1]
    # Each refused request leaves the file without a context, so one fd serves them all.
    fd = os.open(path, os.O_RDWR)
    cases = {
        "short": b"\0\0\0\0",                                  # < 8 bytes (v0 minimum)
        "devx": req_v2(flags=1),                               # MLX5_IB_ALLOC_UCTX_DEVX
        "unknown-flag": req_v2(flags=1 << 7),
        "comp-mask": req_v2(comp_mask=1),
        "reserved": req_v2(r2=0xdead),
        "longer-dirty": req_v2() + b"\0\0\0\1",                # a newer library's non-zero field
    }
    for name, drv in cases.items():
        e, _ = get_context(fd, drv)
        out(case=name, errno=e, name=errno.errorcode.get(e, "OK"))
    # A good request (with a zero tail: a newer library asking nothing new).
    e, resp = get_context(fd, req_v2() + b"\0" * 8)
    if e:
        out(case="good", errno=e, name=errno.errorcode.get(e, "?"))
        return 1
    async_fd, vectors = struct.unpack_from("<II", resp, 0)
    f = struct.unpack_from("<IIIIHHIIIHHIIBBBBQIIII", resp, 8)
    keys = ("qp_tab_size bf_reg_size tot_bfregs cache_line_size max_sq_desc_sz max_rq_desc_sz "
            "max_send_wqebb max_recv_wr max_srq_recv_wr num_ports flow_action_flags comp_mask "
            "response_length cqe_version cmds_supp_uhw eth_min_inline clock_info_versions "
            "hca_core_clock_offset log_uar_size num_uars_per_page num_dyn_bfregs "
            "dump_fill_mkey").split()
    out(case="good", errno=0, vectors=vectors, **dict(zip(keys, f)))
    # A second context on the same file is refused by the core.
    e, _ = get_context(fd, req_v2())
    out(case="second-context", errno=e, name=errno.errorcode.get(e, "OK"))
    # mmaps: page i of the 8 static UAR pages (offset = (cmd << 8 | i) pages).
    def try_map(name, length, offset, flags=mmap.MAP_SHARED):
        try:
            m = mmap.mmap(fd, length, flags, mmap.PROT_READ | mmap.PROT_WRITE, offset=offset)
            m.close()
            out(case=name, errno=0, name="OK")
        except OSError as ex:
            out(case=name, errno=ex.errno, name=errno.errorcode.get(ex.errno, "?"))
    for i in (0, 7):
        try_map(f"uar-{i}", PAGE, i * PAGE)
    try_map("uar-8", PAGE, 8 * PAGE)
    try_map("two-pages", 2 * PAGE, 0)
    try_map("private", PAGE, 0, mmap.MAP_PRIVATE)
    try_map("unknown-cmd", PAGE, (9 << 8) * PAGE)
    os.close(async_fd)
    os.close(fd)
    out(case="closed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
