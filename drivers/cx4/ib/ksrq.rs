// SPDX-License-Identifier: GPL-2.0
//! Kernel users' SRQs' ring (mlx5_ib srq.c `create_srq_kernel`, `mlx5_ib_post_srq_recv`,
//! `mlx5_ib_free_srq_wqe`): the receive WQEs of an RMP that kernel QPs share.
//!
//! - Memory: one coherent buffer of `max` WQEs of `1 << shift` bytes — each a next segment
//!   (`struct mlx5_wqe_srq_next_seg`, whose `next_wqe_index` links the free list), then the
//!   scatter entries, a terminating one when fewer than fit — and a doorbell record whose
//!   receive counter is the number of WQEs posted so far.
//! - The free list: at creation WQE `i` links to `i + 1` (the last back to 0); `head` is the
//!   next WQE to post, `tail` the last free one, which is never posted (`head == tail`: the
//!   SRQ is full, `max - 1` WQEs outstanding at most). Posting takes `head` and follows its
//!   link; a completion names the WQE it consumed (the CQE's `wqe_counter`), which is linked
//!   after `tail` and becomes the new `tail`.
//! - Posting runs in any context: the ring is under an IRQ-safe lock, nothing allocates.
//!   The doorbell record gets the counter after the WQEs (`dma_wmb`, `DbRecord::publish_recv`).

use crate::{
    dmabuf::DmaBuf,
    ib::kqp::scatter_list,
    mdev::Mdev,
    wq::DbRecord, //
};
use cx4_hw::{
    pages::PAGE_SIZE,
    wqe::WqeDataSeg, //
};
use ib::{
    RecvWr,
    RecvWrs, //
};
use kapi::{
    new_irq_safe_lock,
    IrqSafeLock, //
};
use kernel::prelude::*;

/// The bytes of a WQE's next segment; `next_wqe_index` (big endian) is at offset 2.
pub(crate) const NEXT_SEG: usize = 16;
const NEXT_WQE_INDEX: usize = 2;

/// The free list and the requests' cookies.
struct SrqRing {
    head: u16,
    tail: u16,
    /// WQEs posted so far (the doorbell record's counter).
    ctr: u16,
    /// By WQE index: the cookie of the request posted there.
    wr_id: KVec<u64>,
    scratch: KVec<u8>,
}

/// A kernel SRQ's receive WQEs and doorbell record.
pub(crate) struct KernelSrq {
    buf: DmaBuf,
    dbrec: DbRecord,
    /// WQEs (a power of two) and log2 of their stride in bytes.
    max: u32,
    shift: u32,
    ring: Pin<KBox<IrqSafeLock<SrqRing>>>,
}

impl KernelSrq {
    /// Allocates `max` WQEs (a power of two of at least 2) of `1 << shift` bytes, linked in
    /// order (mlx5_ib `create_srq_kernel`).
    pub(crate) fn alloc(mdev: &Mdev, max: u32, shift: u32) -> Result<Self> {
        if max < 2 || !max.is_power_of_two() || (1usize << shift) < NEXT_SEG + WqeDataSeg::SIZE {
            return Err(EINVAL);
        }
        let stride = 1usize << shift;
        let bytes = (max as usize)
            .checked_mul(stride)
            .ok_or(EINVAL)?
            .next_multiple_of(PAGE_SIZE);
        let buf = DmaBuf::alloc(mdev.dev.get(), bytes)?;
        for i in 0..max {
            let next = ((i + 1) & (max - 1)) as u16;
            buf.write(i as usize * stride + NEXT_WQE_INDEX, &next.to_be_bytes())?;
        }
        let ring = KBox::pin_init(
            new_irq_safe_lock!(
                SrqRing {
                    head: 0,
                    tail: (max - 1) as u16,
                    ctr: 0,
                    wr_id: KVec::from_elem(0u64, max as usize, GFP_KERNEL)?,
                    scratch: KVec::from_elem(0u8, stride - NEXT_SEG, GFP_KERNEL)?,
                },
                "cx4::ib_ksrq"
            ),
            GFP_KERNEL,
        )?;
        Ok(Self {
            buf,
            dbrec: DbRecord::alloc(mdev.dev.get())?,
            max,
            shift,
            ring,
        })
    }

    /// The buffer's bus address (its pages are contiguous) and page count.
    pub(crate) fn pages(&self) -> (u64, usize) {
        (self.buf.dma(), self.buf.len() / PAGE_SIZE)
    }

    /// The doorbell record's bus address.
    pub(crate) fn dbrec_dma(&self) -> u64 {
        self.dbrec.dma()
    }

    /// Scatter entries a WQE holds.
    pub(crate) fn max_gs(&self) -> u32 {
        (((1usize << self.shift) - NEXT_SEG) / WqeDataSeg::SIZE) as u32
    }

    /// Posts a chain of receive requests (`mlx5_ib_post_srq_recv`): `EINVAL` for too many
    /// scatter entries, `ENOMEM` when no WQE is free; the record announces those posted
    /// before.
    pub(crate) fn post(&self, wrs: &mut RecvWrs<'_>) -> Result {
        let max_gs = self.max_gs() as usize;
        let mut ring = self.ring.lock();
        let mut posted = 0u16;
        let mut r = Ok(());
        for wr in wrs.by_ref() {
            if wr.num_sge() > max_gs {
                r = Err(EINVAL);
                break;
            }
            if ring.head == ring.tail {
                r = Err(ENOMEM);
                break;
            }
            if let Err(e) = self.write_wqe(&mut ring, &wr) {
                r = Err(e);
                break;
            }
            posted = posted.wrapping_add(1);
        }
        if posted > 0 {
            ring.ctr = ring.ctr.wrapping_add(posted);
            // `publish_recv` orders the WQEs (and the links freed WQEs got) before the
            // record (mlx5_ib: `wmb`).
            self.dbrec.publish_recv(ring.ctr.into())?;
        }
        r
    }

    /// Writes `wr` into the head WQE and moves the head along its link.
    fn write_wqe(&self, ring: &mut SrqRing, wr: &RecvWr<'_>) -> Result {
        let at = ring.head as usize * (1usize << self.shift);
        let off = scatter_list(ring.scratch.as_mut_slice(), wr)?;
        // The scatter entries only: the next segment keeps the free list's link.
        self.buf
            .write(at + NEXT_SEG, ring.scratch.get(..off).ok_or(EINVAL)?)?;
        let mut next = [0u8; 2];
        self.buf.read(at + NEXT_WQE_INDEX, &mut next)?;
        *ring.wr_id.get_mut(ring.head as usize).ok_or(EINVAL)? = wr.wr_id();
        ring.head = u16::from_be_bytes(next) & (self.max - 1) as u16;
        Ok(())
    }

    /// The cookie of the request the card consumed at WQE `wqe` (a receive completion's
    /// `wqe_counter`), whose WQE goes back on the free list; `None` for an index outside the
    /// ring.
    pub(crate) fn take(&self, wqe: u16) -> Option<u64> {
        let mut ring = self.ring.lock();
        let wr_id = *ring.wr_id.get(wqe as usize)?;
        self.free(&mut ring, wqe);
        Some(wr_id)
    }

    /// Puts WQE `wqe` back on the free list without a completion (its CQE was cleaned from
    /// a CQ: `__mlx5_ib_cq_clean`).
    pub(crate) fn release(&self, wqe: u16) {
        if u32::from(wqe) < self.max {
            let mut ring = self.ring.lock();
            self.free(&mut ring, wqe);
        }
    }

    /// `mlx5_ib_free_srq_wqe`: `wqe` is linked after the tail and becomes the tail.
    fn free(&self, ring: &mut SrqRing, wqe: u16) {
        let at = ring.tail as usize * (1usize << self.shift) + NEXT_WQE_INDEX;
        // In the buffer by construction (`tail` < `max`).
        let _ = self.buf.write(at, &wqe.to_be_bytes());
        ring.tail = wqe;
    }
}
