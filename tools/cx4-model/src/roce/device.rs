//! The RoCE engine on the device: where the QPs' firmware objects, their engine state
//! (`engine.rs`), guest memory, the CQs and the wire meet.
//!
//! - Send: a doorbell naming a QP ([`Roce::qp_doorbell`]) reads the send counter from the
//!   QP's doorbell record (`dbr_addr + 4`, big-endian, 16 bits) and decodes each WQE from the
//!   engine's consumer counter (the send queue follows the receive queue in the QP buffer,
//!   64-byte basic blocks) into the requester, which segments it into packets.
//! - Receive: a RoCEv2 frame to one of the port's GIDs (`Roce::roce_receive`) goes to the
//!   QP its BTH names: responses to the requester, requests to the responder. Receive WQEs
//!   are taken from the QP's receive queue (counter at `dbr_addr + 0`) or its SRQ.
//! - Timers: [`super::RoceEngine::deadline`] is when the wire thread must call
//!   [`Roce::roce_tick`] (local ACK timeout, RNR timer, the release of received frames
//!   the `roce-wire` fault delays or holds back, `wire_faults.rs`, and of request packets
//!   the DCQCN rate limiter holds back, `congestion.rs`).
//! - Congestion: request packets go through `congestion.rs` (ECT marking, PFC pause, DCQCN
//!   pacing), every RoCE frame through its PFC gate.
//! - State: [`Roce::roce_sync`] applies the QP transitions the commands made.
//!
//! States: a QP in RTS executes its send queue; in RESET, INIT or RTR the doorbell is ignored
//! (logged); in SQD the WQEs wait; in ERR they are flushed (`WR_FLUSH_ERR`), as are the
//! receive WQEs. Requests are taken in RTR, RTS and SQD; responses in RTS and SQD.
//!
//! Remote accesses check the R_Key's memory key: it exists, is in the QP's PD, has the
//! remote right (read / write / atomic) and covers the range. Atomics operate on 8-byte
//! big-endian values in memory and return the original value big-endian, as ConnectX does.
//!
//! The receive side (responses to the requester, requests to the responder, receive WQEs of
//! the RQ or the SRQ, R_Key checks) is in `receive.rs`.
//!
//! UD and GSI (QP1) QPs take their own send and receive paths (`ud.rs`); XRC initiator and
//! target QPs run the RC paths with the translation of `xrc.rs`.
//!
//! A SEND with opmod 0xff is MLNX_OFED's vector-calc (erasure-coding) WQE: its payload is
//! computed from the segment that follows the ctrl (`vector_calc.rs`).
//!
//! UMR WQEs (fast registration, local invalidate) and NOPs complete in send-queue order
//! without the wire (`local_ops.rs`, `umr.rs`), as do the WQEs of mlx5_ib's `REG_UMR` QP; a
//! SEND with invalidate frees the R_Key at the responder (`invalidate.rs`).
//!
//! Not done yet: signature (BSF) mkeys; RoCE v1 framing (v1 GID entries send RoCE v2); rate
//! limiting of UD QPs and of responders (READ responses).

use cx4_hw::{
    qp::{qpc_state, rq_type},
    uar::{DBR_RCV, DBR_SND},
};

use crate::{
    bus::Bus,
    eth::{
        dma::{DmaError, RingWqe},
        mkeys::MkeyDma,
    },
    fw::Cast,
};

use super::cqe;
use super::engine::{now_ns, Change, QpEngine, ReqSide};
use super::headers::{AtomicEth, Bth, Ext, ExtHeaders, Ieth, ImmDt, Opcode, Reth, Service};
use super::looped::Looped;
use super::qp_view::{QpRights, QpRing, QpView};
use super::requester::{ReqAction, WorkRequest};
use super::segment::{OpKind, RequestOp};
use super::status::WcStatus;
use super::wire::peek_dst_gid;
use super::wqe::{Gather, SendWqe, WqeError};
use super::Roce;

/// Whether the opcode ends a message (so it carries the solicited bit and ImmDt / IETH).
fn ends_message(op: Opcode) -> bool {
    op.info()
        .headers
        .iter()
        .any(|k| matches!(k, Ext::ImmDt | Ext::Ieth))
        || op.name().ends_with("LAST")
        || op.name().ends_with("ONLY")
}

impl Roce<'_> {
    /// Whether 8-byte atomics run in host endianness (`atomic_req_8B_endianness_mode` 1,
    /// set by mlx5_core through SET_HCA_CAP): operands in the responder's memory and results
    /// in the requester's are little endian, as the x86 guests and rxe keep them.
    pub(crate) fn atomic_host_endian(&self) -> bool {
        self.fw.caps.atomic("atomic_req_8B_endianness_mode") == 1
    }

    pub(super) fn read_be32_mem(&self, bus: &Bus, addr: u64) -> Option<u32> {
        let mut b = [0u8; 4];
        bus.mem.read(addr, &mut b).ok()?;
        Some(u32::from_be_bytes(b))
    }

    pub(super) fn qp_view(&self, qpn: u32) -> Option<QpView> {
        let qp = self.fw.rdma.qps.get(&qpn)?;
        let srqn = (qp.ctx.rq_type() as u8 == rq_type::SRQ_RQ).then(|| qp.ctx.srqn_rmpn_xrqn());
        Some(QpView {
            qpn,
            state: qp.state(),
            pd: qp.pd(),
            cqn_snd: qp.cqn_snd(),
            cqn_rcv: qp.cqn_rcv(),
            user_index: qp.user_index(),
            dbr: qp.dbr(),
            buf: qp.buf.clone(),
            srqn,
            recv_pd: srqn
                .and_then(|n| self.fw.rdma.srqs.get(&n))
                .map_or(qp.pd(), |s| s.pd),
            st: qp.st(),
            qkey: qp.ctx.q_key(),
            mtu: qp.ctx.mtu() as u8,
            rights: QpRights {
                read: qp.ctx.rre() != 0,
                write: qp.ctx.rwe() != 0,
                atomic: qp.ctx.rae() != 0,
            },
            ulp: qp.ctx.ulp_stateless_offload_mode() == 1,
        })
    }

    pub(super) fn post(
        &mut self,
        bus: &mut Bus,
        cqn: u32,
        c: &cx4_hw::cq::cqe::Cqe64,
        solicited: bool,
    ) {
        if let Err(e) = self.fw.post_cqe(bus, cqn, &c.0, solicited) {
            log::warn!("RoCE CQE to CQ {cqn:#x} not written: {e}");
        }
    }

    /// Applies the QP transitions commands made since the last call: engine state created,
    /// dropped, or flushed.
    pub fn roce_sync(&mut self, bus: &mut Bus) {
        let srqs = &self.fw.rdma.srqs;
        self.roce.srqs.retain(|n, _| srqs.contains_key(n));
        self.dct_close_drained();
        self.page_fault_resumes(bus);
        if self.fw.rdma.qp_events.is_empty() {
            return;
        }
        let events = std::mem::take(&mut self.fw.rdma.qp_events);
        let log_max_msg = self.fw.caps.general("log_max_msg") as u32;
        for (qpn, to) in events {
            if self.umr_qp_event(bus, qpn, to) {
                continue;
            }
            let ib = self.fw.ib_mode().then_some(super::ib_ud::IbLink {
                port: &self.fw.ib,
                mac: self.fw.vport.mac,
                guid: self.fw.vport.guid,
            });
            let change = self.roce.apply(
                qpn,
                to,
                self.fw.rdma.qps.get(&qpn),
                &self.fw.rdma.gids,
                ib,
                log_max_msg,
            );
            match change {
                Change::Flush => self.with_qp(bus, qpn, |d, bus, q, v| d.flush(bus, q, v)),
                // WQEs posted before RTS (or held in SQD) start now.
                Change::Ready => self.with_qp(bus, qpn, |d, bus, q, v| d.execute_qp_sq(bus, q, v)),
                Change::None => {}
            }
        }
    }

    /// Runs `f` on QP `qpn`'s engine state and firmware view (taken out of the engine for
    /// the call); nothing if either is missing.
    pub(super) fn with_qp(
        &mut self,
        bus: &mut Bus,
        qpn: u32,
        f: impl FnOnce(&mut Self, &mut Bus, &mut QpEngine, &QpView),
    ) {
        let Some(v) = self.qp_view(qpn) else {
            return;
        };
        let Some(mut q) = self.roce.qps.remove(&qpn) else {
            return;
        };
        f(self, bus, &mut q, &v);
        self.report_q_counts(&mut q);
        // A timer this call started, or responses left to stream (due at once).
        if let Some(at) = q.deadline().or(q.responding().then_some(0)) {
            self.roce.armed = Some(self.roce.armed.map_or(at, |a| a.min(at)));
        }
        // The QP may have been reset meanwhile (it cannot from here), keep the state.
        self.roce.qps.insert(qpn, q);
        self.roce_drain_loopback(bus);
    }

    /// A send doorbell naming QP `qpn` (UAR page `page`); false if no such QP exists.
    pub fn qp_doorbell(&mut self, bus: &mut Bus, page: u32, qpn: u32) -> bool {
        self.roce_sync(bus);
        let Some(v) = self.qp_view(qpn) else {
            return false;
        };
        self.roce.stats.doorbells += 1;
        if v.st == cx4_hw::qp::qpc_st::REG_UMR {
            self.umr_qp_doorbell(bus, &v);
            return true;
        }
        if !self.roce.qps.contains_key(&qpn) {
            if v.state == qpc_state::RST {
                log::debug!("doorbell on QP {qpn:#x} in RST, ignored");
            } else {
                self.roce.stats.unsupported += 1;
                log::debug!("doorbell on QP {qpn:#x}: its service type is not run by the engine");
            }
            return true;
        }
        let uar = self.fw.rdma.qps.get(&qpn).map_or(page, |qp| qp.uar_page());
        if uar != page {
            log::debug!("QP {qpn:#x} rung through UAR {page}, created on UAR {uar}");
        }
        self.with_qp(bus, qpn, |d, bus, q, v| match v.state {
            qpc_state::RTS => d.execute_qp_sq(bus, q, v),
            qpc_state::ERR => d.flush(bus, q, v),
            qpc_state::SQD => log::debug!("doorbell on QP {qpn:#x} in SQD: WQEs wait"),
            s => log::debug!(
                "doorbell on QP {qpn:#x} in {}, ignored",
                qpc_state::qpc_state_name(s)
            ),
        });
        true
    }

    /// Executes the send WQEs from the consumer counter up to the doorbell record's.
    pub(super) fn execute_qp_sq(&mut self, bus: &mut Bus, q: &mut QpEngine, v: &QpView) {
        let Some(log_sq) = v.buf.log_sq_size else {
            return;
        };
        if self.sq_held(v.qpn) {
            // A page fault holds the send queue until PAGE_FAULT_RESUME (`odp.rs`).
            return;
        }
        let Some(pc) = self.read_be32_mem(bus, v.dbr + DBR_SND as u64) else {
            log::warn!("QP {:#x}: doorbell record {:#x} unreadable", v.qpn, v.dbr);
            return;
        };
        let pc = pc & 0xffff;
        let mut budget = 1u32 << log_sq;
        let now = now_ns();
        // A WQE that fails flushes the queue up to the doorbell record as it is then, which
        // the driver may have advanced since `pc` was read (it posts while the card works):
        // the consumer counter is then past `pc`, and the loop must stop rather than run
        // through the whole ring flushing stale blocks.
        let behind = |cc: u32| pc.wrapping_sub(cc) & 0xffff <= 1u32 << log_sq;
        while (q.sq_cc & 0xffff) != pc && behind(q.sq_cc) && budget > 0 {
            let index = q.sq_cc as u16;
            let ring = QpRing {
                buf: &v.buf,
                base: v.buf.rq_bytes(),
                mem: &bus.mem,
            };
            let r = RingWqe::new(&ring, u32::from(log_sq), 6, q.sq_cc);
            if q.service == Service::Ud && !q.error {
                let decoded = super::ud::UdWqe::decode(&r, index, v.ulp);
                let bbs = match &decoded {
                    Ok(w) => w.wqe.bbs,
                    Err(_) => SendWqe::peek(&r).map_or(1, |p| p.1),
                };
                let op = SendWqe::peek(&r).map_or(0, |p| p.0);
                q.sq_cc = q.sq_cc.wrapping_add(u32::from(bbs));
                budget = budget.saturating_sub(u32::from(bbs));
                self.roce.stats.wqes += 1;
                self.ud_post_send(bus, q, v, decoded, index, op);
                continue;
            }
            if q.error {
                let (op, bbs) = SendWqe::peek(&r).unwrap_or((0, 1));
                self.flush_send(bus, v, index, op);
                q.sq_cc = q.sq_cc.wrapping_add(u32::from(bbs));
                budget = budget.saturating_sub(u32::from(bbs));
                continue;
            }
            if let Ok((cx4_hw::wqe::opcode::UMR, bbs)) = SendWqe::peek(&r) {
                q.sq_cc = q.sq_cc.wrapping_add(u32::from(bbs));
                budget = budget.saturating_sub(u32::from(bbs));
                self.roce.stats.wqes += 1;
                let w = super::local_ops::copy_wqe(&r, bbs);
                self.post_umr(bus, q, v, &w[..], index);
                continue;
            }
            // MLNX_OFED's erasure-coding SEND (opmod 0xff): its payload is computed.
            if let Some(bb) = super::vector_calc::peek(&r) {
                let bbs = SendWqe::peek(&r).map_or(1, |p| p.1);
                q.sq_cc = q.sq_cc.wrapping_add(u32::from(bbs));
                budget = budget.saturating_sub(u32::from(bbs));
                self.roce.stats.wqes += 1;
                self.vector_calc(bus, q, v, index, bb, now);
                continue;
            }
            // A DCI's WQE for another DCT waits for those in flight (`dc.rs`).
            let connected = match q.service {
                Service::Dc => self.dci_connect(q, v, &r, index),
                _ => Ok(super::dc::Next::Go),
            };
            if let Ok(super::dc::Next::Wait) = connected {
                break;
            }
            let decoded = connected
                .and_then(|_| super::xrc::decode_send(q.service, &r, index))
                .and_then(|w| {
                    self.wqe_keys(bus, v.pd, &w)?;
                    Ok(w)
                });
            // A local buffer not present (on-demand paging): the WQE waits, unconsumed, for
            // the driver to fault the pages in (`odp.rs`).
            let faulted = match &decoded {
                Err(WqeError::Key(_)) => super::xrc::decode_send(q.service, &r, index)
                    .ok()
                    .filter(|w| self.wqe_faults(bus, v, w)),
                _ => None,
            };
            let bbs = match &decoded {
                Ok(w) => w.bbs,
                Err(_) => SendWqe::peek(&r).map_or(1, |p| p.1),
            };
            let op = match &decoded {
                Ok(_) => 0,
                Err(_) => SendWqe::peek(&r).map_or(0, |p| p.0),
            };
            if let Some(w) = faulted {
                if self.sq_page_fault(bus, q, index, w.op()) {
                    return;
                }
            }
            q.sq_cc = q.sq_cc.wrapping_add(u32::from(bbs));
            budget = budget.saturating_sub(u32::from(bbs));
            self.roce.stats.wqes += 1;
            match decoded {
                Err(e) => {
                    log::warn!(
                        "QP {:#x} WQE {index:#x}: {e}: error CQE, QP to error",
                        v.qpn
                    );
                    self.local_error(bus, q, v, index, op, e.status());
                }
                Ok(w) => self.post_send(bus, q, v, w, now),
            }
        }
    }

    /// Checks that the local keys of send WQE `w` (of a QP in `pd`) cover its buffers.
    pub(super) fn wqe_keys(
        &self,
        bus: &Bus,
        pd: u32,
        w: &SendWqe,
    ) -> Result<(), super::wqe::WqeError> {
        let dma = MkeyDma {
            fw: self.fw,
            mem: &bus.mem,
            pd,
        };
        w.check_keys(&|lkey, addr, len, write| {
            dma.fw
                .translate(dma.mem, lkey, dma.pd, addr, len, write)
                .map(|_| ())
                .map_err(|_| DmaError::BadLkey { lkey })
        })
    }

    /// Hands a decoded send WQE to the requester.
    pub(super) fn post_send(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        w: SendWqe,
        now: u64,
    ) {
        let Some(op) = w.op() else {
            // A NOP completes in send-queue order, behind the requests in flight.
            self.complete_local(bus, q, v, w);
            return;
        };
        let len = u32::try_from(w.len()).unwrap_or(u32::MAX);
        let atomic_bad =
            op.kind() == OpKind::Atomic && (len != 8 || matches!(w.gather, Gather::Inline(_)));
        if atomic_bad {
            log::warn!(
                "QP {:#x} WQE {:#x}: atomic without one 8-byte local buffer",
                v.qpn,
                w.index
            );
            self.local_error(bus, q, v, w.index, w.opcode, WcStatus::LocalLengthErr);
            return;
        }
        let wr = WorkRequest {
            wqe_index: w.index,
            op,
            len,
            fence: w.fence,
        };
        q.wqes.push_back(w);
        let acts = match &mut q.req {
            Some(ReqSide::Rc(r)) => r.post(wr, now),
            Some(ReqSide::Uc(r)) => r.post(wr),
            None => return,
        };
        self.req_actions(bus, q, v, acts, &[]);
    }

    /// The opcode of the send WQE at the consumer counter (0 if unreadable).
    pub(super) fn sq_wqe_opcode(&self, bus: &Bus, q: &QpEngine, v: &QpView) -> u8 {
        let Some(log_sq) = v.buf.log_sq_size else {
            return 0;
        };
        let ring = QpRing {
            buf: &v.buf,
            base: v.buf.rq_bytes(),
            mem: &bus.mem,
        };
        SendWqe::peek(&RingWqe::new(&ring, u32::from(log_sq), 6, q.sq_cc)).map_or(0, |p| p.0)
    }

    /// A WQE that failed locally: what is in flight is flushed, this one completes in error,
    /// the QP goes to error (later WQEs are flushed).
    pub(super) fn local_error(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        index: u16,
        op: u8,
        s: WcStatus,
    ) {
        self.roce.stats.errors += 1;
        while let Some(w) = q.wqes.pop_front() {
            self.flush_send(bus, v, w.index, w.opcode);
        }
        let e = cqe::err_cqe(v.cqe_qp(), false, s, index, op);
        self.post(bus, v.cqn_snd, &e, false);
        self.enter_error(bus, q, v);
    }

    fn flush_send(&mut self, bus: &mut Bus, v: &QpView, index: u16, op: u8) {
        self.roce.stats.flushed += 1;
        let e = cqe::err_cqe(v.cqe_qp(), false, WcStatus::WrFlushErr, index, op);
        self.post(bus, v.cqn_snd, &e, false);
    }

    /// Moves the QP to the error state (the firmware's QP too) and flushes.
    pub(super) fn enter_error(&mut self, bus: &mut Bus, q: &mut QpEngine, v: &QpView) {
        if let Some(qp) = self.fw.rdma.qps.get_mut(&v.qpn) {
            qp.set_error();
        }
        q.error = true;
        self.flush(bus, q, v);
    }

    /// Flushes a QP in error: its send WQEs in flight and posted, the receive WQE being
    /// filled and the posted receive WQEs, each with a `WR_FLUSH_ERR` CQE.
    fn flush(&mut self, bus: &mut Bus, q: &mut QpEngine, v: &QpView) {
        q.error = true;
        super::qcounters::retire(q);
        q.req = None;
        q.resp = None;
        while let Some(w) = q.wqes.pop_front() {
            self.flush_send(bus, v, w.index, w.opcode);
        }
        if let Some(log_sq) = v.buf.log_sq_size {
            if let Some(pc) = self.read_be32_mem(bus, v.dbr + DBR_SND as u64) {
                let mut budget = 1u32 << log_sq;
                while (q.sq_cc & 0xffff) != (pc & 0xffff) && budget > 0 {
                    let ring = QpRing {
                        buf: &v.buf,
                        base: v.buf.rq_bytes(),
                        mem: &bus.mem,
                    };
                    let r = RingWqe::new(&ring, u32::from(log_sq), 6, q.sq_cc);
                    let (op, bbs) = SendWqe::peek(&r).unwrap_or((0, 1));
                    self.flush_send(bus, v, q.sq_cc as u16, op);
                    q.sq_cc = q.sq_cc.wrapping_add(u32::from(bbs));
                    budget = budget.saturating_sub(u32::from(bbs));
                }
            }
        }
        let flush_recv = |d: &mut Self, bus: &mut Bus, v: &QpView, index: u16| {
            d.roce.stats.flushed += 1;
            let e = cqe::err_cqe(v.cqe_qp(), true, WcStatus::WrFlushErr, index, 0);
            d.post(bus, v.cqn_rcv, &e, false);
        };
        if let Some(o) = q.recv_open.take() {
            // An XRC target's belongs to the XRC SRQ of the SEND it was filling.
            let ov = self.xrc_open_view(q, v);
            q.xrc.msg_srqn = None;
            flush_recv(self, bus, &ov, o.index);
        }
        if v.buf.rq_bytes() > 0 {
            if let Some(pc) = self.read_be32_mem(bus, v.dbr + DBR_RCV as u64) {
                let mut budget = 1u32 << v.buf.log_rq_size;
                while (q.rq_cc & 0xffff) != (pc & 0xffff) && budget > 0 {
                    flush_recv(self, bus, v, q.rq_cc as u16);
                    q.rq_cc = q.rq_cc.wrapping_add(1);
                    budget -= 1;
                }
            }
        }
    }

    /// Carries out requester actions; `payload` is the response packet's (READ data).
    pub(super) fn req_actions(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        acts: Vec<ReqAction>,
        payload: &[u8],
    ) {
        let mut error = false;
        let mut acts = acts.into_iter().peekable();
        while let Some(a) = acts.next() {
            match a {
                ReqAction::Transmit(tx) if self.bursts(q, &tx) => {
                    // The packets of this WQE the requester sends together.
                    let mut txs = vec![tx];
                    while let Some(ReqAction::Transmit(n)) = acts.peek() {
                        if n.wqe_index != tx.wqe_index || n.op != tx.op {
                            break;
                        }
                        txs.push(*n);
                        acts.next();
                    }
                    self.transmit_burst(bus, q, v, &txs);
                }
                ReqAction::Transmit(tx) => self.transmit_request(bus, q, v, &tx),
                ReqAction::ReadData {
                    wqe_index,
                    offset,
                    len,
                } => {
                    let Some(w) = q.wqe(wqe_index) else { continue };
                    let data = payload.get(..len as usize).unwrap_or_default();
                    let dma = MkeyDma {
                        fw: self.fw,
                        mem: &bus.mem,
                        pd: v.pd,
                    };
                    if let Err(e) = w.scatter(&dma, u64::from(offset), data) {
                        log::warn!("QP {:#x} READ WQE {wqe_index:#x}: {e}", v.qpn);
                    }
                }
                ReqAction::AtomicResult { wqe_index, orig } => {
                    let Some(w) = q.wqe(wqe_index) else { continue };
                    let dma = MkeyDma {
                        fw: self.fw,
                        mem: &bus.mem,
                        pd: v.pd,
                    };
                    // The original value lands in host order in host-endianness mode (what
                    // mlx5_core asks for and verbs users expect), else big endian.
                    let b = if self.atomic_host_endian() {
                        orig.to_le_bytes()
                    } else {
                        orig.to_be_bytes()
                    };
                    if let Err(e) = w.scatter(&dma, 0, &b) {
                        log::warn!("QP {:#x} atomic WQE {wqe_index:#x}: {e}", v.qpn);
                    }
                }
                ReqAction::Complete(c) => {
                    let w = q.take_wqe(c.wqe_index);
                    let op = w.as_ref().map_or(0, |w| w.opcode);
                    if c.status.is_error() {
                        if c.status == WcStatus::WrFlushErr {
                            self.roce.stats.flushed += 1;
                        } else {
                            self.roce.stats.errors += 1;
                            log::warn!(
                                "QP {:#x} WQE {:#x}: completed with {:?}",
                                v.qpn,
                                c.wqe_index,
                                c.status
                            );
                        }
                        let e = cqe::err_cqe(v.cqe_qp(), false, c.status, c.wqe_index, op);
                        self.post(bus, v.cqn_snd, &e, false);
                        // A UC request failing locally (an operation UC does not carry, a
                        // message too long) ends the send queue too (the PRM's SQER; the model
                        // uses ERR).
                        if q.service == super::headers::Service::Uc
                            && c.status != WcStatus::WrFlushErr
                        {
                            error = true;
                        }
                    } else if w.as_ref().is_some_and(|w| w.signaled) {
                        let bytes = match c.op.kind() {
                            OpKind::Atomic => 8,
                            _ => c.bytes,
                        };
                        let e = cqe::req_cqe(v.cqe_qp(), c.wqe_index, op, bytes);
                        self.post(bus, v.cqn_snd, &e, false);
                    }
                    // UMRs and NOPs posted behind it complete now.
                    self.complete_local_front(bus, q, v);
                }
                ReqAction::EnterError(s) => {
                    log::warn!("QP {:#x}: requester error {s:?}, QP to error", v.qpn);
                    error = true;
                }
            }
        }
        if error {
            self.enter_error(bus, q, v);
        }
    }

    /// Builds and sends one request packet.
    pub(super) fn transmit_request(
        &mut self,
        bus: &mut Bus,
        q: &QpEngine,
        v: &QpView,
        tx: &super::requester::TxPacket,
    ) {
        let (Some(w), Some(path)) = (q.wqe(tx.wqe_index), q.path) else {
            return;
        };
        if self.roce.odp.gather_held(q.qpn) {
            // Stalled on a page fault: the resume transmits again from the faulting packet.
            return;
        }
        let len = if tx.opcode.info().payload {
            tx.len as usize
        } else {
            0
        };
        let dma = MkeyDma {
            fw: self.fw,
            mem: &bus.mem,
            pd: v.pd,
        };
        // The payload is gathered from guest memory straight into the frame.
        let gather = |out: &mut [u8]| match out.len() {
            0 => Ok(()),
            _ => w.gather(&dma, u64::from(tx.offset), out),
        };
        let headers = self.request_headers(q, w, &path, tx);
        let looped = self.roce_gid_is_local(&path.ip.dst_gid());
        let mut gathered = None;
        let built = headers.map(|(bth, ext)| {
            path.frame_with(bth, ext, len, looped, |out| gathered = Some(gather(out)))
        });
        // A payload not gathered (no frame laid out) is read all the same: a gather failure
        // is what is reported first.
        if let Err(e) = gathered.unwrap_or_else(|| gather(&mut vec![0u8; len])) {
            // A page zapped under the posted WQE (on-demand paging): a page fault, the
            // retransmission after the resume sends the packet (`odp.rs`).
            if self.wqe_faults(bus, v, w) && self.gather_page_fault(bus, q, w, tx.psn) {
                return;
            }
            // The buffer changed under a posted WQE (deregistered): nothing is sent; the
            // retry timer gives up eventually.
            log::warn!("QP {:#x} WQE {:#x}: gather failed: {e}", v.qpn, w.index);
            self.roce.stats.errors += 1;
            return;
        }
        match built {
            None => log::warn!("QP {:#x} WQE {:#x}: no XRC SRQ to send to", v.qpn, w.index),
            Some(Ok(f)) => self.roce_send_request(v.qpn, f),
            Some(Err(e)) => log::warn!("QP {:#x}: packet not built: {e}", v.qpn),
        }
    }

    /// The BTH (opcode, PSN, AckReq, SE) and extension headers of request packet `tx` of
    /// WQE `w`; `None` for an XRC request without an SRQ to send to.
    pub(super) fn request_headers(
        &self,
        q: &QpEngine,
        w: &SendWqe,
        path: &super::wire::Path,
        tx: &super::requester::TxPacket,
    ) -> Option<(Bth, ExtHeaders)> {
        let mut bth = Bth::new(tx.opcode, path.remote_qpn, tx.psn.value());
        bth.ack_req = tx.ack_req;
        bth.solicited = w.solicited && ends_message(tx.opcode);
        let (raddr, rkey) = w.remote.unwrap_or((0, 0));
        let mut ext = ExtHeaders::default();
        for k in tx.opcode.info().headers {
            match k {
                Ext::Reth => {
                    let read = tx.op == RequestOp::Read;
                    ext.reth = Some(Reth {
                        va: raddr.wrapping_add(u64::from(tx.offset)),
                        rkey,
                        dma_len: if read {
                            tx.len
                        } else {
                            u32::try_from(w.len()).unwrap_or(u32::MAX)
                        },
                    });
                }
                Ext::AtomicEth => {
                    let (swap_add, compare) = w.atomic.unwrap_or((0, 0));
                    ext.atomic = Some(AtomicEth {
                        va: raddr,
                        rkey,
                        swap_add,
                        compare,
                    });
                }
                Ext::ImmDt => ext.imm = Some(ImmDt { imm: w.imm }),
                Ext::Ieth => ext.ieth = Some(Ieth { rkey: w.imm }),
                _ => {}
            }
        }
        if q.service == Service::Dc {
            return super::dc::request_headers(q, bth, ext);
        }
        super::xrc::request_headers(q.service, bth, ext, w.xrc_srqn)
    }

    /// Puts a RoCE frame on the wire (or loops it back when it is for one of our GIDs).
    pub(super) fn roce_transmit(&mut self, frame: Vec<u8>) {
        if self.roce_is_local(&frame) {
            self.roce_loop_back(frame);
        } else {
            self.roce_transmit_remote(frame);
        }
    }

    /// Whether `frame` is addressed to one of the port's own GIDs (it never leaves the card).
    pub(super) fn roce_is_local(&self, frame: &[u8]) -> bool {
        if super::ib_wire::is_ib_frame(frame) {
            return super::ib_wire::peek_dlid(frame)
                .is_some_and(|l| super::ib_ud::own_lid(&self.fw.ib, l).is_some());
        }
        peek_dst_gid(frame).is_some_and(|g| self.roce_gid_is_local(&g))
    }

    /// Whether `gid` is one of the port's own GIDs.
    pub(super) fn roce_gid_is_local(&self, gid: &[u8; 16]) -> bool {
        self.fw.rdma.gids.values().any(|e| e.gid == *gid)
    }

    /// Queues a frame for one of our own GIDs to be received inside the card.
    pub(super) fn roce_loop_back(&mut self, frame: Vec<u8>) {
        self.roce.stats.tx_packets += 1;
        self.roce.stats.tx_bytes += frame.len() as u64;
        self.roce.loopback.push_back(Looped::Frame(frame, None));
    }

    /// Puts a frame for another host on the wire, through the PFC gate.
    pub(super) fn roce_transmit_remote(&mut self, frame: Vec<u8>) {
        let len = frame.len() as u64;
        let Some(frame) = self.roce_pfc_gate(frame) else {
            return;
        };
        if !self.fw.regs.oper_up() {
            self.path.tx_link_down += 1;
            return;
        }
        let mut dmac = [0u8; 6];
        dmac.copy_from_slice(&frame[..6]);
        if let Some(p) = self.port.wire() {
            if let Err(e) = p.send(&frame) {
                log::debug!("{}: send failed: {e}", p.name());
            }
        }
        self.fw.count_tx(Cast::of(&dmac), len);
        self.path.tx_frames += 1;
        self.path.tx_bytes += len;
        self.roce.stats.tx_packets += 1;
        self.roce.stats.tx_bytes += len;
    }

    /// Receives the frames looped back to the port's own GIDs.
    pub(super) fn roce_drain_loopback(&mut self, bus: &mut Bus) {
        // Not re-entered (a looped-back packet's answers join the queue this loop drains),
        // and bounded: what is left waits for the next event.
        if self.roce.draining {
            return;
        }
        self.roce.draining = true;
        for _ in 0..1 << 16 {
            match self.roce.loopback.pop_front() {
                Some(Looped::Frame(f, blocked)) => self.roce_receive_packet(bus, &f, blocked, true),
                Some(Looped::Burst(b)) => self.roce_receive_burst(bus, &b),
                None => break,
            }
        }
        self.roce.draining = false;
    }

    /// Runs the requester timers that are due.
    pub fn roce_tick(&mut self, bus: &mut Bus) {
        self.roce_tick_at(bus, now_ns());
    }

    /// Runs the requester timers due at `now` (engine clock, ns).
    pub fn roce_tick_at(&mut self, bus: &mut Bus, now: u64) {
        self.roce_sync(bus);
        // Frames the `roce-wire` fault delayed or held back, due by now.
        self.roce_wire_release(bus, now, false);
        // Request packets the rate limiters or a pause held back, and the limiters' timers.
        self.roce_gate_release(now);
        self.roce_limiters_tick(now);
        let due: Vec<u32> = self
            .roce
            .qps
            .values()
            .filter(|q| q.deadline().is_some_and(|d| d <= now) && !self.roce.timer_held(q.qpn))
            .map(|q| q.qpn)
            .collect();
        // QPs in error flush what the driver posted since (ib_drain_rq posts a receive and
        // waits for its flush CQE; receive queues have no doorbell).
        let errored: Vec<u32> = self
            .roce
            .qps
            .values()
            .filter(|q| q.error)
            .map(|q| q.qpn)
            .collect();
        for qpn in errored {
            self.with_qp(bus, qpn, |d, bus, q, v| d.flush(bus, q, v));
        }
        // Responses streaming out (a READ's, and those behind it): the next burst.
        let streaming: Vec<u32> = self
            .roce
            .qps
            .values()
            .filter(|q| q.responding())
            .map(|q| q.qpn)
            .collect();
        for qpn in streaming {
            self.with_qp(bus, qpn, |d, bus, q, v| {
                d.drain_responses(bus, q, v, d.roce.read_burst())
            });
        }
        self.dct_drain_responses(bus);
        for qpn in due {
            self.roce.stats.timer_runs += 1;
            self.with_qp(bus, qpn, |d, bus, q, v| {
                let acts = match &mut q.req {
                    Some(ReqSide::Rc(r)) => r.on_timer(now),
                    _ => return,
                };
                d.req_actions(bus, q, v, acts, &[]);
            });
        }
    }
}
