//! Congestion on the RoCE engine's wire: where the DCQCN reaction point (`dcqcn.rs`), the
//! notification point (`cnp.rs`), the firmware's congestion state (`fw::cong`) and the port's
//! PFC pause state (`pause.rs`, `port.rs`) meet the engine's send and receive paths.
//!
//! Send, for every request packet of an RC or UC QP ([`Roce::roce_send_request`]):
//! - its priority is the frame's, as the port classifies it (`Port::frame_prio`: trust PCP
//!   → the VLAN PCP mlx5_ib puts the path's `sl` in, untagged 0; trust DSCP → QPDPM of the
//!   path's DSCP), the same rule as the Ethernet SQs;
//! - with the reaction point enabled for that priority the packet is ECN-capable: ECT(0),
//!   unless the path's traffic class already carries ECN bits (UD, responses and CNPs keep
//!   the path's bits);
//! - it leaves at once unless the priority is paused by the link partner (PFC XOFF, or an
//!   802.3x pause), the QP's rate limiter holds it back, or earlier packets of the QP wait;
//!   then it waits, in order, in [`CongEngine`]. Every other RoCE frame (responses, ACKs, UD,
//!   CNPs) waits only for a pause of its priority ([`Roce::roce_pfc_gate`]).
//! - Waiting packets leave at [`Roce::roce_gate_release`]: from `roce_tick` (the wire thread
//!   wakes at the limiter's next send time, [`CongEngine::next_release`]) and when a pause
//!   ends (`Hca::pause_tick` runs the stalled SQs and this). A QP whose request packets wait runs no
//!   ACK timer (`Engine::next_deadline` skips it) and restarts it when they leave
//!   (`Requester::departed`): a packet that has not left cannot be lost. Real ConnectX does
//!   the same by construction — its transport timer starts at transmission, and a paused or
//!   rate-limited QP does not transmit. Frames of a QP that was destroyed, reset or went to
//!   error meanwhile are dropped.
//!
//! Receive ([`Roce::roce_congestion_rx`], before the transport sees the packet): a CNP goes
//! to the reaction point of the QP it names (handled, or ignored when the RP is disabled
//! for its priority or the QP has no RC/UC requester) and goes no further; a CE-marked
//! request on a priority with the NP enabled is counted and answered with a CNP (`cnp.rs`),
//! then processed as usual.
//!
//! All of it is RoCEv2's: a RoCE v1 frame (EtherType 0x8915, an IB GRH) has no ECN field, so
//! its requests are never made ECN-capable ([`frame_ecn`] sees no IP header) or found CE, and
//! a CNP opcode in v1 framing is ignored (`rp_cnp_ignored`). v1 frames still pass the PFC
//! gate and, as requests, the QP's rate limiter.

use std::collections::{BTreeSet, VecDeque};

use super::Roce;

use super::cnp;
use super::cong_state::Waiting;
use super::dcqcn::RateLimiter;
use super::engine::{now_ns, ReqSide};
use super::headers::Opcode;
use super::packet::{self, Ecn, Packet};

/// The ECN codepoint of a frame this engine built (Ethernet, optional 802.1Q tag, IPv4 or
/// IPv6), read in place; `None` for a RoCE v1 frame, which has none.
fn frame_ecn(f: &[u8]) -> Option<Ecn> {
    let be16 = |at: usize| Some(u16::from_be_bytes([*f.get(at)?, *f.get(at + 1)?]));
    let (mut et, mut l3) = (be16(12)?, packet::ETH_HLEN);
    if et == packet::ETHERTYPE_VLAN {
        et = be16(16)?;
        l3 += packet::VLAN_HLEN;
    }
    let tc = match et {
        packet::ETHERTYPE_IPV4 => *f.get(l3 + 1)?,
        packet::ETHERTYPE_IPV6 => (be16(l3)? >> 4) as u8,
        _ => return None,
    };
    Some(Ecn::from_tos(tc))
}

impl Roce<'_> {
    /// Whether RoCE frames of priority `prio` may not leave now (a pause from the partner).
    pub(super) fn roce_paused(&self, prio: u8) -> bool {
        self.port.is_paused(prio)
    }

    /// The port's speed in kb/s, the reaction point's highest rate.
    fn line_kbps(&self) -> u64 {
        self.port.link_bps(self.fw) / 1000
    }

    /// The priority of `frame` under the port's trust state.
    fn frame_prio(&self, frame: &[u8]) -> u8 {
        self.port.frame_prio(self.fw, frame)
    }

    /// Keeps `rp_cur_flows` with the limiters.
    fn count_flows(&mut self) {
        self.fw.cong.stats.rp_cur_flows = self.roce.cong.limiters.len() as u32;
    }

    /// Sends the request packet `frame` of QP `qpn` (see the module documentation).
    pub(super) fn roce_send_request(&mut self, qpn: u32, mut frame: Vec<u8>) {
        // Looped back inside the card: no port, no pause, no pacing.
        if self.roce_is_local(&frame) {
            self.roce_loop_back(frame);
            return;
        }
        let prio = self.frame_prio(&frame);
        if self.fw.cong.rp_on(prio) {
            let not_ect = frame_ecn(&frame) == Some(Ecn::NotEct);
            if not_ect && packet::set_ecn(&mut frame, Ecn::Ect0).is_ok() {
                self.roce.cong.stats.ect_marked += 1;
            }
        }
        let now = now_ns();
        let rp = self.fw.cong.rp;
        let c = &mut self.roce.cong;
        if let Some(l) = c.limiters.get_mut(&qpn) {
            l.advance(now, &rp);
            if l.done() {
                c.limiters.remove(&qpn);
                self.count_flows();
            }
        }
        let paced = self
            .roce
            .cong
            .limiters
            .get(&qpn)
            .is_some_and(|l| !l.may_send(now));
        let paused = self.roce_paused(prio);
        let c = &mut self.roce.cong;
        c.qp_prio.insert(qpn, prio);
        if paced || paused || c.holds(qpn) {
            if paused {
                c.stats.pfc_held += 1;
            } else {
                c.stats.paced += 1;
            }
            c.waiting.push_back(Waiting {
                qpn: Some(qpn),
                prio,
                frame,
            });
            return;
        }
        self.roce_depart(qpn, frame, now);
    }

    /// A paced request packet leaves now.
    fn roce_depart(&mut self, qpn: u32, frame: Vec<u8>, now: u64) {
        let rp = self.fw.cong.rp;
        if let Some(l) = self.roce.cong.limiters.get_mut(&qpn) {
            l.on_sent(frame.len(), now, &rp);
        }
        // Not local: roce_send_request looped those back.
        self.roce_transmit_remote(frame);
    }

    /// A RoCE frame on its way to the wire: `Some` to send it now, `None` when a pause of its
    /// priority (or earlier frames of that priority waiting) keeps it back.
    pub(super) fn roce_pfc_gate(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        if !self.port.any_paused() && self.roce.cong.waiting.is_empty() {
            return Some(frame);
        }
        let prio = self.frame_prio(&frame);
        let behind = self
            .roce
            .cong
            .waiting
            .iter()
            .any(|w| w.qpn.is_none() && w.prio == prio);
        if !behind && !self.roce_paused(prio) {
            return Some(frame);
        }
        let c = &mut self.roce.cong;
        c.stats.pfc_held += 1;
        c.waiting.push_back(Waiting {
            qpn: None,
            prio,
            frame,
        });
        None
    }

    /// Sends the waiting frames that may leave at `now`, in order per QP (per priority for
    /// the others); the QPs whose packets left restart their ACK timers.
    pub fn roce_gate_release(&mut self, now: u64) {
        if self.roce.cong.waiting.is_empty() {
            return;
        }
        let rp = self.fw.cong.rp;
        let waiting = std::mem::take(&mut self.roce.cong.waiting);
        let mut blocked_qp = BTreeSet::new();
        let mut blocked_prio = BTreeSet::new();
        let mut departed = BTreeSet::new();
        let mut rest = VecDeque::new();
        for w in waiting {
            let held = match w.qpn {
                Some(q) => blocked_qp.contains(&q),
                None => blocked_prio.contains(&w.prio),
            };
            if held {
                rest.push_back(w);
                continue;
            }
            if let Some(q) = w.qpn {
                if self.roce.qps.get(&q).is_none_or(|e| e.error) {
                    self.roce.cong.stats.dropped += 1;
                    continue;
                }
            }
            let paced = w.qpn.and_then(|q| self.roce.cong.limiters.get_mut(&q));
            let limited = paced.is_some_and(|l| {
                l.advance(now, &rp);
                !l.may_send(now)
            });
            if limited || self.roce_paused(w.prio) {
                match w.qpn {
                    Some(q) => blocked_qp.insert(q),
                    None => blocked_prio.insert(w.prio),
                };
                rest.push_back(w);
                continue;
            }
            match w.qpn {
                Some(q) => {
                    departed.insert(q);
                    self.roce_depart(q, w.frame, now);
                }
                None => self.roce_transmit(w.frame),
            }
        }
        // Frames queued while these left (none: transmit does not queue when not paused)
        // stay behind the ones that still wait.
        rest.append(&mut self.roce.cong.waiting);
        self.roce.cong.waiting = rest;
        for q in departed {
            if let Some(ReqSide::Rc(r)) = self.roce.qps.get_mut(&q).and_then(|e| e.req.as_mut()) {
                r.departed(now);
            }
        }
    }

    /// Runs the limiters to `now`: those back at the highest rate, or of QPs gone, end.
    pub(super) fn roce_limiters_tick(&mut self, now: u64) {
        let rp = self.fw.cong.rp;
        let qps = &self.roce.qps;
        self.roce.cong.limiters.retain(|q, l| {
            l.advance(now, &rp);
            qps.contains_key(q) && !l.done()
        });
        self.roce.cong.notifier.retain(|q| qps.contains_key(&q));
        self.roce.cong.qp_prio.retain(|q, _| qps.contains_key(q));
        self.count_flows();
    }

    /// Congestion handling of a received RoCE packet `p` (frame `frame`) at `now`; true when
    /// it was a CNP (consumed here).
    pub(super) fn roce_congestion_rx(&mut self, frame: &[u8], p: &Packet<'_>, now: u64) -> bool {
        let op = p.bth.opcode;
        if op == Opcode::Cnp {
            if p.ip.is_v1() {
                // CNPs are RoCEv2's (Annex A17.9): one in RoCE v1 framing is not a congestion
                // notification for the reaction point.
                self.fw.cong.stats.rp_cnp_ignored += 1;
                return true;
            }
            let qpn = p.bth.dest_qp;
            let prio = match self.roce.cong.qp_prio.get(&qpn) {
                Some(&p) => p,
                None => self.frame_prio(frame),
            };
            self.roce_cnp(qpn, prio, now);
            return true;
        }
        if p.ip.ecn() != Ecn::Ce || !cnp::is_request(op) {
            return false;
        }
        let prio = self.frame_prio(frame);
        let np = self.fw.cong.np;
        if !self.fw.cong.np_on(prio) {
            return false;
        }
        self.fw.cong.stats.np_ecn_marked_roce_packets += 1;
        let qpn = p.bth.dest_qp;
        let remote = self
            .roce
            .qps
            .get(&qpn)
            .and_then(|q| q.path)
            .map(|path| path.remote_qpn);
        let Some(dest) = cnp::cnp_target(p, remote) else {
            return false;
        };
        let gap = u64::from(np.min_time_between_cnps_us) * 1000;
        if !self.roce.cong.notifier.admit(qpn, now, gap) {
            return false;
        }
        let cnp_prio = if np.cnp_prio_mode {
            prio
        } else {
            np.cnp_802p_prio
        };
        match cnp::cnp_frame(p, dest, np.cnp_dscp, cnp_prio) {
            Ok(f) => {
                self.fw.cong.stats.np_cnp_sent += 1;
                self.roce_transmit(f);
            }
            Err(e) => log::warn!("CNP for QP {qpn:#x} not built: {e}"),
        }
        false
    }

    /// A CNP for local QP `qpn`, whose requests have priority `prio`.
    fn roce_cnp(&mut self, qpn: u32, prio: u8, now: u64) {
        let limited = self
            .roce
            .qps
            .get(&qpn)
            .is_some_and(|q| q.req.is_some() && !q.error);
        if !self.fw.cong.rp_on(prio) || !limited {
            self.fw.cong.stats.rp_cnp_ignored += 1;
            return;
        }
        self.fw.cong.stats.rp_cnp_handled += 1;
        let rp = self.fw.cong.rp;
        let line = self.line_kbps();
        match self.roce.cong.limiters.get_mut(&qpn) {
            Some(l) => {
                l.on_cnp(now, &rp);
            }
            None => {
                self.roce
                    .cong
                    .limiters
                    .insert(qpn, RateLimiter::first_cnp(now, &rp, line));
                self.fw.cong.stats.sum_flows = self.fw.cong.stats.sum_flows.saturating_add(1);
            }
        }
        self.count_flows();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roce::headers::{Bth, Opcode};
    use crate::roce::packet::{Ethernet, Ip, Ipv4, Ipv6, UdpChecksum};

    #[test]
    fn frame_ecn_reads_ipv4_ipv6_tagged_or_not() {
        let build = |ip, vlan_tci| {
            packet::build(&Packet {
                eth: Ethernet {
                    vlan_tci,
                    ..Default::default()
                },
                ip,
                src_port: 0xc000,
                udp_checksum: UdpChecksum::Zero,
                bth: Bth::new(Opcode::RcSendOnly, 1, 1),
                ext: Default::default(),
                payload: &[],
            })
            .unwrap()
        };
        for ecn in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            let v4 = Ip::V4(Ipv4 {
                dscp: 0x3f,
                ecn,
                ttl: 1,
                ..Default::default()
            });
            let v6 = Ip::V6(Ipv6 {
                dscp: 0x3f,
                ecn,
                flow_label: 0xf_ffff,
                hop_limit: 1,
                ..Default::default()
            });
            for ip in [v4, v6] {
                for tag in [None, Some(0xe001)] {
                    assert_eq!(frame_ecn(&build(ip, tag)), Some(ecn), "{ip:?} {tag:?}");
                }
            }
        }
        assert_eq!(frame_ecn(&[0u8; 10]), None);
    }
}
