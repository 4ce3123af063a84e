// SPDX-License-Identifier: GPL-2.0
//! Counters: vport traffic counters, queue counters (out-of-buffer), the PPCNT counter groups
//! `ethtool -S` reads, the PFCC register, and the VXLAN UDP port commands of the port.

use crate::bits::{ifc_layouts, Field};
use crate::flow::TrafficCounter;

ifc_layouts! {
    /// Input of `QUERY_VPORT_COUNTER`.
    pub struct QueryVportCounterIn: Ifc "query_vport_counter_in", 0x20 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        port_num, set_port_num: u32 @ 0x04c, 0x4;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        clear, set_clear: u32 @ 0x0c0, 0x1;
    }

    /// Output of `QUERY_VPORT_COUNTER`.
    pub struct QueryVportCounterOut: Ifc "query_vport_counter_out", 0x210 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        received_errors, received_errors_mut: TrafficCounter @ 0x080, 0x80;
        transmit_errors, transmit_errors_mut: TrafficCounter @ 0x100, 0x80;
        received_ib_unicast, received_ib_unicast_mut: TrafficCounter @ 0x180, 0x80;
        transmitted_ib_unicast, transmitted_ib_unicast_mut: TrafficCounter @ 0x200, 0x80;
        received_ib_multicast, received_ib_multicast_mut: TrafficCounter @ 0x280, 0x80;
        transmitted_ib_multicast, transmitted_ib_multicast_mut: TrafficCounter @ 0x300, 0x80;
        received_eth_broadcast, received_eth_broadcast_mut: TrafficCounter @ 0x380, 0x80;
        transmitted_eth_broadcast, transmitted_eth_broadcast_mut: TrafficCounter @ 0x400, 0x80;
        received_eth_unicast, received_eth_unicast_mut: TrafficCounter @ 0x480, 0x80;
        transmitted_eth_unicast, transmitted_eth_unicast_mut: TrafficCounter @ 0x500, 0x80;
        received_eth_multicast, received_eth_multicast_mut: TrafficCounter @ 0x580, 0x80;
        transmitted_eth_multicast, transmitted_eth_multicast_mut: TrafficCounter @ 0x600, 0x80;
        local_loopback, local_loopback_mut: TrafficCounter @ 0x680, 0x80;
    }

    /// Input of `ALLOC_Q_COUNTER`.
    pub struct AllocQCounterIn: Ifc "alloc_q_counter_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
    }

    /// Output of `ALLOC_Q_COUNTER`.
    pub struct AllocQCounterOut: Ifc "alloc_q_counter_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        counter_set_id, set_counter_set_id: u32 @ 0x058, 0x8;
    }

    /// Input of `DEALLOC_Q_COUNTER`.
    pub struct DeallocQCounterIn: Ifc "dealloc_q_counter_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        counter_set_id, set_counter_set_id: u32 @ 0x058, 0x8;
    }

    /// Output of `DEALLOC_Q_COUNTER`.
    pub struct DeallocQCounterOut: Ifc "dealloc_q_counter_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_Q_COUNTER`.
    pub struct QueryQCounterIn: Ifc "query_q_counter_in", 0x20 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        other_vport, set_other_vport: u32 @ 0x040, 0x1;
        vport_number, set_vport_number: u32 @ 0x050, 0x10;
        clear, set_clear: u32 @ 0x0c0, 0x1;
        aggregate, set_aggregate: u32 @ 0x0c1, 0x1;
        counter_set_id, set_counter_set_id: u32 @ 0x0f8, 0x8;
    }

    /// Output of `QUERY_Q_COUNTER`.
    pub struct QueryQCounterOut: Ifc "query_q_counter_out", 0x100 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        rx_write_requests, set_rx_write_requests: u32 @ 0x080, 0x20;
        rx_read_requests, set_rx_read_requests: u32 @ 0x0c0, 0x20;
        rx_atomic_requests, set_rx_atomic_requests: u32 @ 0x100, 0x20;
        rx_dct_connect, set_rx_dct_connect: u32 @ 0x140, 0x20;
        out_of_buffer, set_out_of_buffer: u32 @ 0x180, 0x20;
        out_of_sequence, set_out_of_sequence: u32 @ 0x1c0, 0x20;
        duplicate_request, set_duplicate_request: u32 @ 0x200, 0x20;
        rnr_nak_retry_err, set_rnr_nak_retry_err: u32 @ 0x240, 0x20;
        packet_seq_err, set_packet_seq_err: u32 @ 0x280, 0x20;
        implied_nak_seq_err, set_implied_nak_seq_err: u32 @ 0x2c0, 0x20;
        local_ack_timeout_err, set_local_ack_timeout_err: u32 @ 0x300, 0x20;
        req_rnr_retries_exceeded, set_req_rnr_retries_exceeded: u32 @ 0x380, 0x20;
        resp_local_length_error, set_resp_local_length_error: u32 @ 0x3c0, 0x20;
        req_local_length_error, set_req_local_length_error: u32 @ 0x3e0, 0x20;
        resp_local_qp_error, set_resp_local_qp_error: u32 @ 0x400, 0x20;
        local_operation_error, set_local_operation_error: u32 @ 0x420, 0x20;
        resp_local_protection, set_resp_local_protection: u32 @ 0x440, 0x20;
        req_local_protection, set_req_local_protection: u32 @ 0x460, 0x20;
        resp_cqe_error, set_resp_cqe_error: u32 @ 0x480, 0x20;
        req_cqe_error, set_req_cqe_error: u32 @ 0x4a0, 0x20;
        req_mw_binding, set_req_mw_binding: u32 @ 0x4c0, 0x20;
        req_bad_response, set_req_bad_response: u32 @ 0x4e0, 0x20;
        req_remote_invalid_request, set_req_remote_invalid_request: u32 @ 0x500, 0x20;
        resp_remote_invalid_request, set_resp_remote_invalid_request: u32 @ 0x520, 0x20;
        req_remote_access_errors, set_req_remote_access_errors: u32 @ 0x540, 0x20;
        resp_remote_access_errors, set_resp_remote_access_errors: u32 @ 0x560, 0x20;
        req_remote_operation_errors, set_req_remote_operation_errors: u32 @ 0x580, 0x20;
        req_transport_retries_exceeded, set_req_transport_retries_exceeded: u32 @ 0x5a0, 0x20;
        cq_overflow, set_cq_overflow: u32 @ 0x5c0, 0x20;
        resp_cqe_flush_error, set_resp_cqe_flush_error: u32 @ 0x5e0, 0x20;
        req_cqe_flush_error, set_req_cqe_flush_error: u32 @ 0x600, 0x20;
        roce_adp_retrans, set_roce_adp_retrans: u32 @ 0x640, 0x20;
        roce_adp_retrans_to, set_roce_adp_retrans_to: u32 @ 0x660, 0x20;
        roce_slow_restart, set_roce_slow_restart: u32 @ 0x680, 0x20;
        roce_slow_restart_cnps, set_roce_slow_restart_cnps: u32 @ 0x6a0, 0x20;
        roce_slow_restart_trans, set_roce_slow_restart_trans: u32 @ 0x6c0, 0x20;
    }

    /// PPCNT IEEE 802.3 counter group.
    pub struct Eth8023CntrsGrpDataLayout: Ifc "eth_802_3_cntrs_grp_data_layout", 0xf8 {
        a_frames_transmitted_ok_high, set_a_frames_transmitted_ok_high: u32 @ 0x000, 0x20;
        a_frames_transmitted_ok_low, set_a_frames_transmitted_ok_low: u32 @ 0x020, 0x20;
        a_frames_received_ok_high, set_a_frames_received_ok_high: u32 @ 0x040, 0x20;
        a_frames_received_ok_low, set_a_frames_received_ok_low: u32 @ 0x060, 0x20;
        a_frame_check_sequence_errors_high, set_a_frame_check_sequence_errors_high: u32 @ 0x080, 0x20;
        a_frame_check_sequence_errors_low, set_a_frame_check_sequence_errors_low: u32 @ 0x0a0, 0x20;
        a_alignment_errors_high, set_a_alignment_errors_high: u32 @ 0x0c0, 0x20;
        a_alignment_errors_low, set_a_alignment_errors_low: u32 @ 0x0e0, 0x20;
        a_octets_transmitted_ok_high, set_a_octets_transmitted_ok_high: u32 @ 0x100, 0x20;
        a_octets_transmitted_ok_low, set_a_octets_transmitted_ok_low: u32 @ 0x120, 0x20;
        a_octets_received_ok_high, set_a_octets_received_ok_high: u32 @ 0x140, 0x20;
        a_octets_received_ok_low, set_a_octets_received_ok_low: u32 @ 0x160, 0x20;
        a_multicast_frames_xmitted_ok_high, set_a_multicast_frames_xmitted_ok_high: u32 @ 0x180, 0x20;
        a_multicast_frames_xmitted_ok_low, set_a_multicast_frames_xmitted_ok_low: u32 @ 0x1a0, 0x20;
        a_broadcast_frames_xmitted_ok_high, set_a_broadcast_frames_xmitted_ok_high: u32 @ 0x1c0, 0x20;
        a_broadcast_frames_xmitted_ok_low, set_a_broadcast_frames_xmitted_ok_low: u32 @ 0x1e0, 0x20;
        a_multicast_frames_received_ok_high, set_a_multicast_frames_received_ok_high: u32 @ 0x200, 0x20;
        a_multicast_frames_received_ok_low, set_a_multicast_frames_received_ok_low: u32 @ 0x220, 0x20;
        a_broadcast_frames_received_ok_high, set_a_broadcast_frames_received_ok_high: u32 @ 0x240, 0x20;
        a_broadcast_frames_received_ok_low, set_a_broadcast_frames_received_ok_low: u32 @ 0x260, 0x20;
        a_in_range_length_errors_high, set_a_in_range_length_errors_high: u32 @ 0x280, 0x20;
        a_in_range_length_errors_low, set_a_in_range_length_errors_low: u32 @ 0x2a0, 0x20;
        a_out_of_range_length_field_high, set_a_out_of_range_length_field_high: u32 @ 0x2c0, 0x20;
        a_out_of_range_length_field_low, set_a_out_of_range_length_field_low: u32 @ 0x2e0, 0x20;
        a_frame_too_long_errors_high, set_a_frame_too_long_errors_high: u32 @ 0x300, 0x20;
        a_frame_too_long_errors_low, set_a_frame_too_long_errors_low: u32 @ 0x320, 0x20;
        a_symbol_error_during_carrier_high, set_a_symbol_error_during_carrier_high: u32 @ 0x340, 0x20;
        a_symbol_error_during_carrier_low, set_a_symbol_error_during_carrier_low: u32 @ 0x360, 0x20;
        a_mac_control_frames_transmitted_high, set_a_mac_control_frames_transmitted_high: u32 @ 0x380, 0x20;
        a_mac_control_frames_transmitted_low, set_a_mac_control_frames_transmitted_low: u32 @ 0x3a0, 0x20;
        a_mac_control_frames_received_high, set_a_mac_control_frames_received_high: u32 @ 0x3c0, 0x20;
        a_mac_control_frames_received_low, set_a_mac_control_frames_received_low: u32 @ 0x3e0, 0x20;
        a_unsupported_opcodes_received_high, set_a_unsupported_opcodes_received_high: u32 @ 0x400, 0x20;
        a_unsupported_opcodes_received_low, set_a_unsupported_opcodes_received_low: u32 @ 0x420, 0x20;
        a_pause_mac_ctrl_frames_received_high, set_a_pause_mac_ctrl_frames_received_high: u32 @ 0x440, 0x20;
        a_pause_mac_ctrl_frames_received_low, set_a_pause_mac_ctrl_frames_received_low: u32 @ 0x460, 0x20;
        a_pause_mac_ctrl_frames_transmitted_high, set_a_pause_mac_ctrl_frames_transmitted_high: u32 @ 0x480, 0x20;
        a_pause_mac_ctrl_frames_transmitted_low, set_a_pause_mac_ctrl_frames_transmitted_low: u32 @ 0x4a0, 0x20;
    }

    /// PPCNT RFC 2863 counter group.
    pub struct Eth2863CntrsGrpDataLayout: Ifc "eth_2863_cntrs_grp_data_layout", 0xf8 {
        if_in_octets_high, set_if_in_octets_high: u32 @ 0x000, 0x20;
        if_in_octets_low, set_if_in_octets_low: u32 @ 0x020, 0x20;
        if_in_ucast_pkts_high, set_if_in_ucast_pkts_high: u32 @ 0x040, 0x20;
        if_in_ucast_pkts_low, set_if_in_ucast_pkts_low: u32 @ 0x060, 0x20;
        if_in_discards_high, set_if_in_discards_high: u32 @ 0x080, 0x20;
        if_in_discards_low, set_if_in_discards_low: u32 @ 0x0a0, 0x20;
        if_in_errors_high, set_if_in_errors_high: u32 @ 0x0c0, 0x20;
        if_in_errors_low, set_if_in_errors_low: u32 @ 0x0e0, 0x20;
        if_in_unknown_protos_high, set_if_in_unknown_protos_high: u32 @ 0x100, 0x20;
        if_in_unknown_protos_low, set_if_in_unknown_protos_low: u32 @ 0x120, 0x20;
        if_out_octets_high, set_if_out_octets_high: u32 @ 0x140, 0x20;
        if_out_octets_low, set_if_out_octets_low: u32 @ 0x160, 0x20;
        if_out_ucast_pkts_high, set_if_out_ucast_pkts_high: u32 @ 0x180, 0x20;
        if_out_ucast_pkts_low, set_if_out_ucast_pkts_low: u32 @ 0x1a0, 0x20;
        if_out_discards_high, set_if_out_discards_high: u32 @ 0x1c0, 0x20;
        if_out_discards_low, set_if_out_discards_low: u32 @ 0x1e0, 0x20;
        if_out_errors_high, set_if_out_errors_high: u32 @ 0x200, 0x20;
        if_out_errors_low, set_if_out_errors_low: u32 @ 0x220, 0x20;
        if_in_multicast_pkts_high, set_if_in_multicast_pkts_high: u32 @ 0x240, 0x20;
        if_in_multicast_pkts_low, set_if_in_multicast_pkts_low: u32 @ 0x260, 0x20;
        if_in_broadcast_pkts_high, set_if_in_broadcast_pkts_high: u32 @ 0x280, 0x20;
        if_in_broadcast_pkts_low, set_if_in_broadcast_pkts_low: u32 @ 0x2a0, 0x20;
        if_out_multicast_pkts_high, set_if_out_multicast_pkts_high: u32 @ 0x2c0, 0x20;
        if_out_multicast_pkts_low, set_if_out_multicast_pkts_low: u32 @ 0x2e0, 0x20;
        if_out_broadcast_pkts_high, set_if_out_broadcast_pkts_high: u32 @ 0x300, 0x20;
        if_out_broadcast_pkts_low, set_if_out_broadcast_pkts_low: u32 @ 0x320, 0x20;
    }

    /// PPCNT RFC 2819 counter group.
    pub struct Eth2819CntrsGrpDataLayout: Ifc "eth_2819_cntrs_grp_data_layout", 0xf8 {
        ether_stats_drop_events_high, set_ether_stats_drop_events_high: u32 @ 0x000, 0x20;
        ether_stats_drop_events_low, set_ether_stats_drop_events_low: u32 @ 0x020, 0x20;
        ether_stats_octets_high, set_ether_stats_octets_high: u32 @ 0x040, 0x20;
        ether_stats_octets_low, set_ether_stats_octets_low: u32 @ 0x060, 0x20;
        ether_stats_pkts_high, set_ether_stats_pkts_high: u32 @ 0x080, 0x20;
        ether_stats_pkts_low, set_ether_stats_pkts_low: u32 @ 0x0a0, 0x20;
        ether_stats_broadcast_pkts_high, set_ether_stats_broadcast_pkts_high: u32 @ 0x0c0, 0x20;
        ether_stats_broadcast_pkts_low, set_ether_stats_broadcast_pkts_low: u32 @ 0x0e0, 0x20;
        ether_stats_multicast_pkts_high, set_ether_stats_multicast_pkts_high: u32 @ 0x100, 0x20;
        ether_stats_multicast_pkts_low, set_ether_stats_multicast_pkts_low: u32 @ 0x120, 0x20;
        ether_stats_crc_align_errors_high, set_ether_stats_crc_align_errors_high: u32 @ 0x140, 0x20;
        ether_stats_crc_align_errors_low, set_ether_stats_crc_align_errors_low: u32 @ 0x160, 0x20;
        ether_stats_undersize_pkts_high, set_ether_stats_undersize_pkts_high: u32 @ 0x180, 0x20;
        ether_stats_undersize_pkts_low, set_ether_stats_undersize_pkts_low: u32 @ 0x1a0, 0x20;
        ether_stats_oversize_pkts_high, set_ether_stats_oversize_pkts_high: u32 @ 0x1c0, 0x20;
        ether_stats_oversize_pkts_low, set_ether_stats_oversize_pkts_low: u32 @ 0x1e0, 0x20;
        ether_stats_fragments_high, set_ether_stats_fragments_high: u32 @ 0x200, 0x20;
        ether_stats_fragments_low, set_ether_stats_fragments_low: u32 @ 0x220, 0x20;
        ether_stats_jabbers_high, set_ether_stats_jabbers_high: u32 @ 0x240, 0x20;
        ether_stats_jabbers_low, set_ether_stats_jabbers_low: u32 @ 0x260, 0x20;
        ether_stats_collisions_high, set_ether_stats_collisions_high: u32 @ 0x280, 0x20;
        ether_stats_collisions_low, set_ether_stats_collisions_low: u32 @ 0x2a0, 0x20;
        ether_stats_pkts64octets_high, set_ether_stats_pkts64octets_high: u32 @ 0x2c0, 0x20;
        ether_stats_pkts64octets_low, set_ether_stats_pkts64octets_low: u32 @ 0x2e0, 0x20;
        ether_stats_pkts65to127octets_high, set_ether_stats_pkts65to127octets_high: u32 @ 0x300, 0x20;
        ether_stats_pkts65to127octets_low, set_ether_stats_pkts65to127octets_low: u32 @ 0x320, 0x20;
        ether_stats_pkts128to255octets_high, set_ether_stats_pkts128to255octets_high: u32 @ 0x340, 0x20;
        ether_stats_pkts128to255octets_low, set_ether_stats_pkts128to255octets_low: u32 @ 0x360, 0x20;
        ether_stats_pkts256to511octets_high, set_ether_stats_pkts256to511octets_high: u32 @ 0x380, 0x20;
        ether_stats_pkts256to511octets_low, set_ether_stats_pkts256to511octets_low: u32 @ 0x3a0, 0x20;
        ether_stats_pkts512to1023octets_high, set_ether_stats_pkts512to1023octets_high: u32 @ 0x3c0, 0x20;
        ether_stats_pkts512to1023octets_low, set_ether_stats_pkts512to1023octets_low: u32 @ 0x3e0, 0x20;
        ether_stats_pkts1024to1518octets_high, set_ether_stats_pkts1024to1518octets_high: u32 @ 0x400, 0x20;
        ether_stats_pkts1024to1518octets_low, set_ether_stats_pkts1024to1518octets_low: u32 @ 0x420, 0x20;
        ether_stats_pkts1519to2047octets_high, set_ether_stats_pkts1519to2047octets_high: u32 @ 0x440, 0x20;
        ether_stats_pkts1519to2047octets_low, set_ether_stats_pkts1519to2047octets_low: u32 @ 0x460, 0x20;
        ether_stats_pkts2048to4095octets_high, set_ether_stats_pkts2048to4095octets_high: u32 @ 0x480, 0x20;
        ether_stats_pkts2048to4095octets_low, set_ether_stats_pkts2048to4095octets_low: u32 @ 0x4a0, 0x20;
        ether_stats_pkts4096to8191octets_high, set_ether_stats_pkts4096to8191octets_high: u32 @ 0x4c0, 0x20;
        ether_stats_pkts4096to8191octets_low, set_ether_stats_pkts4096to8191octets_low: u32 @ 0x4e0, 0x20;
        ether_stats_pkts8192to10239octets_high, set_ether_stats_pkts8192to10239octets_high: u32 @ 0x500, 0x20;
        ether_stats_pkts8192to10239octets_low, set_ether_stats_pkts8192to10239octets_low: u32 @ 0x520, 0x20;
    }

    /// PPCNT Ethernet extended counter group.
    pub struct EthExtendedCntrsGrpDataLayout: Ifc "eth_extended_cntrs_grp_data_layout", 0xf8 {
        port_transmit_wait_high, set_port_transmit_wait_high: u32 @ 0x000, 0x20;
        port_transmit_wait_low, set_port_transmit_wait_low: u32 @ 0x020, 0x20;
        rx_buffer_almost_full_high, set_rx_buffer_almost_full_high: u32 @ 0x140, 0x20;
        rx_buffer_almost_full_low, set_rx_buffer_almost_full_low: u32 @ 0x160, 0x20;
        rx_buffer_full_high, set_rx_buffer_full_high: u32 @ 0x180, 0x20;
        rx_buffer_full_low, set_rx_buffer_full_low: u32 @ 0x1a0, 0x20;
        rx_icrc_encapsulated_high, set_rx_icrc_encapsulated_high: u32 @ 0x1c0, 0x20;
        rx_icrc_encapsulated_low, set_rx_icrc_encapsulated_low: u32 @ 0x1e0, 0x20;
    }

    /// PPCNT per-priority counter group.
    pub struct EthPerPrioGrpDataLayout: Ifc "eth_per_prio_grp_data_layout", 0xf8 {
        rx_octets_high, set_rx_octets_high: u32 @ 0x000, 0x20;
        rx_octets_low, set_rx_octets_low: u32 @ 0x020, 0x20;
        rx_frames_high, set_rx_frames_high: u32 @ 0x100, 0x20;
        rx_frames_low, set_rx_frames_low: u32 @ 0x120, 0x20;
        tx_octets_high, set_tx_octets_high: u32 @ 0x140, 0x20;
        tx_octets_low, set_tx_octets_low: u32 @ 0x160, 0x20;
        tx_frames_high, set_tx_frames_high: u32 @ 0x240, 0x20;
        tx_frames_low, set_tx_frames_low: u32 @ 0x260, 0x20;
        rx_pause_high, set_rx_pause_high: u32 @ 0x280, 0x20;
        rx_pause_low, set_rx_pause_low: u32 @ 0x2a0, 0x20;
        rx_pause_duration_high, set_rx_pause_duration_high: u32 @ 0x2c0, 0x20;
        rx_pause_duration_low, set_rx_pause_duration_low: u32 @ 0x2e0, 0x20;
        tx_pause_high, set_tx_pause_high: u32 @ 0x300, 0x20;
        tx_pause_low, set_tx_pause_low: u32 @ 0x320, 0x20;
        tx_pause_duration_high, set_tx_pause_duration_high: u32 @ 0x340, 0x20;
        tx_pause_duration_low, set_tx_pause_duration_low: u32 @ 0x360, 0x20;
        rx_pause_transition_high, set_rx_pause_transition_high: u32 @ 0x380, 0x20;
        rx_pause_transition_low, set_rx_pause_transition_low: u32 @ 0x3a0, 0x20;
        rx_discards_high, set_rx_discards_high: u32 @ 0x3c0, 0x20;
        rx_discards_low, set_rx_discards_low: u32 @ 0x3e0, 0x20;
        device_stall_minor_watermark_cnt_high, set_device_stall_minor_watermark_cnt_high: u32 @ 0x400, 0x20;
        device_stall_minor_watermark_cnt_low, set_device_stall_minor_watermark_cnt_low: u32 @ 0x420, 0x20;
        device_stall_critical_watermark_cnt_high, set_device_stall_critical_watermark_cnt_high: u32 @ 0x440, 0x20;
        device_stall_critical_watermark_cnt_low, set_device_stall_critical_watermark_cnt_low: u32 @ 0x460, 0x20;
    }

    /// PFCC, priority flow control configuration (register `PFCC`).
    pub struct PfccReg: Ifc "pfcc_reg", 0x20 {
        buf_ownership, set_buf_ownership: u32 @ 0x004, 0x2;
        local_port, set_local_port: u32 @ 0x008, 0x8;
        cable_length_mask, set_cable_length_mask: u32 @ 0x01a, 0x1;
        ppan_mask_n, set_ppan_mask_n: u32 @ 0x01b, 0x1;
        minor_stall_mask, set_minor_stall_mask: u32 @ 0x01c, 0x1;
        critical_stall_mask, set_critical_stall_mask: u32 @ 0x01d, 0x1;
        ppan, set_ppan: u32 @ 0x020, 0x4;
        prio_mask_tx, set_prio_mask_tx: u32 @ 0x028, 0x8;
        prio_mask_rx, set_prio_mask_rx: u32 @ 0x038, 0x8;
        pptx, set_pptx: u32 @ 0x040, 0x1;
        aptx, set_aptx: u32 @ 0x041, 0x1;
        pptx_mask_n, set_pptx_mask_n: u32 @ 0x042, 0x1;
        pfctx, set_pfctx: u32 @ 0x048, 0x8;
        pprx, set_pprx: u32 @ 0x060, 0x1;
        aprx, set_aprx: u32 @ 0x061, 0x1;
        pprx_mask_n, set_pprx_mask_n: u32 @ 0x062, 0x1;
        pfcrx, set_pfcrx: u32 @ 0x068, 0x8;
        device_stall_minor_watermark, set_device_stall_minor_watermark: u32 @ 0x080, 0x10;
        device_stall_critical_watermark, set_device_stall_critical_watermark: u32 @ 0x090, 0x10;
        cable_length, set_cable_length: u32 @ 0x0b8, 0x8;
    }

    /// Input of `ADD_VXLAN_UDP_DPORT`.
    pub struct AddVxlanUdpDportIn: Ifc "add_vxlan_udp_dport_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        vxlan_udp_port, set_vxlan_udp_port: u32 @ 0x070, 0x10;
    }

    /// Output of `ADD_VXLAN_UDP_DPORT`.
    pub struct AddVxlanUdpDportOut: Ifc "add_vxlan_udp_dport_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `DELETE_VXLAN_UDP_DPORT`.
    pub struct DeleteVxlanUdpDportIn: Ifc "delete_vxlan_udp_dport_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        vxlan_udp_port, set_vxlan_udp_port: u32 @ 0x070, 0x10;
    }

    /// Output of `DELETE_VXLAN_UDP_DPORT`.
    pub struct DeleteVxlanUdpDportOut: Ifc "delete_vxlan_udp_dport_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }
}

/// Writes the 64-bit counter `name` of a PPCNT group layout, stored as `name_high` followed by
/// `name_low` (`fields` is the layout's `FIELDS`); false if the layout has no such counter.
pub fn set_counter64(bytes: &mut [u8], fields: &[Field], name: &str, v: u64) -> bool {
    match fields
        .iter()
        .find(|f| f.0.strip_suffix("_high") == Some(name) && f.2 == 32)
    {
        Some(&(_, off, _)) if off % 32 == 0 && (off as usize / 8 + 8) <= bytes.len() => {
            crate::bits::set64(bytes, off, 64, v);
            true
        }
        _ => false,
    }
}

/// Reads the 64-bit counter `name` (see [`set_counter64`]).
pub fn counter64(bytes: &[u8], fields: &[Field], name: &str) -> Option<u64> {
    let &(_, off, _) = fields
        .iter()
        .find(|f| f.0.strip_suffix("_high") == Some(name) && f.2 == 32)?;
    crate::bits::read_any(bytes, off, 64)
}

/// The port counters mlx5e shows in `ethtool -S` (en_stats.c `pport_*_stats_desc`): per PPCNT
/// group, each counter's ethtool name and its field (a 64-bit `_high`/`_low` pair, read with
/// [`counter64`]).
pub mod pport {
    use super::{
        Eth2819CntrsGrpDataLayout,
        Eth2863CntrsGrpDataLayout,
        Eth8023CntrsGrpDataLayout,
        EthPerPrioGrpDataLayout,
        Field, //
    };
    use crate::regs::ppcnt_grp;

    /// One PPCNT group and the counters read from it.
    pub struct Group {
        /// The group code (`ppcnt_reg.grp`).
        pub grp: u8,
        /// The group layout's fields.
        pub fields: &'static [Field],
        /// `(ethtool name, field)` of each counter.
        pub counters: &'static [(&'static str, &'static str)],
    }

    /// The port-wide groups, in `ethtool -S` order.
    pub const GROUPS: &[Group] = &[
        Group {
            grp: ppcnt_grp::IEEE_802_3,
            fields: Eth8023CntrsGrpDataLayout::FIELDS,
            counters: &[
                ("tx_packets_phy", "a_frames_transmitted_ok"),
                ("rx_packets_phy", "a_frames_received_ok"),
                ("rx_crc_errors_phy", "a_frame_check_sequence_errors"),
                ("tx_bytes_phy", "a_octets_transmitted_ok"),
                ("rx_bytes_phy", "a_octets_received_ok"),
                ("tx_multicast_phy", "a_multicast_frames_xmitted_ok"),
                ("tx_broadcast_phy", "a_broadcast_frames_xmitted_ok"),
                ("rx_multicast_phy", "a_multicast_frames_received_ok"),
                ("rx_broadcast_phy", "a_broadcast_frames_received_ok"),
                ("rx_in_range_len_errors_phy", "a_in_range_length_errors"),
                ("rx_out_of_range_len_phy", "a_out_of_range_length_field"),
                ("rx_oversize_pkts_phy", "a_frame_too_long_errors"),
                ("rx_symbol_err_phy", "a_symbol_error_during_carrier"),
                ("tx_mac_control_phy", "a_mac_control_frames_transmitted"),
                ("rx_mac_control_phy", "a_mac_control_frames_received"),
                ("rx_unsupported_op_phy", "a_unsupported_opcodes_received"),
                ("rx_pause_ctrl_phy", "a_pause_mac_ctrl_frames_received"),
                ("tx_pause_ctrl_phy", "a_pause_mac_ctrl_frames_transmitted"),
            ],
        },
        Group {
            grp: ppcnt_grp::RFC_2863,
            fields: Eth2863CntrsGrpDataLayout::FIELDS,
            counters: &[
                ("rx_discards_phy", "if_in_discards"),
                ("tx_discards_phy", "if_out_discards"),
                ("tx_errors_phy", "if_out_errors"),
            ],
        },
        Group {
            grp: ppcnt_grp::RFC_2819,
            fields: Eth2819CntrsGrpDataLayout::FIELDS,
            counters: &[
                ("rx_undersize_pkts_phy", "ether_stats_undersize_pkts"),
                ("rx_fragments_phy", "ether_stats_fragments"),
                ("rx_jabbers_phy", "ether_stats_jabbers"),
                ("rx_64_bytes_phy", "ether_stats_pkts64octets"),
                ("rx_65_to_127_bytes_phy", "ether_stats_pkts65to127octets"),
                ("rx_128_to_255_bytes_phy", "ether_stats_pkts128to255octets"),
                ("rx_256_to_511_bytes_phy", "ether_stats_pkts256to511octets"),
                (
                    "rx_512_to_1023_bytes_phy",
                    "ether_stats_pkts512to1023octets",
                ),
                (
                    "rx_1024_to_1518_bytes_phy",
                    "ether_stats_pkts1024to1518octets",
                ),
                (
                    "rx_1519_to_2047_bytes_phy",
                    "ether_stats_pkts1519to2047octets",
                ),
                (
                    "rx_2048_to_4095_bytes_phy",
                    "ether_stats_pkts2048to4095octets",
                ),
                (
                    "rx_4096_to_8191_bytes_phy",
                    "ether_stats_pkts4096to8191octets",
                ),
                (
                    "rx_8192_to_10239_bytes_phy",
                    "ether_stats_pkts8192to10239octets",
                ),
            ],
        },
    ];

    /// The priorities of the per-priority group (`prio_tc` 0..=7).
    pub const PRIOS: u8 = 8;

    /// The per-priority group: `(direction, suffix, field)`; the ethtool name of priority `p`
    /// is `{direction}_prio{p}_{suffix}` (mlx5e's per-priority traffic and PFC counters).
    pub const PER_PRIO_GRP: u8 = ppcnt_grp::PER_PRIORITY;
    /// The per-priority group's fields.
    pub const PER_PRIO_FIELDS: &[Field] = EthPerPrioGrpDataLayout::FIELDS;
    /// The per-priority counters.
    pub const PER_PRIO: &[(&str, &str, &str)] = &[
        ("rx", "bytes", "rx_octets"),
        ("rx", "packets", "rx_frames"),
        ("rx", "discards", "rx_discards"),
        ("tx", "bytes", "tx_octets"),
        ("tx", "packets", "tx_frames"),
        ("rx", "pause", "rx_pause"),
        ("rx", "pause_duration", "rx_pause_duration"),
        ("tx", "pause", "tx_pause"),
        ("tx", "pause_duration", "tx_pause_duration"),
        ("rx", "pause_transition", "rx_pause_transition"),
    ];

    /// How many port counters `ethtool -S` shows.
    pub fn count() -> usize {
        GROUPS.iter().map(|g| g.counters.len()).sum::<usize>() + usize::from(PRIOS) * PER_PRIO.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // eth_802_3: a_frames_received_ok is the 64-bit pair at bit 0x40.
    #[test]
    fn ppcnt_counters_are_64_bit_high_low_pairs() {
        let mut g = Eth8023CntrsGrpDataLayout::new();
        assert!(set_counter64(
            &mut g.0,
            Eth8023CntrsGrpDataLayout::FIELDS,
            "a_frames_received_ok",
            0x1_0000_0002
        ));
        assert_eq!(g.a_frames_received_ok_high(), 1);
        assert_eq!(g.a_frames_received_ok_low(), 2);
        assert_eq!(&g.0[8..16], &[0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(
            counter64(
                &g.0,
                Eth8023CntrsGrpDataLayout::FIELDS,
                "a_frames_received_ok"
            ),
            Some(0x1_0000_0002)
        );
        assert!(!set_counter64(
            &mut g.0,
            Eth8023CntrsGrpDataLayout::FIELDS,
            "nope",
            1
        ));
    }

    // query_q_counter_out: out_of_buffer at bit 0x180 (byte 0x30).
    #[test]
    fn q_counter_out_of_buffer_sits_at_0x30() {
        let mut o = QueryQCounterOut::new();
        o.set_out_of_buffer(0x01020304);
        assert_eq!(&o.0[0x30..0x34], &[1, 2, 3, 4]);
        let mut i = AddVxlanUdpDportIn::new();
        i.set_vxlan_udp_port(4789);
        assert_eq!(&i.0[0xc..0x10], &[0, 0, 0x12, 0xb5]);
    }

    // Every port counter names a 64-bit pair of its group, and fits an ethtool string.
    #[test]
    fn pport_counters_resolve() {
        for g in pport::GROUPS {
            let bytes = [0u8; 0xf8];
            for &(name, field) in g.counters {
                assert!(
                    counter64(&bytes, g.fields, field).is_some(),
                    "{name}: {field}"
                );
                assert!(name.len() < 32, "{name}");
            }
        }
        for &(dir, suffix, field) in pport::PER_PRIO {
            assert!(
                counter64(&[0u8; 0xf8], pport::PER_PRIO_FIELDS, field).is_some(),
                "{field}"
            );
            assert!(dir.len() + "_prio7_".len() + suffix.len() < 32);
        }
        assert_eq!(pport::count(), 18 + 3 + 13 + 80);
    }
}
