// SPDX-License-Identifier: GPL-2.0
//! Dynamically connected targets (DC transport's responder object): the DCT context and
//! `CREATE_DCT`, `DESTROY_DCT`, `DRAIN_DCT`, `QUERY_DCT` and `ARM_DCT_FOR_KEY_VIOLATION`.
//!
//! A DCT is not a QP: mlx5_ib creates it (qp.c `mlx5_ib_modify_dct`) only at the INIT→RTR
//! transition of its `IB_QPT_DRIVER` QP, with one full [`Dctc`], and destroys it with
//! `DRAIN_DCT`, a wait for the `DCT_DRAINED` event, then `DESTROY_DCT` (qpc.c
//! `mlx5_core_destroy_dct`). The DC initiator (DCI) is a QP of service type
//! [`crate::qp::qpc_st::DCI`] whose send WQEs carry the DCT's number and access key in their
//! address vector ([`crate::wqe::rdma::Av`]).

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// DCT context: state, completion and receive resources, rights, access key, addressing.
    pub struct Dctc: Ifc "dctc", 0x40 {
        state, set_state: u32 @ 0x004, 0x4;
        dp_ordering_force, set_dp_ordering_force: u32 @ 0x027, 0x1;
        user_index, set_user_index: u32 @ 0x028, 0x18;
        cqn, set_cqn: u32 @ 0x048, 0x18;
        counter_set_id, set_counter_set_id: u32 @ 0x060, 0x8;
        atomic_mode, set_atomic_mode: u32 @ 0x068, 0x4;
        rre, set_rre: u32 @ 0x06c, 0x1;
        rwe, set_rwe: u32 @ 0x06d, 0x1;
        rae, set_rae: u32 @ 0x06e, 0x1;
        dp_ordering_1, set_dp_ordering_1: u32 @ 0x074, 0x1;
        cs_res, set_cs_res: u32 @ 0x088, 0x8;
        min_rnr_nak, set_min_rnr_nak: u32 @ 0x093, 0x5;
        srqn_xrqn, set_srqn_xrqn: u32 @ 0x0a8, 0x18;
        pd, set_pd: u32 @ 0x0c8, 0x18;
        tclass, set_tclass: u32 @ 0x0e0, 0x8;
        flow_label, set_flow_label: u32 @ 0x0ec, 0x14;
        dc_access_key, set_dc_access_key: u64 @ 0x100, 0x40;
        mtu, set_mtu: u32 @ 0x145, 0x3;
        port, set_port: u32 @ 0x148, 0x8;
        pkey_index, set_pkey_index: u32 @ 0x150, 0x10;
        my_addr_index, set_my_addr_index: u32 @ 0x168, 0x8;
        hop_limit, set_hop_limit: u32 @ 0x178, 0x8;
        dc_access_key_violation_count, set_dc_access_key_violation_count: u32 @ 0x180, 0x20;
        eth_prio, set_eth_prio: u32 @ 0x1b5, 0x3;
        ecn, set_ecn: u32 @ 0x1b8, 0x2;
        dscp, set_dscp: u32 @ 0x1ba, 0x6;
        ece, set_ece: u32 @ 0x1e0, 0x20;
    }

    /// Input of `CREATE_DCT`: the context (the DCT is created active, in the RTR sense).
    pub struct CreateDctIn: Ifc "create_dct_in", 0x80 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        dct_context_entry, dct_context_entry_mut: Dctc @ 0x080, 0x200;
    }

    /// Output of `CREATE_DCT`: the DCT number (in the QP number space).
    pub struct CreateDctOut: Ifc "create_dct_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        dctn, set_dctn: u32 @ 0x048, 0x18;
        ece, set_ece: u32 @ 0x060, 0x20;
    }

    /// Input of `DESTROY_DCT`.
    pub struct DestroyDctIn: Ifc "destroy_dct_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        dctn, set_dctn: u32 @ 0x048, 0x18;
    }

    /// Output of `DESTROY_DCT`.
    pub struct DestroyDctOut: Ifc "destroy_dct_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `DRAIN_DCT`: stop accepting new connections; `DCT_DRAINED` follows once the
    /// open ones are closed.
    pub struct DrainDctIn: Ifc "drain_dct_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        dctn, set_dctn: u32 @ 0x048, 0x18;
    }

    /// Output of `DRAIN_DCT`.
    pub struct DrainDctOut: Ifc "drain_dct_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_DCT`.
    pub struct QueryDctIn: Ifc "query_dct_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        dctn, set_dctn: u32 @ 0x048, 0x18;
    }

    /// Output of `QUERY_DCT`: the context as it is now (state, violation count).
    pub struct QueryDctOut: Ifc "query_dct_out", 0x80 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        dct_context_entry, dct_context_entry_mut: Dctc @ 0x080, 0x200;
    }

    /// Input of `ARM_DCT_FOR_KEY_VIOLATION`: the next access-key violation on the DCT raises
    /// one `DCT_KEY_VIOLATION` event.
    pub struct ArmDctIn: Ifc "arm_dct_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        dct_number, set_dct_number: u32 @ 0x048, 0x18;
    }

    /// Output of `ARM_DCT_FOR_KEY_VIOLATION`.
    pub struct ArmDctOut: Ifc "arm_dct_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }
}

/// DCT states (`dctc.state`; `MLX5_DCTC_STATE_*`).
pub mod dctc_state {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_DCTC_STATE_", dctc_state_name;
        ACTIVE = 0x0, "ACTIVE";
        DRAINING = 0x1, "DRAINING";
        DRAINED = 0x2, "DRAINED";
    }
}
