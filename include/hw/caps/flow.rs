// SPDX-License-Identifier: GPL-2.0
//! NIC flow table capabilities (`MLX5_CAP_FLOW_TABLE`): per table type properties and the
//! supported match fields.

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// The NIC flow table capabilities (`MLX5_CAP_FLOW_TABLE`).
    pub struct FlowTableNicCap: Ifc "flow_table_nic_cap", 0x1000 {
        nic_rx_multi_path_tirs, set_nic_rx_multi_path_tirs: u32 @ 0x000, 0x1;
        nic_rx_multi_path_tirs_fts, set_nic_rx_multi_path_tirs_fts: u32 @ 0x001, 0x1;
        allow_sniffer_and_nic_rx_shared_tir, set_allow_sniffer_and_nic_rx_shared_tir:
            u32 @ 0x002, 0x1;
        sw_owner_reformat_supported, set_sw_owner_reformat_supported: u32 @ 0x007, 0x1;
        encap_general_header, set_encap_general_header: u32 @ 0x020, 0x1;
        log_max_packet_reformat_context, set_log_max_packet_reformat_context: u32 @ 0x02b, 0x5;
        max_encap_header_size, set_max_encap_header_size: u32 @ 0x036, 0xa;
        flow_table_properties_nic_receive, flow_table_properties_nic_receive_mut:
            FlowTablePropLayout @ 0x200, 0x200;
        flow_table_properties_nic_receive_rdma, flow_table_properties_nic_receive_rdma_mut:
            FlowTablePropLayout @ 0x400, 0x200;
        flow_table_properties_nic_receive_sniffer, flow_table_properties_nic_receive_sniffer_mut:
            FlowTablePropLayout @ 0x600, 0x200;
        flow_table_properties_nic_transmit, flow_table_properties_nic_transmit_mut:
            FlowTablePropLayout @ 0x800, 0x200;
        flow_table_properties_nic_transmit_rdma, flow_table_properties_nic_transmit_rdma_mut:
            FlowTablePropLayout @ 0xa00, 0x200;
        flow_table_properties_nic_transmit_sniffer, flow_table_properties_nic_transmit_sniffer_mut:
            FlowTablePropLayout @ 0xc00, 0x200;
        sw_steering_nic_rx_action_drop_icm_address, set_sw_steering_nic_rx_action_drop_icm_address:
            u64 @ 0x2000, 0x40;
        sw_steering_nic_tx_action_drop_icm_address, set_sw_steering_nic_tx_action_drop_icm_address:
            u64 @ 0x2040, 0x40;
        sw_steering_nic_tx_action_allow_icm_address, set_sw_steering_nic_tx_action_allow_icm_address:
            u64 @ 0x2080, 0x40;
    }

    /// Properties of one flow table type (e.g. NIC receive).
    pub struct FlowTablePropLayout: Ifc "flow_table_prop_layout", 0x40 {
        ft_support, set_ft_support: u32 @ 0x000, 0x1;
        flow_counter, set_flow_counter: u32 @ 0x002, 0x1;
        flow_modify_en, set_flow_modify_en: u32 @ 0x003, 0x1;
        modify_root, set_modify_root: u32 @ 0x004, 0x1;
        identified_miss_table_mode, set_identified_miss_table_mode: u32 @ 0x005, 0x1;
        flow_table_modify, set_flow_table_modify: u32 @ 0x006, 0x1;
        reformat, set_reformat: u32 @ 0x007, 0x1;
        decap, set_decap: u32 @ 0x008, 0x1;
        reset_root_to_default, set_reset_root_to_default: u32 @ 0x009, 0x1;
        pop_vlan, set_pop_vlan: u32 @ 0x00a, 0x1;
        push_vlan, set_push_vlan: u32 @ 0x00b, 0x1;
        pop_vlan_2, set_pop_vlan_2: u32 @ 0x00d, 0x1;
        push_vlan_2, set_push_vlan_2: u32 @ 0x00e, 0x1;
        reformat_and_vlan_action, set_reformat_and_vlan_action: u32 @ 0x00f, 0x1;
        sw_owner, set_sw_owner: u32 @ 0x011, 0x1;
        reformat_l3_tunnel_to_l2, set_reformat_l3_tunnel_to_l2: u32 @ 0x012, 0x1;
        reformat_l2_to_l3_tunnel, set_reformat_l2_to_l3_tunnel: u32 @ 0x013, 0x1;
        reformat_and_modify_action, set_reformat_and_modify_action: u32 @ 0x014, 0x1;
        ignore_flow_level, set_ignore_flow_level: u32 @ 0x015, 0x1;
        table_miss_action_domain, set_table_miss_action_domain: u32 @ 0x017, 0x1;
        termination_table, set_termination_table: u32 @ 0x018, 0x1;
        reformat_and_fwd_to_table, set_reformat_and_fwd_to_table: u32 @ 0x019, 0x1;
        forward_vhca_rx, set_forward_vhca_rx: u32 @ 0x01a, 0x1;
        ipsec_encrypt, set_ipsec_encrypt: u32 @ 0x01c, 0x1;
        ipsec_decrypt, set_ipsec_decrypt: u32 @ 0x01d, 0x1;
        sw_owner_v2, set_sw_owner_v2: u32 @ 0x01e, 0x1;
        termination_table_raw_traffic, set_termination_table_raw_traffic: u32 @ 0x020, 0x1;
        log_max_ft_size, set_log_max_ft_size: u32 @ 0x022, 0x6;
        log_max_modify_header_context, set_log_max_modify_header_context: u32 @ 0x028, 0x8;
        max_modify_header_actions, set_max_modify_header_actions: u32 @ 0x030, 0x8;
        max_ft_level, set_max_ft_level: u32 @ 0x038, 0x8;
        reformat_add_esp_trasport, set_reformat_add_esp_trasport: u32 @ 0x040, 0x1;
        reformat_l2_to_l3_esp_tunnel, set_reformat_l2_to_l3_esp_tunnel: u32 @ 0x041, 0x1;
        reformat_add_esp_transport_over_udp, set_reformat_add_esp_transport_over_udp:
            u32 @ 0x042, 0x1;
        reformat_del_esp_trasport, set_reformat_del_esp_trasport: u32 @ 0x043, 0x1;
        reformat_l3_esp_tunnel_to_l2, set_reformat_l3_esp_tunnel_to_l2: u32 @ 0x044, 0x1;
        reformat_del_esp_transport_over_udp, set_reformat_del_esp_transport_over_udp:
            u32 @ 0x045, 0x1;
        execute_aso, set_execute_aso: u32 @ 0x046, 0x1;
        reformat_l2_to_l3_psp_tunnel, set_reformat_l2_to_l3_psp_tunnel: u32 @ 0x060, 0x1;
        reformat_l3_psp_tunnel_to_l2, set_reformat_l3_psp_tunnel_to_l2: u32 @ 0x061, 0x1;
        reformat_insert, set_reformat_insert: u32 @ 0x062, 0x1;
        reformat_remove, set_reformat_remove: u32 @ 0x063, 0x1;
        macsec_encrypt, set_macsec_encrypt: u32 @ 0x064, 0x1;
        macsec_decrypt, set_macsec_decrypt: u32 @ 0x065, 0x1;
        psp_encrypt, set_psp_encrypt: u32 @ 0x066, 0x1;
        psp_decrypt, set_psp_decrypt: u32 @ 0x067, 0x1;
        reformat_add_macsec, set_reformat_add_macsec: u32 @ 0x068, 0x1;
        reformat_remove_macsec, set_reformat_remove_macsec: u32 @ 0x069, 0x1;
        reparse, set_reparse: u32 @ 0x06a, 0x1;
        cross_vhca_object, set_cross_vhca_object: u32 @ 0x06c, 0x1;
        reformat_l2_to_l3_audp_tunnel, set_reformat_l2_to_l3_audp_tunnel: u32 @ 0x06d, 0x1;
        reformat_l3_audp_tunnel_to_l2, set_reformat_l3_audp_tunnel_to_l2: u32 @ 0x06e, 0x1;
        ignore_flow_level_rtc_valid, set_ignore_flow_level_rtc_valid: u32 @ 0x06f, 0x1;
        log_max_ft_num, set_log_max_ft_num: u32 @ 0x078, 0x8;
        log_max_flow_counter, set_log_max_flow_counter: u32 @ 0x090, 0x8;
        log_max_destination, set_log_max_destination: u32 @ 0x098, 0x8;
        log_max_flow, set_log_max_flow: u32 @ 0x0b8, 0x8;
        ft_field_support, ft_field_support_mut: FlowTableFieldsSupported @ 0x100, 0x80;
        ft_field_bitmask_support, ft_field_bitmask_support_mut:
            FlowTableFieldsSupported @ 0x180, 0x80;
    }

    /// Bitmap of the match fields a flow table type supports.
    pub struct FlowTableFieldsSupported: Ifc "flow_table_fields_supported", 0x10 {
        outer_dmac, set_outer_dmac: u32 @ 0x000, 0x1;
        outer_smac, set_outer_smac: u32 @ 0x001, 0x1;
        outer_ether_type, set_outer_ether_type: u32 @ 0x002, 0x1;
        outer_ip_version, set_outer_ip_version: u32 @ 0x003, 0x1;
        outer_first_prio, set_outer_first_prio: u32 @ 0x004, 0x1;
        outer_first_cfi, set_outer_first_cfi: u32 @ 0x005, 0x1;
        outer_first_vid, set_outer_first_vid: u32 @ 0x006, 0x1;
        outer_ipv4_ttl, set_outer_ipv4_ttl: u32 @ 0x007, 0x1;
        outer_second_prio, set_outer_second_prio: u32 @ 0x008, 0x1;
        outer_second_cfi, set_outer_second_cfi: u32 @ 0x009, 0x1;
        outer_second_vid, set_outer_second_vid: u32 @ 0x00a, 0x1;
        outer_sip, set_outer_sip: u32 @ 0x00c, 0x1;
        outer_dip, set_outer_dip: u32 @ 0x00d, 0x1;
        outer_frag, set_outer_frag: u32 @ 0x00e, 0x1;
        outer_ip_protocol, set_outer_ip_protocol: u32 @ 0x00f, 0x1;
        outer_ip_ecn, set_outer_ip_ecn: u32 @ 0x010, 0x1;
        outer_ip_dscp, set_outer_ip_dscp: u32 @ 0x011, 0x1;
        outer_udp_sport, set_outer_udp_sport: u32 @ 0x012, 0x1;
        outer_udp_dport, set_outer_udp_dport: u32 @ 0x013, 0x1;
        outer_tcp_sport, set_outer_tcp_sport: u32 @ 0x014, 0x1;
        outer_tcp_dport, set_outer_tcp_dport: u32 @ 0x015, 0x1;
        outer_tcp_flags, set_outer_tcp_flags: u32 @ 0x016, 0x1;
        outer_gre_protocol, set_outer_gre_protocol: u32 @ 0x017, 0x1;
        outer_gre_key, set_outer_gre_key: u32 @ 0x018, 0x1;
        outer_vxlan_vni, set_outer_vxlan_vni: u32 @ 0x019, 0x1;
        outer_geneve_vni, set_outer_geneve_vni: u32 @ 0x01a, 0x1;
        outer_geneve_oam, set_outer_geneve_oam: u32 @ 0x01b, 0x1;
        outer_geneve_protocol_type, set_outer_geneve_protocol_type: u32 @ 0x01c, 0x1;
        outer_geneve_opt_len, set_outer_geneve_opt_len: u32 @ 0x01d, 0x1;
        source_vhca_port, set_source_vhca_port: u32 @ 0x01e, 0x1;
        source_eswitch_port, set_source_eswitch_port: u32 @ 0x01f, 0x1;
        inner_dmac, set_inner_dmac: u32 @ 0x020, 0x1;
        inner_smac, set_inner_smac: u32 @ 0x021, 0x1;
        inner_ether_type, set_inner_ether_type: u32 @ 0x022, 0x1;
        inner_ip_version, set_inner_ip_version: u32 @ 0x023, 0x1;
        inner_first_prio, set_inner_first_prio: u32 @ 0x024, 0x1;
        inner_first_cfi, set_inner_first_cfi: u32 @ 0x025, 0x1;
        inner_first_vid, set_inner_first_vid: u32 @ 0x026, 0x1;
        inner_second_prio, set_inner_second_prio: u32 @ 0x028, 0x1;
        inner_second_cfi, set_inner_second_cfi: u32 @ 0x029, 0x1;
        inner_second_vid, set_inner_second_vid: u32 @ 0x02a, 0x1;
        inner_sip, set_inner_sip: u32 @ 0x02c, 0x1;
        inner_dip, set_inner_dip: u32 @ 0x02d, 0x1;
        inner_frag, set_inner_frag: u32 @ 0x02e, 0x1;
        inner_ip_protocol, set_inner_ip_protocol: u32 @ 0x02f, 0x1;
        inner_ip_ecn, set_inner_ip_ecn: u32 @ 0x030, 0x1;
        inner_ip_dscp, set_inner_ip_dscp: u32 @ 0x031, 0x1;
        inner_udp_sport, set_inner_udp_sport: u32 @ 0x032, 0x1;
        inner_udp_dport, set_inner_udp_dport: u32 @ 0x033, 0x1;
        inner_tcp_sport, set_inner_tcp_sport: u32 @ 0x034, 0x1;
        inner_tcp_dport, set_inner_tcp_dport: u32 @ 0x035, 0x1;
        inner_tcp_flags, set_inner_tcp_flags: u32 @ 0x036, 0x1;
        geneve_tlv_option_0_data, set_geneve_tlv_option_0_data: u32 @ 0x040, 0x1;
        geneve_tlv_option_0_exist, set_geneve_tlv_option_0_exist: u32 @ 0x041, 0x1;
        outer_first_mpls_over_udp, set_outer_first_mpls_over_udp: u32 @ 0x045, 0x4;
        outer_first_mpls_over_gre, set_outer_first_mpls_over_gre: u32 @ 0x049, 0x4;
        inner_first_mpls, set_inner_first_mpls: u32 @ 0x04d, 0x4;
        outer_first_mpls, set_outer_first_mpls: u32 @ 0x051, 0x4;
        outer_esp_spi, set_outer_esp_spi: u32 @ 0x057, 0x1;
        bth_dst_qp, set_bth_dst_qp: u32 @ 0x05a, 0x1;
        metadata_reg_c_7, set_metadata_reg_c_7: u32 @ 0x078, 0x1;
        metadata_reg_c_6, set_metadata_reg_c_6: u32 @ 0x079, 0x1;
        metadata_reg_c_5, set_metadata_reg_c_5: u32 @ 0x07a, 0x1;
        metadata_reg_c_4, set_metadata_reg_c_4: u32 @ 0x07b, 0x1;
        metadata_reg_c_3, set_metadata_reg_c_3: u32 @ 0x07c, 0x1;
        metadata_reg_c_2, set_metadata_reg_c_2: u32 @ 0x07d, 0x1;
        metadata_reg_c_1, set_metadata_reg_c_1: u32 @ 0x07e, 0x1;
        metadata_reg_c_0, set_metadata_reg_c_0: u32 @ 0x07f, 0x1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // flow_table_properties_nic_receive starts at bit 0x200 (byte 0x40); in it max_ft_level is
    // 8 bits at 0x38 and ft_field_support starts at bit 0x100 (outer_ip_version at +3).
    #[test]
    fn nic_receive_properties_are_nested_at_byte_0x40() {
        let mut c = FlowTableNicCap::new();
        let rx = c.flow_table_properties_nic_receive_mut();
        rx.set_ft_support(1);
        rx.set_modify_root(1);
        rx.set_max_ft_level(64);
        rx.set_log_max_ft_size(16);
        rx.ft_field_support_mut().set_outer_ip_version(1);
        assert_eq!(c.0[0x40], 0x88);
        assert_eq!(c.0[0x40 + 7], 64);
        assert_eq!(c.0[0x40 + 4], 16);
        assert_eq!(c.0[0x40 + 0x20], 0x10);
        assert_eq!(c.flow_table_properties_nic_transmit().ft_support(), 0);
    }
}
