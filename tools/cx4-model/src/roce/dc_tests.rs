//! DC between two modelled cards, set up by the commands mlx5_ib sends (`create_dci`, the
//! DCT's CREATE_DCT at INIT→RTR, DRAIN_DCT + DESTROY_DCT at destroy) and driven with the send
//! WQEs libmlx5 builds (`mlx5_send_wr_set_dc_addr`: ctrl, address vector with the DCT number
//! and access key, RC segments): card A's DCI sends, card B's DCTs receive into their SRQ.

use std::sync::Arc;

use cx4_hw::{
    command::{self as cmds, Command},
    cq::cqe::{opcode as cqe_op, syndrome},
    dct::{dctc_state, CreateDctOut, QueryDctOut},
    eq::event_type,
    pd::AllocPdOut,
    qp::{mtu, qpc_st, rq_type, CreateQpIn, CreateQpOut},
    srq::{rmpc_state, CreateRmpIn, CreateRmpOut},
    status,
    wqe::{
        self, opcode as wop,
        rdma::{Av, EXTENDED_UD_AV},
    },
};

use super::fixture::{self, exec, input, ok, view};
use crate::{device::Device, wire::Loopback};

use super::headers::{Dceth, Opcode};
use super::packet;

const BASE: u64 = 0x10_0000;
const MEM: u64 = 0x40_0000;
const DBRS: u64 = BASE + 0x3000;
const QP_DBR: u64 = DBRS + 0x200;
const SRQ_DBR: u64 = DBRS + 0x300;
const QP_BUF: u64 = BASE + 0x4000;
const SRQ_BUF: u64 = BASE + 0x8000;
const DATA: u64 = BASE + 0x10000;
const DATA_LEN: u64 = 0x20000;
const VA: u64 = 0x7000_0000;
const UAR: u32 = 8;
const SCQ: u32 = 0x10;
const RCQ: u32 = 0x11;
const UIDX_DCT: u32 = 0x42;
const KEY: u64 = 0x1234_5678_9abc_def0;
/// The async EQ that takes `DCT_DRAINED` (mlx5_core subscribes it when the dct cap is set).
const AEQ: u8 = 6;
const AEQ_RING: u64 = BASE + 0x1000;

fn cq_ring(cqn: u32) -> u64 {
    BASE + 0x20000 + u64::from(cqn - SCQ) * 0x1000
}

fn cq_dbr(cqn: u32) -> u64 {
    DBRS + u64::from(cqn - SCQ) * 0x40
}

struct Card {
    d: Device,
    port: Arc<Loopback>,
    mac: [u8; 6],
    gid: [u8; 16],
    pd: u32,
    lkey: u32,
    srqn: u32,
    srq_pc: u16,
    qpn: u32,
    sq_pc: u16,
    ci: [u32; 2],
    eq_ci: u32,
}

impl Card {
    fn new(n: u8) -> Card {
        let mut d = fixture::device("--socket /x --init-delay-ms 0 --eth --roce", BASE, MEM, UAR);
        for cqn in [SCQ, RCQ] {
            let ring = cq_ring(cqn);
            d.fw.cqs
                .insert(cqn, fixture::cq(cqn, ring, cq_dbr(cqn), UAR));
            for k in 0..64u64 {
                d.bus.mem.write(ring + k * 64 + 63, &[0xf1]).unwrap();
            }
        }
        let mask = 1 << event_type::DCT_DRAINED | 1 << event_type::DCT_KEY_VIOLATION;
        d.fw.eqs
            .insert(AEQ, fixture::eq(AEQ, AEQ_RING, [mask, 0, 0, 0], UAR, 0));
        for k in 0..64u64 {
            d.bus.mem.write(AEQ_RING + k * 64 + 63, &[1]).unwrap();
        }
        let port = Arc::new(Loopback::default());
        d.attach(port.clone());
        let mac = [0x02, 0xdc, 0, 0, 0x10, n];
        let gid = fixture::v4_gid([10, 0, 2, n]);
        fixture::set_gid0_v2_ipv4(&mut d, &gid, mac);
        let pd = view::<AllocPdOut>(&ok::<cmds::AllocPd>(&mut d, |_| {})).pd();
        let lkey = fixture::mtt_mr(&mut d, pd, (VA, DATA, DATA_LEN), 12, true);
        // An RMP as mlx5_ib's create_rmp_cmd builds a basic SRQ: 2^6 WQEs of 64 bytes.
        let mut v = input::<cmds::CreateRmp>(|i| {
            let c = i.ctx_mut();
            c.set_state(rmpc_state::RDY.into());
            let w = c.wq_mut();
            w.set_pd(pd);
            w.set_dbr_addr(SRQ_DBR);
            w.set_log_wq_stride(6);
            w.set_log_wq_sz(6);
        });
        v.resize(CreateRmpIn::SIZE + 8, 0);
        CreateRmpIn::set_wq_pas(&mut v, 0, SRQ_BUF).unwrap();
        let srqn = view::<CreateRmpOut>(&exec(&mut d, &v, CreateRmpOut::SIZE)).rmpn();
        for k in 0..64u64 {
            let next = ((k + 1) % 64) as u16;
            d.bus
                .mem
                .write(SRQ_BUF + k * 64 + 2, &next.to_be_bytes())
                .unwrap();
        }
        Card {
            d,
            port,
            mac,
            gid,
            pd,
            lkey,
            srqn,
            srq_pc: 0,
            qpn: 0,
            sq_pc: 0,
            ci: [0; 2],
            eq_ci: 0,
        }
    }

    /// A DCI as mlx5_ib's `create_dci` builds it (no receive queue: the SRQ stands in), then
    /// RST → INIT → RTR → RTS with the masks of `modify_dci_qp_is_ok`.
    fn dci(&mut self, ack_timeout: u8) {
        let (pd, srqn) = (self.pd, self.srqn);
        let mut v = input::<cmds::CreateQp>(|i| {
            let c = i.qpc_mut();
            c.set_st(qpc_st::DCI.into());
            c.set_pd(pd);
            c.set_uar_page(UAR);
            c.set_cqn_snd(SCQ);
            c.set_cqn_rcv(RCQ);
            c.set_rq_type(rq_type::SRQ_RQ.into());
            c.set_srqn_rmpn_xrqn(srqn);
            c.set_log_sq_size(6);
            c.set_dbr_addr(QP_DBR);
        });
        v.resize(CreateQpIn::SIZE + 8, 0);
        CreateQpIn::set_pas(&mut v, 0, QP_BUF).unwrap();
        let qpn = view::<CreateQpOut>(&exec(&mut self.d, &v, CreateQpOut::SIZE)).qpn();
        self.qpn = qpn;
        ok::<cmds::Rst2InitQp>(&mut self.d, |i| {
            i.set_qpn(qpn);
            i.qpc_mut().primary_address_path_mut().set_vhca_port_num(1);
        });
        ok::<cmds::Init2RtrQp>(&mut self.d, |i| {
            i.set_qpn(qpn);
            i.qpc_mut().set_mtu(mtu::MTU_1K.into());
        });
        ok::<cmds::Rtr2RtsQp>(&mut self.d, |i| {
            i.set_qpn(qpn);
            let c = i.qpc_mut();
            c.set_next_send_psn(0x500);
            c.set_retry_count(2);
            c.set_rnr_retry(7);
            c.set_log_sra_max(2);
            c.primary_address_path_mut()
                .set_ack_timeout(ack_timeout.into());
        });
    }

    fn dct_in(&self, f: impl FnOnce(&mut cx4_hw::dct::Dctc)) -> Vec<u8> {
        let (pd, srqn) = (self.pd, self.srqn);
        input::<cmds::CreateDct>(|i| {
            let c = i.dct_context_entry_mut();
            c.set_pd(pd);
            c.set_srqn_xrqn(srqn);
            c.set_cqn(RCQ);
            c.set_dc_access_key(KEY);
            c.set_user_index(UIDX_DCT);
            c.set_rre(1);
            c.set_rwe(1);
            c.set_rae(1);
            c.set_port(1);
            c.set_mtu(mtu::MTU_1K.into());
            c.set_min_rnr_nak(1);
            c.set_hop_limit(64);
            f(c);
        })
    }

    /// A DCT as mlx5_ib's `mlx5_ib_modify_dct` creates it at INIT→RTR.
    fn dct(&mut self) -> u32 {
        let v = self.dct_in(|_| {});
        view::<CreateDctOut>(&exec(&mut self.d, &v, CreateDctOut::SIZE)).dctn()
    }

    /// A command's status (it may fail).
    fn status<C: Command>(&mut self, f: impl FnOnce(&mut C::In)) -> u8 {
        let v = input::<C>(f);
        let out = self
            .d
            .hca
            .fw
            .execute(&mut self.d.bus, &v, <C::Out as cx4_hw::bits::Layout>::SIZE)
            .unwrap();
        self.d.roce_sync();
        out[0]
    }

    fn query(&mut self, dctn: u32) -> cx4_hw::dct::Dctc {
        let out = ok::<cmds::QueryDct>(&mut self.d, |i| i.set_dctn(dctn));
        *view::<QueryDctOut>(&out).dct_context_entry()
    }

    fn post_srq(&mut self, va: u64, len: u32) {
        let at = SRQ_BUF + u64::from(self.srq_pc % 64) * 64;
        self.d
            .bus
            .mem
            .write(at + 16, &data(len, self.lkey, va))
            .unwrap();
        self.srq_pc = self.srq_pc.wrapping_add(1);
        self.d
            .bus
            .mem
            .write(SRQ_DBR, &u32::from(self.srq_pc).to_be_bytes())
            .unwrap();
    }

    /// Posts a DCI send WQE to DCT `dctn` at `to` with access key `key`, as libmlx5's
    /// `mlx5_send_wr_set_dc_addr` lays it out; rings the doorbell.
    fn post_dc(&mut self, op: u8, (dctn, key): (u32, u64), to: &Card, segs: &[[u8; 16]]) -> u16 {
        let idx = self.sq_pc;
        let mut a = Av::new();
        a.set_dc_key(key);
        a.set_dqp_dct(dctn | EXTENDED_UD_AV);
        a.set_udp_sport(0xc321);
        a.rmac_mut().copy_from_slice(&to.mac);
        a.set_hop_limit(64);
        a.set_grh_gid_fl(1 << 30);
        a.rgid_mut().copy_from_slice(&to.gid);
        let ds = 1 + 3 + segs.len() as u8;
        let mut w = Vec::new();
        w.extend(wqe::opmod_idx_opcode(0, idx, op).to_be_bytes());
        w.extend(wqe::qpn_ds(self.qpn, ds).to_be_bytes());
        w.extend([0, 0, 0, 0x08]);
        w.extend(0u32.to_be_bytes());
        w.extend(&a.0[..]);
        for s in segs {
            w.extend(s);
        }
        self.sq_pc = fixture::ring_sq(&mut self.d, (QP_BUF, QP_DBR, UAR), idx, &w);
        idx
    }

    fn write(&self, va: u64, b: &[u8]) {
        self.d.bus.mem.write(DATA + (va - VA), b).unwrap();
    }

    fn read(&self, va: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        self.d.bus.mem.read(DATA + (va - VA), &mut b).unwrap();
        b
    }

    fn cqe(&mut self, cqn: u32) -> Option<[u8; 64]> {
        let ci = &mut self.ci[(cqn - SCQ) as usize];
        let mut c = [0u8; 64];
        self.d
            .bus
            .mem
            .read(cq_ring(cqn) + u64::from(*ci % 64) * 64, &mut c)
            .unwrap();
        if c[63] >> 4 == cqe_op::INVALID || c[63] & 1 != ((*ci >> 6) & 1) as u8 {
            return None;
        }
        *ci += 1;
        self.d
            .bus
            .mem
            .write(cq_dbr(cqn), &(*ci & 0xff_ffff).to_be_bytes())
            .unwrap();
        Some(c)
    }

    /// The next event on the async EQ: (type, number in `data + 24`).
    fn event(&mut self) -> Option<(u8, u32)> {
        let mut e = [0u8; 64];
        let at = AEQ_RING + u64::from(self.eq_ci % 64) * 64;
        self.d.bus.mem.read(at, &mut e).unwrap();
        if e[63] & 1 != ((self.eq_ci >> 6) & 1) as u8 {
            return None;
        }
        self.eq_ci += 1;
        Some((e[1], be32(&e, 0x38) & 0xff_ffff))
    }
}

fn data(len: u32, lkey: u32, addr: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&len.to_be_bytes());
    b[4..8].copy_from_slice(&lkey.to_be_bytes());
    b[8..16].copy_from_slice(&addr.to_be_bytes());
    b
}

fn raddr(va: u64, rkey: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..8].copy_from_slice(&va.to_be_bytes());
    b[8..12].copy_from_slice(&rkey.to_be_bytes());
    b
}

fn be32(c: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([c[at], c[at + 1], c[at + 2], c[at + 3]])
}

/// Moves frames between the cards until quiet; `tap` sees each (from A: true) and drops it
/// when it returns true.
fn shuttle(a: &mut Card, b: &mut Card, tap: &mut dyn FnMut(bool, &[u8]) -> bool) {
    for _ in 0..10_000 {
        let (fa, fb) = (a.port.take(), b.port.take());
        if fa.is_empty() && fb.is_empty() {
            return;
        }
        for f in fa {
            if !tap(true, &f) {
                b.d.receive(&f);
            }
        }
        for f in fb {
            if !tap(false, &f) {
                a.d.receive(&f);
            }
        }
    }
    panic!("the segment never went quiet");
}

#[test]
fn dct_commands_follow_the_prm() {
    let mut b = Card::new(2);
    // Resources that do not exist.
    for f in [
        |c: &mut cx4_hw::dct::Dctc| c.set_pd(0x777),
        |c: &mut cx4_hw::dct::Dctc| c.set_cqn(0x777),
        |c: &mut cx4_hw::dct::Dctc| c.set_srqn_xrqn(0x777),
    ] {
        let v = b.dct_in(f);
        let out =
            b.d.hca
                .fw
                .execute(&mut b.d.bus, &v, CreateDctOut::SIZE)
                .unwrap();
        assert_eq!(out[0], status::BAD_RES);
    }
    let v = b.dct_in(|c| c.set_port(2));
    let out =
        b.d.hca
            .fw
            .execute(&mut b.d.bus, &v, CreateDctOut::SIZE)
            .unwrap();
    assert_eq!(out[0], status::BAD_PARAM, "one port");
    let dctn = b.dct();
    let c = b.query(dctn);
    assert_eq!(c.state() as u8, dctc_state::ACTIVE);
    assert_eq!((c.dc_access_key(), c.user_index()), (KEY, UIDX_DCT));
    // The SRQ and CQ are in use.
    let srqn = b.srqn;
    assert_eq!(
        b.status::<cmds::DestroyRmp>(|i| i.set_rmpn(srqn)),
        status::BAD_RES_STATE
    );
    assert_eq!(
        b.status::<cmds::DestroyCq>(|i| i.set_cqn(RCQ)),
        status::BAD_RES_STATE
    );
    // Drain: the event names the DCT; a second drain is refused.
    assert_eq!(b.event(), None);
    ok::<cmds::DrainDct>(&mut b.d, |i| i.set_dctn(dctn));
    assert_eq!(b.event(), Some((event_type::DCT_DRAINED, dctn)));
    assert_eq!(b.query(dctn).state() as u8, dctc_state::DRAINED);
    assert_eq!(
        b.status::<cmds::DrainDct>(|i| i.set_dctn(dctn)),
        status::BAD_RES_STATE
    );
    ok::<cmds::DestroyDct>(&mut b.d, |i| i.set_dctn(dctn));
    for st in [
        b.status::<cmds::DestroyDct>(|i| i.set_dctn(dctn)),
        b.status::<cmds::QueryDct>(|i| i.set_dctn(dctn)),
        b.status::<cmds::DrainDct>(|i| i.set_dctn(dctn)),
        b.status::<cmds::ArmDctForKeyViolation>(|i| i.set_dct_number(dctn)),
    ] {
        assert_eq!(st, status::BAD_RES, "DCT {dctn:#x} is gone");
    }
    // Destroyed without a drain (mlx5_core_create_dct's error path): no event.
    let dctn = b.dct();
    ok::<cmds::DestroyDct>(&mut b.d, |i| i.set_dctn(dctn));
    assert_eq!(b.event(), None);
    ok::<cmds::DestroyRmp>(&mut b.d, |i| i.set_rmpn(srqn));
    // Without the dct capability there are no DCTs and no DCIs.
    b.d.hca.fw.caps.set_general("dct", 0);
    assert_eq!(
        b.status::<cmds::QueryDct>(|i| i.set_dctn(dctn)),
        status::BAD_OP
    );
    let st = b.status::<cmds::CreateQp>(|i| i.qpc_mut().set_st(qpc_st::DCI.into()));
    assert_eq!(st, status::BAD_PARAM);
}

#[test]
fn dci_sends_writes_and_reads_through_a_dct() {
    let (mut a, mut b) = (Card::new(1), Card::new(2));
    a.dci(14);
    let dctn = b.dct();
    let msg: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    a.write(VA, &msg);
    b.post_srq(VA + 0x8000, 4096);
    let mut seen = Vec::new();
    a.post_dc(wop::SEND, (dctn, KEY), &b, &[data(3000, a.lkey, VA)]);
    shuttle(&mut a, &mut b, &mut |from_a, f| {
        let p = packet::parse(f).unwrap();
        seen.push((from_a, p.bth.opcode, p.bth.dest_qp, p.ext.dc));
        false
    });
    let dceth = Some(Dceth {
        key: KEY,
        dci: a.qpn,
        conn_psn: 0x500,
    });
    assert_eq!(
        seen,
        vec![
            (true, Opcode::DcSendFirst, dctn, dceth),
            (true, Opcode::DcSendMiddle, dctn, dceth),
            (true, Opcode::DcSendLast, dctn, dceth),
            (false, Opcode::DcAcknowledge, a.qpn, None),
        ],
        "our DC encoding: DC opcodes, a DCETH on requests, responses to the DCI"
    );
    assert_eq!(b.read(VA + 0x8000, 3000), msg);
    let r = b.cqe(RCQ).expect("the DCT's receive completion");
    assert_eq!(r[63] >> 4, cqe_op::RESP_SEND);
    assert_eq!(be32(&r, 0x2c), 3000, "byte count");
    assert_eq!(
        be32(&r, 0x20) & 0xff_ffff,
        UIDX_DCT,
        "srqn_uidx: the DCT's user index"
    );
    assert_eq!(be32(&r, 0x38) & 0xff_ffff, dctn, "the DCT's number");
    let s = a.cqe(SCQ).expect("the DCI's completion");
    assert_eq!(
        (s[63] >> 4, be32(&s, 0x38) & 0xff_ffff),
        (cqe_op::REQ, a.qpn)
    );
    // RDMA WRITE then READ on the same connection.
    a.write(VA + 0x100, b"dc write payload");
    a.post_dc(
        wop::RDMA_WRITE,
        (dctn, KEY),
        &b,
        &[raddr(VA + 0x9000, b.lkey), data(16, a.lkey, VA + 0x100)],
    );
    b.write(VA + 0xa000, b"dc read payload!");
    a.post_dc(
        wop::RDMA_READ,
        (dctn, KEY),
        &b,
        &[raddr(VA + 0xa000, b.lkey), data(16, a.lkey, VA + 0x200)],
    );
    shuttle(&mut a, &mut b, &mut |_, _| false);
    assert_eq!(b.read(VA + 0x9000, 16), b"dc write payload");
    assert_eq!(a.read(VA + 0x200, 16), b"dc read payload!");
    for _ in 0..2 {
        assert_eq!(a.cqe(SCQ).unwrap()[63] >> 4, cqe_op::REQ);
    }
    assert!(
        b.cqe(RCQ).is_none(),
        "WRITE and READ consume no receive WQE"
    );
    assert_eq!(a.d.roce.state.stats.dc_connects, 1);
}

#[test]
fn a_dci_reconnects_to_another_dct_once_its_wqes_are_done() {
    let (mut a, mut b) = (Card::new(1), Card::new(2));
    a.dci(14);
    let (d1, d2) = (b.dct(), b.dct());
    b.post_srq(VA + 0x8000, 64);
    b.post_srq(VA + 0x9000, 64);
    a.write(VA, b"first second");
    a.post_dc(wop::SEND, (d1, KEY), &b, &[data(5, a.lkey, VA)]);
    a.post_dc(wop::SEND, (d2, KEY), &b, &[data(6, a.lkey, VA + 6)]);
    let mut firsts = Vec::new();
    shuttle(&mut a, &mut b, &mut |from_a, f| {
        let p = packet::parse(f).unwrap();
        if from_a {
            firsts.push((p.bth.dest_qp, p.ext.dc.unwrap().conn_psn, p.bth.psn));
        }
        false
    });
    assert_eq!(firsts, vec![(d1, 0x500, 0x500), (d2, 0x501, 0x501)]);
    let qpns: Vec<u32> = (0..2)
        .map(|_| be32(&b.cqe(RCQ).unwrap(), 0x38) & 0xff_ffff)
        .collect();
    assert_eq!(qpns, vec![d1, d2], "each DCT completes its own");
    assert_eq!(b.read(VA + 0x8000, 5), b"first");
    assert_eq!(b.read(VA + 0x9000, 6), b"second");
    assert_eq!(a.d.roce.state.stats.dc_connects, 2);
}

#[test]
fn a_wrong_access_key_is_dropped_counted_and_reported_once_armed() {
    let (mut a, mut b) = (Card::new(1), Card::new(2));
    // ack_timeout 18: ~1 s, so only the test's clock fires it.
    a.dci(18);
    let dctn = b.dct();
    b.post_srq(VA + 0x8000, 64);
    ok::<cmds::ArmDctForKeyViolation>(&mut b.d, |i| i.set_dct_number(dctn));
    // The timer thread sleeps with nothing due; the doorbell's ACK timer wakes it (nothing
    // will come back from the segment to do so).
    let wake = Arc::new(crate::wake::Wake::new().unwrap());
    a.d.set_timer_wake(wake.clone());
    assert_eq!(a.d.wire_deadline(), None);
    let woken = |w: &crate::wake::Wake| {
        crate::wake::poll_two(-1, w, Some(std::time::Duration::ZERO)).unwrap()[1]
    };
    assert!(!woken(&wake));
    let idx = a.post_dc(wop::SEND, (dctn, KEY ^ 1), &b, &[data(8, a.lkey, VA)]);
    assert!(
        woken(&wake),
        "the ACK timer the doorbell armed wakes the timer thread"
    );
    wake.clear();
    let due = a.d.wire_deadline().expect("the ACK timer");
    assert!(
        due > std::time::Duration::from_millis(500),
        "{due:?}: 4.096 us << 18"
    );
    shuttle(&mut a, &mut b, &mut |_, _| false);
    assert_eq!(b.event(), Some((event_type::DCT_KEY_VIOLATION, dctn)));
    assert!(
        b.cqe(RCQ).is_none() && a.cqe(SCQ).is_none(),
        "dropped, unanswered"
    );
    // The DCI retries (retry_count 2) and gives up.
    for k in 1..=3u64 {
        a.d.roce_tick_at(super::engine::now_ns() + k * 5_000_000_000);
        shuttle(&mut a, &mut b, &mut |_, _| false);
    }
    let e = a.cqe(SCQ).expect("the DCI's error completion");
    assert_eq!(e[63] >> 4, cqe_op::REQ_ERR);
    assert_eq!(e[0x37], syndrome::TRANSPORT_RETRY_EXC_ERR);
    assert_eq!(u16::from_be_bytes([e[0x3c], e[0x3d]]), idx);
    let c = b.query(dctn);
    assert_eq!(
        c.dc_access_key_violation_count(),
        3,
        "the request and its 2 resends (retry_count 2)"
    );
    assert_eq!(b.event(), None, "the event fires once per arming");
    assert!(b.cqe(RCQ).is_none());
    assert_eq!(b.d.roce.state.stats.dc_key_violations, 3);
    assert_eq!(c.state() as u8, dctc_state::ACTIVE, "the DCT serves on");
}

#[test]
fn a_drained_dct_takes_nothing() {
    let (mut a, mut b) = (Card::new(1), Card::new(2));
    a.dci(18);
    let dctn = b.dct();
    b.post_srq(VA + 0x8000, 64);
    ok::<cmds::DrainDct>(&mut b.d, |i| i.set_dctn(dctn));
    a.post_dc(wop::SEND, (dctn, KEY), &b, &[data(8, a.lkey, VA)]);
    shuttle(&mut a, &mut b, &mut |_, _| false);
    assert!(b.cqe(RCQ).is_none() && a.cqe(SCQ).is_none());
    assert!(b.d.roce.state.dc_conns.is_empty());
}
