//! The model's monotonic clock: nanoseconds since its first use. The engines' timers (RoCE
//! ACK/RNR timers, DCQCN, PFC pause quanta, wire faults) take time as a number passed in, so
//! host tests can move it; this is where the running model reads it.

use std::{sync::OnceLock, time::Instant};

/// Nanoseconds on the model's monotonic clock (since its first use).
pub fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}
