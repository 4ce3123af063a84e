//! The RDMA objects of a function: queue pairs, XRC domains, the RoCE address (GID) table and
//! multicast attachments. The commands that create them live in qp.rs and roce.rs; the RoCE
//! engine (crate::roce) executes the queues.

use std::collections::{BTreeMap, BTreeSet};

use super::{dct::Dct, qp::Qp, srq::Srq};

/// One entry of the RoCE address table (SET_ROCE_ADDRESS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GidEntry {
    /// The GID: an IPv6 address, or an IPv4-mapped one (`::ffff:a.b.c.d`).
    pub gid: [u8; 16],
    /// Source MAC of packets sent from this GID.
    pub mac: [u8; 6],
    /// VLAN id when `vlan` is set.
    pub vlan_id: u16,
    /// Packets from this GID carry an 802.1Q tag.
    pub vlan: bool,
    /// `MLX5_ROCE_VERSION_*`: 0 RoCE v1, 2 RoCE v2.
    pub version: u8,
    /// `MLX5_ROCE_L3_TYPE_*`: 0 IPv4, 1 IPv6 (RoCE v2).
    pub l3_type: u8,
}

impl GidEntry {
    /// RoCE v2 (UDP/IP encapsulation) rather than v1 (Ethertype 0x8915).
    pub fn is_v2(&self) -> bool {
        self.version == 2
    }

    /// The IPv4 address of an IPv4-mapped GID.
    pub fn ipv4(&self) -> Option<[u8; 4]> {
        let g = &self.gid;
        (g[..10].iter().all(|&b| b == 0) && g[10] == 0xff && g[11] == 0xff)
            .then(|| [g[12], g[13], g[14], g[15]])
    }
}

/// The RDMA objects.
#[derive(Default)]
pub struct RdmaObjects {
    /// Queue pairs by number.
    pub qps: BTreeMap<u32, Qp>,
    /// The QP number of the port's GSI QP (service type QP1), which BTH destination QP 1
    /// reaches.
    pub gsi: Option<u32>,
    /// The QP number of an IB port's SMI QP (service type QP0), which BTH destination QP 0
    /// reaches.
    pub smi: Option<u32>,
    /// Shared receive queues (SRQs, RMPs, XRC SRQs) by number.
    pub srqs: BTreeMap<u32, Srq>,
    /// XRC domains.
    pub xrcds: BTreeSet<u32>,
    /// Dynamically connected targets by number (QP number space).
    pub dcts: BTreeMap<u32, Dct>,
    /// RoCE address table, by index.
    pub gids: BTreeMap<u16, GidEntry>,
    /// Multicast groups: GID → attached QPs.
    pub mcgs: BTreeMap<[u8; 16], BTreeSet<u32>>,
    /// QP state changes made by commands since the RoCE engine last looked: (QPN, new state,
    /// or [`QP_DESTROYED`]). The engine (`crate::roce::engine`) drains them.
    pub qp_events: Vec<(u32, u8)>,
    /// PAGE_FAULT_RESUME commands since the RoCE engine last looked (`roce/odp.rs` drains
    /// them).
    pub pf_resumes: Vec<PfResume>,
}

/// A PAGE_FAULT_RESUME (`trans_page_fault_info`): the fault type of the EQE, the queue (a
/// WQE fault's WQ number, an RDMA fault's token: the QP number), and whether the driver
/// failed to resolve it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfResume {
    /// `page_fault_type` as the EQE gave it.
    pub ty: u8,
    /// The QP.
    pub qpn: u32,
    /// Resolving failed: the held request fails.
    pub error: bool,
}

/// The "state" of a [`RdmaObjects::qp_events`] entry for a destroyed QP.
pub const QP_DESTROYED: u8 = 0xff;

impl RdmaObjects {
    /// Live objects as "N kind" items (empty if none). GID entries are not objects: the table
    /// is part of the port.
    pub fn live(&self) -> Vec<String> {
        let attached: usize = self.mcgs.values().map(BTreeSet::len).sum();
        [
            (self.qps.len(), "QPs"),
            (self.srqs.len(), "SRQs"),
            (self.dcts.len(), "DCTs"),
            (self.xrcds.len(), "XRCDs"),
            (attached, "multicast attachments"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect()
    }

    /// One line for the control socket's `roce` command: the GID table
    /// (`gid=INDEX/v1|v2/ADDRESS/MAC[/vlan N]`), the QPs (`qp=QPN/TYPE/STATE`) and multicast
    /// groups (`mcg=GID/N`).
    pub fn line(&self) -> String {
        let mut parts = vec![format!("gids={} qps={}", self.gids.len(), self.qps.len())];
        for (i, e) in &self.gids {
            let m = e.mac;
            let mut s = format!(
                "gid={i}/v{}/{}/{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                if e.is_v2() { 2 } else { 1 },
                std::net::Ipv6Addr::from(e.gid),
                m[0],
                m[1],
                m[2],
                m[3],
                m[4],
                m[5]
            );
            if e.vlan {
                s += &format!("/vlan{}", e.vlan_id);
            }
            parts.push(s);
        }
        for q in self.qps.values() {
            parts.push(format!(
                "qp={:#x}/{}/{}",
                q.qpn,
                cx4_hw::qp::qpc_st::qpc_st_name(q.st()),
                cx4_hw::qp::qpc_state::qpc_state_name(q.state())
            ));
        }
        for d in self.dcts.values() {
            let state = cx4_hw::dct::dctc_state::dctc_state_name(d.ctx.state() as u8);
            parts.push(format!("dct={:#x}/{state}", d.dctn));
        }
        for (g, m) in &self.mcgs {
            parts.push(format!("mcg={}/{}", std::net::Ipv6Addr::from(*g), m.len()));
        }
        parts.join(" ")
    }

    /// A QP or SRQ using `cqn` (for DESTROY_CQ).
    pub fn cq_user(&self, cqn: u32) -> Option<u32> {
        self.qps
            .values()
            .find(|q| q.cqn_snd() == cqn || q.cqn_rcv() == cqn)
            .map(|q| q.qpn)
            .or_else(|| self.srqs.values().find(|s| s.cqn == cqn).map(|s| s.srqn))
            .or_else(|| {
                self.dcts
                    .values()
                    .find(|d| d.ctx.cqn() == cqn)
                    .map(|d| d.dctn)
            })
    }

    /// Whether a QP is in `pd` (for DEALLOC_PD).
    pub fn pd_in_use(&self, pd: u32) -> bool {
        self.qps.values().any(|q| q.pd() == pd)
            || self.srqs.values().any(|s| s.pd == pd)
            || self.dcts.values().any(|d| d.ctx.pd() == pd)
    }

    /// Whether a QP rings its doorbells through UAR page `uar` (for DEALLOC_UAR).
    pub fn uar_in_use(&self, uar: u32) -> bool {
        self.qps.values().any(|q| q.uar_page() == uar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_mapped_gids_give_their_address() {
        let mut e = GidEntry {
            gid: [0; 16],
            mac: [0; 6],
            vlan_id: 0,
            vlan: false,
            version: 2,
            l3_type: 0,
        };
        e.gid[10] = 0xff;
        e.gid[11] = 0xff;
        e.gid[12..].copy_from_slice(&[10, 99, 0, 1]);
        assert_eq!(e.ipv4(), Some([10, 99, 0, 1]));
        e.gid[0] = 0xfe;
        assert_eq!(e.ipv4(), None);
    }
}
