// SPDX-License-Identifier: GPL-2.0
//! AF_XDP zero copy (`include/net/xdp_sock_drv.h`): the buffer pool of a socket bound to one of
//! the device's queues with `XDP_ZEROCOPY` ([`XskPool`], over `struct xsk_buff_pool`), which
//! `ndo_bpf`'s `XDP_SETUP_XSK_POOL` hands the driver ([`crate::DeviceOps::xdp_setup_xsk_pool`]).
//!
//! The driver's receive queue fills its WQEs with the pool's buffers (user memory the pool
//! maps for the device, [`XskPool::dma_map`]) through the queue's exclusive [`XskRxq`]
//! (the pool's fill ring and free list have one consumer), runs the XDP program on each
//! received frame ([`XskFrame`]) and lets XDP_REDIRECT put it in the socket's RX ring without
//! a copy; XDP_PASS copies it into an skb. Its send queue takes the frames the socket queued
//! through the exclusive [`XskTx`] and reports their completion.
//!
//! Lifetime: the stack frees the pool after the driver was told to let it go (the
//! `XDP_SETUP_XSK_POOL` without a pool, RTNL held). [`XskPool`] is a counted handle (every
//! buffer holds one); the binding waits, in that call, until the driver dropped the last one,
//! so no handle outlives the pool (mlx5e's `synchronize_net()` after closing the XSK queues,
//! en/xsk/setup.c `mlx5e_close_xsk`).

use core::{
    cell::UnsafeCell,
    ptr::NonNull,
    sync::atomic::{
        AtomicBool,
        Ordering, //
    },
};

use kernel::{
    device::{
        self,
        Bound, //
    },
    prelude::*,
    sync::{
        Arc,
        Completion, //
    },
    types::Opaque,
};

use crate::{
    napi::NapiContext,
    skb::SkBuff,
    xdp::{
        register_rxq,
        BpfProg,
        XdpAction, //
    },
    Device,
};

/// Signalled when the last handle of a pool is gone.
#[pin_data]
struct Released {
    #[pin]
    done: Completion,
}

/// What the handles of one pool share.
///
/// # Invariants
///
/// `raw` is a live pool until `released` is signalled (the binding holds the stack's call
/// that would free it until then); `mapped`: its buffers are mapped for the device.
struct PoolInner {
    raw: NonNull<ksys::xsk_buff_pool>,
    mapped: AtomicBool,
    rx_taken: AtomicBool,
    tx_taken: AtomicBool,
    released: Arc<Released>,
}

// SAFETY: The pool may be used from any thread; the parts with one consumer (fill ring and
// free list, TX ring) are reached only through the exclusive `XskRxq` and `XskTx`.
unsafe impl Send for PoolInner {}

// SAFETY: As for `Send`: `&PoolInner` reads the pool's constant fields or maps it once.
unsafe impl Sync for PoolInner {}

impl Drop for PoolInner {
    fn drop(&mut self) {
        if *self.mapped.get_mut() {
            // SAFETY: The pool is live (type invariant) and mapped by `dma_map`; no buffer is
            // posted to the device any more (every buffer holds a handle).
            unsafe { ksys::xsk_pool_dma_unmap(self.raw.as_ptr()) };
        }
        self.released.done.complete_all();
    }
}

/// A counted handle of the buffer pool of an AF_XDP socket bound to one of the device's queues
/// in zero-copy mode (`struct xsk_buff_pool`).
#[derive(Clone)]
pub struct XskPool(Arc<PoolInner>);

impl XskPool {
    fn raw(&self) -> *mut ksys::xsk_buff_pool {
        self.0.raw.as_ptr()
    }

    /// Whether `self` and `other` are handles of the same pool.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        self.0.raw == other.0.raw
    }

    /// The size of the pool's chunks, one frame each (`xsk_pool_get_chunk_size()`).
    pub fn chunk_size(&self) -> u32 {
        // SAFETY: Live pool (type invariant); reads a constant field.
        unsafe { ksys::xsk_pool_get_chunk_size(self.raw()) }
    }

    /// The bytes in front of a received frame in its chunk (`xsk_pool_get_headroom()`).
    pub fn headroom(&self) -> u32 {
        // SAFETY: As in `chunk_size`.
        unsafe { ksys::xsk_pool_get_headroom(self.raw()) }
    }

    /// The most bytes the device may write into one buffer (`xsk_pool_get_rx_frame_size()`).
    pub fn rx_frame_size(&self) -> u32 {
        // SAFETY: As in `chunk_size`.
        unsafe { ksys::xsk_pool_get_rx_frame_size(self.raw()) }
    }

    /// Maps the pool's memory for `dev` (`xsk_pool_dma_map()`, once; unmapped when the last
    /// handle goes), as the stack requires before the `XDP_SETUP_XSK_POOL` that handed the
    /// pool over returns.
    pub fn dma_map(&self, dev: &device::Device<Bound>) -> Result {
        if self
            .0
            .mapped
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Ok(());
        }
        // CAST: `device::Device` wraps `bindings::device` transparently; it is `ksys::device`.
        let d = core::ptr::from_ref(dev).cast::<ksys::device>().cast_mut();
        // SAFETY: Live pool; `dev` is bound, so its DMA operations may be used.
        let r = kernel::error::to_result(unsafe { ksys::xsk_pool_dma_map(self.raw(), d) });
        if r.is_err() {
            self.0.mapped.store(false, Ordering::Release);
        }
        r
    }

    /// Whether the socket asked to be woken up only when the driver says so
    /// (`XDP_USE_NEED_WAKEUP`, `xsk_uses_need_wakeup()`).
    pub fn uses_need_wakeup(&self) -> bool {
        // SAFETY: Live pool; reads a flag.
        unsafe { ksys::xsk_uses_need_wakeup(self.raw()) }
    }

    /// The send side, if nothing holds it yet (one consumer of the socket's TX ring).
    pub fn take_tx(&self) -> Option<XskTx> {
        self.0
            .tx_taken
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        Some(XskTx { pool: self.clone() })
    }
}

/// Sets or clears the need_wakeup flag of the fill ring (`rx`) or TX ring of `pool`
/// (`xsk_set_rx_need_wakeup()` and its three siblings).
///
/// # Safety
///
/// The caller holds the pool's receive side (`rx`) or send side: the one writer of that flag
/// on the driver's side.
unsafe fn set_need_wakeup(pool: &XskPool, rx: bool, on: bool) {
    let raw = pool.raw();
    // SAFETY: Live pool (a handle); the flag's one writer (the caller's guarantee).
    unsafe {
        match (rx, on) {
            (true, true) => ksys::xsk_set_rx_need_wakeup(raw),
            (true, false) => ksys::xsk_clear_rx_need_wakeup(raw),
            (false, true) => ksys::xsk_set_tx_need_wakeup(raw),
            (false, false) => ksys::xsk_clear_tx_need_wakeup(raw),
        }
    }
}

/// The pools handed to a device's driver, by queue, until the stack takes them back (RTNL).
#[derive(Default)]
pub(crate) struct XskRegistry(UnsafeCell<KVec<(u16, Arc<Released>)>>);

// SAFETY: Used only in `ndo_bpf`, which the stack calls with the RTNL held.
unsafe impl Send for XskRegistry {}

// SAFETY: As for `Send`.
unsafe impl Sync for XskRegistry {}

impl XskRegistry {
    /// A handle of `raw`, the pool the stack hands over for `queue`.
    ///
    /// # Safety
    ///
    /// RTNL held; `raw` is live until [`XskRegistry::release`] is called for `queue`.
    pub(crate) unsafe fn hand_over(
        &self,
        raw: NonNull<ksys::xsk_buff_pool>,
        queue: u16,
    ) -> Result<XskPool> {
        let released = Arc::pin_init(
            pin_init!(Released {
                done <- Completion::new(),
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: RTNL held (the caller's guarantee): nothing else uses the list.
        let list = unsafe { &mut *self.0.get() };
        list.push((queue, released.clone()), GFP_KERNEL)?;
        // INVARIANT: live until `release` (the caller's guarantee), which waits for `released`.
        let inner = Arc::new(
            PoolInner {
                raw,
                mapped: AtomicBool::new(false),
                rx_taken: AtomicBool::new(false),
                tx_taken: AtomicBool::new(false),
                released,
            },
            GFP_KERNEL,
        );
        match inner {
            Ok(i) => Ok(XskPool(i)),
            Err(e) => {
                // Never handed out: nothing to wait for.
                list.pop();
                Err(e.into())
            }
        }
    }

    /// Waits until every handle of the pool of `queue` is gone (the stack frees it next).
    ///
    /// # Safety
    ///
    /// RTNL held.
    pub(crate) unsafe fn release(&self, queue: u16) {
        // SAFETY: RTNL held (the caller's guarantee).
        let list = unsafe { &mut *self.0.get() };
        while let Some(i) = list.iter().position(|(q, _)| *q == queue) {
            let last = list.len() - 1;
            list.swap(i, last);
            if let Some((_, r)) = list.pop() {
                r.done.wait_for_completion();
            }
        }
    }
}

/// The receive side of a pool, exclusive to one receive queue: its registration for XDP
/// (`struct xdp_rxq_info` with the `MEM_TYPE_XSK_BUFF_POOL` memory model,
/// `xsk_pool_set_rxq_info()`) and the consumer of the pool's fill ring and free list
/// ([`XskRxq::alloc`], [`XskRxq::free`], the frames' verdicts). Dropping it unregisters it.
///
/// # Invariants
///
/// `info` is registered with the XSK memory model; `pool`'s `rx_taken` is ours.
pub struct XskRxq {
    info: Pin<KBox<Opaque<ksys::xdp_rxq_info>>>,
    pool: XskPool,
}

// SAFETY: The registration may be used and dropped from any thread.
unsafe impl Send for XskRxq {}

// SAFETY: `&XskRxq` gives nothing that changes the pool's single-consumer parts.
unsafe impl Sync for XskRxq {}

impl XskRxq {
    /// Registers RX queue `queue` of `dev`, its frames in buffers of `pool`; `EBUSY` if
    /// another receive queue has the pool.
    pub fn new(dev: &Device, queue: u32, pool: &XskPool) -> Result<Self> {
        pool.0
            .rx_taken
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| EBUSY)?;
        let info = match register_rxq(
            dev,
            queue,
            ksys::xdp_mem_type_MEM_TYPE_XSK_BUFF_POOL,
            core::ptr::null_mut(),
        ) {
            Ok(i) => i,
            Err(e) => {
                pool.0.rx_taken.store(false, Ordering::Release);
                return Err(e);
            }
        };
        // SAFETY: Live pool; the info is registered and pinned, and outlives every frame we
        // run a program on (each frame's `rxq` is set again from `&self` in `receive`).
        unsafe { ksys::xsk_pool_set_rxq_info(pool.raw(), info.get()) };
        // INVARIANT: Registered; `rx_taken` taken above.
        Ok(Self {
            info,
            pool: pool.clone(),
        })
    }

    /// The pool.
    pub fn pool(&self) -> &XskPool {
        &self.pool
    }

    /// Tells the socket whether it must wake the driver (`sendto`/`poll`) for its fill ring
    /// to be read again (`xsk_set_rx_need_wakeup()`, `xsk_clear_rx_need_wakeup()`).
    pub fn set_need_wakeup(&mut self, on: bool) {
        // SAFETY: We are the receive side (`&mut`, exclusive by the type invariant).
        unsafe { set_need_wakeup(&self.pool, true, on) };
    }

    /// A buffer from the fill ring (`xsk_buff_alloc()`): `None` when the socket gave none.
    pub fn alloc(&mut self) -> Option<XskBuff> {
        // SAFETY: Live pool; we are its fill ring's one consumer (type invariant, `&mut`).
        let raw = NonNull::new(unsafe { ksys::xsk_buff_alloc(self.pool.raw()) })?;
        Some(XskBuff {
            raw,
            pool: self.pool.clone(),
        })
    }

    /// Gives `buf` back to the pool's free list (`xsk_buff_free()`).
    pub fn free(&mut self, buf: XskBuff) {
        let raw = buf.into_raw();
        // SAFETY: A buffer of this pool we own; we are the free list's one user.
        unsafe { ksys::xsk_buff_free(raw.as_ptr()) };
    }

    /// The frame of `len` bytes the device wrote into `buf` (`xsk_buff_set_size()`, synced
    /// for the CPU), for the program; `buf` back if it cannot hold `len` or is another pool's.
    pub fn receive(
        &mut self,
        buf: XskBuff,
        len: u32,
    ) -> core::result::Result<XskFrame<'_>, XskBuff> {
        if len > self.pool.rx_frame_size() || !buf.pool.ptr_eq(&self.pool) {
            return Err(buf);
        }
        let raw = buf.into_raw();
        // SAFETY: A buffer of this pool we own, `len` bytes written by the device into it
        // (at most its frame size); the info is ours and registered.
        unsafe {
            ksys::xsk_buff_set_size(raw.as_ptr(), len);
            ksys::xsk_buff_dma_sync_for_cpu(raw.as_ptr());
            (*raw.as_ptr()).rxq = self.info.get().cast();
        }
        Ok(XskFrame { raw, rxq: self })
    }
}

impl Drop for XskRxq {
    fn drop(&mut self) {
        // SAFETY: Registered (type invariant); no frame borrows it any more (`&mut self`).
        unsafe { ksys::xdp_rxq_info_unreg(self.info.get()) };
        self.pool.0.rx_taken.store(false, Ordering::Release);
    }
}

/// A buffer of a pool, owned by the driver (posted to the device, or received). Dropped
/// without [`XskRxq::free`], its chunk is lost to the socket until it closes.
///
/// # Invariants
///
/// `raw` is a buffer of `pool` allocated from it and not freed.
pub struct XskBuff {
    raw: NonNull<ksys::xdp_buff>,
    pool: XskPool,
}

// SAFETY: A buffer may move between threads; its pool's free list is touched only through
// `XskRxq`.
unsafe impl Send for XskBuff {}

// SAFETY: `&XskBuff` only reads its bus address.
unsafe impl Sync for XskBuff {}

impl XskBuff {
    /// The bus address the device writes the frame to (`xsk_buff_xdp_get_dma()`).
    pub fn dma_addr(&self) -> u64 {
        // SAFETY: A live buffer (type invariant); reads its address.
        unsafe { ksys::xsk_buff_xdp_get_dma(self.raw.as_ptr()) }
    }

    fn into_raw(self) -> NonNull<ksys::xdp_buff> {
        // The handle of the pool goes with the buffer's ownership: its owner (the frame, the
        // socket, the free list) is tied to the pool's life by other means.
        let raw = self.raw;
        drop(self.pool);
        raw
    }
}

/// A received frame in an XSK buffer, ready for the program (en/xsk/rx.c
/// `mlx5e_xsk_skb_from_cqe_linear`). Dropped, the buffer goes back to the free list.
pub struct XskFrame<'a> {
    raw: NonNull<ksys::xdp_buff>,
    rxq: &'a mut XskRxq,
}

impl XskFrame<'_> {
    /// Runs `prog` on the frame (`bpf_prog_run_xdp()`) in the queue's NAPI poll.
    pub fn run(&mut self, prog: &BpfProg, napi: &NapiContext) -> XdpAction {
        // SAFETY: A prepared buffer over a registered queue, in its NAPI poll.
        unsafe { prog.run_raw(self.raw.as_ptr(), napi) }
    }

    /// The frame's length now (after the program).
    pub fn len(&self) -> u32 {
        // SAFETY: A prepared buffer; the kernel's helpers keep `data <= data_end`.
        let b = unsafe { &*self.raw.as_ptr() };
        (b.data_end as usize).saturating_sub(b.data as usize) as u32
    }

    /// Whether the frame is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frame's bytes now (after the program), e.g. to copy them out for XDP_TX (en/xdp.c
    /// `mlx5e_xmit_xdp_buff` on an XSK RQ copies the frame into a page of its own).
    pub fn data(&self) -> &[u8] {
        // SAFETY: A prepared buffer we own (`&self`: no program runs meanwhile); the kernel's
        // helpers keep `data..data_end` inside the chunk, which stays ours while `self` lives.
        unsafe {
            let b = &*self.raw.as_ptr();
            let len = (b.data_end as usize).saturating_sub(b.data as usize);
            core::slice::from_raw_parts(b.data.cast::<u8>(), len)
        }
    }

    /// Carries out the XDP_REDIRECT `prog` just returned (`xdp_do_redirect()`): into the
    /// socket's RX ring without a copy (an XSKMAP entry of this queue), else copied. `Err`
    /// (the buffer freed) if the target refused it; [`crate::xdp::flush_redirects`] before
    /// the poll ends.
    pub fn redirect(self, dev: &Device, prog: &BpfProg, _napi: &NapiContext) -> Result {
        let raw = self.raw;
        // SAFETY: The buffer `prog` just ran on in this NAPI poll; on success it is the
        // target's (freed by it into the pool we are the free list's user of, in this poll).
        let r = unsafe { ksys::xdp_do_redirect(dev.as_raw(), raw.as_ptr(), prog.as_raw()) };
        if r == 0 {
            core::mem::forget(self);
            Ok(())
        } else {
            Err(Error::from_errno(r))
        }
    }

    /// XDP_PASS: the frame copied into a new skb, its protocol set, and the buffer freed
    /// (`xdp_build_skb_from_zc()`, in the queue's NAPI poll: it takes the CPU's page pool);
    /// `ENOMEM` (the buffer freed) if none could be allocated.
    pub fn into_skb(self, _napi: &NapiContext) -> Result<SkBuff> {
        // SAFETY: A prepared buffer over a registered queue of a live device, in a NAPI poll
        // (BH disabled, as the per-CPU page pool needs); on success it went back to the free
        // list (we are its user), on failure it is still ours.
        let skb = unsafe { ksys::xdp_build_skb_from_zc(self.raw.as_ptr()) };
        if skb.is_null() {
            return Err(ENOMEM);
        }
        core::mem::forget(self);
        // SAFETY: A new skb we own.
        unsafe { SkBuff::from_new(skb.cast()) }
    }
}

impl Drop for XskFrame<'_> {
    fn drop(&mut self) {
        // SAFETY: A buffer of the pool we own; `rxq` is the free list's one user.
        unsafe { ksys::xsk_buff_free(self.raw.as_ptr()) };
        let _ = &self.rxq;
    }
}

/// One frame the socket queued for sending: where it is and how long.
#[derive(Clone, Copy, Debug)]
pub struct XskTxDesc {
    /// Its bus address (synced for the device).
    pub dma: u64,
    /// Its length.
    pub len: u32,
    addr: u64,
}

/// The send side of a pool, exclusive to one send queue: the one consumer of the socket's TX
/// ring and producer of its completion ring (en/xsk/tx.c `mlx5e_xsk_tx`).
///
/// # Invariants
///
/// `pool`'s `tx_taken` is ours.
pub struct XskTx {
    pool: XskPool,
}

impl XskTx {
    /// The pool.
    pub fn pool(&self) -> &XskPool {
        &self.pool
    }

    /// The next frame the socket queued (`xsk_tx_peek_desc()`), synced for the device.
    pub fn peek(&mut self) -> Option<XskTxDesc> {
        let mut d: ksys::xdp_desc = pin_init::zeroed();
        // SAFETY: Live pool; we are its TX ring's one consumer (type invariant, `&mut`).
        if !unsafe { ksys::xsk_tx_peek_desc(self.pool.raw(), &mut d) } {
            return None;
        }
        // SAFETY: `d` is a descriptor the stack validated against the pool's memory.
        let dma = unsafe { ksys::xsk_buff_raw_get_dma(self.pool.raw(), d.addr) };
        // SAFETY: As above; `len` bytes at `dma` are the pool's, mapped.
        unsafe { ksys::xsk_buff_raw_dma_sync_for_device(self.pool.raw(), dma, d.len as usize) };
        Some(XskTxDesc {
            dma,
            len: d.len,
            addr: d.addr,
        })
    }

    /// Copies the first bytes of `d` into `out` (the headers a WQE carries inline); returns
    /// how many. The user may write the frame meanwhile: the copy is of bytes, as the C
    /// drivers' `memcpy` is.
    pub fn copy_head(&self, d: &XskTxDesc, out: &mut [u8]) -> usize {
        let n = out.len().min(d.len as usize);
        // SAFETY: `d` came from `peek` on this pool: `len` bytes at `addr` are in its memory,
        // which stays mapped while we hold a handle; `out` is ours.
        unsafe {
            let src = ksys::xsk_buff_raw_get_data(self.pool.raw(), d.addr).cast::<u8>();
            core::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), n);
        }
        n
    }

    /// Tells the socket that the frames taken by `peek` since the last call were read
    /// (`xsk_tx_release()`: its TX ring's consumer moves, the socket may be woken).
    pub fn release(&mut self) {
        // SAFETY: Live pool; we are the TX ring's one consumer.
        unsafe { ksys::xsk_tx_release(self.pool.raw()) };
    }

    /// Tells the socket whether it must wake the driver for frames it queues
    /// (`xsk_set_tx_need_wakeup()`, `xsk_clear_tx_need_wakeup()`).
    pub fn set_need_wakeup(&mut self, on: bool) {
        // SAFETY: We are the send side (`&mut`, exclusive by the type invariant).
        unsafe { set_need_wakeup(&self.pool, false, on) };
    }

    /// Reports `n` frames sent, in the order `peek` gave them (`xsk_tx_completed()`).
    pub fn completed(&mut self, n: u32) {
        if n > 0 {
            // SAFETY: Live pool; we are the completion ring's one producer.
            unsafe { ksys::xsk_tx_completed(self.pool.raw(), n) };
        }
    }
}

impl Drop for XskTx {
    fn drop(&mut self) {
        self.pool.0.tx_taken.store(false, Ordering::Release);
    }
}
