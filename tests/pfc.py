#!/usr/bin/env python3
"""802.1Qbb priority flow control on an interface, for the DCB tests (standard library only;
runs on the host side of a run's segment and in guests).

    pfc.py pause IF --prios 3,5 [--quanta 65535] [--seconds S] [--interval-ms MS] [--xon]
                 [--watch [--after S2] [--until P:N [--hold H]]]
        sends PFC XOFF frames for the priorities every MS ms for S seconds (then one XON
        with --xon), as a link partner whose buffers are full would; with --watch prints
        the test frames received meanwhile and for S2 seconds after, `frame t=T prio=P`,
        and `end t=T ...` when the pause stream stopped; with --until P:N [--hold H] the
        stream stops H seconds after the N-th frame of priority P (S is the longest)
    pfc.py send IF --prio P[,P2...] --count N [--ethertype 0x88b5] [--dst MAC]
        sends N priority-tagged (VLAN id 0, PCP P) frames of the test ethertype per priority
    pfc.py watch IF --seconds S [--ethertype 0x88b5] [--send-to MAC --prio P --count N]
        optionally sends like `send`, then listens for S seconds and prints one line per MAC
        control frame (`pfc t=SECONDS vector=0xVV quanta=q0,...,q7` or `pause t=.. quanta=Q`)
        and at the end `frames ethertype=0x88b5 count=N prios=P:N,...`; prints `listening`
        first, once the socket is open, so a caller can wait for it before sending
    pfc.py xoff IF --count N [--quanta Q]
        sends N 802.3x PAUSE frames (global pause, opcode 0x0001) and prints `sent N pause`
    pfc.py starve IF --ctl SOCK --send-to MAC --hold P --drop P2 [--count N] [--seconds S]
                 [--after S2]
        as the partner of a card whose driver falls behind: starts `rx-starve` on the card's
        model (control socket SOCK), sends N frames of priority P then N of P2, watches S
        seconds, ends the starvation (`rx-starve ms=0`) and watches S2 more; prints
        `starve on t=..`, `starve off t=..` and the MAC control frames as `watch` does. The
        starvation lasts as long as the steps take, however slow the machine
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
SOL_PACKET, PACKET_AUXDATA = 263, 8
TP_STATUS_VLAN_VALID = 0x10
PAUSE_DST = bytes.fromhex("0180c2000001")
MAC_CONTROL = 0x8808
OP_PAUSE, OP_PFC = 0x0001, 0x0101
VLAN = 0x8100


def mac_of(ifname: str) -> bytes:
    with open(f"/sys/class/net/{ifname}/address") as f:
        return bytes.fromhex(f.read().strip().replace(":", ""))


def open_sock(ifname: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    s.bind((ifname, 0))
    return s


def recv(s: socket.socket) -> tuple[bytes, tuple, int | None]:
    """A frame, its address and the VLAN TCI the stack took out of it (receive paths move
    the tag into the packet's metadata: PACKET_AUXDATA gives it back)."""
    f, anc, _flags, addr = s.recvmsg(65535, socket.CMSG_SPACE(20))
    tci = None
    for level, typ, data in anc:
        if level == SOL_PACKET and typ == PACKET_AUXDATA and len(data) >= 16:
            status, _len, _snap, _mac, _net, vtci = struct.unpack("=IIIHHH", data[:18])
            if status & TP_STATUS_VLAN_VALID:
                tci = vtci
    return f, addr, tci


def pfc_frame(src: bytes, prios: list[int], quanta: int) -> bytes:
    vector = 0
    q = [0] * 8
    for p in prios:
        vector |= 1 << p
        q[p] = quanta
    body = struct.pack("!HH8H", OP_PFC, vector, *q)
    f = PAUSE_DST + src + struct.pack("!H", MAC_CONTROL) + body
    return f + bytes(max(0, 60 - len(f)))


def pause_frame(src: bytes, quanta: int) -> bytes:
    f = PAUSE_DST + src + struct.pack("!HHH", MAC_CONTROL, OP_PAUSE, quanta)
    return f + bytes(max(0, 60 - len(f)))


def tagged_frame(dst: bytes, src: bytes, prio: int, ethertype: int, seq: int) -> bytes:
    tci = (prio & 7) << 13
    f = dst + src + struct.pack("!HHH", VLAN, tci, ethertype) + struct.pack("!I", seq)
    return f + bytes(max(0, 60 - len(f)))


def parse_mac(s: str) -> bytes:
    return bytes.fromhex(s.replace(":", ""))


def classify(f: bytes, ethertype: int, tci: int | None = None) -> int | None:
    """The PCP of a test frame (tagged: its PCP; untagged: 0), None for other frames."""
    etype = struct.unpack("!H", f[12:14])[0]
    prio = 0 if tci is None else tci >> 13
    if etype == VLAN and len(f) >= 18:
        prio = struct.unpack("!H", f[14:16])[0] >> 13
        etype = struct.unpack("!H", f[16:18])[0]
    return prio if etype == ethertype else None


def realtime() -> bool:
    """Runs this process under SCHED_FIFO if allowed: a partner that keeps a pause asserted
    must not be descheduled for longer than the pause lasts (VMs and models share the CPUs)."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        return True
    except (OSError, AttributeError):
        return False


def cmd_pause(a) -> None:
    rt = realtime()
    s = open_sock(a.ifname)
    s.setblocking(False)
    src = mac_of(a.ifname)
    prios = [int(p) for p in a.prios.split(",")]
    xoff = pfc_frame(src, prios, a.quanta)
    t0 = time.monotonic()
    end = t0 + a.seconds
    nxt, n, last, gap = t0, 0, None, 0.0
    # --until P:N: the pause ends --hold seconds after N frames of priority P were seen.
    until_prio, until_n = (int(x) for x in a.until.split(":")) if a.until else (None, 0)
    seen: dict[int, int] = {}
    # Refreshed well within the pause time (quanta x 512 bit times: 1.34 ms at 25 Gb/s), as
    # a partner whose buffers stay full does; the longest gap between two XOFFs is reported.
    while (now := time.monotonic()) < end:
        if now >= nxt:
            s.send(xoff)
            n += 1
            if last is not None:
                gap = max(gap, now - last)
            last = now
            nxt = now + a.interval_ms / 1000
        while a.watch:
            try:
                f, addr, tci = recv(s)
            except BlockingIOError:
                break
            if addr[2] != socket.PACKET_OUTGOING:
                prio = classify(f, a.ethertype, tci)
                if prio is not None:
                    print(f"frame t={now - t0:.4f} prio={prio}")
                    seen[prio] = seen.get(prio, 0) + 1
                    if prio == until_prio and seen[prio] == until_n:
                        end = min(end, now + a.hold)
        time.sleep(max(0.0, min(nxt, end) - time.monotonic()))
    if a.xon:
        s.send(pfc_frame(src, prios, 0))
    print(f"end t={time.monotonic() - t0:.4f} sent {n} xoff{' + xon' if a.xon else ''} "
          f"prios={a.prios} quanta={a.quanta} max_gap_us={gap * 1e6:.0f} rt={'yes' if rt else 'no'}")
    if a.watch:
        # What the partner sends once the pause is over.
        s.setblocking(True)
        s.settimeout(0.05)
        stop = time.monotonic() + a.after
        while time.monotonic() < stop:
            try:
                f, addr, tci = recv(s)
            except socket.timeout:
                continue
            if addr[2] != socket.PACKET_OUTGOING:
                prio = classify(f, a.ethertype, tci)
                if prio is not None:
                    print(f"frame t={time.monotonic() - t0:.4f} prio={prio}")


def send_frames(ifname: str, dst: bytes, prio: int, count: int, ethertype: int) -> None:
    s = open_sock(ifname)
    src = mac_of(ifname)
    for i in range(count):
        s.send(tagged_frame(dst, src, prio, ethertype, i))


def cmd_xoff(a) -> None:
    s = open_sock(a.ifname)
    src = mac_of(a.ifname)
    for _ in range(a.count):
        s.send(pause_frame(src, a.quanta))
    print(f"sent {a.count} pause")


def cmd_send(a) -> None:
    # One process for every priority: a guest's Python takes seconds to start under TCG.
    for prio in (int(p) for p in str(a.prio).split(",")):
        send_frames(a.ifname, parse_mac(a.dst), prio, a.count, a.ethertype)
        print(f"sent {a.count} frames prio={prio}")


def listen(s: socket.socket, t0: float, until: float, ethertype: int,
           seen: dict[int, int]) -> None:
    """Until `until` (monotonic), prints the MAC control frames received (`pfc t=..` /
    `pause t=..`, seconds since t0) and counts the test frames per priority into `seen`."""
    s.settimeout(0.05)
    while time.monotonic() < until:
        try:
            f, addr, tci = recv(s)
        except socket.timeout:
            continue
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        t = time.monotonic() - t0
        etype = struct.unpack("!H", f[12:14])[0]
        if etype == MAC_CONTROL and len(f) >= 18:
            op = struct.unpack("!H", f[14:16])[0]
            if op == OP_PFC and len(f) >= 34:
                vector, *q = struct.unpack("!H8H", f[16:34])
                print(f"pfc t={t:.3f} vector={vector:#04x} quanta={','.join(map(str, q))}",
                      flush=True)
            elif op == OP_PAUSE:
                print(f"pause t={t:.3f} quanta={struct.unpack('!H', f[16:18])[0]}", flush=True)
            continue
        prio = classify(f, ethertype, tci)
        if prio is not None:
            seen[prio] = seen.get(prio, 0) + 1


def print_frames(ethertype: int, seen: dict[int, int]) -> None:
    prios = ",".join(f"{p}:{n}" for p, n in sorted(seen.items()))
    print(f"frames ethertype={ethertype:#06x} count={sum(seen.values())} prios={prios}")


def cmd_watch(a) -> None:
    s = open_sock(a.ifname)
    print("listening", flush=True)
    t0 = time.monotonic()
    if a.send_to:
        send_frames(a.ifname, parse_mac(a.send_to), a.prio, a.count, a.ethertype)
    seen: dict[int, int] = {}
    listen(s, t0, t0 + a.seconds, a.ethertype, seen)
    print_frames(a.ethertype, seen)


def control(path: str, line: str) -> str:
    """One request on a model's control socket; its one-line answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.settimeout(10)
        c.connect(path)
        c.sendall((line + "\n").encode())
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = c.recv(4096)
            if not chunk:
                break
            reply += chunk
    return reply.decode(errors="replace").strip()


def cmd_starve(a) -> None:
    s = open_sock(a.ifname)
    dst = parse_mac(a.send_to)
    t0 = time.monotonic()
    seen: dict[int, int] = {}
    # Bounded by the model's own limit should this process die before it ends it.
    r = control(a.ctl, "rx-starve ms=60000")
    if r != "ok":
        raise SystemExit(f"rx-starve refused: {r}")
    print(f"starve on t={time.monotonic() - t0:.3f}", flush=True)
    try:
        send_frames(a.ifname, dst, a.hold, a.count, a.ethertype)
        send_frames(a.ifname, dst, a.drop, a.count, a.ethertype)
        print(f"sent {a.count} frames prio={a.hold} then {a.count} prio={a.drop}", flush=True)
        listen(s, t0, time.monotonic() + a.seconds, a.ethertype, seen)
    finally:
        r = control(a.ctl, "rx-starve ms=0")
        print(f"starve off t={time.monotonic() - t0:.3f} {r}", flush=True)
    listen(s, t0, time.monotonic() + a.after, a.ethertype, seen)
    print_frames(a.ethertype, seen)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pa = sub.add_parser("pause")
    pa.add_argument("ifname")
    pa.add_argument("--prios", required=True)
    pa.add_argument("--quanta", type=int, default=0xFFFF)
    pa.add_argument("--seconds", type=float, default=3.0)
    pa.add_argument("--interval-ms", type=float, default=0.3)
    pa.add_argument("--xon", action="store_true")
    pa.add_argument("--watch", action="store_true",
                    help="print the test frames the partner sends (`frame t=T prio=P`)")
    pa.add_argument("--until", help="with --watch, P:N: stop --hold seconds after the N-th "
                    "frame of priority P (--seconds is then the longest)")
    pa.add_argument("--hold", type=float, default=2.0)
    pa.add_argument("--after", type=float, default=2.0,
                    help="with --watch: seconds to keep watching after the pause")
    pa.add_argument("--ethertype", type=lambda x: int(x, 0), default=0x88B5)
    ps = sub.add_parser("send")
    ps.add_argument("ifname")
    ps.add_argument("--prio", required=True, help="a priority, or several (5,3): in turn")
    ps.add_argument("--count", type=int, default=20)
    ps.add_argument("--ethertype", type=lambda x: int(x, 0), default=0x88B5)
    ps.add_argument("--dst", default="ff:ff:ff:ff:ff:ff")
    pw = sub.add_parser("watch")
    pw.add_argument("ifname")
    pw.add_argument("--seconds", type=float, default=3.0)
    pw.add_argument("--ethertype", type=lambda x: int(x, 0), default=0x88B5)
    pw.add_argument("--send-to")
    pw.add_argument("--prio", type=int, default=0)
    pw.add_argument("--count", type=int, default=0)
    px = sub.add_parser("xoff")
    px.add_argument("ifname")
    px.add_argument("--count", type=int, default=5)
    px.add_argument("--quanta", type=int, default=1)
    pv = sub.add_parser("starve")
    pv.add_argument("ifname")
    pv.add_argument("--ctl", required=True, help="the model's control socket")
    pv.add_argument("--send-to", required=True)
    pv.add_argument("--hold", type=int, required=True, help="a lossless priority (PFC on)")
    pv.add_argument("--drop", type=int, required=True, help="a priority with PFC off")
    pv.add_argument("--count", type=int, default=20)
    pv.add_argument("--seconds", type=float, default=2.0)
    pv.add_argument("--after", type=float, default=2.0)
    pv.add_argument("--ethertype", type=lambda x: int(x, 0), default=0x88B5)
    a = p.parse_args()
    {"pause": cmd_pause, "send": cmd_send, "watch": cmd_watch, "starve": cmd_starve,
     "xoff": cmd_xoff}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
