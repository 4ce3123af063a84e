//! A whole RoCE frame. RoCEv2: Ethernet (with an optional 802.1Q tag) / IPv4 or IPv6 / UDP to
//! port 4791 / BTH / extension headers / payload / pad / ICRC (IBTA Annex A17). RoCE v1:
//! Ethernet (optionally tagged) with EtherType 0x8915 / the 40-byte IB GRH / BTH / extension
//! headers / payload / pad / ICRC (IBTA Annex A16) — no IP, no UDP. The network header of
//! either is an [`Ip`]: `V4`, `V6` or `Grh`.
//!
//! [`build`] lays a [`Packet`] out as frame bytes: it computes the BTH pad count, the IP and
//! UDP lengths (the GRH payload length), the IPv4 header checksum and the ICRC. The UDP
//! checksum is 0 unless [`UdpChecksum::Compute`] is asked for — rxe sends 0 over IPv4 and IPv6
//! alike (`prepare_udp_hdr` in `rxe_net.c` clears it and nothing fills it; its receive socket
//! accepts a zero IPv6 checksum), and Annex A17 allows it. The frame is not padded to the
//! Ethernet minimum; the MAC does that.
//!
//! [`parse`] checks a received frame the way a RoCE receiver must before the transport sees
//! it: EtherType; for RoCEv2 the IP version, IPv4 header length, checksum and fragmentation,
//! the IP and UDP lengths (bytes after the IP datagram are Ethernet padding), the UDP port and
//! a non-zero UDP checksum; for RoCE v1 the GRH version (6), next header (0x1B, the BTH) and
//! payload length (bytes after it are Ethernet padding); then the ICRC, the opcode, the
//! transport version, the extension headers and the pad count. Every failure is a
//! [`WireError`]; nothing panics.
//!
//! The IP header's ECN bits ([`Ecn`]), DSCP, TTL / hop limit and flow label are fields of
//! [`Ipv4`] and [`Ipv6`]; [`set_ecn`] marks a frame on the way (the ICRC does not cover ECN).
//! A RoCE v1 frame carries no ECN: its GRH traffic class is an opaque byte ([`Grh`]),
//! [`Ip::ecn`] says not-ECT and [`set_ecn`] refuses it, so ECN marking, CNPs and DCQCN are
//! RoCEv2's alone.

use crate::eth::csum::{self, Sum};

use super::error::WireError;
use super::headers::{fits, Bth, ExtHeaders, TransportHeaders, BTH_LEN};
use super::icrc::{self, GRH_LEN, ICRC_LEN, IPV4_HLEN, IPV6_HLEN, UDP_HLEN};

/// The UDP destination port of RoCEv2 (IANA).
pub const ROCEV2_PORT: u16 = 4791;
/// Length of an Ethernet header without tags.
pub const ETH_HLEN: usize = 14;
/// Length of an 802.1Q tag.
pub const VLAN_HLEN: usize = 4;
/// The 802.1Q tag protocol identifier.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// The IPv4 EtherType.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// The IPv6 EtherType.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// The RoCE v1 EtherType (IBoE: the IB GRH follows the Ethernet header).
pub const ETHERTYPE_ROCE_V1: u16 = 0x8915;
/// The GRH IPVer of RoCE v1 packets (the GRH has the IPv6 header's layout).
pub const GRH_IP_VERSION: u8 = 6;
/// The GRH next header that says the BTH follows (IBA 8.3.1: 0x1B).
pub const GRH_NEXT_HEADER_BTH: u8 = 0x1b;
/// The UDP protocol number.
pub const IPPROTO_UDP: u8 = 17;
/// The IPv4 don't-fragment flag in the flags/offset word.
const IPV4_DF: u16 = 0x4000;
/// The IPv4 more-fragments flag and fragment offset.
const IPV4_FRAG: u16 = 0x3fff;

/// The ECN codepoint of an IP header (RFC 3168), the low two bits of the TOS / traffic class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ecn {
    /// Not ECN-capable transport (0b00).
    #[default]
    NotEct,
    /// ECN-capable transport, codepoint 1 (0b01).
    Ect1,
    /// ECN-capable transport, codepoint 0 (0b10): what DCQCN senders use.
    Ect0,
    /// Congestion experienced (0b11), set by a congested switch.
    Ce,
}

impl Ecn {
    /// The codepoint of the two low bits of `tos`.
    pub const fn from_tos(tos: u8) -> Ecn {
        match tos & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two-bit codepoint.
    pub const fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0,
            Ecn::Ect1 => 1,
            Ecn::Ect0 => 2,
            Ecn::Ce => 3,
        }
    }
}

/// The Ethernet header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ethernet {
    /// Destination MAC.
    pub dst: [u8; 6],
    /// Source MAC.
    pub src: [u8; 6],
    /// The tag control information (PCP, DEI, VID) of an 802.1Q tag, if tagged.
    pub vlan_tci: Option<u16>,
}

impl Ethernet {
    /// The priority code point of the tag, if tagged.
    pub fn pcp(&self) -> Option<u8> {
        self.vlan_tci.map(|tci| (tci >> 13) as u8)
    }

    /// Length on the wire.
    pub fn wire_len(&self) -> usize {
        match self.vlan_tci {
            Some(_) => ETH_HLEN + VLAN_HLEN,
            None => ETH_HLEN,
        }
    }
}

/// An IPv4 header without options, as RoCEv2 uses it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ipv4 {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Differentiated services code point (6 bits).
    pub dscp: u8,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Time to live.
    pub ttl: u8,
    /// Identification.
    pub id: u16,
    /// Don't fragment (rxe sets it).
    pub dont_fragment: bool,
}

/// An IPv6 header without extension headers, as RoCEv2 uses it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ipv6 {
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// Differentiated services code point (6 bits).
    pub dscp: u8,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
}

/// The IB global route header of a RoCE v1 packet (IBA 8.3): IPVer 6, next header 0x1B
/// and the payload length are implied ([`build`] writes them, [`parse`] checks them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grh {
    /// Source GID (a RoCE v1 entry of the sender's GID table).
    pub sgid: [u8; 16],
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Traffic class: an opaque byte (no ECN in RoCE v1).
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
}

/// The fixed fields of an IPv6 header or a GRH (the same 40-byte layout, IPVer 6).
struct V6Like {
    traffic_class: u8,
    flow: u32,
    len: u16,
    next: u8,
    hop_limit: u8,
}

impl V6Like {
    /// Writes the header with source `src` and destination `dst` into `g`.
    fn write(&self, g: &mut [u8], src: &[u8; 16], dst: &[u8; 16]) {
        let word =
            u32::from(GRH_IP_VERSION) << 28 | u32::from(self.traffic_class) << 20 | self.flow;
        g[0..4].copy_from_slice(&word.to_be_bytes());
        g[4..6].copy_from_slice(&self.len.to_be_bytes());
        g[6] = self.next;
        g[7] = self.hop_limit;
        g[8..24].copy_from_slice(src);
        g[24..40].copy_from_slice(dst);
    }
}

impl Grh {
    /// Writes the 40-byte GRH into `g` with payload length `paylen` (BTH to ICRC): IPVer 6,
    /// next header BTH.
    pub fn write(&self, g: &mut [u8], paylen: usize) -> Result<(), WireError> {
        let paylen = u16::try_from(paylen).map_err(|_| WireError::TooLong(GRH_LEN + paylen))?;
        let flow = fits("GRH flow label", self.flow_label.into(), 20)? as u32;
        let h = V6Like {
            traffic_class: self.traffic_class,
            flow,
            len: paylen,
            next: GRH_NEXT_HEADER_BTH,
            hop_limit: self.hop_limit,
        };
        h.write(g, &self.sgid, &self.dgid);
        Ok(())
    }

    /// Reads the GRH at the start of `h` and its payload length; refuses another IP version
    /// or a next header other than the BTH.
    pub fn read(h: &[u8]) -> Result<(Grh, usize), WireError> {
        let h = slice(h, 0, GRH_LEN, "GRH")?;
        let word = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        if h[0] >> 4 != GRH_IP_VERSION {
            return Err(WireError::IpVersion(h[0] >> 4));
        }
        if h[6] != GRH_NEXT_HEADER_BTH {
            return Err(WireError::GrhNextHeader(h[6]));
        }
        let grh = Grh {
            sgid: addr(&h[8..24]),
            dgid: addr(&h[24..40]),
            traffic_class: (word >> 20) as u8,
            flow_label: word & 0xf_ffff,
            hop_limit: h[7],
        };
        Ok((grh, usize::from(be16(h, 4))))
    }
}

/// The network header of a RoCE packet: IPv4 or IPv6 (RoCEv2), or the IB GRH (RoCE v1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ip {
    /// IPv4 (RoCEv2).
    V4(Ipv4),
    /// IPv6 (RoCEv2).
    V6(Ipv6),
    /// The IB GRH (RoCE v1, EtherType 0x8915).
    Grh(Grh),
}

/// The IPv4-mapped GID of address `a` (`::ffff:a.b.c.d`).
fn v4_mapped(a: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&a);
    g
}

impl Ip {
    /// The ECN codepoint; a RoCE v1 GRH has none (not-ECT).
    pub fn ecn(&self) -> Ecn {
        match self {
            Ip::V4(h) => h.ecn,
            Ip::V6(h) => h.ecn,
            Ip::Grh(_) => Ecn::NotEct,
        }
    }

    /// Sets the ECN codepoint (nothing on a RoCE v1 GRH, which has none).
    pub fn set_ecn(&mut self, ecn: Ecn) {
        match self {
            Ip::V4(h) => h.ecn = ecn,
            Ip::V6(h) => h.ecn = ecn,
            Ip::Grh(_) => {}
        }
    }

    /// The DSCP (a GRH's traffic class, high 6 bits).
    pub fn dscp(&self) -> u8 {
        match self {
            Ip::V4(h) => h.dscp,
            Ip::V6(h) => h.dscp,
            Ip::Grh(h) => h.traffic_class >> 2,
        }
    }

    /// The TTL (IPv4) or hop limit (IPv6, GRH).
    pub fn ttl(&self) -> u8 {
        match self {
            Ip::V4(h) => h.ttl,
            Ip::V6(h) => h.hop_limit,
            Ip::Grh(h) => h.hop_limit,
        }
    }

    /// The TOS / traffic class byte: DSCP and ECN (a GRH's whole traffic class).
    pub fn traffic_class(&self) -> u8 {
        match self {
            Ip::Grh(h) => h.traffic_class,
            _ => self.dscp() << 2 | self.ecn().bits(),
        }
    }

    /// Length of the header on the wire.
    pub fn header_len(&self) -> usize {
        match self {
            Ip::V4(_) => IPV4_HLEN,
            Ip::V6(_) => IPV6_HLEN,
            Ip::Grh(_) => GRH_LEN,
        }
    }

    /// Whether this is RoCE v1 (a GRH, EtherType 0x8915) rather than RoCEv2.
    pub fn is_v1(&self) -> bool {
        matches!(self, Ip::Grh(_))
    }

    /// The source address as a GID (IPv4-mapped for IPv4).
    pub fn src_gid(&self) -> [u8; 16] {
        match self {
            Ip::V4(h) => v4_mapped(h.src),
            Ip::V6(h) => h.src,
            Ip::Grh(h) => h.sgid,
        }
    }

    /// The destination address as a GID (IPv4-mapped for IPv4).
    pub fn dst_gid(&self) -> [u8; 16] {
        match self {
            Ip::V4(h) => v4_mapped(h.dst),
            Ip::V6(h) => h.dst,
            Ip::Grh(h) => h.dgid,
        }
    }
}

/// Whether the UDP checksum is filled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum UdpChecksum {
    /// 0, "no checksum" (rxe and the card, over IPv4 and IPv6).
    #[default]
    Zero,
    /// Computed over the pseudo-header and the whole datagram, ICRC included. A parsed
    /// packet with a non-zero (and therefore verified) checksum says `Compute`.
    Compute,
}

/// A RoCE packet: what [`build`] lays out and [`parse`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The Ethernet header.
    pub eth: Ethernet,
    /// The IP header (RoCEv2) or GRH (RoCE v1).
    pub ip: Ip,
    /// The UDP source port (RoCEv2 uses it for ECMP entropy; the destination is 4791). RoCE v1
    /// has no UDP: [`build`] ignores it and [`parse`] gives 0.
    pub src_port: u16,
    /// Whether the UDP checksum is (to be) filled (RoCE v1: ignored, parsed as `Zero`).
    pub udp_checksum: UdpChecksum,
    /// The base transport header. [`build`] computes its pad count from the payload length
    /// and ignores the one given.
    pub bth: Bth,
    /// The extension headers the opcode carries.
    pub ext: ExtHeaders,
    /// The payload, without pad.
    pub payload: &'a [u8],
}

impl Packet<'_> {
    /// The BTH and extension headers.
    pub fn transport(&self) -> TransportHeaders {
        TransportHeaders {
            bth: self.bth,
            ext: self.ext,
        }
    }
}

/// The pad count that aligns `len` payload bytes to 4 bytes.
pub const fn pad_for(len: usize) -> u8 {
    (len.wrapping_neg() & 3) as u8
}

/// Writes the Ethernet header of `eth` (and its 802.1Q tag) with `ethertype` at the start of
/// `f`.
fn write_eth(f: &mut [u8], eth: &Ethernet, ethertype: u16) {
    let l3 = eth.wire_len();
    f[0..6].copy_from_slice(&eth.dst);
    f[6..12].copy_from_slice(&eth.src);
    if let Some(tci) = eth.vlan_tci {
        f[12..14].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        f[14..16].copy_from_slice(&tci.to_be_bytes());
    }
    f[l3 - 2..l3].copy_from_slice(&ethertype.to_be_bytes());
}

/// Lays `p` out as a frame.
pub fn build(p: &Packet<'_>) -> Result<Vec<u8>, WireError> {
    build_with(p, p.payload.len(), false, |d| d.copy_from_slice(p.payload))
}

/// [`build`] of `p` with a payload of `len` bytes that `fill` writes in place, in the frame
/// (so a transmitted packet's data is copied once, from guest memory into the frame); the
/// `payload` of `p` is not read. `fill` runs before the ICRC is computed, and not at all
/// when the headers cannot be laid out.
///
/// A `looped` frame loops back inside the card ([`parse_looped`] receives it): its ICRC is
/// left zero. Nothing on the card's internal loopback can alter a frame, so the ICRC a real
/// card computes there and checks on receive leaves no visible trace; the model skips both
/// (two CRC passes over every looped-back payload) and keeps the rest of the packet pipeline
/// — headers, parsing, counters.
pub fn build_with(
    p: &Packet<'_>,
    len: usize,
    looped: bool,
    fill: impl FnOnce(&mut [u8]),
) -> Result<Vec<u8>, WireError> {
    let icrc = !looped;
    let info = p.bth.opcode.info();
    if !info.payload && len != 0 {
        return Err(WireError::UnexpectedPayload {
            opcode: p.bth.opcode.value(),
            len,
        });
    }
    let pad = pad_for(len);
    let transport = TransportHeaders {
        bth: Bth { pad, ..p.bth },
        ext: p.ext,
    };
    // Transport headers, payload, pad and ICRC: the UDP payload, or the GRH's.
    let ib_len = transport.wire_len() + len + usize::from(pad) + ICRC_LEN;
    if let Ip::Grh(h) = p.ip {
        return build_v1(p, &h, &transport, (len, fill), ib_len, icrc);
    }
    let udp_len = UDP_HLEN + ib_len;
    let ip_hlen = p.ip.header_len();
    let ip_total = match p.ip {
        Ip::V4(_) => ip_hlen + udp_len,
        _ => udp_len,
    };
    let ip_total = u16::try_from(ip_total).map_err(|_| WireError::TooLong(ip_hlen + udp_len))?;
    fits("IP DSCP", p.ip.dscp().into(), 6)?;

    let l3 = p.eth.wire_len();
    let mut f = vec![0u8; l3 + ip_hlen + udp_len];
    let ethertype = match p.ip {
        Ip::V4(_) => ETHERTYPE_IPV4,
        _ => ETHERTYPE_IPV6,
    };
    write_eth(&mut f, &p.eth, ethertype);

    let tc = p.ip.traffic_class();
    let ip = &mut f[l3..l3 + ip_hlen];
    match p.ip {
        Ip::V4(h) => {
            ip[0] = 0x45;
            ip[1] = tc;
            ip[2..4].copy_from_slice(&ip_total.to_be_bytes());
            ip[4..6].copy_from_slice(&h.id.to_be_bytes());
            let flags = if h.dont_fragment { IPV4_DF } else { 0 };
            ip[6..8].copy_from_slice(&flags.to_be_bytes());
            ip[8] = h.ttl;
            ip[9] = IPPROTO_UDP;
            ip[12..16].copy_from_slice(&h.src);
            ip[16..20].copy_from_slice(&h.dst);
            let c = csum::checksum(ip);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
        }
        Ip::V6(h) => {
            let flow = fits("IPv6 flow label", h.flow_label.into(), 20)? as u32;
            let v6 = V6Like {
                traffic_class: tc,
                flow,
                len: ip_total,
                next: IPPROTO_UDP,
                hop_limit: h.hop_limit,
            };
            v6.write(ip, &h.src, &h.dst);
        }
        Ip::Grh(_) => unreachable!("built by build_v1"),
    }

    let l4 = l3 + ip_hlen;
    f[l4..l4 + 2].copy_from_slice(&p.src_port.to_be_bytes());
    f[l4 + 2..l4 + 4].copy_from_slice(&ROCEV2_PORT.to_be_bytes());
    f[l4 + 4..l4 + 6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    let bth = l4 + UDP_HLEN;
    let hlen = transport.encode(&mut f[bth..])?;
    let data = bth + hlen;
    fill(&mut f[data..data + len]);
    // The pad bytes are already zero.
    if icrc {
        let icrc_at = f.len() - ICRC_LEN;
        let icrc = icrc::compute(&f[l3..icrc_at])?;
        f[icrc_at..].copy_from_slice(&icrc.to_le_bytes());
    }
    if p.udp_checksum == UdpChecksum::Compute {
        let c = udp_checksum(&f[l3..], ip_hlen);
        f[l4 + 6..l4 + 8].copy_from_slice(&c.to_be_bytes());
    }
    Ok(f)
}

/// Lays out the RoCE v1 packet `p` with GRH `h`: EtherType 0x8915, the GRH (IPVer 6, traffic
/// class, flow label, payload length `ib_len` — transport headers to ICRC —, next header
/// 0x1B, hop limit, SGID, DGID), the transport headers, the payload of `len` bytes that
/// `fill` writes, pad and the v1 ICRC.
fn build_v1(
    p: &Packet<'_>,
    h: &Grh,
    transport: &TransportHeaders,
    (len, fill): (usize, impl FnOnce(&mut [u8])),
    ib_len: usize,
    icrc: bool,
) -> Result<Vec<u8>, WireError> {
    let l3 = p.eth.wire_len();
    let mut f = vec![0u8; l3 + GRH_LEN + ib_len];
    write_eth(&mut f, &p.eth, ETHERTYPE_ROCE_V1);
    h.write(&mut f[l3..l3 + GRH_LEN], ib_len)?;
    let bth = l3 + GRH_LEN;
    let hlen = transport.encode(&mut f[bth..])?;
    let data = bth + hlen;
    fill(&mut f[data..data + len]);
    if icrc {
        let icrc_at = f.len() - ICRC_LEN;
        let icrc = icrc::compute_grh(&f[l3..icrc_at])?;
        f[icrc_at..].copy_from_slice(&icrc.to_le_bytes());
    }
    Ok(f)
}

/// The UDP checksum to store for `datagram` (IP header of `ip_hlen` bytes, then UDP to the
/// end), its checksum field taken as zero; a computed 0 is sent as 0xFFFF.
fn udp_checksum(datagram: &[u8], ip_hlen: usize) -> u16 {
    let (ip, udp) = datagram.split_at(ip_hlen);
    let addrs = if ip_hlen == IPV4_HLEN {
        &ip[12..20]
    } else {
        &ip[8..40]
    };
    let len = udp.len();
    let pseudo = Sum::new().bytes(addrs).word(u16::from(IPPROTO_UDP));
    let pseudo = if ip_hlen == IPV4_HLEN {
        pseudo.word(len as u16)
    } else {
        pseudo.dword(len as u32)
    };
    let c = pseudo
        .bytes(&udp[..6])
        .plus(Sum::new().bytes(&udp[8..]))
        .checksum();
    if c == 0 {
        0xffff
    } else {
        c
    }
}

/// `frame[range]`, or a truncation error naming `what`.
fn slice<'a>(
    frame: &'a [u8],
    at: usize,
    len: usize,
    what: &'static str,
) -> Result<&'a [u8], WireError> {
    frame.get(at..at + len).ok_or(WireError::Truncated {
        what,
        need: len,
        have: frame.len().saturating_sub(at),
    })
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn addr<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

/// The Ethernet header of `frame` and the offset of the IP header.
fn parse_l2(frame: &[u8]) -> Result<(Ethernet, u16, usize), WireError> {
    let h = slice(frame, 0, ETH_HLEN, "Ethernet header")?;
    let mut eth = Ethernet {
        dst: addr(&h[0..6]),
        src: addr(&h[6..12]),
        vlan_tci: None,
    };
    let mut ethertype = be16(h, 12);
    let mut l3 = ETH_HLEN;
    if ethertype == ETHERTYPE_VLAN {
        let tag = slice(frame, ETH_HLEN, VLAN_HLEN, "802.1Q tag")?;
        eth.vlan_tci = Some(be16(tag, 0));
        ethertype = be16(tag, 2);
        l3 += VLAN_HLEN;
    }
    Ok((eth, ethertype, l3))
}

/// Parses and validates a received RoCE frame (RoCEv2, or RoCE v1 by its EtherType 0x8915).
pub fn parse(frame: &[u8]) -> Result<Packet<'_>, WireError> {
    parse_frame(frame, true)
}

/// [`parse`] of a frame looped back inside the card, its ICRC not checked
/// ([`build_with`]).
pub fn parse_looped(frame: &[u8]) -> Result<Packet<'_>, WireError> {
    parse_frame(frame, false)
}

/// [`parse`], the ICRC checked if `icrc`.
fn parse_frame(frame: &[u8], icrc: bool) -> Result<Packet<'_>, WireError> {
    let (eth, ethertype, l3) = parse_l2(frame)?;
    let rest = &frame[l3..];
    if ethertype == ETHERTYPE_ROCE_V1 {
        let (grh, body) = parse_grh(rest, icrc)?;
        return parse_transport(eth, Ip::Grh(grh), 0, UdpChecksum::Zero, body);
    }
    let (ip, ip_hlen, ip_total) = match ethertype {
        ETHERTYPE_IPV4 => {
            let h = slice(rest, 0, IPV4_HLEN, "IPv4 header")?;
            if h[0] >> 4 != 4 {
                return Err(WireError::IpVersion(h[0] >> 4));
            }
            if h[0] & 0xf != 5 {
                return Err(WireError::Ipv4Options(h[0] & 0xf));
            }
            let total = usize::from(be16(h, 2));
            if total < IPV4_HLEN + UDP_HLEN || total > rest.len() {
                return Err(WireError::IpLength {
                    claimed: total,
                    available: rest.len(),
                });
            }
            if Sum::new().bytes(h).fold() != 0xffff {
                let mut z = [0u8; IPV4_HLEN];
                z.copy_from_slice(h);
                z[10] = 0;
                z[11] = 0;
                return Err(WireError::Ipv4Checksum {
                    found: be16(h, 10),
                    expected: csum::checksum(&z),
                });
            }
            let frag = be16(h, 6);
            if frag & IPV4_FRAG != 0 {
                return Err(WireError::Fragment);
            }
            if h[9] != IPPROTO_UDP {
                return Err(WireError::NotUdp(h[9]));
            }
            let ip = Ipv4 {
                src: addr(&h[12..16]),
                dst: addr(&h[16..20]),
                dscp: h[1] >> 2,
                ecn: Ecn::from_tos(h[1]),
                ttl: h[8],
                id: be16(h, 4),
                dont_fragment: frag & IPV4_DF != 0,
            };
            (Ip::V4(ip), IPV4_HLEN, total)
        }
        ETHERTYPE_IPV6 => {
            let h = slice(rest, 0, IPV6_HLEN, "IPv6 header")?;
            if h[0] >> 4 != 6 {
                return Err(WireError::IpVersion(h[0] >> 4));
            }
            let total = IPV6_HLEN + usize::from(be16(h, 4));
            if total < IPV6_HLEN + UDP_HLEN || total > rest.len() {
                return Err(WireError::IpLength {
                    claimed: total,
                    available: rest.len(),
                });
            }
            if h[6] != IPPROTO_UDP {
                return Err(WireError::NotUdp(h[6]));
            }
            let word = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
            let tc = (word >> 20) as u8;
            let ip = Ipv6 {
                src: addr(&h[8..24]),
                dst: addr(&h[24..40]),
                dscp: tc >> 2,
                ecn: Ecn::from_tos(tc),
                flow_label: word & 0xf_ffff,
                hop_limit: h[7],
            };
            (Ip::V6(ip), IPV6_HLEN, total)
        }
        other => return Err(WireError::EtherType(other)),
    };
    // Bytes after the IP datagram are Ethernet padding.
    let datagram = &rest[..ip_total];
    let udp = &datagram[ip_hlen..];
    let udp_len = usize::from(be16(udp, 4));
    if udp_len != udp.len() {
        return Err(WireError::UdpLength {
            udp: udp_len,
            ip: udp.len(),
        });
    }
    let dport = be16(udp, 2);
    if dport != ROCEV2_PORT {
        return Err(WireError::UdpPort(dport));
    }
    let found = be16(udp, 6);
    let udp_checksum = if found == 0 {
        UdpChecksum::Zero
    } else {
        let expected = udp_checksum(datagram, ip_hlen);
        if found != expected {
            return Err(WireError::UdpChecksum { found, expected });
        }
        UdpChecksum::Compute
    };
    let need = UDP_HLEN + BTH_LEN + ICRC_LEN;
    if udp.len() < need {
        return Err(WireError::Truncated {
            what: "BTH and ICRC",
            need,
            have: udp.len(),
        });
    }
    if icrc {
        icrc::check(datagram)?;
    }
    let body = &udp[UDP_HLEN..udp.len() - ICRC_LEN];
    parse_transport(eth, ip, be16(udp, 0), udp_checksum, body)
}

/// The GRH of the RoCE v1 packet `rest` (from the GRH to the end of the frame) and its
/// transport bytes (BTH to pad), the ICRC checked if `icrc`; bytes after the GRH's payload length are
/// Ethernet padding.
fn parse_grh(rest: &[u8], icrc: bool) -> Result<(Grh, &[u8]), WireError> {
    let (grh, paylen) = Grh::read(rest)?;
    let total = GRH_LEN + paylen;
    if total > rest.len() {
        return Err(WireError::IpLength {
            claimed: total,
            available: rest.len(),
        });
    }
    let need = BTH_LEN + ICRC_LEN;
    if paylen < need {
        return Err(WireError::Truncated {
            what: "BTH and ICRC",
            need,
            have: paylen,
        });
    }
    let packet = &rest[..total];
    if icrc {
        icrc::check_grh(packet)?;
    }
    Ok((grh, &packet[GRH_LEN..total - ICRC_LEN]))
}

/// The packet whose transport bytes (BTH, extension headers, payload and pad; the ICRC
/// checked already) are `body`.
fn parse_transport<'a>(
    eth: Ethernet,
    ip: Ip,
    src_port: u16,
    udp_checksum: UdpChecksum,
    body: &'a [u8],
) -> Result<Packet<'a>, WireError> {
    let (t, hlen) = TransportHeaders::decode(body)?;
    if t.bth.tver != 0 {
        return Err(WireError::TransportVersion(t.bth.tver));
    }
    let data = &body[hlen..];
    let pad = usize::from(t.bth.pad);
    if !t.bth.opcode.info().payload {
        if !data.is_empty() {
            return Err(WireError::UnexpectedPayload {
                opcode: t.bth.opcode.value(),
                len: data.len(),
            });
        }
        if pad != 0 {
            return Err(WireError::PadCount {
                pad: t.bth.pad,
                len: 0,
            });
        }
    } else if pad > data.len() || !data.len().is_multiple_of(4) {
        return Err(WireError::PadCount {
            pad: t.bth.pad,
            len: data.len(),
        });
    }
    Ok(Packet {
        eth,
        ip,
        src_port,
        udp_checksum,
        bth: t.bth,
        ext: t.ext,
        payload: &data[..data.len() - pad],
    })
}

/// Rewrites the ECN codepoint of the IP header of `frame` (as a congested switch marks CE),
/// fixing the IPv4 header checksum. The ICRC does not cover ECN and stays valid; neither
/// checksum of UDP covers it. A RoCE v1 frame has no ECN field ([`WireError::NoEcn`]).
pub fn set_ecn(frame: &mut [u8], ecn: Ecn) -> Result<(), WireError> {
    let (_, ethertype, l3) = parse_l2(frame)?;
    match ethertype {
        ETHERTYPE_IPV4 => {
            slice(frame, l3, IPV4_HLEN, "IPv4 header")?;
            let h = &mut frame[l3..l3 + IPV4_HLEN];
            h[1] = (h[1] & !3) | ecn.bits();
            h[10] = 0;
            h[11] = 0;
            let c = csum::checksum(h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
        }
        ETHERTYPE_IPV6 => {
            slice(frame, l3, IPV6_HLEN, "IPv6 header")?;
            // The ECN bits are the low two bits of the traffic class: bits 5-4 of byte 1.
            let b = &mut frame[l3 + 1];
            *b = (*b & !0x30) | ecn.bits() << 4;
        }
        ETHERTYPE_ROCE_V1 => return Err(WireError::NoEcn),
        other => return Err(WireError::EtherType(other)),
    }
    Ok(())
}

#[cfg(test)]
#[path = "packet_tests.rs"]
mod tests;
