//! Two cards with InfiniBand ports (`--link ib`, the harness of `device_tests.rs`): QP0's
//! directed-route SMPs with permissive LIDs on VL15, LID-routed UD with the receive rules (the
//! port's LIDs, Active, P_Key), and RC by LID through the same engine as RoCE, every frame
//! an IB packet of the model's EtherType.

use cx4_hw::{
    cq::cqe::opcode as cqe_op,
    qp::{mtu, qpc_st},
    wqe::{
        opcode as wop,
        rdma::{Av, EXTENDED_UD_AV},
    },
};

use super::ud_tests::{ud_segs, ud_up};
use super::*;
use crate::fw::ib_port::PortState;
use crate::roce::ib_wire::{self, PERMISSIVE_LID};

const QKEY: u32 = 0x1111_1111;

fn ib_card(n: u8, st: u8) -> Card {
    Card::with_link(n, st, false, true)
}

/// What an SM does to card `c`'s port: LID `n` (its number), Active.
fn activate(c: &mut Card) {
    c.d.fw.ib.lid = u16::from(c.mac[5]);
    c.d.fw.ib.state = PortState::Active;
}

/// The datagram segment of an IB address handle (`mlx5_ib_create_ah` on IB): DLID, SL.
fn av_lid(dqpn: u32, rlid: u16, sl: u8, qkey: u32) -> [[u8; 16]; 3] {
    let mut a = Av::new();
    a.set_qkey(qkey);
    a.set_dqp_dct(dqpn | EXTENDED_UD_AV);
    a.set_stat_rate_sl(sl.into());
    a.set_rlid(rlid.into());
    let mut out = [[0u8; 16]; 3];
    for (k, s) in out.iter_mut().enumerate() {
        s.copy_from_slice(&a.0[k * 16..k * 16 + 16]);
    }
    out
}

#[test]
fn a_directed_route_smp_crosses_on_vl15_with_permissive_lids() {
    let mut a = ib_card(1, qpc_st::QP0);
    let mut b = ib_card(2, qpc_st::QP0);
    for c in [&mut a, &mut b] {
        ud_up(c, 0, mtu::MTU_256);
    }
    let mad: Vec<u8> = (0..256u32).map(|i| (i * 5 + 3) as u8).collect();
    a.write(VA, &mad);
    b.post_recv(VA + 0x8000, 40 + 256);
    // Before any SM: both ports Init, no LID; QP0 flows all the same.
    let av = av_lid(0, PERMISSIVE_LID, 0, 0);
    a.post_send(wop::SEND, &ud_segs(av, &[data(256, a.lkey, VA)]), 0, true);
    let f = a.port.take();
    assert_eq!(f.len(), 1);
    assert_eq!(be16(&f[0], 12), ib_wire::ETHERTYPE_IB);
    let p = ib_wire::parse(&f[0], false).unwrap();
    assert_eq!(
        (p.lrh.vl, p.lrh.dlid, p.lrh.slid),
        (15, 0xffff, 0xffff),
        "VL15, permissive DLID and SLID"
    );
    assert_eq!((p.hdr.bth.dest_qp, p.hdr.bth.pkey), (0, 0xffff));
    assert_eq!(p.hdr.ext.deth.unwrap().src_qp, 0, "from QP0");
    assert!(a.next_cqe(false).is_some(), "requester CQE");
    b.d.receive(&f[0]);
    assert_eq!(
        b.read(VA + 0x8000 + 40, 256),
        mad,
        "the MAD after the GRH area"
    );
    let r = b.next_cqe(true).expect("responder CQE on QP0");
    assert_eq!(r[63] >> 4, cqe_op::RESP_SEND);
    assert_eq!(be32(&r, 0x2c), 40 + 256, "byte_cnt");
    assert_eq!(be32(&r, 0x18), 0, "flags_rqpn: SL 0, no GRH, source QP 0");
    assert_eq!(be16(&r, 0x16), 0xffff, "SLID: permissive");
    // A QP0 packet on a data VL is no SMP: dropped.
    let mut bad = f[0].clone();
    bad[14] = 0;
    let crc_end = 14 + usize::from(p.lrh.pkt_len) * 4;
    let v = ib_wire::vcrc(&bad[14..crc_end]);
    bad[crc_end..crc_end + 2].copy_from_slice(&v.to_be_bytes());
    b.post_recv(VA + 0x9000, 40 + 256);
    b.d.receive(&bad);
    assert!(b.next_cqe(true).is_none(), "QP0 off VL15 dropped");
}

#[test]
fn lid_routed_datagrams_need_the_ports_lid_an_active_port_and_a_pkey() {
    let mut a = ib_card(1, qpc_st::UD);
    let mut b = ib_card(2, qpc_st::UD);
    for c in [&mut a, &mut b] {
        ud_up(c, QKEY, mtu::MTU_1K);
    }
    a.write(VA, b"hello over ib");
    let send = |a: &mut Card, dqpn: u32, dlid: u16| {
        let av = av_lid(dqpn, dlid, 3, QKEY);
        a.post_send(wop::SEND, &ud_segs(av, &[data(13, a.lkey, VA)]), 0, false);
        a.port.take()
    };
    // Not Active: only QP0 may send.
    assert!(send(&mut a, b.qpn, 2).is_empty());
    activate(&mut a);
    activate(&mut b);
    let f = send(&mut a, b.qpn, 2);
    let p = ib_wire::parse(&f[0], false).unwrap();
    assert_eq!(
        (p.lrh.vl, p.lrh.sl, p.lrh.dlid, p.lrh.slid),
        (3, 3, 2, 1),
        "SL 3 on VL 3 (SL-to-VL)"
    );
    b.post_recv(VA + 0x8000, 128);
    b.d.receive(&f[0]);
    assert_eq!(b.read(VA + 0x8000 + 40, 13), b"hello over ib");
    let r = b.next_cqe(true).expect("delivered");
    assert_eq!(be32(&r, 0x18), 3 << 24 | a.qpn, "SL 3, no GRH, source QP");
    assert_eq!(be16(&r, 0x16), 1, "SLID");
    // To a LID that is not b's: dropped.
    let f = send(&mut a, b.qpn, 9);
    b.d.receive(&f[0]);
    assert!(b.next_cqe(true).is_none(), "DLID 9 is not b's");
    // b leaves the default partition: a's P_Key 0xFFFF matches nothing, a violation.
    b.d.fw.ib.pkeys[0] = 0x8001;
    let f = send(&mut a, b.qpn, 2);
    b.d.receive(&f[0]);
    assert!(b.next_cqe(true).is_none(), "P_Key mismatch");
    assert_eq!(b.d.fw.ib.pkey_violations, 1);
    // Back in Init (the SM took it down and the link retrained): no data.
    b.d.fw.ib.pkeys[0] = 0xffff;
    b.d.fw.ib.state = PortState::Init;
    let f = send(&mut a, b.qpn, 2);
    b.d.receive(&f[0]);
    assert!(b.next_cqe(true).is_none(), "data to a port in Init");
}

#[test]
fn rc_by_lid_runs_on_the_roce_engine() {
    let mut a = ib_card(1, qpc_st::RC);
    let mut b = ib_card(2, qpc_st::RC);
    activate(&mut a);
    activate(&mut b);
    let (ia, ib) = (a.id(), b.id());
    a.connect(ib, 0x200, 0x100, 14);
    b.connect(ia, 0x100, 0x200, 14);
    let msg: Vec<u8> = (0..3000u32).map(|i| (i * 13) as u8).collect();
    a.write(VA, &msg);
    b.post_recv(VA + 0x8000, 4096);
    a.post_send(wop::SEND, &[data(3000, a.lkey, VA)], 0, true);
    let frames = shuttle(&mut a, &mut b, &mut |_, f| {
        let p = ib_wire::parse(f, false).expect("an IB packet");
        assert!(matches!((p.lrh.dlid, p.lrh.slid), (2, 1) | (1, 2)));
        false
    });
    assert_eq!(frames, 4, "3 packets at MTU 1024 and one ACK");
    assert_eq!(b.read(VA + 0x8000, 3000), msg);
    assert_eq!(
        a.next_cqe(false).expect("requester CQE")[63] >> 4,
        cqe_op::REQ
    );
    let r = b.next_cqe(true).expect("responder CQE");
    assert_eq!(be32(&r, 0x2c), 3000);
    assert_eq!(be32(&r, 0x18) >> 28, 0, "no GRH on a local IB packet");
    assert_eq!(be16(&r, 0x16), 1, "SLID");
}
