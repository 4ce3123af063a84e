//! The `roce-wire` fault (`crate::faults`): what happens to the RoCE frames a card receives
//! while it runs — dropped, one byte flipped (the ICRC check rejects them), held back behind
//! the next frame (reordered), delivered late, or (RoCEv2 requests; a RoCE v1 frame has no
//! ECN field) marked ECN CE. The held and delayed frames wait here; the
//! device asks [`WireFaults::due`] for those whose time has come (on every received RoCE frame
//! and at [`super::Roce::roce_tick`], which the wire thread runs at
//! [`WireFaults::next_release`] through `RoceEngine::deadline`).
//!
//! Time is the engine clock (`engine::now_ns`), so host tests move it with `roce_tick_at`.
//! The draws come from a xorshift generator seeded per device, so runs are reproducible.

use std::collections::VecDeque;

use super::stats::RoceStats;
use crate::{faults::RoceWire, rng::Rng};

/// How long a reordered frame waits for a next frame to pass it before it is delivered anyway.
pub const REORDER_HOLD_NS: u64 = 2_000_000;

/// The held and delayed frames and the generator of one device.
#[derive(Debug, Default)]
pub struct WireFaults {
    rng: Rng,
    /// The frame held back for reordering, and when it goes anyway (ns).
    held: Option<(u64, Vec<u8>)>,
    /// Delayed frames and their release times (ns), in arrival order.
    delayed: VecDeque<(u64, Vec<u8>)>,
}

/// The offset of the BTH in a RoCE frame (Ethernet, optional 802.1Q tag, then IPv4 or IPv6
/// and UDP, or a RoCE v1 GRH).
fn bth_offset(f: &[u8]) -> Option<usize> {
    let mut off = 12;
    let mut et = u16::from_be_bytes([*f.get(off)?, *f.get(off + 1)?]);
    if et == 0x8100 {
        off += 4;
        et = u16::from_be_bytes([*f.get(off)?, *f.get(off + 1)?]);
    }
    off += 2;
    let ip = match et {
        0x0800 => usize::from(f.get(off)? & 0xf) * 4,
        0x86dd => 40,
        0x8915 => return Some(off + 40),
        _ => return None,
    };
    Some(off + ip + 8)
}

/// Whether a frame carries a RoCE request (what the `ecn` share marks CE; responses, ACKs
/// and CNPs are left alone).
fn is_request_frame(f: &[u8]) -> bool {
    bth_offset(f)
        .and_then(|b| f.get(b))
        .and_then(|&op| super::headers::Opcode::from_u8(op).ok())
        .is_some_and(super::cnp::is_request)
}

impl WireFaults {
    /// Starts the generator again from `seed` (the device's `--seed`).
    pub fn seed(&mut self, seed: u32) {
        self.rng = Rng::new(seed.into());
    }

    /// XORs one byte from the BTH on (not its reserved byte, which the ICRC masks) with a
    /// non-zero value; false if the frame is too short to have one.
    fn flip(&mut self, f: &mut [u8]) -> bool {
        let Some(bth) = bth_offset(f).filter(|&b| b + 6 <= f.len()) else {
            return false;
        };
        let mut k = bth + self.rng.below((f.len() - bth - 1) as u64) as usize;
        if k >= bth + 4 {
            k += 1;
        }
        f[k] ^= 1 + self.rng.below(255) as u8;
        true
    }

    /// A RoCE frame received from the wire at `now` while `w` runs: the frames to deliver
    /// now, in order (none, this one, or this one then the one held back before it).
    pub fn ingress(
        &mut self,
        w: &RoceWire,
        mut frame: Vec<u8>,
        now: u64,
        stats: &mut RoceStats,
    ) -> Vec<Vec<u8>> {
        if self.rng.hit(w.drop) {
            stats.wire_dropped += 1;
            return Vec::new();
        }
        if self.rng.hit(w.flip) && self.flip(&mut frame) {
            stats.wire_flipped += 1;
        }
        if is_request_frame(&frame)
            && self.rng.hit(w.ecn)
            && super::packet::set_ecn(&mut frame, super::packet::Ecn::Ce).is_ok()
        {
            stats.wire_ce_marked += 1;
        }
        let delay = u64::from(w.delay_ms) * 1_000_000;
        let mut out = Vec::new();
        if let Some((_, held)) = self.held.take() {
            out.push(frame);
            out.push(held);
        } else if self.rng.hit(w.reorder) {
            stats.wire_reordered += 1;
            self.held = Some((now + REORDER_HOLD_NS + delay, frame));
        } else {
            out.push(frame);
        }
        if delay == 0 {
            return out;
        }
        for f in out {
            stats.wire_delayed += 1;
            self.delayed.push_back((now + delay, f));
        }
        Vec::new()
    }

    /// The held and delayed frames whose time has come at `now`, in order.
    pub fn due(&mut self, now: u64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        if self.delayed.iter().any(|(t, _)| *t <= now) {
            let (due, wait): (VecDeque<_>, VecDeque<_>) = std::mem::take(&mut self.delayed)
                .into_iter()
                .partition(|(t, _)| *t <= now);
            self.delayed = wait;
            out.extend(due.into_iter().map(|(_, f)| f));
        }
        if self.held.as_ref().is_some_and(|(t, _)| *t <= now) {
            out.extend(self.held.take().map(|(_, f)| f));
        }
        out
    }

    /// Every frame waiting (the fault ended), in order.
    pub fn take_all(&mut self) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = std::mem::take(&mut self.delayed)
            .into_iter()
            .map(|(_, f)| f)
            .collect();
        out.extend(self.held.take().map(|(_, f)| f));
        out
    }

    /// Whether no frame waits.
    pub fn is_idle(&self) -> bool {
        self.held.is_none() && self.delayed.is_empty()
    }

    /// When the next waiting frame is due (ns).
    pub fn next_release(&self) -> Option<u64> {
        self.delayed
            .iter()
            .map(|(t, _)| *t)
            .chain(self.held.as_ref().map(|(t, _)| *t))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(drop: u16, reorder: u16, flip: u16, delay_ms: u32) -> RoceWire {
        RoceWire {
            drop,
            reorder,
            flip,
            delay_ms,
            ecn: 0,
        }
    }

    #[test]
    fn draws_are_reproducible_and_near_the_share() {
        let (mut a, mut b) = (WireFaults::default(), WireFaults::default());
        a.seed(7);
        b.seed(7);
        let mut s = RoceStats::default();
        let mut n = 0;
        for i in 0..10_000u32 {
            let f = i.to_be_bytes().to_vec();
            let x = a.ingress(&w(100, 0, 0, 0), f.clone(), 0, &mut s);
            assert_eq!(
                x,
                b.ingress(&w(100, 0, 0, 0), f, 0, &mut RoceStats::default())
            );
            n += x.len();
        }
        assert_eq!(s.wire_dropped as usize, 10_000 - n);
        assert!((900..1100).contains(&s.wire_dropped), "{}", s.wire_dropped);
    }

    #[test]
    fn reorder_holds_one_frame_behind_the_next_or_until_its_timeout() {
        let mut f = WireFaults::default();
        let mut s = RoceStats::default();
        let all = w(0, 1000, 0, 0);
        assert!(f.ingress(&all, vec![1], 10, &mut s).is_empty(), "held");
        assert_eq!(f.next_release(), Some(10 + REORDER_HOLD_NS));
        assert_eq!(f.ingress(&all, vec![2], 20, &mut s), [vec![2], vec![1]]);
        assert!(f.ingress(&all, vec![3], 30, &mut s).is_empty());
        assert!(f.due(30 + REORDER_HOLD_NS - 1).is_empty());
        assert_eq!(f.due(30 + REORDER_HOLD_NS), [vec![3]]);
        assert!(f.is_idle());
        assert_eq!(s.wire_reordered, 2);
    }

    #[test]
    fn delay_releases_in_order_at_the_time() {
        let mut f = WireFaults::default();
        let mut s = RoceStats::default();
        let d = w(0, 0, 0, 5);
        assert!(f.ingress(&d, vec![1], 0, &mut s).is_empty());
        assert!(f.ingress(&d, vec![2], 1_000_000, &mut s).is_empty());
        assert_eq!(f.next_release(), Some(5_000_000));
        assert!(f.due(4_999_999).is_empty());
        assert_eq!(f.due(5_000_000), [vec![1]]);
        assert_eq!(f.take_all(), [vec![2]]);
        assert_eq!(s.wire_delayed, 2);
    }

    #[test]
    fn ecn_marks_requests_ce_and_leaves_acks_alone() {
        use crate::roce::headers::{Aeth, Bth, ExtHeaders, Opcode, Syndrome};
        use crate::roce::packet::{self, Ecn, Ethernet, Ip, Ipv4, Packet, UdpChecksum};
        let frame = |opcode, aeth| {
            packet::build(&Packet {
                eth: Ethernet::default(),
                ip: Ip::V4(Ipv4 {
                    ecn: Ecn::Ect0,
                    ttl: 64,
                    ..Default::default()
                }),
                src_port: 0xc000,
                udp_checksum: UdpChecksum::Zero,
                bth: Bth::new(opcode, 1, 2),
                ext: ExtHeaders {
                    aeth,
                    ..Default::default()
                },
                payload: &[],
            })
            .unwrap()
        };
        let ack = Some(Aeth {
            syndrome: Syndrome::Ack { credits: 0 },
            msn: 0,
        });
        let mut f = WireFaults::default();
        let mut s = RoceStats::default();
        let all = RoceWire {
            ecn: 1000,
            ..Default::default()
        };
        let out = f.ingress(&all, frame(Opcode::RcSendOnly, None), 0, &mut s);
        let p = packet::parse(&out[0]).expect("the ICRC and IPv4 checksum still hold");
        assert_eq!(p.ip.ecn(), Ecn::Ce);
        let out = f.ingress(&all, frame(Opcode::RcAcknowledge, ack), 0, &mut s);
        assert_eq!(packet::parse(&out[0]).unwrap().ip.ecn(), Ecn::Ect0);
        assert_eq!(s.wire_ce_marked, 1);
    }

    #[test]
    fn flip_changes_one_byte_from_the_bth_on_and_never_the_masked_one() {
        let mut f = WireFaults::default();
        f.seed(3);
        // Ethernet + IPv4 (IHL 5) + UDP: the BTH at 42; 12 BTH bytes, 8 payload, 4 ICRC.
        let mut frame = vec![0u8; 42 + 24];
        frame[12] = 0x08;
        frame[14] = 0x45;
        assert_eq!(bth_offset(&frame), Some(42));
        for _ in 0..2000 {
            let mut g = frame.clone();
            assert!(f.flip(&mut g));
            let diff: Vec<usize> = (0..g.len()).filter(|&i| g[i] != frame[i]).collect();
            assert_eq!(diff.len(), 1);
            assert!(diff[0] >= 42 && diff[0] != 46, "{diff:?}");
        }
        assert!(!f.flip(&mut [0u8; 20]), "no BTH");
        // RoCE v1: the BTH right after the 40-byte GRH (no UDP), tagged or not.
        let mut v1 = vec![0u8; 14 + 40 + 24];
        v1[12..14].copy_from_slice(&[0x89, 0x15]);
        assert_eq!(bth_offset(&v1), Some(54));
        let mut tagged = vec![0u8; 18 + 40 + 24];
        tagged[12..14].copy_from_slice(&[0x81, 0x00]);
        tagged[16..18].copy_from_slice(&[0x89, 0x15]);
        assert_eq!(bth_offset(&tagged), Some(58));
    }
}
