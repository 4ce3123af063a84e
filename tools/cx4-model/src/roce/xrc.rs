//! XRC, the extended reliable connected transport (IBTA vol 1 Annex A14), on the RC engine.
//!
//! An XRC *initiator* (INI) QP sends; an XRC *target* (TGT) QP receives, and a message is for
//! the XRC SRQ its XRCETH names, not for the target QP: one INI → TGT connection feeds every
//! XRC SRQ of the target's XRC domain (ibv_xsrq_pingpong: one connection, one SRQ per
//! client). Both are `qpc_st::XRC` QPs; mlx5_ib creates the target with `no_sq` (the kernel's
//! `create_xrc_tgt_qp`) and the initiator with a send queue and no receive queue, and both
//! with `rq_type` SRQ pointing at an internal SRQ that is never used, so the model tells them
//! apart by the send queue.
//!
//! The transport is RC's, so the engine runs the RC requester and responder unchanged and
//! translates at the edges (an XRC opcode is its RC operation + 0xa0):
//!
//! - Initiator send WQEs carry an XRC segment after the ctrl segment (libmlx5 `qp.c`,
//!   `mlx5_wqe_xrc_seg`: the remote SRQ number in its first 4 bytes, 12 reserved) before the
//!   RC segments ([`decode_send`]). Every request packet goes out with the XRC opcode and an
//!   XRCETH naming that SRQ ([`request_headers`]); ACK timeouts, NAKs, RNR and
//!   retransmission are RC's.
//! - The target's responses (ACK, READ response, atomic ACK) go out with the XRC opcode and
//!   no XRCETH ([`response_opcode`]); the initiator's requester takes them as RC.
//! - A request to the target ([`Roce::xrc_packet`]): its XRCETH must name an XRC SRQ of
//!   the target QP's XRC domain. The SRQ then stands in for the QP's receive side: receive
//!   WQEs come from it, R_Keys and lkeys are checked in its PD (the target QP's PD is
//!   mlx5_ib's internal one), and receive completions go to its CQ with the target QP's
//!   number and, in `srqn_uidx`, the SRQ's user index — what libmlx5's `get_resp_ctx_v1`
//!   looks up (an `MLX5_RSC_TYPE_XSRQ`) with `cqe_version` 1 — or, for an SRQ created with
//!   user index 0xffffff (`cqe_version` 0, the kernel's SRQs), the SRQ number, which
//!   mlx5_ib's `handle_responder` reads for a QP with an XRC domain.
//! - A request whose XRCETH names no SRQ, not an XRC SRQ, or one of another XRC domain is
//!   refused like an R_Key violation: NAK remote access error, the target QP to the error
//!   state (class C, as rxe's XRC series does for `RESPST_ERR_INVALID_XRCETH`; IBTA makes
//!   the XRC domain the protection boundary of the SRQs), counted in
//!   `RoceStats::xrc_bad_srq`. The initiator completes the WQE with `REM_ACCESS_ERR`.
//!   The check applies to the request at the expected PSN; duplicates and requests ahead
//!   take the RC sequence rules first.
//! - Requests to an initiator and responses to a target are dropped (counted in
//!   `RoceStats::xrc_misdirected`): neither has that half of the transport.

use cx4_hw::wqe::{self, rdma::WqeXrcSeg};
use zerocopy::FromBytes;

use super::Roce;
use crate::{bus::Bus, eth::dma::WqeReader, fw::SrqKind};

use super::engine::{QpEngine, RespSide};
use super::headers::{Bth, ExtHeaders, Opcode, Service, TransportHeaders, Xrceth, MASK_24};
use super::psn::Psn;
use super::qp_view::QpView;
use super::qp_view::RxMeta;
use super::responder::{is_rc_request, RespFault};
use super::wqe::{SendWqe, WqeError};

/// What separates an XRC opcode from its RC operation (IBTA's XRC opcode base, 101b << 5).
const XRC_BASE: u8 = 0xa0;

/// The user index that asks for `cqe_version` 0 CQEs (mlx5_ib's `MLX5_IB_DEFAULT_UIDX`).
const NO_USER_INDEX: u32 = 0xff_ffff;

/// The RC opcode of the same operation as XRC opcode `op` (`None` for a non-XRC opcode).
pub fn rc_equivalent(op: Opcode) -> Option<Opcode> {
    if op.info().service != Service::Xrc {
        return None;
    }
    Opcode::from_u8(op.value() - XRC_BASE).ok()
}

/// The XRC opcode of the same operation as RC opcode `op` (`None` for a non-RC opcode).
pub fn xrc_equivalent(op: Opcode) -> Option<Opcode> {
    if op.info().service != Service::Rc {
        return None;
    }
    Opcode::from_u8(op.value() + XRC_BASE).ok()
}

/// Why an XRCETH is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XrcRefusal {
    /// No SRQ has that number.
    NoSrq(u32),
    /// The SRQ is a basic SRQ or RMP, not an XRC SRQ.
    NotXrc(u32),
    /// The XRC SRQ is in another XRC domain than the target QP.
    OtherDomain {
        /// The SRQ.
        srqn: u32,
        /// Its domain.
        srq_xrcd: u32,
        /// The target QP's.
        qp_xrcd: u32,
    },
}

/// Decodes a send WQE of a QP of `service`: an XRC initiator's has its XRC segment after
/// the ctrl segment (a WQE too short to hold it is a local QP operation error).
pub fn decode_send<R: WqeReader + ?Sized>(
    service: Service,
    r: &R,
    index: u16,
) -> Result<SendWqe, WqeError> {
    match service {
        Service::Xrc => {}
        Service::Dc => return super::dc::decode_send(r, index),
        _ => return SendWqe::decode(r, index),
    }
    let (mut w, ds) = SendWqe::ctrl(r, index)?;
    if w.opcode == wqe::opcode::NOP {
        return Ok(w);
    }
    if usize::from(ds) < 2 {
        return Err(WqeError::BadSize { ds });
    }
    let mut b = [0u8; WqeXrcSeg::SIZE];
    r.read(wqe::SEND_WQE_DS, &mut b)
        .map_err(WqeError::Unreadable)?;
    let seg = WqeXrcSeg::ref_from_bytes(&b[..]).map_err(|_| WqeError::BadSize { ds })?;
    // The SRQ number is 24 bits, like every QP and SRQ number on the wire.
    w.xrc_srqn = Some(seg.xrc_srqn() & MASK_24);
    SendWqe::decode_segments(r, w, ds, wqe::SEND_WQE_DS + WqeXrcSeg::SIZE)
}

/// The headers of a request packet as it goes on the wire: unchanged for RC and UC; for
/// XRC the opcode's XRC twin and an XRCETH naming `srqn` (the WQE's XRC segment).
pub fn request_headers(
    service: Service,
    bth: Bth,
    ext: ExtHeaders,
    srqn: Option<u32>,
) -> Option<(Bth, ExtHeaders)> {
    if service != Service::Xrc {
        return Some((bth, ext));
    }
    let opcode = xrc_equivalent(bth.opcode)?;
    let ext = ExtHeaders {
        xrc: Some(Xrceth { srqn: srqn? }),
        ..ext
    };
    Some((Bth { opcode, ..bth }, ext))
}

/// The opcode of a response a QP of `service` sends (XRC targets answer with XRC opcodes).
pub fn response_opcode(service: Service, op: Opcode) -> Opcode {
    match service {
        Service::Xrc => xrc_equivalent(op).unwrap_or(op),
        Service::Dc => op.twin(Service::Dc).unwrap_or(op),
        _ => op,
    }
}

/// The headers as the RC state machines take them: the RC opcode, no XRCETH.
fn as_rc(hdr: &TransportHeaders, opcode: Opcode) -> TransportHeaders {
    TransportHeaders {
        bth: Bth { opcode, ..hdr.bth },
        ext: ExtHeaders {
            xrc: None,
            ..hdr.ext
        },
    }
}

impl Roce<'_> {
    /// The receive side of a target for XRC SRQ `srqn`: the SRQ's receive WQEs, PD, CQ and
    /// completion index in place of the QP's; or why the SRQ cannot be used.
    pub(super) fn xrc_srq_view(&self, v: &QpView, srqn: u32) -> Result<QpView, XrcRefusal> {
        let s = self
            .fw
            .rdma
            .srqs
            .get(&srqn)
            .ok_or(XrcRefusal::NoSrq(srqn))?;
        if s.kind != SrqKind::Xrc {
            return Err(XrcRefusal::NotXrc(srqn));
        }
        let qp_xrcd = self.fw.rdma.qps.get(&v.qpn).map_or(0, |q| q.ctx.xrcd());
        if s.xrcd != qp_xrcd {
            return Err(XrcRefusal::OtherDomain {
                srqn,
                srq_xrcd: s.xrcd,
                qp_xrcd,
            });
        }
        let user_index = if s.user_index & MASK_24 == NO_USER_INDEX {
            srqn
        } else {
            s.user_index
        };
        Ok(QpView {
            srqn: Some(srqn),
            recv_pd: s.pd,
            pd: s.pd,
            cqn_rcv: s.cqn,
            user_index,
            ..v.clone()
        })
    }

    /// The view a flush of the receive WQE being filled completes through: the XRC SRQ's for
    /// a target in the middle of a SEND, else the QP's own.
    pub(super) fn xrc_open_view(&self, q: &QpEngine, v: &QpView) -> QpView {
        q.xrc
            .msg_srqn
            .and_then(|n| self.xrc_srq_view(v, n).ok())
            .unwrap_or_else(|| v.clone())
    }

    /// A packet for XRC QP `q`.
    pub(super) fn xrc_packet(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        hdr: &TransportHeaders,
        payload: &[u8],
        meta: RxMeta,
    ) {
        let Some(rc) = rc_equivalent(hdr.bth.opcode) else {
            // An RC, UC or CNP opcode for an XRC QP.
            self.roce.stats.rx_no_qp += 1;
            return;
        };
        let rc_hdr = as_rc(hdr, rc);
        let target = v.buf.log_sq_size.is_none();
        if !is_rc_request(rc) {
            if target {
                self.roce.stats.xrc_misdirected += 1;
                log::debug!("XRC target QP {:#x}: response {} dropped", v.qpn, rc.name());
                return;
            }
            self.transport_packet(bus, q, v, &rc_hdr, payload, meta);
            return;
        }
        if !target {
            self.roce.stats.xrc_misdirected += 1;
            log::debug!(
                "XRC initiator QP {:#x}: request {} dropped",
                v.qpn,
                rc.name()
            );
            return;
        }
        // Every XRC request carries an XRCETH (the opcode table requires it).
        let srqn = hdr.ext.xrc.map_or(0, |x| x.srqn);
        match self.xrc_srq_view(v, srqn) {
            Ok(sv) => {
                // A SEND in progress completes where it started.
                let tv = match q.xrc.msg_srqn {
                    Some(n) if q.recv_open.is_some() && n != srqn => {
                        self.xrc_srq_view(v, n).unwrap_or(sv)
                    }
                    _ => sv,
                };
                let srq_of_msg = tv.srqn;
                self.transport_packet(bus, q, &tv, &rc_hdr, payload, meta);
                q.xrc.msg_srqn = if q.recv_open.is_some() {
                    srq_of_msg
                } else {
                    None
                };
            }
            Err(why) => {
                let psn = Psn::new(hdr.bth.psn);
                let expected = matches!(&q.resp, Some(RespSide::Rc(r)) if r.expected_psn() == psn);
                // Without a usable SRQ the QP has no receive side.
                let nv = QpView {
                    srqn: None,
                    ..self.xrc_open_view(q, v)
                };
                if !expected {
                    // A duplicate or a request ahead: the sequence rules answer it.
                    self.transport_packet(bus, q, &nv, &rc_hdr, payload, meta);
                    return;
                }
                self.roce.stats.xrc_bad_srq += 1;
                log::warn!(
                    "XRC target QP {:#x}: {} PSN {:#x} refused: {why:?}",
                    v.qpn,
                    hdr.bth.opcode.name(),
                    psn.value()
                );
                let acts = self.resp_fault(q, psn, RespFault::RemoteAccess);
                self.resp_actions(bus, q, &nv, acts, &rc_hdr, payload.into(), meta);
                q.xrc.msg_srqn = None;
            }
        }
    }
}
