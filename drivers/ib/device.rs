// SPDX-License-Identifier: GPL-2.0
//! [`Registration`]: allocating, registering and freeing an `ib_device` with the driver data
//! in the same allocation; [`Device`]: the device as the ops see it.

use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

use kernel::{
    device::{
        self,
        Bound, //
    },
    error::to_result,
    prelude::*,
    types::Opaque,
    ThisModule,
};

use crate::{
    driver::IbDriver,
    ops::OpsTable, //
};

/// The allocation `_ib_alloc_device()` makes for a driver: the `ib_device` at offset 0 (the
/// core's `ib_alloc_device(drv_struct, member)` requirement) in the head that
/// drivers/ksys/uapi.c finds the driver's handlers in (`ksys_ib_dev_head`), the driver data
/// behind it.
#[repr(C)]
struct Container<T: IbDriver> {
    head: ksys::ksys_ib_dev_head,
    data: T::Data,
}

/// An RDMA device of a driver, as its ops see it.
///
/// # Invariants
///
/// Wraps the `Container<T>` of a device allocated by `Registration<T>`, whose driver data is
/// initialised (from `Registration::new` until the registration's drop, after
/// unregistration).
#[repr(transparent)]
pub struct Device<T: IbDriver>(Opaque<Container<T>>, PhantomData<T>);

impl<T: IbDriver> Device<T> {
    /// # Safety
    ///
    /// `ptr` must be a device allocated by `Registration<T>` whose data is alive for `'a`
    /// (an op of its table, or the registration itself).
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut ksys::ib_device) -> &'a Self {
        // SAFETY: The `ib_device` is the first field of the container, so `ptr` is the
        // container's address; `Device` is transparent over it.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C device.
    pub(crate) fn as_raw(&self) -> *mut ksys::ib_device {
        self.0.get().cast()
    }

    /// The driver data.
    pub fn data(&self) -> &T::Data {
        // SAFETY: Initialised and alive while `self` is reachable (type invariant); only
        // shared references to it are made.
        unsafe { &(*self.0.get()).data }
    }

    /// The device's name (`cx4_0`...), once registered.
    pub fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array the core fills at registration (zeroed
        // before); it changes only on rename, which the ops do not race with here.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// The Ethernet link's IB speed and width for `port` (`ib_get_eth_speed()`, from the
    /// port's netdev's ethtool link settings).
    pub fn eth_speed(&self, port: u32) -> Result<(u16, u8)> {
        let (mut speed, mut width) = (0u16, 0u8);
        // SAFETY: A live device; the outputs are writable.
        to_result(unsafe { ksys::ib_get_eth_speed(self.as_raw(), port, &mut speed, &mut width) })?;
        Ok((speed, width))
    }
}

/// An RDMA device of a driver: allocated by [`Registration::new`], registered by
/// [`Registration::register`]; dropping it unregisters it (every user context and object is
/// destroyed first by the core, and no op runs any more), drops the driver data and frees it.
///
/// # Invariants
///
/// `raw` is a `Container<T>` allocated by `_ib_alloc_device()` with initialised data and
/// `OpsTable<T>`'s ops; it is registered iff `registered`.
pub struct Registration<T: IbDriver> {
    raw: NonNull<Container<T>>,
    registered: bool,
}

// SAFETY: The device may be registered, unregistered and freed from any thread (process
// context); `T::Data` is `Send + Sync`.
unsafe impl<T: IbDriver> Send for Registration<T> {}

// SAFETY: `&Registration` gives `&Device<T>`, which only reads `Sync` data.
unsafe impl<T: IbDriver> Sync for Registration<T> {}

impl<T: IbDriver> Registration<T> {
    /// Allocates a one-port channel adapter (`RDMA_NODE_IB_CA`), child of `parent`, with
    /// `T`'s ops (owned by `module`) and `data`; `node_guid` in host order,
    /// `comp_vectors` (at least 1) completion vectors. Not registered yet: bind the port's
    /// netdev first ([`Registration::set_netdev`]).
    pub fn new(
        parent: &device::Device<Bound>,
        module: &'static ThisModule,
        node_guid: u64,
        comp_vectors: u32,
        data: T::Data,
    ) -> Result<Self> {
        // The initial network namespace (a static, alive forever).
        let net = &raw mut ksys::init_net;
        // SAFETY: No other preconditions; the core zeroes the allocation past its own
        // initialisation of the `ib_device`.
        let raw = unsafe { ksys::_ib_alloc_device(size_of::<Container<T>>(), net) };
        let raw = NonNull::new(raw.cast::<Container<T>>()).ok_or(ENOMEM)?;
        let ib = raw.as_ptr().cast::<ksys::ib_device>();
        let ops = OpsTable::<T>::build(module);
        // CAST: `device::Device` wraps `bindings::device` transparently.
        let parent = core::ptr::from_ref(parent)
            .cast::<ksys::device>()
            .cast_mut();
        // SAFETY: Just allocated and not registered: nothing else uses it. The data field
        // lies within the allocation (`Container<T>`'s size was requested). `ops` is copied.
        // `parent` is a live device; the device core takes a reference when registering.
        unsafe {
            core::ptr::addr_of_mut!((*raw.as_ptr()).data).write(data);
            if T::HAS_ALLOC_UAR {
                // The driver's uverbs objects (static definitions) and the handler they call.
                (*ib).driver_def = ksys::mlx5_uar_defs();
                (*raw.as_ptr()).head.uar_alloc = Some(OpsTable::<T>::uar_alloc);
            }
            ksys::ib_set_device_ops(ib, &ops);
            (*ib).node_type = ksys::KSYS_CONST_RDMA_NODE_IB_CA as u8;
            (*ib).phys_port_cnt = 1;
            (*ib).num_comp_vectors = comp_vectors.max(1).try_into().unwrap_or(1);
            (*ib).node_guid = node_guid.to_be();
            (*ib).__bindgen_anon_1.dev.as_mut().parent = parent;
        }
        // INVARIANT: allocated with initialised data and `T`'s ops, not registered.
        Ok(Self {
            raw,
            registered: false,
        })
    }

    /// The device.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: Allocated by `Self::new`, data alive while `self` is (type invariant).
        unsafe { Device::from_raw(self.raw.as_ptr().cast()) }
    }

    /// Binds `port` to the Ethernet device `ndev` (`ib_device_set_netdev()`): the RoCE GID
    /// table follows its addresses and the core reports it in `rdma link`. The core holds a
    /// reference to `ndev` until unregistration; the netdev must stay registered until this
    /// registration is dropped (drop the RDMA device first).
    pub fn set_netdev(&mut self, port: u32, ndev: &netdev::Device) -> Result {
        // SAFETY: A live device and a live netdev; the core takes its own reference.
        to_result(unsafe {
            ksys::ib_device_set_netdev(self.device().as_raw(), ndev.as_raw(), port)
        })
    }

    /// Registers the device as `name` (a `%d` pattern, as `cx4_%d`), doing DMA for it through
    /// `dma_device`. From now on the core and user space call the ops.
    pub fn register(&mut self, name: &CStr, dma_device: &device::Device<Bound>) -> Result {
        if self.registered {
            return Err(EBUSY);
        }
        // CAST: as in `new`.
        let dma = core::ptr::from_ref(dma_device)
            .cast::<ksys::device>()
            .cast_mut();
        // SAFETY: Fully set up and not registered; `dma` is bound (it has DMA parameters)
        // and outlives the registration (the driver drops it before unbinding).
        to_result(unsafe {
            ksys::ib_register_device(self.device().as_raw(), name.as_char_ptr(), dma)
        })?;
        self.registered = true;
        Ok(())
    }
}

impl<T: IbDriver> Drop for Registration<T> {
    fn drop(&mut self) {
        let ib = self.device().as_raw();
        if self.registered {
            // SAFETY: Registered (type invariant). When it returns, every client is removed,
            // every user context and object destroyed and no op runs or will run.
            unsafe { ksys::ib_unregister_device(ib) };
        }
        // SAFETY: No op uses the data any more (unregistered or never registered); it was
        // initialised in `new` and is dropped once. Then the last reference of ours goes
        // (`ib_dealloc_device()`; `ops.dealloc_driver` is not set, so it only frees).
        unsafe {
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*self.raw.as_ptr()).data));
            ksys::ib_dealloc_device(ib);
        }
    }
}
