// SPDX-License-Identifier: GPL-2.0
//! ethtool flow rules (en_fs_ethtool.c): a rule as `ethtool -N flow-type` gives it, checked as
//! mlx5e checks it (`validate_flow`, with its errors), turned into the outer-header mask and
//! value of a flow table entry (`set_flow_attrs`) and a band of the ethtool table: rules
//! matching more fields first, L3/L4 rules before Ethernet ones (mlx5e's table priorities).

use cx4_hw::flow::FteMatchSetLyr24 as Headers;
use kernel::prelude::*;
use netdev::ethtool::{
    flow,
    FlowSpec,
    RX_CLS_FLOW_DISC, //
};

use crate::en::{
    ethtool::eopnotsupp,
    fs::{
        RuleMatch,
        ETHTOOL_BANDS,
        ETHTOOL_MAX_RULES,
        ETH_P_IP,
        ETH_P_IPV6,
        IPPROTO_TCP,
        IPPROTO_UDP, //
    },
    rss::TrafficType,
};

/// `ETH_RX_NFC_IP4`, the only `ip_ver` of an `IP_USER_FLOW` value.
const ETH_RX_NFC_IP4: u8 = 1;
/// `VLAN_VID_MASK`.
const VLAN_VID_MASK: u16 = 0xfff;
/// mlx5e's L3/L4 table priorities (`ETHTOOL_NUM_L3_L4_FTS`); the L2 ones follow.
const L3_L4_BANDS: u32 = 7;

/// An ethtool rule as the user set it, kept across close and open.
#[derive(Clone, Copy)]
pub(crate) struct Rule {
    /// The rule as given (read back by `ethtool -n`).
    pub(crate) spec: FlowSpec,
    /// Its RSS context (with `FLOW_RSS`; 0 is the main one).
    pub(crate) context: u32,
    /// Its place in the ethtool table.
    pub(crate) index: u32,
    /// What it matches.
    pub(crate) m: RuleMatch,
}

impl Rule {
    /// Checks `spec` as mlx5e does against `channels` queues (`validate_flow`): `ENOSPC`
    /// for a location past the table, `EINVAL` for a queue out of range, a field mlx5e
    /// cannot match or nothing to match, `EOPNOTSUPP` for another flow type.
    pub(crate) fn new(spec: &FlowSpec, context: u32, channels: u32) -> Result<Self> {
        if spec.location() >= ETHTOOL_MAX_RULES {
            return Err(ENOSPC);
        }
        if spec.ring_cookie() != RX_CLS_FLOW_DISC && spec.ring_cookie() >= channels.into() {
            return Err(EINVAL);
        }
        let ft = flow::base(spec.flow_type());
        let mut tuples = match ft {
            flow::ETHER => {
                let m = spec.ether(true);
                u32::from(m.dst != [0; 6]) + u32::from(m.src != [0; 6]) + u32::from(m.proto != 0)
            }
            flow::TCP_V4 | flow::UDP_V4 => {
                let m = spec.tcp_ip4(true);
                if m.tos != 0 {
                    return Err(EINVAL);
                }
                1 + [m.src != 0, m.dst != 0, m.psrc != 0, m.pdst != 0]
                    .iter()
                    .filter(|&&b| b)
                    .count() as u32
            }
            flow::IP_USER => {
                let m = spec.usr_ip4(true);
                if m.l4_4_bytes != 0 || m.tos != 0 || spec.usr_ip4(false).ip_ver != ETH_RX_NFC_IP4 {
                    return Err(EINVAL);
                }
                1 + [m.src != 0, m.dst != 0, m.proto != 0]
                    .iter()
                    .filter(|&&b| b)
                    .count() as u32
            }
            flow::TCP_V6 | flow::UDP_V6 | flow::IPV6_USER => {
                let m = spec.ip6(true);
                if m.tclass != 0 || m.l4_4_bytes != 0 {
                    return Err(EINVAL);
                }
                1 + [
                    m.src != [0; 16],
                    m.dst != [0; 16],
                    m.psrc != 0,
                    m.pdst != 0,
                    m.proto != 0,
                ]
                .iter()
                .filter(|&&b| b)
                .count() as u32
            }
            _ => return Err(eopnotsupp()),
        };
        if spec.flow_type() & flow::EXT != 0 {
            let (m, v) = (spec.ext(true), spec.ext(false));
            if m.vlan_etype != 0 || m.vlan_tci != VLAN_VID_MASK {
                return Err(EINVAL);
            }
            if v.vlan_tci > VLAN_VID_MASK {
                return Err(EINVAL);
            }
            tuples += 1;
        }
        if spec.flow_type() & flow::MAC_EXT != 0 && spec.ext(true).h_dest != [0; 6] {
            tuples += 1;
        }
        if tuples == 0 {
            return Err(EINVAL);
        }
        let band = if ft == flow::ETHER {
            L3_L4_BANDS + (ETHTOOL_BANDS - L3_L4_BANDS).saturating_sub(tuples)
        } else {
            L3_L4_BANDS.saturating_sub(tuples)
        };
        Ok(Self {
            spec: *spec,
            context,
            index: band * ETHTOOL_MAX_RULES + spec.location(),
            m: flow_match(spec),
        })
    }

    /// The traffic type whose TIR of an RSS context receives the rule's frames
    /// (`flow_type_to_traffic_type`); `EINVAL` for an Ethernet rule.
    pub(crate) fn traffic_type(&self) -> Result<TrafficType> {
        Ok(match flow::base(self.spec.flow_type()) {
            flow::TCP_V4 => TrafficType::Ipv4Tcp,
            flow::TCP_V6 => TrafficType::Ipv6Tcp,
            flow::UDP_V4 => TrafficType::Ipv4Udp,
            flow::UDP_V6 => TrafficType::Ipv6Udp,
            flow::IP_USER => TrafficType::Ipv4,
            flow::IPV6_USER => TrafficType::Ipv6,
            _ => return Err(EINVAL),
        })
    }

    /// Whether it delivers into an RSS context (`FLOW_RSS`).
    pub(crate) fn delivers_to_context(&self) -> bool {
        self.spec.flow_type() & flow::RSS != 0
    }
}

/// The mask and value of a valid rule (`set_flow_attrs` with `parse_*`, `set_cvlan`,
/// `set_dmac`): the value is stored masked.
fn flow_match(spec: &FlowSpec) -> RuleMatch {
    let mut r = RuleMatch::default();
    let (c, v) = (&mut r.criteria, &mut r.value);
    let ft = flow::base(spec.flow_type());
    match ft {
        flow::TCP_V4 | flow::UDP_V4 => {
            let (m, h) = (spec.tcp_ip4(true), spec.tcp_ip4(false));
            set_ip(c, v, ETH_P_IP);
            set_ip4(c, v, (m.src, m.dst), (h.src, h.dst));
            set_l4(c, v, ft == flow::UDP_V4, (m.psrc, m.pdst), (h.psrc, h.pdst));
        }
        flow::IP_USER => {
            let (m, h) = (spec.usr_ip4(true), spec.usr_ip4(false));
            set_ip(c, v, ETH_P_IP);
            set_ip4(c, v, (m.src, m.dst), (h.src, h.dst));
            c.set_ip_protocol(m.proto.into());
            v.set_ip_protocol((h.proto & m.proto).into());
        }
        flow::TCP_V6 | flow::UDP_V6 | flow::IPV6_USER => {
            let (m, h) = (spec.ip6(true), spec.ip6(false));
            set_ip(c, v, ETH_P_IPV6);
            let and = |a: [u8; 16], b: [u8; 16]| core::array::from_fn::<u8, 16, _>(|i| a[i] & b[i]);
            c.src_ipv4_src_ipv6_mut().copy_from_slice(&m.src);
            c.dst_ipv4_dst_ipv6_mut().copy_from_slice(&m.dst);
            v.src_ipv4_src_ipv6_mut()
                .copy_from_slice(&and(h.src, m.src));
            v.dst_ipv4_dst_ipv6_mut()
                .copy_from_slice(&and(h.dst, m.dst));
            if ft == flow::IPV6_USER {
                c.set_ip_protocol(m.proto.into());
                v.set_ip_protocol((h.proto & m.proto).into());
            } else {
                set_l4(c, v, ft == flow::UDP_V6, (m.psrc, m.pdst), (h.psrc, h.pdst));
            }
        }
        _ => {
            // `ETHER_FLOW` (the only other type `Rule::new` lets through).
            let (m, h) = (spec.ether(true), spec.ether(false));
            set_mac(c, v, m.dst, h.dst, true);
            set_mac(c, v, m.src, h.src, false);
            c.set_ethertype(m.proto.into());
            v.set_ethertype((h.proto & m.proto).into());
        }
    }
    if spec.flow_type() & flow::EXT != 0 && spec.ext(true).vlan_tci & VLAN_VID_MASK != 0 {
        c.set_cvlan_tag(1);
        v.set_cvlan_tag(1);
        c.set_first_vid(VLAN_VID_MASK.into());
        v.set_first_vid((spec.ext(false).vlan_tci & VLAN_VID_MASK).into());
    }
    let (m, h) = (spec.ext(true), spec.ext(false));
    if spec.flow_type() & flow::MAC_EXT != 0 && m.h_dest != [0; 6] {
        set_mac(c, v, m.h_dest, h.h_dest, true);
    }
    r
}

/// IP of `ethertype` (`set_ip4`/`set_ip6`' ethertype match).
fn set_ip(c: &mut Headers, v: &mut Headers, ethertype: u32) {
    c.set_ethertype(0xffff);
    v.set_ethertype(ethertype);
}

/// IPv4 source and destination masks `m` and values `h` (`set_ip4`); the address sits in
/// the last 4 of the 16 bytes (`ipv4_layout`).
fn set_ip4(c: &mut Headers, v: &mut Headers, m: (u32, u32), h: (u32, u32)) {
    c.src_ipv4_src_ipv6_mut()[12..].copy_from_slice(&m.0.to_be_bytes());
    c.dst_ipv4_dst_ipv6_mut()[12..].copy_from_slice(&m.1.to_be_bytes());
    v.src_ipv4_src_ipv6_mut()[12..].copy_from_slice(&(h.0 & m.0).to_be_bytes());
    v.dst_ipv4_dst_ipv6_mut()[12..].copy_from_slice(&(h.1 & m.1).to_be_bytes());
}

/// TCP or UDP with source and destination port masks `m` and values `h` (`set_tcp`,
/// `set_udp`).
fn set_l4(c: &mut Headers, v: &mut Headers, udp: bool, m: (u16, u16), h: (u16, u16)) {
    c.set_ip_protocol(0xff);
    v.set_ip_protocol(if udp { IPPROTO_UDP } else { IPPROTO_TCP });
    let (ms, md) = (m.0.into(), m.1.into());
    let (hs, hd) = ((h.0 & m.0).into(), (h.1 & m.1).into());
    if udp {
        c.set_udp_sport(ms);
        c.set_udp_dport(md);
        v.set_udp_sport(hs);
        v.set_udp_dport(hd);
    } else {
        c.set_tcp_sport(ms);
        c.set_tcp_dport(md);
        v.set_tcp_sport(hs);
        v.set_tcp_dport(hd);
    }
}

/// Sets a destination (`dst`) or source MAC's mask and masked value.
fn set_mac(c: &mut Headers, v: &mut Headers, m: [u8; 6], h: [u8; 6], dst: bool) {
    let h: [u8; 6] = core::array::from_fn(|i| h[i] & m[i]);
    let hi = |a: [u8; 6]| u32::from_be_bytes([a[0], a[1], a[2], a[3]]);
    let lo = |a: [u8; 6]| u32::from_be_bytes([0, 0, a[4], a[5]]);
    if dst {
        c.set_dmac_47_16(hi(m));
        c.set_dmac_15_0(lo(m));
        v.set_dmac_47_16(hi(h));
        v.set_dmac_15_0(lo(h));
    } else {
        c.set_smac_47_16(hi(m));
        c.set_smac_15_0(lo(m));
        v.set_smac_47_16(hi(h));
        v.set_smac_15_0(lo(h));
    }
}
