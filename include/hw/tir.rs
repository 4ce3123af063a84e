// SPDX-License-Identifier: GPL-2.0
//! Transport objects of the Ethernet data path: TIS (send), TIR (receive dispatch, direct to
//! one RQ or through an RQ table with a hash) and RQT (RQ table), with their commands.

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// Transport interface send context.
    pub struct Tisc: Ifc "tisc", 0xa0 {
        strict_lag_tx_port_affinity, set_strict_lag_tx_port_affinity: u32 @ 0x000, 0x1;
        tls_en, set_tls_en: u32 @ 0x001, 0x1;
        lag_tx_port_affinity, set_lag_tx_port_affinity: u32 @ 0x004, 0x4;
        prio, set_prio: u32 @ 0x00c, 0x4;
        transport_domain, set_transport_domain: u32 @ 0x128, 0x18;
        underlay_qpn, set_underlay_qpn: u32 @ 0x148, 0x18;
        pd, set_pd: u32 @ 0x168, 0x18;
    }

    /// Which [`Tisc`] fields a `MODIFY_TIS` changes.
    pub struct ModifyTisBitmask: Ifc "modify_tis_bitmask", 0x8 {
        lag_tx_port_affinity, set_lag_tx_port_affinity: u32 @ 0x03d, 0x1;
        strict_lag_tx_port_affinity, set_strict_lag_tx_port_affinity: u32 @ 0x03e, 0x1;
        prio, set_prio: u32 @ 0x03f, 0x1;
    }

    /// Transport interface receive context: dispatch to one RQ or through an RQT with a hash.
    pub struct Tirc: Ifc "tirc", 0xf0 {
        disp_type, set_disp_type: u32 @ 0x020, 0x4;
        tls_en, set_tls_en: u32 @ 0x024, 0x1;
        lro_timeout_period_usecs, set_lro_timeout_period_usecs: u32 @ 0x084, 0x10;
        packet_merge_mask, set_packet_merge_mask: u32 @ 0x094, 0x4;
        lro_max_ip_payload_size, set_lro_max_ip_payload_size: u32 @ 0x098, 0x8;
        inline_rqn, set_inline_rqn: u32 @ 0x0e8, 0x18;
        rx_hash_symmetric, set_rx_hash_symmetric: u32 @ 0x100, 0x1;
        tunneled_offload_en, set_tunneled_offload_en: u32 @ 0x102, 0x1;
        indirect_table, set_indirect_table: u32 @ 0x108, 0x18;
        rx_hash_fn, set_rx_hash_fn: u32 @ 0x120, 0x4;
        self_lb_block, set_self_lb_block: u32 @ 0x126, 0x2;
        transport_domain, set_transport_domain: u32 @ 0x128, 0x18;
        rx_hash_toeplitz_key, set_rx_hash_toeplitz_key: array u32 @ 0x140, 0x140;
        rx_hash_field_selector_outer, rx_hash_field_selector_outer_mut: RxHashFieldSelect @ 0x280, 0x20;
        rx_hash_field_selector_inner, rx_hash_field_selector_inner_mut: RxHashFieldSelect @ 0x2a0, 0x20;
    }

    /// Which header fields feed the receive hash.
    pub struct RxHashFieldSelect: Ifc "rx_hash_field_select", 0x4 {
        l3_prot_type, set_l3_prot_type: u32 @ 0x000, 0x1;
        l4_prot_type, set_l4_prot_type: u32 @ 0x001, 0x1;
        selected_fields, set_selected_fields: u32 @ 0x002, 0x1e;
    }

    /// Which [`Tirc`] fields a `MODIFY_TIR` changes.
    pub struct ModifyTirBitmask: Ifc "modify_tir_bitmask", 0x8 {
        self_lb_en, set_self_lb_en: u32 @ 0x03b, 0x1;
        hash, set_hash: u32 @ 0x03d, 0x1;
        packet_merge, set_packet_merge: u32 @ 0x03f, 0x1;
    }

    /// RQ table context, followed by its RQ numbers (`rq_num[]`).
    pub struct Rqtc: Ifc "rqtc", 0xf0 {
        list_q_type, set_list_q_type: u32 @ 0x0a5, 0x3;
        rqt_max_size, set_rqt_max_size: u32 @ 0x0b0, 0x10;
        rq_vhca_id_format, set_rq_vhca_id_format: u32 @ 0x0c0, 0x1;
        rqt_actual_size, set_rqt_actual_size: u32 @ 0x0d0, 0x10;
        rq_num, rq_num_mut: tail RqNum @ 0x780, 0x20;
    }

    /// One RQ number of an RQ table.
    pub struct RqNum: Ifc "rq_num", 0x4 {
        rq_num, set_rq_num: u32 @ 0x008, 0x18;
    }

    /// Which [`Rqtc`] fields a `MODIFY_RQT` changes.
    pub struct RqtBitmask: Ifc "rqt_bitmask", 0x8 {
        rqn_list, set_rqn_list: u32 @ 0x03f, 0x1;
    }

    /// Input of `CREATE_TIS`.
    pub struct CreateTisIn: Ifc "create_tis_in", 0xc0 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        ctx, ctx_mut: Tisc @ 0x100, 0x500;
    }

    /// Output of `CREATE_TIS`.
    pub struct CreateTisOut: Ifc "create_tis_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        tisn, set_tisn: u32 @ 0x048, 0x18;
    }

    /// Input of `MODIFY_TIS`.
    pub struct ModifyTisIn: Ifc "modify_tis_in", 0xc0 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        tisn, set_tisn: u32 @ 0x048, 0x18;
        bitmask, bitmask_mut: ModifyTisBitmask @ 0x080, 0x40;
        ctx, ctx_mut: Tisc @ 0x100, 0x500;
    }

    /// Output of `MODIFY_TIS`.
    pub struct ModifyTisOut: Ifc "modify_tis_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `DESTROY_TIS`.
    pub struct DestroyTisIn: Ifc "destroy_tis_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        tisn, set_tisn: u32 @ 0x048, 0x18;
    }

    /// Output of `DESTROY_TIS`.
    pub struct DestroyTisOut: Ifc "destroy_tis_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_TIS`.
    pub struct QueryTisIn: Ifc "query_tis_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        tisn, set_tisn: u32 @ 0x048, 0x18;
    }

    /// Output of `QUERY_TIS`.
    pub struct QueryTisOut: Ifc "query_tis_out", 0xb0 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        tis_context, tis_context_mut: Tisc @ 0x080, 0x500;
    }

    /// Input of `CREATE_TIR`.
    pub struct CreateTirIn: Ifc "create_tir_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        ctx, ctx_mut: Tirc @ 0x100, 0x780;
    }

    /// Output of `CREATE_TIR`.
    pub struct CreateTirOut: Ifc "create_tir_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        icm_address_63_40, set_icm_address_63_40: u32 @ 0x008, 0x18;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        icm_address_39_32, set_icm_address_39_32: u32 @ 0x040, 0x8;
        tirn, set_tirn: u32 @ 0x048, 0x18;
        icm_address_31_0, set_icm_address_31_0: u32 @ 0x060, 0x20;
    }

    /// Input of `MODIFY_TIR`.
    pub struct ModifyTirIn: Ifc "modify_tir_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        tirn, set_tirn: u32 @ 0x048, 0x18;
        bitmask, bitmask_mut: ModifyTirBitmask @ 0x080, 0x40;
        ctx, ctx_mut: Tirc @ 0x100, 0x780;
    }

    /// Output of `MODIFY_TIR`.
    pub struct ModifyTirOut: Ifc "modify_tir_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `DESTROY_TIR`.
    pub struct DestroyTirIn: Ifc "destroy_tir_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        tirn, set_tirn: u32 @ 0x048, 0x18;
    }

    /// Output of `DESTROY_TIR`.
    pub struct DestroyTirOut: Ifc "destroy_tir_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_TIR`.
    pub struct QueryTirIn: Ifc "query_tir_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        tirn, set_tirn: u32 @ 0x048, 0x18;
    }

    /// Output of `QUERY_TIR`.
    pub struct QueryTirOut: Ifc "query_tir_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        tir_context, tir_context_mut: Tirc @ 0x100, 0x780;
    }

    /// Input of `CREATE_RQT`.
    pub struct CreateRqtIn: Ifc "create_rqt_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        rqt_context, rqt_context_mut: Rqtc @ 0x100, 0x780;
    }

    /// Output of `CREATE_RQT`.
    pub struct CreateRqtOut: Ifc "create_rqt_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        rqtn, set_rqtn: u32 @ 0x048, 0x18;
    }

    /// Input of `MODIFY_RQT`.
    pub struct ModifyRqtIn: Ifc "modify_rqt_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        rqtn, set_rqtn: u32 @ 0x048, 0x18;
        bitmask, bitmask_mut: RqtBitmask @ 0x080, 0x40;
        ctx, ctx_mut: Rqtc @ 0x100, 0x780;
    }

    /// Output of `MODIFY_RQT`.
    pub struct ModifyRqtOut: Ifc "modify_rqt_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `DESTROY_RQT`.
    pub struct DestroyRqtIn: Ifc "destroy_rqt_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        rqtn, set_rqtn: u32 @ 0x048, 0x18;
    }

    /// Output of `DESTROY_RQT`.
    pub struct DestroyRqtOut: Ifc "destroy_rqt_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_RQT`.
    pub struct QueryRqtIn: Ifc "query_rqt_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        rqtn, set_rqtn: u32 @ 0x048, 0x18;
    }

    /// Output of `QUERY_RQT`.
    pub struct QueryRqtOut: Ifc "query_rqt_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        rqt_context, rqt_context_mut: Rqtc @ 0x100, 0x780;
    }
}

/// `tirc.disp_type`.
pub mod disp_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_TIRC_DISP_TYPE_", disp_type_name;
        DIRECT = 0x0, "DIRECT";
        INDIRECT = 0x1, "INDIRECT";
    }
}

/// `tirc.rx_hash_fn`.
pub mod rx_hash_fn {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_RX_HASH_FN_", rx_hash_fn_name;
        NONE = 0x0, "NONE";
        INVERTED_XOR8 = 0x1, "INVERTED_XOR8";
        TOEPLITZ = 0x2, "TOEPLITZ";
    }
}

/// `tirc.packet_merge_mask` bits (`MLX5_TIRC_PACKET_MERGE_MASK_*`): the IP versions whose
/// TCP segments the device merges (LRO).
pub mod packet_merge {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_TIRC_PACKET_MERGE_MASK_", packet_merge_name;
        IPV4_LRO = 0x1, "IPV4_LRO";
        IPV6_LRO = 0x2, "IPV6_LRO";
    }
}

/// `tirc.self_lb_block` bits.
pub mod self_lb_block {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_TIRC_SELF_LB_BLOCK_", self_lb_block_name;
        BLOCK_UNICAST = 0x1, "BLOCK_UNICAST";
        BLOCK_MULTICAST = 0x2, "BLOCK_MULTICAST";
    }
}

/// `rx_hash_field_select.l3_prot_type` (device.h).
pub mod l3_prot_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_L3_PROT_TYPE_", l3_prot_type_name;
        IPV4 = 0, "IPV4";
        IPV6 = 1, "IPV6";
    }
}

/// `rx_hash_field_select.l4_prot_type` (device.h).
pub mod l4_prot_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_L4_PROT_TYPE_", l4_prot_type_name;
        TCP = 0, "TCP";
        UDP = 1, "UDP";
    }
}

/// `rx_hash_field_select.selected_fields` bits (device.h).
pub mod hash_field_sel {
    use crate::bits::code_table;

    code_table! { u32, "MLX5_HASH_FIELD_SEL_", hash_field_sel_name;
        SRC_IP = 0x1, "SRC_IP";
        DST_IP = 0x2, "DST_IP";
        L4_SPORT = 0x4, "L4_SPORT";
        L4_DPORT = 0x8, "L4_DPORT";
        IPSEC_SPI = 0x10, "IPSEC_SPI";
    }
}

/// Bytes of the Toeplitz key in a [`Tirc`] (`rx_hash_toeplitz_key`, 10 dwords).
pub const TOEPLITZ_KEY_LEN: usize = 40;

impl Tirc {
    /// The Toeplitz key as bytes, in the order the hash consumes them.
    pub fn toeplitz_key(&self) -> [u8; TOEPLITZ_KEY_LEN] {
        let mut k = [0u8; TOEPLITZ_KEY_LEN];
        k.copy_from_slice(&self.0[0x28..0x28 + TOEPLITZ_KEY_LEN]);
        k
    }
}

/// Byte offset of `rqtc.rq_num[]` in a CREATE_RQT/MODIFY_RQT input (ctx at 0x20, list at +0xf0).
const RQT_LIST_OFFSET: usize = 0x20 + Rqtc::SIZE;

/// RQ number `i` of the list that follows a CREATE_RQT or MODIFY_RQT input (or a QUERY_RQT
/// output) in the whole message `msg`.
pub fn rqt_rq_num(msg: &[u8], i: usize) -> Option<u32> {
    Some(Rqtc::rq_num(msg.get(0x20..)?, i)?.rq_num())
}

/// Writes RQ number `i` of the list after a CREATE_RQT/MODIFY_RQT input or QUERY_RQT output.
pub fn set_rqt_rq_num(msg: &mut [u8], i: usize, rqn: u32) -> Result<(), crate::bits::OutOfBounds> {
    let ctx = msg.get_mut(0x20..).ok_or(crate::bits::OutOfBounds)?;
    Rqtc::rq_num_mut(ctx, i)
        .ok_or(crate::bits::OutOfBounds)?
        .set_rq_num(rqn);
    Ok(())
}

/// Size of a CREATE_RQT/MODIFY_RQT input carrying `n` RQ numbers.
pub const fn rqt_msg_len(n: usize) -> usize {
    RQT_LIST_OFFSET + n * RqNum::SIZE
}

#[cfg(test)]
mod tests {
    use super::*;

    // tirc: disp_type 4 bits at 0x20, inline_rqn at 0xe8, indirect_table at 0x108,
    // rx_hash_fn at 0x120, toeplitz key at 0x140 (byte 0x28), selectors at 0x280/0x2a0.
    #[test]
    fn tirc_places_dispatch_hash_and_key() {
        let mut t = Tirc::new();
        t.set_disp_type(disp_type::INDIRECT.into());
        t.set_indirect_table(0x12);
        t.set_rx_hash_fn(rx_hash_fn::TOEPLITZ.into());
        t.set_rx_hash_toeplitz_key(0, 0x6d5a_56da).unwrap();
        t.rx_hash_field_selector_outer_mut()
            .set_l4_prot_type(l4_prot_type::UDP.into());
        assert_eq!(t.0[4], 0x10);
        assert_eq!(&t.0[0x20..0x24], &[0, 0, 0, 0x12]);
        assert_eq!(t.0[0x24], 0x20);
        assert_eq!(&t.toeplitz_key()[..4], &[0x6d, 0x5a, 0x56, 0xda]);
        assert_eq!(t.0[0x50], 0x40);
    }

    // create_rqt_in: rqt_context at 0x20, rqt_max_size 16 bits at +0x16, rq_num[] at +0xf0.
    #[test]
    fn rqt_list_follows_the_context() {
        let mut msg = [0u8; rqt_msg_len(2)];
        set_rqt_rq_num(&mut msg, 1, 0xabcdef).unwrap();
        assert_eq!(&msg[0x114..0x118], &[0, 0xab, 0xcd, 0xef]);
        assert_eq!(rqt_rq_num(&msg, 1), Some(0xabcdef));
        assert_eq!(rqt_rq_num(&msg, 2), None);
        let mut i = CreateRqtIn::new();
        i.rqt_context_mut().set_rqt_max_size(0x100);
        assert_eq!(&i.0[0x36..0x38], &[0x01, 0x00]);
    }
}
