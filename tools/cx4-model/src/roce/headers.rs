//! The InfiniBand transport headers a RoCE packet carries after its UDP header or GRH (IBTA vol 1
//! ch. 9 and Annex A17): the base transport header [`Bth`], the extension headers [`Reth`],
//! [`Aeth`], [`AtomicEth`], [`AtomicAckEth`], [`ImmDt`], [`Ieth`], [`Deth`] and [`Xrceth`], and the
//! opcode table ([`Opcode`], [`OpcodeInfo`]) that says which extension headers follow each
//! opcode, in which order, and whether a payload follows them.
//!
//! All fields are big-endian on the wire. Every `decode` reads the first bytes of its input
//! and fails with [`WireError::Truncated`] when there are too few; every `encode` writes the
//! first bytes of its output and fails with [`WireError::BufferTooSmall`], or with
//! [`WireError::FieldRange`] for a value wider than its field. Reserved bits are sent as 0
//! and ignored on receipt.
//!
//! The opcode values and header layouts agree with the Linux soft-RoCE driver (rxe:
//! `rxe_opcode.c`, `rxe_hdr.h`) and `include/rdma/ib_pack.h`; a test holds our table against
//! a transcription of rxe's. RD opcodes, and the IBTA 1.5 FLUSH and ATOMIC_WRITE opcodes, are
//! not implemented by the ConnectX-4 and decode as [`WireError::UnknownOpcode`]. Mainline rxe
//! has no XRC; the XRC rows (IBTA vol 1 Annex A14: RC's operations at 0xa0 + the RC value,
//! requests with an XRCETH right after the BTH, responses without) are held against the
//! table of rxe's XRC patch series in `xrc_wire_tests.rs`.

use super::error::WireError;

/// Length of the base transport header.
pub const BTH_LEN: usize = 12;
/// Length of the RDMA extended transport header.
pub const RETH_LEN: usize = 16;
/// Length of the ACK extended transport header.
pub const AETH_LEN: usize = 4;
/// Length of the atomic extended transport header.
pub const ATOMIC_ETH_LEN: usize = 28;
/// Length of the atomic acknowledge extended transport header.
pub const ATOMIC_ACK_ETH_LEN: usize = 8;
/// Length of the immediate data extended transport header.
pub const IMMDT_LEN: usize = 4;
/// Length of the invalidate extended transport header.
pub const IETH_LEN: usize = 4;
/// Length of the datagram extended transport header.
pub const DETH_LEN: usize = 8;
/// Length of the XRC extended transport header.
pub const XRCETH_LEN: usize = 4;
/// Length of the reserved block after a CNP's BTH (Annex A17.9.3).
pub const CNP_RESERVED_LEN: usize = 16;
/// Length of the model's DC extended transport header ([`Dceth`]; our encoding, `dc.rs`).
pub const DCETH_LEN: usize = 16;

/// The default (full-membership) partition key.
pub const DEFAULT_PKEY: u16 = 0xffff;
/// The largest 24-bit value: QPNs, PSNs, MSNs.
pub const MASK_24: u32 = 0x00ff_ffff;

/// The first `N` bytes of `buf`, or a truncation error naming `what`.
fn input<const N: usize>(buf: &[u8], what: &'static str) -> Result<[u8; N], WireError> {
    buf.get(..N)
        .and_then(|s| <[u8; N]>::try_from(s).ok())
        .ok_or(WireError::Truncated {
            what,
            need: N,
            have: buf.len(),
        })
}

/// Writes `bytes` at the start of `buf`, or fails naming `what`.
fn output(buf: &mut [u8], bytes: &[u8], what: &'static str) -> Result<(), WireError> {
    let have = buf.len();
    let dst = buf
        .get_mut(..bytes.len())
        .ok_or(WireError::BufferTooSmall {
            what,
            need: bytes.len(),
            have,
        })?;
    dst.copy_from_slice(bytes);
    Ok(())
}

/// `value` if it fits in `bits` bits, else a range error naming `field`.
pub(crate) fn fits(field: &'static str, value: u64, bits: u32) -> Result<u64, WireError> {
    let max = (1u64 << bits) - 1;
    if value > max {
        Err(WireError::FieldRange { field, value, max })
    } else {
        Ok(value)
    }
}

fn be24(b: &[u8; 3]) -> u32 {
    u32::from_be_bytes([0, b[0], b[1], b[2]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        w.copy_from_slice(s);
    }
    u32::from_be_bytes(w)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        w.copy_from_slice(s);
    }
    u64::from_be_bytes(w)
}

/// The transport service an opcode belongs to (the top three bits of the opcode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Service {
    /// Reliable connection (0x00–0x1f).
    Rc,
    /// Unreliable connection (0x20–0x3f).
    Uc,
    /// Unreliable datagram (0x60–0x7f).
    Ud,
    /// Congestion notification (0x80–0x9f; RoCEv2 Annex A17.9).
    Cnp,
    /// Extended reliable connection (0xa0–0xbf; IBTA vol 1 Annex A14).
    Xrc,
    /// Dynamically connected (0xc0–0xdf, the manufacturer-specific range: the model's own
    /// encoding of DC, which no published specification gives; `dc.rs`).
    Dc,
}

/// An extension header that can follow the BTH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ext {
    /// Datagram extended transport header ([`Deth`]).
    Deth,
    /// RDMA extended transport header ([`Reth`]).
    Reth,
    /// Atomic extended transport header ([`AtomicEth`]).
    AtomicEth,
    /// ACK extended transport header ([`Aeth`]).
    Aeth,
    /// Atomic acknowledge extended transport header ([`AtomicAckEth`]).
    AtomicAckEth,
    /// Immediate data ([`ImmDt`]).
    ImmDt,
    /// Invalidate extended transport header ([`Ieth`]).
    Ieth,
    /// XRC extended transport header ([`Xrceth`]).
    Xrceth,
    /// The 16 reserved bytes of a CNP, sent as zeros.
    CnpReserved,
    /// The model's DC extended transport header ([`Dceth`]).
    Dceth,
}

impl Ext {
    /// Length on the wire.
    pub const fn wire_len(self) -> usize {
        match self {
            Ext::Deth => DETH_LEN,
            Ext::Reth => RETH_LEN,
            Ext::AtomicEth => ATOMIC_ETH_LEN,
            Ext::Aeth => AETH_LEN,
            Ext::AtomicAckEth => ATOMIC_ACK_ETH_LEN,
            Ext::ImmDt => IMMDT_LEN,
            Ext::Ieth => IETH_LEN,
            Ext::Xrceth => XRCETH_LEN,
            Ext::CnpReserved => CNP_RESERVED_LEN,
            Ext::Dceth => DCETH_LEN,
        }
    }

    /// The header's name in the IBTA specification.
    pub const fn name(self) -> &'static str {
        match self {
            Ext::Deth => "DETH",
            Ext::Reth => "RETH",
            Ext::AtomicEth => "AtomicETH",
            Ext::Aeth => "AETH",
            Ext::AtomicAckEth => "AtomicAckETH",
            Ext::ImmDt => "ImmDt",
            Ext::Ieth => "IETH",
            Ext::Xrceth => "XRCETH",
            Ext::CnpReserved => "CNP reserved bytes",
            Ext::Dceth => "DCETH",
        }
    }
}

/// What the opcode table says about one opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpcodeInfo {
    /// The IBTA name with its service prefix, e.g. `RC_SEND_ONLY`.
    pub name: &'static str,
    /// The transport service.
    pub service: Service,
    /// The extension headers after the BTH, in wire order.
    pub headers: &'static [Ext],
    /// Whether a payload (possibly empty) follows the extension headers.
    pub payload: bool,
}

impl OpcodeInfo {
    /// Length of the extension headers.
    pub fn ext_len(&self) -> usize {
        self.headers.iter().map(|e| e.wire_len()).sum()
    }

    /// Length of the BTH and the extension headers.
    pub fn header_len(&self) -> usize {
        BTH_LEN + self.ext_len()
    }
}

/// Defines [`Opcode`] from one table: variant, value, IBTA name, service, extension headers
/// in wire order, and whether a payload follows.
macro_rules! opcodes {
    ($($variant:ident = $code:literal, $name:literal, $service:ident, [$($ext:ident),*], $payload:literal;)*) => {
        /// A BTH opcode the card implements (IBTA vol 1 9.2.1; Annex A17.9.3 for the CNP).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Opcode {
            $(
                #[doc = $name]
                $variant = $code,
            )*
        }

        impl Opcode {
            /// Every opcode, in value order.
            pub const ALL: &'static [Opcode] = &[$(Opcode::$variant),*];

            /// The opcode of BTH byte 0.
            pub const fn from_u8(v: u8) -> Result<Opcode, WireError> {
                match v {
                    $($code => Ok(Opcode::$variant),)*
                    other => Err(WireError::UnknownOpcode(other)),
                }
            }

            /// The opcode table entry.
            pub const fn info(self) -> OpcodeInfo {
                match self {
                    $(Opcode::$variant => OpcodeInfo {
                        name: $name,
                        service: Service::$service,
                        headers: &[$(Ext::$ext),*],
                        payload: $payload,
                    },)*
                }
            }
        }
    };
}

opcodes! {
    RcSendFirst = 0x00, "RC_SEND_FIRST", Rc, [], true;
    RcSendMiddle = 0x01, "RC_SEND_MIDDLE", Rc, [], true;
    RcSendLast = 0x02, "RC_SEND_LAST", Rc, [], true;
    RcSendLastWithImmediate = 0x03, "RC_SEND_LAST_WITH_IMMEDIATE", Rc, [ImmDt], true;
    RcSendOnly = 0x04, "RC_SEND_ONLY", Rc, [], true;
    RcSendOnlyWithImmediate = 0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", Rc, [ImmDt], true;
    RcRdmaWriteFirst = 0x06, "RC_RDMA_WRITE_FIRST", Rc, [Reth], true;
    RcRdmaWriteMiddle = 0x07, "RC_RDMA_WRITE_MIDDLE", Rc, [], true;
    RcRdmaWriteLast = 0x08, "RC_RDMA_WRITE_LAST", Rc, [], true;
    RcRdmaWriteLastWithImmediate = 0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", Rc, [ImmDt], true;
    RcRdmaWriteOnly = 0x0a, "RC_RDMA_WRITE_ONLY", Rc, [Reth], true;
    RcRdmaWriteOnlyWithImmediate = 0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", Rc, [Reth, ImmDt], true;
    RcRdmaReadRequest = 0x0c, "RC_RDMA_READ_REQUEST", Rc, [Reth], false;
    RcRdmaReadResponseFirst = 0x0d, "RC_RDMA_READ_RESPONSE_FIRST", Rc, [Aeth], true;
    RcRdmaReadResponseMiddle = 0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", Rc, [], true;
    RcRdmaReadResponseLast = 0x0f, "RC_RDMA_READ_RESPONSE_LAST", Rc, [Aeth], true;
    RcRdmaReadResponseOnly = 0x10, "RC_RDMA_READ_RESPONSE_ONLY", Rc, [Aeth], true;
    RcAcknowledge = 0x11, "RC_ACKNOWLEDGE", Rc, [Aeth], false;
    RcAtomicAcknowledge = 0x12, "RC_ATOMIC_ACKNOWLEDGE", Rc, [Aeth, AtomicAckEth], false;
    RcCompareSwap = 0x13, "RC_COMPARE_SWAP", Rc, [AtomicEth], false;
    RcFetchAdd = 0x14, "RC_FETCH_ADD", Rc, [AtomicEth], false;
    RcSendLastWithInvalidate = 0x16, "RC_SEND_LAST_WITH_INVALIDATE", Rc, [Ieth], true;
    RcSendOnlyWithInvalidate = 0x17, "RC_SEND_ONLY_WITH_INVALIDATE", Rc, [Ieth], true;
    UcSendFirst = 0x20, "UC_SEND_FIRST", Uc, [], true;
    UcSendMiddle = 0x21, "UC_SEND_MIDDLE", Uc, [], true;
    UcSendLast = 0x22, "UC_SEND_LAST", Uc, [], true;
    UcSendLastWithImmediate = 0x23, "UC_SEND_LAST_WITH_IMMEDIATE", Uc, [ImmDt], true;
    UcSendOnly = 0x24, "UC_SEND_ONLY", Uc, [], true;
    UcSendOnlyWithImmediate = 0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", Uc, [ImmDt], true;
    UcRdmaWriteFirst = 0x26, "UC_RDMA_WRITE_FIRST", Uc, [Reth], true;
    UcRdmaWriteMiddle = 0x27, "UC_RDMA_WRITE_MIDDLE", Uc, [], true;
    UcRdmaWriteLast = 0x28, "UC_RDMA_WRITE_LAST", Uc, [], true;
    UcRdmaWriteLastWithImmediate = 0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", Uc, [ImmDt], true;
    UcRdmaWriteOnly = 0x2a, "UC_RDMA_WRITE_ONLY", Uc, [Reth], true;
    UcRdmaWriteOnlyWithImmediate = 0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", Uc, [Reth, ImmDt], true;
    UdSendOnly = 0x64, "UD_SEND_ONLY", Ud, [Deth], true;
    UdSendOnlyWithImmediate = 0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", Ud, [Deth, ImmDt], true;
    Cnp = 0x81, "CNP", Cnp, [CnpReserved], false;
    // DC: the model's own encoding (`dc.rs`), RC's operation + 0xc0, requests led by a DCETH.
    DcSendFirst = 0xc0, "DC_SEND_FIRST", Dc, [Dceth], true;
    DcSendMiddle = 0xc1, "DC_SEND_MIDDLE", Dc, [Dceth], true;
    DcSendLast = 0xc2, "DC_SEND_LAST", Dc, [Dceth], true;
    DcSendLastWithImmediate = 0xc3, "DC_SEND_LAST_WITH_IMMEDIATE", Dc, [Dceth, ImmDt], true;
    DcSendOnly = 0xc4, "DC_SEND_ONLY", Dc, [Dceth], true;
    DcSendOnlyWithImmediate = 0xc5, "DC_SEND_ONLY_WITH_IMMEDIATE", Dc, [Dceth, ImmDt], true;
    DcRdmaWriteFirst = 0xc6, "DC_RDMA_WRITE_FIRST", Dc, [Dceth, Reth], true;
    DcRdmaWriteMiddle = 0xc7, "DC_RDMA_WRITE_MIDDLE", Dc, [Dceth], true;
    DcRdmaWriteLast = 0xc8, "DC_RDMA_WRITE_LAST", Dc, [Dceth], true;
    DcRdmaWriteLastWithImmediate = 0xc9, "DC_RDMA_WRITE_LAST_WITH_IMMEDIATE", Dc, [Dceth, ImmDt], true;
    DcRdmaWriteOnly = 0xca, "DC_RDMA_WRITE_ONLY", Dc, [Dceth, Reth], true;
    DcRdmaWriteOnlyWithImmediate = 0xcb, "DC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", Dc, [Dceth, Reth, ImmDt], true;
    DcRdmaReadRequest = 0xcc, "DC_RDMA_READ_REQUEST", Dc, [Dceth, Reth], false;
    DcRdmaReadResponseFirst = 0xcd, "DC_RDMA_READ_RESPONSE_FIRST", Dc, [Aeth], true;
    DcRdmaReadResponseMiddle = 0xce, "DC_RDMA_READ_RESPONSE_MIDDLE", Dc, [], true;
    DcRdmaReadResponseLast = 0xcf, "DC_RDMA_READ_RESPONSE_LAST", Dc, [Aeth], true;
    DcRdmaReadResponseOnly = 0xd0, "DC_RDMA_READ_RESPONSE_ONLY", Dc, [Aeth], true;
    DcAcknowledge = 0xd1, "DC_ACKNOWLEDGE", Dc, [Aeth], false;
    DcAtomicAcknowledge = 0xd2, "DC_ATOMIC_ACKNOWLEDGE", Dc, [Aeth, AtomicAckEth], false;
    DcCompareSwap = 0xd3, "DC_COMPARE_SWAP", Dc, [Dceth, AtomicEth], false;
    DcFetchAdd = 0xd4, "DC_FETCH_ADD", Dc, [Dceth, AtomicEth], false;
    DcSendLastWithInvalidate = 0xd6, "DC_SEND_LAST_WITH_INVALIDATE", Dc, [Dceth, Ieth], true;
    DcSendOnlyWithInvalidate = 0xd7, "DC_SEND_ONLY_WITH_INVALIDATE", Dc, [Dceth, Ieth], true;
    XrcSendFirst = 0xa0, "XRC_SEND_FIRST", Xrc, [Xrceth], true;
    XrcSendMiddle = 0xa1, "XRC_SEND_MIDDLE", Xrc, [Xrceth], true;
    XrcSendLast = 0xa2, "XRC_SEND_LAST", Xrc, [Xrceth], true;
    XrcSendLastWithImmediate = 0xa3, "XRC_SEND_LAST_WITH_IMMEDIATE", Xrc, [Xrceth, ImmDt], true;
    XrcSendOnly = 0xa4, "XRC_SEND_ONLY", Xrc, [Xrceth], true;
    XrcSendOnlyWithImmediate = 0xa5, "XRC_SEND_ONLY_WITH_IMMEDIATE", Xrc, [Xrceth, ImmDt], true;
    XrcRdmaWriteFirst = 0xa6, "XRC_RDMA_WRITE_FIRST", Xrc, [Xrceth, Reth], true;
    XrcRdmaWriteMiddle = 0xa7, "XRC_RDMA_WRITE_MIDDLE", Xrc, [Xrceth], true;
    XrcRdmaWriteLast = 0xa8, "XRC_RDMA_WRITE_LAST", Xrc, [Xrceth], true;
    XrcRdmaWriteLastWithImmediate = 0xa9, "XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE", Xrc, [Xrceth, ImmDt], true;
    XrcRdmaWriteOnly = 0xaa, "XRC_RDMA_WRITE_ONLY", Xrc, [Xrceth, Reth], true;
    XrcRdmaWriteOnlyWithImmediate = 0xab, "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", Xrc, [Xrceth, Reth, ImmDt], true;
    XrcRdmaReadRequest = 0xac, "XRC_RDMA_READ_REQUEST", Xrc, [Xrceth, Reth], false;
    XrcRdmaReadResponseFirst = 0xad, "XRC_RDMA_READ_RESPONSE_FIRST", Xrc, [Aeth], true;
    XrcRdmaReadResponseMiddle = 0xae, "XRC_RDMA_READ_RESPONSE_MIDDLE", Xrc, [], true;
    XrcRdmaReadResponseLast = 0xaf, "XRC_RDMA_READ_RESPONSE_LAST", Xrc, [Aeth], true;
    XrcRdmaReadResponseOnly = 0xb0, "XRC_RDMA_READ_RESPONSE_ONLY", Xrc, [Aeth], true;
    XrcAcknowledge = 0xb1, "XRC_ACKNOWLEDGE", Xrc, [Aeth], false;
    XrcAtomicAcknowledge = 0xb2, "XRC_ATOMIC_ACKNOWLEDGE", Xrc, [Aeth, AtomicAckEth], false;
    XrcCompareSwap = 0xb3, "XRC_COMPARE_SWAP", Xrc, [Xrceth, AtomicEth], false;
    XrcFetchAdd = 0xb4, "XRC_FETCH_ADD", Xrc, [Xrceth, AtomicEth], false;
    XrcSendLastWithInvalidate = 0xb6, "XRC_SEND_LAST_WITH_INVALIDATE", Xrc, [Xrceth, Ieth], true;
    XrcSendOnlyWithInvalidate = 0xb7, "XRC_SEND_ONLY_WITH_INVALIDATE", Xrc, [Xrceth, Ieth], true;
}

impl Opcode {
    /// The opcode byte.
    pub const fn value(self) -> u8 {
        self as u8
    }

    /// The IBTA name, e.g. `RC_SEND_ONLY`.
    pub const fn name(self) -> &'static str {
        self.info().name
    }
}

/// Base transport header (IBTA 9.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bth {
    /// Opcode.
    pub opcode: Opcode,
    /// Solicited event (SE).
    pub solicited: bool,
    /// Migration request (M).
    pub migreq: bool,
    /// Pad count: bytes (0–3) after the payload that align it to 4 bytes.
    pub pad: u8,
    /// Transport header version (4 bits; 0 is the only version).
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward explicit congestion notification (RoCEv2 leaves it 0: ECN is in IP).
    pub fecn: bool,
    /// Backward explicit congestion notification (set in a CNP).
    pub becn: bool,
    /// Destination QP number (24 bits).
    pub dest_qp: u32,
    /// Acknowledge request (A).
    pub ack_req: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

impl Bth {
    /// Length on the wire.
    pub const LEN: usize = BTH_LEN;
    /// Offset of the byte holding FECN, BECN and the reserved bits, which the ICRC masks.
    pub const FECN_BECN_OFFSET: usize = 4;

    /// A BTH with the default P_Key and every flag clear.
    pub const fn new(opcode: Opcode, dest_qp: u32, psn: u32) -> Bth {
        Bth {
            opcode,
            solicited: false,
            migreq: false,
            pad: 0,
            tver: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp,
            ack_req: false,
            psn,
        }
    }

    /// Reads a BTH; fails on a short input or an unknown opcode. The version is returned as
    /// found (the packet parser rejects non-zero ones).
    pub fn decode(buf: &[u8]) -> Result<Bth, WireError> {
        let b = input::<BTH_LEN>(buf, "BTH")?;
        Ok(Bth {
            opcode: Opcode::from_u8(b[0])?,
            solicited: b[1] & 0x80 != 0,
            migreq: b[1] & 0x40 != 0,
            pad: (b[1] >> 4) & 0x3,
            tver: b[1] & 0xf,
            pkey: u16::from_be_bytes([b[2], b[3]]),
            fecn: b[4] & 0x80 != 0,
            becn: b[4] & 0x40 != 0,
            dest_qp: be24(&[b[5], b[6], b[7]]),
            ack_req: b[8] & 0x80 != 0,
            psn: be24(&[b[9], b[10], b[11]]),
        })
    }

    /// Writes the BTH.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let pad = fits("BTH pad count", self.pad.into(), 2)? as u8;
        let tver = fits("BTH transport version", self.tver.into(), 4)? as u8;
        let qp = fits("BTH destination QP", self.dest_qp.into(), 24)? as u32;
        let psn = fits("BTH PSN", self.psn.into(), 24)? as u32;
        let mut b = [0u8; BTH_LEN];
        b[0] = self.opcode.value();
        b[1] = u8::from(self.solicited) << 7 | u8::from(self.migreq) << 6 | pad << 4 | tver;
        b[2..4].copy_from_slice(&self.pkey.to_be_bytes());
        b[4..8].copy_from_slice(&qp.to_be_bytes());
        b[4] = u8::from(self.fecn) << 7 | u8::from(self.becn) << 6;
        b[8..12].copy_from_slice(&psn.to_be_bytes());
        b[8] = u8::from(self.ack_req) << 7;
        output(buf, &b, "BTH")
    }
}

/// RDMA extended transport header (IBTA 9.3.3): the remote buffer of an RDMA WRITE or READ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reth {
    /// Virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// DMA length in bytes.
    pub dma_len: u32,
}

impl Reth {
    /// Length on the wire.
    pub const LEN: usize = RETH_LEN;

    /// Reads a RETH.
    pub fn decode(buf: &[u8]) -> Result<Reth, WireError> {
        let b = input::<RETH_LEN>(buf, "RETH")?;
        Ok(Reth {
            va: u64_at(&b, 0),
            rkey: u32_at(&b, 8),
            dma_len: u32_at(&b, 12),
        })
    }

    /// Writes the RETH.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let mut b = [0u8; RETH_LEN];
        b[0..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..16].copy_from_slice(&self.dma_len.to_be_bytes());
        output(buf, &b, "RETH")
    }
}

/// A NAK code: the value of an AETH syndrome of type NAK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum NakCode {
    /// PSN sequence error: the responder expected another PSN.
    PsnSequenceError = 0,
    /// Invalid request.
    InvalidRequest = 1,
    /// Remote access error (R_Key, bounds or access rights).
    RemoteAccessError = 2,
    /// Remote operational error.
    RemoteOperationalError = 3,
    /// Invalid RD request (reliable datagram only).
    InvalidRdRequest = 4,
}

/// The syndrome of an AETH: an ACK, an RNR NAK or a NAK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive acknowledgement with an end-to-end credit count (5 bits; 31 means
    /// "invalid", i.e. no flow control credits are advertised).
    Ack {
        /// Credit count.
        credits: u8,
    },
    /// Receiver not ready: retry after the encoded minimum RNR NAK timer (5 bits, the
    /// encoding of verbs' `min_rnr_timer`).
    RnrNak {
        /// Encoded minimum RNR NAK timer.
        timer: u8,
    },
    /// Negative acknowledgement.
    Nak(NakCode),
}

impl Syndrome {
    /// The credit count of an ACK that advertises none.
    pub const CREDITS_INVALID: u8 = 0x1f;

    /// Decodes syndrome byte `v`: bit 7 reserved, bits 6–5 the type, bits 4–0 the value.
    pub fn from_u8(v: u8) -> Result<Syndrome, WireError> {
        let value = v & 0x1f;
        match v >> 5 {
            0b000 => Ok(Syndrome::Ack { credits: value }),
            0b001 => Ok(Syndrome::RnrNak { timer: value }),
            0b011 => match value {
                0 => Ok(Syndrome::Nak(NakCode::PsnSequenceError)),
                1 => Ok(Syndrome::Nak(NakCode::InvalidRequest)),
                2 => Ok(Syndrome::Nak(NakCode::RemoteAccessError)),
                3 => Ok(Syndrome::Nak(NakCode::RemoteOperationalError)),
                4 => Ok(Syndrome::Nak(NakCode::InvalidRdRequest)),
                _ => Err(WireError::AethSyndrome(v)),
            },
            _ => Err(WireError::AethSyndrome(v)),
        }
    }

    /// The syndrome byte.
    pub fn to_u8(self) -> Result<u8, WireError> {
        Ok(match self {
            Syndrome::Ack { credits } => fits("AETH credit count", credits.into(), 5)? as u8,
            Syndrome::RnrNak { timer } => 0x20 | fits("AETH RNR NAK timer", timer.into(), 5)? as u8,
            Syndrome::Nak(code) => 0x60 | code as u8,
        })
    }
}

/// ACK extended transport header (IBTA 9.3.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aeth {
    /// ACK, RNR NAK or NAK.
    pub syndrome: Syndrome,
    /// Message sequence number (24 bits).
    pub msn: u32,
}

impl Aeth {
    /// Length on the wire.
    pub const LEN: usize = AETH_LEN;

    /// Reads an AETH; a reserved syndrome is an error.
    pub fn decode(buf: &[u8]) -> Result<Aeth, WireError> {
        let b = input::<AETH_LEN>(buf, "AETH")?;
        Ok(Aeth {
            syndrome: Syndrome::from_u8(b[0])?,
            msn: be24(&[b[1], b[2], b[3]]),
        })
    }

    /// Writes the AETH.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let msn = fits("AETH MSN", self.msn.into(), 24)? as u32;
        let mut b = msn.to_be_bytes();
        b[0] = self.syndrome.to_u8()?;
        output(buf, &b, "AETH")
    }
}

/// Atomic extended transport header (IBTA 9.3.4): COMPARE_SWAP and FETCH_ADD.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicEth {
    /// Virtual address (8-byte aligned).
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// The swap value (COMPARE_SWAP) or the addend (FETCH_ADD).
    pub swap_add: u64,
    /// The compare value (COMPARE_SWAP; ignored by FETCH_ADD).
    pub compare: u64,
}

impl AtomicEth {
    /// Length on the wire.
    pub const LEN: usize = ATOMIC_ETH_LEN;

    /// Reads an AtomicETH.
    pub fn decode(buf: &[u8]) -> Result<AtomicEth, WireError> {
        let b = input::<ATOMIC_ETH_LEN>(buf, "AtomicETH")?;
        Ok(AtomicEth {
            va: u64_at(&b, 0),
            rkey: u32_at(&b, 8),
            swap_add: u64_at(&b, 12),
            compare: u64_at(&b, 20),
        })
    }

    /// Writes the AtomicETH.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let mut b = [0u8; ATOMIC_ETH_LEN];
        b[0..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..20].copy_from_slice(&self.swap_add.to_be_bytes());
        b[20..28].copy_from_slice(&self.compare.to_be_bytes());
        output(buf, &b, "AtomicETH")
    }
}

/// Atomic acknowledge extended transport header (IBTA 9.3.6): the value at the target address
/// before the atomic operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicAckEth {
    /// Original remote data.
    pub orig: u64,
}

impl AtomicAckEth {
    /// Length on the wire.
    pub const LEN: usize = ATOMIC_ACK_ETH_LEN;

    /// Reads an AtomicAckETH.
    pub fn decode(buf: &[u8]) -> Result<AtomicAckEth, WireError> {
        let b = input::<ATOMIC_ACK_ETH_LEN>(buf, "AtomicAckETH")?;
        Ok(AtomicAckEth {
            orig: u64::from_be_bytes(b),
        })
    }

    /// Writes the AtomicAckETH.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        output(buf, &self.orig.to_be_bytes(), "AtomicAckETH")
    }
}

/// Immediate data extended transport header (IBTA 9.3.7), opaque to the transport.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImmDt {
    /// The immediate data, as sent (big-endian on the wire, like verbs' `imm_data`).
    pub imm: u32,
}

impl ImmDt {
    /// Length on the wire.
    pub const LEN: usize = IMMDT_LEN;

    /// Reads an ImmDt.
    pub fn decode(buf: &[u8]) -> Result<ImmDt, WireError> {
        let b = input::<IMMDT_LEN>(buf, "ImmDt")?;
        Ok(ImmDt {
            imm: u32::from_be_bytes(b),
        })
    }

    /// Writes the ImmDt.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        output(buf, &self.imm.to_be_bytes(), "ImmDt")
    }
}

/// Invalidate extended transport header (IBTA 9.3.8): the key SEND_WITH_INVALIDATE
/// invalidates at the responder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ieth {
    /// The remote key to invalidate.
    pub rkey: u32,
}

impl Ieth {
    /// Length on the wire.
    pub const LEN: usize = IETH_LEN;

    /// Reads an IETH.
    pub fn decode(buf: &[u8]) -> Result<Ieth, WireError> {
        let b = input::<IETH_LEN>(buf, "IETH")?;
        Ok(Ieth {
            rkey: u32::from_be_bytes(b),
        })
    }

    /// Writes the IETH.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        output(buf, &self.rkey.to_be_bytes(), "IETH")
    }
}

/// Datagram extended transport header (IBTA 9.3.2): UD sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deth {
    /// Queue key.
    pub qkey: u32,
    /// Source QP number (24 bits).
    pub src_qp: u32,
}

impl Deth {
    /// Length on the wire.
    pub const LEN: usize = DETH_LEN;

    /// Reads a DETH.
    pub fn decode(buf: &[u8]) -> Result<Deth, WireError> {
        let b = input::<DETH_LEN>(buf, "DETH")?;
        Ok(Deth {
            qkey: u32_at(&b, 0),
            src_qp: u32_at(&b, 4) & MASK_24,
        })
    }

    /// Writes the DETH.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let sqp = fits("DETH source QP", self.src_qp.into(), 24)? as u32;
        let mut b = [0u8; DETH_LEN];
        b[0..4].copy_from_slice(&self.qkey.to_be_bytes());
        b[4..8].copy_from_slice(&sqp.to_be_bytes());
        output(buf, &b, "DETH")
    }
}

/// XRC extended transport header (IBTA vol 1 Annex A14): the XRC SRQ at the responder that
/// an XRC request is for (every request packet carries it, right after the BTH).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Xrceth {
    /// The XRC SRQ number (24 bits; the byte before it is reserved).
    pub srqn: u32,
}

impl Xrceth {
    /// Length on the wire.
    pub const LEN: usize = XRCETH_LEN;

    /// Reads an XRCETH; the reserved byte is ignored.
    pub fn decode(buf: &[u8]) -> Result<Xrceth, WireError> {
        let b = input::<XRCETH_LEN>(buf, "XRCETH")?;
        Ok(Xrceth {
            srqn: u32::from_be_bytes(b) & MASK_24,
        })
    }

    /// Writes the XRCETH.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let srqn = fits("XRCETH XRC SRQ", self.srqn.into(), 24)? as u32;
        output(buf, &srqn.to_be_bytes(), "XRCETH")
    }
}

impl Opcode {
    /// The opcode of the same reliable operation in service `to` (RC, XRC or DC, whose
    /// opcodes are RC's plus the service's base); `None` for other services.
    pub fn twin(self, to: Service) -> Option<Opcode> {
        let base = |s| match s {
            Service::Rc => Some(0u8),
            Service::Xrc => Some(0xa0),
            Service::Dc => Some(0xc0),
            _ => None,
        };
        let op = self.value() - base(self.info().service)?;
        Opcode::from_u8(op + base(to)?).ok()
    }
}

/// The model's DC extended transport header (our encoding, `dc.rs`; interoperates only
/// between modelled cards): after the BTH of every DC request, 16 bytes — the DC access key
/// (8, big-endian), the initiator's QP number (4: reserved byte, 24 bits), and the PSN the
/// initiator's connection to this DCT started at (4: reserved byte, 24 bits), which tells
/// the DCT a new connection from a stale packet of an old one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dceth {
    /// The DC access key the initiator's WQE named.
    pub key: u64,
    /// The DCI's QP number (where responses go).
    pub dci: u32,
    /// The first PSN of the DCI's current connection.
    pub conn_psn: u32,
}

impl Dceth {
    /// Reads a DCETH; reserved bytes are ignored.
    pub fn decode(buf: &[u8]) -> Result<Dceth, WireError> {
        let b = input::<DCETH_LEN>(buf, "DCETH")?;
        let word = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]) & MASK_24;
        let mut k = [0u8; 8];
        k.copy_from_slice(&b[..8]);
        Ok(Dceth {
            key: u64::from_be_bytes(k),
            dci: word(8),
            conn_psn: word(12),
        })
    }

    /// Writes the DCETH.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let mut b = [0u8; DCETH_LEN];
        b[..8].copy_from_slice(&self.key.to_be_bytes());
        let dci = fits("DCETH DCI", self.dci.into(), 24)? as u32;
        let psn = fits("DCETH connection PSN", self.conn_psn.into(), 24)? as u32;
        b[8..12].copy_from_slice(&dci.to_be_bytes());
        b[12..].copy_from_slice(&psn.to_be_bytes());
        output(buf, &b, "DCETH")
    }
}

/// The extension headers of one packet: exactly those its opcode's table entry lists are
/// present after a decode, and required (and the only ones allowed) by an encode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtHeaders {
    /// DETH (UD).
    pub deth: Option<Deth>,
    /// RETH (RDMA WRITE FIRST/ONLY, RDMA READ request).
    pub reth: Option<Reth>,
    /// AtomicETH (COMPARE_SWAP, FETCH_ADD).
    pub atomic: Option<AtomicEth>,
    /// AETH (ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE, RDMA READ response FIRST/LAST/ONLY).
    pub aeth: Option<Aeth>,
    /// AtomicAckETH (ATOMIC_ACKNOWLEDGE).
    pub atomic_ack: Option<AtomicAckEth>,
    /// ImmDt (the WITH_IMMEDIATE opcodes).
    pub imm: Option<ImmDt>,
    /// IETH (the WITH_INVALIDATE opcodes).
    pub ieth: Option<Ieth>,
    /// XRCETH (XRC requests).
    pub xrc: Option<Xrceth>,
    /// DCETH (DC requests; the model's encoding).
    pub dc: Option<Dceth>,
}

impl ExtHeaders {
    /// Reads the extension headers `opcode` carries from the start of `buf` (the bytes after
    /// the BTH); returns them and their length.
    pub fn decode(opcode: Opcode, buf: &[u8]) -> Result<(ExtHeaders, usize), WireError> {
        let mut ext = ExtHeaders::default();
        let mut at = 0;
        for &kind in opcode.info().headers {
            let rest = buf.get(at..).unwrap_or_default();
            match kind {
                Ext::Deth => ext.deth = Some(Deth::decode(rest)?),
                Ext::Reth => ext.reth = Some(Reth::decode(rest)?),
                Ext::AtomicEth => ext.atomic = Some(AtomicEth::decode(rest)?),
                Ext::Aeth => ext.aeth = Some(Aeth::decode(rest)?),
                Ext::AtomicAckEth => ext.atomic_ack = Some(AtomicAckEth::decode(rest)?),
                Ext::ImmDt => ext.imm = Some(ImmDt::decode(rest)?),
                Ext::Ieth => ext.ieth = Some(Ieth::decode(rest)?),
                Ext::Xrceth => ext.xrc = Some(Xrceth::decode(rest)?),
                Ext::Dceth => ext.dc = Some(Dceth::decode(rest)?),
                Ext::CnpReserved => {
                    input::<CNP_RESERVED_LEN>(rest, kind.name())?;
                }
            }
            at += kind.wire_len();
        }
        Ok((ext, at))
    }

    /// Whether the header of `kind` is present (the CNP's reserved bytes always are).
    fn has(&self, kind: Ext) -> bool {
        match kind {
            Ext::Deth => self.deth.is_some(),
            Ext::Reth => self.reth.is_some(),
            Ext::AtomicEth => self.atomic.is_some(),
            Ext::Aeth => self.aeth.is_some(),
            Ext::AtomicAckEth => self.atomic_ack.is_some(),
            Ext::ImmDt => self.imm.is_some(),
            Ext::Ieth => self.ieth.is_some(),
            Ext::Xrceth => self.xrc.is_some(),
            Ext::Dceth => self.dc.is_some(),
            Ext::CnpReserved => true,
        }
    }

    /// Checks that exactly the headers `opcode` carries are present.
    pub fn check(&self, opcode: Opcode) -> Result<(), WireError> {
        let wanted = opcode.info().headers;
        if let Some(missing) = wanted.iter().find(|&&k| !self.has(k)) {
            return Err(WireError::MissingHeader(missing.name()));
        }
        const KINDS: [Ext; 9] = [
            Ext::Deth,
            Ext::Reth,
            Ext::AtomicEth,
            Ext::Aeth,
            Ext::AtomicAckEth,
            Ext::ImmDt,
            Ext::Ieth,
            Ext::Xrceth,
            Ext::Dceth,
        ];
        match KINDS.iter().find(|&&k| self.has(k) && !wanted.contains(&k)) {
            Some(extra) => Err(WireError::UnexpectedHeader(extra.name())),
            None => Ok(()),
        }
    }

    /// Writes the extension headers of `opcode` at the start of `buf`; returns their length.
    pub fn encode(&self, opcode: Opcode, buf: &mut [u8]) -> Result<usize, WireError> {
        self.check(opcode)?;
        let info = opcode.info();
        let need = info.ext_len();
        let have = buf.len();
        let out = buf.get_mut(..need).ok_or(WireError::BufferTooSmall {
            what: "extension headers",
            need,
            have,
        })?;
        let mut at = 0;
        for &kind in info.headers {
            let rest = out.get_mut(at..).unwrap_or_default();
            match kind {
                Ext::Deth => present(self.deth, kind)?.encode(rest)?,
                Ext::Reth => present(self.reth, kind)?.encode(rest)?,
                Ext::AtomicEth => present(self.atomic, kind)?.encode(rest)?,
                Ext::Aeth => present(self.aeth, kind)?.encode(rest)?,
                Ext::AtomicAckEth => present(self.atomic_ack, kind)?.encode(rest)?,
                Ext::ImmDt => present(self.imm, kind)?.encode(rest)?,
                Ext::Ieth => present(self.ieth, kind)?.encode(rest)?,
                Ext::Xrceth => present(self.xrc, kind)?.encode(rest)?,
                Ext::Dceth => present(self.dc, kind)?.encode(rest)?,
                Ext::CnpReserved => output(rest, &[0u8; CNP_RESERVED_LEN], kind.name())?,
            }
            at += kind.wire_len();
        }
        Ok(at)
    }
}

/// `header`, or the error for a missing header of `kind`.
fn present<T>(header: Option<T>, kind: Ext) -> Result<T, WireError> {
    header.ok_or(WireError::MissingHeader(kind.name()))
}

/// The BTH and the extension headers its opcode carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransportHeaders {
    /// The base transport header.
    pub bth: Bth,
    /// The extension headers.
    pub ext: ExtHeaders,
}

impl TransportHeaders {
    /// Length on the wire.
    pub fn wire_len(&self) -> usize {
        self.bth.opcode.info().header_len()
    }

    /// Reads the BTH and its extension headers; returns them and their length.
    pub fn decode(buf: &[u8]) -> Result<(TransportHeaders, usize), WireError> {
        let bth = Bth::decode(buf)?;
        let rest = buf.get(BTH_LEN..).unwrap_or_default();
        let (ext, len) = ExtHeaders::decode(bth.opcode, rest)?;
        Ok((TransportHeaders { bth, ext }, BTH_LEN + len))
    }

    /// Writes the BTH and its extension headers; returns their length.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        self.ext.check(self.bth.opcode)?;
        let need = self.wire_len();
        if buf.len() < need {
            return Err(WireError::BufferTooSmall {
                what: "transport headers",
                need,
                have: buf.len(),
            });
        }
        self.bth.encode(buf)?;
        let rest = buf.get_mut(BTH_LEN..).unwrap_or_default();
        Ok(BTH_LEN + self.ext.encode(self.bth.opcode, rest)?)
    }
}

#[cfg(test)]
#[path = "headers_tests.rs"]
mod tests;
