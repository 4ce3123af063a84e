// SPDX-License-Identifier: GPL-2.0
//! NIC RX flow steering (en_fs.c, lib/fs_ttc.c, en_fs_ethtool.c), the smallest correct form
//! of mlx5e's: the ethtool table first (the kernel's end of the core's NIC RX chain, after
//! the RDMA layer's BYPASS tables: core/fs.rs) holding the user's flow rules (`ethtool -N
//! flow-type`, each forwarding to a TIR or dropping), missing to an L2 table matching the destination MAC (own unicast address, broadcast, a
//! multicast list; a match-all entry for promiscuous mode and a multicast-bit entry for
//! all-multicast, switched at run time), forwarding to a traffic type classifier (TTC) table
//! that sends IPv4/IPv6 × TCP/UDP/other and anything else to one TIR each (the RSS TIRs).
//!
//! mlx5e's VLAN table, ARFS and inner (tunnel) TTC tables are left out: without them every
//! frame the L2 table accepts goes to the TTC. The TTC matches the ethertype rather than
//! `ip_version` (mlx5e does that when `ft_field_support.outer_ip_version` is absent), which
//! every device supports. The tables, groups and entries are the core's (core/fs.rs).

use cx4_hw::flow::FteMatchSetLyr24;
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    en::rss::TrafficType,
    fs::{
        Dest,
        FlowGroup,
        FlowTable,
        Fte,
        KernelRoot,
        BYPASS_LEVELS, //
    },
    mdev::Mdev, //
};

/// Level of the ethtool table (the first of the kernel's, after the RDMA layer's BYPASS
/// tables: mlx5e's ethtool priorities come before the kernel's).
const ETHTOOL_LEVEL: u32 = BYPASS_LEVELS + 1;
/// log2 of the ethtool table size: [`ETHTOOL_BANDS`] bands of [`ETHTOOL_MAX_RULES`] entries.
const ETHTOOL_LOG_SIZE: u32 = 14;
/// Rule locations (`MAX_NUM_OF_ETHTOOL_RULES`).
pub(crate) const ETHTOOL_MAX_RULES: u32 = 1024;
/// Bands of the ethtool table, checked in order: mlx5e's 7 L3/L4 priorities then its 4 L2 ones
/// (`ETHTOOL_NUM_L3_L4_FTS`, `ETHTOOL_NUM_L2_FTS`), one table each there.
pub(crate) const ETHTOOL_BANDS: u32 = 11;
/// Level of the L2 table.
const L2_LEVEL: u32 = BYPASS_LEVELS + 2;
/// Level of the TTC table (after the L2 table: forwarding goes to higher levels only).
const TTC_LEVEL: u32 = BYPASS_LEVELS + 3;
/// log2 of the L2 table size.
const L2_LOG_SIZE: u32 = 8;
/// Index of the promiscuous (match-all) entry, checked first.
const L2_PROMISC_INDEX: u32 = 0;
/// Indices of the full-MAC entries.
const L2_ADDR_FIRST: u32 = 1;
/// See [`L2_ADDR_FIRST`].
const L2_ADDR_LAST: u32 = (1 << L2_LOG_SIZE) - 2;
/// Index of the all-multicast entry, checked last.
const L2_ALLMULTI_INDEX: u32 = (1 << L2_LOG_SIZE) - 1;
/// log2 of the TTC table size.
const TTC_LOG_SIZE: u32 = 3;
/// The broadcast address.
const BCAST: [u8; 6] = [0xff; 6];
/// IPv4 ethertype.
pub(crate) const ETH_P_IP: u32 = 0x0800;
/// IPv6 ethertype.
pub(crate) const ETH_P_IPV6: u32 = 0x86dd;
/// IP protocol numbers.
pub(crate) const IPPROTO_TCP: u32 = 6;
/// See [`IPPROTO_TCP`].
pub(crate) const IPPROTO_UDP: u32 = 17;

/// Match criteria/value of a destination MAC.
fn set_dmac(h: &mut FteMatchSetLyr24, mac: [u8; 6]) {
    h.set_dmac_47_16(u32::from_be_bytes([mac[0], mac[1], mac[2], mac[3]]));
    h.set_dmac_15_0(u32::from_be_bytes([0, 0, mac[4], mac[5]]));
}

/// The ethertype and IP protocol a TTC rule matches (`ttc_rules`, lib/fs_ttc.c).
fn ttc_rule(tt: TrafficType) -> (Option<u32>, Option<u32>) {
    use TrafficType as T;
    match tt {
        T::Ipv4Tcp => (Some(ETH_P_IP), Some(IPPROTO_TCP)),
        T::Ipv6Tcp => (Some(ETH_P_IPV6), Some(IPPROTO_TCP)),
        T::Ipv4Udp => (Some(ETH_P_IP), Some(IPPROTO_UDP)),
        T::Ipv6Udp => (Some(ETH_P_IPV6), Some(IPPROTO_UDP)),
        T::Ipv4 => (Some(ETH_P_IP), None),
        T::Ipv6 => (Some(ETH_P_IPV6), None),
        T::Any => (None, None),
    }
}

/// The TTC table: three groups (ethertype + IP protocol, ethertype, nothing) and one entry
/// per traffic type.
struct Ttc {
    // Field order is drop order: entries, groups, table.
    entries: KVec<Fte>,
    groups: KVec<FlowGroup>,
    table: FlowTable,
}

impl Ttc {
    fn create(mdev: &Arc<Mdev>, tirn: &dyn Fn(TrafficType) -> u32) -> Result<Self> {
        let mut ttc = Self {
            entries: KVec::new(),
            groups: KVec::new(),
            table: FlowTable::create(mdev, TTC_LEVEL, TTC_LOG_SIZE, None)?,
        };
        let l4: &dyn Fn(&mut FteMatchSetLyr24) = &|h| {
            h.set_ethertype(0xffff);
            h.set_ip_protocol(0xff);
        };
        let l3: &dyn Fn(&mut FteMatchSetLyr24) = &|h| h.set_ethertype(0xffff);
        // L4 rules at 0..=3, L3 at 4..=5, ANY at 6.
        let g = ttc.table.group(0, 3, Some(l4))?;
        ttc.groups.push(g, GFP_KERNEL)?;
        let g = ttc.table.group(4, 5, Some(l3))?;
        ttc.groups.push(g, GFP_KERNEL)?;
        let g = ttc.table.group(6, 6, None)?;
        ttc.groups.push(g, GFP_KERNEL)?;
        ttc.entries.reserve(TrafficType::ALL.len(), GFP_KERNEL)?;
        for (i, tt) in TrafficType::ALL.into_iter().enumerate() {
            let (ethertype, proto) = ttc_rule(tt);
            let group = match (ethertype, proto) {
                (Some(_), Some(_)) => 0,
                (Some(_), None) => 1,
                _ => 2,
            };
            let g = ttc.groups.get(group).ok_or(EINVAL)?;
            let value = |h: &mut FteMatchSetLyr24| {
                if let Some(e) = ethertype {
                    h.set_ethertype(e);
                }
                if let Some(p) = proto {
                    h.set_ip_protocol(p);
                }
            };
            let e = ttc.table.entry(g, i as u32, &value, Dest::Tir(tirn(tt)))?;
            ttc.entries.push(e, GFP_KERNEL)?;
        }
        Ok(ttc)
    }
}

/// The L2 table: the promiscuous entry first, then full destination MAC entries, then the
/// all-multicast entry; all forward to the TTC table.
struct L2 {
    // Field order is drop order: entries, groups, table.
    addrs: KVec<([u8; 6], Fte)>,
    promisc: Option<Fte>,
    allmulti: Option<Fte>,
    groups: KVec<FlowGroup>,
    table: FlowTable,
    ttc: u32,
}

/// Group positions in [`L2::groups`].
const L2_GROUP_PROMISC: usize = 0;
const L2_GROUP_ADDR: usize = 1;
const L2_GROUP_ALLMULTI: usize = 2;

impl L2 {
    fn create(mdev: &Arc<Mdev>, ttc: u32) -> Result<Self> {
        let mut l2 = Self {
            addrs: KVec::new(),
            promisc: None,
            allmulti: None,
            groups: KVec::new(),
            table: FlowTable::create(mdev, L2_LEVEL, L2_LOG_SIZE, None)?,
            ttc,
        };
        let full: &dyn Fn(&mut FteMatchSetLyr24) = &|h| set_dmac(h, [0xff; 6]);
        let mcast: &dyn Fn(&mut FteMatchSetLyr24) = &|h| set_dmac(h, [1, 0, 0, 0, 0, 0]);
        let g = l2.table.group(L2_PROMISC_INDEX, L2_PROMISC_INDEX, None)?;
        l2.groups.push(g, GFP_KERNEL)?;
        let g = l2.table.group(L2_ADDR_FIRST, L2_ADDR_LAST, Some(full))?;
        l2.groups.push(g, GFP_KERNEL)?;
        let g = l2
            .table
            .group(L2_ALLMULTI_INDEX, L2_ALLMULTI_INDEX, Some(mcast))?;
        l2.groups.push(g, GFP_KERNEL)?;
        Ok(l2)
    }

    fn free_index(&self) -> Option<u32> {
        (L2_ADDR_FIRST..=L2_ADDR_LAST).find(|i| !self.addrs.iter().any(|(_, f)| f.index() == *i))
    }

    fn has(&self, mac: &[u8; 6]) -> bool {
        self.addrs.iter().any(|(m, _)| m == mac)
    }

    /// Makes the address entries exactly `want`; returns whether some did not fit.
    fn sync_addrs(&mut self, want: &[[u8; 6]]) -> Result<bool> {
        let mut overflow = false;
        // Add first, so that a changed own address never leaves a gap.
        for mac in want {
            if self.has(mac) {
                continue;
            }
            let Some(index) = self.free_index() else {
                overflow = true;
                continue;
            };
            self.addrs.reserve(1, GFP_KERNEL)?;
            let g = self.groups.get(L2_GROUP_ADDR).ok_or(EINVAL)?;
            let m = *mac;
            let f = self
                .table
                .entry(g, index, &|h| set_dmac(h, m), Dest::Table(self.ttc))?;
            self.addrs.push((m, f), GFP_KERNEL)?;
        }
        let mut keep = KVec::with_capacity(self.addrs.len(), GFP_KERNEL)?;
        for (m, f) in core::mem::take(&mut self.addrs) {
            if want.contains(&m) {
                // Within capacity: cannot fail.
                let _ = keep.push((m, f), GFP_KERNEL);
            }
            // Entries not wanted are deleted as they drop here.
        }
        self.addrs = keep;
        Ok(overflow)
    }

    fn sync_special(&mut self, promisc: bool, allmulti: bool) -> Result {
        let ttc = Dest::Table(self.ttc);
        if promisc && self.promisc.is_none() {
            let g = self.groups.get(L2_GROUP_PROMISC).ok_or(EINVAL)?;
            self.promisc = Some(self.table.entry(g, L2_PROMISC_INDEX, &|_| {}, ttc)?);
        } else if !promisc {
            self.promisc = None;
        }
        if allmulti && self.allmulti.is_none() {
            let g = self.groups.get(L2_GROUP_ALLMULTI).ok_or(EINVAL)?;
            let v: &dyn Fn(&mut FteMatchSetLyr24) = &|h| set_dmac(h, [1, 0, 0, 0, 0, 0]);
            self.allmulti = Some(self.table.entry(g, L2_ALLMULTI_INDEX, v, ttc)?);
        } else if !allmulti {
            self.allmulti = None;
        }
        Ok(())
    }
}

/// Where an ethtool rule sends what it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RuleDest {
    /// A TIR: a queue's direct TIR or an RSS context's TIR for the flow's traffic type.
    Tir(u32),
    /// Nowhere (`RX_CLS_FLOW_DISC`).
    Drop,
}

/// What an ethtool rule matches: the outer-header mask and value (en_fs_ethtool.c
/// `set_flow_attrs`); an all-zero mask matches every frame.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RuleMatch {
    /// The mask.
    pub(crate) criteria: FteMatchSetLyr24,
    /// The value (masked).
    pub(crate) value: FteMatchSetLyr24,
}

/// One ethtool rule in the table: its entry and the group holding only it.
struct EthtoolRule {
    // Field order is drop order: the entry before its group.
    fte: Fte,
    _group: FlowGroup,
}

/// The ethtool table (en_fs_ethtool.c): the root, missing to the L2 table. A rule sits at
/// `band * ETHTOOL_MAX_RULES + location`, so that rules matching more fields are checked
/// first as in mlx5e's per-tuple-count tables, then by location.
struct EthtoolTable {
    // Field order is drop order: the rules, then the table.
    rules: KVec<EthtoolRule>,
    table: FlowTable,
}

impl EthtoolTable {
    fn create(mdev: &Arc<Mdev>, l2: u32) -> Result<Self> {
        Ok(Self {
            rules: KVec::new(),
            table: FlowTable::create(mdev, ETHTOOL_LEVEL, ETHTOOL_LOG_SIZE, Some(l2))?,
        })
    }

    /// Removes the rule at `index`, if any.
    fn remove(&mut self, index: u32) {
        // Dropping the rule deletes its entry, then its group.
        self.rules.retain(|r| r.fte.index() != index);
    }

    /// Sets the rule at `index` (replacing one there).
    fn insert(&mut self, index: u32, m: &RuleMatch, dest: RuleDest) -> Result {
        if index >= 1 << ETHTOOL_LOG_SIZE {
            return Err(EINVAL);
        }
        self.remove(index);
        self.rules.reserve(1, GFP_KERNEL)?;
        let zero = m.criteria.0.iter().all(|&b| b == 0);
        let crit = m.criteria;
        let criteria: &dyn Fn(&mut FteMatchSetLyr24) = &|h| *h = crit;
        let group = self
            .table
            .group(index, index, (!zero).then_some(criteria))?;
        let value = m.value;
        let dest = match dest {
            RuleDest::Tir(t) => Dest::Tir(t),
            RuleDest::Drop => Dest::Drop,
        };
        let fte = self.table.entry(&group, index, &|h| *h = value, dest)?;
        self.rules
            .push(EthtoolRule { fte, _group: group }, GFP_KERNEL)?;
        Ok(())
    }
}

/// The receive filter as the netdev sets it.
struct RxMode {
    own: [u8; 6],
    mc: KVec<[u8; 6]>,
    promisc: bool,
    allmulti: bool,
}

/// NIC RX steering: the ethtool table (root), the L2 table and the TTC table. Dropping it
/// removes them (before the TIRs they forward to may go).
pub(crate) struct RxSteering {
    // Field order is drop order: out of the chain at the root, then each table before the
    // one it forwards to.
    _root: Option<KernelRoot>,
    ethtool: Option<EthtoolTable>,
    l2: L2,
    ttc: Ttc,
    mode: RxMode,
}

impl RxSteering {
    /// Builds the TTC table forwarding each traffic type to TIR `tirn(tt)`, the L2 table
    /// accepting `own` and broadcast, and, if the tables can chain (`ntuple`), the (empty)
    /// ethtool table missing to it; the first of them is the root.
    pub(crate) fn create(
        mdev: &Arc<Mdev>,
        tirn: &dyn Fn(TrafficType) -> u32,
        own: [u8; 6],
        ntuple: bool,
    ) -> Result<Self> {
        let ttc = Ttc::create(mdev, tirn)?;
        let l2 = L2::create(mdev, ttc.table.id())?;
        let ethtool = if ntuple {
            Some(EthtoolTable::create(mdev, l2.table.id())?)
        } else {
            None
        };
        let mut s = Self {
            _root: None,
            ethtool,
            l2,
            ttc,
            mode: RxMode {
                own,
                mc: KVec::new(),
                promisc: false,
                allmulti: false,
            },
        };
        s.apply()?;
        let first = s.ethtool.as_ref().map_or(&s.l2.table, |e| &e.table);
        s._root = Some(KernelRoot::link(mdev, first)?);
        Ok(s)
    }

    fn apply(&mut self) -> Result {
        let m = &self.mode;
        let mut want = KVec::with_capacity(m.mc.len() + 2, GFP_KERNEL)?;
        want.push(m.own, GFP_KERNEL)?;
        want.push(BCAST, GFP_KERNEL)?;
        for a in m.mc.iter() {
            if !want.contains(a) {
                want.push(*a, GFP_KERNEL)?;
            }
        }
        let (promisc, allmulti) = (m.promisc, m.allmulti);
        // A list longer than the table falls back to all-multicast (en_fs.c does the same
        // when the vport's list is full).
        let overflow = self.l2.sync_addrs(&want)?;
        self.l2.sync_special(promisc, allmulti || overflow)
    }

    /// Sets the receive filter: own unicast address, multicast list, promiscuous and
    /// all-multicast modes; entries are added and deleted incrementally.
    pub(crate) fn set_rx_mode(
        &mut self,
        own: [u8; 6],
        mc: &[[u8; 6]],
        promisc: bool,
        allmulti: bool,
    ) -> Result {
        let mut list = KVec::with_capacity(mc.len(), GFP_KERNEL)?;
        list.extend_from_slice(mc, GFP_KERNEL)?;
        self.mode = RxMode {
            own,
            mc: list,
            promisc,
            allmulti,
        };
        self.apply()
    }

    /// Changes the own unicast address, keeping the rest of the filter.
    pub(crate) fn set_mac(&mut self, own: [u8; 6]) -> Result {
        self.mode.own = own;
        self.apply()
    }

    /// The own unicast address.
    pub(crate) fn mac(&self) -> [u8; 6] {
        self.mode.own
    }

    /// Sets the ethtool rule at `index` (see [`EthtoolTable`]), replacing one there;
    /// `EINVAL` without the ethtool table.
    pub(crate) fn set_rule(&mut self, index: u32, m: &RuleMatch, dest: RuleDest) -> Result {
        self.ethtool.as_mut().ok_or(EINVAL)?.insert(index, m, dest)
    }

    /// Removes the ethtool rule at `index`, if any.
    pub(crate) fn remove_rule(&mut self, index: u32) {
        if let Some(e) = self.ethtool.as_mut() {
            e.remove(index)
        }
    }

    /// The root table id (the ethtool table, or the L2 table without it).
    pub(crate) fn root_table(&self) -> u32 {
        self.ethtool
            .as_ref()
            .map_or(self.l2.table.id(), |e| e.table.id())
    }

    /// The TTC table id.
    pub(crate) fn ttc_table(&self) -> u32 {
        self.ttc.table.id()
    }

    /// Address entries in the L2 table.
    pub(crate) fn l2_entries(&self) -> usize {
        self.l2.addrs.len()
    }
}
