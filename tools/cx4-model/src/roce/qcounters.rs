//! The RoCE queue counters: a QP's transport events (its responder's and requester's
//! statistics) added to the queue counter set the QP names (`qpc.counter_set_id`; mlx5_ib
//! gives every QP its port's set), where QUERY_Q_COUNTER reads them — the `hw_counters`
//! mlx5_ib shows in sysfs and `rdma statistic` (`out_of_sequence`, `duplicate_request`,
//! `packet_seq_err`, `local_ack_timeout_err`, ...).
//!
//! Every engine operation on a QP runs through [`Roce::with_qp`]; after it, the events the
//! QP's state machines counted since the last report are added to the set. A QP reset or
//! destroyed has reported everything by then, so nothing is lost or counted twice.

use super::Roce;
use crate::fw::RoceQCounts;

use super::engine::{QpEngine, ReqSide, RespSide};

/// The transport events the QP has counted since it left RESET: those of the state machines
/// it dropped ([`retire`]) and of those it has.
pub(super) fn counts(q: &QpEngine) -> RoceQCounts {
    let mut c = q.retired;
    c.add(side_counts(q));
    c
}

/// Keeps the events of the QP's responder and requester before they are dropped (the error
/// state drops them): a count that went back would subtract from the set.
pub(super) fn retire(q: &mut QpEngine) {
    let s = side_counts(q);
    q.retired.add(s);
}

/// The transport events the QP's current state machines have counted.
fn side_counts(q: &QpEngine) -> RoceQCounts {
    let mut c = RoceQCounts::default();
    let n = |v: u64| v as u32;
    if let Some(RespSide::Rc(r)) = &q.resp {
        let s = r.stats();
        c.rx_write_requests = n(s.writes);
        c.rx_read_requests = n(s.reads);
        c.rx_atomic_requests = n(s.atomics);
        c.out_of_sequence = n(s.out_of_sequence);
        c.duplicate_request = n(s.duplicates);
    }
    if let Some(ReqSide::Rc(r)) = &q.req {
        let s = r.stats();
        c.rnr_nak_retry_err = n(s.rnr_naks);
        c.packet_seq_err = n(s.seq_naks);
        c.implied_nak_seq_err = n(s.implicit_naks);
        c.local_ack_timeout_err = n(s.timeouts);
    }
    c
}

impl Roce<'_> {
    /// Adds QP `q`'s events since its last report to its queue counter set (none if the QP
    /// names no allocated set).
    pub(super) fn report_q_counts(&mut self, q: &mut QpEngine) {
        let now = counts(q);
        let delta = now.since(q.reported);
        if delta == RoceQCounts::default() {
            return;
        }
        q.reported = now;
        let Some(id) = self
            .fw
            .rdma
            .qps
            .get(&q.qpn)
            .map(|qp| qp.ctx.counter_set_id())
        else {
            return;
        };
        if let Some(set) = self.fw.nic.q_counters.get_mut(&(id as u8)) {
            set.roce.add(delta);
        }
    }
}
