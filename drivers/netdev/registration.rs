// SPDX-License-Identifier: GPL-2.0
//! [`Registration`]: allocating, registering and freeing a `net_device`, and the
//! `net_device_ops` table built from a driver's [`DeviceOps`].

use core::{
    marker::PhantomData,
    ptr::{
        self,
        NonNull, //
    },
};

use kernel::{
    build_error,
    device::{
        self,
        Bound, //
    },
    error::{
        from_result,
        to_result,
        VTABLE_DEFAULT_ERROR, //
    },
    prelude::*,
    sync::Arc,
    types::ForeignOwnable,
};

use ksys::op;

use crate::{
    skb::SkBuff,
    tstamp::HwTstampConfig,
    xdp::{
        BpfProg,
        Extack,
        XdpSetup, //
    },
    xsk::{
        XskPool,
        XskRegistry, //
    },
    AddrList,
    Device,
    Features,
    MacAddr,
    Stats64, //
};

/// What [`DeviceOps::start_xmit`] did with the packet.
pub enum TxResult {
    /// `NETDEV_TX_OK`: the packet was taken (queued to the hardware or dropped; either way
    /// the driver consumed the [`SkBuff`]).
    Ok,
    /// `NETDEV_TX_BUSY`: the queue had no room; the packet goes back to the stack, which
    /// requeues it. The driver must have stopped the queue (so the stack does not retry at
    /// once) and must not have changed the skb. Drivers should stop queues early (see
    /// [`crate::TxQueue::maybe_stop`]) so that this never happens.
    Busy(SkBuff),
}

/// The borrowed driver data the callbacks receive.
pub type DataRef<'a, T> = <<T as DeviceOps>::Data as ForeignOwnable>::Borrowed<'a>;

/// A network device driver's operations (`struct net_device_ops`).
///
/// Each callback receives the device and a borrow of the driver data given to
/// [`Registration::new`]. Only the implemented callbacks are set in the C table (the others
/// are `NULL`, the stack's default).
#[vtable]
pub trait DeviceOps: Sized + 'static {
    /// The driver data (`Pin<KBox<_>>`, `Arc<_>`, ...), owned by the [`Registration`].
    type Data: ForeignOwnable + Send + Sync;

    /// `ndo_open`: brings the device up (rtnl). Typically creates the queues, enables NAPI,
    /// starts the TX queues.
    fn open(_dev: &Device, _data: DataRef<'_, Self>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_stop`: brings the device down (rtnl). After it returns, the stack calls no
    /// `start_xmit` until the next `open`.
    fn stop(_dev: &Device, _data: DataRef<'_, Self>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_start_xmit`: transmits `skb` (BH disabled, the queue's xmit lock held; see
    /// [`SkBuff::queue_mapping`] for the queue). Required.
    fn start_xmit(dev: &Device, data: DataRef<'_, Self>, skb: SkBuff) -> TxResult;

    /// `ndo_features_check`: the features the device can use for this packet (atomic).
    fn features_check(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _skb: &SkBuff,
        _features: Features,
    ) -> Features {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_get_stats64`: the device's counters (any context but hard IRQ, concurrently with
    /// the data path; must not sleep).
    fn get_stats64(_dev: &Device, _data: DataRef<'_, Self>, _stats: &mut Stats64) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_set_rx_mode`: programs the receive filters from the flags (promiscuous,
    /// all-multicast) and address lists. Atomic: runs under the device's address lock (BH
    /// disabled); cannot sleep, so drivers that program filters by firmware command should
    /// implement [`DeviceOps::set_rx_mode_async`] instead.
    fn set_rx_mode(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _uc: &AddrList<'_>,
        _mc: &AddrList<'_>,
    ) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_set_rx_mode_async`: as [`DeviceOps::set_rx_mode`], but in process context with
    /// rtnl held, on snapshots of the lists (may sleep). An error makes the stack retry with
    /// backoff.
    fn set_rx_mode_async(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _uc: &AddrList<'_>,
        _mc: &AddrList<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_set_mac_address`: `addr` was checked with [`crate::is_valid_ether_addr`] (else
    /// the stack gets `EADDRNOTAVAIL`). The driver programs it and calls
    /// [`Device::set_dev_addr`] (rtnl). Not implemented: the address cannot be changed.
    fn set_mac_address(_dev: &Device, _data: DataRef<'_, Self>, _addr: &MacAddr) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_validate_addr`: checks the address before `open` (rtnl). Not implemented: the
    /// stack does not check.
    fn validate_addr(_dev: &Device, _data: DataRef<'_, Self>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_change_mtu`: the new MTU is within the device's range; the driver applies it and
    /// calls [`Device::set_mtu`] (rtnl).
    fn change_mtu(_dev: &Device, _data: DataRef<'_, Self>, _new_mtu: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_tx_timeout`: TX queue `txqueue` has been stopped for longer than the watchdog
    /// timeout (softirq, every TX queue's lock held: do not sleep, schedule recovery work).
    fn tx_timeout(_dev: &Device, _data: DataRef<'_, Self>, _txqueue: u32) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_fix_features`: adjusts the requested features to what can be combined (rtnl).
    fn fix_features(_dev: &Device, _data: DataRef<'_, Self>, _features: Features) -> Features {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_set_features`: applies `features` (rtnl); on success the stack stores them in
    /// [`Device::features`].
    fn set_features(_dev: &Device, _data: DataRef<'_, Self>, _features: Features) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_hwtstamp_get`: the hardware timestamping configuration in force (rtnl).
    fn hwtstamp_get(_dev: &Device, _data: DataRef<'_, Self>) -> Result<HwTstampConfig> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_hwtstamp_set`: applies a hardware timestamping configuration (rtnl; `SIOCSHWTSTAMP`,
    /// the netlink `tsconfig`). `ERANGE` for a TX type or RX filter the device does not have;
    /// a filter the device widens is written back into `config`, which the caller reports.
    fn hwtstamp_set(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _config: &mut HwTstampConfig,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_bpf` with `XDP_SETUP_PROG`: runs the program on every received frame from now on,
    /// or none (rtnl). The driver keeps its own references ([`BpfProg`] is counted) and drops
    /// the old program's; a refusal should say why in the acknowledgement.
    fn xdp_setup_prog(_dev: &Device, _data: DataRef<'_, Self>, _setup: XdpSetup<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_bpf` with `XDP_SETUP_XSK_POOL` (rtnl): an AF_XDP socket bound to RX/TX queue
    /// `queue` in zero-copy mode hands over its buffer pool (`Some`; the driver maps it,
    /// [`XskPool::dma_map`], before returning), or takes it back (`None`). After the call
    /// the binding waits until the driver dropped every handle of a pool taken back (or of
    /// one it refused): the stack frees it next.
    fn xdp_setup_xsk_pool(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _queue: u16,
        _pool: Option<XskPool>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_xsk_wakeup`: the socket of queue `queue` queued frames to send or gave buffers to
    /// fill (`flags`: `XDP_WAKEUP_RX`/`_TX`); the driver schedules the queue's NAPI. Atomic
    /// context (RCU read side): it must not sleep.
    fn xsk_wakeup(_dev: &Device, _data: DataRef<'_, Self>, _queue: u32, _flags: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// The private area of every `net_device` this crate allocates (`netdev_priv()`).
#[repr(C)]
pub(crate) struct Priv {
    /// The driver data (`T::Data::into_foreign()`); NULL once it is dropped.
    data: *mut c_void,
    /// The allocation; not a counted reference (the allocation outlives its private area).
    owner: *const Owner,
}

/// The allocation of a `net_device`: frees it (`free_netdev()`) when the last reference, the
/// [`Registration`]'s or a NAPI instance's, goes.
///
/// # Invariants
///
/// `raw` was allocated by `alloc_etherdev_mqs()` with a [`Priv`] private area; it is
/// unregistered (or never was registered) before the last reference is dropped.
pub(crate) struct Owner {
    raw: NonNull<ksys::net_device>,
    /// The AF_XDP pools handed to the driver.
    xsk: XskRegistry,
}

// SAFETY: `free_netdev()` may be called from any thread (in process context).
unsafe impl Send for Owner {}

// SAFETY: `&Owner` only gives the pointer.
unsafe impl Sync for Owner {}

impl Owner {
    /// The device.
    pub(crate) fn device(&self) -> &Device {
        // SAFETY: The allocation lives as long as `self` (type invariant) and was made by
        // `Registration`.
        unsafe { Device::from_raw(self.raw.as_ptr()) }
    }

    /// A counted reference to the allocation of `dev`.
    pub(crate) fn of(dev: &Device) -> Arc<Owner> {
        // SAFETY: `dev` was allocated by `Registration` (`Device`'s invariant), so its private
        // area is a `Priv`, whose `owner` is the `Arc<Owner>` data pointer that the
        // `Registration` holds a reference to until the allocation is freed.
        unsafe {
            let p = ksys::netdev_priv(dev.as_raw()).cast::<Priv>();
            kernel::sync::ArcBorrow::from_raw((*p).owner).into()
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        // SAFETY: The last reference: nothing uses the device any more and it is not
        // registered (type invariant).
        unsafe { ksys::free_netdev(self.raw.as_ptr()) };
    }
}

/// A counted reference to a device of a [`Registration`]: keeps the `net_device` allocated
/// (not registered), for code that must reach the device outside its callbacks (an event
/// handler setting the carrier). Its owner must stop using it before the registration is
/// dropped (the device is then unregistered; the carrier of an unregistered device must not
/// change).
#[derive(Clone)]
pub struct DeviceRef(Arc<Owner>);

impl DeviceRef {
    /// The device.
    pub fn device(&self) -> &Device {
        self.0.device()
    }
}

/// A network device of a driver: allocated by [`Registration::new`], registered by
/// [`Registration::register`]; dropping it unregisters it (waiting for the callbacks in
/// progress, `ndo_stop` included if it is up), drops the driver data, then frees the device
/// once no [`crate::napi::Napi`] uses it.
///
/// # Invariants
///
/// `owner`'s device has `OpsTable::<T>::OPS` as its `netdev_ops` and a `T::Data` in its
/// private area until `self` is dropped; it is registered iff `registered`.
pub struct Registration<T: DeviceOps> {
    owner: Arc<Owner>,
    registered: bool,
    _p: PhantomData<T>,
}

// SAFETY: The device may be registered, unregistered and freed from any thread; `T::Data` is
// `Send + Sync`.
unsafe impl<T: DeviceOps> Send for Registration<T> {}

// SAFETY: `&Registration` gives `&Device` and the borrowed data, both `Sync`.
unsafe impl<T: DeviceOps> Sync for Registration<T> {}

impl<T: DeviceOps> Registration<T> {
    /// Allocates an Ethernet device with `txqs` TX and `rxqs` RX queues
    /// (`alloc_etherdev_mqs()`), child of `parent` (`SET_NETDEV_DEV()`), with `T`'s
    /// operations and `data`. Not registered yet: set its features, addresses, ethtool
    /// operations... first (through [`Registration::device`] and the setters).
    pub fn new(
        parent: &device::Device<Bound>,
        txqs: u32,
        rxqs: u32,
        data: T::Data,
    ) -> Result<Self> {
        let size = i32::try_from(core::mem::size_of::<Priv>()).map_err(|_| EINVAL)?;
        // SAFETY: No preconditions; the private area is zeroed.
        let raw = unsafe { ksys::alloc_etherdev_mqs(size, txqs, rxqs) };
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // INVARIANT: allocated with a `Priv` area (filled below before anything reads it).
        let owner = match Arc::new(
            Owner {
                raw,
                xsk: XskRegistry::default(),
            },
            GFP_KERNEL,
        ) {
            Ok(o) => o,
            Err(e) => {
                // SAFETY: Just allocated, never registered, not used elsewhere.
                unsafe { ksys::free_netdev(raw.as_ptr()) };
                return Err(e.into());
            }
        };
        let dev = raw.as_ptr();
        // CAST: `device::Device` wraps `bindings::device` transparently; it is `ksys::device`.
        let parent = ptr::from_ref(parent).cast::<ksys::device>().cast_mut();
        // SAFETY: `dev` is allocated and not registered, so nothing else uses it; its private
        // area is a zeroed `Priv`. `parent` is a live device (the netdev core takes its own
        // reference when registering). The ops table is a static.
        unsafe {
            let p = ksys::netdev_priv(dev).cast::<Priv>();
            (*p).data = data.into_foreign();
            (*p).owner = Arc::as_ptr(&owner);
            ksys::set_netdev_dev(dev, parent);
            (*dev).netdev_ops = OpsTable::<T>::get();
        }
        Ok(Self {
            owner,
            registered: false,
            _p: PhantomData,
        })
    }

    /// The device.
    pub fn device(&self) -> &Device {
        self.owner.device()
    }

    /// A counted reference to the device (see [`DeviceRef`]).
    pub fn device_ref(&self) -> DeviceRef {
        DeviceRef(self.owner.clone())
    }

    /// The driver data.
    pub fn data(&self) -> DataRef<'_, T> {
        // SAFETY: The device has `T::Data` in its private area while `self` exists.
        unsafe { data_of::<T::Data>(self.device()) }
    }

    /// Whether the device is registered.
    pub fn is_registered(&self) -> bool {
        self.registered
    }

    /// Sets the ethtool operations (before registration).
    pub fn set_ethtool_ops<E: crate::ethtool::EthtoolOps<Data = T::Data>>(&mut self) -> Result {
        if self.registered {
            return Err(EBUSY);
        }
        // SAFETY: Not registered: nothing else reads the field. `E::Data` is `T::Data`, so
        // its callbacks find their data in the private area. The table is a static.
        unsafe { (*self.device().as_raw()).ethtool_ops = crate::ethtool::table::<E>() };
        Ok(())
    }

    /// Sets the DCB operations (before registration): `dcbnl_ops`, which the `dcb` tool and
    /// LLDP agents use. `EOPNOTSUPP` in a kernel without `CONFIG_DCB`.
    pub fn set_dcbnl_ops<D: crate::dcbnl::DcbnlOps<Data = T::Data>>(&mut self) -> Result {
        if self.registered {
            return Err(EBUSY);
        }
        #[cfg(CONFIG_DCB)]
        {
            // SAFETY: As in `set_ethtool_ops`.
            unsafe { (*self.device().as_raw()).dcbnl_ops = crate::dcbnl::table::<D>() };
            Ok(())
        }
        #[cfg(not(CONFIG_DCB))]
        {
            Err(crate::dcbnl::eopnotsupp())
        }
    }

    /// Sets the per-queue statistics operations (before registration): `stat_ops`, which the
    /// netdev netlink family's `qstats-get` reads.
    pub fn set_queue_stats_ops<S: crate::qstats::QueueStatsOps<Data = T::Data>>(
        &mut self,
    ) -> Result {
        if self.registered {
            return Err(EBUSY);
        }
        // SAFETY: As in `set_ethtool_ops`.
        unsafe { (*self.device().as_raw()).stat_ops = crate::qstats::table::<S>() };
        Ok(())
    }

    /// Sets the UDP tunnel port table (before registration); adds
    /// `NETIF_F_RX_UDP_TUNNEL_PORT` to the features as the stack requires.
    pub fn set_udp_tunnel_nic<U: crate::udp_tunnel::UdpTunnelNic<Data = T::Data>>(
        &mut self,
    ) -> Result {
        if self.registered {
            return Err(EBUSY);
        }
        let dev = self.device();
        // SAFETY: As in `set_ethtool_ops`.
        unsafe { (*dev.as_raw()).udp_tunnel_nic_info = crate::udp_tunnel::info::<U>() };
        let port = Features::from_bits(1 << ksys::NETIF_F_RX_UDP_TUNNEL_PORT_BIT);
        dev.set_features(dev.features() | port);
        dev.set_hw_features(dev.hw_features() | port);
        Ok(())
    }

    /// Registers the device (`register_netdev()`, which takes `rtnl_lock`): from now on the
    /// stack calls the operations.
    pub fn register(&mut self) -> Result {
        if self.registered {
            return Err(EBUSY);
        }
        // SAFETY: The device is fully set up and not registered.
        to_result(unsafe { ksys::register_netdev(self.device().as_raw()) })?;
        self.registered = true;
        Ok(())
    }
}

impl<T: DeviceOps> Drop for Registration<T> {
    fn drop(&mut self) {
        let dev = self.device().as_raw();
        if self.registered {
            // SAFETY: Registered (type invariant). When it returns, no callback runs or will
            // run (the device is closed and the stack's references are gone).
            unsafe { ksys::unregister_netdev(dev) };
        }
        // SAFETY: The device is not registered: no callback uses the data any more. The
        // pointer came from `T::Data::into_foreign()` and is cleared, so it is taken once.
        unsafe {
            let p = ksys::netdev_priv(dev).cast::<Priv>();
            let data = core::mem::replace(&mut (*p).data, ptr::null_mut());
            drop(T::Data::from_foreign(data));
        }
        // `self.owner` goes now; the device is freed with the last NAPI instance on it.
    }
}

/// The driver data of `dev`, typed by the data type `D` of its `Registration` (every table
/// of the device, `net_device_ops`, ethtool, DCB, UDP tunnels, reads it through here).
///
/// # Safety
///
/// `dev` must have `D` in its private area (allocated by a `Registration` whose data type is
/// `D`), not dropped during `'a`.
pub(crate) unsafe fn data_of<'a, D: ForeignOwnable + 'a>(dev: &'a Device) -> D::Borrowed<'a> {
    // SAFETY: `dev` was allocated by `Registration`, so its private area is a `Priv`.
    let p = unsafe { ksys::netdev_priv(dev.as_raw()).cast::<Priv>() };
    // SAFETY: The data is `D`'s foreign form and is not taken back during `'a` (the caller's
    // guarantee).
    unsafe { D::borrow((*p).data) }
}

/// The `net_device_ops` table of `T`, for as long as the module is loaded.
pub(crate) const fn ops_table<T: DeviceOps>() -> &'static ksys::net_device_ops {
    OpsTable::<T>::get()
}

/// The `net_device_ops` table of `T` and its callbacks.
struct OpsTable<T>(PhantomData<T>);

impl<T: DeviceOps> OpsTable<T> {
    const OPS: ksys::net_device_ops = ksys::net_device_ops {
        ndo_open: op!(T::HAS_OPEN, Self::open),
        ndo_stop: op!(T::HAS_STOP, Self::stop),
        ndo_start_xmit: Some(Self::start_xmit),
        ndo_features_check: op!(T::HAS_FEATURES_CHECK, Self::features_check),
        ndo_set_rx_mode: op!(T::HAS_SET_RX_MODE, Self::set_rx_mode),
        ndo_set_rx_mode_async: op!(T::HAS_SET_RX_MODE_ASYNC, Self::set_rx_mode_async),
        ndo_set_mac_address: op!(T::HAS_SET_MAC_ADDRESS, Self::set_mac_address),
        ndo_validate_addr: op!(T::HAS_VALIDATE_ADDR, Self::validate_addr),
        ndo_change_mtu: op!(T::HAS_CHANGE_MTU, Self::change_mtu),
        ndo_tx_timeout: op!(T::HAS_TX_TIMEOUT, Self::tx_timeout),
        ndo_get_stats64: op!(T::HAS_GET_STATS64, Self::get_stats64),
        ndo_fix_features: op!(T::HAS_FIX_FEATURES, Self::fix_features),
        ndo_set_features: op!(T::HAS_SET_FEATURES, Self::set_features),
        ndo_hwtstamp_get: op!(T::HAS_HWTSTAMP_GET, Self::hwtstamp_get),
        ndo_hwtstamp_set: op!(T::HAS_HWTSTAMP_SET, Self::hwtstamp_set),
        ndo_bpf: op!(
            T::HAS_XDP_SETUP_PROG || T::HAS_XDP_SETUP_XSK_POOL,
            Self::bpf
        ),
        ndo_xsk_wakeup: op!(T::HAS_XSK_WAKEUP, Self::xsk_wakeup),
        ..pin_init::zeroed()
    };

    /// The table, for as long as the module is loaded (`OPS` is promoted to a static).
    const fn get() -> &'static ksys::net_device_ops {
        &Self::OPS
    }

    /// # Safety
    ///
    /// The stack calls it with a device allocated by `Registration<T>` that is registered.
    unsafe extern "C" fn open(dev: *mut ksys::net_device) -> c_int {
        // SAFETY: The stack passes a live device of this table, i.e. of `Registration<T>`,
        // whose data lives until after it is unregistered (and thus after the callback).
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        from_result(|| T::open(dev, data).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `open`.
    unsafe extern "C" fn stop(dev: *mut ksys::net_device) -> c_int {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        from_result(|| T::stop(dev, data).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `open`; `skb` is a packet whose ownership the stack hands over.
    unsafe extern "C" fn start_xmit(
        skb: *mut ksys::sk_buff,
        dev: *mut ksys::net_device,
    ) -> ksys::netdev_tx_t {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        // SAFETY: The stack passes a valid skb and gives it to the driver unless the driver
        // returns `NETDEV_TX_BUSY`, in which case `Busy` gave it back untouched.
        let skb = unsafe { SkBuff::from_raw(skb) };
        match T::start_xmit(dev, data, skb) {
            TxResult::Ok => ksys::netdev_tx_NETDEV_TX_OK,
            TxResult::Busy(skb) => {
                // Ownership goes back to the stack, which requeues it.
                let _ = skb.into_raw();
                ksys::netdev_tx_NETDEV_TX_BUSY
            }
        }
    }

    /// # Safety
    ///
    /// As for `open`; `skb` is a valid packet the stack keeps.
    unsafe extern "C" fn features_check(
        skb: *mut ksys::sk_buff,
        dev: *mut ksys::net_device,
        features: ksys::netdev_features_t,
    ) -> ksys::netdev_features_t {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        // SAFETY: The stack owns the skb for the whole call; the borrowed handle is never
        // dropped (`ManuallyDrop`), so it is not freed.
        let skb = core::mem::ManuallyDrop::new(unsafe { SkBuff::from_raw(skb) });
        T::features_check(dev, data, &skb, Features::from_bits(features)).bits()
    }

    /// # Safety
    ///
    /// As for `open`; `storage` is a valid, zeroed `rtnl_link_stats64`.
    unsafe extern "C" fn get_stats64(
        dev: *mut ksys::net_device,
        storage: *mut ksys::rtnl_link_stats64,
    ) {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        let mut stats = Stats64::default();
        T::get_stats64(dev, data, &mut stats);
        // SAFETY: The stack passes valid storage that only this call writes.
        stats.write_to(unsafe { &mut *storage });
    }

    /// # Safety
    ///
    /// As for `open`; called with the device's address lock held.
    unsafe extern "C" fn set_rx_mode(dev: *mut ksys::net_device) {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        // SAFETY: The address lock is held for the whole call, so the lists do not change.
        let (uc, mc) = unsafe {
            (
                AddrList::from_raw(&raw const (*dev.as_raw()).uc),
                AddrList::from_raw(&raw const (*dev.as_raw()).mc),
            )
        };
        T::set_rx_mode(dev, data, &uc, &mc);
    }

    /// # Safety
    ///
    /// As for `open`; `uc` and `mc` are snapshots the stack owns for the call.
    unsafe extern "C" fn set_rx_mode_async(
        dev: *mut ksys::net_device,
        uc: *mut ksys::netdev_hw_addr_list,
        mc: *mut ksys::netdev_hw_addr_list,
    ) -> c_int {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        // SAFETY: The snapshots are valid and unchanged for the call.
        let (uc, mc) = unsafe { (AddrList::from_raw(uc), AddrList::from_raw(mc)) };
        from_result(|| T::set_rx_mode_async(dev, data, &uc, &mc).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `open`; `addr` is a `struct sockaddr` (the address in `sa_data`).
    unsafe extern "C" fn set_mac_address(dev: *mut ksys::net_device, addr: *mut c_void) -> c_int {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        let mut a: MacAddr = [0; 6];
        // SAFETY: The stack passes a `struct sockaddr` (or the larger `sockaddr_storage`),
        // whose `sa_data` holds at least `ETH_ALEN` bytes.
        unsafe {
            let sa = addr.cast::<ksys::sockaddr>();
            ptr::copy_nonoverlapping((*sa).sa_data.as_ptr().cast::<u8>(), a.as_mut_ptr(), 6);
        }
        if !crate::is_valid_ether_addr(&a) {
            return -(ksys::EADDRNOTAVAIL as c_int);
        }
        from_result(|| T::set_mac_address(dev, data, &a).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `open`.
    unsafe extern "C" fn validate_addr(dev: *mut ksys::net_device) -> c_int {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        from_result(|| T::validate_addr(dev, data).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `open`.
    unsafe extern "C" fn change_mtu(dev: *mut ksys::net_device, new_mtu: c_int) -> c_int {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        from_result(|| {
            let mtu = u32::try_from(new_mtu).map_err(|_| EINVAL)?;
            T::change_mtu(dev, data, mtu).map(|()| 0)
        })
    }

    /// # Safety
    ///
    /// As for `open`.
    unsafe extern "C" fn tx_timeout(dev: *mut ksys::net_device, txqueue: c_uint) {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        T::tx_timeout(dev, data, txqueue);
    }

    /// # Safety
    ///
    /// As for `open`.
    unsafe extern "C" fn fix_features(
        dev: *mut ksys::net_device,
        features: ksys::netdev_features_t,
    ) -> ksys::netdev_features_t {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        T::fix_features(dev, data, Features::from_bits(features)).bits()
    }

    /// # Safety
    ///
    /// As for `open`.
    unsafe extern "C" fn set_features(
        dev: *mut ksys::net_device,
        features: ksys::netdev_features_t,
    ) -> c_int {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        from_result(|| T::set_features(dev, data, Features::from_bits(features)).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `open`; `config` is a valid configuration the call writes.
    unsafe extern "C" fn hwtstamp_get(
        dev: *mut ksys::net_device,
        config: *mut ksys::kernel_hwtstamp_config,
    ) -> c_int {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        from_result(|| {
            let c = T::hwtstamp_get(dev, data)?;
            // SAFETY: The stack passes a valid configuration only this call writes.
            c.write_to(unsafe { &mut *config });
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `open`; `config` is a valid configuration the call may change.
    unsafe extern "C" fn hwtstamp_set(
        dev: *mut ksys::net_device,
        config: *mut ksys::kernel_hwtstamp_config,
        _extack: *mut ksys::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        // SAFETY: The stack passes a valid configuration, the call's to read and change.
        let config = unsafe { &mut *config };
        from_result(|| {
            let mut c = HwTstampConfig::from_raw(config);
            T::hwtstamp_set(dev, data, &mut c)?;
            c.write_to(config);
            Ok(0)
        })
    }
}

impl<T: DeviceOps> OpsTable<T> {
    /// # Safety
    ///
    /// As for `open`; `bpf` is a valid command the stack owns for the call (its program, if
    /// any, referenced by the stack meanwhile).
    unsafe extern "C" fn bpf(dev: *mut ksys::net_device, bpf: *mut ksys::netdev_bpf) -> c_int {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        // SAFETY: The stack passes a valid command, read-only for the driver.
        let bpf = unsafe { &*bpf };
        if T::HAS_XDP_SETUP_XSK_POOL && bpf.command == ksys::bpf_netdev_command_XDP_SETUP_XSK_POOL {
            // SAFETY: `XDP_SETUP_XSK_POOL` uses the union's `xsk` member.
            let xsk = unsafe { bpf.__bindgen_anon_1.xsk.as_ref() };
            return from_result(|| Self::xsk_pool(dev, data, xsk.pool, xsk.queue_id).map(|()| 0));
        }
        if !T::HAS_XDP_SETUP_PROG || bpf.command != ksys::bpf_netdev_command_XDP_SETUP_PROG {
            // What mlx5e answers for the commands it does not implement.
            return -(ksys::EINVAL as c_int);
        }
        // SAFETY: `XDP_SETUP_PROG` uses the union's first member.
        let setup = unsafe { bpf.__bindgen_anon_1.__bindgen_anon_1.as_ref() };
        // SAFETY: NULL (detach) or a program the stack holds a reference to for the call.
        let prog = NonNull::new(setup.prog).map(|p| unsafe { BpfProg::get(p) });
        // SAFETY: NULL or the request's acknowledgement, which only the driver writes during
        // the call.
        let extack = unsafe { Extack::from_raw(setup.extack) };
        let setup = XdpSetup { prog, extack };
        from_result(|| T::xdp_setup_prog(dev, data, setup).map(|()| 0))
    }

    /// `XDP_SETUP_XSK_POOL`: the handle to the driver, then (for a pool taken back or
    /// refused) the wait for its last handle.
    fn xsk_pool(
        dev: &Device,
        data: DataRef<'_, T>,
        raw: *mut ksys::xsk_buff_pool,
        queue: u16,
    ) -> Result {
        let owner = Owner::of(dev);
        let Some(raw) = NonNull::new(raw) else {
            let r = T::xdp_setup_xsk_pool(dev, data, queue, None);
            // SAFETY: `ndo_bpf` runs with the RTNL held.
            unsafe { owner.xsk.release(queue) };
            return r;
        };
        // SAFETY: RTNL held; the stack keeps the pool until it calls `ndo_bpf` again for
        // `queue` without one (or frees it after a refusal, once this returns): `release` runs
        // before either.
        let pool = unsafe { owner.xsk.hand_over(raw, queue) }?;
        let r = T::xdp_setup_xsk_pool(dev, data, queue, Some(pool));
        if r.is_err() {
            // SAFETY: RTNL held.
            unsafe { owner.xsk.release(queue) };
        }
        r
    }

    /// # Safety
    ///
    /// As for `open`.
    unsafe extern "C" fn xsk_wakeup(dev: *mut ksys::net_device, queue: u32, flags: u32) -> c_int {
        // SAFETY: As in `open`.
        let (dev, data) = unsafe { args::<T::Data>(dev) };
        from_result(|| T::xsk_wakeup(dev, data, queue, flags).map(|()| 0))
    }
}

/// The device and driver data a callback of one of the device's tables receives (`D`: the
/// data type of its `Registration`, e.g. `T::Data` of a [`DeviceOps`] or an ethtool, DCB or
/// UDP tunnel table's `Data`).
///
/// # Safety
///
/// `dev` must be a device allocated by a `Registration` whose data type is `D`, in a
/// callback the stack makes while the device is registered (or being registered or
/// unregistered); the returned references must not outlive the callback.
pub(crate) unsafe fn args<'a, D: ForeignOwnable + 'a>(
    dev: *mut ksys::net_device,
) -> (&'a Device, D::Borrowed<'a>) {
    // SAFETY: The caller's guarantee: allocated by `Registration`, live for the callback.
    let dev = unsafe { Device::from_raw(dev) };
    // SAFETY: The data is dropped only after `unregister_netdev()` has returned, i.e. after
    // every callback.
    (dev, unsafe { data_of::<D>(dev) })
}
