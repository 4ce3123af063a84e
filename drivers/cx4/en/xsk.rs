// SPDX-License-Identifier: GPL-2.0
//! AF_XDP zero copy on a channel (en/xsk/: `mlx5e_open_xsk`, rx.c, tx.c): with a socket's
//! buffer pool bound to queue `ix`, the channel gets an XSK RQ built over the pool ([`XskRq`]:
//! each WQE one chunk of the socket's memory, frames no larger than a chunk's frame size) and
//! an XSK SQ sending what the socket queues ([`XskSq`]), each with its own CQ
//! ([`XskQueues`]), beside its regular RQ and SQ and polled by the same NAPI; the XSK RQ
//! takes the channel's place in the RSS tables and its direct TIR (`mlx5e_rx_res_xsk_update`).
//!
//! A received frame meets the XDP program first: XDP_REDIRECT into the socket's XSKMAP entry
//! puts it in the socket's RX ring without a copy; XDP_PASS (or no program) copies it into an
//! skb for the stack; XDP_TX copies it into a page of the regular RQ's pool and sends it from
//! the channel's SQ, as mlx5e sends it from its XDP SQ (`mlx5e_xmit_xdp_buff`,
//! `xdp_convert_zc_to_xdp_frame`); XDP_DROP and XDP_ABORTED give the buffer back to the pool.
//! An error completion stops the XSK RQ or SQ until the recovery work resets it
//! ([`XskQueues::recover`]).

use cx4_hw::pages::PAGE_SIZE;
use kernel::prelude::*;
use netdev::{
    napi::NapiContext,
    page_pool::PagePool,
    xdp::{
        flush_redirects,
        BpfProg,
        XdpAction, //
    },
    xsk::{
        XskBuff,
        XskPool,
        XskRxq,
        XskTx, //
    },
    Device,
};

use crate::{
    cq::Cq,
    en::{
        cqe::cqe_error,
        netdev::TxSlot,
        rq::Rq,
        sq::{
            Sq,
            TxWqe, //
        },
        stats::ChannelStats,
        tx::XdpTxError,
    },
};

/// Bytes of a frame inlined when the SQ inlines anything (en/xdp.h `MLX5E_XDP_MIN_INLINE`).
const XSK_MIN_INLINE: usize = 18;
/// Frames taken from the socket's TX ring per poll (en/xsk/tx.c: the NAPI budget).
const XSK_TX_BUDGET: usize = 64;
/// The smallest chunk a pool may have (en/xsk/setup.c `MLX5E_MIN_XSK_CHUNK_SIZE`).
pub(crate) const MIN_CHUNK: u32 = 2048;

/// Whether `pool`'s chunks fit frames of `hw_mtu` bytes (en/xsk/setup.c
/// `mlx5e_validate_xsk_param`: a chunk within [2048, PAGE_SIZE], a frame in one chunk).
pub(crate) fn pool_fits(pool: &XskPool, hw_mtu: u32) -> bool {
    (MIN_CHUNK..=PAGE_SIZE as u32).contains(&pool.chunk_size()) && pool.rx_frame_size() >= hw_mtu
}

/// A channel's RQ over an XSK pool, owned by the channel's NAPI poller.
pub(crate) struct XskRq {
    // Field order is drop order: the RQ goes before the buffers it points to.
    rq: Rq,
    held: Held,
    xdp: Option<BpfProg>,
    frame: u32,
    in_error: bool,
    short: bool,
}

impl XskRq {
    /// A ring over `rq` (one scatter entry per WQE), RX queue `ix` of `dev`, its WQEs posted
    /// with buffers of `pool` as far as the socket's fill ring has them.
    pub(crate) fn new(
        rq: Rq,
        dev: &Device,
        ix: u16,
        pool: &XskPool,
        xdp: Option<BpfProg>,
        st: &ChannelStats,
    ) -> Result<Self> {
        if rq.segs() != 1 {
            return Err(EINVAL);
        }
        let rxq = XskRxq::new(dev, u32::from(ix), pool)?;
        let mut bufs = KVec::with_capacity(usize::from(rq.size()), GFP_KERNEL)?;
        for _ in 0..rq.size() {
            bufs.push(None, GFP_KERNEL)?;
        }
        let mut this = Self {
            rq,
            held: Held { bufs, rxq },
            xdp,
            frame: pool.rx_frame_size(),
            in_error: false,
            short: false,
        };
        // An empty fill ring is no error: the socket fills it and wakes us.
        this.fill(st);
        Ok(this)
    }

    /// The RQ number.
    pub(crate) fn rqn(&self) -> u32 {
        self.rq.rqn()
    }

    /// Replaces the XDP program (the NAPI poll stopped).
    pub(crate) fn replace_xdp(&mut self, prog: BpfProg) {
        self.xdp = Some(prog);
    }

    /// Posts a buffer of the pool to every free WQE and rings the doorbell (en/xsk/rx.h
    /// `mlx5e_xsk_update_rx_wakeup`: with `XDP_USE_NEED_WAKEUP`, the socket is told to wake
    /// us when its fill ring ran dry).
    pub(crate) fn fill(&mut self, st: &ChannelStats) -> usize {
        let (mut posted, mut short) = (0, false);
        while self.rq.free() > 0 && !self.in_error {
            let idx = self.rq.index(self.rq.pc());
            let Held { bufs, rxq } = &mut self.held;
            let Some(slot) = bufs.get_mut(idx) else {
                break;
            };
            if slot.is_none() {
                *slot = rxq.alloc();
            }
            let Some(b) = slot.as_ref() else {
                ChannelStats::add(&st.rx_xsk_buff_alloc_err, 1);
                short = true;
                break;
            };
            if self.rq.post_recv(&[(b.dma_addr(), self.frame)]).is_err() {
                break;
            }
            posted += 1;
        }
        if posted > 0 {
            let _ = self.rq.ring_doorbell();
        }
        let rxq = &mut self.held.rxq;
        if rxq.pool().uses_need_wakeup() {
            rxq.set_need_wakeup(short);
        }
        self.short = short;
        posted
    }

    /// Whether the poll must go on for want of buffers: the socket does not use need_wakeup
    /// (else it wakes us).
    pub(crate) fn short(&self) -> bool {
        self.short && !self.held.rxq.pool().uses_need_wakeup()
    }

    /// Whether an error completion left the RQ waiting for [`XskRq::recover`].
    pub(crate) fn in_error(&self) -> bool {
        self.in_error
    }

    /// Consumes up to `budget` receive completions of `cq` (en/xsk/rx.c
    /// `mlx5e_xsk_skb_from_cqe_linear`), refills the ring; returns the completions.
    pub(crate) fn poll(
        &mut self,
        cq: &mut Cq,
        napi: &NapiContext,
        budget: usize,
        mut xdp_tx: XdpTx<'_>,
        st: &ChannelStats,
    ) -> usize {
        let dev = napi.device();
        let (mut pkts, mut bytes, mut redirected, mut sent) = (0u64, 0u64, false, false);
        let Self {
            rq,
            held: Held { bufs, rxq },
            xdp,
            in_error,
            ..
        } = self;
        let n = cq.poll(budget, |cqe| {
            let Ok(c) = rq.complete(cqe) else {
                ChannelStats::add(&st.rx_dropped, 1);
                return;
            };
            let Some(buf) = bufs.get_mut(rq.index(c.wqe_counter)).and_then(Option::take) else {
                return;
            };
            let info = match c.result {
                Ok(info) => info,
                Err(e) => {
                    rxq.free(buf);
                    if !e.is_flush() {
                        ChannelStats::add(&st.rx_cqe_err, 1);
                        *in_error = true;
                    }
                    return;
                }
            };
            // `Rq::complete` checked the length against the posted frame size.
            let mut frame = match rxq.receive(buf, info.byte_cnt) {
                Ok(f) => f,
                Err(_) => {
                    ChannelStats::add(&st.rx_dropped, 1);
                    return;
                }
            };
            let act = match xdp.as_ref() {
                Some(p) => frame.run(p, napi),
                None => XdpAction::Pass,
            };
            match (act, xdp.as_ref()) {
                (XdpAction::Redirect, Some(p)) => match frame.redirect(dev, p, napi) {
                    Ok(()) => {
                        redirected = true;
                        ChannelStats::add(&st.rx_xsk_xdp_redirect, 1);
                    }
                    Err(_) => {
                        p.trace_exception(dev, act);
                        ChannelStats::add(&st.rx_xsk_xdp_drop, 1);
                    }
                },
                // Counted as received only when it goes to the stack (mlx5e's XSK RQ
                // counts `packets` in `mlx5e_complete_rx_cqe`, after XDP).
                (XdpAction::Pass, _) => match frame.into_skb(napi) {
                    Ok(skb) => {
                        pkts += 1;
                        bytes += u64::from(info.byte_cnt);
                        napi.gro_receive(skb);
                    }
                    Err(_) => ChannelStats::add(&st.rx_dropped, 1),
                },
                (XdpAction::Tx, Some(p)) => {
                    if xdp_tx.send(frame.data(), st) {
                        sent = true;
                        ChannelStats::add(&st.rx_xdp_tx_xmit, 1);
                    } else {
                        p.trace_exception(dev, act);
                        ChannelStats::add(&st.rx_xsk_xdp_drop, 1);
                    }
                    // Dropped here: the buffer goes back to the pool, its copy is on the SQ.
                }
                (a, p) => {
                    if let (Some(p), true) = (p, a != XdpAction::Drop) {
                        if let XdpAction::Invalid(_) = a {
                            p.warn_invalid_action(dev, a);
                        }
                        p.trace_exception(dev, a);
                    }
                    ChannelStats::add(&st.rx_xsk_xdp_drop, 1);
                }
            }
        });
        if sent {
            xdp_tx.flush(st);
        }
        if redirected {
            flush_redirects(napi);
        }
        ChannelStats::add(&st.rx_xsk_packets, pkts);
        ChannelStats::add(&st.rx_xsk_bytes, bytes);
        self.fill(st);
        n
    }

    /// Recovers the RQ after an error completion (process context, the poller stopped): the
    /// buffers it held go back to the pool, new ones are posted.
    pub(crate) fn recover(&mut self, cq: &mut Cq, st: &ChannelStats) -> Result<bool> {
        let Self {
            rq,
            held: Held { bufs, rxq },
            ..
        } = self;
        let size = usize::from(rq.size());
        cq.poll(size, |cqe| {
            if let Ok(c) = rq.complete(cqe) {
                if let Some(b) = bufs.get_mut(rq.index(c.wqe_counter)).and_then(Option::take) {
                    rxq.free(b);
                }
            }
        });
        let mut taken = KVec::with_capacity(size, GFP_KERNEL)?;
        let was = rq.recover(|ctr| {
            let i = usize::from(ctr) & size.wrapping_sub(1);
            if let Some(b) = bufs.get_mut(i).and_then(Option::take) {
                // Capacity reserved for every WQE.
                let _ = taken.push(b, GFP_ATOMIC);
            }
        })?;
        for b in taken {
            rxq.free(b);
        }
        self.in_error = false;
        if was {
            ChannelStats::add(&st.rx_recover, 1);
        }
        self.fill(st);
        Ok(was)
    }
}

/// Where XDP_TX from an XSK RQ goes: a copy of the frame in a page of `pool` (the regular
/// RQ's, mapped both ways while a program runs), sent from the channel's SQ `tx` like the
/// regular RQ's XDP_TX; the completion returns the page to its pool.
pub(crate) struct XdpTx<'a> {
    /// The pool the copies are made in.
    pub(crate) pool: Option<&'a mut PagePool>,
    /// The channel's send ring.
    pub(crate) tx: Option<&'a TxSlot>,
}

impl XdpTx<'_> {
    /// Copies `frame` into a page and posts it (no doorbell: [`XdpTx::flush`]); whether it
    /// was posted (else counted as `rx_xdp_tx_full` / `_err`).
    fn send(&mut self, frame: &[u8], st: &ChannelStats) -> bool {
        let (Some(pool), Some(tx)) = (self.pool.as_deref_mut(), self.tx) else {
            ChannelStats::add(&st.rx_xdp_tx_err, 1);
            return false;
        };
        let Some(mut page) = pool.alloc() else {
            ChannelStats::add(&st.rx_xdp_tx_err, 1);
            return false;
        };
        let Some(dst) = page.data_mut().get_mut(..frame.len()) else {
            ChannelStats::add(&st.rx_xdp_tx_err, 1);
            return false;
        };
        dst.copy_from_slice(frame);
        let r = match &mut *tx.lock() {
            Some(r) => r.xmit_xdp(page, 0, frame.len() as u32).map_err(|(_, e)| e),
            None => Err(XdpTxError::Err),
        };
        match r {
            Ok(()) => true,
            Err(e) => {
                let c = match e {
                    XdpTxError::Full => &st.rx_xdp_tx_full,
                    XdpTxError::Err => &st.rx_xdp_tx_err,
                };
                ChannelStats::add(c, 1);
                false
            }
        }
    }

    /// Rings the SQ's doorbell for the frames this poll posted.
    fn flush(&mut self, st: &ChannelStats) {
        if let Some(t) = self.tx {
            if let Some(r) = &mut *t.lock() {
                r.xdp_flush(st);
            }
        }
    }
}

/// The buffers posted to an [`XskRq`] and the pool's receive side: dropped after the RQ
/// (no DMA into them any more), the buffers go back to the pool (en_main.c
/// `mlx5e_free_rx_descs`).
struct Held {
    bufs: KVec<Option<XskBuff>>,
    rxq: XskRxq,
}

impl Drop for Held {
    fn drop(&mut self) {
        for b in self.bufs.iter_mut().filter_map(Option::take) {
            self.rxq.free(b);
        }
    }
}

/// A channel's send queue for an XSK pool (en/xsk/tx.c, the XSK SQ of `mlx5e_open_xsk`),
/// owned by the channel's NAPI poller.
pub(crate) struct XskSq {
    // Field order is drop order: the SQ before its CQ, both before the frames in flight are
    // reported.
    sq: Sq,
    cq: Cq,
    tx: InFlight,
    in_error: bool,
}

/// The socket's send side and the frames posted, not completed: dropped (after the SQ), they
/// are reported completed, as mlx5e's `mlx5e_free_xdpsq_descs` does, so the socket gets its
/// buffers back.
struct InFlight {
    tx: XskTx,
    n: u32,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.tx.completed(self.n);
    }
}

impl XskSq {
    /// A send queue over `sq`, its completions on `cq`, sending what `pool`'s socket queues.
    pub(crate) fn new(sq: Sq, cq: Cq, pool: &XskPool) -> Result<Self> {
        let tx = pool.take_tx().ok_or(EBUSY)?;
        Ok(Self {
            sq,
            cq,
            tx: InFlight { tx, n: 0 },
            in_error: false,
        })
    }

    /// The send CQ's number.
    pub(crate) fn cqn(&self) -> u32 {
        self.cq.cqn()
    }

    /// Reports the frames the device sent (`xsk_tx_completed`), then posts up to a budget of
    /// what the socket queued and rings the doorbell (en/xsk/tx.c `mlx5e_xsk_tx`). Returns
    /// whether frames are left for the next poll.
    pub(crate) fn poll(&mut self, st: &ChannelStats) -> bool {
        let (mut done, mut cqes, mut errors) = (0u32, 0u64, 0u64);
        let Self { sq, cq, .. } = self;
        cq.poll(crate::en::tx::TX_CQ_BUDGET, |cqe| {
            cqes += 1;
            match sq.complete(cqe, |_| done += 1) {
                Ok(_) if cqe_error(cqe).is_none() => {}
                _ => errors += 1,
            }
        });
        ChannelStats::add(&st.tx_xsk_cqes, cqes);
        if errors > 0 {
            // Stopped until the recovery work resets it ([`XskSq::recover`]).
            ChannelStats::add(&st.tx_cqe_err, errors);
            self.in_error = true;
        }
        self.tx.n = self.tx.n.saturating_sub(done);
        self.tx.tx.completed(done);
        if self.in_error {
            return false;
        }
        let inline = if self.sq.min_inline() == cx4_hw::wq::inline_mode::NONE {
            0
        } else {
            XSK_MIN_INLINE
        };
        let (mut sent, mut more) = (0usize, true);
        let mut head = [0u8; XSK_MIN_INLINE];
        while sent < XSK_TX_BUDGET {
            if self.sq.should_stop() {
                ChannelStats::add(&st.tx_xsk_full, 1);
                break;
            }
            let Some(d) = self.tx.tx.peek() else {
                more = false;
                break;
            };
            let n = self.tx.tx.copy_head(&d, &mut head[..inline]);
            let rest = d.len - n as u32;
            let seg = [(d.dma + n as u64, rest)];
            let w = TxWqe {
                inline: head.get(..n).unwrap_or_default(),
                vlan: None,
                cs_flags: cx4_hw::wqe::CsFlags::empty(),
                lso_mss: None,
                swp: None,
                gather: if rest > 0 { &seg } else { &[] },
                signal: false,
            };
            if n < inline || self.sq.post_send(&w).is_err() {
                // Taken from the ring, never sent: completed as the socket expects every
                // frame to be (en/xsk/tx.c counts it as an error).
                ChannelStats::add(&st.tx_xsk_err, 1);
                self.tx.tx.completed(1);
                continue;
            }
            self.tx.n += 1;
            sent += 1;
        }
        if sent > 0 {
            if self.sq.ring_doorbell().is_ok() {
                ChannelStats::add(&st.tx_doorbells, 1);
            }
            ChannelStats::add(&st.tx_xsk_xmit, sent as u64);
            self.tx.tx.release();
        }
        // The socket wakes us whenever it queued something (no interrupt tells us).
        let tx = &mut self.tx.tx;
        if tx.pool().uses_need_wakeup() {
            tx.set_need_wakeup(true);
        }
        more
    }

    /// Arms the send CQ unless it is still armed (NAPI completed).
    pub(crate) fn arm(&mut self) -> Result {
        self.cq.rearm()
    }

    /// Resets the SQ after an error completion (process context, the poller stopped), as
    /// the regular SQ's recovery does (en/reporter_tx.c `mlx5e_tx_reporter_err_cqe_recover`:
    /// MODIFY_SQ ERR -> RST -> RDY): the frames it held are reported completed to the
    /// socket (lost, as a flushed frame of the regular SQ is), and sending resumes. Whether
    /// it was in error.
    fn recover(&mut self, st: &ChannelStats) -> Result<bool> {
        if !self.in_error {
            return Ok(false);
        }
        let Self { sq, cq, .. } = self;
        // The flushed WQEs' completions first.
        cq.poll(usize::from(sq.size()), |cqe| {
            let _ = sq.complete(cqe, |_| {});
        });
        let was = sq.recover(|_| {})?;
        // Nothing is in flight any more: every frame taken from the ring is completed.
        let n = core::mem::take(&mut self.tx.n);
        self.tx.tx.completed(n);
        self.in_error = false;
        if was {
            ChannelStats::add(&st.tx_xsk_recover, 1);
        }
        Ok(was)
    }
}

/// A channel's XSK queues (en/xsk/setup.c `mlx5e_open_xsk`): the XSK RQ and its CQ, the XSK
/// SQ with its own, opened beside the channel's regular queues and polled by its NAPI.
pub(crate) struct XskQueues {
    // Field order is drop order: the RQ before its CQ (and before the SQ, as
    // `mlx5e_close_xsk` closes them).
    rq: XskRq,
    rcq: Cq,
    sq: XskSq,
}

impl XskQueues {
    /// The queues `rq` (completing on `rcq`) and `sq`.
    pub(crate) fn new(rq: XskRq, rcq: Cq, sq: XskSq) -> Self {
        Self { rq, rcq, sq }
    }

    /// The XSK RQ's number.
    pub(crate) fn rqn(&self) -> u32 {
        self.rq.rqn()
    }

    /// Receives up to `budget` frames, sends what the socket queued; returns the frames
    /// received and whether the poll must go on (fill ring short, frames left to send).
    pub(crate) fn poll(
        &mut self,
        napi: &NapiContext,
        budget: usize,
        pool: Option<&mut PagePool>,
        tx: Option<&TxSlot>,
        st: &ChannelStats,
    ) -> (usize, bool) {
        let n = self
            .rq
            .poll(&mut self.rcq, napi, budget, XdpTx { pool, tx }, st);
        let more = self.sq.poll(st);
        (n, more || self.rq.short())
    }

    /// Whether an error completion stopped the RQ or the SQ.
    pub(crate) fn in_error(&self) -> bool {
        self.rq.in_error() || self.sq.in_error
    }

    /// Recovers whichever of the two is in error; whether one was.
    pub(crate) fn recover(&mut self, st: &ChannelStats) -> Result<bool> {
        let mut was = false;
        if self.rq.in_error() {
            was |= self.rq.recover(&mut self.rcq, st)?;
        }
        was |= self.sq.recover(st)?;
        Ok(was)
    }

    /// Replaces the XDP program (the NAPI poll stopped).
    pub(crate) fn replace_xdp(&mut self, prog: BpfProg) {
        self.rq.replace_xdp(prog);
    }

    /// Arms both CQs (NAPI completed).
    pub(crate) fn arm(&mut self) {
        let _ = self.sq.arm();
        let _ = self.rcq.rearm();
    }
}
