//! Congestion on the RoCE engine between two cards (the harness of `device_tests.rs`): ECN
//! marking, CNPs from the notification point, the reaction point's rate limiter pacing the
//! requester in simulated time, the congestion commands end to end, and PFC pause of RoCE
//! frames.

use super::*;
use crate::eth::pause::pfc_frame;
use crate::faults::Fault;
use crate::roce::engine::now_ns;
use crate::roce::headers::Opcode;
use crate::roce::packet::{self, Ecn};
use cx4_hw::roce::{cong_protocol, QueryCongStatisticsOut, RpFieldSelect};

fn inject(c: &mut Card, spec: &str) {
    let f = Fault::parse(spec).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    c.d.inject(&f).unwrap();
}

fn stats(c: &mut Card, clear: bool) -> QueryCongStatisticsOut {
    view(&ok::<cmds::QueryCongStatistics>(&mut c.d, |i| {
        i.set_clear(clear.into())
    }))
}

/// Sets RP parameters through MODIFY_CONG_PARAMS, as `cc_params/rp_*` writes do (one
/// field per command).
fn set_rp(c: &mut Card, sel: RpFieldSelect, f: impl Fn(&mut cx4_hw::roce::CongControlRRoceEcnRp)) {
    ok::<cmds::ModifyCongParams>(&mut c.d, |i| {
        i.set_cong_protocol(cong_protocol::ECN_RP.into());
        i.field_select_mut().set_field_select_r_roce_rp(sel.bits());
        f(i.congestion_parameters_mut()
            .cong_control_r_roce_ecn_rp_mut());
    });
}

fn set_min_time_between_cnps(c: &mut Card, us: u32) {
    ok::<cmds::ModifyCongParams>(&mut c.d, |i| {
        i.set_cong_protocol(cong_protocol::ECN_NP.into());
        i.field_select_mut()
            .set_field_select_r_roce_np(cx4_hw::roce::NpFieldSelect::MIN_TIME_BETWEEN_CNPS.bits());
        i.congestion_parameters_mut()
            .cong_control_r_roce_ecn_np_mut()
            .set_min_time_between_cnps(us);
    });
}

/// Posts an RDMA WRITE of `len` bytes from a's buffer to b's (signaled).
fn write(a: &mut Card, b: &Card, len: u32) {
    let (lkey, rkey) = (a.lkey, b.lkey);
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA + 0x8000, rkey), data(len, lkey, VA)],
        0,
        true,
    );
}

fn parsed(frames: &[Vec<u8>]) -> Vec<(Opcode, Ecn, u32)> {
    frames
        .iter()
        .map(|f| {
            let p = packet::parse(f).unwrap();
            (p.bth.opcode, p.ip.ecn(), p.bth.dest_qp)
        })
        .collect()
}

#[test]
fn requests_are_ect0_while_the_rp_is_enabled_for_their_priority() {
    let (mut a, b) = pair(qpc_st::RC, 18);
    write(&mut a, &b, 100);
    let f = parsed(&a.port.take());
    assert_eq!(f, [(Opcode::RcRdmaWriteOnly, Ecn::Ect0, b.qpn)]);
    // cc: RP off for priority 0 (untagged frames under PCP trust): not ECN-capable.
    ok::<cmds::ModifyCongStatus>(&mut a.d, |i| {
        i.set_cong_protocol(cong_protocol::ECN_RP.into());
        i.set_priority(0);
        i.set_enable(0);
    });
    write(&mut a, &b, 100);
    let f = parsed(&a.port.take());
    assert_eq!(f[0].1, Ecn::NotEct);
    assert_eq!(a.d.roce.state.cong.stats.ect_marked, 1);
}

#[test]
fn ce_marked_requests_get_exactly_the_cnps_the_min_time_allows() {
    let (mut a, mut b) = pair(qpc_st::RC, 18);
    set_min_time_between_cnps(&mut b, 10); // 10 µs
                                           // Eight request packets of a, marked CE as a congested switch would.
    write(&mut a, &b, 8 * 1024);
    let mut frames = a.port.take();
    assert_eq!(frames.len(), 8);
    for f in &mut frames {
        packet::set_ecn(f, Ecn::Ce).unwrap();
    }
    // Received every 3 µs (time passed in): a CNP at 0 µs, none before 10 µs have passed
    // (3, 6, 9), one at 12 µs, none for 15, 18, 21.
    let t0 = 1_000_000_000;
    let mut answered = Vec::new();
    for (k, f) in frames.iter().enumerate() {
        let p = packet::parse(f).unwrap();
        let t = t0 + k as u64 * 3_000;
        assert!(
            !b.d.roce_at().roce_congestion_rx(f, &p, t),
            "requests go on to the QP"
        );
        for c in parsed(&b.port.take()) {
            assert_eq!(
                c,
                (Opcode::Cnp, Ecn::Ect0, a.qpn),
                "a CNP to the sender's QP"
            );
            answered.push(k);
        }
    }
    assert_eq!(answered, [0, 4]);
    let s = stats(&mut b, false);
    assert_eq!(
        (s.np_ecn_marked_roce_packets_low(), s.np_cnp_sent_low()),
        (8, 2)
    );
    // Unmarked requests and a marked CNP are not answered (nor counted as marked).
    let mut plain = frames[0].clone();
    packet::set_ecn(&mut plain, Ecn::Ect0).unwrap();
    let p = packet::parse(&plain).unwrap();
    b.d.roce_at().roce_congestion_rx(&plain, &p, t0 + 1_000_000);
    let mut cnp = cnp_to(&b, &a);
    packet::set_ecn(&mut cnp, Ecn::Ce).unwrap();
    let p = packet::parse(&cnp).unwrap();
    assert!(
        b.d.roce_at().roce_congestion_rx(&cnp, &p, t0 + 2_000_000),
        "a CNP is consumed"
    );
    assert!(b.port.take().is_empty());
    assert_eq!(stats(&mut b, false).np_ecn_marked_roce_packets_low(), 8);
}

#[test]
fn the_wire_fault_marks_ce_and_the_cnps_cut_the_senders_rate() {
    let (mut a, mut b) = pair(qpc_st::RC, 18);
    set_min_time_between_cnps(&mut b, 0);
    inject(&mut b, "roce-wire ecn=100");
    a.write(VA, &[0x5a; 1024]);
    write(&mut a, &b, 1024);
    run(&mut a, &mut b);
    assert_eq!(
        b.read(VA + 0x8000, 1024),
        vec![0x5a; 1024],
        "still delivered"
    );
    assert!(a.next_cqe(false).is_some());
    let sb = stats(&mut b, false);
    assert_eq!(
        (sb.np_ecn_marked_roce_packets_low(), sb.np_cnp_sent_low()),
        (1, 1)
    );
    assert_eq!(b.d.roce.state.stats.wire_ce_marked, 1);
    let sa = stats(&mut a, false);
    assert_eq!(
        (
            sa.rp_cnp_handled_low(),
            sa.rp_cnp_ignored_low(),
            sa.rp_cur_flows()
        ),
        (1, 0, 1)
    );
    // The first CNP: the line rate cut by alpha (1023/1024) / 2.
    let line = a.d.port.link_bps(&a.d.fw) / 1000;
    let l = *a.d.roce.state.cong.limiter(a.qpn).expect("rate limited");
    assert_eq!(l.current, line - line * 1023 / 2048);
    assert!(
        a.d.roce_line().contains("rp_cnp_handled=1"),
        "{}",
        a.d.roce_line()
    );
    // Clear: the event counters restart; the flow is still limited.
    stats(&mut a, true);
    let sa = stats(&mut a, false);
    assert_eq!((sa.rp_cnp_handled_low(), sa.rp_cur_flows()), (0, 1));
    // Without CNPs the rate recovers by the timer (300 µs events) and the limiter ends.
    a.d.roce_tick_at(now_ns() + 1_000_000_000);
    assert!(a.d.roce.state.cong.limiter(a.qpn).is_none());
    assert_eq!(stats(&mut a, false).rp_cur_flows(), 0);
}

#[test]
fn cnps_for_a_priority_with_the_rp_disabled_are_ignored() {
    let (mut a, b) = pair(qpc_st::RC, 18);
    ok::<cmds::ModifyCongStatus>(&mut a.d, |i| {
        i.set_cong_protocol(cong_protocol::ECN_RP.into());
        i.set_priority(0);
        i.set_enable(0);
    });
    let cnp = cnp_to(&a, &b);
    let p = packet::parse(&cnp).unwrap();
    assert!(a.d.roce_at().roce_congestion_rx(&cnp, &p, now_ns()));
    let s = stats(&mut a, false);
    assert_eq!((s.rp_cnp_handled_low(), s.rp_cnp_ignored_low()), (0, 1));
    assert!(a.d.roce.state.cong.limiter(a.qpn).is_none());
}

/// A CNP from b to a's QP, as b's notification point builds it.
fn cnp_to(a: &Card, b: &Card) -> Vec<u8> {
    let mut req = packet::build(&packet::Packet {
        eth: packet::Ethernet {
            dst: b.mac,
            src: a.mac,
            vlan_tci: None,
        },
        ip: packet::Ip::V4(packet::Ipv4 {
            src: a.gid[12..].try_into().unwrap(),
            dst: b.gid[12..].try_into().unwrap(),
            ecn: Ecn::Ce,
            ttl: 64,
            ..Default::default()
        }),
        src_port: 0xc123,
        udp_checksum: packet::UdpChecksum::Zero,
        bth: crate::roce::headers::Bth::new(Opcode::RcSendOnly, b.qpn, 0),
        ext: Default::default(),
        payload: &[],
    })
    .unwrap();
    packet::set_ecn(&mut req, Ecn::Ce).unwrap();
    let p = packet::parse(&req).unwrap();
    super::super::cnp::cnp_frame(&p, a.qpn, 48, 0).unwrap()
}

#[test]
fn the_rate_limiter_paces_the_requester_in_simulated_time() {
    let (mut a, mut b) = pair(qpc_st::RC, 18);
    // 1 Mb/s from the first CNP on; no increase timer within the test, no byte counter.
    set_rp(&mut a, RpFieldSelect::RATE_TO_SET_ON_FIRST_CNP, |p| {
        p.set_rate_to_set_on_first_cnp(1)
    });
    set_rp(&mut a, RpFieldSelect::TIME_RESET, |p| {
        p.set_rpg_time_reset(131_071)
    });
    set_rp(&mut a, RpFieldSelect::BYTE_RESET, |p| {
        p.set_rpg_byte_reset(0)
    });
    let cnp = cnp_to(&a, &b);
    let t0 = now_ns();
    let p = packet::parse(&cnp).unwrap();
    a.d.roce_at().roce_congestion_rx(&cnp, &p, t0);
    // 16 packets of 1 KiB: the first leaves, the rest wait for the limiter.
    write(&mut a, &b, 16 * 1024);
    let first = a.port.take();
    assert_eq!(first.len(), 1, "one packet, then the limiter");
    let frame_len = first[0].len() as u64;
    let per = frame_len * 8 * 1_000_000 / 1_000; // ns at 1 Mb/s (1000 kb/s)
    assert!(a.d.roce.state.cong.holds(a.qpn));
    // Held packets run no ACK timer; the wire thread wakes for the limiter.
    let dl = a.d.roce_deadline().expect("a release deadline");
    assert!(
        dl.as_nanos() as u64 <= per && dl.as_nanos() as u64 > per / 2,
        "{dl:?}"
    );
    // Tick every 100 µs of simulated time for 60 ms: 60 / 8.8 frames leave.
    let start = now_ns();
    let mut out = first;
    let mut t = start;
    while t < start + 60_000_000 {
        t += 100_000;
        a.d.roce_tick_at(t);
        out.extend(a.port.take());
    }
    let sent = out.len() as u64;
    let want = 60_000_000 / per + 1;
    assert!(
        sent.abs_diff(want) <= 1,
        "sent {sent}, want {want} ({per} ns each)"
    );
    assert_eq!(a.d.roce.state.cong.stats.paced, 15);
    // The rest leaves in time; b receives it all and a completes.
    while a.d.roce.state.cong.holds(a.qpn) {
        t += 1_000_000;
        a.d.roce_tick_at(t);
    }
    out.extend(a.port.take());
    assert_eq!(out.len(), 16);
    for f in &out {
        b.d.receive(f);
    }
    run(&mut a, &mut b);
    assert!(a.next_cqe(false).is_some(), "the WRITE completed");
}

/// A pair whose card a runs at 100 Mb/s, so that a PFC XOFF of 0xffff quanta lasts 335 ms
/// of real time (the pause state runs on the wall clock).
fn slow_pair() -> (Card, Card) {
    use cx4_hw::regs::eth_link_mode::{proto_bit, ETH_100BASE_TX};
    let (mut a, mut b) = pair(qpc_st::RC, 18);
    a.d.fw.regs.eth_proto = proto_bit(ETH_100BASE_TX);
    b.d.fw.regs.eth_proto = proto_bit(ETH_100BASE_TX);
    (a, b)
}

const PARTNER: [u8; 6] = [0x02, 0, 0, 0, 0, 0x99];

#[test]
fn a_pfc_xoff_on_the_qps_priority_holds_its_roce_frames_until_xon() {
    let (mut a, mut b) = slow_pair();
    a.d.fw.regs.qos.pfc_rx = 0xff;
    // XOFF for priority 3: the QP's frames (priority 0) still leave.
    a.d.receive(&pfc_frame(PARTNER, 1 << 3, 0xffff));
    write(&mut a, &b, 100);
    assert_eq!(a.port.take().len(), 1, "other priorities unaffected");
    a.d.receive(&pfc_frame(PARTNER, 1 << 3, 0));
    // XOFF for priority 0: nothing leaves, no ACK timer runs while the frames wait.
    a.d.receive(&pfc_frame(PARTNER, 1, 0xffff));
    write(&mut a, &b, 3 * 1024);
    assert!(a.port.take().is_empty());
    assert!(a.d.roce.state.cong.holds(a.qpn));
    assert_eq!(a.d.roce_deadline(), None, "paused: the ACK timer waits");
    a.d.roce_tick_at(now_ns() + 10_000_000_000);
    assert!(a.port.take().is_empty(), "a RoCE tick does not end a pause");
    assert_eq!(a.d.roce.state.stats.timer_runs, 0);
    // XON: the three packets leave, in order, and the ACK timer starts from then.
    a.d.receive(&pfc_frame(PARTNER, 1, 0));
    let f = parsed(&a.port.take());
    assert_eq!(
        f.iter().map(|x| x.0).collect::<Vec<_>>(),
        [
            Opcode::RcRdmaWriteFirst,
            Opcode::RcRdmaWriteMiddle,
            Opcode::RcRdmaWriteLast
        ]
    );
    assert!(!a.d.roce.state.cong.holds(a.qpn));
    assert!(a.d.roce_deadline().is_some());
    assert_eq!(a.d.roce.state.cong.stats.pfc_held, 3);
    let c = &a.d.fw.nic.port.pause;
    assert_eq!((c.rx_pause[0], c.rx_pause[3]), (2, 2));
    assert_eq!((c.rx_pause_transition[0], c.rx_pause_transition[3]), (1, 1));
    // The data arrives (the first WRITE's frame was taken above: retransmitted).
    run(&mut a, &mut b);
    a.d.roce_tick_at(now_ns() + 5_000_000_000);
    run(&mut a, &mut b);
    let mut n = 0;
    while a.next_cqe(false).is_some() {
        n += 1;
    }
    assert_eq!(n, 2);
}

#[test]
fn a_pause_that_expires_releases_the_roce_frames() {
    let (mut a, b) = slow_pair();
    a.d.fw.regs.qos.pfc_rx = 0x01;
    // 2000 quanta at 100 Mb/s: 10.24 ms.
    a.d.receive(&pfc_frame(PARTNER, 1, 2000));
    write(&mut a, &b, 100);
    assert!(a.port.take().is_empty());
    let wait = a.d.pause_deadline().expect("the pause ends");
    std::thread::sleep(wait + std::time::Duration::from_millis(1));
    a.d.pause_tick();
    assert_eq!(a.port.take().len(), 1);
    assert_eq!(a.d.fw.nic.port.pause.rx_pause_transition[0], 1);
}

#[test]
fn responder_frames_wait_for_a_pause_of_their_priority_too() {
    let (mut a, mut b) = slow_pair();
    b.d.fw.regs.qos.pfc_rx = 0x01;
    b.d.receive(&pfc_frame(PARTNER, 1, 0xffff));
    write(&mut a, &b, 100);
    run(&mut a, &mut b);
    assert_eq!(b.d.roce.state.cong.waiting(), 1, "b's ACK waits");
    assert!(a.next_cqe(false).is_none());
    b.d.receive(&pfc_frame(PARTNER, 1, 0));
    run(&mut a, &mut b);
    assert!(a.next_cqe(false).is_some(), "the ACK left at XON");
    assert_eq!(b.d.roce.state.cong.waiting(), 0);
}

#[test]
fn roce_v1_frames_are_never_ecn_marked_and_draw_no_cnps() {
    let mut a = Card::new(1, qpc_st::RC);
    let mut b = Card::new(2, qpc_st::RC);
    for c in [&mut a, &mut b] {
        let g = fixture::link_local_gid(c.mac);
        c.use_v1(g, None);
    }
    let (ia, ib) = (a.id(), b.id());
    a.connect(ib, 0x200, 0x100, 18);
    b.connect(ia, 0x100, 0x200, 18);
    set_min_time_between_cnps(&mut b, 0);
    // The RP is on for priority 0, yet a v1 request is not made ECN-capable.
    write(&mut a, &b, 100);
    let f = a.port.take();
    assert_eq!(be16(&f[0], 12), 0x8915);
    assert_eq!(parsed(&f), [(Opcode::RcRdmaWriteOnly, Ecn::NotEct, b.qpn)]);
    assert_eq!(a.d.roce.state.cong.stats.ect_marked, 0);
    for x in &f {
        b.d.receive(x);
    }
    run(&mut a, &mut b);
    // The wire fault's CE marking passes v1 frames by: no CE, no CNP, still delivered.
    inject(&mut b, "roce-wire ecn=100");
    a.write(VA, &[0x77; 2048]);
    write(&mut a, &b, 2048);
    run(&mut a, &mut b);
    assert_eq!(b.read(VA + 0x8000, 2048), vec![0x77; 2048]);
    assert_eq!(b.d.roce.state.stats.wire_ce_marked, 0);
    let sb = stats(&mut b, false);
    assert_eq!(
        (sb.np_ecn_marked_roce_packets_low(), sb.np_cnp_sent_low()),
        (0, 0)
    );
    // Even a CE-marked traffic class byte is no ECN in a GRH.
    let mut p = packet::parse(&f[0]).unwrap();
    if let packet::Ip::Grh(h) = &mut p.ip {
        h.traffic_class = 0x03;
    }
    let ce = packet::build(&p).unwrap();
    let q = packet::parse(&ce).unwrap();
    assert!(!b.d.roce_at().roce_congestion_rx(&ce, &q, now_ns()));
    assert!(b.port.take().is_empty(), "no CNP");
    // A CNP opcode in v1 framing is consumed and ignored: no rate limiter.
    let v1_cnp = packet::build(&packet::Packet {
        bth: crate::roce::headers::Bth {
            becn: true,
            ..crate::roce::headers::Bth::new(Opcode::Cnp, a.qpn, 0)
        },
        ext: Default::default(),
        payload: &[],
        ..q
    })
    .unwrap();
    let p = packet::parse(&v1_cnp).unwrap();
    assert!(a.d.roce_at().roce_congestion_rx(&v1_cnp, &p, now_ns()));
    assert!(a.d.roce.state.cong.limiter(a.qpn).is_none());
    let sa = stats(&mut a, false);
    assert_eq!((sa.rp_cnp_handled_low(), sa.rp_cnp_ignored_low()), (0, 1));
    assert!(a.next_cqe(false).is_some());
}
