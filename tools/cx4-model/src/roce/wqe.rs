//! Send WQEs of RC and UC queue pairs, as mlx5_ib and libmlx5 post them (`qp.h`): a control
//! segment, then by opcode a remote address segment (RDMA WRITE / READ, atomics) and an atomic
//! segment (atomics), then the gather list — data segments or one inline segment
//! (`byte_count | MLX5_INLINE_SEG`, the data right after the 4-byte header, padded to 16 bytes).
//!
//! [`SendWqe::decode`] reads one WQE through a [`WqeReader`] (which wraps around the ring) and
//! checks what the device checks before it starts the request: an opcode the service carries,
//! a size that fits the WQE's segment count, segments of the right kind. The local keys are
//! checked by the integrator against the QP's protection domain ([`SendWqe::check_keys`]).
//! Nothing here panics on guest bytes: every failure is a [`WqeError`] whose
//! [`WqeError::status`] is the completion status of the WQE.

use cx4_hw::wqe::{
    self, opcode,
    rdma::{WqeAtomicSeg, WqeRaddrSeg},
    WqeCtrlSeg, WqeDataSeg,
};
use zerocopy::FromBytes;

use std::sync::Arc;

use crate::eth::dma::{Dma, DmaError, WqeReader};

use super::segment::RequestOp;
use super::status::WcStatus;
use super::vector_calc_job::CalcJob;

/// One gather or scatter entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge {
    /// The local key.
    pub lkey: u32,
    /// Address inside the key.
    pub addr: u64,
    /// Bytes.
    pub len: u32,
}

impl From<crate::eth::rx::RxSeg> for Sge {
    /// A receive WQE's data segment (the layout RQs and SRQs share with Ethernet RQs).
    fn from(s: crate::eth::rx::RxSeg) -> Sge {
        Sge {
            lkey: s.lkey,
            addr: s.addr,
            len: s.len,
        }
    }
}

/// The local data of a send WQE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gather {
    /// Data segments, read through their local keys when a packet is built.
    List(Vec<Sge>),
    /// Inline data, copied out of the WQE.
    Inline(Vec<u8>),
    /// A vector calculation's result, computed from guest memory when it is needed
    /// (`vector_calc_job.rs`).
    Calc(Arc<CalcJob>),
}

/// A decoded send WQE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendWqe {
    /// The WQE's counter (the CQE's `wqe_counter`): its first basic block's producer index.
    pub index: u16,
    /// The WQE opcode (`MLX5_OPCODE_*`).
    pub opcode: u8,
    /// Basic blocks it occupies.
    pub bbs: u16,
    /// A CQE is requested on success.
    pub signaled: bool,
    /// The solicited-event bit of the message's last packet.
    pub solicited: bool,
    /// The fence flag.
    pub fence: bool,
    /// Immediate data (SEND/WRITE with immediate) or the R_Key to invalidate (SEND with
    /// invalidate), as the ctrl segment holds it.
    pub imm: u32,
    /// Remote address and key (RDMA WRITE / READ, atomics).
    pub remote: Option<(u64, u32)>,
    /// Swap value or addend, and compare value (atomics).
    pub atomic: Option<(u64, u64)>,
    /// The local data.
    pub gather: Gather,
    /// The remote XRC SRQ an XRC initiator's WQE names (its XRC segment; `xrc.rs`).
    pub xrc_srqn: Option<u32>,
}

/// Why a send WQE cannot be executed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WqeError {
    /// The WQE is not readable (its ring is not in guest memory).
    Unreadable(DmaError),
    /// An opcode the model or the service does not carry.
    BadOpcode(u8),
    /// The segment count does not hold the segments the opcode needs.
    BadSize {
        /// The ctrl segment's `ds`.
        ds: u8,
    },
    /// A gather entry or inline length beyond the WQE.
    BadSegment(String),
    /// A local key check failed.
    Key(DmaError),
}

impl WqeError {
    /// The completion status of the WQE.
    pub fn status(&self) -> WcStatus {
        match self {
            WqeError::Unreadable(_) | WqeError::BadOpcode(_) | WqeError::BadSize { .. } => {
                WcStatus::LocalQpOpErr
            }
            WqeError::BadSegment(_) => WcStatus::LocalLengthErr,
            WqeError::Key(_) => WcStatus::LocalProtErr,
        }
    }
}

impl std::fmt::Display for WqeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WqeError::Unreadable(e) => write!(f, "WQE unreadable: {e}"),
            WqeError::BadOpcode(o) => write!(f, "opcode {o:#x} not supported on this QP"),
            WqeError::BadSize { ds } => write!(f, "ds {ds} too small for the opcode"),
            WqeError::BadSegment(s) => write!(f, "bad segment: {s}"),
            WqeError::Key(e) => write!(f, "local key check: {e}"),
        }
    }
}

/// The transport operation of a WQE opcode, or `None` (NOP and unsupported opcodes).
pub fn request_op(opcode: u8) -> Option<RequestOp> {
    Some(match opcode {
        opcode::SEND => RequestOp::Send,
        opcode::SEND_IMM => RequestOp::SendImm,
        opcode::SEND_INVAL => RequestOp::SendInv,
        opcode::RDMA_WRITE => RequestOp::Write,
        opcode::RDMA_WRITE_IMM => RequestOp::WriteImm,
        opcode::RDMA_READ => RequestOp::Read,
        opcode::ATOMIC_CS => RequestOp::CompareSwap,
        opcode::ATOMIC_FA => RequestOp::FetchAdd,
        _ => return None,
    })
}

/// Reads a 16-byte segment at `at` of the WQE.
fn seg<R: WqeReader + ?Sized>(r: &R, at: usize) -> Result<[u8; 16], WqeError> {
    let mut b = [0u8; 16];
    r.read(at, &mut b).map_err(WqeError::Unreadable)?;
    Ok(b)
}

impl SendWqe {
    /// Reads the control segment only: (opcode, basic blocks), for flushing a WQE without
    /// decoding it.
    pub fn peek<R: WqeReader + ?Sized>(r: &R) -> Result<(u8, u16), WqeError> {
        let b = seg(r, 0)?;
        let c = WqeCtrlSeg::ref_from_bytes(&b[..]).map_err(|_| WqeError::BadSize { ds: 0 })?;
        let ds = c.ds() as usize;
        let bbs = ds.div_ceil(wqe::SEND_WQEBB_NUM_DS).max(1) as u16;
        Ok((c.opcode() as u8, bbs))
    }

    /// Decodes the control segment of the WQE whose first basic block has producer index
    /// `index`: the WQE with no remote, atomic or gather part yet, and its `ds`.
    pub fn ctrl<R: WqeReader + ?Sized>(r: &R, index: u16) -> Result<(SendWqe, u8), WqeError> {
        let b = seg(r, 0)?;
        let c = WqeCtrlSeg::ref_from_bytes(&b[..]).map_err(|_| WqeError::BadSize { ds: 0 })?;
        let ds = c.ds() as u8;
        let op = c.opcode() as u8;
        let fm_ce_se = c.fm_ce_se() as u8;
        let bbs = usize::from(ds)
            .div_ceil(wqe::SEND_WQEBB_NUM_DS)
            .clamp(1, wqe::SEND_WQE_MAX_WQEBBS) as u16;
        let w = SendWqe {
            index,
            opcode: op,
            bbs,
            signaled: fm_ce_se & wqe::fm_ce_se::CQ_UPDATE == wqe::fm_ce_se::CQ_UPDATE,
            solicited: fm_ce_se & wqe::fm_ce_se::SOLICITED != 0,
            fence: fm_ce_se & wqe::fm_ce_se::FENCE_MASK != 0,
            imm: c.imm(),
            remote: None,
            atomic: None,
            gather: Gather::List(Vec::new()),
            xrc_srqn: None,
        };
        if usize::from(ds) > wqe::SEND_WQE_MAX_SIZE / wqe::SEND_WQE_DS || ds == 0 {
            return Err(WqeError::BadSize { ds });
        }
        Ok((w, ds))
    }

    /// Decodes the WQE whose first basic block has producer index `index`.
    pub fn decode<R: WqeReader + ?Sized>(r: &R, index: u16) -> Result<SendWqe, WqeError> {
        let (w, ds) = SendWqe::ctrl(r, index)?;
        SendWqe::decode_segments(r, w, ds, wqe::SEND_WQE_DS)
    }

    /// Decodes the segments from byte `at` on (after the ctrl segment and any transport
    /// segment, such as XRC's) into `w`, whose ctrl segment said `ds`.
    pub fn decode_segments<R: WqeReader + ?Sized>(
        r: &R,
        mut w: SendWqe,
        ds: u8,
        mut at: usize,
    ) -> Result<SendWqe, WqeError> {
        let op = w.opcode;
        if op == opcode::NOP {
            return Ok(w);
        }
        let rop = request_op(op).ok_or(WqeError::BadOpcode(op))?;
        let end = usize::from(ds) * wqe::SEND_WQE_DS;
        let take = |at: &mut usize| -> Result<[u8; 16], WqeError> {
            if *at + 16 > end {
                return Err(WqeError::BadSize { ds });
            }
            let s = seg(r, *at)?;
            *at += 16;
            Ok(s)
        };
        if matches!(
            rop,
            RequestOp::Write
                | RequestOp::WriteImm
                | RequestOp::Read
                | RequestOp::CompareSwap
                | RequestOp::FetchAdd
        ) {
            let s = take(&mut at)?;
            let ra = WqeRaddrSeg::ref_from_bytes(&s[..]).map_err(|_| WqeError::BadSize { ds })?;
            w.remote = Some((ra.raddr(), ra.rkey()));
        }
        if matches!(rop, RequestOp::CompareSwap | RequestOp::FetchAdd) {
            let s = take(&mut at)?;
            let a = WqeAtomicSeg::ref_from_bytes(&s[..]).map_err(|_| WqeError::BadSize { ds })?;
            w.atomic = Some((a.swap_add(), a.compare()));
        }
        w.gather = gather_list(r, at, end)?;
        Ok(w)
    }

    /// The transport operation (`None` for a NOP).
    pub fn op(&self) -> Option<RequestOp> {
        request_op(self.opcode)
    }

    /// Total bytes of the local data.
    pub fn len(&self) -> u64 {
        match &self.gather {
            Gather::List(l) => l.iter().map(|s| u64::from(s.len)).sum(),
            Gather::Inline(d) => d.len() as u64,
            Gather::Calc(j) => j.calc().stream_len() as u64,
        }
    }

    /// Whether the WQE moves no local data.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks every gather entry through `dma`'s keys: readable for SEND/WRITE, writable for
    /// READ and atomics (their local buffer receives the data). Probing reads 0 bytes but the
    /// translation covers the whole range.
    pub fn check_keys(
        &self,
        xlate: &dyn Fn(u32, u64, u32, bool) -> Result<(), DmaError>,
    ) -> Result<(), WqeError> {
        let write = matches!(
            self.op(),
            Some(RequestOp::Read | RequestOp::CompareSwap | RequestOp::FetchAdd)
        );
        if let Gather::List(l) = &self.gather {
            for s in l {
                xlate(s.lkey, s.addr, s.len, write).map_err(WqeError::Key)?;
            }
        }
        Ok(())
    }

    /// Reads `out.len()` bytes of the local data from byte `offset`.
    pub fn gather(&self, dma: &dyn Dma, offset: u64, out: &mut [u8]) -> Result<(), DmaError> {
        let fault = DmaError::Fault {
            addr: offset,
            len: out.len() as u64,
        };
        let data = match &self.gather {
            Gather::Calc(j) => j.stream(dma.guest().ok_or(fault)?),
            Gather::Inline(d) => d,
            Gather::List(l) => {
                return sg_io(l, offset, out.len(), |s, at, range| {
                    dma.read(s.lkey, at, &mut out[range])
                })
            }
        };
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| data.get(o..o.checked_add(out.len())?))
            .ok_or(fault)?;
        out.copy_from_slice(src);
        Ok(())
    }

    /// [`SendWqe::gather`] of `len` bytes into a new buffer (inline data copied once, not
    /// zeroed first).
    pub fn gather_vec(&self, dma: &dyn Dma, offset: u64, len: usize) -> Result<Vec<u8>, DmaError> {
        if let Gather::Inline(d) = &self.gather {
            let at = usize::try_from(offset).ok();
            if let Some(src) = at.and_then(|o| d.get(o..o.checked_add(len)?)) {
                return Ok(src.to_vec());
            }
        }
        let mut out = vec![0u8; len];
        self.gather(dma, offset, &mut out)?;
        Ok(out)
    }

    /// Writes `data` into the local buffers from byte `offset` (READ responses, atomic
    /// results).
    pub fn scatter(&self, dma: &dyn Dma, offset: u64, data: &[u8]) -> Result<(), DmaError> {
        match &self.gather {
            Gather::Inline(_) | Gather::Calc(_) => Err(DmaError::Fault {
                addr: offset,
                len: data.len() as u64,
            }),
            Gather::List(l) => sg_io(l, offset, data.len(), |s, at, range| {
                dma.write(s.lkey, at, &data[range])
            }),
        }
    }
}

/// Walks the byte range `offset..offset + len` of a scatter/gather list, calling `f` with
/// the entry, the address in its key and the range of the caller's buffer for each piece.
pub fn sg_io(
    list: &[Sge],
    offset: u64,
    len: usize,
    mut f: impl FnMut(&Sge, u64, std::ops::Range<usize>) -> Result<(), DmaError>,
) -> Result<(), DmaError> {
    let mut skip = offset;
    let mut done = 0usize;
    for s in list {
        if done == len {
            break;
        }
        let sl = u64::from(s.len);
        if skip >= sl {
            skip -= sl;
            continue;
        }
        let n = ((sl - skip) as usize).min(len - done);
        f(s, s.addr.wrapping_add(skip), done..done + n)?;
        done += n;
        skip = 0;
    }
    if done < len {
        return Err(DmaError::Fault {
            addr: offset,
            len: len as u64,
        });
    }
    Ok(())
}

/// The gather list from byte `at` to `end` of the WQE: data segments, or one inline segment.
pub(super) fn gather_list<R: WqeReader + ?Sized>(
    r: &R,
    at: usize,
    end: usize,
) -> Result<Gather, WqeError> {
    if at >= end {
        return Ok(Gather::List(Vec::new()));
    }
    let mut hdr = [0u8; 4];
    r.read(at, &mut hdr).map_err(WqeError::Unreadable)?;
    let bc = u32::from_be_bytes(hdr);
    if bc & wqe::INLINE_SEG != 0 {
        let n = (bc & !wqe::INLINE_SEG) as usize;
        if at + 4 + n > end {
            return Err(WqeError::BadSegment(format!(
                "inline data of {n} bytes beyond the WQE's {end} bytes"
            )));
        }
        let mut d = vec![0u8; n];
        r.read(at + 4, &mut d).map_err(WqeError::Unreadable)?;
        return Ok(Gather::Inline(d));
    }
    let mut list = Vec::new();
    let mut at = at;
    while at + 16 <= end {
        let s = seg(r, at)?;
        at += 16;
        let d = WqeDataSeg::ref_from_bytes(&s[..]).map_err(|_| WqeError::BadSize { ds: 0 })?;
        let len = d.byte_count();
        if len & wqe::INLINE_SEG != 0 {
            return Err(WqeError::BadSegment(
                "inline segment after data segments".into(),
            ));
        }
        if len != 0 {
            list.push(Sge {
                lkey: d.lkey(),
                addr: d.addr(),
                len,
            });
        }
    }
    Ok(Gather::List(list))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctrl(op: u8, idx: u16, ds: u8, fm_ce_se: u8, imm: u32) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&wqe::opmod_idx_opcode(0, idx, op).to_be_bytes());
        b[4..8].copy_from_slice(&wqe::qpn_ds(0x42, ds).to_be_bytes());
        b[11] = fm_ce_se;
        b[12..16].copy_from_slice(&imm.to_be_bytes());
        b
    }

    fn data(len: u32, lkey: u32, addr: u64) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&len.to_be_bytes());
        b[4..8].copy_from_slice(&lkey.to_be_bytes());
        b[8..16].copy_from_slice(&addr.to_be_bytes());
        b
    }

    #[test]
    fn rdma_write_with_two_data_segments_decodes() {
        let mut w = Vec::new();
        w.extend(ctrl(opcode::RDMA_WRITE_IMM, 7, 4, 0x08 | 0x02, 0xdead_beef));
        let mut ra = [0u8; 16];
        ra[0..8].copy_from_slice(&0x1000u64.to_be_bytes());
        ra[8..12].copy_from_slice(&0x55u32.to_be_bytes());
        w.extend(ra);
        w.extend(data(100, 1, 0x2000));
        w.extend(data(28, 2, 0x3000));
        let d = SendWqe::decode(&w[..], 7).unwrap();
        assert_eq!(d.op(), Some(RequestOp::WriteImm));
        assert!(d.signaled && d.solicited && !d.fence);
        assert_eq!(d.imm, 0xdead_beef);
        assert_eq!(d.remote, Some((0x1000, 0x55)));
        assert_eq!(d.len(), 128);
        assert_eq!(d.bbs, 1);
    }

    #[test]
    fn inline_send_and_bad_wqes() {
        let mut w = Vec::new();
        w.extend(ctrl(opcode::SEND, 0, 2, 0, 0));
        w.extend((5u32 | wqe::INLINE_SEG).to_be_bytes());
        w.extend(b"hello");
        w.resize(32, 0);
        let d = SendWqe::decode(&w[..], 0).unwrap();
        assert_eq!(d.gather, Gather::Inline(b"hello".to_vec()));
        // Inline data beyond ds.
        w[16..20].copy_from_slice(&(40u32 | wqe::INLINE_SEG).to_be_bytes());
        assert!(matches!(
            SendWqe::decode(&w[..], 0),
            Err(WqeError::BadSegment(_))
        ));
        // An RDMA WRITE without room for its raddr segment.
        let w = ctrl(opcode::RDMA_WRITE, 0, 1, 0, 0);
        assert_eq!(
            SendWqe::decode(&w[..], 0).unwrap_err().status(),
            WcStatus::LocalQpOpErr
        );
        let w = ctrl(0x25, 0, 1, 0, 0);
        assert_eq!(SendWqe::decode(&w[..], 0), Err(WqeError::BadOpcode(0x25)));
    }

    #[test]
    fn scatter_gather_walks_entries_at_an_offset() {
        let l = [
            Sge {
                lkey: 1,
                addr: 100,
                len: 10,
            },
            Sge {
                lkey: 2,
                addr: 200,
                len: 10,
            },
        ];
        let mut seen = Vec::new();
        sg_io(&l, 5, 10, |s, at, r| {
            seen.push((s.lkey, at, r));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, vec![(1, 105, 0..5), (2, 200, 5..10)]);
        assert!(sg_io(&l, 15, 10, |_, _, _| Ok(())).is_err());
    }
}
