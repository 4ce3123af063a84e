// SPDX-License-Identifier: GPL-2.0
//! RoCE objects and settings: XRC domains, the RoCE address (GID) table, multicast group
//! attachment and the congestion control (DCQCN) commands: parameters (mlx5_ib's `cc_params`
//! debugfs), statistics (its congestion counters) and status (sent only through DEVX).
//!
//! The RoCE capability page is [`crate::caps::roce::RoceCap`]; the HCA vport context, GID and
//! P_Key queries are in [`crate::vport`].

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// Input of `MAD_IFC`: a 256-byte management datagram for the port's agents.
    pub struct MadIfcIn: Ifc "mad_ifc_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        remote_lid, set_remote_lid: u32 @ 0x040, 0x10;
        plane_index, set_plane_index: u32 @ 0x050, 0x8;
        port, set_port: u32 @ 0x058, 0x8;
        mad, mad_mut: bytes @ 0x080, 0x800;
    }

    /// Output of `MAD_IFC`: the response MAD.
    pub struct MadIfcOut: Ifc "mad_ifc_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        response_mad_packet, response_mad_packet_mut: bytes @ 0x080, 0x800;
    }

    /// Input of `ALLOC_XRCD`.
    pub struct AllocXrcdIn: Ifc "alloc_xrcd_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
    }

    /// Output of `ALLOC_XRCD`: the XRC domain number.
    pub struct AllocXrcdOut: Ifc "alloc_xrcd_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        xrcd, set_xrcd: u32 @ 0x048, 0x18;
    }

    /// Input of `DEALLOC_XRCD`.
    pub struct DeallocXrcdIn: Ifc "dealloc_xrcd_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        xrcd, set_xrcd: u32 @ 0x048, 0x18;
    }

    /// Output of `DEALLOC_XRCD`.
    pub struct DeallocXrcdOut: Ifc "dealloc_xrcd_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// One entry of the RoCE address (GID) table: the source IP (an IPv4 address is IPv4-mapped,
    /// `::ffff:a.b.c.d`), VLAN, source MAC, L3 type ([`roce_l3_type`]) and RoCE version
    /// ([`roce_version`]). All zero marks an unused entry.
    pub struct RoceAddrLayout: Ifc "roce_addr_layout", 0x20 {
        source_l3_address, source_l3_address_mut: bytes @ 0x000, 0x80;
        vlan_valid, set_vlan_valid: u32 @ 0x083, 0x1;
        vlan_id, set_vlan_id: u32 @ 0x084, 0xc;
        source_mac_47_32, set_source_mac_47_32: u32 @ 0x090, 0x10;
        source_mac_31_0, set_source_mac_31_0: u32 @ 0x0a0, 0x20;
        roce_l3_type, set_roce_l3_type: u32 @ 0x0d4, 0x4;
        roce_version, set_roce_version: u32 @ 0x0d8, 0x8;
    }

    /// Input of `SET_ROCE_ADDRESS`: write GID table entry `roce_address_index` of port
    /// `vhca_port_num`.
    pub struct SetRoceAddressIn: Ifc "set_roce_address_in", 0x30 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        roce_address_index, set_roce_address_index: u32 @ 0x040, 0x10;
        vhca_port_num, set_vhca_port_num: u32 @ 0x05c, 0x4;
        roce_address, roce_address_mut: RoceAddrLayout @ 0x080, 0x100;
    }

    /// Output of `SET_ROCE_ADDRESS`.
    pub struct SetRoceAddressOut: Ifc "set_roce_address_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_ROCE_ADDRESS`.
    pub struct QueryRoceAddressIn: Ifc "query_roce_address_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        roce_address_index, set_roce_address_index: u32 @ 0x040, 0x10;
        vhca_port_num, set_vhca_port_num: u32 @ 0x05c, 0x4;
    }

    /// Output of `QUERY_ROCE_ADDRESS`: the GID table entry.
    pub struct QueryRoceAddressOut: Ifc "query_roce_address_out", 0x30 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        roce_address, roce_address_mut: RoceAddrLayout @ 0x080, 0x100;
    }

    /// Input of `ATTACH_TO_MCG`: add a UD QP to the multicast group of a GID.
    pub struct AttachToMcgIn: Ifc "attach_to_mcg_in", 0x20 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpn, set_qpn: u32 @ 0x048, 0x18;
        multicast_gid, multicast_gid_mut: bytes @ 0x080, 0x80;
    }

    /// Output of `ATTACH_TO_MCG`.
    pub struct AttachToMcgOut: Ifc "attach_to_mcg_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `DETACH_FROM_MCG`.
    pub struct DetachFromMcgIn: Ifc "detach_from_mcg_in", 0x20 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpn, set_qpn: u32 @ 0x048, 0x18;
        multicast_gid, multicast_gid_mut: bytes @ 0x080, 0x80;
    }

    /// Output of `DETACH_FROM_MCG`.
    pub struct DetachFromMcgOut: Ifc "detach_from_mcg_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Congestion control parameters of the RoCE ECN notification point (the receiver that answers
    /// CE-marked packets with CNPs); `cong_protocol` [`cong_protocol::ECN_NP`].
    pub struct CongControlRRoceEcnNp: Ifc "cong_control_r_roce_ecn_np", 0x100 {
        min_time_between_cnps, set_min_time_between_cnps: u32 @ 0x0a0, 0x20;
        cnp_dscp, set_cnp_dscp: u32 @ 0x0d2, 0x6;
        cnp_prio_mode, set_cnp_prio_mode: u32 @ 0x0dc, 0x1;
        cnp_802p_prio, set_cnp_802p_prio: u32 @ 0x0dd, 0x3;
    }

    /// Congestion control parameters of the RoCE ECN reaction point (the sender that slows down on
    /// CNPs, DCQCN); `cong_protocol` [`cong_protocol::ECN_RP`].
    pub struct CongControlRRoceEcnRp: Ifc "cong_control_r_roce_ecn_rp", 0x100 {
        clamp_tgt_rate, set_clamp_tgt_rate: u32 @ 0x064, 0x1;
        clamp_tgt_rate_after_time_inc, set_clamp_tgt_rate_after_time_inc: u32 @ 0x068, 0x1;
        rpg_time_reset, set_rpg_time_reset: u32 @ 0x0a0, 0x20;
        rpg_byte_reset, set_rpg_byte_reset: u32 @ 0x0c0, 0x20;
        rpg_threshold, set_rpg_threshold: u32 @ 0x0e0, 0x20;
        rpg_max_rate, set_rpg_max_rate: u32 @ 0x100, 0x20;
        rpg_ai_rate, set_rpg_ai_rate: u32 @ 0x120, 0x20;
        rpg_hai_rate, set_rpg_hai_rate: u32 @ 0x140, 0x20;
        rpg_gd, set_rpg_gd: u32 @ 0x160, 0x20;
        rpg_min_dec_fac, set_rpg_min_dec_fac: u32 @ 0x180, 0x20;
        rpg_min_rate, set_rpg_min_rate: u32 @ 0x1a0, 0x20;
        rate_to_set_on_first_cnp, set_rate_to_set_on_first_cnp: u32 @ 0x2a0, 0x20;
        dce_tcp_g, set_dce_tcp_g: u32 @ 0x2c0, 0x20;
        dce_tcp_rtt, set_dce_tcp_rtt: u32 @ 0x2e0, 0x20;
        rate_reduce_monitor_period, set_rate_reduce_monitor_period: u32 @ 0x300, 0x20;
        initial_alpha_value, set_initial_alpha_value: u32 @ 0x340, 0x20;
    }

    /// General RoCE congestion control parameters (RTT response DSCP); `cong_protocol`
    /// [`cong_protocol::GENERAL`].
    pub struct CongControlRRoceGeneral: Ifc "cong_control_r_roce_general", 0x100 {
        rtt_resp_dscp_valid, set_rtt_resp_dscp_valid: u32 @ 0x090, 0x1;
        rtt_resp_dscp, set_rtt_resp_dscp: u32 @ 0x09a, 0x6;
    }

    /// Congestion control parameters of an IEEE 802.1Qau (QCN) reaction point.
    pub struct CongControl8021qauRp: Ifc "cong_control_802_1qau_rp", 0x100 {
        rppp_max_rps, set_rppp_max_rps: u32 @ 0x080, 0x20;
        rpg_time_reset, set_rpg_time_reset: u32 @ 0x0a0, 0x20;
        rpg_byte_reset, set_rpg_byte_reset: u32 @ 0x0c0, 0x20;
        rpg_threshold, set_rpg_threshold: u32 @ 0x0e0, 0x20;
        rpg_max_rate, set_rpg_max_rate: u32 @ 0x100, 0x20;
        rpg_ai_rate, set_rpg_ai_rate: u32 @ 0x120, 0x20;
        rpg_hai_rate, set_rpg_hai_rate: u32 @ 0x140, 0x20;
        rpg_gd, set_rpg_gd: u32 @ 0x160, 0x20;
        rpg_min_dec_fac, set_rpg_min_dec_fac: u32 @ 0x180, 0x20;
        rpg_min_rate, set_rpg_min_rate: u32 @ 0x1a0, 0x20;
    }

    /// The congestion parameters of `QUERY_CONG_PARAMS` / `MODIFY_CONG_PARAMS` (`union
    /// mlx5_ifc_cong_control_roce_ecn_auto_bits`); the member follows the `cong_protocol` of the
    /// command.
    pub struct CongControlRoceEcnAuto: Ifc "cong_control_roce_ecn_auto", 0x100 {
        cong_control_802_1qau_rp, cong_control_802_1qau_rp_mut: CongControl8021qauRp @ 0x000, 0x800;
        cong_control_r_roce_ecn_rp, cong_control_r_roce_ecn_rp_mut: CongControlRRoceEcnRp @ 0x000, 0x800;
        cong_control_r_roce_ecn_np, cong_control_r_roce_ecn_np_mut: CongControlRRoceEcnNp @ 0x000, 0x800;
        cong_control_r_roce_general, cong_control_r_roce_general_mut: CongControlRRoceGeneral @ 0x000, 0x800;
    }

    /// `modify_cong_params_in.field_select` (`union mlx5_ifc_field_select_802_1_r_roce_auto_bits`):
    /// the parameters a `MODIFY_CONG_PARAMS` changes, one bit per parameter ([`RpFieldSelect`],
    /// [`NpFieldSelect`], [`GeneralFieldSelect`]); the one-word member structs are read as `u32`.
    pub struct FieldSelectCong: Ifc "field_select_802_1_r_roce_auto", 0x4 {
        field_select_802_1qau_rp, set_field_select_802_1qau_rp: u32 @ 0x000, 0x20;
        field_select_r_roce_rp, set_field_select_r_roce_rp: u32 @ 0x000, 0x20;
        field_select_r_roce_np, set_field_select_r_roce_np: u32 @ 0x000, 0x20;
    }

    /// Input of `QUERY_CONG_PARAMS`.
    pub struct QueryCongParamsIn: Ifc "query_cong_params_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        cong_protocol, set_cong_protocol: u32 @ 0x05c, 0x4;
    }

    /// Output of `QUERY_CONG_PARAMS`.
    pub struct QueryCongParamsOut: Ifc "query_cong_params_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        congestion_parameters, congestion_parameters_mut: CongControlRoceEcnAuto @ 0x080, 0x800;
    }

    /// Input of `MODIFY_CONG_PARAMS`.
    pub struct ModifyCongParamsIn: Ifc "modify_cong_params_in", 0x120 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        cong_protocol, set_cong_protocol: u32 @ 0x05c, 0x4;
        field_select, field_select_mut: FieldSelectCong @ 0x060, 0x20;
        congestion_parameters, congestion_parameters_mut: CongControlRoceEcnAuto @ 0x100, 0x800;
    }

    /// Output of `MODIFY_CONG_PARAMS`.
    pub struct ModifyCongParamsOut: Ifc "modify_cong_params_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_CONG_STATISTICS`; `clear` resets the counters after reading.
    pub struct QueryCongStatisticsIn: Ifc "query_cong_statistics_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        clear, set_clear: u32 @ 0x040, 0x1;
    }

    /// Output of `QUERY_CONG_STATISTICS`: CNP and ECN counters as high/low words.
    pub struct QueryCongStatisticsOut: Ifc "query_cong_statistics_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        rp_cur_flows, set_rp_cur_flows: u32 @ 0x080, 0x20;
        sum_flows, set_sum_flows: u32 @ 0x0a0, 0x20;
        rp_cnp_ignored_high, set_rp_cnp_ignored_high: u32 @ 0x0c0, 0x20;
        rp_cnp_ignored_low, set_rp_cnp_ignored_low: u32 @ 0x0e0, 0x20;
        rp_cnp_handled_high, set_rp_cnp_handled_high: u32 @ 0x100, 0x20;
        rp_cnp_handled_low, set_rp_cnp_handled_low: u32 @ 0x120, 0x20;
        time_stamp_high, set_time_stamp_high: u32 @ 0x240, 0x20;
        time_stamp_low, set_time_stamp_low: u32 @ 0x260, 0x20;
        accumulators_period, set_accumulators_period: u32 @ 0x280, 0x20;
        np_ecn_marked_roce_packets_high, set_np_ecn_marked_roce_packets_high: u32 @ 0x2a0, 0x20;
        np_ecn_marked_roce_packets_low, set_np_ecn_marked_roce_packets_low: u32 @ 0x2c0, 0x20;
        np_cnp_sent_high, set_np_cnp_sent_high: u32 @ 0x2e0, 0x20;
        np_cnp_sent_low, set_np_cnp_sent_low: u32 @ 0x300, 0x20;
    }

    /// Input of `QUERY_CONG_STATUS`: whether congestion control is enabled for a protocol and
    /// priority.
    pub struct QueryCongStatusIn: Ifc "query_cong_status_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        priority, set_priority: u32 @ 0x058, 0x4;
        cong_protocol, set_cong_protocol: u32 @ 0x05c, 0x4;
    }

    /// Output of `QUERY_CONG_STATUS`.
    pub struct QueryCongStatusOut: Ifc "query_cong_status_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        enable, set_enable: u32 @ 0x060, 0x1;
        tag_enable, set_tag_enable: u32 @ 0x061, 0x1;
    }

    /// Input of `MODIFY_CONG_STATUS`: enable or disable congestion control for a protocol and
    /// priority.
    pub struct ModifyCongStatusIn: Ifc "modify_cong_status_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        priority, set_priority: u32 @ 0x058, 0x4;
        cong_protocol, set_cong_protocol: u32 @ 0x05c, 0x4;
        enable, set_enable: u32 @ 0x060, 0x1;
        tag_enable, set_tag_enable: u32 @ 0x061, 0x1;
    }

    /// Output of `MODIFY_CONG_STATUS`.
    pub struct ModifyCongStatusOut: Ifc "modify_cong_status_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }
}

/// `roce_addr_layout.roce_version` (`MLX5_ROCE_VERSION_*`, device.h).
pub mod roce_version {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_ROCE_VERSION_", roce_version_name;
        /// RoCE v1: the GRH in an Ethernet frame of EtherType 0x8915.
        V1 = 0, "1";
        /// RoCE v2: the IB transport over UDP (destination port 4791) over IPv4 or IPv6.
        V2 = 2, "2";
    }
}

/// `roce_cap.roce_version` bit of RoCE v1 (`MLX5_ROCE_VERSION_1_CAP`).
pub const ROCE_VERSION_1_CAP: u8 = 1 << roce_version::V1;
/// `roce_cap.roce_version` bit of RoCE v2 (`MLX5_ROCE_VERSION_2_CAP`).
pub const ROCE_VERSION_2_CAP: u8 = 1 << roce_version::V2;

/// `roce_addr_layout.roce_l3_type` (`MLX5_ROCE_L3_TYPE_*`, device.h).
pub mod roce_l3_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_ROCE_L3_TYPE_", roce_l3_type_name;
        IPV4 = 0, "IPV4";
        IPV6 = 1, "IPV6";
    }
}

/// `roce_cap.l3_type` bit of IPv4 support (`MLX5_ROCE_L3_TYPE_IPV4_CAP`).
pub const ROCE_L3_TYPE_IPV4_CAP: u8 = 1 << 1;
/// `roce_cap.l3_type` bit of IPv6 support (`MLX5_ROCE_L3_TYPE_IPV6_CAP`).
pub const ROCE_L3_TYPE_IPV6_CAP: u8 = 1 << 2;

/// `cong_protocol` of the congestion commands as mlx5_ib sends it (`enum
/// mlx5_ib_cong_node_type`, drivers/infiniband/hw/mlx5/cong.c).
pub mod cong_protocol {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_IB_RROCE_", cong_protocol_name;
        /// Reaction point ([`super::CongControlRRoceEcnRp`]).
        ECN_RP = 1, "ECN_RP";
        /// Notification point ([`super::CongControlRRoceEcnNp`]).
        ECN_NP = 2, "ECN_NP";
        /// General parameters ([`super::CongControlRRoceGeneral`]).
        GENERAL = 3, "GENERAL";
    }
}

bitflags::bitflags! {
    /// `field_select_r_roce_rp` bits: the reaction point parameters a `MODIFY_CONG_PARAMS`
    /// changes (`MLX5_IB_RP_*_ATTR`, cong.c).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct RpFieldSelect: u32 {
        /// `clamp_tgt_rate`.
        const CLAMP_TGT_RATE = 1 << 1;
        /// `clamp_tgt_rate_after_time_inc`.
        const CLAMP_TGT_RATE_ATI = 1 << 2;
        /// `rpg_time_reset`.
        const TIME_RESET = 1 << 3;
        /// `rpg_byte_reset`.
        const BYTE_RESET = 1 << 4;
        /// `rpg_threshold`.
        const THRESHOLD = 1 << 5;
        /// `rpg_max_rate`.
        const MAX_RATE = 1 << 6;
        /// `rpg_ai_rate`.
        const AI_RATE = 1 << 7;
        /// `rpg_hai_rate`.
        const HAI_RATE = 1 << 8;
        /// `rpg_min_dec_fac`.
        const MIN_DEC_FAC = 1 << 9;
        /// `rpg_min_rate`.
        const MIN_RATE = 1 << 10;
        /// `rate_to_set_on_first_cnp`.
        const RATE_TO_SET_ON_FIRST_CNP = 1 << 11;
        /// `dce_tcp_g`.
        const DCE_TCP_G = 1 << 12;
        /// `dce_tcp_rtt`.
        const DCE_TCP_RTT = 1 << 13;
        /// `rate_reduce_monitor_period`.
        const RATE_REDUCE_MONITOR_PERIOD = 1 << 14;
        /// `initial_alpha_value`.
        const INITIAL_ALPHA_VALUE = 1 << 15;
        /// `rpg_gd`.
        const GD = 1 << 16;
    }
}

bitflags::bitflags! {
    /// `field_select_r_roce_np` bits (`MLX5_IB_NP_*_ATTR`, cong.c).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct NpFieldSelect: u32 {
        /// `min_time_between_cnps`.
        const MIN_TIME_BETWEEN_CNPS = 1 << 2;
        /// `cnp_dscp`.
        const CNP_DSCP = 1 << 3;
        /// `cnp_prio_mode` and `cnp_802p_prio` (mlx5_ib sets both under this bit).
        const CNP_PRIO_MODE = 1 << 4;
    }
}

bitflags::bitflags! {
    /// Field select bits of the general parameters (`MLX5_IB_GENERAL_*_ATTR`, cong.c).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct GeneralFieldSelect: u32 {
        /// `rtt_resp_dscp_valid` and `rtt_resp_dscp`.
        const RTT_RESP_DSCP = 1 << 0;
    }
}

impl RoceAddrLayout {
    /// The source MAC address in network byte order.
    pub fn source_mac(&self) -> [u8; 6] {
        let mut m = [0u8; 6];
        m.copy_from_slice(&self.0[0x12..0x18]);
        m
    }

    /// Stores the source MAC address given in network byte order.
    pub fn set_source_mac(&mut self, mac: [u8; 6]) {
        self.0[0x12..0x18].copy_from_slice(&mac);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // roce_addr_layout: source_l3_address 16 bytes at 0, vlan_valid bit 0x83, vlan_id 12 bits
    // at 0x84, source_mac_47_32 at 0x90, source_mac_31_0 at 0xa0, roce_l3_type 4 bits at
    // 0xd4, roce_version 8 bits at 0xd8; the entry sits at bit 0x80 of set_roce_address_in.
    #[test]
    fn roce_address_entry_follows_the_header() {
        let mut i = SetRoceAddressIn::new();
        i.set_opcode(crate::opcode::SET_ROCE_ADDRESS.into());
        i.set_roce_address_index(3);
        i.set_vhca_port_num(1);
        let a = i.roce_address_mut();
        a.source_l3_address_mut()
            .copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1]);
        a.set_vlan_valid(1);
        a.set_vlan_id(0x123);
        a.set_source_mac([0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
        a.set_roce_l3_type(roce_l3_type::IPV4.into());
        a.set_roce_version(roce_version::V2.into());
        assert_eq!(&i.0[..2], &[0x07, 0x61]);
        assert_eq!(&i.0[8..12], &[0, 3, 0, 1]);
        let e = &i.0[0x10..];
        assert_eq!(&e[0xa..0x10], &[0xff, 0xff, 10, 0, 0, 1]);
        assert_eq!(
            &e[0x10..0x18],
            &[0x11, 0x23, 0x02, 0x11, 0x22, 0x33, 0x44, 0x55]
        );
        assert_eq!(&e[0x18..0x1c], &[0, 0, 0, 2]);
        let a = i.roce_address();
        assert_eq!(a.source_mac_47_32(), 0x0211);
        assert_eq!(a.source_mac_31_0(), 0x2233_4455);
        assert_eq!(ROCE_VERSION_2_CAP, 4);
    }

    // attach_to_mcg_in: qpn at 0x48, multicast_gid 16 bytes at bit 0x80.
    #[test]
    fn mcg_commands_place_qpn_and_gid() {
        let mut i = AttachToMcgIn::new();
        i.set_qpn(0x12_3456);
        i.multicast_gid_mut()[0] = 0xff;
        assert_eq!(&i.0[8..12], &[0, 0x12, 0x34, 0x56]);
        assert_eq!(i.0[0x10], 0xff);
        assert_eq!(DetachFromMcgIn::SIZE, AttachToMcgIn::SIZE);
    }

    // modify_cong_params_in: cong_protocol 4 bits at 0x5c, field_select at 0x60, parameters at
    // 0x100; np.cnp_dscp 6 bits at 0xd2, rp.rpg_time_reset at 0xa0.
    #[test]
    fn cong_params_place_protocol_select_and_parameters() {
        let mut i = ModifyCongParamsIn::new();
        i.set_opcode(crate::opcode::MODIFY_CONG_PARAMS.into());
        i.set_cong_protocol(cong_protocol::ECN_NP.into());
        i.field_select_mut()
            .set_field_select_r_roce_np(NpFieldSelect::CNP_DSCP.bits());
        i.congestion_parameters_mut()
            .cong_control_r_roce_ecn_np_mut()
            .set_cnp_dscp(48);
        assert_eq!(&i.0[..2], &[0x08, 0x25]);
        assert_eq!(i.0[0xb], 2);
        assert_eq!(&i.0[0xc..0x10], &[0, 0, 0, 8]);
        assert_eq!(&i.0[0x20 + 0x18..0x20 + 0x1c], &[0, 0, 48, 0]);
        let p = i.congestion_parameters().cong_control_r_roce_ecn_rp();
        assert_eq!(p.rpg_max_rate(), 0);
        let mut o = QueryCongParamsOut::new();
        o.congestion_parameters_mut()
            .cong_control_r_roce_ecn_rp_mut()
            .set_rpg_time_reset(300);
        assert_eq!(&o.0[0x10 + 0x14..0x10 + 0x18], &[0, 0, 0x01, 0x2c]);
    }

    // query_cong_statistics_out: rp_cnp_handled_{high,low} at 0x100/0x120, np_cnp_sent_{high,low}
    // at 0x2e0/0x300.
    #[test]
    fn cong_statistics_follow_the_header() {
        let mut o = QueryCongStatisticsOut::new();
        o.set_rp_cnp_handled_low(7);
        o.set_np_cnp_sent_high(1);
        o.set_np_cnp_sent_low(2);
        assert_eq!(&o.0[0x24..0x28], &[0, 0, 0, 7]);
        assert_eq!(&o.0[0x5c..0x64], &[0, 0, 0, 1, 0, 0, 0, 2]);
        let mut s = ModifyCongStatusIn::new();
        s.set_priority(3);
        s.set_cong_protocol(cong_protocol::ECN_RP.into());
        s.set_enable(1);
        assert_eq!(&s.0[8..16], &[0, 0, 0, 0x31, 0x80, 0, 0, 0]);
    }
}
