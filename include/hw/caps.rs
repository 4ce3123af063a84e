// SPDX-License-Identifier: GPL-2.0
//! HCA capabilities: `QUERY_HCA_CAP` / `SET_HCA_CAP`, the capability page union and the
//! capability types.
//!
//! The capability pages themselves live in [`general`] (`cmd_hca_cap`), [`net`] (Ethernet
//! offloads, QoS), [`roce`] (RoCE, atomics), [`flow`] (NIC flow tables), [`odp`] (on-demand
//! paging) and [`vector_calc`]
//! (the erasure-coding engine; MLNX_OFED only, so not a member of the upstream-checked
//! [`HcaCapUnion`]: read it from the page bytes with `VectorCalcCap::ref_from_prefix`).

use crate::bits::ifc_layouts;

pub mod flow;
pub mod general;
pub mod net;
pub mod odp;
pub mod roce;
pub mod vector_calc;

use flow::FlowTableNicCap;
use general::CmdHcaCap;
use net::PerProtocolNetworkingOffloadCaps;
use odp::OdpCap;
use roce::{AtomicCaps, RoceCap};

ifc_layouts! {
    /// Input of `QUERY_HCA_CAP`; `op_mod` from [`query_op_mod`].
    pub struct QueryHcaCapIn: Ifc "query_hca_cap_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_function, set_other_function: u32 @ 0x040, 0x1;
        ec_vf_function, set_ec_vf_function: u32 @ 0x041, 0x1;
        function_id_type, set_function_id_type: u32 @ 0x043, 0x1;
        function_id, set_function_id: u32 @ 0x050, 0x10;
    }

    /// Output of `QUERY_HCA_CAP`: the requested capability page.
    pub struct QueryHcaCapOut: Ifc "query_hca_cap_out", 0x1010 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        capability, capability_mut: HcaCapUnion @ 0x080, 0x8000;
    }

    /// Input of `SET_HCA_CAP`; `op_mod` from [`set_op_mod`].
    pub struct SetHcaCapIn: Ifc "set_hca_cap_in", 0x1010 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_function, set_other_function: u32 @ 0x040, 0x1;
        ec_vf_function, set_ec_vf_function: u32 @ 0x041, 0x1;
        function_id_type, set_function_id_type: u32 @ 0x043, 0x1;
        function_id, set_function_id: u32 @ 0x050, 0x10;
        capability, capability_mut: HcaCapUnion @ 0x080, 0x8000;
    }

    /// Output of `SET_HCA_CAP`.
    pub struct SetHcaCapOut: Ifc "set_hca_cap_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// A capability page (`union mlx5_ifc_hca_cap_union_bits`, 4 KiB); which member is valid depends on the capability type of the command.
    pub struct HcaCapUnion: Ifc "hca_cap_union", 0x1000 {
        cmd_hca_cap, cmd_hca_cap_mut: CmdHcaCap @ 0x000, 0x800;
        atomic_caps, atomic_caps_mut: AtomicCaps @ 0x000, 0x800;
        roce_cap, roce_cap_mut: RoceCap @ 0x000, 0x800;
        per_protocol_networking_offload_caps, per_protocol_networking_offload_caps_mut:
            PerProtocolNetworkingOffloadCaps @ 0x000, 0x800;
        flow_table_nic_cap, flow_table_nic_cap_mut: FlowTableNicCap @ 0x000, 0x8000;
        odp_cap, odp_cap_mut: OdpCap @ 0x000, 0x800;
    }
}

/// Capability types (`enum mlx5_cap_type`, device.h): bits 15:1 of the `op_mod`.
pub mod cap_type {
    use crate::bits::code_table;

    code_table! { u16, "MLX5_CAP_", cap_type_name;
        GENERAL = 0x0, "GENERAL";
        ETHERNET_OFFLOADS = 0x1, "ETHERNET_OFFLOADS";
        ODP = 0x2, "ODP";
        ATOMIC = 0x3, "ATOMIC";
        ROCE = 0x4, "ROCE";
        IPOIB_OFFLOADS = 0x5, "IPOIB_OFFLOADS";
        IPOIB_ENHANCED_OFFLOADS = 0x6, "IPOIB_ENHANCED_OFFLOADS";
        FLOW_TABLE = 0x7, "FLOW_TABLE";
        ESWITCH_FLOW_TABLE = 0x8, "ESWITCH_FLOW_TABLE";
        ESWITCH = 0x9, "ESWITCH";
        QOS = 0xc, "QOS";
        DEBUG = 0xd, "DEBUG";
        DEV_MEM = 0xf, "DEV_MEM";
        TLS = 0x11, "TLS";
        VDPA_EMULATION = 0x13, "VDPA_EMULATION";
        DEV_EVENT = 0x14, "DEV_EVENT";
        IPSEC = 0x15, "IPSEC";
        CRYPTO = 0x1a, "CRYPTO";
        SHAMPO = 0x1d, "SHAMPO";
        PSP = 0x1e, "PSP";
        MACSEC = 0x1f, "MACSEC";
        GENERAL_2 = 0x20, "GENERAL_2";
        PORT_SELECTION = 0x25, "PORT_SELECTION";
        ADV_VIRTUALIZATION = 0x26, "ADV_VIRTUALIZATION";
        ADV_RDMA = 0x28, "ADV_RDMA";
        TLP_EMULATION = 0x2a, "TLP_EMULATION";
    }
}

/// `HCA_CAP_OPMOD_GET_MAX` (device.h): query the maximum the device supports.
pub const OPMOD_GET_MAX: u16 = 0;
/// `HCA_CAP_OPMOD_GET_CUR` (device.h): query the current (set) values.
pub const OPMOD_GET_CUR: u16 = 1;

/// `op_mod` of `QUERY_HCA_CAP` for a capability type (main.c: `(cap_type << 1) | cap_mode`).
pub fn query_op_mod(cap_type: u16, cur: bool) -> u16 {
    (cap_type << 1) | if cur { OPMOD_GET_CUR } else { OPMOD_GET_MAX }
}

/// `op_mod` of `SET_HCA_CAP` for a capability type (main.c: `opmod << 1`).
pub fn set_op_mod(cap_type: u16) -> u16 {
    cap_type << 1
}

/// Splits a `QUERY_HCA_CAP` `op_mod` into (capability type, current?).
pub fn split_query_op_mod(op_mod: u16) -> (u16, bool) {
    (op_mod >> 1, op_mod & 1 == OPMOD_GET_CUR)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The brief's round-trip example: opcode 0x100 lands big-endian in the first two bytes.
    #[test]
    fn query_hca_cap_in_places_opcode_and_op_mod() {
        let mut i = QueryHcaCapIn::new();
        i.set_opcode(0x100);
        i.set_op_mod(query_op_mod(cap_type::ROCE, true).into());
        assert_eq!(&i.0[..8], &[0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09]);
        assert_eq!(i.opcode(), 0x100);
        assert_eq!(split_query_op_mod(9), (cap_type::ROCE, true));
    }

    // The map, §1.3: GENERAL cur = 0x1, max = 0x0; ROCE 0x9/0x8, SET ROCE op_mod 0x8;
    // GENERAL_2 0x41/0x40; FLOW_TABLE cur 0xf; ETH cur 0x3.
    #[test]
    fn op_mods_match_the_map() {
        assert_eq!(query_op_mod(cap_type::GENERAL, true), 0x1);
        assert_eq!(query_op_mod(cap_type::GENERAL, false), 0x0);
        assert_eq!(query_op_mod(cap_type::ROCE, false), 0x8);
        assert_eq!(set_op_mod(cap_type::ROCE), 0x8);
        assert_eq!(query_op_mod(cap_type::GENERAL_2, true), 0x41);
        assert_eq!(query_op_mod(cap_type::FLOW_TABLE, true), 0xf);
        assert_eq!(query_op_mod(cap_type::ETHERNET_OFFLOADS, true), 0x3);
        assert_eq!(cap_type::cap_type_name(0x20), "GENERAL_2");
    }

    // The capability page starts at byte 0x10 of the output, all union members at its start.
    #[test]
    fn capability_union_members_share_byte_0x10() {
        let mut o = QueryHcaCapOut::new();
        o.capability_mut().cmd_hca_cap_mut().set_log_max_qp(0x12);
        // log_max_qp is bits 0x9b..0xa0 of cmd_hca_cap (mlx5_ifc.h): byte 0x13, low 5 bits.
        assert_eq!(o.0[0x10 + 0x13], 0x12);
        o.capability_mut()
            .per_protocol_networking_offload_caps_mut()
            .set_csum_cap(1);
        assert_eq!(o.0[0x10] & 0x80, 0x80);
        assert_eq!(o.capability().roce_cap().roce_apm(), 1);
        let ft = o.capability().flow_table_nic_cap();
        assert_eq!(ft.flow_table_properties_nic_receive().ft_support(), 0);
    }

    #[test]
    fn set_hca_cap_carries_the_page_at_byte_0x10() {
        let mut i = SetHcaCapIn::new();
        i.set_opcode(crate::opcode::SET_HCA_CAP.into());
        i.capability_mut()
            .cmd_hca_cap_mut()
            .set_pkey_table_size(0xf);
        assert_eq!(SetHcaCapIn::SIZE, 0x1010);
        assert_eq!(&i.0[..2], &[0x01, 0x09]);
        assert_eq!(i.capability().cmd_hca_cap().pkey_table_size(), 0xf);
    }
}
