// SPDX-License-Identifier: GPL-2.0
//! Steering rules of processes (`ibv_create_flow`, uverbs `create_flow`): the attributes
//! ([`FlowAttr`], `struct ib_flow_attr`) with their specs decoded from the packed
//! `union ib_flow_spec` list uverbs built ([`FlowSpec`]); the rule object is
//! [`crate::Flow`] (object.rs).

use kernel::prelude::*;

/// `IB_FLOW_ATTR_NORMAL`: a rule matching its specs (the other types are default and
/// sniffer rules).
pub const FLOW_ATTR_NORMAL: u32 = ksys::ib_flow_attr_type_IB_FLOW_ATTR_NORMAL;
/// `IB_FLOW_ATTR_FLAGS_DONT_TRAP`: a matching frame also goes on to later rules.
pub const FLOW_ATTR_FLAGS_DONT_TRAP: u32 = ksys::ib_flow_flags_IB_FLOW_ATTR_FLAGS_DONT_TRAP;

/// `IB_FLOW_ATTR_FLAGS_EGRESS`: a rule on sent frames.
pub const FLOW_ATTR_FLAGS_EGRESS: u32 = ksys::ib_flow_flags_IB_FLOW_ATTR_FLAGS_EGRESS;

/// An Ethernet header match (`struct ib_flow_eth_filter`, fields in network order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EthFilter {
    /// Destination MAC.
    pub dst_mac: [u8; 6],
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// Ethertype.
    pub ether_type: u16,
    /// VLAN tag (TCI).
    pub vlan_tag: u16,
}

/// An IPv4 header match (`struct ib_flow_ipv4_filter`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ipv4Filter {
    /// Source address.
    pub src_ip: [u8; 4],
    /// Destination address.
    pub dst_ip: [u8; 4],
    /// Protocol.
    pub proto: u8,
    /// Type of service.
    pub tos: u8,
    /// Time to live.
    pub ttl: u8,
    /// Flags (the fragment bits).
    pub flags: u8,
}

/// An IPv6 header match (`struct ib_flow_ipv6_filter`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ipv6Filter {
    /// Source address.
    pub src_ip: [u8; 16],
    /// Destination address.
    pub dst_ip: [u8; 16],
    /// Flow label.
    pub flow_label: u32,
    /// Next header.
    pub next_hdr: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Hop limit.
    pub hop_limit: u8,
}

/// A TCP or UDP header match (`struct ib_flow_tcp_udp_filter`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct L4Filter {
    /// Destination port.
    pub dst_port: u16,
    /// Source port.
    pub src_port: u16,
}

/// One spec of a rule: a header match (value and mask) or an action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowSpec {
    /// `IB_FLOW_SPEC_ETH`.
    Eth(EthFilter, EthFilter),
    /// `IB_FLOW_SPEC_IPV4`.
    Ipv4(Ipv4Filter, Ipv4Filter),
    /// `IB_FLOW_SPEC_IPV6`.
    Ipv6(Ipv6Filter, Ipv6Filter),
    /// `IB_FLOW_SPEC_TCP`.
    Tcp(L4Filter, L4Filter),
    /// `IB_FLOW_SPEC_UDP`.
    Udp(L4Filter, L4Filter),
    /// `IB_FLOW_SPEC_ACTION_TAG`: the tag the rule's frames carry in their CQEs.
    Tag(u32),
    /// `IB_FLOW_SPEC_ACTION_DROP`: the rule's frames are dropped.
    Drop,
    /// Any other (IB, tunnels, ESP, GRE, MPLS, inner headers, counters, handles): the type.
    Other(u32),
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn arr<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0; N];
    a.copy_from_slice(&b[at..at + N]);
    a
}

// The filters as the C structs lay them out (helpers.c copies them as bytes).
fn eth(b: &[u8; 40]) -> EthFilter {
    EthFilter {
        dst_mac: arr(b, 0),
        src_mac: arr(b, 6),
        ether_type: be16(b, 12),
        vlan_tag: be16(b, 14),
    }
}

fn ipv4(b: &[u8; 40]) -> Ipv4Filter {
    Ipv4Filter {
        src_ip: arr(b, 0),
        dst_ip: arr(b, 4),
        proto: b[8],
        tos: b[9],
        ttl: b[10],
        flags: b[11],
    }
}

fn ipv6(b: &[u8; 40]) -> Ipv6Filter {
    Ipv6Filter {
        src_ip: arr(b, 0),
        dst_ip: arr(b, 16),
        flow_label: be32(b, 32),
        next_hdr: b[36],
        traffic_class: b[37],
        hop_limit: b[38],
    }
}

fn l4(b: &[u8; 40]) -> L4Filter {
    L4Filter {
        dst_port: be16(b, 0),
        src_port: be16(b, 2),
    }
}

impl FlowSpec {
    fn from_raw(s: &ksys::ksys_ib_flow_spec) -> Self {
        match s.type_ {
            ksys::ib_flow_spec_type_IB_FLOW_SPEC_ETH => Self::Eth(eth(&s.val), eth(&s.mask)),
            ksys::ib_flow_spec_type_IB_FLOW_SPEC_IPV4 => Self::Ipv4(ipv4(&s.val), ipv4(&s.mask)),
            ksys::ib_flow_spec_type_IB_FLOW_SPEC_IPV6 => Self::Ipv6(ipv6(&s.val), ipv6(&s.mask)),
            ksys::ib_flow_spec_type_IB_FLOW_SPEC_TCP => Self::Tcp(l4(&s.val), l4(&s.mask)),
            ksys::ib_flow_spec_type_IB_FLOW_SPEC_UDP => Self::Udp(l4(&s.val), l4(&s.mask)),
            ksys::ib_flow_spec_type_IB_FLOW_SPEC_ACTION_TAG => Self::Tag(s.tag),
            ksys::ib_flow_spec_type_IB_FLOW_SPEC_ACTION_DROP => Self::Drop,
            t => Self::Other(t),
        }
    }
}

/// A rule's attributes (`struct ib_flow_attr`) and its specs, in order.
#[derive(Debug)]
pub struct FlowAttr {
    /// `type` ([`FLOW_ATTR_NORMAL`], ...).
    pub ty: u32,
    /// Priority (lower first).
    pub priority: u16,
    /// `IB_FLOW_ATTR_FLAGS_*`.
    pub flags: u32,
    /// The port.
    pub port: u32,
    /// The specs.
    pub specs: KVec<FlowSpec>,
}

impl FlowAttr {
    /// Decodes the attributes uverbs built.
    ///
    /// # Safety
    ///
    /// `raw` must be the attributes of a `create_flow` call (their specs checked by uverbs
    /// to lie within their size), valid during the call.
    pub(crate) unsafe fn from_raw(raw: *const ksys::ib_flow_attr) -> Result<Self> {
        let (mut ty, mut priority, mut flags, mut n, mut port) = (0, 0, 0, 0u8, 0);
        // SAFETY: Valid attributes (the caller's guarantee); the outputs are locals.
        unsafe { ksys::ib_flow_attr(raw, &mut ty, &mut priority, &mut flags, &mut n, &mut port) };
        let mut specs = KVec::with_capacity(n.into(), GFP_KERNEL)?;
        for i in 0..u32::from(n) {
            let mut s = ksys::ksys_ib_flow_spec::default();
            // SAFETY: As above: spec `i` of `n` lies within the attributes.
            let r = unsafe { ksys::ib_flow_spec(raw, i, &mut s) };
            if r != 0 {
                return Err(EINVAL);
            }
            specs.push(FlowSpec::from_raw(&s), GFP_KERNEL)?;
        }
        Ok(Self {
            ty,
            priority,
            flags,
            port,
            specs,
        })
    }
}
