// SPDX-License-Identifier: GPL-2.0
//! [`Registration`]: a `dma_device` with one channel set up from [`Caps`] and the provider's
//! callbacks, registered with `dma_async_device_register()`; dropping it unregisters it.

use core::ptr;

use kapi::new_irq_safe_lock;
use kernel::{
    device::{
        self,
        Bound, //
    },
    ffi::c_ulong,
    new_delayed_work, new_work,
    prelude::*,
    sync::Arc,
    types::Opaque,
};

use crate::{
    callbacks::Callbacks,
    chan::{
        Inner,
        State, //
    },
    desc::List,
    Caps,
    Operations,
    MAX_SRCS, //
};

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
        unsafe {
            (
                (*self.inner.dev_ptr()).dev_id,
                (*self.inner.chan_ptr()).chan_id,
            )
        }
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
