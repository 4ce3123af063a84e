// SPDX-License-Identifier: GPL-2.0
//! The general device capabilities, `cmd_hca_cap` (`MLX5_CAP_GENERAL`): every named field of
//! `struct mlx5_ifc_cmd_hca_cap_bits`.

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// The general device capabilities (`MLX5_CAP_GENERAL`), 256 bytes.
    pub struct CmdHcaCap: Ifc "cmd_hca_cap", 0x100 {
        /// No page-request EQ when set.
        page_request_disable, set_page_request_disable: u32 @ 0x006, 0x1;
        abs_native_port_num, set_abs_native_port_num: u32 @ 0x007, 0x1;
        shared_object_to_user_object_allowed, set_shared_object_to_user_object_allowed:
            u32 @ 0x010, 0x1;
        vhca_resource_manager, set_vhca_resource_manager: u32 @ 0x01f, 0x1;
        hca_cap_2, set_hca_cap_2: u32 @ 0x020, 0x1;
        create_lag_when_not_master_up, set_create_lag_when_not_master_up: u32 @ 0x021, 0x1;
        dtor, set_dtor: u32 @ 0x022, 0x1;
        event_on_vhca_state_teardown_request, set_event_on_vhca_state_teardown_request:
            u32 @ 0x023, 0x1;
        event_on_vhca_state_in_use, set_event_on_vhca_state_in_use: u32 @ 0x024, 0x1;
        event_on_vhca_state_active, set_event_on_vhca_state_active: u32 @ 0x025, 0x1;
        event_on_vhca_state_allocated, set_event_on_vhca_state_allocated: u32 @ 0x026, 0x1;
        event_on_vhca_state_invalid, set_event_on_vhca_state_invalid: u32 @ 0x027, 0x1;
        vhca_id, set_vhca_id: u32 @ 0x030, 0x10;
        log_max_srq_sz, set_log_max_srq_sz: u32 @ 0x080, 0x8;
        log_max_qp_sz, set_log_max_qp_sz: u32 @ 0x088, 0x8;
        event_cap, set_event_cap: u32 @ 0x090, 0x1;
        isolate_vl_tc_new, set_isolate_vl_tc_new: u32 @ 0x093, 0x1;
        prio_tag_required, set_prio_tag_required: u32 @ 0x098, 0x1;
        /// log2 of the number of QPs; the driver sets at most 18.
        log_max_qp, set_log_max_qp: u32 @ 0x09b, 0x5;
        ece_support, set_ece_support: u32 @ 0x0a3, 0x1;
        reg_c_preserve, set_reg_c_preserve: u32 @ 0x0a9, 0x1;
        log_max_srq, set_log_max_srq: u32 @ 0x0ab, 0x5;
        uplink_follow, set_uplink_follow: u32 @ 0x0b1, 0x1;
        ts_cqe_to_dest_cqn, set_ts_cqe_to_dest_cqn: u32 @ 0x0b2, 0x1;
        go_back_n, set_go_back_n: u32 @ 0x0b9, 0x1;
        max_sgl_for_optimized_performance, set_max_sgl_for_optimized_performance: u32 @ 0x0c0, 0x8;
        log_max_cq_sz, set_log_max_cq_sz: u32 @ 0x0c8, 0x8;
        relaxed_ordering_write_umr, set_relaxed_ordering_write_umr: u32 @ 0x0d0, 0x1;
        relaxed_ordering_read_umr, set_relaxed_ordering_read_umr: u32 @ 0x0d1, 0x1;
        virtio_net_device_emualtion_manager, set_virtio_net_device_emualtion_manager:
            u32 @ 0x0d9, 0x1;
        virtio_blk_device_emualtion_manager, set_virtio_blk_device_emualtion_manager:
            u32 @ 0x0da, 0x1;
        log_max_cq, set_log_max_cq: u32 @ 0x0db, 0x5;
        log_max_eq_sz, set_log_max_eq_sz: u32 @ 0x0e0, 0x8;
        relaxed_ordering_write, set_relaxed_ordering_write: u32 @ 0x0e8, 0x1;
        relaxed_ordering_read_pci_enabled, set_relaxed_ordering_read_pci_enabled: u32 @ 0x0e9, 0x1;
        log_max_mkey, set_log_max_mkey: u32 @ 0x0ea, 0x6;
        terminate_scatter_list_mkey, set_terminate_scatter_list_mkey: u32 @ 0x0f6, 0x1;
        repeated_mkey, set_repeated_mkey: u32 @ 0x0f7, 0x1;
        dump_fill_mkey, set_dump_fill_mkey: u32 @ 0x0f8, 0x1;
        fast_teardown, set_fast_teardown: u32 @ 0x0fb, 0x1;
        log_max_eq, set_log_max_eq: u32 @ 0x0fc, 0x4;
        max_indirection, set_max_indirection: u32 @ 0x100, 0x8;
        fixed_buffer_size, set_fixed_buffer_size: u32 @ 0x108, 0x1;
        log_max_mrw_sz, set_log_max_mrw_sz: u32 @ 0x109, 0x7;
        force_teardown, set_force_teardown: u32 @ 0x110, 0x1;
        log_max_bsf_list_size, set_log_max_bsf_list_size: u32 @ 0x112, 0x6;
        umr_extended_translation_offset, set_umr_extended_translation_offset: u32 @ 0x118, 0x1;
        null_mkey, set_null_mkey: u32 @ 0x119, 0x1;
        log_max_klm_list_size, set_log_max_klm_list_size: u32 @ 0x11a, 0x6;
        qpc_extension, set_qpc_extension: u32 @ 0x122, 0x1;
        log_max_ra_req_dc, set_log_max_ra_req_dc: u32 @ 0x12a, 0x6;
        eth_wqe_too_small, set_eth_wqe_too_small: u32 @ 0x132, 0x1;
        vnic_env_cq_overrun, set_vnic_env_cq_overrun: u32 @ 0x139, 0x1;
        log_max_ra_res_dc, set_log_max_ra_res_dc: u32 @ 0x13a, 0x6;
        release_all_pages, set_release_all_pages: u32 @ 0x145, 0x1;
        must_not_use, set_must_not_use: u32 @ 0x146, 0x1;
        roce_accl, set_roce_accl: u32 @ 0x149, 0x1;
        log_max_ra_req_qp, set_log_max_ra_req_qp: u32 @ 0x14a, 0x6;
        log_max_ra_res_qp, set_log_max_ra_res_qp: u32 @ 0x15a, 0x6;
        end_pad, set_end_pad: u32 @ 0x160, 0x1;
        cc_query_allowed, set_cc_query_allowed: u32 @ 0x161, 0x1;
        cc_modify_allowed, set_cc_modify_allowed: u32 @ 0x162, 0x1;
        start_pad, set_start_pad: u32 @ 0x163, 0x1;
        cache_line_128byte, set_cache_line_128byte: u32 @ 0x164, 0x1;
        rts2rts_qp_counters_set_id, set_rts2rts_qp_counters_set_id: u32 @ 0x169, 0x1;
        vnic_env_int_rq_oob, set_vnic_env_int_rq_oob: u32 @ 0x16c, 0x1;
        sbcam_reg, set_sbcam_reg: u32 @ 0x16d, 0x1;
        qcam_reg, set_qcam_reg: u32 @ 0x16f, 0x1;
        gid_table_size, set_gid_table_size: u32 @ 0x170, 0x10;
        out_of_seq_cnt, set_out_of_seq_cnt: u32 @ 0x180, 0x1;
        vport_counters, set_vport_counters: u32 @ 0x181, 0x1;
        retransmission_q_counters, set_retransmission_q_counters: u32 @ 0x182, 0x1;
        debug, set_debug: u32 @ 0x183, 0x1;
        modify_rq_counter_set_id, set_modify_rq_counter_set_id: u32 @ 0x184, 0x1;
        rq_delay_drop, set_rq_delay_drop: u32 @ 0x185, 0x1;
        max_qp_cnt, set_max_qp_cnt: u32 @ 0x186, 0xa;
        /// P_Key table size code (0: 128 entries).
        pkey_table_size, set_pkey_table_size: u32 @ 0x190, 0x10;
        vport_group_manager, set_vport_group_manager: u32 @ 0x1a0, 0x1;
        vhca_group_manager, set_vhca_group_manager: u32 @ 0x1a1, 0x1;
        ib_virt, set_ib_virt: u32 @ 0x1a2, 0x1;
        eth_virt, set_eth_virt: u32 @ 0x1a3, 0x1;
        vnic_env_queue_counters, set_vnic_env_queue_counters: u32 @ 0x1a4, 0x1;
        ets, set_ets: u32 @ 0x1a5, 0x1;
        /// NIC flow table capabilities are present.
        nic_flow_table, set_nic_flow_table: u32 @ 0x1a6, 0x1;
        eswitch_manager, set_eswitch_manager: u32 @ 0x1a7, 0x1;
        device_memory, set_device_memory: u32 @ 0x1a8, 0x1;
        mcam_reg, set_mcam_reg: u32 @ 0x1a9, 0x1;
        pcam_reg, set_pcam_reg: u32 @ 0x1aa, 0x1;
        local_ca_ack_delay, set_local_ca_ack_delay: u32 @ 0x1ab, 0x5;
        port_module_event, set_port_module_event: u32 @ 0x1b0, 0x1;
        enhanced_error_q_counters, set_enhanced_error_q_counters: u32 @ 0x1b1, 0x1;
        ports_check, set_ports_check: u32 @ 0x1b2, 0x1;
        disable_link_up, set_disable_link_up: u32 @ 0x1b4, 0x1;
        beacon_led, set_beacon_led: u32 @ 0x1b5, 0x1;
        /// Port type: [`port_type::ETH`] for a ConnectX-4 Ethernet port.
        port_type, set_port_type: u32 @ 0x1b6, 0x2;
        num_ports, set_num_ports: u32 @ 0x1b8, 0x8;
        pps, set_pps: u32 @ 0x1c1, 0x1;
        pps_modify, set_pps_modify: u32 @ 0x1c2, 0x1;
        log_max_msg, set_log_max_msg: u32 @ 0x1c3, 0x5;
        max_tc, set_max_tc: u32 @ 0x1cc, 0x4;
        temp_warn_event, set_temp_warn_event: u32 @ 0x1d0, 0x1;
        dcbx, set_dcbx: u32 @ 0x1d1, 0x1;
        general_notification_event, set_general_notification_event: u32 @ 0x1d2, 0x1;
        fpga, set_fpga: u32 @ 0x1d5, 0x1;
        rol_s, set_rol_s: u32 @ 0x1d6, 0x1;
        rol_g, set_rol_g: u32 @ 0x1d7, 0x1;
        wol_s, set_wol_s: u32 @ 0x1d9, 0x1;
        wol_g, set_wol_g: u32 @ 0x1da, 0x1;
        wol_a, set_wol_a: u32 @ 0x1db, 0x1;
        wol_b, set_wol_b: u32 @ 0x1dc, 0x1;
        wol_m, set_wol_m: u32 @ 0x1dd, 0x1;
        wol_u, set_wol_u: u32 @ 0x1de, 0x1;
        wol_p, set_wol_p: u32 @ 0x1df, 0x1;
        stat_rate_support, set_stat_rate_support: u32 @ 0x1e0, 0x10;
        pci_sync_for_fw_update_event, set_pci_sync_for_fw_update_event: u32 @ 0x1f1, 0x1;
        init2_lag_tx_port_affinity, set_init2_lag_tx_port_affinity: u32 @ 0x1f8, 0x1;
        wqe_based_flow_table_update_cap, set_wqe_based_flow_table_update_cap: u32 @ 0x1fb, 0x1;
        cqe_version, set_cqe_version: u32 @ 0x1fc, 0x4;
        compact_address_vector, set_compact_address_vector: u32 @ 0x200, 0x1;
        striding_rq, set_striding_rq: u32 @ 0x201, 0x1;
        ipoib_enhanced_offloads, set_ipoib_enhanced_offloads: u32 @ 0x203, 0x1;
        ipoib_basic_offloads, set_ipoib_basic_offloads: u32 @ 0x204, 0x1;
        repeated_block_disabled, set_repeated_block_disabled: u32 @ 0x206, 0x1;
        umr_modify_entity_size_disabled, set_umr_modify_entity_size_disabled: u32 @ 0x207, 0x1;
        umr_modify_atomic_disabled, set_umr_modify_atomic_disabled: u32 @ 0x208, 0x1;
        umr_indirect_mkey_disabled, set_umr_indirect_mkey_disabled: u32 @ 0x209, 0x1;
        umr_fence, set_umr_fence: u32 @ 0x20a, 0x2;
        dc_req_scat_data_cqe, set_dc_req_scat_data_cqe: u32 @ 0x20c, 0x1;
        drain_sigerr, set_drain_sigerr: u32 @ 0x20f, 0x1;
        /// Command interface checksum mode (the driver sets 0: off).
        cmdif_checksum, set_cmdif_checksum: u32 @ 0x210, 0x2;
        sigerr_cqe, set_sigerr_cqe: u32 @ 0x212, 0x1;
        wq_signature, set_wq_signature: u32 @ 0x214, 0x1;
        sctr_data_cqe, set_sctr_data_cqe: u32 @ 0x215, 0x1;
        sho, set_sho: u32 @ 0x217, 0x1;
        tph, set_tph: u32 @ 0x218, 0x1;
        rf, set_rf: u32 @ 0x219, 0x1;
        dct, set_dct: u32 @ 0x21a, 0x1;
        qos, set_qos: u32 @ 0x21b, 0x1;
        /// Ethernet offload capabilities are present.
        eth_net_offloads, set_eth_net_offloads: u32 @ 0x21c, 0x1;
        roce, set_roce: u32 @ 0x21d, 0x1;
        atomic, set_atomic: u32 @ 0x21e, 0x1;
        cq_oi, set_cq_oi: u32 @ 0x220, 0x1;
        cq_resize, set_cq_resize: u32 @ 0x221, 0x1;
        cq_moderation, set_cq_moderation: u32 @ 0x222, 0x1;
        cq_period_mode_modify, set_cq_period_mode_modify: u32 @ 0x223, 0x1;
        cq_eq_remap, set_cq_eq_remap: u32 @ 0x226, 0x1;
        pg, set_pg: u32 @ 0x227, 0x1;
        block_lb_mc, set_block_lb_mc: u32 @ 0x228, 0x1;
        scqe_break_moderation, set_scqe_break_moderation: u32 @ 0x22a, 0x1;
        cq_period_start_from_cqe, set_cq_period_start_from_cqe: u32 @ 0x22b, 0x1;
        cd, set_cd: u32 @ 0x22c, 0x1;
        apm, set_apm: u32 @ 0x22e, 0x1;
        vector_calc, set_vector_calc: u32 @ 0x22f, 0x1;
        umr_ptr_rlky, set_umr_ptr_rlky: u32 @ 0x230, 0x1;
        imaicl, set_imaicl: u32 @ 0x231, 0x1;
        qp_packet_based, set_qp_packet_based: u32 @ 0x232, 0x1;
        qkv, set_qkv: u32 @ 0x236, 0x1;
        pkv, set_pkv: u32 @ 0x237, 0x1;
        set_deth_sqpn, set_set_deth_sqpn: u32 @ 0x238, 0x1;
        xrc, set_xrc: u32 @ 0x23c, 0x1;
        ud, set_ud: u32 @ 0x23d, 0x1;
        uc, set_uc: u32 @ 0x23e, 0x1;
        rc, set_rc: u32 @ 0x23f, 0x1;
        uar_4k, set_uar_4k: u32 @ 0x240, 0x1;
        fl_rc_qp_when_roce_disabled, set_fl_rc_qp_when_roce_disabled: u32 @ 0x248, 0x1;
        regexp_params, set_regexp_params: u32 @ 0x249, 0x1;
        uar_sz, set_uar_sz: u32 @ 0x24a, 0x6;
        port_selection_cap, set_port_selection_cap: u32 @ 0x250, 0x1;
        nic_cap_reg, set_nic_cap_reg: u32 @ 0x251, 0x1;
        umem_uid_0, set_umem_uid_0: u32 @ 0x252, 0x1;
        log_pg_sz, set_log_pg_sz: u32 @ 0x258, 0x8;
        bf, set_bf: u32 @ 0x260, 0x1;
        driver_version, set_driver_version: u32 @ 0x261, 0x1;
        pad_tx_eth_packet, set_pad_tx_eth_packet: u32 @ 0x262, 0x1;
        mkey_by_name, set_mkey_by_name: u32 @ 0x266, 0x1;
        /// log2 of the BlueFlame register size (two halves per register).
        log_bf_reg_size, set_log_bf_reg_size: u32 @ 0x26b, 0x5;
        disciplined_fr_counter, set_disciplined_fr_counter: u32 @ 0x270, 0x1;
        qp_error_syndrome, set_qp_error_syndrome: u32 @ 0x273, 0x1;
        lag_dct, set_lag_dct: u32 @ 0x276, 0x2;
        lag_tx_port_affinity, set_lag_tx_port_affinity: u32 @ 0x278, 0x1;
        lag_native_fdb_selection, set_lag_native_fdb_selection: u32 @ 0x279, 0x1;
        lag_master, set_lag_master: u32 @ 0x27b, 0x1;
        num_lag_ports, set_num_lag_ports: u32 @ 0x27c, 0x4;
        max_wqe_sz_sq, set_max_wqe_sz_sq: u32 @ 0x290, 0x10;
        icm_mng_function_id_mode, set_icm_mng_function_id_mode: u32 @ 0x2a0, 0x1;
        mkey_pcie_tph, set_mkey_pcie_tph: u32 @ 0x2a7, 0x1;
        tis_tir_td_order, set_tis_tir_td_order: u32 @ 0x2a9, 0x1;
        psp, set_psp: u32 @ 0x2aa, 0x1;
        shampo, set_shampo: u32 @ 0x2ab, 0x1;
        max_wqe_sz_rq, set_max_wqe_sz_rq: u32 @ 0x2b0, 0x10;
        max_flow_counter_31_16, set_max_flow_counter_31_16: u32 @ 0x2c0, 0x10;
        max_wqe_sz_sq_dc, set_max_wqe_sz_sq_dc: u32 @ 0x2d0, 0x10;
        query_host_net_function_num_max, set_query_host_net_function_num_max: u32 @ 0x2e0, 0x5;
        max_qp_mcg, set_max_qp_mcg: u32 @ 0x2e7, 0x19;
        flow_counter_bulk_alloc, set_flow_counter_bulk_alloc: u32 @ 0x310, 0x8;
        log_max_mcg, set_log_max_mcg: u32 @ 0x318, 0x8;
        log_max_transport_domain, set_log_max_transport_domain: u32 @ 0x323, 0x5;
        relaxed_ordering_read, set_relaxed_ordering_read: u32 @ 0x32a, 0x1;
        log_max_pd, set_log_max_pd: u32 @ 0x32b, 0x5;
        dp_ordering_ooo_all_ud, set_dp_ordering_ooo_all_ud: u32 @ 0x330, 0x1;
        dp_ordering_ooo_all_uc, set_dp_ordering_ooo_all_uc: u32 @ 0x331, 0x1;
        dp_ordering_ooo_all_xrc, set_dp_ordering_ooo_all_xrc: u32 @ 0x332, 0x1;
        dp_ordering_ooo_all_dc, set_dp_ordering_ooo_all_dc: u32 @ 0x333, 0x1;
        dp_ordering_ooo_all_rc, set_dp_ordering_ooo_all_rc: u32 @ 0x334, 0x1;
        pcie_reset_using_hotreset_method, set_pcie_reset_using_hotreset_method: u32 @ 0x335, 0x1;
        pci_sync_for_fw_update_with_driver_unload, set_pci_sync_for_fw_update_with_driver_unload:
            u32 @ 0x336, 0x1;
        vnic_env_cnt_steering_fail, set_vnic_env_cnt_steering_fail: u32 @ 0x337, 0x1;
        vport_counter_local_loopback, set_vport_counter_local_loopback: u32 @ 0x338, 0x1;
        q_counter_aggregation, set_q_counter_aggregation: u32 @ 0x339, 0x1;
        q_counter_other_vport, set_q_counter_other_vport: u32 @ 0x33a, 0x1;
        log_max_xrcd, set_log_max_xrcd: u32 @ 0x33b, 0x5;
        nic_receive_steering_discard, set_nic_receive_steering_discard: u32 @ 0x340, 0x1;
        receive_discard_vport_down, set_receive_discard_vport_down: u32 @ 0x341, 0x1;
        transmit_discard_vport_down, set_transmit_discard_vport_down: u32 @ 0x342, 0x1;
        eq_overrun_count, set_eq_overrun_count: u32 @ 0x343, 0x1;
        invalid_command_count, set_invalid_command_count: u32 @ 0x345, 0x1;
        quota_exceeded_count, set_quota_exceeded_count: u32 @ 0x346, 0x1;
        log_max_flow_counter_bulk, set_log_max_flow_counter_bulk: u32 @ 0x348, 0x8;
        max_flow_counter_15_0, set_max_flow_counter_15_0: u32 @ 0x350, 0x10;
        log_max_rq, set_log_max_rq: u32 @ 0x363, 0x5;
        ft_alias_sw_vhca_id, set_ft_alias_sw_vhca_id: u32 @ 0x368, 0x1;
        log_max_sq, set_log_max_sq: u32 @ 0x36b, 0x5;
        log_max_tir, set_log_max_tir: u32 @ 0x373, 0x5;
        log_max_tis, set_log_max_tis: u32 @ 0x37b, 0x5;
        basic_cyclic_rcv_wqe, set_basic_cyclic_rcv_wqe: u32 @ 0x380, 0x1;
        log_max_rmp, set_log_max_rmp: u32 @ 0x383, 0x5;
        sd_group_size, set_sd_group_size: u32 @ 0x388, 0x1;
        log_max_rqt, set_log_max_rqt: u32 @ 0x38b, 0x5;
        log_max_rqt_size, set_log_max_rqt_size: u32 @ 0x393, 0x5;
        tlp_device_emulation_manager, set_tlp_device_emulation_manager: u32 @ 0x398, 0x1;
        vnic_env_cnt_bar_uar_access, set_vnic_env_cnt_bar_uar_access: u32 @ 0x399, 0x1;
        vnic_env_cnt_odp_page_fault, set_vnic_env_cnt_odp_page_fault: u32 @ 0x39a, 0x1;
        log_max_tis_per_sq, set_log_max_tis_per_sq: u32 @ 0x39b, 0x5;
        ext_stride_num_range, set_ext_stride_num_range: u32 @ 0x3a0, 0x1;
        roce_rw_supported, set_roce_rw_supported: u32 @ 0x3a1, 0x1;
        log_max_current_uc_list_wr_supported, set_log_max_current_uc_list_wr_supported:
            u32 @ 0x3a2, 0x1;
        log_max_stride_sz_rq, set_log_max_stride_sz_rq: u32 @ 0x3a3, 0x5;
        log_min_stride_sz_rq, set_log_min_stride_sz_rq: u32 @ 0x3ab, 0x5;
        log_max_stride_sz_sq, set_log_max_stride_sz_sq: u32 @ 0x3b3, 0x5;
        log_min_stride_sz_sq, set_log_min_stride_sz_sq: u32 @ 0x3bb, 0x5;
        hairpin, set_hairpin: u32 @ 0x3c0, 0x1;
        log_max_hairpin_queues, set_log_max_hairpin_queues: u32 @ 0x3c3, 0x5;
        log_max_hairpin_wq_data_sz, set_log_max_hairpin_wq_data_sz: u32 @ 0x3cb, 0x5;
        log_max_hairpin_num_packets, set_log_max_hairpin_num_packets: u32 @ 0x3d3, 0x5;
        log_max_wq_sz, set_log_max_wq_sz: u32 @ 0x3db, 0x5;
        nic_vport_change_event, set_nic_vport_change_event: u32 @ 0x3e0, 0x1;
        disable_local_lb_uc, set_disable_local_lb_uc: u32 @ 0x3e1, 0x1;
        disable_local_lb_mc, set_disable_local_lb_mc: u32 @ 0x3e2, 0x1;
        log_min_hairpin_wq_data_sz, set_log_min_hairpin_wq_data_sz: u32 @ 0x3e3, 0x5;
        silent_mode_set, set_silent_mode_set: u32 @ 0x3e9, 0x1;
        vhca_state, set_vhca_state: u32 @ 0x3ea, 0x1;
        log_max_vlan_list, set_log_max_vlan_list: u32 @ 0x3eb, 0x5;
        log_max_current_mc_list, set_log_max_current_mc_list: u32 @ 0x3f3, 0x5;
        silent_mode_query, set_silent_mode_query: u32 @ 0x3f9, 0x1;
        query_host_net_function_v1, set_query_host_net_function_v1: u32 @ 0x3fa, 0x1;
        log_max_current_uc_list, set_log_max_current_uc_list: u32 @ 0x3fb, 0x5;
        general_obj_types, set_general_obj_types: u64 @ 0x400, 0x40;
        sq_ts_format, set_sq_ts_format: u32 @ 0x440, 0x2;
        rq_ts_format, set_rq_ts_format: u32 @ 0x442, 0x2;
        steering_format_version, set_steering_format_version: u32 @ 0x444, 0x4;
        create_qp_start_hint, set_create_qp_start_hint: u32 @ 0x448, 0x18;
        ats, set_ats: u32 @ 0x461, 0x1;
        cross_vhca_rqt, set_cross_vhca_rqt: u32 @ 0x462, 0x1;
        log_max_uctx, set_log_max_uctx: u32 @ 0x463, 0x5;
        crypto, set_crypto: u32 @ 0x469, 0x1;
        ipsec_offload, set_ipsec_offload: u32 @ 0x46a, 0x1;
        log_max_umem, set_log_max_umem: u32 @ 0x46b, 0x5;
        max_num_eqs, set_max_num_eqs: u32 @ 0x470, 0x10;
        tls_tx, set_tls_tx: u32 @ 0x481, 0x1;
        tls_rx, set_tls_rx: u32 @ 0x482, 0x1;
        log_max_l2_table, set_log_max_l2_table: u32 @ 0x483, 0x5;
        /// log2 of the UAR page size in 4 KiB units (the driver sets 0).
        log_uar_page_sz, set_log_uar_page_sz: u32 @ 0x490, 0x10;
        device_frequency_mhz, set_device_frequency_mhz: u32 @ 0x4c0, 0x20;
        device_frequency_khz, set_device_frequency_khz: u32 @ 0x4e0, 0x20;
        num_of_uars_per_page, set_num_of_uars_per_page: u32 @ 0x520, 0x20;
        flex_parser_protocols, set_flex_parser_protocols: u32 @ 0x540, 0x20;
        max_geneve_tlv_options, set_max_geneve_tlv_options: u32 @ 0x560, 0x8;
        max_geneve_tlv_option_data_len, set_max_geneve_tlv_option_data_len: u32 @ 0x56b, 0x5;
        adv_rdma, set_adv_rdma: u32 @ 0x571, 0x1;
        adv_virtualization, set_adv_virtualization: u32 @ 0x579, 0x1;
        log_max_dci_stream_channels, set_log_max_dci_stream_channels: u32 @ 0x58b, 0x5;
        log_max_dci_errored_streams, set_log_max_dci_errored_streams: u32 @ 0x593, 0x5;
        enhanced_cqe_compression, set_enhanced_cqe_compression: u32 @ 0x5b0, 0x1;
        crossing_vhca_mkey, set_crossing_vhca_mkey: u32 @ 0x5b2, 0x1;
        log_max_dek, set_log_max_dek: u32 @ 0x5b3, 0x5;
        mini_cqe_resp_stride_index, set_mini_cqe_resp_stride_index: u32 @ 0x5bc, 0x1;
        cqe_128_always, set_cqe_128_always: u32 @ 0x5bd, 0x1;
        cqe_compression_128, set_cqe_compression_128: u32 @ 0x5be, 0x1;
        cqe_compression, set_cqe_compression: u32 @ 0x5bf, 0x1;
        cqe_compression_timeout, set_cqe_compression_timeout: u32 @ 0x5c0, 0x10;
        cqe_compression_max_num, set_cqe_compression_max_num: u32 @ 0x5d0, 0x10;
        flex_parser_id_gtpu_dw_0, set_flex_parser_id_gtpu_dw_0: u32 @ 0x5e8, 0x4;
        tag_matching, set_tag_matching: u32 @ 0x5f0, 0x1;
        rndv_offload_rc, set_rndv_offload_rc: u32 @ 0x5f1, 0x1;
        rndv_offload_dc, set_rndv_offload_dc: u32 @ 0x5f2, 0x1;
        log_tag_matching_list_sz, set_log_tag_matching_list_sz: u32 @ 0x5f3, 0x5;
        log_max_xrq, set_log_max_xrq: u32 @ 0x5fb, 0x5;
        affiliate_nic_vport_criteria, set_affiliate_nic_vport_criteria: u32 @ 0x600, 0x8;
        native_port_num, set_native_port_num: u32 @ 0x608, 0x8;
        num_vhca_ports, set_num_vhca_ports: u32 @ 0x610, 0x8;
        flex_parser_id_gtpu_teid, set_flex_parser_id_gtpu_teid: u32 @ 0x618, 0x4;
        sw_owner_id, set_sw_owner_id: u32 @ 0x61e, 0x1;
        max_num_of_monitor_counters, set_max_num_of_monitor_counters: u32 @ 0x620, 0x10;
        num_ppcnt_monitor_counters, set_num_ppcnt_monitor_counters: u32 @ 0x630, 0x10;
        max_num_sf, set_max_num_sf: u32 @ 0x640, 0x10;
        num_q_monitor_counters, set_num_q_monitor_counters: u32 @ 0x650, 0x10;
        sf, set_sf: u32 @ 0x680, 0x1;
        sf_set_partition, set_sf_set_partition: u32 @ 0x681, 0x1;
        log_max_sf, set_log_max_sf: u32 @ 0x683, 0x5;
        apu, set_apu: u32 @ 0x688, 0x1;
        migration, set_migration: u32 @ 0x68d, 0x1;
        log_min_sf_size, set_log_min_sf_size: u32 @ 0x690, 0x8;
        max_num_sf_partitions, set_max_num_sf_partitions: u32 @ 0x698, 0x8;
        uctx_cap, set_uctx_cap: u32 @ 0x6a0, 0x20;
        flex_parser_id_geneve_tlv_option_0, set_flex_parser_id_geneve_tlv_option_0:
            u32 @ 0x6c4, 0x4;
        flex_parser_id_icmp_dw1, set_flex_parser_id_icmp_dw1: u32 @ 0x6c8, 0x4;
        flex_parser_id_icmp_dw0, set_flex_parser_id_icmp_dw0: u32 @ 0x6cc, 0x4;
        flex_parser_id_icmpv6_dw1, set_flex_parser_id_icmpv6_dw1: u32 @ 0x6d0, 0x4;
        flex_parser_id_icmpv6_dw0, set_flex_parser_id_icmpv6_dw0: u32 @ 0x6d4, 0x4;
        flex_parser_id_outer_first_mpls_over_gre, set_flex_parser_id_outer_first_mpls_over_gre:
            u32 @ 0x6d8, 0x4;
        flex_parser_id_outer_first_mpls_over_udp_label, set_flex_parser_id_outer_first_mpls_over_udp_label:
            u32 @ 0x6dc, 0x4;
        max_num_match_definer, set_max_num_match_definer: u32 @ 0x6e0, 0x10;
        sf_base_id, set_sf_base_id: u32 @ 0x6f0, 0x10;
        flex_parser_id_gtpu_dw_2, set_flex_parser_id_gtpu_dw_2: u32 @ 0x700, 0x4;
        flex_parser_id_gtpu_first_ext_dw_0, set_flex_parser_id_gtpu_first_ext_dw_0:
            u32 @ 0x704, 0x4;
        num_total_dynamic_vf_msix, set_num_total_dynamic_vf_msix: u32 @ 0x708, 0x18;
        dynamic_msix_table_size, set_dynamic_msix_table_size: u32 @ 0x734, 0xc;
        min_dynamic_vf_msix_table_size, set_min_dynamic_vf_msix_table_size: u32 @ 0x74c, 0x4;
        data_direct, set_data_direct: u32 @ 0x752, 0x1;
        max_dynamic_vf_msix_table_size, set_max_dynamic_vf_msix_table_size: u32 @ 0x754, 0xc;
        log_max_num_header_modify_argument, set_log_max_num_header_modify_argument:
            u32 @ 0x763, 0x5;
        log_header_modify_argument_granularity_offset, set_log_header_modify_argument_granularity_offset:
            u32 @ 0x768, 0x4;
        log_header_modify_argument_granularity, set_log_header_modify_argument_granularity:
            u32 @ 0x76c, 0x4;
        log_header_modify_argument_max_alloc, set_log_header_modify_argument_max_alloc:
            u32 @ 0x773, 0x5;
        vhca_tunnel_commands, set_vhca_tunnel_commands: u64 @ 0x780, 0x40;
        match_definer_format_supported, set_match_definer_format_supported: u64 @ 0x7c0, 0x40;
    }
}

/// `port_type` values (`MLX5_CAP_PORT_TYPE_*`, mlx5_ifc.h).
pub mod port_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_CAP_PORT_TYPE_", port_type_name;
        IB = 0x0, "IB";
        ETH = 0x1, "ETH";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every cmd_hca_cap field the model map (§1.3-§4) names, spelled as in mlx5_ifc.h.
    const MAP_FIELDS: &str = "\
        pkey_table_size log_max_qp cmdif_checksum log_uar_page_sz roce_rw_supported hca_cap_2 \
        port_selection_cap sw_owner_id driver_version eth_net_offloads roce nic_flow_table \
        pcam_reg mcam_reg qcam_reg device_frequency_khz atomic pg vport_group_manager \
        eswitch_manager general_notification_event port_module_event temp_warn_event \
        max_num_of_monitor_counters fpga disable_local_lb_uc disable_local_lb_mc fast_teardown \
        force_teardown log_max_uctx uctx_cap bf cqe_compression striding_rq umr_ptr_rlky \
        ports_check cq_moderation cq_period_mode_modify cqe_128_always terminate_scatter_list_mkey \
        dump_fill_mkey null_mkey max_qp_cnt set_deth_sqpn cc_query_allowed cc_modify_allowed \
        uplink_follow cq_resize ece_support drain_sigerr rq_ts_format sq_ts_format port_type \
        num_ports xrc cqe_version page_request_disable umr_modify_entity_size_disabled log_max_eq \
        log_max_cq log_max_cq_sz log_max_qp_sz log_max_srq log_max_srq_sz log_max_pd log_max_mkey \
        log_max_xrcd log_max_sq log_max_rq log_max_tis log_max_tir log_max_rqt log_max_rqt_size \
        log_max_transport_domain log_max_msg max_wqe_sz_sq max_wqe_sz_rq log_pg_sz log_bf_reg_size \
        log_max_current_uc_list log_max_current_mc_list log_max_vlan_list log_max_ra_req_qp \
        log_max_ra_res_qp num_vhca_ports release_all_pages icm_mng_function_id_mode mkey_by_name \
        abs_native_port_num dct imaicl qos debug device_memory event_cap general_obj_types tls_tx \
        tls_rx ipsec_offload crypto shampo tlp_device_emulation_manager lag_master num_lag_ports \
        mini_cqe_resp_stride_index enhanced_cqe_compression";

    #[test]
    fn every_general_cap_the_map_names_is_declared() {
        let missing: std::vec::Vec<_> = MAP_FIELDS
            .split_whitespace()
            .filter(|n| !CmdHcaCap::FIELDS.iter().any(|f| f.0 == *n))
            .collect();
        assert!(missing.is_empty(), "cmd_hca_cap lacks {missing:?}");
    }

    // Positions from mlx5_ifc.h: port_type is 2 bits at bit 0x1b6, i.e. the two low bits of
    // byte 0x36; max_wqe_sz_sq is 16 bits at bit 0x290, i.e. bytes 0x52..0x54.
    #[test]
    fn general_caps_place_big_endian_bits() {
        let mut c = CmdHcaCap::new();
        c.set_port_type(port_type::ETH.into());
        assert_eq!(c.0[0x36], 0b0000_0001);
        c.set_max_wqe_sz_sq(1024);
        assert_eq!(&c.0[0x52..0x54], &[0x04, 0x00]);
        c.set_log_pg_sz(12);
        assert_eq!(c.log_pg_sz(), 12);
        c.set_general_obj_types(0x8000_0000_0000_0001);
        assert_eq!(c.general_obj_types(), 0x8000_0000_0000_0001);
        assert_eq!(port_type::port_type_name(1), "ETH");
    }
}
