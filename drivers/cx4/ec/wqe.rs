// SPDX-License-Identifier: GPL-2.0
//! The WQEs of one calculation, as MLNX_OFED's libmlx5 writes them (`ec.c` `post_ec_umr`,
//! `set_ec_umr_pattern_ds`, `set_ec_umr_klm_ds`, `post_ec_vec_calc`, `ec_post_recv`), built in
//! a scratch buffer of whole basic blocks that the engine copies into its send queue:
//!
//! - the receive: one data segment for the N outputs' stream;
//! - UMR: control segment (`imm` = the mkey), UMR control (inline entries, `align(n, 4)`
//!   octowords, mask LEN | START_ADDR | KEY | FREE | LR | LW), the mkey segment (local read and
//!   write, UMR-enabled, KLM access mode, the key's variant byte, the PD, start, length, table
//!   size), then either KLM entries (the inputs) or a repeat block (the outputs);
//! - the vector-calc SEND: control (opmod 0xff, `ds` 4) and the 48-byte segment.

use cx4_hw::{
    mkey::access_mode,
    wqe::{
        fm_ce_se,
        opcode,
        opmod_idx_opcode,
        qpn_ds,
        rdma::{
            Klm,
            MkeyMask,
            MkeySeg,
            Perm,
            WqeUmrCtrlSeg,
            UMR_INLINE, //
        },
        repeat_block::{
            RepeatBlock,
            RepeatEnt,
            REPEAT_BLOCK_OP, //
        },
        vector_calc::{
            calc_op,
            VecCalcSeg,
            CALC_MATRIX,
            CALC_MATRIX_8BIT,
            OPMOD_VEC_CALC,
            VEC_CALC_DS, //
        },
        WqeCtrlSeg,
        WqeDataSeg,
        SEND_WQE_BB,
        SEND_WQE_DS, //
    },
};
use kernel::prelude::*;
use zerocopy::FromBytes;

use super::Field;

/// The largest WQE of a calculation: a UMR of 16 KLM entries (ctrl 16 + UMR ctrl 48 + mkey 64
/// + 256) is 6 basic blocks.
pub(crate) const MAX_WQE_BBS: usize = 6;

/// Scratch space for one WQE.
pub(crate) type Scratch = [u8; MAX_WQE_BBS * SEND_WQE_BB];

/// Size of a UMR WQE with `n` translation entries (16 bytes each, padded to four), in basic
/// blocks.
pub(crate) fn umr_bbs(n: usize) -> usize {
    (WqeCtrlSeg::SIZE + WqeUmrCtrlSeg::SIZE + MkeySeg::SIZE + n.next_multiple_of(4) * 16)
        .div_ceil(SEND_WQE_BB)
}

fn seg<T: FromBytes + zerocopy::IntoBytes + zerocopy::KnownLayout>(
    b: &mut [u8],
    at: usize,
    size: usize,
) -> Result<&mut T> {
    T::mut_from_bytes(b.get_mut(at..at + size).ok_or(EINVAL)?).map_err(|_| EINVAL)
}

/// The receive WQE (one data segment; the ring's stride is 16 bytes, so no terminator).
pub(crate) fn recv(b: &mut [u8; 16], len: u32, lkey: u32, addr: u64) -> Result {
    let d = WqeDataSeg::mut_from_bytes(&mut b[..]).map_err(|_| EINVAL)?;
    d.set_byte_count(len);
    d.set_lkey(lkey);
    d.set_addr(addr);
    Ok(())
}

/// Where an indirect mkey's UMR points it.
pub(crate) struct UmrTarget {
    pub(crate) idx: u16,
    pub(crate) qpn: u32,
    pub(crate) mkey: u32,
    pub(crate) pdn: u32,
    pub(crate) start: u64,
    pub(crate) len: u64,
}

/// Writes the control, UMR control and mkey segments of a UMR with `n` entries; returns the
/// offset of the entries and the WQE's bytes.
fn umr_head(b: &mut Scratch, t: &UmrTarget, n: usize) -> Result<(usize, usize)> {
    let bbs = umr_bbs(n);
    let bytes = bbs * SEND_WQE_BB;
    let oct = n.next_multiple_of(4) as u32;
    b[..bytes].fill(0);
    {
        let c: &mut WqeCtrlSeg = seg(b, 0, WqeCtrlSeg::SIZE)?;
        c.set_opmod_idx_opcode(opmod_idx_opcode(0, t.idx, opcode::UMR));
        c.set_qpn_ds(qpn_ds(t.qpn, (bytes / SEND_WQE_DS) as u8));
        c.set_imm(t.mkey);
    }
    let mut at = WqeCtrlSeg::SIZE;
    {
        let u: &mut WqeUmrCtrlSeg = seg(b, at, WqeUmrCtrlSeg::SIZE)?;
        u.set_flags(UMR_INLINE.into());
        u.set_xlt_octowords(oct);
        u.set_mkey_mask(
            (MkeyMask::LEN
                | MkeyMask::START_ADDR
                | MkeyMask::KEY
                | MkeyMask::FREE
                | MkeyMask::LR
                | MkeyMask::LW)
                .bits(),
        );
    }
    at += WqeUmrCtrlSeg::SIZE;
    {
        let k: &mut MkeySeg = seg(b, at, MkeySeg::SIZE)?;
        k.set_flags(
            u32::from((Perm::LOCAL_READ | Perm::LOCAL_WRITE | Perm::UMR_EN).bits())
                | u32::from(access_mode::KLMS),
        );
        k.set_qpn_mkey7_0(0xffff_ff00 | (t.mkey & 0xff));
        k.set_flags_pd(t.pdn);
        k.set_start_addr(t.start);
        k.set_len(t.len);
        k.set_xlt_oct_size(oct);
    }
    at += MkeySeg::SIZE;
    Ok((at, bytes))
}

/// A UMR making `t.mkey` the KLM list `entries` (byte count, key, address each); returns the
/// WQE's size in basic blocks.
pub(crate) fn umr_klm(
    b: &mut Scratch,
    t: &UmrTarget,
    entries: impl ExactSizeIterator<Item = (u32, u32, u64)>,
) -> Result<usize> {
    let n = entries.len();
    let (mut at, bytes) = umr_head(b, t, n)?;
    for (len, key, va) in entries {
        let k: &mut Klm = seg(b, at, Klm::SIZE)?;
        k.set_bcount(len);
        k.set_key(key);
        k.set_va(va);
        at += Klm::SIZE;
    }
    Ok(bytes / SEND_WQE_BB)
}

/// One entry of a repeat block: stride, bytes per repetition, key, address.
pub(crate) type RepeatPiece = (u16, u16, u32, u64);

/// A UMR making `t.mkey` a repeat block: `count` repetitions of `pieces`; returns the WQE's
/// size in basic blocks.
pub(crate) fn umr_repeat(
    b: &mut Scratch,
    t: &UmrTarget,
    count: u32,
    pieces: &[RepeatPiece],
) -> Result<usize> {
    let (mut at, bytes) = umr_head(b, t, pieces.len() + 1)?;
    {
        let h: &mut RepeatBlock = seg(b, at, RepeatBlock::SIZE)?;
        let sum: u32 = pieces.iter().map(|p| u32::from(p.1)).sum();
        h.set_byte_count(sum);
        h.set_op(REPEAT_BLOCK_OP);
        h.set_repeat_count(count);
        h.set_num_ent(pieces.len() as u32);
    }
    at += RepeatBlock::SIZE;
    for &(stride, len, key, va) in pieces {
        let e: &mut RepeatEnt = seg(b, at, RepeatEnt::SIZE)?;
        e.set_stride(stride.into());
        e.set_byte_count(len.into());
        e.set_memkey(key);
        e.set_va(va);
        at += RepeatEnt::SIZE;
    }
    Ok(bytes / SEND_WQE_BB)
}

/// What the vector-calc SEND names.
pub(crate) struct VecCalc {
    pub(crate) idx: u16,
    pub(crate) qpn: u32,
    /// Small fence (after a UMR), and a requester completion.
    pub(crate) fence: bool,
    pub(crate) signaled: bool,
    pub(crate) field: Field,
    /// Output slots computed (1..=4; the calc_op of the rest stays 0).
    pub(crate) outputs: usize,
    pub(crate) k: usize,
    pub(crate) cm_lkey: u32,
    pub(crate) cm_addr: u64,
    pub(crate) len: u32,
    pub(crate) vec_lkey: u32,
    pub(crate) vec_addr: u64,
}

/// The vector-calc SEND (one basic block).
pub(crate) fn vec_calc(b: &mut Scratch, v: &VecCalc) -> Result<usize> {
    b[..SEND_WQE_BB].fill(0);
    let mut fm = 0;
    if v.fence {
        fm |= fm_ce_se::FENCE_MODE_INITIATOR_SMALL;
    }
    if v.signaled {
        fm |= fm_ce_se::CQ_UPDATE;
    }
    {
        let c: &mut WqeCtrlSeg = seg(b, 0, WqeCtrlSeg::SIZE)?;
        c.set_opmod_idx_opcode(opmod_idx_opcode(OPMOD_VEC_CALC, v.idx, opcode::SEND));
        c.set_qpn_ds(qpn_ds(v.qpn, VEC_CALC_DS));
        c.set_fm_ce_se(fm.into());
    }
    let s: &mut VecCalcSeg = seg(b, WqeCtrlSeg::SIZE, VecCalcSeg::SIZE)?;
    let op = |j: usize| -> u32 {
        if j < v.outputs {
            calc_op::XOR.into()
        } else {
            calc_op::NONE.into()
        }
    };
    s.set_calc_op0(op(0));
    s.set_calc_op1(op(1));
    s.set_calc_op2(op(2));
    s.set_calc_op3(op(3));
    let flags = match v.field {
        Field::Gf16 => CALC_MATRIX,
        Field::Gf256 => CALC_MATRIX | CALC_MATRIX_8BIT,
    };
    s.set_mat_le_tag_cs(flags.into());
    s.set_vec_count(v.k as u32);
    s.set_cm_lkey(v.cm_lkey);
    s.set_cm_addr(v.cm_addr);
    s.set_vec_size(v.len);
    s.set_vec_lkey(v.vec_lkey);
    s.set_vec_addr(v.vec_addr);
    Ok(1)
}
