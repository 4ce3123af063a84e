// SPDX-License-Identifier: GPL-2.0
//! Steering rules of processes (mlx5_ib fs.c `mlx5_ib_create_flow`, `parse_flow_attr`,
//! `get_flow_table`): `ibv_create_flow` on a raw packet QP. Each priority has one BYPASS
//! table (core/fs.rs: ahead of the Ethernet layer's tables; created with its first rule,
//! destroyed with its last), level `2p + 1` for priority `p` as mlx5_ib's
//! `ib_prio_to_core_prio` gives it, and multicast-only rules go to the multicast priority
//! after them. A rule is an entry in its own group of one, forwarding to the QP's TIR with
//! the flow tag of its tag spec, or dropping with a drop spec.
//!
//! Refused as mlx5_ib refuses them: a priority past the last (`ENOMEM`), a tag of 2^24 or
//! more or a second tag (`EINVAL`), spec types it does not parse (`EINVAL`). Not offered:
//! default, sniffer and egress rules, `DONT_TRAP`, counters, and matching IP flags or the
//! IPv6 flow label (`EOPNOTSUPP`).

use cx4_hw::flow::FteMatchSetLyr24;
use ib::{
    FlowAttr,
    FlowSpec,
    Qp,
    Udata,
    FLOW_ATTR_NORMAL, //
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
};

use crate::{
    fs::{
        BypassTable,
        Dest,
        FlowGroup,
        Fte, //
    },
    ib::{
        abi::CreateFlowReq,
        IbDev, //
    },
    mdev::Mdev,
};

/// The last priority (`MLX5_IB_FLOW_LAST_PRIO`).
const LAST_PRIO: u16 = 15;
/// The multicast priority's level (`MLX5_IB_FLOW_MCAST_PRIO`, after the regular ones).
const MCAST_LEVEL: u32 = 2 * (LAST_PRIO as u32 + 1);
/// log2 of a table's entries (`MLX5_FS_MAX_ENTRIES`).
const LOG_TABLE_SIZE: u32 = 16;
/// IPv4 and IPv6 ethertypes, TCP and UDP.
const ETH_P_IP: u32 = 0x0800;
const ETH_P_IPV6: u32 = 0x86dd;
const IPPROTO_TCP: u32 = 6;
const IPPROTO_UDP: u32 = 17;

/// One priority's table and the entries in use.
struct Prio {
    level: u32,
    table: BypassTable,
    used: KVec<u32>,
}

/// The device's BYPASS tables by priority (mlx5_ib's `flow_db`).
#[pin_data]
pub(crate) struct FlowDb {
    mdev: Arc<Mdev>,
    #[pin]
    prios: Mutex<KVec<Prio>>,
}

impl FlowDb {
    /// No tables yet.
    pub(crate) fn new(mdev: &Arc<Mdev>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                mdev: mdev.clone(),
                prios <- new_mutex!(KVec::new(), "cx4::flow_db"),
            }),
            GFP_KERNEL,
        )
    }
}

/// A rule: its entry and group, and the place it holds in its priority's table.
pub(crate) struct IbFlow {
    // Field order is drop order: the entry, its group, then the index back to the table.
    fte: Option<Fte>,
    group: Option<FlowGroup>,
    db: Arc<FlowDb>,
    level: u32,
    index: u32,
}

impl Drop for IbFlow {
    fn drop(&mut self) {
        self.fte = None;
        self.group = None;
        let mut prios = self.db.prios.lock();
        if let Some(i) = prios.iter().position(|p| p.level == self.level) {
            let empty = {
                let p = &mut prios[i];
                p.used.retain(|x| *x != self.index);
                p.used.is_empty()
            };
            if empty {
                // The last rule: the table leaves the chain and goes.
                let _ = prios.remove(i);
            }
        }
    }
}

/// The rule's match (criteria and value), forwarding and tag, from its specs
/// (`parse_flow_attr`).
#[derive(Default)]
struct Parsed {
    criteria: FteMatchSetLyr24,
    value: FteMatchSetLyr24,
    any: bool,
    tag: Option<u32>,
    drop: bool,
}

fn mac(b: [u8; 6]) -> (u32, u32) {
    (
        u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        u32::from_be_bytes([0, 0, b[4], b[5]]),
    )
}

impl Parsed {
    /// Matches `mask` of field `f` against `val` (masked).
    fn set(&mut self, f: fn(&mut FteMatchSetLyr24, u32), mask: u32, val: u32) {
        if mask != 0 {
            f(&mut self.criteria, mask);
            f(&mut self.value, val & mask);
            self.any = true;
        }
    }

    /// Matches IP addresses: `at` is where the address starts in the 16-byte fields.
    fn set_ip(&mut self, src: bool, at: usize, mask: &[u8], val: &[u8]) {
        if mask.iter().all(|&b| b == 0) {
            return;
        }
        fn pick(h: &mut FteMatchSetLyr24, src: bool) -> &mut [u8] {
            if src {
                h.src_ipv4_src_ipv6_mut()
            } else {
                h.dst_ipv4_dst_ipv6_mut()
            }
        }
        for (i, (&m, &v)) in mask.iter().zip(val).enumerate() {
            pick(&mut self.criteria, src)[at + i] = m;
            pick(&mut self.value, src)[at + i] = v & m;
        }
        self.any = true;
    }

    fn spec(&mut self, s: &FlowSpec) -> Result {
        type H = FteMatchSetLyr24;
        match *s {
            FlowSpec::Eth(v, m) => {
                let (vh, vl) = mac(v.dst_mac);
                let (mh, ml) = mac(m.dst_mac);
                self.set(H::set_dmac_47_16, mh, vh);
                self.set(H::set_dmac_15_0, ml, vl);
                let (vh, vl) = mac(v.src_mac);
                let (mh, ml) = mac(m.src_mac);
                self.set(H::set_smac_47_16, mh, vh);
                self.set(H::set_smac_15_0, ml, vl);
                self.set(H::set_ethertype, m.ether_type.into(), v.ether_type.into());
                if m.vlan_tag != 0 {
                    self.set(H::set_cvlan_tag, 1, 1);
                    let (vt, mt) = (u32::from(v.vlan_tag), u32::from(m.vlan_tag));
                    self.set(H::set_first_vid, mt & 0xfff, vt & 0xfff);
                    self.set(H::set_first_cfi, (mt >> 12) & 1, (vt >> 12) & 1);
                    self.set(H::set_first_prio, mt >> 13, vt >> 13);
                }
            }
            FlowSpec::Ipv4(v, m) => {
                if m.flags != 0 {
                    return Err(ib::eopnotsupp());
                }
                self.set(H::set_ethertype, 0xffff, ETH_P_IP);
                self.set_ip(true, 12, &m.src_ip, &v.src_ip);
                self.set_ip(false, 12, &m.dst_ip, &v.dst_ip);
                self.set(H::set_ip_protocol, m.proto.into(), v.proto.into());
                self.set(H::set_ip_ecn, (m.tos & 3).into(), (v.tos & 3).into());
                self.set(H::set_ip_dscp, (m.tos >> 2).into(), (v.tos >> 2).into());
                self.set(H::set_ttl_hoplimit, m.ttl.into(), v.ttl.into());
            }
            FlowSpec::Ipv6(v, m) => {
                if m.flow_label != 0 {
                    return Err(ib::eopnotsupp());
                }
                self.set(H::set_ethertype, 0xffff, ETH_P_IPV6);
                self.set_ip(true, 0, &m.src_ip, &v.src_ip);
                self.set_ip(false, 0, &m.dst_ip, &v.dst_ip);
                self.set(H::set_ip_protocol, m.next_hdr.into(), v.next_hdr.into());
                let (mt, vt) = (m.traffic_class, v.traffic_class);
                self.set(H::set_ip_ecn, (mt & 3).into(), (vt & 3).into());
                self.set(H::set_ip_dscp, (mt >> 2).into(), (vt >> 2).into());
                self.set(H::set_ttl_hoplimit, m.hop_limit.into(), v.hop_limit.into());
            }
            FlowSpec::Tcp(v, m) => {
                self.set(H::set_ip_protocol, 0xff, IPPROTO_TCP);
                self.set(H::set_tcp_sport, m.src_port.into(), v.src_port.into());
                self.set(H::set_tcp_dport, m.dst_port.into(), v.dst_port.into());
            }
            FlowSpec::Udp(v, m) => {
                self.set(H::set_ip_protocol, 0xff, IPPROTO_UDP);
                self.set(H::set_udp_sport, m.src_port.into(), v.src_port.into());
                self.set(H::set_udp_dport, m.dst_port.into(), v.dst_port.into());
            }
            FlowSpec::Tag(t) => {
                if t >= 1 << 24 || self.tag.is_some() {
                    return Err(EINVAL);
                }
                self.tag = Some(t);
            }
            FlowSpec::Drop => self.drop = true,
            FlowSpec::Other(_) => return Err(EINVAL),
        }
        Ok(())
    }
}

/// `flow_is_multicast_only`: a rule whose only header spec matches a multicast destination
/// MAC exactly.
fn multicast_only(specs: &[FlowSpec]) -> bool {
    let mut headers = specs
        .iter()
        .filter(|s| !matches!(s, FlowSpec::Tag(_) | FlowSpec::Drop));
    match (headers.next(), headers.next()) {
        (Some(FlowSpec::Eth(v, m)), None) => m.dst_mac == [0xff; 6] && v.dst_mac[0] & 1 != 0,
        _ => false,
    }
}

impl IbFlow {
    /// A rule of `attr` forwarding to `qp` (`mlx5_ib_create_flow`).
    pub(crate) fn create(
        qp: &Qp<IbDev>,
        attr: &FlowAttr,
        udata: Option<&mut Udata<'_>>,
    ) -> Result<Self> {
        // libmlx5 sends the header of `struct mlx5_ib_create_flow`, naming counters data of
        // a counters spec (not offered) or none.
        if let Some(u) = udata.filter(|u| u.in_len() > 0) {
            if u.in_len() < size_of::<CreateFlowReq>() {
                return Err(ib::eopnotsupp());
            }
            let req: CreateFlowReq = u.read(size_of::<CreateFlowReq>())?;
            match req.ncounters_data {
                0 => {}
                1 => return Err(ib::eopnotsupp()),
                _ => return Err(EINVAL),
            }
        }
        if attr.priority > LAST_PRIO {
            return Err(ENOMEM);
        }
        if attr.flags & !(ib::FLOW_ATTR_FLAGS_DONT_TRAP | ib::FLOW_ATTR_FLAGS_EGRESS) != 0 {
            return Err(EINVAL);
        }
        if attr.ty != FLOW_ATTR_NORMAL || attr.flags != 0 {
            return Err(ib::eopnotsupp());
        }
        let mut p = Parsed::default();
        for s in attr.specs.iter() {
            p.spec(s)?;
        }
        let dest = if p.drop {
            Dest::Drop
        } else {
            Dest::Tir(qp.tirn().ok_or(EINVAL)?)
        };
        let level = if multicast_only(&attr.specs) {
            MCAST_LEVEL
        } else {
            2 * u32::from(attr.priority) + 1
        };
        let db = qp.device().data().flows.clone();
        let mut prios = db.prios.lock();
        let i = match prios.iter().position(|x| x.level == level) {
            Some(i) => i,
            None => {
                prios.reserve(1, GFP_KERNEL)?;
                let table = BypassTable::create(&db.mdev, level, LOG_TABLE_SIZE)?;
                prios.push(
                    Prio {
                        level,
                        table,
                        used: KVec::new(),
                    },
                    GFP_KERNEL,
                )?;
                prios.len() - 1
            }
        };
        let prio = &mut prios[i];
        let index = (0..1u32 << LOG_TABLE_SIZE)
            .find(|x| !prio.used.contains(x))
            .ok_or(ENOMEM)?;
        prio.used.push(index, GFP_KERNEL)?;
        // From here dropping `flow` gives the index back (and the table with its last rule).
        let mut flow = Self {
            fte: None,
            group: None,
            db: db.clone(),
            level,
            index,
        };
        let t = prio.table.table();
        let crit = p.criteria;
        let criteria: &dyn Fn(&mut FteMatchSetLyr24) = &|h| *h = crit;
        let r = (|| -> Result {
            let group = t.group(index, index, p.any.then_some(criteria))?;
            let value = p.value;
            let fte = t.tagged_entry(&group, index, &|h| *h = value, dest, p.tag.unwrap_or(0))?;
            flow.group = Some(group);
            flow.fte = Some(fte);
            Ok(())
        })();
        drop(prios);
        r.map(|()| flow)
    }
}
