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

    xdp_tool.py xsk IF Q PEERMAC N DIR CTL
                                      AF_XDP in zero-copy mode on queue Q of IF: pins and
                                      attaches DIR/xsk (frames of EtherType 0x88b5 to the
                                      socket through an XSKMAP, the rest passed), waits for
                                      the carrier ("attached") and for the file CTL.bind,
                                      binds with XDP_ZEROCOPY ("napi_id N": the socket's
                                      SO_INCOMING_NAPI_ID), prints "ready", receives N frames
                                      from the peer ("xsk rx K/N"), sends N to PEERMAC ("xsk tx
                                      K/N" completed), prints "xsk done"; then, each time the
                                      file CTL.send appears (it is removed), sends N more
                                      ("xsk again K/N" completed), until the file CTL.close
                                      exists: closes the socket ("closed")
    xdp_tool.py xsk-bind IF Q         binds a zero-copy AF_XDP socket to queue Q: "bound" or
                                      "bind failed: errno E"
    xdp_tool.py xsk-peer IF MAC N     sends N numbered frames to MAC, then receives the N the
                                      XSK side sends back: "peer rx K/N"
    xdp_tool.py xsk-listen IF MAC N   receives (60 s at most) the N frames the XSK side sends
                                      again: "peer again K/N"
    xdp_tool.py blast IF MAC SECS     sends frames to MAC for SECS seconds: "blasted N"

Every program counts each frame in the map's one slot, then returns its verdict; `tx` sends
frames of EtherType 0x88b5 back with their MAC addresses swapped (XDP_TX) and passes the rest;
`redirect` sends every frame to CPU 0 through a CPU map (XDP_REDIRECT), whose kthread builds
the skbs the stack then receives.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import re
import socket
import struct
import sys
import time

SYS_BPF = 321  # x86_64
BPF_MAP_CREATE, BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM = 0, 1, 2
BPF_PROG_LOAD, BPF_OBJ_PIN, BPF_OBJ_GET = 5, 6, 7
BPF_MAP_TYPE_ARRAY, BPF_MAP_TYPE_CPUMAP, BPF_MAP_TYPE_XSKMAP = 2, 16, 17
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


def unless_test_frame(skip: int) -> list[bytes]:
    """Jumps `skip` instructions past its end unless the frame (r6: the context) is of
    EtherType 0x88b5; leaves r2 = ctx->data."""
    return [
        insn(0x61, 2, 6, 0),            # r2 = ctx->data
        insn(0x61, 3, 6, 4),            # r3 = ctx->data_end
        insn(0xBF, 4, 2),               # r4 = r2
        insn(0x07, 4, 0, 0, 14),        # r4 += 14
        insn(0x2D, 4, 3, skip + 2),     # if r4 > r3 goto +skip after the check
        insn(0x69, 5, 2, 12),           # r5 = *(u16 *)(r2 + 12)
        insn(0x55, 5, 0, skip, 0xB588),  # if r5 != htons(0x88b5) goto +skip after it
    ]


def reflector() -> list[bytes]:
    """XDP_TX for EtherType 0x88b5 frames, their MACs swapped; XDP_PASS for the others."""
    return [
        *unless_test_frame(10),         # else goto pass
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


def test_socket(ifname: str, peer: str) -> tuple[socket.socket, bytes, bytes]:
    """A packet socket for EtherType 0x88b5 frames on `ifname`, its MAC and the peer's."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_TEST))
    s.bind((ifname, ETH_P_TEST))
    return s, s.getsockname()[4], bytes.fromhex(peer.replace(":", ""))


def next_frame(s: socket.socket, deadline: float) -> bytes | None:
    """The next frame `s` receives (not one it sent) before `deadline`; None after it."""
    while True:
        s.settimeout(max(0.01, deadline - time.time()))
        try:
            frame, addr = s.recvfrom(2048)
        except socket.timeout:
            return None
        if addr[2] != socket.PACKET_OUTGOING:
            return frame


def cmd_reflect(ifname: str, peer: str, n: int) -> None:
    """One frame at a time, each waited for (2 s at most) before the next: a frame the
    reflector's driver left without a doorbell does not come back in time."""
    s, me, dst = test_socket(ifname, peer)
    back, worst = 0, 0.0
    for i in range(n):
        payload = f"cx4-xdp-reflect {i:04d} ".encode().ljust(64, b".")
        t0 = time.time()
        s.send(dst + me + struct.pack("!H", ETH_P_TEST) + payload)
        while time.time() < t0 + 2:
            frame = next_frame(s, t0 + 2)
            if frame is None:
                break
            if frame[0:6] == me and frame[6:12] == dst and frame[14:14 + 64] == payload:
                back += 1
                worst = max(worst, time.time() - t0)
                break
    print(f"reflected {back}/{n}, slowest {worst * 1000:.0f} ms")


# AF_XDP (include/uapi/linux/if_xdp.h).
AF_XDP, SOL_XDP = 44, 283
XDP_MMAP_OFFSETS, XDP_RX_RING, XDP_TX_RING = 1, 2, 3
XDP_UMEM_REG, XDP_UMEM_FILL_RING, XDP_UMEM_COMPLETION_RING = 4, 5, 6
XDP_ZEROCOPY = 1 << 2
SO_INCOMING_NAPI_ID = 56
PGOFF_RX, PGOFF_TX, PGOFF_FILL, PGOFF_COMP = 0, 0x80000000, 0x100000000, 0x180000000
FRAMES, CHUNK, RING = 1024, 2048, 512


def xsk_redirect(map_fd: int, xskmap_fd: int) -> list[bytes]:
    """Counts, then frames of EtherType 0x88b5 to the socket of their RX queue
    (bpf_redirect_map(xskmap, ctx->rx_queue_index, XDP_PASS)); the rest XDP_PASS."""
    return count_then(map_fd) + [
        *unless_test_frame(6),          # else goto pass
        insn(0x18, 1, 1, 0, xskmap_fd),  # r1 = xskmap
        insn(0x00),
        insn(0x61, 2, 6, 16),           # r2 = ctx->rx_queue_index
        insn(0xB7, 3, 0, 0, XDP_PASS),  # r3 = XDP_PASS (no socket on the queue)
        insn(0x85, 0, 0, 0, BPF_FUNC_REDIRECT_MAP),
        insn(0x95),
        *verdict(XDP_PASS),             # pass:
    ]


def check(r: int, what: str) -> int:
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")
    return r


def xsk_socket(ifname: str, queue: int, umem: mmap.mmap) -> tuple[int, dict]:
    """A zero-copy AF_XDP socket on `queue` over `umem` with its four rings mapped."""
    fd = check(libc.socket(AF_XDP, socket.SOCK_RAW, 0), "socket(AF_XDP)")
    addr = ctypes.addressof(ctypes.c_char.from_buffer(umem))
    reg = struct.pack("<QQIIII", addr, len(umem), CHUNK, 0, 0, 0)
    check(libc.setsockopt(fd, SOL_XDP, XDP_UMEM_REG, reg, len(reg)), "XDP_UMEM_REG")
    for opt in (XDP_UMEM_FILL_RING, XDP_UMEM_COMPLETION_RING, XDP_RX_RING, XDP_TX_RING):
        n = ctypes.c_int(RING)
        check(libc.setsockopt(fd, SOL_XDP, opt, ctypes.byref(n), 4), f"ring {opt}")
    off = ctypes.create_string_buffer(128)
    ol = ctypes.c_uint32(128)
    check(libc.getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, off, ctypes.byref(ol)), "offsets")
    rings = {}
    for i, (name, pgoff, esz) in enumerate([("rx", PGOFF_RX, 16), ("tx", PGOFF_TX, 16),
                                            ("fill", PGOFF_FILL, 8), ("comp", PGOFF_COMP, 8)]):
        prod, cons, desc, _flags = struct.unpack_from("<QQQQ", off.raw, 32 * i)
        m = mmap.mmap(fd, desc + RING * esz, mmap.MAP_SHARED,
                      mmap.PROT_READ | mmap.PROT_WRITE, offset=pgoff)
        rings[name] = (m, prod, cons, desc, esz)
    return fd, rings


def xsk_bind(fd: int, ifname: str, queue: int) -> None:
    sxdp = struct.pack("<HHIII", AF_XDP, XDP_ZEROCOPY, socket.if_nametoindex(ifname), queue, 0)
    check(libc.bind(fd, sxdp, len(sxdp)), f"bind queue {queue}")


def ring_get(r, field: int) -> int:
    return struct.unpack_from("<I", r[0], field)[0]


def ring_set(r, field: int, v: int) -> None:
    struct.pack_into("<I", r[0], field, v & 0xFFFFFFFF)


def test_frame(dst: bytes, src: bytes, tag: str, i: int) -> bytes:
    return dst + src + struct.pack("!H", ETH_P_TEST) + f"cx4-xsk-{tag} {i:04d} ".encode().ljust(64, b"x")


def wait_file(path: str, secs: float) -> bool:
    t_end = time.time() + secs
    while not os.path.exists(path) and time.time() < t_end:
        time.sleep(0.05)
    return os.path.exists(path)


def xsk_send(fd: int, umem: mmap.mmap, tx, comp, base: int, n: int, dst: bytes, src: bytes,
             tag: str) -> int:
    """Queues N frames to `dst` on the TX ring (from producer `base`), kicks the driver until
    their completions are back (30 s at most); returns how many came back."""
    for i in range(n):
        addr = (RING + i) * CHUNK
        f = test_frame(dst, src, tag, i)
        umem[addr:addr + len(f)] = f
        struct.pack_into("<QII", tx[0], tx[3] + 16 * ((base + i) % RING), addr, len(f), 0)
    ring_set(tx, tx[1], base + n)
    done, t_end = 0, time.time() + 30
    while done < n and time.time() < t_end:
        libc.sendto(fd, None, 0, socket.MSG_DONTWAIT, None, 0)
        prod, cons = ring_get(comp, comp[1]), ring_get(comp, comp[2])
        done += (prod - cons) & 0xFFFFFFFF
        ring_set(comp, comp[2], prod)
        time.sleep(0.02)
    return done


def cmd_xsk(ifname: str, queue: int, peer: str, n: int, d: str, ctl: str) -> None:
    import subprocess
    os.makedirs(d, exist_ok=True)
    m = bpf(BPF_MAP_CREATE, struct.pack("<IIIII", BPF_MAP_TYPE_ARRAY, 4, 8, 1, 0))
    xskmap = bpf(BPF_MAP_CREATE, struct.pack("<IIIII", BPF_MAP_TYPE_XSKMAP, 4, 4, 64, 0))
    pin(load(xsk_redirect(m, xskmap), b"xdp_xsk"), f"{d}/xsk")
    subprocess.run(["ip", "-force", "link", "set", "dev", ifname, "xdpdrv", "pinned",
                    f"{d}/xsk"], check=True)
    # The first program may have reopened the channels: the bind is measured from a link
    # that is up again.
    t_end = time.time() + 30
    while time.time() < t_end:
        with open(f"/sys/class/net/{ifname}/carrier") as c:
            if c.read().strip() == "1":
                break
        time.sleep(0.1)
    print("attached", flush=True)
    wait_file(ctl + ".bind", 120)
    umem = mmap.mmap(-1, FRAMES * CHUNK, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    fd, rings = xsk_socket(ifname, queue, umem)
    xsk_bind(fd, ifname, queue)
    napi = ctypes.c_uint32(0)
    nl = ctypes.c_uint32(4)
    check(libc.getsockopt(fd, socket.SOL_SOCKET, SO_INCOMING_NAPI_ID, ctypes.byref(napi),
                          ctypes.byref(nl)), "SO_INCOMING_NAPI_ID")
    print(f"napi_id {napi.value}", flush=True)
    key, val = ctypes.c_uint32(queue), ctypes.c_uint32(fd)
    bpf(BPF_MAP_UPDATE_ELEM, struct.pack("<IIQQQ", xskmap, 0, ctypes.addressof(key),
                                         ctypes.addressof(val), 0))
    fill, rx, tx, comp = rings["fill"], rings["rx"], rings["tx"], rings["comp"]
    # The fill ring gets the first half of the frames; the second half is for sending.
    for i in range(RING):
        struct.pack_into("<Q", fill[0], fill[3] + 8 * i, i * CHUNK)
    ring_set(fill, fill[1], RING)
    print("ready", flush=True)
    seen, bad, fprod = set(), 0, RING
    me = peer_mac = bytes.fromhex(peer.replace(":", ""))
    t_end = time.time() + 60
    while len(seen) < n and time.time() < t_end:
        prod, cons = ring_get(rx, rx[1]), ring_get(rx, rx[2])
        if prod == cons:
            time.sleep(0.01)
            continue
        while cons != prod:
            addr, ln, _ = struct.unpack_from("<QII", rx[0], rx[3] + 16 * (cons % RING))
            frame = umem[addr:addr + ln]
            mm = re.match(rb"cx4-xsk-peer (\d{4}) x+$", frame[14:14 + 64])
            if frame[12:14] == b"\x88\xb5" and frame[6:12] == peer_mac and mm:
                seen.add(int(mm.group(1)))
                me = frame[0:6]
            else:
                bad += 1
            # The buffer goes back to the fill ring.
            struct.pack_into("<Q", fill[0], fill[3] + 8 * (fprod % RING), addr - addr % CHUNK)
            fprod += 1
            cons += 1
        ring_set(rx, rx[2], cons)
        ring_set(fill, fill[1], fprod)
    print(f"xsk rx {len(seen)}/{n}, bad {bad}", flush=True)
    done = xsk_send(fd, umem, tx, comp, 0, n, peer_mac, me, "side")
    print(f"xsk tx {done}/{n}", flush=True)
    print("xsk done", flush=True)
    base, t_end = n, time.time() + 300
    while not os.path.exists(ctl + ".close") and time.time() < t_end:
        if os.path.exists(ctl + ".send"):
            os.unlink(ctl + ".send")
            done = xsk_send(fd, umem, tx, comp, base, n, peer_mac, me, "again")
            base += n
            print(f"xsk again {done}/{n}", flush=True)
        time.sleep(0.05)
    for r in rings.values():
        r[0].close()
    os.close(fd)
    print("closed", flush=True)


def cmd_xsk_bind(ifname: str, queue: int) -> None:
    umem = mmap.mmap(-1, FRAMES * CHUNK, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    fd, rings = xsk_socket(ifname, queue, umem)
    try:
        xsk_bind(fd, ifname, queue)
        print("bound")
    except OSError as e:
        print(f"bind failed: errno {e.errno}")
    for r in rings.values():
        r[0].close()
    os.close(fd)


def numbered_frames(s, me: bytes, dst: bytes, tag: bytes, n: int) -> set[int]:
    """The numbers of up to `n` frames "TAG NNNN xxx..." from `dst` to `me` that arrive on
    socket `s` within 60 s."""
    seen, t_end = set(), time.time() + 60
    while len(seen) < n:
        frame = next_frame(s, t_end)
        if frame is None:
            break
        mm = re.match(re.escape(tag) + rb" (\d{4}) x+$", frame[14:14 + 64])
        if frame[0:6] == me and frame[6:12] == dst and mm:
            seen.add(int(mm.group(1)))
    return seen


def cmd_xsk_peer(ifname: str, mac: str, n: int) -> None:
    s, me, dst = test_socket(ifname, mac)
    for i in range(n):
        s.send(test_frame(dst, me, "peer", i))
        time.sleep(0.01)
    print(f"peer rx {len(numbered_frames(s, me, dst, b'cx4-xsk-side', n))}/{n}")


def cmd_xsk_listen(ifname: str, mac: str, n: int) -> None:
    s, me, dst = test_socket(ifname, mac)
    print("listening", flush=True)
    print(f"peer again {len(numbered_frames(s, me, dst, b'cx4-xsk-again', n))}/{n}")


def cmd_blast(ifname: str, mac: str, secs: float) -> None:
    s, me, dst = test_socket(ifname, mac)
    sent, t_end = 0, time.time() + secs
    while time.time() < t_end:
        s.send(test_frame(dst, me, "peer", sent % 10000))
        sent += 1
        time.sleep(0.001)
    print(f"blasted {sent}")


def main() -> None:
    a = sys.argv[1:]
    if a[:1] == ["load"] and len(a) == 2:
        cmd_load(a[1])
    elif a[:1] == ["count"] and len(a) == 2:
        cmd_count(a[1])
    elif a[:1] == ["reflect"] and len(a) == 4:
        cmd_reflect(a[1], a[2], int(a[3]))
    elif a[:1] == ["xsk"] and len(a) == 7:
        cmd_xsk(a[1], int(a[2]), a[3], int(a[4]), a[5], a[6])
    elif a[:1] == ["xsk-bind"] and len(a) == 3:
        cmd_xsk_bind(a[1], int(a[2]))
    elif a[:1] == ["xsk-peer"] and len(a) == 4:
        cmd_xsk_peer(a[1], a[2], int(a[3]))
    elif a[:1] == ["xsk-listen"] and len(a) == 4:
        cmd_xsk_listen(a[1], a[2], int(a[3]))
    elif a[:1] == ["blast"] and len(a) == 4:
        cmd_blast(a[1], a[2], float(a[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
