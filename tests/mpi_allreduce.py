#!/usr/bin/env python3
"""The guest side of the all-reduce test: every rank fills a vector of known values (an
`array`, no numpy), MPI_Allreduce sums it (and takes the maximum of a second one), and each
rank checks every element of the result against the sum it computes itself. Prints one JSON
line per rank and exits non-zero on a mismatch.

    mpi_allreduce.py [ELEMENTS]                         the test (tests/ucx_mpi.py)
    mpi_allreduce.py --bench SIZES SECONDS ROUNDS       the benchmark (tools/bench/ai_bench.py)

`--bench`: for each round and each size in SIZES (bytes, comma-separated) an int64 SUM
all-reduce (every element checked against the ranks' sum once per size), then between ranks 0
and 1 a ping-pong (latency: half the round trip) and a window of WINDOW back-to-back sends
(fewer when they would exceed WINDOW_BYTES) acknowledged once (bandwidth), as OSU's osu_latency
and osu_bw measure. Each is repeated for about SECONDS (the count rank 0 measures on a warm-up,
broadcast so that every rank runs the same loop). Around each all-reduce loop every rank reads
its VM's busy CPU time from /proc/stat (one rank per VM: the whole guest, kernel work for the
transport included). Rank 0 prints one JSON line per measurement."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import zlib
from array import array

from mpi4py import MPI

N = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "--bench" else 131072  # 1 MiB
WINDOW = 16         # sends in flight in the bandwidth loop ...
WINDOW_BYTES = 16 << 20   # ... as long as they hold at most this much (one at least)
MAX_ITERS = 2000    # repetitions of one measurement at most


def value(rank: int, i: int) -> int:
    # Distinct per rank and per element, large enough that a lost or misplaced chunk shows.
    return (i * 2654435761 + rank * 40503 + 17) % (1 << 40) - (1 << 39)


def cpu_ticks() -> tuple[int, int]:
    """This VM's busy CPU time so far, in USER_HZ ticks: (user + nice, system + irq + softirq)
    from /proc/stat's `cpu` line."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    return v[0] + v[1], v[2] + v[5] + v[6]


def repeat(comm, once, seconds: float) -> tuple[int, float]:
    """Runs `once` (a step every rank calls) once to warm up and time it, then as often as rank
    0 finds fits in `seconds`; returns the repetitions and the seconds per repetition (the
    slowest rank's)."""
    t0 = time.monotonic()
    once()
    warm = comm.bcast(time.monotonic() - t0, root=0)
    n = max(1, min(MAX_ITERS, int(seconds / max(warm, 1e-6))))
    comm.Barrier()
    t0 = time.monotonic()
    for _ in range(n):
        once()
    t = comm.allreduce(time.monotonic() - t0, op=MPI.MAX)
    return n, t / n


def bench(sizes: list[int], seconds: float, rounds: int) -> int:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    hz = os.sysconf("SC_CLK_TCK")
    bad = 0
    for rnd in range(rounds):
        for nbytes in sizes:
            n = nbytes // 8
            send = array("q", [rank + 1]) * n
            got = array("q", bytes(8 * n))
            comm.Allreduce(send, got, op=MPI.SUM)
            ok = comm.allreduce(int(got == array("q", [size * (size + 1) // 2]) * n), op=MPI.MIN)
            bad += not ok
            c0 = cpu_ticks()
            iters, t = repeat(comm, lambda: comm.Allreduce(send, got, op=MPI.SUM), seconds)
            c1 = cpu_ticks()
            cpu = comm.gather((c1[0] - c0[0], c1[1] - c0[1]), root=0)
            if rank == 0:
                print(json.dumps({"kind": "allreduce", "round": rnd, "bytes": nbytes,
                                  "ranks": size, "iters": iters, "seconds": t, "ok": bool(ok),
                                  # The CPU readings span the warm-up too.
                                  "cpu_allreduces": iters + 1,
                                  "cpu_user": sum(u for u, _ in cpu) / hz,
                                  "cpu_sys": sum(s for _, s in cpu) / hz}), flush=True)
            del send, got
            buf = bytearray(nbytes)
            ack = bytearray(1)
            w = max(1, min(WINDOW, WINDOW_BYTES // nbytes))

            def pingpong():
                if rank == 0:
                    comm.Send(buf, dest=1)
                    comm.Recv(buf, source=1)
                elif rank == 1:
                    comm.Recv(buf, source=0)
                    comm.Send(buf, dest=0)

            def window():
                if rank == 0:
                    MPI.Request.Waitall([comm.Isend(buf, dest=1, tag=1) for _ in range(w)])
                    comm.Recv(ack, source=1, tag=2)
                elif rank == 1:
                    MPI.Request.Waitall([comm.Irecv(buf, source=0, tag=1) for _ in range(w)])
                    comm.Send(ack, dest=0, tag=2)

            iters, t = repeat(comm, pingpong, seconds)
            if rank == 0:
                print(json.dumps({"kind": "latency", "round": rnd, "bytes": nbytes,
                                  "iters": iters, "seconds": t / 2}), flush=True)
            iters, t = repeat(comm, window, seconds)
            if rank == 0:
                print(json.dumps({"kind": "bandwidth", "round": rnd, "bytes": nbytes,
                                  "iters": iters, "window": w,
                                  "mbps": w * nbytes / t / 1e6}), flush=True)
            del buf
    comm.Barrier()
    return 1 if bad else 0


def main() -> int:
    if sys.argv[1:2] == ["--bench"]:
        return bench([int(x) for x in sys.argv[2].split(",")], float(sys.argv[3]), int(sys.argv[4]))
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    send = array("q", (value(rank, i) for i in range(N)))
    want = array("q", (sum(value(r, i) for r in range(size)) for i in range(N)))
    got = array("q", bytes(8 * N))
    comm.Barrier()
    t0 = time.monotonic()
    comm.Allreduce(send, got, op=MPI.SUM)
    t1 = time.monotonic()
    # A second reduction with another operator, on the ranks' values reversed.
    rev = array("q", reversed(send))
    mx = array("q", bytes(8 * N))
    comm.Allreduce(rev, mx, op=MPI.MAX)
    want_max = array("q", (max(value(r, N - 1 - i) for r in range(size)) for i in range(N)))
    bad = [i for i in range(N) if got[i] != want[i]]
    bad_max = [i for i in range(N) if mx[i] != want_max[i]]
    print(json.dumps({
        "rank": rank, "size": size, "host": socket.gethostname(), "elements": N,
        "bytes": 8 * N, "sum_mismatches": len(bad), "max_mismatches": len(bad_max),
        "first_bad": bad[:3], "crc": zlib.crc32(got.tobytes()),
        "want_crc": zlib.crc32(want.tobytes()), "seconds": round(t1 - t0, 3),
        "pml": MPI.Get_library_version().splitlines()[0],
    }), flush=True)
    comm.Barrier()
    return 0 if not bad and not bad_max else 1


if __name__ == "__main__":
    sys.exit(main())
