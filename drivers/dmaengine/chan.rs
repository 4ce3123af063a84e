// SPDX-License-Identifier: GPL-2.0
//! The channel: the `dma_device`, its one `dma_chan` and the provider in one reference
//! counted allocation ([`Inner`]), the channel's [`State`] under its lock, the bottom-half
//! work item that runs the provider and calls clients back in cookie order, and [`ChanRef`],
//! the provider's handle for its asynchronous paths.

use core::ptr;

use kapi::IrqSafeLock;
use kernel::{
    impl_has_delayed_work, impl_has_work,
    prelude::*,
    sync::Arc,
    time::Jiffies,
    types::Opaque,
    workqueue::{
        self,
        DelayedWork,
        Work,
        WorkItem, //
    },
};

use crate::{
    desc::{
        Active,
        DescBox,
        List, //
    },
    Caps,
    Operations,
    Status,
    SUM_CHECK_P,
    SUM_CHECK_Q, //
};

/// The channel's state under its lock.
pub(crate) struct State<T: Operations> {
    /// Submitted, not yet called back (cookie order).
    pub(crate) active: List<T>,
    /// Called back, waiting for the client's `DMA_CTRL_ACK`.
    pub(crate) done: List<T>,
    /// Descriptors allocated and not freed (for the counters and the release check).
    pub(crate) live: usize,
    /// Requests refused for a failed mapping (they ended aborted).
    pub(crate) refused: u64,
    /// The channel has been released by dmaengine: every callback is over.
    pub(crate) released: bool,
}

// SAFETY: The raw pointers are descriptors owned by the channel, only used under its lock.
unsafe impl<T: Operations> Send for State<T> {}

/// The device, its channel and the provider, in one allocation.
///
/// # Invariants
///
/// `dev` and `chan` are set up by [`crate::Registration::new`] before registration and then
/// only changed by dmaengine, or under `state` (the channel's cookies).
#[pin_data]
pub(crate) struct Inner<T: Operations> {
    pub(crate) dev: Opaque<ksys::dma_device>,
    pub(crate) chan: Opaque<ksys::dma_chan>,
    #[pin]
    pub(crate) state: IrqSafeLock<State<T>>,
    #[pin]
    pub(crate) work: Work<Inner<T>, 0>,
    #[pin]
    pub(crate) dwork: DelayedWork<Inner<T>, 1>,
    pub(crate) caps: Caps,
    #[pin]
    pub(crate) ops: T,
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
    pub(crate) fn kick(this: &Arc<Self>) {
        // An `Err` is "already queued": it will run and see this kick's work too.
        let _ = workqueue::system_bh().enqueue::<Arc<Inner<T>>, 0>(this.clone());
    }

    pub(crate) fn dev_ptr(&self) -> *mut ksys::dma_device {
        self.dev.get()
    }

    pub(crate) fn chan_ptr(&self) -> *mut ksys::dma_chan {
        self.chan.get()
    }

    /// The `Inner` of a channel of ours.
    ///
    /// # Safety
    ///
    /// `chan` is the channel of an `Inner<T>` that is alive for `'a`.
    pub(crate) unsafe fn from_chan<'a>(chan: *mut ksys::dma_chan) -> &'a Self {
        // SAFETY: `chan` points to the `chan` field of an `Inner<T>` (the caller's guarantee).
        unsafe { &*kernel::container_of!(chan.cast::<Opaque<ksys::dma_chan>>(), Inner<T>, chan) }
    }

    /// Runs the provider over the active descriptors; true if one is finished (its callback
    /// is due).
    pub(crate) fn process(this: &Arc<Self>) -> bool {
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
    pub(crate) fn sweep(st: &mut State<T>) {
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
    pub(crate) fn free_all(st: &mut State<T>) {
        while let Some(d) = st.done.pop().or_else(|| st.active.pop()) {
            // SAFETY: `d` came from `KBox::into_raw` and is in no list now; no client uses it.
            drop(unsafe { KBox::from_raw(d) });
            st.live -= 1;
        }
    }
}
