//! A host micro-benchmark of the engine's arithmetic alone, ignored by `cargo test`: encode
//! k = 10, m = 4 over 1 MiB vectors (ISA-L's Cauchy coefficients, as `roce/ec_bench.rs`) in
//! GF(2^4) and GF(2^8), with the scalar reference ([`Calc::compute_scalar`]: a byte-table pass
//! per (input, output) pair, the engine's arithmetic before [`super::dot`]) and with every
//! kernel of [`super::dot`] this CPU has, side by side:
//!
//! ```text
//! cargo test --release -p cx4-model --lib -- --ignored --nocapture ec_speed
//! ```
//!
//! One `ec_speed ...` line per field and kernel: `dot_mbps`, data encoded (k × 1 MiB per
//! encode, MB = 10^6 bytes) per second of the dot product alone ([`super::dot::DotProd`],
//! whole vectors into preallocated outputs); `calc_mbps`, the same for [`Calc::compute_with`]
//! (the inputs read in place a stripe at a time, the stream allocated and each output stripe
//! placed into it: what `roce/ec_bench.rs` calls `gf_mbps`); `x_scalar`, `calc_mbps` over the scalar reference's.
//! Best of `CX4_BENCH_ROUNDS` (3) rounds of `CX4_BENCH_SECONDS` (0.25 s): the host is shared.
//! The kernel the engine uses ([`Kernel::best`]) is marked `best=1`.

use super::{
    calc::Calc,
    dot::{Input, Kernel},
    gf::Field,
    testing::{bench_rounds, best_rate, Rng}, //
};

#[test]
#[ignore = "host micro-benchmark (tools/bench/README.md)"]
fn ec_speed() {
    let (secs, rounds) = bench_rounds();
    let (k, m, size) = (10usize, 4usize, 1usize << 20);
    let inputs = Rng(0x9e37_79b9).bytes(k * size);
    let data = (k * size) as f64 / 1e6;
    for field in [Field::Gf16, Field::Gf256] {
        // libmlx5's layout: row i input i, entry 1 / ((k + j) ⊕ i); bit 4 set for w = 4.
        let mat: Vec<u8> = (0..k * m)
            .map(|e| {
                let c = field.inv(((k + e % m) ^ (e / m)) as u8).unwrap();
                if field == Field::Gf16 {
                    c | 0x10
                } else {
                    c
                }
            })
            .collect();
        let c = Calc {
            field,
            vec_count: k,
            vec_size: size,
            outputs: m,
            active: [true; 4],
            chunk: 64,
        };
        let want = c.compute_scalar(&mat, &inputs);
        let scalar = best_rate(rounds, secs, || {
            std::hint::black_box(c.compute_scalar(&mat, std::hint::black_box(&inputs)));
        })
        .0 * data;
        println!(
            "ec_speed field={field:?} k={k} m={m} len={size} kernel=scalar dot_mbps={scalar:.0} \
             calc_mbps={scalar:.0} x_scalar=1.00 best=0"
        );
        for kernel in Kernel::ALL.into_iter().filter(|k| k.available()) {
            assert!(c.compute_with(kernel, &mat, &inputs) == want, "{kernel:?}");
            let vecs: Vec<Input> = inputs.chunks(size).map(Input::from).collect();
            let mut outs = c.outputs_zero();
            let dot = c.dot_prod(kernel, &mat);
            let dot = best_rate(rounds, secs, || {
                let mut slots: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
                dot.apply(std::hint::black_box(&vecs), &mut slots);
            })
            .0 * data;
            let calc = best_rate(rounds, secs, || {
                std::hint::black_box(c.compute_with(kernel, &mat, std::hint::black_box(&inputs)));
            })
            .0 * data;
            println!(
                "ec_speed field={field:?} k={k} m={m} len={size} kernel={} dot_mbps={dot:.0} \
                 calc_mbps={calc:.0} x_scalar={:.2} best={}",
                kernel.name(),
                calc / scalar,
                u8::from(kernel == Kernel::best()),
            );
        }
    }
}
