// SPDX-License-Identifier: GPL-2.0
//! The EQ entry (`struct mlx5_eqe`, device.h) and the event payloads the driver decodes.
//!
//! Each payload layout is a view of the 28-byte `union ev_data` at EQE byte 0x20; get one with
//! the matching accessor of [`Eqe`] (e.g. [`Eqe::cmd`] for [`super::event_type::CMD`]).

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// An event queue entry (`struct mlx5_eqe`, device.h), 64 bytes.
    pub struct Eqe: CStruct "mlx5_eqe", 0x40 {
        /// Event type (`type` in device.h; see [`super::event_type`]).
        event_type, set_event_type: u32 @ 0x008, 0x8;
        /// Event sub-type (e.g. [`super::port_change_subtype`]).
        sub_type, set_sub_type: u32 @ 0x018, 0x8;
        /// The raw 28-byte payload (`union ev_data`).
        data, data_mut: bytes @ 0x100, 0xe0;
        /// Payload of a command completion event.
        cmd, cmd_mut: EqeCmd @ 0x100, 0xe0;
        /// Payload of a completion event.
        comp, comp_mut: EqeComp @ 0x100, 0xe0;
        /// Payload of a CQ error event.
        cq_err, cq_err_mut: EqeCqErr @ 0x100, 0xe0;
        /// Payload of a port change event.
        port, port_mut: EqePortState @ 0x100, 0xe0;
        /// Payload of a page request event.
        req_pages, req_pages_mut: EqePageReq @ 0x100, 0xe0;
        /// Payload of a QP/SRQ event (WQ_*_ERROR, PATH_MIG, COMM_EST, SRQ_*).
        qp_srq, qp_srq_mut: EqeQpSrq @ 0x100, 0xe0;
        /// Payload of a page fault event (sub-type [`super::pfault_subtype`]).
        page_fault, page_fault_mut: EqePageFault @ 0x100, 0xe0;
        /// Signature (unused).
        signature, set_signature: u32 @ 0x1f0, 0x8;
        /// Ownership byte; bit 0 alternates per pass over the EQ (see [`super::eqe_owned_by_sw`]).
        owner, set_owner: u32 @ 0x1f8, 0x8;
    }

    /// Command completion payload (`struct mlx5_eqe_cmd`).
    pub struct EqeCmd: CStruct "mlx5_eqe_cmd", 0x1c {
        /// Bit *n* set: command slot *n* completed.
        vector, set_vector: u32 @ 0x000, 0x20;
    }

    /// Completion event payload (`struct mlx5_eqe_comp`).
    pub struct EqeComp: CStruct "mlx5_eqe_comp", 0x1c {
        /// The CQ number: low 24 bits of the `cqn` word (eq.c masks with 0xffffff).
        cqn, set_cqn: u32 @ 0x0c8, 0x18;
    }

    /// CQ error payload (`struct mlx5_eqe_cq_err`).
    pub struct EqeCqErr: CStruct "mlx5_eqe_cq_err", 0x1c {
        /// The CQ number: low 24 bits of the `cqn` word.
        cqn, set_cqn: u32 @ 0x008, 0x18;
        /// Error syndrome.
        syndrome, set_syndrome: u32 @ 0x058, 0x8;
    }

    /// Port change payload (`struct mlx5_eqe_port_state`).
    pub struct EqePortState: CStruct "mlx5_eqe_port_state", 0x1c {
        /// The port number: the upper nibble of the `port` byte (`port >> 4`).
        port, set_port: u32 @ 0x040, 0x4;
    }

    /// QP/SRQ event payload (`struct mlx5_eqe_qp_srq`).
    pub struct EqeQpSrq: CStruct "mlx5_eqe_qp_srq", 0x1c {
        /// What the number names ([`super::event_queue_type`]: QP, RQ, SQ, DCT).
        queue_type, set_queue_type: u32 @ 0x0a0, 0x8;
        /// The QP or SRQ number: low 24 bits of the `qp_srq_n` word.
        qp_srq_n, set_qp_srq_n: u32 @ 0x0c8, 0x18;
    }

    /// Page request payload (`struct mlx5_eqe_page_req`).
    pub struct EqePageReq: CStruct "mlx5_eqe_page_req", 0x1c {
        /// Embedded CPU function flag (bit 15) and release-all flag (bit 14).
        ec_function, set_ec_function: u32 @ 0x000, 0x10;
        /// The function the pages are for.
        func_id, set_func_id: u32 @ 0x010, 0x10;
        /// Two's-complement `s32`: pages to give (positive) or to take back (negative).
        num_pages, set_num_pages: u32 @ 0x020, 0x20;
    }

    /// Page fault payload (`struct mlx5_eqe_page_fault`): a union of the WQE fault
    /// (sub-type [`super::pfault_subtype::WQE`]) and the RDMA fault
    /// ([`super::pfault_subtype::RDMA`]) layouts; the fields of each are prefixed `wqe_` /
    /// `rdma_` where the two differ.
    pub struct EqePageFault: CStruct "mlx5_eqe_page_fault", 0x1c {
        /// Bytes of the faulting WQE or request the device already handled.
        bytes_committed, set_bytes_committed: u32 @ 0x000, 0x20;
        /// RDMA fault: the R_Key of the request.
        r_key, set_r_key: u32 @ 0x020, 0x20;
        /// WQE fault: the faulting WQE's counter.
        wqe_index, set_wqe_index: u32 @ 0x030, 0x10;
        /// WQE fault: length of the packet that faulted.
        wqe_packet_length, set_wqe_packet_length: u32 @ 0x050, 0x10;
        /// RDMA fault: length of the packet that faulted.
        rdma_packet_length, set_rdma_packet_length: u32 @ 0x050, 0x10;
        /// WQE fault: token (the resume names the WQ, not this).
        wqe_token, set_wqe_token: u32 @ 0x060, 0x20;
        /// RDMA fault: the request's length (0: a prefetch).
        rdma_op_len, set_rdma_op_len: u32 @ 0x060, 0x20;
        /// RDMA fault: the request's virtual address.
        rdma_va, set_rdma_va: u64 @ 0x080, 0x40;
        /// WQE fault: `type << 24 | wq_num` ([`super::pfault_wqe_type`]).
        pftype_wq, set_pftype_wq: u32 @ 0x0c0, 0x20;
        /// RDMA fault: `type << 24 | token`, the token being the QP number.
        pftype_token, set_pftype_token: u32 @ 0x0c0, 0x20;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte offset of a declared field inside the EQE (payload fields sit at 0x20 + offset).
    fn byte(fields: &[crate::bits::Field], name: &str) -> u32 {
        fields.iter().find(|f| f.0 == name).expect(name).1 / 8
    }

    // struct mlx5_eqe (device.h, __packed): u8 rsvd0; u8 type; u8 rsvd1; u8 sub_type;
    // __be32 rsvd2[7]; union ev_data data (28 bytes); __be16 rsvd3; u8 signature; u8 owner.
    // The map (§1.5): type@0x01, sub_type@0x03, data@0x20, owner@0x3f; comp cqn@0x38,
    // port@0x28; page request func_id@0x22, num_pages@0x24.
    #[test]
    fn eqe_matches_device_h() {
        let f = Eqe::FIELDS;
        assert_eq!(Eqe::SIZE, 64);
        assert_eq!(byte(f, "event_type"), 0x01);
        assert_eq!(byte(f, "sub_type"), 0x03);
        assert_eq!(byte(f, "data"), 0x20);
        assert_eq!(byte(f, "signature"), 0x3e);
        assert_eq!(byte(f, "owner"), 0x3f);
        for payload in [
            "cmd",
            "comp",
            "cq_err",
            "port",
            "req_pages",
            "qp_srq",
            "page_fault",
        ] {
            assert_eq!(byte(f, payload), 0x20, "{payload}");
        }
        // union ev_data is __be32 raw[7].
        assert_eq!(EqeCmd::SIZE, 28);
        assert_eq!(0x20 + byte(EqeCmd::FIELDS, "vector"), 0x20);
        // mlx5_eqe_comp: __be32 reserved[6]; __be32 cqn -> 0x38, CQN in its low 24 bits.
        assert_eq!(EqeComp::FIELDS, &[("cqn", 0x18 * 8 + 8, 24)]);
        // mlx5_eqe_cq_err: __be32 cqn; u8 reserved1[7]; u8 syndrome -> syndrome at +0xb.
        assert_eq!(
            EqeCqErr::FIELDS,
            &[("cqn", 8, 24), ("syndrome", 0xb * 8, 8)]
        );
        // mlx5_eqe_port_state: u8 reserved0[8]; u8 port -> 0x28, port number in bits 7:4.
        assert_eq!(EqePortState::FIELDS, &[("port", 0x8 * 8, 4)]);
        // mlx5_eqe_qp_srq: __be32 reserved1[5]; u8 type; u8 reserved2[3]; __be32 qp_srq_n.
        assert_eq!(
            EqeQpSrq::FIELDS,
            &[("queue_type", 0x14 * 8, 8), ("qp_srq_n", 0x18 * 8 + 8, 24)]
        );
        // mlx5_eqe_page_req: __be16 ec_function; __be16 func_id; __be32 num_pages.
        assert_eq!(0x20 + byte(EqePageReq::FIELDS, "func_id"), 0x22);
        assert_eq!(0x20 + byte(EqePageReq::FIELDS, "num_pages"), 0x24);
        // mlx5_eqe_page_fault.wqe: __be32 bytes_committed; u16 reserved1; __be16 wqe_index;
        // u16 reserved2; __be16 packet_length; __be32 token; u8 reserved4[8]; __be32 pftype_wq.
        let pf = |n| byte(EqePageFault::FIELDS, n);
        assert_eq!(EqePageFault::SIZE, 28);
        assert_eq!(
            [
                pf("bytes_committed"),
                pf("wqe_index"),
                pf("wqe_packet_length"),
                pf("wqe_token"),
                pf("pftype_wq")
            ],
            [0, 6, 10, 12, 24]
        );
        // .rdma: __be32 bytes_committed; __be32 r_key; u16 reserved1; __be16 packet_length;
        // __be32 rdma_op_len; __be64 rdma_va; __be32 pftype_token.
        assert_eq!(
            [
                pf("r_key"),
                pf("rdma_packet_length"),
                pf("rdma_op_len"),
                pf("rdma_va"),
                pf("pftype_token")
            ],
            [4, 10, 12, 16, 24]
        );
    }

    #[test]
    fn eqe_payloads_land_at_their_device_h_bytes() {
        let mut e = Eqe::new();
        e.set_event_type(super::super::event_type::COMP.into());
        e.comp_mut().set_cqn(0x12_3456);
        e.set_owner(1);
        assert_eq!(&e.0[0x38..0x3c], &[0x00, 0x12, 0x34, 0x56]);
        assert_eq!(e.0[0x3f], 1);

        let mut e = Eqe::new();
        e.set_event_type(super::super::event_type::CMD.into());
        e.cmd_mut().set_vector(0x8000_0001);
        assert_eq!(e.0[1], 0x0a);
        assert_eq!(&e.0[0x20..0x24], &[0x80, 0, 0, 0x01]);

        let mut e = Eqe::new();
        e.set_sub_type(super::super::port_change_subtype::ACTIVE.into());
        e.port_mut().set_port(1);
        assert_eq!(e.0[3], 4);
        assert_eq!(e.0[0x28], 0x10);

        let mut e = Eqe::new();
        e.req_pages_mut().set_func_id(0);
        e.req_pages_mut().set_num_pages((-2i32) as u32);
        assert_eq!(&e.0[0x24..0x28], &[0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(e.req_pages().num_pages() as i32, -2);

        let mut e = Eqe::new();
        e.cq_err_mut().set_cqn(7);
        e.cq_err_mut().set_syndrome(1);
        assert_eq!(&e.0[0x20..0x24], &[0, 0, 0, 7]);
        assert_eq!(e.0[0x2b], 1);
    }
}
