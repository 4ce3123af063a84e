//! Receive side: a classified frame (parsed once, steered to a TIR and RQ by the caller) is
//! VLAN-stripped, scattered into the RQ WQE's data segments through memory keys, and
//! described by a receive CQE. A frame that does not fit, or a bad memory key, is an
//! [`RxFault`] carrying the PRM syndrome of its error CQE.

use std::fmt;

use cx4_hw::{
    cq::cqe::{syndrome, Cqe64},
    wqe::{self, WqeDataSeg},
};
use zerocopy::FromBytes;

use super::{
    cqe::{self, RxInfo},
    csum,
    dma::{Dma, DmaError, WqeReader},
    frame::{ethertype, Headers, VLAN_HLEN},
    rss::RssHash,
};

/// Largest receive WQE the model reads (`max_wqe_sz_rq`-sized strides are far below).
pub const MAX_RQ_WQE: usize = 4096;

/// One scatter entry of a receive WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxSeg {
    /// Memory key.
    pub lkey: u32,
    /// Address inside it.
    pub addr: u64,
    /// Bytes available (`byte_count` without [`wqe::HW_START_PADDING`]).
    pub len: u32,
}

/// The scatter list of a receive WQE of `stride` bytes (a cyclic RQ's WQE is an array of data
/// segments): up to the first segment with the terminating lkey; empty segments are skipped.
pub fn rq_wqe_segments<R: WqeReader + ?Sized>(
    wqe_reader: &R,
    stride: usize,
) -> Result<Vec<RxSeg>, DmaError> {
    let stride = stride.min(MAX_RQ_WQE);
    let mut buf = vec![0u8; stride];
    wqe_reader.read(0, &mut buf)?;
    let mut segs = Vec::new();
    for seg in buf.chunks_exact(WqeDataSeg::SIZE) {
        let Ok(d) = WqeDataSeg::ref_from_bytes(seg) else {
            break;
        };
        if d.lkey() == wqe::TERMINATE_SCATTER_LIST_LKEY {
            break;
        }
        let len = d.byte_count() & !wqe::HW_START_PADDING;
        if len != 0 {
            segs.push(RxSeg {
                lkey: d.lkey(),
                addr: d.addr(),
                len,
            });
        }
    }
    Ok(segs)
}

/// A frame the RQ cannot take: an error CQE on the RQ's CQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxFault {
    /// The frame is longer than the WQE's buffers.
    TooLong {
        /// Bytes to deliver.
        len: usize,
        /// Bytes the WQE offers.
        capacity: u64,
    },
    /// A scatter entry could not be written.
    Dma(DmaError),
}

impl RxFault {
    /// The error CQE's `syndrome`.
    pub fn syndrome(&self) -> u8 {
        match self {
            RxFault::TooLong { .. } => syndrome::LOCAL_LENGTH_ERR,
            RxFault::Dma(_) => syndrome::LOCAL_PROT_ERR,
        }
    }

    /// The error CQE's `vendor_err_synd` (the model's own, stable per cause).
    pub fn vendor_syndrome(&self) -> u8 {
        match self {
            RxFault::TooLong { .. } => 0x21,
            RxFault::Dma(DmaError::BadLkey { .. }) => 0x22,
            RxFault::Dma(DmaError::Protection { .. }) => 0x23,
            RxFault::Dma(DmaError::Fault { .. }) => 0x24,
        }
    }
}

impl fmt::Display for RxFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RxFault::TooLong { len, capacity } => {
                write!(f, "{len}-byte frame, {capacity} bytes of buffers")
            }
            RxFault::Dma(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RxFault {}

/// Receive offloads of the RQ and TIR that take the frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxOptions {
    /// Strip an outer 802.1Q tag into the CQE (RQ without `vsd`).
    pub strip_vlan: bool,
    /// Report tunnelled packets by their inner headers (TIR `tunneled_offload_en`).
    pub report_inner: bool,
    /// Flow tag of the steering entry.
    pub flow_tag: u32,
    /// The RQ's `user_index` (reported in the CQE).
    pub user_index: u32,
}

/// Whether delivery strips `frame`'s outer 802.1Q tag into the CQE.
fn strips(frame: &[u8], h: &Headers, opts: &RxOptions) -> bool {
    opts.strip_vlan
        && h.l2()
            .first_vlan()
            .is_some_and(|v| v.tpid == ethertype::VLAN && frame.len() >= 12 + VLAN_HLEN)
}

/// Bytes [`deliver`] writes for `frame`.
pub fn delivered_len(frame: &[u8], h: &Headers, opts: &RxOptions) -> usize {
    frame.len() - if strips(frame, h, opts) { VLAN_HLEN } else { 0 }
}

/// Delivers `frame` (parsed as `h` before stripping) into the buffers `segs` of the RQ WQE
/// `wqe_counter`, and returns its CQE. One copy: the frame goes straight from the wire buffer
/// to guest memory (the stripped tag is skipped, not moved).
pub fn deliver<D: Dma + ?Sized>(
    frame: &[u8],
    h: &Headers,
    rss: &RssHash,
    opts: &RxOptions,
    segs: &[RxSeg],
    wqe_counter: u16,
    dma: &D,
) -> Result<Cqe64, RxFault> {
    let l2 = h.l2();
    let strip = strips(frame, h, opts);
    let (vlan, pieces): (Option<u16>, [&[u8]; 2]) = if strip {
        (
            l2.first_vlan().map(|v| v.tci),
            [&frame[..12], &frame[12 + VLAN_HLEN..]],
        )
    } else {
        (None, [frame, &[]])
    };
    let len = pieces[0].len() + pieces[1].len();
    let capacity: u64 = segs.iter().map(|s| u64::from(s.len)).sum();
    if len as u64 > capacity {
        return Err(RxFault::TooLong { len, capacity });
    }
    scatter(&pieces, segs, dma).map_err(RxFault::Dma)?;
    let csum = csum::rx_checksum(frame, h, opts.report_inner);
    let info = RxInfo {
        byte_cnt: len as u32,
        vlan,
        flow_tag: opts.flow_tag,
        wqe_counter,
        user_index: opts.user_index,
    };
    Ok(cqe::rx_cqe(frame, h, &csum, rss, &info))
}

/// Writes `data` at byte `offset` of the buffer the scatter entries make (an LRO merge
/// appending a payload after what it wrote). Fails with [`RxFault::TooLong`] past their end.
pub fn scatter_at<D: Dma + ?Sized>(
    segs: &[RxSeg],
    offset: u64,
    data: &[u8],
    dma: &D,
) -> Result<(), RxFault> {
    let capacity: u64 = segs.iter().map(|s| u64::from(s.len)).sum();
    if offset + data.len() as u64 > capacity {
        return Err(RxFault::TooLong {
            len: (offset as usize) + data.len(),
            capacity,
        });
    }
    let (mut skip, mut data) = (offset, data);
    for s in segs {
        let len = u64::from(s.len);
        if skip >= len {
            skip -= len;
            continue;
        }
        let n = ((len - skip) as usize).min(data.len());
        dma.write(s.lkey, s.addr.wrapping_add(skip), &data[..n])
            .map_err(RxFault::Dma)?;
        data = &data[n..];
        skip = 0;
        if data.is_empty() {
            break;
        }
    }
    Ok(())
}

/// Writes the concatenation of `pieces` over the scatter entries in order.
fn scatter<D: Dma + ?Sized>(pieces: &[&[u8]], segs: &[RxSeg], dma: &D) -> Result<(), DmaError> {
    let mut segs = segs.iter();
    let mut cur: Option<(RxSeg, u64)> = None; // (segment, bytes used)
    for piece in pieces {
        let mut piece: &[u8] = piece;
        while !piece.is_empty() {
            let (seg, used) = match cur {
                Some((s, u)) if u < u64::from(s.len) => (s, u),
                _ => match segs.next() {
                    Some(s) => (*s, 0),
                    // The caller checked the capacity.
                    None => return Ok(()),
                },
            };
            let room = (u64::from(seg.len) - used) as usize;
            let n = room.min(piece.len());
            dma.write(seg.lkey, seg.addr.wrapping_add(used), &piece[..n])?;
            cur = Some((seg, used + n as u64));
            piece = &piece[n..];
        }
    }
    Ok(())
}
