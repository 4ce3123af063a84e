use super::super::headers::{AtomicAckEth, Bth, ExtHeaders};
use super::*;

const T: u64 = 4_096 << 8;

fn cfg() -> RequesterConfig {
    let mut c = RequesterConfig::new(PathMtu::Mtu256, Psn::new(100));
    c.ack_timeout = 8;
    c
}

fn wr(i: u16, op: RequestOp, len: u32) -> WorkRequest {
    WorkRequest {
        wqe_index: i,
        op,
        len,
        fence: false,
    }
}

fn resp(op: Opcode, psn: u32, syndrome: Syndrome) -> TransportHeaders {
    let mut ext = ExtHeaders::default();
    if op
        .info()
        .headers
        .contains(&super::super::headers::Ext::Aeth)
    {
        ext.aeth = Some(Aeth { syndrome, msn: 0 });
    }
    if op == Opcode::RcAtomicAcknowledge {
        ext.atomic_ack = Some(AtomicAckEth { orig: 42 });
    }
    TransportHeaders {
        bth: Bth::new(op, 1, psn),
        ext,
    }
}

fn ack(psn: u32) -> TransportHeaders {
    resp(
        Opcode::RcAcknowledge,
        psn,
        Syndrome::Ack {
            credits: Syndrome::CREDITS_INVALID,
        },
    )
}

fn nak(psn: u32, code: NakCode) -> TransportHeaders {
    resp(Opcode::RcAcknowledge, psn, Syndrome::Nak(code))
}

fn sent(a: &[ReqAction]) -> Vec<(u32, bool, bool)> {
    a.iter()
        .filter_map(|a| match a {
            ReqAction::Transmit(t) => Some((t.psn.value(), t.ack_req, t.retransmission)),
            _ => None,
        })
        .collect()
}

fn done(a: &[ReqAction]) -> Vec<(u16, WcStatus)> {
    a.iter()
        .filter_map(|a| match a {
            ReqAction::Complete(c) => Some((c.wqe_index, c.status)),
            _ => None,
        })
        .collect()
}

#[test]
fn post_segments_and_asks_for_an_ack_on_the_last_packet() {
    let mut r = Requester::new(cfg());
    let a = r.post(wr(0, RequestOp::Send, 600), 1_000);
    assert_eq!(
        sent(&a),
        [(100, false, false), (101, false, false), (102, true, false)]
    );
    assert_eq!(r.next_deadline(), Some(1_000 + T));
    assert_eq!(r.unacked(), 3);
    assert_eq!(r.next_psn(), Psn::new(103));
}

#[test]
fn coalesced_ack_completes_in_order() {
    let mut r = Requester::new(cfg());
    for i in 0..3 {
        r.post(wr(i, RequestOp::Write, 10), 0);
    }
    let a = r.on_response(&ack(101), 0, 5);
    assert_eq!(done(&a), [(0, WcStatus::Success), (1, WcStatus::Success)]);
    assert_eq!(r.next_deadline(), Some(5 + T));
    let a = r.on_response(&ack(102), 0, 6);
    assert_eq!(done(&a), [(2, WcStatus::Success)]);
    assert_eq!(r.next_deadline(), None);
    assert_eq!(r.outstanding(), 0);
    // A late duplicate ACK is ignored.
    assert!(r.on_response(&ack(101), 0, 7).is_empty());
    assert_eq!(r.stats().ignored, 1);
}

#[test]
fn partial_ack_advances_without_completing() {
    let mut r = Requester::new(cfg());
    r.post(wr(0, RequestOp::Send, 1000), 0);
    assert!(done(&r.on_response(&ack(101), 0, 1)).is_empty());
    assert_eq!(r.oldest_unacked(), Psn::new(102));
    // A timeout resends only from the oldest unacknowledged PSN.
    let a = r.on_timer(1 + T);
    assert_eq!(sent(&a), [(102, false, true), (103, true, true)]);
    assert_eq!(r.retries_left(), 6);
}

#[test]
fn sequence_nak_goes_back_n_once() {
    let mut r = Requester::new(cfg());
    for i in 0..4 {
        r.post(wr(i, RequestOp::Write, 10), 0);
    }
    let a = r.on_response(&nak(101, NakCode::PsnSequenceError), 0, 10);
    assert_eq!(done(&a), [(0, WcStatus::Success)]);
    assert_eq!(
        sent(&a),
        [(101, true, true), (102, true, true), (103, true, true)]
    );
    assert_eq!(r.retries_left(), 6);
    // The same NAK again (duplicated by the network) changes nothing.
    assert!(r
        .on_response(&nak(101, NakCode::PsnSequenceError), 0, 11)
        .is_empty());
    assert_eq!(r.stats().seq_naks, 1);
    // Progress restores the counter.
    r.on_response(&ack(101), 0, 12);
    assert_eq!(r.retries_left(), 7);
}

#[test]
fn rnr_nak_waits_then_resends() {
    let mut c = cfg();
    c.rnr_retry = 7;
    let mut r = Requester::new(c);
    r.post(wr(0, RequestOp::Send, 10), 0);
    r.post(wr(1, RequestOp::Send, 10), 0);
    let a = r.on_response(
        &resp(Opcode::RcAcknowledge, 101, Syndrome::RnrNak { timer: 3 }),
        0,
        50,
    );
    assert_eq!(done(&a), [(0, WcStatus::Success)]);
    assert!(sent(&a).is_empty());
    assert_eq!(r.next_deadline(), Some(50 + 30_000));
    assert!(r.on_timer(50 + 29_999).is_empty());
    // Nothing new leaves while waiting.
    assert!(sent(&r.post(wr(2, RequestOp::Send, 10), 60)).is_empty());
    let a = r.on_timer(50 + 30_000);
    assert_eq!(sent(&a), [(101, true, true), (102, true, false)]);
    assert_eq!(r.rnr_retries_left(), 7, "7 is infinite");
    assert_eq!(r.next_deadline(), Some(50 + 30_000 + T));
}

#[test]
fn rnr_retry_counts_down() {
    let mut c = cfg();
    c.rnr_retry = 1;
    let mut r = Requester::new(c);
    r.post(wr(0, RequestOp::Send, 10), 0);
    let rnr = resp(Opcode::RcAcknowledge, 100, Syndrome::RnrNak { timer: 1 });
    r.on_response(&rnr, 0, 0);
    assert_eq!(r.rnr_retries_left(), 0);
    r.on_timer(10_000);
    let a = r.on_response(&rnr, 0, 10_001);
    assert_eq!(done(&a), [(0, WcStatus::RnrRetryExcErr)]);
    assert!(a.contains(&ReqAction::EnterError(WcStatus::RnrRetryExcErr)));
}

#[test]
fn fatal_naks_complete_with_their_status_and_flush() {
    for (code, status) in [
        (NakCode::InvalidRequest, WcStatus::RemoteInvalReqErr),
        (NakCode::RemoteAccessError, WcStatus::RemoteAccessErr),
        (NakCode::RemoteOperationalError, WcStatus::RemoteOpErr),
    ] {
        let mut r = Requester::new(cfg());
        for i in 0..3 {
            r.post(wr(i, RequestOp::Write, 300), 0);
        }
        let a = r.on_response(&nak(102, code), 0, 1);
        assert_eq!(
            done(&a),
            [
                (0, WcStatus::Success),
                (1, status),
                (2, WcStatus::WrFlushErr)
            ]
        );
        assert!(r.is_error());
        assert_eq!(r.next_deadline(), None);
        assert_eq!(
            done(&r.post(wr(3, RequestOp::Send, 1), 2)),
            [(3, WcStatus::WrFlushErr)]
        );
    }
}

#[test]
fn ack_timeout_zero_never_times_out() {
    let mut c = cfg();
    c.ack_timeout = 0;
    let mut r = Requester::new(c);
    r.post(wr(0, RequestOp::Send, 10), 0);
    assert_eq!(r.next_deadline(), None);
    assert!(r.on_timer(u64::MAX).is_empty());
}

#[test]
fn read_atomic_limit_and_fence() {
    let mut c = cfg();
    c.log_sra_max = 0;
    let mut r = Requester::new(c);
    assert_eq!(
        sent(&r.post(wr(0, RequestOp::Read, 600), 0)),
        [(100, false, false)]
    );
    assert!(sent(&r.post(wr(1, RequestOp::FetchAdd, 8), 0)).is_empty());
    let mut fenced = wr(2, RequestOp::Send, 5);
    fenced.fence = true;
    assert!(sent(&r.post(fenced, 0)).is_empty());
    let rr = |op, psn| resp(op, psn, Syndrome::Ack { credits: 0 });
    r.on_response(&rr(Opcode::RcRdmaReadResponseFirst, 100), 256, 1);
    r.on_response(&rr(Opcode::RcRdmaReadResponseMiddle, 101), 256, 1);
    let a = r.on_response(&rr(Opcode::RcRdmaReadResponseLast, 102), 88, 1);
    assert_eq!(done(&a), [(0, WcStatus::Success)]);
    assert_eq!(
        sent(&a),
        [(103, false, false)],
        "the atomic, not the fenced SEND"
    );
    let a = r.on_response(
        &resp(
            Opcode::RcAtomicAcknowledge,
            103,
            Syndrome::Ack { credits: 0 },
        ),
        0,
        2,
    );
    assert!(a.contains(&ReqAction::AtomicResult {
        wqe_index: 1,
        orig: 42
    }));
    assert_eq!(sent(&a), [(104, true, false)]);
}

#[test]
fn window_limits_inflight_and_asks_for_an_ack_when_full() {
    let mut c = cfg();
    c.max_inflight = 2;
    let mut r = Requester::new(c);
    let a = r.post(wr(0, RequestOp::Write, 5 * 256), 0);
    assert_eq!(sent(&a), [(100, false, false), (101, true, false)]);
    let a = r.on_response(&ack(100), 0, 1);
    assert_eq!(sent(&a), [(102, true, false)]);
}

#[test]
fn local_errors_are_reported_in_order() {
    let mut c = cfg();
    c.max_msg_len = 100;
    let mut r = Requester::new(c);
    r.post(wr(0, RequestOp::Send, 50), 0);
    let a = r.post(wr(1, RequestOp::Send, 200), 0);
    assert!(done(&a).is_empty() && sent(&a).is_empty());
    r.post(wr(2, RequestOp::Send, 1), 0);
    let a = r.on_response(&ack(100), 0, 1);
    assert_eq!(
        done(&a),
        [
            (0, WcStatus::Success),
            (1, WcStatus::LocalLengthErr),
            (2, WcStatus::WrFlushErr)
        ]
    );
}

#[test]
fn ack_beyond_an_unanswered_read_retries_it() {
    let mut r = Requester::new(cfg());
    r.post(wr(0, RequestOp::Read, 600), 0); // PSNs 100..=102
    r.post(wr(1, RequestOp::Send, 10), 0); // PSN 103
    let a = r.on_response(&ack(103), 0, 1);
    assert_eq!(sent(&a), [(100, false, true), (103, true, true)]);
    assert_eq!(r.stats().implicit_naks, 1);
    // A response beyond the expected one: the READ is asked again from the gap.
    let rr = |op, psn| resp(op, psn, Syndrome::Ack { credits: 0 });
    r.on_response(&rr(Opcode::RcRdmaReadResponseFirst, 100), 256, 2);
    let a = r.on_response(&rr(Opcode::RcRdmaReadResponseLast, 102), 88, 3);
    let t: Vec<_> = a
        .iter()
        .filter_map(|a| match a {
            ReqAction::Transmit(t) => Some((t.opcode, t.psn.value(), t.offset, t.len)),
            _ => None,
        })
        .collect();
    assert_eq!(t[0], (Opcode::RcRdmaReadRequest, 101, 256, 344));
}

#[test]
fn bad_read_response_is_bad_resp_err() {
    let mut r = Requester::new(cfg());
    r.post(wr(0, RequestOp::Read, 600), 0);
    let a = r.on_response(
        &resp(
            Opcode::RcRdmaReadResponseFirst,
            100,
            Syndrome::Ack { credits: 0 },
        ),
        100,
        1,
    );
    assert_eq!(done(&a), [(0, WcStatus::BadRespErr)]);
    // And a response of the wrong kind for the PSN is ignored.
    let mut r = Requester::new(cfg());
    r.post(wr(0, RequestOp::Send, 10), 0);
    assert!(r
        .on_response(
            &resp(
                Opcode::RcAtomicAcknowledge,
                100,
                Syndrome::Ack { credits: 0 }
            ),
            0,
            1
        )
        .is_empty());
    assert!(r
        .on_response(
            &resp(Opcode::RcSendOnly, 100, Syndrome::Ack { credits: 0 }),
            0,
            1
        )
        .is_empty());
}

#[test]
fn garbage_responses_never_panic() {
    let mut r = Requester::new(cfg());
    for i in 0..5 {
        r.post(wr(i, RequestOp::Read, 700), 0);
    }
    let mut x = 0x9e37_79b9u32;
    for now in 0..20_000u64 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let op = Opcode::ALL[(x as usize) % Opcode::ALL.len()];
        let syn = Syndrome::from_u8((x >> 8) as u8 & 0x7f).unwrap_or(Syndrome::Ack { credits: 0 });
        let h = resp(op, 100 + (x >> 20) % 40, syn);
        let _ = r.on_response(&h, (x >> 3) % 600, now);
        if now % 97 == 0 {
            let _ = r.on_timer(now * 1_000_000);
        }
    }
}
