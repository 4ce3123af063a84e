//! CQ moderation: when an armed CQ's completion event goes out.
//!
//! Every CQE is written at once; moderation only delays the event (the EQE, and with it the
//! interrupt) of an armed CQ, so a busy queue costs its driver one interrupt per burst instead
//! of one per completion. The CQ context's `cq_period` (µs), `cq_max_count` (CQEs) and
//! `cq_period_mode` say how, as on the card:
//!
//! - `cq_period` 0: no moderation, the event goes out with the CQE that earns it;
//! - otherwise the event goes out when `cq_max_count` CQEs (if not 0) were written since the
//!   CQ's last event, or when the period ends, whichever comes first. In mode START_FROM_EQE (0)
//!   the period runs from the CQ's last event, so the first completion after a quiet spell
//!   raises its event at once; in mode START_FROM_CQE (1, cap `cq_period_start_from_cqe`) it
//!   runs from the first completion that found the CQ armed.
//!
//! A delayed event waits in [`CqTimers`]; the device's timer thread
//! (`crate::runtime::spawn_cq_timer`) sleeps until the earliest one and calls
//! [`Firmware::cq_tick`]. Times are nanoseconds on the model's clock ([`crate::clock`]), passed
//! in so that host tests move them.

use std::{
    collections::BTreeMap,
    sync::{Arc, Condvar},
};

use super::{Bus, Firmware};

/// `cq_period_mode` START_FROM_EQE.
pub const PERIOD_FROM_EQE: u32 = 0;
/// `cq_period_mode` START_FROM_CQE.
pub const PERIOD_FROM_CQE: u32 = 1;

/// A CQ's moderation parameters, from CREATE_CQ and MODIFY_CQ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moderation {
    /// `cq_period`, µs (12 bits); 0 is no moderation.
    pub period_us: u32,
    /// `cq_max_count` (16 bits); 0 is no count limit.
    pub max_count: u32,
    /// `cq_period_mode` ([`PERIOD_FROM_EQE`] or [`PERIOD_FROM_CQE`]).
    pub mode: u32,
}

/// A CQ's moderation state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModState {
    /// CQEs written since the CQ's last event.
    pub since_event: u32,
    /// When the CQ's last event went out (0: never).
    pub last_event_ns: u64,
    /// When the event the CQ holds back goes out, if it holds one.
    pub deadline_ns: Option<u64>,
    /// Events that went out at a count or period (not with their CQE).
    pub moderated: u64,
}

/// The CQs holding back an event, with the wake-up of the thread that times them.
#[derive(Default)]
pub struct CqTimers {
    /// CQ number → deadline (ns).
    due: BTreeMap<u32, u64>,
    /// Wakes the timer thread when a deadline is added (none in host tests).
    pub wake: Option<Arc<Condvar>>,
    /// Events that were held back, then raised by their period or count (all CQs).
    pub released: u64,
}

impl CqTimers {
    /// The earliest deadline.
    pub fn next(&self) -> Option<u64> {
        self.due.values().min().copied()
    }

    /// Forgets every deadline (teardown).
    pub fn clear(&mut self) {
        self.due.clear();
    }

    fn set(&mut self, cqn: u32, at: u64) {
        let earlier = self.next().is_none_or(|n| at < n);
        self.due.insert(cqn, at);
        if earlier {
            if let Some(w) = &self.wake {
                w.notify_one();
            }
        }
    }
}

/// What an armed CQ does with an event it has earned.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Raise it now.
    Now,
    /// Hold it until then (ns).
    At(u64),
}

fn verdict(m: Moderation, s: &ModState, now: u64) -> Verdict {
    if m.period_us == 0 || (m.max_count != 0 && s.since_event >= m.max_count) {
        return Verdict::Now;
    }
    let period = u64::from(m.period_us) * 1000;
    let at = match (s.deadline_ns, m.mode) {
        (Some(at), _) => at,
        (None, PERIOD_FROM_CQE) => now + period,
        (None, _) => s.last_event_ns.saturating_add(period),
    };
    if at <= now {
        Verdict::Now
    } else {
        Verdict::At(at)
    }
}

impl Firmware {
    /// CQ `cqn` is armed and has earned its event at `now`: raises it, or holds it back for
    /// the count or the period.
    pub(super) fn cq_event_due(&mut self, ctx: &mut Bus, cqn: u32, now: u64) {
        let Some(cq) = self.cqs.get_mut(&cqn) else {
            return;
        };
        match verdict(cq.moderation, &cq.mod_state, now) {
            Verdict::Now => {
                let held = cq.mod_state.deadline_ns.is_some();
                self.cq_fire(ctx, cqn, now, held);
            }
            Verdict::At(at) => {
                if cq.mod_state.deadline_ns.is_none() {
                    cq.mod_state.deadline_ns = Some(at);
                    self.cq_timers.set(cqn, at);
                }
            }
        }
    }

    /// Raises CQ `cqn`'s completion event and starts its next moderation period.
    fn cq_fire(&mut self, ctx: &mut Bus, cqn: u32, now: u64, moderated: bool) {
        let Some(cq) = self.cqs.get_mut(&cqn) else {
            return;
        };
        cq.arm = super::Arm::None;
        let s = &mut cq.mod_state;
        s.since_event = 0;
        s.last_event_ns = now;
        s.deadline_ns = None;
        s.moderated += u64::from(moderated);
        self.cq_timers.released += u64::from(moderated);
        let eqn = cq.eqn;
        self.cq_timers.due.remove(&cqn);
        self.completion_event(ctx, eqn, cqn);
    }

    /// Raises the events whose period has ended by `now`.
    pub fn cq_tick(&mut self, ctx: &mut Bus, now: u64) {
        let due: Vec<u32> = self
            .cq_timers
            .due
            .iter()
            .filter(|&(_, &at)| at <= now)
            .map(|(&cqn, _)| cqn)
            .collect();
        for cqn in due {
            match self.cqs.get(&cqn) {
                // Only an armed CQ holds a deadline; the arm stays until the event goes.
                Some(cq) if cq.arm != super::Arm::None && !cq.overrun => {
                    self.cq_fire(ctx, cqn, now, true)
                }
                _ => {
                    self.cq_timers.due.remove(&cqn);
                    if let Some(cq) = self.cqs.get_mut(&cqn) {
                        cq.mod_state.deadline_ns = None;
                    }
                }
            }
        }
    }

    /// Forgets CQ `cqn`'s deadline (the CQ is destroyed).
    pub(super) fn cq_forget_timer(&mut self, cqn: u32) {
        self.cq_timers.due.remove(&cqn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1000;

    fn m(period_us: u32, max_count: u32, mode: u32) -> Moderation {
        Moderation {
            period_us,
            max_count,
            mode,
        }
    }

    #[test]
    fn no_period_means_at_once() {
        let s = ModState {
            since_event: 1,
            ..ModState::default()
        };
        assert_eq!(verdict(m(0, 0, 0), &s, 5), Verdict::Now);
        assert_eq!(verdict(m(0, 100, 1), &s, 5), Verdict::Now);
    }

    #[test]
    fn count_reached_goes_at_once() {
        let mut s = ModState {
            since_event: 7,
            last_event_ns: 1_000 * US,
            ..ModState::default()
        };
        assert_eq!(
            verdict(m(50, 8, 0), &s, 1_001 * US),
            Verdict::At(1_050 * US)
        );
        s.since_event = 8;
        assert_eq!(verdict(m(50, 8, 0), &s, 1_001 * US), Verdict::Now);
        // Count 0: the period alone.
        s.since_event = 1000;
        assert_eq!(
            verdict(m(50, 0, 0), &s, 1_001 * US),
            Verdict::At(1_050 * US)
        );
    }

    #[test]
    fn from_eqe_runs_from_the_last_event() {
        let s = ModState {
            since_event: 1,
            last_event_ns: 1_000 * US,
            ..ModState::default()
        };
        // After a quiet spell the event is not held.
        assert_eq!(verdict(m(16, 32, 0), &s, 1_020 * US), Verdict::Now);
        assert_eq!(
            verdict(m(16, 32, 0), &s, 1_010 * US),
            Verdict::At(1_016 * US)
        );
    }

    #[test]
    fn from_cqe_runs_from_the_first_completion_and_keeps_its_deadline() {
        let mut s = ModState {
            since_event: 1,
            last_event_ns: 0,
            ..ModState::default()
        };
        assert_eq!(
            verdict(m(16, 32, 1), &s, 1_000 * US),
            Verdict::At(1_016 * US)
        );
        s.deadline_ns = Some(1_016 * US);
        s.since_event = 2;
        assert_eq!(
            verdict(m(16, 32, 1), &s, 1_010 * US),
            Verdict::At(1_016 * US)
        );
        assert_eq!(verdict(m(16, 32, 1), &s, 1_016 * US), Verdict::Now);
    }

    #[test]
    fn timers_report_the_earliest_and_wake_only_for_an_earlier_one() {
        let mut t = CqTimers::default();
        assert_eq!(t.next(), None);
        t.set(1, 50);
        t.set(2, 30);
        t.set(3, 40);
        assert_eq!(t.next(), Some(30));
        t.due.remove(&2);
        assert_eq!(t.next(), Some(40));
        t.clear();
        assert_eq!(t.next(), None);
    }
}
