// SPDX-License-Identifier: GPL-2.0
//! The receive path (en_rx.c, legacy cyclic RQ): page-pool pages posted as the RQ's
//! buffers, a completed WQE becomes an skb built over its first page (the rest of a jumbo
//! frame as page fragments) with the device's checksum verdict, RSS hash and stripped VLAN
//! tag, handed to GRO.

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
        HashType,
        SkBuff, //
    },
};

use crate::{
    cq::Cq,
    en::{
        rq::{
            Rq,
            RxInfo, //
        },
        stats::ChannelStats,
    },
};

/// Headroom in front of a received frame (`NET_SKB_PAD`, en.h `MLX5_RX_HEADROOM`).
pub(crate) const RX_HEADROOM: u32 = 64;
/// The size of a receive page.
const PAGE: u32 = 4096;
/// Most pages one receive WQE scatters to (a 9000-byte MTU needs 3).
pub(crate) const MAX_RX_PAGES: usize = 4;

/// The pages of one posted receive WQE.
type Slot = [Option<PoolPage>; MAX_RX_PAGES];

/// One channel's receive ring, owned by the channel's NAPI poller.
pub(crate) struct RxRing {
    // Field order is drop order: the RQ goes before the pages it points to.
    rq: Rq,
    slots: KVec<Slot>,
    pool: PagePool,
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
}

impl RxRing {
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

    /// A ring over `rq` (created with [`RxRing::pages_for`] segments), its buffers allocated
    /// and posted.
    pub(crate) fn new(
        rq: Rq,
        dma_dev: &device::Device<Bound>,
        ix: u16,
        st: &ChannelStats,
    ) -> Result<Self> {
        let n = usize::from(rq.size());
        let pages = rq.segs().min(MAX_RX_PAGES);
        let pool = PagePool::new(
            dma_dev,
            PagePoolParams {
                pool_size: (n * pages).min(16384) as u32,
                ..Default::default()
            },
        )?;
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(core::array::from_fn(|_| None), GFP_KERNEL)?;
        }
        let mut this = Self {
            rq,
            slots,
            pool,
            pages,
            first_len: Self::first_len(),
            ix,
            in_error: false,
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

    /// Posts a buffer to every free WQE and rings the doorbell; returns how many were posted
    /// (en_rx.c `mlx5e_post_rx_wqes`).
    pub(crate) fn fill(&mut self, st: &ChannelStats) -> usize {
        let mut posted = 0;
        while self.rq.free() > 0 && !self.in_error {
            let mut slot: Slot = core::array::from_fn(|_| None);
            let mut segs = [(0u64, 0u32); MAX_RX_PAGES];
            let mut ok = true;
            for i in 0..self.pages {
                let Some(p) = self.pool.alloc() else {
                    ok = false;
                    break;
                };
                segs[i] = if i == 0 {
                    (p.dma_addr() + u64::from(RX_HEADROOM), self.first_len)
                } else {
                    (p.dma_addr(), p.size())
                };
                slot[i] = Some(p);
            }
            if !ok {
                ChannelStats::add(&st.rx_buff_alloc_err, 1);
                break;
            }
            let Ok(ctr) = self.rq.post_recv(&segs[..self.pages]) else {
                break;
            };
            let idx = self.rq.index(ctr);
            if let Some(s) = self.slots.get_mut(idx) {
                *s = slot;
            }
            posted += 1;
        }
        if posted > 0 {
            let _ = self.rq.ring_doorbell();
        }
        posted
    }

    /// Consumes up to `budget` receive completions from `cq` and passes the frames to GRO;
    /// refills the ring. Returns the number of completions.
    pub(crate) fn poll(
        &mut self,
        cq: &mut Cq,
        napi: &NapiContext,
        budget: usize,
        rxcsum: bool,
        st: &ChannelStats,
    ) -> usize {
        let (mut pkts, mut bytes) = (0u64, 0u64);
        let n = cq.poll(budget, |cqe| {
            let Ok(c) = self.rq.complete(cqe) else {
                ChannelStats::add(&st.rx_dropped, 1);
                return;
            };
            let idx = self.rq.index(c.wqe_counter);
            let Some(slot) = self.slots.get_mut(idx) else {
                return;
            };
            let pages = core::mem::replace(slot, core::array::from_fn(|_| None));
            match c.result {
                Ok(info) => {
                    match Self::build(pages, &info, self.first_len, napi) {
                        Ok(mut skb) => {
                            bytes += u64::from(info.byte_cnt);
                            pkts += 1;
                            Self::finish(&mut skb, &info, rxcsum, self.ix, st);
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

    /// The skb of a good frame: over its first page, the rest as fragments.
    fn build(pages: Slot, info: &RxInfo, first_len: u32, napi: &NapiContext) -> Result<SkBuff> {
        let mut it = pages.into_iter().flatten();
        let first = it.next().ok_or(EINVAL)?;
        let len0 = info.byte_cnt.min(first_len);
        first.sync_for_cpu(RX_HEADROOM, len0)?;
        let mut skb = first.build_skb(napi, RX_HEADROOM, len0)?;
        let mut left = info.byte_cnt - len0;
        for p in it {
            if left == 0 {
                break;
            }
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
        Ok(skb)
    }

    /// Checksum verdict, RSS hash, VLAN tag and queue of a received skb
    /// (en_rx.c `mlx5e_build_rx_skb`, `mlx5e_handle_csum`).
    fn finish(skb: &mut SkBuff, info: &RxInfo, rxcsum: bool, ix: u16, st: &ChannelStats) {
        let l4 = info.l4_hdr_type != l4_hdr_type::NONE;
        if rxcsum && info.l3_ok && info.l4_ok && l4 {
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
