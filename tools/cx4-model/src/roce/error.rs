//! Why RoCE wire bytes could not be decoded, or a packet could not be encoded.
//!
//! One error type for the whole wire layer: the header codecs ([`super::headers`]), the frame
//! parser and builder ([`super::packet`]) and the ICRC ([`super::icrc`]) all return it, so
//! the engine can count and log a dropped packet by one value.

use std::fmt;

/// A RoCE packet or header the wire layer rejects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The input ends inside `what`: `need` bytes were required, `have` were left.
    Truncated {
        /// The header or field being read.
        what: &'static str,
        /// Bytes required.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The output buffer is too small for `what` (encode side).
    BufferTooSmall {
        /// The header being written.
        what: &'static str,
        /// Bytes required.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A field value does not fit its width on the wire (encode side), e.g. a 25-bit QPN.
    FieldRange {
        /// The field.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The largest value the field holds.
        max: u64,
    },
    /// The BTH opcode is not one of the RC, UC, UD or CNP opcodes the card implements.
    UnknownOpcode(u8),
    /// The BTH transport header version is not 0.
    TransportVersion(u8),
    /// The AETH syndrome uses a reserved type (bit 7 set, or type 0b10) or NAK code.
    AethSyndrome(u8),
    /// The EtherType (after an optional 802.1Q tag) is not IPv4, IPv6 or RoCE v1 (0x8915).
    EtherType(u16),
    /// The IP version nibble disagrees with the EtherType (a RoCE v1 GRH's IPVer is not 6).
    IpVersion(u8),
    /// The GRH of a RoCE v1 frame names a next header other than the BTH (0x1B).
    GrhNextHeader(u8),
    /// ECN was asked of a RoCE v1 frame, whose GRH has no ECN field.
    NoEcn,
    /// The IPv4 header carries options (IHL other than 5): RoCEv2's ICRC covers a fixed
    /// 20-byte header, and no RoCE implementation sends options.
    Ipv4Options(u8),
    /// The IPv4 header checksum is wrong.
    Ipv4Checksum {
        /// The checksum in the header.
        found: u16,
        /// The checksum the header should carry.
        expected: u16,
    },
    /// The IPv4 datagram is a fragment (MF set or a fragment offset).
    Fragment,
    /// The IP (next) header is not UDP; IPv6 extension headers are not accepted either.
    NotUdp(u8),
    /// The IP length field (a GRH's payload length) disagrees with the frame: it claims
    /// `claimed` bytes (header included) where `available` are present, or less than its own
    /// header.
    IpLength {
        /// Datagram length from the header.
        claimed: usize,
        /// Bytes in the frame from the IP header on.
        available: usize,
    },
    /// The UDP length field disagrees with the IP payload length.
    UdpLength {
        /// Length from the UDP header.
        udp: usize,
        /// IP payload length.
        ip: usize,
    },
    /// The UDP destination port is not 4791.
    UdpPort(u16),
    /// A non-zero UDP checksum is wrong.
    UdpChecksum {
        /// The checksum in the header.
        found: u16,
        /// The checksum the datagram should carry.
        expected: u16,
    },
    /// The BTH pad count does not fit the packet: more pad bytes than payload, a pad on an
    /// opcode without payload, or payload plus pad not a multiple of 4 bytes.
    PadCount {
        /// The BTH pad count.
        pad: u8,
        /// Bytes between the extension headers and the ICRC (payload and pad).
        len: usize,
    },
    /// Bytes follow the extension headers of an opcode that carries no payload.
    UnexpectedPayload {
        /// The opcode byte.
        opcode: u8,
        /// How many bytes.
        len: usize,
    },
    /// The invariant CRC is wrong.
    /// The VCRC of an IB packet does not match its contents (`ib_wire.rs`).
    Vcrc {
        /// The VCRC in the packet.
        found: u16,
        /// The VCRC of the packet's contents.
        expected: u16,
    },
    Icrc {
        /// The ICRC in the packet.
        found: u32,
        /// The ICRC of the packet's contents.
        expected: u32,
    },
    /// The opcode needs extension header `0`, which was not given (encode side).
    MissingHeader(&'static str),
    /// Extension header `0` was given for an opcode that does not carry it (encode side).
    UnexpectedHeader(&'static str),
    /// The packet does not fit an IP (or GRH payload) length field (encode side).
    TooLong(usize),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use WireError::*;
        match *self {
            Truncated { what, need, have } => {
                write!(f, "truncated {what}: need {need} bytes, have {have}")
            }
            BufferTooSmall { what, need, have } => {
                write!(f, "no room for {what}: need {need} bytes, have {have}")
            }
            FieldRange { field, value, max } => {
                write!(f, "{field} {value:#x} does not fit (max {max:#x})")
            }
            UnknownOpcode(op) => write!(f, "unknown BTH opcode {op:#04x}"),
            TransportVersion(v) => write!(f, "BTH transport version {v}, not 0"),
            AethSyndrome(s) => write!(f, "reserved AETH syndrome {s:#04x}"),
            EtherType(t) => write!(f, "EtherType {t:#06x} is not IPv4, IPv6 or RoCE v1"),
            IpVersion(v) => write!(f, "IP version {v} disagrees with the EtherType"),
            GrhNextHeader(n) => write!(f, "GRH next header {n:#04x} is not the BTH (0x1b)"),
            NoEcn => write!(f, "a RoCE v1 (GRH) frame has no ECN field"),
            Ipv4Options(ihl) => write!(f, "IPv4 IHL {ihl}: options are not accepted"),
            Ipv4Checksum { found, expected } => {
                write!(
                    f,
                    "IPv4 header checksum {found:#06x}, expected {expected:#06x}"
                )
            }
            Fragment => write!(f, "IPv4 fragment"),
            NotUdp(p) => write!(f, "IP protocol {p} is not UDP"),
            IpLength { claimed, available } => {
                write!(f, "IP length {claimed} but {available} bytes present")
            }
            UdpLength { udp, ip } => write!(f, "UDP length {udp} but IP payload {ip}"),
            UdpPort(p) => write!(f, "UDP destination port {p} is not RoCEv2 (4791)"),
            UdpChecksum { found, expected } => {
                write!(f, "UDP checksum {found:#06x}, expected {expected:#06x}")
            }
            PadCount { pad, len } => {
                write!(f, "BTH pad count {pad} does not fit {len} bytes of payload")
            }
            UnexpectedPayload { opcode, len } => {
                write!(
                    f,
                    "{len} payload bytes on opcode {opcode:#04x}, which has none"
                )
            }
            Vcrc { found, expected } => {
                write!(f, "VCRC {found:#06x}, expected {expected:#06x}")
            }
            Icrc { found, expected } => {
                write!(f, "ICRC {found:#010x}, expected {expected:#010x}")
            }
            MissingHeader(h) => write!(f, "the opcode needs a {h}"),
            UnexpectedHeader(h) => write!(f, "the opcode carries no {h}"),
            TooLong(n) => write!(f, "{n}-byte datagram does not fit the IP length field"),
        }
    }
}

impl std::error::Error for WireError {}
