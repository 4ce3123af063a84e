#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Statistical kernel profiler for the test VMs (a benchmark aid, not a test).

The guest tree has no `perf`; this samples the kernel's instruction pointer on every CPU
with the `cpu-clock` software event (perf_event_open, kernel mode only, one sample per
PERIOD_US of CPU time), reads the ring buffers once at the end and resolves the addresses with
/proc/kallsyms, modules included. Kprobes cost a TCG guest too much to attribute time; a
timer sample costs the same whoever the driver is.

    python3 ksample.py SECONDS [TOP]      (as root, inside a VM)

Prints "total N samples, idle I" then the TOP functions by samples ("pct samples symbol
[module]") and the share of each module.
"""

from __future__ import annotations

import bisect
import ctypes
import mmap
import os
import struct
import sys
import time

NR_PERF_EVENT_OPEN = 298  # x86_64
PERF_TYPE_SOFTWARE = 1
PERF_COUNT_SW_CPU_CLOCK = 0
PERF_SAMPLE_IP = 1
PERF_RECORD_SAMPLE = 9
PERF_RECORD_LOST = 2
PERF_EVENT_IOC_ENABLE = 0x2400
PERF_EVENT_IOC_DISABLE = 0x2401
ATTR_SIZE = 112  # PERF_ATTR_SIZE_VER5
PERIOD_US = 1000
PAGES = 512  # data pages per CPU: 2 MiB, 131072 samples of 16 bytes (131 s at PERIOD_US)

# Flag bits of perf_event_attr (after read_format).
DISABLED, EXCLUDE_USER, EXCLUDE_HV = 1 << 0, 1 << 4, 1 << 6


def attr() -> bytes:
    a = bytearray(ATTR_SIZE)
    struct.pack_into("<IIQQQQQ", a, 0, PERF_TYPE_SOFTWARE, ATTR_SIZE, PERF_COUNT_SW_CPU_CLOCK,
                     PERIOD_US * 1000, PERF_SAMPLE_IP, 0, DISABLED | EXCLUDE_USER | EXCLUDE_HV)
    return bytes(a)


def open_cpu(libc, cpu: int) -> int:
    buf = ctypes.create_string_buffer(attr(), ATTR_SIZE)
    fd = libc.syscall(NR_PERF_EVENT_OPEN, buf, -1, cpu, -1, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), f"perf_event_open(cpu {cpu})")
    return fd


def samples(ring: mmap.mmap) -> tuple[list[int], int]:
    """The sampled IPs in a ring (header page + PAGES data pages), and the lost count."""
    page = mmap.PAGESIZE
    head, = struct.unpack_from("<Q", ring, 1024)
    size = PAGES * page
    data = ring[page:page + size]
    ips, lost, pos = [], 0, max(0, head - size)
    while pos + 8 <= head:
        off = pos % size
        hdr = data[off:off + 8] if off + 8 <= size else data[off:] + data[:off + 8 - size]
        typ, _misc, n = struct.unpack("<IHH", hdr)
        if n < 8:
            break
        rec = bytes(data[(off + i) % size] for i in range(8, n)) if off + n > size \
            else data[off + 8:off + n]
        if typ == PERF_RECORD_SAMPLE and len(rec) >= 8:
            ips.append(struct.unpack_from("<Q", rec)[0])
        elif typ == PERF_RECORD_LOST and len(rec) >= 16:
            lost += struct.unpack_from("<Q", rec, 8)[0]
        pos += n
    return ips, lost


def kallsyms() -> tuple[list[int], list[str]]:
    syms = []
    with open("/proc/kallsyms") as f:
        for line in f:
            w = line.split()
            if len(w) >= 3 and w[1] in "tTwW":
                addr = int(w[0], 16)
                if addr:
                    name = w[2] + (f" {w[3]}" if len(w) > 3 else "")
                    syms.append((addr, name))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def main() -> int:
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.ioctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong)
    rings = []
    for cpu in range(os.cpu_count() or 1):
        fd = open_cpu(libc, cpu)
        m = mmap.mmap(fd, (PAGES + 1) * mmap.PAGESIZE, mmap.MAP_SHARED,
                      mmap.PROT_READ | mmap.PROT_WRITE)
        rings.append((fd, m))
    for fd, _ in rings:
        libc.ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)
    time.sleep(secs)
    for fd, _ in rings:
        libc.ioctl(fd, PERF_EVENT_IOC_DISABLE, 0)
    ips, lost = [], 0
    for _, m in rings:
        i, n = samples(m)
        ips += i
        lost += n
    addrs, names = kallsyms()
    by_sym: dict[str, int] = {}
    for ip in ips:
        k = bisect.bisect_right(addrs, ip) - 1
        name = names[k] if k >= 0 else f"{ip:#x}"
        by_sym[name] = by_sym.get(name, 0) + 1
    total = len(ips) or 1
    idle = sum(n for s, n in by_sym.items() if s.split()[0] in (
        "default_idle", "pv_native_safe_halt", "native_safe_halt", "acpi_safe_halt",
        "default_idle_call", "cpu_idle_poll", "mwait_idle", "intel_idle"))
    print(f"total {len(ips)} samples, idle {idle} ({100 * idle / total:.1f}%), lost {lost}")
    for name, n in sorted(by_sym.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{100 * n / total:5.1f}% {n:6d} {name}")
    mods: dict[str, int] = {}
    for name, n in by_sym.items():
        w = name.split()
        mod = w[1] if len(w) > 1 else "[kernel]"
        mods[mod] = mods.get(mod, 0) + n
    print("by module: " + " ".join(f"{m}={100 * n / total:.1f}%"
                                    for m, n in sorted(mods.items(), key=lambda kv: -kv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
