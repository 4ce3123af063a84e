// SPDX-License-Identifier: GPL-2.0
//! Devlink (`include/net/devlink.h`): device-level management of a driver's device, as
//! `devlink dev` and `devlink health` show it. A safe abstraction written as a
//! `kernel::devlink` module could be proposed upstream; the 7.2 `kernel` crate has none.
//!
//! - [`Devlink`]: the devlink instance of a bound device (`devlink_alloc()` +
//!   `devlink_register()`, reversed on drop). It can only be created from a
//!   `&Device<Bound>` and borrows it, so it cannot outlive the binding it belongs to.
//! - [`health::Reporter`]: a health reporter of that instance, created with
//!   [`Devlink::health_reporter`]; its `recover` and `diagnose` callbacks reach the driver's
//!   [`health::Operations`] implementation. [`health::Reporter::report`] reports an error.
//! - [`Fmsg`]: the formatted message a `diagnose` callback fills.
//! - [`Operations`]: the instance's own operations, implemented by the driver on data given
//!   to [`Devlink::with_ops`]; so far `info_get` (`devlink dev info`), which fills an
//!   [`InfoRequest`].
//!
//! # Lifetimes
//!
//! The [`Devlink`] owns every reporter created on it: dropping it destroys them (waiting for
//! callbacks in progress), then unregisters and frees the instance, and only then releases the
//! data of its [`Operations`] (devlink calls them only while the instance is registered, under
//! its lock, which unregistering takes). The driver's callback data
//! is an `Arc<T>` the reporter holds until it is destroyed, so a callback never sees freed
//! data. [`health::Reporter`] handles may be cloned into work items and interrupt threads and
//! outlive the instance: once the reporter is destroyed, reporting through a handle is a
//! no-op returning `ENODEV`, never a use of a freed reporter. A driver therefore cannot report
//! into, or be called back from, a device it no longer drives, whatever order its teardown
//! takes.
//!
//! # Locking
//!
//! devlink serializes user-space requests and reporter creation/destruction on the
//! instance lock (`devl_lock`); `recover`, `diagnose` and [`Operations::info_get`] run under
//! it. `report` takes it
//! itself and may run `recover` synchronously (devlink's auto-recover), so neither
//! [`health::Reporter::report`] nor [`health::Reporter::recovered`] may be called with the
//! instance lock held, i.e. from this instance's callbacks, nor with a driver lock that
//! `recover` takes. Each reporter has a mutex that orders reports against its destruction:
//! reporter mutex, then instance lock, then the driver's locks.
//!
//! # Why a crate of its own
//!
//! An abstraction crate (`devlink`) over a raw-bindings crate (`ksys`) is the shape the
//! kernel has (`kernel` over `bindings`) and keeps the `unsafe` in one reviewable place with
//! a safe API in front: the driver crate is given this crate as a dependency, not `ksys`, so
//! it does not call the C API around the abstraction. It mirrors what an upstream
//! `rust/kernel/net/devlink.rs` would be, so the move is mechanical; the next abstractions
//! (netdev, NAPI, skb, ib_core, dmaengine) are crates of their own over the same `ksys`.

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
    error::VTABLE_DEFAULT_ERROR,
    prelude::*,
    sync::Arc,
};

pub mod fmsg;
pub mod health;
pub mod info;

pub use fmsg::{
    Fmsg,
    FmsgArray, //
};
pub use info::InfoRequest;

/// The operations of an instance made by [`Devlink::new`]: none, devlink gets an all-zero
/// table.
static NO_OPS: ksys::devlink_ops = pin_init::zeroed();

/// The instance's operations (`struct devlink_ops`), implemented by the driver on the data it
/// gives [`Devlink::with_ops`]. Only `info_get` is wrapped (reload, params, ports, flash are
/// not).
///
/// The callbacks run in process context (they may sleep) with the instance lock held: they
/// must not report to this instance's health reporters ([`health::Reporter::report`]) nor
/// wait for something that does.
#[vtable]
pub trait Operations: Send + Sync + Sized + 'static {
    /// Adds the device's serial numbers and versions to `devlink dev info` (the driver's name
    /// is added by devlink itself).
    fn info_get(&self, _req: &mut InfoRequest<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// The C operations table of `T` and its callbacks.
struct OpsTable<T>(PhantomData<T>);

impl<T: Operations> OpsTable<T> {
    const OPS: ksys::devlink_ops = ksys::devlink_ops {
        info_get: if T::HAS_INFO_GET {
            Some(Self::info_get)
        } else {
            None
        },
        ..pin_init::zeroed()
    };

    /// The table, for as long as the module is loaded (`OPS` is promoted to a static).
    const fn get() -> &'static ksys::devlink_ops {
        &Self::OPS
    }

    /// `info_get`: devlink calls it with the instance lock held, while the instance is
    /// registered.
    ///
    /// # Safety
    ///
    /// Only devlink calls it, through [`Self::OPS`], for an instance made by
    /// [`Devlink::with_ops`] for `T` that is registered, with a valid request.
    unsafe extern "C" fn info_get(
        devlink: *mut ksys::devlink,
        req: *mut ksys::devlink_info_req,
        _extack: *mut ksys::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: `devlink` is a live instance made by `with_ops` for `T` (the caller's
        // guarantee), whose private area holds the data pointer of an `Arc<T>` that the
        // `Devlink` keeps until after it unregisters and frees the instance; devlink calls
        // ops only on registered instances, so the `Arc` is alive for this call.
        let data = unsafe { &**ksys::devlink_priv(devlink).cast::<*const T>() };
        // SAFETY: devlink passes a valid request that only this call fills, for its duration.
        let mut req = unsafe { InfoRequest::from_raw(req) };
        match data.info_get(&mut req) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }
}

/// The devlink instance of a bound device (`pci/0000:01:00.0` in `devlink dev show`).
///
/// Registered by [`Devlink::new`]; dropping it destroys its health reporters, then
/// unregisters and frees it.
///
/// # Invariants
///
/// `raw` was returned by `devlink_alloc()` and is registered; every reporter created on it is
/// in `reporters` until it is destroyed in `drop`. If its ops are `OpsTable::<T>::OPS`, its
/// private area holds `Arc::as_ptr` of the `Arc<T>` in `_ops_data`.
pub struct Devlink<'a> {
    raw: NonNull<ksys::devlink>,
    reporters: KVec<Arc<dyn health::Revoke>>,
    /// The data of the instance's [`Operations`], released after the instance is freed.
    _ops_data: Option<Arc<dyn Send + Sync>>,
    _dev: PhantomData<&'a device::Device<Bound>>,
}

// SAFETY: The devlink C API may be used from any thread; it serializes on the instance lock.
unsafe impl Send for Devlink<'_> {}

// SAFETY: `&Devlink` gives no access to anything but the thread-safe C API.
unsafe impl Sync for Devlink<'_> {}

impl<'a> Devlink<'a> {
    /// Allocates and registers the devlink instance of `dev`, a device the caller's driver is
    /// bound to (e.g. from probe).
    pub fn new(dev: &'a device::Device<Bound>) -> Result<Self> {
        // CAST: `device::Device` is a transparent wrapper of `Opaque<bindings::device>`, which
        // is transparent over the C struct; `ksys::device` is `bindings::device`.
        let dev = ptr::from_ref(dev).cast::<ksys::device>().cast_mut();
        // SAFETY: `NO_OPS` is a valid, static (all-zero, so operation-less) table; `dev` is a
        // live device whose driver is bound, so `dev->driver` is set as `devlink_alloc()`
        // requires. No private area is asked for.
        let raw = unsafe { ksys::devlink_alloc(&NO_OPS, 0, dev) };
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // SAFETY: `raw` was just allocated and is not registered yet.
        unsafe { ksys::devlink_register(raw.as_ptr()) };
        // INVARIANT: allocated and registered with no ops, no reporters yet.
        Ok(Self {
            raw,
            reporters: KVec::new(),
            _ops_data: None,
            _dev: PhantomData,
        })
    }

    /// Like [`Devlink::new`], with the instance's operations `T` implemented on `data`, which
    /// the instance keeps until it is dropped (unregistered and freed).
    pub fn with_ops<T: Operations>(dev: &'a device::Device<Bound>, data: Arc<T>) -> Result<Self> {
        // CAST: As in `new`.
        let dev = ptr::from_ref(dev).cast::<ksys::device>().cast_mut();
        // SAFETY: The table is static and matches `T`; `dev` is bound as in `new`. The private
        // area holds one pointer, written below before the instance is registered (devlink
        // calls no op before that).
        let raw = unsafe {
            ksys::devlink_alloc(
                OpsTable::<T>::get(),
                core::mem::size_of::<*const T>(),
                dev,
            )
        };
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // SAFETY: `raw` is allocated with a private area of one (suitably aligned: devlink
        // aligns it to `NETDEV_ALIGN`) pointer, which nothing else uses.
        unsafe {
            ksys::devlink_priv(raw.as_ptr())
                .cast::<*const T>()
                .write(Arc::as_ptr(&data))
        };
        // SAFETY: `raw` was just allocated and is not registered yet.
        unsafe { ksys::devlink_register(raw.as_ptr()) };
        // INVARIANT: allocated and registered with `T`'s table, its private area pointing to
        // `data`'s `T`, which `_ops_data` keeps; no reporters yet.
        Ok(Self {
            raw,
            reporters: KVec::new(),
            _ops_data: Some(data),
            _dev: PhantomData,
        })
    }

    /// Creates the health reporter `T::NAME` on this instance, whose callbacks reach `data`.
    ///
    /// The reporter holds `data` until it is destroyed, when `self` is dropped.
    pub fn health_reporter<T: health::Operations>(
        &mut self,
        data: Arc<T>,
    ) -> Result<health::Reporter<T>> {
        // Reserved first: once the C reporter exists, keeping track of it cannot fail.
        self.reporters.reserve(1, GFP_KERNEL)?;
        // SAFETY: By the type invariant, `self.raw` is a registered instance that stays alive
        // (and registered) until `self` is dropped, which destroys the reporter first.
        let reporter = unsafe { health::Reporter::create(self.raw, data)? };
        let revoke: Arc<dyn health::Revoke> = reporter.slot();
        // Cannot fail: capacity reserved above.
        let _ = self.reporters.push_within_capacity(revoke);
        Ok(reporter)
    }
}

impl Drop for Devlink<'_> {
    fn drop(&mut self) {
        for r in self.reporters.iter() {
            r.revoke();
        }
        self.reporters.clear();
        // SAFETY: By the type invariant, `self.raw` is allocated and registered, and every
        // reporter created on it was destroyed just above; nothing uses it after this.
        // Unregistering takes the instance lock, so an op in progress finishes first and none
        // starts afterwards.
        unsafe {
            ksys::devlink_unregister(self.raw.as_ptr());
            ksys::devlink_free(self.raw.as_ptr());
        }
        // `_ops_data` is released after this, once no op can use it.
    }
}
