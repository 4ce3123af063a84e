// SPDX-License-Identifier: GPL-2.0
//! The mlx5 user ABI (`include/uapi/rdma/mlx5-abi.h`, identical to rdma-core's copy) that
//! libmlx5 speaks in the driver-private part of uverbs calls. Layouts are the C ones, sizes
//! checked below against what gcc gives the uapi structs.

use zerocopy_derive::{
    FromBytes,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

/// The ABI version libmlx5 accepts (`MLX5_IB_UVERBS_ABI_VERSION`).
pub(crate) const UVERBS_ABI_VERSION: u32 = 1;

/// `MLX5_IB_ALLOC_UCTX_DEVX`: the context wants DEVX (raw PRM commands from user space),
/// which this driver does not offer; libmlx5 then asks again without it.
pub(crate) const ALLOC_UCTX_DEVX: u32 = 1 << 0;

/// `struct mlx5_ib_alloc_ucontext_req_v2`: what libmlx5 asks for when it opens the device.
/// Version 0 is its first 8 bytes.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct AllocUcontextReq {
    pub(crate) total_num_bfregs: u32,
    pub(crate) num_low_latency_bfregs: u32,
    pub(crate) flags: u32,
    pub(crate) comp_mask: u32,
    pub(crate) max_cqe_version: u8,
    pub(crate) reserved0: u8,
    pub(crate) reserved1: u16,
    pub(crate) reserved2: u32,
    pub(crate) lib_caps: u64,
}

/// The smallest request (`struct mlx5_ib_alloc_ucontext_req`, version 0).
pub(crate) const ALLOC_UCONTEXT_REQ_V0_LEN: usize = 8;

/// `struct mlx5_ib_alloc_ucontext_resp`: the context's geometry as libmlx5 uses it.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct AllocUcontextResp {
    pub(crate) qp_tab_size: u32,
    pub(crate) bf_reg_size: u32,
    pub(crate) tot_bfregs: u32,
    pub(crate) cache_line_size: u32,
    pub(crate) max_sq_desc_sz: u16,
    pub(crate) max_rq_desc_sz: u16,
    pub(crate) max_send_wqebb: u32,
    pub(crate) max_recv_wr: u32,
    pub(crate) max_srq_recv_wr: u32,
    pub(crate) num_ports: u16,
    pub(crate) flow_action_flags: u16,
    pub(crate) comp_mask: u32,
    pub(crate) response_length: u32,
    pub(crate) cqe_version: u8,
    pub(crate) cmds_supp_uhw: u8,
    pub(crate) eth_min_inline: u8,
    pub(crate) clock_info_versions: u8,
    pub(crate) hca_core_clock_offset: u64,
    pub(crate) log_uar_size: u32,
    pub(crate) num_uars_per_page: u32,
    pub(crate) num_dyn_bfregs: u32,
    pub(crate) dump_fill_mkey: u32,
}

/// `MLX5_USER_CMDS_SUPP_UHW_CREATE_AH`: create_ah answers with the destination MAC.
pub(crate) const CMDS_SUPP_UHW_CREATE_AH: u8 = 1 << 1;

/// `struct mlx5_ib_alloc_pd_resp`: the PD number, which libmlx5 puts into its objects.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct AllocPdResp {
    pub(crate) pdn: u32,
}

/// mmap commands (`enum mlx5_ib_mmap_cmd`), in bits 8..16 of the page offset.
pub(crate) mod mmap_cmd {
    /// `MLX5_IB_MMAP_REGULAR_PAGE`: static UAR page `index`.
    pub(crate) const REGULAR_PAGE: usize = 0;
    /// `MLX5_IB_MMAP_CORE_CLOCK`: the initialization segment's page with the internal timer,
    /// read-only.
    pub(crate) const CORE_CLOCK: usize = 5;
    /// `MLX5_IB_MMAP_CLOCK_INFO`: the clock-info page of version `index`, read-only.
    pub(crate) const CLOCK_INFO: usize = 7;
    /// `MLX5_IB_MMAP_OFFSET_START`: from this command on, offsets of driver objects' mmap
    /// entries (UAR objects).
    pub(crate) const OFFSET_START: usize = 9;
}

/// `MLX5_LIB_CAP_DYN_UAR`: the library allocates every UAR page itself (UAR objects) and
/// wants no static ones.
pub(crate) const LIB_CAP_DYN_UAR: u64 = 1 << 1;

/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET`: `hca_core_clock_offset` is valid, the
/// internal timer can be mapped (mmap command [`mmap_cmd::CORE_CLOCK`]).
pub(crate) const UCTX_RESP_CORE_CLOCK_OFFSET: u32 = 1 << 0;

/// `MLX5_IB_CLOCK_INFO_V1`: the one version of `struct mlx5_ib_clock_info` (its bit in
/// `clock_info_versions`, its index in the mmap offset).
pub(crate) const CLOCK_INFO_V1: usize = 0;

/// The command and index libmlx5 encodes in an mmap page offset (mlx5.h `set_command`,
/// `set_index`; mlx5_ib `get_command`, `get_index`): command in bits 8..16, index in bits
/// 0..8 and, above 255, from bit 16 on.
pub(crate) fn decode_pgoff(pgoff: usize) -> (usize, usize) {
    ((pgoff >> 8) & 0xff, (pgoff & 0xff) | ((pgoff >> 16) << 8))
}

/// `struct mlx5_ib_create_cq`: a user CQ's buffer and doorbell record in the process's
/// memory, its CQE size, optional CQE compression and the UAR page of its doorbell.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct CreateCqReq {
    pub(crate) buf_addr: u64,
    pub(crate) db_addr: u64,
    pub(crate) cqe_size: u32,
    pub(crate) cqe_comp_en: u8,
    pub(crate) cqe_comp_res_format: u8,
    pub(crate) flags: u16,
    pub(crate) uar_page_index: u16,
    pub(crate) reserved0: u16,
    pub(crate) reserved1: u32,
}

/// The shortest create_cq request mlx5_ib takes (up to `cqe_comp_res_format`).
pub(crate) const CREATE_CQ_REQ_MIN_LEN: usize = 22;

/// `MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX`: `uar_page_index` names the doorbell's page.
pub(crate) const CREATE_CQ_FLAGS_UAR_PAGE_INDEX: u16 = 1 << 1;

/// `struct mlx5_ib_resize_cq`: the new CQE buffer in the process's memory and its CQE size
/// (libmlx5 keeps the CQ's).
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct ResizeCqReq {
    pub(crate) buf_addr: u64,
    pub(crate) cqe_size: u16,
    pub(crate) reserved0: u16,
    pub(crate) reserved1: u32,
}

/// mlx5_ib takes the whole resize request (`ib_copy_validate_udata_in(.., reserved1)`).
pub(crate) const RESIZE_CQ_REQ_MIN_LEN: usize = 16;

/// `struct mlx5_ib_create_cq_resp`.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct CreateCqResp {
    pub(crate) cqn: u32,
    pub(crate) reserved: u32,
}

/// `struct mlx5_ib_create_qp` (without the DCI streams tail, which must be zero): a user
/// QP's buffer (receive queue first, then send queue) and doorbell record, its queue
/// geometry, flags, user index and doorbell register.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct CreateQpReq {
    pub(crate) buf_addr: u64,
    pub(crate) db_addr: u64,
    pub(crate) sq_wqe_count: u32,
    pub(crate) rq_wqe_count: u32,
    pub(crate) rq_wqe_shift: u32,
    pub(crate) flags: u32,
    pub(crate) uidx: u32,
    pub(crate) bfreg_index: u32,
    pub(crate) sq_buf_addr: u64,
    pub(crate) ece_options: u32,
    pub(crate) dci_streams: u16,
    pub(crate) reserved: u16,
}

/// `MLX5_QP_FLAG_UAR_PAGE_INDEX`: `bfreg_index` is the index of the UAR page (a dynamic one)
/// the QP's doorbells go to; the response's `bfreg_index` is then [`INVALID_BFREG`].
pub(crate) const QP_FLAG_UAR_PAGE_INDEX: u32 = 1 << 10;

/// `MLX5_QP_FLAG_TYPE_DCT`: an `IB_QPT_DRIVER` QP is a DC target (its access key in place of
/// `sq_buf_addr`).
pub(crate) const QP_FLAG_TYPE_DCT: u32 = 1 << 4;
/// `MLX5_QP_FLAG_TYPE_DCI`: an `IB_QPT_DRIVER` QP is a DC initiator.
pub(crate) const QP_FLAG_TYPE_DCI: u32 = 1 << 5;

/// `MLX5_IB_INVALID_BFREG`: no bfreg of the static layout.
pub(crate) const INVALID_BFREG: u32 = 1 << 31;

/// The shortest create_qp request mlx5_ib takes (up to `sq_buf_addr`).
pub(crate) const CREATE_QP_REQ_MIN_LEN: usize = 48;

/// `enum mlx5_ib_create_qp_flags` this driver accepts from libmlx5 for plain QPs:
/// `MLX5_QP_FLAG_SCATTER_CQE` (libmlx5's default; small receives may land in the CQE, an
/// optimisation the card need not do, so it is accepted and not enabled).
pub(crate) const QP_FLAG_SCATTER_CQE: u32 = 1 << 1;
/// `MLX5_QP_FLAG_ALLOW_SCATTER_CQE`: the requester may scatter small responses into the CQE
/// even without `IB_SIGNAL_ALL_WR` (rdma-core's `MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE`, which
/// UCX's rc_mlx5 asks for). A permission, like [`QP_FLAG_SCATTER_CQE`] accepted whatever the
/// device's `sctr_data_cqe` (mlx5_ib's `process_vendor_flag`) and not enabled.
pub(crate) const QP_FLAG_ALLOW_SCATTER_CQE: u32 = 1 << 8;

/// `struct mlx5_ib_create_qp_resp`.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct CreateQpResp {
    pub(crate) bfreg_index: u32,
    pub(crate) ece_options: u32,
    pub(crate) comp_mask: u32,
    pub(crate) tirn: u32,
    pub(crate) tisn: u32,
    pub(crate) rqn: u32,
    pub(crate) sqn: u32,
    pub(crate) reserved1: u32,
    pub(crate) tir_icm_addr: u64,
}

/// `struct mlx5_ib_modify_qp`: nothing this driver takes (rate limiting and ECE), so an
/// optional request must be all zero.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct ModifyQpReq {
    pub(crate) comp_mask: u32,
    pub(crate) max_burst_sz: u32,
    pub(crate) typical_pkt_sz: u16,
    pub(crate) burst_reserved: u16,
    pub(crate) ece_options: u32,
}

/// `struct mlx5_ib_modify_qp_resp`: a DCT's number once the card created it (INIT→RTR);
/// `response_length` says whether `ece_options` fitted.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct ModifyQpResp {
    pub(crate) response_length: u32,
    pub(crate) dctn: u32,
    pub(crate) ece_options: u32,
    pub(crate) reserved: u32,
}

/// `struct mlx5_ib_create_srq`: a user SRQ's WQE buffer and doorbell record, flags (the WQ
/// signature, not offered) and the user index (XRC SRQs only).
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct CreateSrqReq {
    pub(crate) buf_addr: u64,
    pub(crate) db_addr: u64,
    pub(crate) flags: u32,
    pub(crate) reserved0: u32,
    pub(crate) uidx: u32,
    pub(crate) reserved1: u32,
}

/// The shortest create_srq request mlx5_ib takes (up to `flags`).
pub(crate) const CREATE_SRQ_REQ_MIN_LEN: usize = 20;

/// `struct mlx5_ib_create_srq_resp`.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct CreateSrqResp {
    pub(crate) srqn: u32,
    pub(crate) reserved: u32,
}

/// `struct mlx5_ib_create_ah_resp`: the destination MAC, from which libmlx5 builds the
/// address vector of its UD sends itself.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct CreateAhResp {
    pub(crate) response_length: u32,
    pub(crate) dmac: [u8; 6],
    pub(crate) reserved: [u8; 6],
}

/// The response mlx5_ib writes (up to `dmac`); a library with less room is refused.
pub(crate) const CREATE_AH_RESP_MIN_LEN: usize = 10;

/// `struct mlx5_ib_create_qp_rss`: an RSS QP's receive hash.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Debug)]
pub(crate) struct CreateQpRssReq {
    pub(crate) rx_hash_fields_mask: u64,
    pub(crate) rx_hash_function: u8,
    pub(crate) rx_key_len: u8,
    pub(crate) reserved: [u8; 6],
    pub(crate) rx_hash_key: [u8; 128],
    pub(crate) comp_mask: u32,
    pub(crate) flags: u32,
}

/// The shortest RSS request mlx5_ib takes (up to `flags`): all of it.
pub(crate) const CREATE_QP_RSS_REQ_MIN_LEN: usize = size_of::<CreateQpRssReq>();

/// `MLX5_RX_HASH_FUNC_TOEPLITZ`.
pub(crate) const RX_HASH_FUNC_TOEPLITZ: u8 = 1 << 0;

/// `enum mlx5_rx_hash_fields`: the header fields an RSS QP hashes.
pub(crate) mod rx_hash {
    pub(crate) const SRC_IPV4: u64 = 1 << 0;
    pub(crate) const DST_IPV4: u64 = 1 << 1;
    pub(crate) const SRC_IPV6: u64 = 1 << 2;
    pub(crate) const DST_IPV6: u64 = 1 << 3;
    pub(crate) const SRC_PORT_TCP: u64 = 1 << 4;
    pub(crate) const DST_PORT_TCP: u64 = 1 << 5;
    pub(crate) const SRC_PORT_UDP: u64 = 1 << 6;
    pub(crate) const DST_PORT_UDP: u64 = 1 << 7;
    pub(crate) const IPSEC_SPI: u64 = 1 << 8;
}

/// `struct mlx5_ib_create_wq`: a WQ's ring and doorbell record in the process's memory, its
/// geometry and user index (striding RQs are not offered).
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct CreateWqReq {
    pub(crate) buf_addr: u64,
    pub(crate) db_addr: u64,
    pub(crate) rq_wqe_count: u32,
    pub(crate) rq_wqe_shift: u32,
    pub(crate) user_index: u32,
    pub(crate) flags: u32,
    pub(crate) comp_mask: u32,
    pub(crate) single_stride_log_num_of_bytes: u32,
    pub(crate) single_wqe_log_num_of_strides: u32,
    pub(crate) two_byte_shift_en: u32,
}

/// The shortest create_wq request mlx5_ib takes (up to `single_stride_log_num_of_bytes`).
pub(crate) const CREATE_WQ_REQ_MIN_LEN: usize = 40;

/// `struct mlx5_ib_create_wq_resp` and `struct mlx5_ib_create_rwq_ind_tbl_resp`.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct LenResp {
    pub(crate) response_length: u32,
    pub(crate) reserved: u32,
}

/// `struct mlx5_ib_modify_wq`: nothing this driver takes.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct ModifyWqReq {
    pub(crate) comp_mask: u32,
    pub(crate) reserved: u32,
}

/// `struct mlx5_ib_create_flow` (its header: counters are not offered, so no data follows).
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
pub(crate) struct CreateFlowReq {
    pub(crate) ncounters_data: u32,
    pub(crate) reserved: u32,
}

// gcc: sizeof(struct mlx5_ib_create_flow) = 8 (without its counters data).
const _: () = assert!(size_of::<CreateFlowReq>() == 8);

// gcc: sizeof(struct mlx5_ib_create_qp_rss) = 152, create_wq = 48, create_wq_resp = 8,
// modify_wq = 8.
const _: () = assert!(size_of::<CreateQpRssReq>() == 152);
const _: () = assert!(size_of::<CreateWqReq>() == 48);
const _: () = assert!(size_of::<LenResp>() == 8);
const _: () = assert!(size_of::<ModifyWqReq>() == 8);

// gcc: sizeof(struct mlx5_ib_create_cq) = 32, _resp = 8, create_qp = 56 (with 4 bytes of
// DCI streams and padding), create_qp_resp = 40, modify_qp = 16.
const _: () = assert!(size_of::<CreateCqReq>() == 32);
const _: () = assert!(size_of::<CreateCqResp>() == 8);
const _: () = assert!(size_of::<ResizeCqReq>() == 16);
const _: () = assert!(size_of::<CreateQpReq>() == 56);
const _: () = assert!(size_of::<CreateQpResp>() == 40);
const _: () = assert!(size_of::<ModifyQpReq>() == 16);
const _: () = assert!(size_of::<ModifyQpResp>() == 16);
const _: () = assert!(size_of::<CreateAhResp>() == 16);
const _: () = assert!(size_of::<CreateSrqReq>() == 32);
const _: () = assert!(size_of::<CreateSrqResp>() == 8);

// gcc: sizeof(struct mlx5_ib_alloc_ucontext_req_v2) = 32, resp = 72, alloc_pd_resp = 4.
const _: () = assert!(size_of::<AllocUcontextReq>() == 32);
const _: () = assert!(size_of::<AllocUcontextResp>() == 72);
const _: () = assert!(size_of::<AllocPdResp>() == 4);
const _: () = assert!(core::mem::offset_of!(AllocUcontextResp, hca_core_clock_offset) == 48);
