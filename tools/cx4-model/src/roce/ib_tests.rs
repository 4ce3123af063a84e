//! Two cards with InfiniBand ports (`--link ib`, the harness of `device_tests.rs`): QP0's
//! directed-route SMPs with permissive LIDs on VL15, LID-routed UD with the receive rules (the
//! port's LIDs, Active, P_Key, Q_Key), GRH and multicast (IPoIB's broadcast group), and RC by
//! LID through the same engine as RoCE, every frame an IB packet of the model's EtherType.

use cx4_hw::{
    cq::cqe::opcode as cqe_op,
    qp::{mtu, qpc_st},
    wqe::{
        opcode as wop,
        rdma::{Av, AV_GRH, EXTENDED_UD_AV},
    },
};

use super::ud_tests::{av_segs, ud_segs, ud_up};
use super::*;
use crate::fw::ib_port::PortState;
use crate::roce::ib_wire::{self, PERMISSIVE_LID};
use crate::roce::ud::MULTICAST_QPN;

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
    av_segs(&a)
}

/// [`av_lid`] made global (`mlx5_ib`'s `create_ib_ah` with `IB_AH_GRH`): source GID index
/// 0, DGID `dgid`, traffic class 0x20, hop limit 2, flow label 0x12345.
fn av_global(dqpn: u32, rlid: u16, qkey: u32, dgid: [u8; 16]) -> [[u8; 16]; 3] {
    let mut a = Av::new();
    a.set_qkey(qkey);
    a.set_dqp_dct(dqpn | EXTENDED_UD_AV);
    a.set_rlid(rlid.into());
    a.set_grh_gid_fl(AV_GRH | 0x1_2345);
    a.set_tclass(0x20);
    a.set_hop_limit(2);
    a.rgid_mut().copy_from_slice(&dgid);
    av_segs(&a)
}

/// Card `c`'s port GID 0 (GidPrefix fe80:: and the port GUID).
fn port_gid(c: &Card) -> [u8; 16] {
    c.d.fw.ib.gid(c.d.fw.vport.guid, 0)
}

fn attach(c: &mut Card, group: &[u8; 16]) {
    let qpn = c.qpn;
    ok::<cmds::AttachToMcg>(&mut c.d, |i| {
        i.set_qpn(qpn);
        i.multicast_gid_mut().copy_from_slice(group);
    });
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

/// IPoIB's broadcast group (P_Key 0xFFFF, IPv4): ff12:401b:ffff::ffff:ffff.
const BROADCAST_MGID: [u8; 16] = [
    0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
];

#[test]
fn multicast_by_mlid_and_mgid_reaches_every_attached_qp_on_both_cards() {
    let mut a = ib_card(1, qpc_st::UD);
    let mut b = ib_card(2, qpc_st::UD);
    for c in [&mut a, &mut b] {
        ud_up(c, QKEY, mtu::MTU_1K);
        activate(c);
        attach(c, &BROADCAST_MGID);
        c.post_recv(VA + 0x8000, 128);
    }
    a.write(VA, b"arp who-has");
    let av = av_global(MULTICAST_QPN, 0xc001, QKEY, BROADCAST_MGID);
    a.post_send(wop::SEND, &ud_segs(av, &[data(11, a.lkey, VA)]), 0, false);
    // The sender's own QP hears it inside the card (no block_lb_mc)...
    assert_eq!(a.d.roce.state.stats.ud_mc_loopback, 1);
    assert_eq!(a.read(VA + 0x8000 + 40, 11), b"arp who-has");
    // ... and one packet with a GRH goes to the MLID on the wire.
    let f = a.port.take();
    assert_eq!(f.len(), 1);
    let p = ib_wire::parse(&f[0], false).unwrap();
    assert_eq!((p.lrh.lnh, p.lrh.dlid, p.lrh.slid), (3, 0xc001, 1));
    let (g, raw) = p.grh.expect("a GRH");
    assert_eq!(
        (g.sgid, g.dgid, g.traffic_class, g.flow_label, g.hop_limit),
        (port_gid(&a), BROADCAST_MGID, 0x20, 0x1_2345, 2)
    );
    assert_eq!(p.hdr.bth.dest_qp, MULTICAST_QPN);
    b.d.receive(&f[0]);
    assert_eq!(b.read(VA + 0x8000 + 40, 11), b"arp who-has");
    assert_eq!(
        b.read(VA + 0x8000, 40),
        raw,
        "the GRH as received in the GRH area (IPoIB reads DGID[0] = 0xff there)"
    );
    let sender = a.qpn;
    for c in [&mut a, &mut b] {
        let r = c.next_cqe(true).expect("delivered");
        assert_eq!(be32(&r, 0x18), 1 << 28 | sender, "GRH bit, SL 0, source QP");
        assert_eq!(be16(&r, 0x16), 1, "SLID");
    }
    // A multicast packet without a GRH cannot be matched to a group: dropped.
    let mut local = ib_wire::parse(&f[0], false).unwrap().lrh;
    local.lnh = 2;
    let hdr = ib_wire::parse(&f[0], false).unwrap().hdr;
    let bare = ib_wire::build(a.mac, local, None, hdr, b"arp who-has").unwrap();
    b.post_recv(VA + 0x8000, 128);
    let before = b.d.roce.state.stats.ud_rx_no_target;
    b.d.receive(&bare);
    assert!(b.next_cqe(true).is_none());
    assert_eq!(b.d.roce.state.stats.ud_rx_no_target, before + 1);
    // Detached, b no longer takes the group's packets.
    let qpn = b.qpn;
    ok::<cmds::DetachFromMcg>(&mut b.d, |i| {
        i.set_qpn(qpn);
        i.multicast_gid_mut().copy_from_slice(&BROADCAST_MGID);
    });
    b.d.receive(&f[0]);
    assert!(b.next_cqe(true).is_none(), "detached");
}

#[test]
fn a_global_unicast_datagram_names_the_ports_gid_and_its_qps_keys() {
    let mut a = ib_card(1, qpc_st::UD);
    let mut b = ib_card(2, qpc_st::UD);
    for c in [&mut a, &mut b] {
        ud_up(c, QKEY, mtu::MTU_1K);
        activate(c);
    }
    a.write(VA, b"unicast");
    let send = |a: &mut Card, dqpn: u32, qkey: u32, dgid: [u8; 16]| {
        let av = av_global(dqpn, 2, qkey, dgid);
        a.post_send(wop::SEND, &ud_segs(av, &[data(7, a.lkey, VA)]), 0, false);
        a.port.take().remove(0)
    };
    let gid_b = port_gid(&b);
    b.post_recv(VA + 0x8000, 128);
    b.d.receive(&send(&mut a, b.qpn, QKEY, gid_b));
    let r = b.next_cqe(true).expect("delivered");
    assert_eq!(be32(&r, 0x18) >> 28, 1, "GRH bit");
    assert_eq!(b.read(VA + 0x8000 + 24, 16), gid_b, "DGID in the GRH area");
    // Another DGID than the port's: dropped.
    let mut other = gid_b;
    other[15] ^= 1;
    b.d.receive(&send(&mut a, b.qpn, QKEY, other));
    assert!(b.next_cqe(true).is_none(), "DGID not b's");
    // A wrong Q_Key: dropped and counted in PortInfo's Q_KeyViolations.
    b.d.receive(&send(&mut a, b.qpn, 0x2222, gid_b));
    assert!(b.next_cqe(true).is_none(), "Q_Key mismatch");
    assert_eq!(b.d.fw.ib.qkey_violations, 1);
    // b's QP in partition 0x8001 (its P_Key index 1): a's 0xFFFF is in b's table but not
    // the QP's partition: dropped, a P_Key violation.
    b.d.fw.ib.pkeys[1] = 0x8001;
    b.ctx_mut().primary_address_path_mut().set_pkey_index(1);
    b.d.receive(&send(&mut a, b.qpn, QKEY, gid_b));
    assert!(b.next_cqe(true).is_none(), "not the QP's partition");
    assert_eq!(b.d.fw.ib.pkey_violations, 1);
    // A source GID index the port does not have: the datagram is not sent.
    let mut av = Av::new();
    av.set_dqp_dct(b.qpn | EXTENDED_UD_AV);
    av.set_rlid(2);
    av.set_grh_gid_fl(AV_GRH | 5 << 20);
    a.post_send(
        wop::SEND,
        &ud_segs(av_segs(&av), &[data(7, a.lkey, VA)]),
        0,
        false,
    );
    assert!(a.port.take().is_empty(), "GUIDInfo entry 5 is unset");
}

/// IPoIB's UD offloads (`ipoib_basic_offloads`, a QP with `ulp_stateless_offload_mode` 1):
/// an LSO WQE as mlx5_ib's `handle_qpt_ud` builds it — datagram segment, pad, Ethernet
/// segment with MSS, checksum flags and the IPoIB/IPv4/TCP headers inline, then the payload's
/// data segment — leaves as MSS-sized datagrams with their checksums filled, and the
/// receiving offloading QP's CQEs say the checksums are good.
#[test]
fn an_ipoib_lso_wqe_leaves_as_checksummed_datagrams() {
    use crate::roce::ipoib_offload::{csums_ok, tcp4};
    let mut a = ib_card(1, qpc_st::UD);
    let mut b = ib_card(2, qpc_st::UD);
    for c in [&mut a, &mut b] {
        ud_up(c, QKEY, mtu::MTU_2K);
        activate(c);
    }
    assert_eq!(a.d.fw.caps.general("ipoib_basic_offloads"), 1);
    for c in [&mut a, &mut b] {
        c.ctx_mut().set_ulp_stateless_offload_mode(1);
    }
    let payload: Vec<u8> = (0..3000u32).map(|i| (i * 11) as u8).collect();
    let msg = tcp4(&payload);
    a.write(VA, &msg[44..]);
    // The Ethernet segment: cs_flags L3|L4 (byte 4), MSS 1400 (bytes 6-7), inline_hdr.sz 44
    // (bytes 12-13), the headers from byte 14 on, into the next 16-byte blocks.
    let mut eth = vec![0u8; 14];
    eth[4] = 0xc0;
    eth[6..8].copy_from_slice(&1400u16.to_be_bytes());
    eth[12..14].copy_from_slice(&44u16.to_be_bytes());
    eth.extend_from_slice(&msg[..44]);
    eth.resize(eth.len().div_ceil(16) * 16, 0);
    let mut tail = vec![[0u8; 16]];
    tail.extend(eth.chunks(16).map(|c| <[u8; 16]>::try_from(c).unwrap()));
    tail.push(data(3000, a.lkey, VA));
    for k in 0..3 {
        b.post_recv(VA + 0x8000 + k * 0x1000, 2048);
    }
    let av = av_lid(b.qpn, 2, 0, QKEY);
    a.post_send(wop::LSO, &ud_segs(av, &tail), 0, true);
    let frames = a.port.take();
    assert_eq!(frames.len(), 3, "3000 bytes at MSS 1400");
    let c = a.next_cqe(false).expect("one requester CQE");
    assert_eq!(c[63] >> 4, cqe_op::REQ);
    let mut got = Vec::new();
    for (k, f) in frames.iter().enumerate() {
        b.d.receive(f);
        let r = b.next_cqe(true).expect("delivered");
        let len = be32(&r, 0x2c) as usize - 40;
        let d = b.read(VA + 0x8000 + k as u64 * 0x1000 + 40, len);
        assert!(csums_ok(&d), "datagram {k}");
        assert_eq!(
            r[0x1c] & 6,
            6,
            "hds_ip_ext L3_OK and L4_OK (IB_WC_IP_CSUM_OK)"
        );
        got.extend_from_slice(&d[44..]);
    }
    assert_eq!(got, payload);
    let st = &a.d.roce.state.stats;
    assert_eq!((st.ud_tx_offload, st.ud_tx_lso_segments), (1, 3));
    // Without the offload mode the opcode is no UD opcode: the WQE fails.
    a.ctx_mut().set_ulp_stateless_offload_mode(0);
    a.post_send(wop::LSO, &ud_segs(av, &tail), 0, true);
    assert!(a.port.take().is_empty());
    assert_ne!(a.next_cqe(false).expect("error CQE")[63] >> 4, cqe_op::REQ);
}

/// RC on a global path (`grh` set in the QPC's address path, as mlx5_set_path writes it for
/// an `IB_AH_GRH` attribute): every packet carries the GRH, the responder's CQE its bit.
#[test]
fn rc_on_a_global_path_carries_the_grh() {
    let mut a = ib_card(1, qpc_st::RC);
    let mut b = ib_card(2, qpc_st::RC);
    activate(&mut a);
    activate(&mut b);
    let (ia, ib) = (a.id(), b.id());
    let (ga, gb) = (port_gid(&a), port_gid(&b));
    a.ib_grh = true;
    b.ib_grh = true;
    a.connect((ib.0, ib.1, gb), 0x200, 0x100, 14);
    b.connect((ia.0, ia.1, ga), 0x100, 0x200, 14);
    a.write(VA, b"global rc");
    b.post_recv(VA + 0x8000, 64);
    a.post_send(wop::SEND, &[data(9, a.lkey, VA)], 0, true);
    let mut seen = 0;
    shuttle(&mut a, &mut b, &mut |_, f| {
        let p = ib_wire::parse(f, false).expect("an IB packet");
        let g = p.grh.expect("a GRH on every packet").0;
        assert!((g.sgid, g.dgid) == (ga, gb) || (g.sgid, g.dgid) == (gb, ga));
        seen += 1;
        false
    });
    assert_eq!(seen, 2, "the SEND and its ACK");
    assert_eq!(b.read(VA + 0x8000, 9), b"global rc");
    let r = b.next_cqe(true).expect("responder CQE");
    assert_eq!(be32(&r, 0x18) >> 28, 1, "GRH bit");
}
