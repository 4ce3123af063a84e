//! The RoCE engine's congestion state (`CongEngine`): the reaction point's rate limiters, the
//! notification point's CNP pacing and the frames waiting to leave. What runs over it — ECT
//! marking, the PFC gate, DCQCN pacing, CNPs — is in `congestion.rs`; this file holds only the
//! state the engine (`engine.rs`) owns, so that the engine's state imports no behaviour.

use std::collections::{
    BTreeMap,
    VecDeque, //
};

use super::cnp::Notifier;
use super::dcqcn::RateLimiter;

/// A frame waiting to leave.
#[derive(Clone, Debug)]
pub(super) struct Waiting {
    /// The QP whose request it is (paced, ACK timer held); `None` for other RoCE frames.
    pub(super) qpn: Option<u32>,
    /// Its priority.
    pub(super) prio: u8,
    /// The frame.
    pub(super) frame: Vec<u8>,
}

/// Counters of the congestion paths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GateStats {
    /// Request packets held back by their QP's rate limiter.
    pub paced: u64,
    /// RoCE frames held back by a pause of their priority.
    pub pfc_held: u64,
    /// Waiting frames dropped: their QP was destroyed, reset or in error by then.
    pub dropped: u64,
    /// Request packets sent ECN-capable (ECT(0)).
    pub ect_marked: u64,
}

/// The congestion state of the engine.
#[derive(Debug, Default)]
pub struct CongEngine {
    /// The reaction point's rate limiters, by QP.
    pub(super) limiters: BTreeMap<u32, RateLimiter>,
    /// The notification point's CNP pacing.
    pub(super) notifier: Notifier,
    /// Frames waiting to leave, in order.
    pub(super) waiting: VecDeque<Waiting>,
    /// The priority of each QP's requests (of the last one sent): its CNPs are handled by
    /// the reaction point of that priority.
    pub(super) qp_prio: BTreeMap<u32, u8>,
    /// Counters.
    pub stats: GateStats,
}

impl CongEngine {
    /// Whether request packets of QP `qpn` wait to leave.
    pub fn holds(&self, qpn: u32) -> bool {
        self.waiting.iter().any(|w| w.qpn == Some(qpn))
    }

    /// Frames waiting.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// The rate limiter of QP `qpn`, if it is rate limited.
    pub fn limiter(&self, qpn: u32) -> Option<&RateLimiter> {
        self.limiters.get(&qpn)
    }

    /// When the earliest packet the rate limiters hold back may leave (ns); packets of a
    /// priority `paused` rejects wait for the pause's end instead (`pause_tick`).
    pub fn next_release(&self, paused: impl Fn(u8) -> bool) -> Option<u64> {
        self.waiting
            .iter()
            .filter(|w| !paused(w.prio))
            .filter_map(|w| self.limiters.get(&w.qpn?))
            .map(RateLimiter::next_send)
            .min()
    }

    /// One line for the control socket: the counters and what waits.
    pub fn line(&self) -> String {
        format!(
            "gate: {} waiting {} paced {} pfc held {} dropped {} ect; {} rate limited",
            self.waiting.len(),
            self.stats.paced,
            self.stats.pfc_held,
            self.stats.dropped,
            self.stats.ect_marked,
            self.limiters.len()
        )
    }
}
