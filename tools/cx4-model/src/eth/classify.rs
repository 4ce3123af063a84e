//! The engine's view of the firmware's receive objects: a parsed frame as steering matches it
//! ([`frame::Headers`] offsets turned into the field values of [`steer::RxFrame`]), and a TIR's
//! hash configuration as [`RssConfig`].

use crate::fw::{self as steer, IpFields, L4Fields, Tir, TirDispatch, VlanTag};

use super::{
    frame::{self, ethertype, IpVersion, L4Kind, Layer, Vlan},
    rss::{HashFields, HashSelector, RssConfig},
};

/// `MLX5_RX_HASH_FN_TOEPLITZ` (mlx5_ifc.h), the only hash function the model computes.
pub const RX_HASH_FN_TOEPLITZ: u8 = 2;

/// The hash configuration of an indirect TIR whose function is Toeplitz (`None` for direct
/// TIRs and other functions, which hash nothing). The inner selector applies only with
/// `tunneled_offload_en`.
pub fn rss_config(tir: &Tir) -> Option<RssConfig> {
    if !matches!(tir.dispatch, TirDispatch::Indirect { .. }) || tir.hash.func != RX_HASH_FN_TOEPLITZ
    {
        return None;
    }
    let sel = |h: &steer::HashFields| HashSelector {
        ipv6: h.ipv6,
        udp: h.udp,
        fields: HashFields::from_bits_truncate(h.fields),
    };
    let mut key = [0u8; super::rss::KEY_LEN];
    let n = key.len().min(tir.hash.key.len());
    key[..n].copy_from_slice(&tir.hash.key[..n]);
    Some(RssConfig {
        key,
        symmetric: tir.hash.symmetric,
        outer: sel(&tir.hash.outer),
        inner: (tir.tunneled_offload_en && tir.hash.inner.fields != 0)
            .then(|| sel(&tir.hash.inner)),
    })
}

fn be16(f: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([f[at], f[at + 1]])
}

fn vlan_tag(v: Vlan) -> VlanTag {
    VlanTag {
        svlan: v.tpid == ethertype::QINQ,
        prio: (v.tci >> 13) as u8,
        cfi: v.tci & 0x1000 != 0,
        vid: v.tci & 0xfff,
    }
}

fn headers(f: &[u8], layer: &Layer) -> steer::Headers {
    let mut h = steer::Headers::default();
    if let Some(l2) = layer.l2 {
        h.dmac.copy_from_slice(&f[l2.offset..l2.offset + 6]);
        h.smac.copy_from_slice(&f[l2.offset + 6..l2.offset + 12]);
        h.ethertype = l2.ethertype;
        h.vlan = (l2.vlan_count > 0).then(|| vlan_tag(l2.vlans[0]));
        h.vlan2 = (l2.vlan_count > 1).then(|| vlan_tag(l2.vlans[1]));
    }
    if let Some(l3) = layer.l3 {
        let mut ip = IpFields {
            protocol: l3.proto,
            frag: l3.fragment,
            ..IpFields::default()
        };
        let (src, dst) = (l3.src_range(), l3.dst_range());
        let (tos, ttl) = match l3.version {
            IpVersion::V4 => {
                ip.version = 4;
                ip.ihl = (l3.header_len / 4) as u8;
                ip.src[12..].copy_from_slice(&f[src]);
                ip.dst[12..].copy_from_slice(&f[dst]);
                if layer.l2.is_none() {
                    h.ethertype = ethertype::IPV4;
                }
                (f[l3.offset + 1], f[l3.offset + 8])
            }
            IpVersion::V6 => {
                ip.version = 6;
                ip.src.copy_from_slice(&f[src]);
                ip.dst.copy_from_slice(&f[dst]);
                if layer.l2.is_none() {
                    h.ethertype = ethertype::IPV6;
                }
                let vtc = be16(f, l3.offset);
                ((vtc >> 4) as u8, f[l3.offset + 7])
            }
        };
        ip.dscp = tos >> 2;
        ip.ecn = tos & 3;
        ip.ttl = ttl;
        h.ip = Some(ip);
    }
    h.l4 = layer.l4.and_then(|l4| match l4.kind {
        L4Kind::Tcp => Some(L4Fields::Tcp {
            sport: l4.src_port,
            dport: l4.dst_port,
            flags: be16(f, l4.offset + 12) & 0x1ff,
        }),
        L4Kind::Udp => Some(L4Fields::Udp {
            sport: l4.src_port,
            dport: l4.dst_port,
        }),
        L4Kind::Other => None,
    });
    h
}

/// The steering view of `frame` parsed as `h`.
pub fn steer_view(frame: &[u8], h: &frame::Headers) -> steer::RxFrame {
    let tunnel = h.tunnel.and_then(|t| match t.kind {
        frame::TunnelKind::Vxlan { vni } => Some(steer::Tunnel::Vxlan { vni }),
        frame::TunnelKind::Geneve { vni, proto, .. } => Some(steer::Tunnel::Geneve {
            vni,
            protocol: proto,
        }),
        frame::TunnelKind::Gre { key, csum, proto } => Some(steer::Tunnel::Gre {
            protocol: proto,
            key,
            checksum: csum,
            sequence: frame.get(t.offset).is_some_and(|b| b & 0x10 != 0),
        }),
        frame::TunnelKind::IpInIp | frame::TunnelKind::Swp => None,
    });
    steer::RxFrame {
        outer: headers(frame, &h.outer),
        tunnel,
        inner: h.inner.as_ref().map(|l| headers(frame, l)),
    }
}
