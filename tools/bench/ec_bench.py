#!/usr/bin/env python3
"""Benchmark (not a test): erasure-coding encode throughput (issue 12) — the modelled card's
vector-calc engine on the host, cx4's kernel engine end to end from a guest, ISA-L on the host
CPU and the guest kernel's raid6 gen_syndrome — for k = 10, m = 4 and k = 6, m = 3 over blocks
of 64 KiB, 256 KiB and 1 MiB, in GF(2^4) (the ConnectX-4 profile) and GF(2^8) (`--ec-8bit`).

Every figure is data encoded per second: k × block bytes per encode, MB = 10^6 bytes.

- model (host): the ignored test `ec_bench` of cx4-model (tools/cx4-model/src/roce/ec_bench.rs):
  one modelled card, no VM, each encode posted as cx4's engine posts it (receive through a
  repeat-block mkey, output and KLM UMRs, the vector-calc SEND looped back as RC packets, the
  receive CQE); best of its rounds. Its `gf` figure (arithmetic alone) is printed too.
- cx4 (guest): cx4's debugfs hook `ec` in a TCG guest with the model behind vfio-user:
  `op=encode layout=scatter batch=B`, B encodes in flight; the hook's `ns` is the time from
  just before the first submit to the last completion (guest monotonic clock); best of the
  repeats. Includes the guest's submit and completion path, vfio-user doorbells and
  interrupts, and the model's DMA through guest memory.
- ISA-L (host): tools/bench/isal_ec_bench.c, gf_gen_cauchy1_matrix + ec_init_tables +
  ec_encode_data, one thread, GF(2^8) (ISA-L has no GF(2^4): the GF(2^4) rows compare with the
  same shape in GF(2^8)); best of its rounds.
- raid6 gen (guest): the kernel's own raid6_pq benchmark, printed when `modprobe raid6_pq` loads
  it (lib/raid/raid6/algos.c): gen_syndrome of 8 disks (6 data + P + Q) of one 4 KiB page for
  16 jiffies per algorithm, the best algorithm's figure; the median of the loads. The kernel's
  MB is 2^20 bytes (converted here). One figure for every row: it is P+Q of 6 data blocks of
  4 KiB, not the row's shape.

All encodes use ISA-L's Cauchy coefficients (`gf_gen_cauchy1_matrix`: 1 / ((k + j) ^ i) in
the field). The host is shared (and the guest is TCG on it): figures are noisy, hence best-of.

    python3 tools/bench/ec_bench.py [--repeats 2] [--seconds 0.25] [--rounds 3]
                                    [--skip-vm] [--skip-host]      (make bench)
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools/testbed"))

import harness  # noqa: E402
import run as testrun  # noqa: E402
from ec_kernel import block  # noqa: E402
from en import CX4_UP  # noqa: E402
from ib import CX4_IB  # noqa: E402
from model_eth import eth_vms, section  # noqa: E402
from results import Results  # noqa: E402

SHAPES = ((10, 4), (6, 3))
SIZES = (64 << 10, 256 << 10, 1 << 20)
FIELDS = ("gf16", "gf256")
# Encodes in flight per request (the engine has 64 slots); the guest holds B × m code blocks.
BATCH = {64 << 10: 64, 256 << 10: 32, 1 << 20: 16}

HOOK = r"""
ec() {
    echo "$*" > $DBG/ec 2>/tmp/ec.err || echo "exit=$(cat /tmp/ec.err)"
    cat $DBG/ec
}
"""


def gf_mul(a: int, b: int, field: str) -> int:
    poly, bits = (0x13, 4) if field == "gf16" else (0x11D, 8)
    r = 0
    while b:
        if b & 1:
            r ^= a
        b >>= 1
        a <<= 1
        if a & (1 << bits):
            a ^= poly
    return r


def gf_inv(a: int, field: str) -> int:
    n = 16 if field == "gf16" else 256
    return next(x for x in range(1, n) if gf_mul(a, x, field) == 1)


def cauchy(field: str, k: int, m: int) -> bytes:
    """ISA-L's gf_gen_cauchy1_matrix rows k..k+m (row j = code block j)."""
    return bytes(gf_inv((k + j) ^ i, field) for j in range(m) for i in range(k))


def code_crcs(field: str, k: int, m: int, n: int, seed: int) -> list[str]:
    """CRC-32s of the code blocks the hook must produce for its seeded data (each a
    byte-table multiply per coefficient, XORed as integers)."""
    mat = cauchy(field, k, m)
    tabs = {}
    for c in set(mat):
        if field == "gf16":
            t = bytes(gf_mul(c, x & 15, field) | gf_mul(c, x >> 4, field) << 4 for x in range(256))
        else:
            t = bytes(gf_mul(c, x, field) for x in range(256))
        tabs[c] = t
    data = [block(seed, i, n) for i in range(k)]
    out = []
    for j in range(m):
        acc = 0
        for i in range(k):
            acc ^= int.from_bytes(data[i].translate(tabs[mat[j * k + i]]), "little")
        out.append(f"{zlib.crc32(acc.to_bytes(n, 'little')):#010x}")
    return out


def model_bench(secs: float, rounds: int) -> dict[tuple, tuple[float, float]]:
    """(field, k, m, len) -> (engine MB/s, arithmetic-only MB/s) from cx4-model's ec_bench."""
    env = dict(os.environ, CX4_BENCH_SECONDS=str(secs), CX4_BENCH_ROUNDS=str(rounds))
    r = subprocess.run(["cargo", "test", "--release", "--locked", "-q", "-p", "cx4-model", "--lib",
                        "--", "--ignored", "--nocapture", "--exact",
                        "roce::vector_calc_tests::ec_bench::ec_bench"],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"model bench failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
        return {}
    out = {}
    for m in re.finditer(r"^ec_bench field=(\w+) k=(\d+) m=(\d+) len=(\d+) engine_mbps=([\d.]+) "
                         r"gf_mbps=([\d.]+)", r.stdout, re.M):
        out[(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)))] = \
            (float(m.group(5)), float(m.group(6)))
    return out


def isal_bench(secs: float, rounds: int) -> dict[tuple, float]:
    """(k, m, len) -> ISA-L MB/s."""
    out_dir = ROOT / "target/bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = out_dir / "isal_ec_bench"
    r = subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-o", str(exe),
                        str(ROOT / "tools/bench/isal_ec_bench.c"), "-lisal"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"building isal_ec_bench failed (libisal-dev is a host prerequisite):\n{r.stderr}")
        return {}
    out = {}
    for k, m in SHAPES:
        for n in SIZES:
            r = subprocess.run([str(exe), str(k), str(m), str(n), str(secs), str(rounds)],
                               capture_output=True, text=True)
            mm = re.search(r"mbps=([\d.]+)", r.stdout)
            if r.returncode != 0 or not mm:
                print(f"isal_ec_bench {k} {m} {n} failed: {r.stdout}{r.stderr}")
                continue
            out[(k, m, n)] = float(mm.group(1))
    return out


def vm_job(field: str, repeats: int, raid6_loads: int) -> str:
    """The guest's job: raid6_pq's benchmark (before cx4 loads), then cx4's engine."""
    job = CX4_UP + CX4_IB + HOOK
    if raid6_loads:
        job += f"""
        section raid6
        for i in $(seq {raid6_loads}); do
            modprobe raid6_pq && echo "raid6 load $i: $(dmesg | grep 'raid6: using algorithm' | tail -1)"
            rmmod raid6_pq 2>/dev/null || true
        done
        """
    job += """
        cx4_up
        cx4_ib_up
        section caps; cat $DBG/ec
    """
    for k, m in SHAPES:
        mat = cauchy(field, k, m).hex()
        for n in SIZES:
            for rep in range(repeats):
                job += (f"section e2e-{k}-{m}-{n}-{rep}; ec op=encode field={field} k={k} m={m} "
                        f"len={n} seed=1 layout=scatter batch={BATCH[n]} mat={mat}\n")
    job += """
        section final; cat $DBG/ec
        section roce; req ctl roce
        ip link set "$IF" down; rmmod cx4
        echo unloaded
    """
    return job


def vm_bench(env: harness.Env, field: str, repeats: int, raid6_loads: int
             ) -> tuple[dict[tuple, float], list[float], str, str]:
    """Boots one guest with the field's profile; returns ((k, m, len) -> cx4 MB/s, raid6
    gen figures in MB/s (10^6), the raid6 algorithm, problems)."""
    args = ["--roce"] + (["--ec-8bit"] if field == "gf256" else [])
    r = eth_vms(env, [vm_job(field, repeats, raid6_loads)], timeout=900, model_args=args,
                files=[env.ko])[0]
    log = r.job_log
    problems = []
    if r.status != 0 or "unloaded" not in log:
        problems.append(f"{field} VM: job failed (status {r.status}):\n{harness.describe(r)[-3000:]}")
    out: dict[tuple, float] = {}
    calcs = 0
    for k, m in SHAPES:
        for n in SIZES:
            best = 0.0
            want = code_crcs(field, k, m, n, 1)
            for rep in range(repeats):
                try:
                    s = section(log, f"e2e-{k}-{m}-{n}-{rep}")
                except AssertionError:
                    continue
                ok = re.search(rf"^ok encode k {k} m {m} len {n} batch (\d+) scatter$", s, re.M)
                ns = re.search(r"^ns (\d+)$", s, re.M)
                if "exit=" in s or not ok or not ns or int(ns.group(1)) == 0:
                    problems.append(f"{field} k={k} m={m} len={n} repeat {rep}: {s.strip()[-500:]}")
                    continue
                got = re.findall(r"^code \d+ crc (0x[0-9a-f]{8})$", s, re.M)
                if got != want:
                    problems.append(f"{field} k={k} m={m} len={n} repeat {rep}: code CRCs {got} "
                                    f"!= the host's {want}")
                    continue
                batch = int(ok.group(1))
                calcs += batch
                best = max(best, batch * k * n / int(ns.group(1)) * 1e3)
            if best:
                out[(k, m, n)] = best
    try:
        card = re.search(r"ec: (\d+) calcs \d+ bytes (\d+) errors", section(log, "roce"))
        if not card or int(card.group(2)) != 0 or int(card.group(1)) < calcs:
            problems.append(f"{field}: the card's ec counters disagree: {section(log, 'roce')}")
    except AssertionError:
        pass
    gens = [int(g) * 1.048576 for g in
            re.findall(r"raid6: using algorithm \S+ gen\(\) (\d+) MB/s", r.dmesg)]
    algo = " ".join(sorted(set(re.findall(r"raid6: using algorithm (\S+)", r.dmesg))))
    if raid6_loads and not gens:
        problems.append("raid6_pq printed no benchmark: " + "\n".join(
            l for l in r.dmesg.splitlines() if "raid6" in l)[-1000:])
    return out, gens, algo, "\n".join(problems)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=2, help="requests per case in the guest (best kept)")
    ap.add_argument("--seconds", type=float, default=0.25, help="length of a host round")
    ap.add_argument("--rounds", type=int, default=3, help="host rounds per case (best kept)")
    ap.add_argument("--raid6-loads", type=int, default=3, help="modprobe raid6_pq this many times")
    ap.add_argument("--skip-vm", action="store_true", help="host figures only")
    ap.add_argument("--skip-host", action="store_true", help="guest figures only")
    args = ap.parse_args()
    env = None if args.skip_vm else testrun.setup()
    model: dict = {}
    isal: dict = {}
    if not args.skip_host:
        print("host: cx4-model ec_bench (release build) ...", file=sys.stderr, flush=True)
        model = model_bench(args.seconds, args.rounds)
        print("host: ISA-L ...", file=sys.stderr, flush=True)
        isal = isal_bench(args.seconds, args.rounds)
    cx4: dict = {}
    gens: list[float] = []
    algos = []
    problems = []
    if env is not None:
        for i, field in enumerate(FIELDS):
            print(f"guest: {field} profile ...", file=sys.stderr, flush=True)
            res, g, algo, prob = vm_bench(env, field, args.repeats, args.raid6_loads if i == 0 else 0)
            cx4.update({(field, *key): v for key, v in res.items()})
            gens += g
            if algo:
                algos.append(algo)
            if prob:
                problems.append(prob)
    raid6 = statistics.median(gens) if gens else None
    flags = set(re.findall(r"\b(avx2|avx512f|gfni)\b", Path("/proc/cpuinfo").read_text()))

    ratio = lambda a, b: a / b if a and b else None
    out = Results("ec", "Erasure-coding encode throughput: the model's engine, cx4 end to end, "
                        "ISA-L, the guest's raid6 gen()")
    rows = []
    for field in FIELDS:
        for k, m in SHAPES:
            for n in SIZES:
                mdl, gf = model.get((field, k, m, n), (None, None))
                c = cx4.get((field, k, m, n))
                i = isal.get((k, m, n))
                rows.append([field, f"{k}+{m}", f"{n >> 10}K", mdl, c, i, raid6, ratio(c, i),
                             ratio(mdl, i), ratio(c, raid6), gf])
    out.table("Erasure-coding encode throughput, MB/s of data encoded (k x block per encode, "
              "MB = 10^6 B); n/m = not measured",
              ["field", "k+m", "block", "model", "cx4 e2e", "ISA-L", "raid6gen", "cx4/ISAL",
               "mdl/ISAL", "cx4/r6gen", "(gf only)"], rows)
    notes = [f"model: the modelled card's engine on the host (whole device path, no VM, the calc QP "
             f"at cx4's path MTU 4096), best of {args.rounds} rounds of {args.seconds} s; gf only: "
             f"its GF arithmetic alone (the interleaved stream built in host memory)",
             f"cx4 e2e: cx4's kernel engine from a TCG guest (debugfs ec, batch {BATCH[SIZES[0]]}/"
             f"{BATCH[SIZES[1]]}/{BATCH[SIZES[2]]} in flight for 64K/256K/1M, scattered blocks), "
             f"best of {args.repeats} requests",
             f"ISA-L: ec_encode_data on the host CPU, one thread, GF(2^8) for both fields "
             f"(host CPU has {', '.join(sorted(flags)) or 'no avx2/avx512/gfni'})"]
    if raid6:
        notes.append(f"raid6gen: guest kernel raid6_pq boot benchmark, algorithm {', '.join(algos)}, "
                     f"6 data + P + Q of 4 KiB (median of {len(gens)} loads: "
                     f"{', '.join(f'{g:.0f}' for g in gens)} MB/s)")
    print()
    for n in notes:
        print(n)
        out.note(n)
    return out.finish(problems)


if __name__ == "__main__":
    sys.exit(main())
