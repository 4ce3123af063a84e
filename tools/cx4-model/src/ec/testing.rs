//! Helpers of the engine's tests and host benchmarks: reproducible data, best-of-rounds
//! timing and the benchmarks' environment settings. (`roce/`'s EC and packet tests carry older copies of both; they can use these.)

use std::time::{Duration, Instant};

/// xorshift64*: reproducible test data.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// The next 64 bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (> 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next() >> 32) as u8).collect()
    }
}

/// Calls of `f` per second, best of `rounds` rounds of at least `secs` (and two calls) each,
/// with the total number of calls.
pub(crate) fn best_rate(rounds: usize, secs: f64, mut f: impl FnMut()) -> (f64, usize) {
    let mut best = 0f64;
    let mut total = 0;
    for _ in 0..rounds {
        let t0 = Instant::now();
        let mut n = 0usize;
        while n < 2 || t0.elapsed() < Duration::from_secs_f64(secs) {
            f();
            n += 1;
        }
        best = best.max(n as f64 / t0.elapsed().as_secs_f64());
        total += n;
    }
    (best, total)
}

/// A host benchmark's setting from the environment variable `key`, if set and valid.
pub(crate) fn bench_env<T: std::str::FromStr>(key: &str) -> Option<T> {
    std::env::var(key).ok().and_then(|s| s.parse().ok())
}

/// `CX4_BENCH_SECONDS` (default 0.25) and `CX4_BENCH_ROUNDS` (default 3): a benchmark's
/// round length and count.
pub(crate) fn bench_rounds() -> (f64, usize) {
    (
        bench_env("CX4_BENCH_SECONDS").unwrap_or(0.25),
        bench_env("CX4_BENCH_ROUNDS").map_or(3, |r: f64| r as usize),
    )
}
