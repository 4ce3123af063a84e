// SPDX-License-Identifier: GPL-2.0
//! Flow classification rules (`ethtool -n/-N flow-type`, `struct ethtool_rx_flow_spec` in
//! `get_rxnfc`/`set_rxnfc`) and the additional RSS contexts (`ethtool -X context new`,
//! `create/modify/remove_rxfh_context`): the argument types and the C table's trampolines.

use core::slice;

use kernel::{
    bindings as b,
    error::from_result,
    prelude::*, //
};

use super::{
    DataRef,
    EthtoolOps,
    Table, //
};
use crate::{
    registration::args,
    Device, //
};

/// The flow types of a rule (`*_FLOW` in [`FlowSpec::flow_type`]) and its extension flags.
pub mod flow {
    /// `TCP_V4_FLOW`.
    pub const TCP_V4: u32 = kernel::bindings::TCP_V4_FLOW;
    /// `UDP_V4_FLOW`.
    pub const UDP_V4: u32 = kernel::bindings::UDP_V4_FLOW;
    /// `TCP_V6_FLOW`.
    pub const TCP_V6: u32 = kernel::bindings::TCP_V6_FLOW;
    /// `UDP_V6_FLOW`.
    pub const UDP_V6: u32 = kernel::bindings::UDP_V6_FLOW;
    /// `IP_USER_FLOW` (`IPV4_USER_FLOW`): IPv4 addresses and protocol.
    pub const IP_USER: u32 = kernel::bindings::IP_USER_FLOW;
    /// `IPV6_USER_FLOW`: IPv6 addresses and next header.
    pub const IPV6_USER: u32 = kernel::bindings::IPV6_USER_FLOW;
    /// `ETHER_FLOW`: Ethernet addresses and ethertype.
    pub const ETHER: u32 = kernel::bindings::ETHER_FLOW;
    /// `FLOW_EXT`: the VLAN fields of [`super::FlowSpec::ext`] are set.
    pub const EXT: u32 = kernel::bindings::FLOW_EXT;
    /// `FLOW_MAC_EXT`: the destination MAC of [`super::FlowSpec::ext`] is set.
    pub const MAC_EXT: u32 = kernel::bindings::FLOW_MAC_EXT;
    /// `FLOW_RSS`: the rule delivers into an RSS context.
    pub const RSS: u32 = kernel::bindings::FLOW_RSS;
    /// The flow type without the extension flags.
    pub const fn base(flow_type: u32) -> u32 {
        flow_type & !(EXT | MAC_EXT | RSS)
    }
}

/// `RX_CLS_FLOW_DISC` as a rule's [`FlowSpec::ring_cookie`]: drop what matches.
pub const RX_CLS_FLOW_DISC: u64 = u64::MAX;

/// IPv4 TCP/UDP fields (`struct ethtool_tcpip4_spec`); addresses and ports in host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpIp4 {
    /// Source address.
    pub src: u32,
    /// Destination address.
    pub dst: u32,
    /// Source port.
    pub psrc: u16,
    /// Destination port.
    pub pdst: u16,
    /// Type of service.
    pub tos: u8,
}

/// IPv4 fields (`struct ethtool_usrip4_spec`), host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsrIp4 {
    /// Source address.
    pub src: u32,
    /// Destination address.
    pub dst: u32,
    /// The first four bytes of the L4 header.
    pub l4_4_bytes: u32,
    /// Type of service.
    pub tos: u8,
    /// `ETH_RX_NFC_IP4` in a value.
    pub ip_ver: u8,
    /// IP protocol.
    pub proto: u8,
}

/// IPv6 fields (`struct ethtool_tcpip6_spec`, `struct ethtool_usrip6_spec`): addresses in
/// network order, ports host order; `proto` and `l4_4_bytes` only for `IPV6_USER_FLOW`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ip6 {
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// Source port (TCP/UDP).
    pub psrc: u16,
    /// Destination port (TCP/UDP).
    pub pdst: u16,
    /// Traffic class.
    pub tclass: u8,
    /// Next header (`IPV6_USER_FLOW`).
    pub proto: u8,
    /// The first four bytes of the L4 header (`IPV6_USER_FLOW`).
    pub l4_4_bytes: u32,
}

/// Ethernet fields (`struct ethhdr`); ethertype in host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ether {
    /// Destination MAC.
    pub dst: [u8; 6],
    /// Source MAC.
    pub src: [u8; 6],
    /// Ethertype.
    pub proto: u16,
}

/// The extension fields (`struct ethtool_flow_ext`), host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowExt {
    /// VLAN ethertype (`FLOW_EXT`).
    pub vlan_etype: u16,
    /// VLAN TCI (`FLOW_EXT`).
    pub vlan_tci: u16,
    /// Destination MAC (`FLOW_MAC_EXT`).
    pub h_dest: [u8; 6],
}

/// A flow classification rule (`struct ethtool_rx_flow_spec`): what it matches (a value and
/// a mask per field), where it delivers ([`FlowSpec::ring_cookie`]) and its place in the
/// driver's rule list ([`FlowSpec::location`]).
#[derive(Clone, Copy)]
pub struct FlowSpec(b::ethtool_rx_flow_spec);

impl FlowSpec {
    /// `flow_type`, with the extension flags ([`flow`]).
    pub fn flow_type(&self) -> u32 {
        self.0.flow_type
    }

    /// The queue, or [`RX_CLS_FLOW_DISC`] (an offset into the context with [`flow::RSS`]).
    pub fn ring_cookie(&self) -> u64 {
        self.0.ring_cookie
    }

    /// The rule's location.
    pub fn location(&self) -> u32 {
        self.0.location
    }

    fn u(&self, mask: bool) -> &b::ethtool_flow_union {
        if mask {
            &self.0.m_u
        } else {
            &self.0.h_u
        }
    }

    /// The TCP/UDP over IPv4 value, or its mask.
    pub fn tcp_ip4(&self, mask: bool) -> TcpIp4 {
        // SAFETY: Every member of the union is plain integers (any bit pattern is valid), and
        // the whole union was initialised (copied from the core's struct or zeroed).
        let s = unsafe { self.u(mask).tcp_ip4_spec };
        TcpIp4 {
            src: u32::from_be(s.ip4src),
            dst: u32::from_be(s.ip4dst),
            psrc: u16::from_be(s.psrc),
            pdst: u16::from_be(s.pdst),
            tos: s.tos,
        }
    }

    /// The IPv4 value, or its mask.
    pub fn usr_ip4(&self, mask: bool) -> UsrIp4 {
        // SAFETY: As in `tcp_ip4`.
        let s = unsafe { self.u(mask).usr_ip4_spec };
        UsrIp4 {
            src: u32::from_be(s.ip4src),
            dst: u32::from_be(s.ip4dst),
            l4_4_bytes: u32::from_be(s.l4_4_bytes),
            tos: s.tos,
            ip_ver: s.ip_ver,
            proto: s.proto,
        }
    }

    /// The TCP/UDP over IPv6 or IPv6 value, or its mask.
    pub fn ip6(&self, mask: bool) -> Ip6 {
        let addr = |w: [u32; 4]| {
            let mut a = [0u8; 16];
            for (d, w) in a.chunks_exact_mut(4).zip(w) {
                d.copy_from_slice(&w.to_ne_bytes());
            }
            a
        };
        if self.0.flow_type & !(flow::EXT | flow::MAC_EXT | flow::RSS) == flow::IPV6_USER {
            // SAFETY: As in `tcp_ip4`.
            let s = unsafe { self.u(mask).usr_ip6_spec };
            return Ip6 {
                src: addr(s.ip6src),
                dst: addr(s.ip6dst),
                tclass: s.tclass,
                proto: s.l4_proto,
                l4_4_bytes: u32::from_be(s.l4_4_bytes),
                ..Ip6::default()
            };
        }
        // SAFETY: As in `tcp_ip4`.
        let s = unsafe { self.u(mask).tcp_ip6_spec };
        Ip6 {
            src: addr(s.ip6src),
            dst: addr(s.ip6dst),
            psrc: u16::from_be(s.psrc),
            pdst: u16::from_be(s.pdst),
            tclass: s.tclass,
            ..Ip6::default()
        }
    }

    /// The Ethernet value, or its mask.
    pub fn ether(&self, mask: bool) -> Ether {
        // SAFETY: As in `tcp_ip4`.
        let s = unsafe { self.u(mask).ether_spec };
        Ether {
            dst: s.h_dest,
            src: s.h_source,
            proto: u16::from_be(s.h_proto),
        }
    }

    /// The extension value, or its mask.
    pub fn ext(&self, mask: bool) -> FlowExt {
        let e = if mask { &self.0.m_ext } else { &self.0.h_ext };
        FlowExt {
            vlan_etype: u16::from_be(e.vlan_etype),
            vlan_tci: u16::from_be(e.vlan_tci),
            h_dest: e.h_dest,
        }
    }
}

/// A new RSS configuration for an additional context (`struct ethtool_rxfh_param` of
/// `create/modify_rxfh_context`); read only.
pub struct RxfhRequest<'a>(&'a b::ethtool_rxfh_param);

impl RxfhRequest<'_> {
    /// The context's id.
    pub fn context(&self) -> u32 {
        self.0.rss_context
    }

    /// The hash function asked for (`RSS_HASH_*`, [`super::RSS_HASH_NO_CHANGE`] to keep it).
    pub fn hfunc(&self) -> u8 {
        self.0.hfunc
    }

    /// The indirection table (queue indices), if it is to change.
    pub fn indir(&self) -> Option<&[u32]> {
        if self.0.indir.is_null() {
            return None;
        }
        // SAFETY: The core passes a table of `indir_size` entries (the driver's size),
        // valid for the call, which `self` borrows.
        Some(unsafe { slice::from_raw_parts(self.0.indir, self.0.indir_size as usize) })
    }

    /// The hash key, if it is to change.
    pub fn key(&self) -> Option<&[u8]> {
        if self.0.key.is_null() {
            return None;
        }
        // SAFETY: As for `indir`, with `key_size` bytes.
        Some(unsafe { slice::from_raw_parts(self.0.key, self.0.key_size as usize) })
    }
}

/// The core's record of an additional RSS context (`struct ethtool_rxfh_context`), which
/// `ethtool -x context N` reads: the driver writes the table, key and hash function in use.
pub struct RxfhContext<'a>(&'a mut b::ethtool_rxfh_context);

impl RxfhContext<'_> {
    /// Records the hash function (`RSS_HASH_*`).
    pub fn set_hfunc(&mut self, hfunc: u8) {
        self.0.hfunc = hfunc;
    }

    /// The indirection table (`ethtool_rxfh_context_indir`).
    pub fn indir(&mut self) -> &mut [u32] {
        let off = (usize::from(self.0.priv_size) + 3) & !3;
        let n = self.0.indir_size as usize;
        // SAFETY: The core allocates `data` with the private area, then `indir_size` u32s at
        // the private size rounded up to 4 bytes, then the key (`ethtool_rxfh_ctx_alloc`);
        // `self` borrows the context for the call.
        unsafe { slice::from_raw_parts_mut(self.0.data.as_mut_ptr().add(off).cast(), n) }
    }

    /// The hash key (`ethtool_rxfh_context_key`).
    pub fn key(&mut self) -> &mut [u8] {
        let off = self.0.key_off as usize;
        let n = self.0.key_size as usize;
        // SAFETY: As for `indir`: `key_size` bytes at `key_off` in `data`.
        unsafe { slice::from_raw_parts_mut(self.0.data.as_mut_ptr().add(off), n) }
    }
}

/// The driver's `create_rxfh_context` or `modify_rxfh_context`.
type ContextOp<E> = for<'a, 'b, 'c> fn(
    &'a Device,
    DataRef<'a, E>,
    &'b mut RxfhContext<'c>,
    &'b RxfhRequest<'c>,
) -> Result;

// The trampolines of the C table (`ethtool.rs` builds the table).
impl<E: EthtoolOps> Table<E> {
    /// `get_rxnfc`: `ETHTOOL_GRXCLSRLCNT`, `GRXCLSRULE` and `GRXCLSRLALL`; other commands
    /// `EOPNOTSUPP` (the ring count is `get_rx_ring_count`'s).
    ///
    /// # Safety
    ///
    /// The ethtool core calls it (rtnl held) for a registered device with this table, with a
    /// valid `info` and, for `GRXCLSRLALL`, `rule_locs` of `info->rule_cnt` entries.
    pub(super) unsafe extern "C" fn get_rxnfc(
        dev: *mut ksys::net_device,
        info: *mut b::ethtool_rxnfc,
        rule_locs: *mut u32,
    ) -> c_int {
        // SAFETY: A valid struct only this call writes.
        let info = unsafe { &mut *info };
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        from_result(|| {
            match info.cmd {
                b::ETHTOOL_GRXCLSRLCNT if E::HAS_GET_RXNFC_RULE_COUNT => {
                    info.__bindgen_anon_1.rule_cnt = E::get_rxnfc_rule_count(dev, data)?;
                }
                b::ETHTOOL_GRXCLSRULE if E::HAS_GET_RXNFC_RULE => {
                    let (fs, ctx) = E::get_rxnfc_rule(dev, data, info.fs.location)?;
                    info.fs = fs.0;
                    info.__bindgen_anon_1.rss_context = ctx;
                }
                b::ETHTOOL_GRXCLSRLALL if E::HAS_GET_RXNFC_RULE_LOCS => {
                    // SAFETY: Written by the core for this command (a plain u32 either way).
                    let n = unsafe { info.__bindgen_anon_1.rule_cnt } as usize;
                    let locs = if n == 0 || rule_locs.is_null() {
                        &mut [][..]
                    } else {
                        // SAFETY: The function's contract.
                        unsafe { slice::from_raw_parts_mut(rule_locs, n) }
                    };
                    info.data = E::get_rxnfc_rule_locs(dev, data, locs)?.into();
                }
                _ => return Err(Error::from_errno(-(ksys::EOPNOTSUPP as i32))),
            }
            Ok(0)
        })
    }

    /// `set_rxnfc`: `ETHTOOL_SRXCLSRLINS` and `SRXCLSRLDEL`; other commands `EOPNOTSUPP`.
    ///
    /// # Safety
    ///
    /// As for `get_rxnfc`.
    pub(super) unsafe extern "C" fn set_rxnfc(
        dev: *mut ksys::net_device,
        info: *mut b::ethtool_rxnfc,
    ) -> c_int {
        // SAFETY: A valid struct for the call.
        let info = unsafe { &mut *info };
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        from_result(|| {
            match info.cmd {
                b::ETHTOOL_SRXCLSRLINS if E::HAS_INSERT_RXNFC_RULE => {
                    // SAFETY: The core copied the whole struct; `rss_context` is a plain u32.
                    let ctx = unsafe { info.__bindgen_anon_1.rss_context };
                    E::insert_rxnfc_rule(dev, data, &FlowSpec(info.fs), ctx)?;
                }
                b::ETHTOOL_SRXCLSRLDEL if E::HAS_DELETE_RXNFC_RULE => {
                    E::delete_rxnfc_rule(dev, data, info.fs.location)?;
                }
                _ => return Err(Error::from_errno(-(ksys::EOPNOTSUPP as i32))),
            }
            Ok(0)
        })
    }

    /// Runs `op` (the driver's create or modify) on the context and request.
    ///
    /// # Safety
    ///
    /// As for `get_rxnfc`, with a valid `ctx` of this device and a valid `rxfh`.
    unsafe fn context_op(
        dev: *mut ksys::net_device,
        ctx: *mut b::ethtool_rxfh_context,
        rxfh: *const b::ethtool_rxfh_param,
        op: ContextOp<E>,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        // SAFETY: Valid for the call; the context only this call writes.
        let (mut ctx, rxfh) = unsafe { (RxfhContext(&mut *ctx), RxfhRequest(&*rxfh)) };
        from_result(|| op(dev, data, &mut ctx, &rxfh).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `context_op`.
    pub(super) unsafe extern "C" fn create_rxfh_context(
        dev: *mut ksys::net_device,
        ctx: *mut b::ethtool_rxfh_context,
        rxfh: *const b::ethtool_rxfh_param,
        _extack: *mut b::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: The function's contract.
        unsafe { Self::context_op(dev, ctx, rxfh, E::create_rxfh_context) }
    }

    /// # Safety
    ///
    /// As for `context_op`.
    pub(super) unsafe extern "C" fn modify_rxfh_context(
        dev: *mut ksys::net_device,
        ctx: *mut b::ethtool_rxfh_context,
        rxfh: *const b::ethtool_rxfh_param,
        _extack: *mut b::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: The function's contract.
        unsafe { Self::context_op(dev, ctx, rxfh, E::modify_rxfh_context) }
    }

    /// # Safety
    ///
    /// As for `get_rxnfc`.
    pub(super) unsafe extern "C" fn remove_rxfh_context(
        dev: *mut ksys::net_device,
        _ctx: *mut b::ethtool_rxfh_context,
        rss_context: u32,
        _extack: *mut b::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        from_result(|| E::remove_rxfh_context(dev, data, rss_context).map(|()| 0))
    }
}
