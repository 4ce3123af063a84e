//! Completion entries of the Ethernet engine: receive CQEs with everything mlx5e reads (byte
//! count, RSS hash and kind, checksum, L3/L4 OK bits and header types, tunnelled bit, stripped
//! VLAN, flow tag, WQE counter), requester CQEs of send queues, and error CQEs.
//!
//! The entries are built with owner bit 0: the CQ writer (`fw::cq` `post_cqe`) sets the owner
//! bit of the pass it writes them in.

use cx4_hw::cq::cqe::{self, l3_hdr_type, l4_hdr_type, op_own, opcode, Cqe64, ErrCqe};

use super::{
    csum::RxCsum,
    frame::{Headers, IpVersion, L4Kind},
    rss::RssHash,
};

/// What a receive CQE reports besides the checksum and the hash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxInfo {
    /// Bytes written to the receive buffers (after VLAN stripping).
    pub byte_cnt: u32,
    /// The stripped 802.1Q TCI, if the tag was stripped.
    pub vlan: Option<u16>,
    /// Flow tag of the steering entry that received the packet (24 bits; 0 by default).
    pub flow_tag: u32,
    /// Counter of the receive WQE consumed.
    pub wqe_counter: u16,
    /// The RQ's `user_index`, reported in `srqn_uidx` (libmlx5 finds a raw packet QP or WQ
    /// by it: cq.c `mlx5_find_uidx`; mlx5e's RQs leave it 0).
    pub user_index: u32,
}

/// The CQE's (L3, L4) header types for the layer it reports (inner when tunnelled).
pub fn header_types(frame: &[u8], h: &Headers, tunneled: bool) -> (u8, u8) {
    let layer = if tunneled {
        h.inner.as_ref().unwrap_or(&h.outer)
    } else {
        &h.outer
    };
    let Some(l3) = layer.l3 else {
        return (l3_hdr_type::NONE, l4_hdr_type::NONE);
    };
    let l3t = match l3.version {
        IpVersion::V4 => l3_hdr_type::IPV4,
        IpVersion::V6 => l3_hdr_type::IPV6,
    };
    let l4t = match layer.l4 {
        _ if l3.fragment => l4_hdr_type::NONE,
        Some(l4) if l4.kind == L4Kind::Udp => l4_hdr_type::UDP,
        Some(l4) if l4.kind == L4Kind::Tcp => {
            let ack = frame.get(l4.offset + 13).is_some_and(|f| f & 0x10 != 0);
            let data = l3.end > l4.payload();
            match (ack, data) {
                (false, _) => l4_hdr_type::TCP_NO_ACK,
                (true, false) => l4_hdr_type::TCP_ACK_NO_DATA,
                (true, true) => l4_hdr_type::TCP_ACK_AND_DATA,
            }
        }
        _ => l4_hdr_type::NONE,
    };
    (l3t, l4t)
}

/// A receive completion (`MLX5_CQE_RESP_SEND`) for a frame parsed as `h` (before VLAN
/// stripping).
pub fn rx_cqe(frame: &[u8], h: &Headers, csum: &RxCsum, rss: &RssHash, info: &RxInfo) -> Cqe64 {
    let mut c = Cqe64::new();
    c.set_outer_l3_tunneled(csum.tunneled.into());
    c.set_rss_hash_result(rss.hash);
    c.set_rss_hash_type(cqe::rss_hash_type(rss.ip, rss.l4).into());
    c.set_check_sum(csum.check_sum.into());
    c.set_l3_ok(csum.l3_ok.into());
    c.set_l4_ok(csum.l4_ok.into());
    let (l3t, l4t) = header_types(frame, h, csum.tunneled);
    c.set_l3_hdr_type(l3t.into());
    c.set_l4_hdr_type(l4t.into());
    if let Some(tci) = info.vlan {
        c.set_cvlan_stripped(1);
        c.set_vlan_info(tci.into());
    }
    c.set_byte_cnt(info.byte_cnt);
    c.set_flow_tag(info.flow_tag);
    c.set_srqn(info.user_index & 0xff_ffff);
    c.set_wqe_counter(info.wqe_counter.into());
    c.set_op_own(op_own(opcode::RESP_SEND, 0, 0).into());
    c
}

/// Where a packet of a striding RQ landed (en_rx.c `mlx5e_handle_rx_cqe_mpwrq`): `wqe_id` is
/// the WQE's index, `wqe_counter` the first stride, and `byte_cnt` packs the strides consumed
/// (bits 30:16) with the byte count (15:0).
pub fn set_stride_position(c: &mut Cqe64, index: u16, stride: u32, strides: u32, bytes: u32) {
    c.set_wqe_id(index.into());
    c.set_wqe_counter(stride & 0xffff);
    c.set_byte_cnt(((strides & 0x7fff) << 16) | (bytes & 0xffff));
}

/// A filler completion of a striding RQ: the `strides` left from `stride` on in WQE `index`,
/// which the next packet did not fit in, are consumed empty (`byte_cnt` bit 31).
pub fn filler_cqe(index: u16, stride: u32, strides: u32) -> Cqe64 {
    let mut c = Cqe64::new();
    set_stride_position(&mut c, index, stride, strides, 0);
    c.set_byte_cnt(c.byte_cnt() | 1 << 31);
    c.set_op_own(op_own(opcode::RESP_SEND, 0, 0).into());
    c
}

/// A requester completion (`MLX5_CQE_REQ`) of the send WQE `wqe_counter` with opcode
/// `wqe_opcode` on SQ `sqn` (`sop_drop_qpn` = opcode << 24 | sqn, as mlx5_ib reads it).
/// [`set_user_index`] adds the SQ's `user_index`.
pub fn tx_cqe(wqe_counter: u16, wqe_opcode: u8, sqn: u32) -> Cqe64 {
    let mut c = Cqe64::new();
    c.set_sop_drop_qpn((u32::from(wqe_opcode) << 24) | (sqn & 0xff_ffff));
    c.set_wqe_counter(wqe_counter.into());
    c.set_op_own(op_own(opcode::REQ, 0, 0).into());
    c
}

/// Reports a queue's `user_index` in `srqn_uidx` (24 bits) of a requester or error CQE: with
/// CQE version 1 libmlx5 finds the raw packet QP a completion belongs to by it (cq.c
/// `mlx5_find_uidx`), the RQ's for receives ([`RxInfo::user_index`]), the SQ's for sends.
pub fn set_user_index(c: &mut Cqe64, user_index: u32) {
    c.set_srqn(user_index & 0xff_ffff);
}

/// An error completion: `REQ_ERR` for a send queue (`responder` false) or `RESP_ERR` for a
/// receive queue, with the PRM `syndrome` and the model's `vendor_syndrome`.
pub fn err_cqe(
    responder: bool,
    syndrome: u8,
    vendor_syndrome: u8,
    wqe_counter: u16,
    wqe_opcode: u8,
    qpn: u32,
) -> Cqe64 {
    let mut e = ErrCqe::new();
    e.set_syndrome(syndrome.into());
    e.set_vendor_err_synd(vendor_syndrome.into());
    e.set_s_wqe_opcode(wqe_opcode.into());
    e.set_qpn(qpn);
    e.set_wqe_counter(wqe_counter.into());
    let op = if responder {
        opcode::RESP_ERR
    } else {
        opcode::REQ_ERR
    };
    e.set_op_own(op_own(op, 0, 0).into());
    Cqe64(e.0)
}
