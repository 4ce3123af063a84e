// SPDX-License-Identifier: GPL-2.0
//! The Ethernet send queue (en_main.c `mlx5e_create_sq` / `mlx5e_modify_sq`, en_tx.c
//! `mlx5e_sq_xmit_wqe` / `mlx5e_poll_tx_cq`, en/txrx.h `mlx5e_post_nop` / `mlx5e_notify_hw`,
//! en/reporter_tx.c error recovery).
//!
//! A cyclic ring of 64-byte WQE basic blocks (WQEBBs) in one coherent buffer, a doorbell record
//! and an SQ object bound to a CQ, a TIS, the function's PD and a UAR page. Producer (`pc`) and
//! consumer (`cc`) counters are 16 bits wide like the WQE index in the control segment; the
//! ring holds at most 2^15 WQEBBs so they never become ambiguous.
//!
//! Posting ([`Sq::post_send`]) builds one WQE from a [`TxWqe`]: control segment, Ethernet
//! segment with the inline headers (and a software-inserted VLAN tag), then one data segment
//! per gather entry with the function's mkey. A WQE never wraps: when it would, the rest of
//! the ring is padded with one-WQEBB NOPs first, as mlx5e does. [`Sq::ring_doorbell`] asks for
//! a CQE on the last WQE posted, publishes the producer counter in the doorbell record and
//! writes the first eight bytes of that WQE's control segment to the UAR doorbell.
//!
//! Completions ([`Sq::complete`]) name the last WQE they cover; everything from the consumer
//! counter up to it is done, and the caller's callback gets the counter of each such WQE (not
//! the NOP padding) to free what it attached to it. An error CQE moves the SQ to the error
//! state; [`Sq::recover`] brings it back (ERR → RST → RDY) once the caller has drained the CQ.

use cx4_hw::{
    command,
    cq::cqe::{
        opcode as cqe_opcode,
        Cqe64, //
    },
    pages::PAGE_SIZE,
    wq::{
        sqc_state,
        wq_type,
        CreateSqIn, //
    },
    wqe::{
        fm_ce_se,
        opcode,
        opmod_idx_opcode,
        qpn_ds,
        CsFlags,
        SwpFlags,
        WqeCtrlSeg,
        WqeDataSeg,
        WqeEthSeg,
        CTRL_DS_MASK,
        INLINE_SEG,
        SEND_WQE_BB,
        SEND_WQE_DS,
        SEND_WQE_MAX_SIZE,
        SEND_WQE_MAX_WQEBBS, //
    },
};
use kernel::{
    prelude::*,
    sync::Arc, //
};
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
    hwq::HwSq,
    mdev::Mdev,
    wq::DbRecord, //
};

/// log2 of the WQE basic block size (`log_wq_stride` of an SQ).
const LOG_WQEBB: u32 = 6;
/// Smallest and largest SQ (log2 WQEBBs); mlx5e uses 6..=13.
pub(crate) const LOG_SQ_SIZE_MIN: u32 = 6;
/// See [`LOG_SQ_SIZE_MIN`]; 15 keeps the 16-bit counters unambiguous.
pub(crate) const LOG_SQ_SIZE_MAX: u32 = 15;
/// DS of a WQE before its inline headers: control and Ethernet segments
/// (`MLX5E_TX_WQE_EMPTY_DS_COUNT`).
const EMPTY_DS: usize = 2;
/// Inline header bytes that fit in the Ethernet segment itself (`INL_HDR_START_SZ`).
const INL_HDR_START_SZ: usize = 2;
/// Offset of the inline headers in a WQE (the Ethernet segment's `inline_hdr.start`).
const INLINE_OFFSET: usize = SEND_WQE_DS + 14;
/// Bytes of the two MAC addresses before which a VLAN tag is inserted.
const MACS_LEN: usize = 12;
/// Ethernet header length.
const ETH_HLEN: usize = 14;
/// Size of a VLAN tag.
const VLAN_HLEN: usize = 4;
/// Free WQEBBs below which the caller should stop its queue: room for the largest WQE plus the
/// largest NOP padding before it (en/params.c `mlx5e_stop_room_for_wqe`).
pub(crate) const STOP_ROOM: u16 = 2 * SEND_WQE_MAX_WQEBBS as u16 - 1;

/// A VLAN tag to insert after the MAC addresses of the inline headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct VlanInsert {
    /// Tag protocol (0x8100 or 0x88a8).
    pub(crate) proto: u16,
    /// Tag control information (priority, DEI, VLAN id).
    pub(crate) tci: u16,
}

/// Software parser offsets (in 2-byte words from the start of the frame, counting an
/// inserted VLAN tag) and header kinds, for tunnels the hardware parser does not know
/// (en_accel.h `mlx5e_set_eseg_swp`). Needs an SQ created with `allow_swp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Swp {
    /// Outer L3 header offset.
    pub(crate) outer_l3: u8,
    /// Outer L4 header offset.
    pub(crate) outer_l4: u8,
    /// Inner L3 header offset.
    pub(crate) inner_l3: u8,
    /// Inner L4 header offset.
    pub(crate) inner_l4: u8,
    /// Header kinds.
    pub(crate) flags: SwpFlags,
}

/// One send WQE to build.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TxWqe<'a> {
    /// Header bytes copied inline (the first bytes of the frame; at least as many as the
    /// SQ's minimum inline mode asks for, and all headers of an LSO WQE). The gather list
    /// carries the rest of the frame.
    pub(crate) inline: &'a [u8],
    /// A VLAN tag to insert into the inline headers (needs at least the Ethernet header
    /// inline).
    pub(crate) vlan: Option<VlanInsert>,
    /// Checksum offloads.
    pub(crate) cs_flags: CsFlags,
    /// Large send offload with this MSS (an LSO WQE) or a plain send.
    pub(crate) lso_mss: Option<u16>,
    /// Software parser offsets.
    pub(crate) swp: Option<Swp>,
    /// Gather entries: bus address and length (through the function's mkey).
    pub(crate) gather: &'a [(u64, u32)],
    /// Ask for a CQE for this WQE (else the next signalled WQE's or doorbell's covers it).
    pub(crate) signal: bool,
}

/// The size of a send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WqeSize {
    /// Inline header bytes, with an inserted VLAN tag.
    pub(crate) inline_bytes: usize,
    /// DS taken by the inline headers beyond the Ethernet segment.
    pub(crate) inline_ds: usize,
    /// All DS (the control segment's `ds`).
    pub(crate) ds: usize,
    /// WQEBBs.
    pub(crate) wqebbs: u16,
}

impl TxWqe<'_> {
    /// The WQE's size, or `EINVAL` if it cannot be built (too large, VLAN insertion without
    /// the Ethernet header inline, zero or oversized gather entries, LSO with MSS 0).
    pub(crate) fn size(&self) -> Result<WqeSize> {
        let inline_bytes = match self.vlan {
            Some(_) if self.inline.len() < ETH_HLEN => return Err(EINVAL),
            Some(_) => self.inline.len() + VLAN_HLEN,
            None => self.inline.len(),
        };
        let inline_ds = inline_bytes
            .saturating_sub(INL_HDR_START_SZ)
            .div_ceil(SEND_WQE_DS);
        let ds = EMPTY_DS + inline_ds + self.gather.len();
        if ds > CTRL_DS_MASK as usize || ds * SEND_WQE_DS > SEND_WQE_MAX_SIZE {
            return Err(EINVAL);
        }
        if self
            .gather
            .iter()
            .any(|&(_, len)| len == 0 || len & INLINE_SEG != 0)
            || self.lso_mss == Some(0)
        {
            return Err(EINVAL);
        }
        Ok(WqeSize {
            inline_bytes,
            inline_ds,
            ds,
            wqebbs: ds.div_ceil(SEND_WQE_BB / SEND_WQE_DS) as u16,
        })
    }
}

/// Parameters of a new SQ.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SqParams {
    /// log2 of the number of WQEBBs ([`LOG_SQ_SIZE_MIN`]..=[`LOG_SQ_SIZE_MAX`]).
    pub(crate) log_size: u32,
    /// The CQ its completions go to.
    pub(crate) cqn: u32,
    /// The TIS it sends through.
    pub(crate) tisn: u32,
    /// Allow software parser offsets (needs the `swp` capability).
    pub(crate) allow_swp: bool,
    /// The minimum inline mode of its WQEs (`cx4_hw::wq::inline_mode`).
    pub(crate) min_inline: u8,
}

/// What one CQE completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TxCompletion {
    /// The counter of the last WQE it covers.
    pub(crate) wqe_counter: u16,
    /// WQEs completed (NOP padding included).
    pub(crate) wqes: u16,
    /// WQEBBs freed.
    pub(crate) wqebbs: u16,
    /// The error, for an error CQE (the SQ is then in the error state: see [`Sq::recover`]).
    pub(crate) error: Option<CqeError>,
}

/// Bookkeeping of one posted WQE, at the ring index of its first WQEBB.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    wqebbs: u8,
    nop: bool,
}

/// An Ethernet SQ in the ready state. Dropping it destroys it.
pub(crate) struct Sq {
    // Field order is drop order: the SQ leaves the card before its ring is freed.
    hw: HwSq,
    mdev: Arc<Mdev>,
    log_size: u32,
    buf: DmaBuf,
    dbrec: DbRecord,
    uar: u32,
    mkey: u32,
    allow_swp: bool,
    min_inline: u8,
    pc: u16,
    cc: u16,
    slots: KVec<Slot>,
    scratch: KVec<u8>,
    /// The first eight bytes of the last WQE posted, and its ring index, until the doorbell
    /// is rung.
    last: Option<(usize, [u8; 8])>,
}

impl Sq {
    /// Creates an SQ with the function's resources `res` and moves it to ready.
    pub(crate) fn create(res: &EnRes, p: &SqParams) -> Result<Self> {
        let mdev = res.mdev();
        let max_log = LOG_SQ_SIZE_MAX.min(res.caps().log_max_wq_sz.into());
        if !(LOG_SQ_SIZE_MIN..=max_log).contains(&p.log_size) || (p.allow_swp && !res.caps().swp) {
            return Err(EINVAL);
        }
        let ring = 1usize << p.log_size;
        let bytes = (ring * SEND_WQE_BB).max(PAGE_SIZE);
        let buf = DmaBuf::alloc(mdev.dev.get(), bytes)?;
        let dbrec = DbRecord::alloc(mdev.dev.get())?;
        let slots = KVec::from_elem(Slot::default(), ring, GFP_KERNEL)?;
        let scratch = KVec::from_elem(0u8, SEND_WQE_MAX_SIZE, GFP_KERNEL)?;
        let npages = bytes / PAGE_SIZE;
        let mut m = input::<command::CreateSq>(npages * 8)?;
        {
            let c = m.ctx_mut();
            c.set_tis_lst_sz(1);
            c.set_tis_num_0(p.tisn);
            c.set_cqn(p.cqn);
            c.set_min_wqe_inline_mode(res.sq_min_inline_field(p.min_inline).into());
            c.set_state(sqc_state::RST.into());
            c.set_flush_in_error_en(1);
            c.set_allow_swp(p.allow_swp.into());
            let w = c.wq_mut();
            w.set_wq_type(wq_type::CYCLIC.into());
            w.set_pd(res.pdn());
            w.set_uar_page(res.uar());
            w.set_dbr_addr(dbrec.dma());
            w.set_log_wq_stride(LOG_WQEBB);
            w.set_log_wq_pg_sz(0);
            w.set_log_wq_sz(p.log_size);
        }
        for i in 0..npages {
            CreateSqIn::set_wq_pas(m.bytes_mut(), i, buf.dma() + (i * PAGE_SIZE) as u64)
                .map_err(|_| EINVAL)?;
        }
        let hw = HwSq::create(mdev, &m)?;
        let sq = Self {
            hw,
            mdev: mdev.clone(),
            log_size: p.log_size,
            buf,
            dbrec,
            uar: res.uar(),
            mkey: res.mkey(),
            allow_swp: p.allow_swp,
            min_inline: p.min_inline,
            pc: 0,
            cc: 0,
            slots,
            scratch,
            last: None,
        };
        // On failure `sq` is dropped, which destroys the SQ.
        sq.hw.modify(sqc_state::RST, sqc_state::RDY)?;
        Ok(sq)
    }

    /// The minimum inline mode its WQEs carry (`cx4_hw::wq::inline_mode`).
    pub(crate) fn min_inline(&self) -> u8 {
        self.min_inline
    }

    /// The SQ number.
    pub(crate) fn sqn(&self) -> u32 {
        self.hw.sqn()
    }

    /// The number of WQEBBs.
    pub(crate) fn size(&self) -> u16 {
        (1u32 << self.log_size) as u16
    }

    fn mask(&self) -> u16 {
        self.size().wrapping_sub(1)
    }

    /// The producer counter (the counter the next WQE gets).
    pub(crate) fn pc(&self) -> u16 {
        self.pc
    }

    /// The consumer counter (the first WQE not completed yet).
    pub(crate) fn cc(&self) -> u16 {
        self.cc
    }

    /// The ring index of counter `ctr`.
    pub(crate) fn index(&self, ctr: u16) -> usize {
        usize::from(ctr & self.mask())
    }

    /// WQEBBs not in use.
    pub(crate) fn free_wqebbs(&self) -> u16 {
        self.size().wrapping_sub(self.pc.wrapping_sub(self.cc))
    }

    /// Whether a WQE of `wqebbs` WQEBBs fits now, with the NOP padding it would need at the
    /// end of the ring.
    pub(crate) fn room(&self, wqebbs: u16) -> bool {
        let contig = self.size() - (self.pc & self.mask());
        let pad = if contig < wqebbs { contig } else { 0 };
        u32::from(pad) + u32::from(wqebbs) <= u32::from(self.free_wqebbs())
    }

    /// Whether the caller should stop posting (fewer than [`STOP_ROOM`] WQEBBs free).
    pub(crate) fn should_stop(&self) -> bool {
        self.free_wqebbs() < STOP_ROOM
    }

    /// Writes the WQE built in `scratch[..len]` at the producer counter and records it.
    fn push(&mut self, len: usize, wqebbs: u16, nop: bool) -> Result<u16> {
        let ctr = self.pc;
        let pi = self.index(ctr);
        let data = self.scratch.get(..len).ok_or(EINVAL)?;
        self.buf.write(pi * SEND_WQE_BB, data)?;
        let mut head = [0u8; 8];
        head.copy_from_slice(data.get(..8).ok_or(EINVAL)?);
        let slot = self.slots.get_mut(pi).ok_or(EINVAL)?;
        *slot = Slot {
            wqebbs: wqebbs as u8,
            nop,
        };
        self.pc = self.pc.wrapping_add(wqebbs);
        self.last = Some((pi, head));
        Ok(ctr)
    }

    /// Posts a NOP of one WQEBB (en/txrx.h `mlx5e_post_nop`).
    fn post_nop(&mut self) -> Result {
        let (pc, sqn) = (self.pc, self.hw.sqn());
        let s = self.scratch.get_mut(..SEND_WQE_DS).ok_or(EINVAL)?;
        s.fill(0);
        let c = WqeCtrlSeg::mut_from_bytes(s).map_err(|_| EINVAL)?;
        c.set_opmod_idx_opcode(opmod_idx_opcode(0, pc, opcode::NOP));
        c.set_qpn_ds(qpn_ds(sqn, 1));
        self.push(SEND_WQE_DS, 1, true).map(|_| ())
    }

    /// Builds and posts one send WQE; returns its counter (the CQE's `wqe_counter` when it
    /// completes). `ENOSPC` if it does not fit now ([`Sq::room`]), `EINVAL` if it cannot be
    /// built. The device sees it after [`Sq::ring_doorbell`].
    pub(crate) fn post_send(&mut self, w: &TxWqe<'_>) -> Result<u16> {
        let sz = w.size()?;
        if usize::from(sz.wqebbs) > SEND_WQE_MAX_WQEBBS || (w.swp.is_some() && !self.allow_swp) {
            return Err(EINVAL);
        }
        if !self.room(sz.wqebbs) {
            return Err(ENOSPC);
        }
        // A WQE does not wrap: pad the end of the ring with NOPs (`mlx5e_txqsq_get_next_pi`).
        let contig = self.size() - (self.pc & self.mask());
        if contig < sz.wqebbs {
            for _ in 0..contig {
                self.post_nop()?;
            }
        }
        let len = usize::from(sz.wqebbs) * SEND_WQE_BB;
        let (pc, sqn, mkey) = (self.pc, self.hw.sqn(), self.mkey);
        let s = self.scratch.get_mut(..len).ok_or(EINVAL)?;
        s.fill(0);
        {
            let (ctrl, rest) = s.split_at_mut(SEND_WQE_DS);
            let c = WqeCtrlSeg::mut_from_bytes(ctrl).map_err(|_| EINVAL)?;
            let op = if w.lso_mss.is_some() {
                opcode::LSO
            } else {
                opcode::SEND
            };
            c.set_opmod_idx_opcode(opmod_idx_opcode(0, pc, op));
            c.set_qpn_ds(qpn_ds(sqn, sz.ds as u8));
            if w.signal {
                c.set_fm_ce_se(fm_ce_se::CQ_UPDATE.into());
            }
            let eseg = rest.get_mut(..SEND_WQE_DS).ok_or(EINVAL)?;
            let e = WqeEthSeg::mut_from_bytes(eseg).map_err(|_| EINVAL)?;
            e.set_cs_flags(w.cs_flags.bits().into());
            if let Some(mss) = w.lso_mss {
                e.set_mss(mss.into());
            }
            if let Some(swp) = w.swp {
                e.set_swp_outer_l3_offset(swp.outer_l3.into());
                e.set_swp_outer_l4_offset(swp.outer_l4.into());
                e.set_swp_inner_l3_offset(swp.inner_l3.into());
                e.set_swp_inner_l4_offset(swp.inner_l4.into());
                e.set_swp_flags(swp.flags.bits().into());
            }
            e.set_inline_hdr_sz(sz.inline_bytes as u32);
        }
        // The inline headers start in the Ethernet segment's last two bytes and continue over
        // the following DS (en_tx.c: `eseg->inline_hdr.start`, `mlx5e_insert_vlan`).
        let inl = s
            .get_mut(INLINE_OFFSET..INLINE_OFFSET + sz.inline_bytes)
            .ok_or(EINVAL)?;
        match w.vlan {
            Some(v) => {
                let (macs, rest) = w.inline.split_at_checked(MACS_LEN).ok_or(EINVAL)?;
                inl.get_mut(..MACS_LEN).ok_or(EINVAL)?.copy_from_slice(macs);
                inl.get_mut(MACS_LEN..MACS_LEN + 2)
                    .ok_or(EINVAL)?
                    .copy_from_slice(&v.proto.to_be_bytes());
                inl.get_mut(MACS_LEN + 2..MACS_LEN + VLAN_HLEN)
                    .ok_or(EINVAL)?
                    .copy_from_slice(&v.tci.to_be_bytes());
                inl.get_mut(MACS_LEN + VLAN_HLEN..)
                    .ok_or(EINVAL)?
                    .copy_from_slice(rest);
            }
            None => inl.copy_from_slice(w.inline),
        }
        let dseg0 = (EMPTY_DS + sz.inline_ds) * SEND_WQE_DS;
        for (i, &(addr, n)) in w.gather.iter().enumerate() {
            let off = dseg0 + i * SEND_WQE_DS;
            let d = s.get_mut(off..off + SEND_WQE_DS).ok_or(EINVAL)?;
            let d = WqeDataSeg::mut_from_bytes(d).map_err(|_| EINVAL)?;
            d.set_byte_count(n);
            d.set_lkey(mkey);
            d.set_addr(addr);
        }
        // Only the DS in use are copied; the rest of the last WQEBB is never read.
        self.push(sz.ds * SEND_WQE_DS, sz.wqebbs, false)
    }

    /// Makes the WQEs posted since the last doorbell visible to the device
    /// (en/txrx.h `mlx5e_notify_hw`): the last one asks for a CQE, the doorbell record gets
    /// the producer counter, and the first eight bytes of the last WQE go to the UAR's
    /// doorbell register. Nothing to do if nothing was posted.
    pub(crate) fn ring_doorbell(&mut self) -> Result {
        let Some((pi, head)) = self.last.take() else {
            return Ok(());
        };
        let fm_off = pi * SEND_WQE_BB + 11;
        let fm = self.buf.read_u8(fm_off)?;
        self.buf.write_u8(fm_off, fm | fm_ce_se::CQ_UPDATE)?;
        // The doorbell carries dwords 0-1 of the control segment (fm_ce_se is not in them);
        // `ring_send` orders the WQEs before the record (`dma_wmb`).
        self.dbrec
            .ring_send(&self.mdev.bar, self.uar, None, self.pc, head)
    }

    /// Consumes one CQE of this SQ: every WQE from the consumer counter up to the one the CQE
    /// names is complete, and `done` gets the counter of each (NOP padding excluded) in order.
    /// `EIO` if the CQE is not a send completion of a WQE in flight.
    pub(crate) fn complete(
        &mut self,
        cqe: &Cqe64,
        mut done: impl FnMut(u16),
    ) -> Result<TxCompletion> {
        let error = cqe_error(cqe);
        let wqe_counter = match error {
            Some(e) => e.wqe_counter,
            None if cqe.opcode() as u8 == cqe_opcode::REQ => cqe.wqe_counter() as u16,
            None => return Err(EIO),
        };
        let in_flight = self.pc.wrapping_sub(self.cc);
        let dist = wqe_counter.wrapping_sub(self.cc);
        if dist >= in_flight {
            return Err(EIO);
        }
        let start = self.cc;
        let (mut wqes, mut wqebbs) = (0u16, 0u16);
        loop {
            let ctr = self.cc;
            let slot = *self.slots.get(self.index(ctr)).ok_or(EIO)?;
            let n = u16::from(slot.wqebbs.max(1));
            if !slot.nop {
                done(ctr);
            }
            self.cc = self.cc.wrapping_add(n);
            wqes += 1;
            wqebbs += n;
            if ctr == wqe_counter {
                break;
            }
            // The counter did not fall on the start of a WQE.
            if self.cc.wrapping_sub(start) > dist {
                return Err(EIO);
            }
        }
        Ok(TxCompletion {
            wqe_counter,
            wqes,
            wqebbs,
            error,
        })
    }

    /// Recovers from an error CQE (en/reporter_tx.c `mlx5e_tx_reporter_err_cqe_recover`):
    /// if the device has the SQ in error, resets it, hands the counters of the WQEs still in
    /// flight to `drop_wqe` (their buffers are the caller's to free), restarts the counters
    /// from 0 and moves the SQ back to ready. Returns whether the SQ was in error. Poll the CQ
    /// (flushed WQEs complete with errors) before calling this.
    pub(crate) fn recover(&mut self, mut drop_wqe: impl FnMut(u16)) -> Result<bool> {
        if self.hw.query_state()? != sqc_state::ERR {
            return Ok(false);
        }
        self.hw.modify(sqc_state::ERR, sqc_state::RST)?;
        while self.cc != self.pc {
            let ctr = self.cc;
            let slot = *self.slots.get(self.index(ctr)).ok_or(EIO)?;
            if !slot.nop {
                drop_wqe(ctr);
            }
            self.cc = self.cc.wrapping_add(u16::from(slot.wqebbs.max(1)));
            // A corrupt slot must not carry the walk past the producer counter.
            if self.cc.wrapping_sub(ctr) > self.pc.wrapping_sub(ctr) {
                break;
            }
        }
        self.pc = 0;
        self.cc = 0;
        self.last = None;
        self.dbrec.reset_send()?;
        self.hw.modify(sqc_state::RST, sqc_state::RDY)?;
        Ok(true)
    }
}

