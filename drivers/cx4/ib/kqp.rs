// SPDX-License-Identifier: GPL-2.0
//! Kernel QPs' work queues (mlx5_ib qp.c `_create_kernel_qp`, wr.c `mlx5_ib_post_send` /
//! `mlx5_ib_post_recv`, cq.c `mlx5_poll_one`): the rings of QPs that kernel users (ib_mad's
//! GSI QP, the CM, ULPs) post to through ib_core's data path.
//!
//! - Memory: one coherent buffer, the receive queue first (`rq_cnt` WQEs of `1 << rq_shift`
//!   bytes, data segments ended by a terminating one when fewer than fit), then the send
//!   queue; a doorbell record (receive counter at 0, send counter at 4); the device's kernel
//!   UAR page for the send doorbell.
//! - Send WQEs: control segment, then the datagram segment (UD, GSI: the address handle's
//!   vector with the request's destination QP and Q_Key), the remote-address (and atomic)
//!   segment, or the UMR segments of a fast registration / local invalidation; then one data
//!   segment per non-empty gather entry, or, for an inline send, one inline segment with
//!   the gather entries' bytes copied in. A WQE takes the basic blocks its segments need; the
//!   ring holds `sq_wqes` of the largest; a WQE never wraps (NOPs pad the ring's end). The
//!   control segment names the WQE by the producer counter in basic blocks; a completion
//!   names it back, so its request is found by the basic block it started at.
//! - Posting runs in any context: the rings are under IRQ-safe locks, nothing allocates.
//!   The doorbell record gets the producer counter after the WQEs, then the first eight bytes
//!   of the last control segment go to the UAR's doorbell register.
//! - Completions: [`KernelWq::complete`] turns one CQE of the QP into a work completion:
//!   requester CQEs (and their errors) free the send slots up to the named WQE, responder
//!   CQEs consume receive WQEs in order.

use cx4_hw::mkey::access_mode;
use cx4_hw::{
    cq::cqe::{
        opcode as cqe_op,
        roce_l3_header_type,
        syndrome,
        Cqe64,
        ErrCqe, //
    },
    pages::PAGE_SIZE,
    wqe::{
        fm_ce_se,
        opcode,
        opmod_idx_opcode,
        qpn_ds,
        rdma::{
            Av,
            MkeyMask,
            MkeySeg,
            Perm,
            WqeAtomicSeg,
            WqeRaddrSeg,
            WqeUmrCtrlSeg,
            EXTENDED_UD_AV,
            MKEY_REMOTE_INVAL,
            MKEY_STATUS_FREE,
            UMR_CHECK_NOT_FREE,
            UMR_INLINE, //
        },
        WqeCtrlSeg,
        WqeDataSeg,
        WqeInlineSeg,
        INLINE_SEG,
        INLINE_SEG_BYTE_COUNT_MASK,
        SEND_WQE_BB,
        SEND_WQE_DS,
        SEND_WQE_MAX_WQEBBS,
        TERMINATE_SCATTER_LIST_LKEY, //
    },
};
use ib::{
    send_flags,
    wc_flags,
    Access,
    NetworkType,
    QpHandle,
    RecvWr,
    RecvWrs,
    SendWrs,
    WcOpcode,
    WcStatus,
    WorkCompletion,
    WrOpcode, //
};
use kapi::{
    new_irq_safe_lock,
    IrqSafeLock, //
};
use kernel::{
    prelude::*,
    sync::Arc, //
};
use zerocopy::FromBytes;

use crate::{
    cq::Cq,
    dmabuf::DmaBuf,
    ib::{
        ah::IbAh,
        ksrq::KernelSrq,
        mr::{
            perm_of,
            IbMr, //
        },
        IbDev, //
    },
    mdev::Mdev,
    wq::DbRecord,
};

/// What a kernel QP's send queue carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendKind {
    /// UD and GSI: datagram segments.
    Datagram,
    /// RC: remote-address and atomic segments.
    Rc,
    /// UC: remote-address segments.
    Uc,
}

/// The sizes of a kernel QP's rings, from the user's capabilities and the device's limits.
pub(crate) struct WqLayout {
    /// Send WQEs (0: no send queue) and basic blocks of the largest WQE (a power of two:
    /// the ring has `sq_wqes * bbs` basic blocks).
    pub(crate) sq_wqes: u32,
    pub(crate) bbs: u32,
    /// Receive WQEs (0: none, or an SRQ) and log2 of their stride in bytes.
    pub(crate) rq_wqes: u32,
    pub(crate) rq_shift: u32,
    /// Gather / scatter entries per request.
    pub(crate) send_sge: u32,
    pub(crate) recv_sge: u32,
    /// The bytes an inline send carries (0: the user asked for none).
    pub(crate) max_inline: u32,
}

impl WqLayout {
    /// Sizes the rings for `cap`; `EINVAL` if they exceed what the device takes (WQE sizes,
    /// `max_wqes` per queue).
    pub(crate) fn new(
        kind: SendKind,
        cap: &ib::QpCap,
        has_rq: bool,
        max_wqes: u32,
        max_wqe_sz_sq: u32,
        max_wqe_sz_rq: u32,
    ) -> Result<Self> {
        let send_sge = cap.max_send_sge.max(1);
        let ds = SEND_WQE_DS as u32;
        // The largest WQE: the address segment and every gather entry, or (RC) an atomic
        // with its one entry.
        // RC and UC also carry fast registrations (UMR control, mkey and pointer segments).
        let umr = (WqeUmrCtrlSeg::SIZE + MkeySeg::SIZE + WqeDataSeg::SIZE) as u32;
        let body = match kind {
            SendKind::Datagram => Av::SIZE as u32 + send_sge * ds,
            SendKind::Rc => (WqeRaddrSeg::SIZE as u32 + send_sge * ds)
                .max((WqeRaddrSeg::SIZE + WqeAtomicSeg::SIZE) as u32 + ds)
                .max(umr),
            SendKind::Uc => (WqeRaddrSeg::SIZE as u32 + send_sge * ds).max(umr),
        };
        // An inline send (mlx5_ib `calc_send_wqe`): the address segment, the inline
        // segment's header and the data.
        let addr = match kind {
            SendKind::Datagram => Av::SIZE,
            SendKind::Rc | SendKind::Uc => WqeRaddrSeg::SIZE,
        } as u32;
        let head = WqeCtrlSeg::SIZE as u32 + addr + WqeInlineSeg::SIZE as u32;
        if cap.max_inline_data > INLINE_SEG_BYTE_COUNT_MASK {
            return Err(EINVAL);
        }
        let inline = match cap.max_inline_data {
            0 => 0,
            n => head + n,
        };
        let wqe = (WqeCtrlSeg::SIZE as u32 + body).max(inline);
        let bbs = wqe.div_ceil(SEND_WQE_BB as u32).next_power_of_two();
        if wqe > max_wqe_sz_sq || bbs as usize > SEND_WQE_MAX_WQEBBS {
            return Err(EINVAL);
        }
        // What the WQE size leaves for inline data (`qp->max_inline_data`).
        let max_inline = match cap.max_inline_data {
            0 => 0,
            _ => (bbs * SEND_WQE_BB as u32 - head).min(INLINE_SEG_BYTE_COUNT_MASK),
        };
        let sq_wqes = if cap.max_send_wr == 0 {
            0
        } else {
            cap.max_send_wr.checked_next_power_of_two().ok_or(EINVAL)?
        };
        if sq_wqes.checked_mul(bbs).is_none_or(|n| n > max_wqes) {
            return Err(EINVAL);
        }
        let (rq_wqes, rq_shift, recv_sge) = if has_rq && cap.max_recv_wr > 0 {
            let sge = cap.max_recv_sge.max(1);
            let stride = (sge * SEND_WQE_DS as u32).next_power_of_two();
            let n = cap.max_recv_wr.checked_next_power_of_two().ok_or(EINVAL)?;
            if stride > max_wqe_sz_rq || n > max_wqes {
                return Err(EINVAL);
            }
            (n, stride.ilog2(), sge)
        } else {
            (0, 4, 0)
        };
        Ok(Self {
            sq_wqes,
            bbs,
            rq_wqes,
            rq_shift,
            send_sge,
            recv_sge,
            max_inline,
        })
    }

    fn rq_bytes(&self) -> usize {
        (self.rq_wqes as usize) << self.rq_shift
    }

    /// The bytes of the queue buffer (whole pages).
    pub(crate) fn bytes(&self) -> usize {
        let n = self.rq_bytes() + (self.sq_wqes * self.bbs) as usize * SEND_WQE_BB;
        n.max(1).next_multiple_of(PAGE_SIZE)
    }
}

/// The send queue's ring state.
struct SendRing {
    /// Producer and consumer counters, in basic blocks (16 bits, as the control segment's
    /// WQE index).
    pc: u16,
    cc: u16,
    /// By the basic block a WQE starts at: its request's cookie, operation and size in
    /// basic blocks.
    wr_id: KVec<u64>,
    op: KVec<WcOpcode>,
    size: KVec<u8>,
    scratch: KVec<u8>,
}

/// The receive queue's ring state.
struct RecvRing {
    head: u32,
    tail: u32,
    wr_id: KVec<u64>,
    scratch: KVec<u8>,
}

/// A kernel QP's work queues, shared between the QP (posting) and its CQs (completing).
pub(crate) struct KernelWq {
    mdev: Arc<Mdev>,
    /// The kernel SRQ its receives come from (its receive queue is then empty).
    srq: Option<Arc<KernelSrq>>,
    qpn: u32,
    handle: QpHandle,
    kind: SendKind,
    sig_all: bool,
    uar: u32,
    layout: WqLayout,
    buf: DmaBuf,
    dbrec: DbRecord,
    sq: Pin<KBox<IrqSafeLock<SendRing>>>,
    rq: Pin<KBox<IrqSafeLock<RecvRing>>>,
}

impl KernelWq {
    /// Allocates the rings of `layout` (the QP is created on them afterwards, see
    /// [`KernelWq::bind`]); `srq`: the kernel SRQ its receives come from.
    pub(crate) fn alloc(
        mdev: &Arc<Mdev>,
        layout: WqLayout,
        kind: SendKind,
        sig_all: bool,
        uar: u32,
        handle: QpHandle,
        srq: Option<Arc<KernelSrq>>,
    ) -> Result<Self> {
        let buf = DmaBuf::alloc(mdev.dev.get(), layout.bytes())?;
        let dbrec = DbRecord::alloc(mdev.dev.get())?;
        let sq_bbs = (layout.sq_wqes * layout.bbs) as usize;
        let rq_wqes = layout.rq_wqes as usize;
        let sq = KBox::pin_init(
            new_irq_safe_lock!(
                SendRing {
                    pc: 0,
                    cc: 0,
                    wr_id: KVec::from_elem(0u64, sq_bbs, GFP_KERNEL)?,
                    op: KVec::from_elem(WcOpcode::Send, sq_bbs, GFP_KERNEL)?,
                    size: KVec::from_elem(1u8, sq_bbs, GFP_KERNEL)?,
                    scratch: KVec::from_elem(0u8, layout.bbs as usize * SEND_WQE_BB, GFP_KERNEL)?,
                },
                "cx4::ib_kqp_sq"
            ),
            GFP_KERNEL,
        )?;
        let rq = KBox::pin_init(
            new_irq_safe_lock!(
                RecvRing {
                    head: 0,
                    tail: 0,
                    wr_id: KVec::from_elem(0u64, rq_wqes, GFP_KERNEL)?,
                    scratch: KVec::from_elem(0u8, 1usize << layout.rq_shift, GFP_KERNEL)?,
                },
                "cx4::ib_kqp_rq"
            ),
            GFP_KERNEL,
        )?;
        Ok(Self {
            mdev: mdev.clone(),
            srq,
            qpn: 0,
            handle,
            kind,
            sig_all,
            uar,
            layout,
            buf,
            dbrec,
            sq,
            rq,
        })
    }

    /// Sets the card's QP number once the QP exists.
    pub(crate) fn bind(&mut self, qpn: u32) {
        self.qpn = qpn;
    }

    /// The ring sizes.
    pub(crate) fn layout(&self) -> &WqLayout {
        &self.layout
    }

    /// The buffer's bus address (its pages are contiguous) and page count.
    pub(crate) fn pages(&self) -> (u64, usize) {
        (self.buf.dma(), self.buf.len() / PAGE_SIZE)
    }

    /// The doorbell record's bus address.
    pub(crate) fn dbrec_dma(&self) -> u64 {
        self.dbrec.dma()
    }

    /// Back to empty rings after the QP was reset (the card starts its counters again).
    pub(crate) fn reset(&self) {
        let mut sq = self.sq.lock();
        let mut rq = self.rq.lock();
        sq.pc = 0;
        sq.cc = 0;
        rq.head = 0;
        rq.tail = 0;
        let _ = self.dbrec.reset_recv();
        let _ = self.dbrec.reset_send();
    }

    /// Posts a chain of send requests (`mlx5_ib_post_send`); rings the doorbell for those
    /// posted even when a later one fails.
    pub(crate) fn post_send(&self, wrs: &mut SendWrs<'_, IbDev>, qp: &ib::Qp<IbDev>) -> Result {
        let mut ring = self.sq.lock();
        let mut last = None;
        let mut r = Ok(());
        for wr in wrs.by_ref() {
            match self.build_send(&mut ring, &wr, qp) {
                Ok(head) => last = Some(head),
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
        }
        if let Some(head) = last {
            // `ring_send` orders the WQEs before the record (`dma_wmb`; mlx5_ib's
            // `mlx5r_ring_db` has `wmb` for its raw doorbell write).
            self.dbrec
                .ring_send(&self.mdev.bar, self.uar, None, ring.pc, head)?;
        }
        r
    }

    /// Writes one send WQE at the producer counter; returns its first eight bytes.
    fn build_send(
        &self,
        ring: &mut SendRing,
        wr: &ib::SendWr<'_, IbDev>,
        qp: &ib::Qp<IbDev>,
    ) -> Result<[u8; 8]> {
        let l = &self.layout;
        let ring_bbs = l.sq_wqes * l.bbs;
        if ring_bbs == 0 {
            return Err(EINVAL);
        }
        if wr.num_sge() > l.send_sge as usize {
            return Err(EINVAL);
        }
        let op = wr.opcode();
        let inline = wr.inline_data(qp);
        if inline.is_some()
            && !matches!(
                op,
                WrOpcode::Send
                    | WrOpcode::SendImm
                    | WrOpcode::SendInv
                    | WrOpcode::RdmaWrite
                    | WrOpcode::RdmaWriteImm
            )
        {
            return Err(EINVAL);
        }
        let (hw_op, wc_op, imm) = match (self.kind, op) {
            (_, WrOpcode::Send) => (opcode::SEND, WcOpcode::Send, None),
            (_, WrOpcode::SendImm) => (
                opcode::SEND_IMM,
                WcOpcode::Send,
                Some(u32::from_be(wr.imm_data_be())),
            ),
            (SendKind::Rc, WrOpcode::SendInv) => (
                opcode::SEND_INVAL,
                WcOpcode::Send,
                Some(wr.invalidate_rkey()),
            ),
            (SendKind::Rc | SendKind::Uc, WrOpcode::RdmaWrite) => {
                (opcode::RDMA_WRITE, WcOpcode::RdmaWrite, None)
            }
            (SendKind::Rc | SendKind::Uc, WrOpcode::RdmaWriteImm) => (
                opcode::RDMA_WRITE_IMM,
                WcOpcode::RdmaWrite,
                Some(u32::from_be(wr.imm_data_be())),
            ),
            (SendKind::Rc, WrOpcode::RdmaRead) => (opcode::RDMA_READ, WcOpcode::RdmaRead, None),
            (SendKind::Rc, WrOpcode::CmpSwap) => (opcode::ATOMIC_CS, WcOpcode::CompSwap, None),
            (SendKind::Rc, WrOpcode::FetchAdd) => (opcode::ATOMIC_FA, WcOpcode::FetchAdd, None),
            (SendKind::Rc | SendKind::Uc, WrOpcode::RegMr) => (
                opcode::UMR,
                WcOpcode::RegMr,
                Some(wr.reg().ok_or(EINVAL)?.key),
            ),
            (SendKind::Rc | SendKind::Uc, WrOpcode::LocalInv) => {
                (opcode::UMR, WcOpcode::LocalInv, Some(wr.invalidate_rkey()))
            }
            _ => return Err(EINVAL),
        };
        let len = l.bbs as usize * SEND_WQE_BB;
        let s = ring.scratch.get_mut(..len).ok_or(EINVAL)?;
        s.fill(0);
        let mut off = WqeCtrlSeg::SIZE;
        match self.kind {
            SendKind::Datagram => {
                let ud = wr.ud(qp).ok_or(EINVAL)?;
                let ah: &IbAh = ud.ah;
                let av = Av::mut_from_bytes(s.get_mut(off..off + Av::SIZE).ok_or(EINVAL)?)
                    .map_err(|_| EINVAL)?;
                *av = *ah.av();
                av.set_dqp_dct((ud.remote_qpn & 0xff_ffff) | EXTENDED_UD_AV);
                av.set_qkey(ud.remote_qkey);
                off += Av::SIZE;
            }
            SendKind::Rc | SendKind::Uc if op == WrOpcode::RegMr => {
                off += umr_reg(s.get_mut(off..).ok_or(EINVAL)?, wr, qp)?;
            }
            SendKind::Rc | SendKind::Uc if op == WrOpcode::LocalInv => {
                off += umr_invalidate(s.get_mut(off..).ok_or(EINVAL)?)?;
            }
            SendKind::Rc | SendKind::Uc => {
                if let Some(rem) = wr.remote() {
                    let r = WqeRaddrSeg::mut_from_bytes(
                        s.get_mut(off..off + WqeRaddrSeg::SIZE).ok_or(EINVAL)?,
                    )
                    .map_err(|_| EINVAL)?;
                    r.set_raddr(rem.addr);
                    r.set_rkey(rem.rkey);
                    off += WqeRaddrSeg::SIZE;
                    if matches!(op, WrOpcode::CmpSwap | WrOpcode::FetchAdd) {
                        if wr.num_sge() != 1 {
                            return Err(EINVAL);
                        }
                        let a = WqeAtomicSeg::mut_from_bytes(
                            s.get_mut(off..off + WqeAtomicSeg::SIZE).ok_or(EINVAL)?,
                        )
                        .map_err(|_| EINVAL)?;
                        if op == WrOpcode::CmpSwap {
                            a.set_swap_add(rem.swap);
                            a.set_compare(rem.compare_add);
                        } else {
                            a.set_swap_add(rem.compare_add);
                        }
                        off += WqeAtomicSeg::SIZE;
                    }
                }
            }
        }
        let data = if matches!(op, WrOpcode::RegMr | WrOpcode::LocalInv) || inline.is_some() {
            // Their gather list is not used (or was copied).
            None
        } else {
            Some(wr.sges())
        };
        if let Some(bytes) = inline {
            off += inline_seg(s.get_mut(off..).ok_or(EINVAL)?, bytes, l.max_inline)?;
        }
        for sge in data.into_iter().flatten().filter(|g| g.length != 0) {
            let d =
                WqeDataSeg::mut_from_bytes(s.get_mut(off..off + WqeDataSeg::SIZE).ok_or(EINVAL)?)
                    .map_err(|_| EINVAL)?;
            d.set_byte_count(sge.length);
            d.set_lkey(sge.lkey);
            d.set_addr(sge.addr);
            off += WqeDataSeg::SIZE;
        }
        let signaled = self.sig_all || wr.flags() & send_flags::SIGNALED != 0;
        let mut fm = if signaled { fm_ce_se::CQ_UPDATE } else { 0 };
        if wr.flags() & send_flags::SOLICITED != 0 {
            fm |= fm_ce_se::SOLICITED;
        }
        if wr.flags() & send_flags::FENCE != 0 {
            fm |= fm_ce_se::FENCE_MODE_SMALL_AND_FENCE;
        }
        // The card reads a WQE's segments (`ds`) and finds the next WQE right after them; a
        // WQE does not wrap the ring: NOPs pad its end first (as mlx5e's `mlx5e_post_nop`).
        let wqebbs = off.div_ceil(SEND_WQE_BB) as u32;
        let mask = ring_bbs - 1;
        let used = u32::from(ring.pc.wrapping_sub(ring.cc));
        let contig = ring_bbs - (u32::from(ring.pc) & mask);
        let pad = if contig < wqebbs { contig } else { 0 };
        if used + pad + wqebbs > ring_bbs {
            return Err(ENOMEM);
        }
        {
            let c = WqeCtrlSeg::mut_from_bytes(s.get_mut(..WqeCtrlSeg::SIZE).ok_or(EINVAL)?)
                .map_err(|_| EINVAL)?;
            c.set_qpn_ds(qpn_ds(self.qpn, (off / SEND_WQE_DS) as u8));
            c.set_fm_ce_se(fm.into());
            if let Some(i) = imm {
                c.set_imm(i);
            }
        }
        let sq_base = self.layout.rq_bytes();
        for _ in 0..pad {
            let pc = ring.pc;
            let mut nop = [0u8; WqeCtrlSeg::SIZE];
            let c = WqeCtrlSeg::mut_from_bytes(&mut nop[..]).map_err(|_| EINVAL)?;
            c.set_opmod_idx_opcode(opmod_idx_opcode(0, pc, opcode::NOP));
            c.set_qpn_ds(qpn_ds(self.qpn, 1));
            let at = sq_base + (u32::from(pc) & mask) as usize * SEND_WQE_BB;
            self.buf.write(at, &nop)?;
            *ring
                .size
                .get_mut((u32::from(pc) & mask) as usize)
                .ok_or(EINVAL)? = 1;
            ring.pc = pc.wrapping_add(1);
        }
        let pc = ring.pc;
        let s = ring.scratch.get_mut(..off).ok_or(EINVAL)?;
        WqeCtrlSeg::mut_from_bytes(s.get_mut(..WqeCtrlSeg::SIZE).ok_or(EINVAL)?)
            .map_err(|_| EINVAL)?
            .set_opmod_idx_opcode(opmod_idx_opcode(0, pc, hw_op));
        let mut head = [0u8; 8];
        head.copy_from_slice(s.get(..8).ok_or(EINVAL)?);
        let slot = (u32::from(pc) & mask) as usize;
        self.buf.write(sq_base + slot * SEND_WQE_BB, s)?;
        *ring.wr_id.get_mut(slot).ok_or(EINVAL)? = wr.wr_id();
        *ring.op.get_mut(slot).ok_or(EINVAL)? = wc_op;
        *ring.size.get_mut(slot).ok_or(EINVAL)? = wqebbs as u8;
        ring.pc = pc.wrapping_add(wqebbs as u16);
        Ok(head)
    }

    /// Posts a chain of receive requests (`mlx5_ib_post_recv`).
    pub(crate) fn post_recv(&self, wrs: &mut RecvWrs<'_>) -> Result {
        let l = &self.layout;
        let mut ring = self.rq.lock();
        let mut posted = false;
        let mut r = Ok(());
        for wr in wrs.by_ref() {
            if l.rq_wqes == 0 || wr.num_sge() > l.recv_sge as usize {
                r = Err(EINVAL);
                break;
            }
            if ring.head.wrapping_sub(ring.tail) >= l.rq_wqes {
                r = Err(ENOMEM);
                break;
            }
            let stride = 1usize << l.rq_shift;
            let off = scatter_list(ring.scratch.get_mut(..stride).ok_or(EINVAL)?, &wr)?;
            let slot = (ring.head & (l.rq_wqes - 1)) as usize;
            let data = ring.scratch.get(..off).ok_or(EINVAL)?;
            self.buf.write(slot << l.rq_shift, data)?;
            *ring.wr_id.get_mut(slot).ok_or(EINVAL)? = wr.wr_id();
            ring.head = ring.head.wrapping_add(1);
            posted = true;
        }
        if posted {
            // `publish_recv` orders the WQEs before the record (`dma_wmb`).
            self.dbrec.publish_recv(ring.head)?;
        }
        r
    }

    /// The work completion of one CQE of this QP (`mlx5_poll_one`), `None` if the CQE names
    /// no request in flight (it is dropped).
    pub(crate) fn complete(&self, cqe: &Cqe64) -> Option<WorkCompletion> {
        let op = cqe.opcode() as u8;
        let err = ErrCqe::ref_from_bytes(&cqe.0[..]).ok();
        match op {
            cqe_op::REQ | cqe_op::REQ_ERR => {
                let counter = cqe.wqe_counter() as u16;
                let mut ring = self.sq.lock();
                let l = &self.layout;
                let ring_bbs = l.sq_wqes * l.bbs;
                if ring_bbs == 0 {
                    return None;
                }
                let slot = (u32::from(counter) & (ring_bbs - 1)) as usize;
                let wr_id = *ring.wr_id.get(slot)?;
                let wc_op = *ring.op.get(slot)?;
                let size = *ring.size.get(slot)?;
                ring.cc = counter.wrapping_add(size.into());
                let mut wc = WorkCompletion::new(self.handle, wr_id, WcStatus::Success, wc_op);
                if op == cqe_op::REQ_ERR {
                    let e = err?;
                    wc.status = status_of(e.syndrome() as u8);
                    wc.vendor_err = e.vendor_err_synd();
                } else if wc_op == WcOpcode::RdmaRead {
                    wc.byte_len = cqe.byte_cnt();
                } else if matches!(wc_op, WcOpcode::CompSwap | WcOpcode::FetchAdd) {
                    wc.byte_len = 8;
                }
                Some(wc)
            }
            cqe_op::RESP_SEND
            | cqe_op::RESP_SEND_IMM
            | cqe_op::RESP_SEND_INV
            | cqe_op::RESP_WR_IMM
            | cqe_op::RESP_ERR => {
                let wr_id = self.consume_recv(cqe)?;
                let mut wc =
                    WorkCompletion::new(self.handle, wr_id, WcStatus::Success, WcOpcode::Recv);
                if op == cqe_op::RESP_ERR {
                    let e = err?;
                    wc.status = status_of(e.syndrome() as u8);
                    wc.vendor_err = e.vendor_err_synd();
                    return Some(wc);
                }
                self.responder(cqe, op, &mut wc);
                Some(wc)
            }
            _ => None,
        }
    }

    /// The cookie of the receive request a responder CQE consumed (`handle_responder`,
    /// `mlx5_poll_one`): the SRQ WQE the CQE names, which goes back on the SRQ's free list,
    /// or the oldest of the QP's own receive queue.
    fn consume_recv(&self, cqe: &Cqe64) -> Option<u64> {
        if let Some(srq) = &self.srq {
            return srq.take(cqe.wqe_counter() as u16);
        }
        let mut ring = self.rq.lock();
        let n = self.layout.rq_wqes;
        if n == 0 || ring.head == ring.tail {
            return None;
        }
        let wr_id = *ring.wr_id.get((ring.tail & (n - 1)) as usize)?;
        ring.tail = ring.tail.wrapping_add(1);
        Some(wr_id)
    }

    /// Removes this QP's waiting CQEs from its kernel CQs' rings (the QP was reset or is
    /// destroyed); the SRQ WQEs its receive CQEs consumed go back on the SRQ's free list
    /// (mlx5_ib `__mlx5_ib_cq_clean`).
    pub(crate) fn clean(&self, cqs: &[Arc<IrqSafeLock<Cq>>]) {
        for ring in cqs {
            ring.lock().clean(|cqe| {
                let mine = cqe.sop_drop_qpn() & 0xff_ffff == self.qpn;
                if let (true, Some(srq)) = (mine && is_responder(cqe.opcode() as u8), &self.srq) {
                    srq.release(cqe.wqe_counter() as u16);
                }
                mine
            });
        }
    }

    /// The receive completion's fields (`handle_responder` on a RoCE port).
    fn responder(&self, cqe: &Cqe64, op: u8, wc: &mut WorkCompletion) {
        wc.byte_len = cqe.byte_cnt();
        match op {
            cqe_op::RESP_WR_IMM => {
                wc.opcode = WcOpcode::RecvRdmaWithImm;
                wc.flags |= wc_flags::WITH_IMM;
                wc.ex = cqe.immediate().to_be();
            }
            cqe_op::RESP_SEND_IMM => {
                wc.flags |= wc_flags::WITH_IMM;
                wc.ex = cqe.immediate().to_be();
            }
            cqe_op::RESP_SEND_INV => {
                wc.flags |= wc_flags::WITH_INVALIDATE;
                wc.ex = cqe.immediate();
            }
            _ => {}
        }
        let fr = cqe.flags_rqpn();
        wc.src_qp = fr & 0xff_ffff;
        if self.kind == SendKind::Datagram && (fr >> 28) & 3 != 0 {
            wc.flags |= wc_flags::GRH;
        }
        // The only P_Key (the GSI QP reports its index) is the default one, at index 0.
        wc.pkey_index = 0;
        if cqe.cvlan_stripped() != 0 {
            let v = cqe.vlan_info();
            wc.vlan_id = (v & 0xfff) as u16;
            wc.sl = ((v >> 13) & 7) as u8;
            wc.flags |= wc_flags::WITH_VLAN;
        }
        wc.network_hdr_type = match ((fr >> 24) & 3) as u8 {
            roce_l3_header_type::IPV6 => NetworkType::Ipv6,
            roce_l3_header_type::IPV4 => NetworkType::Ipv4,
            _ => NetworkType::RoceV1,
        };
        wc.flags |= wc_flags::WITH_NETWORK_HDR_TYPE;
    }
}

/// An inline data segment (mlx5_ib `set_data_inl_seg`): the header with the total length,
/// then the bytes of every gather entry, padded to 16 bytes. `ENOMEM` if they exceed the
/// QP's `max_inline`. Returns the bytes written.
fn inline_seg<'a>(
    s: &mut [u8],
    bytes: impl Iterator<Item = &'a [u8]>,
    max_inline: u32,
) -> Result<usize> {
    let (hdr, rest) = s.split_at_mut_checked(WqeInlineSeg::SIZE).ok_or(EINVAL)?;
    let mut n = 0usize;
    for b in bytes {
        let end = n + b.len();
        if end > max_inline as usize {
            return Err(ENOMEM);
        }
        rest.get_mut(n..end).ok_or(ENOMEM)?.copy_from_slice(b);
        n = end;
    }
    WqeInlineSeg::mut_from_bytes(hdr)
        .map_err(|_| EINVAL)?
        .set_byte_count(n as u32 | INLINE_SEG);
    Ok((WqeInlineSeg::SIZE + n).next_multiple_of(SEND_WQE_DS))
}

/// The UMR segments of a fast registration (mlx5_ib `set_reg_wr`, always through a pointer
/// to the page list): the mkey must be free; it gets the key variant, rights, start address,
/// length and the list's entries, and remote invalidation is enabled. The mask leaves the
/// page size alone — the mkey was created with 4 KiB pages and `map_mr_sg` takes no other —
/// so it works even on firmware with `umr_modify_entity_size_disabled`, where mlx5_ib (which
/// always sets that bit) offers no fast registration.
/// Returns the bytes written.
fn umr_reg(s: &mut [u8], wr: &ib::SendWr<'_, IbDev>, qp: &ib::Qp<IbDev>) -> Result<usize> {
    let reg = wr.reg().ok_or(EINVAL)?;
    let mr: &IbMr = reg.mr;
    let (dma, n) = mr.page_list().ok_or(EINVAL)?.dma_and_len();
    if n == 0 || wr.flags() & send_flags::INLINE != 0 {
        return Err(EINVAL);
    }
    // The list as the card reads it: in 64-byte units (mlx5r_umr_get_xlt_octo).
    let list = (n as usize * 8).next_multiple_of(64);
    let atomic = reg.access.contains(Access::REMOTE_ATOMIC);
    let (ctrl, rest) = s.split_at_mut_checked(WqeUmrCtrlSeg::SIZE).ok_or(EINVAL)?;
    let u = WqeUmrCtrlSeg::mut_from_bytes(ctrl).map_err(|_| EINVAL)?;
    u.set_flags(UMR_CHECK_NOT_FREE.into());
    u.set_xlt_octowords((list / 16) as u32);
    let mut mask = MkeyMask::LEN
        | MkeyMask::START_ADDR
        | MkeyMask::EN_RINVAL
        | MkeyMask::KEY
        | MkeyMask::LR
        | MkeyMask::LW
        | MkeyMask::RR
        | MkeyMask::RW
        | MkeyMask::SMALL_FENCE
        | MkeyMask::FREE;
    if atomic {
        mask |= MkeyMask::A;
    }
    u.set_mkey_mask(mask.bits());
    let (seg, rest) = rest.split_at_mut_checked(MkeySeg::SIZE).ok_or(EINVAL)?;
    let k = MkeySeg::mut_from_bytes(seg).map_err(|_| EINVAL)?;
    let perm = Perm::LOCAL_READ | Perm::UMR_EN | perm_of(reg.access);
    k.set_flags(u32::from(perm.bits()) | u32::from(access_mode::MTT));
    k.set_qpn_mkey7_0((reg.key & 0xff) | 0xffff_ff00);
    k.set_flags_pd(MKEY_REMOTE_INVAL);
    k.set_start_addr(reg.mr.iova());
    k.set_len(reg.mr.length());
    k.set_xlt_oct_size(n.next_multiple_of(8) >> 1);
    let d = WqeDataSeg::mut_from_bytes(rest.get_mut(..WqeDataSeg::SIZE).ok_or(EINVAL)?)
        .map_err(|_| EINVAL)?;
    d.set_byte_count(list as u32);
    d.set_lkey(qp.pd().ok_or(EINVAL)?.local_dma_lkey());
    d.set_addr(dma);
    Ok(WqeUmrCtrlSeg::SIZE + MkeySeg::SIZE + WqeDataSeg::SIZE)
}

/// The UMR segments of a local invalidation (`set_linv_wr`): the mkey the control segment
/// names becomes free. Returns the bytes written.
fn umr_invalidate(s: &mut [u8]) -> Result<usize> {
    let (ctrl, rest) = s.split_at_mut_checked(WqeUmrCtrlSeg::SIZE).ok_or(EINVAL)?;
    let u = WqeUmrCtrlSeg::mut_from_bytes(ctrl).map_err(|_| EINVAL)?;
    u.set_flags(UMR_INLINE.into());
    u.set_mkey_mask(MkeyMask::FREE.bits());
    let k = MkeySeg::mut_from_bytes(rest.get_mut(..MkeySeg::SIZE).ok_or(EINVAL)?)
        .map_err(|_| EINVAL)?;
    k.set_status(MKEY_STATUS_FREE.into());
    Ok(WqeUmrCtrlSeg::SIZE + MkeySeg::SIZE)
}

/// A receive request's scatter entries as the data segments of a receive WQE (`s`: the
/// WQE's room for them, zeroed here), ended by a terminating entry when fewer than fit
/// (`mlx5_ib_post_recv`, `mlx5_ib_post_srq_recv`). Returns the bytes written.
pub(crate) fn scatter_list(s: &mut [u8], wr: &RecvWr<'_>) -> Result<usize> {
    s.fill(0);
    let mut off = 0;
    for sge in wr.sges() {
        let d = WqeDataSeg::mut_from_bytes(s.get_mut(off..off + WqeDataSeg::SIZE).ok_or(EINVAL)?)
            .map_err(|_| EINVAL)?;
        d.set_byte_count(sge.length);
        d.set_lkey(sge.lkey);
        d.set_addr(sge.addr);
        off += WqeDataSeg::SIZE;
    }
    if off < s.len() {
        WqeDataSeg::mut_from_bytes(s.get_mut(off..off + WqeDataSeg::SIZE).ok_or(EINVAL)?)
            .map_err(|_| EINVAL)?
            .set_lkey(TERMINATE_SCATTER_LIST_LKEY);
        off += WqeDataSeg::SIZE;
    }
    Ok(off)
}

/// Whether a CQE is the responder's (it consumed a receive WQE).
fn is_responder(op: u8) -> bool {
    matches!(
        op,
        cqe_op::RESP_SEND
            | cqe_op::RESP_SEND_IMM
            | cqe_op::RESP_SEND_INV
            | cqe_op::RESP_WR_IMM
            | cqe_op::RESP_ERR
    )
}

/// An error CQE's syndrome as a work completion status (`mlx5_handle_error_cqe`).
fn status_of(s: u8) -> WcStatus {
    match s {
        syndrome::LOCAL_LENGTH_ERR => WcStatus::LocLenErr,
        syndrome::LOCAL_QP_OP_ERR => WcStatus::LocQpOpErr,
        syndrome::LOCAL_PROT_ERR => WcStatus::LocProtErr,
        syndrome::WR_FLUSH_ERR => WcStatus::WrFlushErr,
        syndrome::MW_BIND_ERR => WcStatus::MwBindErr,
        syndrome::BAD_RESP_ERR => WcStatus::BadRespErr,
        syndrome::LOCAL_ACCESS_ERR => WcStatus::LocAccessErr,
        syndrome::REMOTE_INVAL_REQ_ERR => WcStatus::RemInvReqErr,
        syndrome::REMOTE_ACCESS_ERR => WcStatus::RemAccessErr,
        syndrome::REMOTE_OP_ERR => WcStatus::RemOpErr,
        syndrome::TRANSPORT_RETRY_EXC_ERR => WcStatus::RetryExcErr,
        syndrome::RNR_RETRY_EXC_ERR => WcStatus::RnrRetryExcErr,
        syndrome::REMOTE_ABORTED_ERR => WcStatus::RemAbortErr,
        _ => WcStatus::GeneralErr,
    }
}
