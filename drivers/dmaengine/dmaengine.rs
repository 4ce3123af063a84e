// SPDX-License-Identifier: GPL-2.0
//! DMA engine providers (`include/linux/dmaengine.h`, `drivers/dma/dmaengine.c`): a device
//! whose channel takes memcpy, XOR, P+Q (RAID-6) and validation requests from async_tx (md
//! raid456), dmatest and other dmaengine clients. The 7.2 `kernel` crate has no dmaengine
//! abstraction; this crate is written as a `kernel::dma::engine` module could be proposed.
//!
//! - [`Registration`]: a `struct dma_device` with one memory-to-memory channel, registered
//!   with `dma_async_device_register()` for a bound device; dropping it unregisters it.
//! - [`Operations`]: the provider, implemented by the driver: it turns a client's request into
//!   its own descriptor ([`Operations::prep`]) and moves submitted descriptors to the hardware
//!   and their completions back ([`Operations::process`]).
//!
//! The abstraction does what every provider repeats (and what `drivers/dma/dmaengine.h`, a
//! header private to drivers/dma, does for them there): cookies, `tx_submit`, `tx_status`,
//! completion callbacks in cookie order, unmapping (`dmaengine_unmap_put`), dependencies
//! (`dma_run_dependencies`) and freeing descriptors once their client has acked them.
//!
//! # Contexts
//!
//! - [`Operations::prep`] runs in the client's context, which may be atomic: it must not
//!   sleep. It only sees requests whose addresses are mappings: a request naming
//!   `DMA_MAPPING_ERROR` (a client's failed `dma_map_page()`, which async_tx never checks)
//!   gets a descriptor that never reaches the provider and ends aborted, in its turn; the
//!   device never sees the address. Its descriptor is allocated with `GFP_NOWAIT`; `Err`
//!   (or a failed allocation) returns NULL to the client, which async_tx takes as "busy": it
//!   calls `issue_pending` and prepares again, *forever*. So a provider must refuse only for want of resources
//!   that completions give back, never for a request its advertised caps allow.
//! - [`Operations::process`] runs with the channel lock held and interrupts disabled, from
//!   `device_issue_pending` and from the channel's bottom-half work item, which
//!   [`ChanRef::kick`] queues (e.g. from the device's completion interrupt) and
//!   [`ChanRef::kick_after`] queues later (e.g. to retry when the device was busy and no
//!   completion will come to kick it). It must not sleep.
//! - Client callbacks run from the bottom-half work item (softirq context, as a provider's
//!   tasklet would), without the channel lock, in cookie order: a descriptor finished by
//!   `process` waits for every earlier one.
//!
//! # Lifetimes
//!
//! The `dma_device`, its channel, the provider `T` and the descriptors live in one reference
//! counted allocation. dmaengine holds a reference from registration until its
//! `device_release` callback (after `dma_async_device_unregister()` and after the last client
//! has put the channel: unbinding with async_tx loaded), queued work items hold one while
//! queued, and so do the [`ChanRef`]s a provider gives its in-flight hardware requests. The
//! provider must not store a [`ChanRef`] in `T` itself (a cycle: never freed).
//! dmaengine takes a reference on the bound driver's module for each client of the channel
//! (`dma_chan_get`), so the module cannot be unloaded while the channel is in use.

use core::{
    marker::PhantomData,
    ptr::{
        self,
        NonNull, //
    },
};

use kapi::{
    new_irq_safe_lock,
    IrqSafeLock, //
};
use kernel::{
    device::{
        self,
        Bound, //
    },
    ffi::{
        c_int,
        c_uint,
        c_ulong, //
    },
    impl_has_delayed_work, impl_has_work, new_delayed_work, new_work,
    prelude::*,
    sync::{
        Arc,
        ArcBorrow, //
    },
    time::Jiffies,
    types::Opaque,
    workqueue::{
        self,
        DelayedWork,
        Work,
        WorkItem, //
    },
};

mod request;

pub use request::{
    DmaAddr,
    Kind,
    Request,
    Status,
    MAX_SRCS,
    SUM_CHECK_P,
    SUM_CHECK_Q, //
};

/// The prefix of this crate's messages (`pr_*!`), as `module!` defines it for a module.
const __LOG_PREFIX: &[u8] = b"dmaengine\0";

/// `DMA_MIN_COOKIE`: the first cookie (`drivers/dma/dmaengine.h`).
const MIN_COOKIE: i32 = 1;

/// What the channel offers (`cap_mask`, `max_xor`, `max_pq`, alignments).
#[derive(Clone, Copy, Debug, Default)]
pub struct Caps {
    /// `DMA_INTERRUPT`.
    pub interrupt: bool,
    /// `DMA_MEMCPY`.
    pub memcpy: bool,
    /// `DMA_XOR`, with up to `max_xor` sources.
    pub xor: bool,
    /// `DMA_XOR_VAL`.
    pub xor_val: bool,
    /// `DMA_PQ`, with up to `max_pq` sources.
    pub pq: bool,
    /// `DMA_PQ_VAL`.
    pub pq_val: bool,
    /// Most XOR sources (at most [`MAX_SRCS`]).
    pub max_xor: u16,
    /// Most P+Q sources (at most [`MAX_SRCS`]).
    pub max_pq: u16,
    /// `DMA_HAS_PQ_CONTINUE`: the provider takes `DMA_PREP_CONTINUE` itself (the old P and Q
    /// as two more sources), so async_tx does not append them as sources of its own.
    pub pq_continue: bool,
    /// Addresses and lengths are multiples of `1 << align_log2` bytes (all operations).
    pub align_log2: u8,
}

impl Caps {
    /// Whether async_tx will pick the channel in the test kernel's configuration (no channel
    /// switching): only with all six operations (`device_has_all_tx_types`).
    pub fn async_tx_usable(&self) -> bool {
        self.interrupt && self.memcpy && self.xor && self.xor_val && self.pq && self.pq_val
    }
}

/// A DMA engine provider's operations; see the module documentation for their contexts.
pub trait Operations: Send + Sync + Sized + 'static {
    /// The provider's part of a descriptor.
    type Desc: Send;

    /// Prepares a descriptor for `req` (must not sleep). `Err` returns NULL to the client.
    fn prep(&self, req: &Request<'_>) -> Result<Self::Desc>;

    /// Moves work: starts submitted descriptors on the hardware, takes in the hardware's
    /// completions and [`Entry::finish`]es the descriptors they end. `active` holds every
    /// submitted and not yet completed descriptor, in cookie order.
    fn process(&self, chan: &ChanRef<Self>, active: &mut Active<'_, Self>);

    /// The channel's first client arrives (process context).
    fn alloc_chan_resources(&self) -> Result {
        Ok(())
    }

    /// The channel's last client has left (process context).
    fn free_chan_resources(&self) {}
}

/// A descriptor: the C descriptor the client holds, and the provider's part.
///
/// # Invariants
///
/// `txd` is first (`#[repr(C)]`): a `*mut dma_async_tx_descriptor` handed out by this crate is
/// a `*mut DescBox<T>`. `result` is null, or the client's `sum_check_flags` of a validation,
/// valid until the descriptor's callback has run. `desc` is `None` only for a refused request
/// (a bad address), which is `finished` from the start.
#[repr(C)]
struct DescBox<T: Operations> {
    txd: Opaque<ksys::dma_async_tx_descriptor>,
    next: *mut DescBox<T>,
    status: Option<Status>,
    result: *mut ksys::sum_check_flags,
    cookie: i32,
    finished: bool,
    desc: Option<T::Desc>,
}

/// A submitted descriptor, as [`Operations::process`] sees it.
pub struct Entry<'a, T: Operations> {
    cookie: i32,
    finished: bool,
    /// The provider's part.
    pub desc: &'a mut T::Desc,
}

impl<T: Operations> Entry<'_, T> {
    /// The descriptor's cookie (unique among the active descriptors; positive).
    pub fn cookie(&self) -> i32 {
        self.cookie
    }

    /// Whether [`Entry::finish`] was called.
    pub fn is_finished(&self) -> bool {
        self.finished
    }
}

/// A singly linked FIFO of descriptors.
struct List<T: Operations> {
    head: *mut DescBox<T>,
    tail: *mut DescBox<T>,
}

impl<T: Operations> List<T> {
    const fn new() -> Self {
        Self {
            head: ptr::null_mut(),
            tail: ptr::null_mut(),
        }
    }

    /// Appends `d`.
    ///
    /// # Safety
    ///
    /// `d` is a live descriptor in no list.
    unsafe fn push(&mut self, d: *mut DescBox<T>) {
        // SAFETY: `d` is live and in no list (the caller's guarantee); `tail`, if not null, is
        // a live descriptor of this list.
        unsafe {
            (*d).next = ptr::null_mut();
            if self.tail.is_null() {
                self.head = d;
            } else {
                (*self.tail).next = d;
            }
        }
        self.tail = d;
    }

    /// Removes and returns the first descriptor.
    fn pop(&mut self) -> Option<*mut DescBox<T>> {
        let d = NonNull::new(self.head)?.as_ptr();
        // SAFETY: `d` is a live descriptor of this list.
        self.head = unsafe { (*d).next };
        if self.head.is_null() {
            self.tail = ptr::null_mut();
        }
        Some(d)
    }
}

/// The active descriptors, in cookie order (the argument of [`Operations::process`]).
pub struct Active<'a, T: Operations> {
    list: &'a mut List<T>,
}

impl<T: Operations> Active<'_, T> {
    /// Visits every active descriptor in cookie order until `f` returns `false`.
    /// (A refused request, which has no provider part, is not visited.)
    pub fn for_each(&mut self, mut f: impl FnMut(&mut Entry<'_, T>, &mut Finisher) -> bool) {
        let mut d = self.list.head;
        while !d.is_null() {
            // SAFETY: `d` is a live descriptor of the active list, which the channel lock
            // (held by our caller) protects; nothing else refers to it meanwhile.
            let b = unsafe { &mut *d };
            d = b.next;
            let Some(desc) = b.desc.as_mut() else {
                continue;
            };
            let mut e = Entry {
                cookie: b.cookie,
                finished: b.finished,
                desc,
            };
            let mut fin = Finisher(None);
            let go = f(&mut e, &mut fin);
            if let Some(s) = fin.0 {
                if !b.finished {
                    b.finished = true;
                    b.status = Some(s);
                }
            }
            if !go {
                break;
            }
        }
    }

    /// The active descriptor with `cookie`, if any.
    pub fn find(&mut self, cookie: i32, f: impl FnOnce(&mut Entry<'_, T>, &mut Finisher)) {
        let mut once = Some(f);
        self.for_each(|e, fin| {
            if e.cookie == cookie {
                if let Some(f) = once.take() {
                    f(e, fin);
                }
                return false;
            }
            true
        });
    }

    /// Whether no descriptor is active.
    pub fn is_empty(&self) -> bool {
        self.list.head.is_null()
    }
}

/// Ends a descriptor from [`Active::for_each`]: `fin.finish(status)`.
pub struct Finisher(Option<Status>);

impl Finisher {
    /// Ends the descriptor with `status` (the first call counts). Its callback runs once
    /// every earlier descriptor has ended too.
    pub fn finish(&mut self, status: Status) {
        if self.0.is_none() {
            self.0 = Some(status);
        }
    }
}

/// The channel's state under its lock.
struct State<T: Operations> {
    /// Submitted, not yet called back (cookie order).
    active: List<T>,
    /// Called back, waiting for the client's `DMA_CTRL_ACK`.
    done: List<T>,
    /// Descriptors allocated and not freed (for the counters and the release check).
    live: usize,
    /// Requests refused for a failed mapping (they ended aborted).
    refused: u64,
    /// The channel has been released by dmaengine: every callback is over.
    released: bool,
}

// SAFETY: The raw pointers are descriptors owned by the channel, only used under its lock.
unsafe impl<T: Operations> Send for State<T> {}

/// The device, its channel and the provider, in one allocation.
///
/// # Invariants
///
/// `dev` and `chan` are set up by [`Registration::new`] before registration and then only
/// changed by dmaengine, or under `state` (the channel's cookies).
#[pin_data]
struct Inner<T: Operations> {
    dev: Opaque<ksys::dma_device>,
    chan: Opaque<ksys::dma_chan>,
    #[pin]
    state: IrqSafeLock<State<T>>,
    #[pin]
    work: Work<Inner<T>, 0>,
    #[pin]
    dwork: DelayedWork<Inner<T>, 1>,
    caps: Caps,
    #[pin]
    ops: T,
}

// SAFETY: The C structs are only touched by dmaengine (which serializes itself) and under
// `state`; the raw pointers in `State` are descriptors owned by the channel, used under the
// lock; `T` is `Send + Sync`.
unsafe impl<T: Operations> Send for Inner<T> {}
// SAFETY: As for `Send`.
unsafe impl<T: Operations> Sync for Inner<T> {}

impl_has_work! {
    impl{T: Operations} HasWork<Inner<T>, 0> for Inner<T> { self.work }
}
impl_has_delayed_work! {
    impl{T: Operations} HasDelayedWork<Inner<T>, 1> for Inner<T> { self.dwork }
}

impl<T: Operations> WorkItem<0> for Inner<T> {
    type Pointer = Arc<Inner<T>>;

    fn run(this: Arc<Inner<T>>) {
        this.bottom_half();
    }
}

impl<T: Operations> WorkItem<1> for Inner<T> {
    type Pointer = Arc<Inner<T>>;

    fn run(this: Arc<Inner<T>>) {
        Self::kick(&this);
    }
}

/// A reference to a registered channel, for the provider's asynchronous paths.
pub struct ChanRef<T: Operations>(Arc<Inner<T>>);

impl<T: Operations> Clone for ChanRef<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T: Operations> ChanRef<T> {
    /// Runs [`Operations::process`] and the callbacks of finished descriptors soon, from the
    /// bottom-half work item (any context).
    pub fn kick(&self) {
        Inner::kick(&self.0);
    }

    /// Like [`ChanRef::kick`], after `delay` jiffies.
    pub fn kick_after(&self, delay: Jiffies) {
        let _ = workqueue::system().enqueue_delayed::<Arc<Inner<T>>, 1>(self.0.clone(), delay);
    }

    /// The provider.
    pub fn ops(&self) -> &T {
        &self.0.ops
    }
}

impl<T: Operations> Inner<T> {
    fn kick(this: &Arc<Self>) {
        // An `Err` is "already queued": it will run and see this kick's work too.
        let _ = workqueue::system_bh().enqueue::<Arc<Inner<T>>, 0>(this.clone());
    }

    fn dev_ptr(&self) -> *mut ksys::dma_device {
        self.dev.get()
    }

    fn chan_ptr(&self) -> *mut ksys::dma_chan {
        self.chan.get()
    }

    /// The `Inner` of a channel of ours.
    ///
    /// # Safety
    ///
    /// `chan` is the channel of an `Inner<T>` that is alive for `'a`.
    unsafe fn from_chan<'a>(chan: *mut ksys::dma_chan) -> &'a Self {
        // SAFETY: `chan` points to the `chan` field of an `Inner<T>` (the caller's guarantee).
        unsafe { &*kernel::container_of!(chan.cast::<Opaque<ksys::dma_chan>>(), Inner<T>, chan) }
    }

    /// Runs the provider over the active descriptors; true if one is finished (its callback
    /// is due).
    fn process(this: &Arc<Self>) -> bool {
        let chan = ChanRef(this.clone());
        let mut st = this.state.lock();
        if st.released {
            return false;
        }
        let mut active = Active {
            list: &mut st.active,
        };
        this.ops.process(&chan, &mut active);
        // SAFETY: `head`, if not null, is a live descriptor of the active list.
        !st.active.head.is_null() && unsafe { (*st.active.head).finished }
    }

    /// The bottom half: process, then call back finished descriptors in cookie order.
    fn bottom_half(self: Arc<Self>) {
        Self::process(&self);
        loop {
            let d = {
                let mut st = self.state.lock();
                Self::sweep(&mut st);
                let head = st.active.head;
                // SAFETY: `head`, if not null, is a live descriptor of the active list.
                if head.is_null() || !unsafe { (*head).finished } {
                    break;
                }
                let d = st.active.pop().unwrap_or(head);
                // SAFETY: `d` was the active head, live; the channel's cookies are ours under
                // the lock (dma_cookie_complete()).
                unsafe {
                    (*self.chan_ptr()).completed_cookie = (*d).cookie;
                }
                d
            };
            // SAFETY: `d` is live and, off every list, only ours until it is put on `done`.
            unsafe { self.complete(d) };
            let mut st = self.state.lock();
            // SAFETY: `d` is live and in no list.
            unsafe { st.done.push(d) };
            Self::sweep(&mut st);
        }
    }

    /// Reports `d`'s result to its client, unmaps and runs its dependencies.
    ///
    /// # Safety
    ///
    /// `d` is live and in no list.
    unsafe fn complete(&self, d: *mut DescBox<T>) {
        // SAFETY: `d` is live and ours (the caller's guarantee).
        let b = unsafe { &mut *d };
        let txd = b.txd.get();
        let status = b.status.unwrap_or(Status::Aborted);
        let (res, sum) = match status {
            Status::Ok => (ksys::dmaengine_tx_result_DMA_TRANS_NOERROR, 0),
            Status::Sum(s) => (ksys::dmaengine_tx_result_DMA_TRANS_NOERROR, s),
            Status::Aborted => (
                ksys::dmaengine_tx_result_DMA_TRANS_ABORTED,
                SUM_CHECK_P | SUM_CHECK_Q,
            ),
        };
        if !b.result.is_null() {
            // SAFETY: `result` is the client's validation result, valid until its callback has
            // run (the invariant of `DescBox`).
            unsafe { b.result.write(sum as ksys::sum_check_flags) };
        }
        let result = ksys::dmaengine_result {
            result: res,
            residue: 0,
        };
        // SAFETY: `txd` is the live descriptor the client prepared and submitted; its callback
        // fields were set by the client before `tx_submit` and are read once, here
        // (dmaengine_desc_get_callback_invoke()).
        unsafe {
            let cb_result = (*txd).callback_result;
            let cb = (*txd).callback;
            let param = (*txd).callback_param;
            if let Some(f) = cb_result {
                f(param, &result);
            } else if let Some(f) = cb {
                f(param);
            }
            // dma_descriptor_unmap()
            let unmap = (*txd).unmap;
            if !unmap.is_null() {
                ksys::dmaengine_unmap_put(unmap);
                (*txd).unmap = ptr::null_mut();
            }
            ksys::dma_run_dependencies(txd);
        }
    }

    /// Frees the descriptors on `done` that the client has acked.
    fn sweep(st: &mut State<T>) {
        let mut keep = List::new();
        while let Some(d) = st.done.pop() {
            // SAFETY: `d` is a live descriptor of `done`. The client sets `DMA_CTRL_ACK` with a
            // plain write (async_tx_ack()); a stale read only delays the free.
            let acked = unsafe {
                ptr::read_volatile(ptr::addr_of!((*(*d).txd.get()).flags))
                    & ksys::dma_ctrl_flags_DMA_CTRL_ACK
                    != 0
            };
            if acked {
                // SAFETY: `d` came from `KBox::into_raw` in `prep` and is in no list now; the
                // client acked it, so it no longer refers to it.
                drop(unsafe { KBox::from_raw(d) });
                st.live -= 1;
            } else {
                // SAFETY: `d` is live and in no list.
                unsafe { keep.push(d) };
            }
        }
        st.done = keep;
    }

    /// Frees every descriptor still on a list (the channel is no longer used).
    fn free_all(st: &mut State<T>) {
        while let Some(d) = st.done.pop().or_else(|| st.active.pop()) {
            // SAFETY: `d` came from `KBox::into_raw` and is in no list now; no client uses it.
            drop(unsafe { KBox::from_raw(d) });
            st.live -= 1;
        }
    }
}

/// Whether a client's prep flags ask for a fence (`DMA_PREP_FENCE`).
fn fence(flags: c_ulong) -> bool {
    flags as ksys::dma_ctrl_flags & ksys::dma_ctrl_flags_DMA_PREP_FENCE != 0
}

/// The C callbacks of `T`'s device.
struct Callbacks<T>(PhantomData<T>);

impl<T: Operations> Callbacks<T> {
    /// Allocates a descriptor for `req` (`GFP_NOWAIT`) and returns its C part, or null.
    ///
    /// # Safety
    ///
    /// `chan` is the channel of a live `Inner<T>`; `result` is null or valid until the
    /// descriptor's callback has run.
    unsafe fn prep(
        chan: *mut ksys::dma_chan,
        req: &Request<'_>,
        flags: c_ulong,
        result: *mut ksys::sum_check_flags,
    ) -> *mut ksys::dma_async_tx_descriptor {
        // SAFETY: The caller's guarantee.
        let inner = unsafe { Inner::<T>::from_chan(chan) };
        // A client's failed mapping: the request ends aborted without reaching the provider
        // (NULL would make async_tx prepare it again forever). Checking here is also what
        // marks the client's mappings as checked for CONFIG_DMA_API_DEBUG.
        // SAFETY: `dev` is our registered device; its `dev` is the bound parent device.
        let parent = unsafe { (*inner.dev_ptr()).dev };
        // Every address is checked, no short cut: each check marks its own mapping.
        let bad = req
            .kind
            .addrs()
            // SAFETY: `parent` is a live device; the call only compares the address (and
            // looks it up in dma-debug's table).
            .filter(|&a| unsafe { ksys::dma_mapping_error(parent, a) } != 0)
            .count();
        let (desc, status) = if bad != 0 {
            let n = {
                let mut st = inner.state.lock();
                st.refused += 1;
                st.refused
            };
            if n <= 10 {
                pr_err!("a client prepared a request on a failed DMA mapping; aborted ({n})\n");
            }
            (None, Some(Status::Aborted))
        } else {
            let Ok(desc) = inner.ops.prep(req) else {
                return ptr::null_mut();
            };
            (Some(desc), None)
        };
        let b = DescBox {
            txd: Opaque::zeroed(),
            next: ptr::null_mut(),
            status,
            result,
            cookie: 0,
            finished: status.is_some(),
            desc,
        };
        let Ok(b) = KBox::new(b, GFP_NOWAIT) else {
            return ptr::null_mut();
        };
        let d: *mut DescBox<T> = KBox::into_raw(b);
        // SAFETY: `d` is the live, zeroed descriptor just allocated; nothing else sees it yet.
        unsafe {
            let txd = (*d).txd.get();
            // dma_async_tx_descriptor_init(); the ctrl flags are the low bits of the prep
            // flags (DMA_PREP_INTERRUPT, DMA_CTRL_ACK, ...).
            (*txd).chan = chan;
            (*txd).flags = flags as ksys::dma_ctrl_flags;
            (*txd).cookie = EBUSY.to_errno();
            (*txd).tx_submit = Some(Self::tx_submit);
        }
        inner.state.lock().live += 1;
        // CAST: `txd` is the first field of the `#[repr(C)]` `DescBox`, `Opaque` is
        // transparent.
        d.cast()
    }

    /// Builds a slice of `n` addresses from a client's array (empty for null or 0).
    ///
    /// # Safety
    ///
    /// `p` is null or points to `n` addresses valid for `'a`.
    unsafe fn addrs<'a>(p: *const ksys::dma_addr_t, n: c_uint) -> &'a [DmaAddr] {
        if p.is_null() || n == 0 {
            return &[];
        }
        // SAFETY: The caller's guarantee; `dma_addr_t` is `u64` on 64-bit kernels.
        unsafe { core::slice::from_raw_parts(p.cast(), n as usize) }
    }

    /// As [`Self::addrs`] for coefficients.
    ///
    /// # Safety
    ///
    /// As for [`Self::addrs`].
    unsafe fn bytes<'a>(p: *const u8, n: c_uint) -> &'a [u8] {
        if p.is_null() || n == 0 {
            return &[];
        }
        // SAFETY: The caller's guarantee.
        unsafe { core::slice::from_raw_parts(p, n as usize) }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    unsafe extern "C" fn prep_interrupt(
        chan: *mut ksys::dma_chan,
        flags: c_ulong,
    ) -> *mut ksys::dma_async_tx_descriptor {
        let req = Request {
            kind: Kind::Interrupt,
            len: 0,
            fence: fence(flags),
        };
        // SAFETY: dmaengine calls this for our registered channel.
        unsafe { Self::prep(chan, &req, flags, ptr::null_mut()) }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    unsafe extern "C" fn prep_memcpy(
        chan: *mut ksys::dma_chan,
        dst: ksys::dma_addr_t,
        src: ksys::dma_addr_t,
        len: usize,
        flags: c_ulong,
    ) -> *mut ksys::dma_async_tx_descriptor {
        let req = Request {
            kind: Kind::Memcpy { dst, src },
            len,
            fence: fence(flags),
        };
        // SAFETY: dmaengine calls this for our registered channel.
        unsafe { Self::prep(chan, &req, flags, ptr::null_mut()) }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    unsafe extern "C" fn prep_xor(
        chan: *mut ksys::dma_chan,
        dst: ksys::dma_addr_t,
        src: *mut ksys::dma_addr_t,
        cnt: c_uint,
        len: usize,
        flags: c_ulong,
    ) -> *mut ksys::dma_async_tx_descriptor {
        // SAFETY: The client passes `cnt` source addresses.
        let srcs = unsafe { Self::addrs(src, cnt) };
        let req = Request {
            kind: Kind::Xor { dst, srcs },
            len,
            fence: fence(flags),
        };
        // SAFETY: dmaengine calls this for our registered channel.
        unsafe { Self::prep(chan, &req, flags, ptr::null_mut()) }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    unsafe extern "C" fn prep_xor_val(
        chan: *mut ksys::dma_chan,
        src: *mut ksys::dma_addr_t,
        cnt: c_uint,
        len: usize,
        result: *mut ksys::sum_check_flags,
        flags: c_ulong,
    ) -> *mut ksys::dma_async_tx_descriptor {
        // SAFETY: The client passes `cnt` source addresses.
        let srcs = unsafe { Self::addrs(src, cnt) };
        let req = Request {
            kind: Kind::XorVal { srcs },
            len,
            fence: fence(flags),
        };
        // SAFETY: dmaengine calls this for our registered channel; `result` is the client's,
        // valid until its callback (the dmaengine contract).
        unsafe { Self::prep(chan, &req, flags, result) }
    }

    /// P and Q of a P+Q request: absent when disabled by the flags.
    ///
    /// # Safety
    ///
    /// `pq` points to two addresses.
    unsafe fn pq_dsts(pq: *const ksys::dma_addr_t, flags: c_ulong) -> [Option<DmaAddr>; 2] {
        let fl = flags as ksys::dma_ctrl_flags;
        // SAFETY: The caller's guarantee.
        let (p, q) = unsafe { (*pq, *pq.add(1)) };
        [
            (fl & ksys::dma_ctrl_flags_DMA_PREP_PQ_DISABLE_P == 0).then_some(p),
            (fl & ksys::dma_ctrl_flags_DMA_PREP_PQ_DISABLE_Q == 0).then_some(q),
        ]
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    unsafe extern "C" fn prep_pq(
        chan: *mut ksys::dma_chan,
        dst: *mut ksys::dma_addr_t,
        src: *mut ksys::dma_addr_t,
        cnt: c_uint,
        scf: *const u8,
        len: usize,
        flags: c_ulong,
    ) -> *mut ksys::dma_async_tx_descriptor {
        // SAFETY: The client passes P and Q, `cnt` sources and `cnt` coefficients.
        let ([p, q], srcs, scf) =
            unsafe { (Self::pq_dsts(dst, flags), Self::addrs(src, cnt), Self::bytes(scf, cnt)) };
        let cont = flags as ksys::dma_ctrl_flags & ksys::dma_ctrl_flags_DMA_PREP_CONTINUE != 0;
        let req = Request {
            kind: Kind::Pq {
                p,
                q,
                srcs,
                scf,
                cont,
            },
            len,
            fence: fence(flags),
        };
        // SAFETY: dmaengine calls this for our registered channel.
        unsafe { Self::prep(chan, &req, flags, ptr::null_mut()) }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    unsafe extern "C" fn prep_pq_val(
        chan: *mut ksys::dma_chan,
        pq: *mut ksys::dma_addr_t,
        src: *mut ksys::dma_addr_t,
        cnt: c_uint,
        scf: *const u8,
        len: usize,
        pqres: *mut ksys::sum_check_flags,
        flags: c_ulong,
    ) -> *mut ksys::dma_async_tx_descriptor {
        // SAFETY: The client passes P and Q, `cnt` sources and `cnt` coefficients.
        let ([p, q], srcs, scf) =
            unsafe { (Self::pq_dsts(pq, flags), Self::addrs(src, cnt), Self::bytes(scf, cnt)) };
        let req = Request {
            kind: Kind::PqVal { p, q, srcs, scf },
            len,
            fence: fence(flags),
        };
        // SAFETY: dmaengine calls this for our registered channel; `pqres` is the client's,
        // valid until its callback.
        unsafe { Self::prep(chan, &req, flags, pqres) }
    }

    /// `tx_submit`: assigns the next cookie and queues the descriptor (started at the next
    /// `issue_pending`).
    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    unsafe extern "C" fn tx_submit(txd: *mut ksys::dma_async_tx_descriptor) -> ksys::dma_cookie_t {
        // CAST: every descriptor of ours is a `DescBox<T>` with `txd` first.
        let d = txd.cast::<DescBox<T>>();
        // SAFETY: `txd` is a descriptor we prepared, live until acked and completed; its
        // channel is ours.
        let inner = unsafe { Inner::<T>::from_chan((*txd).chan) };
        let mut st = inner.state.lock();
        // SAFETY: The channel's cookie is ours under the lock (dma_cookie_assign()); `d` is
        // live and submitted once (a client may not submit a descriptor twice).
        unsafe {
            let chan = inner.chan_ptr();
            let mut cookie = (*chan).cookie.wrapping_add(1);
            if cookie < MIN_COOKIE {
                cookie = MIN_COOKIE;
            }
            (*chan).cookie = cookie;
            (*txd).cookie = cookie;
            (*d).cookie = cookie;
            st.active.push(d);
            cookie
        }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    unsafe extern "C" fn tx_status(
        chan: *mut ksys::dma_chan,
        cookie: ksys::dma_cookie_t,
        state: *mut ksys::dma_tx_state,
    ) -> ksys::dma_status {
        // SAFETY: dmaengine calls this for our registered channel.
        let inner = unsafe { Inner::<T>::from_chan(chan) };
        let _st = inner.state.lock();
        // SAFETY: The cookies are ours under the lock; `state` is null or the caller's.
        let (used, last) = unsafe { ((*chan).cookie, (*chan).completed_cookie) };
        if !state.is_null() {
            // SAFETY: As above.
            unsafe {
                state.write(ksys::dma_tx_state {
                    last,
                    used,
                    residue: 0,
                    in_flight_bytes: 0,
                })
            };
        }
        // dma_async_is_complete()
        let done = if last <= used {
            cookie <= last || cookie > used
        } else {
            cookie <= last && cookie > used
        };
        if done {
            ksys::dma_status_DMA_COMPLETE
        } else {
            ksys::dma_status_DMA_IN_PROGRESS
        }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    unsafe extern "C" fn issue_pending(chan: *mut ksys::dma_chan) {
        // SAFETY: dmaengine calls this for our registered channel, whose `Inner` is alive and
        // owned by an `Arc` (dmaengine's reference).
        let inner = unsafe { Inner::<T>::from_chan(chan) };
        // SAFETY: `inner` is in an `Arc`'s allocation that dmaengine's reference keeps alive
        // for this call; a new reference is taken for its duration.
        let arc: Arc<Inner<T>> = unsafe { ArcBorrow::from_raw(ptr::from_ref(inner)) }.into();
        if Inner::process(&arc) {
            Inner::kick(&arc);
        }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    unsafe extern "C" fn alloc_chan_resources(chan: *mut ksys::dma_chan) -> c_int {
        // SAFETY: dmaengine calls this for our registered channel.
        let inner = unsafe { Inner::<T>::from_chan(chan) };
        if let Err(e) = inner.ops.alloc_chan_resources() {
            return e.to_errno();
        }
        let mut st = inner.state.lock();
        st.released = false;
        // SAFETY: dma_cookie_init(), under the lock.
        unsafe {
            (*chan).cookie = MIN_COOKIE;
            (*chan).completed_cookie = MIN_COOKIE;
        }
        0
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    unsafe extern "C" fn free_chan_resources(chan: *mut ksys::dma_chan) {
        // SAFETY: dmaengine calls this for our registered channel.
        let inner = unsafe { Inner::<T>::from_chan(chan) };
        {
            let mut st = inner.state.lock();
            Inner::sweep(&mut st);
            if !st.active.head.is_null() {
                pr_warn!("dmaengine: channel released with operations in flight\n");
            }
        }
        inner.ops.free_chan_resources();
    }

    /// `device_release`: dmaengine's last reference is gone.
    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    unsafe extern "C" fn release(dev: *mut ksys::dma_device) {
        // SAFETY: `dev` is the `dev` field of the `Inner<T>` whose `Arc` reference
        // `Registration::new` gave to dmaengine; this is dmaengine's last use of it.
        let inner = unsafe {
            Arc::from_raw(kernel::container_of!(
                dev.cast::<Opaque<ksys::dma_device>>(),
                Inner<T>,
                dev
            ))
        };
        {
            let mut st = inner.state.lock();
            st.released = true;
            Inner::free_all(&mut st);
        }
        drop(inner);
    }
}

/// A registered DMA engine device with one channel, driven by `T`.
///
/// # Invariants
///
/// `inner` is registered with dmaengine, which holds one reference to it (given back in
/// `device_release`).
pub struct Registration<T: Operations> {
    inner: Arc<Inner<T>>,
}

impl<T: Operations> Registration<T> {
    /// Registers a DMA device of `dev` (a bound device: the channel's parent, whose driver's
    /// module dmaengine pins while the channel is used) with one channel offering `caps`,
    /// driven by the provider `ops` initialises.
    pub fn new(
        dev: &device::Device<Bound>,
        caps: Caps,
        ops: impl PinInit<T, Error>,
    ) -> Result<Self> {
        if usize::from(caps.max_xor) > MAX_SRCS || usize::from(caps.max_pq) > MAX_SRCS {
            return Err(EINVAL);
        }
        let inner = Arc::pin_init(
            pin_init!(Inner {
                dev: Opaque::zeroed(),
                chan: Opaque::zeroed(),
                state <- new_irq_safe_lock!(
                    State {
                        active: List::new(),
                        done: List::new(),
                        live: 0,
                        refused: 0,
                        released: false,
                    },
                    "dmaengine::chan"
                ),
                work <- new_work!("dmaengine::bh"),
                dwork <- new_delayed_work!(),
                caps,
                ops <- ops,
            }? Error),
            GFP_KERNEL,
        )?;
        let d = inner.dev_ptr();
        let c = inner.chan_ptr();
        // CAST: `device::Device` is transparent over `bindings::device` (= `ksys::device`).
        let parent = ptr::from_ref(dev).cast::<ksys::device>().cast_mut();
        // SAFETY: `d` and `c` are zeroed, pinned in the `Arc`'s allocation and not yet known
        // to anyone; the list heads are set up as INIT_LIST_HEAD + list_add_tail would.
        unsafe {
            let channels = ptr::addr_of_mut!((*d).channels);
            let node = ptr::addr_of_mut!((*c).device_node);
            (*channels).next = node;
            (*channels).prev = node;
            (*node).next = channels;
            (*node).prev = channels;
            (*c).device = d;
            (*d).dev = parent;
            let mut mask: c_ulong = 0;
            let mut cap = |on: bool, t: ksys::dma_transaction_type| {
                if on {
                    mask |= 1 << t;
                }
            };
            cap(caps.interrupt, ksys::dma_transaction_type_DMA_INTERRUPT);
            cap(caps.memcpy, ksys::dma_transaction_type_DMA_MEMCPY);
            cap(caps.xor, ksys::dma_transaction_type_DMA_XOR);
            cap(caps.xor_val, ksys::dma_transaction_type_DMA_XOR_VAL);
            cap(caps.pq, ksys::dma_transaction_type_DMA_PQ);
            cap(caps.pq_val, ksys::dma_transaction_type_DMA_PQ_VAL);
            (*d).cap_mask.bits[0] = mask;
            (*d).max_xor = caps.max_xor;
            (*d).max_pq = caps.max_pq | if caps.pq_continue { 1 << 15 } else { 0 };
            let align = ksys::dmaengine_alignment::from(caps.align_log2);
            (*d).copy_align = align;
            (*d).xor_align = align;
            (*d).pq_align = align;
            (*d).fill_align = align;
            (*d).device_alloc_chan_resources = Some(Callbacks::<T>::alloc_chan_resources);
            (*d).device_free_chan_resources = Some(Callbacks::<T>::free_chan_resources);
            if caps.interrupt {
                (*d).device_prep_dma_interrupt = Some(Callbacks::<T>::prep_interrupt);
            }
            if caps.memcpy {
                (*d).device_prep_dma_memcpy = Some(Callbacks::<T>::prep_memcpy);
            }
            if caps.xor {
                (*d).device_prep_dma_xor = Some(Callbacks::<T>::prep_xor);
            }
            if caps.xor_val {
                (*d).device_prep_dma_xor_val = Some(Callbacks::<T>::prep_xor_val);
            }
            if caps.pq {
                (*d).device_prep_dma_pq = Some(Callbacks::<T>::prep_pq);
            }
            if caps.pq_val {
                (*d).device_prep_dma_pq_val = Some(Callbacks::<T>::prep_pq_val);
            }
            (*d).device_tx_status = Some(Callbacks::<T>::tx_status);
            (*d).device_issue_pending = Some(Callbacks::<T>::issue_pending);
            (*d).device_release = Some(Callbacks::<T>::release);
        }
        // dmaengine's reference, given back in `release` (or below on failure).
        let raw = Arc::into_raw(inner.clone());
        // SAFETY: `d` is a fully set up device with one channel; it stays valid until
        // `release` (the `Arc` reference just leaked).
        let rc = unsafe { ksys::dma_async_device_register(d) };
        if rc != 0 {
            // SAFETY: Registration failed: dmaengine keeps no reference (it calls no
            // `device_release` on this path); take ours back.
            drop(unsafe { Arc::from_raw(raw) });
            return Err(Error::from_errno(rc));
        }
        // INVARIANT: registered; dmaengine holds `raw`.
        Ok(Self { inner })
    }

    /// The channel's name as dmaengine shows it (`dma<N>chan<M>`): its device and channel
    /// numbers.
    pub fn ids(&self) -> (i32, i32) {
        // SAFETY: Set by registration, read-only afterwards.
        unsafe { ((*self.inner.dev_ptr()).dev_id, (*self.inner.chan_ptr()).chan_id) }
    }

    /// The channel's capabilities.
    pub fn caps(&self) -> &Caps {
        &self.inner.caps
    }

    /// The provider.
    pub fn ops(&self) -> &T {
        &self.inner.ops
    }

    /// Descriptors allocated and not yet freed.
    pub fn live_descriptors(&self) -> usize {
        self.inner.state.lock().live
    }

    /// Requests refused because they named a failed mapping (`DMA_MAPPING_ERROR`).
    pub fn refused(&self) -> u64 {
        self.inner.state.lock().refused
    }
}

impl<T: Operations> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: Registered (the type invariant); unregistering drops dmaengine's device
        // reference, which ends in `release` now or when the last client puts the channel.
        unsafe { ksys::dma_async_device_unregister(self.inner.dev_ptr()) };
    }
}
