// SPDX-License-Identifier: GPL-2.0
//! Work queue entries of the Ethernet send and receive queues: the send WQE segments of
//! `include/linux/mlx5/qp.h` (control, Ethernet, data and inline segments), the WQE opcodes of
//! `device.h` and the constants that bound a WQE.
//!
//! A send WQE is a run of 16-byte data segments ("DS") inside 64-byte basic blocks (WQEBBs) of
//! a cyclic send queue: a [`WqeCtrlSeg`], then for Ethernet a [`WqeEthSeg`] whose inline header
//! continues over the following DS, then [`WqeDataSeg`]s (or inline segments). The control
//! segment's `ds` counts every DS of the WQE including itself. A receive WQE of a cyclic RQ is
//! an array of [`WqeDataSeg`]s.
//!
//! The segments of the RDMA transports (remote address, atomic, datagram, UMR) are in
//! [`rdma`]; MLNX_OFED's erasure-coding segment is in [`vector_calc`], the repeat-block UMR
//! translation its libmlx5 builds for the result in [`repeat_block`].

use crate::bits::ifc_layouts;

pub mod rdma;
pub mod repeat_block;
pub mod vector_calc;

ifc_layouts! {
    /// The control segment that starts every send WQE (`struct mlx5_wqe_ctrl_seg`, qp.h).
    pub struct WqeCtrlSeg: CStruct "mlx5_wqe_ctrl_seg", 0x10 {
        /// `opmod << 24 | wqe_index << 8 | opcode`.
        opmod_idx_opcode, set_opmod_idx_opcode: u32 @ 0x000, 0x20;
        /// Opcode modifier.
        opmod, set_opmod: u32 @ 0x000, 0x8;
        /// Producer counter of the WQE (`MLX5_WQE_CTRL_WQE_INDEX_MASK`).
        wqe_index, set_wqe_index: u32 @ 0x008, 0x10;
        /// The WQE opcode (see [`opcode`], `MLX5_WQE_CTRL_OPCODE_MASK`).
        opcode, set_opcode: u32 @ 0x018, 0x8;
        /// `qpn << 8 | ds`.
        qpn_ds, set_qpn_ds: u32 @ 0x020, 0x20;
        /// QP / SQ number (`MLX5_WQE_CTRL_QPN_MASK`).
        qpn, set_qpn: u32 @ 0x020, 0x18;
        /// Number of 16-byte segments of the WQE, this one included (`MLX5_WQE_CTRL_DS_MASK`).
        ds, set_ds: u32 @ 0x03a, 0x6;
        /// WQE signature.
        signature, set_signature: u32 @ 0x040, 0x8;
        /// Fence mode (bits 7:5), completion request (bits 3:2), solicited (bit 1); see
        /// [`fm_ce_se`].
        fm_ce_se, set_fm_ce_se: u32 @ 0x058, 0x8;
        /// Immediate data / general id / UMR mkey / TIS or TIR number (a union).
        imm, set_imm: u32 @ 0x060, 0x20;
    }

    /// The Ethernet segment of a send WQE (`struct mlx5_wqe_eth_seg`, qp.h).
    pub struct WqeEthSeg: CStruct "mlx5_wqe_eth_seg", 0x10 {
        /// Software parser: outer L4 header offset in 2-byte words.
        swp_outer_l4_offset, set_swp_outer_l4_offset: u32 @ 0x000, 0x8;
        /// Software parser: outer L3 header offset in 2-byte words.
        swp_outer_l3_offset, set_swp_outer_l3_offset: u32 @ 0x008, 0x8;
        /// Software parser: inner L4 header offset in 2-byte words.
        swp_inner_l4_offset, set_swp_inner_l4_offset: u32 @ 0x010, 0x8;
        /// Software parser: inner L3 header offset in 2-byte words.
        swp_inner_l3_offset, set_swp_inner_l3_offset: u32 @ 0x018, 0x8;
        /// Checksum offload requests ([`CsFlags`]).
        cs_flags, set_cs_flags: u32 @ 0x020, 0x8;
        /// Software parser header kinds ([`SwpFlags`]).
        swp_flags, set_swp_flags: u32 @ 0x028, 0x8;
        /// Maximum segment size of an LSO WQE.
        mss, set_mss: u32 @ 0x030, 0x10;
        /// Flow table metadata (timestamping, IPsec, MACsec).
        flow_table_metadata, set_flow_table_metadata: u32 @ 0x040, 0x20;
        /// Size of the inline packet headers (`inline_hdr.sz`); the headers start in
        /// `inline_hdr_start` and continue over the following segments.
        ///
        /// In the older layout of the same union (`insert.type`), bit 15 asked the device to
        /// insert a VLAN tag ([`INSERT_VLAN`]).
        inline_hdr_sz, set_inline_hdr_sz: u32 @ 0x060, 0x10;
        /// First two bytes of the inline headers (`inline_hdr.start`); `insert.vlan_tci` in
        /// the older layout.
        inline_hdr_start, inline_hdr_start_mut: bytes @ 0x070, 0x10;
    }

    /// A data segment: a gather (send) or scatter (receive) entry (`struct mlx5_wqe_data_seg`,
    /// qp.h).
    pub struct WqeDataSeg: CStruct "mlx5_wqe_data_seg", 0x10 {
        /// Length in bytes; bit 31 marks an inline segment on send queues ([`INLINE_SEG`]) and
        /// start padding on receive queues ([`HW_START_PADDING`]).
        byte_count, set_byte_count: u32 @ 0x000, 0x20;
        /// Local key of the memory key the address is translated through.
        lkey, set_lkey: u32 @ 0x020, 0x20;
        /// Address inside the memory key.
        addr, set_addr: u64 @ 0x040, 0x40;
    }

    /// The header of an inline data segment (`struct mlx5_wqe_inline_seg`, qp.h); the data
    /// follows and the segment is padded to a multiple of 16 bytes.
    pub struct WqeInlineSeg: CStruct "mlx5_wqe_inline_seg", 0x4 {
        /// [`INLINE_SEG`] | length (`MLX5_WQE_INLINE_SEG_BYTE_COUNT_MASK`).
        byte_count, set_byte_count: u32 @ 0x000, 0x20;
    }
}

/// Size of one send WQE data segment (`MLX5_SEND_WQE_DS`, qp.h).
pub const SEND_WQE_DS: usize = 16;
/// Size of one send WQE basic block (`MLX5_SEND_WQE_BB`, qp.h).
pub const SEND_WQE_BB: usize = 64;
/// Data segments per basic block (`MLX5_SEND_WQEBB_NUM_DS`, qp.h).
pub const SEND_WQEBB_NUM_DS: usize = SEND_WQE_BB / SEND_WQE_DS;
/// Largest send WQE in basic blocks (`MLX5_SEND_WQE_MAX_WQEBBS`, qp.h).
pub const SEND_WQE_MAX_WQEBBS: usize = 16;
/// Largest send WQE in bytes (`MLX5_SEND_WQE_MAX_SIZE`, qp.h).
pub const SEND_WQE_MAX_SIZE: usize = SEND_WQE_MAX_WQEBBS * SEND_WQE_BB;
/// Mask of `ds` in [`WqeCtrlSeg::qpn_ds`] (`MLX5_WQE_CTRL_DS_MASK`, qp.h): a WQE has at
/// most 63 segments.
pub const CTRL_DS_MASK: u32 = 0x3f;
/// Mask of the QP number in [`WqeCtrlSeg::qpn_ds`] (`MLX5_WQE_CTRL_QPN_MASK`, qp.h).
pub const CTRL_QPN_MASK: u32 = 0xffff_ff00;
/// Mask of the opcode in [`WqeCtrlSeg::opmod_idx_opcode`] (`MLX5_WQE_CTRL_OPCODE_MASK`).
pub const CTRL_OPCODE_MASK: u32 = 0xff;
/// Mask of the WQE index in [`WqeCtrlSeg::opmod_idx_opcode`]
/// (`MLX5_WQE_CTRL_WQE_INDEX_MASK`, qp.h).
pub const CTRL_WQE_INDEX_MASK: u32 = 0x00ff_ff00;

/// `MLX5_INLINE_SEG` (device.h): bit 31 of a data segment's `byte_count` marks inline data.
pub const INLINE_SEG: u32 = 0x8000_0000;
/// `MLX5_WQE_INLINE_SEG_BYTE_COUNT_MASK` (qp.h): length bits of an inline segment.
pub const INLINE_SEG_BYTE_COUNT_MASK: u32 = 0x3ff;
/// `MLX5_HW_START_PADDING` (device.h): bit 31 of a receive data segment's `byte_count`, set by
/// mlx5e; the length is the low 31 bits.
pub const HW_START_PADDING: u32 = INLINE_SEG;
/// `MLX5_TERMINATE_SCATTER_LIST_LKEY` (qp.h, `cpu_to_be32(0x100)`): the lkey of a receive data
/// segment that ends the scatter list (mlx5e pads WQEs whose fragment count is not a power of
/// two with one, `byte_count` 0).
pub const TERMINATE_SCATTER_LIST_LKEY: u32 = 0x100;
/// Bit 15 of [`WqeEthSeg::inline_hdr_sz`] in the PRM's VLAN-insertion form of the union
/// (`MLX5_ETH_WQE_INSERT_VLAN` of qp.h before Linux 6.x; DPDK `MLX5_ETH_WQE_VLAN_INSERT`):
/// insert an 802.1Q tag with the TCI in the next two bytes. mlx5e inserts tags itself.
pub const INSERT_VLAN: u32 = 1 << 15;
/// Bit 0 of the same `insert.type`: the inserted tag is an 802.1ad S-tag
/// (`MLX5_ETH_WQE_SVLAN` of older qp.h).
pub const INSERT_SVLAN: u32 = 1 << 0;

/// `fm_ce_se` of [`WqeCtrlSeg`] (qp.h).
pub mod fm_ce_se {
    /// Mask of the completion request bits (`ce`).
    pub const CE_MASK: u8 = 3 << 2;
    /// `MLX5_WQE_CTRL_CQ_UPDATE`: write a CQE for this WQE.
    pub const CQ_UPDATE: u8 = 2 << 2;
    /// `MLX5_WQE_CTRL_CQ_UPDATE_AND_EQE`: write a CQE and an EQE.
    pub const CQ_UPDATE_AND_EQE: u8 = 3 << 2;
    /// `MLX5_WQE_CTRL_SOLICITED`: the completion is solicited.
    pub const SOLICITED: u8 = 1 << 1;
    /// Mask of the fence mode bits (`MLX5_FENCE_MODE_*`).
    pub const FENCE_MASK: u8 = 7 << 5;
    /// `MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE` (the same bits as
    /// [`FENCE_MODE_INITIATOR_SMALL`]).
    pub const INITIATOR_SMALL_FENCE: u8 = 1 << 5;
    /// `MLX5_FENCE_MODE_NONE`.
    pub const FENCE_MODE_NONE: u8 = 0;
    /// `MLX5_FENCE_MODE_INITIATOR_SMALL`: wait for earlier RDMA reads and atomics of this QP.
    pub const FENCE_MODE_INITIATOR_SMALL: u8 = 1 << 5;
    /// `MLX5_FENCE_MODE_FENCE`: wait for every earlier WQE of this QP.
    pub const FENCE_MODE_FENCE: u8 = 2 << 5;
    /// `MLX5_FENCE_MODE_STRONG_ORDERING`.
    pub const FENCE_MODE_STRONG_ORDERING: u8 = 3 << 5;
    /// `MLX5_FENCE_MODE_SMALL_AND_FENCE`.
    pub const FENCE_MODE_SMALL_AND_FENCE: u8 = 4 << 5;
}

bitflags::bitflags! {
    /// Checksum offload requests in [`WqeEthSeg::cs_flags`] (`MLX5_ETH_WQE_*_CSUM`, qp.h).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct CsFlags: u8 {
        /// `MLX5_ETH_WQE_L3_INNER_CSUM`: inner IPv4 header checksum.
        const L3_INNER = 1 << 4;
        /// `MLX5_ETH_WQE_L4_INNER_CSUM`: inner TCP/UDP checksum.
        const L4_INNER = 1 << 5;
        /// `MLX5_ETH_WQE_L3_CSUM`: (outer) IPv4 header checksum.
        const L3 = 1 << 6;
        /// `MLX5_ETH_WQE_L4_CSUM`: (outer) TCP/UDP checksum.
        const L4 = 1 << 7;
    }
}

bitflags::bitflags! {
    /// Software parser header kinds in [`WqeEthSeg::swp_flags`] (`MLX5_ETH_WQE_SWP_*`, qp.h).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct SwpFlags: u8 {
        /// `MLX5_ETH_WQE_SWP_INNER_L3_IPV6`: the inner L3 header is IPv6 (else IPv4).
        const INNER_L3_IPV6 = 1 << 0;
        /// `MLX5_ETH_WQE_SWP_INNER_L4_UDP`: the inner L4 header is UDP (else TCP).
        const INNER_L4_UDP = 1 << 1;
        /// `MLX5_ETH_WQE_SWP_OUTER_L3_IPV6`: the outer L3 header is IPv6 (else IPv4).
        const OUTER_L3_IPV6 = 1 << 4;
        /// `MLX5_ETH_WQE_SWP_OUTER_L4_UDP`: the outer L4 header is UDP (else TCP).
        const OUTER_L4_UDP = 1 << 5;
    }
}

/// Send WQE opcodes (`MLX5_OPCODE_*`, device.h), the low byte of
/// [`WqeCtrlSeg::opmod_idx_opcode`].
pub mod opcode {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_OPCODE_", wqe_opcode_name;
        /// No operation; completes like any WQE.
        NOP = 0x00, "NOP";
        SEND_INVAL = 0x01, "SEND_INVAL";
        RDMA_WRITE = 0x08, "RDMA_WRITE";
        RDMA_WRITE_IMM = 0x09, "RDMA_WRITE_IMM";
        /// Send one packet (Ethernet SQ) or message.
        SEND = 0x0a, "SEND";
        SEND_IMM = 0x0b, "SEND_IMM";
        /// Large send offload: segment one TCP (or UDP) superframe by `mss`.
        LSO = 0x0e, "LSO";
        RDMA_READ = 0x10, "RDMA_READ";
        ATOMIC_CS = 0x11, "ATOMIC_CS";
        ATOMIC_FA = 0x12, "ATOMIC_FA";
        ATOMIC_MASKED_CS = 0x14, "ATOMIC_MASKED_CS";
        ATOMIC_MASKED_FA = 0x15, "ATOMIC_MASKED_FA";
        BIND_MW = 0x18, "BIND_MW";
        CONFIG_CMD = 0x1f, "CONFIG_CMD";
        SET_PSV = 0x20, "SET_PSV";
        GET_PSV = 0x21, "GET_PSV";
        CHECK_PSV = 0x22, "CHECK_PSV";
        DUMP = 0x23, "DUMP";
        UMR = 0x25, "UMR";
        RGET_PSV = 0x26, "RGET_PSV";
        RCHECK_PSV = 0x27, "RCHECK_PSV";
        /// Enhanced multi-packet send WQE (mlx5e MPWQE).
        ENHANCED_MPSW = 0x29, "ENHANCED_MPSW";
        FLOW_TBL_ACCESS = 0x2c, "FLOW_TBL_ACCESS";
        ACCESS_ASO = 0x2d, "ACCESS_ASO";
    }
}

/// `opmod_idx_opcode` of a control segment: `opmod << 24 | (wqe_index & 0xffff) << 8 | opcode`.
pub fn opmod_idx_opcode(opmod: u8, wqe_index: u16, opcode: u8) -> u32 {
    (u32::from(opmod) << 24) | (u32::from(wqe_index) << 8) | u32::from(opcode)
}

/// `qpn_ds` of a control segment: `qpn << 8 | ds` (ds masked to 6 bits).
pub fn qpn_ds(qpn: u32, ds: u8) -> u32 {
    (qpn << 8) | (u32::from(ds) & CTRL_DS_MASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(byte offset, bit width)` of a declared field.
    fn at(fields: &[crate::bits::Field], name: &str) -> (u32, u32) {
        let f = fields.iter().find(|f| f.0 == name).expect(name);
        (f.1 / 8, f.2)
    }

    // struct mlx5_wqe_ctrl_seg: __be32 opmod_idx_opcode; __be32 qpn_ds; u8 signature;
    // u8 rsvd[2]; u8 fm_ce_se; union { __be32 general_id, imm, umr_mkey, tis_tir_num; }.
    #[test]
    fn ctrl_seg_matches_qp_h() {
        let f = WqeCtrlSeg::FIELDS;
        assert_eq!(WqeCtrlSeg::SIZE, 16);
        assert_eq!(at(f, "opmod_idx_opcode"), (0, 32));
        assert_eq!(at(f, "qpn_ds"), (4, 32));
        assert_eq!(at(f, "signature"), (8, 8));
        assert_eq!(at(f, "fm_ce_se"), (11, 8));
        assert_eq!(at(f, "imm"), (12, 32));
        // The sub-fields are the masks of qp.h applied to the same dwords.
        let mut c = WqeCtrlSeg::new();
        c.set_opmod_idx_opcode(opmod_idx_opcode(0x5a, 0xbeef, opcode::LSO));
        assert_eq!(&c.0[..4], &[0x5a, 0xbe, 0xef, 0x0e]);
        assert_eq!((c.opmod(), c.wqe_index(), c.opcode()), (0x5a, 0xbeef, 0x0e));
        assert_eq!(c.opmod_idx_opcode() & CTRL_WQE_INDEX_MASK, 0xbeef << 8);
        assert_eq!(c.opmod_idx_opcode() & CTRL_OPCODE_MASK, 0x0e);
        c.set_qpn_ds(qpn_ds(0x12_3456, 0xff));
        assert_eq!(&c.0[4..8], &[0x12, 0x34, 0x56, 0x3f]);
        assert_eq!((c.qpn(), c.ds()), (0x12_3456, 0x3f));
        assert_eq!(c.qpn_ds() & CTRL_QPN_MASK, 0x1234_5600);
        c.set_fm_ce_se(fm_ce_se::CQ_UPDATE.into());
        assert_eq!(c.0[11], 0x08);
    }

    // struct mlx5_wqe_eth_seg: u8 swp_outer_l4_offset, swp_outer_l3_offset,
    // swp_inner_l4_offset, swp_inner_l3_offset, cs_flags, swp_flags; __be16 mss;
    // __be32 flow_table_metadata; union { struct { __be16 sz; u8 start[2]; } inline_hdr;
    // __be32 trailer; }.
    #[test]
    fn eth_seg_matches_qp_h() {
        let f = WqeEthSeg::FIELDS;
        assert_eq!(WqeEthSeg::SIZE, 16);
        assert_eq!(at(f, "swp_outer_l4_offset"), (0, 8));
        assert_eq!(at(f, "swp_outer_l3_offset"), (1, 8));
        assert_eq!(at(f, "swp_inner_l4_offset"), (2, 8));
        assert_eq!(at(f, "swp_inner_l3_offset"), (3, 8));
        assert_eq!(at(f, "cs_flags"), (4, 8));
        assert_eq!(at(f, "swp_flags"), (5, 8));
        assert_eq!(at(f, "mss"), (6, 16));
        assert_eq!(at(f, "flow_table_metadata"), (8, 32));
        assert_eq!(at(f, "inline_hdr_sz"), (12, 16));
        assert_eq!(at(f, "inline_hdr_start"), (14, 16));
        let mut e = WqeEthSeg::new();
        e.set_cs_flags((CsFlags::L3 | CsFlags::L4).bits().into());
        e.set_mss(1448);
        e.set_inline_hdr_sz(54);
        e.inline_hdr_start_mut().copy_from_slice(&[0xaa, 0xbb]);
        assert_eq!(
            e.0,
            [0, 0, 0, 0, 0xc0, 0, 0x05, 0xa8, 0, 0, 0, 0, 0, 54, 0xaa, 0xbb]
        );
    }

    // struct mlx5_wqe_data_seg: __be32 byte_count; __be32 lkey; __be64 addr;
    // struct mlx5_wqe_inline_seg: __be32 byte_count; __be32 data[].
    #[test]
    fn data_and_inline_segs_match_qp_h() {
        let f = WqeDataSeg::FIELDS;
        assert_eq!(WqeDataSeg::SIZE, 16);
        assert_eq!(at(f, "byte_count"), (0, 32));
        assert_eq!(at(f, "lkey"), (4, 32));
        assert_eq!(at(f, "addr"), (8, 64));
        assert_eq!(WqeInlineSeg::SIZE, 4);
        assert_eq!(at(WqeInlineSeg::FIELDS, "byte_count"), (0, 32));
        let mut d = WqeDataSeg::new();
        d.set_byte_count(HW_START_PADDING | 1536);
        d.set_lkey(TERMINATE_SCATTER_LIST_LKEY);
        d.set_addr(0x0102_0304_0506_0708);
        assert_eq!(d.0, [0x80, 0, 0x06, 0, 0, 0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn wqe_size_constants_agree() {
        assert_eq!(SEND_WQEBB_NUM_DS, 4);
        assert_eq!(SEND_WQE_MAX_SIZE, 1024);
        assert_eq!(CTRL_DS_MASK, 63);
        assert_eq!(opcode::wqe_opcode_name(0x0e), "LSO");
    }
}
