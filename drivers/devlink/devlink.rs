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
//!
//! # Lifetimes
//!
//! The [`Devlink`] owns every reporter created on it: dropping it destroys them (waiting for
//! callbacks in progress), then unregisters and frees the instance. The driver's callback data
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
//! instance lock (`devl_lock`); `recover` and `diagnose` run under it. `report` takes it
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
    device::{
        self,
        Bound, //
    },
    prelude::*,
    sync::Arc,
};

pub mod fmsg;
pub mod health;

pub use fmsg::Fmsg;

/// The instance's operations: none yet (reload, info, params and ports are not wrapped), so
/// devlink gets an all-zero table.
static OPS: ksys::devlink_ops = pin_init::zeroed();

/// The devlink instance of a bound device (`pci/0000:01:00.0` in `devlink dev show`).
///
/// Registered by [`Devlink::new`]; dropping it destroys its health reporters, then
/// unregisters and frees it.
///
/// # Invariants
///
/// `raw` was returned by `devlink_alloc()` and is registered; every reporter created on it is
/// in `reporters` until it is destroyed in `drop`.
pub struct Devlink<'a> {
    raw: NonNull<ksys::devlink>,
    reporters: KVec<Arc<dyn health::Revoke>>,
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
        // SAFETY: `OPS` is a valid, static (all-zero, so operation-less) table; `dev` is a live
        // device whose driver is bound, so `dev->driver` is set as `devlink_alloc()` requires.
        // No private area is asked for.
        let raw = unsafe { ksys::devlink_alloc(&OPS, 0, dev) };
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // SAFETY: `raw` was just allocated and is not registered yet.
        unsafe { ksys::devlink_register(raw.as_ptr()) };
        // INVARIANT: allocated and registered, no reporters yet.
        Ok(Self {
            raw,
            reporters: KVec::new(),
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
        unsafe {
            ksys::devlink_unregister(self.raw.as_ptr());
            ksys::devlink_free(self.raw.as_ptr());
        }
    }
}
