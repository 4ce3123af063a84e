// SPDX-License-Identifier: GPL-2.0
//! The card's clock as a PTP hardware clock (lib/clock.c, as it runs on a ConnectX-4: no
//! real-time clock mode). The card counts a free-running internal timer at
//! `device_frequency_khz` (the initialization segment's `internal_timer_h`/`_l`, the value its
//! completions carry); the time is kept in software over it: a timecounter whose multiplier
//! `adjfine` scales, whose time `adjtime` and `settime` move, read by the PTP core's
//! auxiliary work at least twice per wrap of the 41 bits mlx5 uses
//! (`mlx5_timestamp_overflow`). [`Clock`] registers it as `/dev/ptpN` under the PCI device;
//! [`Timer::cyc2time`] turns a CQE's timestamp into the clock's time for the Ethernet layer.
//!
//! The clock-info page (`struct mlx5_ib_clock_info`, mlx5-abi.h; clock.c `mdev->clock_info`)
//! publishes the timecounter to processes, which map it read-only through the RDMA device
//! (`mlx5dv_get_clock_info`) and convert completion timestamps themselves: written at start
//! and after every change of the time (adjfine, adjtime, settime, the periodic read), under a
//! sequence word (`sign`) that is odd while the kernel writes.

use cx4_hw::iseg;
use kapi::{
    new_bh_lock,
    BhLock,
    SharedPage, //
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        barrier::{
            smp_mb,
            smp_wmb, //
        },
        Arc,
        Mutex, //
    },
    time::{
        msecs_to_jiffies,
        Jiffies, //
    },
};
use ptp::{
    timecounter::{
        adjust_by_scaled_ppm,
        CycleCounter,
        TimeCounter, //
    },
    ClockOps,
    Registration,
    SystemTimestamps, //
};

use crate::{
    iseg::Bar0,
    mdev::Mdev, //
};

/// The counter bits the timecounter uses (clock.c: `CLOCKSOURCE_MASK(41)`).
const TIMER_BITS: u32 = 41;
/// The largest frequency adjustment, parts per billion (clock.c `mlx5_ptp_clock_info`, for a
/// card without the MTUTC register).
const MAX_ADJ_PPB: i32 = 50_000_000;

/// `struct mlx5_ib_clock_info` (mlx5-abi.h): the byte offsets of its fields.
mod info {
    pub(super) const SIGN: usize = 0;
    pub(super) const NSEC: usize = 8;
    pub(super) const CYCLES: usize = 16;
    pub(super) const FRAC: usize = 24;
    pub(super) const MULT: usize = 32;
    pub(super) const SHIFT: usize = 36;
    pub(super) const MASK: usize = 40;
    pub(super) const OVERFLOW_PERIOD: usize = 48;
    /// `MLX5_IB_CLOCK_INFO_KERNEL_UPDATING`: set in `sign` while the kernel writes.
    pub(super) const KERNEL_UPDATING: u32 = 1;
}

/// The cycle counter's shift for a `khz` clock (clock.c `mlx5_ptp_shift_constant`): as large
/// as lets `adjfine` move the multiplier by about one scaled ppm, while a millisecond's worth
/// of cycles times the multiplier stays within 32 bits.
fn shift_for(khz: u32) -> u32 {
    let a = khz.ilog2() + 16;
    let b = (u64::from(u32::MAX / 1_000_000) * u64::from(khz)).ilog2();
    a.min(b)
}

/// How often the time must be read so that no more than a third of the counter's range nor
/// more cycles than the multiplier can take without overflowing 64 bits pass in between
/// (clock.c `mlx5_init_overflow_period`); at least every second.
fn overflow_period(cc: &CycleCounter) -> Jiffies {
    let cycles = ((u64::MAX >> 1) / u64::from(cc.mult.max(1))).min(cc.mask / 3);
    let ns = cc.cyc2ns(cycles, 0, &mut 0);
    match msecs_to_jiffies(u32::try_from(ns / 1_000_000).unwrap_or(u32::MAX)) {
        0 => msecs_to_jiffies(1000),
        j => j,
    }
}

/// The internal timer and the time kept over it.
#[pin_data]
pub(crate) struct Timer {
    bar: Arc<Bar0>,
    /// The timer bits in use ([`TIMER_BITS`]).
    mask: u64,
    /// The multiplier of the nominal frequency (`adjfine` scales this one).
    nominal_mult: u32,
    overflow: Jiffies,
    /// The clock-info page, if it could be allocated (clock.c: a warning, no page).
    info: Option<SharedPage>,
    /// Serialises the clock's operations (clock.c `mlx5_clock_lock`); holds the clock-info
    /// page's `sign`, which every update moves on by 2.
    #[pin]
    ops: Mutex<u32>,
    /// The time; read from NAPI polls (the CQEs' timestamps), written under `ops`.
    #[pin]
    tc: BhLock<TimeCounter>,
}

impl Timer {
    /// Reads the internal timer (clock.c `mlx5_read_time`): high word, low word, high word
    /// again, and the low word once more if the high word moved in between; the system time
    /// is taken around the low word's read.
    fn read(&self, sts: &mut SystemTimestamps<'_>) -> Result<u64> {
        let lo = |sts: &mut SystemTimestamps<'_>| -> Result<u32> {
            sts.pre();
            let v = self.bar.read_be32(iseg::INTERNAL_TIMER_L);
            sts.post();
            v
        };
        let hi = self.bar.read_be32(iseg::INTERNAL_TIMER_H)?;
        let mut l = lo(sts)?;
        let hi1 = self.bar.read_be32(iseg::INTERNAL_TIMER_H)?;
        if hi != hi1 {
            l = lo(sts)?;
        }
        Ok((u64::from(hi1) << 32 | u64::from(l)) & self.mask)
    }

    /// The clock's time of the timer value `cycles` (a CQE's timestamp), in nanoseconds
    /// (en/ptp.h `mlx5e_cqe_ts_to_ns` over clock.h `mlx5_timecounter_cyc2time`).
    pub(crate) fn cyc2time(&self, cycles: u64) -> i64 {
        self.tc.lock().cyc2time(cycles & self.mask) as i64
    }

    /// Brings the time up to the timer's value now, under `ops` (clock.c: `timecounter_read`).
    fn advance(&self) -> Result {
        let now = self.read(&mut SystemTimestamps::none())?;
        self.tc.lock().read(now);
        Ok(())
    }

    /// The clock-info page processes map (`MLX5_IB_MMAP_CLOCK_INFO`), if there is one.
    pub(crate) fn info_page(&self) -> Option<&SharedPage> {
        self.info.as_ref()
    }

    /// Fills the clock-info page at start (clock.c `mlx5_init_clock_info` and
    /// `mlx5_init_overflow_period`): the timecounter, its nominal multiplier, shift and mask,
    /// and the period of the kernel's reads (in jiffies, as mlx5 gives it).
    fn init_info(&self) -> Result {
        let Some(p) = &self.info else {
            return Ok(());
        };
        let tc = *self.tc.lock();
        p.write64(info::NSEC, tc.nsec())?;
        p.write64(info::CYCLES, tc.cycle_last())?;
        p.write64(info::MASK, self.mask)?;
        p.write32(info::MULT, self.nominal_mult)?;
        p.write32(info::SHIFT, tc.cycle_counter().shift)?;
        p.write64(info::FRAC, tc.frac())?;
        p.write64(info::OVERFLOW_PERIOD, self.overflow as u64)
    }

    /// Publishes the timecounter after a change, under `ops` whose `sign` it is (clock.c
    /// `mlx5_update_clock_info_page`): `sign` odd (`smp_store_mb`), the values, then `sign`
    /// two on from where it was (`smp_store_release`). A reader that saw the same even `sign`
    /// before and after its copy has a consistent one.
    fn publish(&self, sign: &mut u32) {
        let Some(p) = &self.info else {
            return;
        };
        let tc = *self.tc.lock();
        // Offsets inside the page, aligned: these stores cannot fail.
        let _ = p.write32(info::SIGN, *sign | info::KERNEL_UPDATING);
        // CPU barriers, not device ones: the page's readers are processes (libmlx5's
        // `mlx5dv_get_clock_info`, which pairs its loads of `sign` around the copy with
        // `rmb`s); the card never sees it. The odd `sign` before the values.
        smp_mb();
        let _ = p.write64(info::CYCLES, tc.cycle_last());
        let _ = p.write32(info::MULT, tc.cycle_counter().mult);
        let _ = p.write64(info::NSEC, tc.nsec());
        let _ = p.write64(info::FRAC, tc.frac());
        // The values before the even `sign` that publishes them.
        smp_wmb();
        *sign = sign.wrapping_add(2 * info::KERNEL_UPDATING);
        let _ = p.write32(info::SIGN, *sign);
    }
}

#[vtable]
impl ClockOps for Timer {
    /// clock.c `mlx5_ptp_adjfine`: the time so far at the old rate, then the new multiplier.
    fn adjfine(&self, scaled_ppm: i64) -> Result {
        let mut sign = self.ops.lock();
        let mult = adjust_by_scaled_ppm(self.nominal_mult.into(), scaled_ppm);
        let mult = u32::try_from(mult).map_err(|_| ERANGE)?;
        self.advance()?;
        self.tc.lock().set_mult(mult);
        self.publish(&mut sign);
        Ok(())
    }

    /// clock.c `mlx5_ptp_adjtime`.
    fn adjtime(&self, delta: i64) -> Result {
        let mut sign = self.ops.lock();
        self.tc.lock().adjtime(delta);
        self.publish(&mut sign);
        Ok(())
    }

    /// clock.c `mlx5_ptp_gettimex`.
    fn gettimex(&self, sts: &mut SystemTimestamps<'_>) -> Result<i64> {
        let _g = self.ops.lock();
        let cycles = self.read(sts)?;
        Ok(self.cyc2time(cycles))
    }

    /// clock.c `mlx5_clock_settime`: the timecounter starts again at `ns`.
    fn settime(&self, ns: i64) -> Result {
        let mut sign = self.ops.lock();
        let now = self.read(&mut SystemTimestamps::none())?;
        {
            let mut tc = self.tc.lock();
            *tc = TimeCounter::new(*tc.cycle_counter(), now, ns as u64);
        }
        self.publish(&mut sign);
        Ok(())
    }

    /// clock.c `mlx5_timestamp_overflow`.
    fn do_aux_work(&self) -> Option<Jiffies> {
        let mut sign = self.ops.lock();
        // A device that no longer answers: try again next period.
        if self.advance().is_ok() {
            self.publish(&mut sign);
        }
        Some(self.overflow)
    }
}

/// The function's PTP hardware clock, registered for as long as this lives.
pub(crate) struct Clock {
    reg: Registration<Timer>,
}

impl Clock {
    /// Registers the clock of a device whose timer runs at `khz` (the general capability
    /// `device_frequency_khz`), starting at the system's real time (clock.c
    /// `mlx5_init_clock`); `ENODEV` if the device gives no frequency.
    pub(crate) fn register(m: &Mdev, khz: u32) -> Result<Self> {
        if khz == 0 {
            return Err(ENODEV);
        }
        let cc = CycleCounter::from_khz(khz, shift_for(khz), TIMER_BITS);
        let timer = Arc::pin_init(
            pin_init!(Timer {
                bar: m.bar.clone(),
                mask: cc.mask,
                nominal_mult: cc.mult,
                overflow: overflow_period(&cc),
                info: SharedPage::new().ok(),
                ops <- new_mutex!(0),
                tc <- new_bh_lock!(TimeCounter::new(cc, 0, 0), "cx4::clock"),
            }),
            GFP_KERNEL,
        )?;
        // clock.c `mlx5_timecounter_init`: the system's real time at the timer's value now.
        timer.settime(ptp::realtime_ns())?;
        timer.init_info()?;
        let reg = Registration::new(
            m.dev.get(),
            &crate::THIS_MODULE,
            c"cx4_ptp",
            MAX_ADJ_PPB,
            timer,
        )?;
        Ok(Self { reg })
    }

    /// The clock's index (`/dev/ptpN`), the netdev's `phc_index`.
    pub(crate) fn index(&self) -> i32 {
        self.reg.index()
    }

    /// The timer, to convert completion timestamps ([`Timer::cyc2time`]).
    pub(crate) fn timer(&self) -> &Arc<Timer> {
        self.reg.data()
    }
}

#[kunit_tests(cx4_clock)]
#[allow(unsafe_code)] // The suite's registration, generated by the kernel's `kunit_tests` macro.
mod tests {
    use super::*;

    /// ConnectX-4's (and the model's) `device_frequency_khz`.
    const KHZ: u32 = 156_250;
    /// Timer cycles in a second at [`KHZ`].
    const SECOND: u64 = 156_250_000;

    fn counter() -> CycleCounter {
        CycleCounter::from_khz(KHZ, shift_for(KHZ), TIMER_BITS)
    }

    #[test]
    fn the_cycle_counter_is_mlx5s() {
        // clock.c for 156.25 MHz: shift min(17 + 16, ilog2(4294 * 156250)) = 29, the
        // multiplier `clocksource_khz2mult(156250, 29)`, 41 bits.
        let cc = counter();
        assert_eq!(cc.shift, 29);
        assert_eq!(cc.mult, 3_435_973_837);
        assert_eq!(cc.mask, (1u64 << 41) - 1);
        assert_eq!(cc.cyc2ns(SECOND, 0, &mut 0), 1_000_000_000);
        // Read at least every 17.18 s: 2^63 / mult cycles (a third of the range is 1.3 h).
        assert_eq!(overflow_period(&cc), msecs_to_jiffies(17_179));
    }

    #[test]
    fn time_runs_from_the_start_both_ways_and_across_the_wrap() {
        let cc = counter();
        let tc = TimeCounter::new(cc, SECOND, 5_000_000_000);
        assert_eq!(tc.cyc2time(2 * SECOND), 6_000_000_000);
        // A timestamp from before the last read (a CQE older than the worker's read).
        assert_eq!(tc.cyc2time(SECOND - 156_250), 4_999_000_000);
        let mut tc = TimeCounter::new(cc, cc.mask - 10, 0);
        // 16 cycles later, past the 41-bit wrap: 102.4 ns.
        assert_eq!(tc.cyc2time(5), 102);
        assert_eq!(tc.read(5), 102);
        tc.adjtime(-2);
        assert_eq!(tc.cyc2time(5), 100);
    }

    #[test]
    fn adjfine_scales_the_rate_from_then_on() {
        let cc = counter();
        let mult = u64::from(cc.mult);
        // 100 ppm either way (scaled ppm: a 16-bit binary fraction).
        assert_eq!(adjust_by_scaled_ppm(mult, 100 << 16), 3_436_317_434);
        assert_eq!(adjust_by_scaled_ppm(mult, -(100 << 16)), 3_435_630_240);
        assert_eq!(adjust_by_scaled_ppm(mult, 0), mult);
        let mut tc = TimeCounter::new(cc, 0, 0);
        assert_eq!(tc.read(SECOND), 1_000_000_000);
        tc.set_mult(3_436_317_434);
        // The second second runs 100 ppm fast (the first's sub-nanosecond rest carried over);
        // the first stays as it was counted.
        assert_eq!(tc.cyc2time(2 * SECOND), 2_000_100_000);
    }
}
