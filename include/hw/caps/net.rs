// SPDX-License-Identifier: GPL-2.0
//! Network capability pages: Ethernet offloads (`MLX5_CAP_ETHERNET_OFFLOADS`) and QoS
//! (`MLX5_CAP_QOS`). The RoCE page moved to [`super::roce`] and is re-exported here.

use crate::bits::ifc_layouts;

pub use super::roce::RoceCap;

ifc_layouts! {
    /// The Ethernet offload capabilities (`MLX5_CAP_ETHERNET_OFFLOADS`).
    pub struct PerProtocolNetworkingOffloadCaps: Ifc "per_protocol_networking_offload_caps", 0x100 {
        csum_cap, set_csum_cap: u32 @ 0x000, 0x1;
        vlan_cap, set_vlan_cap: u32 @ 0x001, 0x1;
        lro_cap, set_lro_cap: u32 @ 0x002, 0x1;
        lro_psh_flag, set_lro_psh_flag: u32 @ 0x003, 0x1;
        lro_time_stamp, set_lro_time_stamp: u32 @ 0x004, 0x1;
        wqe_vlan_insert, set_wqe_vlan_insert: u32 @ 0x007, 0x1;
        self_lb_en_modifiable, set_self_lb_en_modifiable: u32 @ 0x008, 0x1;
        max_lso_cap, set_max_lso_cap: u32 @ 0x00b, 0x5;
        multi_pkt_send_wqe, set_multi_pkt_send_wqe: u32 @ 0x010, 0x2;
        wqe_inline_mode, set_wqe_inline_mode: u32 @ 0x012, 0x2;
        rss_ind_tbl_cap, set_rss_ind_tbl_cap: u32 @ 0x014, 0x4;
        reg_umr_sq, set_reg_umr_sq: u32 @ 0x018, 0x1;
        scatter_fcs, set_scatter_fcs: u32 @ 0x019, 0x1;
        enhanced_multi_pkt_send_wqe, set_enhanced_multi_pkt_send_wqe: u32 @ 0x01a, 0x1;
        tunnel_lso_const_out_ip_id, set_tunnel_lso_const_out_ip_id: u32 @ 0x01b, 0x1;
        tunnel_lro_gre, set_tunnel_lro_gre: u32 @ 0x01c, 0x1;
        tunnel_lro_vxlan, set_tunnel_lro_vxlan: u32 @ 0x01d, 0x1;
        tunnel_stateless_gre, set_tunnel_stateless_gre: u32 @ 0x01e, 0x1;
        tunnel_stateless_vxlan, set_tunnel_stateless_vxlan: u32 @ 0x01f, 0x1;
        swp, set_swp: u32 @ 0x020, 0x1;
        swp_csum, set_swp_csum: u32 @ 0x021, 0x1;
        swp_lso, set_swp_lso: u32 @ 0x022, 0x1;
        cqe_checksum_full, set_cqe_checksum_full: u32 @ 0x023, 0x1;
        tunnel_stateless_geneve_tx, set_tunnel_stateless_geneve_tx: u32 @ 0x024, 0x1;
        tunnel_stateless_mpls_over_udp, set_tunnel_stateless_mpls_over_udp: u32 @ 0x025, 0x1;
        tunnel_stateless_mpls_over_gre, set_tunnel_stateless_mpls_over_gre: u32 @ 0x026, 0x1;
        tunnel_stateless_vxlan_gpe, set_tunnel_stateless_vxlan_gpe: u32 @ 0x027, 0x1;
        tunnel_stateless_ipv4_over_vxlan, set_tunnel_stateless_ipv4_over_vxlan: u32 @ 0x028, 0x1;
        tunnel_stateless_ip_over_ip, set_tunnel_stateless_ip_over_ip: u32 @ 0x029, 0x1;
        insert_trailer, set_insert_trailer: u32 @ 0x02a, 0x1;
        tunnel_stateless_ip_over_ip_rx, set_tunnel_stateless_ip_over_ip_rx: u32 @ 0x02c, 0x1;
        tunnel_stateless_ip_over_ip_tx, set_tunnel_stateless_ip_over_ip_tx: u32 @ 0x02d, 0x1;
        max_vxlan_udp_ports, set_max_vxlan_udp_ports: u32 @ 0x030, 0x8;
        swp_csum_l4_partial, set_swp_csum_l4_partial: u32 @ 0x038, 0x1;
        max_geneve_opt_len, set_max_geneve_opt_len: u32 @ 0x03e, 0x1;
        tunnel_stateless_geneve_rx, set_tunnel_stateless_geneve_rx: u32 @ 0x03f, 0x1;
        lro_min_mss_size, set_lro_min_mss_size: u32 @ 0x050, 0x10;
        lro_timer_supported_periods, set_lro_timer_supported_periods: array u32 @ 0x180, 0x80;
    }

    /// The QoS capabilities (`MLX5_CAP_QOS`), read by mlx5_core when `cmd_hca_cap.qos` is set
    /// (packet pacing, SQ and e-switch scheduling; DCB needs none of them).
    pub struct QosCap: Ifc "qos_cap", 0x100 {
        packet_pacing, set_packet_pacing: u32 @ 0x000, 0x1;
        esw_scheduling, set_esw_scheduling: u32 @ 0x001, 0x1;
        esw_bw_share, set_esw_bw_share: u32 @ 0x002, 0x1;
        esw_rate_limit, set_esw_rate_limit: u32 @ 0x003, 0x1;
        nic_sq_scheduling, set_nic_sq_scheduling: u32 @ 0x008, 0x1;
        nic_bw_share, set_nic_bw_share: u32 @ 0x009, 0x1;
        nic_rate_limit, set_nic_rate_limit: u32 @ 0x00a, 0x1;
        packet_pacing_max_rate, set_packet_pacing_max_rate: u32 @ 0x040, 0x20;
        packet_pacing_min_rate, set_packet_pacing_min_rate: u32 @ 0x060, 0x20;
        packet_pacing_rate_table_size, set_packet_pacing_rate_table_size: u32 @ 0x090, 0x10;
        max_tsar_bw_share, set_max_tsar_bw_share: u32 @ 0x0e0, 0x20;
    }
}

/// `wqe_inline_mode` of [`PerProtocolNetworkingOffloadCaps`] (`MLX5_CAP_INLINE_MODE_*`).
pub mod inline_mode {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_CAP_INLINE_MODE_", inline_mode_name;
        L2 = 0x0, "L2";
        VPORT_CONTEXT = 0x1, "VPORT_CONTEXT";
        NOT_REQUIRED = 0x2, "NOT_REQUIRED";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // mlx5_ifc.h: csum_cap is the MSB of the page, max_lso_cap 5 bits at bit 0xb,
    // wqe_inline_mode 2 bits at bit 0x12, rss_ind_tbl_cap 4 bits at bit 0x14.
    #[test]
    fn eth_caps_place_big_endian_bits() {
        let mut c = PerProtocolNetworkingOffloadCaps::new();
        c.set_csum_cap(1);
        c.set_max_lso_cap(16);
        c.set_wqe_inline_mode(inline_mode::NOT_REQUIRED.into());
        c.set_rss_ind_tbl_cap(11);
        assert_eq!(&c.0[..4], &[0x80, 0x10, 0x2b, 0x00]);
    }
}
