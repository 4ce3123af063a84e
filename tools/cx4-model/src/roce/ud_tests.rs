//! UD and GSI QPs between two modelled cards (the harness of `device_tests.rs`): QPs made
//! and moved to RTS by the commands mlx5_ib sends, WQEs with the datagram segment libmlx5
//! and mlx5_ib copy from their address handles, frames and CQEs checked byte for byte.

use cx4_hw::{
    cq::cqe::{opcode as cqe_op, syndrome},
    qp::{mtu, qpc_st, qpc_state},
    roce::{roce_l3_type, roce_version},
    wqe::{
        self, opcode as wop,
        rdma::{Av, EXTENDED_UD_AV},
    },
};

use super::*;
use crate::roce::{
    headers::Opcode,
    packet::{self, Ip},
    ud::{GRH_LEN, GSI_QKEY, GSI_QPN, MULTICAST_QPN},
};

const QKEY: u32 = 0x1111_1111;

/// RST → INIT → RTR → RTS as mlx5_ib moves a UD QP (Q_Key at RST2INIT, the MTU at
/// INIT2RTR, the send PSN at RTR2RTS).
pub(super) fn ud_up(c: &mut Card, qkey: u32, mtu_code: u8) {
    let qpn = c.qpn;
    ok::<cmds::Rst2InitQp>(&mut c.d, |i| {
        i.set_qpn(qpn);
        let cx = i.qpc_mut();
        cx.set_q_key(qkey);
        cx.primary_address_path_mut().set_vhca_port_num(1);
    });
    ok::<cmds::Init2RtrQp>(&mut c.d, |i| {
        i.set_qpn(qpn);
        let cx = i.qpc_mut();
        cx.set_mtu(mtu_code.into());
        cx.set_log_msg_max(12);
    });
    ok::<cmds::Rtr2RtsQp>(&mut c.d, |i| {
        i.set_qpn(qpn);
        i.qpc_mut().set_next_send_psn(0x77);
    });
}

/// Two cards with one UD QP each, in RTS, Q_Key [`QKEY`], MTU 1024.
fn ud_pair() -> (Card, Card) {
    let mut a = Card::new(1, qpc_st::UD);
    let mut b = Card::new(2, qpc_st::UD);
    ud_up(&mut a, QKEY, mtu::MTU_1K);
    ud_up(&mut b, QKEY, mtu::MTU_1K);
    (a, b)
}

/// The datagram segment (three 16-byte pieces) of a send from `from` to QP `dqpn` at
/// `to`'s address, as `mlx5_ib_create_ah` / `mlx5_create_ah` and `set_datagram_seg` build it.
fn av_to(from: &Card, dqpn: u32, to: ([u8; 6], [u8; 16]), qkey: u32) -> [[u8; 16]; 3] {
    let mut a = Av::new();
    a.set_qkey(qkey);
    a.set_dqp_dct(dqpn | EXTENDED_UD_AV);
    a.set_stat_rate_sl(0);
    a.set_udp_sport(0xc321);
    a.rmac_mut().copy_from_slice(&to.0);
    a.set_tclass(0x02);
    a.set_hop_limit(64);
    a.set_grh_gid_fl((1 << 30) | (from.sgid_index << 20) | 0x5_4321);
    a.rgid_mut().copy_from_slice(&to.1);
    av_segs(&a)
}

/// The three 16-byte pieces of the datagram segment `a`.
pub(super) fn av_segs(a: &Av) -> [[u8; 16]; 3] {
    let mut out = [[0u8; 16]; 3];
    for (k, s) in out.iter_mut().enumerate() {
        s.copy_from_slice(&a.0[k * 16..k * 16 + 16]);
    }
    out
}

/// The segments of a UD send: the datagram segment, then `tail`.
pub(super) fn ud_segs(av: [[u8; 16]; 3], tail: &[[u8; 16]]) -> Vec<[u8; 16]> {
    let mut v = av.to_vec();
    v.extend_from_slice(tail);
    v
}

fn addr(c: &Card) -> ([u8; 6], [u8; 16]) {
    (c.mac, c.gid)
}

/// Gives each card an IPv6 RoCE v2 GID at index 1 and sends from it.
fn use_ipv6(cards: [&mut Card; 2]) {
    for c in cards {
        let mut g = [0u8; 16];
        g[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        g[15] = c.mac[5];
        let mac = c.mac;
        ok::<cmds::SetRoceAddress>(&mut c.d, |i| {
            i.set_roce_address_index(1);
            i.set_vhca_port_num(1);
            let a = i.roce_address_mut();
            a.source_l3_address_mut().copy_from_slice(&g);
            a.set_source_mac(mac);
            a.set_roce_version(roce_version::V2.into());
            a.set_roce_l3_type(roce_l3_type::IPV6.into());
        });
        c.gid = g;
        c.sgid_index = 1;
    }
}

fn ones_complement_ok(h: &[u8]) -> bool {
    let mut sum = 0u32;
    for w in h.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

#[test]
fn ud_send_with_immediate_over_ipv4_lands_after_the_grh_area() {
    let (mut a, mut b) = ud_pair();
    let msg: Vec<u8> = (0..1000u32).map(|i| (i * 3 + 1) as u8).collect();
    a.write(VA, &msg);
    b.post_recv(VA + 0x8000, 2048);
    let av = av_to(&a, b.qpn, addr(&b), QKEY);
    let idx = a.post_send(
        wop::SEND_IMM,
        &ud_segs(av, &[data(1000, a.lkey, VA)]),
        0x1122_3344,
        true,
    );
    let f = a.port.take();
    assert_eq!(f.len(), 1, "one packet per UD message");
    let p = packet::parse(&f[0]).unwrap();
    assert_eq!(p.bth.opcode, Opcode::UdSendOnlyWithImmediate);
    assert_eq!(
        (p.bth.dest_qp, p.bth.psn, p.bth.pkey),
        (b.qpn, 0x77, 0xffff)
    );
    let deth = p.ext.deth.unwrap();
    assert_eq!((deth.qkey, deth.src_qp), (QKEY, a.qpn));
    assert_eq!(p.ext.imm.unwrap().imm, 0x1122_3344);
    assert_eq!(p.src_port, 0xc321);
    assert!(matches!(p.ip, Ip::V4(h) if h.dst == [10, 0, 0, 2] && h.ttl == 64));
    // The requester completes at once.
    let c = a.next_cqe(false).expect("requester CQE");
    assert_eq!(c[63] >> 4, cqe_op::REQ);
    assert_eq!(be16(&c, 0x3c), idx, "wqe_counter");
    assert_eq!(be32(&c, 0x38), u32::from(wop::SEND_IMM) << 24 | a.qpn);
    assert_eq!(be32(&c, 0x2c), 1000, "byte_cnt");
    assert_eq!(be32(&c, 0x20), UIDX);
    b.d.receive(&f[0]);
    let got = b.read(VA + 0x8000, GRH_LEN + 1000);
    assert_eq!(&got[GRH_LEN..], &msg[..], "payload at offset 40");
    assert_eq!(&got[..20], &[0u8; 20], "IPv4: the first 20 bytes are zero");
    assert_eq!(
        &got[20..40],
        &f[0][14..34],
        "then the IPv4 header as received"
    );
    assert_eq!(
        got[20], 0x45,
        "version 4, IHL 5 (ib_get_rdma_header_version)"
    );
    assert!(ones_complement_ok(&got[20..40]), "header checksum holds");
    let r = b.next_cqe(true).expect("responder CQE");
    assert_eq!(r[63] >> 4, cqe_op::RESP_SEND_IMM);
    assert_eq!(be32(&r, 0x2c), 40 + 1000, "byte_cnt: GRH area + payload");
    assert_eq!(
        be32(&r, 0x18),
        1 << 28 | 2 << 24 | a.qpn,
        "flags_rqpn: GRH, IPv4, DETH source QP"
    );
    assert_eq!(be32(&r, 0x24), 0x1122_3344, "immediate");
    assert_eq!(be32(&r, 0x38) & 0xff_ffff, b.qpn, "sop_drop_qpn");
    assert_eq!(be32(&r, 0x20), UIDX);
    assert_eq!(be16(&r, 0x3c), 0, "first receive WQE");
    assert_eq!(r[0x1d] & 1, 0, "untagged");
    assert!(b.next_cqe(true).is_none());
    // A plain SEND, inline, unsignaled, back the other way.
    a.post_recv(VA + 0x100, 128);
    let mut inl = Vec::new();
    inl.extend((5u32 | wqe::INLINE_SEG).to_be_bytes());
    inl.extend(b"howdy");
    inl.resize(16, 0);
    let av = av_to(&b, a.qpn, addr(&a), QKEY);
    b.post_send(
        wop::SEND,
        &ud_segs(av, &[inl.try_into().unwrap()]),
        0,
        false,
    );
    run(&mut a, &mut b);
    assert_eq!(a.read(VA + 0x100 + 40, 5), b"howdy");
    let r = a.next_cqe(true).unwrap();
    assert_eq!(r[63] >> 4, cqe_op::RESP_SEND);
    assert_eq!(be32(&r, 0x2c), 45);
    assert_eq!(be32(&r, 0x18), 1 << 28 | 2 << 24 | b.qpn);
    assert_eq!(be32(&r, 0x24), 0, "no immediate on a UD QP");
    assert!(b.next_cqe(false).is_none(), "unsignaled: no requester CQE");
    let s = a.d.roce.state.stats;
    assert_eq!((s.ud_rx, b.d.roce.state.stats.ud_rx), (1, 1));
    assert_eq!((s.ud_tx, b.d.roce.state.stats.ud_tx), (1, 1));
    assert!(a
        .d
        .roce
        .stats()
        .line()
        .contains("ud: tx 1 (0 bad av, 0 mc looped) rx 1"));
}

#[test]
fn ud_send_over_ipv6_carries_the_ipv6_header_in_the_grh_area() {
    let (mut a, mut b) = ud_pair();
    use_ipv6([&mut a, &mut b]);
    a.write(VA, b"over ipv6, datagram");
    b.post_recv(VA, 256);
    let av = av_to(&a, b.qpn, addr(&b), QKEY);
    a.post_send(wop::SEND, &ud_segs(av, &[data(19, a.lkey, VA)]), 0, true);
    let f = a.port.take();
    assert_eq!(be16(&f[0], 12), 0x86dd);
    let p = packet::parse(&f[0]).unwrap();
    assert!(matches!(p.ip, Ip::V6(h) if h.flow_label == 0x5_4321 && h.dst == b.gid));
    b.d.receive(&f[0]);
    let got = b.read(VA, GRH_LEN + 19);
    assert_eq!(&got[..40], &f[0][14..54], "the IPv6 header as received");
    assert_eq!(got[0] >> 4, 6);
    assert_eq!(
        got[6], 17,
        "next header UDP: ib_get_net_type_by_grh says IPv6"
    );
    assert_eq!(&got[24..40], &b.gid, "destination GID");
    assert_eq!(&got[8..24], &a.gid, "source GID");
    assert_eq!(&got[40..], b"over ipv6, datagram");
    let r = b.next_cqe(true).unwrap();
    assert_eq!(r[63] >> 4, cqe_op::RESP_SEND);
    assert_eq!(be32(&r, 0x2c), 59);
    assert_eq!(
        be32(&r, 0x18),
        1 << 28 | 1 << 24 | a.qpn,
        "flags_rqpn: GRH, IPv6, source QP"
    );
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
}

#[test]
fn ud_and_gsi_over_roce_v1_gids_put_the_received_grh_in_the_grh_area() {
    let (mut a, mut b) = ud_pair();
    for c in [&mut a, &mut b] {
        let g = fixture::link_local_gid(c.mac);
        c.use_v1(g, None);
    }
    let msg: Vec<u8> = (0..700u32).map(|i| (i * 5 + 3) as u8).collect();
    a.write(VA, &msg);
    b.post_recv(VA + 0x8000, 1024);
    let av = av_to(&a, b.qpn, addr(&b), QKEY);
    a.post_send(
        wop::SEND_IMM,
        &ud_segs(av, &[data(700, a.lkey, VA)]),
        0x5566_7788,
        true,
    );
    let f = a.port.take();
    assert_eq!(be16(&f[0], 12), 0x8915, "RoCE v1");
    assert_eq!(
        f[0].len(),
        14 + 40 + 12 + 8 + 4 + 700 + 4,
        "GRH, BTH, DETH, ImmDt, ICRC"
    );
    let p = packet::parse(&f[0]).unwrap();
    assert_eq!(
        p.ip,
        Ip::Grh(packet::Grh {
            sgid: a.gid,
            dgid: b.gid,
            traffic_class: 0x02,
            flow_label: 0x5_4321,
            hop_limit: 64,
        }),
        "the vector's traffic class, flow label and hop limit in the GRH"
    );
    assert_eq!(p.src_port, 0, "no UDP");
    let deth = p.ext.deth.unwrap();
    assert_eq!((deth.qkey, deth.src_qp), (QKEY, a.qpn));
    b.d.receive(&f[0]);
    let got = b.read(VA + 0x8000, GRH_LEN + 700);
    assert_eq!(&got[..40], &f[0][14..54], "the received GRH itself");
    assert_eq!((got[0] >> 4, got[6]), (6, 0x1b), "IPVer 6, next header BTH");
    assert_eq!(&got[8..24], &a.gid, "SGID");
    assert_eq!(&got[24..40], &b.gid, "DGID");
    assert_eq!(&got[40..], &msg[..]);
    let r = b.next_cqe(true).unwrap();
    assert_eq!(r[63] >> 4, cqe_op::RESP_SEND_IMM);
    assert_eq!(be32(&r, 0x2c), 40 + 700);
    assert_eq!(
        be32(&r, 0x18),
        1 << 28 | u32::from(cx4_hw::cq::cqe::roce_l3_header_type::GRH) << 24 | a.qpn,
        "flags_rqpn: GRH, L3 type GRH (mlx5_ib: RDMA_NETWORK_ROCE_V1), DETH source QP"
    );
    assert_eq!(be32(&r, 0x24), 0x5566_7788);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    // The other way, through the shuttle.
    a.post_recv(VA + 0x100, 128);
    let av = av_to(&b, a.qpn, addr(&a), QKEY);
    b.write(VA, b"v1 back");
    b.post_send(wop::SEND, &ud_segs(av, &[data(7, b.lkey, VA)]), 0, false);
    run(&mut a, &mut b);
    assert_eq!(a.read(VA + 0x100 + 40, 7), b"v1 back");
    assert_eq!(be32(&a.next_cqe(true).unwrap(), 0x18) >> 24, 0x10);

    // QP1 MADs over v1 GIDs, as ib_cm sends them for a RoCE v1 path.
    let mut a = Card::new(1, qpc_st::QP1);
    let mut b = Card::new(2, qpc_st::QP1);
    for c in [&mut a, &mut b] {
        ud_up(c, GSI_QKEY, mtu::MTU_256);
        let g = fixture::link_local_gid(c.mac);
        c.use_v1(g, None);
    }
    let mad: Vec<u8> = (0..256u32).map(|i| (i ^ 0xa5) as u8).collect();
    a.write(VA, &mad);
    b.post_recv(VA + 0x1000, 256 + 40);
    let av = av_to(&a, GSI_QPN, addr(&b), GSI_QKEY);
    a.post_send(wop::SEND, &ud_segs(av, &[data(256, a.lkey, VA)]), 0, true);
    let f = a.port.take();
    assert_eq!(be16(&f[0], 12), 0x8915);
    let p = packet::parse(&f[0]).unwrap();
    assert_eq!((p.bth.dest_qp, p.ext.deth.unwrap().src_qp), (1, 1));
    b.d.receive(&f[0]);
    assert_eq!(b.read(VA + 0x1000, 40), &f[0][14..54]);
    assert_eq!(b.read(VA + 0x1000 + 40, 256), mad);
    let r = b.next_cqe(true).unwrap();
    assert_eq!(be32(&r, 0x18), 1 << 28 | 1, "GRH, L3 type GRH, source QP 1");
    assert_eq!(be32(&r, 0x24), 0xffff, "cqe->pkey");
}

#[test]
fn wrong_qkey_and_missing_receive_wqe_drop_and_count() {
    let (mut a, mut b) = ud_pair();
    a.write(VA, b"0123456789");
    b.post_recv(VA + 0x1000, 256);
    // A wrong Q_Key: dropped, the receive WQE stays posted.
    let av = av_to(&a, b.qpn, addr(&b), 0x2222);
    a.post_send(wop::SEND, &ud_segs(av, &[data(10, a.lkey, VA)]), 0, true);
    run(&mut a, &mut b);
    assert_eq!(b.d.roce.state.stats.ud_rx_qkey, 1);
    assert!(b.next_cqe(true).is_none());
    assert_eq!(
        a.next_cqe(false).unwrap()[63] >> 4,
        cqe_op::REQ,
        "the sender completes"
    );
    // The high bit of the WQE's Q_Key sends the QP's own: accepted, into the same WQE.
    let av = av_to(&a, b.qpn, addr(&b), 0x8000_0000);
    a.post_send(wop::SEND, &ud_segs(av, &[data(10, a.lkey, VA)]), 0, true);
    let f = a.port.take();
    assert_eq!(packet::parse(&f[0]).unwrap().ext.deth.unwrap().qkey, QKEY);
    b.d.receive(&f[0]);
    let r = b.next_cqe(true).unwrap();
    assert_eq!((r[63] >> 4, be16(&r, 0x3c)), (cqe_op::RESP_SEND, 0));
    assert_eq!(b.read(VA + 0x1000 + 40, 10), b"0123456789");
    // No receive WQE: dropped (no RNR on UD); the QP keeps working.
    a.post_send(wop::SEND, &ud_segs(av, &[data(10, a.lkey, VA)]), 0, false);
    run(&mut a, &mut b);
    assert_eq!(b.d.roce.state.stats.ud_rx_no_recv, 1);
    assert!(b.next_cqe(true).is_none());
    b.post_recv(VA + 0x2000, 256);
    a.post_send(wop::SEND, &ud_segs(av, &[data(10, a.lkey, VA)]), 0, false);
    run(&mut a, &mut b);
    assert_eq!(be16(&b.next_cqe(true).unwrap(), 0x3c), 1);
    assert_eq!(b.state(), qpc_state::RTS);
    let line = b.d.roce.state.stats.line();
    assert!(
        line.contains("rx 2 (dropped: 1 qkey, 1 no recv, 0 too long, 0 malformed, 0 no target)"),
        "{line}"
    );
}

#[test]
fn payload_over_the_mtu_is_a_local_length_error() {
    let (mut a, b) = ud_pair();
    let av = av_to(&a, b.qpn, addr(&b), QKEY);
    let idx = a.post_send(wop::SEND, &ud_segs(av, &[data(1025, a.lkey, VA)]), 0, true);
    assert!(a.port.take().is_empty(), "nothing sent");
    let e = a.next_cqe(false).unwrap();
    assert_eq!(e[63] >> 4, cqe_op::REQ_ERR);
    assert_eq!(e[0x37], syndrome::LOCAL_LENGTH_ERR);
    assert_eq!(be16(&e, 0x3c), idx);
    assert_eq!(a.state(), qpc_state::ERR);
    // Exactly the MTU is fine (on a fresh pair).
    let (mut a, mut b) = ud_pair();
    b.post_recv(VA, 2048);
    let av = av_to(&a, b.qpn, addr(&b), QKEY);
    a.post_send(wop::SEND, &ud_segs(av, &[data(1024, a.lkey, VA)]), 0, true);
    run(&mut a, &mut b);
    assert_eq!(be32(&b.next_cqe(true).unwrap(), 0x2c), 1064);
    // A receive WQE too short for GRH area + payload: a responder length error.
    b.post_recv(VA, 1063);
    a.post_send(wop::SEND, &ud_segs(av, &[data(1024, a.lkey, VA)]), 0, true);
    run(&mut a, &mut b);
    let e = b.next_cqe(true).unwrap();
    assert_eq!(e[63] >> 4, cqe_op::RESP_ERR);
    assert_eq!(e[0x37], syndrome::LOCAL_LENGTH_ERR);
    assert_eq!(be16(&e, 0x3c), 1);
}

#[test]
fn qp1_to_qp1_mad_uses_the_gsi_qkey_and_source_qp_1() {
    let mut a = Card::new(1, qpc_st::QP1);
    let mut b = Card::new(2, qpc_st::QP1);
    // ib_mad's QP1: Q_Key 0x80010000; mlx5_ib gives QP1 MTU 256 (is_sqp).
    ud_up(&mut a, GSI_QKEY, mtu::MTU_256);
    ud_up(&mut b, GSI_QKEY, mtu::MTU_256);
    assert_eq!(a.d.fw.rdma.gsi, Some(a.qpn));
    // mlx5_ib_create_gsi: one hardware GSI QP that sends and receives (no per-P_Key TX QPs
    // without set_deth_sqpn, nor on an Ethernet port without LAG).
    assert_eq!(a.d.fw.caps.general("set_deth_sqpn"), 0);
    let mad: Vec<u8> = (0..256u32).map(|i| (i ^ 0x5a) as u8).collect();
    a.write(VA, &mad);
    b.post_recv(VA + 0x1000, 256 + 40);
    // ib_mad posts remote_qpn 1, remote_qkey IB_QP1_QKEY.
    let av = av_to(&a, GSI_QPN, addr(&b), GSI_QKEY);
    let idx = a.post_send(wop::SEND, &ud_segs(av, &[data(256, a.lkey, VA)]), 0, true);
    let f = a.port.take();
    let p = packet::parse(&f[0]).unwrap();
    assert_eq!((p.bth.opcode, p.bth.dest_qp), (Opcode::UdSendOnly, 1));
    let deth = p.ext.deth.unwrap();
    assert_eq!(
        (deth.qkey, deth.src_qp),
        (0x8001_0000, 1),
        "DETH of a GSI MAD"
    );
    assert_eq!(p.bth.pkey, 0xffff);
    b.d.receive(&f[0]);
    assert_eq!(b.read(VA + 0x1000 + 40, 256), mad);
    let r = b.next_cqe(true).unwrap();
    assert_eq!(r[63] >> 4, cqe_op::RESP_SEND);
    assert_eq!(be32(&r, 0x2c), 296);
    assert_eq!(
        be32(&r, 0x18),
        1 << 28 | 2 << 24 | 1,
        "flags_rqpn: source QP 1"
    );
    assert_eq!(be32(&r, 0x24), 0xffff, "cqe->pkey: the BTH P_Key");
    assert_eq!(
        be32(&r, 0x38) & 0xff_ffff,
        b.qpn,
        "the hardware QPN (mlx5_ib looks the QP up by it)"
    );
    let c = a.next_cqe(false).unwrap();
    assert_eq!((c[63] >> 4, be16(&c, 0x3c)), (cqe_op::REQ, idx));
    assert_eq!(be32(&c, 0x38) & 0xff_ffff, a.qpn);
    // A MAD sent to QP 1 with another Q_Key is not taken by QP1.
    let av = av_to(&b, GSI_QPN, addr(&a), 0x1234);
    a.post_recv(VA, 512);
    b.post_send(wop::SEND, &ud_segs(av, &[data(256, b.lkey, VA)]), 0, false);
    run(&mut a, &mut b);
    assert_eq!(a.d.roce.state.stats.ud_rx_qkey, 1);
    // A card without a GSI QP drops MADs to QP 1 and counts them.
    let (mut u, _) = ud_pair();
    u.d.receive(&f[0]);
    assert_eq!(
        u.d.roce.state.stats.ud_rx_no_target, 0,
        "not for u's address"
    );
    let mut g = f[0].clone();
    let mut q = packet::parse(&g).unwrap();
    if let Ip::V4(h) = &mut q.ip {
        h.dst = [10, 0, 0, 1];
    }
    g = packet::build(&q).unwrap();
    u.d.receive(&g);
    assert_eq!(u.d.roce.state.stats.ud_rx_no_target, 1);
}

#[test]
fn multicast_reaches_every_attached_qp() {
    let (mut a, mut b) = ud_pair();
    let mut group = [0u8; 16];
    group[10] = 0xff;
    group[11] = 0xff;
    group[12..].copy_from_slice(&[239, 1, 2, 3]);
    let qpn = b.qpn;
    ok::<cmds::AttachToMcg>(&mut b.d, |i| {
        i.set_qpn(qpn);
        i.multicast_gid_mut().copy_from_slice(&group);
    });
    b.post_recv(VA, 256);
    a.write(VA, b"to all");
    let av = av_to(&a, MULTICAST_QPN, ([0x01, 0, 0x5e, 1, 2, 3], group), QKEY);
    a.post_send(wop::SEND, &ud_segs(av, &[data(6, a.lkey, VA)]), 0, true);
    run(&mut a, &mut b);
    assert_eq!(b.read(VA + 40, 6), b"to all");
    let r = b.next_cqe(true).unwrap();
    assert_eq!(
        (r[63] >> 4, be32(&r, 0x18)),
        (cqe_op::RESP_SEND, 1 << 28 | 2 << 24 | a.qpn)
    );
    // Detached: the group is gone and the card no longer takes the frame.
    ok::<cmds::DetachFromMcg>(&mut b.d, |i| {
        i.set_qpn(qpn);
        i.multicast_gid_mut().copy_from_slice(&group);
    });
    a.post_send(wop::SEND, &ud_segs(av, &[data(6, a.lkey, VA)]), 0, false);
    let before = b.d.roce.state.stats.rx_packets;
    run(&mut a, &mut b);
    assert_eq!(b.d.roce.state.stats.rx_packets, before);
}

#[test]
fn multicast_loops_back_to_the_senders_card_unless_blocked() {
    let (mut a, mut b) = ud_pair();
    let mut group = [0u8; 16];
    group[0] = 0xff;
    group[1] = 0x0e;
    group[15] = 7;
    use_ipv6([&mut a, &mut b]);
    for c in [&mut a, &mut b] {
        let qpn = c.qpn;
        ok::<cmds::AttachToMcg>(&mut c.d, |i| {
            i.set_qpn(qpn);
            i.multicast_gid_mut().copy_from_slice(&group);
        });
        c.post_recv(VA + 0x3000, 256);
    }
    a.write(VA, b"everyone");
    let av = av_to(&a, MULTICAST_QPN, ([0x33, 0x33, 0, 0, 0, 7], group), QKEY);
    a.post_send(wop::SEND, &ud_segs(av, &[data(8, a.lkey, VA)]), 0, false);
    assert_eq!(a.d.roce.state.stats.ud_mc_loopback, 1);
    assert_eq!(
        a.read(VA + 0x3000 + 40, 8),
        b"everyone",
        "the sender's own QP"
    );
    run(&mut a, &mut b);
    assert_eq!(b.read(VA + 0x3000 + 40, 8), b"everyone", "the peer's QP");
    let sender = a.qpn;
    for c in [&mut a, &mut b] {
        let r = c.next_cqe(true).unwrap();
        assert_eq!(be32(&r, 0x18), 1 << 28 | 1 << 24 | sender);
    }
    // IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK: the sender does not hear itself.
    a.ctx_mut().set_block_lb_mc(1);
    a.post_recv(VA + 0x3000, 256);
    b.post_recv(VA + 0x3000, 256);
    a.post_send(wop::SEND, &ud_segs(av, &[data(8, a.lkey, VA)]), 0, false);
    run(&mut a, &mut b);
    assert!(a.next_cqe(true).is_none());
    assert!(b.next_cqe(true).is_some());
    assert_eq!(
        (
            a.d.roce.state.stats.ud_mc_loopback,
            a.d.roce.state.stats.ud_rx_no_target
        ),
        (1, 0),
        "no copy for a group whose only local member is the blocked sender"
    );
}

#[test]
fn vlan_gids_tag_ud_packets_with_the_sl_as_priority() {
    let (mut a, mut b) = ud_pair();
    for c in [&mut a, &mut b] {
        let (g, mac) = (c.gid, c.mac);
        ok::<cmds::SetRoceAddress>(&mut c.d, |i| {
            i.set_roce_address_index(2);
            i.set_vhca_port_num(1);
            let a = i.roce_address_mut();
            a.source_l3_address_mut().copy_from_slice(&g);
            a.set_source_mac(mac);
            a.set_vlan_valid(1);
            a.set_vlan_id(42);
            a.set_roce_version(roce_version::V2.into());
            a.set_roce_l3_type(roce_l3_type::IPV4.into());
        });
        c.sgid_index = 2;
    }
    let mut av = av_to(&a, b.qpn, addr(&b), QKEY);
    av[0][12] = 5 << 1; // stat_rate_sl: SL 5 as mlx5_ib writes it on Ethernet
    a.write(VA, b"tagged");
    b.post_recv(VA, 128);
    a.post_send(wop::SEND_IMM, &ud_segs(av, &[data(6, a.lkey, VA)]), 9, true);
    let f = a.port.take();
    assert_eq!(be16(&f[0], 12), 0x8100);
    assert_eq!(
        be16(&f[0], 14),
        5 << 13 | 42,
        "PCP = SL, VID of the GID entry"
    );
    b.d.receive(&f[0]);
    let got = b.read(VA, 46);
    assert_eq!(&got[20..40], &f[0][18..38], "the IPv4 header after the tag");
    assert_eq!(&got[40..], b"tagged");
    let r = b.next_cqe(true).unwrap();
    assert_eq!(r[0x1d] & 1, 1, "cvlan stripped");
    assert_eq!(be16(&r, 0x1e), 5 << 13 | 42, "vlan_info");
    assert_eq!(be32(&r, 0x24), 9);
}

#[test]
fn a_ud_qp_in_error_flushes_both_queues_and_drops_packets() {
    let (mut a, mut b) = ud_pair();
    b.post_recv(VA, 256);
    b.post_recv(VA + 0x100, 256);
    let qpn = b.qpn;
    ok::<cmds::ToErrQp>(&mut b.d, |i| i.set_qpn(qpn));
    for k in 0..2 {
        let e = b.next_cqe(true).unwrap();
        assert_eq!(
            (e[63] >> 4, e[0x37]),
            (cqe_op::RESP_ERR, syndrome::WR_FLUSH_ERR)
        );
        assert_eq!(be16(&e, 0x3c), k);
    }
    // A send posted in ERR is flushed at its doorbell; a packet to the QP is not taken.
    let av = av_to(&b, a.qpn, addr(&a), QKEY);
    let idx = b.post_send(wop::SEND, &ud_segs(av, &[data(4, b.lkey, VA)]), 0, true);
    let e = b.next_cqe(false).unwrap();
    assert_eq!(
        (e[63] >> 4, e[0x37]),
        (cqe_op::REQ_ERR, syndrome::WR_FLUSH_ERR)
    );
    assert_eq!(be16(&e, 0x3c), idx);
    assert!(b.port.take().is_empty());
    let av = av_to(&a, b.qpn, addr(&b), QKEY);
    a.post_send(wop::SEND, &ud_segs(av, &[data(4, a.lkey, VA)]), 0, false);
    let before = b.d.roce.state.stats.rx_no_qp;
    run(&mut a, &mut b);
    assert_eq!(b.d.roce.state.stats.rx_no_qp, before + 1);
    // Reset and back to RTS: the PSN starts again from the context.
    ok::<cmds::ToRstQp>(&mut b.d, |i| i.set_qpn(qpn));
    b.sq_pc = 0;
    b.rq_pc = 0;
    b.d.bus.mem.write(QP_DBR, &[0u8; 8]).unwrap();
    ud_up(&mut b, QKEY, mtu::MTU_1K);
    let av = av_to(&b, a.qpn, addr(&a), QKEY);
    b.post_send(wop::SEND, &ud_segs(av, &[data(4, b.lkey, VA)]), 0, false);
    let f = b.port.take();
    assert_eq!(packet::parse(&f[0]).unwrap().bth.psn, 0x77);
}

#[test]
fn a_ud_qp_can_send_to_itself_through_the_card() {
    let mut a = Card::new(1, qpc_st::UD);
    ud_up(&mut a, QKEY, mtu::MTU_4K);
    a.write(VA, b"self");
    a.post_recv(VA + 0x400, 64);
    let av = av_to(&a, a.qpn, addr(&a), QKEY);
    a.post_send(wop::SEND, &ud_segs(av, &[data(4, a.lkey, VA)]), 0, true);
    assert!(a.port.take().is_empty(), "looped back inside the card");
    assert_eq!(a.read(VA + 0x400 + 40, 4), b"self");
    assert_eq!(a.next_cqe(true).unwrap()[63] >> 4, cqe_op::RESP_SEND);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
}

#[test]
fn ud_qp_refuses_rdma_and_rc_packets() {
    let (mut a, mut b) = ud_pair();
    let av = av_to(&a, b.qpn, addr(&b), QKEY);
    // An RDMA WRITE on a UD QP is a local QP operation error.
    a.post_send(
        wop::RDMA_WRITE,
        &ud_segs(av, &[data(4, a.lkey, VA)]),
        0,
        true,
    );
    let e = a.next_cqe(false).unwrap();
    assert_eq!(
        (e[63] >> 4, e[0x37]),
        (cqe_op::REQ_ERR, syndrome::LOCAL_QP_OP_ERR)
    );
    // An RC SEND to the UD QP is not for it.
    let (mut r, mut s) = pair(qpc_st::RC, 14);
    s.post_recv(VA, 64);
    r.post_send(wop::SEND, &[data(4, r.lkey, VA)], 0, true);
    let f = r.port.take();
    let mut p = packet::parse(&f[0]).unwrap();
    p.bth.dest_qp = b.qpn;
    if let Ip::V4(h) = &mut p.ip {
        h.dst = [10, 0, 0, 2];
    }
    let g = packet::build(&p).unwrap();
    let before = b.d.roce.state.stats.rx_no_qp;
    b.d.receive(&g);
    assert_eq!(b.d.roce.state.stats.rx_no_qp, before + 1);
    assert!(b.next_cqe(true).is_none());
}

/// Random UD WQEs (random vectors, opcodes, sizes) and random or mutated UD frames to UD
/// and GSI QPs never panic.
#[test]
fn fuzzed_ud_wqes_and_frames_never_panic() {
    let mut seed: u64 = 0x5eed_0d0d;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut a, mut b) = ud_pair();
    let mut g = Card::new(3, qpc_st::QP1);
    ud_up(&mut g, GSI_QKEY, mtu::MTU_256);
    a.write(VA, &[9u8; 2048]);
    b.post_recv(VA, 4096);
    let av = av_to(&a, b.qpn, addr(&b), QKEY);
    a.post_send(
        wop::SEND_IMM,
        &ud_segs(av, &[data(300, a.lkey, VA)]),
        7,
        true,
    );
    let samples = a.port.take();
    for _ in 0..3000 {
        match rnd() % 3 {
            0 => {
                let mut av = av_to(&a, b.qpn, addr(&b), QKEY);
                for s in av.iter_mut() {
                    if rnd() % 3 == 0 {
                        for x in s.iter_mut() {
                            *x = rnd() as u8;
                        }
                    }
                }
                let ops = [wop::SEND, wop::SEND_IMM, wop::NOP, rnd() as u8];
                let op = ops[(rnd() % ops.len() as u64) as usize];
                let len = (rnd() % 2048) as u32;
                let mut tail = vec![data(len, a.lkey, VA + rnd() % 64)];
                if rnd() % 4 == 0 {
                    let mut junk = [0u8; 16];
                    for x in junk.iter_mut() {
                        *x = rnd() as u8;
                    }
                    tail.push(junk);
                }
                let n = (rnd() % 5) as usize;
                let segs = ud_segs(av, &tail);
                a.post_send(op, &segs[..n.min(segs.len())], rnd() as u32, rnd() % 2 == 0);
                if rnd() % 2 == 0 {
                    b.post_recv(VA + rnd() % 0x1000, (rnd() % 3000) as u32);
                }
                if rnd() % 4 == 0 {
                    g.post_recv(VA + rnd() % 0x1000, (rnd() % 600) as u32);
                }
            }
            1 => {
                let mut f = samples[0].clone();
                for _ in 0..1 + rnd() % 4 {
                    let i = (rnd() % f.len() as u64) as usize;
                    f[i] ^= rnd() as u8;
                }
                b.d.receive(&f);
            }
            _ => {
                let mut p = packet::parse(&samples[0]).unwrap();
                p.bth.dest_qp = match rnd() % 4 {
                    0 => GSI_QPN,
                    1 => MULTICAST_QPN,
                    2 => b.qpn,
                    _ => rnd() as u32 & 0xff_ffff,
                };
                if let Some(d) = &mut p.ext.deth {
                    d.qkey = match rnd() % 3 {
                        0 => QKEY,
                        1 => GSI_QKEY,
                        _ => rnd() as u32,
                    };
                    d.src_qp = rnd() as u32 & 0xff_ffff;
                }
                p.bth.solicited = rnd() % 2 == 0;
                let payload: Vec<u8> = (0..rnd() % 1500).map(|_| rnd() as u8).collect();
                p.payload = &payload;
                if let Ok(f) = packet::build(&p) {
                    b.d.receive(&f);
                    if let Ok(mut q) = packet::parse(&f) {
                        if let Ip::V4(h) = &mut q.ip {
                            h.dst = [10, 0, 0, 3];
                        }
                        if let Ok(f) = packet::build(&q) {
                            g.d.receive(&f);
                        }
                    }
                }
            }
        }
        if rnd() % 8 == 0 {
            run(&mut a, &mut b);
            while b.next_cqe(true).is_some() {}
            while a.next_cqe(false).is_some() {}
            while g.next_cqe(true).is_some() {}
        }
        if rnd() % 40 == 0 {
            // The driver resets and restarts the QPs (the send queue may be in error).
            for c in [&mut a, &mut b] {
                let qpn = c.qpn;
                ok::<cmds::ToRstQp>(&mut c.d, |i| i.set_qpn(qpn));
                c.sq_pc = 0;
                c.rq_pc = 0;
                c.d.bus.mem.write(QP_DBR, &[0u8; 8]).unwrap();
                ud_up(c, QKEY, mtu::MTU_1K);
            }
        }
    }
    assert!(b.d.roce.state.stats.rx_packets > 0);
    let (sb, sg) = (b.d.roce.state.stats, g.d.roce.state.stats);
    assert!(
        sb.ud_rx > 0 && sb.ud_rx_qkey > 0 && sb.ud_rx_no_target > 0,
        "{}",
        sb.line()
    );
    assert!(sg.ud_rx > 0, "the GSI QP took some: {}", sg.line());
}
