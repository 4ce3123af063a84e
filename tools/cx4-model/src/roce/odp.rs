//! On-demand paging on RC QPs: the transport page-fault scheme of ConnectX-4 (mlx5_ifc.h
//! `odp_cap.transport_page_fault_scheme_cap`; mlx5_ib odp.c is the driver side).
//!
//! With the `pg` capability an MTT entry carries read and write enables and an indirect
//! entry may name the null mkey (`fw/mkey_map.rs`): an access that meets a page the entry
//! does not enable is a page fault ([`XlateError::PageFault`]). An RC QP then holds the
//! faulting request and raises a `PAGE_FAULT` event on the EQ subscribed to it (mlx5_ib
//! creates one with its first ODP MR, odp.c `mlx5r_odp_create_eq`), and waits for the
//! driver's `PAGE_FAULT_RESUME` naming the QP:
//!
//! - the requester faults on a send WQE's local buffers (send and write data read, READ and
//!   atomic results written) when it fetches the WQE: a WQE fault (sub-type 0) of type
//!   `REQ_SEND_OR_WRITE` or `REQ_READ_OR_ATOMIC` with the WQE's counter. The WQE stays
//!   unconsumed and the send queue stops; the resume re-fetches it. A page that goes away
//!   after the fetch (an invalidation zapped it) faults the same way when a packet is
//!   gathered, or when a READ response or atomic result is to land in it: nothing is sent
//!   or placed, the send queue stalls (its ACK timer stands still, responses are dropped)
//!   and the resume transmits again from that packet's PSN, costing no transport retry;
//! - the responder faults on a SEND's receive WQE (a WQE fault of type `RESP` with the RQ
//!   WQE's counter: mlx5_ib reads the WQE and faults its buffers in) and on the R_Key range
//!   of an RDMA WRITE, READ or atomic (an RDMA fault, sub-type 1: the R_Key, address and
//!   lengths, type `MLX5_PFAULT_RDMA` [| `MLX5_PFAULT_WRITE`], token = QP number). The packet
//!   has no effect — the responder's state, the receive WQE taken and the RQ counter are
//!   put back — and is answered with an RNR NAK, as is every new request until the resume;
//!   the requester's retry after its RNR timer then finds the pages.
//!
//! A resume with `error` fails the held request: the requester's WQE completes with a local
//! protection error, the responder NAKs the retried request with a remote access error
//! (RDMA) or completes its receive WQE with a local protection error (SEND), and the QP
//! goes to the error state, as for any access the keys refuse.
//!
//! Faults are taken only where the `[odp]` capability page allows them and a page-fault EQ
//! exists; elsewhere (UC, UD, XRC, SRQ receives, Ethernet queues) a missing page fails as a
//! protection error. Not modelled: `bytes_committed` (always 0: a resumed request starts
//! over).

use std::{cell::Cell, collections::BTreeMap};

use cx4_hw::eq::{eqe::Eqe, event_type, pfault_subtype, pfault_wqe_type};

use crate::{
    bus::Bus,
    eth::dma::DmaError,
    fw::{self, PfResume, XlateError},
};

use super::engine::{QpEngine, RespSide};
use super::headers::Service;
use super::psn::Psn;
use super::qp_view::QpView;
use super::responder::{RespAction, RespFault};
use super::status::WcStatus;
use super::wqe::{sg_io, SendWqe, Sge};
use super::Roce;

/// RDMA fault type bits (driver.h `MLX5_PFAULT_WRITE`, `MLX5_PFAULT_RDMA`).
const PFAULT_WRITE: u8 = 1 << 1;
/// See [`PFAULT_WRITE`].
const PFAULT_RDMA: u8 = 1 << 2;

/// What holds a responder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RqHold {
    /// A fault is out: new requests are answered with RNR NAKs.
    Waiting,
    /// The driver could not resolve it: the retried request fails so.
    Failed(RespFault),
}

/// The engine's page-fault state.
#[derive(Debug, Default)]
pub struct OdpState {
    /// Requesters holding a WQE (its counter) until the resume, by QP number.
    pub sq: BTreeMap<u32, u16>,
    /// Requesters whose send queue stalled on a packet's gather (a page zapped after the
    /// WQE was fetched): the PSN to transmit again from at the resume, by QP number. They
    /// send nothing and their ACK timer stands still meanwhile.
    pub gather: BTreeMap<u32, Psn>,
    /// Responders held, by QP number.
    pub rq: BTreeMap<u32, RqHold>,
    /// Page-fault events raised.
    pub faults: u64,
    /// Resumes taken (with error: also in `failed`).
    pub resumes: u64,
    /// Resumes with error.
    pub failed: u64,
    /// Token of the next fault.
    token: u32,
}

impl OdpState {
    /// Drops what QP `qpn` held (it left RTS/RTR, or is gone).
    pub fn forget(&mut self, qpn: u32) {
        self.sq.remove(&qpn);
        self.gather.remove(&qpn);
        self.rq.remove(&qpn);
    }

    /// Whether QP `qpn`'s requester stalled on a gather fault.
    pub fn gather_held(&self, qpn: u32) -> bool {
        self.gather.contains_key(&qpn)
    }
}

/// A responder's fault, found before the packet changes anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RespPageFault {
    /// The receive WQE with this counter: a buffer of it is not present.
    RecvWqe(u16),
    /// `len` bytes at `va` of `rkey`, of a `packet` bytes long request; `write` for
    /// WRITE and atomics.
    Rdma {
        /// The R_Key.
        rkey: u32,
        /// Address.
        va: u64,
        /// Bytes the request accesses.
        len: u32,
        /// The packet's payload bytes.
        packet: u32,
        /// The device writes (WRITE data, atomics).
        write: bool,
    },
}

impl Roce<'_> {
    /// Whether page faults are taken: the card has `pg` and an EQ takes PAGE_FAULT events.
    pub(super) fn odp_on(&self) -> bool {
        self.fw.caps.general("pg") != 0
            && self
                .fw
                .eqs
                .values()
                .any(|e| e.wants(event_type::PAGE_FAULT))
    }

    /// Whether the `[odp]` page lets RC `op` fault (`send`, `receive`, `write`, `read`,
    /// `atomic`).
    fn rc_may_fault(&self, op: &str) -> bool {
        let f = format!("transport_page_fault_scheme_cap.rc_odp_caps.{op}");
        self.fw.caps.odp(&f) != 0
    }

    fn next_token(&mut self) -> u32 {
        let t = self.roce.odp.token;
        self.roce.odp.token = (t + 1) & 0xff_ffff;
        t
    }

    fn post_fault(&mut self, bus: &mut Bus, eqe: &Eqe, what: std::fmt::Arguments<'_>) {
        self.roce.odp.faults += 1;
        let n = self.fw.post_event(bus, eqe);
        log::debug!("page fault: {what} (to {n} EQ)");
    }

    /// A WQE fault of `ty` on WQE `index` of QP `qpn`.
    fn wqe_fault(&mut self, bus: &mut Bus, qpn: u32, ty: u8, index: u16) {
        let token = self.next_token();
        let mut eqe = fw::new_event(event_type::PAGE_FAULT, pfault_subtype::WQE);
        let p = eqe.page_fault_mut();
        p.set_wqe_index(index.into());
        p.set_wqe_token(token);
        p.set_pftype_wq(u32::from(ty) << 24 | qpn);
        let what = pfault_wqe_type::pfault_wqe_type_name(ty);
        self.post_fault(
            bus,
            &eqe,
            format_args!("QP {qpn:#x} WQE {index:#x} ({what})"),
        );
    }

    /// The requester met a page fault on WQE `index` (`read_or_atomic`: its local buffer is
    /// written): the send queue holds it until the resume. False if this QP may not fault
    /// here (the caller fails the WQE as before).
    pub(super) fn sq_page_fault(
        &mut self,
        bus: &mut Bus,
        q: &QpEngine,
        index: u16,
        op: Option<super::segment::RequestOp>,
    ) -> bool {
        use super::segment::RequestOp as R;
        let (ty, cap) = match op {
            Some(R::Read) => (pfault_wqe_type::REQ_READ_OR_ATOMIC, "read"),
            Some(R::CompareSwap | R::FetchAdd) => (pfault_wqe_type::REQ_READ_OR_ATOMIC, "atomic"),
            Some(R::Write | R::WriteImm) => (pfault_wqe_type::REQ_SEND_OR_WRITE, "write"),
            Some(_) => (pfault_wqe_type::REQ_SEND_OR_WRITE, "send"),
            None => return false,
        };
        if q.service != Service::Rc || !self.odp_on() || !self.rc_may_fault(cap) {
            return false;
        }
        if self.roce.odp.sq.contains_key(&q.qpn) {
            return true;
        }
        self.roce.odp.sq.insert(q.qpn, index);
        self.wqe_fault(bus, q.qpn, ty, index);
        true
    }

    /// Packet `psn` of WQE `w` met a page zapped after the WQE was fetched: the send queue
    /// stalls as on a fetch fault, and the resume transmits again from `psn` (costing no
    /// transport retry: nothing was lost on the wire). False if this QP may not fault here.
    pub(super) fn gather_page_fault(
        &mut self,
        bus: &mut Bus,
        q: &QpEngine,
        w: &SendWqe,
        psn: Psn,
    ) -> bool {
        if !self.sq_page_fault(bus, q, w.index, w.op()) {
            return false;
        }
        self.roce.odp.gather.entry(q.qpn).or_insert(psn);
        true
    }

    /// Before the requester takes response `hdr`: true if it must be dropped — the send
    /// queue stalled on a page fault (what follows the faulting packet is dropped until the
    /// resume transmits again), or it is a READ response or atomic result whose WQE's local
    /// buffer meets a page zapped after the WQE was fetched: a WQE fault as at the fetch, and
    /// the resume asks again from the response's PSN.
    pub(super) fn response_faults(
        &mut self,
        bus: &mut Bus,
        q: &QpEngine,
        v: &QpView,
        hdr: &super::headers::TransportHeaders,
    ) -> bool {
        use super::headers::Opcode::*;
        if self.roce.odp.gather_held(q.qpn) {
            return true;
        }
        let lands = matches!(
            hdr.bth.opcode,
            RcRdmaReadResponseFirst
                | RcRdmaReadResponseMiddle
                | RcRdmaReadResponseLast
                | RcRdmaReadResponseOnly
                | RcAtomicAcknowledge
        );
        if !lands || !self.odp_on() {
            return false;
        }
        let psn = Psn::new(hdr.bth.psn);
        let Some(super::engine::ReqSide::Rc(r)) = &q.req else {
            return false;
        };
        let Some(w) = r.wqe_of(psn).and_then(|i| q.wqe(i)) else {
            return false;
        };
        self.wqe_faults(bus, v, w) && self.gather_page_fault(bus, q, w, psn)
    }

    /// Whether QP `qpn`'s send queue waits for a resume.
    pub(super) fn sq_held(&self, qpn: u32) -> bool {
        self.roce.odp.sq.contains_key(&qpn)
    }

    /// Translates WQE `w`'s local buffers; true if one is a page fault.
    pub(super) fn wqe_faults(&self, bus: &Bus, v: &QpView, w: &SendWqe) -> bool {
        let fault = Cell::new(false);
        let _ = w.check_keys(&|lkey, addr, len, write| {
            let r = self
                .fw
                .translate(&bus.mem, lkey, v.pd, addr, len, write)
                .map(|_| ());
            fault.set(fault.get() || r == Err(XlateError::PageFault));
            r.map_err(|_| DmaError::BadLkey { lkey })
        });
        fault.get()
    }

    /// Before the responder's actions for a request are carried out: the first access
    /// among them that meets a missing page, if faults may be taken for it. `open` is the
    /// receive WQE being filled, `next` the one a new SEND would take (RQ, not SRQ).
    pub(super) fn resp_page_fault(
        &self,
        bus: &Bus,
        v: &QpView,
        acts: &[RespAction],
        open: Option<(u16, &[Sge])>,
        next: impl Fn() -> Option<(u16, Vec<Sge>)>,
        packet: u32,
    ) -> Option<RespPageFault> {
        let remote = |rkey: u32, va: u64, len: u32, write: bool| -> bool {
            let Some(m) = self.fw.mkey(rkey).filter(|m| m.pd == v.pd) else {
                return false;
            };
            self.fw.translate_remote(&bus.mem, m, va, len, write) == Err(XlateError::PageFault)
        };
        for a in acts {
            let f = match *a {
                RespAction::RecvData {
                    offset,
                    len,
                    new_wqe,
                    ..
                } if self.rc_may_fault("receive") && v.srqn.is_none() => {
                    let fresh;
                    let (index, sges) = if new_wqe {
                        fresh = next()?;
                        (fresh.0, &fresh.1[..])
                    } else {
                        open?
                    };
                    let fault = Cell::new(false);
                    let _ = sg_io(sges, u64::from(offset), len as usize, |s, at, r| {
                        let t = self.fw.translate(
                            &bus.mem,
                            s.lkey,
                            v.recv_pd,
                            at,
                            r.len() as u32,
                            true,
                        );
                        fault.set(fault.get() || t == Err(XlateError::PageFault));
                        Ok(())
                    });
                    fault.get().then_some(RespPageFault::RecvWqe(index))
                }
                RespAction::WriteData { rkey, va, len, .. }
                    if self.rc_may_fault("write") && remote(rkey, va, len, true) =>
                {
                    Some(RespPageFault::Rdma {
                        rkey,
                        va,
                        len,
                        packet,
                        write: true,
                    })
                }
                RespAction::ReadResponse(rr)
                    if self.rc_may_fault("read") && remote(rr.rkey, rr.va, rr.len, false) =>
                {
                    Some(RespPageFault::Rdma {
                        rkey: rr.rkey,
                        va: rr.va,
                        len: rr.len,
                        packet,
                        write: false,
                    })
                }
                RespAction::ExecuteAtomic(a)
                    if self.rc_may_fault("atomic") && remote(a.rkey, a.va, 8, true) =>
                {
                    Some(RespPageFault::Rdma {
                        rkey: a.rkey,
                        va: a.va,
                        len: 8,
                        packet,
                        write: true,
                    })
                }
                _ => None,
            };
            if f.is_some() {
                return f;
            }
        }
        None
    }

    /// Raises the responder's fault `f` for QP `qpn` and holds it.
    pub(super) fn raise_resp_fault(&mut self, bus: &mut Bus, qpn: u32, f: RespPageFault) {
        self.roce.odp.rq.insert(qpn, RqHold::Waiting);
        match f {
            RespPageFault::RecvWqe(index) => self.wqe_fault(bus, qpn, pfault_wqe_type::RESP, index),
            RespPageFault::Rdma {
                rkey,
                va,
                len,
                packet,
                write,
            } => {
                let ty = PFAULT_RDMA | if write { PFAULT_WRITE } else { 0 };
                let mut eqe = fw::new_event(event_type::PAGE_FAULT, pfault_subtype::RDMA);
                let p = eqe.page_fault_mut();
                p.set_r_key(rkey);
                p.set_rdma_va(va);
                p.set_rdma_op_len(len);
                p.set_rdma_packet_length(packet.min(0xffff));
                p.set_pftype_token(u32::from(ty) << 24 | qpn);
                self.post_fault(
                    bus,
                    &eqe,
                    format_args!("QP {qpn:#x} R_Key {rkey:#x} {va:#x}+{len:#x}"),
                );
            }
        }
    }

    /// What holds QP `qpn`'s responder, if anything.
    pub(super) fn rq_hold(&self, qpn: u32) -> Option<RqHold> {
        self.roce.odp.rq.get(&qpn).copied()
    }

    /// Releases a responder that failed (its retried request is failing now).
    pub(super) fn rq_release(&mut self, qpn: u32) {
        self.roce.odp.rq.remove(&qpn);
    }

    /// The responder's answer to a request while a fault holds it: an RNR NAK.
    pub(super) fn rnr_while_held(&self, q: &mut QpEngine, psn: super::psn::Psn) -> Vec<RespAction> {
        match &mut q.resp {
            Some(RespSide::Rc(r)) => r.page_fault_nak(psn),
            _ => Vec::new(),
        }
    }

    /// Applies the PAGE_FAULT_RESUME commands since the last call: held send queues run
    /// again (or fail their WQE), held responders take the next retry (or fail it).
    pub(super) fn page_fault_resumes(&mut self, bus: &mut Bus) {
        if self.fw.rdma.pf_resumes.is_empty() {
            return;
        }
        for PfResume { ty, qpn, error } in std::mem::take(&mut self.fw.rdma.pf_resumes) {
            self.roce.odp.resumes += 1;
            self.roce.odp.failed += u64::from(error);
            let requester = ty & PFAULT_RDMA == 0 && ty & 1 != 0;
            if requester {
                let Some(index) = self.roce.odp.sq.remove(&qpn) else {
                    log::debug!("PAGE_FAULT_RESUME of QP {qpn:#x}'s send queue: nothing held");
                    continue;
                };
                let gather = self.roce.odp.gather.remove(&qpn);
                self.with_qp(bus, qpn, |d, bus, q, v| {
                    if let (Some(psn), false, Some(super::engine::ReqSide::Rc(r))) =
                        (gather, error, &mut q.req)
                    {
                        let acts = r.resume_at(psn, super::engine::now_ns());
                        d.req_actions(bus, q, v, acts, &[]);
                    }
                    if error {
                        let op = d.sq_wqe_opcode(bus, q, v);
                        log::warn!(
                            "QP {qpn:#x} WQE {index:#x}: page fault not resolved, QP to error"
                        );
                        d.local_error(bus, q, v, index, op, WcStatus::LocalProtErr);
                    } else if v.state == cx4_hw::qp::qpc_state::RTS {
                        d.execute_qp_sq(bus, q, v);
                    }
                });
            } else {
                match self.roce.odp.rq.get(&qpn) {
                    Some(RqHold::Waiting) if error => {
                        let f = if ty & PFAULT_RDMA != 0 {
                            RespFault::RemoteAccess
                        } else {
                            RespFault::RecvProtection
                        };
                        self.roce.odp.rq.insert(qpn, RqHold::Failed(f));
                    }
                    Some(RqHold::Waiting) => {
                        self.roce.odp.rq.remove(&qpn);
                    }
                    _ => log::debug!("PAGE_FAULT_RESUME of QP {qpn:#x}'s responder: nothing held"),
                }
            }
        }
    }
}
