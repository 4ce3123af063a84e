//! The model's monotonic clock: nanoseconds since its first use. The engines' timers (RoCE
//! ACK/RNR timers, DCQCN, PFC pause quanta, wire faults) take time as a number passed in, so
//! host tests can move it; this is where the running model reads it. Also the calling
//! thread's CPU time, which the data path's counters sample ([`crate::path_stats`]).

use std::{sync::OnceLock, time::Instant};

/// Nanoseconds on the model's monotonic clock (since its first use).
pub fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// The card's free-running clock at `now_ns` (the model's clock, [`now_ns`]): device clock
/// cycles at `device_frequency_khz`, as the initialization segment's `internal_timer` counts
/// them and completions carry them (ConnectX-4 has no real-time clock mode; mlx5's clock.c
/// turns the cycles into time in software).
pub fn device_cycles(now_ns: u64, khz: u64) -> u64 {
    (u128::from(now_ns) * u128::from(khz.max(1)) / 1_000_000) as u64
}

/// CPU time of the calling thread in ns (without preemption). A system call: the vDSO serves
/// only the global clocks, not `CLOCK_THREAD_CPUTIME_ID`.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to the valid pointer it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
