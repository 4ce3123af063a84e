//! Send WQEs that complete without the wire — UMR (memory registration, local invalidate) and
//! NOP — on the device: on RC and UC QPs among the requests, and on mlx5_ib's `REG_UMR` QP,
//! which the engine runs only for them.
//!
//! A UMR takes effect when the device reads it (later WQEs see the new mkey; mlx5_ib fences
//! the WQE after a UMR and posts the UMR itself with the `umr_fence` mode, so the requests
//! before it are not disturbed in practice). Its completion, like a NOP's, keeps the send
//! queue's order: while requests posted before it are in flight it waits behind them in the
//! QP's in-flight list and is completed when they are (mlx5_ib and libmlx5 retire send WQEs
//! in order up to the CQE's `wqe_counter`). A failed UMR completes in error and moves the QP
//! to the error state, as a bad WQE does.
//!
//! The `REG_UMR` QP (no transport, no wire: mlx5_ib's `umrc.qp`) executes its WQEs at the
//! doorbell in RTS and flushes them in ERR; the engine keeps only its consumer counter.

use cx4_hw::{
    qp::{qpc_st, qpc_state},
    uar::DBR_SND,
    wqe::opcode,
};

use crate::{
    bus::Bus,
    eth::{
        dma::{RingWqe, WqeReader},
        mkeys::MkeyDma,
    },
    fw::QP_DESTROYED,
};

use super::cqe;
use super::engine::QpEngine;
use super::qp_view::{QpRing, QpView};
use super::status::WcStatus;
use super::umr::{self, UmrError, UmrQp, UmrWqe};
use super::wqe::SendWqe;
use super::Roce;

/// The `bbs` basic blocks of a send WQE, copied out of the ring (empty if unreadable: the
/// decoder then reports the WQE unreadable).
pub(super) fn copy_wqe<R: WqeReader + ?Sized>(r: &R, bbs: u16) -> Vec<u8> {
    let mut w = vec![0u8; usize::from(bbs) * 64];
    match r.read(0, &mut w) {
        Ok(()) => w,
        Err(_) => Vec::new(),
    }
}

impl Roce<'_> {
    /// Decodes and applies the UMR WQE `r` of QP `v`.
    fn execute_umr<R: WqeReader + ?Sized>(
        &mut self,
        bus: &mut Bus,
        v: &QpView,
        r: &R,
        index: u16,
    ) -> Result<UmrWqe, UmrError> {
        let u = UmrWqe::decode(r, index)?;
        let entries = u.entries(&MkeyDma {
            fw: self.fw,
            mem: &bus.mem,
            pd: v.pd,
        })?;
        let qp = UmrQp {
            qpn: v.qpn,
            pd: v.pd,
            privileged: v.st == qpc_st::REG_UMR,
        };
        umr::apply(self.fw, &u, &entries, qp)?;
        self.roce.stats.umrs += 1;
        Ok(u)
    }

    /// A UMR WQE on an RC or UC QP: applied, then completed in send-queue order; an error
    /// completes it in error and the QP goes to error.
    pub(super) fn post_umr<R: WqeReader + ?Sized>(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        r: &R,
        index: u16,
    ) {
        match self.execute_umr(bus, v, r, index) {
            Ok(u) => self.complete_local(bus, q, v, u.wqe),
            Err(e) => {
                log::warn!(
                    "QP {:#x} UMR WQE {index:#x}: {e}: error CQE, QP to error",
                    v.qpn
                );
                self.local_error(bus, q, v, index, opcode::UMR, e.status);
            }
        }
    }

    /// Completes a WQE that needs no wire (NOP, UMR): now if nothing posted before it is in
    /// flight, else once the requests before it are completed.
    pub(super) fn complete_local(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        w: SendWqe,
    ) {
        if q.wqes.is_empty() {
            if w.signaled {
                let c = cqe::req_cqe(v.cqe_qp(), w.index, w.opcode, 0);
                self.post(bus, v.cqn_snd, &c, false);
            }
        } else {
            q.wqes.push_back(w);
        }
    }

    /// Completes the local WQEs at the head of the in-flight list (the requests before them
    /// have completed).
    pub(super) fn complete_local_front(&mut self, bus: &mut Bus, q: &mut QpEngine, v: &QpView) {
        while q.wqes.front().is_some_and(|w| w.op().is_none()) {
            let w = q.wqes.pop_front().expect("front checked");
            if w.signaled {
                let c = cqe::req_cqe(v.cqe_qp(), w.index, w.opcode, 0);
                self.post(bus, v.cqn_snd, &c, false);
            }
        }
    }

    /// A QP transition for a `REG_UMR` QP: its state kept or dropped, WQEs flushed on ERR.
    /// False when `qpn` is not (or no longer) such a QP.
    pub(super) fn umr_qp_event(&mut self, bus: &mut Bus, qpn: u32, to: u8) -> bool {
        let is_umr = self
            .fw
            .rdma
            .qps
            .get(&qpn)
            .is_some_and(|qp| qp.st() == qpc_st::REG_UMR);
        if !is_umr || to == QP_DESTROYED || to == qpc_state::RST {
            return self.roce.umr_qps.remove(&qpn).is_some() || is_umr;
        }
        let s = self.roce.umr_qps.entry(qpn).or_default();
        if to == qpc_state::ERR && !s.error {
            s.error = true;
            if let Some(v) = self.qp_view(qpn) {
                self.umr_qp_run(bus, &v);
            }
        }
        true
    }

    /// A doorbell on a `REG_UMR` QP.
    pub(super) fn umr_qp_doorbell(&mut self, bus: &mut Bus, v: &QpView) {
        match v.state {
            qpc_state::RTS | qpc_state::ERR => self.umr_qp_run(bus, v),
            s => log::debug!(
                "doorbell on UMR QP {:#x} in {}, ignored",
                v.qpn,
                qpc_state::qpc_state_name(s)
            ),
        }
    }

    /// Executes (or, in error, flushes) a `REG_UMR` QP's WQEs up to its doorbell record.
    fn umr_qp_run(&mut self, bus: &mut Bus, v: &QpView) {
        let Some(log_sq) = v.buf.log_sq_size else {
            return;
        };
        let Some(pc) = self.read_be32_mem(bus, v.dbr + DBR_SND as u64) else {
            log::warn!(
                "UMR QP {:#x}: doorbell record {:#x} unreadable",
                v.qpn,
                v.dbr
            );
            return;
        };
        let mut s = self.roce.umr_qps.get(&v.qpn).copied().unwrap_or_default();
        if v.state == qpc_state::ERR {
            s.error = true;
        }
        let mut budget = 1u32 << log_sq;
        while (s.sq_cc & 0xffff) != (pc & 0xffff) && budget > 0 {
            let index = s.sq_cc as u16;
            let ring = QpRing {
                buf: &v.buf,
                base: v.buf.rq_bytes(),
                mem: &bus.mem,
            };
            let r = RingWqe::new(&ring, u32::from(log_sq), 6, s.sq_cc);
            let (op, bbs) = SendWqe::peek(&r).unwrap_or((0, 1));
            let w = copy_wqe(&r, bbs);
            s.sq_cc = s.sq_cc.wrapping_add(u32::from(bbs));
            budget = budget.saturating_sub(u32::from(bbs));
            if s.error {
                self.roce.stats.flushed += 1;
                let e = cqe::err_cqe(v.cqe_qp(), false, WcStatus::WrFlushErr, index, op);
                self.post(bus, v.cqn_snd, &e, false);
                continue;
            }
            self.roce.stats.wqes += 1;
            let done = match op {
                opcode::UMR => self.execute_umr(bus, v, &w[..], index).map(|u| u.wqe),
                opcode::NOP => SendWqe::ctrl(&w[..], index)
                    .map(|c| c.0)
                    .map_err(|e| UmrError {
                        status: e.status(),
                        why: e.to_string(),
                    }),
                o => Err(UmrError {
                    status: WcStatus::LocalQpOpErr,
                    why: format!("opcode {o:#x} on the UMR QP"),
                }),
            };
            match done {
                Ok(w) => {
                    if w.signaled {
                        let c = cqe::req_cqe(v.cqe_qp(), index, op, 0);
                        self.post(bus, v.cqn_snd, &c, false);
                    }
                }
                Err(e) => {
                    log::warn!(
                        "UMR QP {:#x} WQE {index:#x}: {e}: error CQE, QP to error",
                        v.qpn
                    );
                    self.roce.stats.errors += 1;
                    let c = cqe::err_cqe(v.cqe_qp(), false, e.status, index, op);
                    self.post(bus, v.cqn_snd, &c, false);
                    if let Some(qp) = self.fw.rdma.qps.get_mut(&v.qpn) {
                        qp.set_error();
                    }
                    s.error = true;
                }
            }
        }
        self.roce.umr_qps.insert(v.qpn, s);
    }
}
