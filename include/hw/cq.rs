// SPDX-License-Identifier: GPL-2.0
//! Completion queues: the CQ context and commands. The CQ entries are in [`cqe`].

use crate::bits::ifc_layouts;

pub mod cqe;

ifc_layouts! {
    /// Completion queue context.
    pub struct Cqc: Ifc "cqc", 0x40 {
        status, set_status: u32 @ 0x000, 0x4;
        dbr_umem_valid, set_dbr_umem_valid: u32 @ 0x006, 0x1;
        apu_cq, set_apu_cq: u32 @ 0x007, 0x1;
        cqe_sz, set_cqe_sz: u32 @ 0x008, 0x3;
        cc, set_cc: u32 @ 0x00b, 0x1;
        scqe_break_moderation_en, set_scqe_break_moderation_en: u32 @ 0x00d, 0x1;
        oi, set_oi: u32 @ 0x00e, 0x1;
        cq_period_mode, set_cq_period_mode: u32 @ 0x00f, 0x2;
        cqe_comp_en, set_cqe_comp_en: u32 @ 0x011, 0x1;
        mini_cqe_res_format, set_mini_cqe_res_format: u32 @ 0x012, 0x2;
        st, set_st: u32 @ 0x014, 0x4;
        cqe_compression_layout, set_cqe_compression_layout: u32 @ 0x01e, 0x2;
        page_offset, set_page_offset: u32 @ 0x054, 0x6;
        log_cq_size, set_log_cq_size: u32 @ 0x063, 0x5;
        uar_page, set_uar_page: u32 @ 0x068, 0x18;
        cq_period, set_cq_period: u32 @ 0x084, 0xc;
        cq_max_count, set_cq_max_count: u32 @ 0x090, 0x10;
        c_eqn_or_apu_element, set_c_eqn_or_apu_element: u32 @ 0x0a0, 0x20;
        log_page_size, set_log_page_size: u32 @ 0x0c3, 0x5;
        last_notified_index, set_last_notified_index: u32 @ 0x108, 0x18;
        last_solicit_index, set_last_solicit_index: u32 @ 0x128, 0x18;
        consumer_counter, set_consumer_counter: u32 @ 0x148, 0x18;
        producer_counter, set_producer_counter: u32 @ 0x168, 0x18;
        dbr_addr, set_dbr_addr: u64 @ 0x1c0, 0x40;
    }

    /// Input of `CREATE_CQ`, followed by the CQ buffer page addresses (`pas[]`).
    pub struct CreateCqIn: Ifc "create_cq_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        cq_context, cq_context_mut: Cqc @ 0x080, 0x200;
        cq_umem_valid, set_cq_umem_valid: u32 @ 0x2e0, 0x1;
        pas, set_pas: tail u64 @ 0x880, 0x40;
    }

    /// Output of `CREATE_CQ`: the CQ number.
    pub struct CreateCqOut: Ifc "create_cq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        cqn, set_cqn: u32 @ 0x048, 0x18;
    }

    /// Input of `DESTROY_CQ`.
    pub struct DestroyCqIn: Ifc "destroy_cq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        cqn, set_cqn: u32 @ 0x048, 0x18;
    }

    /// Output of `DESTROY_CQ`.
    pub struct DestroyCqOut: Ifc "destroy_cq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_CQ`.
    pub struct QueryCqIn: Ifc "query_cq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        cqn, set_cqn: u32 @ 0x048, 0x18;
    }

    /// Output of `QUERY_CQ`.
    pub struct QueryCqOut: Ifc "query_cq_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        cq_context, cq_context_mut: Cqc @ 0x080, 0x200;
        pas, set_pas: tail u64 @ 0x880, 0x40;
    }

    /// Input of `MODIFY_CQ`; `op_mod` 0 modifies moderation, [`MODIFY_CQ_OP_MOD_RESIZE`] resizes.
    pub struct ModifyCqIn: Ifc "modify_cq_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        cqn, set_cqn: u32 @ 0x048, 0x18;
        /// A [`CqModifyFields`] or, when resizing, a [`CqResizeFields`] mask (a union in mlx5_ifc.h).
        modify_field_select_resize_field_select, set_modify_field_select_resize_field_select:
            u32 @ 0x060, 0x20;
        cq_context, cq_context_mut: Cqc @ 0x080, 0x200;
        cq_umem_valid, set_cq_umem_valid: u32 @ 0x2e0, 0x1;
        pas, set_pas: tail u64 @ 0x880, 0x40;
    }

    /// Output of `MODIFY_CQ`.
    pub struct ModifyCqOut: Ifc "modify_cq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }
}

/// `cqe_sz` of [`Cqc`] (cq.h `CQE_STRIDE_*`).
pub mod cqe_stride {
    use crate::bits::code_table;

    code_table! { u8, "CQE_STRIDE_", cqe_stride_name;
        S64 = 0, "64";
        S128 = 1, "128";
        S128_PAD = 2, "128_PAD";
    }
}

/// `op_mod` of `MODIFY_CQ` that resizes the CQ (`MLX5_CQ_OPMOD_RESIZE`, cq.h); 0 modifies
/// moderation.
pub const MODIFY_CQ_OP_MOD_RESIZE: u16 = 1;

bitflags::bitflags! {
    /// [`ModifyCqIn::modify_field_select_resize_field_select`] when `op_mod` is 0 (cq.h).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct CqModifyFields: u32 {
        /// `MLX5_CQ_MODIFY_PERIOD`.
        const PERIOD = 1 << 0;
        /// `MLX5_CQ_MODIFY_COUNT`.
        const COUNT = 1 << 1;
        /// `MLX5_CQ_MODIFY_OVERRUN`.
        const OVERRUN = 1 << 2;
        /// `MLX5_CQ_MODIFY_PERIOD_MODE`.
        const PERIOD_MODE = 1 << 4;
    }
}

bitflags::bitflags! {
    /// [`ModifyCqIn::modify_field_select_resize_field_select`] when resizing (cq.h).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct CqResizeFields: u32 {
        /// `MLX5_MODIFY_CQ_MASK_LOG_SIZE`.
        const LOG_SIZE = 1 << 0;
        /// `MLX5_MODIFY_CQ_MASK_PG_OFFSET`.
        const PG_OFFSET = 1 << 1;
        /// `MLX5_MODIFY_CQ_MASK_PG_SIZE`.
        const PG_SIZE = 1 << 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // cqc: cqe_sz 3 bits at 0x8, log_cq_size 5 bits at 0x63, uar_page 24 bits at 0x68,
    // c_eqn_or_apu_element 32 bits at 0xa0, dbr_addr 64 bits at 0x1c0.
    #[test]
    fn create_cq_places_the_context_at_byte_0x10() {
        let mut i = CreateCqIn::new();
        i.set_opcode(crate::opcode::CREATE_CQ.into());
        let c = i.cq_context_mut();
        c.set_cqe_sz(cqe_stride::S128.into());
        c.set_log_cq_size(10);
        c.set_uar_page(9);
        c.set_c_eqn_or_apu_element(3);
        c.set_dbr_addr(0x1234_5678_9abc_def0);
        assert_eq!(&i.0[..2], &[0x04, 0x00]);
        assert_eq!(i.0[0x10 + 1] >> 5, 1);
        assert_eq!(&i.0[0x10 + 0xc..0x10 + 0x10], &[0x0a, 0, 0, 9]);
        assert_eq!(&i.0[0x10 + 0x14..0x10 + 0x18], &[0, 0, 0, 3]);
        assert_eq!(
            &i.0[0x10 + 0x38..0x10 + 0x40],
            &[0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0]
        );
    }

    #[test]
    fn modify_cq_field_select_is_dword_3() {
        let mut i = ModifyCqIn::new();
        i.set_modify_field_select_resize_field_select(
            (CqModifyFields::PERIOD | CqModifyFields::COUNT).bits(),
        );
        assert_eq!(&i.0[0xc..0x10], &[0, 0, 0, 3]);
    }
}
