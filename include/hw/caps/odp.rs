// SPDX-License-Identifier: GPL-2.0
//! On-demand paging capabilities (`MLX5_CAP_ODP`, type 0x2): which operations of which
//! transport may meet a page that is not present and wait for the driver to resolve the
//! fault (the "transport page fault" scheme of ConnectX-4/5; the memory scheme is a later
//! card's). mlx5_core reads the page when `cmd_hca_cap.pg` is set and raises the SRQ, XRC and
//! DC bits to their maximum with `SET_HCA_CAP` (main.c `handle_hca_cap_odp`); mlx5_ib turns
//! them into `ib_odp_caps` (odp.c `internal_fill_odp_caps`).

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// The ODP capability page (`mlx5_ifc_odp_cap_bits`).
    pub struct OdpCap: Ifc "odp_cap", 0x100 {
        transport_page_fault_scheme_cap, transport_page_fault_scheme_cap_mut:
            OdpSchemeCap @ 0x000, 0x200;
        memory_page_fault_scheme_cap, memory_page_fault_scheme_cap_mut:
            OdpSchemeCap @ 0x200, 0x200;
        mem_page_fault, set_mem_page_fault: u32 @ 0x600, 0x1;
    }

    /// One page-fault scheme's capabilities (`mlx5_ifc_odp_scheme_cap_bits`).
    pub struct OdpSchemeCap: Ifc "odp_scheme_cap", 0x40 {
        sig, set_sig: u32 @ 0x040, 0x1;
        page_prefetch, set_page_prefetch: u32 @ 0x045, 0x1;
        rc_odp_caps, rc_odp_caps_mut: OdpPerTransportServiceCap @ 0x080, 0x20;
        uc_odp_caps, uc_odp_caps_mut: OdpPerTransportServiceCap @ 0x0a0, 0x20;
        ud_odp_caps, ud_odp_caps_mut: OdpPerTransportServiceCap @ 0x0c0, 0x20;
        xrc_odp_caps, xrc_odp_caps_mut: OdpPerTransportServiceCap @ 0x0e0, 0x20;
        dc_odp_caps, dc_odp_caps_mut: OdpPerTransportServiceCap @ 0x100, 0x20;
    }

    /// The operations of one transport that may page-fault
    /// (`mlx5_ifc_odp_per_transport_service_cap_bits`).
    pub struct OdpPerTransportServiceCap: Ifc "odp_per_transport_service_cap", 0x4 {
        send, set_send: u32 @ 0x000, 0x1;
        receive, set_receive: u32 @ 0x001, 0x1;
        write, set_write: u32 @ 0x002, 0x1;
        read, set_read: u32 @ 0x003, 0x1;
        atomic, set_atomic: u32 @ 0x004, 0x1;
        srq_receive, set_srq_receive: u32 @ 0x005, 0x1;
    }
}
