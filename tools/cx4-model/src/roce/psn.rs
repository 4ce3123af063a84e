//! Packet sequence numbers: 24-bit counters compared modulo 2^24 (IBTA vol 1 9.7.1).
//!
//! A PSN `a` is *ahead of* (after) `b` when `a - b mod 2^24` lies in `1..2^23`, *behind*
//! (before) it when the difference lies in `2^23..2^24` — the responder's valid region is the
//! 2^23 PSNs from the expected one on, its duplicate region the 2^23 before it. The same
//! arithmetic serves MSNs, which are 24-bit counters too.

use super::headers::MASK_24;

/// The number of distinct PSNs (2^24).
pub const PSN_MODULUS: u32 = 1 << 24;
/// Half the PSN space (2^23): the width of the "ahead" and of the "behind" window.
pub const PSN_HALF: u32 = 1 << 23;

/// A 24-bit packet sequence number; the constructor masks to 24 bits, so every value is valid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Psn(u32);

impl Psn {
    /// The PSN of the low 24 bits of `v`.
    pub const fn new(v: u32) -> Psn {
        Psn(v & MASK_24)
    }

    /// The 24-bit value.
    pub const fn value(self) -> u32 {
        self.0
    }

    /// `self + n` modulo 2^24.
    pub const fn add(self, n: u32) -> Psn {
        Psn::new(self.0.wrapping_add(n))
    }

    /// `self - n` modulo 2^24.
    pub const fn sub(self, n: u32) -> Psn {
        Psn::new(self.0.wrapping_sub(n))
    }

    /// The PSN after this one.
    pub const fn next(self) -> Psn {
        self.add(1)
    }

    /// The PSN before this one.
    pub const fn prev(self) -> Psn {
        self.sub(1)
    }

    /// How many increments lead from `self` to `to`: `to - self` modulo 2^24 (`0..2^24`).
    pub const fn distance_to(self, to: Psn) -> u32 {
        to.0.wrapping_sub(self.0) & MASK_24
    }

    /// The signed difference `self - other` in `-2^23..2^23`: positive when `self` is ahead.
    pub const fn diff(self, other: Psn) -> i32 {
        let d = other.distance_to(self);
        if d >= PSN_HALF {
            d as i32 - PSN_MODULUS as i32
        } else {
            d as i32
        }
    }

    /// Whether `self` is ahead of `other` (within the 2^23 PSNs after it).
    pub const fn is_after(self, other: Psn) -> bool {
        self.diff(other) > 0
    }

    /// Whether `self` is behind `other` (within the 2^23 PSNs before it).
    pub const fn is_before(self, other: Psn) -> bool {
        self.diff(other) < 0
    }

    /// Whether `self` lies in the inclusive window `first..=last` (walking forward from
    /// `first`); a window is at most 2^24 PSNs long.
    pub const fn in_window(self, first: Psn, last: Psn) -> bool {
        first.distance_to(self) <= first.distance_to(last)
    }
}

impl std::fmt::Display for Psn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#08x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_wraps() {
        assert_eq!(Psn::new(0x1ff_ffff).value(), 0xff_ffff);
        assert_eq!(Psn::new(0xff_ffff).next(), Psn::new(0));
        assert_eq!(Psn::new(0).prev(), Psn::new(0xff_ffff));
        assert_eq!(Psn::new(0xff_fffe).add(5), Psn::new(3));
        assert_eq!(Psn::new(3).sub(5), Psn::new(0xff_fffe));
        assert_eq!(Psn::new(0xff_fffe).add(u32::MAX), Psn::new(0xff_fffd));
    }

    #[test]
    fn distance_and_diff() {
        assert_eq!(Psn::new(0xff_fffe).distance_to(Psn::new(2)), 4);
        assert_eq!(
            Psn::new(2).distance_to(Psn::new(0xff_fffe)),
            PSN_MODULUS - 4
        );
        assert_eq!(Psn::new(2).diff(Psn::new(0xff_fffe)), 4);
        assert_eq!(Psn::new(0xff_fffe).diff(Psn::new(2)), -4);
        assert_eq!(Psn::new(7).diff(Psn::new(7)), 0);
        // Exactly half-way is "behind" (the duplicate region is 2^23 wide).
        assert_eq!(Psn::new(PSN_HALF).diff(Psn::new(0)), -(PSN_HALF as i32));
        assert_eq!(
            Psn::new(PSN_HALF - 1).diff(Psn::new(0)),
            PSN_HALF as i32 - 1
        );
    }

    #[test]
    fn ahead_and_behind_across_the_wrap() {
        let e = Psn::new(0xff_fff0);
        assert!(Psn::new(0x10).is_after(e));
        assert!(Psn::new(0xff_ff00).is_before(e));
        assert!(!e.is_after(e) && !e.is_before(e));
        assert!(e.add(PSN_HALF - 1).is_after(e));
        assert!(e.add(PSN_HALF).is_before(e));
    }

    #[test]
    fn windows() {
        let (a, b) = (Psn::new(0xff_fffe), Psn::new(1));
        assert!(Psn::new(0xff_ffff).in_window(a, b));
        assert!(Psn::new(0).in_window(a, b));
        assert!(a.in_window(a, b) && b.in_window(a, b));
        assert!(!Psn::new(2).in_window(a, b));
        assert!(!Psn::new(0xff_fffd).in_window(a, b));
        assert!(a.in_window(a, a));
    }

    #[test]
    fn diff_is_exhaustively_antisymmetric_on_a_sample() {
        let mut x = 0x1234_5678u32;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let (a, b) = (Psn::new(x), Psn::new(x.rotate_left(11)));
            let d = a.diff(b);
            assert_eq!(b.add(d as u32), a);
            if d != -(PSN_HALF as i32) {
                assert_eq!(b.diff(a), -d);
            }
        }
    }
}
