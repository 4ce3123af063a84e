"""The erasure-coding user path: tools/cx4ec (libcx4ec and its CLI) posts vector-calc WQEs
through the guest's unmodified rdma-core 56.1 (mlx5dv_create_qp with raw WQEs,
mlx5dv_wr_raw_wqe on a self-connected RC QP) to the modelled card, and its code and recovered
blocks are compared with the host reference (tools/ec-ref: GF-Complete/Jerasure for w = 4,
ISA-L for w = 8). The same program, cases and checks run over two kernel drivers: upstream
mlx5_ib and cx4 (its user CQs, QPs and MRs with the mlx5 user ABI; the WQEs go from the
process's send queue to the card without passing through either driver), each on the
ConnectX-4 profile (GF(2^4), 8-bit matrices refused) and on the model's `--ec-8bit` one, one
VM boot per driver and profile."""

from __future__ import annotations

import functools
import hashlib
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from en import CX4_UP, cx4_errors
from harness import Env, check_clean_dmesg, describe, estimate
from ib import CX4_IB, check_objects_paired
from model_core import mlx5_errors
from model_eth import eth_vms, section
from model_roce import GIDX as ROCE_GIDX
from model_roce import IB

BUILD = "target/cx4ec"

# The RoCE v2 GID index of the VM's IPv4 address in $GIDX, and the CLI where it can run.
GIDX = ROCE_GIDX + r"""
    cp /cx4/cx4ec /tmp/cx4ec && chmod +x /tmp/cx4ec
"""


@dataclass
class Case:
    name: str
    w: int
    k: int
    m: int
    kind: str             # ec_ref's matrix kind: vand, cauchy, random:SEED
    block: int
    erasures: list[list[int]]  # each a decode after erasing these blocks


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def prepare(env: Env, cases: list[Case], tmp: Path) -> tuple[list[Path], dict, str]:
    """Random data and the reference's matrix and code blocks for each case, as files for the
    share; the expected hashes; the guest script that runs the CLI on them."""
    ref = env.root / BUILD / "ec_ref"
    files, expect, script = [], {}, ""
    for c in cases:
        rng = random.Random(f"{c.name}-{c.k}-{c.m}-{c.block}")
        data = [rng.randbytes(c.block) for _ in range(c.k)]
        r = subprocess.run([str(ref), "encode", str(c.w), str(c.k), str(c.m), c.kind, str(c.block)],
                           input=b"".join(data), capture_output=True)
        assert r.returncode == 0, f"ec_ref encode {c}: {r.stderr.decode()}"
        mat, rest = r.stdout[:c.k * c.m], r.stdout[c.k * c.m:]
        codes = [rest[j * c.block:(j + 1) * c.block] for j in range(c.m)]
        assert len(codes[-1]) == c.block, f"ec_ref gave {len(rest)} code bytes"
        blocks = data + codes
        for i, d in enumerate(data):
            (tmp / f"{c.name}.d{i}").write_bytes(d)
            files.append(tmp / f"{c.name}.d{i}")
        (tmp / f"{c.name}.mat").write_bytes(mat)
        files.append(tmp / f"{c.name}.mat")
        opts = f"-d $IBDEV -g $GIDX -k {c.k} -m {c.m} --block-size {c.block} --w {c.w} " \
               f"--matrix /cx4/{c.name}.mat"
        ins = " ".join(f"/cx4/{c.name}.d{i}" for i in range(c.k))
        outs = " ".join(f"/tmp/{c.name}.c{j}" for j in range(c.m))
        script += f"""
            section enc-{c.name}
            /tmp/cx4ec encode {opts} {ins} {outs} 2>&1 || echo "exit=$?"
            sha256sum {outs}
        """
        expect[f"enc-{c.name}"] = {f"/tmp/{c.name}.c{j}": sha(codes[j]) for j in range(c.m)}
        for n, er in enumerate(c.erasures):
            # The survivors are copies of the data files and of the CLI's code blocks; the
            # erased ones are garbage the decode must overwrite.
            bs = [f"/tmp/{c.name}.x{n}.b{i}" for i in range(c.k + c.m)]
            setup = "".join(
                f"head -c {c.block} /dev/urandom > {b}\n" if i in er else
                f"cp {'/cx4/%s.d%d' % (c.name, i) if i < c.k else '/tmp/%s.c%d' % (c.name, i - c.k)} {b}\n"
                for i, b in enumerate(bs))
            erased = ",".join(map(str, er))
            script += f"""
            section dec-{c.name}-{n}
            {setup}
            /tmp/cx4ec decode {opts} --erased {erased} {' '.join(bs)} 2>&1 || echo "exit=$?"
            sha256sum {' '.join(bs[i] for i in er)}
            rm -f {' '.join(bs)}
            """
            expect[f"dec-{c.name}-{n}"] = {bs[i]: sha(blocks[i]) for i in er}
    return files, expect, script


def check_outputs(log: str, expect: dict) -> int:
    """Each section's hashes equal the reference's; returns the calculations done."""
    calcs = 0
    for sec, want in expect.items():
        s = section(log, sec)
        assert "exit=" not in s, f"{sec}: the CLI failed:\n{s}"
        got = {p: h for h, p in re.findall(r"^([0-9a-f]{64})\s+(\S+)$", s, re.M)}
        for path, h in want.items():
            assert got.get(path) == h, \
                f"{sec}: {path} differs from the reference (sha256 {got.get(path)} != {h}):\n{s}"
        m = re.search(r": (\d+) calculation\(s\)", s)
        assert m and m.group(1) == "1", f"{sec}: not one calculation on the card:\n{s}"
        for line in re.findall(r"^(?:encode|decode): .*$", s, re.M):
            print(f"{sec}: {line}", file=sys.stderr)
        calcs += 1
    return calcs


def ec_stats(text: str) -> tuple[int, int]:
    m = re.search(r"ec: (\d+) calcs \d+ bytes (\d+) errors", text)
    assert m, f"no ec: counters in the model's roce line:\n{text}"
    print(f"model: {m.group(0)}", file=sys.stderr)
    return int(m.group(1)), int(m.group(2))


@dataclass
class Driver:
    """A kernel driver of the card's RDMA device: guest helpers, the bring-up (the device as
    $IBDEV, the netdev as $IF), the unload, the dmesg lines that are its errors, and whether
    it counts the card's commands (cx4's debugfs `commands`)."""
    helpers: str
    up: str
    down: str
    errors: Callable[[str], list[str]]
    counts_commands: bool


DRIVERS = {
    "mlx5_ib": Driver(helpers=IB, up="eth_up\nib_up\n",
                      down="rmmod mlx5_ib; rmmod mlx5_core\n", errors=mlx5_errors,
                      counts_commands=False),
    "cx4": Driver(helpers=CX4_UP + IB + CX4_IB, up="cx4_up\ncx4_ib_up\n",
                  down='ip link set "$IF" down; rmmod cx4\n', errors=cx4_errors,
                  counts_commands=True),
}


def run_cases(env: Env, driver: str, cases: list[Case], model_args: list[str],
              extra: str) -> tuple:
    """Boots one VM with `driver` over the model (`--roce` + `model_args`), runs `extra` and
    the cases, unloads the driver; checks every block against the reference, a clean dmesg
    and, on cx4, that every CQ, QP and MR the processes made reached the card and was
    destroyed again (the re-created ones after a refusal too), with no command failing.
    Returns the VM's result and the calculations the cases did."""
    d = DRIVERS[driver]
    for t in (env.root / BUILD / "cx4ec", env.root / BUILD / "ec_ref"):
        assert t.exists(), f"{t} missing: the set-up builds it (make -C tools/cx4ec)"
    tmp = Path(tempfile.mkdtemp(prefix="cx4ec-", dir=env.root / BUILD))
    cmds = lambda sec: f"section {sec}; cmds\n" if d.counts_commands else ""
    try:
        files, expect, script = prepare(env, cases, tmp)
        vm0 = d.helpers + d.up + GIDX + cmds("cmds-before") + extra + script + \
            cmds("cmds-after") + "section roce; req ctl roce\n" + d.down + "echo unloaded\n"
        files = [env.root / BUILD / "cx4ec"] + files + ([env.ko] if driver == "cx4" else [])
        r = eth_vms(env, [vm0], timeout=900, model_args=["--roce"] + model_args,
                    files=files)[0]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert r.status == 0 and "unloaded" in r.job_log, describe(r)
    calcs = check_outputs(r.job_log, expect)
    if d.counts_commands:
        # One process (context, PD, MR, CQ, QP) per calculation at least.
        check_objects_paired(r.job_log, calcs)
    errs = d.errors(r.dmesg)
    assert not errs, "\n".join(errs)
    check_clean_dmesg(r.dmesg)
    return r, calcs


def tests(env: Env):
    def user_path_w4(driver: str):
        """ConnectX-4 profile (GF(2^4)): cx4ec encodes random data with Jerasure's
        Vandermonde and Cauchy and random matrices (k up to 16, m 1 to 4, m = 3 with the
        engine's fourth output, blocks of 1 KiB to 1 MiB) and decodes after erasing 1 to m
        blocks; every code and recovered block equals GF-Complete's. `probe` finds w = 4
        computed right and w = 8 refused, with w = 4 working again after the refusal; an
        encode with --w 8 fails with the card's refusal; k = 17, a block size that is not a
        multiple of 64, a short input file and more erasures than m are usage errors that never
        reach the card. Without -g the library picks the RoCE v2 GID of the IPv4 address. The
        refused calculation's QP is re-created by the library, so the same process goes on."""
        cases = [
            Case("a", 4, 4, 2, "vand", 4096, [[1], [0, 5]]),
            Case("b", 4, 10, 4, "cauchy", 65536, [[2, 7, 11, 13]]),
            Case("c", 4, 6, 3, "vand", 16384, [[0, 4, 7]]),
            Case("d", 4, 16, 1, "random:7", 1024, []),
            Case("e", 4, 4, 2, "cauchy", 1 << 20, [[3, 4]]),
        ]
        # probe without -g: the library picks the RoCE v2 GID of the IPv4 address itself.
        extra = """
            section probe; echo "GIDX=$GIDX"; /tmp/cx4ec probe -d $IBDEV 2>&1 || echo "exit=$?"
            section w8-refused
            head -c 4096 /dev/urandom > /tmp/w8.d0
            /tmp/cx4ec encode -d $IBDEV -g $GIDX -k 1 -m 1 --block-size 4096 --w 8 /tmp/w8.d0 /tmp/w8.c0 2>&1 || echo "exit=$?"
            section bad-k
            /tmp/cx4ec encode -d $IBDEV -k 17 -m 2 --block-size 4096 /tmp/w8.d0 /tmp/o 2>&1 || echo "exit=$?"
            section bad-block
            /tmp/cx4ec encode -d $IBDEV -k 1 -m 1 --block-size 100 /tmp/w8.d0 /tmp/o 2>&1 || echo "exit=$?"
            section short-file
            /tmp/cx4ec encode -d $IBDEV -k 1 -m 1 --block-size 8192 /tmp/w8.d0 /tmp/o 2>&1 || echo "exit=$?"
            section bad-erasures
            /tmp/cx4ec decode -d $IBDEV -k 1 -m 1 --block-size 4096 --erased 0,1 /tmp/w8.d0 /tmp/o 2>&1 || echo "exit=$?"
        """
        r, calcs = run_cases(env, driver, cases, [], extra)
        log = r.job_log
        probe = section(log, "probe")
        print(probe.strip(), file=sys.stderr)
        assert "exit=" not in probe, probe
        gidx = re.search(r"^GIDX=(\d+)$", probe, re.M)
        dev = "cx4" if driver == "cx4" else "mlx5"
        assert gidx and re.search(rf"^probe: {dev}_\d+ gid {gidx.group(1)} qpn", probe, re.M), \
            f"the library did not pick the RoCE v2 GID of the IPv4 address:\n{probe}"
        assert re.search(r"^w=4: yes", probe, re.M) and \
            re.search(r"^w=8: no \(the card refused", probe, re.M) and \
            re.search(r"^w=4: yes .* after the w=8 probe", probe, re.M), probe
        refused = section(log, "w8-refused")
        assert "exit=1" in refused and "the card refused the calculation" in refused and \
            "8-bit matrices" in refused, refused
        for sec, want in (("bad-k", "1 to 16 data blocks"), ("bad-block", "multiple of 64"),
                          ("short-file", "has 4096 bytes, the block size is 8192"),
                          ("bad-erasures", "--erased: 1 to 1 block indices")):
            s = section(log, sec)
            assert "exit=2" in s and want in s, f"{sec}: expected a usage error naming {want!r}:\n{s}"
        for sec in ("w8-refused", "bad-k", "bad-block", "short-file", "bad-erasures"):
            print(f"{sec}: {section(log, sec).strip().splitlines()[0]}", file=sys.stderr)
        done, errors = ec_stats(section(log, "roce"))
        # probe: w=4, w=8 (refused), w=4; the refused --w 8 encode; then the cases (the
        # card counts refused calculations in both numbers).
        assert (done, errors) == (calcs + 4, 2), \
            f"card counted {done} calcs {errors} errors, expected {calcs + 4} and 2"

    def user_path_w8(driver: str):
        """8-bit profile (--ec-8bit, GF(2^8)): cx4ec encodes with ISA-L's Vandermonde and
        Cauchy and a random matrix and decodes after erasing up to m blocks; every block
        equals ISA-L's. `probe` finds w = 8 computed right."""
        cases = [
            Case("f", 8, 10, 4, "vand", 65536, [[0, 3, 10, 12], [13]]),
            Case("g", 8, 6, 3, "cauchy", 4096, [[1, 2, 8]]),
            Case("h", 8, 12, 4, "cauchy", 8192, [[11, 12, 13, 15]]),
            Case("i", 8, 16, 2, "random:3", 1024, []),
        ]
        extra = """
            section probe; /tmp/cx4ec probe -d $IBDEV -g $GIDX 2>&1 || echo "exit=$?"
        """
        r, calcs = run_cases(env, driver, cases, ["--ec-8bit"], extra)
        probe = section(r.job_log, "probe")
        print(probe.strip(), file=sys.stderr)
        assert "exit=" not in probe and re.search(r"^w=8: yes \(GF\(2\^8\)/0x11d checked\)",
                                                  probe, re.M), probe
        done, errors = ec_stats(section(r.job_log, "roce"))
        assert (done, errors) == (calcs + 3, 0), \
            f"card counted {done} calcs {errors} errors, expected {calcs + 3} and 0"

    # One VM boot per driver and profile; the same cases and checks on both drivers.
    for driver in DRIVERS:
        yield f"cx4ec (libmlx5 raw WQE) on {driver}, ConnectX-4 profile: w=4 = GF-Complete, " \
              "w=8 refused, bad parameters", estimate(400)(functools.partial(user_path_w4, driver))
        yield f"cx4ec (libmlx5 raw WQE) on {driver}, --ec-8bit: w=8 = ISA-L", \
            estimate(300)(functools.partial(user_path_w8, driver))
