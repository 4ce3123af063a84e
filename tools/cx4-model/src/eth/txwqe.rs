//! Send WQEs of an Ethernet SQ: the control segment, the Ethernet segment with its inline
//! headers (or VLAN insertion), data segments gathered through memory keys and inline data
//! segments; then checksum offload (`SEND`) or segmentation (`LSO`). A bad WQE is a
//! [`TxFault`] carrying the PRM syndrome of its error CQE; nothing in a WQE can make the
//! engine panic or allocate more than the configured frame limits.

use std::fmt;

use cx4_hw::{
    cq::cqe::syndrome,
    wqe::{self, fm_ce_se, opcode, CsFlags, SwpFlags, WqeCtrlSeg, WqeEthSeg},
};
use zerocopy::FromBytes;

use super::{
    csum,
    dma::{Dma, DmaError, WqeReader},
    frame::{self, Headers, ParseConfig, ParseError, Swp, ETH_HLEN, ETH_ZLEN},
    gso,
    lso::{self, LsoError, Segment},
};

/// The control segment of a send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ctrl {
    /// WQE opcode ([`opcode`]).
    pub opcode: u8,
    /// Opcode modifier.
    pub opmod: u8,
    /// The WQE's producer counter (reported as the CQE's `wqe_counter`).
    pub wqe_index: u16,
    /// The SQ number the driver wrote.
    pub qpn: u32,
    /// Number of 16-byte segments.
    pub ds: u8,
    /// Fence, completion and solicited bits.
    pub fm_ce_se: u8,
    /// Immediate / TIS number dword.
    pub imm: u32,
}

impl Ctrl {
    /// Reads the control segment at the start of a WQE.
    pub fn read<R: WqeReader + ?Sized>(wqe: &R) -> Result<Ctrl, TxFault> {
        let mut b = [0u8; wqe::SEND_WQE_DS];
        wqe.read(0, &mut b).map_err(TxFault::Dma)?;
        Ok(Ctrl::parse(&b))
    }

    /// Decodes a control segment.
    pub fn parse(bytes: &[u8; wqe::SEND_WQE_DS]) -> Ctrl {
        let c = WqeCtrlSeg::ref_from_bytes(&bytes[..]).unwrap_or(&ZERO_CTRL);
        Ctrl {
            opcode: c.opcode() as u8,
            opmod: c.opmod() as u8,
            wqe_index: c.wqe_index() as u16,
            qpn: c.qpn(),
            ds: c.ds() as u8,
            fm_ce_se: c.fm_ce_se() as u8,
            imm: c.imm(),
        }
    }

    /// Basic blocks the WQE occupies (at least one): the distance to the next WQE.
    pub fn wqebbs(&self) -> u16 {
        (usize::from(self.ds).div_ceil(wqe::SEND_WQEBB_NUM_DS)).max(1) as u16
    }

    /// Whether the driver asked for a CQE on success (`MLX5_WQE_CTRL_CQ_UPDATE`).
    pub fn cqe_requested(&self) -> bool {
        self.fm_ce_se & fm_ce_se::CQ_UPDATE == fm_ce_se::CQ_UPDATE
    }

    /// Whether the completion is solicited.
    pub fn solicited(&self) -> bool {
        self.fm_ce_se & fm_ce_se::SOLICITED != 0
    }
}

static ZERO_CTRL: WqeCtrlSeg = WqeCtrlSeg::new();

/// What an SQ may send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxConfig {
    /// Tunnels the card's parser recognises (length fields are never trusted on send).
    pub parse: ParseConfig,
    /// Largest frame a `SEND` may produce and largest LSO segment, without FCS (port MTU plus
    /// Ethernet header and two VLAN tags).
    pub max_frame: usize,
    /// Largest LSO superframe (`1 << max_lso_cap`).
    pub max_lso: usize,
    /// The wire carries TCP superframes: LSO output that can go as one is not segmented
    /// ([`Output::Superframe`]).
    pub superframes: bool,
}

impl Default for TxConfig {
    fn default() -> Self {
        TxConfig {
            parse: ParseConfig::default(),
            max_frame: 9000 + ETH_HLEN + 8,
            max_lso: 1 << 16,
            superframes: false,
        }
    }
}

/// A WQE the card refuses: the SQ goes to error with an error CQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxFault {
    /// An opcode an Ethernet SQ does not execute.
    BadOpcode(u8),
    /// `ds` too small for the opcode's mandatory segments.
    ShortWqe {
        /// The WQE's `ds`.
        ds: u8,
    },
    /// The inline headers run past the WQE.
    InlineHeader {
        /// `inline_hdr_sz`.
        size: usize,
    },
    /// An inline data segment runs past the WQE.
    InlineData {
        /// Its length.
        size: usize,
    },
    /// The frame (or gather list) is longer than allowed.
    TooLong {
        /// Its length.
        len: u64,
        /// The limit.
        max: usize,
    },
    /// The frame is shorter than an Ethernet header.
    TooShort {
        /// Its length.
        len: usize,
    },
    /// Segmentation impossible (MSS 0, no TCP/UDP header, too many segments).
    Lso(LsoError),
    /// The LSO superframe's headers do not parse.
    LsoParse(ParseError),
    /// A gather entry or the WQE itself could not be read.
    Dma(DmaError),
}

impl TxFault {
    /// The error CQE's `syndrome` (`MLX5_CQE_SYNDROME_*`).
    pub fn syndrome(&self) -> u8 {
        match self {
            TxFault::BadOpcode(_)
            | TxFault::ShortWqe { .. }
            | TxFault::Lso(_)
            | TxFault::LsoParse(_) => syndrome::LOCAL_QP_OP_ERR,
            TxFault::InlineHeader { .. }
            | TxFault::InlineData { .. }
            | TxFault::TooLong { .. }
            | TxFault::TooShort { .. } => syndrome::LOCAL_LENGTH_ERR,
            TxFault::Dma(_) => syndrome::LOCAL_PROT_ERR,
        }
    }

    /// The error CQE's `vendor_err_synd`: the model's own, stable per cause (listed in
    /// Documentation/model.md).
    pub fn vendor_syndrome(&self) -> u8 {
        match self {
            TxFault::BadOpcode(_) => 0x01,
            TxFault::ShortWqe { .. } => 0x02,
            TxFault::InlineHeader { .. } => 0x03,
            TxFault::InlineData { .. } => 0x04,
            TxFault::TooLong { .. } => 0x05,
            TxFault::TooShort { .. } => 0x06,
            TxFault::Lso(LsoError::ZeroMss) => 0x07,
            TxFault::Lso(LsoError::NotTcpUdp) | TxFault::LsoParse(_) => 0x08,
            TxFault::Lso(LsoError::TooManySegments) => 0x09,
            TxFault::Dma(DmaError::BadLkey { .. }) => 0x0a,
            TxFault::Dma(DmaError::Protection { .. }) => 0x0b,
            TxFault::Dma(DmaError::Fault { .. }) => 0x0c,
        }
    }
}

impl fmt::Display for TxFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxFault::BadOpcode(op) => write!(
                f,
                "opcode {op:#x} ({}) not executed on an Ethernet SQ",
                opcode::wqe_opcode_name(*op)
            ),
            TxFault::ShortWqe { ds } => write!(f, "ds {ds} too small"),
            TxFault::InlineHeader { size } => {
                write!(f, "inline header of {size} bytes runs past the WQE")
            }
            TxFault::InlineData { size } => {
                write!(f, "inline data segment of {size} bytes runs past the WQE")
            }
            TxFault::TooLong { len, max } => write!(f, "{len} bytes, more than {max}"),
            TxFault::TooShort { len } => write!(f, "frame of {len} bytes"),
            TxFault::Lso(e) => write!(f, "{e}"),
            TxFault::LsoParse(e) => write!(f, "LSO headers: {e}"),
            TxFault::Dma(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TxFault {}

/// What an executed WQE puts on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Nothing (NOP).
    Nothing,
    /// One frame, padded to [`ETH_ZLEN`].
    Frame(Vec<u8>),
    /// LSO segments over the gathered superframe.
    Segments {
        /// The superframe the segments' payload ranges index.
        superframe: Vec<u8>,
        /// The segments, in order.
        segments: Vec<Segment>,
        /// The same segments as one host superframe, when the host can carry them so
        /// ([`gso::superframe`]; the wire decides whether it can).
        gso: Option<gso::Superframe>,
    },
    /// LSO output for a wire that carries superframes, not segmented: [`Output::for_each`]
    /// cuts it only if the wire refuses it after all.
    Superframe {
        /// The gathered superframe.
        frame: Vec<u8>,
        /// Its headers.
        h: Box<Headers>,
        /// The checksum flags of the WQE.
        flags: CsFlags,
        /// The superframe form.
        sf: gso::Superframe,
    },
}

impl Output {
    /// Calls `f` with each frame as (headers, payload, zero padding length); for a plain frame
    /// the headers are the whole frame. Lets the wire write each frame with one gather write.
    pub fn for_each(&self, mut f: impl FnMut(&[u8], &[u8], usize)) {
        match self {
            Output::Nothing => {}
            Output::Frame(fr) => f(fr, &[], 0),
            Output::Segments {
                superframe,
                segments,
                ..
            } => {
                for s in segments {
                    f(
                        &s.header,
                        &superframe[s.payload.clone()],
                        ETH_ZLEN.saturating_sub(s.len()),
                    )
                }
            }
            Output::Superframe {
                frame,
                h,
                flags,
                sf,
            } => {
                // The checks `gso::superframe` made are the ones segmenting needs.
                for s in lso::segment(frame, h, sf.mss, *flags).unwrap_or_default() {
                    f(
                        &s.header,
                        &frame[s.payload.clone()],
                        ETH_ZLEN.saturating_sub(s.len()),
                    )
                }
            }
        }
    }

    /// Calls `f` with the destination MAC and length of each frame, without building the
    /// segments of an [`Output::Superframe`].
    pub fn for_each_len(&self, mut f: impl FnMut([u8; 6], usize)) {
        match self {
            Output::Superframe { frame, sf, .. } => {
                let mut dmac = [0u8; 6];
                dmac.copy_from_slice(&frame[..6]);
                let payload = frame.len() - sf.hdr_len;
                for i in 0..payload.div_ceil(sf.mss) {
                    f(dmac, sf.hdr_len + sf.mss.min(payload - i * sf.mss));
                }
            }
            _ => self.for_each(|hdr, payload, pad| {
                let mut dmac = [0u8; 6];
                if hdr.len() >= 6 {
                    dmac.copy_from_slice(&hdr[..6]);
                }
                f(dmac, hdr.len() + payload.len() + pad)
            }),
        }
    }

    /// Every frame as one contiguous buffer, padded (tests and slow paths).
    pub fn frames(&self) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        self.for_each(|h, p, pad| {
            let mut fr = Vec::with_capacity(h.len() + p.len() + pad);
            fr.extend_from_slice(h);
            fr.extend_from_slice(p);
            fr.resize(fr.len() + pad, 0);
            v.push(fr);
        });
        v
    }

    /// Number of frames.
    pub fn count(&self) -> usize {
        match self {
            Output::Nothing => 0,
            Output::Frame(_) => 1,
            Output::Segments { segments, .. } => segments.len(),
            Output::Superframe { frame, sf, .. } => (frame.len() - sf.hdr_len).div_ceil(sf.mss),
        }
    }
}

/// The result of an executed WQE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    /// The frames.
    pub output: Output,
    /// Checksum requests carried out (`SEND`), or the WQE's flags (`LSO`).
    pub csum_done: CsFlags,
    /// Checksum requests of the WQE.
    pub csum_requested: CsFlags,
    /// Why the headers of a `SEND` frame with checksum requests did not parse (the frame is
    /// sent unchanged, as the card would).
    pub parse_error: Option<ParseError>,
    /// Bytes gathered (inline and data segments), the frame before segmentation.
    pub gathered: usize,
}

/// Software parser offsets of an Ethernet segment.
fn swp_of(eth: &WqeEthSeg) -> Swp {
    let flags = SwpFlags::from_bits_truncate(eth.swp_flags() as u8);
    Swp {
        outer_l3: eth.swp_outer_l3_offset() as usize * 2,
        outer_l4: eth.swp_outer_l4_offset() as usize * 2,
        inner_l3: eth.swp_inner_l3_offset() as usize * 2,
        inner_l4: eth.swp_inner_l4_offset() as usize * 2,
        outer_ipv6: flags.contains(SwpFlags::OUTER_L3_IPV6),
        outer_udp: flags.contains(SwpFlags::OUTER_L4_UDP),
        inner_ipv6: flags.contains(SwpFlags::INNER_L3_IPV6),
        inner_udp: flags.contains(SwpFlags::INNER_L4_UDP),
    }
}

/// One entry of the gather list.
enum Piece {
    /// Inline bytes at this range of the WQE.
    Inline(std::ops::Range<usize>),
    /// A data segment.
    Data { lkey: u32, addr: u64, len: usize },
}

/// Executes the send WQE `ctrl` heads (read through `wqe`), gathering through `dma`.
pub fn execute<R, D>(ctrl: &Ctrl, wqe: &R, dma: &D, cfg: &TxConfig) -> Result<Sent, TxFault>
where
    R: WqeReader + ?Sized,
    D: Dma + ?Sized,
{
    match ctrl.opcode {
        opcode::NOP => {
            return Ok(Sent {
                output: Output::Nothing,
                csum_done: CsFlags::empty(),
                csum_requested: CsFlags::empty(),
                parse_error: None,
                gathered: 0,
            })
        }
        opcode::SEND | opcode::LSO => {}
        op => return Err(TxFault::BadOpcode(op)),
    }
    let ds = usize::from(ctrl.ds);
    if ds < 2 {
        return Err(TxFault::ShortWqe { ds: ctrl.ds });
    }
    let wqe_len = ds * wqe::SEND_WQE_DS;
    let mut buf = [0u8; 64 * wqe::SEND_WQE_DS];
    let buf = &mut buf[..wqe_len];
    wqe.read(0, buf).map_err(TxFault::Dma)?;
    let eth_at = wqe::SEND_WQE_DS;
    let eth =
        WqeEthSeg::ref_from_bytes(&buf[eth_at..eth_at + WqeEthSeg::SIZE]).unwrap_or(&ZERO_ETH);
    let flags = CsFlags::from_bits_truncate(eth.cs_flags() as u8);
    let mss = eth.mss() as usize;
    let swp = swp_of(eth);
    let sz = eth.inline_hdr_sz();
    let (inline_len, vlan_tci) = if sz & wqe::INSERT_VLAN != 0 {
        let s = eth.inline_hdr_start();
        (0, Some(u16::from_be_bytes([s[0], s[1]])))
    } else {
        (sz as usize, None)
    };

    // The inline headers start in the Ethernet segment's last two bytes and continue over the
    // following segments; data segments follow the last one they touch.
    let inline_at = eth_at + 14;
    if inline_at + inline_len > wqe_len {
        return Err(TxFault::InlineHeader { size: inline_len });
    }
    let mut pieces = vec![Piece::Inline(inline_at..inline_at + inline_len)];
    let mut total = inline_len as u64;
    let mut at = eth_at
        + WqeEthSeg::SIZE
        + inline_len.saturating_sub(2).div_ceil(wqe::SEND_WQE_DS) * wqe::SEND_WQE_DS;
    let limit = if ctrl.opcode == opcode::LSO {
        cfg.max_lso.max(cfg.max_frame)
    } else {
        cfg.max_frame
    };
    while at + wqe::SEND_WQE_DS <= wqe_len {
        let seg = &buf[at..at + wqe::SEND_WQE_DS];
        let bc = u32::from_be_bytes([seg[0], seg[1], seg[2], seg[3]]);
        if bc & wqe::INLINE_SEG != 0 {
            let len = (bc & wqe::INLINE_SEG_BYTE_COUNT_MASK) as usize;
            if at + 4 + len > wqe_len {
                return Err(TxFault::InlineData { size: len });
            }
            pieces.push(Piece::Inline(at + 4..at + 4 + len));
            total += len as u64;
            at += (4 + len).div_ceil(wqe::SEND_WQE_DS).max(1) * wqe::SEND_WQE_DS;
        } else {
            let d = wqe::WqeDataSeg::ref_from_bytes(seg).unwrap_or(&ZERO_DATA);
            if bc != 0 {
                pieces.push(Piece::Data {
                    lkey: d.lkey(),
                    addr: d.addr(),
                    len: bc as usize,
                });
                total += u64::from(bc);
            }
            at += wqe::SEND_WQE_DS;
        }
        if total > limit as u64 {
            return Err(TxFault::TooLong {
                len: total,
                max: limit,
            });
        }
    }

    // Gather: one copy from guest memory into the frame.
    let mut frame = vec![0u8; total as usize];
    let mut cur = 0;
    for p in &pieces {
        match *p {
            Piece::Inline(ref r) => {
                frame[cur..cur + r.len()].copy_from_slice(&buf[r.clone()]);
                cur += r.len();
            }
            Piece::Data { lkey, addr, len } => {
                dma.read(lkey, addr, &mut frame[cur..cur + len])
                    .map_err(TxFault::Dma)?;
                cur += len;
            }
        }
    }
    if frame.len() < ETH_HLEN {
        return Err(TxFault::TooShort { len: frame.len() });
    }
    if let Some(tci) = vlan_tci {
        let tci = tci.to_be_bytes();
        frame.splice(12..12, [0x81, 0x00, tci[0], tci[1]]);
    }
    let gathered = frame.len();

    let parsed = if swp.is_set() {
        frame::parse_swp(&frame, &swp)
    } else {
        frame::parse(&frame, &cfg.parse.for_tx())
    };
    if ctrl.opcode == opcode::LSO {
        let h = parsed.map_err(TxFault::LsoParse)?;
        if let Some(sf) = cfg
            .superframes
            .then(|| gso::superframe(&frame, &h, mss))
            .flatten()
        {
            if sf.hdr_len + mss > cfg.max_frame {
                return Err(TxFault::TooLong {
                    len: (sf.hdr_len + mss) as u64,
                    max: cfg.max_frame,
                });
            }
            return Ok(Sent {
                output: Output::Superframe {
                    frame,
                    h: Box::new(h),
                    flags,
                    sf,
                },
                csum_done: flags,
                csum_requested: flags,
                parse_error: None,
                gathered,
            });
        }
        let segments = lso::segment(&frame, &h, mss, flags).map_err(TxFault::Lso)?;
        if let Some(first) = segments.first() {
            if first.len() > cfg.max_frame {
                return Err(TxFault::TooLong {
                    len: first.len() as u64,
                    max: cfg.max_frame,
                });
            }
        }
        let gso = gso::superframe(&frame, &h, mss);
        return Ok(Sent {
            output: Output::Segments {
                superframe: frame,
                segments,
                gso,
            },
            csum_done: flags,
            csum_requested: flags,
            parse_error: None,
            gathered,
        });
    }
    if frame.len() > cfg.max_frame {
        return Err(TxFault::TooLong {
            len: frame.len() as u64,
            max: cfg.max_frame,
        });
    }
    let (csum_done, parse_error) = match parsed {
        Ok(h) => (csum::offload_tx(&mut frame, &h, flags), None),
        Err(e) => (CsFlags::empty(), Some(e)),
    };
    if frame.len() < ETH_ZLEN {
        frame.resize(ETH_ZLEN, 0);
    }
    Ok(Sent {
        output: Output::Frame(frame),
        csum_done,
        csum_requested: flags,
        parse_error,
        gathered,
    })
}

static ZERO_ETH: WqeEthSeg = WqeEthSeg::new();
static ZERO_DATA: wqe::WqeDataSeg = wqe::WqeDataSeg::new();
