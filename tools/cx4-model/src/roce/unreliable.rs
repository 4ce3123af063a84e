//! The unreliable services (IBTA vol 1 9.8): UC, a connection with PSNs but no
//! acknowledgements, and UD, single-packet datagrams checked by Q_Key.
//!
//! UC requester: a request is segmented like RC's and completes as soon as its packets are
//! handed out. UC responder: a packet whose PSN is not the expected one means packets were
//! lost; the message in progress is abandoned (its receive WQE is kept and reused, no
//! completion), the responder resynchronises on the packet's PSN, and MIDDLE/LAST packets
//! are dropped until the next FIRST or ONLY. Without a receive WQE, or with a malformed
//! packet or a failed key check, the message is dropped; the QP stays usable.
//!
//! UD: one packet per message, no PSN check; the DETH Q_Key must equal the QP's
//! ([`ud_qkey_accepts`]), and a send work request whose Q_Key has the high bit set sends the
//! QP's Q_Key instead ([`ud_send_qkey`]).

use super::headers::{Opcode, Service, TransportHeaders};
use super::psn::Psn;
use super::requester::{Completion, ReqAction, TxPacket, WorkRequest};
use super::responder::{DropReason, RecvCompletion, RespAction, RespFault};
use super::segment::{segment, PathMtu};
use super::status::WcStatus;

/// The UC requester: PSN assignment and segmentation.
#[derive(Clone, Debug)]
pub struct UcRequester {
    mtu: PathMtu,
    next_psn: Psn,
    max_msg_len: u32,
}

impl UcRequester {
    /// A UC requester sending from `initial_psn`, refusing messages over `max_msg_len`.
    pub fn new(mtu: PathMtu, initial_psn: Psn, max_msg_len: u32) -> UcRequester {
        UcRequester {
            mtu,
            next_psn: initial_psn,
            max_msg_len,
        }
    }

    /// The PSN of the next packet.
    pub fn next_psn(&self) -> Psn {
        self.next_psn
    }

    /// The packets of `wr` ([`ReqAction::Transmit`], the last with AckReq clear: UC has no
    /// ACKs) and its completion. An operation UC does not carry completes with
    /// `LOCAL_QP_OP_ERR`, a message that is too long with `LOCAL_LENGTH_ERR`, without packets.
    pub fn post(&mut self, wr: WorkRequest) -> Vec<ReqAction> {
        let mut out = Vec::new();
        let status = if !wr.op.allowed_on(Service::Uc) {
            WcStatus::LocalQpOpErr
        } else if wr.len > self.max_msg_len {
            WcStatus::LocalLengthErr
        } else {
            let segs = segment(Service::Uc, wr.op, wr.len, self.mtu, self.next_psn);
            self.next_psn = self.next_psn.add(segs.len() as u32);
            out.extend(segs.into_iter().map(|s| {
                ReqAction::Transmit(TxPacket {
                    wqe_index: wr.wqe_index,
                    op: wr.op,
                    opcode: s.opcode,
                    psn: s.psn,
                    offset: s.offset,
                    len: s.len,
                    ack_req: false,
                    retransmission: false,
                })
            }));
            WcStatus::Success
        };
        out.push(ReqAction::Complete(Completion {
            wqe_index: wr.wqe_index,
            op: wr.op,
            status,
            bytes: if status.is_error() { 0 } else { wr.len },
        }));
        out
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UcCtx {
    /// Between messages.
    Idle,
    /// Dropping the rest of a message.
    Discard,
    Send {
        offset: u32,
    },
    Write {
        rkey: u32,
        va: u64,
        remaining: u32,
    },
}

/// The UC responder.
#[derive(Clone, Debug)]
pub struct UcResponder {
    mtu: PathMtu,
    epsn: Psn,
    max_msg_len: u32,
    ctx: UcCtx,
    /// A receive WQE was started by an abandoned message and is reused by the next one.
    recv_held: bool,
    /// Messages abandoned because of a PSN gap.
    gaps: u64,
}

impl UcResponder {
    /// A UC responder expecting `expected_psn`.
    pub fn new(mtu: PathMtu, expected_psn: Psn, max_msg_len: u32) -> UcResponder {
        UcResponder {
            mtu,
            epsn: expected_psn,
            max_msg_len,
            ctx: UcCtx::Idle,
            recv_held: false,
            gaps: 0,
        }
    }

    /// The expected PSN.
    pub fn expected_psn(&self) -> Psn {
        self.epsn
    }

    /// PSN gaps seen.
    pub fn gaps(&self) -> u64 {
        self.gaps
    }

    /// Handles a UC packet; the actions are [`RespAction::RecvData`],
    /// [`RespAction::WriteData`], [`RespAction::RecvComplete`] and [`RespAction::Dropped`].
    pub fn on_packet(
        &mut self,
        hdr: &TransportHeaders,
        len: u32,
        recv_available: bool,
    ) -> Vec<RespAction> {
        use Opcode::*;
        let mut out = Vec::new();
        let op = hdr.bth.opcode;
        if op.info().service != Service::Uc {
            out.push(RespAction::Dropped(DropReason::NotARequest));
            return out;
        }
        let psn = Psn::new(hdr.bth.psn);
        if psn != self.epsn {
            self.gaps += 1;
            if let UcCtx::Send { .. } = self.ctx {
                self.recv_held = true;
            }
            self.ctx = UcCtx::Idle;
        }
        self.epsn = psn.next();
        let starts = matches!(
            op,
            UcSendFirst
                | UcSendOnly
                | UcSendOnlyWithImmediate
                | UcRdmaWriteFirst
                | UcRdmaWriteOnly
                | UcRdmaWriteOnlyWithImmediate
        );
        let in_send = matches!(op, UcSendMiddle | UcSendLast | UcSendLastWithImmediate);
        let in_write = matches!(
            op,
            UcRdmaWriteMiddle | UcRdmaWriteLast | UcRdmaWriteLastWithImmediate
        );
        let fits_ctx = match self.ctx {
            UcCtx::Idle | UcCtx::Discard => starts,
            UcCtx::Send { .. } => in_send,
            UcCtx::Write { .. } => in_write,
        };
        if !fits_ctx {
            if let UcCtx::Send { .. } = self.ctx {
                self.recv_held = true;
            }
            self.ctx = if starts { UcCtx::Idle } else { UcCtx::Discard };
            out.push(RespAction::Dropped(DropReason::OutOfSequence));
            return out;
        }
        let m = self.mtu.bytes();
        let last = !matches!(
            op,
            UcSendFirst | UcSendMiddle | UcRdmaWriteFirst | UcRdmaWriteMiddle
        );
        let len_ok = if last { len <= m } else { len == m };
        let imm = hdr.ext.imm.map(|i| i.imm);
        if op.info().name.starts_with("UC_SEND") {
            let (offset, new_wqe) = match self.ctx {
                UcCtx::Send { offset } => (offset, false),
                _ => (0, !self.recv_held),
            };
            let end = offset.checked_add(len).filter(|&e| e <= self.max_msg_len);
            let Some(end) = end.filter(|_| len_ok && (recv_available || !new_wqe)) else {
                return self.discard(&mut out);
            };
            self.recv_held = false;
            out.push(RespAction::RecvData {
                psn,
                offset,
                len,
                new_wqe,
            });
            if last {
                self.ctx = UcCtx::Idle;
                out.push(RespAction::RecvComplete(RecvCompletion {
                    psn,
                    bytes: end,
                    rdma_write: false,
                    imm,
                    invalidate: None,
                    solicited: hdr.bth.solicited,
                }));
            } else {
                self.ctx = UcCtx::Send { offset: end };
            }
        } else {
            let (rkey, va, remaining) = match (self.ctx, hdr.ext.reth) {
                (
                    UcCtx::Write {
                        rkey,
                        va,
                        remaining,
                    },
                    _,
                ) => (rkey, va, remaining),
                (_, Some(r)) if r.dma_len <= self.max_msg_len => (r.rkey, r.va, r.dma_len),
                _ => return self.discard(&mut out),
            };
            let fits = if last {
                len == remaining
            } else {
                len < remaining
            };
            let with_imm = matches!(
                op,
                UcRdmaWriteLastWithImmediate | UcRdmaWriteOnlyWithImmediate
            );
            if !len_ok || !fits || (with_imm && !recv_available && !self.recv_held) {
                return self.discard(&mut out);
            }
            if len > 0 {
                out.push(RespAction::WriteData { psn, rkey, va, len });
            }
            if last {
                self.ctx = UcCtx::Idle;
                if with_imm {
                    self.recv_held = false;
                    out.push(RespAction::RecvComplete(RecvCompletion {
                        psn,
                        bytes: 0,
                        rdma_write: true,
                        imm,
                        invalidate: None,
                        solicited: hdr.bth.solicited,
                    }));
                }
            } else {
                self.ctx = UcCtx::Write {
                    rkey,
                    va: va.wrapping_add(u64::from(len)),
                    remaining: remaining - len,
                };
            }
        }
        out
    }

    /// Reports that an action for the current packet failed: the rest of the message is
    /// dropped; a failed receive WQE completes in error (UC has no NAKs and stays usable).
    pub fn fault(&mut self, fault: RespFault) -> Vec<RespAction> {
        let mut out = Vec::new();
        if let Some(s) = fault.recv_status() {
            out.push(RespAction::RecvError(s));
            self.recv_held = false;
        }
        self.ctx = UcCtx::Discard;
        out
    }

    fn discard(&mut self, out: &mut Vec<RespAction>) -> Vec<RespAction> {
        if let UcCtx::Send { .. } = self.ctx {
            self.recv_held = true;
        }
        self.ctx = UcCtx::Discard;
        out.push(RespAction::Dropped(DropReason::Malformed));
        std::mem::take(out)
    }
}

/// The Q_Key bit that selects the QP's own Q_Key in a UD send work request.
pub const QKEY_USE_QP: u32 = 0x8000_0000;

/// The Q_Key a UD send carries: the work request's, or the QP's when the work request's has
/// the high-order bit set (IBTA C10-15).
pub const fn ud_send_qkey(wr_qkey: u32, qp_qkey: u32) -> u32 {
    if wr_qkey & QKEY_USE_QP != 0 {
        qp_qkey
    } else {
        wr_qkey
    }
}

/// Whether a UD packet's DETH Q_Key admits it to a QP with `qp_qkey` (they must be equal).
pub const fn ud_qkey_accepts(deth_qkey: u32, qp_qkey: u32) -> bool {
    deth_qkey == qp_qkey
}

/// Why a UD packet is dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdDrop {
    /// Not a UD SEND opcode, or no DETH.
    NotUd,
    /// The Q_Key does not match.
    QKey,
    /// The payload exceeds the MTU.
    TooLong,
    /// No receive WQE is posted.
    NoReceive,
}

/// What to do with a UD packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdVerdict {
    /// Take a receive WQE and deliver the payload (after the 40-byte GRH area).
    Deliver {
        /// Payload bytes.
        len: u32,
        /// Immediate data.
        imm: Option<u32>,
        /// The sender's QPN (DETH).
        src_qp: u32,
        /// The BTH solicited-event bit.
        solicited: bool,
    },
    /// Drop it (and count it).
    Drop(UdDrop),
}

/// The receive rule of a UD QP with `qp_qkey` for a packet of `len` payload bytes.
pub fn ud_receive(
    hdr: &TransportHeaders,
    len: u32,
    mtu: PathMtu,
    qp_qkey: u32,
    recv_available: bool,
) -> UdVerdict {
    let Some(deth) = hdr.ext.deth else {
        return UdVerdict::Drop(UdDrop::NotUd);
    };
    if !matches!(
        hdr.bth.opcode,
        Opcode::UdSendOnly | Opcode::UdSendOnlyWithImmediate
    ) {
        return UdVerdict::Drop(UdDrop::NotUd);
    }
    if !ud_qkey_accepts(deth.qkey, qp_qkey) {
        return UdVerdict::Drop(UdDrop::QKey);
    }
    if len > mtu.bytes() {
        return UdVerdict::Drop(UdDrop::TooLong);
    }
    if !recv_available {
        return UdVerdict::Drop(UdDrop::NoReceive);
    }
    UdVerdict::Deliver {
        len,
        imm: hdr.ext.imm.map(|i| i.imm),
        src_qp: deth.src_qp,
        solicited: hdr.bth.solicited,
    }
}

#[cfg(test)]
mod tests {
    use super::super::headers::{Bth, Deth, ExtHeaders, ImmDt, Reth};
    use super::super::segment::RequestOp;
    use super::*;

    fn pkt(op: Opcode, psn: u32) -> TransportHeaders {
        TransportHeaders {
            bth: Bth::new(op, 1, psn),
            ext: ExtHeaders::default(),
        }
    }

    fn kinds(a: &[RespAction]) -> Vec<&'static str> {
        a.iter()
            .map(|a| match a {
                RespAction::RecvData { new_wqe: true, .. } => "new",
                RespAction::RecvData { .. } => "data",
                RespAction::WriteData { .. } => "write",
                RespAction::RecvComplete(_) => "complete",
                RespAction::Dropped(_) => "drop",
                _ => "other",
            })
            .collect()
    }

    #[test]
    fn uc_requester_completes_at_once() {
        let mut r = UcRequester::new(PathMtu::Mtu256, Psn::new(0xff_ffff), 1 << 20);
        let wr = WorkRequest {
            wqe_index: 3,
            op: RequestOp::Send,
            len: 600,
            fence: false,
        };
        let a = r.post(wr);
        assert_eq!(a.len(), 4);
        assert!(
            matches!(a[0], ReqAction::Transmit(t) if t.opcode == Opcode::UcSendFirst && t.psn.value() == 0xff_ffff && !t.ack_req)
        );
        assert!(
            matches!(a[3], ReqAction::Complete(c) if c.status == WcStatus::Success && c.bytes == 600)
        );
        assert_eq!(r.next_psn(), Psn::new(2));
        let a = r.post(WorkRequest {
            op: RequestOp::Read,
            ..wr
        });
        assert!(matches!(a[..], [ReqAction::Complete(c)] if c.status == WcStatus::LocalQpOpErr));
        let a = r.post(WorkRequest { len: 1 << 21, ..wr });
        assert!(matches!(a[..], [ReqAction::Complete(c)] if c.status == WcStatus::LocalLengthErr));
    }

    #[test]
    fn uc_gap_drops_the_rest_of_the_message_and_reuses_the_wqe() {
        let mut r = UcResponder::new(PathMtu::Mtu256, Psn::new(10), 1 << 20);
        assert_eq!(
            kinds(&r.on_packet(&pkt(Opcode::UcSendFirst, 10), 256, true)),
            ["new"]
        );
        // PSN 11 lost: 12 (a MIDDLE) is dropped, and so is the LAST.
        assert_eq!(
            kinds(&r.on_packet(&pkt(Opcode::UcSendMiddle, 12), 256, true)),
            ["drop"]
        );
        assert_eq!(
            kinds(&r.on_packet(&pkt(Opcode::UcSendLast, 13), 10, true)),
            ["drop"]
        );
        assert_eq!(r.gaps(), 1);
        // The next message reuses the abandoned WQE (no new one taken).
        let a = r.on_packet(&pkt(Opcode::UcSendOnly, 14), 5, true);
        assert_eq!(kinds(&a), ["data", "complete"]);
        assert!(matches!(a[0], RespAction::RecvData { offset: 0, .. }));
        assert_eq!(
            kinds(&r.on_packet(&pkt(Opcode::UcSendOnly, 15), 5, true)),
            ["new", "complete"]
        );
        // A gap landing on a FIRST starts that message.
        assert_eq!(
            kinds(&r.on_packet(&pkt(Opcode::UcSendFirst, 40), 256, true)),
            ["new"]
        );
        assert_eq!(r.expected_psn(), Psn::new(41));
    }

    #[test]
    fn uc_write_and_malformed() {
        let mut r = UcResponder::new(PathMtu::Mtu256, Psn::new(0), 1 << 20);
        let mut first = pkt(Opcode::UcRdmaWriteFirst, 0);
        first.ext.reth = Some(Reth {
            va: 0x1000,
            rkey: 5,
            dma_len: 300,
        });
        assert_eq!(kinds(&r.on_packet(&first, 256, false)), ["write"]);
        let mut last = pkt(Opcode::UcRdmaWriteLastWithImmediate, 1);
        last.ext.imm = Some(ImmDt { imm: 9 });
        // No receive WQE for the immediate: the message is dropped.
        assert_eq!(kinds(&r.on_packet(&last, 44, false)), ["drop"]);
        assert_eq!(r.on_packet(&first, 256, false).len(), 1); // a new FIRST (a gap) restarts
        let a = r.on_packet(&pkt(Opcode::UcRdmaWriteLast, 1), 44, false);
        assert!(matches!(
            a[..],
            [RespAction::WriteData {
                va: 0x1100,
                len: 44,
                ..
            }]
        ));
        // A FIRST shorter than the MTU is malformed.
        assert_eq!(
            kinds(&r.on_packet(&pkt(Opcode::UcSendFirst, 2), 100, true)),
            ["drop"]
        );
        assert_eq!(
            kinds(&r.on_packet(&pkt(Opcode::RcSendOnly, 3), 1, true)),
            ["drop"]
        );
        assert_eq!(
            r.fault(RespFault::RecvProtection),
            [RespAction::RecvError(WcStatus::LocalProtErr)]
        );
    }

    #[test]
    fn qkey_rules() {
        assert_eq!(ud_send_qkey(0x1111, 0x2222), 0x1111);
        assert_eq!(ud_send_qkey(0x8000_0000, 0x2222), 0x2222);
        assert_eq!(ud_send_qkey(0x8001_0000, 0x2222), 0x2222);
        assert!(ud_qkey_accepts(0x8001_0000, 0x8001_0000));
        assert!(!ud_qkey_accepts(0x1, 0x2));
    }

    #[test]
    fn ud_receive_rule() {
        let mut p = pkt(Opcode::UdSendOnlyWithImmediate, 77);
        p.ext.deth = Some(Deth {
            qkey: 0x42,
            src_qp: 0x99,
        });
        p.ext.imm = Some(ImmDt { imm: 7 });
        let m = PathMtu::Mtu1024;
        assert_eq!(
            ud_receive(&p, 1024, m, 0x42, true),
            UdVerdict::Deliver {
                len: 1024,
                imm: Some(7),
                src_qp: 0x99,
                solicited: false
            }
        );
        assert_eq!(
            ud_receive(&p, 1025, m, 0x42, true),
            UdVerdict::Drop(UdDrop::TooLong)
        );
        assert_eq!(
            ud_receive(&p, 10, m, 0x43, true),
            UdVerdict::Drop(UdDrop::QKey)
        );
        assert_eq!(
            ud_receive(&p, 10, m, 0x42, false),
            UdVerdict::Drop(UdDrop::NoReceive)
        );
        assert_eq!(
            ud_receive(&pkt(Opcode::UdSendOnly, 1), 10, m, 0x42, true),
            UdVerdict::Drop(UdDrop::NotUd)
        );
        p.bth.opcode = Opcode::RcSendOnly;
        assert_eq!(
            ud_receive(&p, 10, m, 0x42, true),
            UdVerdict::Drop(UdDrop::NotUd)
        );
    }
}
