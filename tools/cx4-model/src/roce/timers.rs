//! The transport's two timer encodings (IBTA vol 1 9.7.6): the local ACK timeout
//! (`4.096 µs × 2^code`, 5 bits, 0 = infinite) and the RNR NAK timer (a 5-bit code from a
//! table, 0 meaning the longest, 655.36 ms). Durations are in nanoseconds, the unit of the
//! "now" the engine is given.

/// The RNR NAK timer in microseconds for each 5-bit code (IBTA table 45; the same table as
/// `ib_rnr_timeout` and rxe's `rnrnak_usec`).
pub const RNR_TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// The base unit of the local ACK timeout: 4.096 µs.
pub const ACK_TIMEOUT_UNIT_NS: u64 = 4_096;

/// The RNR wait for timer code `code` (only its low 5 bits count), in nanoseconds.
pub fn rnr_timer_ns(code: u8) -> u64 {
    let us = RNR_TIMER_US
        .get(usize::from(code & 0x1f))
        .copied()
        .unwrap_or(0);
    u64::from(us) * 1_000
}

/// The local ACK timeout for the QP's `ack_timeout` code (5 bits, higher bits ignored):
/// `4.096 µs × 2^code`, or `None` for code 0 (the timer is disabled: wait forever).
pub fn ack_timeout_ns(code: u8) -> Option<u64> {
    match code & 0x1f {
        0 => None,
        c => Some(ACK_TIMEOUT_UNIT_NS << c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rnr_table() {
        assert_eq!(rnr_timer_ns(0), 655_360_000);
        assert_eq!(rnr_timer_ns(1), 10_000);
        assert_eq!(rnr_timer_ns(14), 1_280_000);
        assert_eq!(rnr_timer_ns(31), 491_520_000);
        assert_eq!(rnr_timer_ns(0x20 | 1), 10_000);
        // Strictly increasing from code 1 on.
        assert!(RNR_TIMER_US[1..].windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn ack_timeouts() {
        assert_eq!(ack_timeout_ns(0), None);
        assert_eq!(ack_timeout_ns(1), Some(8_192));
        assert_eq!(ack_timeout_ns(14), Some(67_108_864)); // ~67 ms, mlx5_ib's common value
        assert_eq!(ack_timeout_ns(31), Some(4_096 << 31));
        assert_eq!(ack_timeout_ns(0x20), None);
    }
}
