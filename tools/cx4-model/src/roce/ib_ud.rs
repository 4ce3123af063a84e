//! Datagrams on an InfiniBand port (`--link ib`): the SMI QP (QP0), the GSI QP (QP1) and UD
//! QPs sending and receiving LRH-addressed packets ([`super::ib_wire`]) through the same
//! WQE, receive and CQE paths as RoCE's (`ud.rs`).
//!
//! Send: the vector's `rlid` is the DLID, its SL (`stat_rate_sl` bits 3:0, `mlx5_ib`'s
//! `ah.c` on IB) the LRH's SL and, through the port's SL-to-VL table, its VL; QP0 sends on
//! VL15 with P_Key 0xFFFF. The SLID is the port's LID with the vector's path bits, or the
//! permissive LID when the DLID is permissive (a directed-route SMP's reply: opensm sends
//! only pure DR SMPs, DrSLID = DrDLID = 0xFFFF). A packet to one of the port's own LIDs
//! loops back inside the card (perfquery, sminfo and SA queries on the SM's own node).
//! Before the port is Active only QP0's packets flow. A global vector (`grh_gid_fl` bit 30,
//! mlx5_ib's `IB_AH_GRH`; ib_core sets it for every multicast address handle) adds a GRH:
//! SGID the port's GID at the vector's index (GidPrefix and the GUIDInfo entry), DGID,
//! traffic class, flow label and hop limit the vector's. A multicast DLID (0xC000..0xFFFE)
//! goes on the wire and, when QPs of this port are attached to the DGID (`ATTACH_TO_MCG`),
//! also loops back to them, the sender excepted when its context has `block_lb_mc`.
//!
//! Receive (IBA 7.6, 9.6, 10.9): the DLID must be one of the port's (base LID plus path
//! bits), a multicast LID, or permissive and then only for QP0; QP0 only on VL15 and VL15
//! only for QP0; before Active, QP0 only. A multicast packet needs a GRH, a UD opcode and
//! destination QP 0xFFFFFF, and reaches every QP attached to its DGID — matched by MGID
//! as mlx5's ATTACH_TO_MCG takes no MLID (IBA 10.5.2.3 leaves the match to the CA). A
//! unicast packet with a GRH must name one of the port's GIDs. The BTH P_Key must match an
//! entry of the P_Key table (low 15 bits equal, not both limited members) except for QP0,
//! else the packet is dropped and P_KeyViolations counts it; a UD Q_Key mismatch counts in
//! Q_KeyViolations. BTH destination QP 0 reaches the SMI QP, 1 the GSI QP, others the UD QP
//! of that number. The CQE carries the SLID, the SL, the DLID path bits and the GRH bit;
//! the receive buffer's 40-byte GRH area holds the GRH as received, or zeros.

use cx4_hw::qp::{qpc_st, Qpc};

use crate::bus::Bus;
use crate::fw::ib_port::{IbPort, GUID_CAP};

use super::headers::{Bth, ExtHeaders, Service, TransportHeaders};
use super::ib_wire::{self, is_multicast_lid, IbPath, Lrh, PERMISSIVE_LID, VL15};
use super::looped::Looped;
use super::packet::{Ethernet, Grh, Ip};
use super::qp_view::{IbRx, QpView, RxMeta};
use super::ud::{UdAddress, GRH_LEN, GSI_QPN, MULTICAST_QPN, SMI_QPN};
use super::wire::Path;
use super::Roce;

/// Whether a packet's P_Key `pkt` matches the table entry `entry` (IBA 10.9.3): the low 15
/// bits equal, at least one of the two a full member; 0x0000 and 0x8000 match nothing.
pub fn pkey_matches(pkt: u16, entry: u16) -> bool {
    pkt & 0x7fff != 0 && pkt & 0x7fff == entry & 0x7fff && (pkt | entry) & 0x8000 != 0
}

/// The LRH of a packet from `port` to `dlid` on `sl` with source path bits `path_bits` (VL15
/// for QP0's); PktLen and LNH are the builder's.
pub fn lrh_to(port: &IbPort, dlid: u16, sl: u8, path_bits: u8, smi: bool) -> Lrh {
    let slid = if dlid == PERMISSIVE_LID {
        PERMISSIVE_LID
    } else {
        let mask = (1u16 << port.lmc.min(7)) - 1;
        port.lid | (u16::from(path_bits) & mask)
    };
    let sl = sl & 0xf;
    let vl = if smi {
        VL15
    } else {
        let b = port.sl2vl[usize::from(sl / 2)];
        if sl.is_multiple_of(2) {
            b >> 4
        } else {
            b & 0xf
        }
    };
    Lrh {
        vl,
        sl,
        dlid,
        slid,
        ..Default::default()
    }
}

/// What a connected QP's IB path is made from: the port, its MAC (the carrying frames'
/// source) and its port GUID (GID index 0's interface ID).
#[derive(Clone, Copy, Debug)]
pub struct IbLink<'a> {
    /// The IB port.
    pub port: &'a IbPort,
    /// The port's MAC.
    pub mac: [u8; 6],
    /// The port GUID.
    pub guid: u64,
}

impl IbLink<'_> {
    /// The port's GID at `index` (GidPrefix and the GUIDInfo entry), if the index is in the
    /// table and the entry set.
    pub fn gid(&self, index: usize) -> Option<[u8; 16]> {
        (index < GUID_CAP)
            .then(|| self.port.gid(self.guid, index))
            .filter(|g| *g != [0; 16])
    }

    /// Whether `gid` is one of the port's GIDs.
    pub fn is_own_gid(&self, gid: &[u8; 16]) -> bool {
        (0..GUID_CAP).any(|i| self.gid(i).as_ref() == Some(gid))
    }
}

/// The GRH of a global vector: SGID the port's GID at `sgid_index`; fails when that index
/// names no GID.
fn grh_of(
    link: &IbLink<'_>,
    sgid_index: u8,
    dgid: [u8; 16],
    traffic_class: u8,
    flow_label: u32,
    hop_limit: u8,
) -> Result<Grh, String> {
    let sgid = link
        .gid(usize::from(sgid_index))
        .ok_or_else(|| format!("source GID index {sgid_index} not in the port's GID table"))?;
    Ok(Grh {
        sgid,
        dgid,
        traffic_class,
        flow_label: flow_label & 0xf_ffff,
        hop_limit,
    })
}

/// The path of a connected QP with context `ctx` on the IB port of `link`: DLID the address
/// path's `rlid`, SL its `sl`, source path bits its `mlid`, P_Key its table entry, and with
/// its `grh` bit a GRH (source GID index, DGID, traffic class, flow label, hop limit);
/// fails when the source GID index names no GID.
pub fn ib_path(ctx: &Qpc, link: IbLink<'_>) -> Result<Path, String> {
    let port = link.port;
    let p = ctx.primary_address_path();
    let lrh = lrh_to(port, p.rlid() as u16, p.sl() as u8, p.mlid() as u8, false);
    let grh = if p.grh() != 0 {
        let mut dgid = [0u8; 16];
        dgid.copy_from_slice(p.rgid_rip());
        Some(grh_of(
            &link,
            p.src_addr_index() as u8,
            dgid,
            p.tclass() as u8,
            p.flow_label(),
            p.hop_limit() as u8,
        )?)
    } else {
        None
    };
    let mac = link.mac;
    Ok(Path {
        eth: Ethernet {
            dst: [0xff; 6],
            src: mac,
            vlan_tci: None,
        },
        ip: Ip::Grh(Grh::default()),
        udp_sport: 0,
        remote_qpn: ctx.remote_qpn(),
        ib: Some(IbPath {
            lrh,
            grh,
            pkey: port
                .pkeys
                .get(p.pkey_index() as usize)
                .copied()
                .unwrap_or(0),
            src_mac: mac,
        }),
    })
}

/// The path bits of `dlid` if it is one of the port's LIDs (base LID plus 2^LMC - 1).
pub fn own_lid(port: &IbPort, dlid: u16) -> Option<u8> {
    let lids = 1u16 << port.lmc.min(7);
    (port.lid != 0 && dlid >= port.lid && dlid - port.lid < lids).then(|| (dlid - port.lid) as u8)
}

impl Roce<'_> {
    /// Sends one UD/GSI/SMI datagram of QP `v` along `av` on the IB link.
    pub(super) fn ib_ud_send(
        &mut self,
        v: &QpView,
        av: &UdAddress,
        mut bth: Bth,
        ext: ExtHeaders,
        payload: &[u8],
    ) {
        let smi = v.st == qpc_st::QP0;
        let port = &self.fw.ib;
        if !smi && !port.active() {
            log::debug!(
                "QP {:#x}: datagram before the port is Active, dropped",
                v.qpn
            );
            self.roce.stats.ud_tx_bad_av += 1;
            return;
        }
        let dlid = av.rlid;
        let lrh = lrh_to(port, dlid, av.sl, av.path_bits, smi);
        bth.pkey = if smi {
            0xffff
        } else {
            let idx = self
                .fw
                .rdma
                .qps
                .get(&v.qpn)
                .map_or(0, |qp| qp.ctx.primary_address_path().pkey_index() as usize);
            port.pkeys.get(idx).copied().unwrap_or(0)
        };
        let local = own_lid(port, dlid).is_some();
        let link = self.ib_link();
        let built = if av.global {
            grh_of(
                &link,
                av.sgid_index,
                av.rgid,
                av.tclass,
                av.flow_label,
                av.hop_limit,
            )
            .map(Some)
        } else {
            Ok(None)
        }
        .and_then(|grh| {
            ib_wire::build(
                self.fw.vport.mac,
                lrh,
                grh.as_ref(),
                TransportHeaders { bth, ext },
                payload,
            )
            .map_err(|e| e.to_string())
        });
        let f = match built {
            Ok(f) => f,
            Err(e) => {
                log::debug!("QP {:#x}: IB datagram not built: {e}", v.qpn);
                self.roce.stats.ud_tx_bad_av += 1;
                return;
            }
        };
        self.roce.stats.ud_tx += 1;
        if is_multicast_lid(dlid) {
            if let Some(blocked) = av
                .global
                .then_some(av.rgid)
                .and_then(|g| self.mc_loopback(v.qpn, &g))
            {
                self.roce.stats.ud_mc_loopback += 1;
                self.roce
                    .loopback
                    .push_back(Looped::Frame(f.clone(), blocked));
            }
            self.roce_transmit_remote(f);
        } else if local {
            self.roce.stats.tx_packets += 1;
            self.roce.stats.tx_bytes += f.len() as u64;
            self.roce.loopback.push_back(Looped::Frame(f, None));
        } else {
            self.roce_transmit_remote(f);
        }
    }

    /// The port, MAC and GUID IB paths are made from.
    pub(super) fn ib_link(&self) -> IbLink<'_> {
        IbLink {
            port: &self.fw.ib,
            mac: self.fw.vport.mac,
            guid: self.fw.vport.guid,
        }
    }

    /// An IB frame off the wire: counted, then received.
    pub fn ib_receive_wire(&mut self, bus: &mut Bus, frame: &[u8]) {
        self.fw
            .count_rx(crate::fw::Cast::Broadcast, frame.len() as u64);
        self.roce_sync(bus);
        self.ib_receive_packet(bus, frame, false, None);
        self.roce_drain_loopback(bus);
    }

    /// An IB packet for the port (`looped`: it never left the card; `blocked`: the sender of
    /// a looped multicast packet that must not get it back).
    pub(super) fn ib_receive_packet(
        &mut self,
        bus: &mut Bus,
        frame: &[u8],
        looped: bool,
        blocked: Option<u32>,
    ) {
        let p = match ib_wire::parse(frame, looped) {
            Ok(p) => p,
            Err(e) => {
                log::debug!("IB frame of {} bytes dropped: {e}", frame.len());
                self.roce.stats.rx_malformed += 1;
                return;
            }
        };
        self.roce.stats.rx_packets += 1;
        self.roce.stats.rx_bytes += frame.len() as u64;
        self.fw.ib.settle();
        let port = &self.fw.ib;
        let (lrh, hdr) = (p.lrh, p.hdr);
        let dest = hdr.bth.dest_qp;
        let qp0 = dest == SMI_QPN;
        let ud = hdr.bth.opcode.info().service == Service::Ud;
        let mc = is_multicast_lid(lrh.dlid);
        let path_bits = if lrh.dlid == PERMISSIVE_LID {
            (qp0).then_some(0)
        } else if mc {
            Some(0)
        } else {
            own_lid(port, lrh.dlid)
        };
        let dgid = p.grh.map(|(g, _)| g.dgid);
        let why = if path_bits.is_none() {
            Some("DLID not the port's")
        } else if mc && dgid.is_none() {
            Some("multicast without a GRH")
        } else if mc && (!ud || dest != MULTICAST_QPN) {
            Some("multicast not a UD packet to QP 0xFFFFFF")
        } else if !mc && dgid.is_some_and(|g| !self.ib_link().is_own_gid(&g)) {
            Some("DGID not the port's")
        } else if qp0 != (lrh.vl == VL15) {
            Some("QP0 and VL15 go together")
        } else if !qp0 && !port.active() {
            Some("port not Active")
        } else {
            None
        };
        if let Some(why) = why {
            log::debug!(
                "IB packet DLID {:#x} VL {} QP {dest:#x} dropped: {why}",
                lrh.dlid,
                lrh.vl
            );
            self.roce.stats.ud_rx_no_target += 1;
            return;
        }
        if !qp0 && !port.pkeys.iter().any(|&e| pkey_matches(hdr.bth.pkey, e)) {
            log::debug!("IB packet P_Key {:#06x}: no table entry", hdr.bth.pkey);
            let v = &mut self.fw.ib.pkey_violations;
            *v = v.saturating_add(1);
            return;
        }
        let meta = RxMeta {
            l3: 0,
            vlan: None,
            ib: Some(IbRx {
                slid: lrh.slid,
                sl: lrh.sl,
                path_bits: path_bits.unwrap_or(0),
                grh: p.grh.is_some(),
            }),
        };
        let mut grh = [0u8; GRH_LEN];
        if let Some((_, raw)) = p.grh {
            grh.copy_from_slice(raw);
        }
        if !ud {
            // RC, UC, XRC: the same engine as RoCE's, by the BTH's QP.
            if !self.fw.rdma.qps.contains_key(&dest) || !self.roce.qps.contains_key(&dest) {
                self.roce.stats.rx_no_qp += 1;
                return;
            }
            self.with_qp(bus, dest, |d, bus, q, v| {
                d.qp_packet(bus, q, v, &hdr, p.payload, meta)
            });
            return;
        }
        let targets: Vec<u32> = match dest {
            SMI_QPN => self.fw.rdma.smi.into_iter().collect(),
            GSI_QPN => self.fw.rdma.gsi.into_iter().collect(),
            MULTICAST_QPN if mc => dgid
                .and_then(|g| self.fw.rdma.mcgs.get(&g))
                .map(|m| m.iter().copied().filter(|&q| Some(q) != blocked).collect())
                .unwrap_or_default(),
            n => vec![n],
        };
        if mc && targets.is_empty() {
            self.roce.stats.ud_rx_no_target += 1;
            return;
        }
        for qpn in targets {
            let Some(qp) =
                self.fw.rdma.qps.get(&qpn).filter(|qp| {
                    super::ud::is_datagram(qp.st()) && self.roce.qps.contains_key(&qpn)
                })
            else {
                self.roce.stats.rx_no_qp += 1;
                continue;
            };
            // A UD QP takes only its own partition (IBA 10.9.3: the entry at the QP's
            // P_Key index); QP1 any entry of the table (checked above), QP0 any.
            if qp.st() == qpc_st::UD {
                let idx = qp.ctx.primary_address_path().pkey_index() as usize;
                let own = self.fw.ib.pkeys.get(idx).copied().unwrap_or(0);
                if !pkey_matches(hdr.bth.pkey, own) {
                    log::debug!(
                        "UD QP {qpn:#x}: P_Key {:#06x} not its {own:#06x}",
                        hdr.bth.pkey
                    );
                    let v = &mut self.fw.ib.pkey_violations;
                    *v = v.saturating_add(1);
                    continue;
                }
            }
            self.with_qp(bus, qpn, |d, bus, q, v| {
                d.ud_deliver(bus, q, v, &hdr, &grh, p.payload, meta)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pkey_matches;

    #[test]
    fn pkeys_match_by_their_low_bits_with_one_full_member() {
        assert!(pkey_matches(0xffff, 0xffff));
        assert!(pkey_matches(0x7fff, 0xffff), "limited against full");
        assert!(pkey_matches(0xffff, 0x7fff), "full against limited");
        assert!(!pkey_matches(0x7fff, 0x7fff), "two limited members");
        assert!(!pkey_matches(0x8001, 0xffff), "another partition");
        assert!(!pkey_matches(0x8000, 0x8000), "the invalid P_Key");
        assert!(!pkey_matches(0x0000, 0x8000));
    }
}
