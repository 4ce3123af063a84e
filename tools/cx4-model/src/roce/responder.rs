//! The responder side of an RC QP (IBTA vol 1 9.7.5, 9.7.6, 9.9): the expected PSN and the
//! MSN, the opcode sequence of multi-packet SEND and WRITE messages, ACK coalescing, the
//! "NAK once" rule for out-of-sequence packets, RNR NAKs, duplicate requests, and the
//! responder resources that answer duplicate READs and atomics without executing them again.
//!
//! Pure and I/O-free: the integrator hands every RC *request* packet of the QP to
//! [`Responder::on_packet`] (responses go to the requester) with whether a receive WQE is
//! available, and carries out the [`RespAction`]s in order: place payload into the receive
//! WQE or at an R_Key's VA, complete a receive, send READ responses, execute an atomic and
//! report its original value back ([`Responder::atomic_result`]), send ACKs and NAKs. It checks
//! R_Keys and local keys itself while doing so; when a check fails it stops at that action,
//! drops the rest of the batch, and calls [`Responder::fault`], which NAKs and puts the
//! responder in error.
//!
//! Rules, each with its test:
//! - PSN = expected: executed; the expected PSN advances (by the response count for a READ).
//! - PSN ahead: one NAK PSN sequence error carrying the expected PSN, then silent drops until
//!   the expected PSN arrives (NAK once; an RNR NAK counts as that one NAK).
//! - PSN behind (duplicate): SEND/WRITE are not executed again, but re-ACKed (the PSN before
//!   the expected one) when they ask for an ACK; a READ is answered again from its resource
//!   (from the duplicate's PSN on, the data read anew); an atomic is answered with its saved
//!   original value and not executed; without a resource the duplicate is dropped.
//! - A SEND FIRST/ONLY, or a WRITE with immediate's LAST/ONLY, with no receive WQE: RNR NAK
//!   with the QP's `min_rnr_timer`, the PSN not consumed.
//! - An ACK every `ack_coalesce` packets, and on every packet with AckReq; READ responses and
//!   atomic ACKs acknowledge too.
//! - Opcode out of sequence, wrong payload length, WRITE longer than its RETH, READ or
//!   message longer than allowed, misaligned atomic: NAK invalid request, error.
//! - Resources: the last 2^`log_rra_max` READs/atomics, oldest replaced first.

use std::collections::VecDeque;

use super::headers::{Aeth, NakCode, Opcode, Service, Syndrome, TransportHeaders, MASK_24};
use super::psn::Psn;
use super::segment::PathMtu;
use super::status::WcStatus;

/// The responder's part of the QP context, set at INIT2RTR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponderConfig {
    /// The path MTU.
    pub mtu: PathMtu,
    /// The first PSN expected (`next_rcv_psn`).
    pub expected_psn: Psn,
    /// Responder resources as a log2 (`log_rra_max`; capped at 2^16).
    pub log_rra_max: u8,
    /// The RNR NAK timer code sent in RNR NAKs (`min_rnr_nak`, 5 bits).
    pub min_rnr_timer: u8,
    /// Send an ACK at least every this many packets (at least 1).
    pub ack_coalesce: u32,
    /// The largest message accepted (2^`log_max_msg`).
    pub max_msg_len: u32,
}

impl ResponderConfig {
    /// A configuration with the given MTU and expected PSN, 16 resources, RNR timer code 1
    /// (10 µs), an ACK every 16 packets and 2^31-byte messages.
    pub const fn new(mtu: PathMtu, expected_psn: Psn) -> ResponderConfig {
        ResponderConfig {
            mtu,
            expected_psn,
            log_rra_max: 4,
            min_rnr_timer: 1,
            ack_coalesce: 16,
            max_msg_len: 1 << 31,
        }
    }
}

/// What a completed receive carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvCompletion {
    /// PSN of the message's last packet.
    pub psn: Psn,
    /// Bytes placed in the receive WQE (0 for a WRITE with immediate).
    pub bytes: u32,
    /// Whether the message was an RDMA WRITE with immediate (no data in the WQE).
    pub rdma_write: bool,
    /// Immediate data.
    pub imm: Option<u32>,
    /// The R_Key a SEND with invalidate asks to invalidate.
    pub invalidate: Option<u32>,
    /// The BTH solicited-event bit of the last packet.
    pub solicited: bool,
}

/// READ responses to send: `len` bytes from `va` under `rkey`, the first with PSN
/// `first_psn`; [`ReadResponse::packets`] segments them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadResponse {
    /// PSN of the first response packet.
    pub first_psn: Psn,
    /// The R_Key.
    pub rkey: u32,
    /// Remote address of the first byte.
    pub va: u64,
    /// Bytes.
    pub len: u32,
    /// The MSN the AETHs carry.
    pub msn: u32,
    /// The MTU to segment by.
    pub mtu: PathMtu,
    /// Whether this answers a duplicate READ from the resources (not a new execution).
    pub replay: bool,
}

/// One READ response packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadResponsePacket {
    /// RDMA READ response FIRST, MIDDLE, LAST or ONLY.
    pub opcode: Opcode,
    /// The PSN.
    pub psn: Psn,
    /// Remote address of the payload.
    pub va: u64,
    /// Offset of the payload from [`ReadResponse::va`].
    pub offset: u32,
    /// Payload bytes.
    pub len: u32,
    /// The AETH (an ACK on FIRST, LAST and ONLY; none on MIDDLE).
    pub aeth: Option<Aeth>,
}

impl ReadResponse {
    /// How many packets (and PSNs) the response takes.
    pub fn count(&self) -> u32 {
        self.mtu.packets(self.len)
    }

    /// The response packets, in order.
    pub fn packets(&self) -> impl Iterator<Item = ReadResponsePacket> + '_ {
        (0..self.count()).map(move |i| self.packet(i))
    }

    /// Response packet `i` (below [`ReadResponse::count`]).
    pub fn packet(&self, i: u32) -> ReadResponsePacket {
        use Opcode::*;
        let (n, m) = (self.count(), self.mtu.bytes());
        let opcode = match (i == 0, i + 1 == n) {
            (true, true) => RcRdmaReadResponseOnly,
            (true, false) => RcRdmaReadResponseFirst,
            (false, true) => RcRdmaReadResponseLast,
            (false, false) => RcRdmaReadResponseMiddle,
        };
        let offset = i.saturating_mul(m);
        ReadResponsePacket {
            opcode,
            psn: self.first_psn.add(i),
            va: self.va.wrapping_add(u64::from(offset)),
            offset,
            len: self.len.saturating_sub(offset).min(m),
            aeth: (opcode != RcRdmaReadResponseMiddle).then_some(ack(self.msn)),
        }
    }
}

/// An atomic operation to execute (then report with [`Responder::atomic_result`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicOp {
    /// The request's PSN.
    pub psn: Psn,
    /// Compare-and-swap (else fetch-and-add).
    pub compare_swap: bool,
    /// The R_Key.
    pub rkey: u32,
    /// The 8-byte-aligned remote address.
    pub va: u64,
    /// Swap value or addend.
    pub swap_add: u64,
    /// Compare value (compare-and-swap).
    pub compare: u64,
}

/// Why a packet was dropped without effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The responder is in the error state.
    Error,
    /// Not an RC request opcode.
    NotARequest,
    /// Ahead of the expected PSN, after the one NAK.
    OutOfSequence,
    /// Malformed for its place in the message (UC: the rest of the message is dropped).
    Malformed,
    /// A duplicate that needs no answer (no AckReq), or a duplicate READ/atomic whose
    /// resource is gone or whose atomic has not been executed yet.
    Duplicate,
}

/// What the integrator must do after a responder event, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RespAction {
    /// Place the packet's payload (`len` bytes) into the receive WQE at `offset`; `new_wqe`:
    /// this packet opens the next receive WQE (consume it).
    RecvData {
        /// The PSN.
        psn: Psn,
        /// Offset in the receive WQE's scatter list.
        offset: u32,
        /// Payload bytes.
        len: u32,
        /// Whether to take a new receive WQE.
        new_wqe: bool,
    },
    /// Write the packet's payload (`len` bytes) at `va` under `rkey`.
    WriteData {
        /// The PSN.
        psn: Psn,
        /// The R_Key.
        rkey: u32,
        /// Remote address.
        va: u64,
        /// Payload bytes.
        len: u32,
    },
    /// Complete the receive WQE (for a WRITE with immediate: take one and complete it).
    RecvComplete(RecvCompletion),
    /// Send READ responses.
    ReadResponse(ReadResponse),
    /// Execute an atomic, then call [`Responder::atomic_result`].
    ExecuteAtomic(AtomicOp),
    /// Send an ATOMIC ACKNOWLEDGE.
    AtomicAck {
        /// The PSN (the atomic request's).
        psn: Psn,
        /// The AETH.
        aeth: Aeth,
        /// The original value.
        orig: u64,
        /// Whether it is answered from the resources.
        replay: bool,
    },
    /// Send an ACKNOWLEDGE (an ACK, RNR NAK or NAK per its AETH).
    SendAck {
        /// The PSN.
        psn: Psn,
        /// The AETH.
        aeth: Aeth,
    },
    /// Complete the open receive WQE with an error.
    RecvError(WcStatus),
    /// The responder failed with this NAK code: move the QP to the error state (and flush
    /// the receive queue).
    EnterError(NakCode),
    /// The packet had no effect.
    Dropped(DropReason),
}

/// A failure the integrator met while carrying out an action for packet `psn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RespFault {
    /// R_Key, bounds or access rights of a WRITE, READ or atomic.
    RemoteAccess,
    /// The receive WQE's local key check failed.
    RecvProtection,
    /// The SEND does not fit the receive WQE.
    RecvLength,
    /// Another failure (e.g. DMA to unmapped memory).
    Operational,
    /// The R_Key of a SEND with invalidate may not be invalidated (`invalidate.rs`).
    Invalidate,
}

impl RespFault {
    /// The NAK code the requester is sent.
    pub const fn nak(self) -> NakCode {
        match self {
            RespFault::RemoteAccess => NakCode::RemoteAccessError,
            RespFault::RecvProtection | RespFault::Operational => NakCode::RemoteOperationalError,
            RespFault::RecvLength | RespFault::Invalidate => NakCode::InvalidRequest,
        }
    }

    /// The status of the receive WQE it fails, if it concerns one.
    pub const fn recv_status(self) -> Option<WcStatus> {
        match self {
            RespFault::RemoteAccess | RespFault::Operational => None,
            RespFault::RecvProtection => Some(WcStatus::LocalProtErr),
            RespFault::RecvLength => Some(WcStatus::LocalLengthErr),
            RespFault::Invalidate => Some(WcStatus::RemoteInvalReqErr),
        }
    }
}

/// Event counters of a responder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RespStats {
    /// Duplicate packets seen.
    pub duplicates: u64,
    /// Out-of-sequence packets seen (NAKed or dropped).
    pub out_of_sequence: u64,
    /// PSN sequence error NAKs sent.
    pub seq_naks: u64,
    /// RNR NAKs sent.
    pub rnr_naks: u64,
    /// ACKs sent (not counting READ responses and atomic ACKs).
    pub acks: u64,
    /// RDMA WRITE messages taken (their first or only packet, first time).
    pub writes: u64,
    /// READs executed (first time).
    pub reads: u64,
    /// READs answered again from the resources.
    pub read_replays: u64,
    /// Atomics executed.
    pub atomics: u64,
    /// Atomics answered again from the resources.
    pub atomic_replays: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    Idle,
    Send { offset: u32 },
    Write { rkey: u32, va: u64, remaining: u32 },
}

#[derive(Clone, Copy, Debug)]
enum Resource {
    Read {
        first: Psn,
        count: u32,
        rkey: u32,
        va: u64,
        len: u32,
    },
    Atomic {
        psn: Psn,
        orig: Option<u64>,
    },
}

/// The responder state of one RC QP.
#[derive(Clone, Debug)]
pub struct Responder {
    cfg: ResponderConfig,
    epsn: Psn,
    msn: u32,
    nak_sent: bool,
    ctx: Ctx,
    resources: VecDeque<Resource>,
    unacked: u32,
    error: bool,
    stats: RespStats,
}

type Out = Vec<RespAction>;

/// Whether `op` is an RC request (what the responder takes; the rest of RC goes to the
/// requester).
pub const fn is_rc_request(op: Opcode) -> bool {
    use Opcode::*;
    matches!(op.info().service, Service::Rc)
        && !matches!(
            op,
            RcRdmaReadResponseFirst
                | RcRdmaReadResponseMiddle
                | RcRdmaReadResponseLast
                | RcRdmaReadResponseOnly
                | RcAcknowledge
                | RcAtomicAcknowledge
        )
}

/// An ACK AETH (no end-to-end credits) with `msn`.
fn ack(msn: u32) -> Aeth {
    Aeth {
        syndrome: Syndrome::Ack {
            credits: Syndrome::CREDITS_INVALID,
        },
        msn,
    }
}

impl Responder {
    /// A responder in RTR with the context's fields.
    pub fn new(cfg: ResponderConfig) -> Responder {
        let cfg = ResponderConfig {
            log_rra_max: cfg.log_rra_max.min(16),
            min_rnr_timer: cfg.min_rnr_timer & 0x1f,
            ack_coalesce: cfg.ack_coalesce.max(1),
            ..cfg
        };
        Responder {
            epsn: cfg.expected_psn,
            msn: 0,
            nak_sent: false,
            ctx: Ctx::Idle,
            resources: VecDeque::new(),
            unacked: 0,
            error: false,
            stats: RespStats::default(),
            cfg,
        }
    }

    /// The expected PSN.
    pub fn expected_psn(&self) -> Psn {
        self.epsn
    }

    /// The message sequence number (24 bits).
    pub fn msn(&self) -> u32 {
        self.msn
    }

    /// Whether the responder is in the error state.
    pub fn is_error(&self) -> bool {
        self.error
    }

    /// The event counters.
    pub fn stats(&self) -> RespStats {
        self.stats
    }

    /// Handles an RC request packet with `payload_len` payload bytes; `recv_available` says
    /// whether a receive WQE is posted and not yet taken.
    pub fn on_packet(
        &mut self,
        hdr: &TransportHeaders,
        payload_len: u32,
        recv_available: bool,
    ) -> Vec<RespAction> {
        let mut out = Vec::new();
        if self.error {
            out.push(RespAction::Dropped(DropReason::Error));
            return out;
        }
        if !is_rc_request(hdr.bth.opcode) {
            out.push(RespAction::Dropped(DropReason::NotARequest));
            return out;
        }
        let psn = Psn::new(hdr.bth.psn);
        let d = psn.diff(self.epsn);
        if d > 0 {
            self.stats.out_of_sequence += 1;
            if self.nak_sent {
                out.push(RespAction::Dropped(DropReason::OutOfSequence));
            } else {
                self.nak_sent = true;
                self.stats.seq_naks += 1;
                self.send_ack(
                    self.epsn,
                    Syndrome::Nak(NakCode::PsnSequenceError),
                    &mut out,
                );
            }
        } else if d < 0 {
            self.stats.duplicates += 1;
            self.duplicate(hdr, psn, &mut out);
        } else {
            self.nak_sent = false;
            self.execute(hdr, psn, payload_len, recv_available, &mut out);
        }
        out
    }

    /// Reports the original value of the atomic of PSN `psn` (after its
    /// [`RespAction::ExecuteAtomic`]): saves it in the resource and answers.
    pub fn atomic_result(&mut self, psn: Psn, orig: u64) -> Vec<RespAction> {
        let mut out = Vec::new();
        if self.error {
            return out;
        }
        let slot = self.resources.iter_mut().find_map(|r| match r {
            Resource::Atomic { psn: p, orig: o } if *p == psn && o.is_none() => Some(o),
            _ => None,
        });
        if let Some(o) = slot {
            *o = Some(orig);
            self.unacked = 0;
            out.push(RespAction::AtomicAck {
                psn,
                aeth: ack(self.msn),
                orig,
                replay: false,
            });
        }
        out
    }

    /// Reports that carrying out an action for packet `psn` failed: NAK, the receive WQE's
    /// error completion if the fault concerns it, and the error state.
    pub fn fault(&mut self, psn: Psn, fault: RespFault) -> Vec<RespAction> {
        let mut out = Vec::new();
        if self.error {
            return out;
        }
        self.fail(psn, fault.nak(), fault.recv_status(), &mut out);
        out
    }

    /// The answer to the request at PSN `psn` while a page fault holds the responder
    /// (`odp.rs`): an RNR NAK, the request not executed (the device put back whatever its
    /// packet changed).
    pub fn page_fault_nak(&mut self, psn: Psn) -> Vec<RespAction> {
        let mut out = Vec::new();
        if !self.error {
            self.rnr(psn, &mut out);
        }
        out
    }

    /// The ACK of the packets received since the last one, if any (for an integrator that
    /// acknowledges when its receive burst ends).
    pub fn flush_ack(&mut self) -> Vec<RespAction> {
        let mut out = Vec::new();
        if !self.error && self.unacked > 0 {
            self.send_ack(
                self.epsn.prev(),
                Syndrome::Ack {
                    credits: Syndrome::CREDITS_INVALID,
                },
                &mut out,
            );
        }
        out
    }

    fn send_ack(&mut self, psn: Psn, syndrome: Syndrome, out: &mut Out) {
        if let Syndrome::Ack { .. } = syndrome {
            self.stats.acks += 1;
            self.unacked = 0;
        }
        out.push(RespAction::SendAck {
            psn,
            aeth: Aeth {
                syndrome,
                msn: self.msn,
            },
        });
    }

    fn fail(&mut self, psn: Psn, code: NakCode, recv: Option<WcStatus>, out: &mut Out) {
        self.send_ack(psn, Syndrome::Nak(code), out);
        if let Some(status) = recv {
            out.push(RespAction::RecvError(status));
        }
        out.push(RespAction::EnterError(code));
        self.error = true;
        self.ctx = Ctx::Idle;
    }

    fn invalid(&mut self, psn: Psn, out: &mut Out) {
        let recv = matches!(self.ctx, Ctx::Send { .. }).then_some(WcStatus::RemoteInvalReqErr);
        self.fail(psn, NakCode::InvalidRequest, recv, out);
    }

    fn bump_msn(&mut self) {
        self.msn = (self.msn + 1) & MASK_24;
    }

    fn add_resource(&mut self, r: Resource) {
        self.resources.push_back(r);
        while self.resources.len() > 1usize << self.cfg.log_rra_max {
            self.resources.pop_front();
        }
    }

    fn duplicate(&mut self, hdr: &TransportHeaders, psn: Psn, out: &mut Out) {
        use Opcode::*;
        match hdr.bth.opcode {
            RcRdmaReadRequest => {
                let m = self.cfg.mtu.bytes();
                let found = self.resources.iter().rev().find_map(|r| match *r {
                    Resource::Read {
                        first,
                        count,
                        rkey,
                        va,
                        len,
                    } if first.distance_to(psn) < count => {
                        Some((first.distance_to(psn), rkey, va, len))
                    }
                    _ => None,
                });
                match found {
                    Some((k, rkey, va, len)) => {
                        let offset = k.saturating_mul(m);
                        self.stats.read_replays += 1;
                        self.unacked = 0;
                        out.push(RespAction::ReadResponse(ReadResponse {
                            first_psn: psn,
                            rkey,
                            va: va.wrapping_add(u64::from(offset)),
                            len: len.saturating_sub(offset),
                            msn: self.msn,
                            mtu: self.cfg.mtu,
                            replay: true,
                        }));
                    }
                    None => out.push(RespAction::Dropped(DropReason::Duplicate)),
                }
            }
            RcCompareSwap | RcFetchAdd => {
                let found = self.resources.iter().rev().find_map(|r| match *r {
                    Resource::Atomic { psn: p, orig } if p == psn => orig,
                    _ => None,
                });
                match found {
                    Some(orig) => {
                        self.stats.atomic_replays += 1;
                        self.unacked = 0;
                        out.push(RespAction::AtomicAck {
                            psn,
                            aeth: ack(self.msn),
                            orig,
                            replay: true,
                        });
                    }
                    None => out.push(RespAction::Dropped(DropReason::Duplicate)),
                }
            }
            _ => {
                if hdr.bth.ack_req {
                    self.send_ack(
                        self.epsn.prev(),
                        Syndrome::Ack {
                            credits: Syndrome::CREDITS_INVALID,
                        },
                        out,
                    );
                } else {
                    out.push(RespAction::Dropped(DropReason::Duplicate));
                }
            }
        }
    }

    fn rnr(&mut self, psn: Psn, out: &mut Out) {
        self.stats.rnr_naks += 1;
        self.nak_sent = true;
        self.send_ack(
            psn,
            Syndrome::RnrNak {
                timer: self.cfg.min_rnr_timer,
            },
            out,
        );
    }

    /// Counts a SEND/WRITE packet toward the next ACK, sending it when due.
    fn acknowledge(&mut self, psn: Psn, ack_req: bool, out: &mut Out) {
        self.unacked = self.unacked.saturating_add(1);
        if ack_req || self.unacked >= self.cfg.ack_coalesce {
            self.send_ack(
                psn,
                Syndrome::Ack {
                    credits: Syndrome::CREDITS_INVALID,
                },
                out,
            );
        }
    }

    fn execute(
        &mut self,
        hdr: &TransportHeaders,
        psn: Psn,
        len: u32,
        recv_available: bool,
        out: &mut Out,
    ) {
        use Opcode::*;
        let op = hdr.bth.opcode;
        let m = self.cfg.mtu.bytes();
        let first = matches!(
            op,
            RcSendFirst
                | RcSendOnly
                | RcSendOnlyWithImmediate
                | RcSendOnlyWithInvalidate
                | RcRdmaWriteFirst
                | RcRdmaWriteOnly
                | RcRdmaWriteOnlyWithImmediate
                | RcRdmaReadRequest
                | RcCompareSwap
                | RcFetchAdd
        );
        let in_send = matches!(
            op,
            RcSendMiddle | RcSendLast | RcSendLastWithImmediate | RcSendLastWithInvalidate
        );
        let in_write = matches!(
            op,
            RcRdmaWriteMiddle | RcRdmaWriteLast | RcRdmaWriteLastWithImmediate
        );
        let sequence_ok = match self.ctx {
            Ctx::Idle => first,
            Ctx::Send { .. } => in_send,
            Ctx::Write { .. } => in_write,
        };
        if !sequence_ok {
            self.invalid(psn, out);
            return;
        }
        let last = !matches!(
            op,
            RcSendFirst | RcSendMiddle | RcRdmaWriteFirst | RcRdmaWriteMiddle
        );
        // FIRST and MIDDLE carry exactly one MTU, LAST and ONLY at most one.
        let len_ok = if last { len <= m } else { len == m };
        let imm = hdr.ext.imm.map(|i| i.imm);
        match op {
            RcSendFirst
            | RcSendMiddle
            | RcSendLast
            | RcSendLastWithImmediate
            | RcSendLastWithInvalidate
            | RcSendOnly
            | RcSendOnlyWithImmediate
            | RcSendOnlyWithInvalidate => {
                let (offset, new_wqe) = match self.ctx {
                    Ctx::Send { offset } => (offset, false),
                    _ => (0, true),
                };
                if new_wqe && !recv_available {
                    self.rnr(psn, out);
                    return;
                }
                let end = offset
                    .checked_add(len)
                    .filter(|&e| e <= self.cfg.max_msg_len);
                let inval = hdr.ext.ieth.map(|i| i.rkey);
                let needs_inval = matches!(op, RcSendLastWithInvalidate | RcSendOnlyWithInvalidate);
                let (Some(end), true, true) = (end, len_ok, inval.is_some() == needs_inval) else {
                    self.invalid(psn, out);
                    return;
                };
                out.push(RespAction::RecvData {
                    psn,
                    offset,
                    len,
                    new_wqe,
                });
                if last {
                    self.ctx = Ctx::Idle;
                    self.bump_msn();
                    out.push(RespAction::RecvComplete(RecvCompletion {
                        psn,
                        bytes: end,
                        rdma_write: false,
                        imm,
                        invalidate: inval,
                        solicited: hdr.bth.solicited,
                    }));
                } else {
                    self.ctx = Ctx::Send { offset: end };
                }
                self.epsn = psn.next();
                self.acknowledge(psn, hdr.bth.ack_req, out);
            }
            RcRdmaWriteFirst
            | RcRdmaWriteMiddle
            | RcRdmaWriteLast
            | RcRdmaWriteLastWithImmediate
            | RcRdmaWriteOnly
            | RcRdmaWriteOnlyWithImmediate => {
                let (rkey, va, remaining) = match (self.ctx, hdr.ext.reth) {
                    (
                        Ctx::Write {
                            rkey,
                            va,
                            remaining,
                        },
                        _,
                    ) => (rkey, va, remaining),
                    (_, Some(reth)) if reth.dma_len <= self.cfg.max_msg_len => {
                        (reth.rkey, reth.va, reth.dma_len)
                    }
                    _ => {
                        self.invalid(psn, out);
                        return;
                    }
                };
                // The payload must fit the RETH length exactly: all of it on the last packet,
                // leaving some for the last packet otherwise.
                let fits = if last {
                    len == remaining
                } else {
                    len < remaining
                };
                if !len_ok || !fits {
                    self.invalid(psn, out);
                    return;
                }
                let with_imm = matches!(
                    op,
                    RcRdmaWriteLastWithImmediate | RcRdmaWriteOnlyWithImmediate
                );
                if with_imm && !recv_available {
                    self.rnr(psn, out);
                    return;
                }
                if !matches!(self.ctx, Ctx::Write { .. }) {
                    self.stats.writes += 1;
                }
                if len > 0 {
                    out.push(RespAction::WriteData { psn, rkey, va, len });
                }
                if last {
                    self.ctx = Ctx::Idle;
                    self.bump_msn();
                    if with_imm {
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
                    self.ctx = Ctx::Write {
                        rkey,
                        va: va.wrapping_add(u64::from(len)),
                        remaining: remaining - len,
                    };
                }
                self.epsn = psn.next();
                self.acknowledge(psn, hdr.bth.ack_req, out);
            }
            RcRdmaReadRequest => {
                let Some(reth) = hdr.ext.reth.filter(|r| r.dma_len <= self.cfg.max_msg_len) else {
                    self.invalid(psn, out);
                    return;
                };
                let count = self.cfg.mtu.packets(reth.dma_len);
                self.add_resource(Resource::Read {
                    first: psn,
                    count,
                    rkey: reth.rkey,
                    va: reth.va,
                    len: reth.dma_len,
                });
                self.bump_msn();
                self.epsn = psn.add(count);
                self.unacked = 0;
                self.stats.reads += 1;
                out.push(RespAction::ReadResponse(ReadResponse {
                    first_psn: psn,
                    rkey: reth.rkey,
                    va: reth.va,
                    len: reth.dma_len,
                    msn: self.msn,
                    mtu: self.cfg.mtu,
                    replay: false,
                }));
            }
            RcCompareSwap | RcFetchAdd => {
                let Some(a) = hdr.ext.atomic.filter(|a| a.va & 7 == 0) else {
                    self.invalid(psn, out);
                    return;
                };
                self.add_resource(Resource::Atomic { psn, orig: None });
                self.bump_msn();
                self.epsn = psn.next();
                self.stats.atomics += 1;
                out.push(RespAction::ExecuteAtomic(AtomicOp {
                    psn,
                    compare_swap: op == RcCompareSwap,
                    rkey: a.rkey,
                    va: a.va,
                    swap_add: a.swap_add,
                    compare: a.compare,
                }));
            }
            _ => out.push(RespAction::Dropped(DropReason::NotARequest)),
        }
    }
}

#[cfg(test)]
#[path = "responder_tests.rs"]
mod tests;
