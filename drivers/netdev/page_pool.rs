// SPDX-License-Identifier: GPL-2.0
//! Page pools (`include/net/page_pool/`): receive buffers that the pool keeps DMA-mapped
//! (`PP_FLAG_DMA_MAP`, `DMA_FROM_DEVICE`), syncs for the device when it hands them out again
//! (`PP_FLAG_DMA_SYNC_DEV`) and recycles when the stack frees the skbs built over them.

use core::ptr::NonNull;

use kernel::{
    device::{
        self,
        Bound, //
    },
    prelude::*,
};

use crate::{
    napi::NapiContext,
    skb::SkBuff, //
};

/// The parameters of [`PagePool::new`].
#[derive(Clone, Copy, Debug)]
pub struct PagePoolParams {
    /// The number of pages the pool's ring keeps (typically the RX ring's size).
    pub pool_size: u32,
    /// The page order (0: single pages).
    pub order: u32,
    /// The NUMA node (-1: any).
    pub nid: i32,
    /// Map the pages `DMA_BIDIRECTIONAL` rather than `DMA_FROM_DEVICE`: the device also
    /// reads them (a received frame an XDP program sends back out, `XDP_TX`).
    pub bidirectional: bool,
}

impl Default for PagePoolParams {
    fn default() -> Self {
        Self {
            pool_size: 1024,
            order: 0,
            nid: -1,
            bidirectional: false,
        }
    }
}

/// A page pool whose pages are mapped for a device to write (`page_pool_create()`).
///
/// Pages are allocated by one consumer at a time (the RX ring's NAPI poll, or its owner while
/// the instance is disabled): hence [`PagePool::alloc`] takes `&mut self` and the pool is not
/// `Sync`. They go back from any context. Dropping the pool destroys it
/// (`page_pool_destroy()`); the pages still in skbs or [`PoolPage`]s keep it alive until
/// they are returned.
///
/// # Invariants
///
/// `raw` is a pool created by `page_pool_create()` with `PP_FLAG_DMA_MAP`, destroyed in drop.
pub struct PagePool {
    raw: NonNull<ksys::page_pool>,
    order: u32,
}

// SAFETY: The pool may be used and destroyed from any thread, one at a time (not `Sync`).
unsafe impl Send for PagePool {}

impl PagePool {
    /// Creates a pool of pages mapped `DMA_FROM_DEVICE` (or `DMA_BIDIRECTIONAL`) for `dev`; a
    /// recycled page is synced for the device, whole, before it is handed out again.
    #[inline]
    pub fn new(dev: &device::Device<Bound>, params: PagePoolParams) -> Result<Self> {
        let mut p: ksys::page_pool_params = pin_init::zeroed();
        // CAST: `device::Device` wraps `bindings::device`, which is `ksys::device`.
        let raw_dev = core::ptr::from_ref(dev).cast::<ksys::device>().cast_mut();
        // SAFETY: Writes the `fast` and `slow` groups of the zeroed parameters through their
        // anonymous members (unions of the named groups and their fields).
        unsafe {
            let fast = &mut *p.__bindgen_anon_1.__bindgen_anon_1.as_mut();
            fast.order = params.order;
            fast.pool_size = params.pool_size;
            fast.nid = params.nid;
            fast.dev = raw_dev;
            fast.dma_dir = if params.bidirectional {
                ksys::dma_data_direction_DMA_BIDIRECTIONAL
            } else {
                ksys::dma_data_direction_DMA_FROM_DEVICE
            };
            fast.max_len = (kernel::page::PAGE_SIZE << params.order) as u32;
            fast.offset = 0;
            let slow = &mut p.__bindgen_anon_2.__bindgen_anon_1;
            slow.flags = ksys::KSYS_CONST_PP_FLAG_DMA_MAP | ksys::KSYS_CONST_PP_FLAG_DMA_SYNC_DEV;
        }
        // SAFETY: Valid parameters; `dev` is a bound device (its DMA configuration is set).
        // The pool takes a reference to it.
        let raw = unsafe { ksys::page_pool_create(&p) };
        let raw = kernel::error::from_err_ptr(raw)?;
        // INVARIANT: Created with `PP_FLAG_DMA_MAP` (and `PP_FLAG_DMA_SYNC_DEV`).
        Ok(Self {
            raw: NonNull::new(raw).ok_or(ENOMEM)?,
            order: params.order,
        })
    }

    /// The C pool, for the other abstractions of this crate (XDP's memory model).
    pub(crate) fn as_raw(&self) -> *mut ksys::page_pool {
        self.raw.as_ptr()
    }

    /// Allocates a page (`page_pool_dev_alloc_pages()`, atomic); `None` if out of memory.
    /// From softirq context or with BH disabled (the NAPI poll), or in process context
    /// while the ring's NAPI instance is disabled.
    #[inline]
    pub fn alloc(&mut self) -> Option<PoolPage> {
        // SAFETY: The pool is live (type invariant) and has one consumer (`&mut self`).
        let page = unsafe { ksys::page_pool_dev_alloc_pages(self.raw.as_ptr()) };
        // INVARIANT: A page of this pool, owned by the new handle.
        Some(PoolPage {
            page: NonNull::new(page)?,
            pool: self.raw,
            size: (kernel::page::PAGE_SIZE << self.order) as u32,
        })
    }
}

impl Drop for PagePool {
    fn drop(&mut self) {
        // SAFETY: Destroyed once; pages in flight keep the C pool alive until they return.
        unsafe { ksys::page_pool_destroy(self.raw.as_ptr()) };
    }
}

/// A page of a [`PagePool`], mapped for the device. Dropping it returns it to the pool.
///
/// # Invariants
///
/// `page` was allocated from `pool` (which lives until its pages are returned), is owned by
/// this handle and is `size` bytes.
pub struct PoolPage {
    page: NonNull<kernel::bindings::page>,
    pool: NonNull<ksys::page_pool>,
    size: u32,
}

// SAFETY: A page may be returned to its pool from any thread (`allow_direct` is false).
unsafe impl Send for PoolPage {}

// SAFETY: `&PoolPage` only reads.
unsafe impl Sync for PoolPage {}

impl PoolPage {
    /// The device address of the page's start, for the RX descriptor.
    #[inline]
    pub fn dma_addr(&self) -> u64 {
        // SAFETY: A page of a `PP_FLAG_DMA_MAP` pool (type invariant).
        unsafe { ksys::page_pool_get_dma_addr(self.page.as_ptr()) }
    }

    /// The page's size in bytes.
    #[inline]
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Makes `len` bytes at `offset` that the device wrote visible to the CPU
    /// (`page_pool_dma_sync_for_cpu()`); then [`PoolPage::data`] reads them.
    #[inline]
    pub fn sync_for_cpu(&self, offset: u32, len: u32) -> Result {
        if offset.checked_add(len).is_none_or(|e| e > self.size) {
            return Err(EINVAL);
        }
        // SAFETY: A mapped page of `pool`; the range is within it.
        unsafe {
            ksys::page_pool_dma_sync_for_cpu(self.pool.as_ptr(), self.page.as_ptr(), offset, len)
        };
        Ok(())
    }

    /// Gives `len` bytes at `offset` back to the device after the CPU read them
    /// (`dma_sync_single_range_for_device()`): for a page the driver posts again itself
    /// instead of letting it go back to the pool (e.g. a small frame copied out of it).
    #[inline]
    pub fn sync_for_device(&self, offset: u32, len: u32) -> Result {
        if offset.checked_add(len).is_none_or(|e| e > self.size) {
            return Err(EINVAL);
        }
        // SAFETY: A mapped page of `pool` (a `PP_FLAG_DMA_MAP` pool, which has a device and a
        // DMA direction); the range is within it.
        unsafe {
            ksys::page_pool_dma_sync_for_device(
                self.pool.as_ptr(),
                self.page.as_ptr(),
                offset,
                len,
            )
        };
        Ok(())
    }

    /// The page's bytes (meaningful after [`PoolPage::sync_for_cpu`]).
    #[inline]
    pub fn data(&self) -> &[u8] {
        // SAFETY: The owned page is mapped in the kernel (pool pages are lowmem) for `size`
        // bytes; the device writes it only while it is posted, which needs the handle.
        unsafe {
            core::slice::from_raw_parts(
                ksys::page_address(self.page.as_ptr()).cast::<u8>(),
                self.size as usize,
            )
        }
    }

    /// The page's bytes, to be changed (after [`PoolPage::sync_for_cpu`]; e.g. a driver
    /// rewriting the headers of a packet the device merged before it builds the skb).
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: As in `data`; the handle is borrowed mutably, so no other slice of the
        // page's bytes exists, and the device does not write a page that is not posted.
        unsafe {
            core::slice::from_raw_parts_mut(
                ksys::page_address(self.page.as_ptr()).cast::<u8>(),
                self.size as usize,
            )
        }
    }

    /// Gives the page away without returning it (its reference moves to an skb, or to an
    /// XDP frame that a redirect target returns to the pool).
    pub(crate) fn into_raw(self) -> *mut kernel::bindings::page {
        let p = self.page.as_ptr();
        core::mem::forget(self);
        p
    }

    /// Builds an skb over the page (`napi_build_skb()`): the packet is `len` bytes at
    /// `headroom`; the page's end holds the shared info (`truesize` is the page). The skb is
    /// marked for recycling, so freeing it returns the page to the pool.
    #[inline]
    pub fn build_skb(self, _napi: &NapiContext, headroom: u32, len: u32) -> Result<SkBuff> {
        let shinfo = shinfo_size();
        if headroom
            .checked_add(len)
            .and_then(|e| e.checked_add(shinfo))
            .is_none_or(|e| e > self.size)
        {
            return Err(EINVAL);
        }
        // SAFETY: The page is owned and mapped in the kernel; `napi_build_skb()` uses its
        // `size` bytes as the skb's head (shared info at the end, checked to fit above). We
        // are in NAPI context (`_napi`).
        let raw =
            unsafe { ksys::napi_build_skb(ksys::page_address(self.page.as_ptr()), self.size) };
        // SAFETY: NULL or a fresh skb we own.
        let mut skb = unsafe { SkBuff::from_new(raw)? };
        // The skb holds the page's reference now: do not return it (even if what follows
        // fails, freeing the recycle-marked skb returns the page).
        let _ = self.into_raw();
        // SAFETY: The skb is fresh and owned; its page came from a page pool.
        unsafe { ksys::skb_mark_for_recycle(skb.as_raw()) };
        skb.reserve(headroom)?;
        skb.put(len)?;
        Ok(skb)
    }

    /// Adds `len` bytes at `offset` of the page to `skb` as its next fragment
    /// (`skb_add_rx_frag()`), accounting `truesize` bytes of memory, and marks the skb for
    /// recycling. `EINVAL` (the page is returned) if the skb has `MAX_SKB_FRAGS` fragments
    /// or the range is not in the page.
    #[inline]
    pub fn add_to_skb(self, skb: &mut SkBuff, offset: u32, len: u32, truesize: u32) -> Result {
        let i = skb.nr_frags();
        if i >= ksys::MAX_SKB_FRAGS as usize
            || offset.checked_add(len).is_none_or(|e| e > self.size)
        {
            return Err(EINVAL);
        }
        // SAFETY: The skb is owned, with room for fragment `i`; the page's reference moves
        // to it. A page pool page in an skb requires the recycle mark.
        unsafe {
            ksys::skb_add_rx_frag(
                skb.as_raw(),
                i as i32,
                self.into_raw(),
                offset as i32,
                len as i32,
                truesize,
            );
            ksys::skb_mark_for_recycle(skb.as_raw());
        }
        Ok(())
    }
}

impl Drop for PoolPage {
    fn drop(&mut self) {
        // SAFETY: The owned page goes back to its pool, which lives until it has; not
        // `allow_direct`: any context.
        unsafe { ksys::page_pool_put_full_page(self.pool.as_ptr(), self.page.as_ptr(), false) };
    }
}

/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`: the tail of a page that
/// `napi_build_skb()` keeps for the shared info (cache-line aligned).
const fn shinfo_size() -> u32 {
    let shinfo = core::mem::size_of::<kernel::bindings::skb_shared_info>() as u32;
    (shinfo + 63) & !63
}

/// The most packet bytes [`PoolPage::build_skb`] takes from a page of `size` bytes after
/// `headroom` bytes: the page minus the headroom and the cache-aligned shared info at its end.
#[inline]
pub const fn build_skb_room(size: u32, headroom: u32) -> u32 {
    size.saturating_sub(headroom).saturating_sub(shinfo_size())
}
