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
//! Before the port is Active only QP0's packets flow.
//!
//! Receive (IBA 7.6, 9.6, 10.9): the DLID must be one of the port's (base LID plus path
//! bits) or permissive, and permissive only for QP0; QP0 only on VL15 and VL15 only for QP0;
//! before Active, QP0 only. The BTH P_Key must match an entry of the P_Key table (low 15 bits
//! equal, not both limited members) except for QP0, else the packet is dropped and
//! P_KeyViolations counts it. BTH destination QP 0 reaches the SMI QP, 1 the GSI QP, others
//! the UD QP of that number. The CQE carries the SLID, the SL and the DLID path bits and no
//! GRH; the receive buffer's 40-byte GRH area is left zero.

use cx4_hw::qp::{qpc_st, Qpc};

use crate::bus::Bus;
use crate::fw::ib_port::IbPort;

use super::headers::{Bth, ExtHeaders, Service, TransportHeaders};
use super::ib_wire::{self, IbPath, Lrh, PERMISSIVE_LID, VL15};
use super::looped::Looped;
use super::packet::{Ethernet, Grh, Ip};
use super::qp_view::{IbRx, QpView, RxMeta};
use super::ud::{UdAddress, GRH_LEN, GSI_QPN, SMI_QPN};
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

/// The path of a connected QP with context `ctx` on IB port `port` (MAC `mac`): DLID the
/// address path's `rlid`, SL its `sl`, source path bits its `mlid`, P_Key its table entry.
pub fn ib_path(ctx: &Qpc, port: &IbPort, mac: [u8; 6]) -> Path {
    let p = ctx.primary_address_path();
    let lrh = lrh_to(port, p.rlid() as u16, p.sl() as u8, p.mlid() as u8, false);
    Path {
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
            pkey: port
                .pkeys
                .get(p.pkey_index() as usize)
                .copied()
                .unwrap_or(0),
            src_mac: mac,
        }),
    }
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
        let f = match ib_wire::build(
            self.fw.vport.mac,
            lrh,
            TransportHeaders { bth, ext },
            payload,
        ) {
            Ok(f) => f,
            Err(e) => {
                log::debug!("QP {:#x}: IB datagram not built: {e}", v.qpn);
                self.roce.stats.ud_tx_bad_av += 1;
                return;
            }
        };
        self.roce.stats.ud_tx += 1;
        if local {
            self.roce.stats.tx_packets += 1;
            self.roce.stats.tx_bytes += f.len() as u64;
            self.roce.loopback.push_back(Looped::Frame(f, None));
        } else {
            self.roce_transmit_remote(f);
        }
    }

    /// An IB frame off the wire: counted, then received.
    pub fn ib_receive_wire(&mut self, bus: &mut Bus, frame: &[u8]) {
        self.fw
            .count_rx(crate::fw::Cast::Broadcast, frame.len() as u64);
        self.roce_sync(bus);
        self.ib_receive_packet(bus, frame, false);
        self.roce_drain_loopback(bus);
    }

    /// An IB packet for the port (`looped`: it never left the card).
    pub(super) fn ib_receive_packet(&mut self, bus: &mut Bus, frame: &[u8], looped: bool) {
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
        let path_bits = if lrh.dlid == PERMISSIVE_LID {
            (qp0).then_some(0)
        } else {
            own_lid(port, lrh.dlid)
        };
        let why = if path_bits.is_none() {
            Some("DLID not the port's")
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
            }),
        };
        if hdr.bth.opcode.info().service != Service::Ud {
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
        let target = match dest {
            SMI_QPN => self.fw.rdma.smi,
            GSI_QPN => self.fw.rdma.gsi,
            n => Some(n),
        };
        let Some(qpn) = target.filter(|q| {
            self.fw
                .rdma
                .qps
                .get(q)
                .is_some_and(|qp| super::ud::is_datagram(qp.st()))
                && self.roce.qps.contains_key(q)
        }) else {
            self.roce.stats.rx_no_qp += 1;
            return;
        };
        let grh = [0u8; GRH_LEN];
        self.with_qp(bus, qpn, |d, bus, q, v| {
            d.ud_deliver(bus, q, v, &hdr, &grh, p.payload, meta)
        });
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
