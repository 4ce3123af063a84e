//! The NIC RX steering decision: which TIRs (or a drop) a received frame gets from the flow
//! tables the driver built, and which flow counters it bumps. A pure function of the firmware
//! state ([`Firmware::steer`]); the Ethernet engine parses the frame into an [`RxFrame`] and
//! applies the [`Steering`] it gets back.
//!
//! Matching follows the PRM: a frame is reduced to an `fte_match_param` image (the same layout
//! the driver writes its masks and values in), and an entry matches when the image and the
//! entry's value agree on every bit of its group's mask. The first matching entry by index
//! decides; a table without a match applies its miss action (forward, or drop on NIC RX).

use cx4_hw::flow::{action, table_type, FteMatchParam, FteMatchSetLyr24, FteMatchSetMisc};
use zerocopy::IntoBytes;

use super::{
    flow::{Dest, FlowTable, Miss},
    Firmware,
};

/// Deepest chain of tables a frame may traverse (levels strictly increase, so a correct
/// configuration never comes close).
pub const MAX_STEERING_DEPTH: usize = 64;

/// A VLAN tag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VlanTag {
    /// An S-tag (0x88a8) rather than a C-tag (0x8100).
    pub svlan: bool,
    /// Priority code point.
    pub prio: u8,
    /// Drop eligible / CFI.
    pub cfi: bool,
    /// VLAN id.
    pub vid: u16,
}

/// The L3 header fields steering matches on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IpFields {
    /// 4 or 6.
    pub version: u8,
    /// IPv4 protocol / IPv6 next header (after extension headers).
    pub protocol: u8,
    /// Source address; IPv4 in the last four bytes.
    pub src: [u8; 16],
    /// Destination address; IPv4 in the last four bytes.
    pub dst: [u8; 16],
    /// DSCP.
    pub dscp: u8,
    /// ECN.
    pub ecn: u8,
    /// TTL / hop limit.
    pub ttl: u8,
    /// An IPv4 fragment (MF set or non-zero offset).
    pub frag: bool,
    /// IPv4 header length in dwords (0 for IPv6).
    pub ihl: u8,
}

/// The L4 header fields steering matches on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L4Fields {
    /// TCP ports and flags.
    Tcp {
        /// Source port.
        sport: u16,
        /// Destination port.
        dport: u16,
        /// The 9 flag bits.
        flags: u16,
    },
    /// UDP ports.
    Udp {
        /// Source port.
        sport: u16,
        /// Destination port.
        dport: u16,
    },
}

/// One set of L2–L4 headers (outer, or inner after a tunnel header).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Headers {
    /// Destination MAC (inner headers of an IP-in-IP/GRE-IP tunnel have none: zero).
    pub dmac: [u8; 6],
    /// Source MAC.
    pub smac: [u8; 6],
    /// Ethertype after the VLAN tags.
    pub ethertype: u16,
    /// First VLAN tag.
    pub vlan: Option<VlanTag>,
    /// Second VLAN tag (QinQ).
    pub vlan2: Option<VlanTag>,
    /// IP header.
    pub ip: Option<IpFields>,
    /// TCP or UDP header.
    pub l4: Option<L4Fields>,
}

/// A tunnel header between the outer and inner headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tunnel {
    /// VXLAN (UDP to a port added with ADD_VXLAN_UDP_DPORT).
    Vxlan {
        /// 24-bit VNI.
        vni: u32,
    },
    /// GENEVE.
    Geneve {
        /// 24-bit VNI.
        vni: u32,
        /// Protocol type of the inner frame.
        protocol: u16,
    },
    /// GRE / NVGRE.
    Gre {
        /// Protocol type of the inner packet.
        protocol: u16,
        /// Key (NVGRE: VSID << 8 | flow id), if the K bit is set.
        key: Option<u32>,
        /// C bit.
        checksum: bool,
        /// S bit.
        sequence: bool,
    },
}

/// A received frame as steering sees it: parsed by the Ethernet engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxFrame {
    /// Outer headers.
    pub outer: Headers,
    /// Tunnel header, when the parser recognised one.
    pub tunnel: Option<Tunnel>,
    /// Inner headers of a recognised tunnel.
    pub inner: Option<Headers>,
}

/// Why a frame was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// No NIC RX root table.
    NoRoot,
    /// No entry matched in `table` and its miss action is the default (drop).
    Miss {
        /// The table.
        table: u32,
    },
    /// Entry `index` of `table` drops.
    Rule {
        /// The table.
        table: u32,
        /// The entry.
        index: u32,
    },
    /// A destination or miss table that no longer exists, or a chain deeper than
    /// [`MAX_STEERING_DEPTH`].
    Broken {
        /// The table where the walk stopped.
        table: u32,
    },
}

/// What steering decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxVerdict {
    /// Deliver through these TIRs (see [`Steering::tirs`]).
    Deliver,
    /// Drop.
    Drop(DropReason),
}

/// The decision for one frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Steering {
    /// Deliver or drop.
    pub verdict: RxVerdict,
    /// TIRs to deliver through, in order, without duplicates (one copy per TIR).
    pub tirs: Vec<u32>,
    /// Flow counters of every matched entry with the COUNT action.
    pub counters: Vec<u32>,
    /// Flow tag of the last matched entry that set one (for the CQE).
    pub flow_tag: u32,
    /// Tables and matched entry indices walked, for tracing.
    pub path: Vec<(u32, Option<u32>)>,
}

fn mac_words(m: &[u8; 6]) -> (u32, u32) {
    (
        u32::from_be_bytes([m[0], m[1], m[2], m[3]]),
        u32::from(u16::from_be_bytes([m[4], m[5]])),
    )
}

fn fill_headers(l: &mut FteMatchSetLyr24, misc: &mut FteMatchSetMisc, h: &Headers, outer: bool) {
    let (d_hi, d_lo) = mac_words(&h.dmac);
    let (s_hi, s_lo) = mac_words(&h.smac);
    l.set_dmac_47_16(d_hi);
    l.set_dmac_15_0(d_lo);
    l.set_smac_47_16(s_hi);
    l.set_smac_15_0(s_lo);
    l.set_ethertype(h.ethertype.into());
    if let Some(v) = h.vlan {
        if v.svlan {
            l.set_svlan_tag(1);
        } else {
            l.set_cvlan_tag(1);
        }
        l.set_first_prio(v.prio.into());
        l.set_first_cfi(v.cfi.into());
        l.set_first_vid(v.vid.into());
    }
    if let Some(v) = h.vlan2 {
        if outer {
            if v.svlan {
                misc.set_outer_second_svlan_tag(1);
            } else {
                misc.set_outer_second_cvlan_tag(1);
            }
            misc.set_outer_second_prio(v.prio.into());
            misc.set_outer_second_cfi(v.cfi.into());
            misc.set_outer_second_vid(v.vid.into());
        } else {
            if v.svlan {
                misc.set_inner_second_svlan_tag(1);
            } else {
                misc.set_inner_second_cvlan_tag(1);
            }
            misc.set_inner_second_prio(v.prio.into());
            misc.set_inner_second_cfi(v.cfi.into());
            misc.set_inner_second_vid(v.vid.into());
        }
    }
    if let Some(ip) = h.ip {
        l.set_ip_version(ip.version.into());
        l.set_ip_protocol(ip.protocol.into());
        l.set_ip_dscp(ip.dscp.into());
        l.set_ip_ecn(ip.ecn.into());
        l.set_frag(ip.frag.into());
        l.set_ttl_hoplimit(ip.ttl.into());
        l.set_ipv4_ihl(ip.ihl.into());
        l.src_ipv4_src_ipv6_mut().copy_from_slice(&ip.src);
        l.dst_ipv4_dst_ipv6_mut().copy_from_slice(&ip.dst);
    }
    match h.l4 {
        Some(L4Fields::Tcp {
            sport,
            dport,
            flags,
        }) => {
            l.set_l4_type(1); // MLX5_PACKET_L4_TYPE_TCP
            l.set_tcp_sport(sport.into());
            l.set_tcp_dport(dport.into());
            l.set_tcp_flags(flags.into());
        }
        Some(L4Fields::Udp { sport, dport }) => {
            l.set_l4_type(2); // MLX5_PACKET_L4_TYPE_UDP
            l.set_udp_sport(sport.into());
            l.set_udp_dport(dport.into());
        }
        None => {}
    }
}

impl RxFrame {
    /// The frame as an `fte_match_param` image: every field steering can match on.
    pub fn match_image(&self) -> FteMatchParam {
        let mut m = FteMatchParam::new();
        let mut misc = *m.misc_parameters();
        fill_headers(m.outer_headers_mut(), &mut misc, &self.outer, true);
        if let Some(inner) = &self.inner {
            fill_headers(m.inner_headers_mut(), &mut misc, inner, false);
        }
        match self.tunnel {
            Some(Tunnel::Vxlan { vni }) => misc.set_vxlan_vni(vni),
            Some(Tunnel::Geneve { vni, protocol }) => {
                misc.set_geneve_vni(vni);
                misc.set_geneve_protocol_type(protocol.into());
            }
            Some(Tunnel::Gre {
                protocol,
                key,
                checksum,
                sequence,
            }) => {
                misc.set_gre_protocol(protocol.into());
                misc.set_gre_c_present(checksum.into());
                misc.set_gre_s_present(sequence.into());
                if let Some(k) = key {
                    misc.set_gre_k_present(1);
                    misc.set_gre_key(k);
                }
            }
            None => {}
        }
        *m.misc_parameters_mut() = misc;
        m
    }
}

/// Whether `image` and `value` agree on every bit of `mask`.
pub fn masked_eq(image: &FteMatchParam, value: &FteMatchParam, mask: &FteMatchParam) -> bool {
    image
        .as_bytes()
        .iter()
        .zip(value.as_bytes())
        .zip(mask.as_bytes())
        .all(|((i, v), m)| (i ^ v) & m == 0)
}

/// Records the first reason a branch of the walk dropped the frame.
fn note(first: &mut Option<DropReason>, r: DropReason) {
    first.get_or_insert(r);
}

/// The first entry of `t` (by index) that matches `image`.
fn first_match<'a>(t: &'a FlowTable, image: &FteMatchParam) -> Option<&'a super::flow::Fte> {
    t.entries.values().find(|e| {
        t.groups
            .get(&e.group)
            .is_some_and(|g| masked_eq(image, &e.value, &g.criteria))
    })
}

impl Firmware {
    /// Walks the NIC RX flow tables from the root for `frame`: the TIRs it is delivered
    /// through (or why it is dropped), the flow counters to bump and the flow tag. Pure: the
    /// caller applies the decision (e.g. [`Firmware::count_flow`]).
    pub fn steer(&self, frame: &RxFrame) -> Steering {
        let mut s = Steering {
            verdict: RxVerdict::Drop(DropReason::NoRoot),
            tirs: Vec::new(),
            counters: Vec::new(),
            flow_tag: 0,
            path: Vec::new(),
        };
        let Some(&root) = self.flow_root.get(&table_type::NIC_RX) else {
            return s;
        };
        let image = frame.match_image();
        let mut first_drop = None;
        self.walk(root, &image, 0, &mut s, &mut first_drop);
        s.verdict = if s.tirs.is_empty() {
            RxVerdict::Drop(first_drop.unwrap_or(DropReason::Broken { table: root }))
        } else {
            RxVerdict::Deliver
        };
        s
    }

    fn walk(
        &self,
        table: u32,
        image: &FteMatchParam,
        depth: usize,
        s: &mut Steering,
        first_drop: &mut Option<DropReason>,
    ) {
        let Some(t) = self.flow_tables.get(&table) else {
            return note(first_drop, DropReason::Broken { table });
        };
        if depth >= MAX_STEERING_DEPTH {
            return note(first_drop, DropReason::Broken { table });
        }
        let Some(e) = first_match(t, image) else {
            s.path.push((table, None));
            return match t.miss {
                Miss::Forward(next) => self.walk(next, image, depth + 1, s, first_drop),
                Miss::Default => note(first_drop, DropReason::Miss { table }),
            };
        };
        s.path.push((table, Some(e.index)));
        if e.action & action::COUNT != 0 {
            s.counters.extend(&e.counters);
        }
        if e.flow_tag != 0 {
            s.flow_tag = e.flow_tag;
        }
        if e.action & action::DROP != 0 {
            return note(
                first_drop,
                DropReason::Rule {
                    table,
                    index: e.index,
                },
            );
        }
        if e.action & action::FWD_DEST != 0 {
            for d in &e.dests {
                match *d {
                    Dest::Tir(tirn) => {
                        if !s.tirs.contains(&tirn) {
                            s.tirs.push(tirn);
                        }
                    }
                    Dest::Table(next) => self.walk(next, image, depth + 1, s, first_drop),
                }
            }
        } else if e.action & action::ALLOW != 0 {
            // Allow: continue as if no entry had matched here (the next table in the chain).
            match t.miss {
                Miss::Forward(next) => self.walk(next, image, depth + 1, s, first_drop),
                Miss::Default => note(first_drop, DropReason::Miss { table }),
            }
        } else {
            note(
                first_drop,
                DropReason::Rule {
                    table,
                    index: e.index,
                },
            );
        }
    }
}
