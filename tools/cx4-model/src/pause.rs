//! The port's pause state: priorities the link partner paused (our transmit side), the
//! lossless receive buffer and the XOFFs the port asserts (our receive side), and the pause
//! counters the PPCNT groups report.
//!
//! This is state and time arithmetic only; `datapath.rs` feeds it received MAC control frames,
//! asks it before sending a WQE's frames, and sends the pause frames it asks for.

use std::{
    collections::{BTreeSet, VecDeque},
    time::{Duration, Instant},
};

/// Priorities.
pub const NUM_PRIO: usize = 8;
/// Bytes of received frames the port holds for lossless priorities while their RQs have no
/// WQE posted (beyond it frames are dropped as out of buffer).
pub const LOSSLESS_BUFFER: usize = 256 * 1024;
/// How often held frames are retried while nothing else happens (the RQ has no doorbell:
/// the device notices new WQEs only by reading the doorbell record).
pub const HELD_POLL: Duration = Duration::from_millis(1);

/// The pause counters of the port (PPCNT per-priority and IEEE 802.3 groups).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PauseCounters {
    /// PFC frames received with the priority's enable bit set; 802.3x pause counts in
    /// priority 0 (mlx5e reads the "global" counters there).
    pub rx_pause: [u64; NUM_PRIO],
    /// Time the priority's transmission was paused by the partner, in microseconds.
    pub rx_pause_duration: [u64; NUM_PRIO],
    /// Paused → resumed transitions (XON or expiry).
    pub rx_pause_transition: [u64; NUM_PRIO],
    /// Pause frames sent for the priority (XOFF and XON; 802.3x in priority 0).
    pub tx_pause: [u64; NUM_PRIO],
    /// Time the port asserted XOFF for the priority, in microseconds.
    pub tx_pause_duration: [u64; NUM_PRIO],
    /// MAC control frames received (`a_mac_control_frames_received`).
    pub mac_control_rx: u64,
    /// MAC control frames sent.
    pub mac_control_tx: u64,
    /// MAC control frames with an opcode the port does not implement.
    pub unsupported_opcodes: u64,
    /// 802.3x pause frames received (`a_pause_mac_ctrl_frames_received`).
    pub pause_rx: u64,
    /// 802.3x pause frames sent (`a_pause_mac_ctrl_frames_transmitted`).
    pub pause_tx: u64,
}

/// A pause the partner asked for.
#[derive(Clone, Copy, Debug)]
struct Paused {
    since: Instant,
    until: Instant,
}

/// An XOFF the port asserts.
#[derive(Clone, Copy, Debug)]
pub struct Xoff {
    /// When it was first sent.
    pub since: Instant,
    /// When it was last (re)sent.
    pub last_sent: Instant,
}

/// A received frame waiting for a WQE on its RQ.
#[derive(Clone, Debug)]
pub struct Held {
    /// Its priority.
    pub prio: u8,
    /// The TIR steering chose and the RQ it picked.
    pub tirn: u32,
    /// The RQ.
    pub rqn: u32,
    /// The flow tag of the steering match.
    pub flow_tag: u32,
    /// The frame.
    pub frame: Vec<u8>,
}

/// The port's pause state.
#[derive(Debug, Default)]
pub struct PortPause {
    paused: [Option<Paused>; NUM_PRIO],
    /// SQs stopped at a WQE of a paused priority, as (UAR page, SQN).
    pub stalled: BTreeSet<(u32, u32)>,
    held: VecDeque<Held>,
    held_bytes: usize,
    /// XOFF asserted per priority (PFC), or in slot 0 for 802.3x pause ([`PortPause::global`]).
    xoff: [Option<Xoff>; NUM_PRIO],
    /// The XOFF in `xoff[0]` is an 802.3x pause for all traffic.
    pub global: bool,
}

fn micros(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

impl PortPause {
    /// The partner paused priority `p` for `d` from `now` (`Duration::ZERO`: XON, resume).
    /// A new pause replaces the running one's end. Returns whether `p` resumed.
    pub fn pause_tx(&mut self, c: &mut PauseCounters, p: usize, d: Duration, now: Instant) -> bool {
        if p >= NUM_PRIO {
            return false;
        }
        if d.is_zero() {
            return self.resume(c, p, now);
        }
        let since = self.paused[p].map_or(now, |x| x.since);
        self.paused[p] = Some(Paused {
            since,
            until: now + d,
        });
        false
    }

    fn resume(&mut self, c: &mut PauseCounters, p: usize, at: Instant) -> bool {
        match self.paused[p].take() {
            Some(x) => {
                c.rx_pause_duration[p] +=
                    micros(at.min(x.until).saturating_duration_since(x.since));
                c.rx_pause_transition[p] += 1;
                true
            }
            None => false,
        }
    }

    /// Ends the pauses that ran out by `now`; returns whether any did.
    pub fn expire(&mut self, c: &mut PauseCounters, now: Instant) -> bool {
        let mut any = false;
        for p in 0..NUM_PRIO {
            if let Some(x) = self.paused[p] {
                if x.until <= now {
                    any |= self.resume(c, p, x.until);
                }
            }
        }
        any
    }

    /// Priority `p` may not be transmitted now.
    pub fn is_paused(&self, p: u8, now: Instant) -> bool {
        self.paused
            .get(usize::from(p))
            .copied()
            .flatten()
            .is_some_and(|x| x.until > now)
    }

    /// Any priority is paused (the send path's fast check).
    pub fn any_paused(&self) -> bool {
        self.paused.iter().any(Option::is_some)
    }

    /// Paused priorities as a bit mask.
    pub fn paused_mask(&self) -> u8 {
        (0..NUM_PRIO).fold(0, |m, p| m | (u8::from(self.paused[p].is_some()) << p))
    }

    /// Holds `h` if the buffer has room; returns whether it did.
    pub fn hold(&mut self, h: Held) -> bool {
        if self.held_bytes + h.frame.len() > LOSSLESS_BUFFER {
            return false;
        }
        self.held_bytes += h.frame.len();
        self.held.push_back(h);
        true
    }

    /// Frames are held for RQ `rqn` (later frames for it must queue behind them).
    pub fn holds_for(&self, rqn: u32) -> bool {
        self.held.iter().any(|h| h.rqn == rqn)
    }

    /// Frames are held for priority `p`.
    pub fn holds_prio(&self, p: u8) -> bool {
        self.held.iter().any(|h| h.prio == p)
    }

    /// Frames and bytes held.
    pub fn held(&self) -> (usize, usize) {
        (self.held.len(), self.held_bytes)
    }

    /// Takes the held frames (the caller delivers what it can and gives back the rest with
    /// [`PortPause::put_back`], in order).
    pub fn take_held(&mut self) -> VecDeque<Held> {
        self.held_bytes = 0;
        std::mem::take(&mut self.held)
    }

    /// Gives back frames still waiting, oldest first, ahead of any held since.
    pub fn put_back(&mut self, mut rest: VecDeque<Held>) {
        rest.append(&mut self.held);
        self.held_bytes = rest.iter().map(|h| h.frame.len()).sum();
        self.held = rest;
    }

    /// The XOFF asserted in slot `p`.
    pub fn xoff(&self, p: usize) -> Option<Xoff> {
        self.xoff.get(p).copied().flatten()
    }

    /// Records an XOFF sent in slot `p` at `now`.
    pub fn xoff_sent(&mut self, p: usize, now: Instant) {
        if let Some(slot) = self.xoff.get_mut(p) {
            let since = slot.map_or(now, |x| x.since);
            *slot = Some(Xoff {
                since,
                last_sent: now,
            });
        }
    }

    /// Records the XON of slot `p` at `now`: the XOFF time goes to `tx_pause_duration`.
    pub fn xon_sent(&mut self, c: &mut PauseCounters, p: usize, now: Instant) {
        if let Some(x) = self.xoff.get_mut(p).and_then(Option::take) {
            c.tx_pause_duration[p] += micros(now.saturating_duration_since(x.since));
        }
    }

    /// XOFF slots asserted, as a bit mask.
    pub fn xoff_mask(&self) -> u8 {
        (0..NUM_PRIO).fold(0, |m, p| m | (u8::from(self.xoff[p].is_some()) << p))
    }

    /// When the wire thread must next look at the port: the earliest pause end, XOFF refresh
    /// (`refresh` after the last one) or held-frame retry; `None` if nothing is pending.
    pub fn deadline(&self, refresh: Duration, now: Instant) -> Option<Instant> {
        let ends = self.paused.iter().flatten().map(|x| x.until);
        let refreshes = self.xoff.iter().flatten().map(|x| x.last_sent + refresh);
        let held = (!self.held.is_empty()).then(|| now + HELD_POLL);
        ends.chain(refreshes).chain(held).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pause_resume_and_expiry_count_durations_and_transitions() {
        let (mut s, mut c) = (PortPause::default(), PauseCounters::default());
        let t0 = Instant::now();
        s.pause_tx(&mut c, 3, Duration::from_millis(10), t0);
        assert!(s.is_paused(3, t0) && !s.is_paused(2, t0));
        assert_eq!(s.paused_mask(), 0x08);
        // Refreshed before it ends: one pause, longer.
        s.pause_tx(
            &mut c,
            3,
            Duration::from_millis(10),
            t0 + Duration::from_millis(5),
        );
        assert!(!s.expire(&mut c, t0 + Duration::from_millis(12)));
        assert!(s.expire(&mut c, t0 + Duration::from_millis(20)));
        assert_eq!(c.rx_pause_duration[3], 15_000);
        assert_eq!(c.rx_pause_transition[3], 1);
        assert!(!s.any_paused());
        // XON ends it at once.
        s.pause_tx(&mut c, 3, Duration::from_secs(1), t0);
        assert!(s.pause_tx(&mut c, 3, Duration::ZERO, t0 + Duration::from_millis(2)));
        assert_eq!(c.rx_pause_duration[3], 17_000);
        assert_eq!(c.rx_pause_transition[3], 2);
        assert!(
            !s.pause_tx(&mut c, 3, Duration::ZERO, t0),
            "XON while running"
        );
    }

    #[test]
    fn buffer_is_bounded_and_keeps_order() {
        let mut s = PortPause::default();
        let h = |n: usize, rqn| Held {
            prio: 1,
            tirn: 1,
            rqn,
            flow_tag: 0,
            frame: vec![n as u8; 9000],
        };
        let mut n = 0;
        while s.hold(h(n, 7)) {
            n += 1;
        }
        assert_eq!(n, LOSSLESS_BUFFER / 9000);
        assert!(s.holds_for(7) && !s.holds_for(8) && s.holds_prio(1));
        let mut all = s.take_held();
        let first = all.pop_front().unwrap();
        assert_eq!(first.frame[0], 0);
        s.hold(h(99, 8));
        s.put_back(all);
        let order: Vec<u8> = s.take_held().iter().map(|h| h.frame[0]).collect();
        assert_eq!(order[0], 1);
        assert_eq!(*order.last().unwrap(), 99);
    }
}
