"""The in-kernel erasure-coding engine (drivers/cx4/ec/, Documentation/ec.md): cx4's kernel
API — encode, decode with up to m erasures, update, RAID-6 P+Q — driven through the debugfs
test hook `cx4/<dev>/ec` on the modelled card, every code and rebuilt block compared (CRC-32 of
the kernel's buffer) with the host reference tools/ec-ref (GF-Complete/Jerasure for the
ConnectX-4 profile's GF(2^4), ISA-L for the `--ec-8bit` profile's GF(2^8), RAID-6 P+Q checked
by ISA-L's pq_gen as well). Data blocks are the hook's seeded xorshift64* streams, which the
test regenerates here. One VM boot per profile."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass, field

from en import CX4_UP, cx4_errors
from harness import Env, check_clean_dmesg, describe, estimate
from ib import CX4_IB
from model_eth import eth_vms, section
from model_roce import IB

REF = "target/cx4ec/ec_ref"
M64 = (1 << 64) - 1

# Guest helper: one request to the hook, its result after it.
HOOK = r"""
ec() {
    echo "$*" > $DBG/ec 2>/tmp/ec.err || echo "exit=$(cat /tmp/ec.err)"
    cat $DBG/ec
}
"""


def block(seed: int, i: int, n: int) -> bytes:
    """The hook's data block i of `seed` (testhook.rs `fill`): xorshift64*, little endian."""
    x = (seed ^ ((i + 1) * 0x9E3779B97F4A7C15)) & M64 or 1
    words = []
    for _ in range((n + 7) // 8):
        x ^= x >> 12
        x ^= (x << 25) & M64
        x ^= x >> 27
        words.append((x * 0x2545F4914F6CDD1D) & M64)
    return struct.pack(f"<{len(words)}Q", *words)[:n]


def ref_encode(env: Env, w: int, k: int, m: int, kind: str, data: list[bytes]) -> tuple[bytes, list[bytes]]:
    """ec_ref's coding matrix (m × k) and code blocks."""
    n = len(data[0])
    r = subprocess.run([str(env.root / REF), "encode", str(w), str(k), str(m), kind, str(n)],
                       input=b"".join(data), capture_output=True)
    assert r.returncode == 0, f"ec_ref encode {w} {k} {m} {kind}: {r.stderr.decode()}"
    mat, rest = r.stdout[:k * m], r.stdout[k * m:]
    return mat, [rest[j * n:(j + 1) * n] for j in range(m)]


def crc(b: bytes) -> str:
    return f"{zlib.crc32(b):#010x}"


@dataclass
class Case:
    """One request and what its result must say."""
    name: str
    req: str
    want: dict[str, str] = field(default_factory=dict)   # "code 0" -> crc
    batch: int = 1


def case(env: Env, name: str, op: str, w: int, k: int, m: int, kind: str, n: int, *,
         seed: int, layout: str = "scatter", batch: int = 1, erase: list[int] = (),
         upd: list[int] = (), seed2: int = 0) -> Case:
    data = [block(seed, i, n) for i in range(k)]
    mat, codes = ref_encode(env, w, k, m, kind, data)
    fld = "gf256" if w == 8 else "gf16"
    req = f"op={op} field={fld} k={k} m={m} len={n} seed={seed} layout={layout}"
    if op == "raid6":
        assert kind == "raid6"
    else:
        req += f" mat={mat.hex()}"
    want = {f"code {j}": crc(c) for j, c in enumerate(codes)}
    if op in ("encode", "raid6"):
        req += f" batch={batch}"
    if op == "decode":
        req += " erase=" + ",".join(map(str, erase))
        blocks = data + codes
        want.update({f"block {x}": crc(blocks[x]) for x in erase})
    if op == "update":
        req += " upd=" + ",".join(map(str, upd)) + f" seed2={seed2}"
        new = [block(seed2, i, n) if i in upd else d for i, d in enumerate(data)]
        _, new_codes = ref_encode(env, w, k, m, kind, new)
        want.update({f"new code {j}": crc(c) for j, c in enumerate(new_codes)})
    return Case(name, req, want, batch if op in ("encode", "raid6") else 1)


def script(cases: list[Case]) -> str:
    return "".join(f"section {c.name}; ec {c.req}\n" for c in cases)


def check_cases(log: str, cases: list[Case]) -> int:
    """Every case's result names the reference's CRCs; returns the calculations done."""
    calcs = 0
    for c in cases:
        s = section(log, c.name)
        assert "exit=" not in s and re.search(r"^ok ", s, re.M), f"{c.name}: {c.req}\n{s}"
        got = dict(re.findall(r"^((?:new )?(?:code|block) \d+) crc (0x[0-9a-f]{8})$", s, re.M))
        for what, want in c.want.items():
            assert got.get(what) == want, \
                f"{c.name}: {what} crc {got.get(what)} != reference {want}\n{c.req}\n{s}"
        peak = int(re.search(r"^peak inflight (\d+)$", s, re.M).group(1))
        if c.batch >= 16:
            assert peak > 1, f"{c.name}: a batch of {c.batch} never had two in flight:\n{s}"
        ops = c.req.split()[0][3:]
        calcs += c.batch + (1 if ops in ("decode", "update") else 0)
        print(f"    {c.name}: ok ({len(c.want)} blocks, peak {peak} in flight)", file=sys.stderr)
    return calcs


def refused(log: str, name: str, errno: str, why: str) -> None:
    s = section(log, name)
    assert "exit=" in s and re.search(rf"^error \w+: {errno}: .*{re.escape(why)}", s, re.M), \
        f"{name}: expected {errno} naming {why!r}:\n{s}"
    print(f"    {name}: {s.strip().splitlines()[-1]}", file=sys.stderr)


def counters(text: str) -> dict[str, int]:
    m = re.search(r"^engine (\w+) submitted (\d+) completed (\d+) errors (\d+) busy (\d+) "
                  r"recoveries (\d+) inflight (\d+)$", text, re.M)
    assert m, f"no engine line:\n{text}"
    keys = ("submitted", "completed", "errors", "busy", "recoveries", "inflight")
    return {"state": m.group(1), **{k: int(v) for k, v in zip(keys, m.groups()[1:])}}


def run(env: Env, model_args: list[str], body: str, after: str = "") -> str:
    """One VM on the model with `model_args`: cx4 and its RDMA layer up, `body`, the engine's
    and the card's counters, cx4 unloaded, then `after` (without cx4)."""
    vm0 = CX4_UP + IB + CX4_IB + HOOK + """
        cx4_up
        cx4_ib_up
        section gid0; cat /sys/class/infiniband/$IBDEV/ports/1/gids/0
        section caps; cat $DBG/ec
    """ + body + """
        section final; cat $DBG/ec
        section roce; req ctl roce
        ip link set "$IF" down; rmmod cx4
    """ + after + """
        echo unloaded
    """
    r = eth_vms(env, [vm0], timeout=900, model_args=["--roce"] + model_args, files=[env.ko])[0]
    assert r.status == 0 and "unloaded" in r.job_log, describe(r)
    assert "EC engine: QP" in r.dmesg, "no engine at probe:\n" + r.dmesg[-3000:]
    check_clean_dmesg(r.dmesg)
    return r


def tests(env: Env):
    @estimate(300)
    def kernel_api_gf16():
        """ConnectX-4 profile (GF(2^4)): encode with Jerasure's Vandermonde, Cauchy and random
        matrices (k up to 16, m 1 to 4 with m = 3's dump output, 64 B to 1 MiB, scattered and
        contiguous sources, a batch of 48 in flight at once), decode after erasing 1 to m
        blocks, update of changed data blocks — every block equals GF-Complete's. Bad requests
        (k = 0, k = 17, m = 5, an 8-bit matrix, len not a multiple of 64) are EINVAL naming the
        reason; an injected engine fault fails the calculations in flight with EIO (one dmesg
        line), the QP is reset and the engine works again; the counters add up, nothing is left
        in flight, and the card ran every calculation that completed."""
        cases = [
            case(env, "enc-batch", "encode", 4, 4, 2, "vand", 4096, seed=1, batch=48),
            case(env, "enc-contig", "encode", 4, 10, 4, "cauchy", 65536, seed=2, layout="contig"),
            case(env, "enc-k16", "encode", 4, 16, 1, "random:7", 1024, seed=3),
            case(env, "enc-m3", "encode", 4, 6, 3, "vand", 16384, seed=4),
            case(env, "enc-1m", "encode", 4, 4, 2, "cauchy", 1 << 20, seed=5),
            case(env, "enc-64", "encode", 4, 2, 1, "vand", 64, seed=6, batch=4),
            case(env, "dec-1", "decode", 4, 4, 2, "vand", 4096, seed=7, erase=[1]),
            case(env, "dec-3", "decode", 4, 6, 3, "vand", 16384, seed=8, erase=[0, 4, 7]),
            case(env, "dec-4", "decode", 4, 10, 4, "cauchy", 65536, seed=9, erase=[2, 7, 11, 13]),
            case(env, "dec-code", "decode", 4, 5, 2, "cauchy", 8192, seed=10, erase=[5, 6]),
            case(env, "upd-2", "update", 4, 8, 3, "vand", 8192, seed=11, upd=[2, 5], seed2=111),
            case(env, "upd-1", "update", 4, 4, 2, "cauchy", 4096, seed=12, upd=[1], seed2=112),
        ]
        after = case(env, "after-fault", "encode", 4, 6, 2, "cauchy", 4096, seed=13, batch=8)
        mat = "01" * 4
        bad = f"""
            section bad-k0; ec op=encode field=gf16 k=0 m=1 len=4096 mat=
            section bad-k17; ec op=encode field=gf16 k=17 m=1 len=4096 mat={'01' * 17}
            section bad-m5; ec op=encode field=gf16 k=1 m=5 len=4096 mat={'01' * 5}
            section bad-8bit; ec op=encode field=gf256 k=4 m=1 len=4096 mat={mat}
            section bad-len; ec op=encode field=gf16 k=4 m=1 len=100 mat={mat}
            section bad-erase; ec op=decode field=gf16 k=4 m=1 len=4096 mat={mat} erase=0,1
            section fault; req ctl ec-error count=1
            ec op=encode field=gf16 k=4 m=1 len=4096 mat={mat} batch=8
            section after-fault-state; cat $DBG/ec
        """
        body = script(cases) + bad + f"section {after.name}; ec {after.req}\n"
        r = run(env, [], body)
        log = r.job_log
        print(section(log, "caps").strip(), file=sys.stderr)
        assert re.search(r"^caps gf256 0 max_srcs 16 max_outputs 4 .* len_align 64 max_inflight 64",
                         section(log, "caps"), re.M), section(log, "caps")
        calcs = check_cases(log, cases + [after])
        refused(log, "bad-k0", "EINVAL", "k must be 1..=16")
        refused(log, "bad-k17", "EINVAL", "k must be 1..=16")
        refused(log, "bad-m5", "EINVAL", "m must be 1..=4")
        refused(log, "bad-8bit", "EINVAL", "GF(2^8) matrices not supported by this card")
        refused(log, "bad-len", "EINVAL", "multiple of 64")
        refused(log, "bad-erase", "EINVAL", "bad matrix, erasures or updates")
        fault = section(log, "fault")
        assert "exit=" in fault and re.search(r"^error encode: EIO: (\d+) of 8 calculations failed",
                                              fault, re.M), fault
        failed = int(re.search(r"EIO: (\d+) of 8", fault).group(1))
        print(f"    fault: {failed} of 8 failed", file=sys.stderr)
        assert re.search(r"EC engine: send error CQE: LOCAL_QP_OP_ERR", r.dmesg), r.dmesg[-3000:]
        assert re.search(r"EC engine: QP 0x[0-9a-f]+ reset and reconnected", r.dmesg), r.dmesg[-3000:]
        c = counters(section(log, "final"))
        print(f"    counters: {c}", file=sys.stderr)
        assert c["state"] == "ready" and c["inflight"] == 0 and c["recoveries"] == 1, c
        # bad-erase's encode ran before its decode was refused.
        assert c["errors"] == failed and c["completed"] == calcs + 1 + 8 - failed, (c, calcs)
        assert c["submitted"] == c["completed"] + c["errors"], c
        errs = [l for l in cx4_errors(r.dmesg) if "EC engine" not in l]
        assert not errs, "\n".join(errs)
        # The card ran every completed calculation and the faulted one; those posted behind
        # it were flushed unexecuted.
        m = re.search(r"ec: (\d+) calcs \d+ bytes (\d+) errors", section(log, "roce"))
        assert m and c["completed"] + 1 <= int(m.group(1)) <= c["submitted"] \
            and int(m.group(2)) == 1, (section(log, "roce"), c)

    yield "kernel EC API on cx4, ConnectX-4 profile: GF(2^4) = GF-Complete, bad requests, engine fault", \
        kernel_api_gf16

    @estimate(240)
    def kernel_api_gf256():
        """`--ec-8bit` profile (GF(2^8)): RAID-6 P+Q (P = XOR, Q = Σ 2^i·Dᵢ as lib/raid6; the
        reference checked by ISA-L's pq_gen) for k = 1, 4, 16 and 1 MiB blocks, a batch in
        flight, two-data and data+P recovery and a RAID-6 update; ISA-L Vandermonde, Cauchy and
        random matrices encoded and decoded after up to m erasures — every block equals ISA-L's."""
        cases = [
            case(env, "pq-1", "raid6", 8, 1, 2, "raid6", 4096, seed=21),
            case(env, "pq-4", "raid6", 8, 4, 2, "raid6", 4096, seed=22, batch=32),
            case(env, "pq-16", "raid6", 8, 16, 2, "raid6", 65536, seed=23, layout="contig"),
            case(env, "pq-1m", "raid6", 8, 8, 2, "raid6", 1 << 20, seed=24),
            case(env, "pq-dec-dd", "decode", 8, 6, 2, "raid6", 8192, seed=25, erase=[1, 4]),
            case(env, "pq-dec-dp", "decode", 8, 6, 2, "raid6", 8192, seed=26, erase=[2, 6]),
            case(env, "pq-upd", "update", 8, 8, 2, "raid6", 4096, seed=27, upd=[3], seed2=127),
            case(env, "vand", "decode", 8, 10, 4, "vand", 65536, seed=28, erase=[0, 3, 10, 12]),
            case(env, "cauchy", "decode", 8, 12, 4, "cauchy", 8192, seed=29, erase=[11, 12, 13, 15]),
            case(env, "rand", "encode", 8, 16, 2, "random:3", 1024, seed=30),
            case(env, "m3", "decode", 8, 6, 3, "cauchy", 4096, seed=31, erase=[1, 2, 8]),
        ]
        r = run(env, ["--ec-8bit"], script(cases))
        log = r.job_log
        assert re.search(r"^caps gf256 1 ", section(log, "caps"), re.M), section(log, "caps")
        calcs = check_cases(log, cases)
        c = counters(section(log, "final"))
        print(f"    counters: {c}", file=sys.stderr)
        assert c == {"state": "ready", "submitted": calcs, "completed": calcs, "errors": 0,
                     "busy": c["busy"], "recoveries": 0, "inflight": 0}, (c, calcs)
        errs = cx4_errors(r.dmesg)
        assert not errs, "\n".join(errs)

    yield "kernel EC API on cx4, --ec-8bit: RAID-6 P+Q and GF(2^8) = ISA-L", kernel_api_gf256
