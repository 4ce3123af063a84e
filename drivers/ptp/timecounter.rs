// SPDX-License-Identifier: GPL-2.0
//! Nanoseconds from a free-running cycle counter (`include/linux/timecounter.h`,
//! `kernel/time/timecounter.c`), in Rust: the arithmetic of `struct cyclecounter` and
//! `struct timecounter` without the `read` callback. The caller reads its counter and hands
//! the (masked) value in, so the state is plain data it keeps under its own lock.
//!
//! A driver of a clock without a time-of-day register (ConnectX-4's internal timer, many NICs'
//! free-running counters) keeps a [`TimeCounter`]: [`TimeCounter::read`] at least twice per
//! wrap of the counter (the PTP auxiliary work), [`TimeCounter::cyc2time`] for the counter
//! values its hardware put in completions, [`TimeCounter::adjtime`] and
//! [`TimeCounter::set_mult`] (with [`adjust_by_scaled_ppm`]) for the PTP clock's `adjtime` and
//! `adjfine`.

/// The conversion of a counter's cycles to nanoseconds (`struct cyclecounter`):
/// `ns = cycles * mult >> shift`, on the low `mask` bits of the counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CycleCounter {
    /// The counter's valid bits (`CYCLECOUNTER_MASK(bits)`).
    pub mask: u64,
    /// Cycles to nanoseconds multiplier.
    pub mult: u32,
    /// Cycles to nanoseconds divisor, a power of two.
    pub shift: u32,
}

/// `CYCLECOUNTER_MASK(bits)`: the low `bits` bits set.
pub const fn mask(bits: u32) -> u64 {
    if bits < 64 {
        (1u64 << bits) - 1
    } else {
        u64::MAX
    }
}

/// The multiplier that turns cycles of a `khz` counter into nanoseconds with `shift`
/// (`clocksource_khz2mult()`, rounded to nearest); 0 if `khz` is 0 or `10^6 << shift` does not
/// fit 64 bits.
pub const fn khz2mult(khz: u32, shift: u32) -> u32 {
    if khz == 0 || shift > 43 {
        return 0;
    }
    let tmp = (1_000_000u64 << shift) + khz as u64 / 2;
    (tmp / khz as u64) as u32
}

/// `base` adjusted by `scaled_ppm` parts per million with a 16-bit binary fraction
/// (`adjust_by_scaled_ppm()`): the multiplier of a clock `adjfine` asks to run that much
/// faster (or slower, negative). Exact for `|scaled_ppm| < 2^50` (the PTP core keeps it
/// within the clock's `max_adj`, an `i32` of parts per billion, i.e. below 2^38).
pub const fn adjust_by_scaled_ppm(base: u64, scaled_ppm: i64) -> u64 {
    // 10^6 << 16 = 15625 << 22. No 128-bit division in the kernel: `base * ppm / D` as
    // `(base / D) * ppm + (base % D) * ppm / D`, the remainder's product shifted first.
    const D: u64 = 1_000_000 << 16;
    let ppm = scaled_ppm.unsigned_abs();
    let rem = (((base % D) as u128 * ppm as u128) >> 22) as u64 / 15625;
    let diff = (base / D).wrapping_mul(ppm).wrapping_add(rem);
    if scaled_ppm < 0 {
        base.wrapping_sub(diff)
    } else {
        base.wrapping_add(diff)
    }
}

impl CycleCounter {
    /// A counter of `bits` bits ticking at `khz`, with `shift` (the multiplier from
    /// [`khz2mult`]).
    pub const fn from_khz(khz: u32, shift: u32, bits: u32) -> Self {
        Self {
            mask: mask(bits),
            mult: khz2mult(khz, shift),
            shift,
        }
    }

    /// `cyclecounter_cyc2ns()`: nanoseconds of `cycles`, keeping the fraction below `frac_mask`
    /// in `frac` (added in first).
    pub fn cyc2ns(&self, cycles: u64, frac_mask: u64, frac: &mut u64) -> u64 {
        let ns = cycles
            .wrapping_mul(u64::from(self.mult))
            .wrapping_add(*frac);
        *frac = ns & frac_mask;
        ns >> self.shift
    }

    /// `cc_cyc2ns_backwards()`: nanoseconds of `cycles` before a point whose fraction was
    /// `frac`.
    fn cyc2ns_backwards(&self, cycles: u64, frac: u64) -> u64 {
        cycles.wrapping_mul(u64::from(self.mult)).wrapping_sub(frac) >> self.shift
    }
}

/// Time kept from a [`CycleCounter`] (`struct timecounter`): nanoseconds at the last read
/// counter value, with the sub-nanosecond fraction carried over.
#[derive(Clone, Copy, Debug)]
pub struct TimeCounter {
    cc: CycleCounter,
    cycle_last: u64,
    nsec: u64,
    frac_mask: u64,
    frac: u64,
}

impl TimeCounter {
    /// `timecounter_init()`: the counter read `now` (masked) at time `start_ns`.
    pub const fn new(cc: CycleCounter, now: u64, start_ns: u64) -> Self {
        Self {
            cc,
            cycle_last: now,
            nsec: start_ns,
            frac_mask: if cc.shift < 64 {
                (1u64 << cc.shift) - 1
            } else {
                u64::MAX
            },
            frac: 0,
        }
    }

    /// The conversion in use.
    pub const fn cycle_counter(&self) -> &CycleCounter {
        &self.cc
    }

    /// The counter value of the last read (`tc.cycle_last`).
    pub const fn cycle_last(&self) -> u64 {
        self.cycle_last
    }

    /// The time at the last read, nanoseconds (`tc.nsec`).
    pub const fn nsec(&self) -> u64 {
        self.nsec
    }

    /// The sub-nanosecond rest carried over from the last read (`tc.frac`, in units of
    /// 2^-shift ns).
    pub const fn frac(&self) -> u64 {
        self.frac
    }

    /// `timecounter_read()`: advances to the counter value `now` (read by the caller, not more
    /// than one wrap after the last read) and returns the time then.
    pub fn read(&mut self, now: u64) -> u64 {
        let delta = now.wrapping_sub(self.cycle_last) & self.cc.mask;
        let ns = self.cc.cyc2ns(delta, self.frac_mask, &mut self.frac);
        self.cycle_last = now;
        self.nsec = self.nsec.wrapping_add(ns);
        self.nsec
    }

    /// `timecounter_adjtime()`: shifts the time by `delta` nanoseconds.
    pub fn adjtime(&mut self, delta: i64) {
        self.nsec = self.nsec.wrapping_add_signed(delta);
    }

    /// Sets the multiplier (`adjfine`). Call [`TimeCounter::read`] first, so that the time
    /// elapsed until now is counted at the old rate.
    pub fn set_mult(&mut self, mult: u32) {
        self.cc.mult = mult;
    }

    /// `timecounter_cyc2time()`: the time of counter value `cycles`, which may lie up to half
    /// the counter's range before or after the last read.
    pub fn cyc2time(&self, cycles: u64) -> u64 {
        let cc = &self.cc;
        let delta = cycles.wrapping_sub(self.cycle_last) & cc.mask;
        if delta > cc.mask / 2 {
            let back = self.cycle_last.wrapping_sub(cycles) & cc.mask;
            self.nsec.wrapping_sub(cc.cyc2ns_backwards(back, self.frac))
        } else {
            let mut frac = self.frac;
            self.nsec
                .wrapping_add(cc.cyc2ns(delta, self.frac_mask, &mut frac))
        }
    }
}
