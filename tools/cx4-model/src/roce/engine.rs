//! The RoCE engine's per-QP state, kept next to the firmware's QP objects (`fw::qp`): the
//! transport state machines of an RC or UC QP, its send and receive queue counters, the send
//! WQEs in flight and the receive WQE being filled.
//!
//! The state follows the QP's transitions ([`Engine::apply`], fed from
//! `fw::RdmaObjects::qp_events`): leaving RESET creates it with both counters at 0, INIT2RTR
//! creates the responder (`next_rcv_psn`, `mtu`, `log_rra_max`, `min_rnr_nak`, `log_msg_max`)
//! and the path, RTR2RTS the requester (`next_send_psn`, `retry_count`, `rnr_retry`, the
//! primary path's `ack_timeout`, `log_sra_max`), the error state flushes (the device does it:
//! `roce::device`), RESET and DESTROY drop it.

use std::collections::{BTreeMap, VecDeque};

use cx4_hw::qp::{qpc_st, qpc_state};

use crate::fw::{Qp, QP_DESTROYED};

use super::headers::Service;
use super::psn::Psn;
use super::requester::{Requester, RequesterConfig};
use super::responder::{Responder, ResponderConfig};
use super::segment::PathMtu;
use super::unreliable::{UcRequester, UcResponder};
use super::wire::Path;
use super::wqe::{SendWqe, Sge};

pub use super::stats::RoceStats;
pub use crate::clock::now_ns;

/// The requester of a QP.
#[derive(Clone, Debug)]
pub enum ReqSide {
    /// RC.
    Rc(Box<Requester>),
    /// UC.
    Uc(UcRequester),
}

/// The responder of a QP.
#[derive(Clone, Debug)]
pub enum RespSide {
    /// RC.
    Rc(Box<Responder>),
    /// UC.
    Uc(UcResponder),
}

/// The receive WQE a multi-packet SEND is being placed into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenRecv {
    /// Its counter (the CQE's `wqe_counter`).
    pub index: u16,
    /// Its scatter list.
    pub sges: Vec<Sge>,
}

/// The engine state of one QP.
#[derive(Clone, Debug)]
pub struct QpEngine {
    /// QP number.
    pub qpn: u32,
    /// RC or UC.
    pub service: Service,
    /// Addressing (from RTR on).
    pub path: Option<Path>,
    /// The requester (from RTS on).
    pub req: Option<ReqSide>,
    /// The responder (from RTR on).
    pub resp: Option<RespSide>,
    /// Basic-block counter of the next send WQE to read.
    pub sq_cc: u32,
    /// Counter of the next receive WQE to take.
    pub rq_cc: u32,
    /// Send WQEs handed to the requester and not completed, in post order.
    pub wqes: VecDeque<SendWqe>,
    /// The receive WQE being filled.
    pub recv_open: Option<OpenRecv>,
    /// In the error state: every WQE is flushed.
    pub error: bool,
    /// UD and GSI: the PSN of the next packet (the context's `next_send_psn` at the first
    /// RTS; UD receivers do not check it).
    pub ud_psn: Option<Psn>,
    /// The transport events already added to the QP's queue counter set
    /// (`qcounters.rs`).
    pub reported: crate::fw::RoceQCounts,
    /// The events of a responder and requester the QP no longer has (dropped when it
    /// entered the error state), so that its counts never go back (`qcounters.rs`).
    pub retired: crate::fw::RoceQCounts,
    /// XRC target: the XRC SRQ of the SEND being received (`xrc.rs`).
    pub xrc: XrcState,
    /// DCI: the DCT it is connected to (`dc.rs`).
    pub dci: Option<super::dc::DciConn>,
    /// Responses waiting to leave behind a READ's that streams (`outgoing.rs`).
    pub responses: super::outgoing::Responses,
}

impl QpEngine {
    /// A fresh state (counters at 0, nothing in flight).
    pub fn new(qpn: u32, service: Service) -> QpEngine {
        QpEngine {
            qpn,
            service,
            path: None,
            req: None,
            resp: None,
            sq_cc: 0,
            rq_cc: 0,
            wqes: VecDeque::new(),
            recv_open: None,
            error: false,
            ud_psn: None,
            reported: Default::default(),
            retired: Default::default(),
            xrc: Default::default(),
            dci: None,
            responses: Default::default(),
        }
    }

    /// Whether responses wait to leave (`outgoing.rs`).
    pub fn responding(&self) -> bool {
        !self.responses.is_empty()
    }

    /// The in-flight send WQE with counter `index`.
    pub fn wqe(&self, index: u16) -> Option<&SendWqe> {
        self.wqes.iter().find(|w| w.index == index)
    }

    /// Removes the in-flight send WQE with counter `index`.
    pub fn take_wqe(&mut self, index: u16) -> Option<SendWqe> {
        let i = self.wqes.iter().position(|w| w.index == index)?;
        self.wqes.remove(i)
    }

    /// When the requester's timer is next due.
    pub fn deadline(&self) -> Option<u64> {
        match &self.req {
            Some(ReqSide::Rc(r)) => r.next_deadline(),
            _ => None,
        }
    }
}

/// What a QP state change asks of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Nothing beyond the state kept here.
    None,
    /// The QP entered the error state: flush its queues.
    Flush,
    /// The QP entered RTS: execute the send WQEs posted so far.
    Ready,
}

/// How often QPs in the error state look for receive WQEs to flush, ns.
pub const ERROR_FLUSH_PERIOD_NS: u64 = 10_000_000;

/// The engine: every RC, UC, UD and GSI QP's state.
#[derive(Debug, Default)]
pub struct Engine {
    /// Per-QP state by QP number.
    pub qps: BTreeMap<u32, QpEngine>,
    /// Statistics.
    pub stats: RoceStats,
    /// What loops back inside the card, in order: frames addressed to one of the port's own
    /// GIDs, copies of multicast sends for the QPs attached here, RC request bursts
    /// (`burst.rs`).
    pub loopback: VecDeque<super::looped::Looped>,
    /// The device's place in each SRQ's free list, by SRQ number.
    pub srqs: BTreeMap<u32, SrqCursor>,
    /// The loopback queue is being drained (not re-entered).
    pub draining: bool,
    /// Loop RC requests back as frames, packet by packet, instead of in bursts
    /// (`burst.rs`): what the host tests and benchmarks compare the bursts against.
    pub frame_loopback: bool,
    /// READ response packets sent per hold of the device lock (`outgoing.rs`; `None`:
    /// [`super::outgoing::READ_BURST`]): host tests make it small.
    pub read_burst: Option<u32>,
    /// Received frames the `roce-wire` fault holds back or delays.
    pub wire: super::wire_faults::WireFaults,
    /// Congestion control: the QPs' rate limiters, the CNP pacing, frames waiting for the
    /// rate limiter or a PFC pause (`congestion.rs`).
    pub cong: super::cong_state::CongEngine,
    /// mlx5_ib's `REG_UMR` QPs (`local_ops.rs`), by QP number.
    pub umr_qps: BTreeMap<u32, UmrQpState>,
    /// The DCTs' open connections (`dc.rs`).
    pub dc_conns: super::dc::DctConns,
    /// Page faults out and the queues they hold (`odp.rs`).
    pub odp: super::odp::OdpState,
    /// The earliest timer a QP armed since the timer thread last looked
    /// ([`super::RoceEngine::take_armed`]): a doorbell's requests start an ACK timer that
    /// thread, asleep in poll(2) since, knows nothing of.
    pub armed: Option<u64>,
}

/// Where the device is in an SRQ: the WQE at the head of its free list, and how many WQEs it
/// took (compared with the producer counter in the SRQ's doorbell record).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqCursor {
    /// Index of the next WQE to take.
    pub head: u16,
    /// WQEs taken.
    pub taken: u32,
}

/// The path of connected QP `qp`: from its address path's LIDs on an IB port, else from the
/// RoCE address table.
fn path_of(
    qpn: u32,
    qp: &Qp,
    gids: &BTreeMap<u16, crate::fw::GidEntry>,
    ib: Option<super::ib_ud::IbLink<'_>>,
) -> Result<super::wire::Path, String> {
    match ib {
        Some(link) => super::ib_ud::ib_path(&qp.ctx, link),
        None => super::wire::Path::from_qpc(qpn, &qp.ctx, gids),
    }
}

/// The service of an engine-run QP type.
fn service(st: u8) -> Option<Service> {
    match st {
        qpc_st::RC => Some(Service::Rc),
        qpc_st::UC => Some(Service::Uc),
        // Initiator and target alike: the RC state machines (`xrc.rs` maps the opcodes).
        qpc_st::XRC => Some(Service::Xrc),
        // A DC initiator: RC's requester, its path per connection (`dc.rs`).
        qpc_st::DCI => Some(Service::Dc),
        qpc_st::UD | qpc_st::QP1 | qpc_st::QP0 => Some(Service::Ud),
        _ => None,
    }
}

/// The largest message of a context (`log_msg_max`, capped by the device's `log_max_msg`).
fn max_msg(qp: &Qp, log_max_msg: u32) -> u32 {
    let l = match qp.ctx.log_msg_max() {
        0 => log_max_msg,
        l => l.min(log_max_msg),
    };
    1u32 << l.min(31)
}

impl Engine {
    /// READ response packets per hold of the device lock (`outgoing.rs`).
    pub fn read_burst(&self) -> u32 {
        self.read_burst
            .unwrap_or(super::outgoing::READ_BURST)
            .max(1)
    }

    /// Whether QP `qpn`'s requester timer stands still: its request frames wait to leave
    /// (the ACK timer runs from their departure), or its send queue stalled on a page fault
    /// (`odp.rs`: the resume transmits again).
    pub fn timer_held(&self, qpn: u32) -> bool {
        self.cong.holds(qpn) || self.odp.gather_held(qpn)
    }

    /// The earliest requester deadline (none of a QP whose request frames wait to leave: its
    /// ACK timer runs from their departure); a QP in error asks to be woken every
    /// [`ERROR_FLUSH_PERIOD_NS`] after `now` (for receive WQEs to flush).
    pub fn next_deadline(&self, now: u64) -> Option<u64> {
        let flush = self
            .qps
            .values()
            .any(|q| q.error)
            .then(|| now.saturating_add(ERROR_FLUSH_PERIOD_NS));
        // Responses waiting to leave: at once (`outgoing.rs`).
        let streaming = (self.qps.values().any(QpEngine::responding)
            || self.dc_conns.values().any(|c| c.q.responding()))
        .then_some(now);
        self.qps
            .values()
            .filter(|q| !self.timer_held(q.qpn))
            .filter_map(QpEngine::deadline)
            .chain(flush)
            .chain(streaming)
            .min()
    }

    /// Applies a QP state change the firmware made (`to` a `qpc_state`, or
    /// [`QP_DESTROYED`]); `qp` is the QP as it is now (`None` once destroyed). A connected
    /// QP's path comes from the RoCE address table `gids`, or on an InfiniBand port `ib`
    /// (the port, its MAC and GUID) from the LIDs of its address path.
    pub fn apply(
        &mut self,
        qpn: u32,
        to: u8,
        qp: Option<&Qp>,
        gids: &BTreeMap<u16, crate::fw::GidEntry>,
        ib: Option<super::ib_ud::IbLink<'_>>,
        log_max_msg: u32,
    ) -> Change {
        if to != qpc_state::RTS && to != qpc_state::SQD {
            // A QP leaving RTR/RTS (to error, reset, destroyed) drops its page faults.
            self.odp.forget(qpn);
        }
        let Some(qp) = qp.filter(|_| to != QP_DESTROYED && to != qpc_state::RST) else {
            self.qps.remove(&qpn);
            return Change::None;
        };
        let Some(svc) = service(qp.st()) else {
            return Change::None;
        };
        let q = self
            .qps
            .entry(qpn)
            .or_insert_with(|| QpEngine::new(qpn, svc));
        if svc == Service::Ud {
            // No path, no transport state machines: the WQEs carry their addresses.
            return match to {
                qpc_state::RTS => {
                    if q.ud_psn.is_none() {
                        q.ud_psn = Some(Psn::new(qp.ctx.next_send_psn()));
                    }
                    Change::Ready
                }
                qpc_state::ERR if !q.error => {
                    q.error = true;
                    Change::Flush
                }
                _ => Change::None,
            };
        }
        let mtu = PathMtu::from_code(qp.ctx.mtu() as u8).unwrap_or(PathMtu::Mtu1024);
        let msg = max_msg(qp, log_max_msg);
        match to {
            // A DCI has no responder, and its path is its connection's (`dc.rs`).
            qpc_state::RTR if svc == Service::Dc => Change::None,
            qpc_state::RTR => {
                match path_of(qpn, qp, gids, ib) {
                    Ok(p) => q.path = Some(p),
                    Err(e) => log::warn!("QP {qpn:#x}: no usable path ({e}); it cannot send"),
                }
                let epsn = Psn::new(qp.ctx.next_rcv_psn());
                q.resp = Some(match svc {
                    Service::Uc => RespSide::Uc(UcResponder::new(mtu, epsn, msg)),
                    _ => {
                        let mut c = ResponderConfig::new(mtu, epsn);
                        c.log_rra_max = qp.ctx.log_rra_max() as u8;
                        c.min_rnr_timer = qp.ctx.min_rnr_nak() as u8;
                        c.max_msg_len = msg;
                        RespSide::Rc(Box::new(Responder::new(c)))
                    }
                });
                Change::None
            }
            qpc_state::RTS => {
                if q.req.is_none() {
                    if q.path.is_none() && svc != Service::Dc {
                        q.path = path_of(qpn, qp, gids, ib).ok();
                    }
                    let psn = Psn::new(qp.ctx.next_send_psn());
                    q.req = Some(match svc {
                        Service::Uc => ReqSide::Uc(UcRequester::new(mtu, psn, msg)),
                        _ => {
                            let mut c = RequesterConfig::new(mtu, psn);
                            c.retry_count = qp.ctx.retry_count() as u8;
                            c.rnr_retry = qp.ctx.rnr_retry() as u8;
                            c.ack_timeout = qp.ctx.primary_address_path().ack_timeout() as u8;
                            c.log_sra_max = qp.ctx.log_sra_max() as u8;
                            c.max_msg_len = msg;
                            ReqSide::Rc(Box::new(Requester::new(c)))
                        }
                    });
                }
                Change::Ready
            }
            qpc_state::ERR => {
                if q.error {
                    Change::None
                } else {
                    q.error = true;
                    Change::Flush
                }
            }
            _ => Change::None,
        }
    }
}

/// The XRC state of an engine QP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XrcState {
    /// Target: the XRC SRQ whose receive WQE the SEND being received fills (its MIDDLE and
    /// LAST packets, and a flush, complete to that SRQ).
    pub msg_srqn: Option<u32>,
}

/// The engine's state of a `REG_UMR` QP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UmrQpState {
    /// Basic-block counter of the next send WQE to read.
    pub sq_cc: u32,
    /// In the error state: WQEs are flushed.
    pub error: bool,
}
