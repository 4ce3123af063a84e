//! The `roce-wire` fault (`faults.rs`, `wire_faults.rs`) between two cards (the harness of
//! `device_tests.rs`): each card degrades the RoCE frames it receives, RC recovers by
//! go-back-N retransmission, and the data arrives byte for byte.

use super::*;
use crate::faults::Fault;
use crate::roce::engine::{now_ns, ReqSide};
use crate::roce::requester::ReqStats;

/// Injects a fault SPEC as the control socket does.
fn inject(c: &mut Card, spec: &str) {
    let f = Fault::parse(spec).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    c.d.inject(&f).unwrap();
}

fn req_stats(c: &Card) -> ReqStats {
    match &c.d.roce.state.qps[&c.qpn].req {
        Some(ReqSide::Rc(r)) => r.stats(),
        _ => panic!("not an RC requester"),
    }
}

/// Runs the segment; whenever it goes quiet before `done`, moves both cards' clocks past the
/// ACK timeout (ack_timeout 18: about 1.07 s) and the fault's hold.
fn run_until(a: &mut Card, b: &mut Card, done: &mut dyn FnMut(&mut Card, &mut Card) -> bool) {
    let mut t = now_ns();
    for _ in 0..500 {
        run(a, b);
        if done(a, b) {
            return;
        }
        t = t.max(now_ns()) + 2_000_000_000;
        a.d.roce_tick_at(t);
        b.d.roce_tick_at(t);
    }
    panic!(
        "no completion: a {} / b {}",
        a.d.roce.state.stats.line(),
        b.d.roce.state.stats.line()
    );
}

const HALF: u64 = 0x8000;

/// `rounds` rounds of a 32 KiB RDMA WRITE a→b, a 32 KiB RDMA READ of b into a and a 32 KiB
/// SEND a→b, each round's data different; checks every byte and every CQE.
fn workload(a: &mut Card, b: &mut Card, rounds: u32) {
    for round in 0..rounds {
        let pa: Vec<u8> = (0..HALF as u32)
            .map(|i| (i.wrapping_mul(31) ^ (round * 7)) as u8)
            .collect();
        let pb: Vec<u8> = (0..HALF as u32)
            .map(|i| (i.wrapping_mul(17) + round * 3 + 1) as u8)
            .collect();
        a.write(VA, &pa);
        b.write(VA, &pb);
        b.write(VA + HALF, &[0; HALF as usize]);
        b.write(VA + 2 * HALF, &[0; HALF as usize]);
        a.write(VA + HALF, &[0; HALF as usize]);
        b.post_recv(VA + 2 * HALF, HALF as u32);
        let w = a.post_send(
            wop::RDMA_WRITE,
            &[raddr(VA + HALF, b.lkey), data(HALF as u32, a.lkey, VA)],
            0,
            true,
        );
        let r = a.post_send(
            wop::RDMA_READ,
            &[raddr(VA, b.lkey), data(HALF as u32, a.lkey, VA + HALF)],
            0,
            true,
        );
        let s = a.post_send(wop::SEND, &[data(HALF as u32, a.lkey, VA)], 0, true);
        let mut req = Vec::new();
        let mut resp = Vec::new();
        run_until(a, b, &mut |a, b| {
            while let Some(c) = a.next_cqe(false) {
                req.push(c);
            }
            while let Some(c) = b.next_cqe(true) {
                resp.push(c);
            }
            req.len() == 3 && resp.len() == 1
        });
        for (c, idx) in req.iter().zip([w, r, s]) {
            assert_eq!(
                (c[63] >> 4, be16(c, 0x3c)),
                (cqe_op::REQ, idx),
                "round {round}"
            );
        }
        assert_eq!(
            (resp[0][63] >> 4, be32(&resp[0], 0x2c)),
            (cqe_op::RESP_SEND, HALF as u32),
            "round {round}"
        );
        assert!(
            b.read(VA + HALF, HALF as usize) == pa,
            "round {round}: WRITE"
        );
        assert!(
            a.read(VA + HALF, HALF as usize) == pb,
            "round {round}: READ"
        );
        assert!(
            b.read(VA + 2 * HALF, HALF as usize) == pa,
            "round {round}: SEND"
        );
    }
    assert_eq!((a.state(), b.state()), (qpc_state::RTS, qpc_state::RTS));
}

#[test]
fn drop_loses_frames_both_ways_and_rc_retransmits_until_the_data_is_exact() {
    let (mut a, mut b) = pair(qpc_st::RC, 18);
    inject(&mut a, "roce-wire drop=10");
    inject(&mut b, "roce-wire drop=10");
    // 4 rounds × 96 KiB: 384 KiB, about 400 packets each way.
    workload(&mut a, &mut b, 4);
    let (sa, sb) = (a.d.roce.state.stats, b.d.roce.state.stats);
    assert!(sa.wire_dropped > 5 && sb.wire_dropped > 5, "{sa:?} {sb:?}");
    let rs = req_stats(&a);
    // Both recoveries ran: a sequence NAK for a gap the responder saw, the ACK timer for a
    // lost tail or a lost ACK.
    assert!(
        rs.retransmitted > 0 && rs.timeouts > 0 && rs.seq_naks > 0,
        "{rs:?}"
    );
    assert_eq!(sa.rx_malformed + sb.rx_malformed, 0, "nothing flipped");
    assert!(
        sb.line().ends_with(&format!(
            "wire faults: {} dropped 0 reordered 0 flipped 0 delayed 0 ce-marked",
            sb.wire_dropped
        )),
        "{}",
        sb.line()
    );
}

#[test]
fn flip_is_rejected_by_the_icrc_and_rc_recovers() {
    let (mut a, mut b) = pair(qpc_st::RC, 18);
    inject(&mut a, "roce-wire flip=5");
    inject(&mut b, "roce-wire flip=5");
    workload(&mut a, &mut b, 2);
    for s in [a.d.roce.state.stats, b.d.roce.state.stats] {
        assert!(s.wire_flipped > 0, "{s:?}");
        assert_eq!(
            s.rx_malformed, s.wire_flipped,
            "every flipped frame, and only those, fails the ICRC check"
        );
    }
    assert!(req_stats(&a).retransmitted > 0);
}

#[test]
fn reorder_draws_sequence_naks_and_completes() {
    let (mut a, mut b) = pair(qpc_st::RC, 18);
    inject(&mut b, "roce-wire reorder=10");
    workload(&mut a, &mut b, 2);
    assert!(b.d.roce.state.stats.wire_reordered > 0);
    let rs = req_stats(&a);
    assert!(rs.seq_naks > 0 && rs.retransmitted > 0, "{rs:?}");
    assert_eq!(b.d.roce.state.stats.wire_dropped, 0);
}

#[test]
fn a_reordered_last_frame_goes_after_its_hold_time() {
    let (mut a, mut b) = pair(qpc_st::RC, 18);
    inject(&mut b, "roce-wire reorder=100");
    a.write(VA, b"one packet");
    b.post_recv(VA + 0x100, 64);
    a.post_send(wop::SEND, &[data(10, a.lkey, VA)], 0, true);
    run(&mut a, &mut b);
    // The seed's first draw holds this one frame: nothing follows it.
    assert_eq!(b.d.roce.state.stats.wire_reordered, 1);
    assert!(b.next_cqe(true).is_none(), "held back");
    let wait = b.d.roce_deadline().expect("the wire thread wakes for it");
    assert!(wait <= Duration::from_nanos(super::super::wire_faults::REORDER_HOLD_NS));
    b.d.roce_tick_at(now_ns() + super::super::wire_faults::REORDER_HOLD_NS);
    run(&mut a, &mut b);
    assert_eq!(b.read(VA + 0x100, 10), b"one packet");
    assert_eq!(b.next_cqe(true).unwrap()[63] >> 4, cqe_op::RESP_SEND);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(req_stats(&a).retransmitted, 0, "not lost, only late");
}

use std::time::Duration;

#[test]
fn delay_delivers_every_frame_late_through_the_deadline() {
    let (mut a, mut b) = pair(qpc_st::RC, 18);
    inject(&mut b, "roce-wire delay-ms=200");
    let msg: Vec<u8> = (0..3000u32).map(|i| (i * 5) as u8).collect();
    a.write(VA, &msg);
    b.post_recv(VA + 0x8000, 4096);
    a.post_send(wop::SEND, &[data(3000, a.lkey, VA)], 0, true);
    let t0 = now_ns();
    run(&mut a, &mut b);
    assert_eq!(b.d.roce.state.stats.wire_delayed, 3);
    assert_eq!(b.d.roce.state.stats.rx_packets, 0, "none delivered yet");
    let wait =
        b.d.roce_deadline()
            .expect("the wire thread wakes for the queue");
    assert!(wait <= Duration::from_millis(200), "{wait:?}");
    let release = b.d.roce.state.wire.next_release().unwrap();
    assert!(
        release >= t0 + 200_000_000,
        "released 200 ms after arrival at the earliest"
    );
    b.d.roce_tick_at(t0 + 100_000_000);
    assert_eq!(b.d.roce.state.stats.rx_packets, 0, "not before 200 ms");
    b.d.roce_tick_at(now_ns() + 200_000_000);
    assert_eq!(b.d.roce.state.stats.rx_packets, 3);
    run(&mut a, &mut b);
    assert_eq!(b.read(VA + 0x8000, 3000), msg);
    assert_eq!(b.next_cqe(true).unwrap()[63] >> 4, cqe_op::RESP_SEND);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(
        req_stats(&a).retransmitted,
        0,
        "late, inside the ACK timeout"
    );
    assert!(b.d.roce_deadline().is_none() || b.d.roce.state.wire.is_idle());
}

#[test]
fn off_and_clear_end_it_and_deliver_what_waits() {
    for end in ["roce-wire off", "clear"] {
        let (mut a, mut b) = pair(qpc_st::RC, 18);
        inject(&mut b, "roce-wire delay-ms=10000 reorder=50");
        a.write(VA, b"held");
        b.post_recv(VA + 0x100, 64);
        a.post_send(wop::SEND, &[data(4, a.lkey, VA)], 0, true);
        run(&mut a, &mut b);
        assert!(b.next_cqe(true).is_none(), "{end}: waits");
        inject(&mut b, end);
        assert!(b.d.bus.faults.roce_wire.is_none() && b.d.roce.state.wire.is_idle());
        run(&mut a, &mut b);
        assert_eq!(b.read(VA + 0x100, 4), b"held", "{end}");
        assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
        // Later frames pass untouched.
        let before = b.d.roce.state.stats;
        b.post_recv(VA + 0x200, 64);
        a.post_send(wop::SEND, &[data(4, a.lkey, VA)], 0, true);
        run(&mut a, &mut b);
        assert_eq!(b.read(VA + 0x200, 4), b"held", "{end}");
        let after = b.d.roce.state.stats;
        assert_eq!(
            (after.wire_delayed, after.wire_reordered),
            (before.wire_delayed, before.wire_reordered),
            "{end}"
        );
        assert_eq!(after.rx_packets, before.rx_packets + 1);
    }
}

#[test]
fn frames_not_for_the_roce_engine_are_untouched() {
    let (mut a, mut b) = pair(qpc_st::RC, 18);
    inject(&mut b, "roce-wire drop=100");
    a.write(VA, b"x");
    b.post_recv(VA, 64);
    a.post_send(wop::SEND, &[data(1, a.lkey, VA)], 0, true);
    let mut f = a.port.take().pop().expect("a frame");
    // Another destination IP: not one of b's GIDs, so the Ethernet path has it.
    f[33] ^= 0x40;
    let wire = b.d.path.rx_wire;
    b.d.receive(&f);
    assert_eq!(b.d.path.rx_wire, wire + 1);
    assert_eq!(b.d.roce.state.stats.wire_dropped, 0);
}

#[test]
fn the_same_seed_and_spec_drop_the_same_frames() {
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let (mut a, mut b) = pair(qpc_st::RC, 18);
            inject(&mut b, "roce-wire drop=10 flip=2.5");
            workload(&mut a, &mut b, 1);
            let s = b.d.roce.state.stats;
            (s.wire_dropped, s.wire_flipped, req_stats(&a).retransmitted)
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
}
