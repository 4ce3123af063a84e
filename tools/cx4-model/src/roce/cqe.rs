//! Completion entries of RC and UC queue pairs in the 64-byte mlx5 format, with the fields
//! mlx5_ib (`drivers/infiniband/hw/mlx5/cq.c`, `mlx5_poll_one`, `handle_responder`) and
//! libmlx5 (`providers/mlx5/cq.c`) read:
//!
//! - every entry: `sop_drop_qpn` bits 23:0 the QP number (the kernel finds the QP by it) and
//!   `srqn` (libmlx5's `srqn_uidx`) the QP's `user_index` (libmlx5 finds the QP by it when the
//!   context's `cqe_version` is 1, which the model advertises); `wqe_counter`;
//! - requester: opcode `REQ`, `sop_drop_qpn` bits 31:24 the WQE opcode (which libmlx5 turns
//!   into the work completion opcode), `byte_cnt` (READ: the bytes read; atomics: 8);
//! - responder: opcode `RESP_SEND`, `RESP_SEND_IMM`, `RESP_SEND_INV` or `RESP_WR_IMM`,
//!   `byte_cnt`, `immediate` (`imm_inval_pkey`: the immediate as on the wire, or the
//!   invalidated R_Key), `flags_rqpn` (the remote QP, and for RoCE the GRH bit 28 with the L3
//!   header type in bits 25:24);
//! - errors (`mlx5_err_cqe`): opcode `REQ_ERR` / `RESP_ERR`, `syndrome`, `vendor_err_synd`,
//!   `s_wqe_opcode`, `wqe_counter`.
//!
//! Entries are built with owner bit 0; `fw::cq` `post_cqe` sets the owner of the pass.

use cx4_hw::cq::cqe::{op_own, opcode, roce_l3_header_type, Cqe64, ErrCqe};

use super::packet::Ip;
use super::qp_view::IbRx;
use super::status::WcStatus;

/// Vendor syndrome the model writes with every RDMA error CQE (no vendor detail).
pub const VENDOR_SYNDROME: u8 = 0;

/// The QP a completion belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqeQp {
    /// QP number.
    pub qpn: u32,
    /// The QP context's `user_index` (24 bits).
    pub user_index: u32,
}

/// A requester completion of the WQE `wqe_counter` with opcode `wqe_opcode`; `byte_cnt` as
/// libmlx5 reads it for READ and atomics.
pub fn req_cqe(qp: CqeQp, wqe_counter: u16, wqe_opcode: u8, byte_cnt: u32) -> Cqe64 {
    let mut c = Cqe64::new();
    c.set_srqn(qp.user_index & 0xff_ffff);
    c.set_byte_cnt(byte_cnt);
    c.set_sop_drop_qpn((u32::from(wqe_opcode) << 24) | (qp.qpn & 0xff_ffff));
    c.set_wqe_counter(wqe_counter.into());
    c.set_op_own(op_own(opcode::REQ, 0, 0).into());
    c
}

/// What a receive completion reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RespInfo {
    /// Counter of the receive WQE.
    pub wqe_counter: u16,
    /// Bytes placed in the receive WQE.
    pub byte_cnt: u32,
    /// The completion opcode (`RESP_*`).
    pub opcode: u8,
    /// Immediate data or invalidated R_Key.
    pub immediate: u32,
    /// The remote QP.
    pub remote_qpn: u32,
    /// The packet's network header, as `flags_rqpn` reports it (`roce_l3_header_type`: GRH
    /// for RoCE v1, IPV4 or IPV6 for RoCEv2).
    pub l3: u8,
    /// The packet's 802.1Q TCI, if tagged (mlx5_ib reports the VLAN and its priority).
    pub vlan: Option<u16>,
    /// An IB packet's LRH: then `flags_rqpn` holds the SL (bits 27:24) and the GRH bit if
    /// the packet had one, and `slid` and `ml_path` are set (mlx5_ib's `handle_responder` on
    /// an IB link).
    pub ib: Option<IbRx>,
    /// The payload's IP header and TCP/UDP checksums are good (`hds_ip_ext` L3_OK and L4_OK,
    /// mlx5_ib's `IB_WC_IP_CSUM_OK`): IPoIB datagrams on a QP with its offloads.
    pub csum_ok: bool,
}

/// The `roce_l3_header_type` of a packet with network header `ip`: GRH (0) for RoCE v1, which
/// mlx5_ib reports as `RDMA_NETWORK_ROCE_V1`, IPV4 or IPV6 for RoCEv2.
pub fn l3_header_type(ip: &Ip) -> u8 {
    match ip {
        Ip::V4(_) => roce_l3_header_type::IPV4,
        Ip::V6(_) => roce_l3_header_type::IPV6,
        Ip::Grh(_) => roce_l3_header_type::GRH,
    }
}

/// A responder completion.
pub fn resp_cqe(qp: CqeQp, i: &RespInfo) -> Cqe64 {
    let mut c = Cqe64::new();
    match i.ib {
        Some(ib) => {
            let g = u32::from(ib.grh) << 28;
            c.set_flags_rqpn(g | (u32::from(ib.sl & 0xf) << 24) | (i.remote_qpn & 0xff_ffff));
            c.set_slid(ib.slid.into());
            c.set_ml_path(ib.path_bits.into());
        }
        None => {
            c.set_flags_rqpn((1 << 28) | (u32::from(i.l3 & 0xf) << 24) | (i.remote_qpn & 0xff_ffff))
        }
    }
    c.set_srqn(qp.user_index & 0xff_ffff);
    if let Some(tci) = i.vlan {
        c.set_cvlan_stripped(1);
        c.set_vlan_info(tci.into());
    }
    if i.csum_ok {
        c.set_l3_ok(1);
        c.set_l4_ok(1);
    }
    c.set_immediate(i.immediate);
    c.set_byte_cnt(i.byte_cnt);
    c.set_sop_drop_qpn(qp.qpn & 0xff_ffff);
    c.set_wqe_counter(i.wqe_counter.into());
    c.set_op_own(op_own(i.opcode, 0, 0).into());
    c
}

/// An error completion (requester `REQ_ERR` or responder `RESP_ERR`) with `status`'s
/// syndrome.
pub fn err_cqe(
    qp: CqeQp,
    responder: bool,
    status: WcStatus,
    wqe_counter: u16,
    wqe_opcode: u8,
) -> Cqe64 {
    let c = crate::eth::cqe::err_cqe(
        responder,
        status.syndrome().unwrap_or(0),
        VENDOR_SYNDROME,
        wqe_counter,
        wqe_opcode,
        qp.qpn & 0xff_ffff,
    );
    // The one field the Ethernet queues leave 0: the QP's user index (cqe_version 1).
    let mut e = ErrCqe(c.0);
    e.set_srqn(qp.user_index & 0xff_ffff);
    Cqe64(e.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const QP: CqeQp = CqeQp {
        qpn: 0x12,
        user_index: 0x77,
    };

    #[test]
    fn requester_cqe_fields_sit_where_mlx5_reads_them() {
        let c = req_cqe(QP, 0x1234, 0x10, 10000).0;
        assert_eq!(c[63] >> 4, opcode::REQ);
        assert_eq!(&c[0x20..0x24], &[0, 0, 0, 0x77], "srqn_uidx");
        assert_eq!(&c[0x2c..0x30], &10000u32.to_be_bytes(), "byte_cnt");
        assert_eq!(&c[0x38..0x3c], &[0x10, 0, 0, 0x12], "sop_drop_qpn");
        assert_eq!(&c[0x3c..0x3e], &[0x12, 0x34], "wqe_counter");
    }

    #[test]
    fn responder_and_error_cqes() {
        let c = resp_cqe(
            QP,
            &RespInfo {
                wqe_counter: 3,
                byte_cnt: 64,
                opcode: opcode::RESP_SEND_IMM,
                immediate: 0x0102_0304,
                remote_qpn: 0x99,
                l3: roce_l3_header_type::IPV4,
                vlan: Some(0x6005),
                ib: None,
                csum_ok: false,
            },
        )
        .0;
        assert_eq!(c[63] >> 4, opcode::RESP_SEND_IMM);
        assert_eq!(
            &c[0x18..0x1c],
            &[0x12, 0, 0, 0x99],
            "flags_rqpn: GRH, IPv4, rqpn"
        );
        assert_eq!(&c[0x24..0x28], &[1, 2, 3, 4], "imm_inval_pkey");
        assert_eq!(
            (c[0x1d] & 1, &c[0x1e..0x20]),
            (1, &[0x60, 0x05][..]),
            "VLAN"
        );
        let e = err_cqe(QP, true, WcStatus::WrFlushErr, 5, 0).0;
        assert_eq!(e[63] >> 4, opcode::RESP_ERR);
        assert_eq!(e[0x37], cx4_hw::cq::cqe::syndrome::WR_FLUSH_ERR);
        assert_eq!(&e[0x3c..0x3e], &[0, 5]);
    }
}
