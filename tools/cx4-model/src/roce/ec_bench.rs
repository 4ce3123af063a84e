//! A host micro-benchmark of the vector-calc engine (the harness of `vector_calc_tests.rs`),
//! ignored by `cargo test`: what `tools/bench/ec_bench.py` runs end to end from a guest, here
//! without a VM — encode k = 10, m = 4 and k = 6, m = 3 with ISA-L's Cauchy coefficients
//! (`gf_gen_cauchy1_matrix`: entry 1 / ((k + j) ⊕ i)) over blocks of 64 KiB, 256 KiB and
//! 1 MiB, in GF(2^4) (the ConnectX-4 profile) and GF(2^8) (`--ec-8bit`).
//!
//! Each calculation is the sequence cx4's kernel engine (drivers/cx4/ec) and MLNX's libmlx5
//! post, through the real doorbell, WQE, UMR and mkey paths: a receive through the output
//! mkey, a repeat-block UMR spreading the chunk-interleaved result over the m code blocks (a
//! stride-0 dump for m = 3), a KLM UMR gathering k scattered data blocks, the vector-calc SEND
//! — matrix and vectors read from guest memory through their keys, the GF multiply-accumulate,
//! the SEND looped back inside the card as RC packets (ACKed), the result placed through the
//! repeat-block mkey as it is computed — and the receive CQE. The calc QP's path MTU is cx4's
//! 4096 (`CX4_BENCH_MTU=1024`: libmlx5's). The first calculation of each
//! case is checked against the engine's arithmetic on the host (`ec::calc`).
//!
//! ```text
//! cargo test --release -p cx4-model --lib -- --ignored --nocapture ec_bench
//! ```
//!
//! Prints one `ec_bench ...` line per case: `engine_mbps`, data encoded (k × block bytes per
//! calculation, MB = 10^6 bytes) per second through the whole device path, best of the rounds
//! (the host is shared); `gf_mbps`, the same for the arithmetic alone (`Calc::compute` over
//! host buffers, which also interleaves). `CX4_BENCH_SECONDS` (default 0.25) is the length of
//! a round, `CX4_BENCH_ROUNDS` (default 3) their number, `CX4_BENCH_CASES` a filter
//! (substring of `gf16 k10 m4 65536`), `CX4_BENCH_MTU` the calc QP's path MTU (4096 or 1024).

use cx4_hw::wqe::repeat_block::{RepeatBlock, RepeatEnt, REPEAT_BLOCK_OP};

use super::*;
use crate::ec::{
    calc::{deinterleave, Calc},
    gf::Field,
    testing::best_rate,
};

/// The outputs' chunk (the engines' `max_chunk_size` 0).
const CHUNK: u32 = 64;
/// Gap between scattered blocks (the card may not read or write it).
const GAP: u64 = 4096;
/// The m = 3 dump (stride 0: one chunk).
const VA_DUMP: u64 = VA + 0x78_0000;

/// One benchmarked shape.
struct Shape {
    field: Field,
    k: usize,
    m: usize,
    size: u32,
}

impl Shape {
    fn name(&self) -> String {
        let f = match self.field {
            Field::Gf16 => "gf16",
            Field::Gf256 => "gf256",
        };
        format!("{f} k{} m{} {}", self.k, self.m, self.size)
    }

    /// ISA-L's `gf_gen_cauchy1_matrix` rows k..k+m (m × k, row j = code block j): entry
    /// 1 / ((k + j) ⊕ i) in the field (k + m ≤ 16 keeps it in GF(2^4)).
    fn cauchy(&self) -> Vec<u8> {
        let mut c = vec![0u8; self.k * self.m];
        for j in 0..self.m {
            for i in 0..self.k {
                c[j * self.k + i] = self.field.inv(((self.k + j) ^ i) as u8).unwrap();
            }
        }
        c
    }
}

/// Where a case's blocks live in the MR.
struct Layout {
    data: Vec<u64>,
    code: Vec<u64>,
}

impl Layout {
    fn new(s: &Shape) -> Layout {
        let blk = u64::from(s.size);
        let l = Layout {
            data: (0..s.k as u64).map(|i| VA_IN + i * (blk + GAP)).collect(),
            code: (0..s.m as u64).map(|j| VA_OUT + j * (blk + GAP)).collect(),
        };
        assert!(l.code.last().unwrap() + blk <= VA_DUMP);
        assert!(l.data.last().unwrap() + blk <= VA + DATA_LEN);
        l
    }
}

impl EcCard {
    /// One calculation as cx4's engine posts it (receive, repeat-block UMR, KLM UMR, SEND, one
    /// doorbell) run to its receive CQE.
    fn bench_calc(&mut self, s: &Shape, l: &Layout, inumr: u32, outumr: u32) {
        let pd = self.d.fw.mkey(self.lkey).unwrap().pd;
        let n = usize::from(noutputs(s.m as u8));
        let blk = u64::from(s.size);
        // 1. The receive: the whole stream through the output mkey.
        let slot = u64::from(self.rq_pc) % 16;
        let mut w = [0u8; 64];
        w[..16].copy_from_slice(&data_seg(s.size * n as u32, outumr, l.code[0]));
        w[16..32].copy_from_slice(&data_seg(0, wqe::TERMINATE_SCATTER_LIST_LKEY, 0));
        self.d.bus.mem.write(QP_BUF + slot * 64, &w).unwrap();
        self.rq_pc = self.rq_pc.wrapping_add(1);
        self.d
            .bus
            .mem
            .write(QP_DBR, &u32::from(self.rq_pc).to_be_bytes())
            .unwrap();
        // 2. The repeat-block UMR over the code blocks (+ the dump).
        let mut h = RepeatBlock::new();
        h.set_byte_count(CHUNK * n as u32);
        h.set_op(REPEAT_BLOCK_OP);
        h.set_repeat_count(s.size / CHUNK);
        h.set_num_ent(n as u32);
        let mut ents = vec![h.0];
        for j in 0..n {
            let mut e = RepeatEnt::new();
            let (va, stride) = match l.code.get(j) {
                Some(va) => (*va, CHUNK),
                None => (VA_DUMP, 0),
            };
            e.set_stride(stride);
            e.set_byte_count(CHUNK);
            e.set_memkey(self.lkey);
            e.set_va(va);
            ents.push(e.0);
        }
        let w = ec_umr(
            self.sq_pc,
            self.qpn,
            outumr,
            pd,
            l.code[0],
            blk * n as u64,
            &ents,
        );
        self.put_wqe(&w);
        // 3. The KLM UMR of the data blocks.
        let klms: Vec<[u8; 16]> = l
            .data
            .iter()
            .map(|va| data_seg(s.size, self.lkey, *va))
            .collect();
        let w = ec_umr(
            self.sq_pc,
            self.qpn,
            inumr,
            pd,
            l.data[0],
            blk * s.k as u64,
            &klms,
        );
        self.put_wqe(&w);
        // 4. The vector-calc SEND (rings the doorbell for all three).
        let mut p = self.libmlx5(s.k as u8, s.m as u8, s.field == Field::Gf256, s.size);
        p.vec_lkey = inumr;
        p.vec_addr = l.data[0];
        self.post_calc(&p);
        let c = self.next_cqe(true).expect("the receive CQE");
        assert_eq!(c[63] >> 4, cqe_op::RESP_SEND, "{}: {c:02x?}", s.name());
    }
}

#[test]
#[ignore = "host micro-benchmark (tools/bench/README.md)"]
fn ec_bench() {
    let env = |k: &str| std::env::var(k).ok();
    let secs: f64 = env("CX4_BENCH_SECONDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.25);
    let rounds: usize = env("CX4_BENCH_ROUNDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let filter = env("CX4_BENCH_CASES").unwrap_or_default();
    let path_mtu: u32 = env("CX4_BENCH_MTU")
        .and_then(|s| s.parse().ok())
        .unwrap_or(4096);
    let code = if path_mtu == 1024 {
        mtu::MTU_1K
    } else {
        mtu::MTU_4K
    };
    for field in [Field::Gf16, Field::Gf256] {
        let extra = if field == Field::Gf256 {
            "--ec-8bit"
        } else {
            ""
        };
        let mut card = EcCard::with_mtu(extra, code);
        let inumr = card.free_klm_mkey(16);
        let outumr = card.free_klm_mkey(8);
        let mut rng = Rng(0xec_be4c);
        for (k, m) in [(10usize, 4usize), (6, 3)] {
            for size in [64u32 << 10, 256 << 10, 1 << 20] {
                let s = Shape { field, k, m, size };
                if !s.name().contains(filter.as_str()) {
                    continue;
                }
                let w8 = field == Field::Gf256;
                let coding = s.cauchy();
                let mat = libmlx5_matrix(&coding, k, m, w8);
                let l = Layout::new(&s);
                let inputs = rng.bytes(k * size as usize);
                for (i, va) in l.data.iter().enumerate() {
                    card.write(*va, &inputs[i * size as usize..(i + 1) * size as usize]);
                }
                card.write(VA_MATRIX, &mat);
                // The arithmetic alone, and the reference for the device's result.
                let n = usize::from(noutputs(m as u8));
                let calc = Calc {
                    field,
                    vec_count: k,
                    vec_size: size as usize,
                    outputs: n,
                    active: [0usize, 1, 2, 3].map(|j| j < m),
                    chunk: CHUNK as usize,
                };
                let want = deinterleave(&calc.compute(&mat, &inputs), n, size as usize, 64);
                card.bench_calc(&s, &l, inumr, outumr);
                for (j, (va, want)) in l.code.iter().zip(&want).enumerate() {
                    assert!(
                        card.read(*va, size as usize) == *want,
                        "{}: code block {j} differs from the engine's arithmetic",
                        s.name()
                    );
                }
                let (engine, calcs) =
                    best_rate(rounds, secs, || card.bench_calc(&s, &l, inumr, outumr));
                let (gf, _) = best_rate(rounds, secs, || {
                    std::hint::black_box(calc.compute(&mat, std::hint::black_box(&inputs)));
                });
                let data = (k * size as usize) as f64 / 1e6;
                println!(
                    "ec_bench field={} k={k} m={m} len={size} engine_mbps={:.1} gf_mbps={:.1} \
                     calcs={calcs} rounds={rounds} mtu={}",
                    s.name().split(' ').next().unwrap(),
                    engine * data,
                    gf * data,
                    path_mtu,
                );
            }
        }
        assert_eq!(card.d.roce.state.stats.ec_errors, 0);
        assert_eq!(card.d.roce.state.stats.timer_runs, 0, "no retransmission");
        assert_eq!(card.state(), qpc_state::RTS);
    }
}
