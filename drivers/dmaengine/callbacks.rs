// SPDX-License-Identifier: GPL-2.0
//! The C callbacks of a channel other than preparation (`prep.rs`): `tx_submit` (cookies),
//! `tx_status`, `issue_pending`, the channel's resources (`alloc_chan_resources`,
//! `free_chan_resources`) and `device_release`, dmaengine's last reference.

use core::{
    marker::PhantomData,
    ptr, //
};

use kernel::{
    ffi::c_int,
    prelude::*,
    sync::{
        Arc,
        ArcBorrow, //
    },
    types::Opaque,
};

use crate::{
    chan::Inner,
    desc::DescBox,
    Operations,
    MIN_COOKIE, //
};

/// The C callbacks of `T`'s device: the ones below, and the `device_prep_dma_*` ones in
/// `prep.rs`.
pub(crate) struct Callbacks<T>(PhantomData<T>);

impl<T: Operations> Callbacks<T> {
    /// `tx_submit`: assigns the next cookie and queues the descriptor (started at the next
    /// `issue_pending`).
    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    pub(crate) unsafe extern "C" fn tx_submit(
        txd: *mut ksys::dma_async_tx_descriptor,
    ) -> ksys::dma_cookie_t {
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
    pub(crate) unsafe extern "C" fn tx_status(
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
    pub(crate) unsafe extern "C" fn issue_pending(chan: *mut ksys::dma_chan) {
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
    pub(crate) unsafe extern "C" fn alloc_chan_resources(chan: *mut ksys::dma_chan) -> c_int {
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
    pub(crate) unsafe extern "C" fn free_chan_resources(chan: *mut ksys::dma_chan) {
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
    pub(crate) unsafe extern "C" fn release(dev: *mut ksys::dma_device) {
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
