//! The packet parser against frames built independently: plain, tagged, with IP options and
//! IPv6 extension headers, fragments, and every tunnel kind; truncated and malformed frames
//! give errors.

mod eth_util;

use cx4_model::eth::frame::{
    parse, Depth, IpVersion, L4Kind, ParseConfig, ParseErrorKind, TunnelKind,
};
use eth_util::*;

fn v4() -> Ip {
    Ip::v4([10, 0, 0, 1], [10, 0, 0, 2])
}

fn v6() -> Ip {
    let mut a = [0u8; 16];
    a[0] = 0xfd;
    a[15] = 1;
    let mut b = a;
    b[15] = 2;
    Ip::v6(a, b)
}

fn tcp_frame(ip: &Ip, vlans: &[u16], payload: &[u8]) -> Vec<u8> {
    let t = tcp(ip, 40000, 5201, 1000, ACK | PSH, &[], payload);
    ethernet(vlans, ip.ethertype(), &ip_packet(ip, 6, 7, &[], &t))
}

#[test]
fn plain_ipv4_tcp_offsets() {
    let f = tcp_frame(&v4(), &[], b"hello");
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let l2 = h.outer.l2.unwrap();
    assert_eq!((l2.len, l2.ethertype, l2.vlan_count), (14, 0x0800, 0));
    let l3 = h.outer.l3.unwrap();
    assert_eq!(
        (l3.offset, l3.header_len, l3.end, l3.proto, l3.fragment),
        (14, 20, f.len(), 6, false)
    );
    let l4 = h.outer.l4.unwrap();
    assert_eq!((l4.offset, l4.kind, l4.header_len), (34, L4Kind::Tcp, 20));
    assert_eq!((l4.src_port, l4.dst_port), (40000, 5201));
    assert!(h.tunnel.is_none() && h.inner.is_none());
    assert_eq!(h.transport_end(), Some(54));
}

#[test]
fn ipv4_options_and_ethernet_padding() {
    let ip = v4();
    let u = udp(&ip, 1, 2, b"x", true);
    let mut f = ethernet(&[], 0x0800, &ip_packet(&ip, 17, 1, &[1, 1, 1, 0], &u));
    let dgram_end = f.len();
    f.resize(60, 0); // Ethernet padding
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let l3 = h.outer.l3.unwrap();
    assert_eq!((l3.header_len, l3.end), (24, dgram_end));
    assert_eq!(h.outer.l4.unwrap().offset, 14 + 24);
}

#[test]
fn vlan_and_qinq_tags() {
    let f = tcp_frame(&v4(), &[0x2005], b"");
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let l2 = h.outer.l2.unwrap();
    assert_eq!((l2.vlan_count, l2.len, l2.ethertype), (1, 18, 0x0800));
    assert_eq!(l2.first_vlan().unwrap().tci, 0x2005);
    assert_eq!(h.outer.l3.unwrap().offset, 18);

    let mut q = tcp_frame(&v4(), &[10, 20], b"");
    q[12..14].copy_from_slice(&0x88a8u16.to_be_bytes());
    let h = parse(&q, &ParseConfig::default()).unwrap();
    let l2 = h.outer.l2.unwrap();
    assert_eq!(
        (l2.vlan_count, l2.vlans[0].tpid, l2.vlans[1].tci),
        (2, 0x88a8, 20)
    );
    assert_eq!(h.outer.l3.unwrap().offset, 22);
}

#[test]
fn ipv6_extension_headers_and_fragments() {
    let ip = v6();
    let t = tcp(&ip, 1, 2, 3, ACK, &[], b"abc");
    // Hop-by-hop (8 bytes) then destination options (16 bytes) then TCP.
    let mut ext = vec![60, 0, 1, 4, 0, 0, 0, 0];
    ext.extend_from_slice(&[6, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    ext.extend_from_slice(&t);
    let f = ethernet(&[], 0x86dd, &ip_packet(&ip, 0, 0, &[], &ext));
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let l3 = h.outer.l3.unwrap();
    assert_eq!(
        (l3.version, l3.header_len, l3.proto),
        (IpVersion::V6, 64, 6)
    );
    assert_eq!(h.outer.l4.unwrap().offset, 14 + 64);

    // A non-first fragment: no transport header.
    let mut frag = vec![6, 0, 0x00, 0x09, 0, 0, 0, 1]; // offset 1, M set
    frag.extend_from_slice(b"12345678");
    let f = ethernet(&[], 0x86dd, &ip_packet(&ip, 44, 0, &[], &frag));
    let h = parse(&f, &ParseConfig::default()).unwrap();
    assert!(h.outer.l3.unwrap().fragment);
    assert!(h.outer.l4.is_none());

    // IPv4 with MF set.
    let ip4 = v4();
    let mut p = ip_packet(&ip4, 17, 9, &[], &udp(&ip4, 1, 2, b"zz", true));
    p[6] = 0x20; // MF
    let h = parse(&ethernet(&[], 0x0800, &p), &ParseConfig::default()).unwrap();
    assert!(h.outer.l3.unwrap().fragment && h.outer.l4.is_none());
}

#[test]
fn vxlan_geneve_gre_and_ipip_tunnels() {
    let (o, i) = (v4(), v6());
    let inner = tcp_frame(&i, &[], b"payload");
    let cfg = ParseConfig::default();

    let mut vx = vxlan(0x12_3456);
    vx.extend_from_slice(&inner);
    let f = ethernet(
        &[],
        0x0800,
        &ip_packet(&o, 17, 1, &[], &udp(&o, 999, 4789, &vx, false)),
    );
    let h = parse(&f, &cfg).unwrap();
    let t = h.tunnel.unwrap();
    assert_eq!(t.kind, TunnelKind::Vxlan { vni: 0x12_3456 });
    assert_eq!((t.offset, t.len), (42, 8));
    let inn = h.inner.unwrap();
    assert_eq!(inn.l2.unwrap().offset, 50);
    assert_eq!(inn.l3.unwrap().offset, 64);
    assert_eq!(inn.l3.unwrap().version, IpVersion::V6);
    assert_eq!(inn.l4.unwrap().offset, 104);
    assert_eq!(h.transport_end(), Some(124));

    // A VXLAN port that is not configured: plain UDP.
    let other = ParseConfig {
        vxlan_ports: vec![8472],
        ..ParseConfig::default()
    };
    assert!(parse(&f, &other).unwrap().tunnel.is_none());

    let mut gn = geneve(7, 3, 0x6558);
    gn.extend_from_slice(&inner);
    let f = ethernet(
        &[],
        0x0800,
        &ip_packet(&o, 17, 1, &[], &udp(&o, 9, 6081, &gn, true)),
    );
    let h = parse(&f, &cfg).unwrap();
    let t = h.tunnel.unwrap();
    assert_eq!(
        t.kind,
        TunnelKind::Geneve {
            vni: 7,
            opt_len: 12,
            proto: 0x6558
        }
    );
    assert_eq!(h.inner.unwrap().l2.unwrap().offset, 42 + 20);

    let mut nv = gre(Some(0xabcd_ef01), 0x6558);
    nv.extend_from_slice(&inner);
    let f = ethernet(&[], 0x0800, &ip_packet(&o, 47, 1, &[], &nv));
    let h = parse(&f, &cfg).unwrap();
    assert_eq!(
        h.tunnel.unwrap().kind,
        TunnelKind::Gre {
            key: Some(0xabcd_ef01),
            csum: false,
            proto: 0x6558
        }
    );
    assert_eq!(h.inner.unwrap().l2.unwrap().offset, 34 + 8);

    // GRE carrying IPv6 directly: no inner Ethernet.
    let inner_ip = ip_packet(&i, 6, 0, &[], &tcp(&i, 1, 2, 3, ACK, &[], b"q"));
    let mut g = gre(None, 0x86dd);
    g.extend_from_slice(&inner_ip);
    let f = ethernet(&[], 0x0800, &ip_packet(&o, 47, 1, &[], &g));
    let h = parse(&f, &cfg).unwrap();
    let inn = h.inner.unwrap();
    assert!(inn.l2.is_none());
    assert_eq!(inn.l3.unwrap().offset, 38);

    // IPv6 in IPv4.
    let f = ethernet(&[], 0x0800, &ip_packet(&o, 41, 1, &[], &inner_ip));
    let h = parse(&f, &cfg).unwrap();
    assert_eq!(h.tunnel.unwrap().kind, TunnelKind::IpInIp);
    assert_eq!(h.inner.unwrap().l3.unwrap().offset, 34);
    assert_eq!(h.inner.unwrap().l4.unwrap().kind, L4Kind::Tcp);
}

#[test]
fn every_truncation_is_an_error_and_never_a_panic() {
    let (o, i) = (v4(), v6());
    let mut vx = vxlan(1);
    vx.extend_from_slice(&tcp_frame(&i, &[5], b"data!"));
    let frames = [
        tcp_frame(&o, &[], b"0123456789"),
        tcp_frame(&i, &[1, 2], b"x"),
        ethernet(
            &[],
            0x0800,
            &ip_packet(&o, 17, 1, &[], &udp(&o, 9, 4789, &vx, true)),
        ),
    ];
    for f in &frames {
        assert!(parse(f, &ParseConfig::default()).is_ok());
        for n in 0..f.len() {
            // Cut frames lose bytes the IP length claims: always an error when lengths are
            // trusted; on the send side they parse as far as they go.
            let r = parse(&f[..n], &ParseConfig::default());
            assert!(r.is_err(), "cut at {n} of {} parsed: {r:?}", f.len());
            let _ = parse(&f[..n], &ParseConfig::default().for_tx());
        }
    }
}

#[test]
fn malformed_headers_are_reported() {
    let o = v4();
    let good = tcp_frame(&o, &[], b"abc");
    let cfg = ParseConfig::default();
    let mut f = good.clone();
    f[14] = 0x55; // version 5
    let e = parse(&f, &cfg).unwrap_err();
    assert_eq!((e.depth, e.kind), (Depth::Outer, ParseErrorKind::Malformed));
    let mut f = good.clone();
    f[14] = 0x44; // IHL 4
    assert_eq!(parse(&f, &cfg).unwrap_err().what, "IPv4 header length");
    let mut f = good.clone();
    f[16..18].copy_from_slice(&1000u16.to_be_bytes());
    assert_eq!(parse(&f, &cfg).unwrap_err().kind, ParseErrorKind::Truncated);
    // The send side does not trust the length.
    assert!(parse(&f, &cfg.for_tx()).is_ok());
    let mut f = good.clone();
    f[14 + 20 + 12] = 0x40; // TCP data offset 4
    assert_eq!(parse(&f, &cfg).unwrap_err().what, "TCP data offset");

    // VXLAN without the I flag.
    let mut vx = vec![0u8; 8];
    vx.extend_from_slice(&good);
    let f = ethernet(
        &[],
        0x0800,
        &ip_packet(&o, 17, 1, &[], &udp(&o, 9, 4789, &vx, true)),
    );
    let e = parse(&f, &cfg).unwrap_err();
    assert_eq!(
        (e.depth, e.kind),
        (Depth::Tunnel, ParseErrorKind::Malformed)
    );

    // GRE version 1 (PPTP) is not a tunnel the card parses.
    let mut g = vec![0x00, 0x01, 0x65, 0x58];
    g.extend_from_slice(&good);
    let f = ethernet(&[], 0x0800, &ip_packet(&o, 47, 1, &[], &g));
    let h = parse(&f, &cfg).unwrap();
    assert!(h.tunnel.is_none());
    assert_eq!(h.outer.l4.unwrap().kind, L4Kind::Other);

    // Runt frame.
    assert_eq!(
        parse(&good[..13], &cfg).unwrap_err().what,
        "Ethernet header"
    );
}

#[test]
fn steering_view_carries_the_matched_fields() {
    use cx4_model::{eth::classify::steer_view, fw};
    let (o, i) = (v4(), v6());
    let mut vx = vxlan(0xabc);
    vx.extend_from_slice(&tcp_frame(&i, &[], b"in"));
    let f = ethernet(
        &[0xa00b],
        0x0800,
        &ip_packet(&o, 17, 1, &[], &udp(&o, 7, 4789, &vx, false)),
    );
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let s = steer_view(&f, &h);
    assert_eq!(s.outer.dmac, [0x02, 0, 0, 0, 0, 0x01]);
    assert_eq!(s.outer.smac, [0x02, 0, 0, 0, 0, 0x02]);
    assert_eq!(s.outer.ethertype, 0x0800);
    let vlan = s.outer.vlan.unwrap();
    assert_eq!(
        (vlan.svlan, vlan.prio, vlan.cfi, vlan.vid),
        (false, 5, false, 0x00b)
    );
    assert!(s.outer.vlan2.is_none());
    let ip = s.outer.ip.unwrap();
    assert_eq!(
        (ip.version, ip.protocol, ip.ttl, ip.ihl, ip.frag),
        (4, 17, 64, 5, false)
    );
    assert_eq!(&ip.src[12..], &[10, 0, 0, 1]);
    assert_eq!(&ip.dst[12..], &[10, 0, 0, 2]);
    assert_eq!(
        s.outer.l4,
        Some(fw::L4Fields::Udp {
            sport: 7,
            dport: 4789
        })
    );
    assert_eq!(s.tunnel, Some(fw::Tunnel::Vxlan { vni: 0xabc }));
    let inner = s.inner.unwrap();
    assert_eq!(inner.ethertype, 0x86dd);
    assert_eq!(inner.ip.unwrap().version, 6);
    assert_eq!(inner.ip.unwrap().src[0], 0xfd);
    assert_eq!(
        inner.l4,
        Some(fw::L4Fields::Tcp {
            sport: 40000,
            dport: 5201,
            flags: u16::from(ACK | PSH)
        })
    );

    // GRE carrying IP: the inner headers have no MACs but the IP EtherType.
    let mut g = gre(Some(9), 0x86dd);
    g.extend_from_slice(&tcp_frame(&i, &[], b"")[14..]);
    let f = ethernet(&[], 0x0800, &ip_packet(&o, 47, 1, &[], &g));
    let s = steer_view(&f, &parse(&f, &ParseConfig::default()).unwrap());
    assert_eq!(
        s.tunnel,
        Some(fw::Tunnel::Gre {
            protocol: 0x86dd,
            key: Some(9),
            checksum: false,
            sequence: false
        })
    );
    let inner = s.inner.unwrap();
    assert_eq!((inner.dmac, inner.ethertype), ([0; 6], 0x86dd));
}
