//! The modelled firmware: executes commands against the function's state.
//!
//! Each command family lives in its own file; this one holds the state, the dispatcher and the
//! error type. Every handler validates its input and answers with the status and syndrome a
//! real ConnectX-4 gives for the same mistake; none succeeds silently on input it ignores.
//!
//! Commands are named by the schema the driver uses (`cx4_hw::command`, the driver's
//! `cmdq.exec::<command::X>`): the dispatcher and the family handlers match on
//! `command::X::OPCODE`, and a handler reads its input as `X::In` ([`cmd_in`]) and writes
//! its output as `X::Out` ([`cmd_out`]), so the layouts a command is decoded with are the
//! ones its `Command` impl names, in one place. The firmware takes the device's bus context
//! ([`Bus`]: guest memory, MSI-X, faults) per call and never names the device.

mod caps;
pub mod cong;
mod counters;
mod cq;
#[cfg(test)]
mod cq_tests;
mod dct;
mod eq;
mod flow;
mod hca;
pub mod ib_port;
mod mkey;
mod mkey_map;
mod mkey_write;
pub mod moderation;
#[cfg(test)]
mod moderation_tests;
mod nic;
mod pages;
pub mod qos;
mod qp;
mod rdma;
mod regs;
mod res;
mod roce;
pub mod sma;
#[cfg(test)]
mod sma_tests;
mod srq;
mod steer;
mod tir;
mod vport;
mod wq;

use std::collections::BTreeMap;

use cx4_hw::{
    bits::{get32, set32},
    command::{self as cmds, Command},
    eq::eqe::Eqe,
    opcode::opcode_name,
    status,
};

pub use caps::{CapProfile, EthCap, ProfileError};
pub use counters::{Cast, CastCounts, PortCounters, QCounter, RoceQCounts};
pub use cq::{Arm, Cq};
pub use dct::Dct;
pub use flow::{Dest, FlowCount, FlowGroup, FlowTable, Fte, Miss};
pub use mkey::{
    Access, IndirectEntry, Mkey, MkeyMap, RepeatEntry, XlateError, MKEY_QPN_NONE, MTT_READ,
    MTT_WRITE, NULL_MKEY, RESERVED_LKEY,
};
pub use mkey_write::{strided_spans, Copy};
pub use nic::NicObjects;
pub use qp::{Qp, QpBuf};
pub use rdma::{GidEntry, PfResume, RdmaObjects, QP_DESTROYED};
pub use regs::{ETH_100GBASE_CR4, ETH_25GBASE_CR};
pub use srq::{Srq, SrqKind};
pub use steer::{
    DropReason, Headers, IpFields, L4Fields, RxFrame, RxVerdict, Steering, Tunnel, VlanTag,
};
pub use tir::{HashFields, Rqt, RxHash, Tir, TirDispatch, TirLro, Tis};
pub use vport::VportState;
pub use wq::{QueueState, Rq, Sq, Striding, StridingWqe, WqDesc};

use crate::{eq::Eq, faults::Verdict, guest_mem::GuestMem, pages::Pages};

/// A command failure: status byte, syndrome and a human-readable reason for the model's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdError {
    /// `MLX5_CMD_STAT_*`.
    pub status: u8,
    /// Syndrome; stable per check site (a hash of the reason), like firmware's.
    pub syndrome: u32,
    /// Why.
    pub reason: String,
}

/// FNV-1a of a check site's reason: the model's syndromes, stable across runs and builds.
pub const fn syndrome_of(reason: &str) -> u32 {
    let b = reason.as_bytes();
    let mut h: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < b.len() {
        h ^= b[i] as u32;
        h = h.wrapping_mul(0x0100_0193);
        i += 1;
    }
    h
}

impl CmdError {
    /// A failure with `status`; the syndrome derives from the static part of the reason.
    pub fn new(status: u8, site: &'static str, detail: impl Into<String>) -> Self {
        let d = detail.into();
        CmdError {
            status,
            syndrome: syndrome_of(site),
            reason: if d.is_empty() {
                site.to_string()
            } else {
                format!("{site}: {d}")
            },
        }
    }
}

/// Shorthand for handlers.
pub type CmdResult = Result<(), CmdError>;

macro_rules! fail {
    ($status:ident, $site:literal) => {
        return Err($crate::fw::CmdError::new(cx4_hw::status::$status, $site, ""))
    };
    ($status:ident, $site:literal, $($arg:tt)+) => {
        return Err($crate::fw::CmdError::new(cx4_hw::status::$status, $site, format!($($arg)+)))
    };
}
pub(crate) use fail;

/// What the rest of the device lends the firmware while it executes a command.
pub use crate::bus::Bus;

/// Life cycle of the function, as ENABLE/INIT/TEARDOWN/DISABLE move it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HcaState {
    /// After reset, before ENABLE_HCA.
    Disabled,
    /// Enabled, not initialized (ISSI, pages, caps may be negotiated).
    Enabled,
    /// INIT_HCA done: resources may be created.
    Initialized,
    /// TEARDOWN_HCA done: only page reclaim and DISABLE_HCA make sense.
    TornDown,
}

/// Per-opcode statistics.
#[derive(Debug, Default, Clone, Copy)]
pub struct OpStats {
    /// Executed.
    pub count: u64,
    /// Failed.
    pub errors: u64,
}

/// The firmware state of one function.
pub struct Firmware {
    /// Life cycle.
    pub state: HcaState,
    /// Negotiated interface step sequence id.
    pub issi: u16,
    /// Capabilities (max and current).
    pub caps: CapProfile,
    /// Firmware pages.
    pub pages: Pages,
    /// Allocated UAR indices.
    pub uars: BTreeMap<u32, ()>,
    /// Event queues by number.
    pub eqs: BTreeMap<u8, Eq>,
    /// Completion queues by number.
    pub cqs: BTreeMap<u32, Cq>,
    /// Protection domains.
    pub pds: BTreeMap<u32, ()>,
    /// Transport domains.
    pub tds: BTreeMap<u32, ()>,
    /// Flow tables with their groups and entries.
    pub flow_tables: BTreeMap<u32, flow::FlowTable>,
    /// Root flow table per table type.
    pub flow_root: BTreeMap<u8, u32>,
    /// Registers written by the driver (id → contents), for the ones that keep state.
    pub regs: regs::RegState,
    /// NIC vport context.
    pub vport: vport::VportState,
    /// Ethernet objects (TIS, SQ, RQ, RQT, TIR, mkeys, counters, VXLAN ports).
    pub nic: nic::NicObjects,
    /// RDMA objects (QPs, XRC domains, GID table, multicast groups).
    pub rdma: rdma::RdmaObjects,
    /// RoCE congestion control: enable state, RP/NP parameters, counters.
    pub cong: cong::CongState,
    /// The InfiniBand port (`--link ib`): state the SMA keeps.
    pub ib: ib_port::IbPort,
    /// Statistics per opcode.
    pub stats: BTreeMap<u16, OpStats>,
    /// CQs holding back a moderated completion event.
    pub cq_timers: moderation::CqTimers,
    /// Driver version string from SET_DRIVER_VERSION.
    pub driver_version: String,
    /// Board id reported by QUERY_ADAPTER.
    pub psid: String,
    next_id: u32,
}

/// An EQE of event type `ty` and sub-type `sub`, payload zero.
pub fn new_event(ty: u8, sub: u8) -> Eqe {
    let mut eqe = Eqe::new();
    eqe.set_event_type(ty.into());
    eqe.set_sub_type(sub.into());
    eqe
}

/// Reads the opcode of a command input.
pub fn in_opcode(input: &[u8]) -> u16 {
    get32(input, 0, 16) as u16
}

/// Reads the op_mod of a command input.
pub fn in_op_mod(input: &[u8]) -> u16 {
    get32(input, 0x30, 16) as u16
}

impl Firmware {
    /// Power-on state with a capability profile and page demand.
    pub fn new(caps: CapProfile, pages: Pages, psid: &str) -> Self {
        let mut regs = regs::RegState::default();
        if caps.general("port_type") == 0 {
            // An IB port has no PAOS for the driver to raise: it is up from power-on and
            // the link trains by itself (`ib_port.rs`).
            regs.admin_status = cx4_hw::regs::port_status::UP;
        }
        Firmware {
            state: HcaState::Disabled,
            issi: 0,
            caps,
            pages,
            uars: BTreeMap::new(),
            eqs: BTreeMap::new(),
            cqs: BTreeMap::new(),
            pds: BTreeMap::new(),
            tds: BTreeMap::new(),
            flow_tables: BTreeMap::new(),
            flow_root: BTreeMap::new(),
            regs,
            vport: vport::VportState::default(),
            nic: nic::NicObjects::default(),
            rdma: rdma::RdmaObjects::default(),
            cong: cong::CongState::default(),
            ib: Default::default(),
            stats: BTreeMap::new(),
            cq_timers: moderation::CqTimers::default(),
            driver_version: String::new(),
            psid: psid.to_string(),
            next_id: 1,
        }
    }

    /// A fresh object number (PDs, TDs, flow tables; never 0).
    fn alloc_id(&mut self) -> u32 {
        let id = self.next_id;
        // 24-bit numbers; mask before skipping 0, or 0xffffff would be followed by 0.
        self.next_id = (self.next_id.wrapping_add(1) & 0x00ff_ffff).max(1);
        id
    }

    /// Function reset: every object and page is forgotten (the driver's memory is its own).
    pub fn reset(&mut self) {
        let pages = std::mem::take(&mut self.pages);
        if pages.held() > 0 {
            log::warn!("reset with firmware pages still held: {}", pages.report());
        }
        let caps = self.caps.reset_current();
        let (regs, vport) = (self.regs.clone(), self.vport.clone());
        let wake = self.cq_timers.wake.take();
        *self = Firmware::new(caps, pages.renewed(), &self.psid);
        self.cq_timers.wake = wake;
        // Port and firmware identity survive a function reset; admin state does not.
        self.regs.eth_proto = regs.eth_proto;
        self.regs.fw_version = regs.fw_version;
        self.regs.carrier = regs.carrier;
        self.regs.link_up = regs.link_up;
        // An IB port comes out of reset trained if the link is there (no event: the
        // driver that would hear it is gone).
        let _ = self.ib.set_link(regs.link_up && regs.carrier);
        self.vport.mac = vport.mac;
        self.vport.guid = vport.guid;
    }

    fn require(&self, want: &[HcaState], site: &'static str) -> CmdResult {
        if want.contains(&self.state) {
            Ok(())
        } else {
            Err(CmdError::new(
                status::BAD_SYS_STATE,
                site,
                format!("function is {:?}", self.state),
            ))
        }
    }

    /// Executes one command; returns the output (`out_len` bytes, header included), or `None`
    /// when the command must not be answered (fault injection).
    pub fn execute(&mut self, ctx: &mut Bus, input: &[u8], out_len: usize) -> Option<Vec<u8>> {
        let mut out = vec![0u8; out_len.max(8)];
        let op = in_opcode(input);
        let verdict = ctx.faults.verdict(op);
        let res = match verdict {
            Verdict::Stall => {
                log::warn!(
                    "{} ({op:#x}): not answered (fault injection)",
                    opcode_name(op)
                );
                return None;
            }
            Verdict::Fail(st, synd) => Err(CmdError {
                status: st,
                syndrome: synd,
                reason: "injected failure".into(),
            }),
            Verdict::Run => self.dispatch(ctx, op, input, &mut out),
        };
        let s = self.stats.entry(op).or_default();
        s.count += 1;
        match res {
            Ok(()) => {
                log::debug!(
                    "{} ({op:#x}) op_mod {:#x}: ok",
                    opcode_name(op),
                    in_op_mod(input)
                );
                set32(&mut out, 0, 8, 0);
                set32(&mut out, 0x20, 32, 0);
            }
            Err(e) => {
                s.errors += 1;
                log::warn!(
                    "{} ({op:#x}) op_mod {:#x}: status {} ({:#x}) syndrome {:#x}: {}",
                    opcode_name(op),
                    in_op_mod(input),
                    status::status_name(e.status),
                    e.status,
                    e.syndrome,
                    e.reason
                );
                out.iter_mut().for_each(|b| *b = 0);
                set32(&mut out, 0, 8, u32::from(e.status));
                set32(&mut out, 0x20, 32, e.syndrome);
            }
        }
        out.truncate(out_len);
        Some(out)
    }

    fn dispatch(&mut self, ctx: &mut Bus, op: u16, input: &[u8], out: &mut [u8]) -> CmdResult {
        let any = [HcaState::Enabled, HcaState::Initialized, HcaState::TornDown];
        let live = [HcaState::Initialized];
        match op {
            cmds::EnableHca::OPCODE => self.enable_hca(input),
            cmds::DisableHca::OPCODE => self.disable_hca(input),
            cmds::QueryIssi::OPCODE => {
                self.require(&any, "QUERY_ISSI before ENABLE_HCA")?;
                self.query_issi(input, out)
            }
            cmds::SetIssi::OPCODE => {
                self.require(&[HcaState::Enabled], "SET_ISSI outside the enabled state")?;
                self.set_issi(input)
            }
            cmds::QueryPages::OPCODE => {
                self.require(&any, "QUERY_PAGES before ENABLE_HCA")?;
                self.query_pages(input, out)
            }
            cmds::ManagePages::OPCODE => {
                self.require(&any, "MANAGE_PAGES before ENABLE_HCA")?;
                self.manage_pages(ctx, input, out)
            }
            cmds::QueryHcaCap::OPCODE => {
                self.require(&any, "QUERY_HCA_CAP before ENABLE_HCA")?;
                self.query_hca_cap(input, out)
            }
            cmds::SetHcaCap::OPCODE => {
                self.require(&[HcaState::Enabled], "SET_HCA_CAP after INIT_HCA")?;
                self.set_hca_cap(input)
            }
            cmds::InitHca::OPCODE => self.init_hca(ctx, input),
            cmds::TeardownHca::OPCODE => self.teardown_hca(input),
            cmds::QueryAdapter::OPCODE => {
                self.require(&any, "QUERY_ADAPTER before ENABLE_HCA")?;
                self.query_adapter(input, out)
            }
            cmds::SetDriverVersion::OPCODE => {
                self.require(&live, "SET_DRIVER_VERSION before INIT_HCA")?;
                self.set_driver_version(input)
            }
            cmds::AccessReg::OPCODE => {
                self.require(&any, "ACCESS_REG before ENABLE_HCA")?;
                self.access_reg(ctx, input, out)
            }
            cmds::AllocUar::OPCODE
            | cmds::DeallocUar::OPCODE
            | cmds::AllocPd::OPCODE
            | cmds::DeallocPd::OPCODE
            | cmds::AllocTransportDomain::OPCODE
            | cmds::DeallocTransportDomain::OPCODE => {
                self.require(&live, "resource command before INIT_HCA")?;
                self.resource(op, input, out)
            }
            cmds::CreateEq::OPCODE
            | cmds::DestroyEq::OPCODE
            | cmds::QueryEq::OPCODE
            | cmds::GenEqe::OPCODE => {
                self.require(&live, "EQ command before INIT_HCA")?;
                self.eq_cmd(ctx, op, input, out)
            }
            cmds::CreateCq::OPCODE
            | cmds::DestroyCq::OPCODE
            | cmds::QueryCq::OPCODE
            | cmds::ModifyCq::OPCODE => {
                self.require(&live, "CQ command before INIT_HCA")?;
                self.cq_cmd(ctx, op, input, out)
            }
            cmds::QueryVportState::OPCODE
            | cmds::QueryNicVportContext::OPCODE
            | cmds::ModifyNicVportContext::OPCODE
            | cmds::QueryHcaVportPkey::OPCODE => {
                self.require(&live, "vport command before INIT_HCA")?;
                self.vport_cmd(op, input, out)
            }
            cmds::QueryHcaVportContext::OPCODE | cmds::QueryHcaVportGid::OPCODE => {
                self.require(&live, "vport command before INIT_HCA")?;
                self.hca_vport_cmd(op, input, out)
            }
            cmds::CreateFlowTable::OPCODE
            | cmds::DestroyFlowTable::OPCODE
            | cmds::SetFlowTableRoot::OPCODE
            | cmds::QueryFlowTable::OPCODE
            | cmds::ModifyFlowTable::OPCODE
            | cmds::CreateFlowGroup::OPCODE
            | cmds::DestroyFlowGroup::OPCODE
            | cmds::SetFlowTableEntry::OPCODE
            | cmds::DeleteFlowTableEntry::OPCODE
            | cmds::AllocFlowCounter::OPCODE
            | cmds::DeallocFlowCounter::OPCODE
            | cmds::QueryFlowCounter::OPCODE => {
                self.require(&live, "flow table command before INIT_HCA")?;
                self.flow_cmd(op, input, out)
            }
            cmds::CreateSq::OPCODE
            | cmds::ModifySq::OPCODE
            | cmds::QuerySq::OPCODE
            | cmds::DestroySq::OPCODE
            | cmds::CreateRq::OPCODE
            | cmds::ModifyRq::OPCODE
            | cmds::QueryRq::OPCODE
            | cmds::DestroyRq::OPCODE => {
                self.require(&live, "work queue command before INIT_HCA")?;
                self.wq_cmd(ctx, op, input, out)
            }
            cmds::CreateTis::OPCODE
            | cmds::ModifyTis::OPCODE
            | cmds::QueryTis::OPCODE
            | cmds::DestroyTis::OPCODE
            | cmds::CreateTir::OPCODE
            | cmds::ModifyTir::OPCODE
            | cmds::QueryTir::OPCODE
            | cmds::DestroyTir::OPCODE
            | cmds::CreateRqt::OPCODE
            | cmds::ModifyRqt::OPCODE
            | cmds::QueryRqt::OPCODE
            | cmds::DestroyRqt::OPCODE => {
                self.require(&live, "transport object command before INIT_HCA")?;
                self.tir_cmd(op, input, out)
            }
            cmds::CreateMkey::OPCODE
            | cmds::QueryMkey::OPCODE
            | cmds::DestroyMkey::OPCODE
            | cmds::QuerySpecialContexts::OPCODE
            | cmds::PageFaultResume::OPCODE => {
                self.require(&live, "mkey command before INIT_HCA")?;
                self.mkey_cmd(ctx, op, input, out)
            }
            cmds::AllocQCounter::OPCODE
            | cmds::DeallocQCounter::OPCODE
            | cmds::QueryQCounter::OPCODE
            | cmds::QueryVportCounter::OPCODE => {
                self.require(&live, "counter command before INIT_HCA")?;
                self.counter_cmd(op, input, out)
            }
            cmds::CreateQp::OPCODE
            | cmds::DestroyQp::OPCODE
            | cmds::QueryQp::OPCODE
            | cmds::Rst2InitQp::OPCODE
            | cmds::Init2InitQp::OPCODE
            | cmds::Init2RtrQp::OPCODE
            | cmds::Rtr2RtsQp::OPCODE
            | cmds::Rts2RtsQp::OPCODE
            | cmds::Sqerr2RtsQp::OPCODE
            | cmds::Sqd2RtsQp::OPCODE
            | cmds::ToErrQp::OPCODE
            | cmds::ToRstQp::OPCODE => {
                self.require(&live, "QP command before INIT_HCA")?;
                self.qp_cmd(ctx, op, input, out)
            }
            cmds::AllocXrcd::OPCODE
            | cmds::DeallocXrcd::OPCODE
            | cmds::SetRoceAddress::OPCODE
            | cmds::QueryRoceAddress::OPCODE
            | cmds::AttachToMcg::OPCODE
            | cmds::DetachFromMcg::OPCODE
            | cmds::MadIfc::OPCODE => {
                self.require(&live, "RoCE command before INIT_HCA")?;
                if op == cmds::MadIfc::OPCODE && self.ib_mode() {
                    return self.ib_mad_ifc(ctx, input, out);
                }
                self.roce_cmd(op, input, out)
            }
            cmds::CreateSrq::OPCODE
            | cmds::DestroySrq::OPCODE
            | cmds::QuerySrq::OPCODE
            | cmds::ArmRq::OPCODE
            | cmds::CreateXrcSrq::OPCODE
            | cmds::DestroyXrcSrq::OPCODE
            | cmds::QueryXrcSrq::OPCODE
            | cmds::ArmXrcSrq::OPCODE
            | cmds::CreateRmp::OPCODE
            | cmds::ModifyRmp::OPCODE
            | cmds::DestroyRmp::OPCODE
            | cmds::QueryRmp::OPCODE => {
                self.require(&live, "SRQ command before INIT_HCA")?;
                self.srq_cmd(ctx, op, input, out)
            }
            cmds::CreateDct::OPCODE
            | cmds::DestroyDct::OPCODE
            | cmds::DrainDct::OPCODE
            | cmds::QueryDct::OPCODE
            | cmds::ArmDctForKeyViolation::OPCODE => {
                self.require(&live, "DCT command before INIT_HCA")?;
                self.dct_cmd(ctx, op, input, out)
            }
            cmds::QueryCongStatus::OPCODE
            | cmds::ModifyCongStatus::OPCODE
            | cmds::QueryCongParams::OPCODE
            | cmds::ModifyCongParams::OPCODE
            | cmds::QueryCongStatistics::OPCODE => {
                self.require(&live, "congestion command before INIT_HCA")?;
                self.cong_cmd(op, input, out)
            }
            cmds::AddVxlanUdpDport::OPCODE | cmds::DeleteVxlanUdpDport::OPCODE => {
                self.require(&live, "VXLAN port command before INIT_HCA")?;
                self.vxlan_cmd(op, input)
            }
            _ => fail!(
                BAD_OP,
                "unknown or unsupported opcode",
                "{op:#x} ({})",
                opcode_name(op)
            ),
        }
    }

    /// Posts an event to the first EQ subscribed to its type (async events).
    pub fn post_event(&mut self, ctx: &mut Bus, eqe: &Eqe) -> usize {
        let ty = eqe.event_type() as u8;
        let mut n = 0;
        for eq in self.eqs.values_mut() {
            if eq.wants(ty) {
                if eq.post(&ctx.mem, &mut ctx.msix, &mut ctx.faults, eqe) {
                    n += 1;
                }
                break; // one EQ per event type, like the hardware's event routing
            }
        }
        n
    }

    /// Objects still alive (for leak reports at teardown).
    pub fn live_objects(&self) -> String {
        let groups: usize = self.flow_tables.values().map(|t| t.groups.len()).sum();
        let entries: usize = self.flow_tables.values().map(|t| t.entries.len()).sum();
        let mut s = format!(
            "{} UARs, {} EQs, {} CQs, {} PDs, {} TDs, {} flow tables",
            self.uars.len(),
            self.eqs.len(),
            self.cqs.len(),
            self.pds.len(),
            self.tds.len(),
            self.flow_tables.len()
        );
        if groups + entries > 0 {
            s += &format!(" ({groups} flow groups, {entries} entries)");
        }
        for item in self.nic.live().into_iter().chain(self.rdma.live()) {
            s += ", ";
            s += &item;
        }
        s
    }

    /// Whether any object is alive (TEARDOWN_HCA reports and releases them).
    pub fn has_live_objects(&self) -> bool {
        !self.eqs.is_empty()
            || !self.cqs.is_empty()
            || !self.uars.is_empty()
            || !self.pds.is_empty()
            || !self.tds.is_empty()
            || !self.flow_tables.is_empty()
            || !self.nic.live().is_empty()
            || !self.rdma.live().is_empty()
    }
}

/// Checks an input is at least `need` bytes long.
pub fn need_in(input: &[u8], need: usize) -> CmdResult {
    if input.len() < need {
        fail!(
            BAD_INP_LEN,
            "command input too short",
            "{} < {need} bytes",
            input.len()
        );
    }
    Ok(())
}

/// Checks an output buffer is at least `need` bytes long.
pub fn need_out(out: &[u8], need: usize) -> CmdResult {
    if out.len() < need {
        fail!(
            BAD_OUTP_LEN,
            "command output too short",
            "{} < {need} bytes",
            out.len()
        );
    }
    Ok(())
}

/// Reads and checks the PAS list of a ring of `bytes` bytes in pages of `2^page_shift` bytes:
/// the input must carry an entry per page, each page-aligned and backed by guest memory.
/// `pas(input, i)` is the layout's trailing-array accessor.
pub fn ring_pas(
    mem: &GuestMem,
    input: &[u8],
    bytes: u64,
    page_shift: u32,
    pas: impl Fn(&[u8], usize) -> Option<u64>,
) -> Result<Vec<u64>, CmdError> {
    // A ring whose bytes end inside a page needs that page too (a QP of a 1 KiB RQ and a
    // 4 KiB SQ spans two pages).
    let npages = bytes.max(1 << page_shift).div_ceil(1 << page_shift) as usize;
    let list: Option<Vec<u64>> = (0..npages).map(|i| pas(input, i)).collect();
    let Some(list) = list else {
        return Err(CmdError::new(
            status::BAD_INP_LEN,
            "fewer PAS entries than the ring needs",
            format!("{npages} needed"),
        ));
    };
    let mut probe = [0u8; 1];
    for &pa in &list {
        if pa % (1 << page_shift) != 0 || mem.read(pa, &mut probe).is_err() {
            return Err(CmdError::new(
                status::BAD_PARAM,
                "PAS entry not an aligned guest page",
                format!("{pa:#x}"),
            ));
        }
    }
    Ok(list)
}

/// Guest address of byte `off` of a ring laid out on `pas`, pages of `2^page_shift` bytes
/// (`None` past the last page). Every queue the device walks (EQ, CQ, WQ, QP, SRQ) locates its
/// entries through this.
pub fn ring_addr(pas: &[u64], page_shift: u8, off: u64) -> Option<u64> {
    let page = usize::try_from(off >> page_shift).ok()?;
    Some(pas.get(page)? + (off & ((1u64 << page_shift) - 1)))
}

/// Views a command input as its layout, or fails with BAD_INP_LEN when it is too short.
pub fn req<T>(input: &[u8]) -> Result<&T, CmdError>
where
    T: zerocopy::FromBytes + zerocopy::KnownLayout + zerocopy::Immutable,
{
    match T::ref_from_prefix(input) {
        Ok((t, _)) => Ok(t),
        Err(_) => Err(CmdError::new(
            status::BAD_INP_LEN,
            "command input too short",
            format!("{} bytes", input.len()),
        )),
    }
}

/// Command `C`'s input decoded as the schema's `C::In` (the layout the driver's
/// `cmdq.exec::<C>` encodes), or BAD_INP_LEN when it is too short.
pub fn cmd_in<C: Command>(input: &[u8]) -> Result<&C::In, CmdError> {
    req::<C::In>(input)
}

/// Command `C`'s output viewed as the schema's `C::Out` (the layout the driver's
/// `cmdq.exec::<C>` decodes), or BAD_OUTP_LEN when it is too short.
pub fn cmd_out<C: Command>(out: &mut [u8]) -> Result<&mut C::Out, CmdError> {
    resp::<C::Out>(out)
}

/// Views a command output as its layout, or fails with BAD_OUTP_LEN when it is too short.
pub fn resp<T>(out: &mut [u8]) -> Result<&mut T, CmdError>
where
    T: zerocopy::FromBytes + zerocopy::IntoBytes + zerocopy::KnownLayout,
{
    let n = out.len();
    match T::mut_from_prefix(out) {
        Ok((t, _)) => Ok(t),
        Err(_) => Err(CmdError::new(
            status::BAD_OUTP_LEN,
            "command output too short",
            format!("{n} bytes"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_numbers_wrap_past_24_bits_to_1_never_0() {
        let caps = CapProfile::parse("[general]\n").unwrap();
        let mut fw = Firmware::new(caps, Pages::default(), "MT_TEST");
        fw.next_id = 0x00ff_fffe;
        let ids: Vec<u32> = (0..3).map(|_| fw.alloc_id()).collect();
        assert_eq!(ids, [0x00ff_fffe, 0x00ff_ffff, 1]);
    }
}
