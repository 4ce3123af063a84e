// SPDX-License-Identifier: GPL-2.0
//! Command opcodes (`MLX5_CMD_OP_*`, mlx5_ifc.h): every command the upstream core, Ethernet and
//! RDMA drivers send to a ConnectX-4 in the stages of the model map (core up, mlx5e, mlx5_ib).

use crate::bits::code_table;

code_table! { u16, "MLX5_CMD_OP_", opcode_name;
    // HCA bring-up and teardown.
    QUERY_HCA_CAP = 0x100, "QUERY_HCA_CAP";
    QUERY_ADAPTER = 0x101, "QUERY_ADAPTER";
    INIT_HCA = 0x102, "INIT_HCA";
    TEARDOWN_HCA = 0x103, "TEARDOWN_HCA";
    ENABLE_HCA = 0x104, "ENABLE_HCA";
    DISABLE_HCA = 0x105, "DISABLE_HCA";
    QUERY_PAGES = 0x107, "QUERY_PAGES";
    MANAGE_PAGES = 0x108, "MANAGE_PAGES";
    SET_HCA_CAP = 0x109, "SET_HCA_CAP";
    QUERY_ISSI = 0x10a, "QUERY_ISSI";
    SET_ISSI = 0x10b, "SET_ISSI";
    SET_DRIVER_VERSION = 0x10d, "SET_DRIVER_VERSION";
    // Memory keys.
    CREATE_MKEY = 0x200, "CREATE_MKEY";
    QUERY_MKEY = 0x201, "QUERY_MKEY";
    DESTROY_MKEY = 0x202, "DESTROY_MKEY";
    QUERY_SPECIAL_CONTEXTS = 0x203, "QUERY_SPECIAL_CONTEXTS";
    PAGE_FAULT_RESUME = 0x204, "PAGE_FAULT_RESUME";
    // Event queues.
    CREATE_EQ = 0x301, "CREATE_EQ";
    DESTROY_EQ = 0x302, "DESTROY_EQ";
    QUERY_EQ = 0x303, "QUERY_EQ";
    GEN_EQE = 0x304, "GEN_EQE";
    // Completion queues.
    CREATE_CQ = 0x400, "CREATE_CQ";
    DESTROY_CQ = 0x401, "DESTROY_CQ";
    QUERY_CQ = 0x402, "QUERY_CQ";
    MODIFY_CQ = 0x403, "MODIFY_CQ";
    // Queue pairs.
    CREATE_QP = 0x500, "CREATE_QP";
    DESTROY_QP = 0x501, "DESTROY_QP";
    RST2INIT_QP = 0x502, "RST2INIT_QP";
    INIT2RTR_QP = 0x503, "INIT2RTR_QP";
    RTR2RTS_QP = 0x504, "RTR2RTS_QP";
    RTS2RTS_QP = 0x505, "RTS2RTS_QP";
    SQERR2RTS_QP = 0x506, "SQERR2RTS_QP";
    /// Any state to ERR.
    TO_ERR_QP = 0x507, "2ERR_QP";
    /// Any state to RESET.
    TO_RST_QP = 0x50a, "2RST_QP";
    QUERY_QP = 0x50b, "QUERY_QP";
    SQD_RTS_QP = 0x50c, "SQD_RTS_QP";
    MAD_IFC = 0x50d, "MAD_IFC";
    INIT2INIT_QP = 0x50e, "INIT2INIT_QP";
    // Shared receive queues (ISSI 0).
    CREATE_SRQ = 0x700, "CREATE_SRQ";
    DESTROY_SRQ = 0x701, "DESTROY_SRQ";
    QUERY_SRQ = 0x702, "QUERY_SRQ";
    ARM_RQ = 0x703, "ARM_RQ";
    CREATE_XRC_SRQ = 0x705, "CREATE_XRC_SRQ";
    DESTROY_XRC_SRQ = 0x706, "DESTROY_XRC_SRQ";
    QUERY_XRC_SRQ = 0x707, "QUERY_XRC_SRQ";
    ARM_XRC_SRQ = 0x708, "ARM_XRC_SRQ";
    // Dynamically connected targets.
    CREATE_DCT = 0x710, "CREATE_DCT";
    DESTROY_DCT = 0x711, "DESTROY_DCT";
    DRAIN_DCT = 0x712, "DRAIN_DCT";
    QUERY_DCT = 0x713, "QUERY_DCT";
    ARM_DCT_FOR_KEY_VIOLATION = 0x714, "ARM_DCT_FOR_KEY_VIOLATION";
    // Vports.
    QUERY_VPORT_STATE = 0x750, "QUERY_VPORT_STATE";
    QUERY_NIC_VPORT_CONTEXT = 0x754, "QUERY_NIC_VPORT_CONTEXT";
    MODIFY_NIC_VPORT_CONTEXT = 0x755, "MODIFY_NIC_VPORT_CONTEXT";
    QUERY_ROCE_ADDRESS = 0x760, "QUERY_ROCE_ADDRESS";
    SET_ROCE_ADDRESS = 0x761, "SET_ROCE_ADDRESS";
    QUERY_HCA_VPORT_CONTEXT = 0x762, "QUERY_HCA_VPORT_CONTEXT";
    QUERY_HCA_VPORT_GID = 0x764, "QUERY_HCA_VPORT_GID";
    QUERY_HCA_VPORT_PKEY = 0x765, "QUERY_HCA_VPORT_PKEY";
    QUERY_VPORT_COUNTER = 0x770, "QUERY_VPORT_COUNTER";
    ALLOC_Q_COUNTER = 0x771, "ALLOC_Q_COUNTER";
    DEALLOC_Q_COUNTER = 0x772, "DEALLOC_Q_COUNTER";
    QUERY_Q_COUNTER = 0x773, "QUERY_Q_COUNTER";
    // Protection domains, UARs, registers, multicast, transport domains.
    ALLOC_PD = 0x800, "ALLOC_PD";
    DEALLOC_PD = 0x801, "DEALLOC_PD";
    ALLOC_UAR = 0x802, "ALLOC_UAR";
    DEALLOC_UAR = 0x803, "DEALLOC_UAR";
    ACCESS_REG = 0x805, "ACCESS_REG";
    ATTACH_TO_MCG = 0x806, "ATTACH_TO_MCG";
    DETACH_FROM_MCG = 0x807, "DETACH_FROM_MCG";
    NOP = 0x80d, "NOP";
    ALLOC_XRCD = 0x80e, "ALLOC_XRCD";
    DEALLOC_XRCD = 0x80f, "DEALLOC_XRCD";
    ALLOC_TRANSPORT_DOMAIN = 0x816, "ALLOC_TRANSPORT_DOMAIN";
    DEALLOC_TRANSPORT_DOMAIN = 0x817, "DEALLOC_TRANSPORT_DOMAIN";
    // RoCE congestion control.
    QUERY_CONG_STATUS = 0x822, "QUERY_CONG_STATUS";
    MODIFY_CONG_STATUS = 0x823, "MODIFY_CONG_STATUS";
    QUERY_CONG_PARAMS = 0x824, "QUERY_CONG_PARAMS";
    MODIFY_CONG_PARAMS = 0x825, "MODIFY_CONG_PARAMS";
    QUERY_CONG_STATISTICS = 0x826, "QUERY_CONG_STATISTICS";
    ADD_VXLAN_UDP_DPORT = 0x827, "ADD_VXLAN_UDP_DPORT";
    DELETE_VXLAN_UDP_DPORT = 0x828, "DELETE_VXLAN_UDP_DPORT";
    // Transport objects.
    CREATE_TIR = 0x900, "CREATE_TIR";
    MODIFY_TIR = 0x901, "MODIFY_TIR";
    DESTROY_TIR = 0x902, "DESTROY_TIR";
    QUERY_TIR = 0x903, "QUERY_TIR";
    CREATE_SQ = 0x904, "CREATE_SQ";
    MODIFY_SQ = 0x905, "MODIFY_SQ";
    DESTROY_SQ = 0x906, "DESTROY_SQ";
    QUERY_SQ = 0x907, "QUERY_SQ";
    CREATE_RQ = 0x908, "CREATE_RQ";
    MODIFY_RQ = 0x909, "MODIFY_RQ";
    DESTROY_RQ = 0x90a, "DESTROY_RQ";
    QUERY_RQ = 0x90b, "QUERY_RQ";
    CREATE_RMP = 0x90c, "CREATE_RMP";
    MODIFY_RMP = 0x90d, "MODIFY_RMP";
    DESTROY_RMP = 0x90e, "DESTROY_RMP";
    QUERY_RMP = 0x90f, "QUERY_RMP";
    CREATE_TIS = 0x912, "CREATE_TIS";
    MODIFY_TIS = 0x913, "MODIFY_TIS";
    DESTROY_TIS = 0x914, "DESTROY_TIS";
    QUERY_TIS = 0x915, "QUERY_TIS";
    CREATE_RQT = 0x916, "CREATE_RQT";
    MODIFY_RQT = 0x917, "MODIFY_RQT";
    DESTROY_RQT = 0x918, "DESTROY_RQT";
    QUERY_RQT = 0x919, "QUERY_RQT";
    // Flow steering.
    SET_FLOW_TABLE_ROOT = 0x92f, "SET_FLOW_TABLE_ROOT";
    CREATE_FLOW_TABLE = 0x930, "CREATE_FLOW_TABLE";
    DESTROY_FLOW_TABLE = 0x931, "DESTROY_FLOW_TABLE";
    QUERY_FLOW_TABLE = 0x932, "QUERY_FLOW_TABLE";
    CREATE_FLOW_GROUP = 0x933, "CREATE_FLOW_GROUP";
    DESTROY_FLOW_GROUP = 0x934, "DESTROY_FLOW_GROUP";
    QUERY_FLOW_GROUP = 0x935, "QUERY_FLOW_GROUP";
    SET_FLOW_TABLE_ENTRY = 0x936, "SET_FLOW_TABLE_ENTRY";
    QUERY_FLOW_TABLE_ENTRY = 0x937, "QUERY_FLOW_TABLE_ENTRY";
    DELETE_FLOW_TABLE_ENTRY = 0x938, "DELETE_FLOW_TABLE_ENTRY";
    ALLOC_FLOW_COUNTER = 0x939, "ALLOC_FLOW_COUNTER";
    DEALLOC_FLOW_COUNTER = 0x93a, "DEALLOC_FLOW_COUNTER";
    QUERY_FLOW_COUNTER = 0x93b, "QUERY_FLOW_COUNTER";
    MODIFY_FLOW_TABLE = 0x93c, "MODIFY_FLOW_TABLE";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcode_names_follow_the_headers() {
        assert_eq!(opcode_name(0x100), "QUERY_HCA_CAP");
        assert_eq!(opcode_name(TO_ERR_QP), "2ERR_QP");
        assert_eq!(opcode_name(0xffff), "UNKNOWN");
    }

    #[test]
    fn opcodes_are_unique() {
        for (i, (a, an)) in ALL.iter().enumerate() {
            for (b, bn) in &ALL[i + 1..] {
                assert!(a != b && an != bn, "{an} ({a:#x}) vs {bn} ({b:#x})");
            }
        }
    }

    // The model map, section 4: the 19 "core up" opcodes.
    #[test]
    fn core_up_opcodes_match_the_map() {
        let core_up = [
            (ENABLE_HCA, 0x104),
            (DISABLE_HCA, 0x105),
            (QUERY_ISSI, 0x10a),
            (SET_ISSI, 0x10b),
            (QUERY_PAGES, 0x107),
            (MANAGE_PAGES, 0x108),
            (QUERY_HCA_CAP, 0x100),
            (SET_HCA_CAP, 0x109),
            (INIT_HCA, 0x102),
            (TEARDOWN_HCA, 0x103),
            (QUERY_ADAPTER, 0x101),
            (ACCESS_REG, 0x805),
            (ALLOC_UAR, 0x802),
            (DEALLOC_UAR, 0x803),
            (CREATE_EQ, 0x301),
            (DESTROY_EQ, 0x302),
            (CREATE_FLOW_TABLE, 0x930),
            (DESTROY_FLOW_TABLE, 0x931),
            (SET_FLOW_TABLE_ROOT, 0x92f),
        ];
        for (ours, map) in core_up {
            assert_eq!(ours, map, "{}", opcode_name(ours));
        }
    }
}
