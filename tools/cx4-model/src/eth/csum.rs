//! Internet checksums (RFC 1071): IPv4 header, TCP/UDP with the IPv4 and IPv6
//! pseudo-headers; the send-side checksum offload of an Ethernet WQE's `cs_flags` (outer and
//! inner), and the receive-side validation the CQE reports.
//!
//! Receive side, as mlx5e reads it (en_rx.c `mlx5e_handle_csum`): by default the stack gets
//! `CHECKSUM_COMPLETE` from the CQE's `check_sum`, the 16-bit one's-complement sum of the
//! packet from the first IP header to the end of the IP datagram (mlx5e adds VLAN header bytes
//! left in the frame and Ethernet padding itself); frames of 64 bytes or less, non-IP frames
//! and the `rx_no_csum_complete` mode use `CHECKSUM_UNNECESSARY` when both `L3_OK` and `L4_OK`
//! are set, with `csum_level` 1 when the CQE says the packet was tunnelled.

use cx4_hw::wqe::CsFlags;

use super::frame::{Headers, IpVersion, L4Kind, Layer, L3, L4};

/// A one's-complement sum under construction, over big-endian 16-bit words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sum(u64);

impl Sum {
    /// The empty sum.
    pub const fn new() -> Sum {
        Sum(0)
    }

    /// Adds `data` as big-endian 16-bit words starting at an even position; an odd last
    /// byte is padded with zero, so only the last piece of a checksummed range may be odd.
    pub fn bytes(self, data: &[u8]) -> Sum {
        let mut acc = self.0;
        let mut words = data.chunks_exact(4);
        for w in &mut words {
            acc += u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
        }
        let rest = words.remainder();
        let mut tail = [0u8; 4];
        tail[..rest.len()].copy_from_slice(rest);
        acc += u64::from(u32::from_be_bytes(tail));
        Sum(acc)
    }

    /// Adds one 16-bit word.
    pub fn word(self, v: u16) -> Sum {
        Sum(self.0 + u64::from(v))
    }

    /// Adds a 32-bit value as two words.
    pub fn dword(self, v: u32) -> Sum {
        Sum(self.0 + u64::from(v))
    }

    /// Adds another sum (of a range that starts at an even offset after this one's).
    pub fn plus(self, other: Sum) -> Sum {
        Sum(self.0 + other.0)
    }

    /// The folded 16-bit one's-complement sum (not inverted): what a CQE's `check_sum` holds.
    pub fn fold(self) -> u16 {
        let mut s = self.0;
        while s >> 16 != 0 {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    /// The checksum to store: the inverted folded sum.
    pub fn checksum(self) -> u16 {
        !self.fold()
    }
}

/// The one's-complement checksum of `data` (RFC 1071).
pub fn checksum(data: &[u8]) -> u16 {
    Sum::new().bytes(data).checksum()
}

/// Sum of the TCP/UDP pseudo-header of `l3` for upper-layer protocol `proto` and length
/// `len`.
pub fn pseudo_header(frame: &[u8], l3: &L3, proto: u8, len: usize) -> Sum {
    let addrs = &frame[l3.src_range().start..l3.dst_range().end];
    let s = Sum::new().bytes(addrs).word(u16::from(proto));
    match l3.version {
        IpVersion::V4 => s.word(len as u16),
        IpVersion::V6 => s.dword(len as u32),
    }
}

/// Offset of the checksum field inside a TCP or UDP header.
pub fn l4_csum_offset(kind: L4Kind) -> Option<usize> {
    match kind {
        L4Kind::Tcp => Some(16),
        L4Kind::Udp => Some(6),
        L4Kind::Other => None,
    }
}

/// The IPv4 header checksum of `l3` (its checksum field taken as zero).
pub fn ipv4_header_checksum(frame: &[u8], l3: &L3) -> u16 {
    let h = &frame[l3.offset..l3.offset + l3.header_len];
    Sum::new().bytes(&h[..10]).bytes(&h[12..]).checksum()
}

/// Writes the IPv4 header checksum of `l3` (nothing for IPv6).
pub fn fill_ipv4(frame: &mut [u8], l3: &L3) {
    if l3.version == IpVersion::V4 {
        let c = ipv4_header_checksum(frame, l3);
        frame[l3.offset + 10..l3.offset + 12].copy_from_slice(&c.to_be_bytes());
    }
}

/// Whether the IPv4 header checksum of `l3` is right (always for IPv6).
pub fn ipv4_ok(frame: &[u8], l3: &L3) -> bool {
    l3.version == IpVersion::V6
        || Sum::new()
            .bytes(&frame[l3.offset..l3.offset + l3.header_len])
            .fold()
            == 0xffff
}

/// The TCP/UDP checksum of the segment `l4.offset..l3.end` (its checksum field taken as
/// zero); UDP's computed 0 is sent as 0xffff. `None` for other protocols.
pub fn l4_checksum(frame: &[u8], l3: &L3, l4: &L4) -> Option<u16> {
    let field = l4.offset + l4_csum_offset(l4.kind)?;
    let len = l3.end - l4.offset;
    let c = pseudo_header(frame, l3, l3.proto, len)
        .bytes(&frame[l4.offset..field])
        .plus(Sum::new().bytes(&frame[field + 2..l3.end]))
        .checksum();
    Some(if c == 0 && l4.kind == L4Kind::Udp {
        0xffff
    } else {
        c
    })
}

/// Writes the TCP/UDP checksum of `l4` (nothing for other protocols).
pub fn fill_l4(frame: &mut [u8], l3: &L3, l4: &L4) {
    if let (Some(c), Some(off)) = (l4_checksum(frame, l3, l4), l4_csum_offset(l4.kind)) {
        frame[l4.offset + off..l4.offset + off + 2].copy_from_slice(&c.to_be_bytes());
    }
}

/// Whether the TCP/UDP checksum of `l4` is right. A UDP checksum of zero means "none" and
/// passes over IPv4 only; a UDP length that disagrees with the IP length fails.
pub fn l4_ok(frame: &[u8], l3: &L3, l4: &L4) -> bool {
    let len = l3.end - l4.offset;
    match l4.kind {
        L4Kind::Other => false,
        L4Kind::Udp => {
            let udp_len = u16::from_be_bytes([frame[l4.offset + 4], frame[l4.offset + 5]]);
            let field = u16::from_be_bytes([frame[l4.offset + 6], frame[l4.offset + 7]]);
            if usize::from(udp_len) != len {
                false
            } else if field == 0 {
                l3.version == IpVersion::V4
            } else {
                sums_to_ones(frame, l3, l4, len)
            }
        }
        L4Kind::Tcp => sums_to_ones(frame, l3, l4, len),
    }
}

fn sums_to_ones(frame: &[u8], l3: &L3, l4: &L4, len: usize) -> bool {
    pseudo_header(frame, l3, l3.proto, len)
        .bytes(&frame[l4.offset..l3.end])
        .fold()
        == 0xffff
}

/// Applies the send-side checksum offload of `flags` to `frame` as parsed in `h`, innermost
/// first (the outer UDP checksum covers the inner headers). Returns the requests that were
/// carried out: inner requests need a recognised tunnel, L3 requests an IPv4 header, L4
/// requests a TCP or UDP header outside a fragment.
pub fn offload_tx(frame: &mut [u8], h: &Headers, flags: CsFlags) -> CsFlags {
    let mut done = CsFlags::empty();
    let mut apply = |frame: &mut [u8], layer: &Layer, l3_flag: CsFlags, l4_flag: CsFlags| {
        let Some(l3) = layer.l3 else {
            return;
        };
        if flags.contains(l4_flag) {
            if let Some(l4) = layer.l4.filter(|l4| l4.kind != L4Kind::Other) {
                fill_l4(frame, &l3, &l4);
                done |= l4_flag;
            }
        }
        if flags.contains(l3_flag) && l3.version == IpVersion::V4 {
            fill_ipv4(frame, &l3);
            done |= l3_flag;
        }
    };
    if let Some(inner) = h.inner.as_ref() {
        apply(frame, inner, CsFlags::L3_INNER, CsFlags::L4_INNER);
    }
    apply(frame, &h.outer, CsFlags::L3, CsFlags::L4);
    done
}

/// The receive-side checksum report of a frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxCsum {
    /// The reported IP header is good (IPv4 checksum right, or IPv6); for a tunnelled report
    /// the outer and the inner one.
    pub l3_ok: bool,
    /// The reported TCP/UDP checksum is good; for a tunnelled report the outer UDP checksum
    /// (or GRE/IP-in-IP) and the inner TCP/UDP checksum.
    pub l4_ok: bool,
    /// The CQE reports the inner headers (`tls_outer_l3_tunneled` bit 0).
    pub tunneled: bool,
    /// `check_sum` of the CQE: the folded sum from the outer IP header to the end of its
    /// datagram (from the end of the L2 header to the end of the frame for non-IP frames).
    pub check_sum: u16,
}

/// Validates the checksums of a received frame. `report_inner`: the TIR asked for tunnel
/// offloads (`tunneled_offload_en`), so a recognised tunnel is reported by its inner headers.
pub fn rx_checksum(frame: &[u8], h: &Headers, report_inner: bool) -> RxCsum {
    let layer_ok = |layer: &Layer| -> (bool, bool) {
        let Some(l3) = layer.l3 else {
            return (false, false);
        };
        let l3_ok = ipv4_ok(frame, &l3);
        let l4_ok = match layer.l4 {
            Some(l4) if !l3.fragment => l4_ok(frame, &l3, &l4),
            _ => false,
        };
        (l3_ok, l4_ok)
    };
    let span = match h.outer.l3 {
        Some(l3) => l3.offset..l3.end,
        None => h.l2().end().min(frame.len())..frame.len(),
    };
    let check_sum = Sum::new().bytes(&frame[span]).fold();
    let (o3, o4) = layer_ok(&h.outer);
    match h.inner.as_ref().filter(|_| report_inner) {
        Some(inner) => {
            let (i3, i4) = layer_ok(inner);
            // The outer transport of a UDP tunnel must check too; GRE and IP-in-IP have
            // none to check (a GRE checksum is not verified).
            let outer_transport_ok = match h.outer.l4 {
                Some(l4) if l4.kind == L4Kind::Udp => o4,
                _ => true,
            };
            RxCsum {
                l3_ok: o3 && i3,
                l4_ok: outer_transport_ok && i4,
                tunneled: true,
                check_sum,
            }
        }
        None => RxCsum {
            l3_ok: o3,
            l4_ok: o4,
            tunneled: false,
            check_sum,
        },
    }
}
