// SPDX-License-Identifier: GPL-2.0
//! The receive path (en_rx.c, legacy cyclic RQ): page-pool pages posted as the RQ's
//! buffers, a completed WQE becomes an skb built over its first page (the rest of a jumbo
//! frame or of an LRO-merged packet as page fragments) with the device's checksum verdict,
//! RSS hash and stripped VLAN tag, handed to GRO. Pages a frame did not reach stay in their
//! WQE for the next one. A small frame is copied into an skb of its own and its page stays
//! posted (copybreak). A merged packet gets the headers of the segments as one
//! ([`crate::en::lro`]) and goes up as a GSO packet. With an XDP program, each frame has a
//! page of its own behind [`XDP_PACKET_HEADROOM`] bytes and meets the program first
//! ([`crate::en::xdp`]).

use cx4_hw::cq::cqe::{
    l4_hdr_type,
    rss_ip,
    rss_l4, //
};
use kernel::{
    device::{
        self,
        Bound, //
    },
    prelude::*,
};
use netdev::{
    napi::NapiContext,
    page_pool::{
        build_skb_room,
        PagePool,
        PagePoolParams,
        PoolPage, //
    },
    skb::{
        GsoType,
        HashType,
        SkBuff, //
    },
    xdp::{
        BpfProg,
        XdpRxq,
        XDP_PACKET_HEADROOM, //
    },
    Device,
};

use crate::{
    clock::Timer,
    cq::Cq,
    en::{
        lro,
        netdev::TxSlot,
        rq::{
            Rq,
            RxInfo, //
        },
        stats::ChannelStats,
        xdp::{
            Verdict,
            XdpRx, //
        },
    },
};

/// Headroom in front of a received frame (`NET_SKB_PAD`, en.h `MLX5_RX_HEADROOM`).
pub(crate) const RX_HEADROOM: u32 = 64;
/// The size of a receive page.
const PAGE: u32 = 4096;
/// Frames of at most this many bytes are copied into a small skb and their page stays in
/// its WQE (bnxt's `BNXT_RX_COPY_THRESH`). An skb over the page would charge the socket a
/// whole page: 64-byte datagrams would fill a default UDP receive buffer (208 KiB) at some
/// 45 packets and be dropped there while the CPU still had time to read them.
pub(crate) const RX_COPYBREAK: u32 = 256;
/// Most pages one receive WQE scatters to (a 9000-byte MTU needs 3, LRO
/// [`RxRing::LRO_PAGES`]).
pub(crate) const MAX_RX_PAGES: usize = 17;

/// The pages of one posted receive WQE.
type Slot = [Option<PoolPage>; MAX_RX_PAGES];

/// Where a received frame is in its first page, and how it became an skb.
#[derive(Clone, Copy)]
struct Frame {
    /// Bytes before the frame.
    headroom: u32,
    /// The frame's length.
    len: u32,
    /// An XDP program saw it: the page is synced for the CPU already (again would discard
    /// what the program wrote) and the frame is not copied out.
    xdp: bool,
}

/// One channel's receive ring, owned by the channel's NAPI poller.
pub(crate) struct RxRing {
    // Field order is drop order: the RQ goes before the pages it points to.
    rq: Rq,
    slots: KVec<Slot>,
    /// The XDP program every frame meets first, if any.
    xdp: Option<BpfProg>,
    /// The queue's XDP registration (what a program sees of it).
    rxq: XdpRxq,
    pool: PagePool,
    /// Bytes in front of each frame: [`RX_HEADROOM`], [`XDP_PACKET_HEADROOM`] with XDP.
    headroom: u32,
    /// Pages per WQE.
    pages: usize,
    /// Bytes of the first page the device may write (after the headroom, before the skb's
    /// shared info).
    first_len: u32,
    /// The channel (the skb's RX queue).
    ix: u16,
    /// An error completion was seen: the RQ waits for [`RxRing::recover`] and gets no more
    /// buffers until then.
    in_error: bool,
    /// The last [`RxRing::fill`] could not allocate every buffer: the poller keeps polling
    /// until it can (a ring left empty gets no completion to schedule it again).
    short: bool,
}

impl RxRing {
    /// Pages per WQE while LRO is on: 17, some 68 KiB (a 512-byte WQE of 32 scatter
    /// entries): a whole 64 KiB TSO burst fits, so the device can merge one (or place a GSO
    /// superframe from the wire) without cutting it, as mlx5e's striding RQ does; the first
    /// page and 16 fragments are as many as an skb takes (`MAX_SKB_FRAGS`). The TIRs' merge
    /// limit follows [`RxRing::lro_wqe_bytes`].
    pub(crate) const LRO_PAGES: usize = MAX_RX_PAGES;

    /// The bytes an LRO WQE holds.
    pub(crate) const fn lro_wqe_bytes() -> u32 {
        Self::first_len() + (Self::LRO_PAGES as u32 - 1) * PAGE
    }

    /// The bytes of a WQE's first page the device may write.
    pub(crate) const fn first_len() -> u32 {
        build_skb_room(PAGE, RX_HEADROOM)
    }

    /// The number of pages a WQE needs for frames of `hw_mtu` bytes.
    pub(crate) fn pages_for(hw_mtu: u32) -> usize {
        let first = Self::first_len();
        if hw_mtu <= first {
            1
        } else {
            1 + (hw_mtu - first).div_ceil(PAGE) as usize
        }
    }

    /// A ring over `rq` (created with [`RxRing::pages_for`] segments, one with `xdp`), RX
    /// queue `ix` of `dev`, its buffers allocated and posted. With an XDP program, frames
    /// start [`XDP_PACKET_HEADROOM`] bytes into their page and the pages are mapped both ways
    /// (XDP_TX sends them; en_main.c `mlx5e_alloc_rq`: `rq->buff.map_dir`).
    pub(crate) fn new(
        rq: Rq,
        dma_dev: &device::Device<Bound>,
        dev: &Device,
        ix: u16,
        st: &ChannelStats,
        xdp: Option<BpfProg>,
    ) -> Result<Self> {
        let n = usize::from(rq.size());
        let pages = rq.segs().min(MAX_RX_PAGES);
        if xdp.is_some() && pages != 1 {
            return Err(EINVAL);
        }
        let pool = PagePool::new(
            dma_dev,
            PagePoolParams {
                pool_size: (n * pages).min(16384) as u32,
                bidirectional: xdp.is_some(),
                ..Default::default()
            },
        )?;
        let rxq = XdpRxq::new(dev, u32::from(ix), &pool)?;
        let headroom = if xdp.is_some() {
            XDP_PACKET_HEADROOM
        } else {
            RX_HEADROOM
        };
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(core::array::from_fn(|_| None), GFP_KERNEL)?;
        }
        let mut this = Self {
            rq,
            slots,
            xdp,
            rxq,
            pool,
            headroom,
            pages,
            first_len: build_skb_room(PAGE, headroom),
            ix,
            in_error: false,
            short: false,
        };
        if this.fill(st) == 0 {
            return Err(ENOMEM);
        }
        Ok(this)
    }

    /// The RQ number.
    pub(crate) fn rqn(&self) -> u32 {
        self.rq.rqn()
    }

    /// The page pool XDP_TX from the channel's XSK RQ copies frames into (pages mapped both
    /// ways): this ring's, while it runs an XDP program (else none is mapped for sending).
    pub(crate) fn xdp_tx_pool(&mut self) -> Option<&mut PagePool> {
        self.xdp.is_some().then_some(&mut self.pool)
    }

    /// Replaces the XDP program of a ring that has one (its layout stays; the old program is
    /// put): with the NAPI poll stopped (en_main.c `mlx5e_rq_replace_xdp_prog`). `EINVAL`
    /// for a ring without XDP, whose layout does not fit a program.
    pub(crate) fn replace_xdp(&mut self, prog: BpfProg) -> Result {
        match self.xdp.as_mut() {
            Some(p) => {
                *p = prog;
                Ok(())
            }
            None => Err(EINVAL),
        }
    }

    /// Posts a buffer to every free WQE and rings the doorbell; returns how many were posted
    /// (en_rx.c `mlx5e_post_rx_wqes`).
    pub(crate) fn fill(&mut self, st: &ChannelStats) -> usize {
        let (mut posted, mut short) = (0, false);
        while self.rq.free() > 0 && !self.in_error {
            // The slot of the next WQE: pages the last frame in it did not reach are still
            // there (the device wrote none of them).
            let idx = self.rq.index(self.rq.pc());
            let Some(slot) = self.slots.get_mut(idx) else {
                break;
            };
            let mut segs = [(0u64, 0u32); MAX_RX_PAGES];
            let mut ok = true;
            for (i, (page, seg)) in slot.iter_mut().zip(segs.iter_mut()).take(self.pages).enumerate()
            {
                if page.is_none() {
                    *page = self.pool.alloc();
                }
                let Some(p) = page else {
                    ok = false;
                    break;
                };
                *seg = if i == 0 {
                    (p.dma_addr() + u64::from(self.headroom), self.first_len)
                } else {
                    (p.dma_addr(), p.size())
                };
            }
            if !ok {
                ChannelStats::add(&st.rx_buff_alloc_err, 1);
                short = true;
                break;
            }
            if self.rq.post_recv(&segs[..self.pages]).is_err() {
                break;
            }
            posted += 1;
        }
        if posted > 0 {
            let _ = self.rq.ring_doorbell();
        }
        self.short = short;
        posted
    }

    /// Whether buffers are missing for want of memory (en_rx.c: `mlx5e_post_rx_wqes`
    /// failing keeps the NAPI poll busy).
    pub(crate) fn short(&self) -> bool {
        self.short
    }

    /// Consumes up to `budget` receive completions from `cq` and passes the frames to GRO
    /// (through the XDP program first, if there is one: XDP_TX goes to `tx`), with their
    /// hardware timestamps converted by `rxts` if given; refills the ring. Returns the number
    /// of completions.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn poll(
        &mut self,
        cq: &mut Cq,
        napi: &NapiContext,
        budget: usize,
        rxcsum: bool,
        rxts: Option<&Timer>,
        tx: Option<&TxSlot>,
        st: &ChannelStats,
    ) -> usize {
        let (mut pkts, mut bytes) = (0u64, 0u64);
        let xdp = self.xdp.as_ref().map(|prog| XdpRx {
            prog,
            rxq: &self.rxq,
            tx,
        });
        let headroom = self.headroom;
        let (mut xdp_sent, mut xdp_redirected) = (false, false);
        let n = cq.poll(budget, |cqe| {
            let Ok(c) = self.rq.complete(cqe) else {
                ChannelStats::add(&st.rx_dropped, 1);
                return;
            };
            let idx = self.rq.index(c.wqe_counter);
            let Some(slot) = self.slots.get_mut(idx) else {
                return;
            };
            match c.result {
                Ok(info) => {
                    let frame = match &xdp {
                        Some(x) => {
                            let Some(first) = slot.first_mut() else {
                                return;
                            };
                            match x.handle(first, headroom, info.byte_cnt, napi, st) {
                                Verdict::Pass { off, len } => Frame {
                                    headroom: off,
                                    len,
                                    xdp: true,
                                },
                                Verdict::Dropped => return,
                                Verdict::Sent => {
                                    xdp_sent = true;
                                    return;
                                }
                                Verdict::Redirected => {
                                    xdp_redirected = true;
                                    return;
                                }
                            }
                        }
                        None => Frame {
                            headroom,
                            len: info.byte_cnt,
                            xdp: false,
                        },
                    };
                    match Self::build(slot, &info, frame, napi, st) {
                        Ok(mut skb) => {
                            bytes += u64::from(info.byte_cnt);
                            pkts += u64::from(info.lro_num_seg.max(1));
                            Self::finish(&mut skb, &info, rxcsum, self.ix, st);
                            // en_rx.c `mlx5e_build_rx_skb`: with `HWTSTAMP_FILTER_ALL`.
                            if let Some(t) = rxts {
                                skb.set_hwtstamp(t.cyc2time(info.timestamp));
                            }
                            if skb.eth_type_trans(napi.device()).is_ok() {
                                napi.gro_receive(skb);
                            } else {
                                ChannelStats::add(&st.rx_dropped, 1);
                            }
                        }
                        Err(_) => ChannelStats::add(&st.rx_dropped, 1),
                    }
                }
                Err(e) => {
                    // Flushed WQEs (the RQ going down) are not errors; any other error
                    // moved the RQ to error: it waits for the recovery.
                    if !e.is_flush() {
                        ChannelStats::add(&st.rx_cqe_err, 1);
                        self.in_error = true;
                    }
                }
            }
        });
        if let Some(x) = &xdp {
            x.flush(xdp_sent, xdp_redirected, napi, st);
        }
        ChannelStats::add(&st.rx_packets, pkts);
        ChannelStats::add(&st.rx_bytes, bytes);
        self.fill(st);
        n
    }

    /// Whether an error completion left the RQ waiting for [`RxRing::recover`].
    pub(crate) fn in_error(&self) -> bool {
        self.in_error
    }

    /// Recovers the RQ after an error completion (process context, the poller stopped):
    /// consumes what `cq` still holds, resets the RQ if the device has it in error, frees the
    /// buffers it held and posts new ones. Returns whether the RQ was in error.
    pub(crate) fn recover(&mut self, cq: &mut Cq, st: &ChannelStats) -> Result<bool> {
        let Self { rq, slots, .. } = self;
        cq.poll(usize::from(rq.size()), |cqe| {
            if let Ok(c) = rq.complete(cqe) {
                if let Some(s) = slots.get_mut(rq.index(c.wqe_counter)) {
                    *s = core::array::from_fn(|_| None);
                }
            }
        });
        let len = slots.len();
        let was = rq.recover(|ctr| {
            if let Some(s) = slots.get_mut(rq_index(len, ctr)) {
                *s = core::array::from_fn(|_| None);
            }
        })?;
        self.in_error = false;
        if was {
            ChannelStats::add(&st.rx_recover, 1);
        }
        self.fill(st);
        Ok(was)
    }

    /// The skb of a good frame (`f` in its first page): a copy for a small one
    /// ([`RxRing::copy`]); else over its first page, the rest as fragments; the pages the
    /// frame did not reach stay in `slot`. A packet LRO merged gets its headers rewritten
    /// and its GSO fields.
    fn build(
        slot: &mut Slot,
        info: &RxInfo,
        f: Frame,
        napi: &NapiContext,
        st: &ChannelStats,
    ) -> Result<SkBuff> {
        if info.lro_num_seg <= 1 && !f.xdp && f.len <= RX_COPYBREAK {
            let first = slot.first().and_then(Option::as_ref).ok_or(EINVAL)?;
            let skb = Self::copy(first, f.headroom, f.len, napi)?;
            ChannelStats::add(&st.rx_copybreak, 1);
            return Ok(skb);
        }
        let mut pages = slot.iter_mut();
        let mut first = pages.next().and_then(Option::take).ok_or(EINVAL)?;
        let len0 = f.len.min(build_skb_room(first.size(), f.headroom));
        if !f.xdp {
            first.sync_for_cpu(f.headroom, len0)?;
        }
        let merged = if info.lro_num_seg > 1 {
            let at = f.headroom as usize;
            let hdr = first
                .data_mut()
                .get_mut(at..at + len0 as usize)
                .ok_or(EINVAL)?;
            match lro::update_headers(hdr, info) {
                Ok(m) => Some(m),
                Err(e) => {
                    ChannelStats::add(&st.rx_lro_err, 1);
                    return Err(e);
                }
            }
        } else {
            None
        };
        let mut skb = first.build_skb(napi, f.headroom, len0)?;
        let mut left = f.len - len0;
        for page in pages {
            if left == 0 {
                break;
            }
            let p = page.take().ok_or(EINVAL)?;
            let l = left.min(p.size());
            p.sync_for_cpu(0, l)?;
            let truesize = p.size();
            p.add_to_skb(&mut skb, 0, l, truesize)?;
            left -= l;
        }
        if left != 0 {
            // The device wrote more than the WQE's buffers hold.
            return Err(EINVAL);
        }
        if let Some(m) = merged {
            let ty = if m.v6 { GsoType::TCPV6 } else { GsoType::TCPV4 };
            skb.set_rx_gso(m.mss, m.segs, ty)?;
            ChannelStats::add(&st.rx_lro_packets, 1);
            ChannelStats::add(&st.rx_lro_bytes, u64::from(info.byte_cnt));
        }
        Ok(skb)
    }

    /// The skb of a frame of `len` ≤ [`RX_COPYBREAK`] bytes at `headroom` in `page`: a
    /// copy; the page goes back to the device as it is.
    fn copy(page: &PoolPage, headroom: u32, len: u32, napi: &NapiContext) -> Result<SkBuff> {
        page.sync_for_cpu(headroom, len)?;
        let at = headroom as usize;
        let src = page.data().get(at..at + len as usize).ok_or(EINVAL)?;
        let mut skb = SkBuff::alloc_rx(napi, len)?;
        skb.put(len)?.copy_from_slice(src);
        page.sync_for_device(headroom, len)?;
        Ok(skb)
    }

    /// Checksum verdict, RSS hash, VLAN tag and queue of a received skb
    /// (en_rx.c `mlx5e_build_rx_skb`, `mlx5e_handle_csum`).
    fn finish(skb: &mut SkBuff, info: &RxInfo, rxcsum: bool, ix: u16, st: &ChannelStats) {
        let l4 = info.l4_hdr_type != l4_hdr_type::NONE;
        if rxcsum && info.lro_num_seg != 0 {
            // From a merging TIR: the device checked what it merged or passed (en_rx.c
            // `mlx5e_handle_csum` with `lro`).
            skb.set_csum_unnecessary(0);
            ChannelStats::add(&st.rx_csum_unnecessary, 1);
        } else if rxcsum && info.l3_ok && info.l4_ok && l4 {
            if info.tunneled {
                skb.set_csum_unnecessary(1);
                ChannelStats::add(&st.rx_csum_unnecessary_inner, 1);
            } else {
                skb.set_csum_unnecessary(0);
                ChannelStats::add(&st.rx_csum_unnecessary, 1);
            }
        } else {
            skb.set_csum_none();
            ChannelStats::add(&st.rx_csum_none, 1);
        }
        let ty = if info.rss_hash_l4 != rss_l4::L4_NONE {
            HashType::L4
        } else if info.rss_hash_ip != rss_ip::IP_NONE {
            HashType::L3
        } else {
            HashType::None
        };
        if ty != HashType::None {
            skb.set_hash(info.rss_hash, ty);
        }
        if let Some(tci) = info.vlan_tci {
            skb.put_vlan_tag(tci);
            ChannelStats::add(&st.rx_vlan_strip, 1);
        }
        skb.record_rx_queue(ix);
    }
}

/// The ring index of WQE counter `ctr` in a ring of `len` (a power of two) WQEs.
fn rq_index(len: usize, ctr: u16) -> usize {
    usize::from(ctr) & len.wrapping_sub(1)
}
