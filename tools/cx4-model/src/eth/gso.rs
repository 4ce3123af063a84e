//! Segmentation handed to the host kernel and taken from it: how LSO output crosses a wire
//! that carries GSO superframes (a TAP with a virtio-net header, `wire::vnet`).
//!
//! The card cuts an LSO superframe into segments ([`super::lso`]). A TAP can carry the
//! superframe instead, described by its header length, MSS and the position of the TCP
//! checksum, exactly as virtio-net guests hand TSO frames to QEMU's TAP: the host kernel cuts
//! it where a receiver needs segments (a physical NIC without TSO, a VM without GSO) and
//! otherwise delivers it whole. The segments are the ones the card would have sent — Linux
//! GSO and [`super::lso`] rewrite the same fields (IPv4 length, identification + *i* and
//! header checksum, IPv6 payload length, sequence number, FIN/PSH on the last and CWR on the
//! first segment, full TCP checksum) — and one write carries up to 44 of them.
//!
//! Receive side: a superframe from the wire ([`split`]) is cut here with [`super::lso`] and
//! each segment goes through steering, RSS and an RQ WQE like any frame; a frame whose
//! checksum the sender left to the NIC (`CHECKSUM_PARTIAL` on the host) gets it completed
//! first ([`complete_csum`]), as it would have been before reaching a real wire.

use std::fmt;

use cx4_hw::wqe::CsFlags;

use super::{
    csum,
    frame::{Headers, IpVersion, L4Kind},
    lso::{self, Segment},
};

/// Largest IP datagram a superframe may carry (IPv4 total length, IPv6 payload length).
const MAX_DATAGRAM: usize = 0xffff;

/// A TCP superframe as one wire write: its headers are those of the first segment with the
/// whole datagram's lengths and the TCP checksum field holding the pseudo-header sum (the
/// host's `CHECKSUM_PARTIAL` convention), the payload follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Superframe {
    /// The rewritten headers (Ethernet, IP, TCP).
    pub header: Vec<u8>,
    /// IPv6 (else IPv4).
    pub ipv6: bool,
    /// The TCP header has CWR set (`VIRTIO_NET_HDR_GSO_ECN`: only the first segment keeps it).
    pub ecn: bool,
    /// Bytes of headers every segment repeats.
    pub hdr_len: usize,
    /// Payload bytes per segment.
    pub mss: usize,
    /// Offset of the TCP header, where the checksum starts.
    pub csum_start: usize,
    /// Offset of the checksum field from `csum_start`.
    pub csum_offset: usize,
}

/// The superframe form of LSO output, when the host can carry it: plain (not tunnelled, no
/// VLAN tag in the frame) TCP over IPv4 or IPv6, a datagram of at most 64 KiB, more than one
/// segment. Anything else (tunnels, UDP segmentation, one segment) goes as segments.
pub fn superframe(frame: &[u8], h: &Headers, mss: usize) -> Option<Superframe> {
    if h.inner.is_some() || h.tunnel.is_some() || h.l2().vlan_count != 0 || mss == 0 {
        return None;
    }
    let (l3, l4) = (h.outer.l3?, h.outer.l4?);
    if l4.kind != L4Kind::Tcp || l3.fragment || mss > 0xffff {
        return None;
    }
    let hdr_len = l4.payload();
    if hdr_len > frame.len() || frame.len() - hdr_len <= mss {
        return None;
    }
    let datagram = frame.len() - l3.offset;
    if datagram > MAX_DATAGRAM + 40 {
        return None;
    }
    let mut header = frame[..hdr_len].to_vec();
    match l3.version {
        IpVersion::V4 => {
            if datagram > MAX_DATAGRAM {
                return None;
            }
            header[l3.offset + 2..l3.offset + 4].copy_from_slice(&(datagram as u16).to_be_bytes());
            header[l3.offset + 10..l3.offset + 12].fill(0);
            csum::fill_ipv4(&mut header, &l3);
        }
        IpVersion::V6 => {
            let payload = datagram - 40;
            if payload > MAX_DATAGRAM {
                return None;
            }
            header[l3.offset + 4..l3.offset + 6].copy_from_slice(&(payload as u16).to_be_bytes());
        }
    }
    let seg_len = frame.len() - l4.offset;
    let pseudo = csum::pseudo_header(&header, &l3, l3.proto, seg_len).fold();
    header[l4.offset + 16..l4.offset + 18].copy_from_slice(&pseudo.to_be_bytes());
    Some(Superframe {
        ecn: header[l4.offset + 13] & 0x80 != 0,
        header,
        ipv6: l3.version == IpVersion::V6,
        hdr_len,
        mss,
        csum_start: l4.offset,
        csum_offset: 16,
    })
}

/// Why a frame the host handed over with offload metadata was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GsoError {
    /// The checksum position lies outside the frame.
    BadCsumPosition,
    /// A superframe that is not TCP (or UDP) over IP, or cannot be cut with its MSS.
    NotSegmentable,
}

impl fmt::Display for GsoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GsoError::BadCsumPosition => "checksum position outside the frame",
            GsoError::NotSegmentable => "superframe that cannot be segmented",
        })
    }
}

impl std::error::Error for GsoError {}

/// Completes a checksum the sender left partial: the 16-bit field at `start + offset` holds
/// the pseudo-header sum, the checksum covers `start..` to the end of the frame in 16-bit
/// words counted from `start` (the host's `skb_checksum_help`; a computed 0 is stored as
/// 0xffff, harmless for TCP, required for UDP).
pub fn complete_csum(frame: &mut [u8], start: usize, offset: usize) -> Result<(), GsoError> {
    let at = start.checked_add(offset).ok_or(GsoError::BadCsumPosition)?;
    if start >= frame.len() || at.checked_add(2).is_none_or(|end| end > frame.len()) {
        return Err(GsoError::BadCsumPosition);
    }
    let c = csum::Sum::new().bytes(&frame[start..]).checksum();
    let c = if c == 0 { 0xffff } else { c };
    frame[at..at + 2].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// Cuts a superframe from the wire, parsed as `h`, into the segments a card would have
/// received: at most `mss` payload bytes each, headers and checksums rewritten per segment
/// (`lso::segment`, which refuses anything but TCP/UDP).
pub fn split(frame: &[u8], h: &Headers, mss: usize) -> Result<Vec<Segment>, GsoError> {
    lso::segment(frame, h, mss, CsFlags::empty()).map_err(|_| GsoError::NotSegmentable)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::eth::frame::{self, ParseConfig};

    /// A TCP/IPv4 frame 10.0.0.1:5001 → 10.0.0.2:40000 with `payload` patterned bytes.
    pub(crate) fn tcp4(payload: usize, flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20 + payload];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&((20 + 20 + payload) as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = 6;
        ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
        let tcp = &mut f[34..54];
        tcp[0..2].copy_from_slice(&5001u16.to_be_bytes());
        tcp[2..4].copy_from_slice(&40000u16.to_be_bytes());
        tcp[4..8].copy_from_slice(&1000u32.to_be_bytes());
        tcp[12] = 5 << 4;
        tcp[13] = flags;
        for (i, b) in f[54..].iter_mut().enumerate() {
            *b = (i * 7 + 3) as u8;
        }
        f
    }

    fn parse(f: &[u8]) -> Headers {
        frame::parse(f, &ParseConfig::default()).unwrap()
    }

    /// What the host kernel does with a superframe: cut it (as `lso`, checked independently
    /// by its own tests), after completing the partial checksum of the whole datagram.
    #[test]
    fn a_superframe_carries_the_segments_the_card_would_send() {
        let f = tcp4(4000, 0x18 | 0x80); // PSH ACK CWR
        let h = parse(&f);
        let sf = superframe(&f, &h, 1448).expect("plain TCP over IPv4");
        assert_eq!(
            (sf.hdr_len, sf.mss, sf.csum_start, sf.csum_offset),
            (54, 1448, 34, 16)
        );
        assert!(!sf.ipv6 && sf.ecn);
        // The whole datagram, its partial checksum completed, is a valid TCP/IPv4 packet.
        let mut whole = sf.header.clone();
        whole.extend_from_slice(&f[54..]);
        let hw = parse(&whole);
        let l3 = hw.outer.l3.unwrap();
        assert!(csum::ipv4_ok(&whole, &l3));
        assert_eq!(
            usize::from(u16::from_be_bytes([whole[16], whole[17]])),
            whole.len() - 14
        );
        complete_csum(&mut whole, sf.csum_start, sf.csum_offset).unwrap();
        assert!(csum::l4_ok(&whole, &l3, &hw.outer.l4.unwrap()));
        // Cut with the MSS, it gives exactly the card's segments.
        let ours = lso::segment(&f, &h, 1448, CsFlags::empty()).unwrap();
        let theirs = split(&whole, &hw, sf.mss).unwrap();
        assert_eq!(ours.len(), 3);
        let frames =
            |s: &[Segment], src: &[u8]| s.iter().map(|s| s.to_frame(src)).collect::<Vec<_>>();
        assert_eq!(frames(&theirs, &whole), frames(&ours, &f));
    }

    #[test]
    fn ipv6_superframes_carry_the_payload_length() {
        let mut f = vec![0u8; 14 + 40 + 20 + 3000];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        f[18..20].copy_from_slice(&((20 + 3000) as u16).to_be_bytes());
        f[20] = 6;
        f[21] = 64;
        f[22] = 0xfe;
        f[38] = 0xfe;
        f[14 + 40 + 12] = 5 << 4;
        let h = parse(&f);
        let sf = superframe(&f, &h, 1000).unwrap();
        assert!(sf.ipv6 && !sf.ecn);
        assert_eq!(u16::from_be_bytes([sf.header[18], sf.header[19]]), 3020);
        let mut whole = sf.header.clone();
        whole.extend_from_slice(&f[sf.hdr_len..]);
        complete_csum(&mut whole, sf.csum_start, sf.csum_offset).unwrap();
        let hw = parse(&whole);
        assert!(csum::l4_ok(
            &whole,
            &hw.outer.l3.unwrap(),
            &hw.outer.l4.unwrap()
        ));
    }

    #[test]
    fn what_a_superframe_cannot_carry_goes_as_segments() {
        let f = tcp4(1448, 0x10);
        assert_eq!(superframe(&f, &parse(&f), 1448), None, "one segment");
        assert_eq!(superframe(&f, &parse(&f), 0), None, "MSS 0");
        let mut u = tcp4(4000, 0x10);
        u[23] = 17; // UDP, with its length
        let ulen = (u.len() - 34) as u16;
        u[38..40].copy_from_slice(&ulen.to_be_bytes());
        assert_eq!(superframe(&u, &parse(&u), 1000), None, "UDP segmentation");
        let mut v = tcp4(4000, 0x10);
        v.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
        assert_eq!(
            superframe(&v, &parse(&v), 1000),
            None,
            "VLAN tag in the frame"
        );
        let big = tcp4(70000, 0x10);
        let hb = frame::parse(&big, &ParseConfig::default());
        if let Ok(hb) = hb {
            assert_eq!(superframe(&big, &hb, 1448), None, "over 64 KiB");
        }
    }

    #[test]
    fn partial_checksums_are_completed_within_the_frame_only() {
        let f = tcp4(101, 0x10);
        let h = parse(&f);
        let (l3, l4) = (h.outer.l3.unwrap(), h.outer.l4.unwrap());
        let mut g = f.clone();
        let pseudo = csum::pseudo_header(&g, &l3, 6, g.len() - 34).fold();
        g[50..52].copy_from_slice(&pseudo.to_be_bytes());
        complete_csum(&mut g, 34, 16).unwrap();
        assert!(csum::l4_ok(&g, &l3, &l4));
        let n = g.len();
        for (start, off) in [
            (n, 0),
            (n - 1, 0),
            (34, n),
            (usize::MAX, 2),
            (2, usize::MAX),
        ] {
            assert_eq!(
                complete_csum(&mut g, start, off),
                Err(GsoError::BadCsumPosition)
            );
        }
        // An odd start (possible from a bogus header) is summed right, not rejected.
        let mut o = vec![0u8, 0x12, 0x34, 0x00, 0x00, 0x56];
        complete_csum(&mut o, 1, 2).unwrap();
        let s = csum::Sum::new()
            .bytes(&[0x12, 0x34, o[3], o[4], 0x56])
            .fold();
        assert_eq!(s, 0xffff);
    }

    #[test]
    fn split_refuses_what_has_no_transport_header() {
        let mut f = tcp4(4000, 0x10);
        f[23] = 1; // ICMP
        assert_eq!(split(&f, &parse(&f), 1000), Err(GsoError::NotSegmentable));
        let f = tcp4(4000, 0x10);
        assert_eq!(split(&f, &parse(&f), 0), Err(GsoError::NotSegmentable));
    }
}
