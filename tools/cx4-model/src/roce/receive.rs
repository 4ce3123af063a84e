//! The receive side of the RoCE engine on the device: a RoCE frame (v2, or v1) to one of the
//! port's GIDs is parsed (ICRC and all; failures are dropped and counted) and goes to the QP
//! its BTH names — RC responses (ACK, READ response, atomic ACK) to the requester, requests to
//! the responder — whose actions are carried out here: payload scattered into the receive WQE
//! (the QP's RQ, or the head of its SRQ's free list) through local keys, RDMA WRITE data
//! placed and READ data gathered through R_Keys (the QP grants the operation's remote right
//! in its context, the key exists, is in the QP's PD, has the remote right and covers the
//! range; else a remote access NAK), atomics executed on 8-byte
//! big-endian memory, ACKs / NAKs / responses sent, receive CQEs written.

use cx4_hw::{cq::cqe::opcode as cqe_op, qp::qpc_state, uar::DBR_RCV};

use crate::{
    bus::Bus,
    eth::{
        dma::{DmaError, RingWqe},
        mkeys::MkeyDma,
        rx,
    },
    fw::{Cast, MKEY_QPN_NONE, RESERVED_LKEY},
};

use super::cqe::{self, RespInfo};
use super::engine::{now_ns, OpenRecv, QpEngine, ReqSide, RespSide};
use super::headers::{AtomicAckEth, Bth, ExtHeaders, Opcode, TransportHeaders};
use super::looped::Placed;
use super::odp::RqHold;
use super::outgoing::Outgoing;
use super::packet;
use super::psn::Psn;
use super::qp_view::{QpRing, QpView, RxMeta};
use super::responder::{is_rc_request, RespAction, RespFault};
use super::vector_calc_job::CalcJob;
use super::wire::peek_dst_gid;
use super::wqe::{sg_io, Sge};
use super::Roce;

/// Which remote right an access needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Remote {
    Read,
    Write,
    Atomic,
}

impl Roce<'_> {
    /// A frame from the wire: if it is RoCE (v2: UDP 4791; v1: EtherType 0x8915) to one of the
    /// port's GIDs (the IP destination or the GRH's DGID), the engine takes it (returns true)
    /// — delivered, or dropped and counted; the Ethernet path sees every other frame.
    pub fn roce_receive(&mut self, bus: &mut Bus, frame: &[u8]) -> bool {
        if self.fw.rdma.gids.is_empty() {
            return false;
        }
        let Some(g) = peek_dst_gid(frame) else {
            return false;
        };
        // Unicast to one of the port's addresses, or to a multicast group a QP is attached to.
        if !self.fw.rdma.gids.values().any(|e| e.gid == g) && !self.fw.rdma.mcgs.contains_key(&g) {
            return false;
        }
        if bus.faults.roce_wire.is_none() && self.roce.wire.is_idle() {
            self.roce_receive_wire(bus, frame);
            return true;
        }
        // The `roce-wire` fault (faults.rs): frames held or delayed before go first.
        let now = now_ns();
        let mut frames = self.roce.wire.due(now);
        match bus.faults.roce_wire {
            Some(w) => {
                let got = self
                    .roce
                    .wire
                    .ingress(&w, frame.to_vec(), now, &mut self.roce.stats);
                frames.extend(got);
            }
            None => {
                frames.extend(self.roce.wire.take_all());
                frames.push(frame.to_vec());
            }
        }
        for f in frames {
            self.roce_receive_wire(bus, &f);
        }
        true
    }

    /// A RoCE frame off the wire for one of the port's addresses: counted, then received.
    fn roce_receive_wire(&mut self, bus: &mut Bus, frame: &[u8]) {
        let mut dmac = [0u8; 6];
        dmac.copy_from_slice(&frame[..6]);
        self.fw.count_rx(Cast::of(&dmac), frame.len() as u64);
        self.roce_sync(bus);
        self.roce_receive_packet(bus, frame, None, false);
        self.roce_drain_loopback(bus);
    }

    /// Receives the frames the `roce-wire` fault held or delayed that are due at `now` (all
    /// of them with `all`: the fault ended). A port that went down meanwhile loses them.
    pub(super) fn roce_wire_release(&mut self, bus: &mut Bus, now: u64, all: bool) {
        let frames = if all {
            self.roce.wire.take_all()
        } else {
            self.roce.wire.due(now)
        };
        for f in frames {
            if self.fw.regs.oper_up() {
                self.roce_receive_wire(bus, &f);
            } else {
                self.path.rx_link_down += 1;
            }
        }
    }

    /// Ends the `roce-wire` fault's hold: what waits is received now.
    pub fn roce_wire_flush(&mut self, bus: &mut Bus) {
        self.roce_wire_release(bus, 0, true);
    }

    /// A RoCE frame for the port; `blocked` is a QP a looped-back multicast copy must not
    /// reach (its sender); a `looped` frame never left the card (its ICRC is not checked,
    /// [`packet::build_with`]).
    pub(super) fn roce_receive_packet(
        &mut self,
        bus: &mut Bus,
        frame: &[u8],
        blocked: Option<u32>,
        looped: bool,
    ) {
        if super::ib_wire::is_ib_frame(frame) {
            self.ib_receive_packet(bus, frame, looped, blocked);
            return;
        }
        let parsed = if looped {
            packet::parse_looped(frame)
        } else {
            packet::parse(frame)
        };
        let p = match parsed {
            Ok(p) => p,
            Err(e) => {
                log::debug!("RoCE frame of {} bytes dropped: {e}", frame.len());
                self.roce.stats.rx_malformed += 1;
                return;
            }
        };
        self.roce.stats.rx_packets += 1;
        self.roce.stats.rx_bytes += frame.len() as u64;
        // CNPs end here; a CE-marked request is answered with one, then processed.
        if self.roce_congestion_rx(frame, &p, now_ns()) {
            return;
        }
        let hdr = p.transport();
        let meta = RxMeta {
            l3: cqe::l3_header_type(&p.ip),
            vlan: p.eth.vlan_tci,
            ib: None,
        };
        if hdr.bth.opcode.info().service == super::headers::Service::Ud {
            self.ud_receive_packet(bus, frame, &p, meta, blocked);
            return;
        }
        let qpn = hdr.bth.dest_qp;
        let payload = p.payload;
        if self.fw.rdma.dcts.contains_key(&qpn) {
            if hdr.bth.opcode.info().service == super::headers::Service::Dc {
                self.dct_packet(bus, qpn, &p, &hdr, meta);
            } else {
                self.roce.stats.rx_no_qp += 1;
            }
            return;
        }
        if !self.fw.rdma.qps.contains_key(&qpn) || !self.roce.qps.contains_key(&qpn) {
            self.roce.stats.rx_no_qp += 1;
            return;
        }
        self.with_qp(bus, qpn, |d, bus, q, v| {
            d.qp_packet(bus, q, v, &hdr, payload, meta)
        });
    }

    /// A packet for QP `q`.
    pub(super) fn qp_packet(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        hdr: &TransportHeaders,
        payload: &[u8],
        meta: RxMeta,
    ) {
        if q.service == super::headers::Service::Xrc {
            self.xrc_packet(bus, q, v, hdr, payload, meta);
            return;
        }
        if q.service == super::headers::Service::Dc {
            if hdr.bth.opcode.info().service == q.service {
                self.dci_packet(bus, q, v, hdr, payload, meta);
            } else {
                self.roce.stats.rx_no_qp += 1;
            }
            return;
        }
        if hdr.bth.opcode.info().service != q.service {
            self.roce.stats.rx_no_qp += 1;
            return;
        }
        self.transport_packet(bus, q, v, hdr, payload, meta);
    }

    /// An RC or UC packet (XRC's as RC, `xrc.rs`) for QP `q`: responses to the requester,
    /// requests to the responder.
    pub(super) fn transport_packet(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        hdr: &TransportHeaders,
        payload: &[u8],
        meta: RxMeta,
    ) {
        let op = hdr.bth.opcode;
        let svc = op.info().service;
        let rc_request = is_rc_request(op);
        let is_response = svc == super::headers::Service::Rc && !rc_request;
        if is_response {
            if !matches!(v.state, qpc_state::RTS | qpc_state::SQD) {
                self.roce.stats.rx_no_qp += 1;
                return;
            }
            if self.response_faults(bus, q, v, hdr) {
                return;
            }
            let now = now_ns();
            let acts = match &mut q.req {
                Some(ReqSide::Rc(r)) => r.on_response(hdr, payload.len() as u32, now),
                _ => {
                    self.roce.stats.rx_dropped += 1;
                    return;
                }
            };
            self.req_actions(bus, q, v, acts, payload);
            return;
        }
        if !matches!(v.state, qpc_state::RTR | qpc_state::RTS | qpc_state::SQD) {
            self.roce.stats.rx_no_qp += 1;
            return;
        }
        let available = self.recv_available(bus, q, v);
        // On-demand paging (`odp.rs`): the state a packet that page-faults must leave as it
        // found it, kept only while page faults can be taken.
        let odp = matches!(q.resp, Some(RespSide::Rc(_))) && self.odp_on();
        let psn = Psn::new(hdr.bth.psn);
        if odp {
            if let Some(acts) = self.held_responder(q, v, psn) {
                self.resp_actions(bus, q, v, acts, hdr, payload.into(), meta);
                return;
            }
        }
        let before = odp.then(|| (q.resp.clone(), q.recv_open.clone(), q.rq_cc));
        let acts = match &mut q.resp {
            Some(RespSide::Rc(r)) => r.on_packet(hdr, payload.len() as u32, available),
            Some(RespSide::Uc(r)) => r.on_packet(hdr, payload.len() as u32, available),
            None => {
                self.roce.stats.rx_dropped += 1;
                return;
            }
        };
        if let Some((resp, open, rq_cc)) = before {
            let fault = {
                let open = q.recv_open.as_ref().map(|o| (o.index, &o.sges[..]));
                let next = || {
                    let o = self.rq_wqe(bus, v, q.rq_cc).ok()?;
                    Some((o.index, o.sges))
                };
                self.resp_page_fault(bus, v, &acts, open, next, payload.len() as u32)
            };
            if let Some(f) = fault {
                (q.resp, q.recv_open, q.rq_cc) = (resp, open, rq_cc);
                self.raise_resp_fault(bus, v.qpn, f);
                let acts = self.rnr_while_held(q, psn);
                self.resp_actions(bus, q, v, acts, hdr, payload.into(), meta);
                return;
            }
        }
        self.resp_actions(bus, q, v, acts, hdr, payload.into(), meta);
    }

    /// A request for a responder a page fault holds (`odp.rs`): a new request (at the
    /// expected PSN) is answered with an RNR NAK while the fault is out, and fails as the
    /// access would have if the driver could not resolve it; `None` for a request the
    /// responder handles as usual (duplicates, nothing held).
    fn held_responder(
        &mut self,
        q: &mut QpEngine,
        v: &QpView,
        psn: Psn,
    ) -> Option<Vec<RespAction>> {
        let hold = self.rq_hold(v.qpn)?;
        let expected = match &q.resp {
            Some(RespSide::Rc(r)) => r.expected_psn(),
            _ => return None,
        };
        if psn != expected {
            return None;
        }
        Some(match hold {
            RqHold::Waiting => self.rnr_while_held(q, psn),
            RqHold::Failed(f) => {
                self.rq_release(v.qpn);
                self.resp_fault(q, psn, f)
            }
        })
    }

    /// Whether a receive WQE is posted and not taken (in the QP's RQ or its SRQ).
    pub(super) fn recv_available(&self, bus: &Bus, q: &QpEngine, v: &QpView) -> bool {
        if let Some(srqn) = v.srqn {
            let Some(srq) = self.fw.rdma.srqs.get(&srqn).filter(|s| !s.error) else {
                return false;
            };
            let taken = self.roce.srqs.get(&srqn).map_or(0, |c| c.taken);
            return self
                .read_be32_mem(bus, srq.dbr + DBR_RCV as u64)
                .is_some_and(|pc| (pc & 0xffff) != (taken & 0xffff));
        }
        if v.buf.rq_bytes() == 0 {
            return false;
        }
        self.read_be32_mem(bus, v.dbr + DBR_RCV as u64)
            .is_some_and(|pc| (pc & 0xffff) != (q.rq_cc & 0xffff))
    }

    /// Takes the next receive WQE (of the QP's RQ or its SRQ).
    pub(super) fn take_recv(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
    ) -> Result<OpenRecv, DmaError> {
        if let Some(srqn) = v.srqn {
            return self.take_srq_wqe(bus, srqn);
        }
        let counter = q.rq_cc;
        q.rq_cc = q.rq_cc.wrapping_add(1);
        self.rq_wqe(bus, v, counter)
    }

    /// The receive WQE of the QP's RQ with counter `counter`, not taken.
    pub(super) fn rq_wqe(&self, bus: &Bus, v: &QpView, counter: u32) -> Result<OpenRecv, DmaError> {
        let ring = QpRing {
            buf: &v.buf,
            base: 0,
            mem: &bus.mem,
        };
        let r = RingWqe::new(
            &ring,
            u32::from(v.buf.log_rq_size),
            u32::from(v.buf.log_rq_stride),
            counter,
        );
        let segs = rx::rq_wqe_segments(&r, 1usize << v.buf.log_rq_stride)?;
        Ok(OpenRecv {
            index: counter as u16,
            sges: segs.into_iter().map(Sge::from).collect(),
        })
    }

    /// Takes the WQE at the head of SRQ `srqn`'s free list: its index is the CQE's
    /// `wqe_counter`, its next segment names the new head, its data segments follow.
    fn take_srq_wqe(&mut self, bus: &mut Bus, srqn: u32) -> Result<OpenRecv, DmaError> {
        let fault = DmaError::Fault { addr: 0, len: 0 };
        let srq = self.fw.rdma.srqs.get(&srqn).ok_or(fault)?;
        let cur = self.roce.srqs.entry(srqn).or_default();
        let (index, log_size, log_stride) = (cur.head, srq.buf.log_rq_size, srq.buf.log_rq_stride);
        let ring = QpRing {
            buf: &srq.buf,
            base: 0,
            mem: &bus.mem,
        };
        let r = RingWqe::new(
            &ring,
            u32::from(log_size),
            u32::from(log_stride),
            index.into(),
        );
        let stride = 1usize << log_stride;
        let mut w = vec![0u8; stride.min(rx::MAX_RQ_WQE)];
        crate::eth::dma::WqeReader::read(&r, 0, &mut w)?;
        let next = u16::from_be_bytes([w[2], w[3]]) & ((1u16 << log_size.min(15)) - 1);
        let segs = rx::rq_wqe_segments(w.get(16..).unwrap_or_default(), stride.saturating_sub(16))?;
        cur.head = next;
        cur.taken = cur.taken.wrapping_add(1);
        let taken = cur.taken;
        self.srq_limit_check(bus, srqn, taken);
        Ok(OpenRecv {
            index,
            sges: segs.into_iter().map(Sge::from).collect(),
        })
    }

    /// Checks the QP's remote rights for the access, then an R_Key for `len` bytes at `va` in
    /// the QP's PD; the guest pieces.
    fn remote_pieces(
        &self,
        bus: &Bus,
        v: &QpView,
        rkey: u32,
        va: u64,
        len: u32,
        need: Remote,
    ) -> Result<Vec<(u64, u32)>, ()> {
        let qp_allows = match need {
            Remote::Read => v.rights.read,
            Remote::Write => v.rights.write,
            Remote::Atomic => v.rights.atomic,
        };
        if !qp_allows {
            log::debug!("QP {:#x}: {need:?} without the QP's remote right", v.qpn);
            return Err(());
        }
        let pd = v.pd;
        if len == 0 {
            return Ok(Vec::new());
        }
        if rkey == RESERVED_LKEY {
            return Err(());
        }
        let m = self.fw.mkey(rkey).ok_or(())?;
        let allowed = match need {
            Remote::Read => m.access.remote_read,
            Remote::Write => m.access.remote_write,
            Remote::Atomic => m.access.atomic,
        };
        // An mkey bound to a QP (a type 2 memory window) serves that QP only.
        if m.pd != pd || !allowed || (m.qpn != MKEY_QPN_NONE && m.qpn != v.qpn) {
            return Err(());
        }
        self.fw
            .translate_remote(&bus.mem, m, va, len, need != Remote::Read)
            .map_err(|_| ())
    }

    pub(super) fn resp_fault(
        &mut self,
        q: &mut QpEngine,
        psn: Psn,
        f: RespFault,
    ) -> Vec<RespAction> {
        match &mut q.resp {
            Some(RespSide::Rc(r)) => r.fault(psn, f),
            Some(RespSide::Uc(r)) => r.fault(f),
            None => Vec::new(),
        }
    }

    /// Carries out responder actions for the packet `hdr` / `payload`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn resp_actions(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        acts: Vec<RespAction>,
        hdr: &TransportHeaders,
        payload: Placed<'_>,
        meta: RxMeta,
    ) {
        let mut queue: std::collections::VecDeque<RespAction> = acts.into();
        let mut error = false;
        let mut recv_failed = false;
        while let Some(a) = queue.pop_front() {
            match a {
                RespAction::RecvData {
                    psn,
                    offset,
                    len,
                    new_wqe,
                } => {
                    if new_wqe {
                        match self.take_recv(bus, q, v) {
                            Ok(o) => q.recv_open = Some(o),
                            Err(e) => {
                                log::warn!("QP {:#x}: receive WQE unreadable: {e}", v.qpn);
                                if v.srqn.is_none() {
                                    // Consumed: the flush that follows completes it.
                                    q.recv_open = Some(OpenRecv {
                                        index: q.rq_cc.wrapping_sub(1) as u16,
                                        sges: Vec::new(),
                                    });
                                }
                                queue = self.resp_fault(q, psn, RespFault::Operational).into();
                                continue;
                            }
                        }
                    }
                    let Some(o) = &q.recv_open else {
                        queue = self.resp_fault(q, psn, RespFault::Operational).into();
                        continue;
                    };
                    let cap: u64 = o.sges.iter().map(|s| u64::from(s.len)).sum();
                    if u64::from(offset) + u64::from(len) > cap {
                        log::debug!("QP {:#x}: SEND longer than the receive WQE", v.qpn);
                        queue = self.resp_fault(q, psn, RespFault::RecvLength).into();
                        continue;
                    }
                    let dma = MkeyDma {
                        fw: self.fw,
                        mem: &bus.mem,
                        pd: v.recv_pd,
                    };
                    let r = match payload {
                        Placed::Calc(job, at) => place_calc(&dma, &o.sges, offset, len, job, at),
                        Placed::Bytes(p) => {
                            let data = p.get(..len as usize).unwrap_or_default();
                            sg_io(&o.sges, u64::from(offset), data.len(), |s, at, range| {
                                crate::eth::dma::Dma::write(&dma, s.lkey, at, &data[range])
                            })
                        }
                    };
                    if let Err(e) = r {
                        log::debug!("QP {:#x}: receive scatter: {e}", v.qpn);
                        queue = self.resp_fault(q, psn, RespFault::RecvProtection).into();
                        continue;
                    }
                }
                RespAction::WriteData { psn, rkey, va, len } => {
                    let data = payload
                        .bytes(&bus.mem)
                        .get(..len as usize)
                        .unwrap_or_default();
                    match self.remote_pieces(bus, v, rkey, va, len, Remote::Write) {
                        Ok(pieces) => {
                            let mut at = 0usize;
                            for (pa, n) in pieces {
                                let n = n as usize;
                                if let Some(chunk) = data.get(at..at + n) {
                                    let _ = bus.mem.write(pa, chunk);
                                }
                                at += n;
                            }
                        }
                        Err(()) => {
                            log::debug!("QP {:#x}: WRITE to R_Key {rkey:#x} refused", v.qpn);
                            queue = self.resp_fault(q, psn, RespFault::RemoteAccess).into();
                            continue;
                        }
                    }
                }
                RespAction::RecvComplete(rc) => {
                    if let Some(rkey) = rc.invalidate {
                        if let Err(why) = self.remote_invalidate(v, rkey) {
                            log::debug!("QP {:#x}: SEND with invalidate: {why}", v.qpn);
                            queue = self.resp_fault(q, rc.psn, RespFault::Invalidate).into();
                            continue;
                        }
                    }
                    let (opcode, immediate) = match (rc.rdma_write, rc.imm, rc.invalidate) {
                        (true, imm, _) => (cqe_op::RESP_WR_IMM, imm.unwrap_or(0)),
                        (false, Some(imm), _) => (cqe_op::RESP_SEND_IMM, imm),
                        (false, None, Some(rkey)) => (cqe_op::RESP_SEND_INV, rkey),
                        (false, None, None) => (cqe_op::RESP_SEND, 0),
                    };
                    let index = if rc.rdma_write {
                        match self.take_recv(bus, q, v) {
                            Ok(o) => o.index,
                            Err(_) => q.rq_cc.wrapping_sub(1) as u16,
                        }
                    } else {
                        match q.recv_open.take() {
                            Some(o) => o.index,
                            None => continue,
                        }
                    };
                    let c = cqe::resp_cqe(
                        v.cqe_qp(),
                        &RespInfo {
                            wqe_counter: index,
                            byte_cnt: rc.bytes,
                            opcode,
                            immediate,
                            remote_qpn: q.path.map_or(0, |p| p.remote_qpn),
                            l3: meta.l3,
                            vlan: meta.vlan,
                            ib: meta.ib,
                            csum_ok: false,
                        },
                    );
                    self.post(bus, v.cqn_rcv, &c, rc.solicited);
                }
                RespAction::ReadResponse(rr) => {
                    match self.remote_pieces(bus, v, rr.rkey, rr.va, rr.len, Remote::Read) {
                        Ok(pieces) => {
                            // Streamed, a burst at a time (`outgoing.rs`).
                            q.responses.push_back(Outgoing::read(rr, pieces));
                            self.drain_responses(bus, q, v, self.roce.read_burst());
                        }
                        Err(()) => {
                            log::debug!("QP {:#x}: READ of R_Key {:#x} refused", v.qpn, rr.rkey);
                            queue = self
                                .resp_fault(q, rr.first_psn, RespFault::RemoteAccess)
                                .into();
                            continue;
                        }
                    }
                }
                RespAction::ExecuteAtomic(a) => {
                    match self.remote_pieces(bus, v, a.rkey, a.va, 8, Remote::Atomic) {
                        Ok(pieces) if pieces.len() == 1 => {
                            let pa = pieces[0].0;
                            let host = self.atomic_host_endian();
                            let mut b = [0u8; 8];
                            if bus.mem.read(pa, &mut b).is_err() {
                                queue = self.resp_fault(q, a.psn, RespFault::Operational).into();
                                continue;
                            }
                            // The responder's memory holds the operand as the host does (x86
                            // guests: little endian) in host-endianness mode, else big endian.
                            let orig = if host {
                                u64::from_le_bytes(b)
                            } else {
                                u64::from_be_bytes(b)
                            };
                            let new = if a.compare_swap {
                                if orig == a.compare {
                                    a.swap_add
                                } else {
                                    orig
                                }
                            } else {
                                orig.wrapping_add(a.swap_add)
                            };
                            let nb = if host {
                                new.to_le_bytes()
                            } else {
                                new.to_be_bytes()
                            };
                            if bus.mem.write(pa, &nb).is_err() {
                                queue = self.resp_fault(q, a.psn, RespFault::Operational).into();
                                continue;
                            }
                            let more = match &mut q.resp {
                                Some(RespSide::Rc(r)) => r.atomic_result(a.psn, orig),
                                _ => Vec::new(),
                            };
                            for m in more.into_iter().rev() {
                                queue.push_front(m);
                            }
                        }
                        _ => {
                            queue = self.resp_fault(q, a.psn, RespFault::RemoteAccess).into();
                            continue;
                        }
                    }
                }
                RespAction::AtomicAck {
                    psn, aeth, orig, ..
                } => {
                    let ext = ExtHeaders {
                        aeth: Some(aeth),
                        atomic_ack: Some(AtomicAckEth { orig }),
                        ..Default::default()
                    };
                    self.send_response(q, Opcode::RcAtomicAcknowledge, psn, ext, &[]);
                }
                RespAction::SendAck { psn, aeth } => {
                    let ext = ExtHeaders {
                        aeth: Some(aeth),
                        ..Default::default()
                    };
                    self.send_response(q, Opcode::RcAcknowledge, psn, ext, &[]);
                }
                RespAction::RecvError(s) => {
                    recv_failed = true;
                    let index = match q.recv_open.take() {
                        Some(o) => o.index,
                        None => match self.take_recv(bus, q, v) {
                            Ok(o) => o.index,
                            Err(_) => q.rq_cc.wrapping_sub(1) as u16,
                        },
                    };
                    self.roce.stats.errors += 1;
                    let e = cqe::err_cqe(v.cqe_qp(), true, s, index, 0);
                    self.post(bus, v.cqn_rcv, &e, false);
                }
                RespAction::EnterError(code) => {
                    log::warn!(
                        "QP {:#x}: responder error ({code:?}) on PSN {:#x}, QP to error",
                        v.qpn,
                        hdr.bth.psn
                    );
                    error = true;
                    if !recv_failed {
                        self.responder_error_event(bus, v.qpn, code);
                    }
                }
                RespAction::Dropped(why) => {
                    self.roce.stats.rx_dropped += 1;
                    log::trace!("QP {:#x}: packet dropped: {why:?}", v.qpn);
                }
            }
        }
        if error {
            self.enter_error(bus, q, v);
        }
    }

    /// Sends a response packet (ACK, READ response, atomic ACK) to the QP's peer.
    /// Sends up to `budget` of QP `q`'s waiting response packets, in order; drops them if the
    /// QP no longer responds.
    pub(super) fn drain_responses(&mut self, bus: &Bus, q: &mut QpEngine, v: &QpView, budget: u32) {
        if q.error || !matches!(v.state, qpc_state::RTR | qpc_state::RTS | qpc_state::SQD) {
            q.responses.clear();
            return;
        }
        let mut left = budget;
        while left > 0 {
            let Some(front) = q.responses.front_mut() else {
                return;
            };
            match front {
                Outgoing::Packet {
                    op,
                    psn,
                    ext,
                    payload,
                } => {
                    let (op, psn, ext, payload) = (*op, *psn, *ext, std::mem::take(payload));
                    q.responses.pop_front();
                    self.transmit_response(q, op, psn, ext, &payload);
                    left -= 1;
                }
                Outgoing::Read {
                    rr,
                    next,
                    pieces,
                    at,
                } => {
                    let (rr, n) = (*rr, rr.count());
                    let mut sent = Vec::new();
                    while *next < n && left > 0 {
                        let pkt = rr.packet(*next);
                        let mut data = vec![0u8; pkt.len as usize];
                        super::outgoing::read_pieces(
                            bus,
                            pieces,
                            at,
                            u64::from(pkt.offset),
                            &mut data,
                        );
                        let ext = ExtHeaders {
                            aeth: pkt.aeth,
                            ..Default::default()
                        };
                        sent.push((pkt.opcode, pkt.psn, ext, data));
                        *next += 1;
                        left -= 1;
                    }
                    if *next >= n {
                        q.responses.pop_front();
                    }
                    for (op, psn, ext, data) in sent {
                        self.transmit_response(q, op, psn, ext, &data);
                    }
                }
            }
        }
    }

    /// Sends a response packet, or queues it behind the responses still waiting to leave
    /// (a READ's that streams, `outgoing.rs`).
    fn send_response(
        &mut self,
        q: &mut QpEngine,
        op: Opcode,
        psn: Psn,
        ext: ExtHeaders,
        payload: &[u8],
    ) {
        if !q.responses.is_empty() {
            q.responses.push_back(Outgoing::Packet {
                op,
                psn,
                ext,
                payload: payload.to_vec(),
            });
            return;
        }
        self.transmit_response(q, op, psn, ext, payload);
    }

    /// Transmits a response packet now.
    pub(super) fn transmit_response(
        &mut self,
        q: &QpEngine,
        op: Opcode,
        psn: Psn,
        ext: ExtHeaders,
        payload: &[u8],
    ) {
        let Some(path) = q.path else {
            return;
        };
        let op = super::xrc::response_opcode(q.service, op);
        let bth = Bth::new(op, path.remote_qpn, psn.value());
        match path.frame(bth, ext, payload) {
            Ok(f) => self.roce_transmit(f),
            Err(e) => log::warn!("QP {:#x}: response not built: {e}", q.qpn),
        }
    }
}

/// Places `len` bytes of a vector calculation's result (stream bytes from `at` on) at
/// `offset` of a receive WQE's scatter list: every entry translated for writing first, then
/// the result computed into the places ([`CalcJob::place`]).
fn place_calc(
    dma: &MkeyDma,
    sges: &[Sge],
    offset: u32,
    len: u32,
    job: &CalcJob,
    at: usize,
) -> Result<(), DmaError> {
    let mut copies = Vec::new();
    sg_io(sges, u64::from(offset), len as usize, |s, addr, range| {
        let start = range.start;
        dma.write_copies(s.lkey, addr, range.len())
            .map(|c| copies.extend(c.into_iter().map(|c| (start, c))))
    })?;
    if job.place(dma.mem, at, len as usize, &copies) {
        Ok(())
    } else {
        Err(DmaError::Fault {
            addr: u64::from(offset),
            len: u64::from(len),
        })
    }
}
