//! RSS against Microsoft's published verification suite ("Verifying the RSS Hash
//! Calculation": the 40-byte key and the IPv4/IPv6 tables with and without ports), both on
//! the raw Toeplitz function and through real packets and TIR selectors; then the CQE hash
//! kinds, symmetric hashing, inner hashing and the RQT indirection.

mod eth_util;

use cx4_hw::cq::cqe::{rss_ip, rss_l4};
use cx4_model::eth::{
    frame::{parse, ParseConfig},
    rss::{hash, rqt_index, toeplitz, HashFields, HashSelector, RssConfig, KEY_LEN},
};
use eth_util::*;

const KEY: [u8; KEY_LEN] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// One row of a verification table: (destination, destination port, source, source port,
/// hash of the addresses, hash of addresses and ports).
type Row<const N: usize> = ([u8; N], u16, [u8; N], u16, u32, u32);

/// The IPv4 table.
const V4: [Row<4>; 5] = [
    (
        [161, 142, 100, 80],
        1766,
        [66, 9, 149, 187],
        2794,
        0x323e_8fc2,
        0x51cc_c178,
    ),
    (
        [65, 69, 140, 83],
        4739,
        [199, 92, 111, 2],
        14230,
        0xd718_262a,
        0xc626_b0ea,
    ),
    (
        [12, 22, 207, 184],
        38024,
        [24, 19, 198, 95],
        12898,
        0xd2d0_a5de,
        0x5c2b_394a,
    ),
    (
        [209, 142, 163, 6],
        2217,
        [38, 27, 205, 30],
        48228,
        0x8298_9176,
        0xafc7_327f,
    ),
    (
        [202, 188, 127, 2],
        1303,
        [153, 39, 163, 191],
        44251,
        0x5d18_09c5,
        0x10e8_28a2,
    ),
];

fn a6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().unwrap().octets()
}

/// The IPv6 table.
fn v6_table() -> Vec<Row<16>> {
    vec![
        (
            a6("3ffe:2501:200:3::1"),
            1766,
            a6("3ffe:2501:200:1fff::7"),
            2794,
            0x2cc1_8cd5,
            0x4020_7d3d,
        ),
        (
            a6("ff02::1"),
            4739,
            a6("3ffe:501:8::260:97ff:fe40:efab"),
            14230,
            0x0f0c_461c,
            0xdde5_1bbf,
        ),
        (
            a6("fe80::200:f8ff:fe21:67cf"),
            38024,
            a6("3ffe:1900:4545:3:200:f8ff:fe21:67cf"),
            44251,
            0x4b61_e985,
            0x02d1_feef,
        ),
    ]
}

fn input(src: &[u8], dst: &[u8], ports: Option<(u16, u16)>) -> Vec<u8> {
    let mut v = src.to_vec();
    v.extend_from_slice(dst);
    if let Some((s, d)) = ports {
        v.extend_from_slice(&s.to_be_bytes());
        v.extend_from_slice(&d.to_be_bytes());
    }
    v
}

#[test]
fn toeplitz_matches_the_microsoft_ipv4_and_ipv6_tables() {
    for (dst, dp, src, sp, ip_only, with_tcp) in V4 {
        assert_eq!(toeplitz(&KEY, &input(&src, &dst, None)), ip_only);
        assert_eq!(toeplitz(&KEY, &input(&src, &dst, Some((sp, dp)))), with_tcp);
    }
    for (dst, dp, src, sp, ip_only, with_tcp) in v6_table() {
        assert_eq!(toeplitz(&KEY, &input(&src, &dst, None)), ip_only);
        assert_eq!(toeplitz(&KEY, &input(&src, &dst, Some((sp, dp)))), with_tcp);
    }
}

fn selector(ipv6: bool, udp: bool, ports: bool) -> HashSelector {
    let mut fields = HashFields::SRC_IP | HashFields::DST_IP;
    if ports {
        fields |= HashFields::L4_SPORT | HashFields::L4_DPORT;
    }
    HashSelector { ipv6, udp, fields }
}

fn tir(sel: HashSelector) -> RssConfig {
    RssConfig {
        key: KEY,
        symmetric: false,
        outer: sel,
        inner: None,
    }
}

#[test]
fn packets_hash_like_the_tables_and_report_their_kind() {
    let cfg = ParseConfig::default();
    let mut cases = Vec::new();
    for (dst, dp, src, sp, ip_only, with_tcp) in V4 {
        cases.push((Ip::v4(src, dst), sp, dp, ip_only, with_tcp));
    }
    for (dst, dp, src, sp, ip_only, with_tcp) in v6_table() {
        cases.push((Ip::v6(src, dst), sp, dp, ip_only, with_tcp));
    }
    for (ip, sp, dp, ip_only, with_tcp) in cases {
        let t = tcp(&ip, sp, dp, 1, ACK, &[], b"rss");
        let f = ethernet(&[], ip.ethertype(), &ip_packet(&ip, 6, 1, &[], &t));
        let h = parse(&f, &cfg).unwrap();
        let want_ip = if ip.v6 { rss_ip::IPV6 } else { rss_ip::IPV4 };

        let r = hash(&f, &h, &tir(selector(ip.v6, false, true)));
        assert_eq!((r.hash, r.ip, r.l4), (with_tcp, want_ip, rss_l4::L4_TCP));
        let r = hash(&f, &h, &tir(selector(ip.v6, false, false)));
        assert_eq!((r.hash, r.ip, r.l4), (ip_only, want_ip, rss_l4::L4_NONE));
        // A UDP selector on a TCP packet hashes the addresses only.
        let r = hash(&f, &h, &tir(selector(ip.v6, true, true)));
        assert_eq!((r.hash, r.l4), (ip_only, rss_l4::L4_NONE));
        // A selector of the other IP version does not hash it.
        let r = hash(&f, &h, &tir(selector(!ip.v6, false, true)));
        assert_eq!((r.hash, r.ip, r.l4), (0, rss_ip::IP_NONE, rss_l4::L4_NONE));

        // The same flow over UDP with a UDP selector.
        let u = udp(&ip, sp, dp, b"rss", true);
        let f = ethernet(&[], ip.ethertype(), &ip_packet(&ip, 17, 1, &[], &u));
        let h = parse(&f, &cfg).unwrap();
        let r = hash(&f, &h, &tir(selector(ip.v6, true, true)));
        assert_eq!((r.hash, r.l4), (with_tcp, rss_l4::L4_UDP));
    }
}

#[test]
fn symmetric_hash_is_direction_independent() {
    let ip = Ip::v4([1, 2, 3, 4], [5, 6, 7, 8]);
    let rev = Ip::v4([5, 6, 7, 8], [1, 2, 3, 4]);
    let mut cfg = tir(selector(false, false, true));
    cfg.symmetric = true;
    let pc = ParseConfig::default();
    let f1 = ethernet(
        &[],
        0x0800,
        &ip_packet(&ip, 6, 1, &[], &tcp(&ip, 1111, 80, 1, ACK, &[], &[])),
    );
    let f2 = ethernet(
        &[],
        0x0800,
        &ip_packet(&rev, 6, 1, &[], &tcp(&rev, 80, 1111, 1, ACK, &[], &[])),
    );
    let h1 = hash(&f1, &parse(&f1, &pc).unwrap(), &cfg);
    let h2 = hash(&f2, &parse(&f2, &pc).unwrap(), &cfg);
    assert_eq!(h1, h2);
    // (OR, XOR) of the pairs as the input.
    let or_xor = [1 | 5, 2 | 6, 3 | 7, 4 | 8, 1 ^ 5, 2 ^ 6, 3 ^ 7, 4 ^ 8];
    let mut inp = or_xor.to_vec();
    inp.extend_from_slice(&(1111u16 | 80).to_be_bytes());
    inp.extend_from_slice(&(1111u16 ^ 80).to_be_bytes());
    assert_eq!(h1.hash, toeplitz(&KEY, &inp));
    cfg.symmetric = false;
    assert_ne!(
        hash(&f1, &parse(&f1, &pc).unwrap(), &cfg),
        hash(&f2, &parse(&f2, &pc).unwrap(), &cfg)
    );
}

#[test]
fn inner_selector_hashes_the_inner_flow() {
    let (dst, dp, src, sp, _, with_tcp) = V4[0];
    let inner = Ip::v4(src, dst);
    let outer = Ip::v4([9, 9, 9, 9], [8, 8, 8, 8]);
    let mut vx = vxlan(5);
    vx.extend_from_slice(&ethernet(
        &[],
        0x0800,
        &ip_packet(&inner, 6, 1, &[], &tcp(&inner, sp, dp, 1, ACK, &[], b"x")),
    ));
    let f = ethernet(
        &[],
        0x0800,
        &ip_packet(&outer, 17, 1, &[], &udp(&outer, 7, 4789, &vx, false)),
    );
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let mut cfg = tir(selector(false, true, false));
    let o = hash(&f, &h, &cfg);
    assert_eq!(
        o.hash,
        toeplitz(&KEY, &input(&[9, 9, 9, 9], &[8, 8, 8, 8], None))
    );
    cfg.inner = Some(selector(false, false, true));
    let i = hash(&f, &h, &cfg);
    assert_eq!((i.hash, i.l4), (with_tcp, rss_l4::L4_TCP));
}

#[test]
fn fragments_and_single_fields() {
    let (dst, _, src, _, ip_only, _) = V4[1];
    let ip = Ip::v4(src, dst);
    let mut p = ip_packet(&ip, 6, 1, &[], &tcp(&ip, 1, 2, 3, ACK, &[], b"frag"));
    p[6] = 0x20; // MF
    let f = ethernet(&[], 0x0800, &p);
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let r = hash(&f, &h, &tir(selector(false, false, true)));
    assert_eq!((r.hash, r.l4), (ip_only, rss_l4::L4_NONE));
    let only_dst = HashSelector {
        ipv6: false,
        udp: false,
        fields: HashFields::DST_IP,
    };
    let r = hash(&f, &h, &tir(only_dst));
    assert_eq!(r.hash, toeplitz(&KEY, &dst));
    // Non-IP frames are not hashed.
    let arp = ethernet(&[], 0x0806, &[0; 28]);
    let h = parse(&arp, &ParseConfig::default()).unwrap();
    assert_eq!(hash(&arp, &h, &tir(selector(false, false, true))).hash, 0);
}

#[test]
fn rqt_indirection_uses_the_low_bits() {
    assert_eq!(rqt_index(0x51cc_c178, 128), Some(0x78));
    assert_eq!(rqt_index(0x51cc_c178, 1), Some(0));
    assert_eq!(rqt_index(7, 0), None);
    let spread: std::collections::BTreeSet<_> =
        V4.iter().map(|v| rqt_index(v.5, 4).unwrap()).collect();
    assert!(
        spread.len() >= 2,
        "the table's flows spread over an RQT of 4"
    );
}

#[test]
fn a_tirs_hash_configuration_becomes_the_engines() {
    use cx4_model::{eth::classify::rss_config, fw};
    let sel = |ipv6, udp, fields| fw::HashFields { ipv6, udp, fields };
    let mut tir = fw::Tir {
        tirn: 1,
        transport_domain: 1,
        dispatch: fw::TirDispatch::Indirect { rqtn: 3 },
        hash: fw::RxHash {
            func: 2,
            symmetric: false,
            key: KEY,
            outer: sel(false, false, 0xf),
            inner: sel(true, true, 0x3),
        },
        tunneled_offload_en: false,
        self_lb_block: 0,
        lro: Default::default(),
    };
    let cfg = rss_config(&tir).unwrap();
    assert_eq!(cfg.key, KEY);
    assert_eq!(cfg.outer, selector(false, false, true));
    assert_eq!(
        cfg.inner, None,
        "the inner selector needs tunneled_offload_en"
    );
    tir.tunneled_offload_en = true;
    assert_eq!(
        rss_config(&tir).unwrap().inner,
        Some(selector(true, true, false))
    );
    tir.hash.func = 1; // inverted XOR8: not computed
    assert!(rss_config(&tir).is_none());
    tir.hash.func = 2;
    tir.dispatch = fw::TirDispatch::Direct { rqn: 5 };
    assert!(rss_config(&tir).is_none());
}
