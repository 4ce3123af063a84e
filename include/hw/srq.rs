// SPDX-License-Identifier: GPL-2.0
//! Shared receive queues: the SRQ, XRC SRQ and RMP contexts and their commands.
//!
//! mlx5_core creates an ib SRQ as an RMP (`CREATE_RMP`, ISSI 1) unless it is an XRC SRQ
//! (`CREATE_XRC_SRQ`); the ISSI 0 SRQ commands (`CREATE_SRQ` …) remain for old firmware. The
//! SRQ and XRC SRQ inputs carry their buffer's page list after the fixed part; an RMP carries
//! it in its [`Wq`], like an RQ. A receive WQE of an SRQ starts with a
//! [`crate::wqe::rdma::WqeSrqNextSeg`].

use crate::bits::ifc_layouts;
use crate::wq::Wq;

ifc_layouts! {
    /// Shared receive queue context (ISSI 0 SRQ object): size, stride, PD, CQ, doorbell record and
    /// limit.
    pub struct Srqc: Ifc "srqc", 0x40 {
        state, set_state: u32 @ 0x000, 0x4;
        log_srq_size, set_log_srq_size: u32 @ 0x004, 0x4;
        wq_signature, set_wq_signature: u32 @ 0x020, 0x1;
        cont_srq, set_cont_srq: u32 @ 0x021, 0x1;
        rlky, set_rlky: u32 @ 0x023, 0x1;
        log_rq_stride, set_log_rq_stride: u32 @ 0x025, 0x3;
        xrcd, set_xrcd: u32 @ 0x028, 0x18;
        page_offset, set_page_offset: u32 @ 0x040, 0x6;
        cqn, set_cqn: u32 @ 0x048, 0x18;
        log_page_size, set_log_page_size: u32 @ 0x082, 0x6;
        pd, set_pd: u32 @ 0x0c8, 0x18;
        lwm, set_lwm: u32 @ 0x0e0, 0x10;
        wqe_cnt, set_wqe_cnt: u32 @ 0x0f0, 0x10;
        dbr_addr, set_dbr_addr: u64 @ 0x140, 0x40;
    }

    /// XRC shared receive queue context: an [`Srqc`] with the XRC domain and user index.
    pub struct XrcSrqc: Ifc "xrc_srqc", 0x40 {
        state, set_state: u32 @ 0x000, 0x4;
        log_xrc_srq_size, set_log_xrc_srq_size: u32 @ 0x004, 0x4;
        wq_signature, set_wq_signature: u32 @ 0x020, 0x1;
        cont_srq, set_cont_srq: u32 @ 0x021, 0x1;
        rlky, set_rlky: u32 @ 0x023, 0x1;
        basic_cyclic_rcv_wqe, set_basic_cyclic_rcv_wqe: u32 @ 0x024, 0x1;
        log_rq_stride, set_log_rq_stride: u32 @ 0x025, 0x3;
        xrcd, set_xrcd: u32 @ 0x028, 0x18;
        page_offset, set_page_offset: u32 @ 0x040, 0x6;
        dbr_umem_valid, set_dbr_umem_valid: u32 @ 0x047, 0x1;
        cqn, set_cqn: u32 @ 0x048, 0x18;
        user_index_equal_xrc_srqn, set_user_index_equal_xrc_srqn: u32 @ 0x080, 0x1;
        log_page_size, set_log_page_size: u32 @ 0x082, 0x6;
        user_index, set_user_index: u32 @ 0x088, 0x18;
        pd, set_pd: u32 @ 0x0c8, 0x18;
        lwm, set_lwm: u32 @ 0x0e0, 0x10;
        wqe_cnt, set_wqe_cnt: u32 @ 0x0f0, 0x10;
        db_record_addr_h, set_db_record_addr_h: u32 @ 0x140, 0x20;
        db_record_addr_l, set_db_record_addr_l: u32 @ 0x160, 0x1e;
    }

    /// Receive memory pool context (the ISSI 1 form of an SRQ): state and the [`Wq`] of its buffer.
    pub struct Rmpc: Ifc "rmpc", 0xf0 {
        state, set_state: u32 @ 0x008, 0x4;
        basic_cyclic_rcv_wqe, set_basic_cyclic_rcv_wqe: u32 @ 0x020, 0x1;
        wq, wq_mut: Wq @ 0x180, 0x600;
    }

    /// `modify_rmp_in.bitmask`: the RMP fields a `MODIFY_RMP` changes besides the state.
    pub struct RmpBitmask: Ifc "rmp_bitmask", 0x8 {
        lwm, set_lwm: u32 @ 0x03f, 0x1;
    }

    /// Input of `CREATE_RMP`; the page list (`ctx.wq.pas[]`) follows, see [`CreateRmpIn::wq_pas`].
    pub struct CreateRmpIn: Ifc "create_rmp_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        ctx, ctx_mut: Rmpc @ 0x100, 0x780;
    }

    /// Output of `CREATE_RMP`: the RMP number.
    pub struct CreateRmpOut: Ifc "create_rmp_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        rmpn, set_rmpn: u32 @ 0x048, 0x18;
    }

    /// Input of `MODIFY_RMP` (state change, or the limit `lwm` under [`RmpBitmask`]).
    pub struct ModifyRmpIn: Ifc "modify_rmp_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        rmp_state, set_rmp_state: u32 @ 0x040, 0x4;
        rmpn, set_rmpn: u32 @ 0x048, 0x18;
        bitmask, bitmask_mut: RmpBitmask @ 0x080, 0x40;
        ctx, ctx_mut: Rmpc @ 0x100, 0x780;
    }

    /// Output of `MODIFY_RMP`.
    pub struct ModifyRmpOut: Ifc "modify_rmp_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_RMP`.
    pub struct QueryRmpIn: Ifc "query_rmp_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        rmpn, set_rmpn: u32 @ 0x048, 0x18;
    }

    /// Output of `QUERY_RMP`.
    pub struct QueryRmpOut: Ifc "query_rmp_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        rmp_context, rmp_context_mut: Rmpc @ 0x100, 0x780;
    }

    /// Input of `DESTROY_RMP`.
    pub struct DestroyRmpIn: Ifc "destroy_rmp_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        rmpn, set_rmpn: u32 @ 0x048, 0x18;
    }

    /// Output of `DESTROY_RMP`.
    pub struct DestroyRmpOut: Ifc "destroy_rmp_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `CREATE_SRQ`, followed by the SRQ buffer page list (`pas[]`).
    pub struct CreateSrqIn: Ifc "create_srq_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        srq_context_entry, srq_context_entry_mut: Srqc @ 0x080, 0x200;
        pas, set_pas: tail u64 @ 0x880, 0x40;
    }

    /// Output of `CREATE_SRQ`: the SRQ number.
    pub struct CreateSrqOut: Ifc "create_srq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        srqn, set_srqn: u32 @ 0x048, 0x18;
    }

    /// Input of `DESTROY_SRQ`.
    pub struct DestroySrqIn: Ifc "destroy_srq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        srqn, set_srqn: u32 @ 0x048, 0x18;
    }

    /// Output of `DESTROY_SRQ`.
    pub struct DestroySrqOut: Ifc "destroy_srq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_SRQ`.
    pub struct QuerySrqIn: Ifc "query_srq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        srqn, set_srqn: u32 @ 0x048, 0x18;
    }

    /// Output of `QUERY_SRQ`, followed by the page list (`pas[]`).
    pub struct QuerySrqOut: Ifc "query_srq_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        srq_context_entry, srq_context_entry_mut: Srqc @ 0x080, 0x200;
        pas, set_pas: tail u64 @ 0x880, 0x40;
    }

    /// Input of `ARM_RQ`: arm the limit event of an SRQ (`op_mod` [`arm_rq_op_mod::SRQ`]) at `lwm`
    /// WQEs.
    pub struct ArmRqIn: Ifc "arm_rq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        srq_number, set_srq_number: u32 @ 0x048, 0x18;
        lwm, set_lwm: u32 @ 0x070, 0x10;
    }

    /// Output of `ARM_RQ`.
    pub struct ArmRqOut: Ifc "arm_rq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `CREATE_XRC_SRQ`, followed by the page list (`pas[]`).
    pub struct CreateXrcSrqIn: Ifc "create_xrc_srq_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        xrc_srq_context_entry, xrc_srq_context_entry_mut: XrcSrqc @ 0x080, 0x200;
        xrc_srq_umem_valid, set_xrc_srq_umem_valid: u32 @ 0x2e0, 0x1;
        pas, set_pas: tail u64 @ 0x880, 0x40;
    }

    /// Output of `CREATE_XRC_SRQ`: the XRC SRQ number.
    pub struct CreateXrcSrqOut: Ifc "create_xrc_srq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        xrc_srqn, set_xrc_srqn: u32 @ 0x048, 0x18;
    }

    /// Input of `DESTROY_XRC_SRQ`.
    pub struct DestroyXrcSrqIn: Ifc "destroy_xrc_srq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        xrc_srqn, set_xrc_srqn: u32 @ 0x048, 0x18;
    }

    /// Output of `DESTROY_XRC_SRQ`.
    pub struct DestroyXrcSrqOut: Ifc "destroy_xrc_srq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_XRC_SRQ`.
    pub struct QueryXrcSrqIn: Ifc "query_xrc_srq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        xrc_srqn, set_xrc_srqn: u32 @ 0x048, 0x18;
    }

    /// Output of `QUERY_XRC_SRQ`, followed by the page list (`pas[]`).
    pub struct QueryXrcSrqOut: Ifc "query_xrc_srq_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        xrc_srq_context_entry, xrc_srq_context_entry_mut: XrcSrqc @ 0x080, 0x200;
        pas, set_pas: tail u64 @ 0x880, 0x40;
    }

    /// Input of `ARM_XRC_SRQ`: arm the limit event at `lwm` WQEs (`op_mod`
    /// [`ARM_XRC_SRQ_OP_MOD_XRC_SRQ`]).
    pub struct ArmXrcSrqIn: Ifc "arm_xrc_srq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        xrc_srqn, set_xrc_srqn: u32 @ 0x048, 0x18;
        lwm, set_lwm: u32 @ 0x070, 0x10;
    }

    /// Output of `ARM_XRC_SRQ`.
    pub struct ArmXrcSrqOut: Ifc "arm_xrc_srq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }
}

/// SRQ states (`srqc.state`; `MLX5_SRQC_STATE_*`).
pub mod srqc_state {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_SRQC_STATE_", srqc_state_name;
        GOOD = 0x0, "GOOD";
        ERROR = 0x1, "ERROR";
    }
}

/// XRC SRQ states (`xrc_srqc.state`; `MLX5_XRC_SRQC_STATE_*`).
pub mod xrc_srqc_state {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_XRC_SRQC_STATE_", xrc_srqc_state_name;
        GOOD = 0x0, "GOOD";
        ERROR = 0x1, "ERROR";
    }
}

/// RMP states (`rmpc.state`, `modify_rmp_in.rmp_state`; `MLX5_RMPC_STATE_*`).
pub mod rmpc_state {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_RMPC_STATE_", rmpc_state_name;
        RDY = 0x1, "RDY";
        ERR = 0x3, "ERR";
    }
}

/// `op_mod` of `ARM_RQ` (`MLX5_ARM_RQ_IN_OP_MOD_*`): which kind of queue `srq_number` names.
pub mod arm_rq_op_mod {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_ARM_RQ_IN_OP_MOD_", arm_rq_op_mod_name;
        SRQ = 0x1, "SRQ";
        XRQ = 0x2, "XRQ";
    }
}

/// `op_mod` of `ARM_XRC_SRQ` (`MLX5_ARM_XRC_SRQ_IN_OP_MOD_XRC_SRQ`).
pub const ARM_XRC_SRQ_OP_MOD_XRC_SRQ: u8 = 0x1;

/// Bit of `rmp_bitmask` (the last bit of its 64 bits, `lwm`) as the 64-bit value of the
/// whole bitmask: `MODIFY_RMP` changes the limit watermark.
pub const RMP_BITMASK_LWM: u64 = 1;

/// Byte offset of the `wq` inside a `CREATE_RMP` input (ctx at 0x20, wq at +0x30).
const CREATE_RMP_WQ_OFFSET: usize = 0x20 + 0x30;

impl CreateRmpIn {
    /// Buffer page address `i` (the `ctx.wq.pas[]` after the fixed part) of a whole
    /// `CREATE_RMP` message.
    pub fn wq_pas(msg: &[u8], i: usize) -> Option<u64> {
        Wq::pas(msg.get(CREATE_RMP_WQ_OFFSET..)?, i)
    }

    /// Writes buffer page address `i` of a whole `CREATE_RMP` message.
    pub fn set_wq_pas(msg: &mut [u8], i: usize, pa: u64) -> Result<(), crate::bits::OutOfBounds> {
        let wq = msg
            .get_mut(CREATE_RMP_WQ_OFFSET..)
            .ok_or(crate::bits::OutOfBounds)?;
        Wq::set_pas(wq, i, pa)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // create_srq_in: srq_context_entry at bit 0x80 (byte 0x10), pas[] after 0x110 bytes;
    // srqc: log_srq_size 4 bits at 0x4, log_rq_stride 3 bits at 0x25, pd at 0xc8, dbr_addr at
    // 0x140.
    #[test]
    fn create_srq_places_context_and_pas() {
        let mut msg = [0u8; CreateSrqIn::SIZE + 8];
        {
            let (i, _) =
                <CreateSrqIn as zerocopy::FromBytes>::mut_from_prefix(&mut msg[..]).unwrap();
            i.set_opcode(crate::opcode::CREATE_SRQ.into());
            let c = i.srq_context_entry_mut();
            c.set_log_srq_size(6);
            c.set_log_rq_stride(2);
            c.set_pd(0x12_3456);
            c.set_dbr_addr(0x1122_3344_5566_7788);
        }
        CreateSrqIn::set_pas(&mut msg, 0, 0xabc_d000).unwrap();
        assert_eq!(&msg[..2], &[0x07, 0x00]);
        assert_eq!(msg[0x10], 0x06);
        assert_eq!(msg[0x14] & 0x07, 2);
        assert_eq!(&msg[0x10 + 0x18..0x10 + 0x1c], &[0, 0x12, 0x34, 0x56]);
        assert_eq!(
            &msg[0x10 + 0x28..0x10 + 0x30],
            &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(CreateSrqIn::pas(&msg, 0), Some(0xabc_d000));
        assert_eq!(CreateSrqIn::pas(&msg, 1), None);
    }

    // create_rmp_in: ctx (rmpc) at bit 0x100, rmpc.wq at +0x180, wq.pas[] after 0x110 bytes;
    // modify_rmp_in.bitmask at bit 0x80 with lwm its last bit.
    #[test]
    fn rmp_commands_place_wq_and_bitmask() {
        let mut msg = [0u8; CreateRmpIn::SIZE + 8];
        {
            let (i, _) =
                <CreateRmpIn as zerocopy::FromBytes>::mut_from_prefix(&mut msg[..]).unwrap();
            i.ctx_mut().set_state(rmpc_state::RDY.into());
            i.ctx_mut().wq_mut().set_log_wq_sz(9);
        }
        CreateRmpIn::set_wq_pas(&mut msg, 0, 0x5000).unwrap();
        assert_eq!(msg[0x21], 0x10);
        assert_eq!(msg[0x50 + 0x23] & 0x1f, 9);
        assert_eq!(CreateRmpIn::wq_pas(&msg, 0), Some(0x5000));
        assert_eq!(&msg[0x110..0x118], &[0, 0, 0, 0, 0, 0, 0x50, 0]);
        let mut m = ModifyRmpIn::new();
        m.set_rmp_state(rmpc_state::RDY.into());
        m.set_rmpn(0x42);
        m.bitmask_mut().set_lwm(1);
        assert_eq!(&m.0[8..12], &[0x10, 0, 0, 0x42]);
        assert_eq!(
            u64::from_be_bytes(m.0[0x10..0x18].try_into().unwrap()),
            RMP_BITMASK_LWM
        );
    }

    // arm_rq_in / arm_xrc_srq_in: queue number at 0x48, lwm 16 bits at 0x70.
    #[test]
    fn arm_commands_place_number_and_limit() {
        let mut a = ArmRqIn::new();
        a.set_op_mod(arm_rq_op_mod::SRQ.into());
        a.set_srq_number(0xab_cdef);
        a.set_lwm(0x10);
        assert_eq!(
            &a.0[4..16],
            &[0, 0, 0, 1, 0, 0xab, 0xcd, 0xef, 0, 0, 0, 0x10]
        );
        let mut x = ArmXrcSrqIn::new();
        x.set_op_mod(ARM_XRC_SRQ_OP_MOD_XRC_SRQ.into());
        x.set_xrc_srqn(5);
        x.set_lwm(3);
        assert_eq!(&x.0[4..16], &[0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 3]);
        assert_eq!(XrcSrqc::SIZE, Srqc::SIZE);
    }
}
