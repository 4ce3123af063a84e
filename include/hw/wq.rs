// SPDX-License-Identifier: GPL-2.0
//! Work queues: the `wq` description shared by send and receive queues, the SQ and RQ
//! contexts, and the SQ/RQ commands (CREATE/MODIFY/QUERY/DESTROY). A CREATE input carries the
//! ring's page addresses after its fixed part ([`CreateSqIn::wq_pas`], [`CreateRqIn::wq_pas`]).

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// Work queue description shared by SQs and RQs: type, stride, size, PD, doorbell record; the ring page addresses (`pas[]`) follow it.
    pub struct Wq: Ifc "wq", 0xc0 {
        wq_type, set_wq_type: u32 @ 0x000, 0x4;
        wq_signature, set_wq_signature: u32 @ 0x004, 0x1;
        end_padding_mode, set_end_padding_mode: u32 @ 0x005, 0x2;
        cd_slave, set_cd_slave: u32 @ 0x007, 0x1;
        hds_skip_first_sge, set_hds_skip_first_sge: u32 @ 0x020, 0x1;
        log2_hds_buf_size, set_log2_hds_buf_size: u32 @ 0x021, 0x3;
        page_offset, set_page_offset: u32 @ 0x02b, 0x5;
        lwm, set_lwm: u32 @ 0x030, 0x10;
        pd, set_pd: u32 @ 0x048, 0x18;
        uar_page, set_uar_page: u32 @ 0x068, 0x18;
        dbr_addr, set_dbr_addr: u64 @ 0x080, 0x40;
        hw_counter, set_hw_counter: u32 @ 0x0c0, 0x20;
        sw_counter, set_sw_counter: u32 @ 0x0e0, 0x20;
        log_wq_stride, set_log_wq_stride: u32 @ 0x10c, 0x4;
        log_wq_pg_sz, set_log_wq_pg_sz: u32 @ 0x113, 0x5;
        log_wq_sz, set_log_wq_sz: u32 @ 0x11b, 0x5;
        dbr_umem_valid, set_dbr_umem_valid: u32 @ 0x120, 0x1;
        wq_umem_valid, set_wq_umem_valid: u32 @ 0x121, 0x1;
        log_hairpin_num_packets, set_log_hairpin_num_packets: u32 @ 0x123, 0x5;
        log_hairpin_data_sz, set_log_hairpin_data_sz: u32 @ 0x12b, 0x5;
        log_wqe_num_of_strides, set_log_wqe_num_of_strides: u32 @ 0x134, 0x4;
        two_byte_shift_en, set_two_byte_shift_en: u32 @ 0x138, 0x1;
        log_wqe_stride_size, set_log_wqe_stride_size: u32 @ 0x13d, 0x3;
        dbr_umem_id, set_dbr_umem_id: u32 @ 0x140, 0x20;
        wq_umem_id, set_wq_umem_id: u32 @ 0x160, 0x20;
        wq_umem_offset, set_wq_umem_offset: u64 @ 0x180, 0x40;
        headers_mkey, set_headers_mkey: u32 @ 0x1c0, 0x20;
        shampo_enable, set_shampo_enable: u32 @ 0x1e0, 0x1;
        shampo_mode, set_shampo_mode: u32 @ 0x1e2, 0x2;
        log_reservation_size, set_log_reservation_size: u32 @ 0x1e5, 0x3;
        log_max_num_of_packets_per_reservation, set_log_max_num_of_packets_per_reservation: u32 @ 0x1ed, 0x3;
        log_headers_entry_size, set_log_headers_entry_size: u32 @ 0x1f6, 0x2;
        log_headers_buffer_entry_num, set_log_headers_buffer_entry_num: u32 @ 0x1fc, 0x4;
        pas, set_pas: tail u64 @ 0x600, 0x40;
    }

    /// Send queue context; the [`Wq`] is its last member.
    pub struct Sqc: Ifc "sqc", 0xf0 {
        rlky, set_rlky: u32 @ 0x000, 0x1;
        cd_master, set_cd_master: u32 @ 0x001, 0x1;
        fre, set_fre: u32 @ 0x002, 0x1;
        flush_in_error_en, set_flush_in_error_en: u32 @ 0x003, 0x1;
        allow_multi_pkt_send_wqe, set_allow_multi_pkt_send_wqe: u32 @ 0x004, 0x1;
        min_wqe_inline_mode, set_min_wqe_inline_mode: u32 @ 0x005, 0x3;
        state, set_state: u32 @ 0x008, 0x4;
        reg_umr, set_reg_umr: u32 @ 0x00c, 0x1;
        allow_swp, set_allow_swp: u32 @ 0x00d, 0x1;
        hairpin, set_hairpin: u32 @ 0x00e, 0x1;
        non_wire, set_non_wire: u32 @ 0x00f, 0x1;
        ts_format, set_ts_format: u32 @ 0x01a, 0x2;
        user_index, set_user_index: u32 @ 0x028, 0x18;
        cqn, set_cqn: u32 @ 0x048, 0x18;
        hairpin_peer_rq, set_hairpin_peer_rq: u32 @ 0x068, 0x18;
        hairpin_peer_vhca, set_hairpin_peer_vhca: u32 @ 0x090, 0x10;
        ts_cqe_to_dest_cqn, set_ts_cqe_to_dest_cqn: u32 @ 0x0c8, 0x18;
        packet_pacing_rate_limit_index, set_packet_pacing_rate_limit_index: u32 @ 0x0f0, 0x10;
        tis_lst_sz, set_tis_lst_sz: u32 @ 0x100, 0x10;
        qos_queue_group_id, set_qos_queue_group_id: u32 @ 0x110, 0x10;
        tis_num_0, set_tis_num_0: u32 @ 0x168, 0x18;
        wq, wq_mut: Wq @ 0x180, 0x600;
    }

    /// Receive queue context; the [`Wq`] is its last member.
    pub struct Rqc: Ifc "rqc", 0xf0 {
        rlky, set_rlky: u32 @ 0x000, 0x1;
        delay_drop_en, set_delay_drop_en: u32 @ 0x001, 0x1;
        scatter_fcs, set_scatter_fcs: u32 @ 0x002, 0x1;
        vsd, set_vsd: u32 @ 0x003, 0x1;
        mem_rq_type, set_mem_rq_type: u32 @ 0x004, 0x4;
        state, set_state: u32 @ 0x008, 0x4;
        flush_in_error_en, set_flush_in_error_en: u32 @ 0x00d, 0x1;
        hairpin, set_hairpin: u32 @ 0x00e, 0x1;
        ts_format, set_ts_format: u32 @ 0x01a, 0x2;
        user_index, set_user_index: u32 @ 0x028, 0x18;
        cqn, set_cqn: u32 @ 0x048, 0x18;
        counter_set_id, set_counter_set_id: u32 @ 0x060, 0x8;
        rmpn, set_rmpn: u32 @ 0x088, 0x18;
        hairpin_peer_sq, set_hairpin_peer_sq: u32 @ 0x0a8, 0x18;
        hairpin_peer_vhca, set_hairpin_peer_vhca: u32 @ 0x0d0, 0x10;
        shampo_no_match_alignment_granularity, set_shampo_no_match_alignment_granularity: u32 @ 0x126, 0x2;
        shampo_match_criteria_type, set_shampo_match_criteria_type: u32 @ 0x12e, 0x2;
        reservation_timeout, set_reservation_timeout: u32 @ 0x130, 0x10;
        wq, wq_mut: Wq @ 0x180, 0x600;
    }

    /// Input of `CREATE_SQ`.
    pub struct CreateSqIn: Ifc "create_sq_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        ctx, ctx_mut: Sqc @ 0x100, 0x780;
    }

    /// Output of `CREATE_SQ`.
    pub struct CreateSqOut: Ifc "create_sq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        sqn, set_sqn: u32 @ 0x048, 0x18;
    }

    /// Input of `MODIFY_SQ`.
    pub struct ModifySqIn: Ifc "modify_sq_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        sq_state, set_sq_state: u32 @ 0x040, 0x4;
        sqn, set_sqn: u32 @ 0x048, 0x18;
        modify_bitmask, set_modify_bitmask: u64 @ 0x080, 0x40;
        ctx, ctx_mut: Sqc @ 0x100, 0x780;
    }

    /// Output of `MODIFY_SQ`.
    pub struct ModifySqOut: Ifc "modify_sq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `DESTROY_SQ`.
    pub struct DestroySqIn: Ifc "destroy_sq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        sqn, set_sqn: u32 @ 0x048, 0x18;
    }

    /// Output of `DESTROY_SQ`.
    pub struct DestroySqOut: Ifc "destroy_sq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_SQ`.
    pub struct QuerySqIn: Ifc "query_sq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        sqn, set_sqn: u32 @ 0x048, 0x18;
    }

    /// Output of `QUERY_SQ`.
    pub struct QuerySqOut: Ifc "query_sq_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        sq_context, sq_context_mut: Sqc @ 0x100, 0x780;
    }

    /// Input of `CREATE_RQ`.
    pub struct CreateRqIn: Ifc "create_rq_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        ctx, ctx_mut: Rqc @ 0x100, 0x780;
    }

    /// Output of `CREATE_RQ`.
    pub struct CreateRqOut: Ifc "create_rq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        rqn, set_rqn: u32 @ 0x048, 0x18;
    }

    /// Input of `MODIFY_RQ`.
    pub struct ModifyRqIn: Ifc "modify_rq_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        rq_state, set_rq_state: u32 @ 0x040, 0x4;
        rqn, set_rqn: u32 @ 0x048, 0x18;
        modify_bitmask, set_modify_bitmask: u64 @ 0x080, 0x40;
        ctx, ctx_mut: Rqc @ 0x100, 0x780;
    }

    /// Output of `MODIFY_RQ`.
    pub struct ModifyRqOut: Ifc "modify_rq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `DESTROY_RQ`.
    pub struct DestroyRqIn: Ifc "destroy_rq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        rqn, set_rqn: u32 @ 0x048, 0x18;
    }

    /// Output of `DESTROY_RQ`.
    pub struct DestroyRqOut: Ifc "destroy_rq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_RQ`.
    pub struct QueryRqIn: Ifc "query_rq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        rqn, set_rqn: u32 @ 0x048, 0x18;
    }

    /// Output of `QUERY_RQ`.
    pub struct QueryRqOut: Ifc "query_rq_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        rq_context, rq_context_mut: Rqc @ 0x100, 0x780;
    }
}

/// SQ states (`sqc.state`, `modify_sq_in.sq_state`).
pub mod sqc_state {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_SQC_STATE_", sqc_state_name;
        RST = 0x0, "RST";
        RDY = 0x1, "RDY";
        ERR = 0x3, "ERR";
    }
}

/// RQ states (`rqc.state`, `modify_rq_in.rq_state`).
pub mod rqc_state {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_RQC_STATE_", rqc_state_name;
        RST = 0x0, "RST";
        RDY = 0x1, "RDY";
        ERR = 0x3, "ERR";
    }
}

/// `wq.wq_type`.
pub mod wq_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_WQ_TYPE_", wq_type_name;
        LINKED_LIST = 0x0, "LINKED_LIST";
        CYCLIC = 0x1, "CYCLIC";
        LINKED_LIST_STRIDING_RQ = 0x2, "LINKED_LIST_STRIDING_RQ";
        CYCLIC_STRIDING_RQ = 0x3, "CYCLIC_STRIDING_RQ";
    }
}

/// `sqc.min_wqe_inline_mode` and the vport context's minimum inline mode (device.h).
pub mod inline_mode {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_INLINE_MODE_", inline_mode_name;
        NONE = 0x0, "NONE";
        L2 = 0x1, "L2";
        IP = 0x2, "IP";
        TCP_UDP = 0x3, "TCP_UDP";
    }
}

/// `modify_rq_in.modify_bitmask`: the RQ fields a `MODIFY_RQ` changes besides the state.
pub const MODIFY_RQ_BITMASK_VSD: u64 = 1 << 1;
/// See [`MODIFY_RQ_BITMASK_VSD`].
pub const MODIFY_RQ_BITMASK_SCATTER_FCS: u64 = 1 << 2;
/// See [`MODIFY_RQ_BITMASK_VSD`].
pub const MODIFY_RQ_BITMASK_RQ_COUNTER_SET_ID: u64 = 1 << 3;

/// Byte offset of the `wq` inside a CREATE_SQ/CREATE_RQ input (ctx at 0x20, wq at +0x30).
const CREATE_WQ_OFFSET: usize = 0x20 + 0x30;

impl CreateSqIn {
    /// Ring page address `i` (the `wq.pas[]` after the fixed part) of a whole CREATE_SQ
    /// message.
    pub fn wq_pas(msg: &[u8], i: usize) -> Option<u64> {
        Wq::pas(msg.get(CREATE_WQ_OFFSET..)?, i)
    }

    /// Writes ring page address `i` of a whole CREATE_SQ message.
    pub fn set_wq_pas(msg: &mut [u8], i: usize, pa: u64) -> Result<(), crate::bits::OutOfBounds> {
        let wq = msg
            .get_mut(CREATE_WQ_OFFSET..)
            .ok_or(crate::bits::OutOfBounds)?;
        Wq::set_pas(wq, i, pa)
    }
}

impl CreateRqIn {
    /// Ring page address `i` (the `wq.pas[]` after the fixed part) of a whole CREATE_RQ
    /// message.
    pub fn wq_pas(msg: &[u8], i: usize) -> Option<u64> {
        Wq::pas(msg.get(CREATE_WQ_OFFSET..)?, i)
    }

    /// Writes ring page address `i` of a whole CREATE_RQ message.
    pub fn set_wq_pas(msg: &mut [u8], i: usize, pa: u64) -> Result<(), crate::bits::OutOfBounds> {
        let wq = msg
            .get_mut(CREATE_WQ_OFFSET..)
            .ok_or(crate::bits::OutOfBounds)?;
        Wq::set_pas(wq, i, pa)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // create_sq_in: ctx (sqc) at bit 0x100, sqc.wq at +0x180, wq.pas[] at the end (0x110).
    #[test]
    fn create_sq_places_context_wq_and_pas() {
        let mut msg = [0u8; CreateSqIn::SIZE + 16];
        {
            let (i, _) =
                <CreateSqIn as zerocopy::FromBytes>::mut_from_prefix(&mut msg[..]).unwrap();
            i.set_opcode(crate::opcode::CREATE_SQ.into());
            let c = i.ctx_mut();
            c.set_state(sqc_state::RST.into());
            c.set_cqn(0x12_3456);
            c.set_tis_lst_sz(1);
            c.set_tis_num_0(0xab);
            c.wq_mut().set_log_wq_sz(10);
            c.wq_mut().set_dbr_addr(0x1122_3344_5566_7788);
        }
        CreateSqIn::set_wq_pas(&mut msg, 1, 0xdead_b000).unwrap();
        assert_eq!(&msg[..2], &[0x09, 0x04]);
        assert_eq!(&msg[0x28..0x2c], &[0, 0x12, 0x34, 0x56]);
        assert_eq!(&msg[0x40..0x42], &[0, 1]);
        assert_eq!(&msg[0x4c..0x50], &[0, 0, 0, 0xab]);
        assert_eq!(
            &msg[0x60..0x68],
            &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(msg[0x50 + 0x23] & 0x1f, 10);
        assert_eq!(CreateSqIn::wq_pas(&msg, 1), Some(0xdead_b000));
        assert_eq!(CreateSqIn::wq_pas(&msg, 2), None);
    }

    // modify_rq_in: rq_state 4 bits at 0x40, rqn at 0x48, bitmask 64 bits at 0x80, ctx at 0x100.
    #[test]
    fn modify_rq_places_states_and_bitmask() {
        let mut i = ModifyRqIn::new();
        i.set_rq_state(rqc_state::RDY.into());
        i.set_rqn(0x42);
        i.set_modify_bitmask(MODIFY_RQ_BITMASK_VSD);
        i.ctx_mut().set_state(rqc_state::ERR.into());
        i.ctx_mut().set_vsd(1);
        assert_eq!(&i.0[8..12], &[0x10, 0, 0, 0x42]);
        assert_eq!(i.0[0x17], 0x02);
        assert_eq!(i.0[0x20], 0x10);
        assert_eq!(i.0[0x21], 0x30);
    }
}
