// SPDX-License-Identifier: GPL-2.0
//! HCA capabilities: the general capabilities negotiated before `INIT_HCA` (main.c
//! `handle_hca_cap`), and the current general, Ethernet-offload, RoCE and vector-calc
//! capabilities kept for the layers above (fw.c `mlx5_query_hca_caps`; the vector-calc page
//! 0xb as MLNX_OFED's fw.c reads it, only when `vector_calc` is set).

use core::fmt;

use cx4_hw::{
    bits::{
        read_any,
        Layout, //
    },
    caps::{
        cap_type,
        flow::FlowTablePropLayout,
        general::CmdHcaCap,
        net::{
            PerProtocolNetworkingOffloadCaps,
            RoceCap, //
        },
        query_op_mod,
        roce::ATOMIC_REQ_MODE_HOST_ENDIANNESS,
        set_op_mod,
        vector_calc::{
            VectorCalcCap,
            CAP_TYPE_VECTOR_CALC, //
        },
        QueryHcaCapOut, //
    },
    command, //
};
use kernel::prelude::*;
use zerocopy::{
    FromBytes,
    IntoBytes, //
};

use crate::{
    cmd::{
        input,
        Cmdq, //
    },
    msg::Msg, //
};

/// `log_max_qp` the driver asks for at most (main.c: `MLX5_CAP_GEN_MAX` vs profile, 18).
const LOG_MAX_QP: u32 = 18;

fn query(cmdq: &Cmdq, ty: u16, cur: bool) -> Result<Msg<QueryHcaCapOut>> {
    let mut m = input::<command::QueryHcaCap>(0)?;
    m.set_op_mod(query_op_mod(ty, cur).into());
    cmdq.exec::<command::QueryHcaCap>(&m, 0)
}

/// Negotiates the general capabilities (before `INIT_HCA`): queries maximum and current,
/// then sets the current ones the driver wants.
/// Sets the general capabilities the driver changes; returns whether the card has RC atomics
/// (the general `atomic` capability).
pub(crate) fn set_general(cmdq: &Cmdq) -> Result<bool> {
    let max = query(cmdq, cap_type::GENERAL, false)?;
    let cur = query(cmdq, cap_type::GENERAL, true)?;
    let mut set = input::<command::SetHcaCap>(0)?;
    set.set_op_mod(set_op_mod(cap_type::GENERAL).into());
    set.capability_mut()
        .as_mut_bytes()
        .copy_from_slice(cur.capability().as_bytes());
    let max = max.capability().cmd_hca_cap();
    let c = set.capability_mut().cmd_hca_cap_mut();
    // 128 P_Key entries.
    c.set_pkey_table_size(0);
    c.set_log_max_qp(max.log_max_qp().min(LOG_MAX_QP));
    // Command signatures off: the driver neither computes nor checks them.
    c.set_cmdif_checksum(0);
    // UAR pages are the kernel's page size (4 KiB here).
    c.set_log_uar_page_sz(0);
    // The DC transport where the card has it (main.c `handle_hca_cap`).
    if max.dct() != 0 {
        c.set_dct(1);
    }
    let atomic = c.atomic() != 0;
    cmdq.exec::<command::SetHcaCap>(&set, 0)?;
    Ok(atomic)
}

/// The current capabilities after `INIT_HCA`.
/// 8-byte atomics in host endianness where the card can (mlx5_core `handle_hca_cap_atomic`):
/// a responder's memory operand and a requester's result in the CPU's byte order, as verbs
/// users (and rxe) expect them. Only with the general `atomic` capability.
pub(crate) fn set_atomic(cmdq: &Cmdq, atomic: bool) -> Result {
    if !atomic {
        return Ok(());
    }
    let cur = query(cmdq, cap_type::ATOMIC, true)?;
    if cur
        .capability()
        .atomic_caps()
        .supported_atomic_req_8B_endianness_mode_1()
        == 0
    {
        return Ok(());
    }
    let mut set = input::<command::SetHcaCap>(0)?;
    set.set_op_mod(set_op_mod(cap_type::ATOMIC).into());
    set.capability_mut()
        .as_mut_bytes()
        .copy_from_slice(cur.capability().as_bytes());
    set.capability_mut()
        .atomic_caps_mut()
        .set_atomic_req_8B_endianness_mode(ATOMIC_REQ_MODE_HOST_ENDIANNESS.into());
    cmdq.exec::<command::SetHcaCap>(&set, 0).map(|_| ())
}

pub(crate) struct Caps {
    general: Msg<QueryHcaCapOut>,
    eth: Option<Msg<QueryHcaCapOut>>,
    flow: Option<Msg<QueryHcaCapOut>>,
    roce: Option<Msg<QueryHcaCapOut>>,
    vector_calc: Option<Msg<QueryHcaCapOut>>,
}

impl Caps {
    /// Queries the current general capabilities, and the Ethernet-offload and RoCE ones when
    /// the general capabilities say they exist.
    pub(crate) fn query(cmdq: &Cmdq) -> Result<Self> {
        let general = query(cmdq, cap_type::GENERAL, true)?;
        let gen = general.capability().cmd_hca_cap();
        let eth = if gen.eth_net_offloads() != 0 {
            Some(query(cmdq, cap_type::ETHERNET_OFFLOADS, true)?)
        } else {
            None
        };
        let flow = if gen.nic_flow_table() != 0 {
            Some(query(cmdq, cap_type::FLOW_TABLE, true)?)
        } else {
            None
        };
        let roce = if gen.roce() != 0 {
            Some(query(cmdq, cap_type::ROCE, true)?)
        } else {
            None
        };
        // MLNX_OFED's page (upstream dropped it): the erasure-coding engine (ec/).
        let vector_calc = if gen.vector_calc() != 0 {
            Some(query(cmdq, CAP_TYPE_VECTOR_CALC, true)?)
        } else {
            None
        };
        Ok(Self {
            general,
            eth,
            flow,
            roce,
            vector_calc,
        })
    }

    /// The general capabilities.
    pub(crate) fn gen(&self) -> &CmdHcaCap {
        self.general.capability().cmd_hca_cap()
    }

    /// The Ethernet-offload capabilities, if the device has them.
    pub(crate) fn eth(&self) -> Option<&PerProtocolNetworkingOffloadCaps> {
        self.eth
            .as_ref()
            .map(|m| m.capability().per_protocol_networking_offload_caps())
    }

    /// The NIC receive flow table properties, if the device has NIC flow tables.
    pub(crate) fn flow_nic_rx(&self) -> Option<&FlowTablePropLayout> {
        self.flow.as_ref().map(|m| {
            m.capability()
                .flow_table_nic_cap()
                .flow_table_properties_nic_receive()
        })
    }

    /// The RoCE capabilities, if the device has them.
    pub(crate) fn roce(&self) -> Option<&RoceCap> {
        self.roce.as_ref().map(|m| m.capability().roce_cap())
    }

    /// The vector-calc capabilities (page 0xb), if the device has the engine.
    pub(crate) fn vector_calc(&self) -> Option<&VectorCalcCap> {
        let m = self.vector_calc.as_ref()?;
        VectorCalcCap::ref_from_prefix(m.capability().as_bytes())
            .ok()
            .map(|(c, _)| c)
    }

    /// The debugfs dump: every non-zero named field, one `name = value` per line.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        section(f, "general", self.gen())?;
        match self.eth() {
            Some(e) => section(f, "ethernet", e)?,
            None => writeln!(f, "[ethernet]\n(not supported)")?,
        }
        match self.roce() {
            Some(r) => section(f, "roce", r)?,
            None => writeln!(f, "[roce]\n(not supported)")?,
        }
        match self.vector_calc() {
            Some(v) => section(f, "vector_calc", v)?,
            None => writeln!(f, "[vector_calc]\n(not supported)")?,
        }
        Ok(())
    }
}

fn section<T: Layout>(f: &mut fmt::Formatter<'_>, name: &str, caps: &T) -> fmt::Result {
    writeln!(f, "[{name}]")?;
    for &(field, off, width) in T::FIELDS {
        match read_any(caps.as_bytes(), off, width) {
            Some(0) | None => {}
            Some(v) => writeln!(f, "{field} = {v}")?,
        }
    }
    Ok(())
}
