// SPDX-License-Identifier: GPL-2.0
//! Event queues: the EQ context and commands, event types and masks. The EQ entry itself is in
//! [`eqe`].

use crate::bits::ifc_layouts;

pub mod eqe;

ifc_layouts! {
    /// Event queue context.
    pub struct Eqc: Ifc "eqc", 0x40 {
        status, set_status: u32 @ 0x000, 0x4;
        ec, set_ec: u32 @ 0x00d, 0x1;
        oi, set_oi: u32 @ 0x00e, 0x1;
        st, set_st: u32 @ 0x014, 0x4;
        page_offset, set_page_offset: u32 @ 0x054, 0x6;
        log_eq_size, set_log_eq_size: u32 @ 0x063, 0x5;
        uar_page, set_uar_page: u32 @ 0x068, 0x18;
        intr, set_intr: u32 @ 0x0b4, 0xc;
        log_page_size, set_log_page_size: u32 @ 0x0c3, 0x5;
        consumer_counter, set_consumer_counter: u32 @ 0x148, 0x18;
        producer_counter, set_producer_counter: u32 @ 0x168, 0x18;
    }

    /// Input of `CREATE_EQ`, followed by the EQ buffer page addresses (`pas[]`).
    pub struct CreateEqIn: Ifc "create_eq_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        eq_context_entry, eq_context_entry_mut: Eqc @ 0x080, 0x200;
        event_bitmask, set_event_bitmask: array u64 @ 0x2c0, 0x100;
        pas, set_pas: tail u64 @ 0x880, 0x40;
    }

    /// Output of `CREATE_EQ`: the EQ number.
    pub struct CreateEqOut: Ifc "create_eq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        eq_number, set_eq_number: u32 @ 0x058, 0x8;
    }

    /// Input of `DESTROY_EQ`.
    pub struct DestroyEqIn: Ifc "destroy_eq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        eq_number, set_eq_number: u32 @ 0x058, 0x8;
    }

    /// Output of `DESTROY_EQ`.
    pub struct DestroyEqOut: Ifc "destroy_eq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_EQ`.
    pub struct QueryEqIn: Ifc "query_eq_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        eq_number, set_eq_number: u32 @ 0x058, 0x8;
    }

    /// Output of `QUERY_EQ`.
    pub struct QueryEqOut: Ifc "query_eq_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        eq_context_entry, eq_context_entry_mut: Eqc @ 0x080, 0x200;
        event_bitmask, set_event_bitmask: u64 @ 0x2c0, 0x40;
        pas, set_pas: tail u64 @ 0x880, 0x40;
    }

    /// Input of `GEN_EQE`: asks the device to write `eqe` into an EQ.
    pub struct GenEqeIn: Ifc "gen_eqe_in", 0x50 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        eq_number, set_eq_number: u32 @ 0x058, 0x8;
        eqe, eqe_mut: bytes @ 0x080, 0x200;
    }

    /// Output of `GEN_EQE`.
    pub struct GenEqOut: Ifc "gen_eq_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }
}

/// Event types (`MLX5_EVENT_TYPE_*`, device.h): the `event_type` byte of an EQE and the bit
/// number in an EQ's event mask.
pub mod event_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_EVENT_TYPE_", event_type_name;
        /// Completion event (comp EQs only).
        COMP = 0x00, "COMP";
        PATH_MIG = 0x01, "PATH_MIG";
        COMM_EST = 0x02, "COMM_EST";
        SQ_DRAINED = 0x03, "SQ_DRAINED";
        /// CQ error; payload [`super::eqe::EqeCqErr`].
        CQ_ERROR = 0x04, "CQ_ERROR";
        WQ_CATAS_ERROR = 0x05, "WQ_CATAS_ERROR";
        PATH_MIG_FAILED = 0x07, "PATH_MIG_FAILED";
        INTERNAL_ERROR = 0x08, "INTERNAL_ERROR";
        /// Port state change; payload [`super::eqe::EqePortState`].
        PORT_CHANGE = 0x09, "PORT_CHANGE";
        /// Command completion; payload [`super::eqe::EqeCmd`].
        CMD = 0x0a, "CMD";
        /// Firmware page request; payload [`super::eqe::EqePageReq`].
        PAGE_REQUEST = 0x0b, "PAGE_REQUEST";
        PAGE_FAULT = 0x0c, "PAGE_FAULT";
        NIC_VPORT_CHANGE = 0x0d, "NIC_VPORT_CHANGE";
        WQ_INVAL_REQ_ERROR = 0x10, "WQ_INVAL_REQ_ERROR";
        WQ_ACCESS_ERROR = 0x11, "WQ_ACCESS_ERROR";
        SRQ_CATAS_ERROR = 0x12, "SRQ_CATAS_ERROR";
        SRQ_LAST_WQE = 0x13, "SRQ_LAST_WQE";
        SRQ_RQ_LIMIT = 0x14, "SRQ_RQ_LIMIT";
        GPIO_EVENT = 0x15, "GPIO_EVENT";
        PORT_MODULE_EVENT = 0x16, "PORT_MODULE_EVENT";
        TEMP_WARN_EVENT = 0x17, "TEMP_WARN_EVENT";
        XRQ_ERROR = 0x18, "XRQ_ERROR";
        REMOTE_CONFIG = 0x19, "REMOTE_CONFIG";
        DB_BF_CONGESTION = 0x1a, "DB_BF_CONGESTION";
        STALL_EVENT = 0x1b, "STALL_EVENT";
        DCT_DRAINED = 0x1c, "DCT_DRAINED";
        DCT_KEY_VIOLATION = 0x1d, "DCT_KEY_VIOLATION";
        GENERAL_EVENT = 0x22, "GENERAL_EVENT";
        MONITOR_COUNTER = 0x24, "MONITOR_COUNTER";
        PPS_EVENT = 0x25, "PPS_EVENT";
        DEVICE_TRACER = 0x26, "DEVICE_TRACER";
        OBJECT_CHANGE = 0x27, "OBJECT_CHANGE";
    }
}

/// What the number of a QP/SRQ event names (`MLX5_EVENT_QUEUE_TYPE_*`, device.h): the
/// `type` byte of [`eqe::EqeQpSrq`].
pub mod event_queue_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_EVENT_QUEUE_TYPE_", event_queue_type_name;
        QP = 0, "QP";
        RQ = 1, "RQ";
        SQ = 2, "SQ";
        DCT = 6, "DCT";
    }
}

/// `sub_type` of a [`event_type::PORT_CHANGE`] EQE (`MLX5_PORT_CHANGE_SUBTYPE_*`, device.h).
pub mod port_change_subtype {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_PORT_CHANGE_SUBTYPE_", port_change_subtype_name;
        DOWN = 1, "DOWN";
        ACTIVE = 4, "ACTIVE";
        INITIALIZED = 5, "INITIALIZED";
        LID = 6, "LID";
        PKEY = 7, "PKEY";
        GUID = 8, "GUID";
        CLIENT_REREG = 9, "CLIENT_REREG";
    }
}

/// `sub_type` of a [`event_type::PAGE_FAULT`] EQE (`MLX5_PFAULT_SUBTYPE_*`, device.h).
pub mod pfault_subtype {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_PFAULT_SUBTYPE_", pfault_subtype_name;
        WQE = 0, "WQE";
        RDMA = 1, "RDMA";
        MEMORY = 2, "MEMORY";
    }
}

/// The type of a WQE page fault (`MLX5_WQE_PF_TYPE_*`, device.h): the top byte of
/// [`eqe::EqePageFault::pftype_wq`]; bit 0 is set for the requester's send queue.
pub mod pfault_wqe_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_WQE_PF_TYPE_", pfault_wqe_type_name;
        RMP = 0, "RMP";
        REQ_SEND_OR_WRITE = 1, "REQ_SEND_OR_WRITE";
        RESP = 2, "RESP";
        REQ_READ_OR_ATOMIC = 3, "REQ_READ_OR_ATOMIC";
    }
}

bitflags::bitflags! {
    /// Word 0 of an EQ's `event_bitmask` (bit *n* subscribes event type *n*).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct EventMask: u64 {
        /// [`event_type::COMP`].
        const COMP = 1 << event_type::COMP;
        /// [`event_type::PATH_MIG`].
        const PATH_MIG = 1 << event_type::PATH_MIG;
        /// [`event_type::COMM_EST`].
        const COMM_EST = 1 << event_type::COMM_EST;
        /// [`event_type::SQ_DRAINED`].
        const SQ_DRAINED = 1 << event_type::SQ_DRAINED;
        /// [`event_type::CQ_ERROR`].
        const CQ_ERROR = 1 << event_type::CQ_ERROR;
        /// [`event_type::WQ_CATAS_ERROR`].
        const WQ_CATAS_ERROR = 1 << event_type::WQ_CATAS_ERROR;
        /// [`event_type::PATH_MIG_FAILED`].
        const PATH_MIG_FAILED = 1 << event_type::PATH_MIG_FAILED;
        /// [`event_type::INTERNAL_ERROR`].
        const INTERNAL_ERROR = 1 << event_type::INTERNAL_ERROR;
        /// [`event_type::PORT_CHANGE`].
        const PORT_CHANGE = 1 << event_type::PORT_CHANGE;
        /// [`event_type::CMD`].
        const CMD = 1 << event_type::CMD;
        /// [`event_type::PAGE_REQUEST`].
        const PAGE_REQUEST = 1 << event_type::PAGE_REQUEST;
        /// [`event_type::PAGE_FAULT`].
        const PAGE_FAULT = 1 << event_type::PAGE_FAULT;
        /// [`event_type::NIC_VPORT_CHANGE`].
        const NIC_VPORT_CHANGE = 1 << event_type::NIC_VPORT_CHANGE;
        /// [`event_type::WQ_INVAL_REQ_ERROR`].
        const WQ_INVAL_REQ_ERROR = 1 << event_type::WQ_INVAL_REQ_ERROR;
        /// [`event_type::WQ_ACCESS_ERROR`].
        const WQ_ACCESS_ERROR = 1 << event_type::WQ_ACCESS_ERROR;
        /// [`event_type::SRQ_CATAS_ERROR`].
        const SRQ_CATAS_ERROR = 1 << event_type::SRQ_CATAS_ERROR;
        /// [`event_type::SRQ_LAST_WQE`].
        const SRQ_LAST_WQE = 1 << event_type::SRQ_LAST_WQE;
        /// [`event_type::SRQ_RQ_LIMIT`].
        const SRQ_RQ_LIMIT = 1 << event_type::SRQ_RQ_LIMIT;
        /// [`event_type::PORT_MODULE_EVENT`].
        const PORT_MODULE_EVENT = 1 << event_type::PORT_MODULE_EVENT;
        /// [`event_type::TEMP_WARN_EVENT`].
        const TEMP_WARN_EVENT = 1 << event_type::TEMP_WARN_EVENT;
        /// [`event_type::DCT_DRAINED`].
        const DCT_DRAINED = 1 << event_type::DCT_DRAINED;
        /// [`event_type::GENERAL_EVENT`].
        const GENERAL_EVENT = 1 << event_type::GENERAL_EVENT;
        /// [`event_type::MONITOR_COUNTER`].
        const MONITOR_COUNTER = 1 << event_type::MONITOR_COUNTER;
        /// [`event_type::DEVICE_TRACER`].
        const DEVICE_TRACER = 1 << event_type::DEVICE_TRACER;
        /// [`event_type::OBJECT_CHANGE`].
        const OBJECT_CHANGE = 1 << event_type::OBJECT_CHANGE;
    }
}

impl EventMask {
    /// The async EQ's unconditional events (eq.c `gather_async_events_mask`; the map, §1.5).
    pub const ASYNC_BASE: Self = Self::PATH_MIG
        .union(Self::COMM_EST)
        .union(Self::SQ_DRAINED)
        .union(Self::CQ_ERROR)
        .union(Self::WQ_CATAS_ERROR)
        .union(Self::PATH_MIG_FAILED)
        .union(Self::PORT_CHANGE)
        .union(Self::WQ_INVAL_REQ_ERROR)
        .union(Self::WQ_ACCESS_ERROR)
        .union(Self::SRQ_CATAS_ERROR)
        .union(Self::SRQ_LAST_WQE)
        .union(Self::SRQ_RQ_LIMIT);
}

/// `MLX5_EQE_OWNER_INIT_VAL`: the owner byte software writes into every EQE before use.
pub const EQE_OWNER_INIT_VAL: u8 = 1;

/// Whether the EQE at consumer index `ci` of an EQ of `2^log_size` entries belongs to
/// software (lib/eq.h `next_eqe_sw`: `(owner ^ (ci >> log_sz)) & 1 == 0`).
pub fn eqe_owned_by_sw(owner: u8, ci: u32, log_size: u32) -> bool {
    (u32::from(owner) ^ (ci >> log_size)) & 1 == 0
}

/// The owner bit the device writes into the EQE at producer index `pi` of an EQ of
/// `2^log_size` entries, so that [`eqe_owned_by_sw`] accepts it.
pub fn eqe_owner_for(pi: u32, log_size: u32) -> u8 {
    ((pi >> log_size) & 1) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    // The map, §1.5: the unconditional async mask is 0x1f02be.
    #[test]
    fn async_base_mask_matches_the_map() {
        assert_eq!(EventMask::ASYNC_BASE.bits(), 0x1f_02be);
        assert_eq!(EventMask::CMD.bits(), 1 << 0x0a);
        assert_eq!(EventMask::PAGE_REQUEST.bits(), 1 << 0x0b);
    }

    #[test]
    fn create_eq_places_context_mask_and_pas() {
        let mut msg = [0u8; CreateEqIn::SIZE + 8];
        {
            let (i, _) = <CreateEqIn as zerocopy::FromBytes>::mut_from_prefix(&mut msg[..])
                .expect("message holds the header");
            i.set_opcode(crate::opcode::CREATE_EQ.into());
            let ctx = i.eq_context_entry_mut();
            ctx.set_log_eq_size(8);
            ctx.set_uar_page(8);
            ctx.set_intr(0);
            i.set_event_bitmask(0, EventMask::CMD.bits()).unwrap();
            assert!(i.set_event_bitmask(4, 0).is_err());
        }
        CreateEqIn::set_pas(&mut msg, 0, 0x1000).unwrap();
        assert_eq!(&msg[..2], &[0x03, 0x01]);
        // eqc at byte 0x10: log_eq_size 5 bits at 0x63, uar_page 24 bits at 0x68.
        assert_eq!(&msg[0x10 + 0xc..0x10 + 0x10], &[0x08, 0, 0, 0x08]);
        // event_bitmask[0] at bit 0x2c0 = byte 0x58.
        assert_eq!(&msg[0x58..0x60], &[0, 0, 0, 0, 0, 0, 0x04, 0x00]);
        assert_eq!(&msg[0x110..0x118], &[0, 0, 0, 0, 0, 0, 0x10, 0]);
    }

    // lib/eq.h: entries start with owner 1 (invalid for pass 0); the device flips per pass.
    #[test]
    fn eqe_ownership_alternates_per_pass() {
        assert!(!eqe_owned_by_sw(EQE_OWNER_INIT_VAL, 0, 3));
        assert!(eqe_owned_by_sw(eqe_owner_for(0, 3), 0, 3));
        assert_eq!(eqe_owner_for(8, 3), 1);
        assert!(eqe_owned_by_sw(1, 8, 3));
        assert!(!eqe_owned_by_sw(0, 8, 3));
    }
}
