//! Addressing of a connected QP's packets: the frame headers its primary address path and
//! the RoCE address (GID) table give ([`Path`]), and the early look at a received frame that
//! tells whether it is RoCE (v2, or v1) for one of the port's addresses ([`peek_dst_gid`]).
//!
//! From the QP context's primary address path (`ads`), as mlx5_ib's `mlx5_set_path` fills it:
//! `rmac` (destination MAC), `rgid_rip` (destination GID: IPv6, or IPv4-mapped), `hop_limit`,
//! `tclass` (or `dscp` when set), `flow_label`, `udp_sport` (0: a per-QP hash), `eth_prio`;
//! `src_addr_index` selects the GID table entry that gives the source address, source MAC and
//! VLAN. The BTH carries the context's `remote_qpn` and P_Key 0xffff.
//!
//! The entry's version picks the framing ([`network_header`]): a RoCE v2 entry sends UDP/IP
//! (IPv4 when both GIDs are IPv4-mapped, IPv6 when neither is); a RoCE v1 entry sends
//! EtherType 0x8915 with an IB GRH — SGID the entry's GID, DGID `rgid_rip` (any two GIDs:
//! link-local `fe80::` EUI-64 or IPv4-mapped alike), traffic class `tclass` as given (no ECN
//! in v1), flow label and hop limit as for IPv6 — and no UDP source port.

use std::collections::BTreeMap;

use cx4_hw::qp::Qpc;

use crate::fw::GidEntry;

use super::error::WireError;
use super::headers::{Bth, ExtHeaders, TransportHeaders};
use super::packet::{self, Ecn, Ethernet, Grh, Ip, Ipv4, Ipv6, Packet, UdpChecksum};

/// The first UDP source port of the per-QP hash (the dynamic range, as rxe and the card use).
const UDP_SPORT_BASE: u16 = 0xc000;
/// The hop limit when the path (or a UD address vector) gives none.
const DEFAULT_HOP_LIMIT: u8 = 64;

/// The UDP source port of packets from `qpn` to `remote_qpn`: `given` unless 0, else a hash
/// of the pair in the dynamic range (so flows spread over ECMP paths, stable per QP pair).
pub(super) fn udp_sport(given: u16, qpn: u32, remote_qpn: u32) -> u16 {
    match given {
        0 => UDP_SPORT_BASE | ((qpn ^ remote_qpn ^ (qpn >> 14)) & 0x3fff) as u16,
        s => s,
    }
}

/// The hop limit (TTL): `given` unless 0, else the default.
pub(super) fn hop_limit(given: u8) -> u8 {
    match given {
        0 => DEFAULT_HOP_LIMIT,
        h => h,
    }
}

/// Where a QP's packets go and come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Path {
    /// The Ethernet header (source MAC of the GID entry, the path's `rmac`, the VLAN tag).
    pub eth: Ethernet,
    /// The IP header template (addresses, DSCP, ECN, TTL / hop limit, flow label), or the
    /// GRH of a RoCE v1 path.
    pub ip: Ip,
    /// The UDP source port (0 on a RoCE v1 path).
    pub udp_sport: u16,
    /// The remote QP (BTH destination).
    pub remote_qpn: u32,
    /// On an InfiniBand port: the LRH addressing that replaces `eth` and `ip`
    /// (`ib_ud.rs`, [`super::ib_ud::ib_path`]).
    pub ib: Option<super::ib_wire::IbPath>,
}

/// The IPv4 address of an IPv4-mapped GID.
pub(super) fn v4(g: &[u8; 16]) -> Option<[u8; 4]> {
    (g[..10].iter().all(|&b| b == 0) && g[10] == 0xff && g[11] == 0xff)
        .then(|| [g[12], g[13], g[14], g[15]])
}

/// The network header of packets from GID entry `g` to `dgid` with traffic class `tclass`
/// (its DSCP `dscp` and ECN bits for RoCEv2), `flow_label` and hop limit `hop`: the IB GRH
/// for a RoCE v1 entry; else IPv4 (both GIDs IPv4-mapped) or IPv6 (neither). Fails on GIDs of
/// different IP versions (RoCEv2 only).
pub(super) fn network_header(
    g: &GidEntry,
    dgid: [u8; 16],
    tclass: u8,
    dscp: u8,
    flow_label: u32,
    hop: u8,
) -> Result<Ip, String> {
    if !g.is_v2() {
        return Ok(Ip::Grh(Grh {
            sgid: g.gid,
            dgid,
            traffic_class: tclass,
            flow_label: flow_label & 0xf_ffff,
            hop_limit: hop,
        }));
    }
    let ecn = Ecn::from_tos(tclass);
    match (v4(&g.gid), v4(&dgid)) {
        (Some(src), Some(dst)) => Ok(Ip::V4(Ipv4 {
            src,
            dst,
            dscp,
            ecn,
            ttl: hop,
            id: 0,
            dont_fragment: true,
        })),
        (None, None) => Ok(Ip::V6(Ipv6 {
            src: g.gid,
            dst: dgid,
            dscp,
            ecn,
            flow_label: flow_label & 0xf_ffff,
            hop_limit: hop,
        })),
        _ => Err("source and destination GIDs of different IP versions".into()),
    }
}

impl Path {
    /// The path of QP `qpn` with context `ctx`; fails when its source GID index names no
    /// entry of the RoCE address table (or RoCEv2 GIDs of different IP versions).
    pub fn from_qpc(qpn: u32, ctx: &Qpc, gids: &BTreeMap<u16, GidEntry>) -> Result<Path, String> {
        let p = ctx.primary_address_path();
        let idx = p.src_addr_index() as u16;
        let g = gids
            .get(&idx)
            .ok_or_else(|| format!("source GID index {idx} not in the RoCE address table"))?;
        let mut dgid = [0u8; 16];
        dgid.copy_from_slice(p.rgid_rip());
        let rmac_hi = (p.rmac_47_32() as u16).to_be_bytes();
        let rmac_lo = p.rmac_31_0().to_be_bytes();
        let dst = [
            rmac_hi[0], rmac_hi[1], rmac_lo[0], rmac_lo[1], rmac_lo[2], rmac_lo[3],
        ];
        let tclass = p.tclass() as u8;
        let dscp = if p.dscp() != 0 {
            p.dscp() as u8
        } else {
            tclass >> 2
        };
        let hop = hop_limit(p.hop_limit() as u8);
        let prio = p.eth_prio() as u16;
        let vlan_tci = g.vlan.then_some((prio << 13) | (g.vlan_id & 0xfff));
        let ip = network_header(g, dgid, tclass, dscp, p.flow_label(), hop)?;
        let remote_qpn = ctx.remote_qpn();
        let udp_sport = if ip.is_v1() {
            0
        } else {
            udp_sport(p.udp_sport() as u16, qpn, remote_qpn)
        };
        Ok(Path {
            eth: Ethernet {
                dst,
                src: g.mac,
                vlan_tci,
            },
            ip,
            udp_sport,
            remote_qpn,
            ib: None,
        })
    }

    /// Whether packets go over IPv4.
    pub fn is_ipv4(&self) -> bool {
        matches!(self.ip, Ip::V4(_))
    }

    /// The frame of a packet with `bth` (its destination QP and P_Key set here), `ext` and
    /// `payload`.
    pub fn frame(&self, bth: Bth, ext: ExtHeaders, payload: &[u8]) -> Result<Vec<u8>, WireError> {
        self.frame_with(bth, ext, payload.len(), false, |d| {
            d.copy_from_slice(payload)
        })
    }

    /// [`Path::frame`] with a payload of `len` bytes that `fill` writes in place
    /// ([`packet::build_with`]; without its ICRC if the frame is `looped` back inside the
    /// card).
    pub fn frame_with(
        &self,
        bth: Bth,
        ext: ExtHeaders,
        len: usize,
        looped: bool,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<Vec<u8>, WireError> {
        if let Some(ib) = &self.ib {
            let mut payload = vec![0u8; len];
            fill(&mut payload);
            let bth = Bth {
                pkey: ib.pkey,
                ..self.bth(bth)
            };
            return super::ib_wire::build(
                ib.src_mac,
                ib.lrh,
                ib.grh.as_ref(),
                TransportHeaders { bth, ext },
                &payload,
            );
        }
        let p = Packet {
            eth: self.eth,
            ip: self.ip,
            src_port: self.udp_sport,
            udp_checksum: UdpChecksum::Zero,
            bth: self.bth(bth),
            ext,
            payload: &[],
        };
        packet::build_with(&p, len, looped, fill)
    }

    /// `bth` as the path sends it: to the remote QP, with the default P_Key.
    pub fn bth(&self, bth: Bth) -> Bth {
        Bth {
            dest_qp: self.remote_qpn,
            pkey: super::headers::DEFAULT_PKEY,
            ..bth
        }
    }
}

/// The destination address of a frame that is IPv4 or IPv6 UDP to port 4791 (RoCEv2), as a
/// GID (IPv4-mapped for IPv4), or the DGID of a RoCE v1 frame (EtherType 0x8915 whose GRH
/// names the BTH as next header), without checking anything else; `None` for any other frame.
pub fn peek_dst_gid(frame: &[u8]) -> Option<[u8; 16]> {
    let be16 = |at: usize| -> Option<u16> {
        Some(u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]))
    };
    let mut l3 = packet::ETH_HLEN;
    let mut et = be16(12)?;
    if et == packet::ETHERTYPE_VLAN {
        et = be16(16)?;
        l3 += packet::VLAN_HLEN;
    }
    let mut gid = [0u8; 16];
    let l4 = match et {
        packet::ETHERTYPE_IPV4 => {
            let ihl = usize::from(*frame.get(l3)? & 0xf) * 4;
            if *frame.get(l3 + 9)? != packet::IPPROTO_UDP || ihl < 20 {
                return None;
            }
            gid[10] = 0xff;
            gid[11] = 0xff;
            gid[12..].copy_from_slice(frame.get(l3 + 16..l3 + 20)?);
            l3 + ihl
        }
        packet::ETHERTYPE_IPV6 => {
            if *frame.get(l3 + 6)? != packet::IPPROTO_UDP {
                return None;
            }
            gid.copy_from_slice(frame.get(l3 + 24..l3 + 40)?);
            l3 + 40
        }
        packet::ETHERTYPE_ROCE_V1 => {
            if *frame.get(l3 + 6)? != packet::GRH_NEXT_HEADER_BTH {
                return None;
            }
            gid.copy_from_slice(frame.get(l3 + 24..l3 + 40)?);
            return Some(gid);
        }
        _ => return None,
    };
    (be16(l4 + 2)? == packet::ROCEV2_PORT).then_some(gid)
}
