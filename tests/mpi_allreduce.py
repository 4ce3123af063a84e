#!/usr/bin/env python3
"""The guest side of the all-reduce test: every rank fills a vector of known values (an
`array`, no numpy), MPI_Allreduce sums it (and takes the maximum of a second one), and each
rank checks every element of the result against the sum it computes itself. Prints one JSON
line per rank and exits non-zero on a mismatch."""

from __future__ import annotations

import json
import socket
import sys
import time
import zlib
from array import array

from mpi4py import MPI

N = int(sys.argv[1]) if len(sys.argv) > 1 else 131072      # int64 elements: 1 MiB


def value(rank: int, i: int) -> int:
    # Distinct per rank and per element, large enough that a lost or misplaced chunk shows.
    return (i * 2654435761 + rank * 40503 + 17) % (1 << 40) - (1 << 39)


def main() -> int:
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
