use super::super::headers::{AtomicEth, Bth, ExtHeaders, Reth};
use super::*;

fn cfg() -> ResponderConfig {
    let mut c = ResponderConfig::new(PathMtu::Mtu256, Psn::new(10));
    c.ack_coalesce = 2;
    c.min_rnr_timer = 7;
    c.log_rra_max = 0;
    c
}

fn req(op: Opcode, psn: u32, ack_req: bool) -> TransportHeaders {
    let mut bth = Bth::new(op, 1, psn);
    bth.ack_req = ack_req;
    TransportHeaders {
        bth,
        ext: ExtHeaders::default(),
    }
}

fn read(psn: u32, va: u64, len: u32) -> TransportHeaders {
    let mut h = req(Opcode::RcRdmaReadRequest, psn, false);
    h.ext.reth = Some(Reth {
        va,
        rkey: 3,
        dma_len: len,
    });
    h
}

fn fadd(psn: u32, va: u64) -> TransportHeaders {
    let mut h = req(Opcode::RcFetchAdd, psn, false);
    h.ext.atomic = Some(AtomicEth {
        va,
        rkey: 3,
        swap_add: 1,
        compare: 0,
    });
    h
}

fn acks(a: &[RespAction]) -> Vec<(u32, Syndrome)> {
    a.iter()
        .filter_map(|a| match a {
            RespAction::SendAck { psn, aeth } => Some((psn.value(), aeth.syndrome)),
            _ => None,
        })
        .collect()
}

const ACK: Syndrome = Syndrome::Ack {
    credits: Syndrome::CREDITS_INVALID,
};

#[test]
fn send_in_order_with_coalesced_acks() {
    let mut r = Responder::new(cfg());
    let a = r.on_packet(&req(Opcode::RcSendFirst, 10, false), 256, true);
    assert_eq!(
        a,
        [RespAction::RecvData {
            psn: Psn::new(10),
            offset: 0,
            len: 256,
            new_wqe: true
        }]
    );
    let a = r.on_packet(&req(Opcode::RcSendMiddle, 11, false), 256, false);
    assert_eq!(acks(&a), [(11, ACK)], "every second packet");
    let a = r.on_packet(&req(Opcode::RcSendLast, 12, true), 5, false);
    assert!(matches!(
        a[1],
        RespAction::RecvComplete(RecvCompletion { bytes: 517, .. })
    ));
    assert_eq!(acks(&a), [(12, ACK)], "AckReq");
    assert_eq!((r.expected_psn(), r.msn()), (Psn::new(13), 1));
    assert!(r.flush_ack().is_empty());
    r.on_packet(&req(Opcode::RcSendOnly, 13, false), 5, true);
    assert_eq!(acks(&r.flush_ack()), [(13, ACK)]);
}

#[test]
fn nak_once_then_silence_until_the_expected_psn() {
    let mut r = Responder::new(cfg());
    let seq = Syndrome::Nak(NakCode::PsnSequenceError);
    let a = r.on_packet(&req(Opcode::RcSendOnly, 12, false), 1, true);
    assert_eq!(acks(&a), [(10, seq)]);
    let a = r.on_packet(&req(Opcode::RcSendOnly, 13, true), 1, true);
    assert_eq!(a, [RespAction::Dropped(DropReason::OutOfSequence)]);
    r.on_packet(&req(Opcode::RcSendOnly, 10, false), 1, true);
    let a = r.on_packet(&req(Opcode::RcSendOnly, 12, false), 1, true);
    assert_eq!(acks(&a), [(11, seq)], "a new gap is NAKed again");
    assert_eq!(r.stats().seq_naks, 2);
    // Far behind (more than 2^23) counts as ahead, per IBTA's windows.
    let mut r = Responder::new(cfg());
    let a = r.on_packet(&req(Opcode::RcSendOnly, 10 + (1 << 23) - 1, false), 1, true);
    assert_eq!(acks(&a), [(10, seq)]);
}

#[test]
fn rnr_without_a_receive_wqe() {
    let mut r = Responder::new(cfg());
    let a = r.on_packet(&req(Opcode::RcSendOnly, 10, true), 1, false);
    assert_eq!(acks(&a), [(10, Syndrome::RnrNak { timer: 7 })]);
    assert_eq!(r.expected_psn(), Psn::new(10));
    // What follows is dropped silently (the RNR NAK was the one NAK).
    let a = r.on_packet(&req(Opcode::RcSendOnly, 11, true), 1, true);
    assert_eq!(a, [RespAction::Dropped(DropReason::OutOfSequence)]);
    let a = r.on_packet(&req(Opcode::RcSendOnly, 10, true), 1, true);
    assert_eq!(acks(&a), [(10, ACK)]);
    // WRITE with immediate needs a receive WQE at its last packet.
    let mut w = req(Opcode::RcRdmaWriteOnlyWithImmediate, 11, true);
    w.ext.reth = Some(Reth {
        va: 0,
        rkey: 1,
        dma_len: 4,
    });
    w.ext.imm = Some(super::super::headers::ImmDt { imm: 1 });
    assert_eq!(
        acks(&r.on_packet(&w, 4, false)),
        [(11, Syndrome::RnrNak { timer: 7 })]
    );
    let a = r.on_packet(&w, 4, true);
    assert!(matches!(a[0], RespAction::WriteData { len: 4, .. }));
    assert!(matches!(
        a[1],
        RespAction::RecvComplete(RecvCompletion {
            rdma_write: true,
            imm: Some(1),
            ..
        })
    ));
}

#[test]
fn duplicate_send_and_write_are_reacked_not_redone() {
    let mut r = Responder::new(cfg());
    r.on_packet(&req(Opcode::RcSendOnly, 10, true), 1, true);
    r.on_packet(&req(Opcode::RcSendOnly, 11, true), 1, true);
    let a = r.on_packet(&req(Opcode::RcSendOnly, 10, true), 1, true);
    assert_eq!(
        a,
        [RespAction::SendAck {
            psn: Psn::new(11),
            aeth: ack(2)
        }]
    );
    let a = r.on_packet(&req(Opcode::RcSendOnly, 10, false), 1, true);
    assert_eq!(a, [RespAction::Dropped(DropReason::Duplicate)]);
    assert_eq!(r.stats().duplicates, 2);
}

#[test]
fn invalid_requests_nak_and_enter_error() {
    let mut r = Responder::new(cfg());
    let a = r.on_packet(&req(Opcode::RcSendMiddle, 10, false), 256, true);
    let inv = Syndrome::Nak(NakCode::InvalidRequest);
    assert_eq!(acks(&a), [(10, inv)]);
    assert_eq!(
        a.last(),
        Some(&RespAction::EnterError(NakCode::InvalidRequest))
    );
    assert!(r.is_error());
    assert_eq!(
        r.on_packet(&req(Opcode::RcSendOnly, 11, false), 1, true),
        [RespAction::Dropped(DropReason::Error)]
    );
    // A SEND FIRST shorter than the MTU; a WRITE ONLY longer than its RETH; a misaligned
    // atomic; a READ without RETH; a send interrupted by a WRITE (receive WQE fails).
    let mut w = req(Opcode::RcRdmaWriteOnly, 10, false);
    w.ext.reth = Some(Reth {
        va: 0,
        rkey: 1,
        dma_len: 4,
    });
    let cases: [(TransportHeaders, u32); 4] = [
        (req(Opcode::RcSendFirst, 10, false), 100),
        (w, 5),
        (fadd(10, 4), 0),
        (req(Opcode::RcRdmaReadRequest, 10, false), 0),
    ];
    for (h, len) in cases {
        let mut r = Responder::new(cfg());
        assert_eq!(acks(&r.on_packet(&h, len, true)), [(10, inv)], "{h:?}");
        assert!(r.is_error());
    }
    let mut r = Responder::new(cfg());
    r.on_packet(&req(Opcode::RcSendFirst, 10, false), 256, true);
    let a = r.on_packet(&w_at(11), 4, true);
    assert!(a.contains(&RespAction::RecvError(WcStatus::RemoteInvalReqErr)));
}

fn w_at(psn: u32) -> TransportHeaders {
    let mut w = req(Opcode::RcRdmaWriteOnly, psn, false);
    w.ext.reth = Some(Reth {
        va: 0,
        rkey: 1,
        dma_len: 4,
    });
    w
}

#[test]
fn read_responses_are_segmented_with_aeths() {
    let mut r = Responder::new(ResponderConfig {
        expected_psn: Psn::new(0xff_ffff),
        ..cfg()
    });
    let a = r.on_packet(&read(0xff_ffff, 0x1000, 600), 0, false);
    let RespAction::ReadResponse(rr) = a[0] else {
        panic!("{a:?}")
    };
    let p: Vec<_> = rr
        .packets()
        .map(|p| (p.opcode, p.psn.value(), p.va, p.len, p.aeth.is_some()))
        .collect();
    use Opcode::*;
    assert_eq!(
        p,
        [
            (RcRdmaReadResponseFirst, 0xff_ffff, 0x1000, 256, true),
            (RcRdmaReadResponseMiddle, 0, 0x1100, 256, false),
            (RcRdmaReadResponseLast, 1, 0x1200, 88, true)
        ]
    );
    assert_eq!(r.expected_psn(), Psn::new(2));
    let mut r = Responder::new(cfg());
    let a = r.on_packet(&read(10, 0, 0), 0, false);
    let RespAction::ReadResponse(rr) = a[0] else {
        panic!()
    };
    let p: Vec<_> = rr.packets().map(|p| (p.opcode, p.len)).collect();
    assert_eq!(p, [(RcRdmaReadResponseOnly, 0)]);
}

#[test]
fn duplicates_are_answered_from_the_resource_ring() {
    let mut r = Responder::new(cfg()); // one resource
    r.on_packet(&read(10, 0x1000, 600), 0, false); // PSNs 10..=12
                                                   // A re-request from the second response on.
    let a = r.on_packet(&read(11, 0x1100, 344), 0, false);
    let RespAction::ReadResponse(rr) = a[0] else {
        panic!("{a:?}")
    };
    assert_eq!(
        (rr.first_psn.value(), rr.va, rr.len, rr.replay),
        (11, 0x1100, 344, true)
    );
    // An atomic replaces the READ in the (single-entry) ring.
    let a = r.on_packet(&fadd(13, 8), 0, false);
    assert!(
        matches!(a[..], [RespAction::ExecuteAtomic(AtomicOp { psn, .. })] if psn == Psn::new(13))
    );
    assert_eq!(
        r.on_packet(&fadd(13, 8), 0, false),
        [RespAction::Dropped(DropReason::Duplicate)],
        "not executed yet"
    );
    let a = r.atomic_result(Psn::new(13), 77);
    assert!(matches!(
        a[..],
        [RespAction::AtomicAck {
            orig: 77,
            replay: false,
            ..
        }]
    ));
    assert!(r.atomic_result(Psn::new(13), 78).is_empty());
    let a = r.on_packet(&fadd(13, 8), 0, false);
    assert!(matches!(
        a[..],
        [RespAction::AtomicAck {
            orig: 77,
            replay: true,
            ..
        }]
    ));
    assert_eq!(
        r.on_packet(&read(10, 0x1000, 600), 0, false),
        [RespAction::Dropped(DropReason::Duplicate)],
        "evicted"
    );
    let s = r.stats();
    assert_eq!(
        (s.reads, s.read_replays, s.atomics, s.atomic_replays),
        (1, 1, 1, 1)
    );
}

#[test]
fn faults_map_to_naks_and_receive_errors() {
    assert_eq!(RespFault::RemoteAccess.nak(), NakCode::RemoteAccessError);
    assert_eq!(RespFault::RemoteAccess.recv_status(), None);
    assert_eq!(RespFault::RecvLength.nak(), NakCode::InvalidRequest);
    assert_eq!(
        RespFault::RecvLength.recv_status(),
        Some(WcStatus::LocalLengthErr)
    );
    assert_eq!(
        RespFault::RecvProtection.nak(),
        NakCode::RemoteOperationalError
    );
    let mut r = Responder::new(cfg());
    r.on_packet(&req(Opcode::RcSendOnly, 10, false), 1, true);
    let a = r.fault(Psn::new(10), RespFault::RecvProtection);
    assert_eq!(
        a,
        [
            RespAction::SendAck {
                psn: Psn::new(10),
                aeth: Aeth {
                    syndrome: Syndrome::Nak(NakCode::RemoteOperationalError),
                    msn: 1
                }
            },
            RespAction::RecvError(WcStatus::LocalProtErr),
            RespAction::EnterError(NakCode::RemoteOperationalError)
        ]
    );
    assert!(r.fault(Psn::new(10), RespFault::RecvProtection).is_empty());
}

#[test]
fn msn_wraps_at_24_bits_and_garbage_never_panics() {
    let mut r = Responder::new(cfg());
    r.msn = MASK_24;
    r.on_packet(&req(Opcode::RcSendOnly, 10, false), 1, true);
    assert_eq!(r.msn(), 0);
    let mut x = 0x1234_5679u32;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let op = Opcode::ALL[(x as usize) % Opcode::ALL.len()];
        let mut h = req(op, 10 + (x >> 24) % 8, x & 1 == 1);
        if x & 2 != 0 {
            h.ext.reth = Some(Reth {
                va: u64::from(x),
                rkey: 1,
                dma_len: x >> 8,
            });
        }
        if x & 4 != 0 {
            h.ext.atomic = Some(AtomicEth {
                va: u64::from(x & !7),
                rkey: 1,
                swap_add: 1,
                compare: 0,
            });
        }
        let _ = r.on_packet(&h, (x >> 5) % 300, x & 8 != 0);
        if r.is_error() {
            r = Responder::new(cfg());
        }
    }
}
