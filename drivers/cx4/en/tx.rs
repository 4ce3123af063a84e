// SPDX-License-Identifier: GPL-2.0
//! The transmit path (en_tx.c): an skb becomes one send WQE (headers inline as the device's
//! minimum inline mode and LSO ask, the rest gathered from its DMA mapping), BQL decides the
//! doorbell, and send completions unmap and free the packets and wake the queue. Frames an
//! XDP program sends back (`XDP_TX`) go through the same SQ under the same lock, their
//! receive page in flight until the completion returns it to its pool (en/xdp.c
//! `mlx5e_xmit_xdp_frame`; mlx5e has a separate XDP SQ per channel).

use cx4_hw::{
    wq::inline_mode,
    wqe::CsFlags, //
};
use kernel::{
    device::{
        self,
        Bound, //
    },
    prelude::*,
};
use netdev::{
    dma::TxMapping,
    page_pool::PoolPage,
    skb::{
        Checksum,
        GsoType,
        SkBuff, //
    },
    xmit_more,
    TxQueue,
    TxResult, //
};

use crate::{
    clock::Timer,
    cq::Cq,
    en::{
        cqe::cqe_error,
        sq::{
            Sq,
            TxWqe,
            VlanInsert,
            STOP_ROOM, //
        },
        stats::ChannelStats,
        tstamp::Tstamp,
        tunnel,
    },
};

/// Ethernet header length.
const ETH_HLEN: usize = 14;
/// VLAN tag length.
const VLAN_HLEN: usize = 4;
/// The shortest frame the wire carries (`ETH_ZLEN`), for BQL's byte count.
const ETH_ZLEN: u32 = 60;
/// Most gather entries of one WQE: the linear part and every fragment (`MAX_SKB_FRAGS`
/// is 17 by default).
const MAX_GATHER: usize = 20;
/// Bytes of an XDP frame inlined when the SQ inlines anything (en/xdp.h
/// `MLX5E_XDP_MIN_INLINE`).
const XDP_MIN_INLINE: usize = ETH_HLEN + VLAN_HLEN;
/// Send CQEs consumed per poll (en/txrx.h `MLX5E_TX_CQ_POLL_BUDGET`).
pub(crate) const TX_CQ_BUDGET: usize = 128;

/// How the channel's SQ builds WQEs.
pub(crate) struct TxCfg {
    /// GENEVE packets get software parser offsets (the SQ allows them).
    pub(crate) geneve: bool,
}

/// What a posted WQE counts on the wire until it completes: packets (segments of an LSO WQE)
/// and bytes, as told to BQL.
#[derive(Clone, Copy, Default)]
struct Wire {
    pkts: u32,
    bytes: u32,
}

/// What a posted WQE sends.
enum InFlight {
    /// A packet of the stack.
    Skb(TxMapping),
    /// A received frame an XDP program sent back, in its receive page.
    Xdp(PoolPage),
}

/// Why [`TxRing::xmit_xdp`] could not send a frame.
pub(crate) enum XdpTxError {
    /// No room in the SQ (`rx_xdp_tx_full`).
    Full,
    /// The frame cannot be sent (too short to inline, the SQ in error; `rx_xdp_tx_err`).
    Err,
}

/// One channel's send ring: the SQ and what each in-flight WQE carries. Lives under the
/// channel's TX lock, taken by `ndo_start_xmit` and by the channel's NAPI poll.
pub(crate) struct TxRing {
    // Field order is drop order: the SQ before its CQ.
    sq: Sq,
    cq: Cq,
    /// Per ring index: the packet a posted WQE sends (kept apart from its counts so that it
    /// moves without a `memcpy`).
    infos: KVec<Option<InFlight>>,
    wire: KVec<Wire>,
    /// An error CQE put the SQ in the error state; the recovery work resets it.
    pub(crate) in_error: bool,
}

/// What became of a packet given to [`TxRing::post`].
enum Posted {
    /// A WQE sends it.
    Sent,
    /// The SQ is full: the stack keeps it.
    Busy(SkBuff),
    /// It cannot be sent (freed).
    Dropped,
}

/// How the headers of a packet go into the WQE.
struct Headers {
    inline: usize,
    cs: CsFlags,
    mss: Option<u16>,
}

impl TxRing {
    /// A ring over `sq`, whose completions go to `cq`.
    pub(crate) fn new(sq: Sq, cq: Cq) -> Result<Self> {
        let n = usize::from(sq.size());
        let mut infos = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            infos.push(None, GFP_KERNEL)?;
        }
        let wire = KVec::from_elem(Wire::default(), n, GFP_KERNEL)?;
        Ok(Self {
            sq,
            cq,
            infos,
            wire,
            in_error: false,
        })
    }

    /// The SQ number.
    pub(crate) fn sqn(&self) -> u32 {
        self.sq.sqn()
    }

    /// Decides the inline header length, checksum flags and MSS of `skb`
    /// (en_tx.c `mlx5e_txwqe_build_eseg_csum`, `mlx5e_tx_get_gso_ihs`,
    /// `mlx5e_calc_min_inline`).
    fn headers(skb: &SkBuff, min_inline: u8) -> Result<Headers> {
        let encap = skb.encapsulation();
        let cs = if skb.ip_summed() == Checksum::Partial {
            if encap {
                CsFlags::L3 | CsFlags::L3_INNER | CsFlags::L4_INNER
            } else {
                CsFlags::L3 | CsFlags::L4
            }
        } else {
            CsFlags::empty()
        };
        let headlen = skb.headlen() as usize;
        if skb.is_gso() {
            let udp = skb.gso_type().intersects(GsoType::UDP_L4);
            let ihs = match (encap, udp) {
                (true, false) => skb.inner_tcp_all_headers(),
                (false, false) => skb.tcp_all_headers(),
                (true, true) => skb.inner_transport_offset() + 8,
                (false, true) => skb.transport_offset() + 8,
            };
            let ihs = usize::try_from(ihs).map_err(|_| EINVAL)?;
            if ihs == 0 || ihs > headlen {
                return Err(EINVAL);
            }
            return Ok(Headers {
                inline: ihs,
                cs,
                mss: Some(skb.gso_size()),
            });
        }
        let want = match min_inline {
            inline_mode::NONE => 0,
            inline_mode::L2 => ETH_HLEN + VLAN_HLEN,
            inline_mode::IP => usize::try_from(skb.transport_offset()).unwrap_or(ETH_HLEN),
            _ => usize::try_from(skb.transport_offset())
                .map(|t| t + 20)
                .unwrap_or(ETH_HLEN),
        };
        // A VLAN insertion needs the Ethernet header inline (en_tx.c
        // `mlx5e_tx_wqe_inline_mode`).
        let want = if skb.vlan_tag().is_some() {
            want.max(ETH_HLEN)
        } else {
            want
        };
        // Short packets: inline what there is (the model and mlx5e inline at most the
        // packet).
        let inline = want.min(headlen);
        if inline < want.min(skb.len() as usize) {
            // The headers the device needs inline are not in the linear part.
            return Err(EINVAL);
        }
        Ok(Headers {
            inline,
            cs,
            mss: None,
        })
    }

    /// Posts `skb` (`ndo_start_xmit`, under the channel's TX lock). A packet that cannot be
    /// sent is dropped and counted; WQEs an earlier `xmit_more` left without a doorbell get
    /// theirs then (en_tx.c `mlx5e_tx_flush`), or nothing would ever send them.
    pub(crate) fn xmit(
        &mut self,
        skb: SkBuff,
        dma_dev: &device::Device<Bound>,
        txq: &TxQueue,
        cfg: &TxCfg,
        ts: &Tstamp,
        st: &ChannelStats,
    ) -> TxResult {
        match self.post(skb, dma_dev, txq, cfg, ts, st) {
            Posted::Sent => TxResult::Ok,
            Posted::Busy(skb) => TxResult::Busy(skb),
            Posted::Dropped => {
                ChannelStats::add(&st.tx_dropped, 1);
                if !self.in_error {
                    let _ = self.sq.ring_doorbell();
                }
                TxResult::Ok
            }
        }
    }

    /// Builds and posts the WQE of `skb` ([`TxRing::xmit`]).
    fn post(
        &mut self,
        skb: SkBuff,
        dma_dev: &device::Device<Bound>,
        txq: &TxQueue,
        cfg: &TxCfg,
        ts: &Tstamp,
        st: &ChannelStats,
    ) -> Posted {
        if self.in_error {
            return Posted::Dropped;
        }
        let h = match Self::headers(&skb, self.sq.min_inline()) {
            Ok(h) => h,
            Err(_) => {
                return Posted::Dropped;
            }
        };
        let vlan = skb.vlan_tag().map(|tci| VlanInsert { proto: 0x8100, tci });
        let swp = if cfg.geneve {
            tunnel::geneve_swp(&skb, vlan.is_some())
        } else {
            None
        };
        let (pkts, bytes) = if h.mss.is_some() {
            let segs = u32::from(skb.gso_segs().max(1));
            (segs, skb.len() + (segs - 1) * h.inline as u32)
        } else {
            (1, skb.len().max(ETH_ZLEN))
        };
        let len = skb.len();
        // A packet to stamp asks for a CQE of its own, whose timestamp is its (mlx5e asks for
        // one per WQE).
        let stamp = skb.hw_tstamp_requested() && ts.tx_on();
        let mut map = match TxMapping::new(skb, dma_dev) {
            Ok(m) => m,
            Err(_) => {
                return Posted::Dropped;
            }
        };
        // The gather list: the linear part after the inline headers, then the fragments. Most
        // packets have one or two segments: the full-size list (320 bytes to clear) only for
        // the others.
        let mut small = [(0u64, 0u32); 2];
        let mut big = None;
        let gather: &mut [(u64, u32)] = if map.segs().nth(2).is_none() {
            &mut small
        } else {
            big.insert([(0u64, 0u32); MAX_GATHER])
        };
        let mut n = 0;
        let mut skip = h.inline as u32;
        for seg in map.segs() {
            let cut = skip.min(seg.len);
            skip -= cut;
            if seg.len > cut {
                let Some(g) = gather.get_mut(n) else {
                    return Posted::Dropped;
                };
                *g = (seg.addr + u64::from(cut), seg.len - cut);
                n += 1;
            }
        }
        let data = map.skb().data();
        let Some(inline) = data.get(..h.inline) else {
            return Posted::Dropped;
        };
        let w = TxWqe {
            inline,
            vlan,
            cs_flags: h.cs,
            lso_mss: h.mss,
            swp,
            gather: &gather[..n],
            signal: stamp,
        };
        let ctr = match self.sq.post_send(&w) {
            Ok(c) => c,
            Err(e) if e == ENOSPC => {
                // Stopped early (STOP_ROOM) this does not happen; give the packet back.
                txq.stop();
                ChannelStats::add(&st.tx_stopped, 1);
                let _ = self.sq.ring_doorbell();
                return Posted::Busy(map.unmap());
            }
            Err(_) => {
                return Posted::Dropped;
            }
        };
        // en_tx.c `mlx5e_tx_skb_update_ts_flags`.
        if stamp {
            map.set_tstamp_in_progress();
        }
        map.tx_timestamp();
        let idx = self.sq.index(ctr);
        if let (Some(slot), Some(w)) = (self.infos.get_mut(idx), self.wire.get_mut(idx)) {
            *slot = Some(InFlight::Skb(map));
            *w = Wire { pkts, bytes };
        }
        if h.mss.is_some() {
            ChannelStats::add(&st.tx_tso_packets, 1);
            ChannelStats::add(&st.tx_tso_bytes, u64::from(len - h.inline as u32));
        }
        if h.cs.contains(CsFlags::L4_INNER) {
            ChannelStats::add(&st.tx_csum_partial_inner, 1);
        } else if h.cs.contains(CsFlags::L4) {
            ChannelStats::add(&st.tx_csum_partial, 1);
        } else {
            ChannelStats::add(&st.tx_csum_none, 1);
        }
        if vlan.is_some() {
            ChannelStats::add(&st.tx_vlan_insert, 1);
        }
        let mut doorbell = txq.sent(bytes, xmit_more());
        if self.sq.free_wqebbs() < STOP_ROOM {
            txq.stop();
            ChannelStats::add(&st.tx_stopped, 1);
            doorbell = true;
        }
        if doorbell {
            let _ = self.sq.ring_doorbell();
            ChannelStats::add(&st.tx_doorbells, 1);
        }
        Posted::Sent
    }

    /// Consumes the send completions on `cq` (NAPI poll, under the TX lock): unmaps and frees
    /// the completed packets (a packet that asked for a hardware timestamp gets its CQE's,
    /// converted by `clock`), reports them to BQL and wakes the queue when there is room.
    /// Returns whether an error completion just put the SQ in error (the caller asks for a
    /// recovery, [`TxRing::recover`]).
    pub(crate) fn complete(
        &mut self,
        txq: &TxQueue,
        budget: i32,
        clock: Option<&Timer>,
        st: &ChannelStats,
    ) -> bool {
        let (mut pkts, mut bytes, mut cqes, mut errors) = (0u32, 0u32, 0u64, 0u64);
        let mut xdp_done = 0u32;
        let Self {
            sq,
            cq,
            infos,
            wire,
            ..
        } = self;
        cq.poll(TX_CQ_BUDGET, |cqe| {
            cqes += 1;
            // The WQE this CQE is for, and its time (not in an error CQE's bytes).
            let stamped = match (clock, cqe_error(cqe)) {
                (Some(c), None) => Some((cqe.wqe_counter() as u16, c, cqe.timestamp())),
                _ => None,
            };
            let r = sq.complete(cqe, |ctr| {
                let idx = sq_index(infos.len(), ctr);
                match infos.get_mut(idx).and_then(Option::take) {
                    Some(InFlight::Skb(map)) => {
                        let w = wire.get(idx).copied().unwrap_or_default();
                        pkts += w.pkts;
                        bytes += w.bytes;
                        let skb = map.unmap();
                        // en_tx.c `mlx5e_consume_skb`.
                        if let Some((at, c, ts)) = stamped {
                            if at == ctr && skb.hw_tstamp_requested() {
                                skb.tstamp_tx(c.cyc2time(ts));
                            }
                        }
                        skb.consume(budget);
                    }
                    // The page goes back to its pool.
                    Some(InFlight::Xdp(page)) => {
                        xdp_done += 1;
                        drop(page);
                    }
                    None => {}
                }
            });
            match r {
                Ok(c) if c.error.is_none() => {}
                _ => errors += 1,
            }
        });
        ChannelStats::add(&st.tx_cqes, cqes);
        ChannelStats::add(&st.tx_packets, u64::from(pkts));
        ChannelStats::add(&st.tx_bytes, u64::from(bytes));
        let newly = errors > 0 && !self.in_error;
        if errors > 0 {
            ChannelStats::add(&st.tx_cqe_err, errors);
            self.in_error = true;
        }
        txq.completed(pkts, bytes);
        // XDP frames free room too, though BQL never saw them.
        if pkts + xdp_done > 0
            && txq.is_stopped()
            && !self.in_error
            && self.sq.free_wqebbs() >= STOP_ROOM
        {
            txq.wake();
            ChannelStats::add(&st.tx_wake, 1);
        }
        newly
    }

    /// Resets an SQ in error (process context, the channel's NAPI disabled or the TX lock
    /// held): frees what was in flight and makes the queue usable again. Returns whether the
    /// SQ was in error.
    pub(crate) fn recover(&mut self, txq: &TxQueue, st: &ChannelStats) -> Result<bool> {
        let Self { sq, cq, infos, .. } = self;
        let len = infos.len();
        // The flushed WQEs' completions first (what completed is freed as usual).
        cq.poll(usize::from(sq.size()), |cqe| {
            let _ = sq.complete(cqe, |ctr| {
                if let Some(info) = infos.get_mut(sq_index(len, ctr)).and_then(Option::take) {
                    drop(info);
                }
            });
        });
        let was = sq.recover(|ctr| {
            if let Some(info) = infos.get_mut(sq_index(len, ctr)).and_then(Option::take) {
                drop(info);
            }
        })?;
        // Whatever the device had not completed is gone.
        for slot in self.infos.iter_mut() {
            *slot = None;
        }
        self.in_error = false;
        txq.reset();
        if txq.is_stopped() {
            txq.wake();
        }
        if was {
            ChannelStats::add(&st.tx_recover, 1);
        }
        Ok(was)
    }
}

impl TxRing {
    /// Posts the `len` bytes at `off` in `page` that an XDP program sent back (`XDP_TX`, from
    /// the channel's NAPI poll under the TX lock), without a doorbell ([`TxRing::xdp_flush`]
    /// rings it once per poll); the completion returns the page to its pool. The stack's
    /// packets keep [`STOP_ROOM`]: an SQ with less is full for XDP. On failure the page comes
    /// back (en/xdp.c `mlx5e_xmit_xdp_frame`, `mlx5e_xmit_xdp_frame_check`).
    pub(crate) fn xmit_xdp(
        &mut self,
        page: PoolPage,
        off: u32,
        len: u32,
    ) -> core::result::Result<(), (PoolPage, XdpTxError)> {
        if self.sq.should_stop() {
            return Err((page, XdpTxError::Full));
        }
        let inline = if self.sq.min_inline() == inline_mode::NONE {
            0
        } else {
            XDP_MIN_INLINE
        };
        if self.in_error || (len as usize) < inline.max(1) {
            return Err((page, XdpTxError::Err));
        }
        // The program may have written the frame: the device reads it from memory.
        if page.sync_for_device(off, len).is_err() {
            return Err((page, XdpTxError::Err));
        }
        let (start, end) = (off as usize, off as usize + len as usize);
        let Some(frame) = page.data().get(start..end) else {
            return Err((page, XdpTxError::Err));
        };
        let rest = len - inline as u32;
        let seg = [(page.dma_addr() + u64::from(off) + inline as u64, rest)];
        let w = TxWqe {
            inline: frame.get(..inline).unwrap_or_default(),
            vlan: None,
            cs_flags: CsFlags::empty(),
            lso_mss: None,
            swp: None,
            gather: if rest > 0 { &seg } else { &[] },
            signal: false,
        };
        let ctr = match self.sq.post_send(&w) {
            Ok(c) => c,
            Err(e) if e == ENOSPC => return Err((page, XdpTxError::Full)),
            Err(_) => return Err((page, XdpTxError::Err)),
        };
        let idx = self.sq.index(ctr);
        match (self.infos.get_mut(idx), self.wire.get_mut(idx)) {
            (Some(slot), Some(w)) => {
                *slot = Some(InFlight::Xdp(page));
                // Not the stack's: BQL does not count it.
                *w = Wire::default();
            }
            // Unreachable (the ring's tables have its size); the page stays with the WQE's
            // memory until the device is done: never freed early.
            _ => core::mem::forget(page),
        }
        Ok(())
    }

    /// Rings the doorbell for the XDP frames posted since the last one (en/xdp.c
    /// `mlx5e_xmit_xdp_doorbell`, at the end of the NAPI poll).
    pub(crate) fn xdp_flush(&mut self, st: &ChannelStats) {
        if !self.in_error && self.sq.ring_doorbell().is_ok() {
            ChannelStats::add(&st.tx_doorbells, 1);
        }
    }

    /// Arms the send CQ unless it is still armed (NAPI completed; [`Cq::rearm`]).
    pub(crate) fn arm(&mut self) -> Result {
        self.cq.rearm()
    }
}

/// The ring index of WQE counter `ctr` in a ring of `len` (a power of two) WQEBBs.
fn sq_index(len: usize, ctr: u16) -> usize {
    usize::from(ctr) & len.wrapping_sub(1)
}
