//! The DCQCN notification point: which received packets are answered with a congestion
//! notification packet (CNP), how often, and the CNP itself (RoCEv2 Annex A17.9.3).
//!
//! - A request (RC, UC or UD; not a response, an ACK or a CNP) whose IP header carries ECN
//!   CE is answered — on a priority with the NP enabled — with a CNP to the QP that sent it:
//!   the connected QP's remote QP, or the DETH source QP of a UD request (none for
//!   multicast). At most one CNP per local QP leaves per `min_time_between_cnps`
//!   ([`Notifier::admit`]); the marked packets are counted either way.
//! - The CNP: BTH opcode 0x81 with BECN set, P_Key 0xffff, PSN 0, 16 reserved bytes, ICRC;
//!   addressed back along the marked packet (MACs and IP addresses swapped, its VLAN and UDP
//!   source port kept), DSCP `cnp_dscp`, ECN-capable (ECT(0), as NVIDIA's own CNP generator
//!   in libconntrack-cm sends them: a congested switch marks a CNP rather than dropping it),
//!   802.1p priority (a tagged packet's PCP) from `cnp_prio_mode`: the marked packet's
//!   priority, or `cnp_802p_prio`. A CE mark on a CNP is never answered.
//!
//! Pure: time is passed in.

use std::collections::BTreeMap;

use super::error::WireError;
use super::headers::{Bth, ExtHeaders, Opcode, Service};
use super::packet::{self, Ecn, Ethernet, Ip, Packet};
use super::responder::is_rc_request;

/// The destination QP of multicast UD packets (never answered).
const MULTICAST_QPN: u32 = 0xff_ffff;
/// Hop limit of CNPs.
const CNP_HOP_LIMIT: u8 = 64;

/// Whether `op` is a request a notification point answers (not a response, ACK or CNP).
pub fn is_request(op: Opcode) -> bool {
    match op.info().service {
        Service::Rc => is_rc_request(op),
        Service::Uc | Service::Ud => true,
        _ => false,
    }
}

/// The QP a CNP for the marked packet `p` goes to: `remote_qpn` (the connected QP's peer)
/// or the DETH source QP; `None` for multicast.
pub fn cnp_target(p: &Packet<'_>, remote_qpn: Option<u32>) -> Option<u32> {
    if p.bth.opcode.info().service == Service::Ud {
        if p.bth.dest_qp == MULTICAST_QPN {
            return None;
        }
        return p.ext.deth.map(|d| d.src_qp);
    }
    remote_qpn
}

/// When each local QP last caused a CNP.
#[derive(Clone, Debug, Default)]
pub struct Notifier {
    last: BTreeMap<u32, u64>,
}

impl Notifier {
    /// Whether a CE-marked packet for QP `qpn` at `now` may be answered with a CNP when CNPs
    /// must be `min_gap` ns apart; records it when it may.
    pub fn admit(&mut self, qpn: u32, now: u64, min_gap: u64) -> bool {
        if self
            .last
            .get(&qpn)
            .is_some_and(|&t| now.saturating_sub(t) < min_gap)
        {
            return false;
        }
        self.last.insert(qpn, now);
        true
    }

    /// Forgets the QPs `keep` rejects (destroyed or reset).
    pub fn retain(&mut self, keep: impl Fn(u32) -> bool) {
        self.last.retain(|q, _| keep(*q));
    }
}

/// The CNP answering the marked packet `rx` (received as parsed), to QP `dest_qp`, with
/// DSCP `dscp` and 802.1p priority `prio`. CNPs are RoCEv2's: a RoCE v1 packet (which has no
/// ECN to be marked) gets none ([`WireError::NoEcn`]).
pub fn cnp_frame(rx: &Packet<'_>, dest_qp: u32, dscp: u8, prio: u8) -> Result<Vec<u8>, WireError> {
    let eth = Ethernet {
        dst: rx.eth.src,
        src: rx.eth.dst,
        vlan_tci: rx
            .eth
            .vlan_tci
            .map(|tci| (u16::from(prio & 7) << 13) | (tci & 0x1fff)),
    };
    let ip = match rx.ip {
        Ip::V4(h) => Ip::V4(packet::Ipv4 {
            src: h.dst,
            dst: h.src,
            dscp: dscp & 0x3f,
            ecn: Ecn::Ect0,
            ttl: CNP_HOP_LIMIT,
            id: 0,
            dont_fragment: true,
        }),
        Ip::V6(h) => Ip::V6(packet::Ipv6 {
            src: h.dst,
            dst: h.src,
            dscp: dscp & 0x3f,
            ecn: Ecn::Ect0,
            flow_label: 0,
            hop_limit: CNP_HOP_LIMIT,
        }),
        Ip::Grh(_) => return Err(WireError::NoEcn),
    };
    packet::build(&Packet {
        eth,
        ip,
        src_port: rx.src_port,
        udp_checksum: packet::UdpChecksum::Zero,
        bth: Bth {
            becn: true,
            ..Bth::new(Opcode::Cnp, dest_qp, 0)
        },
        ext: ExtHeaders::default(),
        payload: &[],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roce::headers::Deth;
    use crate::roce::packet::{Ipv4, Ipv6};

    fn request(ip: Ip, vlan: Option<u16>, opcode: Opcode, ext: ExtHeaders) -> Vec<u8> {
        packet::build(&Packet {
            eth: Ethernet {
                dst: [2, 0, 0, 0, 0, 2],
                src: [2, 0, 0, 0, 0, 1],
                vlan_tci: vlan,
            },
            ip,
            src_port: 0xc123,
            udp_checksum: packet::UdpChecksum::Zero,
            bth: Bth::new(opcode, 0x42, 7),
            ext,
            payload: &[1, 2, 3, 4],
        })
        .unwrap()
    }

    fn v4() -> Ip {
        Ip::V4(Ipv4 {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
            dscp: 26,
            ecn: Ecn::Ce,
            ttl: 64,
            id: 9,
            dont_fragment: true,
        })
    }

    #[test]
    fn cnp_goes_back_along_the_marked_packet() {
        let f = request(
            v4(),
            Some(0x2005),
            Opcode::RcSendOnly,
            ExtHeaders::default(),
        );
        let rx = packet::parse(&f).unwrap();
        let c = cnp_frame(&rx, 0x1234, 48, 6).unwrap();
        let p = packet::parse(&c).unwrap();
        assert_eq!((p.eth.dst, p.eth.src), (rx.eth.src, rx.eth.dst));
        assert_eq!(p.eth.vlan_tci, Some(6 << 13 | 5), "VLAN kept, PCP = prio");
        let Ip::V4(h) = p.ip else { panic!("IPv4") };
        assert_eq!((h.src, h.dst), ([10, 0, 0, 2], [10, 0, 0, 1]));
        assert_eq!((h.dscp, h.ecn), (48, Ecn::Ect0));
        assert_eq!(p.bth.opcode, Opcode::Cnp);
        assert_eq!((p.bth.dest_qp, p.bth.psn, p.bth.pkey), (0x1234, 0, 0xffff));
        assert!(p.bth.becn);
        assert_eq!(p.src_port, 0xc123);
        assert!(p.payload.is_empty());
        // BTH 12 + 16 reserved + ICRC 4 after Ethernet + tag + IPv4 + UDP.
        assert_eq!(c.len(), 18 + 20 + 8 + 12 + 16 + 4);
        // The BTH bytes on the wire: opcode 0x81, P_Key, the BECN bit, destination QP.
        let bth = &c[18 + 20 + 8..];
        assert_eq!(&bth[..8], &[0x81, 0, 0xff, 0xff, 0x40, 0, 0x12, 0x34]);
    }

    #[test]
    fn ipv6_cnp_and_ud_targets() {
        let ip = Ip::V6(Ipv6 {
            src: [0xfd; 16],
            dst: [0xfe; 16],
            dscp: 0,
            ecn: Ecn::Ce,
            flow_label: 5,
            hop_limit: 3,
        });
        let ext = ExtHeaders {
            deth: Some(Deth {
                qkey: 0x1111,
                src_qp: 0x77,
            }),
            ..Default::default()
        };
        let f = request(ip, None, Opcode::UdSendOnly, ext);
        let rx = packet::parse(&f).unwrap();
        assert_eq!(cnp_target(&rx, Some(9)), Some(0x77), "UD: the DETH source");
        let c = packet::parse(&cnp_frame(&rx, 0x77, 10, 3).unwrap())
            .unwrap()
            .ip;
        let Ip::V6(h) = c else { panic!("IPv6") };
        assert_eq!((h.src, h.dst, h.dscp), ([0xfe; 16], [0xfd; 16], 10));
        let f = request(v4(), None, Opcode::RcSendOnly, ExtHeaders::default());
        assert_eq!(cnp_target(&packet::parse(&f).unwrap(), Some(9)), Some(9));
    }

    #[test]
    fn only_requests_are_answered() {
        assert!(is_request(Opcode::RcSendOnly));
        assert!(is_request(Opcode::RcRdmaReadRequest));
        assert!(is_request(Opcode::UcRdmaWriteOnly));
        assert!(is_request(Opcode::UdSendOnly));
        assert!(!is_request(Opcode::RcAcknowledge));
        assert!(!is_request(Opcode::RcRdmaReadResponseOnly));
        assert!(!is_request(Opcode::Cnp));
    }

    #[test]
    fn at_most_one_cnp_per_qp_per_min_time() {
        let mut n = Notifier::default();
        let gap = 4_000;
        // CE-marked packets every µs for 20 µs on QP 5, and one on QP 6.
        let sent: Vec<u64> = (0..20u64)
            .map(|t| t * 1000)
            .filter(|&t| n.admit(5, t, gap))
            .collect();
        assert_eq!(sent, [0, 4_000, 8_000, 12_000, 16_000]);
        assert!(n.admit(6, 1_000, gap), "per QP");
        assert!(
            n.admit(5, 100_000, 0) && n.admit(5, 100_000, 0),
            "0: every one"
        );
        n.retain(|q| q != 5);
        assert!(n.admit(5, 100_001, gap), "forgotten");
    }
}
