// SPDX-License-Identifier: GPL-2.0
//! Conformance tests: every layout and code of this crate against the Linux sources as
//! published (see [`crate::ksrc`]), plus the checks that keep the layout registry complete.

use std::{
    collections::BTreeSet,
    eprintln, format, fs,
    path::Path,
    string::{String, ToString},
    vec::Vec,
};

use crate::bits::{LayoutInfo, Source};
use crate::ksrc::{self, Consts, Ifc};

/// Every layout of the crate.
fn layouts() -> impl Iterator<Item = &'static LayoutInfo> {
    crate::ALL_LAYOUTS.iter().flat_map(|m| m.iter())
}

/// The kernel tree, or `None` after printing why the test is skipped.
fn tree_or_skip(test: &str) -> Option<std::path::PathBuf> {
    match ksrc::tree() {
        Ok(t) => Some(t),
        Err(why) => {
            eprintln!("{test}: {why}");
            None
        }
    }
}

#[test]
fn every_ifc_layout_matches_mlx5_ifc_h() {
    let Some(root) = tree_or_skip("every_ifc_layout_matches_mlx5_ifc_h") else {
        return;
    };
    let src = ksrc::read_all(&root, ksrc::IFC_HEADERS).unwrap();
    let ifc = Ifc::parse(&src).unwrap();
    assert!(ifc.len() > 500, "parsed only {} definitions", ifc.len());

    let mut errors = Vec::new();
    let (mut n_layouts, mut n_fields) = (0, 0);
    for l in layouts().filter(|l| l.source == Source::Ifc) {
        n_layouts += 1;
        let fields = match (ifc.size(l.ifc_name), ifc.fields(l.ifc_name)) {
            (Ok(bits), Ok(fields)) => {
                if bits != l.size as u64 * 8 {
                    errors.push(format!(
                        "{} ({}): size expected {:#x} bytes from mlx5_ifc.h, seen {:#x}",
                        l.rust_name,
                        l.ifc_name,
                        bits / 8,
                        l.size
                    ));
                }
                fields
            }
            (Err(e), _) | (_, Err(e)) => {
                errors.push(format!("{} ({}): {e}", l.rust_name, l.ifc_name));
                continue;
            }
        };
        for &(name, off, width) in l.fields {
            n_fields += 1;
            match fields.get(name) {
                Some(&(eo, ew)) if (eo, ew) == (u64::from(off), u64::from(width)) => {}
                Some(&(eo, ew)) => errors.push(format!(
                    "{}.{name}: expected bit offset {eo:#x} width {ew:#x} from mlx5_ifc.h, \
                     seen offset {off:#x} width {width:#x}",
                    l.ifc_name
                )),
                None => errors.push(format!(
                    "{}.{name}: no such field in mlx5_ifc_{}_bits",
                    l.ifc_name, l.ifc_name
                )),
            }
        }
    }
    eprintln!(
        "checked {n_layouts} layouts, {n_fields} fields against {} ({} definitions parsed, \
         {} not understood: {:?})",
        root.display(),
        ifc.len(),
        ifc.unparsed().len(),
        ifc.unparsed()
    );
    assert!(
        errors.is_empty(),
        "{} mismatches:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

/// A code table: its name, the header prefix of its names and its `(value, name)` entries.
type CodeTable = (&'static str, &'static str, Vec<(i64, &'static str)>);

/// The crate's code tables.
fn code_tables() -> Vec<CodeTable> {
    fn t<T: Copy + Into<i64>>(
        table: &'static str,
        prefix: &'static str,
        all: &'static [(T, &'static str)],
    ) -> CodeTable {
        (
            table,
            prefix,
            all.iter().map(|&(v, n)| (v.into(), n)).collect(),
        )
    }
    use crate::{caps, cmd, cq, eq, flow, hca, iseg, mng, opcode, pages, regs, status, vport};
    std::vec![
        t("opcode", opcode::HEADER_PREFIX, opcode::ALL),
        t("status", status::HEADER_PREFIX, status::ALL),
        t("delivery", cmd::delivery::HEADER_PREFIX, cmd::delivery::ALL),
        t(
            "cap_type",
            caps::cap_type::HEADER_PREFIX,
            caps::cap_type::ALL
        ),
        t(
            "port_type",
            caps::general::port_type::HEADER_PREFIX,
            caps::general::port_type::ALL
        ),
        t(
            "inline_mode",
            caps::net::inline_mode::HEADER_PREFIX,
            caps::net::inline_mode::ALL
        ),
        t(
            "event_type",
            eq::event_type::HEADER_PREFIX,
            eq::event_type::ALL
        ),
        t(
            "event_queue_type",
            eq::event_queue_type::HEADER_PREFIX,
            eq::event_queue_type::ALL
        ),
        t(
            "port_change_subtype",
            eq::port_change_subtype::HEADER_PREFIX,
            eq::port_change_subtype::ALL
        ),
        t(
            "pfault_subtype",
            eq::pfault_subtype::HEADER_PREFIX,
            eq::pfault_subtype::ALL
        ),
        t(
            "pfault_wqe_type",
            eq::pfault_wqe_type::HEADER_PREFIX,
            eq::pfault_wqe_type::ALL
        ),
        t(
            "cqe_opcode",
            cq::cqe::opcode::HEADER_PREFIX,
            cq::cqe::opcode::ALL
        ),
        t(
            "cqe_syndrome",
            cq::cqe::syndrome::HEADER_PREFIX,
            cq::cqe::syndrome::ALL
        ),
        t(
            "cqe_stride",
            cq::cqe_stride::HEADER_PREFIX,
            cq::cqe_stride::ALL
        ),
        t("register id", regs::id::HEADER_PREFIX, regs::id::ALL),
        t(
            "port_status",
            regs::port_status::HEADER_PREFIX,
            regs::port_status::ALL
        ),
        t(
            "eth_link_mode",
            regs::eth_link_mode::HEADER_PREFIX,
            regs::eth_link_mode::ALL
        ),
        t(
            "ppcnt_grp",
            regs::ppcnt_grp::HEADER_PREFIX,
            regs::ppcnt_grp::ALL
        ),
        t(
            "mcam_group",
            mng::mcam_group::HEADER_PREFIX,
            mng::mcam_group::ALL
        ),
        t(
            "mcqs_identifier",
            mng::mcqs_identifier::HEADER_PREFIX,
            mng::mcqs_identifier::ALL
        ),
        t(
            "mcqs_update_state",
            mng::mcqs_update_state::HEADER_PREFIX,
            mng::mcqs_update_state::ALL
        ),
        t(
            "mcqi_info_type",
            mng::mcqi_info_type::HEADER_PREFIX,
            mng::mcqi_info_type::ALL
        ),
        t("mcqi_fw", mng::mcqi_fw::HEADER_PREFIX, mng::mcqi_fw::ALL),
        t(
            "trust_state",
            crate::qos::trust_state::HEADER_PREFIX,
            crate::qos::trust_state::ALL
        ),
        t(
            "max_bw_units",
            crate::qos::max_bw_units::HEADER_PREFIX,
            crate::qos::max_bw_units::ALL
        ),
        t(
            "health_synd",
            iseg::health_synd::HEADER_PREFIX,
            iseg::health_synd::ALL
        ),
        t(
            "teardown_profile",
            hca::teardown_profile::HEADER_PREFIX,
            hca::teardown_profile::ALL
        ),
        t(
            "query_pages_op_mod",
            pages::query_pages_op_mod::HEADER_PREFIX,
            pages::query_pages_op_mod::ALL
        ),
        t(
            "manage_pages_op_mod",
            pages::manage_pages_op_mod::HEADER_PREFIX,
            pages::manage_pages_op_mod::ALL
        ),
        t(
            "vport_state",
            vport::vport_state::HEADER_PREFIX,
            vport::vport_state::ALL
        ),
        t(
            "list_type",
            vport::list_type::HEADER_PREFIX,
            vport::list_type::ALL
        ),
        t(
            "table_type",
            flow::table_type::HEADER_PREFIX,
            flow::table_type::ALL
        ),
        t(
            "miss_action",
            flow::miss_action::HEADER_PREFIX,
            flow::miss_action::ALL
        ),
        t(
            "flow action",
            flow::action::HEADER_PREFIX,
            flow::action::ALL
        ),
        t(
            "dest_type",
            flow::dest_type::HEADER_PREFIX,
            flow::dest_type::ALL
        ),
        t(
            "match_criteria",
            flow::match_criteria::HEADER_PREFIX,
            flow::match_criteria::ALL
        ),
        t(
            "fte_modify",
            flow::fte_modify::HEADER_PREFIX,
            flow::fte_modify::ALL
        ),
        t(
            "sqc_state",
            crate::wq::sqc_state::HEADER_PREFIX,
            crate::wq::sqc_state::ALL
        ),
        t(
            "rqc_state",
            crate::wq::rqc_state::HEADER_PREFIX,
            crate::wq::rqc_state::ALL
        ),
        t(
            "wq_type",
            crate::wq::wq_type::HEADER_PREFIX,
            crate::wq::wq_type::ALL
        ),
        t(
            "wq inline_mode",
            crate::wq::inline_mode::HEADER_PREFIX,
            crate::wq::inline_mode::ALL
        ),
        t(
            "disp_type",
            crate::tir::disp_type::HEADER_PREFIX,
            crate::tir::disp_type::ALL
        ),
        t(
            "rx_hash_fn",
            crate::tir::rx_hash_fn::HEADER_PREFIX,
            crate::tir::rx_hash_fn::ALL
        ),
        t(
            "packet_merge",
            crate::tir::packet_merge::HEADER_PREFIX,
            crate::tir::packet_merge::ALL
        ),
        t(
            "self_lb_block",
            crate::tir::self_lb_block::HEADER_PREFIX,
            crate::tir::self_lb_block::ALL
        ),
        t(
            "l3_prot_type",
            crate::tir::l3_prot_type::HEADER_PREFIX,
            crate::tir::l3_prot_type::ALL
        ),
        t(
            "l4_prot_type",
            crate::tir::l4_prot_type::HEADER_PREFIX,
            crate::tir::l4_prot_type::ALL
        ),
        t(
            "hash_field_sel",
            crate::tir::hash_field_sel::HEADER_PREFIX,
            crate::tir::hash_field_sel::ALL
        ),
        t(
            "access_mode",
            crate::mkey::access_mode::HEADER_PREFIX,
            crate::mkey::access_mode::ALL
        ),
        t(
            "wqe_opcode",
            crate::wqe::opcode::HEADER_PREFIX,
            crate::wqe::opcode::ALL
        ),
        t(
            "cqe_l4_hdr_type",
            cq::cqe::l4_hdr_type::HEADER_PREFIX,
            cq::cqe::l4_hdr_type::ALL
        ),
        t(
            "cqe_rss_ip",
            cq::cqe::rss_ip::HEADER_PREFIX,
            cq::cqe::rss_ip::ALL
        ),
        t(
            "cqe_rss_l4",
            cq::cqe::rss_l4::HEADER_PREFIX,
            cq::cqe::rss_l4::ALL
        ),
        t(
            "cqe_roce_l3_header_type",
            cq::cqe::roce_l3_header_type::HEADER_PREFIX,
            cq::cqe::roce_l3_header_type::ALL
        ),
        t(
            "atomic_size_qp",
            caps::roce::atomic_size_qp::HEADER_PREFIX,
            caps::roce::atomic_size_qp::ALL
        ),
        t(
            "atomic_size_dc",
            caps::roce::atomic_size_dc::HEADER_PREFIX,
            caps::roce::atomic_size_dc::ALL
        ),
        t(
            "qpc_state",
            crate::qp::qpc_state::HEADER_PREFIX,
            crate::qp::qpc_state::ALL
        ),
        t(
            "qp_state",
            crate::qp::qp_state::HEADER_PREFIX,
            crate::qp::qp_state::ALL
        ),
        t(
            "qpc_st",
            crate::qp::qpc_st::HEADER_PREFIX,
            crate::qp::qpc_st::ALL
        ),
        t(
            "pm_state",
            crate::qp::pm_state::HEADER_PREFIX,
            crate::qp::pm_state::ALL
        ),
        t(
            "qpc_mtu",
            crate::qp::mtu::HEADER_PREFIX,
            crate::qp::mtu::ALL
        ),
        t(
            "qpc_atomic_mode",
            crate::qp::atomic_mode::HEADER_PREFIX,
            crate::qp::atomic_mode::ALL
        ),
        t(
            "qpc_rq_type",
            crate::qp::rq_type::HEADER_PREFIX,
            crate::qp::rq_type::ALL
        ),
        t(
            "srqc_state",
            crate::srq::srqc_state::HEADER_PREFIX,
            crate::srq::srqc_state::ALL
        ),
        t(
            "xrc_srqc_state",
            crate::srq::xrc_srqc_state::HEADER_PREFIX,
            crate::srq::xrc_srqc_state::ALL
        ),
        t(
            "rmpc_state",
            crate::srq::rmpc_state::HEADER_PREFIX,
            crate::srq::rmpc_state::ALL
        ),
        t(
            "dctc_state",
            crate::dct::dctc_state::HEADER_PREFIX,
            crate::dct::dctc_state::ALL
        ),
        t(
            "arm_rq_op_mod",
            crate::srq::arm_rq_op_mod::HEADER_PREFIX,
            crate::srq::arm_rq_op_mod::ALL
        ),
        t(
            "roce_version",
            crate::roce::roce_version::HEADER_PREFIX,
            crate::roce::roce_version::ALL
        ),
        t(
            "roce_l3_type",
            crate::roce::roce_l3_type::HEADER_PREFIX,
            crate::roce::roce_l3_type::ALL
        ),
        t(
            "cong_protocol",
            crate::roce::cong_protocol::HEADER_PREFIX,
            crate::roce::cong_protocol::ALL
        ),
    ]
}

/// Single constants paired with the header symbol they mirror.
fn constants() -> Vec<(&'static str, i64)> {
    use crate::{caps, cmd, cq, eq, mng, pages, regs, uar};
    std::vec![
        ("MLX5_PCI_CMD_XPORT", cmd::PCI_CMD_XPORT.into()),
        ("MLX5_CMD_DATA_BLOCK_SIZE", cmd::DATA_BLOCK_SIZE as i64),
        ("CMD_OWNER_HW", cmd::OWNER_HW.into()),
        ("CMD_OWNER_SW", cmd::OWNER_SW.into()),
        ("HCA_CAP_OPMOD_GET_MAX", caps::OPMOD_GET_MAX.into()),
        ("HCA_CAP_OPMOD_GET_CUR", caps::OPMOD_GET_CUR.into()),
        ("MLX5_ADAPTER_PAGE_SIZE", pages::PAGE_SIZE as i64),
        ("MLX5_BF_OFFSET", uar::BF_OFFSET as i64),
        ("MLX5_CQ_DOORBELL", uar::CQ_DOORBELL as i64),
        (
            "MLX5_EQ_DOORBELL_OFFSET",
            uar::EQ_DOORBELL_UPDATE_ARM as i64
        ),
        ("MLX5_RCV_DBR", (uar::DBR_RCV / 4) as i64),
        ("MLX5_SND_DBR", (uar::DBR_SND / 4) as i64),
        ("MLX5_CQ_DB_REQ_NOT", uar::CQ_DB_REQ_NOT.into()),
        ("MLX5_CQ_DB_REQ_NOT_SOL", uar::CQ_DB_REQ_NOT_SOL.into()),
        ("MLX5_EQE_OWNER_INIT_VAL", eq::EQE_OWNER_INIT_VAL.into()),
        ("MLX5_CQE_OWNER_MASK", cq::cqe::OWNER_MASK.into()),
        ("MLX5_CQ_OPMOD_RESIZE", cq::MODIFY_CQ_OP_MOD_RESIZE.into()),
        (
            "MLX5_CQ_MODIFY_PERIOD",
            cq::CqModifyFields::PERIOD.bits().into()
        ),
        (
            "MLX5_CQ_MODIFY_COUNT",
            cq::CqModifyFields::COUNT.bits().into()
        ),
        (
            "MLX5_CQ_MODIFY_OVERRUN",
            cq::CqModifyFields::OVERRUN.bits().into()
        ),
        (
            "MLX5_CQ_MODIFY_PERIOD_MODE",
            cq::CqModifyFields::PERIOD_MODE.bits().into()
        ),
        (
            "MLX5_MODIFY_CQ_MASK_LOG_SIZE",
            cq::CqResizeFields::LOG_SIZE.bits().into()
        ),
        (
            "MLX5_MODIFY_CQ_MASK_PG_OFFSET",
            cq::CqResizeFields::PG_OFFSET.bits().into()
        ),
        (
            "MLX5_MODIFY_CQ_MASK_PG_SIZE",
            cq::CqResizeFields::PG_SIZE.bits().into()
        ),
        (
            "MLX5_MCAM_FEATURE_ENHANCED_FEATURES",
            mng::MCAM_FEATURE_ENHANCED_FEATURES.into()
        ),
        ("MLX5_MCAM_REGS_NUM", mng::MCAM_REGS_NUM.into()),
        (
            "MLX5_QCAM_REGS_FIRST_128",
            crate::qos::QCAM_REGS_FIRST_128.into()
        ),
        (
            "MLX5_QCAM_FEATURE_ENHANCED_FEATURES",
            crate::qos::QCAM_FEATURE_ENHANCED_FEATURES.into()
        ),
        ("MLX5_MAX_NUM_TC", crate::qos::MAX_NUM_TC as i64),
        ("MLX5_PTYS_IB", regs::PtysProto::IB.bits().into()),
        ("MLX5_PTYS_EN", regs::PtysProto::EN.bits().into()),
        ("CQE_L2_OK", cq::cqe::L2_OK.into()),
        ("CQE_L3_OK", cq::cqe::L3_OK.into()),
        ("CQE_L4_OK", cq::cqe::L4_OK.into()),
        (
            "MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_VSD",
            crate::wq::MODIFY_RQ_BITMASK_VSD as i64
        ),
        (
            "MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_SCATTER_FCS",
            crate::wq::MODIFY_RQ_BITMASK_SCATTER_FCS as i64
        ),
        (
            "MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_RQ_COUNTER_SET_ID",
            crate::wq::MODIFY_RQ_BITMASK_RQ_COUNTER_SET_ID as i64
        ),
        (
            "MLX5_MODIFY_FLOW_TABLE_MISS_TABLE_ID",
            crate::flow::MODIFY_FLOW_TABLE_MISS_TABLE_ID.into()
        ),
        ("MLX5_SEND_WQE_DS", crate::wqe::SEND_WQE_DS as i64),
        ("MLX5_SEND_WQE_BB", crate::wqe::SEND_WQE_BB as i64),
        (
            "MLX5_SEND_WQE_MAX_WQEBBS",
            crate::wqe::SEND_WQE_MAX_WQEBBS as i64
        ),
        (
            "MLX5_SEND_WQE_MAX_SIZE",
            crate::wqe::SEND_WQE_MAX_SIZE as i64
        ),
        ("MLX5_WQE_CTRL_DS_MASK", crate::wqe::CTRL_DS_MASK.into()),
        ("MLX5_WQE_CTRL_QPN_MASK", crate::wqe::CTRL_QPN_MASK.into()),
        (
            "MLX5_WQE_CTRL_OPCODE_MASK",
            crate::wqe::CTRL_OPCODE_MASK.into()
        ),
        (
            "MLX5_WQE_CTRL_WQE_INDEX_MASK",
            crate::wqe::CTRL_WQE_INDEX_MASK.into()
        ),
        ("MLX5_INLINE_SEG", crate::wqe::INLINE_SEG.into()),
        (
            "MLX5_WQE_INLINE_SEG_BYTE_COUNT_MASK",
            crate::wqe::INLINE_SEG_BYTE_COUNT_MASK.into()
        ),
        ("MLX5_HW_START_PADDING", crate::wqe::HW_START_PADDING.into()),
        (
            "MLX5_WQE_CTRL_CQ_UPDATE",
            crate::wqe::fm_ce_se::CQ_UPDATE.into()
        ),
        (
            "MLX5_WQE_CTRL_CQ_UPDATE_AND_EQE",
            crate::wqe::fm_ce_se::CQ_UPDATE_AND_EQE.into()
        ),
        (
            "MLX5_WQE_CTRL_SOLICITED",
            crate::wqe::fm_ce_se::SOLICITED.into()
        ),
        (
            "MLX5_ETH_WQE_L3_INNER_CSUM",
            crate::wqe::CsFlags::L3_INNER.bits().into()
        ),
        (
            "MLX5_ETH_WQE_L4_INNER_CSUM",
            crate::wqe::CsFlags::L4_INNER.bits().into()
        ),
        (
            "MLX5_ETH_WQE_L3_CSUM",
            crate::wqe::CsFlags::L3.bits().into()
        ),
        (
            "MLX5_ETH_WQE_L4_CSUM",
            crate::wqe::CsFlags::L4.bits().into()
        ),
        (
            "MLX5_ETH_WQE_SWP_INNER_L3_IPV6",
            crate::wqe::SwpFlags::INNER_L3_IPV6.bits().into()
        ),
        (
            "MLX5_ETH_WQE_SWP_INNER_L4_UDP",
            crate::wqe::SwpFlags::INNER_L4_UDP.bits().into()
        ),
        (
            "MLX5_ETH_WQE_SWP_OUTER_L3_IPV6",
            crate::wqe::SwpFlags::OUTER_L3_IPV6.bits().into()
        ),
        (
            "MLX5_ETH_WQE_SWP_OUTER_L4_UDP",
            crate::wqe::SwpFlags::OUTER_L4_UDP.bits().into()
        ),
        (
            "MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE",
            crate::wqe::fm_ce_se::INITIATOR_SMALL_FENCE.into()
        ),
        (
            "MLX5_FENCE_MODE_NONE",
            crate::wqe::fm_ce_se::FENCE_MODE_NONE.into()
        ),
        (
            "MLX5_FENCE_MODE_INITIATOR_SMALL",
            crate::wqe::fm_ce_se::FENCE_MODE_INITIATOR_SMALL.into()
        ),
        (
            "MLX5_FENCE_MODE_FENCE",
            crate::wqe::fm_ce_se::FENCE_MODE_FENCE.into()
        ),
        (
            "MLX5_FENCE_MODE_STRONG_ORDERING",
            crate::wqe::fm_ce_se::FENCE_MODE_STRONG_ORDERING.into()
        ),
        (
            "MLX5_FENCE_MODE_SMALL_AND_FENCE",
            crate::wqe::fm_ce_se::FENCE_MODE_SMALL_AND_FENCE.into()
        ),
        (
            "MLX5_EXTENDED_UD_AV",
            crate::wqe::rdma::EXTENDED_UD_AV.into()
        ),
        (
            "MLX5_UMR_TRANSLATION_OFFSET_EN",
            crate::wqe::rdma::UMR_TRANSLATION_OFFSET_EN.into()
        ),
        (
            "MLX5_UMR_CHECK_NOT_FREE",
            crate::wqe::rdma::UMR_CHECK_NOT_FREE.into()
        ),
        (
            "MLX5_UMR_CHECK_FREE",
            crate::wqe::rdma::UMR_CHECK_FREE.into()
        ),
        ("MLX5_UMR_INLINE", crate::wqe::rdma::UMR_INLINE.into()),
        ("MLX5_UMR_ALIGN", crate::wqe::rdma::UMR_ALIGN as i64),
        (
            "MLX5_UMR_FLEX_ALIGNMENT",
            crate::wqe::rdma::UMR_FLEX_ALIGNMENT as i64
        ),
        (
            "MLX5_MKEY_STATUS_FREE",
            crate::wqe::rdma::MKEY_STATUS_FREE.into()
        ),
        (
            "MLX5_MKEY_REMOTE_INVAL",
            crate::wqe::rdma::MKEY_REMOTE_INVAL.into()
        ),
        (
            "MLX5_MKEY_FLAG_SYNC_UMR",
            crate::wqe::rdma::MKEY_FLAG_SYNC_UMR.into()
        ),
        ("MLX5_MKEY_BSF_EN", crate::wqe::rdma::MKEY_BSF_EN.into()),
        (
            "MLX5_ARM_XRC_SRQ_IN_OP_MOD_XRC_SRQ",
            crate::srq::ARM_XRC_SRQ_OP_MOD_XRC_SRQ.into()
        ),
        (
            "MLX5_ROCE_VERSION_1_CAP",
            crate::roce::ROCE_VERSION_1_CAP.into()
        ),
        (
            "MLX5_ROCE_VERSION_2_CAP",
            crate::roce::ROCE_VERSION_2_CAP.into()
        ),
        (
            "MLX5_ROCE_L3_TYPE_IPV4_CAP",
            crate::roce::ROCE_L3_TYPE_IPV4_CAP.into()
        ),
        (
            "MLX5_ROCE_L3_TYPE_IPV6_CAP",
            crate::roce::ROCE_L3_TYPE_IPV6_CAP.into()
        ),
        (
            "MLX5_ATOMIC_REQ_MODE_BE",
            caps::roce::ATOMIC_REQ_MODE_BE.into()
        ),
        (
            "MLX5_ATOMIC_REQ_MODE_HOST_ENDIANNESS",
            caps::roce::ATOMIC_REQ_MODE_HOST_ENDIANNESS.into()
        ),
    ]
}

/// Bit flag sets checked name by name: header prefix, header suffix and `(name, value)`.
type FlagTable = (&'static str, &'static str, Vec<(&'static str, i64)>);

/// The bitflags types whose flags mirror header constants one to one.
fn flag_tables() -> Vec<FlagTable> {
    fn f<F: bitflags::Flags>(prefix: &'static str, suffix: &'static str) -> FlagTable
    where
        F::Bits: Into<u64>,
    {
        let names = F::all()
            .iter_names()
            .map(|(n, v)| (n, v.bits().into() as i64))
            .collect();
        (prefix, suffix, names)
    }
    use crate::{caps, qp, roce, wqe};
    std::vec![
        f::<qp::OptParam>("MLX5_QP_OPTPAR_", ""),
        f::<wqe::rdma::MkeyMask>("MLX5_MKEY_MASK_", ""),
        f::<wqe::rdma::Perm>("MLX5_PERM_", ""),
        f::<caps::roce::AtomicOps>("MLX5_ATOMIC_OPS_", ""),
        f::<roce::RpFieldSelect>("MLX5_IB_RP_", "_ATTR"),
        f::<roce::NpFieldSelect>("MLX5_IB_NP_", "_ATTR"),
        f::<roce::GeneralFieldSelect>("MLX5_IB_GENERAL_", "_ATTR"),
    ]
}

#[test]
fn every_code_and_constant_matches_the_headers() {
    let Some(root) = tree_or_skip("every_code_and_constant_matches_the_headers") else {
        return;
    };
    let consts = Consts::parse(&ksrc::read_all(&root, ksrc::CONST_FILES).unwrap());
    let mut errors = Vec::new();
    let mut checked = 0;
    let mut check = |symbol: String, ours: i64, what: &str| {
        checked += 1;
        match consts.get(&symbol) {
            Some(v) if v == ours => {}
            Some(v) => errors.push(format!("{what}: {symbol} expected {v:#x}, seen {ours:#x}")),
            None => errors.push(format!("{what}: {symbol} not found (or not constant)")),
        }
    };
    for (table, prefix, entries) in code_tables() {
        for (v, name) in entries {
            check(format!("{prefix}{name}"), v, table);
        }
    }
    for (symbol, v) in constants() {
        check(symbol.to_string(), v, "constant");
    }
    for (name, flag) in crate::eq::EventMask::all().iter_names() {
        let bit = flag.bits().trailing_zeros();
        check(
            format!("MLX5_EVENT_TYPE_{name}"),
            bit.into(),
            "EventMask bit",
        );
    }
    let flags = flag_tables();
    for (prefix, suffix, names) in &flags {
        for &(name, bits) in names {
            check(format!("{prefix}{name}{suffix}"), bits, "flag");
        }
    }
    eprintln!("checked {checked} constants against {}", root.display());
    assert!(
        errors.is_empty(),
        "{} mismatches:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

/// Every line of the crate's Rust sources.
fn source_lines(dir: &Path, out: &mut Vec<String>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_lines(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.extend(fs::read_to_string(&path).unwrap().lines().map(String::from));
        }
    }
}

fn crate_source_lines() -> Vec<String> {
    let mut lines = Vec::new();
    source_lines(Path::new(env!("CARGO_MANIFEST_DIR")), &mut lines);
    lines
}

#[test]
fn registry_lists_every_declared_layout_once() {
    // Layout declarations look like `pub struct X: Ifc "..."`, `pub struct X: CStruct "..."`
    // or `pub struct X: Ofed "..."`.
    let declared: BTreeSet<String> = crate_source_lines()
        .iter()
        .filter_map(|line| {
            let (name, tail) = line
                .trim_start()
                .strip_prefix("pub struct ")?
                .split_once(": ")?;
            (tail.starts_with("Ifc \"")
                || tail.starts_with("CStruct \"")
                || tail.starts_with("Ofed \""))
            .then(|| name.to_string())
        })
        .collect();
    let registered: Vec<_> = layouts().map(|l| l.rust_name.to_string()).collect();
    let unique: BTreeSet<_> = registered.iter().cloned().collect();
    assert_eq!(unique.len(), registered.len(), "a module is listed twice");
    let missing: Vec<_> = declared.difference(&unique).collect();
    assert!(missing.is_empty(), "not in ALL_LAYOUTS: {missing:?}");
    assert_eq!(declared, unique);
    let ifc_names: BTreeSet<_> = layouts().map(|l| l.ifc_name).collect();
    assert_eq!(
        ifc_names.len(),
        registered.len(),
        "two layouts share an IFC_NAME"
    );
}

#[test]
fn every_code_table_is_checked_against_the_headers() {
    let invocations = crate_source_lines()
        .iter()
        .filter(|l| l.trim_start().starts_with("code_table! {"))
        .count();
    assert_eq!(
        invocations,
        code_tables().len(),
        "a code_table! is missing from conformance::code_tables()"
    );
}

/// Layouts that are not in mlx5_ifc.h and are therefore checked by hand-written tests
/// (cmd.rs, eq/eqe.rs, cq/cqe.rs, regs.rs, wqe.rs, wqe/rdma.rs).
const HAND_CHECKED: &[&str] = &[
    "mlx5_cmd_layout",
    "mlx5_cmd_prot_block",
    "mlx5_eqe",
    "mlx5_eqe_cmd",
    "mlx5_eqe_comp",
    "mlx5_eqe_cq_err",
    "mlx5_eqe_port_state",
    "mlx5_eqe_page_req",
    "mlx5_eqe_qp_srq",
    "mlx5_eqe_page_fault",
    "mlx5_cqe64",
    "mlx5_err_cqe",
    "mlx5_reg_host_endianness",
    "mlx5_reg_node_desc",
    "mlx5_wqe_ctrl_seg",
    "mlx5_wqe_eth_seg",
    "mlx5_wqe_data_seg",
    "mlx5_wqe_inline_seg",
    "mlx5_wqe_raddr_seg",
    "mlx5_wqe_atomic_seg",
    "mlx5_wqe_masked_atomic_seg",
    "mlx5_wqe_xrc_seg",
    "mlx5_av",
    "mlx5_wqe_srq_next_seg",
    "mlx5_wqe_umr_ctrl_seg",
    "mlx5_mkey_seg",
    "mlx5_mtt",
    "mlx5_klm",
    "mlx5_ksm",
    // MLNX_OFED only (Source::Ofed): caps/vector_calc.rs, wqe/vector_calc.rs,
    // wqe/repeat_block.rs.
    "vector_calc_cap",
    "calc_op",
    "mlx5_vec_calc_seg",
    "mlx5_seg_repeat_block",
    "mlx5_seg_repeat_ent",
];

#[test]
fn every_c_struct_layout_has_hand_written_checks() {
    let c_structs: BTreeSet<_> = layouts()
        .filter(|l| matches!(l.source, Source::CStruct | Source::Ofed))
        .map(|l| l.ifc_name)
        .collect();
    let hand: BTreeSet<_> = HAND_CHECKED.iter().copied().collect();
    assert_eq!(
        c_structs, hand,
        "add hand-written offset tests for new C structs"
    );
}

#[test]
fn fields_are_listed_in_ascending_bit_order() {
    for l in layouts() {
        for w in l.fields.windows(2) {
            assert!(
                w[0].1 <= w[1].1,
                "{}: {} ({:#x}) before {} ({:#x})",
                l.rust_name,
                w[0].0,
                w[0].1,
                w[1].0,
                w[1].1
            );
        }
    }
}

#[test]
fn mlnx_only_layouts_are_still_absent_upstream() {
    // Source::Ofed layouts are copied from MLNX_OFED because upstream dropped them ("net/mlx5:
    // Remove unused CAPs", 2023). Should upstream bring one back, it must become Source::Ifc
    // and be checked field by field like the others.
    let Some(root) = tree_or_skip("mlnx_only_layouts_are_still_absent_upstream") else {
        return;
    };
    let src = ksrc::read_all(&root, ksrc::IFC_HEADERS).unwrap();
    let ifc = Ifc::parse(&src).unwrap();
    let ofed: Vec<_> = layouts().filter(|l| l.source == Source::Ofed).collect();
    assert!(!ofed.is_empty());
    for l in ofed {
        assert!(
            ifc.size(l.ifc_name).is_err(),
            "{} ({}) is in the upstream headers again: declare it as Ifc",
            l.rust_name,
            l.ifc_name
        );
    }
}
