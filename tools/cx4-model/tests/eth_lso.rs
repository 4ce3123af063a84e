//! LSO against independently built superframes, plain and tunnelled: every segment must
//! parse with trusted lengths, re-sum to 0xffff wherever a checksum is, carry the right IP
//! identification, TCP sequence number and flags, and the payloads must concatenate to the
//! original.

mod eth_util;

use cx4_hw::wqe::CsFlags;
use cx4_model::eth::{
    frame::{parse, Headers, ParseConfig},
    lso::{segment, LsoError, Segment},
};
use eth_util::*;

fn v4(a: u8) -> Ip {
    Ip::v4([10, 1, 0, a], [10, 2, 0, a])
}

fn v6(a: u8) -> Ip {
    let mut s = [0u8; 16];
    s[0] = 0xfd;
    s[15] = a;
    let mut d = s;
    d[1] = 0x99;
    Ip::v6(s, d)
}

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 + i / 256) as u8).collect()
}

/// Where the layers of a superframe are (offsets), for the per-segment checks.
struct Shape {
    outer: Option<(Ip, usize)>, // outer IP and its offset, for tunnels
    outer_udp: Option<usize>,
    inner: (Ip, usize),
    l4: usize,
    udp: bool,
}

fn tx_parse(f: &[u8]) -> Headers {
    parse(f, &ParseConfig::default().for_tx()).unwrap()
}

fn check(sf: &[u8], segs: &[Segment], shape: &Shape, mss: usize, data: &[u8], flags0: u8) {
    let n = segs.len();
    assert_eq!(n, data.len().div_ceil(mss).max(1));
    let mut joined = Vec::new();
    let (ip, l3) = &shape.inner;
    let id0 = if ip.v6 { 0 } else { be16(sf, l3 + 4) };
    let seq0 = be32(sf, shape.l4 + 4);
    for (i, s) in segs.iter().enumerate() {
        let f = s.to_frame(sf);
        assert!(s.payload.len() <= mss && (i + 1 == n || s.payload.len() == mss));
        joined.extend_from_slice(&sf[s.payload.clone()]);
        // Every length field agrees with the segment: the receive-side parser trusts them.
        let h = parse(&f, &ParseConfig::default())
            .unwrap_or_else(|e| panic!("segment {i} of {n} does not parse: {e}"));
        assert_eq!(h.inner.is_some(), shape.outer.is_some());
        if let Some((oip, ol3)) = &shape.outer {
            if !oip.v6 {
                assert!(ipv4_header_ok(&f, *ol3), "outer IPv4 checksum, segment {i}");
                assert_eq!(be16(&f, ol3 + 2) as usize, f.len() - ol3);
                assert_eq!(be16(&f, ol3 + 4), be16(sf, ol3 + 4).wrapping_add(i as u16));
            } else {
                assert_eq!(be16(&f, ol3 + 4) as usize, f.len() - ol3 - 40);
            }
        }
        if let Some(u) = shape.outer_udp {
            assert_eq!(be16(&f, u + 4) as usize, f.len() - u, "outer UDP length");
            assert_eq!(
                be16(&f, u + 6),
                be16(sf, u + 6),
                "outer UDP checksum untouched"
            );
        }
        if ip.v6 {
            assert_eq!(be16(&f, l3 + 4) as usize, f.len() - l3 - 40);
        } else {
            assert!(ipv4_header_ok(&f, *l3), "inner IPv4 checksum, segment {i}");
            assert_eq!(be16(&f, l3 + 2) as usize, f.len() - l3);
            assert_eq!(be16(&f, l3 + 4), id0.wrapping_add(i as u16));
        }
        let proto = if shape.udp { 17 } else { 6 };
        assert!(
            l4_sum_ok(&f, ip, proto, shape.l4, f.len()),
            "transport checksum of segment {i}"
        );
        if shape.udp {
            assert_eq!(be16(&f, shape.l4 + 4) as usize, f.len() - shape.l4);
        } else {
            assert_eq!(be32(&f, shape.l4 + 4), seq0.wrapping_add((i * mss) as u32));
            let fl = f[shape.l4 + 13];
            let last = i + 1 == n;
            assert_eq!(fl & FIN != 0, last && flags0 & FIN != 0, "FIN on {i}");
            assert_eq!(fl & PSH != 0, last && flags0 & PSH != 0, "PSH on {i}");
            assert_eq!(fl & CWR != 0, i == 0 && flags0 & CWR != 0, "CWR on {i}");
            assert_eq!(fl & ACK, flags0 & ACK);
        }
    }
    assert_eq!(joined, data, "payloads concatenate to the original");
}

const FLAGS: u8 = CWR | ACK | PSH | FIN;

#[test]
fn plain_tcp_over_ipv4_and_ipv6() {
    for (ip, l3, l4) in [(v4(1), 14, 34), (v6(1), 14, 54)] {
        for len in [0, 1, 1447, 1448, 1449, 5000, 65000] {
            let data = payload(len);
            let t = tcp(
                &ip,
                40000,
                5201,
                0xffff_fff0,
                FLAGS,
                &[1, 1, 8, 10, 0, 0, 0, 5, 0, 0, 0, 6],
                &data,
            );
            let sf = ethernet(&[], ip.ethertype(), &ip_packet(&ip, 6, 0xfffe, &[], &t));
            let segs = segment(&sf, &tx_parse(&sf), 1448, CsFlags::L3 | CsFlags::L4).unwrap();
            let shape = Shape {
                outer: None,
                outer_udp: None,
                inner: (ip.clone(), l3),
                l4,
                udp: false,
            };
            check(&sf, &segs, &shape, 1448, &data, FLAGS);
        }
    }
}

#[test]
fn tagged_frame_with_ip_options() {
    let ip = v4(2);
    let data = payload(4000);
    let t = tcp(&ip, 1, 2, 3, ACK | PSH, &[], &data);
    let sf = ethernet(&[100], 0x0800, &ip_packet(&ip, 6, 1, &[1, 1, 1, 0], &t));
    let segs = segment(&sf, &tx_parse(&sf), 1000, CsFlags::L3 | CsFlags::L4).unwrap();
    let shape = Shape {
        outer: None,
        outer_udp: None,
        inner: (ip, 18),
        l4: 18 + 24,
        udp: false,
    };
    check(&sf, &segs, &shape, 1000, &data, ACK | PSH);
}

#[test]
fn vxlan_and_geneve_tunnels() {
    for (outer, inner, geneve_words) in [
        (v4(3), v4(4), None),
        (v4(3), v6(4), None),
        (v6(3), v4(4), None),
        (v4(5), v6(6), Some(0u8)),
        (v4(5), v4(6), Some(5)),
    ] {
        let data = payload(9000);
        let t = tcp(&inner, 1000, 2000, 77, FLAGS, &[], &data);
        let inner_frame = ethernet(&[], inner.ethertype(), &ip_packet(&inner, 6, 500, &[], &t));
        let (mut tun, dport) = match geneve_words {
            None => (vxlan(99), 4789),
            Some(w) => (geneve(99, w, 0x6558), 6081),
        };
        let tun_len = tun.len();
        tun.extend_from_slice(&inner_frame);
        let u = udp(&outer, 50000, dport, &tun, false);
        let sf = ethernet(&[], outer.ethertype(), &ip_packet(&outer, 17, 7, &[], &u));
        let ol3 = 14;
        let ou = ol3 + if outer.v6 { 40 } else { 20 };
        let il3 = ou + 8 + tun_len + 14;
        let il4 = il3 + if inner.v6 { 40 } else { 20 };
        let flags = CsFlags::L3 | CsFlags::L3_INNER | CsFlags::L4_INNER;
        let segs = segment(&sf, &tx_parse(&sf), 1400, flags).unwrap();
        let shape = Shape {
            outer: Some((outer.clone(), ol3)),
            outer_udp: Some(ou),
            inner: (inner.clone(), il3),
            l4: il4,
            udp: false,
        };
        check(&sf, &segs, &shape, 1400, &data, FLAGS);
    }
}

#[test]
fn nvgre_and_gre_with_ip_payload() {
    let (outer, inner) = (v4(7), v4(8));
    let data = payload(3000);
    let t = tcp(&inner, 1, 2, 3, ACK, &[], &data);
    let inner_ip = ip_packet(&inner, 6, 0x10, &[], &t);

    let mut nv = gre(Some(0xdead_beef), 0x6558);
    nv.extend_from_slice(&ethernet(&[], 0x0800, &inner_ip));
    let sf = ethernet(&[], 0x0800, &ip_packet(&outer, 47, 1, &[], &nv));
    let segs = segment(&sf, &tx_parse(&sf), 1200, CsFlags::all()).unwrap();
    let shape = Shape {
        outer: Some((outer.clone(), 14)),
        outer_udp: None,
        inner: (inner.clone(), 14 + 20 + 8 + 14),
        l4: 14 + 20 + 8 + 14 + 20,
        udp: false,
    };
    check(&sf, &segs, &shape, 1200, &data, ACK);
    for s in &segs {
        assert_eq!(&s.header[34..42], &sf[34..42], "GRE header unchanged");
    }

    let mut g = gre(None, 0x0800);
    g.extend_from_slice(&inner_ip);
    let sf = ethernet(&[], 0x0800, &ip_packet(&outer, 47, 1, &[], &g));
    let segs = segment(&sf, &tx_parse(&sf), 1200, CsFlags::all()).unwrap();
    let shape = Shape {
        outer: Some((outer, 14)),
        outer_udp: None,
        inner: (inner, 14 + 20 + 4),
        l4: 14 + 20 + 4 + 20,
        udp: false,
    };
    check(&sf, &segs, &shape, 1200, &data, ACK);
}

#[test]
fn outer_udp_checksum_recomputed_only_when_asked() {
    let (outer, inner) = (v4(9), v6(9));
    let data = payload(2500);
    let t = tcp(&inner, 1, 2, 3, ACK, &[], &data);
    let mut vx = vxlan(1);
    vx.extend_from_slice(&ethernet(&[], 0x86dd, &ip_packet(&inner, 6, 0, &[], &t)));
    let sf = ethernet(
        &[],
        0x0800,
        &ip_packet(&outer, 17, 1, &[], &udp(&outer, 1, 4789, &vx, true)),
    );
    let segs = segment(&sf, &tx_parse(&sf), 1000, CsFlags::all()).unwrap();
    for s in &segs {
        let f = s.to_frame(&sf);
        assert!(l4_sum_ok(&f, &outer, 17, 34, f.len()), "outer UDP checksum");
    }
}

#[test]
fn udp_segmentation() {
    for ip in [v4(10), v6(10)] {
        let data = payload(3001);
        let u = udp(&ip, 4000, 4001, &data, true);
        let sf = ethernet(&[], ip.ethertype(), &ip_packet(&ip, 17, 3, &[], &u));
        let segs = segment(&sf, &tx_parse(&sf), 1000, CsFlags::L3 | CsFlags::L4).unwrap();
        let l4 = if ip.v6 { 54 } else { 34 };
        let shape = Shape {
            outer: None,
            outer_udp: None,
            inner: (ip.clone(), 14),
            l4,
            udp: true,
        };
        check(&sf, &segs, &shape, 1000, &data, 0);
    }
}

#[test]
fn refusals() {
    let ip = v4(11);
    let sf = ethernet(
        &[],
        0x0800,
        &ip_packet(&ip, 6, 1, &[], &tcp(&ip, 1, 2, 3, ACK, &[], &payload(100))),
    );
    let h = tx_parse(&sf);
    assert_eq!(
        segment(&sf, &h, 0, CsFlags::empty()),
        Err(LsoError::ZeroMss)
    );
    assert_eq!(
        segment(&sf, &h, 1, CsFlags::empty()).map(|s| s.len()),
        Ok(100)
    );
    let icmp = ethernet(
        &[],
        0x0800,
        &ip_packet(&ip, 1, 1, &[], &[8, 0, 0, 0, 1, 2, 3, 4]),
    );
    assert_eq!(
        segment(&icmp, &tx_parse(&icmp), 100, CsFlags::empty()),
        Err(LsoError::NotTcpUdp)
    );
    let big = ethernet(
        &[],
        0x0800,
        &ip_packet(
            &ip,
            6,
            1,
            &[],
            &tcp(&ip, 1, 2, 3, ACK, &[], &payload(70000)),
        ),
    );
    assert_eq!(
        segment(&big, &tx_parse(&big), 1, CsFlags::empty()),
        Err(LsoError::TooManySegments)
    );
}
