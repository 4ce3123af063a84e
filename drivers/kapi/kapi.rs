// SPDX-License-Identifier: GPL-2.0
//! Kernel C APIs that the 7.2 `kernel` crate does not wrap (yet), each as a small safe API with
//! a documented contract: MSI-X vector allocation by index, interrupt lines, a spinlock that
//! disables interrupts (for state shared with interrupt handlers) and one that disables bottom
//! halves, bulk copies in and out of
//! coherent DMA memory, a function-level reset, flushing work items, the online CPU count, a
//! bound-device handle for deferred contexts, and a module-wide debugfs directory.
//!
//! - [`MsixVectors`]: `pci_alloc_irq_vectors(PCI_IRQ_MSIX)`, freed on drop or at unbind.
//! - [`IrqLine`]: a hard-interrupt handler ([`IrqHandler`], given the bound device) on one of
//!   those vectors (`request_threaded_irq()` without a thread function), freed on drop or at
//!   unbind.
//! - [`IrqSafeLock`] (created with [`new_irq_safe_lock!`]): a `spinlock_t` taken with
//!   `spin_lock_irqsave()`, as a `kernel::sync::lock` backend ([`IrqSaveBackend`]), so
//!   `CondVar` works with its guard ([`IrqSafeGuard`]).
//! - [`BhLock`] (created with [`new_bh_lock!`]): a `spinlock_t` taken with `spin_lock_bh()`
//!   ([`BhBackend`]), for state shared by process context and softirqs.
//! - [`coherent_read`], [`coherent_write`]: volatile copies, eight or four bytes wide where
//!   aligned (a 4-byte doorbell record is one store).
//! - [`try_reset_function`], [`num_online_cpus`], [`flush_work`], [`flush_delayed_work`]: one
//!   C call each.
//! - [`BoundDevice`]: a device reference that work items and interrupt handlers hold to use
//!   APIs that need a `&Device<Bound>`.
//! - [`DebugfsRoot`]: the module's debugfs directory, until the `kernel` crate has
//!   per-module data.
//! - [`barrier`]: `dma_wmb()`, `dma_rmb()`, `wmb()`, the barriers against a device (the
//!   `kernel` crate has only the SMP ones).
//! - [`SharedPage`]: a zeroed page processes map read-only and the kernel updates with single
//!   4- or 8-byte stores (mlx5's clock-info page).
//!
//! # Contexts
//!
//! - Process or softirq context, hard interrupts enabled: [`BhLock::lock`].
//! - Any context, hard interrupt included: the [`barrier`]s, [`IrqSafeLock::lock`], [`coherent_read`],
//!   [`coherent_write`], [`num_online_cpus`], [`BoundDevice::get`], [`BoundDevice::dev`],
//!   [`IrqLine::handler`], [`MsixVectors::count`]. [`IrqHandler::handle`] is called in hard
//!   interrupt context.
//! - Process context (they may sleep): [`MsixVectors::alloc`], [`IrqLine::request`], [`try_reset_function`],
//!   [`flush_work`] and [`flush_delayed_work`] (not from the work item itself, nor holding a
//!   lock it takes), and dropping an [`IrqLine`] (it waits for a running handler, so not from
//!   that handler) or the last reference to [`MsixVectors`].
//! - Process context: [`DebugfsRoot::install`], [`DebugfsRoot::subdir`] and the guard's drop
//!   (a mutex; debugfs may sleep).
//!
//! # Safety
//!
//! Every `unsafe` block and `unsafe impl` carries a comment arguing why it is sound. One
//! function is `unsafe` to call, because its contract is the caller's to keep and no type here
//! can prove it: [`BoundDevice::new`] (its holders gone before unbind); the caller writes its
//! safety argument at the call site, as for the `kernel` crate's own
//! `dma_set_mask_and_coherent`.

pub mod barrier;
pub mod ratelimit;
mod shared_page;

pub use shared_page::SharedPage;

use core::{
    ffi::c_void,
    ptr, //
};

use kernel::{
    bindings,
    device::{
        self,
        Bound, //
    },
    devres::Devres,
    dma::Coherent,
    error::to_result,
    ffi::{
        c_char,
        c_int,
        c_ulong, //
    },
    pci,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{
            Acquire,
            AtomicFlag,
            Full,
            Release, //
        },
        lock::{
            Backend,
            Guard,
            Lock, //
        },
        Arc, //
    },
    workqueue::{
        DelayedWork,
        Work, //
    },
};

/// The raw `struct pci_dev` behind a [`pci::Device`].
fn pci_dev_ptr<Ctx: device::DeviceContext>(pdev: &pci::Device<Ctx>) -> *mut bindings::pci_dev {
    // CAST: `pci::Device` is a `#[repr(transparent)]` wrapper of `Opaque<bindings::pci_dev>`,
    // which is itself transparent over the C struct.
    ptr::from_ref(pdev).cast::<bindings::pci_dev>().cast_mut()
}

/// A device reference that deferred contexts (work items, interrupt handlers) use to allocate
/// DMA memory, which needs proof that the device is bound.
///
/// Contract: a `BoundDevice` may only be created from a `&Device<Bound>` and must only be held
/// by objects of the bound driver instance that are stopped (interrupts freed, work flushed)
/// and whose users are gone before the driver's data is released, i.e. before unbind
/// completes (the driver's teardown must ensure that in every path, probe failures included).
#[derive(Clone)]
pub struct BoundDevice(ARef<device::Device>);

impl BoundDevice {
    /// Takes a reference while the device is known to be bound.
    ///
    /// # Safety
    ///
    /// The caller keeps the type's contract: the `BoundDevice` (and every clone) is dropped, or
    /// no longer used, before `dev`'s driver unbinds — every object holding it is torn down
    /// (interrupts freed, work flushed, registrations gone) in the driver's unbind and in
    /// every probe failure path. [`BoundDevice::get`] relies on it.
    pub unsafe fn new(dev: &device::Device<Bound>) -> Self {
        let normal: &device::Device = dev;
        Self(normal.into())
    }

    /// The device, in its bound context.
    pub fn get(&self) -> &device::Device<Bound> {
        // SAFETY: By the contract of `BoundDevice`, every holder is torn down before the driver
        // unbinds, so the device is bound for as long as this reference can be used.
        unsafe { self.0.as_bound() }
    }

    /// The device, for logging.
    pub fn dev(&self) -> &device::Device {
        &self.0
    }
}

/// The byte range `off..off + len` of `mem`, checked; returns a pointer to its first byte.
fn coherent_range(mem: &Coherent<[u8]>, off: usize, len: usize) -> Result<*mut u8> {
    match off.checked_add(len) {
        Some(end) if end <= mem.len() => Ok(mem.as_mut_ptr().cast::<u8>().wrapping_add(off)),
        _ => Err(ERANGE),
    }
}

/// Copies `data` into coherent DMA memory at byte offset `off`.
///
/// The accesses are volatile, as `dma_write!`'s (the device may access the memory at any time),
/// but eight bytes wide where the destination is aligned: a mailbox block or a 4 KiB
/// capability page takes an eighth of the stores of a byte-wise copy. Four aligned bytes are
/// one 32-bit store, so a doorbell record (a consumer or producer counter the device reads
/// while the driver writes it) is never seen half-written. Nothing outside
/// `off..off + data.len()` is written, so a neighbouring ownership byte is never touched.
#[inline]
pub fn coherent_write(mem: &Coherent<[u8]>, off: usize, data: &[u8]) -> Result {
    let dst = coherent_range(mem, off, data.len())?;
    let mut i = 0;
    while i < data.len() {
        let p = dst.wrapping_add(i);
        let rest = &data[i..];
        if let Some(w) = rest.first_chunk::<8>().filter(|_| p.cast::<u64>().is_aligned()) {
            // SAFETY: `p..p + 8` is inside the checked range of the allocation, which `mem`
            // keeps alive, and `p` is aligned for `u64`. A volatile store to coherent memory the
            // device may access concurrently is what `dma_write!` does too.
            unsafe { p.cast::<u64>().write_volatile(u64::from_ne_bytes(*w)) };
            i += 8;
        } else if let Some(w) = rest.first_chunk::<4>().filter(|_| p.cast::<u32>().is_aligned()) {
            // SAFETY: `p..p + 4` is inside the checked range and `p` is aligned for `u32`; see
            // above.
            unsafe { p.cast::<u32>().write_volatile(u32::from_ne_bytes(*w)) };
            i += 4;
        } else {
            // SAFETY: `p` is inside the checked range (`i < data.len()`); see above.
            unsafe { p.write_volatile(rest[0]) };
            i += 1;
        }
    }
    Ok(())
}

/// Copies `out.len()` bytes at byte offset `off` out of coherent DMA memory; volatile loads,
/// eight or four bytes wide where aligned (see [`coherent_write`]).
#[inline]
pub fn coherent_read(mem: &Coherent<[u8]>, off: usize, out: &mut [u8]) -> Result {
    let src = coherent_range(mem, off, out.len())?.cast_const();
    let mut i = 0;
    while i < out.len() {
        let p = src.wrapping_add(i);
        if i + 8 <= out.len() && p.cast::<u64>().is_aligned() {
            // SAFETY: `p..p + 8` is inside the checked range of the allocation, which `mem`
            // keeps alive, and `p` is aligned for `u64`; volatile as `dma_read!`.
            let w = unsafe { p.cast::<u64>().read_volatile() };
            out[i..i + 8].copy_from_slice(&w.to_ne_bytes());
            i += 8;
        } else if i + 4 <= out.len() && p.cast::<u32>().is_aligned() {
            // SAFETY: `p..p + 4` is inside the checked range and `p` is aligned for `u32`; see
            // above.
            let w = unsafe { p.cast::<u32>().read_volatile() };
            out[i..i + 4].copy_from_slice(&w.to_ne_bytes());
            i += 4;
        } else {
            // SAFETY: `p` is inside the checked range (`i < out.len()`); see above.
            out[i] = unsafe { p.read_volatile() };
            i += 1;
        }
    }
    Ok(())
}

/// Resets a bound PCI function (`pci_try_reset_function()`: function-level reset with config
/// space saved and restored). Fails with `EAGAIN` instead of waiting when the device lock is
/// held, e.g. by an unbind that waits for the caller.
pub fn try_reset_function(pdev: &pci::Device<Bound>) -> Result {
    // SAFETY: `pdev` is a bound, live PCI device; the function takes the device lock itself
    // (or gives up) and saves/restores the config space around the reset.
    to_result(unsafe { bindings::pci_try_reset_function(pci_dev_ptr(pdev)) })
}

/// The number of online CPUs (`num_online_cpus()`).
pub fn num_online_cpus() -> u32 {
    // SAFETY: `__num_online_cpus` is a kernel global that is always valid; it is an atomic
    // counter, read here with a single volatile load (what `atomic_read()` does).
    let n = unsafe { ptr::read_volatile(&raw const bindings::__num_online_cpus.counter) };
    u32::try_from(n).unwrap_or(1).max(1)
}

/// Waits until a work item is neither pending nor running (`flush_work()`).
pub fn flush_work<T, const ID: u64>(work: &Work<T, ID>) -> bool {
    // SAFETY: `work` is a valid, initialized `Work`, so the pointer is aligned and not
    // dangling; `flush_work()` only waits on it.
    unsafe { bindings::flush_work(Work::raw_get(work)) }
}

/// Runs a pending delayed work item now and waits for it (`flush_delayed_work()`); returns
/// whether it had to wait.
pub fn flush_delayed_work<T, const ID: u64>(work: &DelayedWork<T, ID>) -> bool {
    // SAFETY: `work` is a valid, initialized `DelayedWork`: `raw_as_work` gives the `work`
    // member of its `struct delayed_work`.
    let w = unsafe { DelayedWork::raw_as_work(work) }.cast::<bindings::work_struct>();
    // SAFETY: `w` is the `work` field of a `struct delayed_work` (see above).
    let dw = unsafe { kernel::container_of!(w, bindings::delayed_work, work) };
    // SAFETY: `dw` points to the initialized `struct delayed_work` inside `work`.
    unsafe { bindings::flush_delayed_work(dw) }
}

/// The MSI-X allocation itself: `pci_free_irq_vectors()` when dropped. It lives in a
/// [`Devres`], so it is freed when its [`MsixVectors`] is dropped or when the device is
/// unbound, whichever comes first.
struct MsixAlloc {
    pdev: ARef<pci::Device>,
}

impl Drop for MsixAlloc {
    fn drop(&mut self) {
        // SAFETY: The vectors were allocated by `MsixVectors::alloc` for this device. Every
        // interrupt line on them is freed first: an `IrqLine` holds an `Arc` of its
        // `MsixVectors` (dropped with it), and at unbind devres releases in reverse order of
        // registration, so the lines' `Devres` (registered after this one) go before.
        unsafe { bindings::pci_free_irq_vectors(pci_dev_ptr(&self.pdev)) };
    }
}

/// MSI-X vectors of a PCI function, freed on drop (after every [`IrqLine`] on them, which
/// hold a reference) or at unbind, whichever comes first.
///
/// The 7.2 crate's `pci::Device::alloc_irq_vectors` frees only at unbind and hands out the
/// first and last vector only; a function that frees and reallocates its vectors within one
/// binding (cx4's recovery reload, upstream's `mlx5_unload`/`mlx5_load`) and requests every
/// vector by index needs this type.
pub struct MsixVectors {
    alloc: Devres<MsixAlloc>,
    count: u32,
}

impl MsixVectors {
    /// Allocates between `min` and `max` MSI-X vectors.
    pub fn alloc(pdev: &pci::Device<Bound>, min: u32, max: u32) -> Result<Arc<Self>> {
        // SAFETY: `pdev` is a valid, bound PCI device; the C function checks its arguments.
        let ret = unsafe {
            bindings::pci_alloc_irq_vectors(pci_dev_ptr(pdev), min, max, bindings::PCI_IRQ_MSIX)
        };
        to_result(ret)?;
        let normal: &pci::Device = pdev;
        // On failure the initialiser's value is dropped, which frees the vectors.
        let alloc = Devres::new(
            pdev.as_ref(),
            MsixAlloc {
                pdev: normal.into(),
            },
        )?;
        let vecs = Self {
            alloc,
            count: ret.unsigned_abs(),
        };
        Ok(Arc::new(vecs, GFP_KERNEL)?)
    }

    /// How many vectors were granted.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The Linux interrupt number of vector `index` of bound device `dev` (`EINVAL` if `dev`
    /// is not the device the vectors belong to). Process context: `pci_irq_vector()` takes the
    /// MSI domain's mutex, so the allocation is reached through `Devres::access` (the bound
    /// device proves it is not revoked), not under an RCU read lock.
    fn irq(&self, dev: &device::Device<Bound>, index: u32) -> Result<u32> {
        if index >= self.count {
            return Err(EINVAL);
        }
        let a = self.alloc.access(dev)?;
        // SAFETY: The vectors are allocated while the `Devres` is not revoked, which `access`
        // with the bound device proves for as long as `a` lives; `index` is below their count.
        let irq = unsafe { bindings::pci_irq_vector(pci_dev_ptr(&a.pdev), index) };
        to_result(irq)?;
        Ok(irq.unsigned_abs())
    }
}

/// An interrupt handler on one vector.
pub trait IrqHandler: Send + Sync + 'static {
    /// Runs in hard-interrupt context, with interrupts disabled: it must not sleep (atomics,
    /// [`IrqSafeLock`]s, waking waiters and queueing work are fine). `dev` is the device the
    /// line belongs to, bound while the handler runs.
    fn handle(&self, dev: &device::Device<Bound>);
}

/// What the trampoline receives: the handler and its device. Boxed by [`IrqLine`], so its
/// address, the cookie given to `request_threaded_irq`, is stable.
struct IrqCookie<T> {
    dev: ARef<device::Device>,
    handler: Arc<T>,
}

/// A requested interrupt line: `free_irq()` when dropped. It lives in a [`Devres`], so the
/// line is freed when its [`IrqLine`] is dropped or when the device is unbound, whichever
/// comes first — a handler never runs on an unbound device.
struct IrqRequest {
    irq: u32,
    cookie: *mut c_void,
}

// SAFETY: `cookie` is only handed back to `free_irq` (any context that may sleep); the data it
// points to is `Send + Sync` (`IrqCookie<T: IrqHandler>`) and outlives the request (`IrqLine`).
unsafe impl Send for IrqRequest {}

impl Drop for IrqRequest {
    fn drop(&mut self) {
        // SAFETY: The line was requested with this `irq` and `cookie` in `IrqLine::request`;
        // `free_irq` waits for a running handler. The cookie's box outlives this: `IrqLine`
        // drops its `Devres` first, and a revocation at unbind happens while the `IrqLine`
        // (which owns the box) still exists or never existed past its own drop.
        unsafe { bindings::free_irq(self.irq, self.cookie) };
    }
}

/// An interrupt handler registered on one MSI-X vector (hard-interrupt context, like the
/// upstream driver's EQ handlers); freed (waiting for a running handler) on drop or at unbind.
pub struct IrqLine<T: IrqHandler> {
    // Dropped first: the line is freed before the cookie it points to.
    _request: Devres<IrqRequest>,
    irq: u32,
    cookie: KBox<IrqCookie<T>>,
    _vectors: Arc<MsixVectors>,
}

/// The hard-interrupt trampoline.
///
/// # Safety
///
/// Only `request_threaded_irq` calls it, with the cookie `IrqLine::request` registered: the
/// address of an `IrqCookie<T>` that stays alive until `free_irq` returned.
unsafe extern "C" fn irq_hard<T: IrqHandler>(
    _irq: c_int,
    cookie: *mut c_void,
) -> bindings::irqreturn_t {
    // SAFETY: `cookie` is the `IrqCookie<T>` given to `request_threaded_irq` by
    // `IrqLine::request`; the `IrqLine` keeps it alive until `free_irq` returned.
    let c = unsafe { &*cookie.cast::<IrqCookie<T>>() };
    // SAFETY: The line is freed (its `Devres`) before the device is unbound, so a running
    // handler implies a bound device (as the `kernel` crate's `handle_irq_callback` argues).
    let dev = unsafe { c.dev.as_bound() };
    c.handler.handle(dev);
    bindings::irqreturn_IRQ_HANDLED
}

impl<T: IrqHandler> IrqLine<T> {
    /// Requests vector `index` of `vectors` of device `dev` for `handler`.
    pub fn request(
        dev: &pci::Device<Bound>,
        vectors: &Arc<MsixVectors>,
        index: u32,
        name: &'static CStr,
        handler: Arc<T>,
    ) -> Result<Self> {
        let bound: &device::Device<Bound> = dev.as_ref();
        let irq = vectors.irq(bound, index)?;
        let normal: &device::Device = bound;
        let cookie = KBox::new(
            IrqCookie {
                dev: normal.into(),
                handler,
            },
            GFP_KERNEL,
        )?;
        let raw = ptr::from_ref::<IrqCookie<T>>(&cookie).cast::<c_void>().cast_mut();
        // SAFETY: `irq` is an interrupt of this device's allocated vectors; the callback
        // matches the C prototype (no thread function: the handler runs in hard-interrupt
        // context only); `raw` stays valid until `free_irq` (the box is owned by the returned
        // `IrqLine`, which frees the line first); `name` is a static NUL-terminated string.
        let ret = unsafe {
            bindings::request_threaded_irq(irq, Some(irq_hard::<T>), None, 0, name.as_char_ptr(), raw)
        };
        to_result(ret)?;
        // On failure the request's value is dropped, which frees the line.
        let request = Devres::new(bound, IrqRequest { irq, cookie: raw })?;
        Ok(Self {
            _request: request,
            irq,
            cookie,
            _vectors: vectors.clone(),
        })
    }

    /// The handler.
    pub fn handler(&self) -> &Arc<T> {
        &self.cookie.handler
    }

    /// The Linux interrupt number of the line (for `/proc/interrupts`, affinity, NAPI).
    pub fn irq(&self) -> u32 {
        self.irq
    }
}

#[cfg(CONFIG_PREEMPT_RT)]
compile_error!("IrqSafeLock takes spinlock_t as a raw spinlock, which PREEMPT_RT does not allow");

/// The `kernel::sync::lock` backend of [`IrqSafeLock`]: a `spinlock_t` taken with
/// `spin_lock_irqsave()` and released with `spin_unlock_irqrestore()` (the 7.2 `kernel` crate
/// has only the plain `spin_lock()` backend, which must not be shared with interrupt handlers).
pub struct IrqSaveBackend;

/// The `raw_spinlock_t` inside a `spinlock_t` (what `spinlock_check()` returns).
#[inline]
fn raw_spinlock(ptr: *mut bindings::spinlock_t) -> *mut bindings::raw_spinlock_t {
    // CAST: Without PREEMPT_RT (refused above), `spinlock_t` is a union whose `rlock` member,
    // the `raw_spinlock_t`, is at offset 0.
    ptr.cast()
}

// SAFETY: `spin_lock_irqsave()` on the kernel's `spinlock_t` ensures mutual exclusion; `relock`
// is the default, which calls `lock`, the same locking method.
unsafe impl Backend for IrqSaveBackend {
    type State = bindings::spinlock_t;
    /// The interrupt flags saved when the lock was taken.
    type GuardState = c_ulong;

    unsafe fn init(ptr: *mut Self::State, name: *const c_char, key: *mut bindings::lock_class_key) {
        // SAFETY: The caller guarantees that `ptr` is valid for writes and that `name` and `key`
        // stay valid for reads indefinitely.
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    #[inline]
    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The caller guarantees that `ptr` is an initialised `spinlock_t`, so its
        // `raw_spinlock_t` is too.
        unsafe { bindings::_raw_spin_lock_irqsave(raw_spinlock(ptr)) }
    }

    #[inline]
    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: The caller owns the lock, taken by `lock`, which saved `flags`.
        unsafe { bindings::_raw_spin_unlock_irqrestore(raw_spinlock(ptr), *flags) }
    }

    #[inline]
    unsafe fn try_lock(_ptr: *mut Self::State) -> Option<Self::GuardState> {
        // `IrqSafeLock` offers no `try_lock`: the C API has no out-of-line trylock that saves
        // the interrupt flags. Failing is always a correct answer to a try.
        None
    }

    #[inline]
    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: The caller guarantees that `ptr` is an initialised `spinlock_t`.
        unsafe { bindings::spin_assert_is_held(ptr) }
    }
}

/// A guard of an [`IrqSafeLock`]; works with `CondVar` like any lock guard.
pub type IrqSafeGuard<'a, T> = Guard<'a, T, IrqSaveBackend>;

/// A spinlock for state shared with hard-interrupt handlers: interrupts stay disabled on the
/// local CPU while it is held (`lock()`), so a handler can never spin on a lock its own CPU
/// holds. Nothing under it may sleep or allocate with `GFP_KERNEL`. Its `try_lock()` always
/// fails (see [`IrqSaveBackend`]). Create it with [`new_irq_safe_lock!`].
pub type IrqSafeLock<T> = Lock<T, IrqSaveBackend>;

/// An [`IrqSafeLock`] initialiser with a lockdep class of its own (one per call site):
/// `new_irq_safe_lock!(value, "name")`, `name` a string literal that lockdep shows.
#[macro_export]
macro_rules! new_irq_safe_lock {
    ($inner:expr, $name:literal) => {
        $crate::IrqSafeLock::new(
            $inner,
            ::kernel::c_str!($name),
            ::kernel::static_lock_class!(),
        )
    };
}

/// The `kernel::sync::lock` backend of [`BhLock`]: a `spinlock_t` taken with `spin_lock_bh()`
/// and released with `spin_unlock_bh()` (the 7.2 `kernel` crate has only `spin_lock()`).
pub struct BhBackend;

// SAFETY: `spin_lock_bh()` on the kernel's `spinlock_t` ensures mutual exclusion; `relock` is
// the default, which calls `lock`, the same locking method.
unsafe impl Backend for BhBackend {
    type State = bindings::spinlock_t;
    type GuardState = ();

    unsafe fn init(ptr: *mut Self::State, name: *const c_char, key: *mut bindings::lock_class_key) {
        // SAFETY: The caller guarantees that `ptr` is valid for writes and that `name` and `key`
        // stay valid for reads indefinitely.
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    #[inline]
    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The caller guarantees that `ptr` is an initialised `spinlock_t`, so its
        // `raw_spinlock_t` is too.
        unsafe { bindings::_raw_spin_lock_bh(raw_spinlock(ptr)) }
    }

    #[inline]
    unsafe fn unlock(ptr: *mut Self::State, _guard: &Self::GuardState) {
        // SAFETY: The caller owns the lock, taken by `lock`.
        unsafe { bindings::_raw_spin_unlock_bh(raw_spinlock(ptr)) }
    }

    #[inline]
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        // SAFETY: The caller guarantees that `ptr` is an initialised `spinlock_t`.
        (unsafe { bindings::_raw_spin_trylock_bh(raw_spinlock(ptr)) } != 0).then_some(())
    }

    #[inline]
    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: The caller guarantees that `ptr` is an initialised `spinlock_t`.
        unsafe { bindings::spin_assert_is_held(ptr) }
    }
}

/// A guard of a [`BhLock`].
pub type BhGuard<'a, T> = Guard<'a, T, BhBackend>;

/// A spinlock for state shared between process context and softirqs (a NIC's transmit path
/// and its NAPI poll): bottom halves stay disabled on the local CPU while it is held
/// (`lock()`), so a softirq can never spin on a lock its own CPU holds, and hard interrupts
/// stay enabled. Not for state a hard-interrupt handler takes (use [`IrqSafeLock`]), nor for
/// code that may run with interrupts disabled (netpoll). Nothing under it may sleep. Create it
/// with [`new_bh_lock!`].
pub type BhLock<T> = Lock<T, BhBackend>;

/// A [`BhLock`] initialiser with a lockdep class of its own (one per call site):
/// `new_bh_lock!(value, "name")`.
#[macro_export]
macro_rules! new_bh_lock {
    ($inner:expr, $name:literal) => {
        $crate::BhLock::new($inner, ::kernel::c_str!($name), ::kernel::static_lock_class!())
    };
}

/// The module-wide debugfs directory (e.g. `cx4/`), under which each device creates its own.
///
/// The `kernel` crate has no per-module data yet, so the directory lives in a static of this
/// crate (one per module that links it): a global mutex holding `Option<Dir>`, initialised by
/// the one [`DebugfsRoot::install`] that wins an atomic claim, and readable through
/// [`DebugfsRoot::subdir`] once that initialisation is published. Every use is safe in any
/// order: a second `install` gets `None`, a `subdir` before `install` or after the guard's drop
/// gets `None`. A device directory holds a reference on the root's entry (`debugfs::Dir`), so
/// the root goes from debugfs when the guard is dropped and the last device directory with it.
pub struct DebugfsRoot(());

kernel::sync::global_lock! {
    // SAFETY: `DebugfsRoot::install` initialises the lock once (the `ROOT_CLAIMED` exchange
    // succeeds once) before it sets `ROOT_READY`; nothing else touches the lock unless it has
    // seen `ROOT_READY` set.
    unsafe(uninit) static DEBUGFS_ROOT: Mutex<Option<kernel::debugfs::Dir>> = None;
}

/// Set by the `install` that initialises [`DEBUGFS_ROOT`] (once).
static ROOT_CLAIMED: AtomicFlag = AtomicFlag::new(false);
/// Set (release) after [`DEBUGFS_ROOT`] is initialised; read (acquire) before it is locked.
static ROOT_READY: AtomicFlag = AtomicFlag::new(false);

impl DebugfsRoot {
    /// Creates the directory `name` at debugfs' top level; the returned guard removes it when
    /// dropped. `None` if a root was installed before (one per module).
    pub fn install(name: &'static CStr) -> Option<Self> {
        if ROOT_CLAIMED.cmpxchg(false, true, Full).is_err() {
            return None;
        }
        // SAFETY: Only the caller that won the exchange above gets here, so `init` runs once,
        // and no one locks the mutex before `ROOT_READY` is set below.
        unsafe { DEBUGFS_ROOT.init() };
        *DEBUGFS_ROOT.lock() = Some(kernel::debugfs::Dir::new(name));
        ROOT_READY.store(true, Release);
        Some(DebugfsRoot(()))
    }

    /// A new directory `name` under the root; `None` while no root is installed.
    pub fn subdir(name: &CStr) -> Option<kernel::debugfs::Dir> {
        if !ROOT_READY.load(Acquire) {
            return None;
        }
        DEBUGFS_ROOT.lock().as_ref().map(|root| root.subdir(name))
    }
}

impl Drop for DebugfsRoot {
    fn drop(&mut self) {
        // The guard exists only after `install` published the lock.
        let root = DEBUGFS_ROOT.lock().take();
        drop(root);
    }
}
