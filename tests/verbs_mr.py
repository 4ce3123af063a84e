#!/usr/bin/env python3
"""Guest side of the MR re-registration and dma-buf MR tests (tests/ib.py with cx4): with the
guest's unmodified rdma-core (pyverbs over libmlx5), a self-connected RC QP writes and reads
through MRs that are re-registered (ibv_rereg_mr) to another range (new keys), other rights
or another PD (in place: the same keys, as mlx5_ib changes them by UMR),
and through a dma-buf MR over a DRM dumb buffer of the VM's virtio-gpu (--dmabuf), checking
the bytes where they must land and the remote access errors where the keys or rights no
longer allow it. Bad requests get their errno and leave the MR working. One JSON line per
step; the last is {"step": "closed"}.

usage: verbs_mr.py DEVICE --gid-index N [--dmabuf /dev/dri/card0]
(verbs_rc.py, the shared RC QP set-up, beside it)
"""

import argparse
import ctypes
import fcntl
import json
import mmap
import os
import struct
import sys
import time

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR, DmaBufMR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError
from pyverbs.wr import SGE, SendWR
from verbs_rc import connect_rc, rc_qp

LW, RW, RR = e.IBV_ACCESS_LOCAL_WRITE, e.IBV_ACCESS_REMOTE_WRITE, e.IBV_ACCESS_REMOTE_READ
TRANS, CH_PD, CH_ACCESS = (e.IBV_REREG_MR_CHANGE_TRANSLATION, e.IBV_REREG_MR_CHANGE_PD,
                           e.IBV_REREG_MR_CHANGE_ACCESS)
SZ = 65536
EACCES = 13
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def out(**kw):
    print(json.dumps(kw), flush=True)


def errno_of(ex):
    return getattr(ex, "error_code", None) or -1


class Buf:
    """An anonymous mapping and its address."""

    def __init__(self, size=SZ):
        self.m = mmap.mmap(-1, size)
        self.addr = ctypes.addressof(ctypes.c_char.from_buffer(self.m))

    def read(self, off, n):
        return bytes(self.m[off:off + n])

    def write(self, off, data):
        self.m[off:off + len(data)] = data


class Run:
    def __init__(self, a):
        self.ctx = Context(name=a.device)
        self.gid_index = a.gid_index
        self.gid = self.ctx.query_gid(1, a.gid_index)
        self.pd = PD(self.ctx)
        self.pd2 = PD(self.ctx)
        self.cq = CQ(self.ctx, 16)
        self.src = MR(self.pd, SZ, LW | RW | RR)
        self.qp = self.peer = None
        self.new_qp()

    def new_qp(self):
        """A fresh pair of RC QPs in `pd` connected to each other through the card, `qp`
        requesting and `peer` responding (the last pair may be in error)."""
        for q in (self.qp, getattr(self, "peer", None)):
            if q is not None:
                q.close()
        qps = [rc_qp(self.pd, self.cq, self.cq, max_send_wr=16, max_recv_wr=4)
               for _ in range(2)]
        for qp, other in ((qps[0], qps[1]), (qps[1], qps[0])):
            connect_rc(qp, other.qp_num, self.gid, self.gid_index, RW | RR,
                       timeout=10, retry_cnt=1, rnr_retry=1)
        self.qp, self.peer = qps

    def op(self, opcode, data, rkey, raddr, timeout=30.0):
        """One signaled RDMA WRITE of `data` (from src at 0) or READ of len(data) bytes (into
        src at 0) against rkey/raddr; returns the completion status. A QP left in error is
        replaced."""
        n = len(data)
        if opcode == e.IBV_WR_RDMA_WRITE:
            self.src.write(data, n, 0)
        else:
            self.src.write(b"\0" * n, n, 0)
        sge = SGE(self.src.buf, n, self.src.lkey)
        wr = SendWR(wr_id=1, opcode=opcode, num_sge=1, sg=[sge], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(rkey, raddr)
        self.qp.post_send(wr)
        deadline = time.time() + timeout
        status = None
        while time.time() < deadline:
            k, wcs = self.cq.poll(1)
            if k:
                status = wcs[0].status
                break
        if status is None:
            status = -1
        if status != e.IBV_WC_SUCCESS:
            self.new_qp()
        return status

    def write(self, data, rkey, raddr):
        return self.op(e.IBV_WR_RDMA_WRITE, data, rkey, raddr)

    def read(self, n, rkey, raddr):
        st = self.op(e.IBV_WR_RDMA_READ, b"\0" * n, rkey, raddr)
        return st, self.src.read(n, 0)


def pattern(tag, n=256):
    return bytes((tag * 31 + i) & 0xff for i in range(n))


def rereg(mr, step, flags, pd, addr=0, length=0, access=0):
    """ibv_rereg_mr; reports and returns (errno or 0, old keys, new keys)."""
    old = (mr.lkey, mr.rkey)
    try:
        mr.rereg(flags, pd, addr, length, access)
        err = 0
    except (PyverbsRDMAError, PyverbsError) as ex:
        err = errno_of(ex)
    new = (mr.lkey, mr.rkey)
    out(step=step, errno=err, old_keys=list(old), new_keys=list(new))
    return err, old, new


def check(step, ok, **kw):
    out(step=step, ok=bool(ok), **kw)


def rereg_tests(r):
    WC_OK, REM_ACC = e.IBV_WC_SUCCESS, e.IBV_WC_REM_ACCESS_ERR
    a, b = Buf(), Buf()
    mr = MR(r.pd, SZ, LW | RW, address=a.addr)
    p = pattern(1)
    st = r.write(p, mr.rkey, a.addr + 100)
    check("reg-write", st == WC_OK and a.read(100, 256) == p, status=st)

    # TRANS: the MR moves to b + 4 KiB (32 KiB of it); the data follows, the old key is gone.
    err, old, new = rereg(mr, "rereg-trans", TRANS, r.pd, b.addr + 4096, 32768)
    p = pattern(2)
    st = r.write(p, mr.rkey, b.addr + 4096 + 200)
    check("trans-write", err == 0 and new[1] != old[1] and st == WC_OK
          and b.read(4096 + 200, 256) == p and a.read(4096 + 200, 256) == b"\0" * 256,
          status=st)
    st = r.write(pattern(3), old[1], a.addr + 100)
    check("trans-old-rkey", st == REM_ACC and a.read(100, 256) == pattern(1), status=st)
    st = r.write(pattern(3), mr.rkey, b.addr)   # below the new range
    check("trans-outside", st == REM_ACC and b.read(0, 256) == b"\0" * 256, status=st)

    # ACCESS (mlx5_ib's rules): an MR whose pages are pinned read-only (remote read only)
    # cannot gain write rights without a new range (EACCES, the MR as it was); an MR pinned
    # writable (local write) gains and loses remote write in place, keeping its keys.
    c = Buf()
    ro = MR(r.pd, SZ, RR, address=c.addr)
    c.write(0, pattern(4))
    st, got = r.read(256, ro.rkey, c.addr)
    check("ro-read", st == WC_OK and got == pattern(4), status=st)
    st = r.write(pattern(5), ro.rkey, c.addr + 512)
    check("ro-write-refused", st == REM_ACC and c.read(512, 256) == b"\0" * 256, status=st)
    err, old, new = rereg(ro, "rereg-access-ro", CH_ACCESS, r.pd, access=LW | RW | RR)
    st = r.write(pattern(5), ro.rkey, c.addr + 512)
    check("access-needs-writable", err == EACCES and new == old and st == REM_ACC
          and c.read(512, 256) == b"\0" * 256, status=st, errno=err)
    d = Buf()
    lw = MR(r.pd, SZ, LW | RR, address=d.addr)
    d.write(0, pattern(4))
    err, old, new = rereg(lw, "rereg-access", CH_ACCESS, r.pd, access=LW | RW | RR)
    st = r.write(pattern(5), old[1], d.addr + 512)
    check("access-write", err == 0 and new == old and st == WC_OK
          and d.read(512, 256) == pattern(5), status=st)
    st, got = r.read(256, old[1], d.addr)
    check("access-read", st == WC_OK and got == pattern(4), status=st)
    # Rights taken away again (the same keys): writes refused, reads still work.
    err, old, new = rereg(lw, "rereg-access-less", CH_ACCESS, r.pd, access=LW | RR)
    st = r.write(pattern(6), lw.rkey, d.addr + 1024)
    st2, got = r.read(256, lw.rkey, d.addr + 512)
    check("access-less", err == 0 and new == old and st == REM_ACC and st2 == WC_OK
          and got == pattern(5) and d.read(1024, 256) == b"\0" * 256, status=[st, st2])

    # PD: in another PD the QP (in pd) may not use the MR; back in pd it may, same range
    # and, the change being made in place, the same keys.
    err, old, new = rereg(mr, "rereg-pd", CH_PD, r.pd2)
    st = r.write(pattern(7), mr.rkey, b.addr + 4096 + 1000)
    check("pd-other-refused", err == 0 and new == old and st == REM_ACC
          and b.read(4096 + 1000, 256) == b"\0" * 256, status=st)
    err, old, new = rereg(mr, "rereg-pd-back", CH_PD, r.pd)
    st = r.write(pattern(7), mr.rkey, b.addr + 4096 + 1000)
    check("pd-back-write", err == 0 and st == WC_OK and b.read(4096 + 1000, 256) == pattern(7),
          status=st)
    # All three at once: back to a, read-only... then with writes, in pd.
    err, old, new = rereg(mr, "rereg-all", TRANS | CH_PD | CH_ACCESS, r.pd, a.addr, SZ,
                          LW | RW | RR)
    st = r.write(pattern(8), mr.rkey, a.addr + 4000)
    check("all-write", err == 0 and st == WC_OK and a.read(4000, 256) == pattern(8), status=st)

    # Bad requests: each refused, the MR keeps its keys and its translation.
    keys = (mr.lkey, mr.rkey)
    hole = libc.mmap(None, SZ, 3, 0x22, -1, 0)  # PROT_READ|WRITE, MAP_PRIVATE|ANONYMOUS
    libc.munmap(hole, SZ)
    bad = {}
    bad["unmapped"] = rereg(mr, "rereg-unmapped", TRANS, r.pd, hole, SZ)[0]
    bad["len0"] = rereg(mr, "rereg-len0", TRANS, r.pd, b.addr, 0)[0]
    bad["flags0"] = rereg(mr, "rereg-flags0", 0, r.pd)[0]
    bad["odp"] = rereg(mr, "rereg-odp", CH_ACCESS, r.pd, access=LW | e.IBV_ACCESS_ON_DEMAND)[0]
    bad["remote-write-no-local"] = rereg(mr, "rereg-rw-no-lw", CH_ACCESS, r.pd, access=RW)[0]
    st = r.write(pattern(9), mr.rkey, a.addr + 8000)
    check("bad-kept", (mr.lkey, mr.rkey) == keys and st == WC_OK
          and a.read(8000, 256) == pattern(9), status=st, errnos=bad)
    mr.close()
    ro.close()
    lw.close()


# <drm/drm.h>, <drm/drm_mode.h>
DRM_IOCTL_MODE_CREATE_DUMB = 0xC02064B2
DRM_IOCTL_MODE_MAP_DUMB = 0xC01064B3
DRM_IOCTL_PRIME_HANDLE_TO_FD = 0xC00C642D
DRM_IOCTL_MODE_DESTROY_DUMB = 0xC00464B4


def dumb_buffer(card, size):
    """A DRM dumb buffer of `size` bytes on `card`: (drm fd, handle, dma-buf fd, mmap)."""
    fd = os.open(card, os.O_RDWR | os.O_CLOEXEC)
    req = bytearray(struct.pack("<IIIIIIQ", size // 4096, 1024, 32, 0, 0, 0, 0))
    fcntl.ioctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, req)
    _, _, _, _, handle, pitch, got = struct.unpack("<IIIIIIQ", req)
    assert got >= size, (got, size)
    req = bytearray(struct.pack("<IIi", handle, os.O_RDWR | os.O_CLOEXEC, -1))
    fcntl.ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, req)
    dfd = struct.unpack("<IIi", req)[2]
    req = bytearray(struct.pack("<IIQ", handle, 0, 0))
    fcntl.ioctl(fd, DRM_IOCTL_MODE_MAP_DUMB, req)
    off = struct.unpack("<IIQ", req)[2]
    m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=off)
    return fd, handle, dfd, m


def dmabuf_errors(r):
    """dma-buf MR requests that need no exporter, or name a bad range of one."""
    errs = {}
    for name, fd in (("bad-fd", 999), ("not-dmabuf", os.open("/dev/null", os.O_RDONLY))):
        try:
            DmaBufMR(r.pd, 4096, LW | RW, dmabuf=fd, offset=0).close()
            errs[name] = 0
        except (PyverbsRDMAError, PyverbsError) as ex:
            errs[name] = errno_of(ex)
    return errs


def dmabuf_tests(r, card):
    WC_OK, REM_ACC = e.IBV_WC_SUCCESS, e.IBV_WC_REM_ACCESS_ERR
    size = SZ
    fd, handle, dfd, m = dumb_buffer(card, size)
    out(step="dumb", handle=handle, dmabuf_fd=dfd)
    errs = {}
    try:
        DmaBufMR(r.pd, size, LW | RW, dmabuf=dfd, offset=4096).close()  # past the end
        errs["past-end"] = 0
    except (PyverbsRDMAError, PyverbsError) as ex:
        errs["past-end"] = errno_of(ex)
    out(step="dmabuf-range-errors", errnos=errs)
    # 48 KiB at offset 8 KiB of the buffer; its I/O virtual address is the offset.
    mr = DmaBufMR(r.pd, 49152, LW | RW | RR, dmabuf=dfd, offset=8192)
    out(step="dmabuf-reg", lkey=mr.lkey, rkey=mr.rkey)
    p = pattern(10, 4096)
    st = r.write(p, mr.rkey, 8192 + 5000)
    check("dmabuf-write", st == WC_OK and m[8192 + 5000:8192 + 5000 + 4096] == p,
          status=st, first=m[8192 + 5000:8192 + 5016].hex())
    m[8192 + 40000:8192 + 40000 + 1024] = pattern(11, 1024)
    st, got = r.read(1024, mr.rkey, 8192 + 40000)
    check("dmabuf-read", st == WC_OK and got == pattern(11, 1024), status=st)
    st = r.write(pattern(12), mr.rkey, 4096)    # below the MR
    check("dmabuf-outside", st == REM_ACC and m[4096:4096 + 256] == b"\0" * 256, status=st)
    # libibverbs re-registers only plain MRs (ibv_rereg_mr: EINVAL for a dma-buf MR before
    # any command); the MR stays as it was.
    err, old, new = rereg(mr, "dmabuf-rereg", CH_ACCESS, r.pd, access=RR)
    st2, got = r.read(4096, mr.rkey, 8192 + 5000)
    check("dmabuf-rereg-refused", err != 0 and new == old and st2 == WC_OK and got == p,
          status=st2, errno=err)
    mr.close()
    m.close()
    os.close(dfd)
    os.close(fd)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("device")
    ap.add_argument("--gid-index", type=int, required=True)
    ap.add_argument("--dmabuf", help="DRM card whose dumb buffers to export (/dev/dri/card0)")
    a = ap.parse_args()
    r = Run(a)
    out(step="created")
    rereg_tests(r)
    out(step="dmabuf-errors", errnos=dmabuf_errors(r))
    if a.dmabuf:
        dmabuf_tests(r, a.dmabuf)
    r.qp.close()
    r.peer.close()
    r.src.close()
    r.cq.close()
    r.pd2.close()
    r.pd.close()
    r.ctx.close()
    out(step="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
