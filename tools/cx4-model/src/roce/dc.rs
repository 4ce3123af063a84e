//! The DC (dynamically connected) transport on the RC engine: DC initiator QPs (DCIs,
//! `qpc_st::DCI`) send reliable requests to whichever DCT each send WQE names; a DCT
//! (`fw::Dct`) answers any DCI that knows its number and access key, receiving into its SRQ.
//!
//! The host interface is the PRM's (what mlx5_ib and libmlx5 use): a DCI send WQE is the ctrl
//! segment, a 48-byte address vector (`mlx5_wqe_datagram_seg`: the AH's `mlx5_av` with
//! `dqp_dct` = DCT number | `MLX5_EXTENDED_UD_AV` and the 64-bit DC access key in place of
//! the Q_Key; libmlx5 `mlx5_send_wr_set_dc_addr`), then RC's segments. Completions are RC's:
//! the DCI's send CQ; the DCT's CQ with the DCT's number and user index and the SRQ's WQE
//! counter (libmlx5 finds the SRQ through the DCT's user index, `get_resp_ctx_v1`).
//!
//! DC's wire format is not public. **The packets here are the model's own encoding and
//! interoperate only between modelled cards** (Documentation/dc.md): RoCE v2 (or v1) packets
//! whose BTH opcode is the RC operation's plus 0xc0 (IBTA's manufacturer-specific range),
//! requests carrying a 16-byte DCETH after the BTH
//! ([`super::headers::Dceth`]: access key, the DCI's QP number, the connection's first PSN);
//! the BTH destination is the DCT (requests) or the DCI (responses).
//!
//! Connections, as the model keeps them:
//! - A DCI is connected to one DCT (number, access key, address vector) at a time. A WQE for
//!   another target waits until every WQE in flight has completed; the DCI then reconnects:
//!   its path is the new address vector's and the connection starts at its next PSN
//!   ([`DciConn`]). RC's ACKs, timeouts, retries and RNR NAKs run unchanged within a
//!   connection.
//! - A DCT keeps one RC responder per (source GID, DCI) ([`DctConn`]): created by the first
//!   packet of a connection with the connection's PSN as the expected PSN, replaced when a
//!   packet names a later connection, and left alone by a packet of an earlier one (dropped,
//!   a stale retransmission). Its responses go back along the packet's source addresses
//!   from the DCT's own GID entry (`my_addr_index`) to the DCI.
//! - A request whose access key is not the DCT's is dropped silently — the DCI's retries run
//!   out (`RETRY_EXC_ERR`) — and counted in the DCT's `dc_access_key_violation_count`, with
//!   one `DCT_KEY_VIOLATION` event if ARM_DCT_FOR_KEY_VIOLATION armed it. A DCT that is
//!   drained or gone takes nothing; DRAIN_DCT closes its connections.
//! - A responder error (a remote access NAK) closes that connection only; the DCT stays
//!   active and raises no QP event (it is not a QP).
//! - On an InfiniBand port DCIs do not connect (LID-routed DC is not modelled).

use std::collections::BTreeMap;

use cx4_hw::{qp::qpc_state, wqe, wqe::rdma::Av};
use zerocopy::FromBytes;

use super::engine::{QpEngine, RespSide};
use super::headers::{Bth, Dceth, ExtHeaders, Opcode, Service, TransportHeaders, MASK_24};
use super::packet::Packet;
use super::psn::Psn;
use super::qp_view::{QpRights, QpView, RxMeta};
use super::responder::{is_rc_request, Responder, ResponderConfig};
use super::segment::PathMtu;
use super::ud::{UdAddress, DATAGRAM_SEG_LEN};
use super::wqe::{SendWqe, WqeError};
use super::Roce;
use crate::{bus::Bus, eth::dma::WqeReader, fw::QpBuf};

/// Where a DCI WQE sends: the DCT, its access key and the address vector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DcTarget {
    /// The DCT number (`dqp_dct` bits 23:0).
    pub dctn: u32,
    /// The DC access key.
    pub key: u64,
    /// The address vector.
    pub addr: UdAddress,
}

/// A DCI's current connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DciConn {
    /// The DCT connected to.
    pub target: DcTarget,
    /// The PSN the connection started at (every DCETH carries it).
    pub first_psn: Psn,
}

/// One connection a DCT serves: the RC responder state for one DCI.
#[derive(Debug)]
pub struct DctConn {
    /// The PSN the connection started at.
    pub first_psn: Psn,
    /// The responder's engine state (its path leads back to the DCI).
    pub q: QpEngine,
}

/// A DCT connection's key: the DCT, the initiator's source GID and its DCI number.
pub type DctConnKey = (u32, [u8; 16], u32);

/// The DCTs' open connections.
pub type DctConns = BTreeMap<DctConnKey, DctConn>;

/// The target of the DCI send WQE `r` (its address vector after the ctrl segment); `None`
/// for a NOP (it sends nothing).
pub fn peek_target<R: WqeReader + ?Sized>(r: &R, index: u16) -> Result<Option<DcTarget>, WqeError> {
    let (w, ds) = SendWqe::ctrl(r, index)?;
    if w.opcode == wqe::opcode::NOP {
        return Ok(None);
    }
    if wqe::SEND_WQE_DS + DATAGRAM_SEG_LEN > usize::from(ds) * wqe::SEND_WQE_DS {
        return Err(WqeError::BadSize { ds });
    }
    let mut b = [0u8; DATAGRAM_SEG_LEN];
    r.read(wqe::SEND_WQE_DS, &mut b)
        .map_err(WqeError::Unreadable)?;
    let av = Av::read_from_bytes(&b[..]).map_err(|_| WqeError::BadSize { ds })?;
    let addr = UdAddress::from_av(&av);
    Ok(Some(DcTarget {
        dctn: addr.dqpn & MASK_24,
        key: av.dc_key(),
        addr,
    }))
}

/// Decodes a DCI send WQE: the RC segments after the address vector.
pub fn decode_send<R: WqeReader + ?Sized>(r: &R, index: u16) -> Result<SendWqe, WqeError> {
    let (w, ds) = SendWqe::ctrl(r, index)?;
    if w.opcode == wqe::opcode::NOP {
        return Ok(w);
    }
    SendWqe::decode_segments(r, w, ds, wqe::SEND_WQE_DS + DATAGRAM_SEG_LEN)
}

/// The headers of a DCI's request packet: the DC opcode and the DCETH of its connection.
pub fn request_headers(q: &QpEngine, bth: Bth, ext: ExtHeaders) -> Option<(Bth, ExtHeaders)> {
    let conn = q.dci.as_ref()?;
    let opcode = bth.opcode.twin(Service::Dc)?;
    let dc = Dceth {
        key: conn.target.key,
        dci: q.qpn,
        conn_psn: conn.first_psn.value(),
    };
    Some((
        Bth { opcode, ..bth },
        ExtHeaders {
            dc: Some(dc),
            ..ext
        },
    ))
}

/// The headers as the RC state machines take them: the RC opcode, no DCETH.
fn as_rc(hdr: &TransportHeaders, opcode: Opcode) -> TransportHeaders {
    TransportHeaders {
        bth: Bth { opcode, ..hdr.bth },
        ext: ExtHeaders {
            dc: None,
            ..hdr.ext
        },
    }
}

/// What a DCI does with its next WQE.
pub enum Next {
    /// Send it on the current connection.
    Go,
    /// Wait: it is for another DCT and WQEs are in flight.
    Wait,
}

impl Roce<'_> {
    /// Connects DCI `q` to the target of its next WQE `r` if it is not connected there, once
    /// nothing is in flight.
    pub(super) fn dci_connect<R: WqeReader + ?Sized>(
        &mut self,
        q: &mut QpEngine,
        v: &QpView,
        r: &R,
        index: u16,
    ) -> Result<Next, WqeError> {
        let Some(target) = peek_target(r, index)? else {
            return Ok(Next::Go);
        };
        if q.dci.as_ref().is_some_and(|c| c.target == target) {
            return Ok(Next::Go);
        }
        if !q.wqes.is_empty() {
            return Ok(Next::Wait);
        }
        if self.fw.ib_mode() {
            return Err(WqeError::BadSegment("DC on an InfiniBand port".into()));
        }
        let path = target
            .addr
            .path(v.qpn, &self.fw.rdma.gids)
            .map_err(WqeError::BadSegment)?;
        let first_psn = match &q.req {
            Some(super::engine::ReqSide::Rc(r)) => r.next_psn(),
            _ => return Err(WqeError::BadSegment("DCI without a requester".into())),
        };
        log::debug!(
            "DCI {:#x}: connects to DCT {:#x} at PSN {first_psn}",
            v.qpn,
            target.dctn
        );
        self.roce.stats.dc_connects += 1;
        q.path = Some(path);
        q.dci = Some(DciConn { target, first_psn });
        Ok(Next::Go)
    }

    /// A response for DCI `q`: the RC requester takes it; when nothing is left in flight the
    /// WQEs waiting for another DCT go.
    pub(super) fn dci_packet(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        hdr: &TransportHeaders,
        payload: &[u8],
        meta: RxMeta,
    ) {
        let Some(rc) = hdr.bth.opcode.twin(Service::Rc) else {
            self.roce.stats.rx_no_qp += 1;
            return;
        };
        if is_rc_request(rc) {
            self.roce.stats.dc_misdirected += 1;
            return;
        }
        self.transport_packet(bus, q, v, &as_rc(hdr, rc), payload, meta);
        if q.wqes.is_empty() && !q.error && v.state == qpc_state::RTS {
            self.execute_qp_sq(bus, q, v);
        }
    }

    /// A DC packet for DCT `dctn` (parsed `p`).
    pub(super) fn dct_packet(
        &mut self,
        bus: &mut Bus,
        dctn: u32,
        p: &Packet<'_>,
        hdr: &TransportHeaders,
        meta: RxMeta,
    ) {
        let Some(d) = self.fw.rdma.dcts.get(&dctn).filter(|d| d.active()) else {
            self.roce.stats.rx_no_qp += 1;
            return;
        };
        let (Some(dc), Some(rc)) = (hdr.ext.dc, hdr.bth.opcode.twin(Service::Rc)) else {
            // A response to a DCT.
            self.roce.stats.dc_misdirected += 1;
            return;
        };
        if dc.key != d.ctx.dc_access_key() {
            self.roce.stats.dc_key_violations += 1;
            log::debug!(
                "DCT {dctn:#x}: access key {:#x} refused (DCI {:#x})",
                dc.key,
                dc.dci
            );
            self.fw.dct_key_violation(bus, dctn);
            return;
        }
        let Some(v) = self.dct_view(dctn) else {
            self.roce.stats.rx_no_qp += 1;
            return;
        };
        let sgid = p.ip.src_gid();
        let key = (dctn, sgid, dc.dci);
        let first = Psn::new(dc.conn_psn);
        let mut conn = match self.roce.dc_conns.remove(&key) {
            Some(conn) if conn.first_psn == first => conn,
            Some(conn) if first.is_before(conn.first_psn) => {
                // A stale packet of an earlier connection.
                self.roce.stats.dc_stale += 1;
                self.roce.dc_conns.insert(key, conn);
                return;
            }
            _ => match self.dct_conn(dctn, p, dc, first, &v) {
                Some(conn) => conn,
                None => return,
            },
        };
        self.transport_packet(bus, &mut conn.q, &v, &as_rc(hdr, rc), p.payload, meta);
        if !conn.q.error {
            self.roce.dc_conns.insert(key, conn);
        }
        self.roce_drain_loopback(bus);
    }

    /// What the responder sees of DCT `dctn`: its SRQ, CQ, PD, user index and rights.
    fn dct_view(&self, dctn: u32) -> Option<QpView> {
        let c = self.fw.rdma.dcts.get(&dctn)?.ctx;
        let srqn = c.srqn_xrqn();
        let srq = self.fw.rdma.srqs.get(&srqn)?;
        Some(QpView {
            qpn: dctn,
            state: qpc_state::RTS,
            pd: c.pd(),
            cqn_snd: 0,
            cqn_rcv: c.cqn(),
            user_index: c.user_index(),
            dbr: 0,
            buf: QpBuf::default(),
            srqn: Some(srqn),
            recv_pd: srq.pd,
            // The responder paths look at the service type only for UD and UMR QPs.
            st: cx4_hw::qp::qpc_st::RC,
            qkey: 0,
            // IPoIB's offloads are a UD QP's.
            ulp: false,
            mtu: c.mtu() as u8,
            rights: QpRights {
                read: c.rre() != 0,
                write: c.rwe() != 0,
                atomic: c.rae() != 0,
            },
        })
    }

    /// The next burst of the DCT connections' streaming READ responses (`outgoing.rs`).
    pub(super) fn dct_drain_responses(&mut self, bus: &mut Bus) {
        let keys: Vec<DctConnKey> = self
            .roce
            .dc_conns
            .iter()
            .filter(|(_, c)| c.q.responding())
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            let (Some(v), Some(mut c)) = (self.dct_view(k.0), self.roce.dc_conns.remove(&k)) else {
                continue;
            };
            let burst = self.roce.read_burst();
            self.drain_responses(bus, &mut c.q, &v, burst);
            self.roce.dc_conns.insert(k, c);
        }
    }

    /// A new connection of DCT `dctn` for the DCI that sent `p`.
    fn dct_conn(
        &mut self,
        dctn: u32,
        p: &Packet<'_>,
        dc: Dceth,
        first: Psn,
        v: &QpView,
    ) -> Option<DctConn> {
        let c = self.fw.rdma.dcts.get(&dctn)?.ctx;
        let addr = UdAddress {
            qkey: 0,
            dqpn: dc.dci,
            udp_sport: 0,
            rmac: p.eth.src,
            tclass: c.tclass() as u8,
            hop_limit: c.hop_limit() as u8,
            sgid_index: c.my_addr_index() as u8,
            flow_label: c.flow_label(),
            rgid: p.ip.src_gid(),
            prio: c.eth_prio() as u8,
            rlid: 0,
            sl: 0,
            path_bits: 0,
            // DC runs on RoCE only, where every address is global (a GRH on the IB link).
            global: true,
        };
        let path = match addr.path(dctn, &self.fw.rdma.gids) {
            Ok(path) => path,
            Err(e) => {
                log::warn!("DCT {dctn:#x}: no way back to DCI {:#x}: {e}", dc.dci);
                return None;
            }
        };
        let mtu = PathMtu::from_code(v.mtu).unwrap_or(PathMtu::Mtu1024);
        let mut cfg = ResponderConfig::new(mtu, first);
        cfg.log_rra_max = self.fw.caps.general("log_max_ra_res_dc") as u8;
        cfg.min_rnr_timer = c.min_rnr_nak() as u8;
        cfg.max_msg_len = 1u32 << (self.fw.caps.general("log_max_msg") as u32).min(31);
        let mut q = QpEngine::new(dctn, Service::Dc);
        q.path = Some(path);
        q.resp = Some(RespSide::Rc(Box::new(Responder::new(cfg))));
        log::debug!(
            "DCT {dctn:#x}: connection from DCI {:#x} at PSN {first}",
            dc.dci
        );
        Some(DctConn {
            first_psn: first,
            q,
        })
    }

    /// Closes the connections of DCTs that are drained or gone.
    pub(super) fn dct_close_drained(&mut self) {
        let dcts = &self.fw.rdma.dcts;
        self.roce
            .dc_conns
            .retain(|k, _| dcts.get(&k.0).is_some_and(|d| d.active()));
    }
}
