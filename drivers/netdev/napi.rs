// SPDX-License-Identifier: GPL-2.0
//! NAPI (`struct napi_struct`): interrupt mitigation by polling. The interrupt handler
//! schedules the instance ([`Napi::schedule`]); the stack then calls its
//! [`NapiPoller::poll`] in softirq context with a budget; the poller processes up to that
//! many receive packets (and any number of TX completions) and, if it did less, completes
//! ([`NapiContext::complete_done`]) and re-arms the device's interrupt.

use core::{
    cell::UnsafeCell,
    marker::PhantomPinned,
    pin::Pin,
    ptr, //
};

use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
    types::Opaque,
};

use crate::{
    registration::Owner,
    skb::SkBuff,
    Device, //
};

/// The poll of a [`Napi`] instance, implemented by the driver (typically its channel: the
/// completion queues, the RX ring and its buffers).
pub trait NapiPoller: Send + 'static {
    /// Processes up to `budget` received packets (and TX completions, which do not count)
    /// and returns the number of packets processed. If that is less than `budget`, the poller
    /// calls [`NapiContext::complete_done`] and, if it returns `true`, re-arms the interrupt;
    /// if it is `budget`, the stack polls again. `budget` 0 (netpoll): only TX completions.
    ///
    /// Runs in softirq context (or the instance's thread), never concurrently with itself:
    /// hence `&mut self`.
    fn poll(&mut self, napi: &NapiContext, budget: i32) -> i32;
}

/// The NAPI instance being polled, as [`NapiPoller::poll`] sees it.
#[repr(transparent)]
pub struct NapiContext(Opaque<ksys::napi_struct>);

impl NapiContext {
    /// # Safety
    ///
    /// `raw` must be a NAPI instance being polled for `'a`.
    unsafe fn from_raw<'a>(raw: *mut ksys::napi_struct) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's.
        unsafe { &*raw.cast::<Self>() }
    }

    #[inline]
    pub(crate) fn as_raw(&self) -> *mut ksys::napi_struct {
        self.0.get()
    }

    /// The device of the instance.
    #[inline]
    pub fn device(&self) -> &Device {
        // SAFETY: A polled instance is on a device allocated by `Registration` (`Napi::new`
        // takes a `&Device`), which its `Napi` keeps allocated.
        unsafe { Device::from_raw((*self.as_raw()).dev) }
    }

    /// Hands a received packet to the stack through GRO (`napi_gro_receive()`).
    #[inline]
    pub fn gro_receive(&self, skb: SkBuff) {
        // SAFETY: We are in the instance's poll; the skb is given away.
        unsafe { ksys::napi_gro_receive(self.as_raw(), skb.into_raw()) };
    }

    /// Completes the poll after `work_done` (< budget) packets (`napi_complete_done()`):
    /// `true` if the instance is idle and the driver must re-arm the interrupt, `false` if it
    /// was rescheduled meanwhile (or busy-polled) and must not.
    #[inline]
    pub fn complete_done(&self, work_done: i32) -> bool {
        // SAFETY: We are in the instance's poll.
        unsafe { ksys::napi_complete_done(self.as_raw(), work_done) }
    }
}

/// A kind of queue a [`Napi`] instance serves (`enum netdev_queue_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    /// A receive queue.
    Rx = 0,
    /// A send queue.
    Tx = 1,
}

impl QueueKind {
    fn raw(self) -> ksys::netdev_queue_type {
        match self {
            QueueKind::Rx => ksys::netdev_queue_type_NETDEV_QUEUE_TYPE_RX,
            QueueKind::Tx => ksys::netdev_queue_type_NETDEV_QUEUE_TYPE_TX,
        }
    }
}

/// A NAPI instance added to a device (`netif_napi_add()`), with its poller.
///
/// Created disabled; [`Napi::enable`] lets it be scheduled. Dropping it disables it if needed
/// and deletes it (`netif_napi_del()`, which waits for an RCU grace period: process context).
/// It keeps the device allocated (not registered) while it exists, so it may outlive the
/// [`crate::Registration`] without touching freed memory, but it should be deleted with the
/// device's queues (in `stop`, or before dropping the registration).
///
/// The queues it serves may be linked to it ([`Napi::link_queue`]: the netdev netlink family
/// shows each queue's `napi-id`); dropping it unlinks them first, so no queue points to a
/// deleted instance.
///
/// # Invariants
///
/// `napi` was added to `owner`'s device with `Self::poll_fn` and is deleted in drop; it is
/// enabled iff `*enabled`; `links[k]` is the queue of kind `k` whose `napi` points to this
/// instance, an index below the device's allocated queues of that kind.
#[pin_data(PinnedDrop)]
pub struct Napi<P: NapiPoller> {
    owner: Arc<Owner>,
    poller: UnsafeCell<P>,
    #[pin]
    enabled: Mutex<bool>,
    #[pin]
    links: Mutex<[Option<u32>; 2]>,
    #[pin]
    napi: Opaque<ksys::napi_struct>,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: The poller is only used by `poll` (serialized by NAPI, any CPU: `P: Send`), through
// `Pin<&mut Self>` while the instance is disabled, and by `with_disabled` while it is disabled
// and the `enabled` mutex is held; the rest is the thread-safe C API and a mutex.
unsafe impl<P: NapiPoller> Send for Napi<P> {}

// SAFETY: As for `Send`: `&Napi` gives `&mut P` only to one `with_disabled` caller at a time
// (under the mutex) while no poll can run, on whatever thread holds it (`P: Send`).
unsafe impl<P: NapiPoller> Sync for Napi<P> {}

impl<P: NapiPoller> Napi<P> {
    /// Adds a NAPI instance to `dev` with `poller` (process context). Initialize it in place,
    /// e.g. with `KBox::pin_init(Napi::new(dev, poller), GFP_KERNEL)`.
    #[inline]
    pub fn new(dev: &Device, poller: P) -> impl PinInit<Self, Error> + '_ {
        Self::with_config(dev, poller, None)
    }

    /// As [`Napi::new`], the instance's persistent configuration being the device's slot
    /// `index` (`netif_napi_add_config()`): its NAPI ID, given at the first enable, stays the
    /// same across disable/enable and across instances of that index (a plain instance gets
    /// a new one at each enable), so a socket that took it (`SO_INCOMING_NAPI_ID`, an AF_XDP
    /// socket at bind) keeps busy-polling the right instance. An index past the device's
    /// queues gets a plain instance.
    #[inline]
    pub fn new_indexed(dev: &Device, poller: P, index: u32) -> impl PinInit<Self, Error> + '_ {
        let slots = dev.num_rx_queues().max(dev.num_tx_queues());
        Self::with_config(dev, poller, (index < slots).then_some(index))
    }

    #[inline]
    fn with_config(dev: &Device, poller: P, index: Option<u32>) -> impl PinInit<Self, Error> + '_ {
        try_pin_init!(Self {
            owner: Owner::of(dev),
            poller: UnsafeCell::new(poller),
            enabled <- new_mutex!(false),
            links <- new_mutex!([None; 2]),
            // Last, and infallible: once added, the instance must be deleted, which only
            // `drop` does.
            napi <- Opaque::ffi_init(|slot: *mut ksys::napi_struct| {
                // SAFETY: `slot` is the instance's final (pinned) place; it is zeroed as the
                // C API expects of a new instance (kzalloc'ed in C drivers), then added to the
                // live device, which `owner` keeps allocated until it is deleted. Polls
                // only start once it is enabled, i.e. after the whole `Napi` is initialized.
                // A config index is below the device's queue count, the size of its
                // `napi_config` array.
                unsafe {
                    core::ptr::write_bytes(slot, 0, 1);
                    match index {
                        Some(i) => ksys::netif_napi_add_config(
                            dev.as_raw(),
                            slot,
                            Some(Self::poll_fn),
                            i as i32,
                        ),
                        None => ksys::netif_napi_add(dev.as_raw(), slot, Some(Self::poll_fn)),
                    }
                }
            }),
            _pin: PhantomPinned,
        })
    }

    #[inline]
    fn as_raw(&self) -> *mut ksys::napi_struct {
        self.napi.get()
    }

    /// Ties the instance to interrupt `irq` (`netif_napi_set_irq()`; for IRQ affinity and
    /// the netdev netlink API), or unties it (`None`).
    #[inline]
    pub fn set_irq(&self, irq: Option<u32>) {
        let irq = irq.and_then(|i| i32::try_from(i).ok()).unwrap_or(-1);
        // SAFETY: The instance is added (type invariant).
        unsafe { ksys::netif_napi_set_irq(self.as_raw(), irq) };
    }

    /// Links queue `index` of `kind` to this instance (`netif_queue_set_napi()`), replacing
    /// the link of that kind it had (one queue per kind). `EINVAL` past the queues allocated
    /// (a queue past those in use may be linked before the count grows, as a channel opened
    /// for a larger channel count is).
    /// Process context with `rtnl_lock` held (in `open`, as the stack asserts), or before the
    /// device is registered.
    pub fn link_queue(&self, kind: QueueKind, index: u32) -> Result {
        let dev = self.device();
        let allocated = match kind {
            QueueKind::Rx => dev.num_rx_queues(),
            QueueKind::Tx => dev.num_tx_queues(),
        };
        if index >= allocated {
            return Err(EINVAL);
        }
        let mut links = self.links.lock();
        let slot = &mut links[kind as usize];
        if let Some(old) = slot.take() {
            // SAFETY: `old` was linked to this instance and is below the allocated queues
            // (type invariant); unlinking stores NULL.
            unsafe { ksys::netif_queue_set_napi(dev.as_raw(), old, kind.raw(), ptr::null_mut()) };
        }
        // SAFETY: `index` is below the queues allocated; the instance is added to this device
        // and stays so until `drop`, which unlinks the queue first (INVARIANT).
        unsafe { ksys::netif_queue_set_napi(dev.as_raw(), index, kind.raw(), self.as_raw()) };
        *slot = Some(index);
        Ok(())
    }

    /// Enables the instance (`napi_enable()`); a no-op if it is enabled. Process context.
    #[inline]
    pub fn enable(&self) {
        let mut enabled = self.enabled.lock();
        if !*enabled {
            // SAFETY: Added and disabled (type invariant, under the lock).
            unsafe { ksys::napi_enable(self.as_raw()) };
            *enabled = true;
        }
    }

    /// Disables the instance (`napi_disable()`), waiting for a poll in progress; a no-op if
    /// it is disabled. Process context; not from the instance's own poll.
    #[inline]
    pub fn disable(&self) {
        let mut enabled = self.enabled.lock();
        if *enabled {
            // SAFETY: Added and enabled (type invariant, under the lock).
            unsafe { ksys::napi_disable(self.as_raw()) };
            *enabled = false;
        }
    }

    /// Schedules a poll (`napi_schedule()`), from any context including hard IRQ; `false`
    /// if it was already scheduled or the instance is disabled.
    #[inline]
    pub fn schedule(&self) -> bool {
        // SAFETY: The instance is added (type invariant); scheduling a disabled instance is
        // a no-op (its SCHED bit is held).
        unsafe { ksys::napi_schedule(self.as_raw()) }
    }

    /// Runs `f` on the poller with the instance disabled (`napi_disable()`, which waits for
    /// a poll in progress), then enables it again if it was enabled; polls scheduled in the
    /// meantime are lost, so schedule one afterwards if work may be pending. Process context;
    /// `f` may sleep but must not enable or disable this instance (it would deadlock).
    #[inline]
    pub fn with_disabled<R>(&self, f: impl FnOnce(&mut P) -> R) -> R {
        let enabled = self.enabled.lock();
        if *enabled {
            // SAFETY: Added and enabled (type invariant, under the lock).
            unsafe { ksys::napi_disable(self.as_raw()) };
        }
        // SAFETY: The instance is disabled, so no poll runs or starts until it is enabled,
        // which needs the lock held here; the only other users of the poller need `&mut
        // self` (`poller_mut`) or this lock, so the reference is unique while `f` runs.
        let r = f(unsafe { &mut *self.poller.get() });
        if *enabled {
            // SAFETY: Added, and disabled above (under the lock).
            unsafe { ksys::napi_enable(self.as_raw()) };
        }
        r
    }

    /// The poller, while the instance is disabled (`None` if it is enabled: a poll could run).
    #[inline]
    pub fn poller_mut(self: Pin<&mut Self>) -> Option<&mut P> {
        let enabled = *self.enabled.lock();
        if enabled {
            return None;
        }
        // SAFETY: Disabled, and only `enable` (which needs `&self`, unavailable while this
        // `&mut` borrow lives) could start polls; `P` is not structurally pinned.
        Some(unsafe { &mut *self.get_unchecked_mut().poller.get() })
    }

    /// The device.
    #[inline]
    pub fn device(&self) -> &Device {
        self.owner.device()
    }

    /// `poll` of the instance.
    ///
    /// # Safety
    ///
    /// Only NAPI calls it, for an instance added by `new` (inside a `Napi<P>`), never
    /// concurrently for one instance.
    unsafe extern "C" fn poll_fn(napi: *mut ksys::napi_struct, budget: c_int) -> c_int {
        // SAFETY: `napi` is the `napi` field of a live `Napi<P>` (it is polled only while
        // added and enabled, i.e. before drop deletes it).
        let this = unsafe {
            &*kernel::container_of!(napi.cast::<Opaque<ksys::napi_struct>>(), Self, napi)
        };
        // SAFETY: NAPI serializes polls of one instance, and nothing else uses the poller
        // while it is enabled (`poller_mut`).
        let poller = unsafe { &mut *this.poller.get() };
        // SAFETY: The instance is being polled for the duration of this call.
        let ctx = unsafe { NapiContext::from_raw(napi) };
        poller.poll(ctx, budget)
    }
}

#[pinned_drop]
impl<P: NapiPoller> PinnedDrop for Napi<P> {
    fn drop(self: Pin<&mut Self>) {
        self.disable();
        let dev = self.device().as_raw();
        for (k, link) in self.links.lock().iter_mut().enumerate() {
            let kind = if k == 0 { QueueKind::Rx } else { QueueKind::Tx };
            if let Some(index) = link.take() {
                // SAFETY: `index` was linked to this instance and is below the allocated
                // queues (type invariant): the queue stops pointing to it before it goes.
                unsafe { ksys::netif_queue_set_napi(dev, index, kind.raw(), ptr::null_mut()) };
            }
        }
        // SAFETY: Added and now disabled (type invariant); the device is still allocated
        // (`owner` is dropped after this). Waits for RCU readers, after which nothing uses
        // the instance.
        unsafe { ksys::netif_napi_del(self.as_raw()) };
    }
}
