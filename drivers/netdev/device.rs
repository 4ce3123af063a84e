// SPDX-License-Identifier: GPL-2.0
//! The `net_device` as drivers see it: [`Device`], its transmit queues ([`TxQueue`]), its
//! features ([`Features`]) and flags, the address lists of `set_rx_mode` ([`AddrList`]) and
//! the counters of `get_stats64` ([`Stats64`]).

use core::{
    marker::PhantomData,
    ops,
    ptr, //
};

use kernel::{
    device,
    prelude::*,
    types::Opaque, //
};

/// An Ethernet (MAC) address.
pub type MacAddr = [u8; 6];

/// A network device (`struct net_device`), as the callbacks of [`crate::DeviceOps`] and the
/// other operations receive it and as [`crate::Registration::device`] gives it.
///
/// Methods that change configuration follow the C API's rules: unless documented otherwise,
/// call them before the device is registered or from a callback that holds `rtnl_lock` (the
/// `ndo_*` operations but `start_xmit`, `get_stats64`, `tx_timeout`, `set_rx_mode`; every
/// ethtool operation).
///
/// # Invariants
///
/// A `&Device` is a `net_device` allocated by [`crate::Registration`] (so its private area is
/// the abstraction's) that stays allocated for the reference's lifetime.
#[repr(transparent)]
pub struct Device(Opaque<ksys::net_device>);

// SAFETY: The `net_device` may be used from any thread; what needs a lock says so.
unsafe impl Send for Device {}

// SAFETY: `&Device` methods are the C API's, which may be called concurrently (with the
// documented locks).
unsafe impl Sync for Device {}

/// Reads a field of the `net_device` as `READ_ONCE()` does.
macro_rules! read_once {
    ($dev:expr, $field:ident) => {
        // SAFETY: The `net_device` is allocated (type invariant) and the field is plain data.
        unsafe { ptr::read_volatile(&raw const (*$dev.as_raw()).$field) }
    };
}

/// Writes a field of the `net_device` as `WRITE_ONCE()` does.
macro_rules! write_once {
    ($dev:expr, $field:ident, $val:expr) => {
        // SAFETY: The `net_device` is allocated (type invariant); concurrent readers use
        // `READ_ONCE()` (the C API's rule for these fields) and writers hold `rtnl_lock` or
        // own the unregistered device (the method's documented rule).
        unsafe { ptr::write_volatile(&raw mut (*$dev.as_raw()).$field, $val) }
    };
}

impl Device {
    /// Wraps a `net_device` pointer.
    ///
    /// # Safety
    ///
    /// `ptr` must be a `net_device` allocated by [`crate::Registration`] that stays allocated
    /// for `'a`.
    #[inline]
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut ksys::net_device) -> &'a Self {
        // SAFETY: `Device` is a transparent wrapper of the C struct; validity is the caller's.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C `net_device`, for the other abstractions over `ksys` (the RDMA layer binds its
    /// RoCE port to it).
    #[inline]
    pub fn as_raw(&self) -> *mut ksys::net_device {
        self.0.get()
    }

    /// The interface name (`eth0`, or the `eth%d` template before registration).
    #[inline]
    pub fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array of the allocated `net_device` (the stack
        // keeps its last byte NUL; renames under `rtnl_lock` rewrite it in place).
        unsafe { CStr::from_char_ptr((&raw const (*self.as_raw()).name).cast()) }
    }

    /// The MTU.
    #[inline]
    pub fn mtu(&self) -> u32 {
        read_once!(self, mtu)
    }

    /// Sets the MTU (what [`crate::DeviceOps::change_mtu`] does once the hardware accepts it).
    #[inline]
    pub fn set_mtu(&self, mtu: u32) {
        write_once!(self, mtu, mtu);
    }

    /// Sets the MTU range the stack accepts for [`crate::DeviceOps::change_mtu`] (before
    /// registration).
    #[inline]
    pub fn set_mtu_range(&self, min: u32, max: u32) {
        write_once!(self, min_mtu, min);
        write_once!(self, max_mtu, max);
    }

    /// The device (MAC) address.
    #[inline]
    pub fn dev_addr(&self) -> MacAddr {
        let mut a = [0u8; 6];
        let src = read_once!(self, dev_addr);
        // SAFETY: An Ethernet device's `dev_addr` points to at least `ETH_ALEN` bytes of the
        // allocated device; writers hold `rtnl_lock`, as for the C readers.
        unsafe { ptr::copy_nonoverlapping(src, a.as_mut_ptr(), a.len()) };
        a
    }

    /// Sets the device (MAC) address (`eth_hw_addr_set()`).
    #[inline]
    pub fn set_dev_addr(&self, addr: &MacAddr) {
        // SAFETY: The device is allocated; `addr` has `ETH_ALEN` bytes, which are copied.
        unsafe { ksys::eth_hw_addr_set(self.as_raw(), addr.as_ptr()) };
    }

    /// Tells the stack that the link is up (`netif_carrier_on()`); any context.
    #[inline]
    pub fn carrier_on(&self) {
        // SAFETY: The device is allocated; the function may be called from any context.
        unsafe { ksys::netif_carrier_on(self.as_raw()) };
    }

    /// Tells the stack that the link is down (`netif_carrier_off()`); any context.
    #[inline]
    pub fn carrier_off(&self) {
        // SAFETY: As for `carrier_on`.
        unsafe { ksys::netif_carrier_off(self.as_raw()) };
    }

    /// Whether the link is up as far as the stack knows (`netif_carrier_ok()`).
    #[inline]
    pub fn carrier_ok(&self) -> bool {
        // SAFETY: The device is allocated.
        unsafe { ksys::netif_carrier_ok(self.as_raw()) }
    }

    /// Whether the device is up (`netif_running()`).
    #[inline]
    pub fn is_running(&self) -> bool {
        // SAFETY: The device is allocated.
        unsafe { ksys::netif_running(self.as_raw()) }
    }

    /// The interface flags (`IFF_*`).
    #[inline]
    pub fn flags(&self) -> Flags {
        Flags(read_once!(self, flags))
    }

    /// Sets what of XDP the device implements (`dev->xdp_features`), before registration.
    #[inline]
    pub fn set_xdp_features(&self, f: crate::xdp::XdpFeatures) {
        write_once!(self, xdp_features, f.bits());
    }

    /// Has the stack recompute the active features (`netdev_update_features()`: the driver's
    /// `fix_features` runs again, then `set_features` if they change); rtnl.
    #[inline]
    pub fn update_features(&self) {
        // SAFETY: The device is allocated; the caller holds `rtnl_lock` (the method's rule).
        unsafe { ksys::netdev_update_features(self.as_raw()) };
    }

    /// The active features (`dev->features`).
    #[inline]
    pub fn features(&self) -> Features {
        Features(read_once!(self, features))
    }

    /// Sets the active features (`dev->features`): before registration; afterwards the stack
    /// changes them through [`crate::DeviceOps::set_features`].
    #[inline]
    pub fn set_features(&self, f: Features) {
        write_once!(self, features, f.0);
    }

    /// The features user space may toggle (`dev->hw_features`).
    #[inline]
    pub fn hw_features(&self) -> Features {
        Features(read_once!(self, hw_features))
    }

    /// Sets the features user space may toggle (`dev->hw_features`).
    #[inline]
    pub fn set_hw_features(&self, f: Features) {
        write_once!(self, hw_features, f.0);
    }

    /// Sets the features of encapsulated packets (`dev->hw_enc_features`).
    #[inline]
    pub fn set_hw_enc_features(&self, f: Features) {
        write_once!(self, hw_enc_features, f.0);
    }

    /// Sets the features VLAN devices on top inherit (`dev->vlan_features`).
    #[inline]
    pub fn set_vlan_features(&self, f: Features) {
        write_once!(self, vlan_features, f.0);
    }

    /// Sets the GSO types the device segments only partially (`dev->gso_partial_features`).
    #[inline]
    pub fn set_gso_partial_features(&self, f: Features) {
        write_once!(self, gso_partial_features, f.0);
    }

    /// Sets the largest TSO packet the device takes (`netif_set_tso_max_size()`).
    #[inline]
    pub fn set_tso_max_size(&self, size: u32) {
        // SAFETY: The device is allocated; the caller holds `rtnl_lock` or owns the
        // unregistered device (the type's rule).
        unsafe { ksys::netif_set_tso_max_size(self.as_raw(), size) };
    }

    /// Refuses netpoll (netconsole) on the device (`IFF_DISABLE_NETPOLL`; before
    /// registration): for a driver whose transmit path or NAPI poll takes locks that are not
    /// safe with hard interrupts disabled, as netpoll calls them (e.g. `kapi::BhLock`).
    #[inline]
    pub fn disable_netpoll(&self) {
        // SAFETY: The device is allocated and not registered yet (the caller's rule), so
        // nothing else writes its flags.
        unsafe { ksys::netdev_disable_netpoll(self.as_raw()) };
    }

    /// Sets the TX watchdog timeout in jiffies (before registration); the stack calls
    /// [`crate::DeviceOps::tx_timeout`] when a stopped queue does not move for that long.
    #[inline]
    pub fn set_watchdog_timeo(&self, jiffies: u32) {
        write_once!(
            self,
            watchdog_timeo,
            i32::try_from(jiffies).unwrap_or(i32::MAX)
        );
    }

    /// The number of TX queues allocated.
    #[inline]
    pub fn num_tx_queues(&self) -> u32 {
        read_once!(self, num_tx_queues)
    }

    /// The number of TX queues in use.
    #[inline]
    pub fn real_num_tx_queues(&self) -> u32 {
        read_once!(self, real_num_tx_queues)
    }

    /// The number of RX queues allocated (`alloc_etherdev_mqs()`'s `rxqs`).
    #[inline]
    pub fn num_rx_queues(&self) -> u32 {
        read_once!(self, num_rx_queues)
    }

    /// The number of RX queues in use.
    #[inline]
    pub fn real_num_rx_queues(&self) -> u32 {
        read_once!(self, real_num_rx_queues)
    }

    /// Sets the number of TX queues in use, at most [`Device::num_tx_queues`]
    /// (`netif_set_real_num_tx_queues()`).
    #[inline]
    pub fn set_real_num_tx_queues(&self, n: u32) -> Result {
        // SAFETY: The device is allocated; the caller holds `rtnl_lock` or owns the
        // unregistered device (the type's rule); the function checks `n`.
        kernel::error::to_result(unsafe { ksys::netif_set_real_num_tx_queues(self.as_raw(), n) })
    }

    /// Sets the number of RX queues in use (`netif_set_real_num_rx_queues()`).
    #[inline]
    pub fn set_real_num_rx_queues(&self, n: u32) -> Result {
        // SAFETY: As in `set_real_num_tx_queues`.
        kernel::error::to_result(unsafe { ksys::netif_set_real_num_rx_queues(self.as_raw(), n) })
    }

    /// The TX queue `index`, if allocated.
    #[inline]
    pub fn tx_queue(&self, index: u32) -> Option<&TxQueue> {
        if index >= self.num_tx_queues() {
            return None;
        }
        // SAFETY: `index` is below `num_tx_queues`, so the queue is part of the allocated
        // device and lives as long as it.
        Some(unsafe { TxQueue::from_raw(ksys::netdev_get_tx_queue(self.as_raw(), index)) })
    }

    /// Stops every TX queue (`netif_tx_stop_all_queues()`).
    #[inline]
    pub fn stop_all_tx_queues(&self) {
        // SAFETY: The device is allocated.
        unsafe { ksys::netif_tx_stop_all_queues(self.as_raw()) };
    }

    /// Starts every TX queue the device has, in use or not (`netif_tx_start_all_queues()`, a
    /// static inline over `netif_tx_start_queue()`): the TX watchdog looks at all of them, so
    /// a queue left stopped past the ones in use would time out.
    pub fn start_all_tx_queues(&self) {
        for i in 0..self.num_tx_queues() {
            if let Some(q) = self.tx_queue(i) {
                q.start();
            }
        }
    }

    /// Whether user space set the RSS indirection table (`netif_is_rxfh_configured()`): a
    /// driver then keeps it across channel changes instead of spreading it again.
    #[inline]
    pub fn rxfh_configured(&self) -> bool {
        // SAFETY: The device is allocated; the function only reads its flags.
        unsafe { ksys::netif_is_rxfh_configured(self.as_raw()) }
    }

    /// Asks the UDP tunnel core to replay the ports to [`crate::udp_tunnel::UdpTunnelNic`]
    /// (`udp_tunnel_nic_reset_ntf()`), e.g. after a device reset lost them. With
    /// `rtnl_lock` held.
    #[inline]
    pub fn udp_tunnel_nic_reset(&self) {
        // SAFETY: The device is allocated; the caller holds `rtnl_lock` (the type's rule).
        unsafe { ksys::udp_tunnel_nic_reset_ntf(self.as_raw()) };
    }

    /// The device's own class device (`dev->dev`), e.g. for printing.
    #[inline]
    pub fn as_dev(&self) -> &device::Device {
        // SAFETY: `dev` is the `struct device` embedded in the allocated `net_device`;
        // `ksys::device` is `bindings::device`.
        unsafe { device::Device::from_raw(&raw mut (*self.as_raw()).dev) }
    }
}

impl AsRef<device::Device> for Device {
    fn as_ref(&self) -> &device::Device {
        self.as_dev()
    }
}

/// Whether the stack has more packets for the queue right after this one
/// (`netdev_xmit_more()`): in [`crate::DeviceOps::start_xmit`], a driver may then delay its
/// doorbell (see [`TxQueue::sent`]).
#[inline]
pub fn xmit_more() -> bool {
    // SAFETY: Reads a per-CPU flag; meaningful in `start_xmit`, harmless elsewhere.
    unsafe { ksys::netdev_xmit_more() }
}

/// A transmit queue of a [`Device`] (`struct netdev_queue`): flow control (stop / wake) and
/// byte queue limits (BQL).
///
/// Stopping and BQL's `sent` belong to the queue's `start_xmit` (the xmit lock held), waking
/// and `completed` to its completion path (NAPI); the two may run concurrently (see
/// [`TxQueue::maybe_stop`] and [`TxQueue::completed_wake`]).
#[repr(transparent)]
pub struct TxQueue(Opaque<ksys::netdev_queue>);

// SAFETY: The queue's C API may be called from any thread (its rules are documented).
unsafe impl Sync for TxQueue {}

/// What [`TxQueue::maybe_stop`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopResult {
    /// The queue was stopped: the ring is full.
    Stopped,
    /// The queue was left running: enough room.
    Running,
    /// The queue was stopped, then restarted: room was made meanwhile.
    Restarted,
}

/// What [`TxQueue::completed_wake`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeResult {
    /// The queue was stopped and was woken up.
    Woken,
    /// The queue was running (nothing to do).
    Running,
    /// Not enough room yet (or nothing completed): left as it was.
    Unchanged,
}

impl TxQueue {
    /// # Safety
    ///
    /// `ptr` must be a queue of an allocated device that outlives `'a`.
    unsafe fn from_raw<'a>(ptr: *mut ksys::netdev_queue) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's.
        unsafe { &*ptr.cast::<Self>() }
    }

    #[inline]
    fn as_raw(&self) -> *mut ksys::netdev_queue {
        self.0.get()
    }

    /// Stops the queue: the stack stops calling `start_xmit` for it
    /// (`netif_tx_stop_queue()`).
    #[inline]
    pub fn stop(&self) {
        // SAFETY: The queue is allocated (it lives as long as its device).
        unsafe { ksys::netif_tx_stop_queue(self.as_raw()) };
    }

    /// Restarts a stopped queue without rescheduling it (`netif_tx_start_queue()`), e.g. when
    /// the device is opened.
    #[inline]
    pub fn start(&self) {
        // SAFETY: As in `stop`.
        unsafe { ksys::netif_tx_start_queue(self.as_raw()) };
    }

    /// Restarts a stopped queue and reschedules its packets (`netif_tx_wake_queue()`).
    #[inline]
    pub fn wake(&self) {
        // SAFETY: As in `stop`.
        unsafe { ksys::netif_tx_wake_queue(self.as_raw()) };
    }

    /// Whether the queue is stopped by the driver (`netif_tx_queue_stopped()`).
    #[inline]
    pub fn is_stopped(&self) -> bool {
        // SAFETY: As in `stop`.
        unsafe { ksys::netif_tx_queue_stopped(self.as_raw()) }
    }

    /// Accounts `bytes` queued to the hardware to BQL (`__netdev_tx_sent_queue()`); returns
    /// whether to ring the doorbell now: `xmit_more` (see [`xmit_more`]) is honoured unless
    /// BQL stopped the queue. From `start_xmit`.
    #[inline]
    pub fn sent(&self, bytes: u32, xmit_more: bool) -> bool {
        // SAFETY: As in `stop`; the caller is the queue's `start_xmit` (the method's rule).
        unsafe { ksys::__netdev_tx_sent_queue(self.as_raw(), bytes, xmit_more) }
    }

    /// Accounts `pkts` packets of `bytes` completed by the hardware to BQL
    /// (`netdev_tx_completed_queue()`); may wake the queue. From the completion path.
    #[inline]
    pub fn completed(&self, pkts: u32, bytes: u32) {
        // SAFETY: As in `stop`.
        unsafe { ksys::netdev_tx_completed_queue(self.as_raw(), pkts, bytes) };
    }

    /// Resets the queue's BQL state (`netdev_tx_reset_queue()`), when its ring is emptied
    /// without completions (close).
    #[inline]
    pub fn reset(&self) {
        // SAFETY: As in `stop`.
        unsafe { ksys::netdev_tx_reset_queue(self.as_raw()) };
    }

    /// Stops the queue if fewer than `stop_thrs` descriptors are free, then restarts it if
    /// the completion path freed at least `start_thrs` meanwhile (`netif_txq_maybe_stop()`).
    /// `free_desc` must read the current count each time it is called. From `start_xmit`,
    /// after the producer index is updated.
    #[inline]
    pub fn maybe_stop(
        &self,
        free_desc: impl Fn() -> u32,
        stop_thrs: u32,
        start_thrs: u32,
    ) -> StopResult {
        if free_desc() >= stop_thrs {
            return StopResult::Running;
        }
        self.stop();
        // SAFETY: A barrier. The producer index and the stop bit must be visible to the
        // completion path before we read its consumer index again; pairs with the barrier of
        // `completed_wake`.
        unsafe { ksys::smp_mb__after_atomic() };
        if free_desc() >= start_thrs {
            self.start();
            StopResult::Restarted
        } else {
            StopResult::Stopped
        }
    }

    /// Accounts completions to BQL, then wakes the queue if it is stopped and at least
    /// `start_thrs` descriptors are free (`netif_txq_completed_wake()`). `free_desc` must
    /// read the current count. From the completion path, after the consumer index is updated.
    #[inline]
    pub fn completed_wake(
        &self,
        pkts: u32,
        bytes: u32,
        free_desc: impl Fn() -> u32,
        start_thrs: u32,
    ) -> WakeResult {
        // SAFETY: The queue is allocated; BQL's completion with a full barrier if
        // `bytes != 0`, which pairs with the one in `maybe_stop`.
        unsafe { ksys::netdev_txq_completed_mb(self.as_raw(), pkts, bytes) };
        if pkts == 0 || free_desc() < start_thrs {
            return WakeResult::Unchanged;
        }
        if self.is_stopped() {
            self.wake();
            WakeResult::Woken
        } else {
            WakeResult::Running
        }
    }
}

/// Interface flags (`IFF_*`, `dev->flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flags(u32);

impl Flags {
    /// `IFF_UP`: administratively up.
    pub const UP: u32 = ksys::net_device_flags_IFF_UP;
    /// `IFF_BROADCAST`.
    pub const BROADCAST: u32 = ksys::net_device_flags_IFF_BROADCAST;
    /// `IFF_PROMISC`: receive every packet.
    pub const PROMISC: u32 = ksys::net_device_flags_IFF_PROMISC;
    /// `IFF_ALLMULTI`: receive every multicast packet.
    pub const ALLMULTI: u32 = ksys::net_device_flags_IFF_ALLMULTI;
    /// `IFF_MULTICAST`.
    pub const MULTICAST: u32 = ksys::net_device_flags_IFF_MULTICAST;

    /// The raw `IFF_*` bits.
    #[inline]
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Whether every bit of `flag` (one of the constants) is set.
    #[inline]
    pub fn contains(self, flag: u32) -> bool {
        self.0 & flag == flag
    }

    /// `IFF_PROMISC`.
    #[inline]
    pub fn promisc(self) -> bool {
        self.contains(Self::PROMISC)
    }

    /// `IFF_ALLMULTI`.
    #[inline]
    pub fn allmulti(self) -> bool {
        self.contains(Self::ALLMULTI)
    }
}

/// A set of netdev features (`netdev_features_t`, the `NETIF_F_*` bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features(u64);

macro_rules! features {
    ($($(#[$m:meta])* $name:ident = $bit:ident;)*) => {
        impl Features {
            $(
                $(#[$m])*
                pub const $name: Self = Self(1u64 << ksys::$bit);
            )*
        }
    };
}

features! {
    /// `NETIF_F_SG`: scatter/gather.
    SG = NETIF_F_SG_BIT;
    /// `NETIF_F_IP_CSUM`: TCP/UDP over IPv4 checksum.
    IP_CSUM = NETIF_F_IP_CSUM_BIT;
    /// `NETIF_F_HW_CSUM`: any checksum (csum_start/csum_offset).
    HW_CSUM = NETIF_F_HW_CSUM_BIT;
    /// `NETIF_F_IPV6_CSUM`: TCP/UDP over IPv6 checksum.
    IPV6_CSUM = NETIF_F_IPV6_CSUM_BIT;
    /// `NETIF_F_HIGHDMA`: DMA to high memory.
    HIGHDMA = NETIF_F_HIGHDMA_BIT;
    /// `NETIF_F_HW_VLAN_CTAG_TX`: VLAN tag insertion.
    HW_VLAN_CTAG_TX = NETIF_F_HW_VLAN_CTAG_TX_BIT;
    /// `NETIF_F_HW_VLAN_CTAG_RX`: VLAN tag stripping.
    HW_VLAN_CTAG_RX = NETIF_F_HW_VLAN_CTAG_RX_BIT;
    /// `NETIF_F_HW_VLAN_CTAG_FILTER`: VLAN filtering (needs the vid ops, not wrapped).
    HW_VLAN_CTAG_FILTER = NETIF_F_HW_VLAN_CTAG_FILTER_BIT;
    /// `NETIF_F_GRO_HW`: hardware GRO.
    GRO_HW = NETIF_F_GRO_HW_BIT;
    /// `NETIF_F_LRO`: large receive offload.
    LRO = NETIF_F_LRO_BIT;
    /// `NETIF_F_TSO`: TCPv4 segmentation.
    TSO = NETIF_F_TSO_BIT;
    /// `NETIF_F_TSO_ECN`: TSO with ECN.
    TSO_ECN = NETIF_F_TSO_ECN_BIT;
    /// `NETIF_F_TSO_MANGLEID`: TSO may keep IPv4 IDs fixed.
    TSO_MANGLEID = NETIF_F_TSO_MANGLEID_BIT;
    /// `NETIF_F_TSO6`: TCPv6 segmentation.
    TSO6 = NETIF_F_TSO6_BIT;
    /// `NETIF_F_GSO_GRE`: GRE segmentation.
    GSO_GRE = NETIF_F_GSO_GRE_BIT;
    /// `NETIF_F_GSO_GRE_CSUM`: GRE with checksum segmentation.
    GSO_GRE_CSUM = NETIF_F_GSO_GRE_CSUM_BIT;
    /// `NETIF_F_GSO_IPXIP4`: IP-in-IPv4 segmentation.
    GSO_IPXIP4 = NETIF_F_GSO_IPXIP4_BIT;
    /// `NETIF_F_GSO_IPXIP6`: IP-in-IPv6 segmentation.
    GSO_IPXIP6 = NETIF_F_GSO_IPXIP6_BIT;
    /// `NETIF_F_GSO_UDP_TUNNEL`: UDP tunnel (VXLAN, GENEVE) segmentation.
    GSO_UDP_TUNNEL = NETIF_F_GSO_UDP_TUNNEL_BIT;
    /// `NETIF_F_GSO_UDP_TUNNEL_CSUM`: UDP tunnel with outer checksum segmentation.
    GSO_UDP_TUNNEL_CSUM = NETIF_F_GSO_UDP_TUNNEL_CSUM_BIT;
    /// `NETIF_F_GSO_PARTIAL`: partial segmentation (outer headers by the stack).
    GSO_PARTIAL = NETIF_F_GSO_PARTIAL_BIT;
    /// `NETIF_F_GSO_UDP_L4`: UDP segmentation.
    GSO_UDP_L4 = NETIF_F_GSO_UDP_L4_BIT;
    /// `NETIF_F_RXCSUM`: receive checksum offload.
    RXCSUM = NETIF_F_RXCSUM_BIT;
    /// `NETIF_F_RXHASH`: receive hashing.
    RXHASH = NETIF_F_RXHASH_BIT;
    /// `NETIF_F_NTUPLE`: n-tuple filters.
    NTUPLE = NETIF_F_NTUPLE_BIT;
    /// `NETIF_F_RXALL`: receive errored frames too.
    RXALL = NETIF_F_RXALL_BIT;
    /// `NETIF_F_RXFCS`: keep the FCS.
    RXFCS = NETIF_F_RXFCS_BIT;
    /// `NETIF_F_LOOPBACK`: loopback.
    LOOPBACK = NETIF_F_LOOPBACK_BIT;
}

impl Features {
    /// No feature.
    pub const EMPTY: Self = Self(0);
    /// `NETIF_F_CSUM_MASK`: any TX checksum feature.
    pub const CSUM_MASK: Self = Self(Self::IP_CSUM.0 | Self::HW_CSUM.0 | Self::IPV6_CSUM.0);
    /// `NETIF_F_GSO_MASK`: every GSO type.
    pub const GSO_MASK: Self = Self(
        ((1u64 << (ksys::NETIF_F_GSO_LAST + 1)) - 1) & !((1u64 << ksys::NETIF_F_GSO_SHIFT) - 1),
    );

    /// The raw bits.
    #[inline]
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// The set of these raw bits.
    #[inline]
    pub const fn from_bits(bits: u64) -> Self {
        Self(bits)
    }

    /// Whether every feature of `other` is in `self`.
    #[inline]
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether some feature of `other` is in `self`.
    #[inline]
    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    /// `self` with `other` added (for `const` tables).
    #[inline]
    pub const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl ops::BitOr for Features {
    type Output = Self;
    fn bitor(self, o: Self) -> Self {
        Self(self.0 | o.0)
    }
}

impl ops::BitOrAssign for Features {
    fn bitor_assign(&mut self, o: Self) {
        self.0 |= o.0;
    }
}

impl ops::BitAnd for Features {
    type Output = Self;
    fn bitand(self, o: Self) -> Self {
        Self(self.0 & o.0)
    }
}

impl ops::BitAndAssign for Features {
    fn bitand_assign(&mut self, o: Self) {
        self.0 &= o.0;
    }
}

impl ops::Not for Features {
    type Output = Self;
    fn not(self) -> Self {
        Self(!self.0)
    }
}

/// A hardware address list (`struct netdev_hw_addr_list`): the unicast or multicast
/// addresses [`crate::DeviceOps::set_rx_mode`] and
/// [`crate::DeviceOps::set_rx_mode_async`] program.
///
/// # Invariants
///
/// `raw` is a list that nothing changes for `'a` (the device's address lock is held, or it
/// is a snapshot owned by the caller of the callback).
pub struct AddrList<'a> {
    raw: *const ksys::netdev_hw_addr_list,
    _p: PhantomData<&'a ksys::netdev_hw_addr_list>,
}

impl AddrList<'_> {
    /// # Safety
    ///
    /// `raw` must be a valid list that nothing changes for the returned value's lifetime.
    #[inline]
    pub(crate) unsafe fn from_raw(raw: *const ksys::netdev_hw_addr_list) -> Self {
        Self {
            raw,
            _p: PhantomData,
        }
    }

    /// The number of addresses.
    #[inline]
    pub fn len(&self) -> usize {
        // SAFETY: The list is valid and stable (type invariant).
        usize::try_from(unsafe { (*self.raw).count }).unwrap_or(0)
    }

    /// Whether the list is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The addresses (`netdev_hw_addr_list_for_each()`).
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = MacAddr> + '_ {
        // SAFETY: The list is valid and stable (type invariant).
        let head = unsafe { &raw const (*self.raw).list };
        // SAFETY: As above: the head's first entry.
        let mut pos = unsafe { (*head).next }.cast_const();
        core::iter::from_fn(move || {
            if pos == head {
                return None;
            }
            // The entry's `list` is its first field (checked at build time below), so the
            // list node is the entry.
            let ha = pos.cast::<ksys::netdev_hw_addr>();
            let mut a = [0u8; 6];
            // SAFETY: `ha` is an entry of the stable list; its `addr` has at least
            // `ETH_ALEN` bytes; `next` is the following node (or the head).
            unsafe {
                ptr::copy_nonoverlapping((*ha).addr.as_ptr(), a.as_mut_ptr(), a.len());
                pos = (*pos).next.cast_const();
            }
            Some(a)
        })
    }
}

const _: () = assert!(core::mem::offset_of!(ksys::netdev_hw_addr, list) == 0);

/// The device's counters as `get_stats64` reports them (`struct rtnl_link_stats64`); the
/// driver sets what it counts, the rest stays 0.
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct Stats64 {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub multicast: u64,
    pub collisions: u64,
    pub rx_length_errors: u64,
    pub rx_over_errors: u64,
    pub rx_crc_errors: u64,
    pub rx_frame_errors: u64,
    pub rx_fifo_errors: u64,
    pub rx_missed_errors: u64,
    pub tx_aborted_errors: u64,
    pub tx_carrier_errors: u64,
    pub tx_fifo_errors: u64,
    pub tx_heartbeat_errors: u64,
    pub tx_window_errors: u64,
    pub rx_compressed: u64,
    pub tx_compressed: u64,
    pub rx_nohandler: u64,
    pub rx_otherhost_dropped: u64,
}

impl Stats64 {
    /// Writes the counters into the C struct.
    #[inline]
    pub(crate) fn write_to(&self, s: &mut ksys::rtnl_link_stats64) {
        s.rx_packets = self.rx_packets;
        s.tx_packets = self.tx_packets;
        s.rx_bytes = self.rx_bytes;
        s.tx_bytes = self.tx_bytes;
        s.rx_errors = self.rx_errors;
        s.tx_errors = self.tx_errors;
        s.rx_dropped = self.rx_dropped;
        s.tx_dropped = self.tx_dropped;
        s.multicast = self.multicast;
        s.collisions = self.collisions;
        s.rx_length_errors = self.rx_length_errors;
        s.rx_over_errors = self.rx_over_errors;
        s.rx_crc_errors = self.rx_crc_errors;
        s.rx_frame_errors = self.rx_frame_errors;
        s.rx_fifo_errors = self.rx_fifo_errors;
        s.rx_missed_errors = self.rx_missed_errors;
        s.tx_aborted_errors = self.tx_aborted_errors;
        s.tx_carrier_errors = self.tx_carrier_errors;
        s.tx_fifo_errors = self.tx_fifo_errors;
        s.tx_heartbeat_errors = self.tx_heartbeat_errors;
        s.tx_window_errors = self.tx_window_errors;
        s.rx_compressed = self.rx_compressed;
        s.tx_compressed = self.tx_compressed;
        s.rx_nohandler = self.rx_nohandler;
        s.rx_otherhost_dropped = self.rx_otherhost_dropped;
    }
}
