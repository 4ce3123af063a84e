// SPDX-License-Identifier: GPL-2.0
//! The RSS argument types of the ethtool operations: the hash function, the indirection table
//! and key ([`Rxfh`], `ethtool -x/-X`), and the hash fields per flow type ([`FlowType`],
//! [`rxh`], `ethtool -n/-N rx-flow-hash`).

use core::slice;

use kernel::{
    error::from_result,
    prelude::*, //
};

use super::{
    EthtoolOps,
    Table, //
};
use crate::registration::args;

/// The RSS hash function `ETH_RSS_HASH_TOP` (Toeplitz), for [`Rxfh`].
pub const RSS_HASH_TOP: u8 = ksys::KSYS_CONST_ETH_RSS_HASH_TOP;
/// "No change" as a requested hash function.
pub const RSS_HASH_NO_CHANGE: u8 = ksys::KSYS_CONST_ETH_RSS_HASH_NO_CHANGE;

/// A flow type of the RSS hash-field configuration (`ethtool -n/-N rx-flow-hash`; the
/// `*_FLOW` values of `struct ethtool_rxfh_fields`, extension flags removed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowType {
    /// `TCP_V4_FLOW`.
    TcpV4,
    /// `UDP_V4_FLOW`.
    UdpV4,
    /// `TCP_V6_FLOW`.
    TcpV6,
    /// `UDP_V6_FLOW`.
    UdpV6,
    /// `AH_V4_FLOW`, `ESP_V4_FLOW`, `AH_ESP_V4_FLOW`.
    IpsecV4,
    /// `AH_V6_FLOW`, `ESP_V6_FLOW`, `AH_ESP_V6_FLOW`.
    IpsecV6,
    /// `IPV4_FLOW`, `IPV4_USER_FLOW`: other IPv4.
    Ipv4,
    /// `IPV6_FLOW`, `IPV6_USER_FLOW`: other IPv6.
    Ipv6,
    /// Any other (SCTP, Ethernet...), by its raw value.
    Other(u32),
}

impl FlowType {
    pub(super) fn from_raw(raw: u32) -> Self {
        use kernel::bindings as b;
        match raw & !(b::FLOW_EXT | b::FLOW_MAC_EXT | b::FLOW_RSS) {
            b::TCP_V4_FLOW => Self::TcpV4,
            b::UDP_V4_FLOW => Self::UdpV4,
            b::TCP_V6_FLOW => Self::TcpV6,
            b::UDP_V6_FLOW => Self::UdpV6,
            b::AH_V4_FLOW | b::ESP_V4_FLOW | b::AH_ESP_V4_FLOW => Self::IpsecV4,
            b::AH_V6_FLOW | b::ESP_V6_FLOW | b::AH_ESP_V6_FLOW => Self::IpsecV6,
            b::IPV4_FLOW | b::IPV4_USER_FLOW => Self::Ipv4,
            b::IPV6_FLOW | b::IPV6_USER_FLOW => Self::Ipv6,
            other => Self::Other(other),
        }
    }
}

/// The header fields a flow type's RSS hash covers (`RXH_*` bits of `struct
/// ethtool_rxfh_fields`' `data`).
pub mod rxh {
    /// IP source address.
    pub const IP_SRC: u32 = kernel::bindings::RXH_IP_SRC;
    /// IP destination address.
    pub const IP_DST: u32 = kernel::bindings::RXH_IP_DST;
    /// L4 bytes 0-1 (the source port).
    pub const L4_B_0_1: u32 = kernel::bindings::RXH_L4_B_0_1;
    /// L4 bytes 2-3 (the destination port).
    pub const L4_B_2_3: u32 = kernel::bindings::RXH_L4_B_2_3;
}

/// The RSS configuration (`struct ethtool_rxfh_param`, the default context only): the
/// indirection table and hash key, sized by `get_rxfh_indir_size` / `get_rxfh_key_size`.
pub struct Rxfh<'a> {
    pub(super) raw: &'a mut kernel::bindings::ethtool_rxfh_param,
    pub(super) indir_len: usize,
    pub(super) key_len: usize,
}

impl Rxfh<'_> {
    /// The hash function (`RSS_HASH_*`; [`RSS_HASH_NO_CHANGE`] in a set request that keeps it).
    pub fn hfunc(&self) -> u8 {
        self.raw.hfunc
    }

    /// Reports the hash function (get).
    pub fn set_hfunc(&mut self, hfunc: u8) {
        self.raw.hfunc = hfunc;
    }

    /// The indirection table (absent: not asked for / not to change).
    pub fn indir(&mut self) -> Option<&mut [u32]> {
        if self.raw.indir.is_null() {
            return None;
        }
        // SAFETY: The core passes a table of `indir_size` entries, valid for the call, which
        // `self` borrows.
        Some(unsafe { slice::from_raw_parts_mut(self.raw.indir, self.indir_len) })
    }

    /// The hash key (absent: not asked for / not to change).
    pub fn key(&mut self) -> Option<&mut [u8]> {
        if self.raw.key.is_null() {
            return None;
        }
        // SAFETY: As for `indir`, with `key_size` bytes.
        Some(unsafe { slice::from_raw_parts_mut(self.raw.key, self.key_len) })
    }
}

// The RSS trampolines of the C table (`ethtool.rs` builds the table).
impl<E: EthtoolOps> Table<E> {
    /// Wraps `raw`. Its buffers hold as many entries as the driver's size callbacks say: the
    /// core allocates them from those, but does not always copy the sizes into `raw` —
    /// `ethtool_get_max_rxfh_channel()` (net/ethtool/common.c, asked before a channel change)
    /// leaves `indir_size` at 0 and expects the whole table back. Without a size callback the
    /// sizes `raw` carries stand.
    ///
    /// # Safety
    ///
    /// As for `get_drvinfo`.
    pub(super) unsafe fn rxfh(
        dev: *mut ksys::net_device,
        raw: &mut kernel::bindings::ethtool_rxfh_param,
    ) -> Rxfh<'_> {
        let indir_len = if E::HAS_GET_RXFH_INDIR_SIZE {
            // SAFETY: The function's contract.
            let (dev, data) = unsafe { args::<E::Data>(dev) };
            E::get_rxfh_indir_size(dev, data) as usize
        } else {
            raw.indir_size as usize
        };
        let key_len = if E::HAS_GET_RXFH_KEY_SIZE {
            // SAFETY: The function's contract.
            let (dev, data) = unsafe { args::<E::Data>(dev) };
            E::get_rxfh_key_size(dev, data) as usize
        } else {
            raw.key_size as usize
        };
        Rxfh {
            indir_len,
            key_len,
            raw,
        }
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`; `rxfh`'s buffers are sized by the driver's size callbacks.
    pub(super) unsafe extern "C" fn get_rxfh(
        dev: *mut ksys::net_device,
        rxfh: *mut kernel::bindings::ethtool_rxfh_param,
    ) -> c_int {
        // SAFETY: The function's contract.
        // SAFETY: The function's contract; a valid struct for the call.
        let mut r = unsafe { Self::rxfh(dev, &mut *rxfh) };
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        from_result(|| E::get_rxfh(dev, data, &mut r).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `get_rxfh`.
    pub(super) unsafe extern "C" fn set_rxfh(
        dev: *mut ksys::net_device,
        rxfh: *mut kernel::bindings::ethtool_rxfh_param,
        _extack: *mut kernel::bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: A valid struct for the call.
        let raw = unsafe { &mut *rxfh };
        if raw.rss_context != 0 {
            return -(ksys::EOPNOTSUPP as c_int);
        }
        // SAFETY: The function's contract.
        let mut r = unsafe { Self::rxfh(dev, raw) };
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        from_result(|| E::set_rxfh(dev, data, &mut r).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with a valid `f`.
    pub(super) unsafe extern "C" fn get_rxfh_fields(
        dev: *mut ksys::net_device,
        f: *mut kernel::bindings::ethtool_rxfh_fields,
    ) -> c_int {
        // SAFETY: A valid struct only this call writes.
        let f = unsafe { &mut *f };
        if f.rss_context != 0 && !E::RXFH_PER_CTX_FIELDS {
            return -(ksys::EOPNOTSUPP as c_int);
        }
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        from_result(|| {
            let flow = FlowType::from_raw(f.flow_type);
            f.data = E::get_rxfh_fields(dev, data, f.rss_context, flow)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with a valid `f`.
    pub(super) unsafe extern "C" fn set_rxfh_fields(
        dev: *mut ksys::net_device,
        f: *const kernel::bindings::ethtool_rxfh_fields,
        _extack: *mut kernel::bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: A valid struct for the call.
        let f = unsafe { &*f };
        if f.rss_context != 0 && !E::RXFH_PER_CTX_FIELDS {
            return -(ksys::EOPNOTSUPP as c_int);
        }
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        from_result(|| {
            let flow = FlowType::from_raw(f.flow_type);
            E::set_rxfh_fields(dev, data, f.rss_context, flow, f.data).map(|()| 0)
        })
    }
}
