// SPDX-License-Identifier: GPL-2.0
//! The Ethernet port (port.c, en/port.c): administrative and operational status (PAOS), link
//! protocols and speed (PTYS), MTU (PMTU), global pause (PFCC), and a registration for port change events from the
//! async EQ (en_main.c `mlx5e_async_event` → carrier update).

use cx4_hw::{
    bits::Layout,
    command,
    counters::PfccReg,
    regs::{
        self,
        eth_link_mode as m,
        id,
        port_status,
        AccessRegisterOut,
        PaosReg,
        PmtuReg,
        PtysProto,
        PtysReg, //
    },
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    eq::PortEvents,
    mdev::Mdev, //
};

/// The local port number of the (single) Ethernet port.
pub(crate) const LOCAL_PORT: u32 = 1;

/// Bytes mlx5e adds to the netdev MTU for the hardware MTU: Ethernet header, one VLAN tag and
/// the FCS (en.h `MLX5E_SW2HW_MTU`, `hard_mtu`).
pub(crate) const HARD_MTU: u32 = 14 + 4 + 4;

/// The hardware MTU (PMTU, vport context) of a netdev MTU.
pub(crate) const fn sw_to_hw_mtu(mtu: u32) -> u32 {
    mtu + HARD_MTU
}

/// The netdev MTU of a hardware MTU (0 if it is too small to hold the headers).
pub(crate) const fn hw_to_sw_mtu(hw: u32) -> u32 {
    hw.saturating_sub(HARD_MTU)
}

/// Reads (`write` false) or writes register `reg_id` with the contents `reg`, returning what
/// the device answered (port.c `mlx5_core_access_reg`).
pub(crate) fn access_reg<R: Layout>(mdev: &Mdev, reg_id: u16, reg: &R, write: bool) -> Result<R> {
    let mut m = input::<command::AccessReg>(R::SIZE)?;
    m.set_op_mod(
        if write {
            regs::ACCESS_REG_WRITE
        } else {
            regs::ACCESS_REG_READ
        }
        .into(),
    );
    m.set_register_id(reg_id.into());
    m.tail_mut()
        .get_mut(..R::SIZE)
        .ok_or(EINVAL)?
        .copy_from_slice(reg.as_bytes());
    let out = mdev.cmdq.exec::<command::AccessReg>(&m, R::SIZE)?;
    let data = out.bytes().get(AccessRegisterOut::SIZE..).ok_or(EIO)?;
    R::read_from_prefix(data).map(|(r, _)| r).map_err(|_| EIO)
}

/// Administrative and operational state of the port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PortStatus {
    /// The port is administratively up.
    pub(crate) admin_up: bool,
    /// The link is up.
    pub(crate) oper_up: bool,
}

/// Queries PAOS (port.c `mlx5_query_port_admin_status` / `_oper_status`).
pub(crate) fn query_status(mdev: &Mdev) -> Result<PortStatus> {
    let mut q = PaosReg::new();
    q.set_local_port(LOCAL_PORT);
    let r = access_reg(mdev, id::PAOS, &q, false)?;
    Ok(PortStatus {
        admin_up: r.admin_status() == u32::from(port_status::UP),
        oper_up: r.oper_status() == u32::from(port_status::UP),
    })
}

/// Sets the port administratively up or down (port.c `mlx5_set_port_admin_status`).
pub(crate) fn set_admin_up(mdev: &Mdev, up: bool) -> Result {
    let mut q = PaosReg::new();
    q.set_local_port(LOCAL_PORT);
    q.set_admin_status(
        if up {
            port_status::UP
        } else {
            port_status::DOWN
        }
        .into(),
    );
    q.set_ase(1);
    access_reg(mdev, id::PAOS, &q, true).map(|_| ())
}

/// Takes the link down and up again if the port is administratively up, so the link
/// partner sees the new flow control configuration (port.c `mlx5_toggle_port_link`).
pub(crate) fn toggle_link(mdev: &Mdev) -> Result {
    if query_status(mdev)?.admin_up {
        set_admin_up(mdev, false)?;
        set_admin_up(mdev, true)?;
    }
    Ok(())
}

/// The Ethernet protocol masks of PTYS (legacy `eth_proto_*` bits, [`m`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EthProtos {
    /// Supported.
    pub(crate) capability: u32,
    /// Enabled.
    pub(crate) admin: u32,
    /// Running (one bit when the link is up, 0 when down).
    pub(crate) oper: u32,
}

/// Queries PTYS for Ethernet (port.c `mlx5_query_ptys` / `mlx5_port_query_eth_proto`).
pub(crate) fn query_eth_protos(mdev: &Mdev) -> Result<EthProtos> {
    let mut q = PtysReg::new();
    q.set_local_port(LOCAL_PORT);
    q.set_proto_mask(PtysProto::EN.bits().into());
    let r = access_reg(mdev, id::PTYS, &q, false)?;
    Ok(EthProtos {
        capability: r.eth_proto_capability(),
        admin: r.eth_proto_admin(),
        oper: r.eth_proto_oper(),
    })
}

/// Speed in Mb/s of one legacy Ethernet link mode (en/port.c `mlx5e_link_speed`), 0 if
/// unknown.
pub(crate) fn link_mode_speed(mode: u8) -> u32 {
    match mode {
        m::ETH_100BASE_TX => 100,
        m::ETH_1000BASE_CX_SGMII | m::ETH_1000BASE_KX | m::ETH_1000BASE_T => 1000,
        m::ETH_10GBASE_CX4
        | m::ETH_10GBASE_KX4
        | m::ETH_10GBASE_KR
        | m::ETH_10GBASE_CR
        | m::ETH_10GBASE_SR
        | m::ETH_10GBASE_ER
        | m::ETH_10GBASE_T => 10_000,
        m::ETH_20GBASE_KR2 => 20_000,
        m::ETH_25GBASE_CR | m::ETH_25GBASE_KR | m::ETH_25GBASE_SR => 25_000,
        m::ETH_40GBASE_CR4 | m::ETH_40GBASE_KR4 | m::ETH_40GBASE_SR4 | m::ETH_40GBASE_LR4 => 40_000,
        m::ETH_50GBASE_SR2 | m::ETH_50GBASE_CR2 | m::ETH_50GBASE_KR2 => 50_000,
        m::ETH_56GBASE_R4 => 56_000,
        m::ETH_100GBASE_CR4 | m::ETH_100GBASE_SR4 | m::ETH_100GBASE_KR4 | m::ETH_100GBASE_LR4 => {
            100_000
        }
        _ => 0,
    }
}

/// The highest speed in Mb/s of the modes in a legacy `eth_proto` mask (0 if none is known).
pub(crate) fn protos_speed(mask: u32) -> u32 {
    (0u8..32)
        .filter(|b| mask & (1 << b) != 0)
        .map(link_mode_speed)
        .max()
        .unwrap_or(0)
}

/// The current link speed in Mb/s (0 when the link is down; en/port.c `mlx5e_port_linkspeed`).
pub(crate) fn query_speed(mdev: &Mdev) -> Result<u32> {
    Ok(protos_speed(query_eth_protos(mdev)?.oper))
}

/// The largest speed the port supports in Mb/s (`mlx5e_port_max_linkspeed`).
pub(crate) fn query_max_speed(mdev: &Mdev) -> Result<u32> {
    Ok(protos_speed(query_eth_protos(mdev)?.capability))
}

/// The port MTUs (PMTU), hardware units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PortMtu {
    /// The largest MTU the port supports.
    pub(crate) max: u32,
    /// The MTU set.
    pub(crate) admin: u32,
    /// The MTU in use.
    pub(crate) oper: u32,
}

/// Queries PMTU (port.c `mlx5_query_port_mtu`).
pub(crate) fn query_mtu(mdev: &Mdev) -> Result<PortMtu> {
    let mut q = PmtuReg::new();
    q.set_local_port(LOCAL_PORT);
    let r = access_reg(mdev, id::PMTU, &q, false)?;
    Ok(PortMtu {
        max: r.max_mtu(),
        admin: r.admin_mtu(),
        oper: r.oper_mtu(),
    })
}

/// Sets the port's admin MTU, hardware units (port.c `mlx5_set_port_mtu`). mlx5e sets the
/// vport MTU to the same value ([`crate::en::res::set_vport_mtu`]).
pub(crate) fn set_mtu(mdev: &Mdev, hw_mtu: u32) -> Result {
    let mut q = PmtuReg::new();
    q.set_local_port(LOCAL_PORT);
    q.set_admin_mtu(hw_mtu);
    access_reg(mdev, id::PMTU, &q, true).map(|_| ())
}

/// Global pause of the port: whether it sends and honours IEEE 802.3x pause frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pause {
    /// Honour received pause frames.
    pub(crate) rx: bool,
    /// Send pause frames.
    pub(crate) tx: bool,
}

/// Queries PFCC's global pause (port.c `mlx5_query_port_pause`).
pub(crate) fn query_pause(mdev: &Mdev) -> Result<Pause> {
    let mut q = PfccReg::new();
    q.set_local_port(LOCAL_PORT);
    let r = access_reg(mdev, id::PFCC, &q, false)?;
    Ok(Pause {
        rx: r.pprx() != 0,
        tx: r.pptx() != 0,
    })
}

/// Sets PFCC's global pause (port.c `mlx5_set_port_pause`; the `*_mask_n` bits clear: both
/// directions are written).
pub(crate) fn set_pause(mdev: &Mdev, p: Pause) -> Result {
    let mut q = PfccReg::new();
    q.set_local_port(LOCAL_PORT);
    q.set_pptx(p.tx.into());
    q.set_pprx(p.rx.into());
    access_reg(mdev, id::PFCC, &q, true).map(|_| ())
}

/// A registered port change listener; unregisters on drop. The listener runs in the async
/// EQ's hard-interrupt handler (see [`PortEvents`]).
pub(crate) struct PortEventsRegistration {
    mdev: Arc<Mdev>,
}

impl PortEventsRegistration {
    /// Registers `h` as the function's port change listener; `EBUSY` if one is registered.
    pub(crate) fn new(mdev: &Arc<Mdev>, h: Arc<dyn PortEvents>) -> Result<Self> {
        mdev.set_port_events(h)?;
        Ok(Self { mdev: mdev.clone() })
    }
}

impl Drop for PortEventsRegistration {
    fn drop(&mut self) {
        // Returned (and so dropped) after the lock is released, never in the handler.
        let old = self.mdev.clear_port_events();
        drop(old);
    }
}
