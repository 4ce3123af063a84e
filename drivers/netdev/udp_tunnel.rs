// SPDX-License-Identifier: GPL-2.0
//! The UDP tunnel port table of a device (`struct udp_tunnel_nic_info`,
//! `include/net/udp_tunnel.h`): the stack tells the driver which UDP ports carry VXLAN or
//! GENEVE so that the device parses those packets (checksum and segmentation of the inner
//! headers, RSS).

use core::marker::PhantomData;

use kernel::{
    error::from_result,
    prelude::*,
    types::ForeignOwnable, //
};

use crate::{
    registration::args,
    Device, //
};

/// The borrowed driver data the callbacks receive.
pub type DataRef<'a, T> = <<T as UdpTunnelNic>::Data as ForeignOwnable>::Borrowed<'a>;

/// A UDP tunnel type (`UDP_TUNNEL_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunnelType {
    /// VXLAN (RFC 7348).
    Vxlan,
    /// GENEVE.
    Geneve,
    /// VXLAN-GPE.
    VxlanGpe,
}

impl TunnelType {
    const fn bit(self) -> u32 {
        match self {
            Self::Vxlan => ksys::udp_parsable_tunnel_type_UDP_TUNNEL_TYPE_VXLAN,
            Self::Geneve => ksys::udp_parsable_tunnel_type_UDP_TUNNEL_TYPE_GENEVE,
            Self::VxlanGpe => ksys::udp_parsable_tunnel_type_UDP_TUNNEL_TYPE_VXLAN_GPE,
        }
    }

    fn from_bits(b: u32) -> Option<Self> {
        [Self::Vxlan, Self::Geneve, Self::VxlanGpe]
            .into_iter()
            .find(|t| t.bit() == b)
    }
}

/// A table of ports of the device.
#[derive(Clone, Copy, Debug)]
pub struct Table {
    /// The number of entries.
    pub entries: u32,
    /// The tunnel types it takes.
    pub types: &'static [TunnelType],
}

/// A port entry the stack adds or removes.
#[derive(Clone, Copy, Debug)]
pub struct Port {
    /// The table index (in [`UdpTunnelNic::TABLES`]).
    pub table: u32,
    /// The entry index in the table.
    pub entry: u32,
    /// The UDP port (host order).
    pub port: u16,
    /// The tunnel type.
    pub ty: TunnelType,
}

/// A device's UDP tunnel port offload; set with [`crate::Registration::set_udp_tunnel_nic`].
///
/// The callbacks run in process context with `rtnl_lock` held (may sleep).
#[vtable]
pub trait UdpTunnelNic: Sized + 'static {
    /// The driver data: the [`crate::DeviceOps::Data`] of the device's registration.
    type Data: ForeignOwnable + Send + Sync;

    /// The tables (at most 4).
    const TABLES: &'static [Table];

    /// Ports only while the device is up (`UDP_TUNNEL_NIC_INFO_OPEN_ONLY`).
    const OPEN_ONLY: bool = false;

    /// The IANA VXLAN port 4789 is always programmed and not reported
    /// (`UDP_TUNNEL_NIC_INFO_STATIC_IANA_VXLAN`).
    const STATIC_IANA_VXLAN: bool = false;

    /// Programs a port.
    fn set_port(dev: &Device, data: DataRef<'_, Self>, port: &Port) -> Result;

    /// Removes a port.
    fn unset_port(dev: &Device, data: DataRef<'_, Self>, port: &Port) -> Result;
}

struct Info<U>(PhantomData<U>);

impl<U: UdpTunnelNic> Info<U> {
    const INFO: ksys::udp_tunnel_nic_info = {
        let mut info: ksys::udp_tunnel_nic_info = pin_init::zeroed();
        info.set_port = Some(Self::set_port);
        info.unset_port = Some(Self::unset_port);
        let mut flags = 0;
        if U::OPEN_ONLY {
            flags |= ksys::udp_tunnel_nic_info_flags_UDP_TUNNEL_NIC_INFO_OPEN_ONLY;
        }
        if U::STATIC_IANA_VXLAN {
            flags |= ksys::udp_tunnel_nic_info_flags_UDP_TUNNEL_NIC_INFO_STATIC_IANA_VXLAN;
        }
        info.flags = flags;
        assert!(U::TABLES.len() <= 4, "at most 4 UDP tunnel tables");
        let mut i = 0;
        while i < U::TABLES.len() {
            let t = &U::TABLES[i];
            let mut types = 0;
            let mut j = 0;
            while j < t.types.len() {
                types |= t.types[j].bit();
                j += 1;
            }
            info.tables[i].n_entries = t.entries;
            info.tables[i].tunnel_types = types;
            i += 1;
        }
        info
    };

    fn port(table: c_uint, entry: c_uint, ti: *mut ksys::udp_tunnel_info) -> Result<Port> {
        // SAFETY: The core passes a valid entry for the call.
        let ti = unsafe { &*ti };
        Ok(Port {
            table,
            entry,
            port: u16::from_be(ti.port),
            ty: TunnelType::from_bits(u32::from(ti.type_)).ok_or(EINVAL)?,
        })
    }

    /// # Safety
    ///
    /// The UDP tunnel core calls it (rtnl held) for a registered device with this table.
    unsafe extern "C" fn set_port(
        dev: *mut ksys::net_device,
        table: c_uint,
        entry: c_uint,
        ti: *mut ksys::udp_tunnel_info,
    ) -> c_int {
        // SAFETY: A registered device of a `Registration` whose data is `U::Data`, in a
        // callback.
        let (dev, data) = unsafe { args::<U::Data>(dev) };
        from_result(|| U::set_port(dev, data, &Self::port(table, entry, ti)?).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `set_port`.
    unsafe extern "C" fn unset_port(
        dev: *mut ksys::net_device,
        table: c_uint,
        entry: c_uint,
        ti: *mut ksys::udp_tunnel_info,
    ) -> c_int {
        // SAFETY: As in `set_port`.
        let (dev, data) = unsafe { args::<U::Data>(dev) };
        from_result(|| U::unset_port(dev, data, &Self::port(table, entry, ti)?).map(|()| 0))
    }
}

/// The table of `U`, for as long as the module is loaded.
pub(crate) const fn info<U: UdpTunnelNic>() -> &'static ksys::udp_tunnel_nic_info {
    &Info::<U>::INFO
}
