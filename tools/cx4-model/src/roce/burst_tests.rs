//! The loopback in bursts (`burst.rs`) against the loopback in frames: the same traffic on a
//! self-connected QP, once each way, must leave the same completions, memory, counters, PSN
//! and MSN state and QP state — multi-packet SENDs and WRITEs with and without immediate,
//! a READ beside them, an RNR NAK and its retry, a SEND longer than its receive (both sides
//! to error, the QP's WQEs flushed).

use super::*;

/// What a run leaves behind.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    send_cqes: Vec<Vec<u8>>,
    recv_cqes: Vec<Vec<u8>>,
    memory: Vec<u8>,
    stats: String,
    /// Before the last, failing SEND.
    next_psn: u32,
    expected_psn: u32,
    msn: u32,
    state: u8,
}

fn drain(a: &mut Card, recv: bool, into: &mut Vec<Vec<u8>>) {
    while let Some(c) = a.next_cqe(recv) {
        into.push(c.to_vec());
    }
}

fn scenario(frames: bool) -> (Outcome, u64) {
    let mut a = Card::new(1, qpc_st::RC);
    a.d.roce.state.frame_loopback = frames;
    let me = a.id();
    a.connect(me, 0x300, 0x300, 14);
    let (mut s, mut r) = (Vec::new(), Vec::new());
    let msg: Vec<u8> = (0..24000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    a.write(VA, &msg);
    // SEND with immediate, 20 packets, into a 20 KiB receive.
    a.post_recv(VA + 0x6000, 0x5000);
    a.post_send(wop::SEND_IMM, &[data(20000, a.lkey, VA)], 0x1234, true);
    // An unsignaled WRITE of 20 packets, a WRITE with immediate of 3 (a receive each).
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA + 0xb000, a.lkey), data(20000, a.lkey, VA)],
        0,
        false,
    );
    a.post_recv(VA + 0x1_7000, 16);
    a.post_send(
        wop::RDMA_WRITE_IMM,
        &[raddr(VA + 0x1_0000, a.lkey), data(3000, a.lkey, VA + 7)],
        0x77,
        true,
    );
    // A READ among them (its responses loop back as frames either way).
    a.post_send(
        wop::RDMA_READ,
        &[
            raddr(VA + 0x100, a.lkey),
            data(10000, a.lkey, VA + 0x1_1000),
        ],
        0,
        true,
    );
    drain(&mut a, false, &mut s);
    drain(&mut a, true, &mut r);
    // A SEND with no receive posted: RNR NAK; the receive, then the RNR timer: delivered
    // (2,999 bytes: the last packet carries a pad).
    a.post_send(wop::SEND, &[data(2999, a.lkey, VA + 11)], 0, true);
    drain(&mut a, false, &mut s);
    a.post_recv(VA + 0x1_4000, 4096);
    a.d.roce_tick_at(super::super::engine::now_ns() + 1_000_000_000);
    drain(&mut a, false, &mut s);
    drain(&mut a, true, &mut r);
    // The transport state so far.
    let q = &a.d.roce.state.qps[&a.qpn];
    let (next_psn, expected_psn, msn) = match (&q.req, &q.resp) {
        (
            Some(super::super::engine::ReqSide::Rc(rq)),
            Some(super::super::engine::RespSide::Rc(rs)),
        ) => (rq.next_psn().value(), rs.expected_psn().value(), rs.msn()),
        _ => panic!(
            "an RC QP: state {:#x}, send {:02x?}, recv {:02x?}",
            a.state(),
            s.iter().map(|c| c[63]).collect::<Vec<_>>(),
            r.iter().map(|c| c[63]).collect::<Vec<_>>()
        ),
    };
    // A SEND longer than its receive: the responder NAKs, both sides complete in error, the
    // QP goes to error and flushes what is posted behind.
    a.post_recv(VA + 0x1_5000, 2000);
    a.post_recv(VA + 0x1_6000, 2000);
    a.post_send(wop::SEND, &[data(5000, a.lkey, VA + 13)], 0, true);
    a.post_send(wop::SEND, &[data(100, a.lkey, VA + 17)], 0, true);
    a.d.roce_tick_at(super::super::engine::now_ns() + 1_000_000_000);
    drain(&mut a, false, &mut s);
    drain(&mut a, true, &mut r);
    let bursts = a.d.roce.state.stats.loopback_bursts;
    let mut stats = a.d.roce.state.stats;
    stats.loopback_bursts = 0;
    let out = Outcome {
        send_cqes: s,
        recv_cqes: r,
        memory: a.read(VA + 0x6000, 0x1_1000),
        stats: stats.line(),
        next_psn,
        expected_psn,
        msn,
        state: a.state(),
    };
    (out, bursts)
}

#[test]
fn bursts_leave_what_frames_leave() {
    let (frames, none) = scenario(true);
    let (bursts, n) = scenario(false);
    assert_eq!(none, 0, "frames only");
    assert!(
        n >= 4,
        "SEND, WRITE, WRITE with immediate, RNR retry in bursts: {n}"
    );
    // The traffic did what it should (so that agreeing means something).
    assert_eq!(frames.state, qpc_state::ERR);
    assert_eq!(frames.recv_cqes.len(), 5, "{:02x?}", frames.recv_cqes);
    let opcodes = |v: &[Vec<u8>]| v.iter().map(|c| c[63] >> 4).collect::<Vec<_>>();
    assert_eq!(
        opcodes(&frames.recv_cqes),
        [
            cqe_op::RESP_SEND_IMM,
            cqe_op::RESP_WR_IMM,
            cqe_op::RESP_SEND,
            cqe_op::RESP_ERR,
            cqe_op::RESP_ERR
        ]
    );
    assert_eq!(
        opcodes(&frames.send_cqes),
        [
            cqe_op::REQ,
            cqe_op::REQ,
            cqe_op::REQ,
            cqe_op::REQ,
            cqe_op::REQ_ERR,
            cqe_op::REQ_ERR
        ]
    );
    // The same completions but for when they were written: the timestamps (bytes 0x30..0x38
    // of all but error CQEs) come from the model's clock, and they run forward.
    let untimed = |v: &[Vec<u8>]| {
        let mut last = 0;
        v.iter()
            .map(|c| {
                let mut c = c.clone();
                if !matches!(c[63] >> 4, cqe_op::REQ_ERR | cqe_op::RESP_ERR) {
                    let ts = u64::from_be_bytes(c[0x30..0x38].try_into().unwrap());
                    assert!(ts != 0 && ts >= last, "timestamp {ts:#x} after {last:#x}");
                    last = ts;
                    c[0x30..0x38].fill(0);
                }
                c
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(untimed(&frames.send_cqes), untimed(&bursts.send_cqes));
    assert_eq!(untimed(&frames.recv_cqes), untimed(&bursts.recv_cqes));
    assert_eq!(frames.stats, bursts.stats);
    assert_eq!(
        (
            frames.next_psn,
            frames.expected_psn,
            frames.msn,
            frames.state
        ),
        (
            bursts.next_psn,
            bursts.expected_psn,
            bursts.msn,
            bursts.state
        )
    );
    let differ = frames
        .memory
        .iter()
        .zip(&bursts.memory)
        .position(|(a, b)| a != b);
    assert_eq!(differ, None, "memory differs from offset 0x6000 + this");
}
