// SPDX-License-Identifier: GPL-2.0
//! Ethernet network devices (`include/linux/netdevice.h` and what a multiqueue NAPI driver
//! needs around it): a safe abstraction over the `ksys` bindings, written as a future
//! `kernel::net::netdev` module would be. The 7.2 `kernel` crate has none of it.
//!
//! - [`Registration`]: a `net_device` allocated with `alloc_etherdev_mqs()`, its driver data
//!   ([`DeviceOps::Data`]), its operation tables (`net_device_ops` from [`DeviceOps`],
//!   `ethtool_ops` from [`ethtool::EthtoolOps`], `dcbnl_ops` from [`dcbnl::DcbnlOps`],
//!   `udp_tunnel_nic_info` from [`udp_tunnel::UdpTunnelNic`], `stat_ops` from
//!   [`qstats::QueueStatsOps`]), `register_netdev()`; dropping
//!   it unregisters and frees.
//! - [`Device`]: the `net_device` as the callbacks see it (`&Device`), with its queues
//!   ([`TxQueue`]), features ([`Features`]), carrier, MTU and address.
//! - [`napi::Napi`]: a NAPI instance whose `poll` reaches a [`napi::NapiPoller`].
//! - [`skb::SkBuff`]: an owned socket buffer, as `start_xmit` receives it and as the receive
//!   path builds it; [`dma::TxMapping`]: an skb mapped for transmission (it owns the skb, so
//!   the skb cannot be freed while the device may still read it).
//! - [`page_pool::PagePool`]: receive buffers ([`page_pool::PoolPage`]) that become skbs.
//! - [`dim::Dim`]: dynamic interrupt moderation (`lib/dim`'s `net_dim()`) of one queue.
//! - [`ethtool`], [`dcbnl`], [`udp_tunnel`]: the ethtool operations, the DCB (IEEE 802.1Qaz
//!   ETS, PFC, APP; DCBX) operations and the core's APP table, the UDP tunnel port table.
//! - [`xdp`]: native XDP: the program ([`xdp::BpfProg`]) a driver runs on its receive path
//!   over [`xdp::XdpBuff`]s, and the receive queues' registration ([`xdp::XdpRxq`]);
//! - [`xsk`]: AF_XDP zero copy: the socket's buffer pool ([`xsk::XskPool`]) a queue receives
//!   into and sends from.
//! - [`rtnl::Rtnl`]: the RTNL lock, taken by a driver's own work items (a recovery that
//!   reopens queues) as the stack holds it around `ndo_open`/`ndo_stop`.
//! - [`tstamp`]: hardware timestamping, its configuration (`ndo_hwtstamp_get`/`set`) and
//!   capabilities (`ethtool -T`); the timestamps go on the packets through [`skb::SkBuff`].
//!
//! # Lifetimes
//!
//! The `net_device` is freed (`free_netdev()`) when the [`Registration`] and every
//! [`napi::Napi`] created on it are gone, whatever the order: a NAPI instance holds a
//! reference to the allocation, so `netif_napi_del()` never touches a freed device. The
//! driver data lives from [`Registration::new`] until after `unregister_netdev()` has
//! returned in [`Registration`]'s drop, so every callback, including those the stack makes
//! during registration and unregistration, sees it.
//!
//! # Contexts and locking
//!
//! The stack's rules, which the trait documentation repeats for each callback:
//! - `ndo_*` operations other than `start_xmit`, `get_stats64`, `tx_timeout`,
//!   `features_check` and `set_rx_mode`, every ethtool operation and every DCB operation but
//!   `getdcbx`: process context with `rtnl_lock` held (they may sleep);
//! - DCB `getdcbx`: possibly under the DCB core's spinlock (BH disabled); must not sleep;
//! - `start_xmit`: softirq or process context with BH disabled and the queue's xmit lock held;
//!   never concurrently for one queue;
//! - `get_stats64`: any context but hard IRQ, concurrently with anything (RCU read side);
//! - [`qstats`] callbacks: process context, rtnl or the instance lock held, concurrently with
//!   the data path;
//! - `set_rx_mode`: atomic, under the device's address lock; `set_rx_mode_async` (7.2):
//!   process context with `rtnl_lock`, on address list snapshots;
//! - `tx_timeout`: the watchdog timer (softirq) with every TX queue's lock held;
//! - `xdp_setup_prog`, `xdp_setup_xsk_pool` (`ndo_bpf`): process context with `rtnl_lock`
//!   held;
//! - `xsk_wakeup`: process context under the RCU read lock (must not sleep);
//! - NAPI `poll`: softirq (or the NAPI thread), never concurrently for one instance.

mod build_check;
pub mod dcbnl;
mod device;
pub mod dim;
pub mod dma;
pub mod ethtool;
pub mod napi;
pub mod page_pool;
pub mod qstats;
mod registration;
pub mod rtnl;
pub mod skb;
pub mod tstamp;
pub mod udp_tunnel;
pub mod xdp;
pub mod xsk;

pub use device::{
    xmit_more,
    AddrList,
    Device,
    Features,
    Flags,
    MacAddr,
    Stats64,
    StopResult,
    TxQueue,
    WakeResult, //
};
pub use registration::{
    DataRef,
    DeviceOps,
    DeviceRef,
    Registration,
    TxResult, //
};

/// Checks an Ethernet address: not multicast (nor broadcast) and not all zeroes
/// (`is_valid_ether_addr()`).
pub fn is_valid_ether_addr(addr: &MacAddr) -> bool {
    // SAFETY: `addr` points to `ETH_ALEN` readable bytes.
    unsafe { ksys::is_valid_ether_addr(addr.as_ptr()) }
}

/// The default number of RSS queues for this machine (`netif_get_num_default_rss_queues()`).
pub fn default_rss_queues() -> u32 {
    // SAFETY: No preconditions.
    let n = unsafe { ksys::netif_get_num_default_rss_queues() };
    u32::try_from(n).unwrap_or(1)
}

/// Fills `key` with the system's RSS hash key (`netdev_rss_key_fill()`), the same for every
/// device so that flows hash alike.
pub fn rss_key_fill(key: &mut [u8]) {
    // SAFETY: `key` is writable for its length.
    unsafe { ksys::netdev_rss_key_fill(key.as_mut_ptr().cast(), key.len()) };
}
