//! Checksums and checksum offloads against independently built packets: send-side insertion
//! for every `cs_flags` combination mlx5e uses (plain 0xc0, encapsulated 0x70), verified by
//! re-summing to 0xffff; receive-side L3/L4 OK bits, the tunnelled report and the CQE
//! `check_sum` mlx5e turns into CHECKSUM_COMPLETE.

mod eth_util;

use cx4_hw::wqe::CsFlags;
use cx4_model::eth::{
    csum::{self, checksum, offload_tx, rx_checksum, Sum},
    frame::{parse, ParseConfig},
};
use eth_util::*;

fn v4() -> Ip {
    Ip::v4([192, 168, 1, 10], [192, 168, 1, 20])
}

fn v6() -> Ip {
    let mut a = [0u8; 16];
    a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    a[15] = 0x10;
    let mut b = a;
    b[15] = 0x20;
    Ip::v6(a, b)
}

/// Zeroes the checksum fields the stack leaves for the device (it writes the pseudo-header
/// sum there; the device must not depend on it).
fn scramble(f: &mut [u8], at: usize) {
    f[at] = 0x5a;
    f[at + 1] = 0xa5;
}

#[test]
fn rfc1071_example_and_odd_lengths() {
    // RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
    let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
    assert_eq!(Sum::new().bytes(&d).fold(), 0xddf2);
    assert_eq!(checksum(&d), !0xddf2);
    for n in 0..d.len() {
        assert_eq!(
            Sum::new().bytes(&d[..n]).fold(),
            naive_sum(&[&d[..n]]),
            "{n}"
        );
    }
    let big: Vec<u8> = (0..9001u32).map(|i| (i * 7 + 3) as u8).collect();
    assert_eq!(Sum::new().bytes(&big).fold(), naive_sum(&[&big]));
}

#[test]
fn plain_tcp_and_udp_checksums_are_inserted() {
    for ip in [v4(), v6()] {
        // TCP over IPv4/IPv6 with cs_flags L3|L4 (mlx5e, not encapsulated).
        let t = tcp(
            &ip,
            33000,
            80,
            7,
            ACK | PSH,
            &[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2],
            b"GET /",
        );
        let mut f = ethernet(&[], ip.ethertype(), &ip_packet(&ip, 6, 1, &[], &t));
        let l4 = if ip.v6 { 54 } else { 34 };
        scramble(&mut f, l4 + 16);
        if !ip.v6 {
            scramble(&mut f, 24);
        }
        let h = parse(&f, &ParseConfig::default().for_tx()).unwrap();
        let done = offload_tx(&mut f, &h, CsFlags::L3 | CsFlags::L4);
        let expect = if ip.v6 {
            CsFlags::L4
        } else {
            CsFlags::L3 | CsFlags::L4
        };
        assert_eq!(done, expect);
        if !ip.v6 {
            assert!(ipv4_header_ok(&f, 14));
        }
        assert!(l4_sum_ok(&f, &ip, 6, l4, f.len()), "TCP over v6={}", ip.v6);

        // UDP, including a payload whose checksum computes to zero (sent as 0xffff).
        let mut u = udp(&ip, 5000, 5001, b"abcd", true);
        let want = be16(&u, 6);
        scramble(&mut u, 6);
        let mut f = ethernet(&[], ip.ethertype(), &ip_packet(&ip, 17, 1, &[], &u));
        let h = parse(&f, &ParseConfig::default().for_tx()).unwrap();
        offload_tx(&mut f, &h, CsFlags::L4);
        assert_eq!(be16(&f, l4 + 6), want);
        assert!(l4_sum_ok(&f, &ip, 17, l4, f.len()));
    }
}

#[test]
fn udp_checksum_zero_is_sent_as_all_ones() {
    let ip = v4();
    // Find a two-byte payload that makes the UDP checksum compute to zero.
    let base = udp(&ip, 1, 2, &[0, 0], false);
    let s = naive_sum(&[&ip.pseudo(17, base.len()), &base]);
    // Adding the word w changes the sum to s + w; the checksum is zero when it is 0xffff.
    let w = 0xffffu16.wrapping_sub(s);
    let mut f = ethernet(
        &[],
        0x0800,
        &ip_packet(&ip, 17, 1, &[], &udp(&ip, 1, 2, &w.to_be_bytes(), false)),
    );
    let h = parse(&f, &ParseConfig::default().for_tx()).unwrap();
    offload_tx(&mut f, &h, CsFlags::L4);
    assert_eq!(be16(&f, 34 + 6), 0xffff);
    assert!(l4_sum_ok(&f, &ip, 17, 34, f.len()));
}

/// A VXLAN-in-IPv4 frame with an inner IPv4 or IPv6 TCP segment, checksums scrambled.
fn vxlan_frame(inner_ip: &Ip, outer_csum: bool) -> (Vec<u8>, usize, usize) {
    let o = v4();
    let t = tcp(inner_ip, 1234, 5678, 99, ACK, &[], &[0x42; 333]);
    let inner = ethernet(
        &[],
        inner_ip.ethertype(),
        &ip_packet(inner_ip, 6, 77, &[], &t),
    );
    let mut vx = vxlan(42);
    vx.extend_from_slice(&inner);
    let mut f = ethernet(
        &[],
        0x0800,
        &ip_packet(&o, 17, 5, &[], &udp(&o, 40000, 4789, &vx, outer_csum)),
    );
    let inner_l3 = 14 + 20 + 8 + 8 + 14;
    let inner_l4 = inner_l3 + if inner_ip.v6 { 40 } else { 20 };
    scramble(&mut f, 24);
    scramble(&mut f, inner_l4 + 16);
    if !inner_ip.v6 {
        scramble(&mut f, inner_l3 + 10);
    }
    (f, inner_l3, inner_l4)
}

#[test]
fn encapsulated_checksums_follow_mlx5e_flags() {
    for inner_ip in [v4(), v6()] {
        let (mut f, inner_l3, inner_l4) = vxlan_frame(&inner_ip, false);
        let h = parse(&f, &ParseConfig::default().for_tx()).unwrap();
        let flags = CsFlags::L3 | CsFlags::L3_INNER | CsFlags::L4_INNER; // 0x70
        let done = offload_tx(&mut f, &h, flags);
        let expect = if inner_ip.v6 {
            CsFlags::L3 | CsFlags::L4_INNER
        } else {
            flags
        };
        assert_eq!(done, expect);
        assert!(ipv4_header_ok(&f, 14));
        if !inner_ip.v6 {
            assert!(ipv4_header_ok(&f, inner_l3));
        }
        assert!(l4_sum_ok(&f, &inner_ip, 6, inner_l4, f.len()));
        assert_eq!(
            be16(&f, 34 + 6),
            0,
            "the outer UDP checksum stays as the driver wrote it"
        );
    }
}

#[test]
fn outer_l4_request_on_a_tunnel_covers_the_inner_packet() {
    let (mut f, _, inner_l4) = vxlan_frame(&v4(), true);
    let h = parse(&f, &ParseConfig::default().for_tx()).unwrap();
    let all = CsFlags::all();
    assert_eq!(offload_tx(&mut f, &h, all), all);
    assert!(l4_sum_ok(&f, &v4(), 6, inner_l4, f.len()));
    assert!(
        l4_sum_ok(&f, &v4(), 17, 34, f.len()),
        "outer UDP after the inner fix-ups"
    );
}

#[test]
fn gre_inner_checksums() {
    let o = v4();
    let i = v6();
    let t = tcp(&i, 1, 2, 3, ACK, &[], b"nvgre payload");
    let mut g = gre(Some(0x100), 0x6558);
    g.extend_from_slice(&ethernet(&[], 0x86dd, &ip_packet(&i, 6, 0, &[], &t)));
    let mut f = ethernet(&[7], 0x0800, &ip_packet(&o, 47, 3, &[], &g));
    let inner_l4 = 18 + 20 + 8 + 14 + 40;
    scramble(&mut f, inner_l4 + 16);
    let h = parse(&f, &ParseConfig::default().for_tx()).unwrap();
    offload_tx(
        &mut f,
        &h,
        CsFlags::L3 | CsFlags::L3_INNER | CsFlags::L4_INNER,
    );
    assert!(l4_sum_ok(&f, &i, 6, inner_l4, f.len()));
    assert!(ipv4_header_ok(&f, 18));
}

#[test]
fn receive_reports_ok_bits_and_check_sum() {
    let ip = v4();
    let t = tcp(&ip, 1, 2, 3, ACK, &[], &[9; 100]);
    let mut f = ethernet(&[], 0x0800, &ip_packet(&ip, 6, 1, &[], &t));
    let dgram = f.len();
    f.extend_from_slice(&[0xee; 6]); // padding the sum must not cover
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let r = rx_checksum(&f, &h, false);
    assert!(r.l3_ok && r.l4_ok && !r.tunneled);
    assert_eq!(r.check_sum, naive_sum(&[&f[14..dgram]]));
    // What mlx5e does with it: csum_unfold(check_sum), then the stack checks the TCP
    // checksum as ~(sum over IP payload + pseudo-header) == 0; the IP header part of the sum
    // is 0xffff for a valid header, so the whole-datagram sum works.
    let ip_hdr = naive_sum(&[&f[14..34]]);
    assert_eq!(ip_hdr, 0xffff);

    let mut bad = f.clone();
    bad[60] ^= 1; // payload bit
    let h = parse(&bad, &ParseConfig::default()).unwrap();
    let r = rx_checksum(&bad, &h, false);
    assert!(r.l3_ok && !r.l4_ok);
    let mut bad = f.clone();
    bad[22] ^= 1; // TTL
    let h = parse(&bad, &ParseConfig::default()).unwrap();
    assert!(!rx_checksum(&bad, &h, false).l3_ok);

    // UDP without checksum: fine over IPv4, not over IPv6.
    for ip in [v4(), v6()] {
        let f = ethernet(
            &[],
            ip.ethertype(),
            &ip_packet(&ip, 17, 1, &[], &udp(&ip, 1, 2, b"x", false)),
        );
        let h = parse(&f, &ParseConfig::default()).unwrap();
        assert_eq!(rx_checksum(&f, &h, false).l4_ok, !ip.v6);
    }
}

#[test]
fn receive_reports_tunnels_by_their_inner_headers_when_asked() {
    let (mut f, _, _) = vxlan_frame(&v6(), false);
    let h = parse(&f, &ParseConfig::default().for_tx()).unwrap();
    offload_tx(
        &mut f,
        &h,
        CsFlags::L3 | CsFlags::L3_INNER | CsFlags::L4_INNER,
    );
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let outer = rx_checksum(&f, &h, false);
    assert!(outer.l3_ok && outer.l4_ok && !outer.tunneled);
    let inner = rx_checksum(&f, &h, true);
    assert!(inner.l3_ok && inner.l4_ok && inner.tunneled);
    assert_eq!(inner.check_sum, naive_sum(&[&f[14..]]));

    // A bad inner TCP checksum only shows in the tunnelled report.
    let mut bad = f.clone();
    let n = bad.len();
    bad[n - 1] ^= 0xff;
    let h = parse(&bad, &ParseConfig::default()).unwrap();
    assert!(
        rx_checksum(&bad, &h, false).l4_ok,
        "outer UDP checksum is zero"
    );
    assert!(!rx_checksum(&bad, &h, true).l4_ok);
}

#[test]
fn header_checksum_helpers_agree_with_the_builder() {
    let ip = v4();
    let f = ethernet(
        &[],
        0x0800,
        &ip_packet(
            &ip,
            6,
            0x1234,
            &[1, 1, 1, 1],
            &tcp(&ip, 1, 2, 3, SYN, &[], &[]),
        ),
    );
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let l3 = h.outer.l3.unwrap();
    assert_eq!(csum::ipv4_header_checksum(&f, &l3), be16(&f, 24));
    let l4 = h.outer.l4.unwrap();
    assert_eq!(csum::l4_checksum(&f, &l3, &l4), Some(be16(&f, 38 + 16)));
}
