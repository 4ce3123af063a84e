//! The card's packet parser: Ethernet with up to two VLAN tags, IPv4 (options, fragments),
//! IPv6 (hop-by-hop, routing, destination-options and fragment headers), TCP and UDP, and one
//! level of tunnel — VXLAN (UDP destination port from a configurable set), GENEVE (with
//! options), GRE/NVGRE (checksum, key and sequence bits; transparent Ethernet bridging or IP
//! payload) and IP-in-IP — with the inner headers behind it.
//!
//! The result, [`Headers`], holds offsets only, so the offload code can rewrite the frame
//! while keeping it. Malformed or truncated input gives a [`ParseError`], never a panic.

use std::fmt;

/// Length of an Ethernet header without tags.
pub const ETH_HLEN: usize = 14;
/// Length of one VLAN tag.
pub const VLAN_HLEN: usize = 4;
/// Smallest Ethernet frame without FCS; shorter frames are padded on the wire.
pub const ETH_ZLEN: usize = 60;

/// EtherType values.
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// IPv6.
    pub const IPV6: u16 = 0x86dd;
    /// 802.1Q customer VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad service VLAN tag (QinQ outer tag).
    pub const QINQ: u16 = 0x88a8;
    /// Transparent Ethernet bridging (GRE/NVGRE, GENEVE payload).
    pub const TEB: u16 = 0x6558;
}

/// IP protocol numbers.
pub mod ipproto {
    /// IPv6 hop-by-hop options.
    pub const HOPOPTS: u8 = 0;
    /// IPv4 in IP.
    pub const IPIP: u8 = 4;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// IPv6 in IP.
    pub const IPV6: u8 = 41;
    /// IPv6 routing header.
    pub const ROUTING: u8 = 43;
    /// IPv6 fragment header.
    pub const FRAGMENT: u8 = 44;
    /// GRE.
    pub const GRE: u8 = 47;
    /// IPv6 destination options.
    pub const DSTOPTS: u8 = 60;
}

/// The VXLAN UDP port mlx5_core registers at start-up (IANA).
pub const VXLAN_PORT: u16 = 4789;
/// The GENEVE UDP port (IANA), the only one mlx5e offloads.
pub const GENEVE_PORT: u16 = 6081;

/// Which tunnels the parser recognises, and how much it trusts length fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseConfig {
    /// UDP destination ports carrying VXLAN (`ADD_VXLAN_UDP_DPORT`); 4789 by default.
    pub vxlan_ports: Vec<u16>,
    /// UDP destination port carrying GENEVE, if GENEVE is parsed.
    pub geneve_port: Option<u16>,
    /// Parse GRE (protocol 47) carrying Ethernet (0x6558) or IP.
    pub gre: bool,
    /// Parse IPv4/IPv6 in IP (protocols 4 and 41).
    pub ip_in_ip: bool,
    /// Take IP and UDP length fields as the truth and reject frames that contradict them (the
    /// receive side). When false (the send side, where LSO superframes carry arbitrary
    /// lengths), every layer extends to the end of the frame.
    pub trust_lengths: bool,
}

impl Default for ParseConfig {
    fn default() -> Self {
        ParseConfig {
            vxlan_ports: vec![VXLAN_PORT],
            geneve_port: Some(GENEVE_PORT),
            gre: true,
            ip_in_ip: true,
            trust_lengths: true,
        }
    }
}

impl ParseConfig {
    /// The send-side variant of this configuration (length fields not trusted).
    pub fn for_tx(&self) -> ParseConfig {
        ParseConfig {
            trust_lengths: false,
            ..self.clone()
        }
    }
}

/// Which headers a [`ParseError`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    /// The outer (or only) headers.
    Outer,
    /// The tunnel header.
    Tunnel,
    /// The headers inside a tunnel.
    Inner,
}

/// Why a frame could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// The frame ends inside a header.
    Truncated,
    /// A header field is inconsistent (version, header length, total length, flags).
    Malformed,
}

/// A frame the parser rejects: where and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Which headers.
    pub depth: Depth,
    /// Truncated or malformed.
    pub kind: ParseErrorKind,
    /// The header or field at fault.
    pub what: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ParseErrorKind::Truncated => "truncated",
            ParseErrorKind::Malformed => "malformed",
        };
        write!(f, "{kind} {:?} {}", self.depth, self.what)
    }
}

impl std::error::Error for ParseError {}

/// One VLAN tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vlan {
    /// Tag protocol identifier (0x8100 or 0x88a8).
    pub tpid: u16,
    /// Tag control information (PCP, DEI, VID).
    pub tci: u16,
}

/// The Ethernet header and its tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L2 {
    /// Offset of the destination MAC.
    pub offset: usize,
    /// Number of VLAN tags (0..=2).
    pub vlan_count: usize,
    /// The tags, outermost first (valid up to `vlan_count`).
    pub vlans: [Vlan; 2],
    /// The EtherType after the tags.
    pub ethertype: u16,
    /// Length of the header with its tags.
    pub len: usize,
}

impl L2 {
    /// The outermost tag, if any.
    pub fn first_vlan(&self) -> Option<Vlan> {
        (self.vlan_count > 0).then_some(self.vlans[0])
    }

    /// Offset of the next header.
    pub fn end(&self) -> usize {
        self.offset + self.len
    }
}

/// IP version of an [`L3`] header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpVersion {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

/// An IP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L3 {
    /// Offset of the header.
    pub offset: usize,
    /// IPv4 or IPv6.
    pub version: IpVersion,
    /// Header length: IPv4 IHL × 4, IPv6 40 plus the extension headers parsed.
    pub header_len: usize,
    /// End of the datagram in the frame (from its length field when lengths are trusted,
    /// else the end of the frame); bytes after it are Ethernet padding.
    pub end: usize,
    /// The upper-layer protocol (after IPv6 extension headers).
    pub proto: u8,
    /// A fragment (IPv4 MF or offset, IPv6 fragment header): no L4 header is parsed.
    pub fragment: bool,
}

impl L3 {
    /// Offset of the upper-layer header.
    pub fn payload(&self) -> usize {
        self.offset + self.header_len
    }

    /// Range of the source address.
    pub fn src_range(&self) -> std::ops::Range<usize> {
        match self.version {
            IpVersion::V4 => self.offset + 12..self.offset + 16,
            IpVersion::V6 => self.offset + 8..self.offset + 24,
        }
    }

    /// Range of the destination address.
    pub fn dst_range(&self) -> std::ops::Range<usize> {
        match self.version {
            IpVersion::V4 => self.offset + 16..self.offset + 20,
            IpVersion::V6 => self.offset + 24..self.offset + 40,
        }
    }
}

/// Kind of an [`L4`] header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L4Kind {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// Any other protocol (the number is [`L3::proto`]).
    Other,
}

/// The transport header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L4 {
    /// Offset of the header.
    pub offset: usize,
    /// TCP, UDP or other.
    pub kind: L4Kind,
    /// Header length: TCP data offset × 4, UDP 8, other 0.
    pub header_len: usize,
    /// Source port (TCP/UDP).
    pub src_port: u16,
    /// Destination port (TCP/UDP).
    pub dst_port: u16,
}

impl L4 {
    /// Offset of the payload.
    pub fn payload(&self) -> usize {
        self.offset + self.header_len
    }
}

/// The headers of one layer: outer, or inside a tunnel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layer {
    /// Ethernet header (absent inside GRE/GENEVE carrying IP, IP-in-IP).
    pub l2: Option<L2>,
    /// IP header, if the EtherType is IPv4 or IPv6.
    pub l3: Option<L3>,
    /// Transport header, if IP and not a fragment.
    pub l4: Option<L4>,
}

/// The tunnel kinds the parser recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunnelKind {
    /// VXLAN with its network identifier.
    Vxlan {
        /// VXLAN network identifier.
        vni: u32,
    },
    /// GENEVE with its network identifier, options length and protocol.
    Geneve {
        /// Virtual network identifier.
        vni: u32,
        /// Length of the options in bytes.
        opt_len: usize,
        /// Protocol of the payload.
        proto: u16,
    },
    /// GRE; NVGRE is GRE with a key and protocol 0x6558.
    Gre {
        /// The key, if the K bit is set.
        key: Option<u32>,
        /// The C bit: the header carries a checksum.
        csum: bool,
        /// Protocol of the payload.
        proto: u16,
    },
    /// IPv4 or IPv6 directly in IP.
    IpInIp,
    /// Headers located by the send WQE's software parser offsets, not recognised by kind.
    Swp,
}

/// A tunnel header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunnel {
    /// Which tunnel.
    pub kind: TunnelKind,
    /// Offset of the tunnel header (after the outer UDP header for UDP tunnels).
    pub offset: usize,
    /// Its length.
    pub len: usize,
}

/// Everything the parser found in a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Headers {
    /// Total length of the frame parsed.
    pub frame_len: usize,
    /// The outer (or only) headers; `outer.l2` is always present.
    pub outer: Layer,
    /// The tunnel, if one was recognised.
    pub tunnel: Option<Tunnel>,
    /// The headers inside the tunnel.
    pub inner: Option<Layer>,
}

impl Headers {
    /// The outer Ethernet header.
    pub fn l2(&self) -> &L2 {
        // `parse` always fills it; an all-zero header only for hand-built values.
        const NONE: L2 = L2 {
            offset: 0,
            vlan_count: 0,
            vlans: [Vlan { tpid: 0, tci: 0 }; 2],
            ethertype: 0,
            len: ETH_HLEN,
        };
        self.outer.l2.as_ref().unwrap_or(&NONE)
    }

    /// The innermost layer: the inner one of a tunnel, else the outer one.
    pub fn innermost(&self) -> &Layer {
        self.inner.as_ref().unwrap_or(&self.outer)
    }

    /// End of the innermost transport header (the header length LSO replicates), if the
    /// innermost layer has a TCP or UDP header.
    pub fn transport_end(&self) -> Option<usize> {
        let l4 = self.innermost().l4?;
        matches!(l4.kind, L4Kind::Tcp | L4Kind::Udp).then(|| l4.payload())
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
        *b.get(at + 2)?,
        *b.get(at + 3)?,
    ]))
}

fn err(depth: Depth, kind: ParseErrorKind, what: &'static str) -> ParseError {
    ParseError { depth, kind, what }
}

fn truncated(depth: Depth, what: &'static str) -> ParseError {
    err(depth, ParseErrorKind::Truncated, what)
}

fn malformed(depth: Depth, what: &'static str) -> ParseError {
    err(depth, ParseErrorKind::Malformed, what)
}

/// Parses a frame.
pub fn parse(frame: &[u8], cfg: &ParseConfig) -> Result<Headers, ParseError> {
    let l2 = parse_l2(frame, 0, frame.len(), Depth::Outer)?;
    let mut h = Headers {
        frame_len: frame.len(),
        outer: Layer {
            l2: Some(l2),
            l3: None,
            l4: None,
        },
        tunnel: None,
        inner: None,
    };
    let Some(l3) = parse_l3(
        frame,
        l2.end(),
        frame.len(),
        l2.ethertype,
        cfg,
        Depth::Outer,
    )?
    else {
        return Ok(h);
    };
    h.outer.l3 = Some(l3);
    if l3.fragment {
        return Ok(h);
    }
    let l4 = parse_l4(frame, &l3, cfg, Depth::Outer)?;
    h.outer.l4 = Some(l4);

    // One level of tunnel, recognised by the outer transport header.
    let at = l4.offset;
    let end = l3.end;
    let (tunnel, next) = match (l4.kind, l3.proto) {
        (L4Kind::Udp, _) if cfg.vxlan_ports.contains(&l4.dst_port) => {
            let t = at + 8;
            let flags = *frame
                .get(t)
                .ok_or(truncated(Depth::Tunnel, "VXLAN header"))?;
            let vni = be32(frame, t + 4)
                .filter(|_| t + 8 <= end)
                .ok_or(truncated(Depth::Tunnel, "VXLAN header"))?;
            if flags & 0x08 == 0 {
                return Err(malformed(Depth::Tunnel, "VXLAN flags (I bit clear)"));
            }
            let kind = TunnelKind::Vxlan { vni: vni >> 8 };
            (
                Tunnel {
                    kind,
                    offset: t,
                    len: 8,
                },
                Next::Eth,
            )
        }
        (L4Kind::Udp, _) if cfg.geneve_port == Some(l4.dst_port) => {
            let t = at + 8;
            let (Some(b0), Some(proto), Some(vni)) =
                (frame.get(t), be16(frame, t + 2), be32(frame, t + 4))
            else {
                return Err(truncated(Depth::Tunnel, "GENEVE header"));
            };
            if b0 >> 6 != 0 {
                return Err(malformed(Depth::Tunnel, "GENEVE version"));
            }
            let opt_len = usize::from(b0 & 0x3f) * 4;
            let len = 8 + opt_len;
            if t + len > end {
                return Err(truncated(Depth::Tunnel, "GENEVE options"));
            }
            let next = next_for(proto).ok_or(malformed(Depth::Tunnel, "GENEVE protocol"))?;
            let kind = TunnelKind::Geneve {
                vni: vni >> 8,
                opt_len,
                proto,
            };
            (
                Tunnel {
                    kind,
                    offset: t,
                    len,
                },
                next,
            )
        }
        (L4Kind::Other, ipproto::GRE) if cfg.gre => {
            let (Some(flags), Some(proto)) = (be16(frame, at), be16(frame, at + 2)) else {
                return Err(truncated(Depth::Tunnel, "GRE header"));
            };
            // Version 0 without routing is all GRE tunnels use; others are not parsed.
            if flags & 0x4007 != 0 {
                return Ok(h);
            }
            let Some(next) = next_for(proto) else {
                return Ok(h);
            };
            let (c, k, s) = (
                flags & 0x8000 != 0,
                flags & 0x2000 != 0,
                flags & 0x1000 != 0,
            );
            let len = 4 + 4 * (usize::from(c) + usize::from(k) + usize::from(s));
            if at + len > end {
                return Err(truncated(Depth::Tunnel, "GRE header"));
            }
            let key_at = at + 4 + 4 * usize::from(c);
            let key = if k { be32(frame, key_at) } else { None };
            let kind = TunnelKind::Gre {
                key,
                csum: c,
                proto,
            };
            (
                Tunnel {
                    kind,
                    offset: at,
                    len,
                },
                next,
            )
        }
        (L4Kind::Other, ipproto::IPIP) if cfg.ip_in_ip => (
            Tunnel {
                kind: TunnelKind::IpInIp,
                offset: at,
                len: 0,
            },
            Next::Ip(ethertype::IPV4),
        ),
        (L4Kind::Other, ipproto::IPV6) if cfg.ip_in_ip => (
            Tunnel {
                kind: TunnelKind::IpInIp,
                offset: at,
                len: 0,
            },
            Next::Ip(ethertype::IPV6),
        ),
        _ => return Ok(h),
    };
    h.tunnel = Some(tunnel);
    let start = tunnel.offset + tunnel.len;
    let inner_cfg = ParseConfig {
        vxlan_ports: Vec::new(),
        geneve_port: None,
        gre: false,
        ip_in_ip: false,
        trust_lengths: cfg.trust_lengths,
    };
    let mut inner = Layer::default();
    let ethertype = match next {
        Next::Eth => {
            let l2 = parse_l2(frame, start, end, Depth::Inner)?;
            inner.l2 = Some(l2);
            l2.ethertype
        }
        Next::Ip(et) => et,
    };
    let l3_at = inner.l2.map_or(start, |l2| l2.end());
    if let Some(l3) = parse_l3(frame, l3_at, end, ethertype, &inner_cfg, Depth::Inner)? {
        inner.l3 = Some(l3);
        if !l3.fragment {
            inner.l4 = Some(parse_l4(frame, &l3, &inner_cfg, Depth::Inner)?);
        }
    }
    h.inner = Some(inner);
    Ok(h)
}

/// What follows a tunnel header.
enum Next {
    /// An Ethernet frame.
    Eth,
    /// An IP packet of the given EtherType.
    Ip(u16),
}

fn next_for(proto: u16) -> Option<Next> {
    match proto {
        ethertype::TEB => Some(Next::Eth),
        ethertype::IPV4 | ethertype::IPV6 => Some(Next::Ip(proto)),
        _ => None,
    }
}

fn parse_l2(frame: &[u8], at: usize, end: usize, depth: Depth) -> Result<L2, ParseError> {
    if at + ETH_HLEN > end.min(frame.len()) {
        return Err(truncated(depth, "Ethernet header"));
    }
    let mut l2 = L2 {
        offset: at,
        vlan_count: 0,
        vlans: [Vlan { tpid: 0, tci: 0 }; 2],
        ethertype: be16(frame, at + 12).unwrap_or(0),
        len: ETH_HLEN,
    };
    while matches!(l2.ethertype, ethertype::VLAN | ethertype::QINQ) && l2.vlan_count < 2 {
        let tag = at + l2.len;
        let (Some(tci), Some(next)) = (be16(frame, tag), be16(frame, tag + 2)) else {
            return Err(truncated(depth, "VLAN tag"));
        };
        if tag + VLAN_HLEN > end {
            return Err(truncated(depth, "VLAN tag"));
        }
        l2.vlans[l2.vlan_count] = Vlan {
            tpid: l2.ethertype,
            tci,
        };
        l2.vlan_count += 1;
        l2.ethertype = next;
        l2.len += VLAN_HLEN;
    }
    Ok(l2)
}

/// Parses the IP header at `at` if `ethertype` is IP; `end` bounds the enclosing datagram.
fn parse_l3(
    frame: &[u8],
    at: usize,
    end: usize,
    ethertype: u16,
    cfg: &ParseConfig,
    depth: Depth,
) -> Result<Option<L3>, ParseError> {
    let end = end.min(frame.len());
    match ethertype {
        ethertype::IPV4 => parse_ipv4(frame, at, end, cfg, depth).map(Some),
        ethertype::IPV6 => parse_ipv6(frame, at, end, cfg, depth).map(Some),
        _ => Ok(None),
    }
}

fn parse_ipv4(
    frame: &[u8],
    at: usize,
    end: usize,
    cfg: &ParseConfig,
    depth: Depth,
) -> Result<L3, ParseError> {
    if at + 20 > end {
        return Err(truncated(depth, "IPv4 header"));
    }
    let vihl = frame[at];
    if vihl >> 4 != 4 {
        return Err(malformed(depth, "IPv4 version"));
    }
    let header_len = usize::from(vihl & 0xf) * 4;
    if header_len < 20 {
        return Err(malformed(depth, "IPv4 header length"));
    }
    if at + header_len > end {
        return Err(truncated(depth, "IPv4 options"));
    }
    let tot_len = usize::from(be16(frame, at + 2).unwrap_or(0));
    let dgram_end = if cfg.trust_lengths {
        if tot_len < header_len {
            return Err(malformed(depth, "IPv4 total length"));
        }
        if at + tot_len > end {
            return Err(truncated(depth, "IPv4 datagram"));
        }
        at + tot_len
    } else {
        end
    };
    let frag = be16(frame, at + 6).unwrap_or(0);
    Ok(L3 {
        offset: at,
        version: IpVersion::V4,
        header_len,
        end: dgram_end,
        proto: frame[at + 9],
        fragment: frag & 0x3fff != 0,
    })
}

fn parse_ipv6(
    frame: &[u8],
    at: usize,
    end: usize,
    cfg: &ParseConfig,
    depth: Depth,
) -> Result<L3, ParseError> {
    if at + 40 > end {
        return Err(truncated(depth, "IPv6 header"));
    }
    if frame[at] >> 4 != 6 {
        return Err(malformed(depth, "IPv6 version"));
    }
    let payload_len = usize::from(be16(frame, at + 4).unwrap_or(0));
    let dgram_end = if cfg.trust_lengths {
        if payload_len == 0 {
            return Err(malformed(depth, "IPv6 payload length (jumbogram)"));
        }
        if at + 40 + payload_len > end {
            return Err(truncated(depth, "IPv6 datagram"));
        }
        at + 40 + payload_len
    } else {
        end
    };
    let mut l3 = L3 {
        offset: at,
        version: IpVersion::V6,
        header_len: 40,
        end: dgram_end,
        proto: frame[at + 6],
        fragment: false,
    };
    // Extension headers, at most eight.
    for _ in 0..8 {
        let x = at + l3.header_len;
        match l3.proto {
            ipproto::HOPOPTS | ipproto::ROUTING | ipproto::DSTOPTS => {
                let (Some(&next), Some(&len)) = (frame.get(x), frame.get(x + 1)) else {
                    return Err(truncated(depth, "IPv6 extension header"));
                };
                let len = (usize::from(len) + 1) * 8;
                if x + len > dgram_end {
                    return Err(truncated(depth, "IPv6 extension header"));
                }
                l3.proto = next;
                l3.header_len += len;
            }
            ipproto::FRAGMENT => {
                if x + 8 > dgram_end {
                    return Err(truncated(depth, "IPv6 fragment header"));
                }
                let off_m = be16(frame, x + 2).unwrap_or(0);
                l3.proto = frame[x];
                l3.header_len += 8;
                // An atomic fragment (offset 0, M clear) is a whole datagram.
                l3.fragment = off_m & 0xfff9 != 0;
            }
            _ => return Ok(l3),
        }
    }
    Err(malformed(depth, "IPv6 extension header chain"))
}

fn parse_l4(frame: &[u8], l3: &L3, cfg: &ParseConfig, depth: Depth) -> Result<L4, ParseError> {
    let at = l3.payload();
    let end = l3.end;
    let mut l4 = L4 {
        offset: at,
        kind: L4Kind::Other,
        header_len: 0,
        src_port: 0,
        dst_port: 0,
    };
    match l3.proto {
        ipproto::TCP => {
            if at + 20 > end {
                return Err(truncated(depth, "TCP header"));
            }
            let doff = usize::from(frame[at + 12] >> 4) * 4;
            if doff < 20 {
                return Err(malformed(depth, "TCP data offset"));
            }
            if at + doff > end {
                return Err(truncated(depth, "TCP options"));
            }
            l4.kind = L4Kind::Tcp;
            l4.header_len = doff;
        }
        ipproto::UDP => {
            if at + 8 > end {
                return Err(truncated(depth, "UDP header"));
            }
            if cfg.trust_lengths {
                let len = usize::from(be16(frame, at + 4).unwrap_or(0));
                if len < 8 {
                    return Err(malformed(depth, "UDP length"));
                }
                if at + len > end {
                    return Err(truncated(depth, "UDP datagram"));
                }
            }
            l4.kind = L4Kind::Udp;
            l4.header_len = 8;
        }
        _ => return Ok(l4),
    }
    l4.src_port = be16(frame, at).unwrap_or(0);
    l4.dst_port = be16(frame, at + 2).unwrap_or(0);
    Ok(l4)
}

/// Software parser offsets of a send WQE's Ethernet segment (`swp_*`, in bytes, already
/// multiplied by two), with the kinds from `swp_flags`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swp {
    /// Outer L3 header offset (0: not given).
    pub outer_l3: usize,
    /// Outer L4 header offset (0: not given).
    pub outer_l4: usize,
    /// Inner L3 header offset (0: not given).
    pub inner_l3: usize,
    /// Inner L4 header offset (0: not given).
    pub inner_l4: usize,
    /// The outer L3 header is IPv6.
    pub outer_ipv6: bool,
    /// The outer L4 header is UDP (else TCP).
    pub outer_udp: bool,
    /// The inner L3 header is IPv6.
    pub inner_ipv6: bool,
    /// The inner L4 header is UDP (else TCP).
    pub inner_udp: bool,
}

impl Swp {
    /// Whether any offset is set: ConnectX-4 then uses only these offsets and skips its own
    /// parser.
    pub fn is_set(&self) -> bool {
        self.outer_l3 | self.outer_l4 | self.inner_l3 | self.inner_l4 != 0
    }
}

/// Headers located by software parser offsets (send side only; lengths are not trusted). The
/// L2 header is parsed normally; every given L3/L4 header must lie inside the frame.
pub fn parse_swp(frame: &[u8], swp: &Swp) -> Result<Headers, ParseError> {
    let l2 = parse_l2(frame, 0, frame.len(), Depth::Outer)?;
    let mut h = Headers {
        frame_len: frame.len(),
        outer: Layer {
            l2: Some(l2),
            ..Layer::default()
        },
        tunnel: None,
        inner: None,
    };
    let cfg = ParseConfig {
        vxlan_ports: Vec::new(),
        geneve_port: None,
        gre: false,
        ip_in_ip: false,
        trust_lengths: false,
    };
    let layer = |l3_at: usize, l4_at: usize, v6: bool, udp: bool, depth| {
        let mut layer = Layer::default();
        if l3_at != 0 {
            let et = if v6 { ethertype::IPV6 } else { ethertype::IPV4 };
            let mut l3 = parse_l3(frame, l3_at, frame.len(), et, &cfg, depth)?
                .ok_or(malformed(depth, "software parser L3"))?;
            if l4_at != 0 {
                if l4_at < l3.offset + 20 || l4_at > frame.len() {
                    return Err(malformed(depth, "software parser L4 offset"));
                }
                l3.header_len = l4_at - l3.offset;
                l3.proto = if udp { ipproto::UDP } else { ipproto::TCP };
                l3.fragment = false;
                layer.l4 = Some(parse_l4(frame, &l3, &cfg, depth)?);
            }
            layer.l3 = Some(l3);
        }
        Ok(layer)
    };
    let outer = layer(
        swp.outer_l3,
        swp.outer_l4,
        swp.outer_ipv6,
        swp.outer_udp,
        Depth::Outer,
    )?;
    h.outer.l3 = outer.l3;
    h.outer.l4 = outer.l4;
    if swp.inner_l3 != 0 {
        let inner = layer(
            swp.inner_l3,
            swp.inner_l4,
            swp.inner_ipv6,
            swp.inner_udp,
            Depth::Inner,
        )?;
        let offset = h
            .outer
            .l4
            .map(|l4| l4.payload())
            .or(h.outer.l3.map(|l3| l3.payload()))
            .unwrap_or(l2.end());
        if swp.inner_l3 < offset {
            return Err(malformed(Depth::Inner, "software parser inner offset"));
        }
        h.tunnel = Some(Tunnel {
            kind: TunnelKind::Swp,
            offset,
            len: swp.inner_l3 - offset,
        });
        h.inner = Some(inner);
    }
    Ok(h)
}
