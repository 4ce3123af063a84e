// SPDX-License-Identifier: GPL-2.0
//! The doorbell record of a kernel work queue and the doorbell that follows it (upstream:
//! wq.h `mlx5_wq_cyc_update_db_record`, en/txrx.h `mlx5e_notify_hw`, en_rx.c
//! `mlx5e_post_rx_wqes`, ib wr.c `mlx5r_ring_db`), with the ordering against the device
//! built in: a queue publishes its WQEs only through [`DbRecord`], which puts `dma_wmb` between
//! the WQEs and the record.
//!
//! Used by the Ethernet SQ and RQ (en/sq.rs, en/rq.rs), the RDMA layer's kernel QPs
//! (ib/kqp.rs) and the EC engine's QP (ec/qp.rs).

use cx4_hw::uar::{
    BF_OFFSET,
    DBR_RCV,
    DBR_SND, //
};
use kapi::barrier::dma_wmb;
use kernel::{
    device::{
        self,
        Bound, //
    },
    prelude::*,
};

use crate::{
    dmabuf::DmaBuf,
    iseg::Bar0, //
};

/// The bytes of a doorbell record (the receive counter at `DBR_RCV`, the send counter at
/// `DBR_SND`, big endian; one cache line).
const DBR_SIZE: usize = 64;

/// A work queue's doorbell record in coherent memory, which the device reads to learn how far
/// the driver has posted.
pub(crate) struct DbRecord {
    buf: DmaBuf,
}

impl DbRecord {
    /// A zeroed record.
    pub(crate) fn alloc(dev: &device::Device<Bound>) -> Result<Self> {
        Ok(Self {
            buf: DmaBuf::alloc(dev, DBR_SIZE)?,
        })
    }

    /// Its bus address (the queue context's `dbr_addr`).
    pub(crate) fn dma(&self) -> u64 {
        self.buf.dma()
    }

    /// Zeroes the receive counter, while the queue is in reset (the device does not read it).
    pub(crate) fn reset_recv(&self) -> Result {
        self.buf.write_be32(DBR_RCV, 0)
    }

    /// Zeroes the send counter, while the queue is in reset.
    pub(crate) fn reset_send(&self) -> Result {
        self.buf.write_be32(DBR_SND, 0)
    }

    /// Hands the receive WQEs written so far to the device: the receive counter becomes
    /// `head` (its low 16 bits). A receive queue has no MMIO doorbell.
    pub(crate) fn publish_recv(&self, head: u32) -> Result {
        // Orders the receive WQEs' stores before the record's (en_rx.c
        // `mlx5e_post_rx_wqes`, wq.h `mlx5_wq_ll_update_db_record`: `dma_wmb`): the device
        // reads the WQEs the record announces.
        dma_wmb();
        self.buf.write_be32(DBR_RCV, head & 0xffff)
    }

    /// Hands the send WQEs written so far to the device and rings the doorbell of UAR page
    /// `uar` with `ctrl`, the first eight bytes of the last WQE's control segment: the send
    /// counter becomes `sq_pc`, and first, when given, the receive counter `rq_head` (a QP
    /// whose sends need their receives posted, as the EC engine's loopback).
    pub(crate) fn ring_send(
        &self,
        bar: &Bar0,
        uar: u32,
        rq_head: Option<u32>,
        sq_pc: u16,
        ctrl: [u8; 8],
    ) -> Result {
        // Orders the WQEs' stores (and the last one's `fm_ce_se`) before the records'
        // (en/txrx.h `mlx5e_notify_hw`: `dma_wmb`).
        dma_wmb();
        if let Some(head) = rq_head {
            self.buf.write_be32(DBR_RCV, head & 0xffff)?;
        }
        self.buf.write_be32(DBR_SND, u32::from(sq_pc))?;
        // No barrier between the record and the doorbell: `write_bytes64` is an ordered
        // `writeq`, which comes after every earlier store to memory (memory-barriers.txt, I/O
        // rule 3). mlx5's `wmb` here is for its raw `__raw_writeq` (`mlx5_write64`).
        bar.write_bytes64(Bar0::uar_offset(uar, BF_OFFSET)?, ctrl)
    }
}
