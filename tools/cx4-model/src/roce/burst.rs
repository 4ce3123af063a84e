//! The card's internal loopback for RC requests, a message part at a time: the SEND and
//! RDMA WRITE packets the requester emits together for one WQE, addressed to a QP of this
//! card (a verbs program talking to itself, the EC engine's self-connected QP), cross the
//! loopback as one [`Burst`] instead of one frame each — no frame is built, parsed or
//! copied per packet, and the payload is placed with one translation
//! ([`crate::fw::Firmware::translate_write`]) instead of one per packet.
//!
//! The transport stays packet by packet: the requester assigns every PSN and sets AckReq as
//! for the wire, the responder's state machine ([`super::responder::Responder::on_packet`])
//! takes every packet's headers in order, so PSNs, MSNs, ACKs (coalesced as the responder
//! coalesces them), NAKs, RNR and completions are those of the frame path, as are the
//! packet and byte counters. Only the placement is merged: the data of consecutive packets
//! is written once, before the completions and ACKs the packets produced. Where the frame
//! path would fail at packet k of a message (a receive too short, a bad key in the receive
//! WQE), a burst fails at the message's first packet in the burst: the same WQE completes
//! with the same error on both sides, the receive buffer is left as the PRM leaves it after
//! an error (undefined), and nothing after the fault is acknowledged.
//!
//! Everything else — responses, READ and atomic requests, UC, XRC, UD and multicast — still
//! loops back as frames (`device.rs`, `ud.rs`), in the same queue, so the order between
//! bursts and frames is the order they were sent in.

use cx4_hw::qp::qpc_state;

use crate::{bus::Bus, eth::mkeys::MkeyDma};

use super::engine::{QpEngine, RespSide};
use super::headers::{Opcode, Service, TransportHeaders};
use super::looped::{Burst, Looped, Payload};
use super::psn::Psn;
use super::qp_view::{QpView, RxMeta};
use super::requester::TxPacket;
use super::responder::RespAction;
use super::segment::OpKind;
use super::wqe::Gather;
use super::Roce;

impl Roce<'_> {
    /// Whether request packet `tx` of QP `q` crosses the loopback in a burst: an RC SEND or
    /// WRITE to one of the port's own GIDs.
    pub(super) fn bursts(&self, q: &QpEngine, tx: &TxPacket) -> bool {
        // Not while page faults may be taken: a zapped page faults the packet that meets it
        // (`odp.rs`), which the frame path does packet by packet.
        !self.roce.frame_loopback
            && !self.odp_on()
            && q.service == Service::Rc
            && matches!(tx.op.kind(), OpKind::Send | OpKind::Write)
            && q.path
                .is_some_and(|p| self.roce_gid_is_local(&p.ip.dst_gid()))
    }

    /// Transmits `txs` (consecutive packets of one WQE, [`Roce::bursts`]) as one burst; as
    /// frames, one by one, where one is not built as a frame would not be.
    pub(super) fn transmit_burst(
        &mut self,
        bus: &mut Bus,
        q: &QpEngine,
        v: &QpView,
        txs: &[TxPacket],
    ) {
        let (Some(first), Some(w), Some(path)) = (
            txs.first(),
            txs.first().and_then(|t| q.wqe(t.wqe_index)),
            q.path,
        ) else {
            return;
        };
        let carried = |t: &TxPacket| if t.opcode.info().payload { t.len } else { 0 };
        // Each packet's payload follows the one before it in the message.
        let contiguous = txs
            .windows(2)
            .all(|p| p[0].offset.checked_add(carried(&p[0])) == Some(p[1].offset));
        let mut packets = Vec::with_capacity(txs.len());
        let mut bytes = 0u64;
        let mut header_len: Option<(Opcode, u64)> = None;
        for t in txs {
            let Some((bth, ext)) = self.request_headers(q, w, &path, t) else {
                break;
            };
            let mut bth = path.bth(bth);
            // The frame's headers, measured once per opcode run (FIRST, MIDDLE..., LAST).
            let h = match header_len {
                Some((op, n)) if op == t.opcode => n,
                _ => match path.frame_with(bth, ext, 0, true, |_| {}) {
                    Ok(f) => f.len() as u64,
                    Err(_) => break,
                },
            };
            header_len = Some((t.opcode, h));
            // The pad to a 4-byte multiple, as the frame carries it.
            bth.pad = super::packet::pad_for(carried(t) as usize);
            bytes += h + u64::from(carried(t)) + u64::from(bth.pad);
            packets.push((TransportHeaders { bth, ext }, carried(t)));
        }
        if !contiguous || packets.len() != txs.len() {
            for t in txs {
                self.transmit_request(bus, q, v, t);
            }
            return;
        }
        let total: usize = packets.iter().map(|p| p.1 as usize).sum();
        let dma = MkeyDma {
            fw: self.fw,
            mem: &bus.mem,
            pd: v.pd,
        };
        let payload = match &w.gather {
            Gather::Calc(job) => Payload::Calc(job.clone(), first.offset as usize),
            _ => match w.gather_vec(&dma, u64::from(first.offset), total) {
                Ok(p) => Payload::Bytes(p),
                Err(e) => {
                    // As a frame's gather failure: nothing is sent, the retry timer gives up.
                    log::warn!("QP {:#x} WQE {:#x}: gather failed: {e}", v.qpn, w.index);
                    self.roce.stats.errors += 1;
                    return;
                }
            },
        };
        self.roce.stats.tx_packets += txs.len() as u64;
        self.roce.stats.tx_bytes += bytes;
        self.roce.stats.loopback_bursts += 1;
        let meta = RxMeta {
            l3: super::cqe::l3_header_type(&path.ip),
            vlan: path.eth.vlan_tci,
            ib: None,
        };
        self.roce.loopback.push_back(Looped::Burst(Burst {
            qpn: path.remote_qpn,
            packets,
            payload,
            meta,
            bytes,
        }));
    }

    /// Receives a burst looped back inside the card.
    pub(super) fn roce_receive_burst(&mut self, bus: &mut Bus, b: &Burst) {
        let n = b.packets.len() as u64;
        self.roce.stats.rx_packets += n;
        self.roce.stats.rx_bytes += b.bytes;
        if !self.fw.rdma.qps.contains_key(&b.qpn) || !self.roce.qps.contains_key(&b.qpn) {
            self.roce.stats.rx_no_qp += n;
            return;
        }
        self.with_qp(bus, b.qpn, |d, bus, q, v| d.qp_burst(bus, q, v, b));
    }

    /// A burst for QP `q`: the responder takes its packets one by one, the data they place
    /// is written at once.
    fn qp_burst(&mut self, bus: &mut Bus, q: &mut QpEngine, v: &QpView, b: &Burst) {
        let plain = q.service == Service::Rc
            && matches!(q.resp, Some(RespSide::Rc(_)))
            && matches!(v.state, qpc_state::RTR | qpc_state::RTS | qpc_state::SQD)
            && !self.odp_on();
        if !plain {
            // Whatever the frame path does with such packets (an XRC target, a QP not
            // ready, of another service, a responder that may page-fault: `odp.rs` holds
            // the packet that meets a missing page), packet by packet.
            let all = b.payload.bytes(&bus.mem);
            let mut at = 0usize;
            for (hdr, len) in &b.packets {
                let p = all.get(at..at + *len as usize).unwrap_or_default();
                self.qp_packet(bus, q, v, hdr, p, b.meta);
                at += *len as usize;
            }
            return;
        }
        let available = self.recv_available(bus, q, v);
        let Some(RespSide::Rc(r)) = &mut q.resp else {
            return;
        };
        // Runs of actions: the data actions merged while they continue each other (with the
        // payload lengths of the packets they came from), then the other actions up to the
        // next data action that does not continue them.
        let mut runs: Vec<Run> = Vec::new();
        let mut cur = Run::default();
        let mut at = 0usize;
        for (i, (hdr, len)) in b.packets.iter().enumerate() {
            for a in r.on_packet(hdr, *len, available) {
                let follows = cur.at + data_len(cur.data.as_ref()) == at && cur.rest.is_empty();
                let merged = match (&mut cur.data, &a) {
                    (
                        Some(RespAction::RecvData { offset, len, .. }),
                        RespAction::RecvData {
                            offset: o,
                            len: l,
                            new_wqe: false,
                            ..
                        },
                    ) if follows && *offset + *len == *o => {
                        *len += l;
                        true
                    }
                    (
                        Some(RespAction::WriteData { rkey, va, len, .. }),
                        RespAction::WriteData {
                            rkey: k,
                            va: x,
                            len: l,
                            ..
                        },
                    ) if follows && rkey == k && va.wrapping_add(u64::from(*len)) == *x => {
                        *len += l;
                        true
                    }
                    _ => false,
                };
                if merged {
                    cur.packets.push((i, *len));
                    continue;
                }
                if matches!(
                    a,
                    RespAction::RecvData { .. } | RespAction::WriteData { .. }
                ) {
                    if cur.data.is_some() || !cur.rest.is_empty() {
                        runs.push(std::mem::take(&mut cur));
                    }
                    cur = Run {
                        data: Some(a),
                        at,
                        packets: vec![(i, *len)],
                        rest: Vec::new(),
                    };
                } else {
                    cur.rest.push(a);
                }
            }
            at += *len as usize;
        }
        if cur.data.is_some() || !cur.rest.is_empty() {
            runs.push(cur);
        }
        let Some(last) = b.packets.last().map(|p| p.0) else {
            return;
        };
        for run in runs {
            // A receive's first packet alone (it takes the receive WQE), so that the rest
            // can be split where the WQE's scatter list ends.
            let (head, run) = run.split_first();
            for part in head.into_iter().chain([run]) {
                for (step, fault_at) in part.steps(q) {
                    let from = step.at;
                    let acts: Vec<RespAction> = step.data.into_iter().chain(step.rest).collect();
                    let payload = b.payload.from(from);
                    self.resp_actions(bus, q, v, acts, &last, payload, b.meta);
                    // A fault ends the burst as it ends the frames: the packets behind the one
                    // that failed reach a QP in error.
                    let failed = match &q.resp {
                        Some(RespSide::Rc(r)) => r.is_error(),
                        _ => true,
                    };
                    if failed || q.error {
                        let behind = b.packets.len().saturating_sub(fault_at + 1);
                        self.roce.stats.rx_no_qp += behind as u64;
                        return;
                    }
                }
            }
        }
    }
}

/// A run of a burst's responder actions: one (merged) data action, the packets it came from
/// (index in the burst, payload length), where its payload starts, the actions after it.
#[derive(Default)]
struct Run {
    data: Option<RespAction>,
    at: usize,
    packets: Vec<(usize, u32)>,
    rest: Vec<RespAction>,
}

impl Run {
    /// A receive's first packet as a run of its own (no actions after it) and the rest of
    /// the run; the run alone otherwise.
    fn split_first(self) -> (Option<Run>, Run) {
        let Some(RespAction::RecvData {
            psn,
            offset,
            new_wqe: true,
            ..
        }) = self.data
        else {
            return (None, self);
        };
        let Some(&(i, n)) = self.packets.first().filter(|_| self.packets.len() > 1) else {
            return (None, self);
        };
        let head = Run {
            data: Some(RespAction::RecvData {
                psn,
                offset,
                len: n,
                new_wqe: true,
            }),
            at: self.at,
            packets: vec![(i, n)],
            rest: Vec::new(),
        };
        let rest_len: u32 = self.packets[1..].iter().map(|p| p.1).sum();
        let tail = Run {
            data: Some(RespAction::RecvData {
                psn: psn.add(1),
                offset: offset + n,
                len: rest_len,
                new_wqe: false,
            }),
            at: self.at + n as usize,
            packets: self.packets[1..].to_vec(),
            rest: self.rest,
        };
        (Some(head), tail)
    }

    /// The run as it executes, each step with the burst index of the packet a fault in it
    /// is the frame path's fault at: a receive's first packet alone (it takes the receive
    /// WQE), then the packets that fit the receive's scatter list at once, then the first
    /// that does not alone (the frame path's RecvLength fault is at that packet); the
    /// actions after the data with the last step.
    fn steps(self, q: &QpEngine) -> Vec<(Run, usize)> {
        let Run {
            data,
            at,
            packets,
            rest,
        } = self;
        let first = packets.first().map_or(0, |p| p.0);
        let Some(RespAction::RecvData {
            psn,
            offset,
            new_wqe,
            ..
        }) = data
        else {
            return vec![(
                Run {
                    data,
                    at,
                    packets,
                    rest,
                },
                first,
            )];
        };
        let recv =
            |psn: Psn, offset: u32, p: &[(usize, u32)], new_wqe: bool| RespAction::RecvData {
                psn,
                offset,
                len: p.iter().map(|x| x.1).sum(),
                new_wqe,
            };
        let mut steps = Vec::new();
        // What the scatter list holds is known once the WQE is taken (`cap` None before:
        // one step, [`Run::split_first`] made it a single packet).
        let cap: Option<u64> = q
            .recv_open
            .as_ref()
            .filter(|_| !new_wqe)
            .map(|o| o.sges.iter().map(|s| u64::from(s.len)).sum());
        let (mut off, mut from) = (offset, at);
        let fit = match cap {
            Some(cap) => {
                let mut end = u64::from(off);
                packets
                    .iter()
                    .take_while(|p| {
                        end += u64::from(p.1);
                        end <= cap
                    })
                    .count()
            }
            None => packets.len(),
        };
        for part in [&packets[..fit], &packets[fit..(fit + 1).min(packets.len())]] {
            if part.is_empty() {
                continue;
            }
            let n: u32 = part.iter().map(|p| p.1).sum();
            let psn_k = psn.add((part[0].0 - first) as u32);
            steps.push((recv(psn_k, off, part, new_wqe), from, part[0].0));
            off += n;
            from += n as usize;
        }
        let n = steps.len();
        steps
            .into_iter()
            .enumerate()
            .map(|(i, (d, at, fault_at))| {
                let rest = if i + 1 == n { rest.clone() } else { Vec::new() };
                (
                    Run {
                        data: Some(d),
                        at,
                        packets: Vec::new(),
                        rest,
                    },
                    fault_at,
                )
            })
            .collect()
    }
}

/// The payload bytes a data action places (0 for none).
fn data_len(a: Option<&RespAction>) -> usize {
    match a {
        Some(RespAction::RecvData { len, .. } | RespAction::WriteData { len, .. }) => *len as usize,
        _ => 0,
    }
}
