#!/usr/bin/env python3
"""Guest side of tests/ib.py: malformed and hostile CQ, SRQ, QP and MR requests against cx4's ib
device through the uverbs write interface (the core command with libmlx5's driver request
appended, as libibverbs' fallback path sends them): short or dirty driver data, unknown flags,
bad geometry, huge sizes, buffers over unmapped memory; resizes of a CQ likewise (size 0 or
huge, another CQE size, a new ring over unmapped memory), then a good one. Prints one JSON line per case with the
errno (0: accepted); the good objects are destroyed again, so the card's object counts must
return to where they were.

usage: ib_objects_bad.py /dev/infiniband/uverbsN
"""

import ctypes
import errno
import json
import mmap
import os
import struct
import sys

GET_CONTEXT, ALLOC_PD, DEALLOC_PD, REG_MR, DEREG_MR = 0, 3, 4, 9, 13
CREATE_CQ, RESIZE_CQ, DESTROY_CQ, CREATE_QP, DESTROY_QP = 18, 19, 20, 24, 27
CREATE_SRQ, DESTROY_SRQ = 32, 35
OPEN_XRCD, CLOSE_XRCD, CREATE_XSRQ = 37, 38, 39
SRQT_XRC = 1
QPT_RC, QPT_UD, QPT_RAW_PACKET = 2, 4, 8
ACCESS_LOCAL_WRITE = 1
PAGE = mmap.PAGESIZE


def out(**kw):
    print(json.dumps(kw), flush=True)


def cmd(fd, op, body: bytes, resp_len: int):
    """Command `op` with `body` after the response pointer; (errno, response bytes)."""
    resp = ctypes.create_string_buffer(max(resp_len, 4))
    data = struct.pack("<Q", ctypes.addressof(resp)) + body
    hdr = struct.pack("<IHH", op, (8 + len(data)) // 4, resp_len // 4)
    try:
        os.write(fd, hdr + data)
    except OSError as e:
        return e.errno, b""
    return 0, resp.raw


def cmd_bare(fd, op, body: bytes):
    """A command without a response (DEALLOC_PD, DEREG_MR: no response pointer); errno."""
    try:
        os.write(fd, struct.pack("<IHH", op, (8 + len(body)) // 4, 0) + body)
    except OSError as e:
        return e.errno
    return 0


def buffer(size):
    """An anonymous mapping and its address (kept alive by the caller)."""
    m = mmap.mmap(-1, size)
    return m, ctypes.addressof(ctypes.c_char.from_buffer(m))


def unmapped(size):
    """An address range that was mapped and is not any more."""
    m = mmap.mmap(-1, size)
    a = ctypes.addressof(ctypes.c_char.from_buffer(m))
    m.close()
    return a


def cq_req(buf, db, cqe_size=64, comp=0, fmt=0, flags=0, uar=0, r0=0, r1=0):
    """struct mlx5_ib_create_cq (32 bytes)."""
    return struct.pack("<QQIBBHHHI", buf, db, cqe_size, comp, fmt, flags, uar, r0, r1)


def qp_req(buf, db, sq=64, rq=64, shift=6, flags=0, uidx=0xffffff, bfreg=0, sq_buf=0):
    """struct mlx5_ib_create_qp (56 bytes)."""
    return struct.pack("<QQIIIIIIQIHH", buf, db, sq, rq, shift, flags, uidx, bfreg, sq_buf, 0, 0, 0)


def main() -> int:
    fd = os.open(sys.argv[1], os.O_RDWR)
    ctx = struct.pack("<IIIIBBHIQ", 16, 4, 0, 0, 1, 0, 0, 0, 0)
    e, resp = cmd(fd, GET_CONTEXT, ctx, 8 + 72)
    if e:
        out(case="context", errno=e)
        return 1
    async_fd = struct.unpack_from("<I", resp, 0)[0]
    e, resp = cmd(fd, ALLOC_PD, b"", 8)
    pd = struct.unpack_from("<I", resp, 0)[0]
    out(case="pd", errno=e)

    def create_cq(name, drv, cqe=255):
        body = struct.pack("<QIIiI", 0x1234, cqe, 0, -1, 0) + drv
        e, r = cmd(fd, CREATE_CQ, body, 8 + 8)
        h, n = struct.unpack_from("<II", r, 0) if not e else (None, 0)
        cqn = struct.unpack_from("<I", r, 8)[0] if not e else None
        out(case=name, errno=e, name=errno.errorcode.get(e, "OK"), cqe=n, cqn=cqn)
        return h

    def destroy_cq(h):
        return cmd(fd, DESTROY_CQ, struct.pack("<II", h, 0), 8)[0]

    ring, ring_a = buffer(256 * 128)
    dbp, db_a = buffer(PAGE)
    bad = {
        "cq-short": cq_req(ring_a, db_a)[:16],
        "cq-cqe-size": cq_req(ring_a, db_a, cqe_size=32),
        "cq-flags": cq_req(ring_a, db_a, flags=1 << 5),
        "cq-reserved": cq_req(ring_a, db_a, r1=1),
        "cq-compression": cq_req(ring_a, db_a, comp=1),
        "cq-foreign-uar": cq_req(ring_a, db_a, flags=1 << 1, uar=0xfff0),
        "cq-misaligned": cq_req(ring_a + 8, db_a),
        "cq-unmapped-ring": cq_req(unmapped(256 * 64), db_a),
        "cq-unmapped-dbrec": cq_req(ring_a, unmapped(PAGE)),
        "cq-longer-dirty": cq_req(ring_a, db_a) + b"\1" + b"\0" * 7,
    }
    for name, drv in bad.items():
        h = create_cq(name, drv)
        if h is not None:
            destroy_cq(h)
    h = create_cq("cq-huge", cq_req(ring_a, db_a), cqe=1 << 30)
    if h is not None:
        destroy_cq(h)
    cq = create_cq("cq-good", cq_req(ring_a, db_a))

    def resize_req(buf, cqe_size=64, r0=0, r1=0):
        """struct mlx5_ib_resize_cq (16 bytes)."""
        return struct.pack("<QHHI", buf, cqe_size, r0, r1)

    def resize_cq(name, h, cqe, drv):
        e, r = cmd(fd, RESIZE_CQ, struct.pack("<II", h, cqe) + drv, 8)
        n = struct.unpack_from("<I", r, 0)[0] if not e else None
        out(case=name, errno=e, name=errno.errorcode.get(e, "OK"), cqe=n)

    ring2, ring2_a = buffer(512 * 64)
    if cq is not None:
        for name, cqe, drv in (
                ("resize-zero", 0, resize_req(ring2_a)),
                ("resize-huge", 1 << 30, resize_req(ring2_a)),
                ("resize-short", 511, resize_req(ring2_a)[:8]),
                ("resize-cqe-size", 511, resize_req(ring2_a, cqe_size=128)),
                ("resize-reserved", 511, resize_req(ring2_a, r1=1)),
                ("resize-misaligned", 511, resize_req(ring2_a + 8)),
                ("resize-unmapped", 511, resize_req(unmapped(512 * 64))),
                ("resize-same", 255, resize_req(0)),
                ("resize-good", 511, resize_req(ring2_a))):
            resize_cq(name, cq, cqe, drv)

    def srq_req(buf, db, flags=0, r0=0, uidx=0, r1=0):
        """struct mlx5_ib_create_srq (32 bytes)."""
        return struct.pack("<QQIIII", buf, db, flags, r0, uidx, r1)

    def create_srq(name, drv, max_wr=63, max_sge=1):
        body = struct.pack("<QIIII", 0x9abc, pd, max_wr, max_sge, 0) + drv
        e, r = cmd(fd, CREATE_SRQ, body, 16 + 8)
        h = struct.unpack_from("<I", r, 0)[0] if not e else None
        out(case=name, errno=e, name=errno.errorcode.get(e, "OK"))
        return h

    def destroy_srq(h):
        return cmd(fd, DESTROY_SRQ, struct.pack("<II", h, 0), 4)[0]

    sbuf, sbuf_a = buffer(64 * 32)
    bad_srq = {
        "srq-short": (srq_req(sbuf_a, db_a + 192)[:16], 63),
        "srq-flags": (srq_req(sbuf_a, db_a + 192, flags=1), 63),
        "srq-reserved": (srq_req(sbuf_a, db_a + 192, r1=1), 63),
        "srq-misaligned": (srq_req(sbuf_a + 64, db_a + 192), 63),
        "srq-unmapped": (srq_req(unmapped(64 * 32), db_a + 192), 63),
        "srq-huge": (srq_req(sbuf_a, db_a + 192), 1 << 30),
    }
    for name, (drv, n) in bad_srq.items():
        h = create_srq(name, drv, max_wr=n)
        if h is not None:
            destroy_srq(h)
    srq = create_srq("srq-good", srq_req(sbuf_a, db_a + 192))

    # XRC: an anonymous XRC domain (no file); XRC SRQs in it completing to the good CQ. A
    # domain handle that does not exist is refused (by the core), and so is a request
    # without libmlx5's user index (by cx4: CQE version 1 puts it in the SRQ's completions).
    e, r = cmd(fd, OPEN_XRCD, struct.pack("<iI", -1, 0), 4)
    xrcd = struct.unpack_from("<I", r, 0)[0] if not e else None
    out(case="xrcd", errno=e, name=errno.errorcode.get(e, "OK"))

    def create_xsrq(name, drv, xrcd_h):
        body = struct.pack("<QIIIIIIII", 0x9abd, SRQT_XRC, pd, 63, 1, 0, 0, xrcd_h, cq) + drv
        e, r = cmd(fd, CREATE_XSRQ, body, 16 + 8)
        h, srqn = (None, None) if e else (struct.unpack_from("<I", r, 0)[0],
                                          struct.unpack_from("<I", r, 12)[0])
        out(case=name, errno=e, name=errno.errorcode.get(e, "OK"), srqn=srqn)
        return h

    xdb = db_a + 320
    for name, drv, xh in (("xsrq-bad-xrcd", srq_req(sbuf_a, xdb, uidx=7), 0xdead),
                          ("xsrq-no-uidx", srq_req(sbuf_a, xdb, uidx=7)[:20], xrcd or 0)):
        h = create_xsrq(name, drv, xh)
        if h is not None:
            destroy_srq(h)
    h = create_xsrq("xsrq-good", srq_req(sbuf_a, xdb, uidx=7), xrcd or 0)
    if h is not None:
        out(case="xsrq-destroyed", errno=destroy_srq(h))
    if xrcd is not None:
        out(case="xrcd-closed", errno=cmd_bare(fd, CLOSE_XRCD, struct.pack("<I", xrcd)))

    def create_qp(name, drv, qp_type=QPT_RC, send=None, recv=None, srq_h=None):
        s, r = (cq if send is None else send), (cq if recv is None else recv)
        body = struct.pack("<QIIIIIIIIIBBBB", 0x5678, pd, s, r, srq_h or 0, 64, 64, 1, 1, 0, 0,
                           qp_type, 0 if srq_h is None else 1, 0) + drv
        e, rs = cmd(fd, CREATE_QP, body, 32 + 40)
        h = struct.unpack_from("<I", rs, 0)[0] if not e else None
        qpn = struct.unpack_from("<I", rs, 4)[0] if not e else None
        out(case=name, errno=e, name=errno.errorcode.get(e, "OK"), qpn=qpn)
        return h

    def destroy_qp(h):
        return cmd(fd, DESTROY_QP, struct.pack("<II", h, 0), 4)[0]

    qbuf, qbuf_a = buffer(64 * 64 + 64 * 64)
    bad_qp = {
        "qp-short": (qp_req(qbuf_a, db_a)[:40], QPT_RC),
        "qp-flags": (qp_req(qbuf_a, db_a, flags=1 << 7), QPT_RC),
        "qp-sq-not-pow2": (qp_req(qbuf_a, db_a, sq=48), QPT_RC),
        "qp-rq-stride": (qp_req(qbuf_a, db_a, shift=13), QPT_RC),
        "qp-huge": (qp_req(qbuf_a, db_a, sq=1 << 30), QPT_RC),
        "qp-empty": (qp_req(qbuf_a, db_a, sq=0, rq=0), QPT_RC),
        "qp-sq-buf": (qp_req(qbuf_a, db_a, sq_buf=qbuf_a), QPT_RC),
        "qp-unmapped": (qp_req(unmapped(64 * 128), db_a), QPT_RC),
        "qp-misaligned": (qp_req(qbuf_a + 16, db_a), QPT_RC),
        # A raw packet QP whose SQ buffer (sq_buf_addr) is left at 0.
        "qp-raw-packet": (qp_req(qbuf_a, db_a), QPT_RAW_PACKET),
    }
    for name, (drv, t) in bad_qp.items():
        h = create_qp(name, drv, t)
        if h is not None:
            destroy_qp(h)
    qps = [create_qp("qp-good-rc", qp_req(qbuf_a, db_a + 64)),
           create_qp("qp-good-ud", qp_req(qbuf_a, db_a + 128), QPT_UD),
           create_qp("qp-good-srq", qp_req(qbuf_a, db_a + 256, rq=0), srq_h=srq)]

    def reg_mr(name, start, length, va=None, acc=ACCESS_LOCAL_WRITE):
        body = struct.pack("<QQQII", start, length, start if va is None else va, pd, acc)
        e, r = cmd(fd, REG_MR, body, 12)
        out(case=name, errno=e, name=errno.errorcode.get(e, "OK"))
        if not e:
            out(case=name + "-dereg",
                errno=cmd_bare(fd, DEREG_MR, struct.pack("<I", struct.unpack_from("<I", r, 0)[0])))

    mbuf, mbuf_a = buffer(16 * PAGE)
    reg_mr("mr-unmapped", unmapped(4 * PAGE), 4 * PAGE)
    reg_mr("mr-offset-mismatch", mbuf_a, PAGE, va=mbuf_a + 8)
    reg_mr("mr-good", mbuf_a + 100, 8 * PAGE)

    # A CQ still used by QPs cannot go; the QPs first, then it, then the PD.
    out(case="cq-busy", errno=destroy_cq(cq))
    out(case="qp-destroyed", errno=max(destroy_qp(h) for h in qps if h is not None))
    out(case="srq-destroyed", errno=destroy_srq(srq))
    out(case="cq-destroyed", errno=destroy_cq(cq))
    out(case="pd-freed", errno=cmd_bare(fd, DEALLOC_PD, struct.pack("<I", pd)))
    os.close(async_fd)
    os.close(fd)
    for m in (ring, dbp, qbuf, mbuf, sbuf):
        m.close()
    out(case="closed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
