// SPDX-License-Identifier: GPL-2.0
//! The Ethernet receive queue, legacy cyclic form (en_main.c `mlx5e_create_rq` /
//! `mlx5e_modify_rq_state`, en_rx.c `mlx5e_alloc_rx_wqe` / `mlx5e_handle_rx_cqe`), not the
//! striding (multi-packet) one.
//!
//! A ring of WQEs in one coherent buffer, each an array of scatter entries (data segments)
//! rounded up to a power of two: one entry when a frame fits one buffer, several page-sized
//! ones for jumbo frames. Entries a WQE does not use end the list (`byte_count` 0, the
//! terminate lkey). The RQ has no MMIO doorbell: [`Rq::ring_doorbell`] publishes the producer
//! counter in the doorbell record, which the device reads when a frame arrives.
//!
//! Completions arrive in ring order; [`Rq::complete`] checks that, and decodes the CQE into
//! an [`RxInfo`] (length, RSS hash, checksum, header types, stripped VLAN) or the error.

use cx4_hw::{
    command,
    cq::cqe::{
        opcode as cqe_opcode,
        Cqe64, //
    },
    mkey::TERMINATE_SCATTER_LIST_LKEY,
    pages::PAGE_SIZE,
    wq::{
        rqc_state,
        wq_type,
        CreateRqIn, //
    },
    wqe::{
        WqeDataSeg,
        HW_START_PADDING,
        INLINE_SEG, //
    },
};
use kernel::prelude::*;
use zerocopy::FromBytes;

use crate::{
    cmd::input,
    dmabuf::DmaBuf,
    en::{
        cqe::{
            cqe_error,
            CqeError, //
        },
        res::EnRes,
    },
    hwq::{
        HwRq,
        RqChange, //
    },
    wq::DbRecord, //
};

/// Size of one scatter entry.
const DSEG: usize = WqeDataSeg::SIZE;
/// Largest RQ (log2 WQEs); 15 keeps the 16-bit counters unambiguous.
pub(crate) const LOG_RQ_SIZE_MAX: u32 = 15;
/// The most scatter entries of one WQE (a 512-byte WQE; the device's `max_wqe_sz_rq` may
/// allow fewer).
pub(crate) const MAX_SEGS: usize = 32;
/// CQE format of compressed CQEs (never enabled by this driver).
const CQE_FORMAT_COMPRESSED: u32 = 3;

/// Parameters of a new RQ.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RqParams {
    /// log2 of the number of WQEs.
    pub(crate) log_size: u32,
    /// Scatter entries per WQE (1..=[`MAX_SEGS`]).
    pub(crate) segs: usize,
    /// The CQ its completions go to.
    pub(crate) cqn: u32,
    /// Keep VLAN tags in the frame (`vsd`: VLAN stripping disabled); the device can only
    /// strip with the `vlan_cap` capability.
    pub(crate) vlan_strip_disable: bool,
}

/// What a receive CQE says about a good frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RxInfo {
    /// Bytes written to the buffers (the frame without a stripped VLAN tag).
    pub(crate) byte_cnt: u32,
    /// RSS hash value.
    pub(crate) rss_hash: u32,
    /// RSS hash type: the IP fields hashed (`cx4_hw::cq::cqe::rss_ip`).
    pub(crate) rss_hash_ip: u8,
    /// RSS hash type: the L4 fields hashed (`cx4_hw::cq::cqe::rss_l4`).
    pub(crate) rss_hash_l4: u8,
    /// 16-bit one's-complement sum of the frame after the Ethernet (and VLAN) header, for
    /// CHECKSUM_COMPLETE (en_rx.c `mlx5e_handle_csum`).
    pub(crate) check_sum: u16,
    /// The L3 checksum is good.
    pub(crate) l3_ok: bool,
    /// The L4 checksum is good.
    pub(crate) l4_ok: bool,
    /// L3 header type (`cx4_hw::cq::cqe::l3_hdr_type`).
    pub(crate) l3_hdr_type: u8,
    /// L4 header type (`cx4_hw::cq::cqe::l4_hdr_type`).
    pub(crate) l4_hdr_type: u8,
    /// The stripped VLAN tag (TCI), if the device stripped one.
    pub(crate) vlan_tci: Option<u16>,
    /// Segments coalesced by LRO (0: the RQ's TIR does not merge; 1: nothing merged).
    pub(crate) lro_num_seg: u8,
    /// What LRO put in the CQE for the merged packet's headers.
    pub(crate) lro: LroCqe,
    /// The frame was recognised as tunnelled (header types and OK bits are the inner ones).
    pub(crate) tunneled: bool,
    /// The flow tag of the steering entry that received the frame.
    pub(crate) flow_tag: u32,
    /// The timestamp.
    pub(crate) timestamp: u64,
}

/// `lro_tcppsh_abort_dupack`: a merged segment had PSH (device.h `get_cqe_lro_tcppsh`).
const LRO_TCPPSH: u32 = 1 << 6;

/// The LRO fields of a receive CQE (`mlx5_cqe64.lro`), for the headers of a merged packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LroCqe {
    /// Some merged segment had PSH.
    pub(crate) psh: bool,
    /// The smallest IPv4 TTL / IPv6 hop limit of the segments.
    pub(crate) min_ttl: u8,
    /// The last segment's TCP window.
    pub(crate) tcp_win: u16,
    /// The last segment's acknowledgement number.
    pub(crate) ack_seq: u32,
}

/// One receive completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RxCompletion {
    /// The counter of the WQE the frame went to (its buffers are the caller's again).
    pub(crate) wqe_counter: u16,
    /// The frame, or the error.
    pub(crate) result: core::result::Result<RxInfo, CqeError>,
}

/// An Ethernet RQ in the ready state. Dropping it destroys it.
pub(crate) struct Rq {
    // Field order is drop order: the RQ leaves the card before its ring is freed.
    hw: HwRq,
    log_size: u32,
    log_stride: u32,
    segs: usize,
    buf: DmaBuf,
    dbrec: DbRecord,
    mkey: u32,
    pc: u16,
    cc: u16,
    /// Bytes posted per ring index, to check the CQE's byte count against.
    posted: KVec<u32>,
    scratch: KVec<u8>,
}

impl Rq {
    /// Creates an RQ with the function's resources `res` and moves it to ready.
    pub(crate) fn create(res: &EnRes, p: &RqParams) -> Result<Self> {
        let mdev = res.mdev();
        let caps = res.caps();
        let max_log = LOG_RQ_SIZE_MAX.min(caps.log_max_wq_sz.into());
        let stride = (p.segs * DSEG).next_power_of_two();
        if p.log_size > max_log
            || !(1..=MAX_SEGS).contains(&p.segs)
            || stride > caps.max_wqe_sz_rq as usize
            || (!p.vlan_strip_disable && !caps.vlan_strip)
        {
            return Err(EINVAL);
        }
        let log_stride = stride.ilog2();
        let ring = 1usize << p.log_size;
        let bytes = (ring * stride).max(PAGE_SIZE);
        let buf = DmaBuf::alloc(mdev.dev.get(), bytes)?;
        let dbrec = DbRecord::alloc(mdev.dev.get())?;
        let posted = KVec::from_elem(0u32, ring, GFP_KERNEL)?;
        let scratch = KVec::from_elem(0u8, stride, GFP_KERNEL)?;
        let npages = bytes / PAGE_SIZE;
        let mut m = input::<command::CreateRq>(npages * 8)?;
        {
            let c = m.ctx_mut();
            c.set_vsd(p.vlan_strip_disable.into());
            c.set_state(rqc_state::RST.into());
            // Not set by mlx5e (en_main.c `mlx5e_create_rq`); flushes posted WQEs with error
            // CQEs if the RQ goes to error, so their buffers come back.
            c.set_flush_in_error_en(1);
            c.set_cqn(p.cqn);
            let w = c.wq_mut();
            w.set_wq_type(wq_type::CYCLIC.into());
            w.set_pd(res.pdn());
            w.set_dbr_addr(dbrec.dma());
            w.set_log_wq_stride(log_stride);
            w.set_log_wq_pg_sz(0);
            w.set_log_wq_sz(p.log_size);
        }
        for i in 0..npages {
            CreateRqIn::set_wq_pas(m.bytes_mut(), i, buf.dma() + (i * PAGE_SIZE) as u64)
                .map_err(|_| EINVAL)?;
        }
        let hw = HwRq::create(mdev, &m)?;
        let rq = Self {
            hw,
            log_size: p.log_size,
            log_stride,
            segs: p.segs,
            buf,
            dbrec,
            mkey: res.mkey(),
            pc: 0,
            cc: 0,
            posted,
            scratch,
        };
        // On failure `rq` is dropped, which destroys the RQ.
        rq.hw.modify(rqc_state::RST, rqc_state::RDY, RqChange::default())?;
        Ok(rq)
    }

    /// The RQ number.
    pub(crate) fn rqn(&self) -> u32 {
        self.hw.rqn()
    }

    /// The number of WQEs.
    pub(crate) fn size(&self) -> u16 {
        (1u32 << self.log_size) as u16
    }

    /// Scatter entries per WQE.
    pub(crate) fn segs(&self) -> usize {
        self.segs
    }

    /// The producer counter (the counter the next WQE gets).
    pub(crate) fn pc(&self) -> u16 {
        self.pc
    }

    /// The consumer counter (the WQE the next frame goes to).
    pub(crate) fn cc(&self) -> u16 {
        self.cc
    }

    /// The ring index of counter `ctr`.
    pub(crate) fn index(&self, ctr: u16) -> usize {
        usize::from(ctr & self.size().wrapping_sub(1))
    }

    /// WQEs that can be posted now.
    pub(crate) fn free(&self) -> u16 {
        self.size().wrapping_sub(self.pc.wrapping_sub(self.cc))
    }

    /// WQEs posted and not completed.
    pub(crate) fn posted(&self) -> u16 {
        self.pc.wrapping_sub(self.cc)
    }

    /// Turns VLAN stripping off or on (en_main.c `mlx5e_modify_rq_vsd`).
    pub(crate) fn set_vlan_strip_disable(&self, vsd: bool) -> Result {
        self.hw.modify(
            rqc_state::RDY,
            rqc_state::RDY,
            RqChange {
                vsd: Some(vsd),
                ..Default::default()
            },
        )
    }

    /// Posts one WQE scattering into `segs` (bus address, length; at most [`Rq::segs`]);
    /// returns its counter. `ENOSPC` if the ring is full, `EINVAL` for a bad list. The
    /// device sees it after [`Rq::ring_doorbell`].
    pub(crate) fn post_recv(&mut self, segs: &[(u64, u32)]) -> Result<u16> {
        if segs.is_empty()
            || segs.len() > self.segs
            || segs.iter().any(|&(_, n)| n == 0 || n & INLINE_SEG != 0)
        {
            return Err(EINVAL);
        }
        if self.free() == 0 {
            return Err(ENOSPC);
        }
        let mkey = self.mkey;
        let mut total = 0u32;
        self.scratch.fill(0);
        for (i, d) in self.scratch.chunks_exact_mut(DSEG).enumerate() {
            let d = WqeDataSeg::mut_from_bytes(d).map_err(|_| EINVAL)?;
            match segs.get(i) {
                Some(&(addr, n)) => {
                    // en_main.c `mlx5e_init_frags_partition`: the length with the start
                    // padding flag, the device strips it.
                    d.set_byte_count(n | HW_START_PADDING);
                    d.set_lkey(mkey);
                    d.set_addr(addr);
                    total = total.saturating_add(n);
                }
                None => d.set_lkey(TERMINATE_SCATTER_LIST_LKEY),
            }
        }
        let ctr = self.pc;
        let pi = self.index(ctr);
        self.buf.write(pi << self.log_stride, &self.scratch)?;
        *self.posted.get_mut(pi).ok_or(EINVAL)? = total;
        self.pc = self.pc.wrapping_add(1);
        Ok(ctr)
    }

    /// Publishes the producer counter in the doorbell record (en_rx.c
    /// `mlx5e_post_rx_wqes`: `dma_wmb` then `mlx5_wq_cyc_update_db_record`; the barrier is in
    /// `publish_recv`).
    pub(crate) fn ring_doorbell(&self) -> Result {
        self.dbrec.publish_recv(u32::from(self.pc))
    }

    /// Recovers from an error CQE (en/reporter_rx.c `mlx5e_rx_reporter_err_rq_cqe_recover`):
    /// if the device has the RQ in error, resets it, hands the counters of the WQEs still
    /// posted to `drop_wqe` (their buffers are the caller's to free), restarts the counters
    /// from 0 and moves the RQ back to ready, empty. Returns whether the RQ was in error.
    /// Poll the CQ before calling this.
    pub(crate) fn recover(&mut self, mut drop_wqe: impl FnMut(u16)) -> Result<bool> {
        if self.hw.query_state()? != rqc_state::ERR {
            return Ok(false);
        }
        self.hw.modify(rqc_state::ERR, rqc_state::RST, RqChange::default())?;
        while self.cc != self.pc {
            drop_wqe(self.cc);
            self.cc = self.cc.wrapping_add(1);
        }
        self.pc = 0;
        self.cc = 0;
        self.dbrec.reset_recv()?;
        self.hw.modify(rqc_state::RST, rqc_state::RDY, RqChange::default())?;
        Ok(true)
    }

    /// Consumes one CQE of this RQ: the WQE at the consumer counter is complete. `EIO` if the
    /// CQE is not a receive completion of that WQE, or claims more bytes than it had.
    pub(crate) fn complete(&mut self, cqe: &Cqe64) -> Result<RxCompletion> {
        let ctr = self.cc;
        if self.posted() == 0 || cqe.wqe_counter() as u16 != ctr {
            return Err(EIO);
        }
        let result = match cqe_error(cqe) {
            Some(e) => Err(e),
            None => {
                let op = cqe.opcode() as u8;
                if !(cqe_opcode::RESP_WR_IMM..=cqe_opcode::RESP_SEND_INV).contains(&op)
                    || cqe.format() == CQE_FORMAT_COMPRESSED
                {
                    return Err(EIO);
                }
                let info = decode(cqe);
                let posted = *self.posted.get(self.index(ctr)).ok_or(EIO)?;
                if info.byte_cnt > posted {
                    return Err(EIO);
                }
                Ok(info)
            }
        };
        self.cc = self.cc.wrapping_add(1);
        Ok(RxCompletion {
            wqe_counter: ctr,
            result,
        })
    }
}

/// Decodes a good receive CQE.
pub(crate) fn decode(cqe: &Cqe64) -> RxInfo {
    RxInfo {
        byte_cnt: cqe.byte_cnt(),
        rss_hash: cqe.rss_hash_result(),
        rss_hash_ip: cqe.rss_hash_type_ip() as u8,
        rss_hash_l4: cqe.rss_hash_type_l4() as u8,
        check_sum: cqe.check_sum() as u16,
        l3_ok: cqe.l3_ok() != 0,
        l4_ok: cqe.l4_ok() != 0,
        l3_hdr_type: cqe.l3_hdr_type() as u8,
        l4_hdr_type: cqe.l4_hdr_type() as u8,
        vlan_tci: (cqe.cvlan_stripped() != 0).then(|| cqe.vlan_info() as u16),
        lro_num_seg: cqe.lro_num_seg() as u8,
        lro: LroCqe {
            psh: cqe.lro_tcppsh_abort_dupack() & LRO_TCPPSH != 0,
            min_ttl: cqe.lro_min_ttl() as u8,
            tcp_win: cqe.lro_tcp_win() as u16,
            ack_seq: cqe.lro_ack_seq_num(),
        },
        tunneled: cqe.outer_l3_tunneled() != 0,
        flow_tag: cqe.flow_tag(),
        timestamp: cqe.timestamp(),
    }
}

