// SPDX-License-Identifier: GPL-2.0
//! Stateless tunnel offloads (en_main.c `mlx5e_features_check`, lib/vxlan.c, en_accel.h):
//! the VXLAN UDP ports the device parses (ADD/DELETE_VXLAN_UDP_DPORT, fed by the stack's
//! udp_tunnel_nic), which encapsulated packets keep their checksum/TSO offloads, and the
//! software parser offsets GENEVE packets need.

use core::sync::atomic::{
    AtomicU32,
    Ordering, //
};

use cx4_hw::{
    command,
    wqe::SwpFlags, //
};
use kernel::{
    prelude::*,
    sync::ArcBorrow, //
};
use netdev::{
    skb::SkBuff,
    udp_tunnel::{
        Port,
        Table,
        TunnelType,
        UdpTunnelNic, //
    },
    Device,
};

use crate::{
    cmd::input,
    en::{
        netdev::EnPriv,
        sq::Swp, //
    },
    mdev::Mdev,
};

/// The IANA VXLAN port, always programmed (lib/vxlan.c).
pub(crate) const IANA_VXLAN_PORT: u16 = 4789;
/// The IANA GENEVE port, the only one mlx5e sets software parser offsets for.
pub(crate) const GENEVE_PORT: u16 = 6081;
/// Most VXLAN ports (the device's `max_vxlan_udp_ports`, 0 meaning 4).
pub(crate) const MAX_VXLAN_PORTS: usize = 4;

/// IP protocol numbers.
const IPPROTO_GRE: u8 = 47;
const IPPROTO_UDP: u8 = 17;
const IPPROTO_IPV6: u8 = 41;
const IPPROTO_IPIP: u8 = 4;
/// Ethertypes.
const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const ETH_P_TEB: u16 = 0x6558;

/// What the device can offload inside tunnels (ETH caps).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TunnelCaps {
    /// `tunnel_stateless_vxlan`.
    pub(crate) vxlan: bool,
    /// `tunnel_stateless_gre`.
    pub(crate) gre: bool,
    /// `swp && swp_csum && swp_lso` (GENEVE).
    pub(crate) geneve: bool,
    /// VXLAN port table size.
    pub(crate) max_vxlan_ports: usize,
}

/// The VXLAN UDP ports programmed into the device (0: free entry), read by
/// `ndo_features_check` without a lock.
pub(crate) struct VxlanPorts {
    ports: [AtomicU32; MAX_VXLAN_PORTS],
}

impl VxlanPorts {
    /// No port.
    pub(crate) fn new() -> Self {
        Self {
            ports: core::array::from_fn(|_| AtomicU32::new(0)),
        }
    }

    /// Whether `port` is one the device parses as VXLAN.
    pub(crate) fn contains(&self, port: u16) -> bool {
        port != 0
            && self
                .ports
                .iter()
                .any(|p| p.load(Ordering::Relaxed) == u32::from(port))
    }

    /// Programs `port` into the device (idempotent, as the firmware's table is).
    pub(crate) fn add(&self, mdev: &Mdev, port: u16) -> Result {
        if self.contains(port) {
            return Ok(());
        }
        let slot = self
            .ports
            .iter()
            .find(|p| p.load(Ordering::Relaxed) == 0)
            .ok_or(ENOSPC)?;
        let mut m = input::<command::AddVxlanUdpDport>(0)?;
        m.set_vxlan_udp_port(port.into());
        mdev.cmdq.exec::<command::AddVxlanUdpDport>(&m, 0)?;
        slot.store(u32::from(port), Ordering::Relaxed);
        Ok(())
    }

    /// Removes `port` from the device.
    pub(crate) fn del(&self, mdev: &Mdev, port: u16) -> Result {
        let Some(slot) = self
            .ports
            .iter()
            .find(|p| p.load(Ordering::Relaxed) == u32::from(port))
        else {
            return Ok(());
        };
        slot.store(0, Ordering::Relaxed);
        let mut m = input::<command::DeleteVxlanUdpDport>(0)?;
        m.set_vxlan_udp_port(port.into());
        mdev.cmdq.exec::<command::DeleteVxlanUdpDport>(&m, 0).map(|_| ())
    }

    /// Removes every port (teardown).
    pub(crate) fn clear(&self, mdev: &Mdev) {
        for p in self.ports.iter() {
            let v = p.load(Ordering::Relaxed);
            if v != 0 {
                let _ = self.del(mdev, v as u16);
            }
        }
    }
}

fn be16(d: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*d.get(off)?, *d.get(off + 1)?]))
}

/// The outer L4 protocol of an encapsulated packet, from its linear headers.
fn outer_l4_proto(skb: &SkBuff) -> Option<u8> {
    let d = skb.data();
    let nh = usize::try_from(skb.network_offset()).ok()?;
    match skb.protocol() {
        ETH_P_IP => d.get(nh + 9).copied(),
        ETH_P_IPV6 => d.get(nh + 6).copied(),
        _ => None,
    }
}

/// Whether the device can offload checksum/TSO of encapsulated `skb`
/// (en_main.c `mlx5e_tunnel_features_check`).
pub(crate) fn offloadable(skb: &SkBuff, caps: &TunnelCaps, vxlan: &VxlanPorts) -> bool {
    let d = skb.data();
    let Ok(th) = usize::try_from(skb.transport_offset()) else {
        return false;
    };
    match outer_l4_proto(skb) {
        Some(IPPROTO_GRE) if caps.gre => {
            matches!(be16(d, th + 2), Some(ETH_P_IP | ETH_P_IPV6 | ETH_P_TEB))
        }
        Some(IPPROTO_UDP) => match be16(d, th + 2) {
            Some(p) if caps.vxlan && vxlan.contains(p) => true,
            Some(GENEVE_PORT) => caps.geneve,
            _ => false,
        },
        // IP-in-IP needs ip_over_ip, which the driver does not offer.
        Some(IPPROTO_IPIP | IPPROTO_IPV6) => false,
        _ => false,
    }
}

/// Software parser offsets for a GENEVE packet (en_accel.h `mlx5e_set_eseg_swp`); `None`
/// for anything else (the hardware parser knows VXLAN and GRE).
pub(crate) fn geneve_swp(skb: &SkBuff, vlan_inserted: bool) -> Option<Swp> {
    if !skb.encapsulation() || outer_l4_proto(skb) != Some(IPPROTO_UDP) {
        return None;
    }
    let d = skb.data();
    let th = usize::try_from(skb.transport_offset()).ok()?;
    if be16(d, th + 2)? != GENEVE_PORT {
        return None;
    }
    let shift = if vlan_inserted { 2 } else { 0 };
    let words = |off: i32| -> Option<u8> { u8::try_from(off / 2 + shift).ok() };
    let mut flags = SwpFlags::OUTER_L4_UDP;
    if skb.protocol() == ETH_P_IPV6 {
        flags |= SwpFlags::OUTER_L3_IPV6;
    }
    let inh = usize::try_from(skb.inner_network_offset()).ok()?;
    let inner_v6 = (*d.get(inh)? >> 4) == 6;
    let inner_proto = if inner_v6 { *d.get(inh + 6)? } else { *d.get(inh + 9)? };
    if inner_v6 {
        flags |= SwpFlags::INNER_L3_IPV6;
    }
    if inner_proto == IPPROTO_UDP {
        flags |= SwpFlags::INNER_L4_UDP;
    }
    Some(Swp {
        outer_l3: words(skb.network_offset())?,
        outer_l4: words(skb.transport_offset())?,
        inner_l3: words(skb.inner_network_offset())?,
        inner_l4: words(skb.inner_transport_offset())?,
        flags,
    })
}

/// The stack's UDP tunnel port table → the device's VXLAN ports (en_main.c
/// `mlx5e_vxlan_set_port`). 4789 is programmed at probe and not reported
/// (`STATIC_IANA_VXLAN`).
pub(crate) struct EnTunnels;

#[vtable]
impl UdpTunnelNic for EnTunnels {
    type Data = kernel::sync::Arc<EnPriv>;
    const TABLES: &'static [Table] = &[Table {
        entries: (MAX_VXLAN_PORTS - 1) as u32,
        types: &[TunnelType::Vxlan],
    }];
    const STATIC_IANA_VXLAN: bool = true;

    fn set_port(_dev: &Device, data: ArcBorrow<'_, EnPriv>, p: &Port) -> Result {
        data.vxlan_ports().add(data.mdev(), p.port)
    }

    fn unset_port(_dev: &Device, data: ArcBorrow<'_, EnPriv>, p: &Port) -> Result {
        data.vxlan_ports().del(data.mdev(), p.port)
    }
}
