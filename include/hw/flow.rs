// SPDX-License-Identifier: GPL-2.0
//! Flow steering: flow table creation, destruction and the root table.

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// Input of `CREATE_FLOW_TABLE`; `table_type` is one of [`table_type`].
    pub struct CreateFlowTableIn: Ifc "create_flow_table_in", 0x40 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        other_eswitch, set_other_eswitch: u32 @ 0x041, 0x1;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        table_type, set_table_type: u32 @ 0x080, 0x8;
        eswitch_owner_vhca_id, set_eswitch_owner_vhca_id: u32 @ 0x090, 0x10;
        flow_table_context, flow_table_context_mut: FlowTableContext @ 0x0c0, 0x140;
    }

    /// Output of `CREATE_FLOW_TABLE`: the table id.
    pub struct CreateFlowTableOut: Ifc "create_flow_table_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        icm_address_63_40, set_icm_address_63_40: u32 @ 0x008, 0x18;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        icm_address_39_32, set_icm_address_39_32: u32 @ 0x040, 0x8;
        table_id, set_table_id: u32 @ 0x048, 0x18;
        icm_address_31_0, set_icm_address_31_0: u32 @ 0x060, 0x20;
    }

    /// Input of `DESTROY_FLOW_TABLE`.
    pub struct DestroyFlowTableIn: Ifc "destroy_flow_table_in", 0x40 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        other_eswitch, set_other_eswitch: u32 @ 0x041, 0x1;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        table_type, set_table_type: u32 @ 0x080, 0x8;
        eswitch_owner_vhca_id, set_eswitch_owner_vhca_id: u32 @ 0x090, 0x10;
        table_id, set_table_id: u32 @ 0x0a8, 0x18;
    }

    /// Output of `DESTROY_FLOW_TABLE`.
    pub struct DestroyFlowTableOut: Ifc "destroy_flow_table_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Flow table context: level, size and miss behaviour.
    pub struct FlowTableContext: Ifc "flow_table_context", 0x28 {
        reformat_en, set_reformat_en: u32 @ 0x000, 0x1;
        decap_en, set_decap_en: u32 @ 0x001, 0x1;
        sw_owner, set_sw_owner: u32 @ 0x002, 0x1;
        termination_table, set_termination_table: u32 @ 0x003, 0x1;
        table_miss_action, set_table_miss_action: u32 @ 0x004, 0x4;
        level, set_level: u32 @ 0x008, 0x8;
        rtc_valid, set_rtc_valid: u32 @ 0x010, 0x1;
        log_size, set_log_size: u32 @ 0x018, 0x8;
        table_miss_id, set_table_miss_id: u32 @ 0x028, 0x18;
        lag_master_next_table_id, set_lag_master_next_table_id: u32 @ 0x048, 0x18;
    }

    /// Input of `SET_FLOW_TABLE_ROOT`.
    pub struct SetFlowTableRootIn: Ifc "set_flow_table_root_in", 0x40 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        other_eswitch, set_other_eswitch: u32 @ 0x041, 0x1;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        eswitch_owner_vhca_id, set_eswitch_owner_vhca_id: u32 @ 0x070, 0x10;
        table_type, set_table_type: u32 @ 0x080, 0x8;
        table_of_other_vport, set_table_of_other_vport: u32 @ 0x08f, 0x1;
        table_vport_number, set_table_vport_number: u32 @ 0x090, 0x10;
        table_id, set_table_id: u32 @ 0x0a8, 0x18;
        underlay_qpn, set_underlay_qpn: u32 @ 0x0c8, 0x18;
        table_eswitch_owner_vhca_id_valid, set_table_eswitch_owner_vhca_id_valid: u32 @ 0x0e0, 0x1;
        table_eswitch_owner_vhca_id, set_table_eswitch_owner_vhca_id: u32 @ 0x0f0, 0x10;
    }

    /// Output of `SET_FLOW_TABLE_ROOT`.
    pub struct SetFlowTableRootOut: Ifc "set_flow_table_root_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }
}

/// `table_type` values (`enum fs_flow_table_type`, fs.h).
pub mod table_type {
    use crate::bits::code_table;

    code_table! { u8, "FS_FT_", table_type_name;
        NIC_RX = 0x0, "NIC_RX";
        NIC_TX = 0x1, "NIC_TX";
        ESW_EGRESS_ACL = 0x2, "ESW_EGRESS_ACL";
        ESW_INGRESS_ACL = 0x3, "ESW_INGRESS_ACL";
        FDB = 0x4, "FDB";
        SNIFFER_RX = 0x5, "SNIFFER_RX";
        SNIFFER_TX = 0x6, "SNIFFER_TX";
        RDMA_RX = 0x7, "RDMA_RX";
        RDMA_TX = 0x8, "RDMA_TX";
    }
}

/// `table_miss_action` of [`FlowTableContext`] (`enum mlx5_flow_table_miss_action`).
pub mod miss_action {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_FLOW_TABLE_MISS_ACTION_", miss_action_name;
        /// Default behaviour of the table type (drop on NIC RX).
        DEF = 0x0, "DEF";
        /// Forward to `table_miss_id`.
        FWD = 0x1, "FWD";
        SWITCH_DOMAIN = 0x2, "SWITCH_DOMAIN";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // create_flow_table_in: table_type 8 bits at 0x80, flow_table_context at 0xc0 with
    // table_miss_action 4 bits at +0x4, level at +0x8, log_size at +0x18, table_miss_id
    // 24 bits at +0x28.
    #[test]
    fn create_flow_table_places_type_and_context() {
        let mut i = CreateFlowTableIn::new();
        i.set_opcode(crate::opcode::CREATE_FLOW_TABLE.into());
        i.set_table_type(table_type::NIC_RX.into());
        let ctx = i.flow_table_context_mut();
        ctx.set_table_miss_action(miss_action::FWD.into());
        ctx.set_level(63);
        ctx.set_log_size(0);
        ctx.set_table_miss_id(0x12);
        assert_eq!(&i.0[..2], &[0x09, 0x30]);
        assert_eq!(&i.0[0x18..0x20], &[0x01, 63, 0, 0, 0, 0, 0, 0x12]);
    }

    #[test]
    fn set_root_and_create_out_carry_the_table_id() {
        let mut o = CreateFlowTableOut::new();
        o.set_table_id(0x10_0001);
        assert_eq!(&o.0[8..12], &[0, 0x10, 0, 0x01]);
        let mut i = SetFlowTableRootIn::new();
        i.set_table_id(0x10_0001);
        assert_eq!(&i.0[0x14..0x18], &[0, 0x10, 0, 0x01]);
    }
}
