//! UMR WQEs (`MLX5_OPCODE_UMR`): the memory registrations a send queue carries out on an mkey
//! without a command — mlx5_ib's fast registration (`IB_WR_REG_MR`) and local invalidate
//! (`IB_WR_LOCAL_INV`) on RC and UC QPs (`wr.c` `set_reg_wr`, `set_linv_wr`), libmlx5's
//! local invalidate (`qp.c` `set_bind_wr`), and the MR updates mlx5_ib posts on its own
//! `REG_UMR` QP (`umr.c`: revoke, PD and access changes, translation updates).
//!
//! The WQE (qp.h, device.h): the control segment (its `imm` names the mkey), a 48-byte
//! [`WqeUmrCtrlSeg`] (flags, translation size and offset in 16-byte units, `mkey_mask`), a
//! 64-byte [`MkeySeg`] (the new values), then the translation entries: inline
//! ([`UMR_INLINE`]) right after, or a data segment pointing at them (read through its lkey in
//! the QP's PD, as mlx5_ib's XLT buffers and IB_WR_REG_MR descriptor lists are).
//!
//! Only the fields the mask names change: the free state, the rights, start address, length,
//! PD, key variant, bound QP, remote-invalidate enable, page size, and the entries (MTT, KLM
//! or KSM by the mkey's access mode) from the translation offset on. The entries of an indirect
//! (KLMS) mkey may instead be a **repeat block** (`cx4_hw::wqe::repeat_block`: a header whose
//! second word is 0x400 where a KLM has its key, then the entries), as MLNX_OFED's libmlx5
//! posts for the vector-calc result and rdma-core's `mlx5dv_wr_mr_interleaved` does: the mkey
//! then maps `repeat_count` repetitions of its entries' pieces, each piece `stride` bytes
//! after the previous repetition's (written whole: the translation offset must be 0; the
//! entries' byte counts must add up to the header's, at least one entry, all inside the
//! mkey's table). A plain KLM list on such an mkey makes it a KLM mkey again. Before anything changes
//! the device checks what the PRM makes it check: the mkey exists and was created UMR-enabled
//! (`umr_en`), its free state is the one [`UMR_CHECK_NOT_FREE`] / [`UMR_CHECK_FREE`] demand,
//! it is bound to this QP or to none under [`UMR_CHECK_QPN`], the entries fit its translation
//! table, the capabilities allow the change (`umr_modify_entity_size_disabled`,
//! `umr_modify_atomic_disabled`, `umr_indirect_mkey_disabled`), and — on an ordinary QP — the
//! mkey and any new PD are the QP's PD (only the privileged `REG_UMR` QP moves mkeys between
//! PDs). A failure changes nothing and completes the WQE in error ([`UmrError::status`]):
//! `MW_BIND_ERR` for what the mkey's state forbids (ib_core's "memory management operation
//! error", what ULPs log for a failed LOCAL_INV on mlx5), `LOCAL_QP_OP_ERR` for a WQE too
//! short for its segments, `LOCAL_PROT_ERR` / `LOCAL_LENGTH_ERR` for an unreadable pointer to
//! the entries.

use cx4_hw::{
    mkey::mkey_index,
    wqe::{
        self,
        rdma::{
            MkeyMask, MkeySeg, Perm, WqeUmrCtrlSeg, MKEY_REMOTE_INVAL, MKEY_STATUS_FREE,
            UMR_CHECK_FREE, UMR_CHECK_NOT_FREE, UMR_CHECK_QPN, UMR_INLINE,
            UMR_TRANSLATION_OFFSET_EN,
        },
        repeat_block::{RepeatBlock, RepeatEnt, REPEAT_BLOCK_OP},
        WqeDataSeg,
    },
};
use zerocopy::FromBytes;

use crate::{
    eth::dma::{Dma, WqeReader},
    fw::{Firmware, IndirectEntry, Mkey, MkeyMap, RepeatEntry, MKEY_QPN_NONE, MTT_READ, MTT_WRITE},
};

use super::status::WcStatus;
use super::wqe::{SendWqe, Sge};

/// The translation entries of a UMR WQE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Xlt {
    /// None (`xlt_octowords` 0).
    None,
    /// Copied out of the WQE.
    Inline(Vec<u8>),
    /// In memory, through a data segment.
    Pointer(Sge),
}

/// A decoded UMR WQE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UmrWqe {
    /// The WQE with its control segment's fields (for the completion).
    pub wqe: SendWqe,
    /// The mkey it changes (the control segment's `imm`).
    pub mkey: u32,
    /// [`WqeUmrCtrlSeg::flags`].
    pub flags: u8,
    /// The fields it changes.
    pub mask: MkeyMask,
    /// Size of the translation entries in 16-byte units.
    pub xlt_octowords: u16,
    /// Where they go in the mkey's table, in 16-byte units.
    pub xlt_offset: u64,
    /// The new values.
    pub seg: MkeySeg,
    /// The entries.
    pub xlt: Xlt,
}

/// Why a UMR WQE failed: the completion status and a reason for the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UmrError {
    /// The error CQE's status.
    pub status: WcStatus,
    /// What was wrong.
    pub why: String,
}

impl std::fmt::Display for UmrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({:?})", self.why, self.status)
    }
}

fn err<T>(status: WcStatus, why: impl Into<String>) -> Result<T, UmrError> {
    Err(UmrError {
        status,
        why: why.into(),
    })
}

/// The mkey's state forbids the change.
fn bind<T>(why: impl Into<String>) -> Result<T, UmrError> {
    err(WcStatus::MwBindErr, why)
}

/// Byte offsets in the WQE: ctrl 16, UMR ctrl 48, mkey segment 64.
const UMR_CTRL_AT: usize = 16;
const MKEY_SEG_AT: usize = UMR_CTRL_AT + 48;
const XLT_AT: usize = MKEY_SEG_AT + 64;

impl UmrWqe {
    /// Decodes the UMR WQE whose first basic block has producer index `index`.
    pub fn decode<R: WqeReader + ?Sized>(r: &R, index: u16) -> Result<UmrWqe, UmrError> {
        let qp_op = |why: String| UmrError {
            status: WcStatus::LocalQpOpErr,
            why,
        };
        let (w, ds) = SendWqe::ctrl(r, index).map_err(|e| qp_op(e.to_string()))?;
        if w.opcode != wqe::opcode::UMR {
            return Err(qp_op(format!("opcode {:#x} is not UMR", w.opcode)));
        }
        let end = usize::from(ds) * wqe::SEND_WQE_DS;
        if end < XLT_AT {
            return Err(qp_op(format!(
                "ds {ds} shorter than the UMR and mkey segments"
            )));
        }
        let mut b = [0u8; XLT_AT];
        r.read(0, &mut b)
            .map_err(|e| qp_op(format!("WQE unreadable: {e}")))?;
        let u = WqeUmrCtrlSeg::read_from_bytes(&b[UMR_CTRL_AT..MKEY_SEG_AT]).expect("48 bytes");
        let seg = MkeySeg::read_from_bytes(&b[MKEY_SEG_AT..XLT_AT]).expect("64 bytes");
        let flags = u.flags() as u8;
        let xlt_octowords = u.xlt_octowords() as u16;
        let xlt_offset = if flags & UMR_TRANSLATION_OFFSET_EN != 0 {
            (u64::from(u.xlt_offset_47_16()) << 16) | u64::from(u.xlt_offset())
        } else {
            0
        };
        let bytes = usize::from(xlt_octowords) * 16;
        let xlt = if bytes == 0 {
            Xlt::None
        } else if flags & UMR_INLINE != 0 {
            if XLT_AT + bytes > end {
                return Err(qp_op(format!(
                    "{bytes} bytes of inline entries beyond the WQE's {end}"
                )));
            }
            let mut d = vec![0u8; bytes];
            r.read(XLT_AT, &mut d)
                .map_err(|e| qp_op(format!("WQE unreadable: {e}")))?;
            Xlt::Inline(d)
        } else {
            if XLT_AT + 16 > end {
                return Err(qp_op("no data segment for the entries".into()));
            }
            let mut d = [0u8; 16];
            r.read(XLT_AT, &mut d)
                .map_err(|e| qp_op(format!("WQE unreadable: {e}")))?;
            let s = WqeDataSeg::read_from_bytes(&d[..]).expect("16 bytes");
            Xlt::Pointer(Sge {
                lkey: s.lkey(),
                addr: s.addr(),
                len: s.byte_count(),
            })
        };
        Ok(UmrWqe {
            mkey: w.imm,
            wqe: w,
            flags,
            mask: MkeyMask::from_bits_retain(u.mkey_mask()),
            xlt_octowords,
            xlt_offset,
            seg,
            xlt,
        })
    }

    /// The translation bytes: inline, or read through the pointer's lkey with `dma`.
    pub fn entries(&self, dma: &dyn Dma) -> Result<Vec<u8>, UmrError> {
        let bytes = usize::from(self.xlt_octowords) * 16;
        match &self.xlt {
            Xlt::None => Ok(Vec::new()),
            Xlt::Inline(d) => Ok(d.clone()),
            Xlt::Pointer(s) => {
                if (s.len as usize) < bytes {
                    return err(
                        WcStatus::LocalLengthErr,
                        format!("data segment of {} bytes for {bytes} of entries", s.len),
                    );
                }
                let mut d = vec![0u8; bytes];
                dma.read(s.lkey, s.addr, &mut d).map_err(|e| UmrError {
                    status: WcStatus::LocalProtErr,
                    why: format!("entries unreadable: {e}"),
                })?;
                Ok(d)
            }
        }
    }
}

/// The QP a UMR runs on, for the checks that depend on it.
#[derive(Clone, Copy, Debug)]
pub struct UmrQp {
    /// Its number ([`UMR_CHECK_QPN`]).
    pub qpn: u32,
    /// Its PD.
    pub pd: u32,
    /// The driver's `REG_UMR` QP: it may change any mkey's PD.
    pub privileged: bool,
}

/// Applies a UMR's changes (`entries` its translation bytes) to the mkey it names, all or
/// nothing.
pub fn apply(fw: &mut Firmware, u: &UmrWqe, entries: &[u8], qp: UmrQp) -> Result<(), UmrError> {
    let idx = mkey_index(u.mkey);
    let Some(cur) = fw.nic.mkeys.get(&idx) else {
        return bind(format!("no mkey {:#x}", u.mkey));
    };
    let m = updated(fw, cur, u, entries, qp)?;
    fw.nic.mkeys.insert(idx, m);
    Ok(())
}

/// The mkey `cur` as the UMR leaves it.
fn updated(
    fw: &Firmware,
    cur: &Mkey,
    u: &UmrWqe,
    entries: &[u8],
    qp: UmrQp,
) -> Result<Mkey, UmrError> {
    let mask = u.mask;
    let s = &u.seg;
    if !mask.contains(MkeyMask::KEY) && cur.key != u.mkey {
        return bind(format!(
            "key {:#x} is stale (the mkey is {:#x})",
            u.mkey, cur.key
        ));
    }
    if !cur.umr_en {
        return bind(format!("mkey {:#x} was not created UMR-enabled", cur.key));
    }
    match u.flags & (UMR_CHECK_NOT_FREE | UMR_CHECK_FREE) {
        0 => {}
        UMR_CHECK_NOT_FREE if !cur.free => {
            return bind(format!(
                "mkey {:#x} is in use, the UMR needs it free",
                cur.key
            ))
        }
        UMR_CHECK_FREE if cur.free => {
            return bind(format!(
                "mkey {:#x} is free, the UMR needs it in use",
                cur.key
            ))
        }
        UMR_CHECK_NOT_FREE | UMR_CHECK_FREE => {}
        _ => {
            return err(
                WcStatus::LocalQpOpErr,
                "both free-state checks requested".to_string(),
            )
        }
    }
    if u.flags & UMR_CHECK_QPN != 0 && cur.qpn != MKEY_QPN_NONE && cur.qpn != qp.qpn {
        return bind(format!(
            "mkey {:#x} is bound to QP {:#x}, not {:#x}",
            cur.key, cur.qpn, qp.qpn
        ));
    }
    if !qp.privileged && cur.pd != qp.pd {
        return bind(format!(
            "mkey {:#x} is in PD {:#x}, the QP in {:#x}",
            cur.key, cur.pd, qp.pd
        ));
    }
    let indirect = matches!(
        cur.map,
        MkeyMap::Klm { .. } | MkeyMap::Ksm { .. } | MkeyMap::Repeat { .. }
    );
    if indirect && fw.caps.general("umr_indirect_mkey_disabled") != 0 {
        return bind("UMR on an indirect mkey (umr_indirect_mkey_disabled)");
    }
    let mut m = cur.clone();
    if mask.contains(MkeyMask::LEN) {
        m.len = (s.length64() == 0).then(|| s.len());
    }
    if mask.contains(MkeyMask::START_ADDR) {
        m.start = s.start_addr();
    }
    if mask.contains(MkeyMask::PD) {
        let pd = s.pd();
        if !qp.privileged && pd != qp.pd {
            return bind(format!(
                "UMR moves mkey {:#x} to PD {pd:#x}, not the QP's",
                cur.key
            ));
        }
        if !fw.pds.contains_key(&pd) {
            return bind(format!(
                "UMR moves mkey {:#x} to missing PD {pd:#x}",
                cur.key
            ));
        }
        m.pd = pd;
    }
    if mask.contains(MkeyMask::EN_RINVAL) {
        m.remote_inval = s.flags_pd() & MKEY_REMOTE_INVAL != 0;
    }
    if mask.contains(MkeyMask::KEY) {
        m.key = (cur.key & !0xff) | s.mkey7_0();
    }
    if mask.contains(MkeyMask::QPN) {
        m.qpn = s.qpn_mkey7_0() >> 8;
    }
    let perm = Perm::from_bits_retain(s.flags() as u8);
    let rights = [
        (MkeyMask::LR, Perm::LOCAL_READ, &mut m.access.local_read),
        (MkeyMask::LW, Perm::LOCAL_WRITE, &mut m.access.local_write),
        (MkeyMask::RR, Perm::REMOTE_READ, &mut m.access.remote_read),
        (MkeyMask::RW, Perm::REMOTE_WRITE, &mut m.access.remote_write),
        (MkeyMask::A, Perm::ATOMIC, &mut m.access.atomic),
    ];
    for (bit, p, right) in rights {
        if mask.contains(bit) {
            *right = perm.contains(p);
        }
    }
    if m.access.atomic != cur.access.atomic && fw.caps.general("umr_modify_atomic_disabled") != 0 {
        return bind("UMR changes the atomic right (umr_modify_atomic_disabled)");
    }
    if mask.contains(MkeyMask::FREE) {
        m.free = s.status() as u8 & MKEY_STATUS_FREE != 0;
    }
    let new_shift = |old: u8| -> u8 {
        let new = s.log2_page_size() as u8;
        let mut v = old;
        if mask.contains(MkeyMask::PAGE_SIZE) {
            v = (v & !0x1f) | (new & 0x1f);
        }
        if mask.contains(MkeyMask::PAGE_SIZE_5) {
            v = (v & !0x20) | (new & 0x20);
        }
        v
    };
    match &mut m.map {
        MkeyMap::Mtt { page_shift, .. } | MkeyMap::Ksm { page_shift, .. } => {
            let v = new_shift(*page_shift);
            if v != *page_shift && fw.caps.general("umr_modify_entity_size_disabled") != 0 {
                return bind(format!(
                    "UMR changes the page size of mkey {:#x} from 2^{} to 2^{v} \
                     (umr_modify_entity_size_disabled)",
                    cur.key, page_shift
                ));
            }
            *page_shift = v;
        }
        MkeyMap::Pa | MkeyMap::Klm { .. } | MkeyMap::Repeat { .. } => {}
    }
    if is_repeat_block(&m.map, entries) {
        m.map = repeat_map(&m, u.xlt_offset, entries)?;
    } else {
        if matches!(m.map, MkeyMap::Repeat { .. }) && !entries.is_empty() {
            m.map = MkeyMap::Klm {
                entries: Vec::new(),
            };
        }
        write_entries(&mut m, u.xlt_offset, entries)?;
    }
    if !m.free {
        if let MkeyMap::Mtt { page_shift, .. } | MkeyMap::Ksm { page_shift, .. } = m.map {
            if !(12..=30).contains(&page_shift) {
                return bind(format!(
                    "mkey {:#x} made valid with page size 2^{page_shift}",
                    cur.key
                ));
            }
        }
    }
    Ok(m)
}

/// Whether the translation bytes of a UMR on an mkey mapped as `map` are a repeat block: an
/// indirect (KLMS) mkey, and the header's constant where a KLM entry has its key.
fn is_repeat_block(map: &MkeyMap, entries: &[u8]) -> bool {
    matches!(map, MkeyMap::Klm { .. } | MkeyMap::Repeat { .. })
        && entries
            .get(..RepeatBlock::SIZE)
            .and_then(|h| RepeatBlock::read_from_bytes(h).ok())
            .is_some_and(|h| h.op() == REPEAT_BLOCK_OP)
}

/// The map a repeat block makes of mkey `m`.
fn repeat_map(m: &Mkey, offset: u64, entries: &[u8]) -> Result<MkeyMap, UmrError> {
    if offset != 0 {
        return bind(format!(
            "repeat block at translation offset {offset} of mkey {:#x} (must be 0)",
            m.key
        ));
    }
    let h = RepeatBlock::read_from_bytes(&entries[..RepeatBlock::SIZE]).expect("checked");
    let n = h.num_ent() as usize;
    if n == 0 || h.repeat_count() == 0 {
        return bind(format!(
            "repeat block of mkey {:#x} with {n} entries, {} repetitions",
            m.key,
            h.repeat_count()
        ));
    }
    let table = m.xlt_octowords.min(MAX_TABLE_ENTRIES) as usize;
    if 1 + n > table || (1 + n) * RepeatEnt::SIZE > entries.len() {
        return bind(format!(
            "repeat block of {n} entries beyond mkey {:#x}'s table of {table} or the WQE's {} \
             bytes of entries",
            m.key,
            entries.len()
        ));
    }
    let list: Vec<RepeatEntry> = entries[RepeatBlock::SIZE..(1 + n) * RepeatEnt::SIZE]
        .chunks_exact(RepeatEnt::SIZE)
        .map(|b| {
            let e = RepeatEnt::read_from_bytes(b).expect("16 bytes");
            RepeatEntry {
                len: e.byte_count() as u16,
                stride: e.stride() as u16,
                key: e.memkey(),
                va: e.va(),
            }
        })
        .collect();
    let sum: u32 = list.iter().map(|e| u32::from(e.len)).sum();
    if sum != h.byte_count() {
        return bind(format!(
            "repeat block of mkey {:#x}: entries of {sum} bytes, header says {}",
            m.key,
            h.byte_count()
        ));
    }
    Ok(MkeyMap::Repeat {
        block: sum,
        count: h.repeat_count(),
        entries: list,
    })
}

/// Most entries a translation table grows to (8 bytes each for MTT, 16 for KLM and KSM): a
/// guest cannot make the model allocate more per mkey.
const MAX_TABLE_ENTRIES: u64 = 1 << 24;

/// Writes the translation entries from 16-byte unit `offset` of the mkey's table.
fn write_entries(m: &mut Mkey, offset: u64, entries: &[u8]) -> Result<(), UmrError> {
    if entries.is_empty() {
        return Ok(());
    }
    let size = m.map.entry_bytes() as u64;
    if size == 0 {
        return bind(format!("translation entries for PA mkey {:#x}", m.key));
    }
    let n = entries.len() as u64 / size;
    let first = offset.saturating_mul(16) / size;
    // Tables are allocated in 64-byte units: mlx5_ib pads every translation update to 64
    // bytes (umr.c MLX5_UMR_FLEX_ALIGNMENT) past a table sized to the range (mr.c
    // get_mkc_octo_size), and the padding lands inside.
    let table = m.xlt_octowords.next_multiple_of(4).saturating_mul(16);
    let cap = (table / size).min(MAX_TABLE_ENTRIES);
    if first.saturating_add(n) > cap {
        return bind(format!(
            "entries {first}..{} beyond mkey {:#x}'s table of {cap}",
            first.saturating_add(n),
            m.key
        ));
    }
    let (first, end) = (first as usize, (first + n) as usize);
    match &mut m.map {
        MkeyMap::Pa | MkeyMap::Repeat { .. } => unreachable!("no entries"),
        MkeyMap::Mtt {
            page_shift,
            pages,
            enables,
        } => {
            if pages.len() < end {
                pages.resize(end, 0);
            }
            if enables.len() < pages.len() {
                enables.resize(pages.len(), 0);
            }
            // The low bits of an entry are its read/write enables (MLX5_EN_RD / _WR, which
            // mlx5_ib's fast registration and MR updates set, and its ODP updates per page:
            // a zapped entry has none); the page address is above the page size.
            let low = (1u64 << (*page_shift).min(63)) - 1;
            for (i, e) in entries.chunks_exact(8).enumerate() {
                let ptag = u64::from_be_bytes(e.try_into().expect("8 bytes"));
                pages[first + i] = ptag & !low;
                enables[first + i] = (ptag & u64::from(MTT_READ | MTT_WRITE)) as u8;
            }
        }
        MkeyMap::Klm { entries: t } | MkeyMap::Ksm { entries: t, .. } => {
            if t.len() < end {
                t.resize(end, IndirectEntry::default());
            }
            for (i, e) in entries.chunks_exact(16).enumerate() {
                t[first + i] = IndirectEntry::from_bytes(e);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mlx5_ib's IB_WR_LOCAL_INV (wr.c `set_linv_wr`) for rkey 0x1234_5678: ds 8.
    fn linv() -> Vec<u8> {
        let mut w = vec![0u8; 128];
        w[0..4].copy_from_slice(&wqe::opmod_idx_opcode(0, 9, wqe::opcode::UMR).to_be_bytes());
        w[4..8].copy_from_slice(&wqe::qpn_ds(0x42, 8).to_be_bytes());
        w[11] = 0x08;
        w[12..16].copy_from_slice(&0x1234_5678u32.to_be_bytes());
        w[16] = UMR_INLINE;
        w[24..32].copy_from_slice(&MkeyMask::FREE.bits().to_be_bytes());
        w[64] = MKEY_STATUS_FREE;
        w
    }

    #[test]
    fn local_invalidate_decodes_as_mlx5_ib_posts_it() {
        let u = UmrWqe::decode(&linv()[..], 9).unwrap();
        assert_eq!(u.mkey, 0x1234_5678);
        assert_eq!(u.mask, MkeyMask::FREE);
        assert_eq!(u.xlt, Xlt::None);
        assert!(u.wqe.signaled);
        assert_eq!(u.seg.status() as u8, MKEY_STATUS_FREE);
    }

    #[test]
    fn short_or_overlong_umr_wqes_are_local_qp_operation_errors() {
        let mut w = linv();
        w[7] = 7;
        assert_eq!(
            UmrWqe::decode(&w[..], 0).unwrap_err().status,
            WcStatus::LocalQpOpErr
        );
        // Two octowords of inline entries in a WQE of ds 8.
        let mut w = linv();
        w[20..22].copy_from_slice(&2u16.to_be_bytes());
        assert_eq!(
            UmrWqe::decode(&w[..], 0).unwrap_err().status,
            WcStatus::LocalQpOpErr
        );
        // The same through a pointer: the data segment is read.
        w[7] = 9;
        w[16] = 0;
        w.resize(144, 0);
        w[128..132].copy_from_slice(&32u32.to_be_bytes());
        w[132..136].copy_from_slice(&0x300u32.to_be_bytes());
        w[136..144].copy_from_slice(&0x9000u64.to_be_bytes());
        let u = UmrWqe::decode(&w[..], 0).unwrap();
        assert_eq!(
            u.xlt,
            Xlt::Pointer(Sge {
                lkey: 0x300,
                addr: 0x9000,
                len: 32
            })
        );
    }
}
