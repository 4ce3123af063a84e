//! Large send offload: one TCP (or UDP, for `NETIF_F_GSO_UDP_L4`) superframe cut into
//! frames of at most `mss` payload bytes, plain or tunnelled (VXLAN, GENEVE, GRE, IP-in-IP, or
//! located by software parser offsets).
//!
//! Every segment gets a copy of the headers up to the end of the innermost transport header
//! with, per segment *i* of *n* (as ConnectX-4 does, and as Linux GSO would):
//! - each IPv4 header (outer and inner): total length, identification + *i*, header checksum;
//!   each IPv6 header: payload length;
//! - the outer UDP header of a UDP tunnel: length; its checksum is left as the driver wrote
//!   it (0, or final for `GSO_PARTIAL` superframes) unless the WQE asks for the outer L4
//!   checksum; GRE headers unchanged;
//! - TCP: sequence number + *i* × mss, FIN and PSH only on the last segment, CWR only on the
//!   first, full checksum; UDP: length and full checksum.
//!
//! Segments are returned as a rewritten header plus a range of the superframe's payload, so
//! the wire side can send them with two-element gather writes, without copying the payload
//! again.

use std::{fmt, ops::Range};

use cx4_hw::wqe::CsFlags;

use super::{
    csum::{self, Sum},
    frame::{Headers, IpVersion, L4Kind, L3, L4},
};

/// Most segments one LSO WQE may produce (a guard against tiny `mss` values).
pub const MAX_SEGMENTS: usize = 1 << 16;

/// Why a superframe cannot be segmented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LsoError {
    /// `mss` is zero.
    ZeroMss,
    /// The innermost layer has no TCP or UDP header (or is a fragment).
    NotTcpUdp,
    /// More than [`MAX_SEGMENTS`] segments.
    TooManySegments,
}

impl fmt::Display for LsoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LsoError::ZeroMss => "LSO with MSS 0",
            LsoError::NotTcpUdp => "LSO without a TCP or UDP header",
            LsoError::TooManySegments => "LSO into too many segments",
        })
    }
}

impl std::error::Error for LsoError {}

/// One segment: rewritten headers followed by a slice of the superframe's payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The headers of this segment.
    pub header: Vec<u8>,
    /// The payload, as a range of the superframe.
    pub payload: Range<usize>,
}

impl Segment {
    /// Length of the segment on the wire (before padding).
    pub fn len(&self) -> usize {
        self.header.len() + self.payload.len()
    }

    /// Whether the segment is empty (never, for segments [`segment`] returns).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The segment as one contiguous frame.
    pub fn to_frame(&self, superframe: &[u8]) -> Vec<u8> {
        let mut f = Vec::with_capacity(self.len());
        f.extend_from_slice(&self.header);
        f.extend_from_slice(&superframe[self.payload.clone()]);
        f
    }
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

fn get16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Rewrites the length (and the IPv4 identification) of an IP header in `hdr` for a segment
/// of `seg_len` bytes, segment number `i`.
fn fix_ip(hdr: &mut [u8], l3: &L3, seg_len: usize, i: usize) {
    match l3.version {
        IpVersion::V4 => {
            put16(hdr, l3.offset + 2, (seg_len - l3.offset) as u16);
            let id = get16(hdr, l3.offset + 4).wrapping_add(i as u16);
            put16(hdr, l3.offset + 4, id);
        }
        IpVersion::V6 => put16(hdr, l3.offset + 4, (seg_len - l3.offset - 40) as u16),
    }
}

/// The IPv4 header checksum over `hdr` (header bytes only).
fn fix_ipv4_csum(hdr: &mut [u8], l3: &L3) {
    if l3.version == IpVersion::V4 {
        put16(hdr, l3.offset + 10, 0);
        let c = csum::checksum(&hdr[l3.offset..l3.offset + l3.header_len]);
        put16(hdr, l3.offset + 10, c);
    }
}

/// The checksum of a transport segment starting at `l4` inside `hdr`, continued by
/// `payload_sum` over `payload_len` bytes; the checksum field must already be zero.
fn transport_csum(hdr: &[u8], l3: &L3, l4_offset: usize, payload_sum: Sum, seg_len: usize) -> u16 {
    csum::pseudo_header(hdr, l3, l3.proto, seg_len - l4_offset)
        .bytes(&hdr[l4_offset..])
        .plus(payload_sum)
        .checksum()
}

/// Cuts `frame`, parsed as `h` (send side), into segments of at most `mss` payload bytes.
/// `flags` are the WQE's checksum requests; only the outer L4 request changes anything (the
/// outer UDP checksum of a tunnel is recomputed instead of kept).
pub fn segment(
    frame: &[u8],
    h: &Headers,
    mss: usize,
    flags: CsFlags,
) -> Result<Vec<Segment>, LsoError> {
    if mss == 0 {
        return Err(LsoError::ZeroMss);
    }
    let inner = h.innermost();
    let (Some(l3), Some(l4)) = (inner.l3, inner.l4) else {
        return Err(LsoError::NotTcpUdp);
    };
    if l4.kind == L4Kind::Other || l3.fragment {
        return Err(LsoError::NotTcpUdp);
    }
    let hdr_len = l4.payload();
    let payload = hdr_len.min(frame.len())..frame.len();
    let n = payload.len().div_ceil(mss).max(1);
    if n > MAX_SEGMENTS {
        return Err(LsoError::TooManySegments);
    }
    let tunnelled = h.inner.is_some();
    let outer_l3 = h.outer.l3.filter(|_| tunnelled);
    let outer_udp = h.outer.l4.filter(|l4| tunnelled && l4.kind == L4Kind::Udp);
    let template = &frame[..hdr_len];
    let seq0 = (l4.kind == L4Kind::Tcp).then(|| get32(template, l4.offset + 4));

    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let start = payload.start + i * mss;
        let range = start..(start + mss).min(payload.end);
        let seg_len = hdr_len + range.len();
        let payload_sum = Sum::new().bytes(&frame[range.clone()]);
        let mut hdr = template.to_vec();

        if let Some(o3) = outer_l3 {
            fix_ip(&mut hdr, &o3, seg_len, i);
        }
        if let Some(u) = outer_udp {
            put16(&mut hdr, u.offset + 4, (seg_len - u.offset) as u16);
        }
        fix_ip(&mut hdr, &l3, seg_len, i);
        fix_ipv4_csum(&mut hdr, &l3);
        match (l4.kind, seq0) {
            (L4Kind::Tcp, Some(seq0)) => {
                let seq = seq0.wrapping_add((i * mss) as u32);
                hdr[l4.offset + 4..l4.offset + 8].copy_from_slice(&seq.to_be_bytes());
                let mut tcp_flags = hdr[l4.offset + 13];
                if i + 1 != n {
                    tcp_flags &= !(0x01 | 0x08); // FIN, PSH
                }
                if i != 0 {
                    tcp_flags &= !0x80; // CWR
                }
                hdr[l4.offset + 13] = tcp_flags;
                put16(&mut hdr, l4.offset + 16, 0);
                let c = transport_csum(&hdr, &l3, l4.offset, payload_sum, seg_len);
                put16(&mut hdr, l4.offset + 16, c);
            }
            _ => {
                put16(&mut hdr, l4.offset + 4, (seg_len - l4.offset) as u16);
                put16(&mut hdr, l4.offset + 6, 0);
                let c = transport_csum(&hdr, &l3, l4.offset, payload_sum, seg_len);
                put16(&mut hdr, l4.offset + 6, if c == 0 { 0xffff } else { c });
            }
        }
        if let (Some(o3), Some(u)) = (outer_l3, outer_udp) {
            if flags.contains(CsFlags::L4) {
                outer_udp_csum(&mut hdr, &o3, &u, payload_sum, seg_len);
            }
        }
        if let Some(o3) = outer_l3 {
            fix_ipv4_csum(&mut hdr, &o3);
        }
        out.push(Segment {
            header: hdr,
            payload: range,
        });
    }
    Ok(out)
}

/// Recomputes the outer UDP checksum of a tunnelled segment (after its inner headers).
fn outer_udp_csum(hdr: &mut [u8], o3: &L3, u: &L4, payload_sum: Sum, seg_len: usize) {
    put16(hdr, u.offset + 6, 0);
    let c = transport_csum(hdr, o3, u.offset, payload_sum, seg_len);
    put16(hdr, u.offset + 6, if c == 0 { 0xffff } else { c });
}
