//! A requester and a responder back to back through an in-memory link that drops,
//! duplicates and reorders packets by a deterministic PRNG, with simulated memories on both
//! sides, so that whole exchanges are checked byte for byte.

use std::collections::{HashMap, VecDeque};

use super::headers::*;
use super::psn::Psn;
use super::requester::*;
use super::responder::*;
use super::segment::{PathMtu, RequestOp};
use super::status::WcStatus;

const RKEY: u32 = 0x1234;
const QPN: u32 = 0x11;
const REMOTE_LEN: usize = 1 << 16;
const COUNTER_VA: u64 = 0xff00;

/// xorshift64*: deterministic and good enough for fault injection.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// True with probability `pct`/100.
    fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Clone, Debug)]
struct Pkt {
    hdr: TransportHeaders,
    payload: Vec<u8>,
}

/// One direction of the link.
#[derive(Default)]
struct Wire {
    q: Vec<(u64, u64, Pkt)>,
    seq: u64,
    sent: u64,
}

#[derive(Clone, Debug, Default)]
struct Wqe {
    remote_va: u64,
    rkey: u32,
    local: Vec<u8>,
    swap_add: u64,
    compare: u64,
    orig: Option<u64>,
}

/// Which packets the link loses on purpose (beyond the random share).
type Filter = Box<dyn FnMut(bool, &Pkt) -> bool>;

struct Sim {
    req: Requester,
    resp: Responder,
    now: u64,
    rng: Rng,
    drop_pct: u64,
    dup_pct: u64,
    jitter_ns: u64,
    latency_ns: u64,
    filter: Option<Filter>,
    to_resp: Wire,
    to_req: Wire,
    wqes: HashMap<u16, Wqe>,
    next_wqe: u16,
    completions: Vec<Completion>,
    req_error: Option<WcStatus>,
    remote: Vec<u8>,
    recv_posted: VecDeque<Vec<u8>>,
    recv_open: Option<Vec<u8>>,
    received: Vec<(Vec<u8>, RecvCompletion)>,
    recv_schedule: Vec<u64>,
    resp_error: Option<NakCode>,
    resp_recv_errors: Vec<WcStatus>,
    atomic_execs: u64,
}

impl Sim {
    fn new(
        seed: u64,
        psn: Psn,
        rcfg: impl FnOnce(&mut RequesterConfig),
        scfg: impl FnOnce(&mut ResponderConfig),
    ) -> Sim {
        let mut rc = RequesterConfig::new(PathMtu::Mtu256, psn);
        rc.ack_timeout = 8; // ~1 ms
        rc.max_inflight = 64;
        rcfg(&mut rc);
        let mut sc = ResponderConfig::new(PathMtu::Mtu256, psn);
        sc.ack_coalesce = 4;
        scfg(&mut sc);
        let remote = (0..REMOTE_LEN).map(|i| (i * 7 + i / 256) as u8).collect();
        Sim {
            req: Requester::new(rc),
            resp: Responder::new(sc),
            now: 0,
            rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            drop_pct: 0,
            dup_pct: 0,
            jitter_ns: 0,
            latency_ns: 2_000,
            filter: None,
            to_resp: Wire::default(),
            to_req: Wire::default(),
            wqes: HashMap::new(),
            next_wqe: 0,
            completions: Vec::new(),
            req_error: None,
            remote,
            recv_posted: VecDeque::new(),
            recv_open: None,
            received: Vec::new(),
            recv_schedule: Vec::new(),
            resp_error: None,
            resp_recv_errors: Vec::new(),
            atomic_execs: 0,
        }
    }

    fn lossy(mut self, drop_pct: u64, dup_pct: u64, jitter_ns: u64) -> Sim {
        self.drop_pct = drop_pct;
        self.dup_pct = dup_pct;
        self.jitter_ns = jitter_ns;
        self
    }

    fn post_recvs(&mut self, n: usize) {
        for _ in 0..n {
            self.recv_posted.push_back(Vec::new());
        }
    }

    /// Posts a request; returns its WQE index.
    fn post(&mut self, op: RequestOp, len: u32, remote_va: u64, rkey: u32) -> u16 {
        let idx = self.next_wqe;
        self.next_wqe = self.next_wqe.wrapping_add(1);
        let local = match op {
            RequestOp::Read => vec![0; len as usize],
            _ => (0..len)
                .map(|i| (i as u8) ^ (idx as u8).wrapping_mul(31))
                .collect(),
        };
        let wqe = Wqe {
            remote_va,
            rkey,
            local,
            swap_add: 1 + u64::from(idx),
            compare: 0,
            orig: None,
        };
        self.wqes.insert(idx, wqe);
        let acts = self.req.post(
            WorkRequest {
                wqe_index: idx,
                op,
                len,
                fence: false,
            },
            self.now,
        );
        self.req_actions(acts, &[]);
        idx
    }

    fn send(&mut self, to_responder: bool, p: Pkt) {
        if let Some(f) = self.filter.as_mut() {
            if f(to_responder, &p) {
                return;
            }
        }
        if self.rng.chance(self.drop_pct) {
            return;
        }
        let copies = if self.rng.chance(self.dup_pct) { 2 } else { 1 };
        for _ in 0..copies {
            let at = self.now + self.latency_ns + self.rng.below(self.jitter_ns + 1);
            let w = if to_responder {
                &mut self.to_resp
            } else {
                &mut self.to_req
            };
            w.seq += 1;
            w.sent += 1;
            let s = w.seq;
            w.q.push((at, s, p.clone()));
        }
    }

    fn req_actions(&mut self, acts: Vec<ReqAction>, payload: &[u8]) {
        for a in acts {
            match a {
                ReqAction::Transmit(tx) => {
                    let pkt = self.build_request(&tx);
                    self.send(true, pkt);
                }
                ReqAction::ReadData {
                    wqe_index,
                    offset,
                    len,
                } => {
                    let w = self.wqes.get_mut(&wqe_index).expect("known WQE");
                    let o = offset as usize;
                    w.local[o..o + len as usize].copy_from_slice(&payload[..len as usize]);
                }
                ReqAction::AtomicResult { wqe_index, orig } => {
                    self.wqes.get_mut(&wqe_index).expect("known WQE").orig = Some(orig);
                }
                ReqAction::Complete(c) => self.completions.push(c),
                ReqAction::EnterError(s) => self.req_error = Some(s),
            }
        }
    }

    fn build_request(&self, tx: &TxPacket) -> Pkt {
        let w = &self.wqes[&tx.wqe_index];
        let mut bth = Bth::new(tx.opcode, QPN, tx.psn.value());
        bth.ack_req = tx.ack_req;
        let mut ext = ExtHeaders::default();
        for h in tx.opcode.info().headers {
            match h {
                Ext::Reth => {
                    let read = tx.opcode == Opcode::RcRdmaReadRequest;
                    ext.reth = Some(Reth {
                        va: w.remote_va + if read { u64::from(tx.offset) } else { 0 },
                        rkey: w.rkey,
                        dma_len: if read { tx.len } else { w.local.len() as u32 },
                    })
                }
                Ext::ImmDt => {
                    ext.imm = Some(ImmDt {
                        imm: 0xabc0_0000 | u32::from(tx.wqe_index),
                    })
                }
                Ext::Ieth => ext.ieth = Some(Ieth { rkey: 0x77 }),
                Ext::AtomicEth => {
                    ext.atomic = Some(AtomicEth {
                        va: w.remote_va,
                        rkey: w.rkey,
                        swap_add: w.swap_add,
                        compare: w.compare,
                    })
                }
                _ => {}
            }
        }
        let payload = if tx.opcode.info().payload && tx.op != RequestOp::Read {
            w.local[tx.offset as usize..(tx.offset + tx.len) as usize].to_vec()
        } else {
            Vec::new()
        };
        Pkt {
            hdr: TransportHeaders { bth, ext },
            payload,
        }
    }

    fn remote_ok(&self, rkey: u32, va: u64, len: u32) -> bool {
        rkey == RKEY
            && va
                .checked_add(u64::from(len))
                .is_some_and(|e| e <= REMOTE_LEN as u64)
    }

    fn resp_actions(&mut self, acts: Vec<RespAction>, payload: &[u8]) {
        let mut work: VecDeque<RespAction> = acts.into();
        while let Some(a) = work.pop_front() {
            match a {
                RespAction::RecvData {
                    offset,
                    len,
                    new_wqe,
                    ..
                } => {
                    if new_wqe {
                        self.recv_open =
                            Some(self.recv_posted.pop_front().expect("a posted receive"));
                    }
                    let b = self.recv_open.as_mut().expect("open receive");
                    assert_eq!(b.len(), offset as usize, "receive data in order");
                    b.extend_from_slice(&payload[..len as usize]);
                }
                RespAction::WriteData { psn, rkey, va, len } => {
                    if !self.remote_ok(rkey, va, len) {
                        work = self.resp.fault(psn, RespFault::RemoteAccess).into();
                        continue;
                    }
                    self.remote[va as usize..(va + u64::from(len)) as usize]
                        .copy_from_slice(&payload[..len as usize]);
                }
                RespAction::RecvComplete(c) => {
                    let buf = if c.rdma_write {
                        self.recv_posted.pop_front().expect("a posted receive")
                    } else {
                        self.recv_open.take().expect("open receive")
                    };
                    self.received.push((buf, c));
                }
                RespAction::ReadResponse(r) => {
                    if !self.remote_ok(r.rkey, r.va, r.len) {
                        work = self.resp.fault(r.first_psn, RespFault::RemoteAccess).into();
                        continue;
                    }
                    for p in r.packets() {
                        let mut bth = Bth::new(p.opcode, QPN, p.psn.value());
                        bth.ack_req = false;
                        let ext = ExtHeaders {
                            aeth: p.aeth,
                            ..Default::default()
                        };
                        let data =
                            self.remote[p.va as usize..(p.va + u64::from(p.len)) as usize].to_vec();
                        self.send(
                            false,
                            Pkt {
                                hdr: TransportHeaders { bth, ext },
                                payload: data,
                            },
                        );
                    }
                }
                RespAction::ExecuteAtomic(a) => {
                    if !self.remote_ok(a.rkey, a.va, 8) {
                        work = self.resp.fault(a.psn, RespFault::RemoteAccess).into();
                        continue;
                    }
                    self.atomic_execs += 1;
                    let at = a.va as usize;
                    let old =
                        u64::from_le_bytes(self.remote[at..at + 8].try_into().expect("8 bytes"));
                    let new = if a.compare_swap {
                        if old == a.compare {
                            a.swap_add
                        } else {
                            old
                        }
                    } else {
                        old.wrapping_add(a.swap_add)
                    };
                    self.remote[at..at + 8].copy_from_slice(&new.to_le_bytes());
                    work.extend(self.resp.atomic_result(a.psn, old));
                }
                RespAction::AtomicAck {
                    psn, aeth, orig, ..
                } => {
                    let bth = Bth::new(Opcode::RcAtomicAcknowledge, QPN, psn.value());
                    let ext = ExtHeaders {
                        aeth: Some(aeth),
                        atomic_ack: Some(AtomicAckEth { orig }),
                        ..Default::default()
                    };
                    self.send(
                        false,
                        Pkt {
                            hdr: TransportHeaders { bth, ext },
                            payload: Vec::new(),
                        },
                    );
                }
                RespAction::SendAck { psn, aeth } => {
                    let bth = Bth::new(Opcode::RcAcknowledge, QPN, psn.value());
                    let ext = ExtHeaders {
                        aeth: Some(aeth),
                        ..Default::default()
                    };
                    self.send(
                        false,
                        Pkt {
                            hdr: TransportHeaders { bth, ext },
                            payload: Vec::new(),
                        },
                    );
                }
                RespAction::RecvError(s) => self.resp_recv_errors.push(s),
                RespAction::EnterError(code) => self.resp_error = Some(code),
                RespAction::Dropped(_) => {}
            }
        }
    }

    /// Advances to the next event and handles it; false when nothing is left to happen.
    fn step(&mut self) -> bool {
        let next_pkt = self
            .to_resp
            .q
            .iter()
            .chain(self.to_req.q.iter())
            .map(|e| e.0)
            .min();
        let next_recv = self.recv_schedule.iter().copied().min();
        let next = [next_pkt, self.req.next_deadline(), next_recv]
            .into_iter()
            .flatten()
            .min();
        let Some(t) = next else { return false };
        self.now = self.now.max(t);
        if let Some(i) = self.recv_schedule.iter().position(|&r| r <= self.now) {
            self.recv_schedule.swap_remove(i);
            self.post_recvs(1);
            return true;
        }
        for to_resp in [true, false] {
            let w = if to_resp {
                &mut self.to_resp
            } else {
                &mut self.to_req
            };
            let Some(i) = (0..w.q.len())
                .filter(|&i| w.q[i].0 <= self.now)
                .min_by_key(|&i| (w.q[i].0, w.q[i].1))
            else {
                continue;
            };
            let (_, _, p) = w.q.swap_remove(i);
            if to_resp {
                let avail = !self.recv_posted.is_empty();
                let acts = self.resp.on_packet(&p.hdr, p.payload.len() as u32, avail);
                self.resp_actions(acts, &p.payload);
            } else {
                let acts = self
                    .req
                    .on_response(&p.hdr, p.payload.len() as u32, self.now);
                self.req_actions(acts, &p.payload);
            }
            return true;
        }
        if self.req.next_deadline().is_some_and(|d| d <= self.now) {
            let acts = self.req.on_timer(self.now);
            self.req_actions(acts, &[]);
        }
        true
    }

    /// Runs until every posted request completed (or nothing is left to happen).
    fn run(&mut self) {
        let mut steps = 0u64;
        while self.completions.len() < usize::from(self.next_wqe) && self.step() {
            steps += 1;
            assert!(steps < 5_000_000, "runaway simulation");
        }
    }
}

fn mixed_workload(sim: &mut Sim, rng_seed: u64) -> Vec<(u16, RequestOp, u32, u64)> {
    let mut rng = Rng(rng_seed | 1);
    let ops = [
        RequestOp::Send,
        RequestOp::SendImm,
        RequestOp::SendInv,
        RequestOp::Write,
        RequestOp::WriteImm,
        RequestOp::Read,
        RequestOp::FetchAdd,
        RequestOp::CompareSwap,
    ];
    let mut posted = Vec::new();
    let mut write_va = 0u64;
    sim.post_recvs(200);
    for _ in 0..80 {
        let op = ops[rng.below(ops.len() as u64) as usize];
        let len = match rng.below(4) {
            0 => 0,
            1 => 1 + rng.below(255) as u32,
            2 => 256 * (1 + rng.below(4) as u32),
            _ => 1 + rng.below(2000) as u32,
        };
        let (va, len) = match op {
            RequestOp::Write | RequestOp::WriteImm => {
                let va = write_va;
                write_va += u64::from(len);
                (va, len)
            }
            RequestOp::Read => (0x8000 + rng.below(0x4000), len),
            RequestOp::FetchAdd | RequestOp::CompareSwap => (COUNTER_VA, 8),
            _ => (0, len),
        };
        let idx = sim.post(op, len, va, RKEY);
        posted.push((idx, op, len, va));
    }
    assert!(write_va < 0x8000);
    posted
}

fn check_mixed(sim: &Sim, posted: &[(u16, RequestOp, u32, u64)], initial_remote: &[u8]) {
    assert_eq!(sim.req_error, None, "requester error");
    assert_eq!(sim.resp_error, None, "responder error");
    let got: Vec<_> = sim
        .completions
        .iter()
        .map(|c| (c.wqe_index, c.status))
        .collect();
    let want: Vec<_> = posted.iter().map(|p| (p.0, WcStatus::Success)).collect();
    assert_eq!(got, want, "every request completes, in order, successfully");
    // SENDs and WRITEs with immediate arrive in order, each exactly once.
    let receivers: Vec<_> = posted
        .iter()
        .filter(|p| {
            matches!(
                p.1,
                RequestOp::Send | RequestOp::SendImm | RequestOp::SendInv | RequestOp::WriteImm
            )
        })
        .collect();
    assert_eq!(sim.received.len(), receivers.len());
    let mut counter = u64::from_le_bytes(
        initial_remote[COUNTER_VA as usize..][..8]
            .try_into()
            .unwrap(),
    );
    for (p, (buf, c)) in receivers.iter().zip(&sim.received) {
        let w = &sim.wqes[&p.0];
        if p.1 == RequestOp::WriteImm {
            assert!(c.rdma_write && buf.is_empty());
        } else {
            assert_eq!(buf, &w.local, "SEND {} payload", p.0);
            assert_eq!(c.bytes, p.2);
        }
        let imm = matches!(p.1, RequestOp::SendImm | RequestOp::WriteImm);
        assert_eq!(c.imm, imm.then_some(0xabc0_0000 | u32::from(p.0)));
        assert_eq!(c.invalidate, (p.1 == RequestOp::SendInv).then_some(0x77));
    }
    for p in posted {
        let w = &sim.wqes[&p.0];
        match p.1 {
            RequestOp::Write | RequestOp::WriteImm => {
                assert_eq!(
                    &sim.remote[p.3 as usize..][..p.2 as usize],
                    &w.local[..],
                    "WRITE {}",
                    p.0
                )
            }
            RequestOp::Read => assert_eq!(
                &w.local[..],
                &initial_remote[p.3 as usize..][..p.2 as usize],
                "READ {}",
                p.0
            ),
            RequestOp::FetchAdd => {
                assert_eq!(
                    w.orig,
                    Some(counter),
                    "fetch-add {} sees the previous value",
                    p.0
                );
                counter = counter.wrapping_add(w.swap_add);
            }
            RequestOp::CompareSwap => {
                assert_eq!(w.orig, Some(counter), "compare-swap {}", p.0);
                if counter == w.compare {
                    counter = w.swap_add;
                }
            }
            _ => {}
        }
    }
    let final_counter =
        u64::from_le_bytes(sim.remote[COUNTER_VA as usize..][..8].try_into().unwrap());
    assert_eq!(final_counter, counter, "each atomic executed exactly once");
    let atomics = posted
        .iter()
        .filter(|p| matches!(p.1, RequestOp::FetchAdd | RequestOp::CompareSwap))
        .count();
    assert_eq!(sim.atomic_execs, atomics as u64);
}

#[test]
fn clean_link_moves_everything() {
    let mut sim = Sim::new(1, Psn::new(100), |_| {}, |_| {});
    let initial = sim.remote.clone();
    let posted = mixed_workload(&mut sim, 7);
    sim.run();
    check_mixed(&sim, &posted, &initial);
    assert_eq!(sim.req.stats().retransmitted, 0);
    assert_eq!(sim.req.stats().timeouts, 0);
    assert_eq!(sim.resp.stats().duplicates, 0);
}

#[test]
fn lossy_reordering_link_still_delivers_in_order() {
    for seed in 1..=6 {
        let mut sim =
            Sim::new(seed, Psn::new(0x1000 * seed as u32), |_| {}, |_| {}).lossy(10, 5, 6_000);
        let initial = sim.remote.clone();
        let posted = mixed_workload(&mut sim, seed * 13);
        sim.run();
        check_mixed(&sim, &posted, &initial);
        let rs = sim.req.stats();
        assert!(rs.retransmitted > 0, "seed {seed}: {rs:?}");
        assert!(sim.resp.stats().duplicates > 0 && sim.resp.stats().out_of_sequence > 0);
        assert!(rs.timeouts + rs.seq_naks > 0);
    }
}

#[test]
fn psn_wraps_at_2_pow_24() {
    for seed in 1..=3 {
        let start = Psn::new(0xff_ffff - 40);
        let mut sim = Sim::new(seed, start, |_| {}, |_| {}).lossy(10, 5, 6_000);
        let initial = sim.remote.clone();
        let posted = mixed_workload(&mut sim, seed * 101);
        sim.run();
        check_mixed(&sim, &posted, &initial);
        assert!(
            sim.req.next_psn().value() < 0x10_0000,
            "wrapped: {}",
            sim.req.next_psn()
        );
        assert_eq!(sim.resp.expected_psn(), sim.req.next_psn());
    }
}

#[test]
fn retry_exhaustion_fails_with_transport_retry_exceeded() {
    let mut sim = Sim::new(3, Psn::new(5), |c| c.retry_count = 3, |_| {}).lossy(100, 0, 0);
    sim.post_recvs(4);
    let a = sim.post(RequestOp::Send, 600, 0, RKEY);
    let b = sim.post(RequestOp::Write, 10, 0, RKEY);
    sim.run();
    // Three retries, then the fourth timeout finds none left.
    assert_eq!(sim.req.stats().timeouts, 4);
    assert_eq!(sim.req.retries_left(), 0);
    assert_eq!(
        sim.completions
            .iter()
            .map(|c| (c.wqe_index, c.status))
            .collect::<Vec<_>>(),
        [
            (a, WcStatus::TransportRetryExcErr),
            (b, WcStatus::WrFlushErr)
        ]
    );
    assert_eq!(sim.req_error, Some(WcStatus::TransportRetryExcErr));
    // Four timeouts of 4.096 µs × 2^8 each (first send, three retries).
    assert_eq!(sim.now, 4 * (4_096 << 8));
    // 4 packets (3 SEND + 1 WRITE) sent four times.
    assert_eq!(sim.to_resp.sent, 0);
    assert_eq!(sim.req.stats().retransmitted, 3 * 4);
}

#[test]
fn retry_count_seven_is_finite() {
    let mut sim = Sim::new(3, Psn::new(5), |c| c.retry_count = 7, |_| {}).lossy(100, 0, 0);
    sim.post(RequestOp::Write, 10, 0, RKEY);
    sim.run();
    assert_eq!(sim.req.stats().timeouts, 8);
    assert_eq!(sim.req_error, Some(WcStatus::TransportRetryExcErr));
}

#[test]
fn rnr_until_a_receive_is_posted() {
    let mut sim =
        Sim::new(4, Psn::new(9), |c| c.rnr_retry = 7, |c| c.min_rnr_timer = 2).lossy(0, 0, 0);
    sim.recv_schedule.push(100_000);
    let a = sim.post(RequestOp::Send, 300, 0, RKEY);
    sim.run();
    assert_eq!(sim.completions.len(), 1);
    assert_eq!(
        (sim.completions[0].wqe_index, sim.completions[0].status),
        (a, WcStatus::Success)
    );
    let naks = sim.req.stats().rnr_naks;
    // 20 µs RNR timer + 4 µs round trip: the receive at 100 µs is found after ~4 NAKs.
    assert!((3..=6).contains(&naks), "{naks} RNR NAKs");
    assert_eq!(sim.resp.stats().rnr_naks, naks);
    assert_eq!(sim.received.len(), 1);
    assert_eq!(sim.received[0].0, sim.wqes[&a].local);
    assert_eq!(sim.req.stats().timeouts, 0);
}

#[test]
fn rnr_retry_exhaustion() {
    let mut sim = Sim::new(4, Psn::new(9), |c| c.rnr_retry = 2, |_| {});
    let a = sim.post(RequestOp::SendImm, 10, 0, RKEY);
    let b = sim.post(RequestOp::Write, 10, 0, RKEY);
    sim.run();
    assert_eq!(sim.req.stats().rnr_naks, 3);
    assert_eq!(
        sim.completions
            .iter()
            .map(|c| (c.wqe_index, c.status))
            .collect::<Vec<_>>(),
        [(a, WcStatus::RnrRetryExcErr), (b, WcStatus::WrFlushErr)]
    );
    assert_eq!(sim.req_error, Some(WcStatus::RnrRetryExcErr));
}

#[test]
fn remote_access_error_ends_both_sides_in_error() {
    let mut sim = Sim::new(5, Psn::new(0xff_fffe), |_| {}, |_| {});
    sim.post_recvs(4);
    let a = sim.post(RequestOp::Send, 100, 0, RKEY);
    let b = sim.post(RequestOp::Write, 700, 0x100, RKEY + 1);
    let c = sim.post(RequestOp::Read, 10, 0, RKEY);
    let d = sim.post(RequestOp::Send, 10, 0, RKEY);
    sim.run();
    assert_eq!(
        sim.completions
            .iter()
            .map(|c| (c.wqe_index, c.status))
            .collect::<Vec<_>>(),
        [
            (a, WcStatus::Success),
            (b, WcStatus::RemoteAccessErr),
            (c, WcStatus::WrFlushErr),
            (d, WcStatus::WrFlushErr)
        ]
    );
    assert_eq!(sim.req_error, Some(WcStatus::RemoteAccessErr));
    assert_eq!(sim.resp_error, Some(NakCode::RemoteAccessError));
    assert!(sim.resp.is_error() && sim.req.is_error());
    assert!(sim.resp_recv_errors.is_empty());
    assert_eq!(sim.received.len(), 1);
}

#[test]
fn remote_access_error_on_read_and_atomic() {
    for op in [RequestOp::Read, RequestOp::FetchAdd] {
        let mut sim = Sim::new(5, Psn::new(1), |_| {}, |_| {});
        let a = sim.post(op, 8, 0x10_0000, RKEY);
        sim.run();
        assert_eq!(sim.completions[0].wqe_index, a);
        assert_eq!(sim.completions[0].status, WcStatus::RemoteAccessErr);
        assert_eq!(sim.resp_error, Some(NakCode::RemoteAccessError));
        assert_eq!(sim.atomic_execs, 0);
    }
}

#[test]
fn duplicate_read_and_atomic_answered_from_resources() {
    let mut sim = Sim::new(6, Psn::new(0x77), |_| {}, |_| {});
    // Lose the first atomic ACK and the first response of the READ: the requester times out
    // and asks again; the responder answers from its resources.
    let mut lost_atomic = false;
    let mut lost_read = false;
    sim.filter = Some(Box::new(move |to_resp, p| {
        if to_resp {
            return false;
        }
        match p.hdr.bth.opcode {
            Opcode::RcAtomicAcknowledge if !lost_atomic => {
                lost_atomic = true;
                true
            }
            Opcode::RcRdmaReadResponseFirst if !lost_read => {
                lost_read = true;
                true
            }
            _ => false,
        }
    }));
    let initial = sim.remote.clone();
    let f = sim.post(RequestOp::FetchAdd, 8, COUNTER_VA, RKEY);
    let r = sim.post(RequestOp::Read, 1000, 0x9000, RKEY);
    let f2 = sim.post(RequestOp::FetchAdd, 8, COUNTER_VA, RKEY);
    sim.run();
    assert!(
        sim.completions
            .iter()
            .all(|c| c.status == WcStatus::Success),
        "{:?}",
        sim.completions
    );
    assert_eq!(
        sim.completions
            .iter()
            .map(|c| c.wqe_index)
            .collect::<Vec<_>>(),
        [f, r, f2]
    );
    assert_eq!(sim.atomic_execs, 2, "no atomic executed twice");
    let rs = sim.resp.stats();
    assert_eq!((rs.atomics, rs.reads), (2, 1));
    assert!(rs.atomic_replays >= 1, "{rs:?}");
    assert!(rs.read_replays >= 1, "{rs:?}");
    let base = u64::from_le_bytes(initial[COUNTER_VA as usize..][..8].try_into().unwrap());
    assert_eq!(sim.wqes[&f].orig, Some(base));
    assert_eq!(sim.wqes[&f2].orig, Some(base + sim.wqes[&f].swap_add));
    assert_eq!(sim.wqes[&r].local, initial[0x9000..0x9000 + 1000]);
}

#[test]
fn read_and_atomic_limit_is_respected() {
    let mut sim =
        Sim::new(8, Psn::new(3), |c| c.log_sra_max = 1, |c| c.log_rra_max = 1).lossy(10, 5, 3_000);
    let initial = sim.remote.clone();
    let mut posted = Vec::new();
    for i in 0..20u64 {
        let op = if i % 3 == 0 {
            RequestOp::FetchAdd
        } else {
            RequestOp::Read
        };
        let va = if op == RequestOp::Read {
            0x8000 + i * 100
        } else {
            COUNTER_VA
        };
        let len = if op == RequestOp::Read { 600 } else { 8 };
        posted.push((sim.post(op, len, va, RKEY), op, len, va));
    }
    sim.run();
    check_mixed(&sim, &posted, &initial);
}
