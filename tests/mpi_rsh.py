#!/usr/bin/env python3
"""A stand-in for ssh between the test VMs (which have no ssh), for Open MPI's launcher:
PRRTE starts its daemons (prted) on the other hosts through `plm_ssh_agent`, calling it as
`AGENT HOST COMMAND...`, like ssh.

    mpi_rsh.py --serve [--port N]     run on every VM: executes what clients send
    mpi_rsh.py HOST COMMAND...        run COMMAND with `sh -c` on HOST (as ssh joins its
                                      arguments with spaces) and relay its stdout, stderr
                                      and exit status

The client sends one JSON line {"cmd": ...}; the server answers with frames (1 byte: 1
stdout, 2 stderr, 3 exit status; 4 bytes big-endian length; data). If the client goes away
the command's process group is killed, as sshd does when the connection drops. Standard
library only.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading

PORT = 7777


def frame(kind: int, data: bytes) -> bytes:
    return struct.pack(">BI", kind, len(data)) + data


def serve_one(conn: socket.socket) -> None:
    lock = threading.Lock()

    def send(kind: int, data: bytes) -> None:
        with lock:
            try:
                conn.sendall(frame(kind, data))
            except OSError:
                pass

    f = conn.makefile("rb")
    req = json.loads(f.readline())
    p = subprocess.Popen(["sh", "-c", req["cmd"]], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)

    def pump(stream, kind: int) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):
            send(kind, chunk)

    def watch() -> None:
        # The client closing its end (it was killed, or mpirun is done) ends the command.
        try:
            while conn.recv(1):
                pass
        except OSError:
            pass
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    pumps = [threading.Thread(target=pump, args=(p.stdout, 1), daemon=True),
             threading.Thread(target=pump, args=(p.stderr, 2), daemon=True)]
    for t in pumps:
        t.start()
    threading.Thread(target=watch, daemon=True).start()
    rc = p.wait()
    for t in pumps:
        t.join()
    send(3, str(rc if rc >= 0 else 128 - rc).encode())
    conn.close()


def serve(port: int) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(16)
    print(f"mpi_rsh: serving on port {port}", flush=True)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve_one, args=(conn,), daemon=True).start()


def client(host: str, cmd: str, port: int) -> int:
    s = socket.create_connection((host, port), timeout=30)
    s.settimeout(None)
    s.sendall((json.dumps({"cmd": cmd}) + "\n").encode())
    f = s.makefile("rb")
    out = {1: sys.stdout.buffer, 2: sys.stderr.buffer}
    while True:
        head = f.read(5)
        if len(head) < 5:
            return 255                      # the connection dropped: as ssh does
        kind, n = struct.unpack(">BI", head)
        data = f.read(n)
        if kind == 3:
            return int(data)
        out[kind].write(data)
        out[kind].flush()


def main(argv: list[str]) -> int:
    port = int(os.environ.get("MPI_RSH_PORT", PORT))
    if argv[:1] == ["--serve"]:
        serve(port)
        return 0
    # ssh-style options an agent may be given (-x, -T, ...) are ignored.
    while argv and argv[0].startswith("-"):
        argv = argv[1:]
    if len(argv) < 2:
        print("usage: mpi_rsh.py --serve | HOST COMMAND...", file=sys.stderr)
        return 2
    return client(argv[0], " ".join(argv[1:]), port)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
