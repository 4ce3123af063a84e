// SPDX-License-Identifier: GPL-2.0
//! The engine's RC QP, connected to itself as libmlx5's calc QP (`ec.c` `alloc_calc_qp`,
//! `modify_calc_qp_*`): destination QPN its own, destination GID the port's own RoCE GID,
//! hop limit 1, ACK timeout 14, retry and RNR retry 7. The card then loops the vector-calc
//! SEND's result back inside itself into the QP's own receive WQE. The path MTU is 4096, not
//! libmlx5's 1024: the result never reaches the wire, so the port's largest MTU serves, and
//! the card handles a quarter of the packets per calculation.
//!
//! Its rings are one coherent buffer (receive queue of 16-byte WQEs — one data segment —
//! then the send queue), a doorbell record, and the ib device's kernel UAR page; the QP is
//! created and moved between states by the core's kernel QP (core/qp.rs), its doorbell rung
//! through core/wq.rs. Posting is the engine's (engine.rs): WQEs are copied in whole basic
//! blocks and may wrap the send ring, as libmlx5's do.

use cx4_hw::{
    pages::PAGE_SIZE,
    qp::{
        mtu,
        pm_state,
        qpc_st,
        Qpc, //
    },
    wqe::SEND_WQE_BB,
};
use kernel::{
    prelude::*,
    sync::Arc, //
};
use zerocopy::FromZeros;

use crate::{
    dmabuf::DmaBuf,
    mdev::Mdev,
    qp::{
        self,
        KernelQp,
        KernelRq,
        Transition, //
    },
    wq::DbRecord, //
};

/// Bytes of a receive WQE: one data segment.
pub(crate) const RQ_STRIDE: usize = 16;
/// libmlx5's calc QP: ACK timeout 14 (4.096 µs · 2^14 ≈ 67 ms), 7 retries, 7 RNR retries.
const ACK_TIMEOUT: u32 = 14;
const RETRIES: u32 = 7;
/// `MLX5_IB_ACK_REQ_FREQ`.
const ACK_REQ_FREQ: u32 = 8;
/// RNR NAK timer 12 (0.64 ms), as mlx5_ib's kernel users commonly ask.
const MIN_RNR_NAK: u32 = 12;

/// The address the QP loops back to: its own.
#[derive(Clone, Copy)]
pub(crate) struct LoopAddr {
    /// The port's MAC (the destination MAC of the path).
    pub(crate) mac: [u8; 6],
    /// The GID at `sgid_index` of the port's table: source and destination.
    pub(crate) gid: [u8; 16],
    pub(crate) sgid_index: u8,
}

/// What the QP is created with.
pub(crate) struct QpParams {
    pub(crate) pdn: u32,
    pub(crate) cqn: u32,
    pub(crate) uar: u32,
    /// Receive WQEs and send-queue basic blocks (powers of two).
    pub(crate) rq_wqes: u32,
    pub(crate) sq_bbs: u32,
    /// The general caps' `cqe_version` and `log_max_msg`.
    pub(crate) cqe_v1: bool,
    pub(crate) log_max_msg: u32,
    /// The queue counter set the QP names (the ib device's).
    pub(crate) counter: u8,
}

/// The QP and its rings; dropping it destroys the QP.
pub(crate) struct LoopQp {
    mdev: Arc<Mdev>,
    qpn: u32,
    p: QpParams,
    buf: DmaBuf,
    dbrec: DbRecord,
}

impl LoopQp {
    /// Creates the QP in the reset state.
    pub(crate) fn create(mdev: &Arc<Mdev>, p: QpParams) -> Result<Self> {
        if !p.rq_wqes.is_power_of_two() || !p.sq_bbs.is_power_of_two() {
            return Err(EINVAL);
        }
        let bytes = (p.rq_wqes as usize * RQ_STRIDE + p.sq_bbs as usize * SEND_WQE_BB)
            .next_multiple_of(PAGE_SIZE);
        let buf = DmaBuf::alloc(mdev.dev.get(), bytes)?;
        let dbrec = DbRecord::alloc(mdev.dev.get())?;
        let qpn = KernelQp {
            st: qpc_st::RC,
            pdn: p.pdn,
            uar: p.uar,
            rq: KernelRq::Ring {
                wqes: p.rq_wqes,
                log_stride: RQ_STRIDE.ilog2(),
            },
            sq_bbs: p.sq_bbs,
            cqn_snd: p.cqn,
            cqn_rcv: p.cqn,
            cqe_v1: p.cqe_v1,
            dbr: dbrec.dma(),
            pages: (buf.dma(), bytes / PAGE_SIZE),
        }
        .create(mdev)?;
        Ok(Self {
            mdev: mdev.clone(),
            qpn,
            p,
            buf,
            dbrec,
        })
    }

    /// The QP number.
    pub(crate) fn qpn(&self) -> u32 {
        self.qpn
    }

    /// The context fields every transition repeats (mlx5_ib sends a fresh context each time).
    fn base(&self) -> Qpc {
        let mut c = Qpc::new_zeroed();
        c.set_st(qpc_st::RC.into());
        c.set_pm_state(pm_state::MIGRATED.into());
        c.set_pd(self.p.pdn);
        c.set_cqn_snd(self.p.cqn);
        c.set_cqn_rcv(self.p.cqn);
        c.set_log_ack_req_freq(ACK_REQ_FREQ);
        c
    }

    /// RESET → INIT → RTR → RTS, connected to itself at `a`.
    pub(crate) fn connect(&self, a: &LoopAddr) -> Result {
        let m = &self.mdev;
        let mut c = self.base();
        c.primary_address_path_mut().set_vhca_port_num(1);
        c.primary_address_path_mut().set_pkey_index(0);
        c.set_counter_set_id(self.p.counter.into());
        c.set_dbr_addr(self.dbrec.dma());
        Transition::Rst2Init.run(m, self.qpn, 0, &c)?;

        let mut c = self.base();
        // The result loops back inside the card: the largest path MTU (see the module doc).
        c.set_mtu(mtu::MTU_4K.into());
        c.set_log_msg_max(self.p.log_max_msg);
        c.set_remote_qpn(self.qpn);
        c.set_next_rcv_psn(0);
        c.set_min_rnr_nak(MIN_RNR_NAK);
        {
            let p = c.primary_address_path_mut();
            let d = a.mac;
            p.set_rmac_47_32(u32::from(d[0]) << 8 | u32::from(d[1]));
            p.set_rmac_31_0(u32::from_be_bytes([d[2], d[3], d[4], d[5]]));
            p.set_src_addr_index(a.sgid_index.into());
            p.set_hop_limit(1);
            p.rgid_rip_mut().copy_from_slice(&a.gid);
            p.set_vhca_port_num(1);
        }
        Transition::Init2Rtr.run(m, self.qpn, 0, &c)?;

        let mut c = self.base();
        c.set_next_send_psn(0);
        c.set_retry_count(RETRIES);
        c.set_rnr_retry(RETRIES);
        c.primary_address_path_mut().set_ack_timeout(ACK_TIMEOUT);
        Transition::Rtr2Rts.run(m, self.qpn, 0, &c)
    }

    /// To RESET (from any state), and the doorbell record back to zero: the card and the
    /// engine start their counters again.
    pub(crate) fn reset(&self) -> Result {
        Transition::ToRst.run(&self.mdev, self.qpn, 0, &Qpc::new_zeroed())?;
        self.dbrec.reset_recv()?;
        self.dbrec.reset_send()
    }

    /// Writes receive WQE `head` (its slot in the ring).
    pub(crate) fn write_rq(&self, head: u32, wqe: &[u8; RQ_STRIDE]) -> Result {
        let slot = (head & (self.p.rq_wqes - 1)) as usize;
        self.buf.write(slot * RQ_STRIDE, wqe)
    }

    /// Writes the basic blocks of `wqe` from producer counter `pc` on (wrapping at the end of
    /// the ring).
    pub(crate) fn write_sq(&self, pc: u16, wqe: &[u8]) -> Result {
        let base = self.p.rq_wqes as usize * RQ_STRIDE;
        for (i, bb) in wqe.chunks(SEND_WQE_BB).enumerate() {
            let slot = (u32::from(pc.wrapping_add(i as u16)) & (self.p.sq_bbs - 1)) as usize;
            self.buf.write(base + slot * SEND_WQE_BB, bb)?;
        }
        Ok(())
    }

    /// Publishes the receive counter `rq_head` and send counter `sq_pc`, then rings the send
    /// doorbell with the first eight bytes of the last WQE (the receive first: the result
    /// must find its WQE).
    pub(crate) fn ring(&self, rq_head: u32, sq_pc: u16, last: [u8; 8]) -> Result {
        // `ring_send` orders the WQEs before the records (`dma_wmb`).
        self.dbrec
            .ring_send(&self.mdev.bar, self.p.uar, Some(rq_head), sq_pc, last)
    }
}

impl Drop for LoopQp {
    fn drop(&mut self) {
        qp::destroy(&self.mdev, self.qpn, "EC engine: ");
    }
}
