#!/usr/bin/env python3
"""Guest side of the completion-timestamp and clock tests (tests/model_roce.py with mlx5_ib,
tests/ib.py with cx4; the same checks, `check_clock` in model_roce.py), with the guest's
unmodified rdma-core (pyverbs over libmlx5, and libmlx5's mlx5dv_get_clock_info through
ctypes):

- caps: ibv_query_device_ex reports completion_timestamp_mask 2^63-1 and hca_core_clock the
  card's frequency (kHz), as mlx5_ib does.
- rt-clock: ibv_query_rt_values_ex(RAW_CLOCK), which libmlx5 reads from the internal timer
  through the read-only CORE_CLOCK mapping, increases from read to read.
- clock-info: mlx5dv_get_clock_info (the CLOCK_INFO page the kernel keeps): the 41-bit mask,
  the shift and multiplier of the card's frequency; the raw clock converted with it is the
  PHC's time (the port's /dev/ptpN) within CLOSE_NS.
- cq-timestamps: a CQ from ibv_create_cq_ex with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP; the
  completions of RC WRITEs (one QP of the card to another) carry timestamps that increase and
  lie between raw clock reads taken before the first post and after the last completion.
- wallclock: IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK on this free-running card: libmlx5
  converts with the clock-info page; the wall-clock times lie between the PHC's before and
  after.
- adjfine, adjtime: after `phc_ctl freq` the page's multiplier is the nominal one scaled by
  the adjustment, and after `phc_ctl adj` the converted raw clock still agrees with the PHC
  (the kernel updated the page); the frequency is set back to 0.

One JSON line per step ({"step": name, "ok": bool, ...}); the last is {"step": "closed"}.

usage: verbs_clock.py DEVICE --gid-index N
(verbs_rc.py, the shared RC QP set-up, beside it)
"""

import ctypes
import glob
import json
import os
import subprocess
import sys
import time

import pyverbs.enums as e
from pyverbs.cq import CQEX, CqInitAttrEx, PollCqAttr
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.providers.mlx5.mlx5dv import Mlx5Context
from pyverbs.wr import SGE, SendWR
from verbs_rc import connect_rc, errno_of, rc_qp, tool_args

LW, RW = e.IBV_ACCESS_LOCAL_WRITE, e.IBV_ACCESS_REMOTE_WRITE
# The converted raw clock and the PHC read next to each other agree within this (ns): two
# reads in a TCG guest, a few ms apart at worst.
CLOSE_NS = 50_000_000
# The frequency adjustment the test makes (ppb) and the time step (s).
PPB = 10_000_000
STEP_S = 5


def out(**kw):
    print(json.dumps(kw), flush=True)


def check(step, ok, **kw):
    out(step=step, ok=bool(ok), **kw)


class ClockInfo(ctypes.Structure):
    """`struct mlx5dv_clock_info` (mlx5dv.h)."""
    _fields_ = [("nsec", ctypes.c_uint64), ("last_cycles", ctypes.c_uint64),
                ("frac", ctypes.c_uint64), ("mult", ctypes.c_uint32),
                ("shift", ctypes.c_uint32), ("mask", ctypes.c_uint64)]

    def to_ns(self, ts):
        """mlx5dv_ts_to_ns (mlx5dv.h, inline)."""
        delta = (ts - self.last_cycles) & self.mask
        if delta > self.mask // 2:
            delta = (self.last_cycles - ts) & self.mask
            return self.nsec - (((delta * self.mult) - self.frac) >> self.shift)
        return self.nsec + (((delta * self.mult) + self.frac) >> self.shift)


class RawContext:
    """A second context of the device opened through libibverbs itself, for libmlx5's
    mlx5dv_get_clock_info (pyverbs converts timestamps with it but does not show it)."""

    def __init__(self, name):
        self.ibv = ctypes.CDLL("libibverbs.so.1")
        self.mlx5 = ctypes.CDLL("libmlx5.so.1")
        self.ibv.ibv_get_device_list.restype = ctypes.POINTER(ctypes.c_void_p)
        self.ibv.ibv_get_device_name.restype = ctypes.c_char_p
        self.ibv.ibv_get_device_name.argtypes = [ctypes.c_void_p]
        self.ibv.ibv_open_device.restype = ctypes.c_void_p
        self.ibv.ibv_open_device.argtypes = [ctypes.c_void_p]
        self.ibv.ibv_close_device.argtypes = [ctypes.c_void_p]
        self.ibv.ibv_free_device_list.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self.mlx5.mlx5dv_get_clock_info.argtypes = [ctypes.c_void_p, ctypes.POINTER(ClockInfo)]
        n = ctypes.c_int()
        devs = self.ibv.ibv_get_device_list(ctypes.byref(n))
        self.ctx = None
        for i in range(n.value):
            if self.ibv.ibv_get_device_name(devs[i]).decode() == name:
                self.ctx = self.ibv.ibv_open_device(devs[i])
        self.ibv.ibv_free_device_list(devs)
        if not self.ctx:
            raise RuntimeError(f"cannot open {name}")

    def clock_info(self):
        """mlx5dv_get_clock_info: (errno, ClockInfo)."""
        ci = ClockInfo()
        return self.mlx5.mlx5dv_get_clock_info(self.ctx, ctypes.byref(ci)), ci

    def close(self):
        self.ibv.ibv_close_device(self.ctx)


class Phc:
    """The port's PTP hardware clock (the PCI function's /dev/ptpN): read with clock_gettime
    on its dynamic clock id, adjusted with phc_ctl."""

    def __init__(self, ibdev):
        ptps = glob.glob(f"/sys/class/infiniband/{ibdev}/device/ptp/ptp*")
        if not ptps:
            raise RuntimeError(f"no PHC under {ibdev}'s device")
        self.path = "/dev/" + os.path.basename(ptps[0])
        self.fd = os.open(self.path, os.O_RDWR)

    def now(self):
        return time.clock_gettime_ns(((~self.fd) << 3) | 3)   # FD_TO_CLOCKID

    def ctl(self, *args):
        subprocess.run(["phc_ctl", self.path, *map(str, args)], check=True,
                       capture_output=True, timeout=30)


def raw_clock(ctx):
    """ibv_query_rt_values_ex(RAW_CLOCK): the internal timer (libmlx5 puts the cycles into
    tv_nsec)."""
    sec, nsec = ctx.query_rt_values_ex()
    return sec * 1_000_000_000 + nsec


def poll_all(cq, n, read, timeout=30.0):
    """Polls `n` completions of the extended CQ `cq`: their (status, read(cq)) in order."""
    got = []
    deadline = time.time() + timeout
    while len(got) < n and time.time() < deadline:
        if cq.start_poll(PollCqAttr()) != 0:
            continue
        while True:
            got.append((cq.status, read(cq)))
            if len(got) == n or cq.poll_next() != 0:
                break
        cq.end_poll()
    return got


class Writes:
    """An RC QP of the card connected to another of it, completing on `cq`: `run(n)` posts
    n signaled 64-byte WRITEs one after the other, each polled before the next."""

    def __init__(self, ctx, pd, cq, gid, gid_index):
        self.mr = MR(pd, 65536, LW | RW)
        self.qp = rc_qp(pd, cq, cq, max_send_wr=16, max_recv_wr=1)
        self.peer = rc_qp(pd, cq, cq, max_send_wr=1, max_recv_wr=1)
        connect_rc(self.qp, self.peer.qp_num, gid, gid_index, RW, 10, 1, 1)
        connect_rc(self.peer, self.qp.qp_num, gid, gid_index, RW, 10, 1, 1)
        self.cq = cq

    def run(self, n, read):
        got = []
        for i in range(n):
            wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                        sg=[SGE(self.mr.buf, 64, self.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
            wr.set_wr_rdma(self.mr.rkey, self.mr.buf + 4096)
            self.qp.post_send(wr)
            got += poll_all(self.cq, 1, read)
        return got

    def close(self):
        for o in (self.qp, self.peer, self.mr):
            o.close()


def nominal_mult(khz, shift):
    """clocksource_khz2mult(khz, shift), as mlx5 sets the cycle counter."""
    return ((1_000_000 << shift) + khz // 2) // khz


def caps_and_clock(ctx, raw, phc):
    a = ctx.query_device_ex()
    khz = a.hca_core_clock
    check("caps", a.completion_timestamp_mask == (1 << 63) - 1 and khz > 0,
          completion_timestamp_mask=a.completion_timestamp_mask, hca_core_clock=khz)
    r = [raw_clock(ctx) for _ in range(3)]
    check("rt-clock", r[0] < r[1] < r[2], raw=r)
    err, ci = raw.clock_info()
    c0 = raw_clock(ctx)
    p0 = phc.now()
    conv = ci.to_ns(c0)
    check("clock-info", err == 0 and ci.mask == (1 << 41) - 1 and ci.shift > 0
          and ci.mult == nominal_mult(khz, ci.shift) and abs(conv - p0) < CLOSE_NS,
          errno=err, mult=ci.mult, shift=ci.shift, mask=ci.mask, nsec=ci.nsec,
          converted=conv, phc=p0, pyverbs=Mlx5Context.device_timestamp_to_ns(ctx, c0))


def cq_timestamps(ctx, pd, gid, gid_index):
    cq = CQEX(ctx, CqInitAttrEx(cqe=32, wc_flags=e.IBV_WC_STANDARD_FLAGS
                                | e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP))
    w = Writes(ctx, pd, cq, gid, gid_index)
    before = raw_clock(ctx)
    got = w.run(8, CQEX.read_timestamp)
    after = raw_clock(ctx)
    ts = [t for _, t in got]
    check("cq-timestamps", len(got) == 8 and all(s == e.IBV_WC_SUCCESS for s, _ in got)
          and all(a < b for a, b in zip(ts, ts[1:])) and before <= ts[0] and ts[-1] <= after,
          before=before, timestamps=ts, after=after, statuses=[s for s, _ in got])
    w.close()
    cq.close()


def wallclock(ctx, pd, gid, gid_index, phc):
    cq = None

    def make():
        nonlocal cq
        cq = CQEX(ctx, CqInitAttrEx(cqe=32, wc_flags=e.IBV_WC_STANDARD_FLAGS
                                    | e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK))
    err = errno_of(make)
    if err:
        check("wallclock", False, errno=err)
        return
    w = Writes(ctx, pd, cq, gid, gid_index)
    before = phc.now()
    got = w.run(4, CQEX.read_completion_wallclock_ns)
    after = phc.now()
    ns = [t for _, t in got]
    check("wallclock", len(ns) == 4 and all(a < b for a, b in zip(ns, ns[1:]))
          and before - CLOSE_NS <= ns[0] and ns[-1] <= after + CLOSE_NS,
          before=before, wallclock=ns, after=after)
    w.close()
    cq.close()


def adjustments(ctx, raw, phc):
    _, ci0 = raw.clock_info()
    phc.ctl("freq", PPB)
    _, ci1 = raw.clock_info()
    want = ci0.mult * (1_000_000_000 + PPB) // 1_000_000_000
    check("adjfine", abs(ci1.mult - want) <= ci0.mult // 1_000_000 and ci1.shift == ci0.shift,
          mult_before=ci0.mult, mult_after=ci1.mult, want=want)
    phc.ctl("freq", 0)
    c0 = raw_clock(ctx)
    p0 = phc.now()
    _, ci = raw.clock_info()
    before = ci.to_ns(c0) - p0
    phc.ctl("adj", STEP_S)
    c1 = raw_clock(ctx)
    p1 = phc.now()
    _, ci2 = raw.clock_info()
    after = ci2.to_ns(c1) - p1
    check("adjtime", abs(before) < CLOSE_NS and abs(after) < CLOSE_NS
          and ci2.nsec - ci.nsec >= STEP_S * 1_000_000_000,
          offset_before=before, offset_after=after, nsec_before=ci.nsec, nsec_after=ci2.nsec)


def main() -> int:
    a = tool_args()
    ctx = Context(name=a.device)
    raw = RawContext(a.device)
    phc = Phc(a.device)
    gid = ctx.query_gid(1, a.gid_index)
    pd = PD(ctx)
    out(step="created", phc=phc.path)
    caps_and_clock(ctx, raw, phc)
    cq_timestamps(ctx, pd, gid, a.gid_index)
    wallclock(ctx, pd, gid, a.gid_index, phc)
    adjustments(ctx, raw, phc)
    pd.close()
    raw.close()
    ctx.close()
    out(step="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
