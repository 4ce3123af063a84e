//! Receive side scaling: the Toeplitz hash over the fields a TIR selects
//! (`rx_hash_field_selector_outer` / `_inner`: source/destination IP, L4 ports), the hash kind
//! the CQE reports, and the indirection into an RQT.
//!
//! The hash input is the Microsoft RSS one: source address, destination address, source port,
//! destination port, each big-endian and present only if selected. With `rx_hash_symmetric`
//! (ethtool `RXH_XFRM_SYM_OR_XOR`) each source/destination pair is replaced by (OR, XOR) of
//! the two, so both directions of a flow hash alike.

use cx4_hw::cq::cqe::{rss_ip, rss_l4};

use super::frame::{Headers, IpVersion, L4Kind, Layer};

/// Length of a TIR's Toeplitz key (`rx_hash_toeplitz_key`, 10 dwords).
pub const KEY_LEN: usize = 40;

bitflags::bitflags! {
    /// `selected_fields` of `rx_hash_field_select` (`MLX5_HASH_FIELD_SEL_*`, device.h).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct HashFields: u32 {
        /// `MLX5_HASH_FIELD_SEL_SRC_IP`.
        const SRC_IP = 1 << 0;
        /// `MLX5_HASH_FIELD_SEL_DST_IP`.
        const DST_IP = 1 << 1;
        /// `MLX5_HASH_FIELD_SEL_L4_SPORT`.
        const L4_SPORT = 1 << 2;
        /// `MLX5_HASH_FIELD_SEL_L4_DPORT`.
        const L4_DPORT = 1 << 3;
        /// `MLX5_HASH_FIELD_SEL_IPSEC_SPI` (not hashed by the model).
        const IPSEC_SPI = 1 << 4;
    }
}

/// One `rx_hash_field_select` of a TIR.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashSelector {
    /// `l3_prot_type`: the selector is for IPv6 (`MLX5_L3_PROT_TYPE_IPV6`), else IPv4.
    pub ipv6: bool,
    /// `l4_prot_type`: the ports are UDP's (`MLX5_L4_PROT_TYPE_UDP`), else TCP's.
    pub udp: bool,
    /// `selected_fields`.
    pub fields: HashFields,
}

/// What a TIR hashes with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RssConfig {
    /// `rx_hash_toeplitz_key`.
    pub key: [u8; KEY_LEN],
    /// `rx_hash_symmetric`.
    pub symmetric: bool,
    /// `rx_hash_field_selector_outer`.
    pub outer: HashSelector,
    /// `rx_hash_field_selector_inner`, used for tunnelled packets when the TIR has
    /// `tunneled_offload_en` (mlx5e's inner TIRs).
    pub inner: Option<HashSelector>,
}

/// The hash of a packet and what it covered, as a CQE reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RssHash {
    /// `rss_hash_result`.
    pub hash: u32,
    /// `rss_hash_type` IP kind ([`rss_ip`]).
    pub ip: u8,
    /// `rss_hash_type` L4 kind ([`rss_l4`]).
    pub l4: u8,
}

/// The Toeplitz hash of `input` under `key` (the key must be at least 4 bytes longer than
/// the input; missing key bits count as zero).
pub fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    let bit = |i: usize| -> u32 {
        key.get(i / 8)
            .map_or(0, |b| u32::from(b >> (7 - i % 8)) & 1)
    };
    // The 32-bit window of the key starting at bit 0, shifted one bit per input bit.
    let mut window = (0..32).fold(0u32, |w, i| (w << 1) | bit(i));
    let mut hash = 0;
    for (n, byte) in input.iter().enumerate() {
        for b in 0..8 {
            if byte & (0x80 >> b) != 0 {
                hash ^= window;
            }
            window = (window << 1) | bit(n * 8 + b + 32);
        }
    }
    hash
}

/// Hashes the packet `frame` parsed as `h` for a TIR configured as `cfg`. A packet whose IP
/// version differs from the selector's is not hashed (hash 0, kinds NONE); the ports are
/// hashed only for an unfragmented packet of the selector's L4 protocol.
pub fn hash(frame: &[u8], h: &Headers, cfg: &RssConfig) -> RssHash {
    let (layer, sel): (&Layer, HashSelector) = match (h.inner.as_ref(), cfg.inner) {
        (Some(inner), Some(sel)) => (inner, sel),
        _ => (&h.outer, cfg.outer),
    };
    let Some(l3) = layer.l3 else {
        return RssHash::default();
    };
    let v6 = l3.version == IpVersion::V6;
    let ip_fields = sel.fields & (HashFields::SRC_IP | HashFields::DST_IP);
    if v6 != sel.ipv6 || ip_fields.is_empty() && !sel.fields.intersects(ports()) {
        return RssHash::default();
    }
    let mut input = Input {
        buf: [0; 36],
        len: 0,
    };
    input.pair(
        &frame[l3.src_range()],
        &frame[l3.dst_range()],
        sel.fields.contains(HashFields::SRC_IP),
        sel.fields.contains(HashFields::DST_IP),
        cfg.symmetric,
    );
    let want = if sel.udp { L4Kind::Udp } else { L4Kind::Tcp };
    let mut l4_kind = rss_l4::L4_NONE;
    if let Some(l4) = layer.l4.filter(|l4| l4.kind == want && !l3.fragment) {
        if sel.fields.intersects(ports()) {
            input.pair(
                &l4.src_port.to_be_bytes(),
                &l4.dst_port.to_be_bytes(),
                sel.fields.contains(HashFields::L4_SPORT),
                sel.fields.contains(HashFields::L4_DPORT),
                cfg.symmetric,
            );
            l4_kind = if sel.udp {
                rss_l4::L4_UDP
            } else {
                rss_l4::L4_TCP
            };
        }
    }
    if input.len == 0 {
        return RssHash::default();
    }
    RssHash {
        hash: toeplitz(&cfg.key, input.bytes()),
        ip: if ip_fields.is_empty() {
            rss_ip::IP_NONE
        } else if v6 {
            rss_ip::IPV6
        } else {
            rss_ip::IPV4
        },
        l4: l4_kind,
    }
}

/// The hash input under construction (at most two IPv6 addresses and two ports).
struct Input {
    buf: [u8; 36],
    len: usize,
}

impl Input {
    /// Appends the selected fields of a source/destination pair of equal length, or their
    /// (OR, XOR) for a symmetric hash.
    fn pair(&mut self, a: &[u8], b: &[u8], sel_a: bool, sel_b: bool, symmetric: bool) {
        let mut x = [0u8; 16];
        let mut y = [0u8; 16];
        let n = a.len().min(b.len()).min(16);
        for i in 0..n {
            (x[i], y[i]) = if symmetric {
                (a[i] | b[i], a[i] ^ b[i])
            } else {
                (a[i], b[i])
            };
        }
        for (sel, v) in [(sel_a, &x[..n]), (sel_b, &y[..n])] {
            if sel {
                self.buf[self.len..self.len + n].copy_from_slice(v);
                self.len += n;
            }
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

fn ports() -> HashFields {
    HashFields::L4_SPORT | HashFields::L4_DPORT
}

/// The RQT entry a hash selects in a table of `len` entries (the low bits of the hash; RQT
/// sizes are powers of two). `None` for an empty table.
pub fn rqt_index(hash: u32, len: usize) -> Option<usize> {
    (len != 0).then(|| hash as usize % len)
}
