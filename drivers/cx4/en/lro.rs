// SPDX-License-Identifier: GPL-2.0
//! Large receive offload (en_rx.c `mlx5e_lro_update_hdr`, en/tir.c LRO settings): a TIR
//! with `packet_merge_mask` makes the device merge in-sequence TCP segments of a flow into
//! one receive WQE. The merged packet arrives with the first segment's headers; its CQE
//! carries what the headers must become (segment count, smallest TTL, last ACK and window,
//! PSH) and, in `check_sum`, the one's-complement sum of all the TCP payload. The driver
//! rewrites the IP length and checksum and the TCP flags, ACK, window and checksum so that
//! the packet is what the segments would have been as one, and hands it up as a GSO packet
//! of `lro_num_seg` segments (the stack can forward or resegment it).

use cx4_hw::{
    cq::cqe::l4_hdr_type,
    tir::packet_merge, //
};
use kernel::prelude::*;

use crate::{
    en::rq::{
        LroCqe,
        RxInfo, //
    },
    tir::TirLro,
};

/// The LRO timeout mlx5e asks for, µs (en.h `MLX5E_DEFAULT_LRO_TIMEOUT`).
const WANTED_TIMEOUT_US: u32 = 32;
/// Room left for L2 and L3 headers below the WQE's size when limiting the merged IP payload
/// (en/tir.c `rough_max_l2_l3_hdr_sz`).
const ROUGH_MAX_L2_L3_HDR: u32 = 256;

/// The TIRs' LRO settings: IPv4 and IPv6 merging into receive WQEs of `wqe_bytes`, with the
/// device's timeout period nearest above mlx5e's (`periods`: `lro_timer_supported_periods`,
/// ascending).
pub(crate) fn tir_lro(wqe_bytes: u32, periods: &[u32]) -> TirLro {
    TirLro {
        mask: packet_merge::IPV4_LRO | packet_merge::IPV6_LRO,
        max_ip_payload: (wqe_bytes.saturating_sub(ROUGH_MAX_L2_L3_HDR) >> 8).min(255) as u8,
        timeout_us: choose_timeout(periods) as u16,
    }
}

/// The first supported period of at least [`WANTED_TIMEOUT_US`], else the last one
/// (en/params.c `mlx5e_choose_lro_timeout`).
pub(crate) fn choose_timeout(periods: &[u32]) -> u32 {
    periods
        .iter()
        .copied()
        .find(|&p| p >= WANTED_TIMEOUT_US)
        .or_else(|| periods.last().copied())
        .unwrap_or(0)
}

/// A merged packet, its headers rewritten: what its skb needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Merged {
    /// IPv6 (`SKB_GSO_TCPV6`), else IPv4 (`SKB_GSO_TCPV4`).
    pub(crate) v6: bool,
    /// The segment size (`gso_size`): the payload over the segments, rounded up.
    pub(crate) mss: u16,
    /// The number of segments (`gso_segs`).
    pub(crate) segs: u16,
}

const ETH_HLEN: usize = 14;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88a8;
const IPV4_HLEN: usize = 20;
const IPV6_HLEN: usize = 40;
const TCP_HLEN: usize = 20;
const IPPROTO_TCP: u16 = 6;

/// Rewrites the headers of a merged packet in place (`frame`: from its Ethernet header, at
/// least the headers) for a CQE of `info.byte_cnt` bytes and `info.lro_num_seg` > 1
/// segments. `EINVAL` if the headers are not those of an untagged or VLAN-tagged IPv4
/// (no options) or IPv6 TCP packet that fits the CQE's length: the device merges no other.
pub(crate) fn update_headers(frame: &mut [u8], info: &RxInfo) -> Result<Merged> {
    // The network header, past any in-frame VLAN tags (`__vlan_get_protocol`).
    let mut off = ETH_HLEN - 2;
    let mut proto = be16(frame, off)?;
    while proto == ETH_P_8021Q || proto == ETH_P_8021AD {
        off += 4;
        proto = be16(frame, off)?;
    }
    let l3 = off + 2;
    let tot_len = usize::try_from(info.byte_cnt)
        .ok()
        .and_then(|b| b.checked_sub(l3))
        .ok_or(EINVAL)?;
    let c = &info.lro;
    let v6 = match proto {
        ETH_P_IP => false,
        ETH_P_IPV6 => true,
        _ => return Err(EINVAL),
    };
    let (l4, ip_payload) = if v6 {
        let payload = tot_len.checked_sub(IPV6_HLEN).ok_or(EINVAL)?;
        let ip = frame.get_mut(l3..l3 + IPV6_HLEN).ok_or(EINVAL)?;
        if ip[6] != IPPROTO_TCP as u8 {
            return Err(EINVAL);
        }
        ip[4..6].copy_from_slice(&(u16::try_from(payload).map_err(|_| EINVAL)?).to_be_bytes());
        ip[7] = c.min_ttl;
        (l3 + IPV6_HLEN, payload)
    } else {
        let ip = frame.get_mut(l3..l3 + IPV4_HLEN).ok_or(EINVAL)?;
        if ip[0] != 0x45 || ip[9] != IPPROTO_TCP as u8 {
            return Err(EINVAL);
        }
        ip[2..4].copy_from_slice(&(u16::try_from(tot_len).map_err(|_| EINVAL)?).to_be_bytes());
        ip[8] = c.min_ttl;
        ip[10..12].fill(0);
        let sum = !fold(sum_words(ip, 0));
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        (l3 + IPV4_HLEN, tot_len.checked_sub(IPV4_HLEN).ok_or(EINVAL)?)
    };
    let doff = usize::from(frame.get(l4 + 12).ok_or(EINVAL)? >> 4) * 4;
    if doff < TCP_HLEN || doff > ip_payload {
        return Err(EINVAL);
    }
    // The pseudo header's sum: addresses, protocol, TCP length.
    let addrs = if v6 { l3 + 8..l3 + 40 } else { l3 + 12..l3 + 20 };
    let pseudo = sum_words(frame.get(addrs).ok_or(EINVAL)?, 0)
        + u32::from(IPPROTO_TCP)
        + ip_payload as u32;
    let tcp = frame.get_mut(l4..l4 + doff).ok_or(EINVAL)?;
    update_tcp(tcp, c, info.l4_hdr_type);
    // The payload's sum from the CQE, the rewritten header, the pseudo header.
    let sum = sum_words(tcp, u32::from(info.check_sum) + pseudo);
    let check = !fold(sum);
    tcp[16..18].copy_from_slice(&check.to_be_bytes());
    let payload = ip_payload - doff;
    let segs = u16::from(info.lro_num_seg).max(1);
    Ok(Merged {
        v6,
        mss: u16::try_from(payload.div_ceil(usize::from(segs))).map_err(|_| EINVAL)?,
        segs,
    })
}

/// The TCP header of the merged packet (`mlx5e_lro_update_tcp_hdr`): PSH if a segment had
/// it, the last ACK and window if the segments acknowledged; the checksum zeroed.
fn update_tcp(tcp: &mut [u8], c: &LroCqe, l4: u8) {
    tcp[16..18].fill(0);
    const PSH: u8 = 0x08;
    const ACK: u8 = 0x10;
    tcp[13] = if c.psh { tcp[13] | PSH } else { tcp[13] & !PSH };
    if l4 == l4_hdr_type::TCP_ACK_NO_DATA || l4 == l4_hdr_type::TCP_ACK_AND_DATA {
        tcp[13] |= ACK;
        tcp[8..12].copy_from_slice(&c.ack_seq.to_be_bytes());
        tcp[14..16].copy_from_slice(&c.tcp_win.to_be_bytes());
    }
}

/// The big-endian 16-bit word at `off`.
fn be16(b: &[u8], off: usize) -> Result<u16> {
    Ok(u16::from_be_bytes([
        *b.get(off).ok_or(EINVAL)?,
        *b.get(off + 1).ok_or(EINVAL)?,
    ]))
}

/// `acc` plus the big-endian 16-bit words of `b` (an odd last byte padded with zero); the
/// caller folds. Headers are short: the 32-bit accumulator does not overflow.
fn sum_words(b: &[u8], acc: u32) -> u32 {
    let mut it = b.chunks_exact(2);
    let mut s = acc;
    for w in it.by_ref() {
        s += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = it.remainder() {
        s += u32::from(*last) << 8;
    }
    s
}

/// Folds a 32-bit one's-complement sum to 16 bits.
fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}
