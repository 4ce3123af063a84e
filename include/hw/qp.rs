// SPDX-License-Identifier: GPL-2.0
//! Queue pairs: the QP context and its address paths, CREATE/DESTROY/QUERY_QP and the state
//! transition commands (`RST2INIT_QP` … `2RST_QP`), with the QP states, service types, path
//! MTUs and the optional-parameter mask of the transitions.
//!
//! A QP is created in RESET with a [`Qpc`] and the page list of its buffer (receive queue
//! first, then send queue) after the fixed input; each transition then carries a full [`Qpc`]
//! of which the device reads the fields that transition sets, plus the optional ones named in
//! `opt_param_mask` ([`OptParam`]).

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// Queue pair context: transport, state, queues, address paths and RDMA parameters.
    pub struct Qpc: Ifc "qpc", 0xe8 {
        state, set_state: u32 @ 0x000, 0x4;
        lag_tx_port_affinity, set_lag_tx_port_affinity: u32 @ 0x004, 0x4;
        st, set_st: u32 @ 0x008, 0x8;
        isolate_vl_tc, set_isolate_vl_tc: u32 @ 0x012, 0x1;
        pm_state, set_pm_state: u32 @ 0x013, 0x2;
        req_e2e_credit_mode, set_req_e2e_credit_mode: u32 @ 0x016, 0x2;
        offload_type, set_offload_type: u32 @ 0x018, 0x4;
        end_padding_mode, set_end_padding_mode: u32 @ 0x01c, 0x2;
        wq_signature, set_wq_signature: u32 @ 0x020, 0x1;
        block_lb_mc, set_block_lb_mc: u32 @ 0x021, 0x1;
        atomic_like_write_en, set_atomic_like_write_en: u32 @ 0x022, 0x1;
        latency_sensitive, set_latency_sensitive: u32 @ 0x023, 0x1;
        drain_sigerr, set_drain_sigerr: u32 @ 0x025, 0x1;
        dp_ordering_force, set_dp_ordering_force: u32 @ 0x027, 0x1;
        pd, set_pd: u32 @ 0x028, 0x18;
        mtu, set_mtu: u32 @ 0x040, 0x3;
        log_msg_max, set_log_msg_max: u32 @ 0x043, 0x5;
        log_rq_size, set_log_rq_size: u32 @ 0x049, 0x4;
        log_rq_stride, set_log_rq_stride: u32 @ 0x04d, 0x3;
        no_sq, set_no_sq: u32 @ 0x050, 0x1;
        log_sq_size, set_log_sq_size: u32 @ 0x051, 0x4;
        retry_mode, set_retry_mode: u32 @ 0x056, 0x2;
        ts_format, set_ts_format: u32 @ 0x058, 0x2;
        rlky, set_rlky: u32 @ 0x05b, 0x1;
        ulp_stateless_offload_mode, set_ulp_stateless_offload_mode: u32 @ 0x05c, 0x4;
        counter_set_id, set_counter_set_id: u32 @ 0x060, 0x8;
        uar_page, set_uar_page: u32 @ 0x068, 0x18;
        user_index, set_user_index: u32 @ 0x088, 0x18;
        log_page_size, set_log_page_size: u32 @ 0x0a3, 0x5;
        remote_qpn, set_remote_qpn: u32 @ 0x0a8, 0x18;
        primary_address_path, primary_address_path_mut: Ads @ 0x0c0, 0x160;
        secondary_address_path, secondary_address_path_mut: Ads @ 0x220, 0x160;
        log_ack_req_freq, set_log_ack_req_freq: u32 @ 0x380, 0x4;
        log_sra_max, set_log_sra_max: u32 @ 0x388, 0x3;
        retry_count, set_retry_count: u32 @ 0x38d, 0x3;
        rnr_retry, set_rnr_retry: u32 @ 0x390, 0x3;
        fre, set_fre: u32 @ 0x394, 0x1;
        cur_rnr_retry, set_cur_rnr_retry: u32 @ 0x395, 0x3;
        cur_retry_count, set_cur_retry_count: u32 @ 0x398, 0x3;
        packet_pacing_rate_limit_index, set_packet_pacing_rate_limit_index: u32 @ 0x3b0, 0x10;
        next_send_psn, set_next_send_psn: u32 @ 0x3c8, 0x18;
        log_num_dci_stream_channels, set_log_num_dci_stream_channels: u32 @ 0x3e3, 0x5;
        cqn_snd, set_cqn_snd: u32 @ 0x3e8, 0x18;
        log_num_dci_errored_streams, set_log_num_dci_errored_streams: u32 @ 0x403, 0x5;
        deth_sqpn, set_deth_sqpn: u32 @ 0x408, 0x18;
        last_acked_psn, set_last_acked_psn: u32 @ 0x448, 0x18;
        ssn, set_ssn: u32 @ 0x468, 0x18;
        log_rra_max, set_log_rra_max: u32 @ 0x488, 0x3;
        atomic_mode, set_atomic_mode: u32 @ 0x48c, 0x4;
        rre, set_rre: u32 @ 0x490, 0x1;
        rwe, set_rwe: u32 @ 0x491, 0x1;
        rae, set_rae: u32 @ 0x492, 0x1;
        page_offset, set_page_offset: u32 @ 0x494, 0x6;
        dp_ordering_1, set_dp_ordering_1: u32 @ 0x49c, 0x1;
        cd_slave_receive, set_cd_slave_receive: u32 @ 0x49d, 0x1;
        cd_slave_send, set_cd_slave_send: u32 @ 0x49e, 0x1;
        cd_master, set_cd_master: u32 @ 0x49f, 0x1;
        min_rnr_nak, set_min_rnr_nak: u32 @ 0x4a3, 0x5;
        next_rcv_psn, set_next_rcv_psn: u32 @ 0x4a8, 0x18;
        xrcd, set_xrcd: u32 @ 0x4c8, 0x18;
        cqn_rcv, set_cqn_rcv: u32 @ 0x4e8, 0x18;
        dbr_addr, set_dbr_addr: u64 @ 0x500, 0x40;
        q_key, set_q_key: u32 @ 0x540, 0x20;
        rq_type, set_rq_type: u32 @ 0x565, 0x3;
        srqn_rmpn_xrqn, set_srqn_rmpn_xrqn: u32 @ 0x568, 0x18;
        rmsn, set_rmsn: u32 @ 0x588, 0x18;
        hw_sq_wqebb_counter, set_hw_sq_wqebb_counter: u32 @ 0x5a0, 0x10;
        sw_sq_wqebb_counter, set_sw_sq_wqebb_counter: u32 @ 0x5b0, 0x10;
        hw_rq_counter, set_hw_rq_counter: u32 @ 0x5c0, 0x20;
        sw_rq_counter, set_sw_rq_counter: u32 @ 0x5e0, 0x20;
        cgs, set_cgs: u32 @ 0x62f, 0x1;
        cs_req, set_cs_req: u32 @ 0x630, 0x8;
        cs_res, set_cs_res: u32 @ 0x638, 0x8;
        dc_access_key, set_dc_access_key: u64 @ 0x640, 0x40;
        dbr_umem_valid, set_dbr_umem_valid: u32 @ 0x683, 0x1;
    }

    /// Address path of a QP (primary or alternate): P_Key index, GID index, remote GID/IP and MAC,
    /// rates and timeouts.
    pub struct Ads: Ifc "ads", 0x2c {
        fl, set_fl: u32 @ 0x000, 0x1;
        free_ar, set_free_ar: u32 @ 0x001, 0x1;
        pkey_index, set_pkey_index: u32 @ 0x010, 0x10;
        plane_index, set_plane_index: u32 @ 0x020, 0x8;
        grh, set_grh: u32 @ 0x028, 0x1;
        mlid, set_mlid: u32 @ 0x029, 0x7;
        rlid, set_rlid: u32 @ 0x030, 0x10;
        ack_timeout, set_ack_timeout: u32 @ 0x040, 0x5;
        src_addr_index, set_src_addr_index: u32 @ 0x048, 0x8;
        stat_rate, set_stat_rate: u32 @ 0x054, 0x4;
        hop_limit, set_hop_limit: u32 @ 0x058, 0x8;
        tclass, set_tclass: u32 @ 0x064, 0x8;
        flow_label, set_flow_label: u32 @ 0x06c, 0x14;
        rgid_rip, rgid_rip_mut: bytes @ 0x080, 0x80;
        f_dscp, set_f_dscp: u32 @ 0x104, 0x1;
        f_ecn, set_f_ecn: u32 @ 0x105, 0x1;
        f_eth_prio, set_f_eth_prio: u32 @ 0x107, 0x1;
        ecn, set_ecn: u32 @ 0x108, 0x2;
        dscp, set_dscp: u32 @ 0x10a, 0x6;
        udp_sport, set_udp_sport: u32 @ 0x110, 0x10;
        dei_cfi, set_dei_cfi: u32 @ 0x120, 0x1;
        eth_prio, set_eth_prio: u32 @ 0x121, 0x3;
        sl, set_sl: u32 @ 0x124, 0x4;
        vhca_port_num, set_vhca_port_num: u32 @ 0x128, 0x8;
        rmac_47_32, set_rmac_47_32: u32 @ 0x130, 0x10;
        rmac_31_0, set_rmac_31_0: u32 @ 0x140, 0x20;
    }

    /// The error syndrome of the CQE that moved a QP to an error state (in the QP context
    /// extension).
    pub struct CqeErrorSyndrome: Ifc "cqe_error_syndrome", 0x4 {
        hw_error_syndrome, set_hw_error_syndrome: u32 @ 0x000, 0x8;
        hw_syndrome_type, set_hw_syndrome_type: u32 @ 0x008, 0x4;
        vendor_error_syndrome, set_vendor_error_syndrome: u32 @ 0x010, 0x8;
        syndrome, set_syndrome: u32 @ 0x018, 0x8;
    }

    /// QP context extension, present in `QUERY_QP` output when `qpc_ext` was requested.
    pub struct QpContextExtension: Ifc "qp_context_extension", 0xc0 {
        error_syndrome, error_syndrome_mut: CqeErrorSyndrome @ 0x060, 0x20;
    }

    /// The [`QpContextExtension`] followed by the page list (`pas[]`).
    pub struct QpcExtensionAndPasListIn: Ifc "qpc_extension_and_pas_list_in", 0xc0 {
        qpc_data_extension, qpc_data_extension_mut: QpContextExtension @ 0x000, 0x600;
        pas, set_pas: tail u64 @ 0x600, 0x40;
    }

    /// The tail of a `QUERY_QP` output (`union mlx5_ifc_qp_pas_or_qpc_ext_and_pas_bits`): the page
    /// list alone, or the context extension and then the page list (`qpc_ext`). The page-list-only
    /// member (`qp_pas_list`) has no fixed part; see [`QueryQpOut::pas`].
    pub struct QpPasOrQpcExtAndPas: Ifc "qp_pas_or_qpc_ext_and_pas", 0xc0 {
        qpc_ext_and_pas_list, qpc_ext_and_pas_list_mut: QpcExtensionAndPasListIn @ 0x000, 0x600;
    }

    /// Input of `CREATE_QP`, followed by the QP buffer page list (`pas[]`).
    pub struct CreateQpIn: Ifc "create_qp_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpc_ext, set_qpc_ext: u32 @ 0x040, 0x1;
        input_qpn, set_input_qpn: u32 @ 0x048, 0x18;
        opt_param_mask, set_opt_param_mask: u32 @ 0x080, 0x20;
        ece, set_ece: u32 @ 0x0a0, 0x20;
        qpc, qpc_mut: Qpc @ 0x0c0, 0x740;
        wq_umem_offset, set_wq_umem_offset: u64 @ 0x800, 0x40;
        wq_umem_id, set_wq_umem_id: u32 @ 0x840, 0x20;
        wq_umem_valid, set_wq_umem_valid: u32 @ 0x860, 0x1;
        pas, set_pas: tail u64 @ 0x880, 0x40;
    }

    /// Output of `CREATE_QP`: the QP number.
    pub struct CreateQpOut: Ifc "create_qp_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        qpn, set_qpn: u32 @ 0x048, 0x18;
        ece, set_ece: u32 @ 0x060, 0x20;
    }

    /// Input of `DESTROY_QP`.
    pub struct DestroyQpIn: Ifc "destroy_qp_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpn, set_qpn: u32 @ 0x048, 0x18;
    }

    /// Output of `DESTROY_QP`.
    pub struct DestroyQpOut: Ifc "destroy_qp_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_QP`.
    pub struct QueryQpIn: Ifc "query_qp_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpc_ext, set_qpc_ext: u32 @ 0x040, 0x1;
        qpn, set_qpn: u32 @ 0x048, 0x18;
    }

    /// Output of `QUERY_QP`: the QP context, then the page list (or the context extension and the
    /// page list if `qpc_ext` was set).
    pub struct QueryQpOut: Ifc "query_qp_out", 0x1d0 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        opt_param_mask, set_opt_param_mask: u32 @ 0x080, 0x20;
        ece, set_ece: u32 @ 0x0a0, 0x20;
        qpc, qpc_mut: Qpc @ 0x0c0, 0x740;
        qp_pas_or_qpc_ext_and_pas, qp_pas_or_qpc_ext_and_pas_mut: QpPasOrQpcExtAndPas @ 0x880, 0x600;
    }

    /// Input of `RST2INIT_QP`: the context fields the transition sets, selected by `opt_param_mask`
    /// ([`OptParam`]) where optional.
    pub struct Rst2InitQpIn: Ifc "rst2init_qp_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpn, set_qpn: u32 @ 0x048, 0x18;
        opt_param_mask, set_opt_param_mask: u32 @ 0x080, 0x20;
        ece, set_ece: u32 @ 0x0a0, 0x20;
        qpc, qpc_mut: Qpc @ 0x0c0, 0x740;
    }

    /// Output of `RST2INIT_QP`.
    pub struct Rst2InitQpOut: Ifc "rst2init_qp_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        ece, set_ece: u32 @ 0x060, 0x20;
    }

    /// Input of `INIT2INIT_QP`: the context fields the transition sets, selected by
    /// `opt_param_mask` ([`OptParam`]) where optional.
    pub struct Init2InitQpIn: Ifc "init2init_qp_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpn, set_qpn: u32 @ 0x048, 0x18;
        opt_param_mask, set_opt_param_mask: u32 @ 0x080, 0x20;
        ece, set_ece: u32 @ 0x0a0, 0x20;
        qpc, qpc_mut: Qpc @ 0x0c0, 0x740;
    }

    /// Output of `INIT2INIT_QP`.
    pub struct Init2InitQpOut: Ifc "init2init_qp_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        ece, set_ece: u32 @ 0x060, 0x20;
    }

    /// Input of `INIT2RTR_QP`: the context fields the transition sets, selected by `opt_param_mask`
    /// ([`OptParam`]) where optional.
    pub struct Init2RtrQpIn: Ifc "init2rtr_qp_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpn, set_qpn: u32 @ 0x048, 0x18;
        opt_param_mask, set_opt_param_mask: u32 @ 0x080, 0x20;
        ece, set_ece: u32 @ 0x0a0, 0x20;
        qpc, qpc_mut: Qpc @ 0x0c0, 0x740;
    }

    /// Output of `INIT2RTR_QP`.
    pub struct Init2RtrQpOut: Ifc "init2rtr_qp_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        ece, set_ece: u32 @ 0x060, 0x20;
    }

    /// Input of `RTR2RTS_QP`: the context fields the transition sets, selected by `opt_param_mask`
    /// ([`OptParam`]) where optional.
    pub struct Rtr2RtsQpIn: Ifc "rtr2rts_qp_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpn, set_qpn: u32 @ 0x048, 0x18;
        opt_param_mask, set_opt_param_mask: u32 @ 0x080, 0x20;
        ece, set_ece: u32 @ 0x0a0, 0x20;
        qpc, qpc_mut: Qpc @ 0x0c0, 0x740;
    }

    /// Output of `RTR2RTS_QP`.
    pub struct Rtr2RtsQpOut: Ifc "rtr2rts_qp_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        ece, set_ece: u32 @ 0x060, 0x20;
    }

    /// Input of `RTS2RTS_QP`: the context fields the transition sets, selected by `opt_param_mask`
    /// ([`OptParam`]) where optional.
    pub struct Rts2RtsQpIn: Ifc "rts2rts_qp_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpn, set_qpn: u32 @ 0x048, 0x18;
        opt_param_mask, set_opt_param_mask: u32 @ 0x080, 0x20;
        ece, set_ece: u32 @ 0x0a0, 0x20;
        qpc, qpc_mut: Qpc @ 0x0c0, 0x740;
    }

    /// Output of `RTS2RTS_QP`.
    pub struct Rts2RtsQpOut: Ifc "rts2rts_qp_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        ece, set_ece: u32 @ 0x060, 0x20;
    }

    /// Input of `SQERR2RTS_QP`: the context fields the transition sets, selected by
    /// `opt_param_mask` ([`OptParam`]) where optional.
    pub struct Sqerr2RtsQpIn: Ifc "sqerr2rts_qp_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpn, set_qpn: u32 @ 0x048, 0x18;
        opt_param_mask, set_opt_param_mask: u32 @ 0x080, 0x20;
        qpc, qpc_mut: Qpc @ 0x0c0, 0x740;
    }

    /// Output of `SQERR2RTS_QP`.
    pub struct Sqerr2RtsQpOut: Ifc "sqerr2rts_qp_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `SQD_RTS_QP`: the context fields the transition sets, selected by `opt_param_mask`
    /// ([`OptParam`]) where optional.
    pub struct Sqd2RtsQpIn: Ifc "sqd2rts_qp_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpn, set_qpn: u32 @ 0x048, 0x18;
        opt_param_mask, set_opt_param_mask: u32 @ 0x080, 0x20;
        qpc, qpc_mut: Qpc @ 0x0c0, 0x740;
    }

    /// Output of `SQD_RTS_QP`.
    pub struct Sqd2RtsQpOut: Ifc "sqd2rts_qp_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `2ERR_QP`: move a QP from any state to ERR.
    pub struct Qp2ErrIn: Ifc "qp_2err_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpn, set_qpn: u32 @ 0x048, 0x18;
    }

    /// Output of `2ERR_QP`.
    pub struct Qp2ErrOut: Ifc "qp_2err_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `2RST_QP`: move a QP from any state to RESET.
    pub struct Qp2RstIn: Ifc "qp_2rst_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        qpn, set_qpn: u32 @ 0x048, 0x18;
    }

    /// Output of `2RST_QP`.
    pub struct Qp2RstOut: Ifc "qp_2rst_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }
}

/// QP states in the context (`qpc.state`; `MLX5_QPC_STATE_*`, mlx5_ifc.h).
///
/// mlx5_ifc.h calls 0x7 `SQD`; the PRM and qp.h ([`qp_state`]) distinguish SQ drained (0x5)
/// from SQ draining (0x7), and the device reports both.
pub mod qpc_state {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_QPC_STATE_", qpc_state_name;
        RST = 0x0, "RST";
        INIT = 0x1, "INIT";
        RTR = 0x2, "RTR";
        RTS = 0x3, "RTS";
        /// Send queue error: a requester error on an unreliable QP.
        SQER = 0x4, "SQER";
        ERR = 0x6, "ERR";
        /// Send queue draining (see the module documentation).
        SQD = 0x7, "SQD";
        SUSPENDED = 0x9, "SUSPENDED";
    }
}

/// QP states as the mlx5 drivers decode `qpc.state` (`enum mlx5_qp_state`, qp.h).
pub mod qp_state {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_QP_STATE_", qp_state_name;
        RST = 0, "RST";
        INIT = 1, "INIT";
        RTR = 2, "RTR";
        RTS = 3, "RTS";
        SQER = 4, "SQER";
        /// Send queue drained.
        SQD = 5, "SQD";
        ERR = 6, "ERR";
        /// Send queue draining (reported as SQD to verbs).
        SQ_DRAINING = 7, "SQ_DRAINING";
        SUSPENDED = 9, "SUSPENDED";
    }
}

/// Transport service types (`qpc.st`; `MLX5_QPC_ST_*`, mlx5_ifc.h).
pub mod qpc_st {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_QPC_ST_", qpc_st_name;
        /// Reliable connected.
        RC = 0x0, "RC";
        /// Unreliable connected.
        UC = 0x1, "UC";
        /// Unreliable datagram.
        UD = 0x2, "UD";
        /// Extended reliable connected.
        XRC = 0x3, "XRC";
        /// Dynamically connected initiator.
        DCI = 0x5, "DCI";
        /// Special QP 0 (subnet management; not on Ethernet ports).
        QP0 = 0x7, "QP0";
        /// Special QP 1 (general services: RoCE connection management MADs).
        QP1 = 0x8, "QP1";
        RAW_DATAGRAM = 0x9, "RAW_DATAGRAM";
        /// The driver's UMR QP (memory registration work requests).
        REG_UMR = 0xc, "REG_UMR";
    }
}

/// Path migration states (`qpc.pm_state`; `MLX5_QPC_PM_STATE_*`, mlx5_ifc.h).
pub mod pm_state {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_QPC_PM_STATE_", pm_state_name;
        ARMED = 0x0, "ARMED";
        REARM = 0x1, "REARM";
        RESERVED = 0x2, "RESERVED";
        MIGRATED = 0x3, "MIGRATED";
    }
}

/// Path MTUs (`qpc.mtu`; `MLX5_QPC_MTU_*`, mlx5_ifc.h), the IB MTU enumeration.
pub mod mtu {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_QPC_MTU_", mtu_name;
        MTU_256 = 0x1, "256_BYTES";
        MTU_512 = 0x2, "512_BYTES";
        MTU_1K = 0x3, "1K_BYTES";
        MTU_2K = 0x4, "2K_BYTES";
        MTU_4K = 0x5, "4K_BYTES";
        /// Raw Ethernet QPs take the port MTU.
        RAW_ETHERNET_QP = 0x7, "RAW_ETHERNET_QP";
    }

    /// Payload bytes of an IB MTU code (256 << (code - 1)), `None` for other codes.
    pub fn mtu_bytes(code: u8) -> Option<u32> {
        (MTU_256..=MTU_4K)
            .contains(&code)
            .then(|| 256 << (code - MTU_256))
    }
}

/// Atomic operation modes of the responder (`qpc.atomic_mode`; `MLX5_QPC_ATOMIC_MODE_*`).
pub mod atomic_mode {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_QPC_ATOMIC_MODE_", atomic_mode_name;
        /// 8-byte atomics as the IB specification defines them.
        IB_SPEC = 0x1, "IB_SPEC";
        ONLY_8B = 0x2, "ONLY_8B";
        UP_TO_8B = 0x3, "UP_TO_8B";
        UP_TO_16B = 0x4, "UP_TO_16B";
        UP_TO_32B = 0x5, "UP_TO_32B";
        UP_TO_64B = 0x6, "UP_TO_64B";
        UP_TO_128B = 0x7, "UP_TO_128B";
        UP_TO_256B = 0x8, "UP_TO_256B";
    }
}

/// Receive queue kinds (`qpc.rq_type`; qp.h).
pub mod rq_type {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_", rq_type_name;
        /// The QP has its own receive queue.
        NON_ZERO_RQ = 0x0, "NON_ZERO_RQ";
        /// Receives come from the SRQ (or RMP / XRC SRQ) in `srqn_rmpn_xrqn`.
        SRQ_RQ = 0x1, "SRQ_RQ";
        CRQ_RQ = 0x2, "CRQ_RQ";
        /// No receive queue (send-only QPs, XRC initiators).
        ZERO_LEN_RQ = 0x3, "ZERO_LEN_RQ";
    }
}

bitflags::bitflags! {
    /// `opt_param_mask` of the QP transition commands: the optional context fields the
    /// transition applies (`MLX5_QP_OPTPAR_*`, qp.h).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct OptParam: u32 {
        /// The secondary (alternate) address path.
        const ALT_ADDR_PATH = 1 << 0;
        /// `rre`: remote reads allowed.
        const RRE = 1 << 1;
        /// `rae`: remote atomics allowed.
        const RAE = 1 << 2;
        /// `rwe`: remote writes allowed.
        const RWE = 1 << 3;
        /// `primary_address_path.pkey_index`.
        const PKEY_INDEX = 1 << 4;
        /// `q_key`.
        const Q_KEY = 1 << 5;
        /// `min_rnr_nak`.
        const RNR_TIMEOUT = 1 << 6;
        /// The whole primary address path.
        const PRIMARY_ADDR_PATH = 1 << 7;
        /// `log_sra_max`: outstanding RDMA reads / atomics as requester.
        const SRA_MAX = 1 << 8;
        /// `log_rra_max`: outstanding RDMA reads / atomics as responder.
        const RRA_MAX = 1 << 9;
        /// `pm_state`.
        const PM_STATE = 1 << 10;
        /// `retry_count`.
        const RETRY_COUNT = 1 << 12;
        /// `rnr_retry`.
        const RNR_RETRY = 1 << 13;
        /// `primary_address_path.ack_timeout`.
        const ACK_TIMEOUT = 1 << 14;
        /// `lag_tx_port_affinity`.
        const LAG_TX_AFF = 1 << 15;
        /// `primary_address_path.vhca_port_num`.
        const PRI_PORT = 1 << 16;
        /// `srqn_rmpn_xrqn`.
        const SRQN = 1 << 18;
        /// `cqn_rcv`.
        const CQN_RCV = 1 << 19;
        /// DC handshake (DCT).
        const DC_HS = 1 << 20;
        /// `dc_access_key`.
        const DC_KEY = 1 << 21;
        /// `packet_pacing_rate_limit_index`.
        const PP_INDEX = 1 << 22;
        /// `counter_set_id`.
        const COUNTER_SET_ID = 1 << 25;
    }
}

/// Byte offset of the page list in a `QUERY_QP` output queried without `qpc_ext` (the
/// `qp_pas_list` member of [`QpPasOrQpcExtAndPas`]).
const QUERY_QP_PAS: usize = 0x110;

impl QueryQpOut {
    /// Byte offset of the page list in a whole `QUERY_QP` output: right after the QP context,
    /// or after the [`QpContextExtension`] if the query set `qpc_ext`.
    pub const fn pas_offset(qpc_ext: bool) -> usize {
        if qpc_ext {
            QUERY_QP_PAS + QpContextExtension::SIZE
        } else {
            QUERY_QP_PAS
        }
    }

    /// Page address `i` of the QP buffer in a whole `QUERY_QP` output.
    pub fn pas(msg: &[u8], qpc_ext: bool, i: usize) -> Option<u64> {
        let r = crate::bits::tail_range(msg.len(), Self::pas_offset(qpc_ext), 8, i)?;
        Some(crate::bits::get64(&msg[r], 0, 64))
    }

    /// Writes page address `i` of the QP buffer in a whole `QUERY_QP` output.
    pub fn set_pas(
        msg: &mut [u8],
        qpc_ext: bool,
        i: usize,
        pa: u64,
    ) -> Result<(), crate::bits::OutOfBounds> {
        let r = crate::bits::tail_range(msg.len(), Self::pas_offset(qpc_ext), 8, i)
            .ok_or(crate::bits::OutOfBounds)?;
        crate::bits::set64(&mut msg[r], 0, 64, pa);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // create_qp_in: opt_param_mask at 0x80, ece at 0xa0, qpc at bit 0xc0 (byte 0x18),
    // pas[] after the fixed 0x110 bytes; qpc.primary_address_path at qpc bit 0xc0.
    #[test]
    fn create_qp_places_context_path_and_pas() {
        let mut msg = [0u8; CreateQpIn::SIZE + 16];
        {
            let (i, _) =
                <CreateQpIn as zerocopy::FromBytes>::mut_from_prefix(&mut msg[..]).unwrap();
            i.set_opcode(crate::opcode::CREATE_QP.into());
            let c = i.qpc_mut();
            c.set_st(qpc_st::RC.into());
            c.set_pm_state(pm_state::MIGRATED.into());
            c.set_pd(0x12_3456);
            c.set_mtu(mtu::MTU_1K.into());
            c.set_log_rq_size(7);
            c.set_cqn_snd(0xab);
            c.set_dbr_addr(0x1122_3344_5566_7788);
            c.primary_address_path_mut().set_vhca_port_num(1);
        }
        CreateQpIn::set_pas(&mut msg, 1, 0xdead_b000).unwrap();
        assert_eq!(&msg[..2], &[0x05, 0x00]);
        let q = 0x18;
        assert_eq!(&msg[q..q + 4], &[0x00, 0x00, 0x18, 0x00]);
        assert_eq!(&msg[q + 4..q + 8], &[0, 0x12, 0x34, 0x56]);
        assert_eq!(msg[q + 8] >> 5, mtu::MTU_1K);
        assert_eq!(msg[q + 9] & 0x78, 7 << 3);
        assert_eq!(msg[q + 0x18 + 0x25], 1);
        assert_eq!(&msg[q + 0x7c..q + 0x80], &[0, 0, 0, 0xab]);
        assert_eq!(
            &msg[q + 0xa0..q + 0xa8],
            &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(CreateQpIn::pas(&msg, 1), Some(0xdead_b000));
        assert_eq!(&msg[0x118..0x120], &[0, 0, 0, 0, 0xde, 0xad, 0xb0, 0]);
        assert_eq!(CreateQpIn::pas(&msg, 2), None);
    }

    // Every transition input: qpn at 0x48, opt_param_mask at 0x80, qpc at 0xc0.
    #[test]
    fn transitions_share_the_modify_layout() {
        let mut i = Init2RtrQpIn::new();
        i.set_qpn(0x42);
        i.set_opt_param_mask((OptParam::PKEY_INDEX | OptParam::Q_KEY).bits());
        i.qpc_mut().set_next_rcv_psn(0xab_cdef);
        i.qpc_mut().set_remote_qpn(0x77);
        i.qpc_mut()
            .primary_address_path_mut()
            .set_rmac_31_0(0x0a0b_0c0d);
        assert_eq!(&i.0[8..12], &[0, 0, 0, 0x42]);
        assert_eq!(&i.0[0x10..0x14], &[0, 0, 0, 0x30]);
        assert_eq!(&i.0[0x18 + 0x14..0x18 + 0x18], &[0, 0, 0, 0x77]);
        assert_eq!(&i.0[0x18 + 0x94..0x18 + 0x98], &[0, 0xab, 0xcd, 0xef]);
        assert_eq!(
            &i.0[0x18 + 0x18 + 0x28..0x18 + 0x18 + 0x2c],
            &[10, 11, 12, 13]
        );
        for size in [
            Rst2InitQpIn::SIZE,
            Init2InitQpIn::SIZE,
            Rtr2RtsQpIn::SIZE,
            Rts2RtsQpIn::SIZE,
            Sqerr2RtsQpIn::SIZE,
            Sqd2RtsQpIn::SIZE,
        ] {
            assert_eq!(size, Init2RtrQpIn::SIZE);
        }
        assert_eq!(Qp2ErrIn::SIZE, 0x10);
        assert_eq!(Qp2RstIn::SIZE, 0x10);
    }

    // query_qp_out: the page list follows the 0x110-byte fixed part, or the 0xc0-byte context
    // extension when qpc_ext was requested (error_syndrome at extension bit 0x60).
    #[test]
    fn query_qp_page_list_follows_the_optional_extension() {
        let mut msg = [0u8; QueryQpOut::SIZE + 8];
        QueryQpOut::set_pas(&mut msg, false, 0, 0x1000).unwrap();
        QueryQpOut::set_pas(&mut msg, true, 0, 0x2000).unwrap();
        assert_eq!(QueryQpOut::pas(&msg, false, 0), Some(0x1000));
        assert_eq!(QueryQpOut::pas(&msg, true, 0), Some(0x2000));
        assert_eq!(QueryQpOut::pas(&msg, true, 1), None);
        assert_eq!(QueryQpOut::pas_offset(true), QueryQpOut::SIZE);
        let (o, _) = <QueryQpOut as zerocopy::FromBytes>::mut_from_prefix(&mut msg[..]).unwrap();
        o.qp_pas_or_qpc_ext_and_pas_mut()
            .qpc_ext_and_pas_list_mut()
            .qpc_data_extension_mut()
            .error_syndrome_mut()
            .set_syndrome(0x15);
        assert_eq!(msg[0x110 + 0xf], 0x15);
    }

    #[test]
    fn mtu_codes_map_to_bytes() {
        assert_eq!(mtu::mtu_bytes(mtu::MTU_256), Some(256));
        assert_eq!(mtu::mtu_bytes(mtu::MTU_1K), Some(1024));
        assert_eq!(mtu::mtu_bytes(mtu::MTU_4K), Some(4096));
        assert_eq!(mtu::mtu_bytes(0), None);
        assert_eq!(mtu::mtu_bytes(mtu::RAW_ETHERNET_QP), None);
        assert_eq!(qpc_state::qpc_state_name(6), "ERR");
        assert_eq!(qp_state::qp_state_name(5), "SQD");
    }
}
