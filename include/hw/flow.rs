// SPDX-License-Identifier: GPL-2.0
//! Flow steering: flow tables and the root table, flow groups with their match criteria, flow
//! table entries (match value, action, destinations, counters) and flow counters.

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

    /// Match criteria or value: outer and inner headers and the misc parameters.
    pub struct FteMatchParam: Ifc "fte_match_param", 0x200 {
        outer_headers, outer_headers_mut: FteMatchSetLyr24 @ 0x000, 0x200;
        misc_parameters, misc_parameters_mut: FteMatchSetMisc @ 0x200, 0x200;
        inner_headers, inner_headers_mut: FteMatchSetLyr24 @ 0x400, 0x200;
        misc_parameters_2, misc_parameters_2_mut: bytes @ 0x600, 0x200;
        misc_parameters_3, misc_parameters_3_mut: bytes @ 0x800, 0x200;
        misc_parameters_4, misc_parameters_4_mut: bytes @ 0xa00, 0x200;
        misc_parameters_5, misc_parameters_5_mut: bytes @ 0xc00, 0x200;
    }

    /// Layer 2 to 4 header fields of a match.
    pub struct FteMatchSetLyr24: Ifc "fte_match_set_lyr_2_4", 0x40 {
        smac_47_16, set_smac_47_16: u32 @ 0x000, 0x20;
        smac_15_0, set_smac_15_0: u32 @ 0x020, 0x10;
        ethertype, set_ethertype: u32 @ 0x030, 0x10;
        dmac_47_16, set_dmac_47_16: u32 @ 0x040, 0x20;
        dmac_15_0, set_dmac_15_0: u32 @ 0x060, 0x10;
        first_prio, set_first_prio: u32 @ 0x070, 0x3;
        first_cfi, set_first_cfi: u32 @ 0x073, 0x1;
        first_vid, set_first_vid: u32 @ 0x074, 0xc;
        ip_protocol, set_ip_protocol: u32 @ 0x080, 0x8;
        ip_dscp, set_ip_dscp: u32 @ 0x088, 0x6;
        ip_ecn, set_ip_ecn: u32 @ 0x08e, 0x2;
        cvlan_tag, set_cvlan_tag: u32 @ 0x090, 0x1;
        svlan_tag, set_svlan_tag: u32 @ 0x091, 0x1;
        frag, set_frag: u32 @ 0x092, 0x1;
        ip_version, set_ip_version: u32 @ 0x093, 0x4;
        tcp_flags, set_tcp_flags: u32 @ 0x097, 0x9;
        tcp_sport, set_tcp_sport: u32 @ 0x0a0, 0x10;
        tcp_dport, set_tcp_dport: u32 @ 0x0b0, 0x10;
        l4_type, set_l4_type: u32 @ 0x0c0, 0x2;
        l4_type_ext, set_l4_type_ext: u32 @ 0x0c2, 0x4;
        ipv4_ihl, set_ipv4_ihl: u32 @ 0x0d0, 0x4;
        ttl_hoplimit, set_ttl_hoplimit: u32 @ 0x0d8, 0x8;
        udp_sport, set_udp_sport: u32 @ 0x0e0, 0x10;
        udp_dport, set_udp_dport: u32 @ 0x0f0, 0x10;
        src_ipv4_src_ipv6, src_ipv4_src_ipv6_mut: bytes @ 0x100, 0x80;
        dst_ipv4_dst_ipv6, dst_ipv4_dst_ipv6_mut: bytes @ 0x180, 0x80;
    }

    /// Misc match fields: second VLAN, GRE, VXLAN VNI, source port.
    pub struct FteMatchSetMisc: Ifc "fte_match_set_misc", 0x40 {
        gre_c_present, set_gre_c_present: u32 @ 0x000, 0x1;
        gre_k_present, set_gre_k_present: u32 @ 0x002, 0x1;
        gre_s_present, set_gre_s_present: u32 @ 0x003, 0x1;
        source_vhca_port, set_source_vhca_port: u32 @ 0x004, 0x4;
        source_sqn, set_source_sqn: u32 @ 0x008, 0x18;
        source_eswitch_owner_vhca_id, set_source_eswitch_owner_vhca_id: u32 @ 0x020, 0x10;
        source_port, set_source_port: u32 @ 0x030, 0x10;
        outer_second_prio, set_outer_second_prio: u32 @ 0x040, 0x3;
        outer_second_cfi, set_outer_second_cfi: u32 @ 0x043, 0x1;
        outer_second_vid, set_outer_second_vid: u32 @ 0x044, 0xc;
        inner_second_prio, set_inner_second_prio: u32 @ 0x050, 0x3;
        inner_second_cfi, set_inner_second_cfi: u32 @ 0x053, 0x1;
        inner_second_vid, set_inner_second_vid: u32 @ 0x054, 0xc;
        outer_second_cvlan_tag, set_outer_second_cvlan_tag: u32 @ 0x060, 0x1;
        inner_second_cvlan_tag, set_inner_second_cvlan_tag: u32 @ 0x061, 0x1;
        outer_second_svlan_tag, set_outer_second_svlan_tag: u32 @ 0x062, 0x1;
        inner_second_svlan_tag, set_inner_second_svlan_tag: u32 @ 0x063, 0x1;
        gre_protocol, set_gre_protocol: u32 @ 0x070, 0x10;
        gre_key, set_gre_key: u32 @ 0x080, 0x20;
        vxlan_vni, set_vxlan_vni: u32 @ 0x0a0, 0x18;
        bth_opcode, set_bth_opcode: u32 @ 0x0b8, 0x8;
        geneve_vni, set_geneve_vni: u32 @ 0x0c0, 0x18;
        geneve_tlv_option_0_exist, set_geneve_tlv_option_0_exist: u32 @ 0x0de, 0x1;
        geneve_oam, set_geneve_oam: u32 @ 0x0df, 0x1;
        outer_ipv6_flow_label, set_outer_ipv6_flow_label: u32 @ 0x0ec, 0x14;
        inner_ipv6_flow_label, set_inner_ipv6_flow_label: u32 @ 0x10c, 0x14;
        geneve_opt_len, set_geneve_opt_len: u32 @ 0x12a, 0x6;
        geneve_protocol_type, set_geneve_protocol_type: u32 @ 0x130, 0x10;
        bth_dst_qp, set_bth_dst_qp: u32 @ 0x148, 0x18;
        inner_esp_spi, set_inner_esp_spi: u32 @ 0x160, 0x20;
        outer_esp_spi, set_outer_esp_spi: u32 @ 0x180, 0x20;
    }

    /// Flow table entry context: group, action, tag, match value; the destination list follows it.
    pub struct FlowContext: Ifc "flow_context", 0x300 {
        push_vlan, push_vlan_mut: VlanLayout @ 0x000, 0x20;
        group_id, set_group_id: u32 @ 0x020, 0x20;
        flow_tag, set_flow_tag: u32 @ 0x048, 0x18;
        action, set_action: u32 @ 0x070, 0x10;
        extended_destination, set_extended_destination: u32 @ 0x080, 0x1;
        uplink_hairpin_en, set_uplink_hairpin_en: u32 @ 0x081, 0x1;
        flow_source, set_flow_source: u32 @ 0x082, 0x2;
        encrypt_decrypt_type, set_encrypt_decrypt_type: u32 @ 0x084, 0x4;
        destination_list_size, set_destination_list_size: u32 @ 0x088, 0x18;
        flow_counter_list_size, set_flow_counter_list_size: u32 @ 0x0a8, 0x18;
        packet_reformat_id, set_packet_reformat_id: u32 @ 0x0c0, 0x20;
        modify_header_id, set_modify_header_id: u32 @ 0x0e0, 0x20;
        push_vlan_2, push_vlan_2_mut: VlanLayout @ 0x100, 0x20;
        encrypt_decrypt_obj_id, set_encrypt_decrypt_obj_id: u32 @ 0x120, 0x20;
        match_value, match_value_mut: FteMatchParam @ 0x200, 0x1000;
    }

    /// One forward destination of a flow table entry.
    pub struct DestFormatStruct: Ifc "dest_format_struct", 0x8 {
        destination_type, set_destination_type: u32 @ 0x000, 0x8;
        destination_id, set_destination_id: u32 @ 0x008, 0x18;
        destination_eswitch_owner_vhca_id_valid, set_destination_eswitch_owner_vhca_id_valid: u32 @ 0x020, 0x1;
        packet_reformat, set_packet_reformat: u32 @ 0x021, 0x1;
        destination_table_type, set_destination_table_type: u32 @ 0x028, 0x8;
        destination_eswitch_owner_vhca_id, set_destination_eswitch_owner_vhca_id: u32 @ 0x030, 0x10;
    }

    /// One counter of a flow table entry, in the destination list after the forward destinations.
    pub struct FlowCounterList: Ifc "flow_counter_list", 0x8 {
        flow_counter_id, set_flow_counter_id: u32 @ 0x000, 0x20;
    }

    /// A VLAN header to push.
    pub struct VlanLayout: Ifc "vlan", 0x4 {
        ethtype, set_ethtype: u32 @ 0x000, 0x10;
        prio, set_prio: u32 @ 0x010, 0x3;
        cfi, set_cfi: u32 @ 0x013, 0x1;
        vid, set_vid: u32 @ 0x014, 0xc;
    }

    /// A packet and octet count.
    pub struct TrafficCounter: Ifc "traffic_counter", 0x10 {
        packets, set_packets: u64 @ 0x000, 0x40;
        octets, set_octets: u64 @ 0x040, 0x40;
    }

    /// Input of `CREATE_FLOW_GROUP`.
    pub struct CreateFlowGroupIn: Ifc "create_flow_group_in", 0x400 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        other_eswitch, set_other_eswitch: u32 @ 0x041, 0x1;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        table_type, set_table_type: u32 @ 0x080, 0x8;
        group_type, set_group_type: u32 @ 0x08c, 0x4;
        eswitch_owner_vhca_id, set_eswitch_owner_vhca_id: u32 @ 0x090, 0x10;
        table_id, set_table_id: u32 @ 0x0a8, 0x18;
        source_eswitch_owner_vhca_id_valid, set_source_eswitch_owner_vhca_id_valid: u32 @ 0x0c0, 0x1;
        start_flow_index, set_start_flow_index: u32 @ 0x0e0, 0x20;
        end_flow_index, set_end_flow_index: u32 @ 0x120, 0x20;
        match_definer_id, set_match_definer_id: u32 @ 0x150, 0x10;
        match_criteria_enable, set_match_criteria_enable: u32 @ 0x1f8, 0x8;
        match_criteria, match_criteria_mut: FteMatchParam @ 0x200, 0x1000;
    }

    /// Output of `CREATE_FLOW_GROUP`.
    pub struct CreateFlowGroupOut: Ifc "create_flow_group_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        group_id, set_group_id: u32 @ 0x048, 0x18;
    }

    /// Input of `DESTROY_FLOW_GROUP`.
    pub struct DestroyFlowGroupIn: Ifc "destroy_flow_group_in", 0x40 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        other_eswitch, set_other_eswitch: u32 @ 0x041, 0x1;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        table_type, set_table_type: u32 @ 0x080, 0x8;
        eswitch_owner_vhca_id, set_eswitch_owner_vhca_id: u32 @ 0x090, 0x10;
        table_id, set_table_id: u32 @ 0x0a8, 0x18;
        group_id, set_group_id: u32 @ 0x0c0, 0x20;
    }

    /// Output of `DESTROY_FLOW_GROUP`.
    pub struct DestroyFlowGroupOut: Ifc "destroy_flow_group_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `SET_FLOW_TABLE_ENTRY`; the destination list follows it.
    pub struct SetFteIn: Ifc "set_fte_in", 0x340 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        other_eswitch, set_other_eswitch: u32 @ 0x041, 0x1;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        table_type, set_table_type: u32 @ 0x080, 0x8;
        eswitch_owner_vhca_id, set_eswitch_owner_vhca_id: u32 @ 0x090, 0x10;
        table_id, set_table_id: u32 @ 0x0a8, 0x18;
        ignore_flow_level, set_ignore_flow_level: u32 @ 0x0c0, 0x1;
        modify_enable_mask, set_modify_enable_mask: u32 @ 0x0d8, 0x8;
        flow_index, set_flow_index: u32 @ 0x100, 0x20;
        flow_context, flow_context_mut: FlowContext @ 0x200, 0x1800;
    }

    /// Output of `SET_FLOW_TABLE_ENTRY`.
    pub struct SetFteOut: Ifc "set_fte_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `DELETE_FLOW_TABLE_ENTRY`.
    pub struct DeleteFteIn: Ifc "delete_fte_in", 0x40 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        other_eswitch, set_other_eswitch: u32 @ 0x041, 0x1;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        table_type, set_table_type: u32 @ 0x080, 0x8;
        eswitch_owner_vhca_id, set_eswitch_owner_vhca_id: u32 @ 0x090, 0x10;
        table_id, set_table_id: u32 @ 0x0a8, 0x18;
        flow_index, set_flow_index: u32 @ 0x100, 0x20;
    }

    /// Output of `DELETE_FLOW_TABLE_ENTRY`.
    pub struct DeleteFteOut: Ifc "delete_fte_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_FLOW_TABLE`.
    pub struct QueryFlowTableIn: Ifc "query_flow_table_in", 0x40 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        table_type, set_table_type: u32 @ 0x080, 0x8;
        table_id, set_table_id: u32 @ 0x0a8, 0x18;
    }

    /// Output of `QUERY_FLOW_TABLE`.
    pub struct QueryFlowTableOut: Ifc "query_flow_table_out", 0x40 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        flow_table_context, flow_table_context_mut: FlowTableContext @ 0x0c0, 0x140;
    }

    /// Input of `MODIFY_FLOW_TABLE`.
    pub struct ModifyFlowTableIn: Ifc "modify_flow_table_in", 0x40 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        other_eswitch, set_other_eswitch: u32 @ 0x041, 0x1;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        modify_field_select, set_modify_field_select: u32 @ 0x070, 0x10;
        table_type, set_table_type: u32 @ 0x080, 0x8;
        eswitch_owner_vhca_id, set_eswitch_owner_vhca_id: u32 @ 0x090, 0x10;
        table_id, set_table_id: u32 @ 0x0a8, 0x18;
        flow_table_context, flow_table_context_mut: FlowTableContext @ 0x0c0, 0x140;
    }

    /// Output of `MODIFY_FLOW_TABLE`.
    pub struct ModifyFlowTableOut: Ifc "modify_flow_table_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `ALLOC_FLOW_COUNTER`.
    pub struct AllocFlowCounterIn: Ifc "alloc_flow_counter_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        flow_counter_bulk_log_size, set_flow_counter_bulk_log_size: u32 @ 0x073, 0x5;
        flow_counter_bulk, set_flow_counter_bulk: u32 @ 0x078, 0x8;
    }

    /// Output of `ALLOC_FLOW_COUNTER`.
    pub struct AllocFlowCounterOut: Ifc "alloc_flow_counter_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        flow_counter_id, set_flow_counter_id: u32 @ 0x040, 0x20;
    }

    /// Input of `DEALLOC_FLOW_COUNTER`.
    pub struct DeallocFlowCounterIn: Ifc "dealloc_flow_counter_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        flow_counter_id, set_flow_counter_id: u32 @ 0x040, 0x20;
    }

    /// Output of `DEALLOC_FLOW_COUNTER`.
    pub struct DeallocFlowCounterOut: Ifc "dealloc_flow_counter_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_FLOW_COUNTER`.
    pub struct QueryFlowCounterIn: Ifc "query_flow_counter_in", 0x20 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        clear, set_clear: u32 @ 0x0c0, 0x1;
        num_of_counters, set_num_of_counters: u32 @ 0x0d0, 0x10;
        flow_counter_id, set_flow_counter_id: u32 @ 0x0e0, 0x20;
    }

    /// Output of `QUERY_FLOW_COUNTER`, followed by one [`TrafficCounter`] per counter (`flow_statistics[]`).
    pub struct QueryFlowCounterOut: Ifc "query_flow_counter_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        flow_statistics, flow_statistics_mut: tail TrafficCounter @ 0x080, 0x80;
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

/// `flow_context.action` bits (`MLX5_FLOW_CONTEXT_ACTION_*`, mlx5_ifc.h).
pub mod action {
    use crate::bits::code_table;

    code_table! { u32, "MLX5_FLOW_CONTEXT_ACTION_", action_name;
        ALLOW = 0x1, "ALLOW";
        DROP = 0x2, "DROP";
        FWD_DEST = 0x4, "FWD_DEST";
        COUNT = 0x8, "COUNT";
        PACKET_REFORMAT = 0x10, "PACKET_REFORMAT";
        DECAP = 0x20, "DECAP";
        MOD_HDR = 0x40, "MOD_HDR";
        VLAN_POP = 0x80, "VLAN_POP";
        VLAN_PUSH = 0x100, "VLAN_PUSH";
        VLAN_POP_2 = 0x400, "VLAN_POP_2";
        VLAN_PUSH_2 = 0x800, "VLAN_PUSH_2";
    }
}

/// `dest_format_struct.destination_type` (`enum mlx5_ifc_flow_destination_type`).
pub mod dest_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_IFC_FLOW_DESTINATION_TYPE_", dest_type_name;
        VPORT = 0x0, "VPORT";
        FLOW_TABLE = 0x1, "FLOW_TABLE";
        TIR = 0x2, "TIR";
        FLOW_SAMPLER = 0x6, "FLOW_SAMPLER";
        UPLINK = 0x8, "UPLINK";
        TABLE_TYPE = 0xa, "TABLE_TYPE";
    }
}

/// `match_criteria_enable` bits of a flow group (device.h `MLX5_MATCH_*`).
pub mod match_criteria {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_MATCH_", match_criteria_name;
        OUTER_HEADERS = 0x1, "OUTER_HEADERS";
        MISC_PARAMETERS = 0x2, "MISC_PARAMETERS";
        INNER_HEADERS = 0x4, "INNER_HEADERS";
        MISC_PARAMETERS_2 = 0x8, "MISC_PARAMETERS_2";
        MISC_PARAMETERS_3 = 0x10, "MISC_PARAMETERS_3";
        MISC_PARAMETERS_4 = 0x20, "MISC_PARAMETERS_4";
        MISC_PARAMETERS_5 = 0x40, "MISC_PARAMETERS_5";
    }
}

/// `set_fte_in.modify_enable_mask` bit numbers (`MLX5_SET_FTE_MODIFY_ENABLE_MASK_*`).
pub mod fte_modify {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_SET_FTE_MODIFY_ENABLE_MASK_", fte_modify_name;
        ACTION = 0x0, "ACTION";
        FLOW_TAG = 0x1, "FLOW_TAG";
        DESTINATION_LIST = 0x2, "DESTINATION_LIST";
        FLOW_COUNTERS = 0x3, "FLOW_COUNTERS";
    }
}

/// `op_mod` of `SET_FLOW_TABLE_ENTRY` that modifies an existing entry (0 creates one).
pub const SET_FTE_OP_MOD_MODIFY: u16 = 1;
/// `modify_field_select` bit of `MODIFY_FLOW_TABLE` for the miss table
/// (`MLX5_MODIFY_FLOW_TABLE_MISS_TABLE_ID`).
pub const MODIFY_FLOW_TABLE_MISS_TABLE_ID: u32 = 1 << 0;

/// Stride of the destination list after a [`SetFteIn`] when `extended_destination` is 0: one
/// [`DestFormatStruct`] (or [`FlowCounterList`]) each.
pub const DEST_STRIDE: usize = DestFormatStruct::SIZE;

/// Destination `i` of the list that follows a SET_FLOW_TABLE_ENTRY input (non-extended
/// format: forward destinations first, then the flow counters).
pub fn fte_destination(msg: &[u8], i: usize) -> Option<&DestFormatStruct> {
    let r = crate::bits::tail_range(msg.len(), SetFteIn::SIZE, DEST_STRIDE, i)?;
    Some(crate::bits::nested(&msg[r]))
}

/// Mutable twin of [`fte_destination`].
pub fn fte_destination_mut(msg: &mut [u8], i: usize) -> Option<&mut DestFormatStruct> {
    let r = crate::bits::tail_range(msg.len(), SetFteIn::SIZE, DEST_STRIDE, i)?;
    Some(crate::bits::nested_mut(&mut msg[r]))
}

/// Entry `i` of the same list viewed as a flow counter.
pub fn fte_counter(msg: &[u8], i: usize) -> Option<&FlowCounterList> {
    let r = crate::bits::tail_range(msg.len(), SetFteIn::SIZE, DEST_STRIDE, i)?;
    Some(crate::bits::nested(&msg[r]))
}

/// Mutable twin of [`fte_counter`].
pub fn fte_counter_mut(msg: &mut [u8], i: usize) -> Option<&mut FlowCounterList> {
    let r = crate::bits::tail_range(msg.len(), SetFteIn::SIZE, DEST_STRIDE, i)?;
    Some(crate::bits::nested_mut(&mut msg[r]))
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
    // set_fte_in: flow_index at 0x100 (byte 0x20), flow_context at byte 0x40 with action at
    // +0xc, destination_list_size at +0x10, match_value at +0x40; destinations after 0x340.
    #[test]
    fn set_fte_places_context_match_and_destinations() {
        let mut msg = [0u8; SetFteIn::SIZE + 2 * DEST_STRIDE];
        {
            let (i, _) = <SetFteIn as zerocopy::FromBytes>::mut_from_prefix(&mut msg[..]).unwrap();
            i.set_flow_index(7);
            let c = i.flow_context_mut();
            c.set_action(action::FWD_DEST | action::COUNT);
            c.set_destination_list_size(1);
            c.set_flow_counter_list_size(1);
            c.match_value_mut()
                .outer_headers_mut()
                .set_ethertype(0x0800);
            c.match_value_mut()
                .misc_parameters_mut()
                .set_vxlan_vni(0x123456);
        }
        let d = fte_destination_mut(&mut msg, 0).unwrap();
        d.set_destination_type(dest_type::TIR.into());
        d.set_destination_id(0x42);
        fte_counter_mut(&mut msg, 1).unwrap().set_flow_counter_id(9);
        assert_eq!(&msg[0x20..0x24], &[0, 0, 0, 7]);
        assert_eq!(&msg[0x4e..0x50], &[0, 0x0c]);
        assert_eq!(&msg[0x50..0x54], &[0, 0, 0, 1]);
        assert_eq!(&msg[0x80 + 6..0x80 + 8], &[0x08, 0x00]);
        assert_eq!(
            &msg[0x80 + 0x40 + 0x14..0x80 + 0x40 + 0x17],
            &[0x12, 0x34, 0x56]
        );
        assert_eq!(&msg[0x340..0x344], &[0x02, 0, 0, 0x42]);
        assert_eq!(&msg[0x348..0x34c], &[0, 0, 0, 9]);
        assert!(fte_destination(&msg, 2).is_none());
    }
}
