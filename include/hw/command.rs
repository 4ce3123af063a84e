// SPDX-License-Identifier: GPL-2.0
//! Commands as types: each names its opcode and its input and output layouts, so a command
//! queue can be generic over [`Command`] (`exec::<cmd::QueryHcaCap>(&input) -> output`).
//!
//! Only the fixed part of a message is typed; trailing arrays (`pas[]`, register data) follow
//! it in the same buffer.

use crate::bits::Layout;
use crate::{
    caps, counters, cq, dct, eq, flow, hca, mkey, opcode, pages, pd, qp, regs, roce, srq, tir, uar,
    vport, wq,
};

/// A firmware command: its opcode and the layouts of its input and output.
pub trait Command {
    /// The command's opcode (see [`crate::opcode`]).
    const OPCODE: u16;
    /// Fixed part of the input message.
    type In: Layout;
    /// Fixed part of the output message.
    type Out: Layout;
}

macro_rules! commands {
    ($($name:ident = $op:ident: $in:ty => $out:ty;)*) => {
        $(
            #[doc = concat!("The `", stringify!($op), "` command.")]
            #[derive(Clone, Copy, Debug)]
            pub struct $name;

            impl Command for $name {
                const OPCODE: u16 = opcode::$op;
                type In = $in;
                type Out = $out;
            }
        )*

        /// `(opcode, input IFC name, output IFC name)` of every command type in this module.
        pub const ALL: &[(u16, &str, &str)] = &[$(
            (opcode::$op, <$in>::IFC_NAME, <$out>::IFC_NAME)
        ),*];
    };
}

commands! {
    EnableHca = ENABLE_HCA: hca::EnableHcaIn => hca::EnableHcaOut;
    DisableHca = DISABLE_HCA: hca::DisableHcaIn => hca::DisableHcaOut;
    QueryIssi = QUERY_ISSI: hca::QueryIssiIn => hca::QueryIssiOut;
    SetIssi = SET_ISSI: hca::SetIssiIn => hca::SetIssiOut;
    InitHca = INIT_HCA: hca::InitHcaIn => hca::InitHcaOut;
    TeardownHca = TEARDOWN_HCA: hca::TeardownHcaIn => hca::TeardownHcaOut;
    QueryAdapter = QUERY_ADAPTER: hca::QueryAdapterIn => hca::QueryAdapterOut;
    SetDriverVersion = SET_DRIVER_VERSION: hca::SetDriverVersionIn => hca::SetDriverVersionOut;
    QueryPages = QUERY_PAGES: pages::QueryPagesIn => pages::QueryPagesOut;
    ManagePages = MANAGE_PAGES: pages::ManagePagesIn => pages::ManagePagesOut;
    QueryHcaCap = QUERY_HCA_CAP: caps::QueryHcaCapIn => caps::QueryHcaCapOut;
    SetHcaCap = SET_HCA_CAP: caps::SetHcaCapIn => caps::SetHcaCapOut;
    AccessReg = ACCESS_REG: regs::AccessRegisterIn => regs::AccessRegisterOut;
    AllocUar = ALLOC_UAR: uar::AllocUarIn => uar::AllocUarOut;
    DeallocUar = DEALLOC_UAR: uar::DeallocUarIn => uar::DeallocUarOut;
    CreateEq = CREATE_EQ: eq::CreateEqIn => eq::CreateEqOut;
    DestroyEq = DESTROY_EQ: eq::DestroyEqIn => eq::DestroyEqOut;
    QueryEq = QUERY_EQ: eq::QueryEqIn => eq::QueryEqOut;
    GenEqe = GEN_EQE: eq::GenEqeIn => eq::GenEqOut;
    CreateCq = CREATE_CQ: cq::CreateCqIn => cq::CreateCqOut;
    DestroyCq = DESTROY_CQ: cq::DestroyCqIn => cq::DestroyCqOut;
    QueryCq = QUERY_CQ: cq::QueryCqIn => cq::QueryCqOut;
    ModifyCq = MODIFY_CQ: cq::ModifyCqIn => cq::ModifyCqOut;
    AllocPd = ALLOC_PD: pd::AllocPdIn => pd::AllocPdOut;
    DeallocPd = DEALLOC_PD: pd::DeallocPdIn => pd::DeallocPdOut;
    AllocTransportDomain = ALLOC_TRANSPORT_DOMAIN:
        pd::AllocTransportDomainIn => pd::AllocTransportDomainOut;
    DeallocTransportDomain = DEALLOC_TRANSPORT_DOMAIN:
        pd::DeallocTransportDomainIn => pd::DeallocTransportDomainOut;
    QueryVportState = QUERY_VPORT_STATE: vport::QueryVportStateIn => vport::QueryVportStateOut;
    QueryNicVportContext = QUERY_NIC_VPORT_CONTEXT:
        vport::QueryNicVportContextIn => vport::QueryNicVportContextOut;
    ModifyNicVportContext = MODIFY_NIC_VPORT_CONTEXT:
        vport::ModifyNicVportContextIn => vport::ModifyNicVportContextOut;
    QueryHcaVportPkey = QUERY_HCA_VPORT_PKEY:
        vport::QueryHcaVportPkeyIn => vport::QueryHcaVportPkeyOut;
    CreateFlowTable = CREATE_FLOW_TABLE: flow::CreateFlowTableIn => flow::CreateFlowTableOut;
    DestroyFlowTable = DESTROY_FLOW_TABLE: flow::DestroyFlowTableIn => flow::DestroyFlowTableOut;
    SetFlowTableRoot = SET_FLOW_TABLE_ROOT: flow::SetFlowTableRootIn => flow::SetFlowTableRootOut;
    QueryFlowTable = QUERY_FLOW_TABLE: flow::QueryFlowTableIn => flow::QueryFlowTableOut;
    ModifyFlowTable = MODIFY_FLOW_TABLE: flow::ModifyFlowTableIn => flow::ModifyFlowTableOut;
    CreateFlowGroup = CREATE_FLOW_GROUP: flow::CreateFlowGroupIn => flow::CreateFlowGroupOut;
    DestroyFlowGroup = DESTROY_FLOW_GROUP: flow::DestroyFlowGroupIn => flow::DestroyFlowGroupOut;
    SetFlowTableEntry = SET_FLOW_TABLE_ENTRY: flow::SetFteIn => flow::SetFteOut;
    DeleteFlowTableEntry = DELETE_FLOW_TABLE_ENTRY: flow::DeleteFteIn => flow::DeleteFteOut;
    AllocFlowCounter = ALLOC_FLOW_COUNTER: flow::AllocFlowCounterIn => flow::AllocFlowCounterOut;
    DeallocFlowCounter = DEALLOC_FLOW_COUNTER:
        flow::DeallocFlowCounterIn => flow::DeallocFlowCounterOut;
    QueryFlowCounter = QUERY_FLOW_COUNTER: flow::QueryFlowCounterIn => flow::QueryFlowCounterOut;
    CreateSq = CREATE_SQ: wq::CreateSqIn => wq::CreateSqOut;
    ModifySq = MODIFY_SQ: wq::ModifySqIn => wq::ModifySqOut;
    QuerySq = QUERY_SQ: wq::QuerySqIn => wq::QuerySqOut;
    DestroySq = DESTROY_SQ: wq::DestroySqIn => wq::DestroySqOut;
    CreateRq = CREATE_RQ: wq::CreateRqIn => wq::CreateRqOut;
    ModifyRq = MODIFY_RQ: wq::ModifyRqIn => wq::ModifyRqOut;
    QueryRq = QUERY_RQ: wq::QueryRqIn => wq::QueryRqOut;
    DestroyRq = DESTROY_RQ: wq::DestroyRqIn => wq::DestroyRqOut;
    CreateTis = CREATE_TIS: tir::CreateTisIn => tir::CreateTisOut;
    ModifyTis = MODIFY_TIS: tir::ModifyTisIn => tir::ModifyTisOut;
    QueryTis = QUERY_TIS: tir::QueryTisIn => tir::QueryTisOut;
    DestroyTis = DESTROY_TIS: tir::DestroyTisIn => tir::DestroyTisOut;
    CreateTir = CREATE_TIR: tir::CreateTirIn => tir::CreateTirOut;
    ModifyTir = MODIFY_TIR: tir::ModifyTirIn => tir::ModifyTirOut;
    QueryTir = QUERY_TIR: tir::QueryTirIn => tir::QueryTirOut;
    DestroyTir = DESTROY_TIR: tir::DestroyTirIn => tir::DestroyTirOut;
    CreateRqt = CREATE_RQT: tir::CreateRqtIn => tir::CreateRqtOut;
    ModifyRqt = MODIFY_RQT: tir::ModifyRqtIn => tir::ModifyRqtOut;
    QueryRqt = QUERY_RQT: tir::QueryRqtIn => tir::QueryRqtOut;
    DestroyRqt = DESTROY_RQT: tir::DestroyRqtIn => tir::DestroyRqtOut;
    CreateMkey = CREATE_MKEY: mkey::CreateMkeyIn => mkey::CreateMkeyOut;
    QueryMkey = QUERY_MKEY: mkey::QueryMkeyIn => mkey::QueryMkeyOut;
    DestroyMkey = DESTROY_MKEY: mkey::DestroyMkeyIn => mkey::DestroyMkeyOut;
    QuerySpecialContexts = QUERY_SPECIAL_CONTEXTS:
        mkey::QuerySpecialContextsIn => mkey::QuerySpecialContextsOut;
    PageFaultResume = PAGE_FAULT_RESUME: mkey::PageFaultResumeIn => mkey::PageFaultResumeOut;
    QueryVportCounter = QUERY_VPORT_COUNTER:
        counters::QueryVportCounterIn => counters::QueryVportCounterOut;
    AllocQCounter = ALLOC_Q_COUNTER: counters::AllocQCounterIn => counters::AllocQCounterOut;
    DeallocQCounter = DEALLOC_Q_COUNTER: counters::DeallocQCounterIn => counters::DeallocQCounterOut;
    QueryQCounter = QUERY_Q_COUNTER: counters::QueryQCounterIn => counters::QueryQCounterOut;
    AddVxlanUdpDport = ADD_VXLAN_UDP_DPORT:
        counters::AddVxlanUdpDportIn => counters::AddVxlanUdpDportOut;
    DeleteVxlanUdpDport = DELETE_VXLAN_UDP_DPORT:
        counters::DeleteVxlanUdpDportIn => counters::DeleteVxlanUdpDportOut;
    QueryHcaVportContext = QUERY_HCA_VPORT_CONTEXT:
        vport::QueryHcaVportContextIn => vport::QueryHcaVportContextOut;
    QueryHcaVportGid = QUERY_HCA_VPORT_GID:
        vport::QueryHcaVportGidIn => vport::QueryHcaVportGidOut;
    CreateQp = CREATE_QP: qp::CreateQpIn => qp::CreateQpOut;
    DestroyQp = DESTROY_QP: qp::DestroyQpIn => qp::DestroyQpOut;
    QueryQp = QUERY_QP: qp::QueryQpIn => qp::QueryQpOut;
    Rst2InitQp = RST2INIT_QP: qp::Rst2InitQpIn => qp::Rst2InitQpOut;
    Init2InitQp = INIT2INIT_QP: qp::Init2InitQpIn => qp::Init2InitQpOut;
    Init2RtrQp = INIT2RTR_QP: qp::Init2RtrQpIn => qp::Init2RtrQpOut;
    Rtr2RtsQp = RTR2RTS_QP: qp::Rtr2RtsQpIn => qp::Rtr2RtsQpOut;
    Rts2RtsQp = RTS2RTS_QP: qp::Rts2RtsQpIn => qp::Rts2RtsQpOut;
    Sqerr2RtsQp = SQERR2RTS_QP: qp::Sqerr2RtsQpIn => qp::Sqerr2RtsQpOut;
    Sqd2RtsQp = SQD_RTS_QP: qp::Sqd2RtsQpIn => qp::Sqd2RtsQpOut;
    ToErrQp = TO_ERR_QP: qp::Qp2ErrIn => qp::Qp2ErrOut;
    ToRstQp = TO_RST_QP: qp::Qp2RstIn => qp::Qp2RstOut;
    CreateSrq = CREATE_SRQ: srq::CreateSrqIn => srq::CreateSrqOut;
    DestroySrq = DESTROY_SRQ: srq::DestroySrqIn => srq::DestroySrqOut;
    QuerySrq = QUERY_SRQ: srq::QuerySrqIn => srq::QuerySrqOut;
    ArmRq = ARM_RQ: srq::ArmRqIn => srq::ArmRqOut;
    CreateXrcSrq = CREATE_XRC_SRQ: srq::CreateXrcSrqIn => srq::CreateXrcSrqOut;
    DestroyXrcSrq = DESTROY_XRC_SRQ: srq::DestroyXrcSrqIn => srq::DestroyXrcSrqOut;
    QueryXrcSrq = QUERY_XRC_SRQ: srq::QueryXrcSrqIn => srq::QueryXrcSrqOut;
    ArmXrcSrq = ARM_XRC_SRQ: srq::ArmXrcSrqIn => srq::ArmXrcSrqOut;
    CreateRmp = CREATE_RMP: srq::CreateRmpIn => srq::CreateRmpOut;
    ModifyRmp = MODIFY_RMP: srq::ModifyRmpIn => srq::ModifyRmpOut;
    QueryRmp = QUERY_RMP: srq::QueryRmpIn => srq::QueryRmpOut;
    DestroyRmp = DESTROY_RMP: srq::DestroyRmpIn => srq::DestroyRmpOut;
    CreateDct = CREATE_DCT: dct::CreateDctIn => dct::CreateDctOut;
    DestroyDct = DESTROY_DCT: dct::DestroyDctIn => dct::DestroyDctOut;
    DrainDct = DRAIN_DCT: dct::DrainDctIn => dct::DrainDctOut;
    QueryDct = QUERY_DCT: dct::QueryDctIn => dct::QueryDctOut;
    ArmDctForKeyViolation = ARM_DCT_FOR_KEY_VIOLATION: dct::ArmDctIn => dct::ArmDctOut;
    MadIfc = MAD_IFC: roce::MadIfcIn => roce::MadIfcOut;
    AllocXrcd = ALLOC_XRCD: roce::AllocXrcdIn => roce::AllocXrcdOut;
    DeallocXrcd = DEALLOC_XRCD: roce::DeallocXrcdIn => roce::DeallocXrcdOut;
    SetRoceAddress = SET_ROCE_ADDRESS: roce::SetRoceAddressIn => roce::SetRoceAddressOut;
    QueryRoceAddress = QUERY_ROCE_ADDRESS:
        roce::QueryRoceAddressIn => roce::QueryRoceAddressOut;
    AttachToMcg = ATTACH_TO_MCG: roce::AttachToMcgIn => roce::AttachToMcgOut;
    DetachFromMcg = DETACH_FROM_MCG: roce::DetachFromMcgIn => roce::DetachFromMcgOut;
    QueryCongStatus = QUERY_CONG_STATUS: roce::QueryCongStatusIn => roce::QueryCongStatusOut;
    ModifyCongStatus = MODIFY_CONG_STATUS: roce::ModifyCongStatusIn => roce::ModifyCongStatusOut;
    QueryCongParams = QUERY_CONG_PARAMS: roce::QueryCongParamsIn => roce::QueryCongParamsOut;
    ModifyCongParams = MODIFY_CONG_PARAMS: roce::ModifyCongParamsIn => roce::ModifyCongParamsOut;
    QueryCongStatistics = QUERY_CONG_STATISTICS:
        roce::QueryCongStatisticsIn => roce::QueryCongStatisticsOut;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{format, string::String};

    /// mlx5_ifc.h names a command's layouts after its opcode, with a few exceptions.
    fn expected_ifc_names(op: u16) -> (String, String) {
        let base = opcode::opcode_name(op).to_ascii_lowercase();
        match op {
            opcode::ACCESS_REG => ("access_register_in".into(), "access_register_out".into()),
            opcode::GEN_EQE => ("gen_eqe_in".into(), "gen_eq_out".into()),
            opcode::SET_FLOW_TABLE_ENTRY => ("set_fte_in".into(), "set_fte_out".into()),
            opcode::DELETE_FLOW_TABLE_ENTRY => ("delete_fte_in".into(), "delete_fte_out".into()),
            opcode::TO_ERR_QP => ("qp_2err_in".into(), "qp_2err_out".into()),
            opcode::TO_RST_QP => ("qp_2rst_in".into(), "qp_2rst_out".into()),
            opcode::SQD_RTS_QP => ("sqd2rts_qp_in".into(), "sqd2rts_qp_out".into()),
            opcode::ARM_DCT_FOR_KEY_VIOLATION => ("arm_dct_in".into(), "arm_dct_out".into()),
            _ => (format!("{base}_in"), format!("{base}_out")),
        }
    }

    #[test]
    fn command_layouts_are_named_after_their_opcode() {
        for &(op, i, o) in ALL {
            let (ei, eo) = expected_ifc_names(op);
            assert_eq!((i, o), (ei.as_str(), eo.as_str()), "opcode {op:#x}");
        }
    }

    #[test]
    fn every_input_layout_starts_with_the_generic_header() {
        for &(op, i, _) in ALL {
            let info = crate::ALL_LAYOUTS
                .iter()
                .flat_map(|m| m.iter())
                .find(|l| l.ifc_name == i)
                .expect(i);
            let opcode = info.fields.iter().find(|f| f.0 == "opcode");
            assert_eq!(opcode.map(|f| (f.1, f.2)), Some((0, 16)), "{i} ({op:#x})");
        }
    }

    #[test]
    fn command_trait_exposes_opcode_and_sizes() {
        fn sizes<C: Command>() -> (u16, usize, usize) {
            (C::OPCODE, <C::In as Layout>::SIZE, <C::Out as Layout>::SIZE)
        }
        assert_eq!(sizes::<QueryHcaCap>(), (0x100, 0x10, 0x1010));
        assert_eq!(sizes::<EnableHca>(), (0x104, 0x10, 0xc));
    }
}
