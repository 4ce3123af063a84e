//! Unreliable datagram QPs (`st` UD) and the port's GSI QP (`st` QP1) on the device: one
//! packet per message, addressed by the WQE, checked by Q_Key at the receiver.
//!
//! Send: a UD send WQE is a control segment, a datagram segment (the 48-byte `mlx5_av` that
//! libmlx5 and mlx5_ib copy from their address handle: Q_Key, destination QP, UDP source
//! port, destination MAC, traffic class, hop limit, source GID index and flow label,
//! destination GID) and the gather list ([`UdWqe::decode`]). Each SEND / SEND with immediate
//! becomes one `UD_SEND_ONLY(_WITH_IMMEDIATE)` packet with a DETH {Q_Key, source QP}:
//! the WQE's Q_Key, or the QP's when its high bit is set (`ud_send_qkey`); the source QP is
//! the QP's number, 1 for the GSI QP. A payload over the QP's MTU completes with
//! `LOCAL_LENGTH_ERR`. The source address, MAC and VLAN are those of the GID entry the vector
//! names, the 802.1Q priority its SL (`stat_rate_sl` bits 3:1, as both drivers write it on
//! Ethernet); the entry's version picks RoCEv2 (UDP/IP) or RoCE v1 (EtherType 0x8915, a GRH
//! with the vector's traffic class, flow label and hop limit). The requester CQE is written
//! as soon as the packet is out.
//!
//! mlx5_ib without `set_deth_sqpn` (the model does not advertise it; on an Ethernet port
//! without LAG the capability would not matter) has one hardware GSI QP:
//! `mlx5_ib_create_gsi` creates it as `MLX5_IB_QPT_HW_GSI` (`st` QP1, `qp_num` 1 to ib_core)
//! and `mlx5_ib_gsi_post_send` posts ib_mad's UD sends on it (`get_tx_qp` returns `rx_qp`
//! when `num_qps` is 0), with `set_datagram_seg` like any UD QP; its receives land there
//! too. Its QPC has MTU 256 and `log_msg_max` 8 (`__mlx5_ib_modify_qp`, `is_sqp`).
//!
//! Receive: a UD packet goes to the QP its BTH names — destination QP 1 to the GSI QP,
//! 0xFFFFFF to every QP attached to the destination multicast GID (`ATTACH_TO_MCG`), any
//! other number to that UD QP — in RTR, RTS or SQD. The Q_Key must be the QP's (the GSI QP:
//! 0x80010000, the IBTA well-known GSI Q_Key); the payload must fit the QP's MTU; a receive
//! WQE must be posted (UD has no RNR: the packet is dropped and counted). The receive buffer
//! gets the 40-byte GRH area first — the IPv6 header as received, or for IPv4 20 zero bytes
//! then the IPv4 header, where ib_core's `rdma_network_hdr.roce4grh` looks for it, or a RoCE
//! v1 packet's GRH itself — then the payload. The responder CQE: `byte_cnt` 40 + payload,
//! `flags_rqpn` the DETH source QP with the GRH bit and the L3 type (IPv4 / IPv6 / GRH, which
//! mlx5_ib turns into `network_hdr_type`: GRH is `RDMA_NETWORK_ROCE_V1`),
//! the immediate, the VLAN of a tagged frame; for the GSI QP without immediate the word holds
//! the BTH P_Key (mlx5_ib's `cqe->pkey` → `ib_find_cached_pkey`).
//!
//! A WQE that fails (a bad opcode or segment, an lkey check, a receive WQE too short or
//! unwritable) completes in error and moves the QP to the error state, as the card does.

use std::collections::BTreeMap;

use cx4_hw::{
    cq::cqe::opcode as cqe_op,
    qp::{qpc_st, qpc_state},
    wqe::{self, opcode, rdma::Av},
};
use zerocopy::FromBytes;

use crate::{
    bus::Bus,
    eth::{dma::WqeReader, mkeys::MkeyDma},
    fw::GidEntry,
};

use super::cqe::{self, RespInfo};
use super::engine::QpEngine;
use super::headers::{Bth, Deth, ExtHeaders, ImmDt, Opcode, TransportHeaders};
use super::ipoib_offload::UdOffload;
use super::packet::{Ethernet, Ip, Packet};
use super::psn::Psn;
use super::qp_view::QpView;
use super::qp_view::RxMeta;
use super::segment::PathMtu;
use super::status::WcStatus;
use super::unreliable::{ud_receive, ud_send_qkey, UdDrop, UdVerdict};
use super::wire::{network_header, peek_dst_gid, Path};
use super::wqe::{gather_list, sg_io, SendWqe, WqeError};
use super::Roce;

/// The BTH destination QP of an IB port's SMI QP, and the DETH source QP of its packets.
pub const SMI_QPN: u32 = 0;
/// The BTH destination QP of the port's GSI QP, and the DETH source QP of its packets.
pub const GSI_QPN: u32 = 1;
/// The IBTA well-known Q_Key of the GSI (QP1).
pub const GSI_QKEY: u32 = 0x8001_0000;
/// The BTH destination QP of multicast packets.
pub const MULTICAST_QPN: u32 = 0xff_ffff;
/// Bytes of the GRH area at the start of a UD receive buffer.
pub const GRH_LEN: usize = 40;
/// Bytes of the datagram segment (`struct mlx5_wqe_datagram_seg`, an `mlx5_av`).
pub const DATAGRAM_SEG_LEN: usize = 48;

/// The addressing of one UD send, from its datagram segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdAddress {
    /// Q_Key as posted (high bit: use the QP's).
    pub qkey: u32,
    /// Destination QP.
    pub dqpn: u32,
    /// UDP source port (0: derived from the QPs).
    pub udp_sport: u16,
    /// Destination MAC.
    pub rmac: [u8; 6],
    /// Traffic class (DSCP and ECN).
    pub tclass: u8,
    /// Hop limit / TTL (0: the default).
    pub hop_limit: u8,
    /// Index of the source GID entry.
    pub sgid_index: u8,
    /// IPv6 flow label.
    pub flow_label: u32,
    /// Destination GID (IPv6, or IPv4-mapped).
    pub rgid: [u8; 16],
    /// The 802.1Q priority (the SL on Ethernet).
    pub prio: u8,
    /// The destination LID (InfiniBand; the same bits as `udp_sport`).
    pub rlid: u16,
    /// The service level (InfiniBand: `stat_rate_sl` bits 3:0).
    pub sl: u8,
    /// The source path bits (InfiniBand: `fl_mlid` bits 6:0).
    pub path_bits: u8,
    /// Whether the vector is global (`grh_gid_fl` bit 30, mlx5_ib's `IB_AH_GRH`): on an IB
    /// port the packet carries a GRH.
    pub global: bool,
}

impl UdAddress {
    /// The addressing an `mlx5_av` holds.
    pub fn from_av(av: &Av) -> UdAddress {
        let mut rmac = [0u8; 6];
        rmac.copy_from_slice(av.rmac());
        let mut rgid = [0u8; 16];
        rgid.copy_from_slice(av.rgid());
        let gf = av.grh_gid_fl();
        UdAddress {
            qkey: av.qkey(),
            dqpn: av.dqpn(),
            udp_sport: av.udp_sport() as u16,
            rmac,
            tclass: av.tclass() as u8,
            hop_limit: av.hop_limit() as u8,
            sgid_index: ((gf >> 20) & 0xff) as u8,
            flow_label: gf & 0xf_ffff,
            rgid,
            prio: ((av.sl() >> 1) & 7) as u8,
            rlid: av.rlid() as u16,
            sl: (av.sl() & 0xf) as u8,
            path_bits: (av.fl_mlid() & 0x7f) as u8,
            global: gf & (1 << 30) != 0,
        }
    }

    /// The path of a packet from QP `qpn` along this vector — RoCE v1 (a GRH with the
    /// vector's traffic class, flow label and hop limit) when the source GID entry is v1;
    /// fails when the source GID index names no entry or two RoCEv2 GIDs are of different IP
    /// versions.
    pub fn path(&self, qpn: u32, gids: &BTreeMap<u16, GidEntry>) -> Result<Path, String> {
        let idx = u16::from(self.sgid_index);
        let g = gids
            .get(&idx)
            .ok_or_else(|| format!("source GID index {idx} not in the RoCE address table"))?;
        let hop = super::wire::hop_limit(self.hop_limit);
        let ip = network_header(
            g,
            self.rgid,
            self.tclass,
            self.tclass >> 2,
            self.flow_label,
            hop,
        )?;
        let udp_sport = if ip.is_v1() {
            0
        } else {
            super::wire::udp_sport(self.udp_sport, qpn, self.dqpn)
        };
        let vlan_tci = g
            .vlan
            .then_some((u16::from(self.prio) << 13) | (g.vlan_id & 0xfff));
        Ok(Path {
            eth: Ethernet {
                dst: self.rmac,
                src: g.mac,
                vlan_tci,
            },
            ip,
            udp_sport,
            remote_qpn: self.dqpn,
            ib: None,
        })
    }
}

/// A decoded UD send WQE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdWqe {
    /// The control segment and gather list (no remote address, no atomic).
    pub wqe: SendWqe,
    /// The datagram segment (`None` for a NOP).
    pub av: Option<UdAddress>,
    /// The Ethernet segment of a QP with IPoIB's offloads ([`UdOffload`]).
    pub offload: Option<UdOffload>,
}

impl UdWqe {
    /// Decodes the UD send WQE whose first basic block has producer index `index`: SEND or
    /// SEND with immediate (a datagram segment, then data segments or one inline segment), or
    /// NOP; on a QP with IPoIB's offloads (`ulp`: `ulp_stateless_offload_mode` 1) also LSO,
    /// and a pad and Ethernet segment follow the datagram segment. Any other opcode is
    /// refused ([`WqeError::BadOpcode`]: `LOCAL_QP_OP_ERR`).
    pub fn decode<R: WqeReader + ?Sized>(r: &R, index: u16, ulp: bool) -> Result<UdWqe, WqeError> {
        let (mut w, ds) = SendWqe::ctrl(r, index)?;
        match w.opcode {
            opcode::NOP => {
                return Ok(UdWqe {
                    wqe: w,
                    av: None,
                    offload: None,
                })
            }
            opcode::SEND | opcode::SEND_IMM => {}
            opcode::LSO if ulp => {}
            op => return Err(WqeError::BadOpcode(op)),
        }
        let start = wqe::SEND_WQE_DS;
        let end = usize::from(ds) * wqe::SEND_WQE_DS;
        if start + DATAGRAM_SEG_LEN > end {
            return Err(WqeError::BadSize { ds });
        }
        let mut b = [0u8; DATAGRAM_SEG_LEN];
        r.read(start, &mut b).map_err(WqeError::Unreadable)?;
        let av = Av::read_from_bytes(&b[..]).map_err(|_| WqeError::BadSize { ds })?;
        let mut at = start + DATAGRAM_SEG_LEN;
        let offload = if ulp {
            let (o, data_at) = UdOffload::decode(r, at, end, w.opcode == opcode::LSO)?;
            at = data_at;
            Some(o)
        } else {
            None
        };
        w.gather = gather_list(r, at, end)?;
        Ok(UdWqe {
            wqe: w,
            av: Some(UdAddress::from_av(&av)),
            offload,
        })
    }
}

/// The 40-byte GRH area of a received packet `p` (parsed from `frame`): the IPv6 header, or
/// 20 zero bytes then the IPv4 header (`union rdma_network_hdr`), or a RoCE v1 packet's GRH
/// itself.
pub fn grh_area(frame: &[u8], p: &Packet<'_>) -> [u8; GRH_LEN] {
    let l3 = p.eth.wire_len();
    let mut g = [0u8; GRH_LEN];
    match p.ip {
        Ip::V4(_) => {
            if let Some(h) = frame.get(l3..l3 + 20) {
                g[20..].copy_from_slice(h);
            }
        }
        Ip::V6(_) | Ip::Grh(_) => {
            if let Some(h) = frame.get(l3..l3 + GRH_LEN) {
                g.copy_from_slice(h);
            }
        }
    }
    g
}

/// Whether a service type is run by this file.
pub fn is_datagram(st: u8) -> bool {
    matches!(st, qpc_st::UD | qpc_st::QP1 | qpc_st::QP0)
}

impl QpView {
    fn is_gsi(&self) -> bool {
        self.st == qpc_st::QP1
    }

    /// The DETH source QP of the QP's packets: 0 for the SMI QP, 1 for the GSI QP.
    pub(super) fn ud_src_qp(&self) -> u32 {
        match self.st {
            qpc_st::QP0 => SMI_QPN,
            qpc_st::QP1 => GSI_QPN,
            _ => self.qpn,
        }
    }

    /// The Q_Key the QP sends with (high-bit rule) and accepts.
    fn ud_qkey(&self) -> u32 {
        if self.is_gsi() {
            GSI_QKEY
        } else {
            self.qkey
        }
    }

    /// The largest UD payload (the context's MTU; mlx5_ib sets 4096 for UD, 256 for QP1).
    fn ud_mtu(&self) -> PathMtu {
        PathMtu::from_code(self.mtu).unwrap_or(PathMtu::Mtu4096)
    }
}

impl Roce<'_> {
    /// Executes one decoded (or undecodable) UD send WQE with counter `index`, opcode `op`.
    pub(super) fn ud_post_send(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        decoded: Result<UdWqe, WqeError>,
        index: u16,
        op: u8,
    ) {
        let mtu = v.ud_mtu();
        // The length first: a key check walks the whole (guest-given) range.
        let checked = decoded.and_then(|w| {
            // An LSO message is cut to the MTU (each datagram checked below).
            let lso = w.offload.as_ref().is_some_and(|o| o.lso.is_some());
            if w.av.is_some() && !lso && w.wqe.len() > u64::from(mtu.bytes()) {
                return Err(WqeError::BadSegment(format!(
                    "{} bytes over the MTU of {}",
                    w.wqe.len(),
                    mtu.bytes()
                )));
            }
            self.wqe_keys(bus, v.pd, &w.wqe)?;
            Ok(w)
        });
        let w = match checked {
            Ok(w) => w,
            Err(e) => {
                log::warn!(
                    "UD QP {:#x} WQE {index:#x}: {e}: error CQE, QP to error",
                    v.qpn
                );
                self.local_error(bus, q, v, index, op, e.status());
                return;
            }
        };
        let Some(av) = w.av else {
            if w.wqe.signaled {
                let c = cqe::req_cqe(v.cqe_qp(), index, w.wqe.opcode, 0);
                self.post(bus, v.cqn_snd, &c, false);
            }
            return;
        };
        let len = w.wqe.len();
        let mut payload = vec![0u8; len as usize];
        let dma = MkeyDma {
            fw: self.fw,
            mem: &bus.mem,
            pd: v.pd,
        };
        if let Err(e) = w.wqe.gather(&dma, 0, &mut payload) {
            log::warn!("UD QP {:#x} WQE {index:#x}: gather failed: {e}", v.qpn);
            self.local_error(bus, q, v, index, op, WcStatus::LocalProtErr);
            return;
        }
        // IPoIB's offloads: the checksums filled, an LSO message cut into datagrams.
        let (datagrams, len) = match &w.offload {
            None => (vec![payload], len),
            Some(o) => {
                let mut msg = o.header().to_vec();
                msg.extend_from_slice(&payload);
                let max = mtu.bytes() as usize;
                match o.datagrams(&msg) {
                    Ok(d) if d.iter().all(|d| d.len() <= max) => {
                        if !o.flags.is_empty() || o.lso.is_some() {
                            self.roce.stats.ud_tx_offload += 1;
                        }
                        if o.lso.is_some() {
                            self.roce.stats.ud_tx_lso_segments += d.len() as u64;
                        }
                        (d, msg.len() as u64)
                    }
                    r => {
                        log::warn!(
                            "UD QP {:#x} WQE {index:#x}: offload of {} bytes: {:?}",
                            v.qpn,
                            msg.len(),
                            r.map(|d| d.iter().map(Vec::len).max())
                        );
                        self.local_error(bus, q, v, index, op, WcStatus::LocalLengthErr);
                        return;
                    }
                }
            }
        };
        let src_qp = v.ud_src_qp();
        let imm = w.wqe.opcode == opcode::SEND_IMM;
        for payload in &datagrams {
            let psn = q.ud_psn.unwrap_or(Psn::new(0));
            q.ud_psn = Some(psn.next());
            let mut bth = Bth::new(
                if imm {
                    Opcode::UdSendOnlyWithImmediate
                } else {
                    Opcode::UdSendOnly
                },
                av.dqpn,
                psn.value(),
            );
            bth.solicited = w.wqe.solicited;
            let ext = ExtHeaders {
                deth: Some(Deth {
                    qkey: ud_send_qkey(av.qkey, v.ud_qkey()),
                    src_qp,
                }),
                imm: imm.then_some(ImmDt { imm: w.wqe.imm }),
                ..Default::default()
            };
            if self.fw.ib_mode() {
                self.ib_ud_send(v, &av, bth, ext, payload);
            } else {
                self.roce_ud_send(v, &av, bth, ext, payload);
            }
        }
        if w.wqe.signaled {
            let c = cqe::req_cqe(v.cqe_qp(), index, w.wqe.opcode, len as u32);
            self.post(bus, v.cqn_snd, &c, false);
        }
    }

    /// A UD packet on a RoCE port: RoCE v1 or v2 as the vector's source GID says; a
    /// multicast send also loops back to the group's local members.
    fn roce_ud_send(
        &mut self,
        v: &QpView,
        av: &UdAddress,
        bth: Bth,
        ext: ExtHeaders,
        payload: &[u8],
    ) {
        match av
            .path(v.qpn, &self.fw.rdma.gids)
            .and_then(|p| p.frame(bth, ext, payload).map_err(|e| e.to_string()))
        {
            Ok(f) => {
                self.roce.stats.ud_tx += 1;
                let looped = peek_dst_gid(&f)
                    .filter(|_| av.dqpn == MULTICAST_QPN)
                    .and_then(|g| self.mc_loopback(v.qpn, &g));
                if let Some(blocked) = looped {
                    self.roce.stats.ud_mc_loopback += 1;
                    self.roce
                        .loopback
                        .push_back(super::looped::Looped::Frame(f.clone(), blocked));
                }
                self.roce_transmit(f);
            }
            Err(e) => {
                // The datagram is lost; the WQE completes (the card does not check vectors).
                log::debug!("UD QP {:#x}: datagram not sent: {e}", v.qpn);
                self.roce.stats.ud_tx_bad_av += 1;
            }
        }
    }

    /// Whether a multicast send of QP `qpn` to group `gid` also reaches the group's QPs on
    /// this port — `Some` of the QP that must not get it back (the sender when its context
    /// has `block_lb_mc`, IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK) — or `None` when no other
    /// member is attached here.
    pub(super) fn mc_loopback(&self, qpn: u32, gid: &[u8; 16]) -> Option<Option<u32>> {
        let block = self
            .fw
            .rdma
            .qps
            .get(&qpn)
            .is_some_and(|qp| qp.ctx.block_lb_mc() != 0);
        self.fw
            .rdma
            .mcgs
            .get(gid)
            .is_some_and(|m| m.iter().any(|&q| !block || q != qpn))
            .then_some(block.then_some(qpn))
    }

    /// A UD packet `p` (parsed from `frame`): to the GSI QP, the multicast group's QPs
    /// (except `blocked`), or the UD QP its BTH names.
    pub(super) fn ud_receive_packet(
        &mut self,
        bus: &mut Bus,
        frame: &[u8],
        p: &Packet<'_>,
        meta: RxMeta,
        blocked: Option<u32>,
    ) {
        let hdr = p.transport();
        let targets: Vec<u32> = match hdr.bth.dest_qp {
            GSI_QPN => self.fw.rdma.gsi.into_iter().collect(),
            MULTICAST_QPN => self
                .fw
                .rdma
                .mcgs
                .get(&p.ip.dst_gid())
                .map(|m| m.iter().copied().filter(|&q| Some(q) != blocked).collect())
                .unwrap_or_default(),
            n => vec![n],
        };
        if targets.is_empty() {
            self.roce.stats.ud_rx_no_target += 1;
            return;
        }
        let grh = grh_area(frame, p);
        for qpn in targets {
            let ud = self
                .fw
                .rdma
                .qps
                .get(&qpn)
                .is_some_and(|qp| is_datagram(qp.st()));
            if !ud || !self.roce.qps.contains_key(&qpn) {
                self.roce.stats.rx_no_qp += 1;
                continue;
            }
            self.with_qp(bus, qpn, |d, bus, q, v| {
                d.ud_deliver(bus, q, v, &hdr, &grh, p.payload, meta)
            });
        }
    }

    /// Delivers a UD packet to QP `q`: the receive rule, then the GRH area and payload into
    /// the next receive WQE, and the responder CQE.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn ud_deliver(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        hdr: &TransportHeaders,
        grh: &[u8; GRH_LEN],
        payload: &[u8],
        meta: RxMeta,
    ) {
        if q.error || !matches!(v.state, qpc_state::RTR | qpc_state::RTS | qpc_state::SQD) {
            self.roce.stats.rx_no_qp += 1;
            return;
        }
        let available = self.recv_available(bus, q, v);
        let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
        let (len, imm, src_qp, solicited) =
            match ud_receive(hdr, len, v.ud_mtu(), v.ud_qkey(), available) {
                UdVerdict::Deliver {
                    len,
                    imm,
                    src_qp,
                    solicited,
                } => (len, imm, src_qp, solicited),
                UdVerdict::Drop(why) => {
                    let s = &mut self.roce.stats;
                    match why {
                        UdDrop::QKey => {
                            s.ud_rx_qkey += 1;
                            if meta.ib.is_some() {
                                // PortInfo's Q_KeyViolations (IBA 10.9.4).
                                let c = &mut self.fw.ib.qkey_violations;
                                *c = c.saturating_add(1);
                            }
                        }
                        UdDrop::NoReceive => s.ud_rx_no_recv += 1,
                        UdDrop::TooLong => s.ud_rx_too_long += 1,
                        UdDrop::NotUd => s.ud_rx_malformed += 1,
                    }
                    log::trace!("UD QP {:#x}: packet dropped: {why:?}", v.qpn);
                    return;
                }
            };
        let o = match self.take_recv(bus, q, v) {
            Ok(o) => o,
            Err(e) => {
                log::warn!("UD QP {:#x}: receive WQE unreadable: {e}", v.qpn);
                if v.srqn.is_none() {
                    let index = q.rq_cc.wrapping_sub(1) as u16;
                    self.ud_recv_error(bus, q, v, index, WcStatus::LocalQpOpErr);
                } else {
                    self.roce.stats.errors += 1;
                }
                return;
            }
        };
        let total = GRH_LEN as u64 + u64::from(len);
        let cap: u64 = o.sges.iter().map(|s| u64::from(s.len)).sum();
        if total > cap {
            log::debug!(
                "UD QP {:#x}: {total} bytes for a receive WQE of {cap}",
                v.qpn
            );
            self.ud_recv_error(bus, q, v, o.index, WcStatus::LocalLengthErr);
            return;
        }
        let mut data = Vec::with_capacity(total as usize);
        data.extend_from_slice(grh);
        data.extend_from_slice(payload.get(..len as usize).unwrap_or_default());
        let dma = MkeyDma {
            fw: self.fw,
            mem: &bus.mem,
            pd: v.recv_pd,
        };
        let r = sg_io(&o.sges, 0, data.len(), |s, at, range| {
            crate::eth::dma::Dma::write(&dma, s.lkey, at, &data[range])
        });
        if let Err(e) = r {
            log::debug!("UD QP {:#x}: receive scatter: {e}", v.qpn);
            self.ud_recv_error(bus, q, v, o.index, WcStatus::LocalProtErr);
            return;
        }
        let (opcode, immediate) = match imm {
            Some(i) => (cqe_op::RESP_SEND_IMM, i),
            // mlx5_ib reads a QP1 completion's P_Key from this word (`cqe->pkey`).
            None if v.is_gsi() => (cqe_op::RESP_SEND, u32::from(hdr.bth.pkey)),
            None => (cqe_op::RESP_SEND, 0),
        };
        let c = cqe::resp_cqe(
            v.cqe_qp(),
            &RespInfo {
                wqe_counter: o.index,
                byte_cnt: total as u32,
                opcode,
                immediate,
                remote_qpn: src_qp,
                l3: meta.l3,
                vlan: meta.vlan,
                ib: meta.ib,
                csum_ok: v.ulp
                    && meta.ib.is_some()
                    && super::ipoib_offload::rx_csum_ok(
                        payload.get(..len as usize).unwrap_or_default(),
                    ),
            },
        );
        self.roce.stats.ud_rx += 1;
        self.post(bus, v.cqn_rcv, &c, solicited);
    }

    /// A receive WQE that cannot take the packet: its error CQE, and the QP to error.
    fn ud_recv_error(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        index: u16,
        s: WcStatus,
    ) {
        self.roce.stats.errors += 1;
        let e = cqe::err_cqe(v.cqe_qp(), true, s, index, 0);
        self.post(bus, v.cqn_rcv, &e, false);
        self.enter_error(bus, q, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roce::packet::Ecn;

    fn ud_wqe(op: u8, ds: u8, av: &Av, tail: &[u8]) -> Vec<u8> {
        let mut w = Vec::new();
        w.extend(wqe::opmod_idx_opcode(0, 3, op).to_be_bytes());
        w.extend(wqe::qpn_ds(0x42, ds).to_be_bytes());
        w.extend([0, 0, 0, 0x08]);
        w.extend(0x0102_0304u32.to_be_bytes());
        w.extend(&av.0);
        w.extend(tail);
        w
    }

    fn av() -> Av {
        let mut a = Av::new();
        a.set_qkey(0x1111_1111);
        a.set_dqp_dct(0x12_3456 | cx4_hw::wqe::rdma::EXTENDED_UD_AV);
        a.set_stat_rate_sl(3 << 1);
        a.set_udp_sport(0xc0de);
        a.rmac_mut().copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        a.set_tclass(0x2 | (26 << 2));
        a.set_hop_limit(0);
        a.set_grh_gid_fl((1 << 20) | 0x1_2345);
        a.rgid_mut()
            .copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 9]);
        a
    }

    #[test]
    fn datagram_segment_and_inline_data_decode() {
        let mut tail = Vec::new();
        tail.extend((5u32 | wqe::INLINE_SEG).to_be_bytes());
        tail.extend(b"hello");
        tail.resize(16, 0);
        let w = ud_wqe(opcode::SEND_IMM, 5, &av(), &tail);
        let d = UdWqe::decode(&w[..], 3, false).unwrap();
        let a = d.av.unwrap();
        assert_eq!(
            (
                a.qkey,
                a.dqpn,
                a.udp_sport,
                a.sgid_index,
                a.flow_label,
                a.prio
            ),
            (0x1111_1111, 0x12_3456, 0xc0de, 1, 0x1_2345, 3)
        );
        assert_eq!(d.wqe.imm, 0x0102_0304);
        assert_eq!(
            d.wqe.gather,
            super::super::wqe::Gather::Inline(b"hello".to_vec())
        );
        assert_eq!(d.wqe.bbs, 2);
        // No room for the datagram segment; an RDMA WRITE on UD.
        let w = ud_wqe(opcode::SEND, 3, &av(), &[]);
        assert_eq!(
            UdWqe::decode(&w[..], 0, false),
            Err(WqeError::BadSize { ds: 3 })
        );
        let w = ud_wqe(opcode::RDMA_WRITE, 4, &av(), &[]);
        assert_eq!(
            UdWqe::decode(&w[..], 0, false).unwrap_err().status(),
            WcStatus::LocalQpOpErr
        );
    }

    #[test]
    fn vector_to_path() {
        let mut gids = BTreeMap::new();
        let mut src = [0u8; 16];
        src[10] = 0xff;
        src[11] = 0xff;
        src[12..].copy_from_slice(&[10, 0, 0, 1]);
        gids.insert(
            1,
            GidEntry {
                gid: src,
                mac: [2, 0, 0, 0, 0, 1],
                vlan_id: 5,
                vlan: true,
                version: 2,
                l3_type: 0,
            },
        );
        let a = UdAddress::from_av(&av());
        let p = a.path(0x99, &gids).unwrap();
        assert_eq!(p.eth.vlan_tci, Some(3 << 13 | 5));
        assert_eq!(p.udp_sport, 0xc0de);
        assert_eq!(p.remote_qpn, 0x12_3456);
        match p.ip {
            Ip::V4(h) => {
                assert_eq!((h.dst, h.ttl, h.dscp), ([10, 0, 0, 9], 64, 26));
                assert_eq!(h.ecn, Ecn::Ect0);
            }
            _ => panic!("IPv4 expected"),
        }
        let mut b = a;
        b.rgid = [0xfe; 16];
        assert!(b.path(0x99, &gids).is_err(), "mixed IP versions");
        b.sgid_index = 7;
        assert!(b.path(0x99, &gids).is_err(), "no such GID entry");
        // From a RoCE v1 entry: a GRH with the vector's whole traffic class (no ECN meaning),
        // flow label and hop limit; any two GIDs; no UDP source port.
        gids.get_mut(&1).unwrap().version = 0;
        let mut c = a;
        c.rgid = [0xfe; 16];
        let p = c.path(0x99, &gids).unwrap();
        assert_eq!(
            p.ip,
            Ip::Grh(crate::roce::packet::Grh {
                sgid: src,
                dgid: [0xfe; 16],
                traffic_class: 0x6a,
                flow_label: 0x1_2345,
                hop_limit: 64,
            })
        );
        assert_eq!((p.udp_sport, p.eth.vlan_tci), (0, Some(3 << 13 | 5)));
    }
}
