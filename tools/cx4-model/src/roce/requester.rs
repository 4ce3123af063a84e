//! The requester side of an RC QP (IBTA vol 1 9.7.4–9.7.6, 9.9): PSN assignment and
//! segmentation of posted work requests, the outstanding-request list, ACK/NAK processing
//! with implicit acknowledgement, go-back-N retransmission, the local ACK timer, the RNR
//! timer, and the retry counters.
//!
//! Pure and I/O-free: the integrator feeds events — [`Requester::post`] for a send WQE,
//! [`Requester::on_response`] for every RC response packet (ACKNOWLEDGE, ATOMIC ACKNOWLEDGE,
//! RDMA READ response) addressed to the QP, [`Requester::on_timer`] when "now" reaches
//! [`Requester::next_deadline`] — and carries out the [`ReqAction`]s each returns, in order:
//! transmit a packet (it builds the headers: RETH from the WQE's remote address plus the
//! [`TxPacket::offset`], ImmDt, IETH, AtomicETH), scatter READ response data or an atomic's
//! original value into the WQE's local buffer, write a CQE, move the QP to the error state.
//!
//! Rules, each with its test:
//! - PSNs are assigned at post time in post order; a READ takes one PSN per response packet,
//!   an atomic one.
//! - Packets are transmitted while fewer than [`RequesterConfig::max_inflight`] PSNs are
//!   unacknowledged; a READ or atomic starts only while fewer than 2^`log_sra_max` are
//!   outstanding, and a fenced request only when no READ/atomic before it is outstanding.
//!   The last packet of a SEND/WRITE, and a packet that fills the window, request an ACK.
//! - An ACK for PSN n completes, in order, every SEND/WRITE whose last PSN is at or before n
//!   (coalesced ACKs); a READ is completed by its last response, an atomic by its ATOMIC
//!   ACKNOWLEDGE, and a response (or NAK) implicitly acknowledges every request before it.
//!   An ACK or response beyond a READ/atomic that has not been answered means its responses
//!   were lost: the requester retries from it (an implicit NAK).
//! - NAK PSN sequence error for PSN p: acknowledges up to p - 1, then go-back-N from p,
//!   costing one transport retry; a second NAK for the same p before any progress is ignored.
//! - RNR NAK for PSN p: acknowledges up to p - 1, stops sending, and resends from p when the
//!   RNR timer of the NAK's code expires, costing one RNR retry (`rnr_retry` 7 = infinite).
//! - NAK invalid request / remote access / remote operational error: the request holding p
//!   completes with `REMOTE_INVAL_REQ_ERR` / `REMOTE_ACCESS_ERR` / `REMOTE_OP_ERR`, the QP
//!   goes to error and the rest are flushed (`WR_FLUSH_ERR`).
//! - Local ACK timeout (`4.096 µs × 2^ack_timeout`, 0 = none): resend from the oldest
//!   unacknowledged PSN, costing one transport retry. `retry_count` is a plain count (IBTA
//!   gives 7 no special meaning there, unlike `rnr_retry`); with none left the oldest request
//!   completes with `TRANSPORT_RETRY_EXC_ERR` (or `RNR_RETRY_EXC_ERR`) and the QP goes to
//!   error. Any progress restores both counters.
//! - Stale, duplicate and unexpected responses are counted and ignored; a READ response of
//!   the wrong length or kind at its expected PSN is `BAD_RESP_ERR`.

use std::collections::VecDeque;

use super::headers::{Aeth, NakCode, Opcode, Service, Syndrome, TransportHeaders};
use super::psn::Psn;
use super::segment::{segment_at, OpKind, PathMtu, RequestOp};
use super::status::WcStatus;
use super::timers::{ack_timeout_ns, rnr_timer_ns};

/// The RNR retry count that means "retry forever".
pub const RNR_RETRY_INFINITE: u8 = 7;
/// The largest message IBTA allows (2^31 bytes).
pub const MAX_MESSAGE_LEN: u32 = 1 << 31;

/// The requester's part of the QP context, set at RTR2RTS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequesterConfig {
    /// The path MTU.
    pub mtu: PathMtu,
    /// The first PSN to send (`next_send_psn`).
    pub initial_psn: Psn,
    /// Transport retries (3 bits; higher bits ignored).
    pub retry_count: u8,
    /// RNR retries (3 bits; 7 = infinite).
    pub rnr_retry: u8,
    /// Local ACK timeout code (5 bits; 0 = no timeout).
    pub ack_timeout: u8,
    /// Outstanding READ/atomic limit, as a log2 (`log_sra_max`; capped at 2^16).
    pub log_sra_max: u8,
    /// The largest message length (2^`log_max_msg`); longer requests fail locally.
    pub max_msg_len: u32,
    /// The largest number of unacknowledged PSNs on the wire (at least 1).
    pub max_inflight: u32,
}

impl RequesterConfig {
    /// A configuration with the given MTU and first PSN, 7 retries, 7 RNR retries (infinite),
    /// ACK timeout code 14 (~67 ms), 16 outstanding READ/atomics, 2^31-byte messages and a
    /// 1024-PSN window.
    pub const fn new(mtu: PathMtu, initial_psn: Psn) -> RequesterConfig {
        RequesterConfig {
            mtu,
            initial_psn,
            retry_count: 7,
            rnr_retry: 7,
            ack_timeout: 14,
            log_sra_max: 4,
            max_msg_len: MAX_MESSAGE_LEN,
            max_inflight: 1024,
        }
    }
}

/// A send work request as the transport needs it (the integrator keeps the rest of the WQE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkRequest {
    /// The WQE index (the CQE's `wqe_counter`).
    pub wqe_index: u16,
    /// The operation.
    pub op: RequestOp,
    /// Message length in bytes (local for SEND/WRITE, the remote range for READ; ignored for
    /// atomics, which move 8 bytes).
    pub len: u32,
    /// The fence flag: wait until every earlier READ/atomic has completed.
    pub fence: bool,
}

/// A packet the integrator must build and transmit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxPacket {
    /// The WQE it belongs to.
    pub wqe_index: u16,
    /// The request's operation.
    pub op: RequestOp,
    /// The BTH opcode.
    pub opcode: Opcode,
    /// The BTH PSN.
    pub psn: Psn,
    /// SEND/WRITE: offset of the payload in the message. READ: offset of the requested range
    /// in the WQE's (RETH VA = remote VA + offset; the response data lands at the same offset
    /// of the local buffer). Atomics: 0.
    pub offset: u32,
    /// SEND/WRITE: payload bytes. READ: the RETH DMA length. Atomics: 8. (A WRITE FIRST/ONLY
    /// RETH carries the whole message length, which only its first packet has.)
    pub len: u32,
    /// The BTH AckReq bit.
    pub ack_req: bool,
    /// Whether the PSN was transmitted before (a retransmission).
    pub retransmission: bool,
}

/// A send completion: one per posted request, in post order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The WQE index.
    pub wqe_index: u16,
    /// The operation.
    pub op: RequestOp,
    /// The status (its syndrome for an error CQE: [`WcStatus::syndrome`]).
    pub status: WcStatus,
    /// Bytes transferred (the message length on success, 0 on error).
    pub bytes: u32,
}

/// What the integrator must do after a requester event, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqAction {
    /// Build and transmit this packet.
    Transmit(TxPacket),
    /// Scatter the READ response payload (`len` bytes) to the WQE's local buffer at `offset`.
    ReadData {
        /// The READ's WQE index.
        wqe_index: u16,
        /// Offset in the local buffer.
        offset: u32,
        /// Payload bytes.
        len: u32,
    },
    /// Write an atomic's original remote value to the WQE's local buffer.
    AtomicResult {
        /// The atomic's WQE index.
        wqe_index: u16,
        /// The value the remote location held before the operation.
        orig: u64,
    },
    /// Complete a WQE (a CQE if it is signaled or an error).
    Complete(Completion),
    /// The send queue failed with this status: move the QP to the error state.
    EnterError(WcStatus),
}

/// Event counters of a requester.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReqStats {
    /// Packets transmitted again.
    pub retransmitted: u64,
    /// Local ACK timeouts that caused a retry.
    pub timeouts: u64,
    /// PSN sequence error NAKs acted on.
    pub seq_naks: u64,
    /// RNR NAKs acted on.
    pub rnr_naks: u64,
    /// Retries caused by an ACK or response beyond an unanswered READ/atomic.
    pub implicit_naks: u64,
    /// Responses ignored as stale, duplicate or unexpected.
    pub ignored: u64,
}

/// One posted request that has not completed.
#[derive(Clone, Copy, Debug)]
struct Pending {
    wr: WorkRequest,
    first: Psn,
    count: u32,
    started: bool,
    /// READ: response packets received in order.
    done: u32,
    /// A local error found at post time, reported when the request reaches the front.
    local_error: Option<WcStatus>,
}

impl Pending {
    fn last(&self) -> Psn {
        self.first.add(self.count.saturating_sub(1))
    }

    fn contains(&self, p: Psn) -> bool {
        self.first.distance_to(p) < self.count
    }
}

/// The requester state of one RC QP.
#[derive(Clone, Debug)]
pub struct Requester {
    cfg: RequesterConfig,
    queue: VecDeque<Pending>,
    /// The PSN of the next posted request.
    next_psn: Psn,
    /// The next PSN to transmit.
    send_psn: Psn,
    /// One past the highest PSN transmitted.
    high_psn: Psn,
    /// The oldest PSN not acknowledged.
    una: Psn,
    retry_left: u8,
    rnr_left: u8,
    ack_deadline: Option<u64>,
    rnr_deadline: Option<u64>,
    retry_psn: Option<Psn>,
    error: bool,
    stats: ReqStats,
}

type Out = Vec<ReqAction>;

impl Requester {
    /// A requester in RTS with the context's fields.
    pub fn new(cfg: RequesterConfig) -> Requester {
        let cfg = RequesterConfig {
            retry_count: cfg.retry_count & 7,
            rnr_retry: cfg.rnr_retry & 7,
            ack_timeout: cfg.ack_timeout & 0x1f,
            log_sra_max: cfg.log_sra_max.min(16),
            max_inflight: cfg.max_inflight.clamp(1, super::psn::PSN_HALF),
            ..cfg
        };
        Requester {
            queue: VecDeque::new(),
            next_psn: cfg.initial_psn,
            send_psn: cfg.initial_psn,
            high_psn: cfg.initial_psn,
            una: cfg.initial_psn,
            retry_left: cfg.retry_count,
            rnr_left: cfg.rnr_retry,
            ack_deadline: None,
            rnr_deadline: None,
            retry_psn: None,
            error: false,
            stats: ReqStats::default(),
            cfg,
        }
    }

    /// The configuration in force (fields masked to their widths).
    pub fn config(&self) -> &RequesterConfig {
        &self.cfg
    }

    /// The PSN the next posted request will get.
    pub fn next_psn(&self) -> Psn {
        self.next_psn
    }

    /// The oldest unacknowledged PSN.
    pub fn oldest_unacked(&self) -> Psn {
        self.una
    }

    /// How many transmitted PSNs are not acknowledged.
    pub fn unacked(&self) -> u32 {
        self.una.distance_to(self.high_psn)
    }

    /// Posted requests that have not completed.
    pub fn outstanding(&self) -> usize {
        self.queue.len()
    }

    /// Transport retries left.
    pub fn retries_left(&self) -> u8 {
        self.retry_left
    }

    /// RNR retries left (7 when infinite).
    pub fn rnr_retries_left(&self) -> u8 {
        self.rnr_left
    }

    /// Whether the send queue is in the error state.
    pub fn is_error(&self) -> bool {
        self.error
    }

    /// The event counters.
    pub fn stats(&self) -> ReqStats {
        self.stats
    }

    /// When [`Requester::on_timer`] must next be called (the RNR timer or the local ACK
    /// timer), or `None`.
    pub fn next_deadline(&self) -> Option<u64> {
        self.rnr_deadline.or(self.ack_deadline)
    }

    /// The packets it transmitted left the port only at `now` (they waited for a PFC pause or
    /// the DCQCN rate limiter): the local ACK timer, if running, restarts from then, since a
    /// request that has not left cannot have been lost.
    pub fn departed(&mut self, now: u64) {
        if self.ack_deadline.is_some() && self.rnr_deadline.is_none() && !self.error {
            self.arm(now);
        }
    }

    /// How many READ/atomics may be outstanding.
    fn sra_limit(&self) -> usize {
        1usize << self.cfg.log_sra_max
    }

    /// Posts a send WQE: assigns its PSNs and transmits what the window allows. In the error
    /// state the request is flushed at once.
    pub fn post(&mut self, wr: WorkRequest, now: u64) -> Vec<ReqAction> {
        let mut out = Vec::new();
        if self.error {
            out.push(complete(&wr, WcStatus::WrFlushErr));
            return out;
        }
        let local_error = if !wr.op.allowed_on(Service::Rc) {
            Some(WcStatus::LocalQpOpErr)
        } else if wr.op.kind() != OpKind::Atomic
            && wr.len > self.cfg.max_msg_len.min(MAX_MESSAGE_LEN)
        {
            Some(WcStatus::LocalLengthErr)
        } else {
            None
        };
        let len = if wr.op.kind() == OpKind::Atomic {
            8
        } else {
            wr.len
        };
        let wr = WorkRequest { len, ..wr };
        let count = if local_error.is_some() {
            0
        } else {
            wr.op.psn_count(len, self.cfg.mtu)
        };
        self.queue.push_back(Pending {
            wr,
            first: self.next_psn,
            count,
            started: false,
            done: 0,
            local_error,
        });
        self.next_psn = self.next_psn.add(count);
        self.check_front(&mut out);
        self.pump(now, &mut out);
        out
    }

    /// Handles an RC response packet (ACKNOWLEDGE, ATOMIC ACKNOWLEDGE, RDMA READ response)
    /// with `payload_len` payload bytes. Anything else is ignored.
    pub fn on_response(
        &mut self,
        hdr: &TransportHeaders,
        payload_len: u32,
        now: u64,
    ) -> Vec<ReqAction> {
        let mut out = Vec::new();
        if self.error {
            return out;
        }
        let psn = Psn::new(hdr.bth.psn);
        if !self.in_flight(psn) {
            self.stats.ignored += 1;
            return out;
        }
        use Opcode::*;
        match hdr.bth.opcode {
            RcAcknowledge => match hdr.ext.aeth {
                Some(aeth) => self.on_ack(aeth, psn, now, &mut out),
                None => self.stats.ignored += 1,
            },
            RcAtomicAcknowledge => match hdr.ext.atomic_ack {
                Some(ack) => self.on_atomic_ack(psn, ack.orig, now, &mut out),
                None => self.stats.ignored += 1,
            },
            RcRdmaReadResponseFirst
            | RcRdmaReadResponseMiddle
            | RcRdmaReadResponseLast
            | RcRdmaReadResponseOnly => {
                let last = matches!(
                    hdr.bth.opcode,
                    RcRdmaReadResponseLast | RcRdmaReadResponseOnly
                );
                self.on_read_response(psn, last, payload_len, now, &mut out)
            }
            _ => self.stats.ignored += 1,
        }
        out
    }

    /// Handles the expiry of the RNR timer (resend from the RNR NAKed PSN) or of the local
    /// ACK timer (a transport retry); nothing if no deadline has passed.
    pub fn on_timer(&mut self, now: u64) -> Vec<ReqAction> {
        let mut out = Vec::new();
        if self.error {
            return out;
        }
        if let Some(d) = self.rnr_deadline {
            if now >= d {
                self.rnr_deadline = None;
                self.arm(now);
                self.pump(now, &mut out);
            }
            return out;
        }
        if let Some(d) = self.ack_deadline {
            if now >= d {
                if self.una == self.high_psn {
                    self.ack_deadline = None;
                    return out;
                }
                self.stats.timeouts += 1;
                self.retry(self.una, now, &mut out);
            }
        }
        out
    }

    /// Whether `p` is one of the transmitted, unacknowledged PSNs.
    fn in_flight(&self, p: Psn) -> bool {
        self.una.distance_to(p) < self.una.distance_to(self.high_psn)
    }

    fn arm(&mut self, now: u64) {
        self.ack_deadline = ack_timeout_ns(self.cfg.ack_timeout).map(|t| now.saturating_add(t));
    }

    fn on_ack(&mut self, aeth: Aeth, psn: Psn, now: u64, out: &mut Out) {
        match aeth.syndrome {
            Syndrome::Ack { .. } => {
                if let Err(p) = self.ack_through(psn, now, out) {
                    if self.retry_guarded(p, now, out) {
                        self.stats.implicit_naks += 1;
                    }
                }
            }
            Syndrome::Nak(NakCode::PsnSequenceError) => {
                if self.rnr_deadline.is_some() {
                    self.stats.ignored += 1;
                    return;
                }
                let p = match self.ack_before(psn, now, out) {
                    Ok(()) => psn,
                    Err(p) => p,
                };
                if !self.error && self.retry_guarded(p, now, out) {
                    self.stats.seq_naks += 1;
                }
            }
            Syndrome::RnrNak { timer } => {
                if self.rnr_deadline.is_some() {
                    self.stats.ignored += 1;
                    return;
                }
                if let Err(p) = self.ack_before(psn, now, out) {
                    if self.retry_guarded(p, now, out) {
                        self.stats.implicit_naks += 1;
                    }
                    return;
                }
                if self.error {
                    return;
                }
                self.stats.rnr_naks += 1;
                if self.rnr_left == 0 {
                    self.fail(WcStatus::RnrRetryExcErr, out);
                    return;
                }
                if self.cfg.rnr_retry != RNR_RETRY_INFINITE {
                    self.rnr_left -= 1;
                }
                self.send_psn = psn;
                self.ack_deadline = None;
                self.rnr_deadline = Some(now.saturating_add(rnr_timer_ns(timer)));
            }
            Syndrome::Nak(code) => {
                // Acknowledge what precedes the failed request; a READ/atomic left unanswered
                // before it takes the error (the responder is in error and will not answer).
                let _ = self.ack_before(psn, now, out);
                if !self.error {
                    self.fail(nak_status(code), out);
                }
            }
        }
    }

    /// Acknowledges every PSN before `p` (the implicit ACK of a NAK or response for `p`).
    fn ack_before(&mut self, p: Psn, now: u64, out: &mut Out) -> Result<(), Psn> {
        if p == self.una {
            return Ok(());
        }
        self.ack_through(p.prev(), now, out)
    }

    /// Processes a positive acknowledgement of every PSN up to `n` (in flight). Returns the
    /// PSN to retry from when `n` passes an unanswered READ/atomic.
    fn ack_through(&mut self, n: Psn, now: u64, out: &mut Out) -> Result<(), Psn> {
        let before = self.una;
        let mut result = Ok(());
        while let Some(front) = self.queue.front().copied() {
            if front.local_error.is_some() {
                break;
            }
            let passed = front.last().diff(n) <= 0;
            match front.wr.op.kind() {
                OpKind::Send | OpKind::Write => {
                    if passed {
                        self.queue.pop_front();
                        self.una = front.last().next();
                        out.push(complete(&front.wr, WcStatus::Success));
                        continue;
                    }
                    if front.contains(n) && n.next().is_after(self.una) {
                        self.una = n.next();
                    }
                }
                OpKind::Read | OpKind::Atomic => {
                    if passed {
                        result = Err(front.first.add(front.done));
                    }
                }
            }
            break;
        }
        if self.queue.is_empty() {
            self.una = self.next_psn;
        }
        if self.una != before {
            self.progress(now, out);
        }
        result
    }

    /// Bookkeeping after the oldest unacknowledged PSN advanced.
    fn progress(&mut self, now: u64, out: &mut Out) {
        self.retry_left = self.cfg.retry_count;
        self.rnr_left = self.cfg.rnr_retry;
        self.retry_psn = None;
        if self.una.is_after(self.high_psn) {
            self.high_psn = self.una;
        }
        if self.send_psn.is_before(self.una) {
            self.send_psn = self.una;
        }
        if self.una == self.high_psn {
            self.ack_deadline = None;
        } else if self.rnr_deadline.is_none() {
            self.arm(now);
        }
        self.check_front(out);
        self.pump(now, out);
    }

    /// Fails the QP if the front request carries a local error.
    fn check_front(&mut self, out: &mut Out) {
        if let Some(status) = self.queue.front().and_then(|f| f.local_error) {
            self.fail(status, out);
        }
    }

    fn on_read_response(&mut self, psn: Psn, last: bool, len: u32, now: u64, out: &mut Out) {
        let Some(idx) = self.queue.iter().position(|r| r.contains(psn)) else {
            self.stats.ignored += 1;
            return;
        };
        let Some(req) = self.queue.get(idx).copied() else {
            return;
        };
        if req.wr.op.kind() != OpKind::Read {
            self.stats.ignored += 1;
            return;
        }
        if idx > 0 {
            if let Err(p) = self.ack_before(req.first, now, out) {
                if self.retry_guarded(p, now, out) {
                    self.stats.implicit_naks += 1;
                }
                return;
            }
            if self.error || self.queue.front().map(|f| f.first) != Some(req.first) {
                return;
            }
        }
        let expected = req.first.add(req.done);
        if psn.is_before(expected) {
            self.stats.ignored += 1;
            return;
        }
        if psn != expected {
            // Responses were lost (or overtaken): ask again from the first one missing.
            if self.retry_guarded(expected, now, out) {
                self.stats.implicit_naks += 1;
            }
            return;
        }
        let m = self.cfg.mtu.bytes();
        let offset = req.done.saturating_mul(m);
        let want = req.wr.len.saturating_sub(offset).min(m);
        let is_last = req.done + 1 == req.count;
        if last != is_last || len != want {
            self.fail(WcStatus::BadRespErr, out);
            return;
        }
        out.push(ReqAction::ReadData {
            wqe_index: req.wr.wqe_index,
            offset,
            len,
        });
        if let Some(front) = self.queue.front_mut() {
            front.done += 1;
        }
        self.una = psn.next();
        if is_last {
            self.queue.pop_front();
            out.push(complete(&req.wr, WcStatus::Success));
        }
        self.progress(now, out);
    }

    fn on_atomic_ack(&mut self, psn: Psn, orig: u64, now: u64, out: &mut Out) {
        let Some(idx) = self.queue.iter().position(|r| r.contains(psn)) else {
            self.stats.ignored += 1;
            return;
        };
        let Some(req) = self.queue.get(idx).copied() else {
            return;
        };
        if req.wr.op.kind() != OpKind::Atomic {
            self.stats.ignored += 1;
            return;
        }
        if idx > 0 {
            if let Err(p) = self.ack_before(req.first, now, out) {
                if self.retry_guarded(p, now, out) {
                    self.stats.implicit_naks += 1;
                }
                return;
            }
            if self.error || self.queue.front().map(|f| f.first) != Some(req.first) {
                return;
            }
        }
        out.push(ReqAction::AtomicResult {
            wqe_index: req.wr.wqe_index,
            orig,
        });
        self.queue.pop_front();
        out.push(complete(&req.wr, WcStatus::Success));
        self.una = psn.next();
        self.progress(now, out);
    }

    /// A NAK- or response-triggered retry from `p`, unless one from `p` is already under way;
    /// whether it was made.
    fn retry_guarded(&mut self, p: Psn, now: u64, out: &mut Out) -> bool {
        if self.retry_psn == Some(p) {
            return false;
        }
        self.retry(p, now, out);
        true
    }

    /// The counter of the WQE whose request PSNs include `p`, if it is in flight.
    pub fn wqe_of(&self, p: Psn) -> Option<u16> {
        if !self.in_flight(p) {
            return None;
        }
        self.queue
            .iter()
            .find(|r| r.contains(p))
            .map(|r| r.wr.wqe_index)
    }

    /// The send queue stalled on a page fault when packet `p` was gathered (`odp.rs`: it
    /// sent nothing from `p` on) and the driver resumed it: transmit again from `p`, as
    /// go-back-N but costing no transport retry, with the local ACK timer started afresh.
    pub fn resume_at(&mut self, p: Psn, now: u64) -> Vec<ReqAction> {
        let mut out = Vec::new();
        if self.error || !self.in_flight(p) {
            return out;
        }
        self.send_psn = p;
        self.arm(now);
        self.pump(now, &mut out);
        out
    }

    /// Go-back-N from `p`, costing a transport retry; with none left the QP fails.
    fn retry(&mut self, p: Psn, now: u64, out: &mut Out) {
        if self.retry_left == 0 {
            self.fail(WcStatus::TransportRetryExcErr, out);
            return;
        }
        self.retry_left -= 1;
        self.retry_psn = Some(p);
        self.send_psn = p;
        self.arm(now);
        self.pump(now, out);
    }

    /// The front request completes with `status`, the rest are flushed, the QP is in error.
    fn fail(&mut self, status: WcStatus, out: &mut Out) {
        if let Some(front) = self.queue.pop_front() {
            out.push(complete(&front.wr, status));
        }
        out.push(ReqAction::EnterError(status));
        for r in self.queue.drain(..) {
            out.push(complete(&r.wr, WcStatus::WrFlushErr));
        }
        self.error = true;
        self.ack_deadline = None;
        self.rnr_deadline = None;
    }

    /// Transmits from `send_psn` while the window and the READ/atomic limits allow.
    fn pump(&mut self, now: u64, out: &mut Out) {
        if self.error || self.rnr_deadline.is_some() {
            return;
        }
        loop {
            if self.una.distance_to(self.send_psn) >= self.cfg.max_inflight {
                return;
            }
            let Some(idx) = self.queue.iter().position(|r| r.contains(self.send_psn)) else {
                return;
            };
            let Some(req) = self.queue.get(idx).copied() else {
                return;
            };
            if req.local_error.is_some() {
                return;
            }
            if !req.started {
                let earlier = self.queue.iter().take(idx);
                let outstanding_ra = self
                    .queue
                    .iter()
                    .filter(|r| r.started && r.wr.op.is_read_or_atomic())
                    .count();
                if req.wr.op.is_read_or_atomic() && outstanding_ra >= self.sra_limit() {
                    return;
                }
                if req.wr.fence && earlier.clone().any(|r| r.wr.op.is_read_or_atomic()) {
                    return;
                }
                if let Some(r) = self.queue.get_mut(idx) {
                    r.started = true;
                }
            }
            let index = req.first.distance_to(self.send_psn);
            let Some(seg) = segment_at(
                Service::Rc,
                req.wr.op,
                req.wr.len,
                self.cfg.mtu,
                req.first,
                index,
            ) else {
                return;
            };
            let after = match req.wr.op.kind() {
                OpKind::Send | OpKind::Write => self.send_psn.next(),
                OpKind::Read | OpKind::Atomic => req.first.add(req.count),
            };
            let retransmission = self.send_psn.is_before(self.high_psn);
            let window_full = self.una.distance_to(after) >= self.cfg.max_inflight;
            let ack_req = match req.wr.op.kind() {
                OpKind::Send | OpKind::Write => index + 1 == req.count || window_full,
                OpKind::Read | OpKind::Atomic => false,
            };
            if retransmission {
                self.stats.retransmitted += 1;
            }
            out.push(ReqAction::Transmit(TxPacket {
                wqe_index: req.wr.wqe_index,
                op: req.wr.op,
                opcode: seg.opcode,
                psn: seg.psn,
                offset: seg.offset,
                len: seg.len,
                ack_req,
                retransmission,
            }));
            self.send_psn = after;
            if after.is_after(self.high_psn) {
                self.high_psn = after;
            }
            if self.ack_deadline.is_none() {
                self.arm(now);
            }
        }
    }
}

/// The completion of `wr` with `status`.
fn complete(wr: &WorkRequest, status: WcStatus) -> ReqAction {
    ReqAction::Complete(Completion {
        wqe_index: wr.wqe_index,
        op: wr.op,
        status,
        bytes: if status.is_error() { 0 } else { wr.len },
    })
}

/// The requester's completion status for a fatal NAK code.
pub const fn nak_status(code: NakCode) -> WcStatus {
    match code {
        NakCode::PsnSequenceError => WcStatus::TransportRetryExcErr,
        NakCode::InvalidRequest | NakCode::InvalidRdRequest => WcStatus::RemoteInvalReqErr,
        NakCode::RemoteAccessError => WcStatus::RemoteAccessErr,
        NakCode::RemoteOperationalError => WcStatus::RemoteOpErr,
    }
}

#[cfg(test)]
#[path = "requester_tests.rs"]
mod tests;
