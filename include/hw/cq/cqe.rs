// SPDX-License-Identifier: GPL-2.0
//! Completion queue entries: the 64-byte CQE (`struct mlx5_cqe64`, device.h), its error form
//! (`struct mlx5_err_cqe`) and the CQE opcodes.

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// A 64-byte completion queue entry (`struct mlx5_cqe64`, device.h).
    pub struct Cqe64: CStruct "mlx5_cqe64", 0x40 {
        /// Bit 0: outer L3 tunneled; bits 4:3: TLS offload state.
        tls_outer_l3_tunneled, set_tls_outer_l3_tunneled: u32 @ 0x000, 0x8;
        /// Bit 0 of `tls_outer_l3_tunneled` (`cqe_is_tunneled`): the packet was recognised as
        /// tunnelled and the header types and L3/L4 OK bits describe the inner headers.
        outer_l3_tunneled, set_outer_l3_tunneled: u32 @ 0x007, 0x1;
        /// WQE id (striding RQ).
        wqe_id, set_wqe_id: u32 @ 0x010, 0x10;
        /// LRO: TCP PSH (bit 6), abort, dup-ack flags.
        lro_tcppsh_abort_dupack, set_lro_tcppsh_abort_dupack: u32 @ 0x020, 0x8;
        /// LRO: minimum TTL of the aggregated segments.
        lro_min_ttl, set_lro_min_ttl: u32 @ 0x028, 0x8;
        /// LRO: TCP window.
        lro_tcp_win, set_lro_tcp_win: u32 @ 0x030, 0x10;
        /// LRO: TCP acknowledgement number.
        lro_ack_seq_num, set_lro_ack_seq_num: u32 @ 0x040, 0x20;
        /// RSS hash value.
        rss_hash_result, set_rss_hash_result: u32 @ 0x060, 0x20;
        /// RSS hash type (bits 3:2 IP, bits 7:6 L4).
        rss_hash_type, set_rss_hash_type: u32 @ 0x080, 0x8;
        /// Bits 7:6 of `rss_hash_type` (`CQE_RSS_HTYPE_L4`): the L4 fields hashed ([`rss_l4`]).
        rss_hash_type_l4, set_rss_hash_type_l4: u32 @ 0x080, 0x2;
        /// Bits 3:2 of `rss_hash_type` (`CQE_RSS_HTYPE_IP`): the IP fields hashed ([`rss_ip`]).
        rss_hash_type_ip, set_rss_hash_type_ip: u32 @ 0x084, 0x2;
        /// Bit 0: congestion experienced.
        ml_path, set_ml_path: u32 @ 0x088, 0x8;
        /// 16-bit one's-complement sum of the packet after the L2 header.
        check_sum, set_check_sum: u32 @ 0x0a0, 0x10;
        /// Source LID (InfiniBand).
        slid, set_slid: u32 @ 0x0b0, 0x10;
        /// Flags and remote QP number (RoCE responder: GRH and L3 type bits, source QP).
        flags_rqpn, set_flags_rqpn: u32 @ 0x0c0, 0x20;
        /// Bit 1: L3 checksum OK, bit 2: L4 checksum OK.
        hds_ip_ext, set_hds_ip_ext: u32 @ 0x0e0, 0x8;
        /// Bit 2 of `hds_ip_ext` ([`L4_OK`]).
        l4_ok, set_l4_ok: u32 @ 0x0e5, 0x1;
        /// Bit 1 of `hds_ip_ext` ([`L3_OK`]).
        l3_ok, set_l3_ok: u32 @ 0x0e6, 0x1;
        /// Bit 0: VLAN stripped; bits 3:2: L3 type; bits 6:4: L4 type.
        l4_l3_hdr_type, set_l4_l3_hdr_type: u32 @ 0x0e8, 0x8;
        /// Bits 6:4 of `l4_l3_hdr_type` (`get_cqe_l4_hdr_type`, [`l4_hdr_type`]).
        l4_hdr_type, set_l4_hdr_type: u32 @ 0x0e9, 0x3;
        /// Bits 3:2 of `l4_l3_hdr_type` ([`l3_hdr_type`]).
        l3_hdr_type, set_l3_hdr_type: u32 @ 0x0ec, 0x2;
        /// Bit 0 of `l4_l3_hdr_type` (`cqe_has_vlan`): a VLAN tag was stripped into
        /// `vlan_info`.
        cvlan_stripped, set_cvlan_stripped: u32 @ 0x0ef, 0x1;
        /// The stripped VLAN tag (TCI).
        vlan_info, set_vlan_info: u32 @ 0x0f0, 0x10;
        /// Bits 31:24: LRO segment count; bits 23:0: SRQ number.
        srqn, set_srqn: u32 @ 0x100, 0x20;
        /// Bits 31:24 of `srqn` (`get_cqe_lro_num_seg`): segments coalesced by LRO; mlx5e
        /// treats anything above 1 as an LRO session, so plain receives leave it 0.
        lro_num_seg, set_lro_num_seg: u32 @ 0x100, 0x8;
        /// Immediate data / invalidated rkey / P_Key / flow table metadata (a union).
        immediate, set_immediate: u32 @ 0x120, 0x20;
        /// Bytes written to the receive buffer (or transferred).
        byte_cnt, set_byte_cnt: u32 @ 0x160, 0x20;
        /// Both timestamp words as one value (`get_cqe_ts`).
        timestamp, set_timestamp: u64 @ 0x180, 0x40;
        /// Timestamp, high word.
        timestamp_h, set_timestamp_h: u32 @ 0x180, 0x20;
        /// Timestamp, low word.
        timestamp_l, set_timestamp_l: u32 @ 0x1a0, 0x20;
        /// Bits 23:0: QP/SQ/RQ number; bits 11:0 double as the flow tag.
        sop_drop_qpn, set_sop_drop_qpn: u32 @ 0x1c0, 0x20;
        /// Bits 23:0 of `sop_drop_qpn`: the flow tag of the steering entry that received the
        /// packet on Ethernet RQs (mlx5e copies the low 16 bits into `skb->mark`), the QP
        /// number otherwise.
        flow_tag, set_flow_tag: u32 @ 0x1c8, 0x18;
        /// Counter of the WQE this completion is for.
        wqe_counter, set_wqe_counter: u32 @ 0x1e0, 0x10;
        /// Signature or validity iteration count.
        signature, set_signature: u32 @ 0x1f0, 0x8;
        /// Opcode (bits 7:4), format (bits 3:2), owner (bit 0).
        op_own, set_op_own: u32 @ 0x1f8, 0x8;
        /// Bits 7:4 of `op_own`: the CQE opcode (see [`opcode`]).
        opcode, set_opcode: u32 @ 0x1f8, 0x4;
        /// Bits 3:2 of `op_own`: the CQE format (3: compressed).
        format, set_format: u32 @ 0x1fc, 0x2;
        /// Bit 0 of `op_own`: ownership, alternating per pass over the CQ.
        owner, set_owner: u32 @ 0x1ff, 0x1;
    }

    /// An error completion (`struct mlx5_err_cqe`, device.h), 64 bytes.
    pub struct ErrCqe: CStruct "mlx5_err_cqe", 0x40 {
        /// SRQ number.
        srqn, set_srqn: u32 @ 0x100, 0x20;
        /// Vendor-specific syndrome.
        vendor_err_synd, set_vendor_err_synd: u32 @ 0x1b0, 0x8;
        /// Error syndrome (see [`syndrome`]).
        syndrome, set_syndrome: u32 @ 0x1b8, 0x8;
        /// Bits 31:24: opcode of the failed send WQE; bits 23:0: QP number.
        s_wqe_opcode_qpn, set_s_wqe_opcode_qpn: u32 @ 0x1c0, 0x20;
        /// Bits 31:24 of `s_wqe_opcode_qpn`: the failed WQE's opcode.
        s_wqe_opcode, set_s_wqe_opcode: u32 @ 0x1c0, 0x8;
        /// Bits 23:0 of `s_wqe_opcode_qpn`: the QP / SQ / RQ number.
        qpn, set_qpn: u32 @ 0x1c8, 0x18;
        /// Counter of the failed WQE.
        wqe_counter, set_wqe_counter: u32 @ 0x1e0, 0x10;
        /// Signature.
        signature, set_signature: u32 @ 0x1f0, 0x8;
        /// Opcode (bits 7:4) and owner (bit 0), as in [`Cqe64`].
        op_own, set_op_own: u32 @ 0x1f8, 0x8;
    }
}

/// CQE opcodes (`MLX5_CQE_*`, cq.h), bits 7:4 of `op_own`.
pub mod opcode {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_CQE_", cqe_opcode_name;
        /// Requester (send) completion.
        REQ = 0, "REQ";
        RESP_WR_IMM = 1, "RESP_WR_IMM";
        /// Responder (receive) completion.
        RESP_SEND = 2, "RESP_SEND";
        RESP_SEND_IMM = 3, "RESP_SEND_IMM";
        RESP_SEND_INV = 4, "RESP_SEND_INV";
        RESIZE_CQ = 5, "RESIZE_CQ";
        SIG_ERR = 12, "SIG_ERR";
        /// Requester error; the entry is an [`super::ErrCqe`].
        REQ_ERR = 13, "REQ_ERR";
        /// Responder error; the entry is an [`super::ErrCqe`].
        RESP_ERR = 14, "RESP_ERR";
        /// Never written by hardware; software pre-fills entries with it.
        INVALID = 15, "INVALID";
    }
}

/// Error CQE syndromes (`MLX5_CQE_SYNDROME_*`, cq.h).
pub mod syndrome {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_CQE_SYNDROME_", syndrome_name;
        LOCAL_LENGTH_ERR = 0x01, "LOCAL_LENGTH_ERR";
        LOCAL_QP_OP_ERR = 0x02, "LOCAL_QP_OP_ERR";
        LOCAL_PROT_ERR = 0x04, "LOCAL_PROT_ERR";
        WR_FLUSH_ERR = 0x05, "WR_FLUSH_ERR";
        MW_BIND_ERR = 0x06, "MW_BIND_ERR";
        BAD_RESP_ERR = 0x10, "BAD_RESP_ERR";
        LOCAL_ACCESS_ERR = 0x11, "LOCAL_ACCESS_ERR";
        REMOTE_INVAL_REQ_ERR = 0x12, "REMOTE_INVAL_REQ_ERR";
        REMOTE_ACCESS_ERR = 0x13, "REMOTE_ACCESS_ERR";
        REMOTE_OP_ERR = 0x14, "REMOTE_OP_ERR";
        TRANSPORT_RETRY_EXC_ERR = 0x15, "TRANSPORT_RETRY_EXC_ERR";
        RNR_RETRY_EXC_ERR = 0x16, "RNR_RETRY_EXC_ERR";
        REMOTE_ABORTED_ERR = 0x22, "REMOTE_ABORTED_ERR";
    }
}

/// `l4_hdr_type` of [`Cqe64`] (`CQE_L4_HDR_TYPE_*`, device.h).
pub mod l4_hdr_type {
    use crate::bits::code_table;

    code_table! { u8, "CQE_L4_HDR_TYPE_", l4_hdr_type_name;
        /// Neither TCP nor UDP (or not parsed).
        NONE = 0x0, "NONE";
        /// TCP without the ACK flag.
        TCP_NO_ACK = 0x1, "TCP_NO_ACK";
        UDP = 0x2, "UDP";
        /// TCP with ACK and no payload.
        TCP_ACK_NO_DATA = 0x3, "TCP_ACK_NO_DATA";
        /// TCP with ACK and payload.
        TCP_ACK_AND_DATA = 0x4, "TCP_ACK_AND_DATA";
    }
}

/// `l3_hdr_type` of [`Cqe64`]. Not named in the Linux headers (mlx5e does not read it); the
/// values are the PRM's, as in DPDK's `MLX5_CQE_L3_HDR_TYPE_*` (which are shifted by 2).
pub mod l3_hdr_type {
    /// Not IP.
    pub const NONE: u8 = 0x0;
    /// IPv6.
    pub const IPV6: u8 = 0x1;
    /// IPv4.
    pub const IPV4: u8 = 0x2;
}

/// L3 header of a RoCE responder completion: bits 25:24 of [`Cqe64::flags_rqpn`]
/// (`MLX5_CQE_ROCE_L3_HEADER_TYPE_*`, device.h); mlx5_ib reports a GRH for UD receives and
/// derives the RoCE v2 network type from it.
pub mod roce_l3_header_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_CQE_ROCE_L3_HEADER_TYPE_", roce_l3_header_type_name;
        /// An IB GRH (RoCE v1).
        GRH = 0x0, "GRH";
        IPV6 = 0x1, "IPV6";
        IPV4 = 0x2, "IPV4";
    }
}

/// `rss_hash_type_ip` of [`Cqe64`] (`CQE_RSS_IP_*`, device.h; `CQE_RSS_HTYPE_IP` = bits 3:2).
pub mod rss_ip {
    use crate::bits::code_table;

    code_table! { u8, "CQE_RSS_", rss_ip_name;
        /// No IP field hashed.
        IP_NONE = 0x0, "IP_NONE";
        /// IPv4 addresses hashed.
        IPV4 = 0x1, "IPV4";
        /// IPv6 addresses hashed.
        IPV6 = 0x2, "IPV6";
        RESERVED = 0x3, "RESERVED";
    }
}

/// `rss_hash_type_l4` of [`Cqe64`] (`CQE_RSS_L4_*`, device.h; `CQE_RSS_HTYPE_L4` = bits 7:6).
pub mod rss_l4 {
    use crate::bits::code_table;

    code_table! { u8, "CQE_RSS_", rss_l4_name;
        /// No L4 field hashed.
        L4_NONE = 0x0, "L4_NONE";
        /// TCP ports hashed.
        L4_TCP = 0x1, "L4_TCP";
        /// UDP ports hashed.
        L4_UDP = 0x2, "L4_UDP";
        /// IPsec SPI hashed.
        L4_IPSEC = 0x3, "L4_IPSEC";
    }
}

/// `rss_hash_type` byte with the IP and L4 hash kinds (`CQE_RSS_HTYPE_IP` is `GENMASK(3, 2)`,
/// `CQE_RSS_HTYPE_L4` is `GENMASK(7, 6)`).
pub fn rss_hash_type(ip: u8, l4: u8) -> u8 {
    ((l4 & 3) << 6) | ((ip & 3) << 2)
}

/// `MLX5_CQE_OWNER_MASK` (cq.h): the owner bit of `op_own`.
pub const OWNER_MASK: u8 = 1;
/// `CQE_L2_OK` (device.h): bit of `hds_ip_ext`.
pub const L2_OK: u8 = 1 << 0;
/// `CQE_L3_OK` (device.h): bit of `hds_ip_ext`, the L3 checksum is good.
pub const L3_OK: u8 = 1 << 1;
/// `CQE_L4_OK` (device.h): bit of `hds_ip_ext`, the L4 checksum is good.
pub const L4_OK: u8 = 1 << 2;

/// `op_own` with the given opcode, format and owner bit.
pub fn op_own(opcode: u8, format: u8, owner: u8) -> u8 {
    (opcode << 4) | ((format & 3) << 2) | (owner & 1)
}

/// `op_own` of an entry software pre-fills before handing a CQ to the device (invalid opcode,
/// owner 1; en_main.c fills 0xf1).
pub const OP_OWN_SW_INIT: u8 = 0xf1;

/// Whether the CQE at consumer index `ci` of a CQ of `2^log_size` entries is valid for
/// software: its owner bit equals the pass parity (`(op_own & 1) == (ci >> log_sz) & 1`) and
/// its opcode is not [`opcode::INVALID`].
pub fn cqe_owned_by_sw(op_own: u8, ci: u32, log_size: u32) -> bool {
    u32::from(op_own & 1) == (ci >> log_size) & 1 && op_own >> 4 != opcode::INVALID
}

/// The owner bit the device writes into the CQE at producer index `pi` of a CQ of
/// `2^log_size` entries.
pub fn cqe_owner_for(pi: u32, log_size: u32) -> u8 {
    ((pi >> log_size) & 1) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte offset of a declared field.
    fn byte(fields: &[crate::bits::Field], name: &str) -> u32 {
        fields.iter().find(|f| f.0 == name).expect(name).1 / 8
    }

    // struct mlx5_cqe64 (device.h) and the map (§2.6): 0x0c rss_hash_result, 0x10
    // rss_hash_type, 0x11 ml_path, 0x14 check_sum, 0x18 flags_rqpn, 0x1c hds_ip_ext, 0x1d
    // l4_l3_hdr_type, 0x1e vlan_info, 0x20 srqn, 0x24 immediate, 0x2c byte_cnt, 0x30
    // timestamp, 0x38 sop_drop_qpn, 0x3c wqe_counter, 0x3e signature, 0x3f op_own.
    #[test]
    fn cqe64_matches_device_h() {
        let f = Cqe64::FIELDS;
        assert_eq!(Cqe64::SIZE, 64);
        let expect = [
            ("tls_outer_l3_tunneled", 0x00),
            ("wqe_id", 0x02),
            ("lro_tcppsh_abort_dupack", 0x04),
            ("lro_min_ttl", 0x05),
            ("lro_tcp_win", 0x06),
            ("lro_ack_seq_num", 0x08),
            ("rss_hash_result", 0x0c),
            ("rss_hash_type", 0x10),
            ("ml_path", 0x11),
            ("check_sum", 0x14),
            ("slid", 0x16),
            ("flags_rqpn", 0x18),
            ("hds_ip_ext", 0x1c),
            ("l4_l3_hdr_type", 0x1d),
            ("vlan_info", 0x1e),
            ("srqn", 0x20),
            ("immediate", 0x24),
            ("byte_cnt", 0x2c),
            ("timestamp_h", 0x30),
            ("timestamp_l", 0x34),
            ("sop_drop_qpn", 0x38),
            ("wqe_counter", 0x3c),
            ("signature", 0x3e),
            ("op_own", 0x3f),
        ];
        for (name, off) in expect {
            assert_eq!(byte(f, name), off, "{name}");
        }
    }

    // struct mlx5_err_cqe: u8 rsvd0[32]; __be32 srqn; u8 rsvd1[18]; u8 vendor_err_synd;
    // u8 syndrome; __be32 s_wqe_opcode_qpn; __be16 wqe_counter; u8 signature; u8 op_own.
    #[test]
    fn err_cqe_matches_device_h() {
        let f = ErrCqe::FIELDS;
        assert_eq!(ErrCqe::SIZE, 64);
        assert_eq!(byte(f, "srqn"), 0x20);
        assert_eq!(byte(f, "vendor_err_synd"), 0x36);
        assert_eq!(byte(f, "syndrome"), 0x37);
        assert_eq!(byte(f, "s_wqe_opcode_qpn"), 0x38);
        assert_eq!(byte(f, "wqe_counter"), 0x3c);
        assert_eq!(byte(f, "signature"), 0x3e);
        assert_eq!(byte(f, "op_own"), 0x3f);
    }

    // device.h: get_cqe_opcode = op_own >> 4, mlx5_get_cqe_format = (op_own >> 2) & 3.
    #[test]
    fn op_own_sub_fields_follow_device_h_helpers() {
        let mut c = Cqe64::new();
        c.set_op_own(op_own(opcode::RESP_SEND, 1, 1).into());
        assert_eq!(c.0[0x3f], 0x25);
        assert_eq!(c.opcode(), u32::from(opcode::RESP_SEND));
        assert_eq!(c.format(), 1);
        assert_eq!(c.owner(), 1);
        c.set_byte_cnt(60);
        c.set_wqe_counter(0x1234);
        c.set_sop_drop_qpn(0xab_cdef);
        assert_eq!(&c.0[0x2c..0x30], &[0, 0, 0, 60]);
        assert_eq!(&c.0[0x3c..0x3e], &[0x12, 0x34]);
        assert_eq!(&c.0[0x38..0x3c], &[0, 0xab, 0xcd, 0xef]);
        c.set_timestamp(0x0102_0304_0506_0708);
        assert_eq!(
            (c.timestamp_h(), c.timestamp_l()),
            (0x0102_0304, 0x0506_0708)
        );
    }

    // device.h helpers: cqe_is_tunneled = byte 0 & 1; get_cqe_l4_hdr_type =
    // (l4_l3_hdr_type >> 4) & 7; cqe_has_vlan = l4_l3_hdr_type & 1; get_cqe_lro_num_seg =
    // srqn >> 24; get_cqe_flow_tag = sop_drop_qpn & 0xfff; CQE_L3_OK / CQE_L4_OK bits of
    // hds_ip_ext; CQE_RSS_HTYPE_IP = GENMASK(3, 2), CQE_RSS_HTYPE_L4 = GENMASK(7, 6).
    #[test]
    fn cqe_sub_fields_follow_device_h_helpers() {
        let mut c = Cqe64::new();
        c.set_outer_l3_tunneled(1);
        assert_eq!(c.0[0], 0x01);
        c.set_l4_hdr_type(l4_hdr_type::TCP_ACK_AND_DATA.into());
        c.set_l3_hdr_type(l3_hdr_type::IPV4.into());
        c.set_cvlan_stripped(1);
        assert_eq!(c.0[0x1d], 0x49);
        assert_eq!((c.0[0x1d] >> 4) & 7, l4_hdr_type::TCP_ACK_AND_DATA);
        c.set_l3_ok(1);
        assert_eq!(c.0[0x1c], L3_OK);
        c.set_l4_ok(1);
        assert_eq!(c.0[0x1c], L3_OK | L4_OK);
        c.set_rss_hash_type_ip(rss_ip::IPV6.into());
        c.set_rss_hash_type_l4(rss_l4::L4_UDP.into());
        assert_eq!(c.0[0x10], rss_hash_type(rss_ip::IPV6, rss_l4::L4_UDP));
        assert_eq!(c.0[0x10] & 0x0c, 0x08);
        assert_eq!(c.0[0x10] & 0xc0, 0x80);
        c.set_srqn(0x12_3456);
        c.set_lro_num_seg(3);
        assert_eq!(&c.0[0x20..0x24], &[3, 0x12, 0x34, 0x56]);
        c.set_flow_tag(0xab_cdef);
        assert_eq!(&c.0[0x38..0x3c], &[0, 0xab, 0xcd, 0xef]);
        let mut e = ErrCqe::new();
        e.set_s_wqe_opcode(0x0a);
        e.set_qpn(0x12_3456);
        assert_eq!(&e.0[0x38..0x3c], &[0x0a, 0x12, 0x34, 0x56]);
    }

    #[test]
    fn cqe_ownership_alternates_per_pass() {
        assert!(!cqe_owned_by_sw(OP_OWN_SW_INIT, 0, 4));
        assert!(cqe_owned_by_sw(
            op_own(opcode::REQ, 0, cqe_owner_for(3, 4)),
            3,
            4
        ));
        assert!(!cqe_owned_by_sw(op_own(opcode::REQ, 0, 0), 16, 4));
        assert!(cqe_owned_by_sw(
            op_own(opcode::REQ, 0, cqe_owner_for(16, 4)),
            16,
            4
        ));
        assert_eq!(opcode::cqe_opcode_name(13), "REQ_ERR");
    }
}
