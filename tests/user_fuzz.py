#!/usr/bin/env python3
"""Guest side of tests/hostile_user.py: a seeded, bounded fuzzer of the RDMA user ABI and the
netdev/RDMA configuration interfaces, run against one ib device (issue 32, hostile users).

Verbs workers (processes) each draw random operations from their seed over a random object
graph: contexts, PDs, MRs (odd lengths, bad and read-only addresses, every access bit), CQs,
QPs of every type with random capabilities, random modify attributes and masks, random send
and receive WQEs (bad keys, opcodes, lengths), SRQs and their limits, AHs, memory windows;
raw `write()` commands and raw ioctls with random objects, methods and attributes; mmaps of
random offsets of the command file (and stray writes into what maps); forks whose children
use the parent's objects. Objects made before the workers fork are shared by all of them. The
parent SIGKILLs workers at random (close mid-operation) and starts new ones. A net worker
runs random ethtool/devlink/dcb/rdma/ip requests against the netdev.

Every failure a request gets is counted, never fatal: the kernel must answer, the process must
not be able to hurt it. One JSON line per worker and a final summary line:
    {"total": steps, "workers": n, "killed": k, "crashed": c, "errors": {...}}

usage: user_fuzz.py IBDEV --seed S [--steps N] [--workers W] [--rounds R] [--kill-rate P]
       [--ops a,b,...] [--net NETDEV --net-steps M]
"""

import argparse
import ctypes
import errno
import json
import mmap
import os
import random
import signal
import struct
import subprocess
import sys
import time
from collections import Counter

import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ, CompChannel
from pyverbs.device import Context
from pyverbs.mr import MR, MW
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError, PyverbsUserError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

PAGE = mmap.PAGESIZE
# RDMA_VERBS_IOCTL: _IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr) (24 bytes).
VERBS_IOCTL = (3 << 30) | (24 << 16) | (0x1B << 8) | 1
# A scratch area every pointer the fuzzer hands the kernel points into (or past the end of
# the address space): response buffers and attribute data can never land in Python's heap.
SCRATCH = ctypes.create_string_buffer(1 << 16)
# libc's mmap, for read-only memory whose address pyverbs can be given (Python's mmap hides it).
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mmap.restype = ctypes.c_void_p
LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
BAD_ADDRS = [0, 1, 0x1000, (1 << 47) - PAGE, 1 << 47, 0xFFFF_8000_0000_0000, (1 << 64) - PAGE]


def edge(rng: random.Random, bits: int) -> int:
    """A value for a `bits`-wide field: mostly edges (0, 1, powers of two and their
    neighbours, the maximum), sometimes anything."""
    r = rng.random()
    if r < 0.15:
        return rng.choice([0, 1, 2, (1 << bits) - 1])
    if r < 0.75:
        k = rng.randrange(bits)
        return max(0, min((1 << bits) - 1, (1 << k) + rng.choice([-1, 0, 1])))
    return rng.getrandbits(bits)


def small(rng: random.Random) -> int:
    """A count a sane program might ask for, or one just past what the card takes."""
    return rng.choice([0, 1, 2, 3, 4, 7, 8, 16, 31, 64, 100, 256, 1024, 4096, 16384, 1 << 20])


class Obj:
    """One object of the pool: the pyverbs object, its kind, and what it hangs off (so a
    closed parent drops its children from the pool: pyverbs closes them with it)."""

    def __init__(self, kind, obj, parent=None, shared=False, **extra):
        self.kind, self.obj, self.parent, self.shared = kind, obj, parent, shared
        self.extra = extra
        self.alive = True

    def ancestors(self):
        p = self.parent
        while p is not None:
            yield p
            p = p.parent


class Fuzzer:
    """One verbs worker: its random stream, its pool and its tally."""

    def __init__(self, dev: str, seed: int, pool=None, ops=None):
        self.dev, self.seed = dev, seed
        self.ops = set(ops or [n for n, _ in self.OPS])
        self.on_step = None  # called with each operation's name before it runs
        self.rng = random.Random(seed)
        self.pool: list[Obj] = list(pool or [])
        self.tally: Counter = Counter()
        self.steps = 0

    # --- the pool -------------------------------------------------------------------------
    def live(self, kind):
        return [o for o in self.pool if o.alive and o.kind == kind]

    def pick(self, kind, ctx=None):
        c = self.live(kind)
        if ctx is not None and self.rng.random() < 0.9:
            c = [o for o in c if self.ctx_of(o) is ctx] or c
        return self.rng.choice(c) if c else None

    def ctx_of(self, o):
        for a in [o, *o.ancestors()]:
            if a.kind == "ctx":
                return a
        return None

    def add(self, kind, obj, parent=None, **extra):
        o = Obj(kind, obj, parent, **extra)
        self.pool.append(o)
        return o

    def drop(self, o):
        """Marks `o` and everything below it closed (pyverbs closed them)."""
        o.alive = False
        for x in self.pool:
            if x.alive and o in list(x.ancestors()):
                x.alive = False
        self.pool = [x for x in self.pool if x.alive]

    # --- operations -----------------------------------------------------------------------
    def op_open(self):
        if len(self.live("ctx")) < 3:
            self.add("ctx", Context(name=self.dev))

    def op_close(self):
        kinds = ["ctx", "pd", "mr", "cq", "qp", "srq", "ah", "mw", "chan"]
        o = self.pick(self.rng.choice(kinds))
        if o is not None and (not o.shared or self.rng.random() < 0.3):
            try:
                o.obj.close()
            finally:
                self.drop(o)

    def op_pd(self):
        ctx = self.pick("ctx")
        if ctx:
            self.add("pd", PD(ctx.obj), ctx)

    def op_mr(self):
        pd = self.pick("pd")
        if not pd:
            return
        rng = self.rng
        length = rng.choice([1, 7, 4095, 4096, 4097, 65536, 1 << 20, 2 << 20])
        access = rng.choice([0, e.IBV_ACCESS_LOCAL_WRITE,
                             e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
                             | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC,
                             e.IBV_ACCESS_REMOTE_WRITE,  # without local write: EINVAL
                             e.IBV_ACCESS_ON_DEMAND | e.IBV_ACCESS_LOCAL_WRITE,
                             edge(rng, 20)])
        r = rng.random()
        if r < 0.7:
            self.add("mr", MR(pd.obj, length, access), pd, length=length)
        elif r < 0.85:
            # Memory the process does not have, or the kernel's.
            self.add("mr", MR(pd.obj, length, access, address=rng.choice(BAD_ADDRS[1:])), pd,
                     length=length)
        else:
            # A read-only mapping: write rights must be refused.
            addr = LIBC.mmap(None, max(length, PAGE), mmap.PROT_READ,
                             mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
            self.add("mr", MR(pd.obj, length, access, address=addr), pd, length=length)

    def op_rereg(self):
        mr = self.pick("mr")
        pd = self.pick("pd")
        if mr and pd:
            rng = self.rng
            flags = rng.randrange(1, 16)
            mr.obj.rereg(flags, pd.obj, 0, rng.choice([4096, 65536, 0]), edge(rng, 16))

    def op_cq(self):
        ctx = self.pick("ctx")
        if not ctx:
            return
        rng = self.rng
        chan = self.pick("chan", ctx) if rng.random() < 0.4 else None
        cqe = rng.choice([small(rng), edge(rng, 31)])
        cq = CQ(ctx.obj, cqe, None, chan.obj if chan else None, rng.randrange(0, 9))
        self.add("cq", cq, chan or ctx)

    def op_chan(self):
        ctx = self.pick("ctx")
        if ctx:
            self.add("chan", CompChannel(ctx.obj), ctx)

    def op_cq_use(self):
        cq = self.pick("cq")
        if not cq:
            return
        rng = self.rng
        r = rng.random()
        if r < 0.4:
            cq.obj.poll(rng.randrange(1, 65))
        elif r < 0.6:
            cq.obj.req_notify(rng.random() < 0.5)
        else:
            cq.obj.resize(rng.choice([small(rng), edge(rng, 31)]))

    def op_qp(self):
        pd = self.pick("pd")
        if not pd:
            return
        ctx = self.ctx_of(pd)
        rng = self.rng
        scq, rcq = self.pick("cq", ctx), self.pick("cq", ctx)
        if not scq or not rcq:
            return
        qpt = rng.choice([e.IBV_QPT_RC, e.IBV_QPT_UC, e.IBV_QPT_UD, e.IBV_QPT_RC,
                          e.IBV_QPT_RAW_PACKET, e.IBV_QPT_UD])
        cap = QPCap(max_send_wr=rng.choice([small(rng), edge(rng, 20)]),
                    max_recv_wr=rng.choice([small(rng), edge(rng, 20)]),
                    max_send_sge=rng.choice([0, 1, 2, 4, 16, 31, 64, 255]),
                    max_recv_sge=rng.choice([0, 1, 2, 4, 16, 31, 64, 255]),
                    max_inline_data=rng.choice([0, 16, 64, 256, 1024, 4096]))
        srq = self.pick("srq", ctx) if rng.random() < 0.3 else None
        attr = QPInitAttr(qp_type=qpt, scq=scq.obj, rcq=rcq.obj, cap=cap,
                          sq_sig_all=rng.random() < 0.5, srq=srq.obj if srq else None)
        self.add("qp", QP(pd.obj, attr), pd, qpt=qpt)

    def op_modify(self):
        qp = self.pick("qp")
        if not qp:
            return
        rng = self.rng
        a = QPAttr(qp_state=rng.randrange(0, 8), cur_qp_state=rng.randrange(0, 8))
        a.port_num = rng.choice([1, 1, 1, 0, 2, 255])
        a.pkey_index = rng.choice([0, 0, 1, 127, 65535])
        a.qkey = rng.getrandbits(32)
        a.qp_access_flags = edge(rng, 8)
        a.path_mtu = rng.randrange(0, 8)
        a.dest_qp_num = rng.choice([rng.getrandbits(24), qp.obj.qp_num])
        a.rq_psn, a.sq_psn = rng.getrandbits(24), rng.getrandbits(24)
        a.max_rd_atomic, a.max_dest_rd_atomic = rng.randrange(0, 32), rng.randrange(0, 32)
        a.min_rnr_timer, a.timeout = rng.randrange(0, 32), rng.randrange(0, 32)
        a.retry_cnt, a.rnr_retry = rng.randrange(0, 8), rng.randrange(0, 8)
        if rng.random() < 0.7:
            gr = GlobalRoute(dgid=self.gid(), sgid_index=rng.choice([0, 1, 2, 3, 127, 255]),
                             hop_limit=rng.randrange(256), traffic_class=rng.randrange(256),
                             flow_label=rng.getrandbits(20))
            a.ah_attr = AHAttr(gr=gr, is_global=1, port_num=a.port_num, sl=rng.randrange(16),
                               static_rate=rng.randrange(32), dlid=rng.getrandbits(16))
        mask = rng.choice([edge(rng, 21), (1 << 21) - 1,
                           e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT
                           | e.IBV_QP_ACCESS_FLAGS,
                           e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
                           | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC
                           | e.IBV_QP_MIN_RNR_TIMER,
                           e.IBV_QP_STATE | e.IBV_QP_SQ_PSN | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
                           | e.IBV_QP_RNR_RETRY | e.IBV_QP_MAX_QP_RD_ATOMIC,
                           e.IBV_QP_STATE])
        qp.obj.modify(a, mask)

    def gid(self):
        ctx = self.pick("ctx")
        if ctx and self.rng.random() < 0.7:
            try:
                return ctx.obj.query_gid(1, self.rng.randrange(0, 4))
            except PyverbsError:
                pass
        from pyverbs.addr import GID
        g = GID()
        g.gid = ":".join(f"{self.rng.getrandbits(16):04x}" for _ in range(8))
        return g

    def sges(self, n):
        out = []
        for _ in range(n):
            mr = self.pick("mr")
            if mr and self.rng.random() < 0.8:
                addr = mr.obj.buf + self.rng.choice([0, 0, 1, mr.extra["length"] - 1,
                                                     mr.extra["length"], 1 << 30])
                lkey = mr.obj.lkey if self.rng.random() < 0.85 else self.rng.getrandbits(32)
                length = self.rng.choice([0, 1, 64, mr.extra["length"], 1 << 31, 4096])
            else:
                addr = self.rng.choice(BAD_ADDRS)
                lkey, length = self.rng.getrandbits(32), self.rng.choice([0, 8, 4096])
            out.append(SGE(addr & ((1 << 64) - 1), length & 0xFFFFFFFF, lkey))
        return out

    def op_send(self):
        qp = self.pick("qp")
        if not qp:
            return
        rng = self.rng
        sg = self.sges(rng.choice([0, 1, 1, 2, 3]))
        wr = SendWR(wr_id=rng.getrandbits(64), opcode=rng.choice(list(range(0, 12)) + [255]),
                    num_sge=len(sg), sg=sg or None,
                    send_flags=rng.choice([e.IBV_SEND_SIGNALED, 0, edge(rng, 8)]))
        if rng.random() < 0.5:
            mr = self.pick("mr")
            wr.set_wr_rdma(mr.obj.rkey if mr else rng.getrandbits(32),
                           (mr.obj.buf if mr else 0) + rng.choice([0, 8, 1 << 20]))
        if qp.extra["qpt"] == e.IBV_QPT_UD:
            ah = self.pick("ah")
            if ah:
                wr.set_wr_ud(ah.obj, rng.getrandbits(24), rng.getrandbits(32))
        qp.obj.post_send(wr)

    def op_recv(self):
        target = self.pick(self.rng.choice(["qp", "srq"]))
        if target:
            sg = self.sges(self.rng.choice([0, 1, 2, 5]))
            target.obj.post_recv(RecvWR(wr_id=self.rng.getrandbits(64), num_sge=len(sg),
                                        sg=sg or None))

    def op_srq(self):
        pd = self.pick("pd")
        if not pd:
            return
        rng = self.rng
        a = SrqAttr(max_wr=rng.choice([small(rng), edge(rng, 20)]),
                    max_sge=rng.choice([0, 1, 2, 4, 32, 64]), srq_limit=edge(rng, 16))
        self.add("srq", SRQ(pd.obj, SrqInitAttr(a)), pd)

    def op_srq_use(self):
        srq = self.pick("srq")
        if not srq:
            return
        rng = self.rng
        if rng.random() < 0.5:
            srq.obj.query()
        else:
            srq.obj.modify(SrqAttr(max_wr=edge(rng, 20), srq_limit=edge(rng, 20)),
                           rng.choice([1, 2, 3, edge(rng, 4)]))

    def op_ah(self):
        pd = self.pick("pd")
        if not pd:
            return
        rng = self.rng
        gr = GlobalRoute(dgid=self.gid(), sgid_index=rng.choice([0, 1, 2, 3, 200]),
                         hop_limit=rng.randrange(256))
        attr = AHAttr(gr=gr, is_global=rng.random() < 0.9, port_num=rng.choice([1, 1, 0, 2]),
                      sl=rng.randrange(16), dlid=rng.getrandbits(16))
        self.add("ah", AH(pd.obj, attr=attr), pd)

    def op_mw(self):
        pd = self.pick("pd")
        if pd:
            self.add("mw", MW(pd.obj, self.rng.choice([1, 2, 0, 3])), pd)

    def op_query(self):
        ctx = self.pick("ctx")
        if not ctx:
            return
        rng = self.rng
        c = ctx.obj
        r = rng.randrange(6)
        if r == 0:
            c.query_device()
        elif r == 1:
            c.query_device_ex()
        elif r == 2:
            c.query_port(rng.choice([1, 0, 2, 255]))
        elif r == 3:
            c.query_gid(rng.choice([1, 0, 2]), rng.choice([0, 1, 255, 65535]))
        elif r == 4:
            c.query_pkey(rng.choice([1, 0, 2]), rng.choice([0, 1, 255, 65535]))
        else:
            qp = self.pick("qp")
            if qp:
                qp.obj.query(edge(rng, 24))

    def fd(self):
        ctx = self.pick("ctx")
        if ctx and self.rng.random() < 0.85:
            return ctx.obj.cmd_fd, False
        return os.open(f"/dev/infiniband/{uverbs_of(self.dev)}", os.O_RDWR), True

    def op_raw_write(self):
        """A `write()` command: a random (or real) command number, random in/out sizes and
        bytes, the response pointer in the scratch area."""
        fd, own = self.fd()
        rng = self.rng
        try:
            cmd = rng.choice([rng.randrange(0, 48), rng.randrange(0, 8) | 0x80000000,
                              rng.getrandbits(32)])
            body = bytearray(rng.randbytes(rng.choice([0, 4, 8, 16, 24, 32, 64, 120, 256])))
            if len(body) >= 8:
                body[0:8] = struct.pack("<Q", ctypes.addressof(SCRATCH) + rng.randrange(0, 4096, 8))
            if len(body) >= 12 and rng.random() < 0.5:
                # Most commands name an object by a small handle right after the response.
                body[8:12] = struct.pack("<I", rng.randrange(0, 16))
            in_words, out_words = (8 + len(body)) // 4, rng.randrange(0, 1024)
            if rng.random() < 0.2:
                in_words = rng.getrandbits(16)
            hdr = struct.pack("<IHH", cmd & 0xFFFFFFFF, in_words, out_words)
            os.write(fd, hdr + bytes(body))
        finally:
            if own:
                os.close(fd)

    def op_raw_ioctl(self):
        """An RDMA_VERBS_IOCTL with random object/method ids (the core's and the driver's
        namespace) and attributes, pointers into the scratch area."""
        import fcntl
        fd, own = self.fd()
        rng = self.rng
        try:
            ns = lambda n: rng.choice([rng.randrange(0, n), 0x1000 | rng.randrange(0, n),
                                       rng.getrandbits(16)])
            attrs = b""
            n = rng.choice([0, 1, 2, 3, 5, 8])
            for _ in range(n):
                ln = rng.choice([0, 1, 4, 8, 16, 64, 256, 4096])
                data = (rng.getrandbits(64) if ln <= 8 and rng.random() < 0.7 else
                        ctypes.addressof(SCRATCH) + rng.randrange(0, 1 << 15, 8))
                attrs += struct.pack("<HHHHQ", ns(16), ln, rng.choice([0, 1, 2, edge(rng, 16)]),
                                     rng.choice([0, 0, edge(rng, 16)]), data)
            hdr = struct.pack("<HHHHQII", 24 + len(attrs), ns(40), ns(24), n,
                              rng.choice([0, 0, 0, 1]), rng.choice([0, 0, 2, 4, 255]), 0)
            buf = bytearray(hdr + attrs)
            fcntl.ioctl(fd, VERBS_IOCTL, buf)
        finally:
            if own:
                os.close(fd)

    def op_mmap(self):
        """Maps a random offset of a context's command file; reads what maps and, rarely,
        writes a random word into it (a doorbell the process has no business ringing)."""
        ctx = self.pick("ctx")
        if not ctx:
            return
        rng = self.rng
        # mlx5's encoding: command byte << 8 | index (UAR pages 0, clock 5 and 7, UAR objects
        # from 9 on, numbered from 0 in each context).
        cmd = rng.choice([0, 0, 1, 2, 3, 4, 5, 5, 6, 7, 7, 9, 9, 9, 13, 255])
        idx = rng.choice([0, 0, 1, 1, 2, 3, rng.randrange(0, 300)])
        off = ((cmd << 8) | idx) * PAGE if rng.random() < 0.9 else rng.getrandbits(40) * PAGE
        length = rng.choice([PAGE, PAGE, PAGE, PAGE, 2 * PAGE, 16 * PAGE])
        prot = rng.choice([mmap.PROT_READ, mmap.PROT_READ, mmap.PROT_WRITE,
                           mmap.PROT_READ | mmap.PROT_WRITE, mmap.PROT_READ | mmap.PROT_WRITE])
        flags = rng.choice([mmap.MAP_SHARED] * 4 + [mmap.MAP_PRIVATE])
        m = mmap.mmap(ctx.obj.cmd_fd, length, flags=flags, prot=prot, offset=off)
        self.tally["mmap-ok"] += 1
        try:
            if prot & mmap.PROT_READ:
                m[rng.randrange(0, length, 8)]
            if prot & mmap.PROT_WRITE and rng.random() < 0.3:
                o = rng.randrange(0, length, 8)
                m[o:o + 8] = struct.pack("<Q", rng.getrandbits(64))
        finally:
            m.close()

    def op_fork(self):
        """A child uses (and destroys) the parent's objects for a few steps and exits."""
        pid = os.fork()
        if pid == 0:
            self.on_step = None  # the parent's state file is the parent's
            self.rng.seed(self.seed * 7919 + self.steps)
            code = 0
            try:
                for _ in range(self.rng.randrange(1, 12)):
                    self.step()
            except BaseException:
                code = 3
            os._exit(code)
        self.tally[f"child-exit:{wait_for(pid, 60)}"] += 1

    def op_crash(self):
        """The process dies of a fault in the middle of its work (its objects, mappings and
        contexts are the kernel's to clean up)."""
        os.kill(os.getpid(), signal.SIGSEGV)

    OPS = [("open", 2), ("close", 4), ("pd", 4), ("mr", 8), ("rereg", 2), ("cq", 6),
           ("chan", 1), ("cq_use", 5), ("qp", 8), ("modify", 10), ("send", 8), ("recv", 5),
           ("srq", 3), ("srq_use", 3), ("ah", 3), ("mw", 2), ("query", 4), ("raw_write", 6),
           ("raw_ioctl", 8), ("mmap", 5), ("fork", 1), ("crash", 0.05)]

    def step(self):
        names, weights = zip(*[(n, w) for n, w in self.OPS if n in self.ops])
        name = self.rng.choices(names, weights)[0]
        if self.on_step:
            self.on_step(name)
        self.steps += 1
        try:
            getattr(self, "op_" + name)()
            self.tally[f"{name}:ok"] += 1
        except PyverbsRDMAError as x:
            self.tally[f"{name}:{errno.errorcode.get(x.error_code, x.error_code)}"] += 1
        except OSError as x:
            self.tally[f"{name}:{errno.errorcode.get(x.errno, x.errno)}"] += 1
        except (PyverbsError, PyverbsUserError, ValueError, TypeError, OverflowError) as x:
            self.tally[f"{name}:{type(x).__name__}"] += 1


def uverbs_of(dev: str) -> str:
    return os.listdir(f"/sys/class/infiniband/{dev}/device/infiniband_verbs")[0]


def wait_for(pid: int, secs: float) -> str:
    """Waits up to `secs` for `pid`; a child still running then is killed. Returns how it
    ended: "0", "exit N", "signal N" or "hung" (killed after the wait)."""
    end = time.monotonic() + secs
    while time.monotonic() < end:
        p, st = os.waitpid(pid, os.WNOHANG)
        if p:
            return describe(st)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "hung"


def describe(st: int) -> str:
    if os.WIFSIGNALED(st):
        return f"signal {os.WTERMSIG(st)}"
    return "0" if os.WEXITSTATUS(st) == 0 else f"exit {os.WEXITSTATUS(st)}"


def shared_pool(dev: str, seed: int) -> list[Obj]:
    """Objects every worker inherits: a context, PDs, MRs, CQs, QPs and an SRQ."""
    f = Fuzzer(dev, seed)
    ctx = f.add("ctx", Context(name=dev))
    for _ in range(2):
        pd = f.add("pd", PD(ctx.obj), ctx)
        f.add("mr", MR(pd.obj, 65536, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
                       | e.IBV_ACCESS_REMOTE_READ), pd, length=65536)
    for _ in range(2):
        f.add("cq", CQ(ctx.obj, 64, None, None, 0), ctx)
    cqs = f.live("cq")
    for qpt in (e.IBV_QPT_RC, e.IBV_QPT_RC, e.IBV_QPT_UD):
        pd = f.live("pd")[0]
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
        f.add("qp", QP(pd.obj, QPInitAttr(qp_type=qpt, scq=cqs[0].obj, rcq=cqs[1].obj, cap=cap)),
              pd, qpt=qpt)
    for o in f.pool:
        o.shared = True
    return f.pool


def state_file(seed: int) -> str:
    """Where worker `seed` keeps its tally and the operation it is in (the parent reads it
    whatever way the worker ended)."""
    return f"/tmp/user_fuzz-{seed}.json"


def save_state(f: "Fuzzer", op: str) -> None:
    with open(state_file(f.seed) + ".tmp", "w") as out:
        json.dump({"steps": f.steps, "op": op, "errors": dict(f.tally)}, out)
    os.replace(state_file(f.seed) + ".tmp", state_file(f.seed))


def verbs_worker(dev: str, seed: int, steps: int, pool, ops) -> None:
    """A worker process: `steps` operations, its state saved before each (see `state_file`)."""
    f = Fuzzer(dev, seed, pool, ops)
    f.on_step = lambda op: save_state(f, op)
    for _ in range(steps):
        f.step()
    save_state(f, "")


def worker_report(seed: int, how: str) -> dict:
    """Worker `seed`'s last saved state and how it ended; a worker that died of a signal it
    did not send itself names the operation it died in."""
    try:
        with open(state_file(seed)) as f:
            st = json.load(f)
        os.unlink(state_file(seed))
    except (OSError, ValueError):
        st = {"steps": 0, "op": "", "errors": {}}
    rep = {"worker": seed, "end": how, "steps": st["steps"], "errors": st["errors"]}
    if how.startswith("signal") and st["op"] != "crash":
        rep["died_in"] = st["op"]
    return rep


# Random configuration requests: one command line drawn from the list, its values drawn per request.
def net_request(rng: random.Random, nd: str, ib: str) -> list[str]:
    v = lambda *c: str(rng.choice(c))
    feats = ["rx", "tx", "tso", "gro", "lro", "rxvlan", "txvlan", "ntuple", "rxhash",
             "rx-all", "rx-fcs", "hw-tc-offload", "rx-udp-gro-forwarding"]
    cmds = [
        f"ethtool -L {nd} combined {v(0, 1, 2, 3, 4, 8, 64, 1000)}",
        f"ethtool -G {nd} rx {v(0, 1, 64, 128, 1000, 8192, 65536)} tx {v(0, 64, 512, 8192, 100000)}",
        f"ethtool -C {nd} adaptive-rx {v('on', 'off')} rx-usecs {v(0, 1, 8, 4095, 70000)} "
        f"rx-frames {v(0, 1, 128, 70000)} tx-usecs {v(0, 16, 70000)}",
        f"ethtool -K {nd} {rng.choice(feats)} {v('on', 'off')}",
        f"ethtool -X {nd} equal {v(0, 1, 2, 3, 100)}",
        f"ethtool -X {nd} weight {v(1, 0)} {v(1, 7, 0)} {v('', 3)}",
        f"ethtool -X {nd} hkey " + ":".join(f"{rng.getrandbits(8):02x}" for _ in range(
            rng.choice([40, 40, 39, 52]))),
        f"ethtool -X {nd} default",
        f"ethtool -N {nd} flow-type {v('tcp4', 'udp4', 'ether', 'ip6')} dst-port "
        f"{rng.getrandbits(16)} action {v(-1, 0, 1, 7, 1000)} loc {v(0, 1, 1023, 65535)}",
        f"ethtool -N {nd} delete {v(0, 1, 1023, 65535)}",
        f"ethtool -N {nd} rx-flow-hash {v('tcp4', 'udp4', 'tcp6')} {v('sdfn', 'sd', 'f', 'sdfnv')}",
        f"ethtool -X {nd} context new equal {v(1, 2)}",
        f"ethtool -X {nd} context {v(1, 2, 3)} delete",
        f"ethtool -A {nd} rx {v('on', 'off')} tx {v('on', 'off')} autoneg {v('on', 'off')}",
        f"ethtool -s {nd} speed {v(1000, 25000, 100000, 7)} autoneg {v('on', 'off')}",
        f"ethtool --set-fec {nd} encoding {v('auto', 'off', 'rs', 'baser')}",
        f"ethtool --set-priv-flags {nd} {v('rx_cqe_moder', 'tx_cqe_moder', 'rx_cqe_compress', 'xyz')} "
        f"{v('on', 'off')}",
        f"ethtool -{v('S', 'T', 'i', 'k', 'g', 'l', 'x', 'n', 'a', 'c', 'm', 'P', '-show-fec')} {nd}",
        f"ethtool -I -{v('a', 'S')} {nd}",
        f"ethtool -W {nd} {v(0, 1, 2, 3)}",
        f"ip link set {nd} {v('up', 'down', 'up')}",
        f"ip link set {nd} mtu {v(60, 68, 1500, 4000, 9000, 9978, 9979, 65535)}",
        f"ip link set {nd} promisc {v('on', 'off')} allmulticast {v('on', 'off')}",
        f"ip maddr add 01:00:5e:00:00:{rng.getrandbits(8):02x} dev {nd}",
        f"devlink dev {v('show', 'info', 'param show')} pci/0000:01:00.0",
        f"devlink health {v('show', 'diagnose', 'dump show', 'recover', 'dump clear')} "
        f"pci/0000:01:00.0 reporter {v('tx', 'rx', 'fw', 'fw_fatal', 'nope')}",
        f"devlink health set pci/0000:01:00.0 reporter {v('tx', 'rx')} grace_period "
        f"{v(0, 1, 500, 4294967295)} auto_recover {v('true', 'false')}",
        f"devlink port show",
        f"dcb ets set dev {nd} tc-tsa all:{v('ets', 'strict', 'vendor')} tc-bw "
        f"all:{v(0, 12, 100)}",
        f"dcb pfc set dev {nd} prio-pfc {v(0, 3, 7, 8)}:{v('on', 'off')}",
        f"dcb pfc show dev {nd}",
        f"dcb app {v('add', 'del')} dev {nd} dscp-prio {rng.randrange(70)}:{rng.randrange(9)}",
        f"dcb dcbx set dev {nd} {v('host', 'ieee', 'cee', 'lld-managed')}",
        f"dcb maxrate set dev {nd} tc-maxrate all:{v('0', '1Gbit', '100Mbit')}",
        f"rdma {v('link', 'dev', 'resource', 'statistic')} show",
        f"rdma resource show {v('qp', 'cq', 'mr', 'pd', 'cm_id', 'ctx', 'srq')}",
        f"rdma statistic qp set link {ib}/1 auto {v('type', 'off', 'pid')}",
        f"rdma statistic show link {ib}/{v(1, 0, 2)}",
        f"rdma dev set {ib} adaptive-moderation {v('on', 'off')}",
        f"cat /sys/class/infiniband/{ib}/ports/1/{v('state', 'rate', 'gids/0', 'gids/255', 'pkeys/0', 'counters/port_rcv_data', 'hw_counters/out_of_sequence')}",
    ]
    return rng.choice(cmds).split()


def net_worker(nd: str, ib: str, seed: int, steps: int) -> None:
    rng = random.Random(seed)
    tally = Counter()
    for _ in range(steps):
        cmd = net_request(rng, nd, ib)
        try:
            r = subprocess.run(cmd, capture_output=True, timeout=60)
            tally[f"{cmd[0]}:{'ok' if r.returncode == 0 else 'refused'}"] += 1
        except subprocess.TimeoutExpired:
            tally[f"{cmd[0]}:timeout {' '.join(cmd)}"] += 1
    print(json.dumps({"worker": f"net-{seed}", "steps": steps, "errors": dict(tally)}), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dev")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--steps", type=int, default=300, help="operations per verbs worker")
    ap.add_argument("--workers", type=int, default=3, help="verbs workers at a time")
    ap.add_argument("--rounds", type=int, default=2, help="workers started per slot")
    ap.add_argument("--kill-rate", type=float, default=0.3,
                    help="chance that a worker is SIGKILLed mid-run")
    ap.add_argument("--ops", type=lambda v: v.split(","),
                    help="only these operations (comma-separated names of Fuzzer.OPS)")
    ap.add_argument("--net", help="the netdev for the configuration worker")
    ap.add_argument("--net-steps", type=int, default=60)
    a = ap.parse_args()

    rng = random.Random(a.seed)
    pool = shared_pool(a.dev, a.seed)
    total, killed, crashed, ends = 0, 0, 0, Counter()
    net_pid = None
    if a.net:
        net_pid = os.fork()
        if net_pid == 0:
            net_worker(a.net, a.dev, a.seed, a.net_steps)
            os._exit(0)
    seeds = [a.seed * 1000 + i for i in range(a.workers * a.rounds)]
    running: dict[int, tuple[int, float | None]] = {}
    while seeds or running:
        while seeds and len(running) < a.workers:
            s = seeds.pop(0)
            pid = os.fork()
            if pid == 0:
                try:
                    verbs_worker(a.dev, s, a.steps, pool, a.ops)
                    code = 0
                except BaseException as x:
                    print(json.dumps({"worker": s, "fatal": repr(x)}), flush=True)
                    code = 4
                os._exit(code)
            kill_at = time.monotonic() + rng.uniform(1, 20) if rng.random() < a.kill_rate else None
            running[pid] = (s, kill_at)
        time.sleep(0.05)
        for pid, (s, kill_at) in list(running.items()):
            p, st = os.waitpid(pid, os.WNOHANG)
            how = None
            if p:
                how = describe(st)
                crashed += how.startswith("signal")
            elif kill_at is not None and time.monotonic() > kill_at:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                killed += 1
                how = "killed"
            if how:
                ends[how] += 1
                rep = worker_report(s, how)
                total += rep["steps"]
                print(json.dumps(rep), flush=True)
                del running[pid]
    net = wait_for(net_pid, 900) if net_pid else None
    for o in reversed(pool):
        try:
            o.obj.close()
        except PyverbsError:
            pass
    print(json.dumps({"total": total, "killed": killed, "crashed": crashed,
                      "ends": dict(ends), "net": net}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
