//! The DCQCN reaction point of one QP: the rate limiter a CNP creates and cuts, and the
//! timers and byte counter that let the rate recover (Zhu et al., "Congestion Control for
//! Large-Scale RDMA Deployments", SIGCOMM 2015, with ConnectX's parameters,
//! [`crate::fw::cong::RpParams`]).
//!
//! Pure: time is passed in (ns on the engine clock) and the timers run lazily — every call
//! first catches the limiter up to "now" ([`RateLimiter::advance`]), so nothing needs to wake
//! for a timer while the QP sends nothing.
//!
//! Rates are kept in kb/s (the parameters are Mb/s). The rules:
//! - The first CNP creates the limiter at the highest rate (`rpg_max_rate`, 0: the port's
//!   speed) with alpha = `initial_alpha_value` and the target rate = the current rate; with
//!   `rate_to_set_on_first_cnp` both rates start there instead of being cut.
//! - A CNP (once per `rate_reduce_monitor_period`; one inside it only marks the alpha
//!   period): the target rate becomes the current rate if `clamp_tgt_rate`, or if
//!   `clamp_tgt_rate_after_time_inc` and the timer raised the rate since the last cut, or on
//!   the first CNP; then current ← current − current × alpha / 2^`rpg_gd` (alpha in 1024ths:
//!   with `rpg_gd` 11 the paper's Rc × (1 − α/2)), at least `rpg_min_dec_fac` % of it and
//!   at least `rpg_min_rate`; the increase stages restart.
//! - Alpha, every `dce_tcp_rtt`: α ← α·g/1024 + (1024 − g) if a CNP came in the period, else
//!   α ← α·g/1024 (`dce_tcp_g` = g).
//! - Increase events: the timer every `rpg_time_reset` without a CNP (stage T), and every
//!   `rpg_byte_reset` × 64 bytes sent (stage BC). After counting the event, with F =
//!   `rpg_threshold`: max(T, BC) ≤ F is fast recovery (current ← (target + current) / 2);
//!   min(T, BC) > F hyper increase (target += (min(T, BC) − F) × `rpg_hai_rate`); otherwise
//!   additive increase (target += `rpg_ai_rate`), both then current ← (target + current) / 2.
//!   Rates never exceed the highest rate; a limiter back at it is done (the flow is no longer
//!   rate limited).
//! - Pacing: a packet of L bytes sent at the current rate R keeps the next one back for
//!   L × 8 / R; a QP that fell behind by up to [`CATCH_UP_NS`] (the wire thread wakes with
//!   millisecond granularity) sends the missed packets back to back, beyond that the schedule
//!   restarts from now.

use crate::fw::cong::RpParams;

/// How far behind its schedule a paced QP may catch up by sending back to back, ns.
pub const CATCH_UP_NS: u64 = 1_000_000;
/// The most timer events one [`RateLimiter::advance`] runs (the rate is at its highest long
/// before with any parameters the commands accept).
const MAX_TIMER_EVENTS: u32 = 1 << 20;

/// The rate limiter of one QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimiter {
    /// Current rate, kb/s.
    pub current: u64,
    /// Target rate, kb/s.
    pub target: u64,
    /// Alpha, 1024ths.
    pub alpha: u32,
    /// The highest rate, kb/s.
    pub max: u64,
    alpha_cnp: bool,
    alpha_next: u64,
    timer_next: u64,
    t: u32,
    bc: u32,
    bytes: u64,
    last_cut: Option<u64>,
    timer_raised: bool,
    next_send: u64,
}

/// What a CNP did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CnpEffect {
    /// The rate was cut.
    Reduced,
    /// Inside the monitor period: only the alpha period noted it.
    Noted,
}

fn us(v: u32) -> u64 {
    u64::from(v) * 1000
}

fn kbps(mbps: u32) -> u64 {
    u64::from(mbps) * 1000
}

impl RateLimiter {
    /// The limiter the first CNP at `now` creates (and cuts); `line_kbps` is the port's speed.
    pub fn first_cnp(now: u64, p: &RpParams, line_kbps: u64) -> RateLimiter {
        let max = match p.max_rate {
            0 => line_kbps,
            m => kbps(m).min(line_kbps),
        }
        .max(1);
        let mut r = RateLimiter {
            current: max,
            target: max,
            alpha: p.initial_alpha.min(1023),
            max,
            alpha_cnp: false,
            alpha_next: now + us(p.dce_tcp_rtt_us.max(1)),
            timer_next: now + us(p.time_reset_us.max(1)),
            t: 0,
            bc: 0,
            bytes: 0,
            last_cut: None,
            timer_raised: false,
            next_send: now,
        };
        if p.rate_on_first_cnp != 0 {
            r.current = kbps(p.rate_on_first_cnp).min(max);
            r.target = r.current;
            r.restart(now, p);
            r.last_cut = Some(now);
            r.alpha_cnp = true;
        } else {
            r.on_cnp(now, p);
        }
        r
    }

    /// A CNP for the QP at `now`.
    pub fn on_cnp(&mut self, now: u64, p: &RpParams) -> CnpEffect {
        self.advance(now, p);
        self.alpha_cnp = true;
        if self
            .last_cut
            .is_some_and(|t| now.saturating_sub(t) < us(p.monitor_period_us))
        {
            return CnpEffect::Noted;
        }
        let first = self.last_cut.is_none();
        if first || p.clamp_tgt_rate || (p.clamp_tgt_rate_ati && self.timer_raised) {
            self.target = self.current;
        }
        let cut = ((u128::from(self.current) * u128::from(self.alpha)) >> p.gd.min(63)) as u64;
        let floor = (self.current * u64::from(p.min_dec_fac.min(100)) / 100)
            .max(kbps(p.min_rate))
            .min(self.max);
        self.current = self.current.saturating_sub(cut).max(floor);
        self.last_cut = Some(now);
        self.restart(now, p);
        CnpEffect::Reduced
    }

    /// Restarts the increase stages (after a cut).
    fn restart(&mut self, now: u64, p: &RpParams) {
        self.t = 0;
        self.bc = 0;
        self.bytes = 0;
        self.timer_raised = false;
        self.timer_next = now + us(p.time_reset_us.max(1));
    }

    /// Runs the alpha updates and increase timer events due by `now`.
    pub fn advance(&mut self, now: u64, p: &RpParams) {
        let rtt = us(p.dce_tcp_rtt_us.max(1));
        let g = u64::from(p.dce_tcp_g.min(1023));
        while self.alpha_next <= now {
            if self.alpha == 0 && !self.alpha_cnp {
                // Nothing changes any more: skip the remaining periods at once.
                self.alpha_next += (now - self.alpha_next) / rtt * rtt + rtt;
                break;
            }
            let a = u64::from(self.alpha) * g / 1024;
            self.alpha = if std::mem::take(&mut self.alpha_cnp) {
                (a + 1024 - g).min(1023) as u32
            } else {
                a as u32
            };
            self.alpha_next += rtt;
        }
        let period = us(p.time_reset_us.max(1));
        let mut n = 0;
        while self.timer_next <= now && !self.done() && n < MAX_TIMER_EVENTS {
            self.t = self.t.saturating_add(1);
            self.increase(p, true);
            self.timer_next += period;
            n += 1;
        }
        if self.timer_next <= now {
            self.timer_next = now + period;
        }
    }

    /// One increase event (after its stage counted it).
    fn increase(&mut self, p: &RpParams, timer: bool) {
        let f = p.threshold;
        let (hi, lo) = (self.t.max(self.bc), self.t.min(self.bc));
        if hi > f {
            let step = if lo > f {
                u64::from(lo - f) * kbps(p.hai_rate)
            } else {
                kbps(p.ai_rate)
            };
            self.target = self.target.saturating_add(step).min(self.max);
        }
        self.current = (self.target + self.current).div_ceil(2).min(self.max);
        if timer {
            self.timer_raised = true;
        }
    }

    /// A packet of `bytes` bytes left at `now`: the pacing schedule and the byte counter.
    pub fn on_sent(&mut self, bytes: usize, now: u64, p: &RpParams) {
        self.advance(now, p);
        let start = if now > self.next_send.saturating_add(CATCH_UP_NS) {
            now
        } else {
            self.next_send
        };
        self.next_send = start + self.tx_ns(bytes);
        if p.byte_reset > 0 && !self.done() {
            self.bytes += bytes as u64;
            let unit = u64::from(p.byte_reset) * 64;
            while self.bytes >= unit && !self.done() {
                self.bytes -= unit;
                self.bc = self.bc.saturating_add(1);
                self.increase(p, false);
            }
        }
    }

    /// Time `bytes` bytes take at the current rate, ns.
    pub fn tx_ns(&self, bytes: usize) -> u64 {
        (bytes as u64 * 8 * 1_000_000).div_ceil(self.current.max(1))
    }

    /// When the next packet may leave (ns).
    pub fn next_send(&self) -> u64 {
        self.next_send
    }

    /// Whether a packet may leave at `now`.
    pub fn may_send(&self, now: u64) -> bool {
        self.next_send <= now
    }

    /// The rate is back at its highest: the QP is no longer rate limited.
    pub fn done(&self) -> bool {
        self.current >= self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: u64 = 100_000_000; // 100 Gb/s in kb/s

    /// The defaults (ConnectX-4's).
    fn params() -> RpParams {
        RpParams::default()
    }

    #[test]
    fn first_cnp_cuts_the_line_rate_by_alpha_over_two() {
        let p = params();
        let r = RateLimiter::first_cnp(0, &p, LINE);
        // 100 Gb/s − 100 Gb/s × 1023 / 2048.
        let want = LINE - LINE * 1023 / 2048;
        assert_eq!(r.current, want);
        assert_eq!(r.target, LINE);
        assert_eq!(r.alpha, 1023);
        assert!(!r.done());
    }

    #[test]
    fn cnps_inside_the_monitor_period_only_raise_alpha() {
        let p = params();
        let mut r = RateLimiter::first_cnp(0, &p, LINE);
        let c = r.current;
        assert_eq!(r.on_cnp(3_000, &p), CnpEffect::Noted);
        assert_eq!(r.current, c);
        // At 4 µs (the period) the next CNP cuts again, by the alpha of then.
        assert_eq!(r.on_cnp(4_000, &p), CnpEffect::Reduced);
        // Alpha ran 4 periods of 1 µs, each with a CNP in it (the first, then the noted
        // one in period 3): a CNP in a period keeps 1023 at g = 1019; periods without one
        // decay it.
        let mut a = 1023u64;
        for cnp in [true, false, false, true] {
            a = a * 1019 / 1024 + if cnp { 5 } else { 0 };
        }
        assert_eq!(u64::from(r.alpha), a.min(1023));
        assert_eq!(r.current, c - c * a / 2048);
    }

    #[test]
    fn min_dec_fac_and_min_rate_bound_a_cut() {
        let mut p = params();
        p.gd = 10; // a cut of alpha (≈ the whole rate)
        p.min_dec_fac = 70;
        let r = RateLimiter::first_cnp(0, &p, LINE);
        assert_eq!(r.current, LINE * 70 / 100);
        p.min_dec_fac = 0;
        p.min_rate = 40_000;
        let r = RateLimiter::first_cnp(0, &p, LINE);
        assert_eq!(r.current, 40_000_000);
    }

    #[test]
    fn the_timer_recovers_fast_then_additive_then_by_bytes_hyper() {
        let mut p = params();
        p.byte_reset = 0;
        p.threshold = 2;
        let mut r = RateLimiter::first_cnp(0, &p, LINE);
        let (c0, t0) = (r.current, r.target);
        // Fast recovery for T = 1, 2: halfway to the target, target unchanged.
        r.advance(300_000, &p);
        let c1 = (t0 + c0).div_ceil(2);
        assert_eq!((r.current, r.target), (c1, t0));
        r.advance(600_000 - 1, &p);
        assert_eq!(r.current, c1, "the second event is at 600 µs");
        r.advance(600_000, &p);
        let c2 = (t0 + c1).div_ceil(2);
        assert_eq!(r.current, c2);
        // Target is the line rate: additive increase cannot raise it; cut again to see AI.
        let mut p2 = params();
        p2.byte_reset = 0;
        p2.threshold = 1;
        p2.clamp_tgt_rate = true;
        let mut r = RateLimiter::first_cnp(0, &p2, LINE);
        r.on_cnp(10_000, &p2);
        let (c, t) = (r.current, r.target);
        assert!(t < LINE);
        r.advance(10_000 + 300_000, &p2); // T = 1: fast recovery
        let c = (t + c).div_ceil(2);
        assert_eq!((r.current, r.target), (c, t));
        r.advance(10_000 + 600_000, &p2); // T = 2 > F: additive, 5 Mb/s
        let t = t + 5_000;
        assert_eq!((r.current, r.target), ((t + c).div_ceil(2), t));
        // Bytes: 2 × 32767 × 64 bytes make BC = 2; with T = 2 both are above F: hyper
        // increase by (2 − 1) × 50 Mb/s.
        let c = r.current;
        let mut p3 = p2;
        p3.byte_reset = 1; // 64 bytes
        r.on_sent(64, 10_000 + 600_001, &p3); // BC = 1: additive
        let t = t + 5_000;
        let c = (t + c).div_ceil(2);
        assert_eq!((r.current, r.target), (c, t));
        r.on_sent(64, 10_000 + 600_002, &p3); // BC = 2, T = 2: hyper
        let t = t + 50_000;
        assert_eq!((r.current, r.target), ((t + c).div_ceil(2), t));
    }

    #[test]
    fn clamp_after_time_increase_moves_the_target_only_after_a_timer_increase() {
        let mut p = params();
        p.byte_reset = 1;
        let mut r = RateLimiter::first_cnp(0, &p, LINE);
        let t0 = r.target;
        // Only byte-counter increases, then a CNP: the target stays.
        r.on_sent(64, 1_000, &p);
        r.on_cnp(10_000, &p);
        assert_eq!(r.target, t0);
        // A timer increase, then a CNP: the target becomes the current rate.
        r.advance(10_000 + 300_000, &p);
        let c = r.current;
        r.on_cnp(10_000 + 300_001, &p);
        assert_eq!(r.target, c);
    }

    #[test]
    fn the_rate_recovers_to_the_line_rate_and_the_limiter_is_done() {
        let p = params();
        let mut r = RateLimiter::first_cnp(0, &p, LINE);
        r.advance(10_000_000_000, &p);
        assert!(r.done());
        assert_eq!(r.current, LINE);
        assert_eq!(r.alpha, 0, "alpha decays without CNPs");
    }

    #[test]
    fn rate_on_first_cnp_sets_both_rates() {
        let mut p = params();
        p.rate_on_first_cnp = 1000;
        let r = RateLimiter::first_cnp(0, &p, LINE);
        assert_eq!((r.current, r.target), (1_000_000, 1_000_000));
    }

    #[test]
    fn pacing_in_simulated_time_matches_the_rate() {
        let mut p = params();
        p.rate_on_first_cnp = 1000; // 1 Gb/s
        p.byte_reset = 0;
        p.time_reset_us = 131_071; // no increase within the test
        let mut r = RateLimiter::first_cnp(0, &p, LINE);
        // A sender that polls every 10 µs and sends 1 KB frames whenever allowed, for 10 ms.
        let mut sent = 0u64;
        let mut now = 0;
        while now < 10_000_000 {
            while r.may_send(now) {
                r.on_sent(1000, now, &p);
                sent += 1000;
            }
            now += 10_000;
        }
        // 1 Gb/s for 10 ms is 1.25 MB (8 µs per frame): within one frame.
        let want = 1_000_000_000u64 / 8 / 100;
        assert!(sent.abs_diff(want) <= 1000, "sent {sent}, want {want}");
        assert_eq!(r.tx_ns(1000), 8_000);
    }

    #[test]
    fn pacing_after_a_long_idle_restarts_from_now() {
        let mut p = params();
        p.rate_on_first_cnp = 1000;
        let mut r = RateLimiter::first_cnp(0, &p, LINE);
        r.on_sent(1000, 0, &p);
        r.on_sent(1000, 50_000_000, &p);
        assert_eq!(r.next_send(), 50_000_000 + r.tx_ns(1000));
    }
}
