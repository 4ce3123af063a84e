// SPDX-License-Identifier: GPL-2.0
//! PTP hardware clocks (`include/linux/ptp_clock_kernel.h`, the PTP core's `ptp_clock.c`): a
//! driver's clock registered as `/dev/ptpN`, which `clock_gettime`/`clock_adjtime` on its
//! posix clock, `phc_ctl`, `ptp4l` and `phc2sys` read, set and steer. The 7.2 `kernel` crate
//! has no binding for it; this crate is written as a `kernel::ptp` module could be proposed.
//!
//! - [`Registration`]: a `struct ptp_clock_info` filled from a driver's [`ClockOps`],
//!   registered with `ptp_clock_register()` under the driver's device; dropping it
//!   unregisters the clock. [`Registration::index`] is the `N` of `/dev/ptpN`, what a netdev
//!   reports as its `phc_index` (`ethtool -T`).
//! - [`ClockOps`]: the clock's operations, on the driver's data (`adjfine`, `adjtime`,
//!   `gettimex64`, `settime64`, the optional auxiliary work `do_aux_work`).
//! - [`SystemTimestamps`]: the system time snapshots `gettimex64` takes around its device
//!   read (`ptp_read_system_prets()`/`ptp_read_system_postts()`), which give `phc2sys` and
//!   `PTP_SYS_OFFSET_EXTENDED` their precision.
//! - [`timecounter`]: the `cyclecounter`/`timecounter` arithmetic in Rust, for clocks kept in
//!   software over a free-running counter.
//!
//! Not bound yet: pins, external timestamps, periodic outputs, PPS and alarms (the counts are
//! zero and `enable` answers `EOPNOTSUPP`), `adjphase`, cross timestamps and the cycle
//! readers (`getcycles64`, for vclocks).
//!
//! # Contexts
//!
//! The operations run in process context (the posix clock's syscalls, under its read lock;
//! `do_aux_work` on the clock's kthread worker) and may sleep, concurrently with each other
//! and with whatever else the driver does with the data: the driver serialises what it must.
//! No operation runs after `ptp_clock_unregister()` has returned (the posix clock is a zombie
//! by then and the worker destroyed), so the data outlives every call.

use core::{
    mem::offset_of,
    ptr::NonNull, //
};

use kernel::{
    build_error,
    device::{
        self,
        Bound, //
    },
    error::{
        from_err_ptr,
        from_result,
        VTABLE_DEFAULT_ERROR, //
    },
    prelude::*,
    sync::Arc,
    time::Jiffies,
    types::Opaque,
    ThisModule,
};

use ksys::op;

mod build_check;
pub mod timecounter;

/// Nanoseconds in a second.
const NSEC_PER_SEC: i64 = 1_000_000_000;

/// The system's real time now, in nanoseconds since the epoch (`ktime_get_real()`): where a
/// clock kept in software over a free-running counter starts.
pub fn realtime_ns() -> i64 {
    // SAFETY: No preconditions.
    unsafe { ksys::ktime_get_real() }
}

/// The system time snapshots of one `gettimex64` call (`struct ptp_system_timestamp`), if the
/// caller asked for them (`PTP_SYS_OFFSET_EXTENDED`): take [`SystemTimestamps::pre`] just
/// before and [`SystemTimestamps::post`] just after the device read that latches the clock.
pub struct SystemTimestamps<'a> {
    sts: Option<NonNull<ksys::ptp_system_timestamp>>,
    _call: core::marker::PhantomData<&'a mut ksys::ptp_system_timestamp>,
}

impl SystemTimestamps<'_> {
    /// No snapshots: for the driver's own reads of its clock, outside `gettimex64`.
    pub fn none() -> Self {
        Self {
            sts: None,
            _call: core::marker::PhantomData,
        }
    }

    /// Takes the system time before the device read (`ptp_read_system_prets()`).
    pub fn pre(&mut self) {
        if let Some(sts) = self.sts {
            // SAFETY: `sts` is the caller's snapshot storage, valid and ours to write for the
            // call (`'a`).
            unsafe { ksys::ptp_read_system_prets(sts.as_ptr()) };
        }
    }

    /// Takes the system time after the device read (`ptp_read_system_postts()`).
    pub fn post(&mut self) {
        if let Some(sts) = self.sts {
            // SAFETY: As in `pre`.
            unsafe { ksys::ptp_read_system_postts(sts.as_ptr()) };
        }
    }
}

/// The operations of a PTP hardware clock (`struct ptp_clock_info`), on the driver's data.
///
/// Time is in nanoseconds since the epoch of the clock (`CLOCK_TAI` for PTP users), as
/// `i64`. Only the implemented optional operations are set in the C table.
#[vtable]
pub trait ClockOps: Send + Sync + Sized + 'static {
    /// `adjfine`: runs the clock faster by `scaled_ppm` parts per million with a 16-bit
    /// binary fraction (slower if negative), within the registration's `max_adj`.
    fn adjfine(&self, scaled_ppm: i64) -> Result;

    /// `adjtime`: shifts the clock by `delta` nanoseconds.
    fn adjtime(&self, delta: i64) -> Result;

    /// `gettimex64`: the clock's time, with the system time taken around the device read
    /// (`sts`).
    fn gettimex(&self, sts: &mut SystemTimestamps<'_>) -> Result<i64>;

    /// `settime64`: sets the clock to `ns`.
    fn settime(&self, ns: i64) -> Result;

    /// `do_aux_work`: the clock's periodic work (e.g. reading a free-running counter at least
    /// twice per wrap), on the clock's own kthread. Returns the delay until the next run, or
    /// `None` not to run again until [`Registration::schedule_aux_work`]. The registration
    /// schedules the first run at once.
    fn do_aux_work(&self) -> Option<Jiffies> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// What the PTP core points to: the ops table and the driver's data, in one allocation that
/// does not move while the clock is registered.
#[repr(C)]
struct Inner<T> {
    info: Opaque<ksys::ptp_clock_info>,
    data: Arc<T>,
}

/// A registered PTP hardware clock; dropping it unregisters it.
pub struct Registration<T: ClockOps> {
    clock: NonNull<ksys::ptp_clock>,
    // Boxed so that `info` keeps its address while the clock is registered.
    inner: KBox<Inner<T>>,
}

// SAFETY: The PTP core's functions on `clock` (`ptp_clock_index`, `ptp_schedule_worker`,
// `ptp_clock_unregister`) may be called from any thread; the data is `Send + Sync`.
unsafe impl<T: ClockOps> Send for Registration<T> {}
// SAFETY: As for `Send`: `&Registration` only reads the index and queues the worker.
unsafe impl<T: ClockOps> Sync for Registration<T> {}

/// Converts a `timespec64` to nanoseconds (`timespec64_to_ns()`, saturating).
fn timespec_to_ns(ts: &ksys::timespec64) -> i64 {
    ts.tv_sec
        .saturating_mul(NSEC_PER_SEC)
        .saturating_add(ts.tv_nsec as i64)
}

/// Converts nanoseconds to a `timespec64` (`ns_to_timespec64()`: `tv_nsec` in `0..10^9`).
fn ns_to_timespec(ns: i64) -> ksys::timespec64 {
    ksys::timespec64 {
        tv_sec: ns.div_euclid(NSEC_PER_SEC),
        tv_nsec: ns.rem_euclid(NSEC_PER_SEC) as c_long,
    }
}

impl<T: ClockOps> Registration<T> {
    /// Registers a clock named `name` (at most 15 bytes are kept) under `parent`, whose
    /// frequency may be adjusted by at most `max_adj` parts per billion, with the driver's
    /// `data`; `module` owns the operations (`THIS_MODULE`).
    pub fn new(
        parent: &device::Device<Bound>,
        module: &'static ThisModule,
        name: &CStr,
        max_adj: i32,
        data: Arc<T>,
    ) -> Result<Self> {
        let mut info: ksys::ptp_clock_info = pin_init::zeroed();
        info.owner = module.as_ptr();
        let n = name.to_bytes().len().min(info.name.len() - 1);
        for (d, &s) in info.name.iter_mut().zip(&name.to_bytes()[..n]) {
            *d = c_char::from_ne_bytes([s]);
        }
        info.max_adj = max_adj;
        info.adjfine = Some(Self::adjfine);
        info.adjtime = Some(Self::adjtime);
        info.gettimex64 = Some(Self::gettimex64);
        info.settime64 = Some(Self::settime64);
        info.enable = Some(Self::enable);
        info.do_aux_work = op!(T::HAS_DO_AUX_WORK, Self::do_aux_work);
        let inner = KBox::new(
            Inner {
                info: Opaque::new(info),
                data,
            },
            GFP_KERNEL,
        )?;
        // CAST: `device::Device` wraps `bindings::device` transparently; it is `ksys::device`.
        let parent = core::ptr::from_ref(parent)
            .cast::<ksys::device>()
            .cast_mut();
        // SAFETY: `info` is a filled `ptp_clock_info` in a box that stays where it is until
        // the clock is unregistered in `drop` (the box is dropped after that); `parent` is a
        // live device (the clock's device takes its own reference to it).
        let clock = from_err_ptr(unsafe { ksys::ptp_clock_register(inner.info.get(), parent) })?;
        let clock = NonNull::new(clock).ok_or(ENODEV)?;
        if T::HAS_DO_AUX_WORK {
            // SAFETY: `clock` was just registered (with `do_aux_work`, hence a worker).
            unsafe { ksys::ptp_schedule_worker(clock.as_ptr(), 0) };
        }
        Ok(Self { clock, inner })
    }

    /// The clock's index: `N` of `/dev/ptpN` (`ptp_clock_index()`).
    pub fn index(&self) -> i32 {
        // SAFETY: `clock` is registered until `drop`.
        unsafe { ksys::ptp_clock_index(self.clock.as_ptr()) }
    }

    /// The driver's data.
    pub fn data(&self) -> &Arc<T> {
        &self.inner.data
    }

    /// Runs [`ClockOps::do_aux_work`] after `delay` jiffies (`ptp_schedule_worker()`), or
    /// sooner if it is queued already; nothing without `do_aux_work`.
    pub fn schedule_aux_work(&self, delay: Jiffies) {
        if T::HAS_DO_AUX_WORK {
            // SAFETY: `clock` is registered until `drop`, with a worker.
            unsafe { ksys::ptp_schedule_worker(self.clock.as_ptr(), delay) };
        }
    }

    /// The data of the clock whose `info` the PTP core passes.
    ///
    /// # Safety
    ///
    /// `info` must be the `info` of a live `Inner<T>` (a callback of a registered clock).
    unsafe fn data_of<'a>(info: *mut ksys::ptp_clock_info) -> &'a T {
        let off = offset_of!(Inner<T>, info);
        // SAFETY: `info` is the `info` field of an `Inner<T>` (`Opaque` is transparent), so
        // stepping back by its offset gives the `Inner<T>`, alive for the callback.
        let inner = unsafe { &*info.cast::<u8>().sub(off).cast::<Inner<T>>() };
        &inner.data
    }

    /// # Safety
    ///
    /// The PTP core calls it with the `info` of a registered clock of this type.
    unsafe extern "C" fn adjfine(info: *mut ksys::ptp_clock_info, scaled_ppm: c_long) -> c_int {
        // SAFETY: The caller's guarantee.
        let data = unsafe { Self::data_of(info) };
        from_result(|| data.adjfine(scaled_ppm as i64).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `adjfine`.
    unsafe extern "C" fn adjtime(info: *mut ksys::ptp_clock_info, delta: i64) -> c_int {
        // SAFETY: The caller's guarantee.
        let data = unsafe { Self::data_of(info) };
        from_result(|| data.adjtime(delta).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `adjfine`; `ts` is writable, `sts` NULL or the caller's snapshot storage.
    unsafe extern "C" fn gettimex64(
        info: *mut ksys::ptp_clock_info,
        ts: *mut ksys::timespec64,
        sts: *mut ksys::ptp_system_timestamp,
    ) -> c_int {
        // SAFETY: The caller's guarantee.
        let data = unsafe { Self::data_of(info) };
        let mut sts = SystemTimestamps {
            sts: NonNull::new(sts),
            _call: core::marker::PhantomData,
        };
        from_result(|| {
            let ns = data.gettimex(&mut sts)?;
            // SAFETY: The PTP core passes a writable `timespec64`.
            unsafe { *ts = ns_to_timespec(ns) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `adjfine`; `ts` is a valid `timespec64`.
    unsafe extern "C" fn settime64(
        info: *mut ksys::ptp_clock_info,
        ts: *const ksys::timespec64,
    ) -> c_int {
        // SAFETY: The caller's guarantee.
        let data = unsafe { Self::data_of(info) };
        // SAFETY: The PTP core passes a valid `timespec64` for the call.
        let ns = timespec_to_ns(unsafe { &*ts });
        from_result(|| data.settime(ns).map(|()| 0))
    }

    /// No ancillary features (pins, external timestamps, periodic outputs, PPS): refused.
    ///
    /// # Safety
    ///
    /// None (nothing is dereferenced); `unsafe` for the table's function pointer type.
    unsafe extern "C" fn enable(
        _info: *mut ksys::ptp_clock_info,
        _request: *mut ksys::ptp_clock_request,
        _on: c_int,
    ) -> c_int {
        -(ksys::EOPNOTSUPP as c_int)
    }

    /// # Safety
    ///
    /// As for `adjfine` (on the clock's worker).
    unsafe extern "C" fn do_aux_work(info: *mut ksys::ptp_clock_info) -> c_long {
        // SAFETY: The caller's guarantee.
        let data = unsafe { Self::data_of(info) };
        match data.do_aux_work() {
            Some(d) => c_long::try_from(d).unwrap_or(c_long::MAX),
            None => -1,
        }
    }
}

impl<T: ClockOps> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: `clock` was registered in `new` and is unregistered once, here. When this
        // returns no operation runs any more and the worker is gone, so `inner` may go.
        unsafe { ksys::ptp_clock_unregister(self.clock.as_ptr()) };
    }
}
