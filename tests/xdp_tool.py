#!/usr/bin/env python3
"""Guest tool of the XDP tests (tests/en_xdp.py): the guest tree has bpftool and iproute2 but no
BPF compiler, so the programs are written here as raw BPF instructions and loaded with the
bpf(2) syscall, then pinned in bpffs, where `ip link set dev IF xdpdrv pinned PATH` takes
them as a user would.

    xdp_tool.py load DIR              pins DIR/{pass,drop,aborted,tx,redirect} and their map
                                      DIR/count
    xdp_tool.py count DIR             prints "count N": frames the programs saw
    xdp_tool.py reflect IF MAC N      sends N frames of EtherType 0x88b5 from IF to MAC, one
                                      at a time, and prints "reflected K/N": the frames that
                                      came back within 2 s, MACs swapped, payload intact

Every program counts each frame in the map's one slot, then returns its verdict; `tx` sends
frames of EtherType 0x88b5 back with their MAC addresses swapped (XDP_TX) and passes the rest;
`redirect` sends every frame to CPU 0 through a CPU map (XDP_REDIRECT), whose kthread builds
the skbs the stack then receives.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import sys
import time

SYS_BPF = 321  # x86_64
BPF_MAP_CREATE, BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM = 0, 1, 2
BPF_PROG_LOAD, BPF_OBJ_PIN, BPF_OBJ_GET = 5, 6, 7
BPF_MAP_TYPE_ARRAY, BPF_MAP_TYPE_CPUMAP = 2, 16
BPF_FUNC_REDIRECT_MAP = 51
BPF_PROG_TYPE_XDP = 6
XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX = 0, 1, 2, 3
ETH_P_TEST = 0x88B5  # IEEE local experimental EtherType

libc = ctypes.CDLL(None, use_errno=True)


def bpf(cmd: int, attr: bytes) -> int:
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(SYS_BPF, cmd, buf, 128)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"bpf({cmd}): {os.strerror(e)}")
    return r


def insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, dst | (src << 4), off, imm)


def count_then(map_fd: int) -> list[bytes]:
    """Counts the frame in the map's slot 0 (r6 keeps the context)."""
    return [
        insn(0xBF, 6, 1),               # r6 = r1
        insn(0x62, 10, 0, -4, 0),       # *(u32 *)(r10 - 4) = 0
        insn(0xBF, 2, 10),              # r2 = r10
        insn(0x07, 2, 0, 0, -4),        # r2 += -4
        insn(0x18, 1, 1, 0, map_fd),    # r1 = map (ld_imm64, BPF_PSEUDO_MAP_FD)
        insn(0x00),
        insn(0x85, 0, 0, 0, 1),         # call bpf_map_lookup_elem
        insn(0x15, 0, 0, 2, 0),         # if r0 == 0 goto +2
        insn(0xB7, 1, 0, 0, 1),         # r1 = 1
        insn(0xDB, 0, 1, 0, 0),         # lock *(u64 *)(r0 + 0) += r1
    ]


def verdict(act: int) -> list[bytes]:
    return [insn(0xB7, 0, 0, 0, act), insn(0x95)]  # r0 = act; exit


def reflector() -> list[bytes]:
    """XDP_TX for EtherType 0x88b5 frames, their MACs swapped; XDP_PASS for the others."""
    return [
        insn(0x61, 2, 6, 0),            # r2 = ctx->data
        insn(0x61, 3, 6, 4),            # r3 = ctx->data_end
        insn(0xBF, 4, 2),               # r4 = r2
        insn(0x07, 4, 0, 0, 14),        # r4 += 14
        insn(0x2D, 4, 3, 12),           # if r4 > r3 goto pass
        insn(0x69, 5, 2, 12),           # r5 = *(u16 *)(r2 + 12)
        insn(0x55, 5, 0, 10, 0xB588),   # if r5 != htons(0x88b5) goto pass
        insn(0x61, 7, 2, 0),            # r7 = dst[0..4]
        insn(0x69, 8, 2, 4),            # r8 = dst[4..6]
        insn(0x61, 9, 2, 6),            # r9 = src[0..4]
        insn(0x69, 5, 2, 10),           # r5 = src[4..6]
        insn(0x63, 2, 9, 0),            # dst[0..4] = r9
        insn(0x6B, 2, 5, 4),            # dst[4..6] = r5
        insn(0x63, 2, 7, 6),            # src[0..4] = r7
        insn(0x6B, 2, 8, 10),           # src[4..6] = r8
        *verdict(XDP_TX),
        *verdict(XDP_PASS),             # pass:
    ]


def to_cpu(cpumap_fd: int) -> list[bytes]:
    """XDP_REDIRECT to CPU 0 of the CPU map (bpf_redirect_map(map, 0, 0))."""
    return [
        insn(0x18, 1, 1, 0, cpumap_fd),  # r1 = cpumap
        insn(0x00),
        insn(0xB7, 2, 0, 0, 0),         # r2 = 0 (CPU 0)
        insn(0xB7, 3, 0, 0, 0),         # r3 = 0 (XDP_ABORTED if CPU 0 is not in the map)
        insn(0x85, 0, 0, 0, BPF_FUNC_REDIRECT_MAP),
        insn(0x95),                     # exit (r0: XDP_REDIRECT)
    ]


def load(code: list[bytes], name: bytes) -> int:
    prog = b"".join(code)
    insns = ctypes.create_string_buffer(prog, len(prog))
    lic = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(65536)
    attr = struct.pack("<IIQQIIQII16s", BPF_PROG_TYPE_XDP, len(code), ctypes.addressof(insns),
                       ctypes.addressof(lic), 1, len(log), ctypes.addressof(log), 0, 0, name)
    try:
        return bpf(BPF_PROG_LOAD, attr)
    except OSError:
        print(log.value.decode(errors="replace"), file=sys.stderr)
        raise


def pin(fd: int, path: str) -> None:
    p = ctypes.create_string_buffer(path.encode())
    bpf(BPF_OBJ_PIN, struct.pack("<QII", ctypes.addressof(p), fd, 0))


def cmd_load(d: str) -> None:
    os.makedirs(d, exist_ok=True)
    m = bpf(BPF_MAP_CREATE, struct.pack("<IIIII", BPF_MAP_TYPE_ARRAY, 4, 8, 1, 0))
    pin(m, f"{d}/count")
    cpumap = bpf(BPF_MAP_CREATE, struct.pack("<IIIII", BPF_MAP_TYPE_CPUMAP, 4, 4, 1, 0))
    cpu, qsize = ctypes.c_uint32(0), ctypes.c_uint32(192)
    bpf(BPF_MAP_UPDATE_ELEM, struct.pack("<IIQQQ", cpumap, 0, ctypes.addressof(cpu),
                                         ctypes.addressof(qsize), 0))
    progs = {"pass": verdict(XDP_PASS), "drop": verdict(XDP_DROP),
             "aborted": verdict(XDP_ABORTED), "tx": reflector(), "redirect": to_cpu(cpumap)}
    for name, tail in progs.items():
        pin(load(count_then(m) + tail, b"xdp_" + name.encode()), f"{d}/{name}")
    print("loaded", " ".join(progs))


def cmd_count(d: str) -> None:
    p = ctypes.create_string_buffer(f"{d}/count".encode())
    m = bpf(BPF_OBJ_GET, struct.pack("<QII", ctypes.addressof(p), 0, 0))
    key = ctypes.c_uint32(0)
    val = ctypes.c_uint64(0)
    bpf(BPF_MAP_LOOKUP_ELEM, struct.pack("<IIQQQ", m, 0, ctypes.addressof(key),
                                         ctypes.addressof(val), 0))
    print(f"count {val.value}")


def cmd_reflect(ifname: str, peer: str, n: int) -> None:
    """One frame at a time, each waited for (2 s at most) before the next: a frame the
    reflector's driver left without a doorbell does not come back in time."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_TEST))
    s.bind((ifname, ETH_P_TEST))
    me = s.getsockname()[4]
    dst = bytes.fromhex(peer.replace(":", ""))
    back, worst = 0, 0.0
    for i in range(n):
        payload = f"cx4-xdp-reflect {i:04d} ".encode().ljust(64, b".")
        t0 = time.time()
        s.send(dst + me + struct.pack("!H", ETH_P_TEST) + payload)
        while time.time() < t0 + 2:
            s.settimeout(max(0.01, t0 + 2 - time.time()))
            try:
                frame, addr = s.recvfrom(2048)
            except socket.timeout:
                break
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            if frame[0:6] == me and frame[6:12] == dst and frame[14:14 + 64] == payload:
                back += 1
                worst = max(worst, time.time() - t0)
                break
    print(f"reflected {back}/{n}, slowest {worst * 1000:.0f} ms")


def main() -> None:
    a = sys.argv[1:]
    if a[:1] == ["load"] and len(a) == 2:
        cmd_load(a[1])
    elif a[:1] == ["count"] and len(a) == 2:
        cmd_count(a[1])
    elif a[:1] == ["reflect"] and len(a) == 4:
        cmd_reflect(a[1], a[2], int(a[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
