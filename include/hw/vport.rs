// SPDX-License-Identifier: GPL-2.0
//! Vport commands: vport state, the NIC vport context and the P_Key table.

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// Input of `QUERY_VPORT_STATE`.
    pub struct QueryVportStateIn: Ifc "query_vport_state_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
    }

    /// Output of `QUERY_VPORT_STATE`; `state` is one of [`vport_state`].
    pub struct QueryVportStateOut: Ifc "query_vport_state_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        max_tx_speed, set_max_tx_speed: u32 @ 0x060, 0x10;
        admin_state, set_admin_state: u32 @ 0x078, 0x4;
        state, set_state: u32 @ 0x07c, 0x4;
    }

    /// Input of `QUERY_NIC_VPORT_CONTEXT`.
    pub struct QueryNicVportContextIn: Ifc "query_nic_vport_context_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        allowed_list_type, set_allowed_list_type: u32 @ 0x065, 0x3;
    }

    /// Output of `QUERY_NIC_VPORT_CONTEXT`.
    pub struct QueryNicVportContextOut: Ifc "query_nic_vport_context_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        nic_vport_context, nic_vport_context_mut: NicVportContext @ 0x080, 0x800;
    }

    /// Input of `MODIFY_NIC_VPORT_CONTEXT`; `field_select` says which context fields apply.
    pub struct ModifyNicVportContextIn: Ifc "modify_nic_vport_context_in", 0x200 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        field_select, field_select_mut: ModifyNicVportFieldSelect @ 0x060, 0x20;
        nic_vport_context, nic_vport_context_mut: NicVportContext @ 0x800, 0x800;
    }

    /// Output of `MODIFY_NIC_VPORT_CONTEXT`.
    pub struct ModifyNicVportContextOut: Ifc "modify_nic_vport_context_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// NIC vport context (MTU, GUIDs, MAC addresses, promiscuity, RoCE enable), followed by the address list (`current_uc_mac_address[]`).
    pub struct NicVportContext: Ifc "nic_vport_context", 0x100 {
        min_wqe_inline_mode, set_min_wqe_inline_mode: u32 @ 0x005, 0x3;
        disable_mc_local_lb, set_disable_mc_local_lb: u32 @ 0x01d, 0x1;
        disable_uc_local_lb, set_disable_uc_local_lb: u32 @ 0x01e, 0x1;
        roce_en, set_roce_en: u32 @ 0x01f, 0x1;
        arm_change_event, set_arm_change_event: u32 @ 0x020, 0x1;
        event_on_mtu, set_event_on_mtu: u32 @ 0x03b, 0x1;
        event_on_promisc_change, set_event_on_promisc_change: u32 @ 0x03c, 0x1;
        event_on_vlan_change, set_event_on_vlan_change: u32 @ 0x03d, 0x1;
        event_on_mc_address_change, set_event_on_mc_address_change: u32 @ 0x03e, 0x1;
        event_on_uc_address_change, set_event_on_uc_address_change: u32 @ 0x03f, 0x1;
        vhca_id_type, set_vhca_id_type: u32 @ 0x040, 0x1;
        affiliation_criteria, set_affiliation_criteria: u32 @ 0x04c, 0x4;
        affiliated_vhca_id, set_affiliated_vhca_id: u32 @ 0x050, 0x10;
        sd_group, set_sd_group: u32 @ 0x101, 0x3;
        sd_group_size, set_sd_group_size: u32 @ 0x108, 0x8;
        mtu, set_mtu: u32 @ 0x130, 0x10;
        system_image_guid, set_system_image_guid: u64 @ 0x140, 0x40;
        port_guid, set_port_guid: u64 @ 0x180, 0x40;
        node_guid, set_node_guid: u64 @ 0x1c0, 0x40;
        qkey_violation_counter, set_qkey_violation_counter: u32 @ 0x340, 0x10;
        promisc_uc, set_promisc_uc: u32 @ 0x780, 0x1;
        promisc_mc, set_promisc_mc: u32 @ 0x781, 0x1;
        promisc_all, set_promisc_all: u32 @ 0x782, 0x1;
        allowed_list_type, set_allowed_list_type: u32 @ 0x785, 0x3;
        allowed_list_size, set_allowed_list_size: u32 @ 0x790, 0x10;
        permanent_address, permanent_address_mut: MacAddressLayout @ 0x7a0, 0x40;
        current_uc_mac_address, set_current_uc_mac_address: tail u64 @ 0x800, 0x40;
    }

    /// Which fields of a [`NicVportContext`] a `MODIFY_NIC_VPORT_CONTEXT` changes.
    pub struct ModifyNicVportFieldSelect: Ifc "modify_nic_vport_field_select", 0x4 {
        affiliation, set_affiliation: u32 @ 0x012, 0x1;
        disable_uc_local_lb, set_disable_uc_local_lb: u32 @ 0x014, 0x1;
        disable_mc_local_lb, set_disable_mc_local_lb: u32 @ 0x015, 0x1;
        node_guid, set_node_guid: u32 @ 0x016, 0x1;
        port_guid, set_port_guid: u32 @ 0x017, 0x1;
        min_inline, set_min_inline: u32 @ 0x018, 0x1;
        mtu, set_mtu: u32 @ 0x019, 0x1;
        change_event, set_change_event: u32 @ 0x01a, 0x1;
        promisc, set_promisc: u32 @ 0x01b, 0x1;
        permanent_address, set_permanent_address: u32 @ 0x01c, 0x1;
        addresses_list, set_addresses_list: u32 @ 0x01d, 0x1;
        roce_en, set_roce_en: u32 @ 0x01e, 0x1;
    }

    /// A MAC address in two big-endian words (bits 47:32, then 31:0).
    pub struct MacAddressLayout: Ifc "mac_address_layout", 0x8 {
        mac_addr_47_32, set_mac_addr_47_32: u32 @ 0x010, 0x10;
        mac_addr_31_0, set_mac_addr_31_0: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_HCA_VPORT_PKEY`.
    pub struct QueryHcaVportPkeyIn: Ifc "query_hca_vport_pkey_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        port_num, set_port_num: u32 @ 0x04c, 0x4;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        pkey_index, set_pkey_index: u32 @ 0x070, 0x10;
    }

    /// Output of `QUERY_HCA_VPORT_PKEY`, followed by the P_Keys (`pkey[]`).
    pub struct QueryHcaVportPkeyOut: Ifc "query_hca_vport_pkey_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        pkey, pkey_mut: tail Pkey @ 0x080, 0x20;
    }

    /// One P_Key table entry.
    pub struct Pkey: Ifc "pkey", 0x4 {
        pkey, set_pkey: u32 @ 0x010, 0x10;
    }

    /// A 16-byte array (one GID of a `QUERY_HCA_VPORT_GID` output).
    pub struct Array128Auto: Ifc "array128_auto", 0x10 {
        array128_auto, array128_auto_mut: bytes @ 0x000, 0x80;
    }

    /// The HCA (InfiniBand-side) vport context: port and vport states, GUIDs, capability masks, LID
    /// and subnet manager data. On an Ethernet (RoCE) port mlx5_ib reads the GUIDs and states.
    pub struct HcaVportContext: Ifc "hca_vport_context", 0x200 {
        field_select, set_field_select: u32 @ 0x000, 0x20;
        sm_virt_aware, set_sm_virt_aware: u32 @ 0x100, 0x1;
        has_smi, set_has_smi: u32 @ 0x101, 0x1;
        has_raw, set_has_raw: u32 @ 0x102, 0x1;
        grh_required, set_grh_required: u32 @ 0x103, 0x1;
        num_port_plane, set_num_port_plane: u32 @ 0x108, 0x8;
        port_physical_state, set_port_physical_state: u32 @ 0x110, 0x4;
        vport_state_policy, set_vport_state_policy: u32 @ 0x114, 0x4;
        port_state, set_port_state: u32 @ 0x118, 0x4;
        vport_state, set_vport_state: u32 @ 0x11c, 0x4;
        system_image_guid, set_system_image_guid: u64 @ 0x140, 0x40;
        port_guid, set_port_guid: u64 @ 0x180, 0x40;
        node_guid, set_node_guid: u64 @ 0x1c0, 0x40;
        cap_mask1, set_cap_mask1: u32 @ 0x200, 0x20;
        cap_mask1_field_select, set_cap_mask1_field_select: u32 @ 0x220, 0x20;
        cap_mask2, set_cap_mask2: u32 @ 0x240, 0x20;
        cap_mask2_field_select, set_cap_mask2_field_select: u32 @ 0x260, 0x20;
        lid, set_lid: u32 @ 0x300, 0x10;
        init_type_reply, set_init_type_reply: u32 @ 0x314, 0x4;
        lmc, set_lmc: u32 @ 0x318, 0x3;
        subnet_timeout, set_subnet_timeout: u32 @ 0x31b, 0x5;
        sm_lid, set_sm_lid: u32 @ 0x320, 0x10;
        sm_sl, set_sm_sl: u32 @ 0x330, 0x4;
        qkey_violation_counter, set_qkey_violation_counter: u32 @ 0x340, 0x10;
        pkey_violation_counter, set_pkey_violation_counter: u32 @ 0x350, 0x10;
    }

    /// Input of `QUERY_HCA_VPORT_CONTEXT`.
    pub struct QueryHcaVportContextIn: Ifc "query_hca_vport_context_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        port_num, set_port_num: u32 @ 0x04c, 0x4;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
    }

    /// Output of `QUERY_HCA_VPORT_CONTEXT`.
    pub struct QueryHcaVportContextOut: Ifc "query_hca_vport_context_out", 0x210 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        hca_vport_context, hca_vport_context_mut: HcaVportContext @ 0x080, 0x1000;
    }

    /// Input of `QUERY_HCA_VPORT_GID` (`gid_index` 0xffff: the whole table).
    pub struct QueryHcaVportGidIn: Ifc "query_hca_vport_gid_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        port_num, set_port_num: u32 @ 0x04c, 0x4;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        gid_index, set_gid_index: u32 @ 0x070, 0x10;
    }

    /// Output of `QUERY_HCA_VPORT_GID`, followed by `gids_num` GIDs (`gid[]`).
    pub struct QueryHcaVportGidOut: Ifc "query_hca_vport_gid_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        gids_num, set_gids_num: u32 @ 0x060, 0x10;
        gid, gid_mut: tail Array128Auto @ 0x080, 0x80;
    }
}

/// `state` / `admin_state` values of [`QueryVportStateOut`] (`VPORT_STATE_*`,
/// `MLX5_VPORT_ADMIN_STATE_*`, device.h).
pub mod vport_state {
    use crate::bits::code_table;

    code_table! { u8, "VPORT_STATE_", vport_state_name;
        DOWN = 0x0, "DOWN";
        UP = 0x1, "UP";
    }
}

/// `allowed_list_type` of the NIC vport context (`MLX5_NVPRT_LIST_TYPE_*`, device.h).
pub mod list_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_NVPRT_LIST_TYPE_", list_type_name;
        UC = 0x0, "UC";
        MC = 0x1, "MC";
        VLAN = 0x2, "VLAN";
    }
}

impl MacAddressLayout {
    /// The MAC address in network byte order.
    pub fn mac(&self) -> [u8; 6] {
        let mut m = [0u8; 6];
        m.copy_from_slice(&self.0[2..8]);
        m
    }

    /// Stores a MAC address given in network byte order.
    pub fn set_mac(&mut self, mac: [u8; 6]) {
        self.0[2..8].copy_from_slice(&mac);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // nic_vport_context: mtu 16 bits at 0x130, permanent_address (mac_address_layout) at
    // 0x7a0 with mac_addr_47_32 at +0x10; roce_en is bit 0x1f.
    #[test]
    fn nic_vport_context_places_mtu_roce_and_mac() {
        let mut o = QueryNicVportContextOut::new();
        let ctx = o.nic_vport_context_mut();
        ctx.set_mtu(1500);
        ctx.set_roce_en(1);
        ctx.permanent_address_mut()
            .set_mac([0x02, 0, 0, 0xaa, 0xbb, 0xcc]);
        let base = 0x10;
        assert_eq!(&o.0[base + 0x26..base + 0x28], &[0x05, 0xdc]);
        assert_eq!(o.0[base + 3] & 1, 1);
        assert_eq!(
            &o.0[base + 0xf4..base + 0xfc],
            &[0, 0, 0x02, 0, 0, 0xaa, 0xbb, 0xcc]
        );
        let mac = o.nic_vport_context().permanent_address();
        assert_eq!(mac.mac_addr_47_32(), 0x0200);
        assert_eq!(mac.mac_addr_31_0(), 0x00aa_bbcc);
    }

    #[test]
    fn modify_nic_vport_field_select_bits() {
        let mut i = ModifyNicVportContextIn::new();
        i.set_opcode(crate::opcode::MODIFY_NIC_VPORT_CONTEXT.into());
        i.field_select_mut().set_roce_en(1);
        i.field_select_mut().set_mtu(1);
        // roce_en is bit 0x1e (value bit 1), mtu bit 0x19 (value bit 6) of the select word
        // at byte 0xc.
        assert_eq!(&i.0[0xc..0x10], &[0, 0, 0, 0x42]);
        i.nic_vport_context_mut().set_roce_en(1);
        assert_eq!(i.0[0x100 + 3], 1);
    }

    // hca_vport_context at bit 0x80 of the output: vport_state 4 bits at 0x11c, port_guid at
    // 0x180, node_guid at 0x1c0; query_hca_vport_gid_out: gids_num at 0x60, gid[] after 0x10
    // bytes.
    #[test]
    fn hca_vport_context_and_gids_follow_the_header() {
        let mut o = QueryHcaVportContextOut::new();
        let c = o.hca_vport_context_mut();
        c.set_vport_state(vport_state::UP.into());
        c.set_port_guid(0x0102_0304_0506_0708);
        c.set_node_guid(0x1112_1314_1516_1718);
        assert_eq!(o.0[0x10 + 0x23], 0x01);
        assert_eq!(&o.0[0x40..0x48], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(o.0[0x48], 0x11);
        let mut msg = [0u8; QueryHcaVportGidOut::SIZE + 2 * Array128Auto::SIZE];
        msg[0xc..0xe].copy_from_slice(&[0, 2]);
        QueryHcaVportGidOut::gid_mut(&mut msg, 1)
            .unwrap()
            .array128_auto_mut()[0] = 0xfe;
        assert_eq!(msg[0x20], 0xfe);
        let (out, _) =
            <QueryHcaVportGidOut as zerocopy::FromBytes>::ref_from_prefix(&msg[..]).unwrap();
        assert_eq!(out.gids_num(), 2);
        assert!(QueryHcaVportGidOut::gid(&msg, 2).is_none());
    }

    #[test]
    fn hca_vport_pkey_entries_follow_the_header() {
        let mut msg = [0u8; QueryHcaVportPkeyOut::SIZE + 2 * Pkey::SIZE];
        QueryHcaVportPkeyOut::pkey_mut(&mut msg, 0)
            .unwrap()
            .set_pkey(0xffff);
        assert_eq!(&msg[0x10..0x14], &[0, 0, 0xff, 0xff]);
        assert_eq!(QueryHcaVportPkeyOut::pkey(&msg, 1).map(Pkey::pkey), Some(0));
        assert!(QueryHcaVportPkeyOut::pkey(&msg, 2).is_none());
    }
}
