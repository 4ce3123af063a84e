// SPDX-License-Identifier: GPL-2.0
//! Health reporters (`devlink health`): a driver reports errors of one kind to a reporter;
//! devlink counts them, keeps the reporter's state (healthy / error), and recovers through the
//! reporter's `recover` operation, automatically after a report (its `auto_recover`
//! setting, on by default) or when user space asks (`devlink health recover`). `devlink health
//! diagnose` asks the reporter for its current state.
//!
//! The driver implements [`Operations`] on its data; [`crate::Devlink::health_reporter`]
//! creates the reporter, which holds that data (an `Arc`) until it is destroyed with its
//! instance; [`Reporter`] is a handle used to report (clonable, revocable: see the crate
//! documentation for lifetimes and locking).

use core::{
    marker::PhantomData,
    ptr::{
        self,
        NonNull, //
    },
};

use kernel::{
    build_error,
    error::{
        to_result,
        VTABLE_DEFAULT_ERROR, //
    },
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
};

use crate::Fmsg;

/// A health reporter's operations, implemented by the driver.
///
/// Both callbacks run in process context (they may sleep) with the devlink instance lock held.
#[vtable]
pub trait Operations: Send + Sync + Sized + 'static {
    /// The reporter's name, unique in its instance (`devlink health show DEV reporter NAME`).
    const NAME: &'static CStr;

    /// The least time between two automatic recoveries in ms (0: none); within it, devlink
    /// does not recover automatically after a report. User space can change it.
    const GRACEFUL_PERIOD_MS: u64 = 0;

    /// What [`Reporter::report`] hands to [`Operations::recover`] about the error reported.
    type Context;

    /// Recovers from the reported error: `error` is the report's context when devlink
    /// recovers right after [`Reporter::report`] (auto-recover), `None` when user space asked
    /// (`devlink health recover`), in which case a full recovery is expected. `Ok` counts a
    /// recovery and marks the reporter healthy; an error leaves it in the error state.
    fn recover(&self, _error: Option<&Self::Context>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Describes the current state (`devlink health diagnose`) as name/value pairs.
    fn diagnose(&self, _fmsg: &mut Fmsg<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// The C operations table of `T` and its callbacks.
struct OpsTable<T>(PhantomData<T>);

impl<T: Operations> OpsTable<T> {
    const OPS: ksys::devlink_health_reporter_ops = ksys::devlink_health_reporter_ops {
        // The C field is `char *` but devlink only reads it.
        name: kernel::str::as_char_ptr_in_const_context(T::NAME).cast_mut(),
        recover: if T::HAS_RECOVER {
            Some(Self::recover)
        } else {
            None
        },
        dump: None,
        diagnose: if T::HAS_DIAGNOSE {
            Some(Self::diagnose)
        } else {
            None
        },
        test: None,
        default_graceful_period: T::GRACEFUL_PERIOD_MS,
        default_burst_period: 0,
    };

    /// The table, for as long as the module is loaded (`OPS` is promoted to a static).
    const fn get() -> &'static ksys::devlink_health_reporter_ops {
        &Self::OPS
    }

    /// The driver's data of a reporter created by [`Reporter::create`] for `T`.
    ///
    /// # Safety
    ///
    /// `reporter` must be a reporter created by [`Reporter::create`] with this table that is
    /// not destroyed yet, and stay so while the returned reference is used.
    unsafe fn data<'a>(reporter: *mut ksys::devlink_health_reporter) -> &'a T {
        // SAFETY: `reporter` is a live reporter (the caller's guarantee).
        let data = unsafe { ksys::devlink_health_reporter_priv(reporter) };
        // SAFETY: Its private pointer is the data pointer of an `Arc<T>` that the reporter's
        // slot holds until after the reporter is destroyed (`Slot::revoke`).
        unsafe { &*data.cast::<T>() }
    }

    /// `recover`: devlink calls it with the instance lock held, from `devlink_health_report()`
    /// (with the context passed to [`Reporter::report`]) or for user space (context NULL).
    ///
    /// # Safety
    ///
    /// Only devlink calls it, through [`Self::OPS`], for a live reporter created by
    /// [`Reporter::create`] for `T`, with a NULL context or the one [`Reporter::report`]
    /// passed.
    unsafe extern "C" fn recover(
        reporter: *mut ksys::devlink_health_reporter,
        priv_ctx: *mut c_void,
        _extack: *mut ksys::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: devlink calls the operations of a reporter only while it exists: under the
        // instance lock, which its destruction takes, or within `Reporter::report`, which
        // holds the slot lock that its destruction takes.
        let data = unsafe { Self::data(reporter) };
        let error = if priv_ctx.is_null() {
            None
        } else {
            // SAFETY: A non-NULL context comes from `Reporter::report`, which passes a
            // `&T::Context` valid for the whole `devlink_health_report()` call this runs in.
            Some(unsafe { &*priv_ctx.cast::<T::Context>() })
        };
        match data.recover(error) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// `diagnose`: devlink calls it with the instance lock held, with a message it sends to
    /// user space afterwards.
    ///
    /// # Safety
    ///
    /// Only devlink calls it, through [`Self::OPS`], for a live reporter created by
    /// [`Reporter::create`] for `T`, with a valid message.
    unsafe extern "C" fn diagnose(
        reporter: *mut ksys::devlink_health_reporter,
        fmsg: *mut ksys::devlink_fmsg,
        _extack: *mut ksys::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: As in `recover`.
        let data = unsafe { Self::data(reporter) };
        // SAFETY: devlink passes a valid message that only this call fills, for its duration.
        let mut fmsg = unsafe { Fmsg::from_raw(fmsg) };
        match data.diagnose(&mut fmsg) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }
}

/// A created reporter and the data its callbacks use.
struct Live<T> {
    raw: NonNull<ksys::devlink_health_reporter>,
    /// Keeps the callbacks' data alive until the reporter is destroyed.
    _data: Arc<T>,
}

// SAFETY: The reporter may be used and destroyed from any thread (devlink locks it); `T` is
// `Send + Sync` (`Operations`' bounds).
unsafe impl<T: Operations> Send for Live<T> {}

/// What the [`crate::Devlink`] and the [`Reporter`] handles share: the reporter while it
/// exists.
///
/// # Invariants
///
/// While `live` is `Some`, its `raw` is a reporter created on the instance `devlink` with
/// `OpsTable::<T>::OPS` and its data, and `devlink` is registered.
#[pin_data]
pub(crate) struct Slot<T: Operations> {
    devlink: NonNull<ksys::devlink>,
    #[pin]
    live: Mutex<Option<Live<T>>>,
}

// SAFETY: `devlink` is only used while the reporter is live, through the thread-safe C API;
// `live` is behind a mutex and `Live<T>` is `Send`.
unsafe impl<T: Operations> Send for Slot<T> {}

// SAFETY: As for `Send`: every access to the reporter goes through the mutex.
unsafe impl<T: Operations> Sync for Slot<T> {}

/// Destroys a reporter, whatever its operations type (what [`crate::Devlink`] keeps).
pub(crate) trait Revoke: Send + Sync {
    /// Destroys the reporter if it still exists, waiting for its callbacks and reports in
    /// progress; later reports are refused. Must not be called with the instance lock held.
    fn revoke(&self);
}

impl<T: Operations> Revoke for Slot<T> {
    fn revoke(&self) {
        let mut live = self.live.lock();
        if let Some(l) = live.take() {
            // SAFETY: By the type invariant, `l.raw` is a live reporter; nothing can report on
            // it (that needs the lock we hold) and `devlink_health_reporter_destroy()` takes
            // the instance lock, so no callback runs on it once this returns.
            unsafe { ksys::devlink_health_reporter_destroy(l.raw.as_ptr()) };
            // Only now is the callbacks' data released (`l` dropped here).
        }
    }
}

/// A handle to a health reporter, for reporting errors (clone it into the contexts that
/// notice them).
///
/// The reporter itself belongs to the [`crate::Devlink`] it was created on; once that is
/// dropped, the handle's methods return `ENODEV`.
pub struct Reporter<T: Operations> {
    slot: Arc<Slot<T>>,
}

impl<T: Operations> Clone for Reporter<T> {
    fn clone(&self) -> Self {
        Self {
            slot: self.slot.clone(),
        }
    }
}

impl<T: Operations> Reporter<T> {
    /// Creates the reporter `T::NAME` on `devlink` with `data` for its callbacks.
    ///
    /// # Safety
    ///
    /// `devlink` must be a registered instance that stays registered until the returned
    /// reporter's slot is revoked ([`Revoke::revoke`]), which the caller must do before
    /// unregistering it.
    pub(crate) unsafe fn create(devlink: NonNull<ksys::devlink>, data: Arc<T>) -> Result<Self> {
        let slot = Arc::pin_init(
            pin_init!(Slot {
                devlink,
                live <- new_mutex!(None),
            }),
            GFP_KERNEL,
        )?;
        let mut live = slot.live.lock();
        // SAFETY: `devlink` is registered (the caller's guarantee); the table is static and
        // matches `T`; the private pointer is the data of `data`, which the slot keeps until
        // the reporter is destroyed. The function takes the instance lock itself.
        let raw = unsafe {
            ksys::devlink_health_reporter_create(
                devlink.as_ptr(),
                OpsTable::<T>::get(),
                Arc::as_ptr(&data).cast::<c_void>().cast_mut(),
            )
        };
        let raw = kernel::error::from_err_ptr(raw)?;
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // INVARIANT: `raw` was created on `devlink` with `T`'s table and `data`.
        *live = Some(Live { raw, _data: data });
        drop(live);
        Ok(Self { slot })
    }

    /// The slot, for the instance to destroy the reporter with.
    pub(crate) fn slot(&self) -> Arc<Slot<T>> {
        self.slot.clone()
    }

    /// Reports an error (`devlink_health_report()`): counts it, puts the reporter in the
    /// error state and, if devlink recovers automatically, calls [`Operations::recover`] with
    /// `error` before returning that result. `ECANCELED`: devlink did not recover (the
    /// previous error was not recovered, or within the graceful period); `ENODEV`: the
    /// reporter was destroyed.
    ///
    /// Must not be called with the devlink instance lock held (from this instance's
    /// callbacks) nor with a lock that [`Operations::recover`] takes.
    pub fn report(&self, msg: &CStr, error: &T::Context) -> Result {
        let live = self.slot.live.lock();
        let l = live.as_ref().ok_or(ENODEV)?;
        // SAFETY: By the slot's type invariant `l.raw` is a live reporter, and it stays live
        // while we hold the lock; `msg` is NUL-terminated; `error` is valid for the whole
        // call, the only time devlink uses it (it passes it to `recover` only from here).
        to_result(unsafe {
            ksys::devlink_health_report(
                l.raw.as_ptr(),
                msg.as_char_ptr(),
                ptr::from_ref(error).cast::<c_void>().cast_mut(),
            )
        })
    }

    /// Tells devlink that the driver recovered from the reported error by itself (not in
    /// [`Operations::recover`]): counts a recovery and marks the reporter healthy
    /// (`devlink_health_reporter_recovery_done()` and `_state_update()`). Same calling rules
    /// as [`Reporter::report`].
    pub fn recovered(&self) -> Result {
        let live = self.slot.live.lock();
        let l = live.as_ref().ok_or(ENODEV)?;
        let devlink = self.slot.devlink.as_ptr();
        // SAFETY: While the reporter is live its instance is registered (type invariant),
        // so the lock is valid. (A caller already holding it would deadlock, which the
        // calling rules forbid.) It orders the counter update against user-space requests
        // and devlink's own recoveries.
        unsafe { ksys::devl_lock(devlink) };
        // SAFETY: `l.raw` is live (we hold the slot lock) and the instance lock is held.
        unsafe {
            ksys::devlink_health_reporter_recovery_done(l.raw.as_ptr());
            ksys::devlink_health_reporter_state_update(
                l.raw.as_ptr(),
                ksys::devlink_health_reporter_state_DEVLINK_HEALTH_REPORTER_STATE_HEALTHY,
            );
        }
        // SAFETY: Taken above.
        unsafe { ksys::devl_unlock(devlink) };
        Ok(())
    }
}
