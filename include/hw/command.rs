// SPDX-License-Identifier: GPL-2.0
//! Commands as types: each names its opcode and its input and output layouts, so a command
//! queue can be generic over [`Command`] (`exec::<cmd::QueryHcaCap>(&input) -> output`).
//!
//! Only the fixed part of a message is typed; trailing arrays (`pas[]`, register data) follow
//! it in the same buffer.

use crate::bits::Layout;
use crate::{caps, cq, eq, flow, hca, opcode, pages, pd, regs, uar, vport};

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
