//! XRC between two modelled cards, set up by the commands mlx5_ib sends (its internal XRC
//! domains, SRQ and CQ behind every XRC QP, `create_xrc_tgt_qp` for the target) and driven
//! as ibv_xsrq_pingpong does: one initiator QP on card A, one target QP on card B, several
//! XRC SRQs on B, each with its own CQ. Send WQEs carry libmlx5's XRC segment.

use std::sync::Arc;

use cx4_hw::{
    command::{self as cmds},
    cq::cqe::{opcode as cqe_op, syndrome},
    pd::AllocPdOut,
    qp::{mtu, qpc_st, qpc_state, rq_type, CreateQpIn, CreateQpOut, QueryQpOut},
    roce::AllocXrcdOut,
    srq::{CreateXrcSrqIn, CreateXrcSrqOut},
    wqe::{self, opcode as wop},
};

use super::fixture::{self, exec, input, ok, view};
use crate::{device::Device, wire::Loopback};

use super::headers::{Aeth, Opcode, Service, Syndrome, Xrceth};
use super::packet;

const BASE: u64 = 0x10_0000;
const MEM: u64 = 0x40_0000;
const DBRS: u64 = BASE + 0x3000;
const QP_DBR: u64 = DBRS + 0x200;
const QP_BUF: u64 = BASE + 0x4000;
const DATA: u64 = BASE + 0x10000;
const DATA_LEN: u64 = 0x20000;
const VA: u64 = 0x7000_0000;
const UAR: u32 = 8;
/// The initiator's send CQ.
const SCQ: u32 = 0x10;
/// mlx5_ib's internal CQ (`devr->c0`), which XRC QPs name and never complete to.
const C0: u32 = 0x11;
/// The XRC SRQs' CQs.
const C1: u32 = 0x12;
const C2: u32 = 0x13;
const C3: u32 = 0x14;
const UIDX_INI: u32 = 0x21;
const UIDX_TGT: u32 = 0x22;
const UIDX_S1: u32 = 0x31;
/// mlx5_ib's "cqe_version 0" user index.
const NO_UIDX: u32 = 0xff_ffff;

fn cq_ring(cqn: u32) -> u64 {
    BASE + 0x20000 + u64::from(cqn - SCQ) * 0x1000
}

fn cq_dbr(cqn: u32) -> u64 {
    DBRS + u64::from(cqn - SCQ) * 0x40
}

/// One XRC SRQ: its ring, doorbell record and the WQEs posted.
#[derive(Clone, Copy)]
struct Xsrq {
    srqn: u32,
    buf: u64,
    dbr: u64,
    pc: u16,
}

/// One card with mlx5_ib's XRC resources.
struct Card {
    d: Device,
    port: Arc<Loopback>,
    mac: [u8; 6],
    gid: [u8; 16],
    /// The user PD and its MR over DATA.
    pd: u32,
    lkey: u32,
    /// mlx5_ib's internal PD (`devr->p0`), XRC SRQ (`devr->s0`) and XRC domain of
    /// initiators (`devr->xrcdn1`).
    p0: u32,
    s0: u32,
    x1: u32,
    qpn: u32,
    sq_pc: u16,
    ci: [u32; 5],
    srqs: u32,
}

impl Card {
    fn new(n: u8) -> Card {
        let args = "--socket /x --init-delay-ms 0 --eth --roce";
        let mut d = fixture::device(args, BASE, MEM, UAR);
        for cqn in [SCQ, C0, C1, C2, C3] {
            let ring = cq_ring(cqn);
            d.fw.cqs
                .insert(cqn, fixture::cq(cqn, ring, cq_dbr(cqn), UAR));
            for k in 0..64u64 {
                d.bus.mem.write(ring + k * 64 + 63, &[0xf1]).unwrap();
            }
        }
        let port = Arc::new(Loopback::default());
        d.attach(port.clone());
        let mac = [0x02, 0xc4, 0, 0, 0x10, n];
        let gid = fixture::v4_gid([10, 0, 1, n]);
        fixture::set_gid0_v2_ipv4(&mut d, &gid, mac);
        let p0 = view::<AllocPdOut>(&ok::<cmds::AllocPd>(&mut d, |_| {})).pd();
        let pd = view::<AllocPdOut>(&ok::<cmds::AllocPd>(&mut d, |_| {})).pd();
        let lkey = fixture::mtt_mr(&mut d, pd, (VA, DATA, DATA_LEN), 12, true);
        let mut c = Card {
            d,
            port,
            mac,
            gid,
            pd,
            lkey,
            p0,
            s0: 0,
            x1: 0,
            qpn: 0,
            sq_pc: 0,
            ci: [0; 5],
            srqs: 0,
        };
        // mlx5_ib_dev_res_init: two XRC domains, s0 an XRC SRQ of the first on c0.
        let x0 = c.xrcd();
        c.x1 = c.xrcd();
        c.s0 = c.xsrq_in(x0, C0, NO_UIDX, p0).srqn;
        c
    }

    fn xrcd(&mut self) -> u32 {
        view::<AllocXrcdOut>(&ok::<cmds::AllocXrcd>(&mut self.d, |_| {})).xrcd()
    }

    /// An XRC SRQ of 64 WQEs of 64 bytes in the user PD, as libmlx5's `mlx5_create_xsrq`.
    fn xsrq(&mut self, xrcd: u32, cqn: u32, uidx: u32) -> Xsrq {
        let pd = self.pd;
        self.xsrq_in(xrcd, cqn, uidx, pd)
    }

    fn xsrq_in(&mut self, xrcd: u32, cqn: u32, uidx: u32, pd: u32) -> Xsrq {
        let k = u64::from(self.srqs);
        self.srqs += 1;
        let (buf, dbr) = (BASE + 0x8000 + k * 0x1000, DBRS + 0x300 + k * 0x40);
        let mut v = input::<cmds::CreateXrcSrq>(|i| {
            let c = i.xrc_srq_context_entry_mut();
            c.set_log_xrc_srq_size(6);
            c.set_log_rq_stride(2);
            c.set_xrcd(xrcd);
            c.set_cqn(cqn);
            c.set_user_index(uidx);
            c.set_pd(pd);
            c.set_db_record_addr_h((dbr >> 32) as u32);
            c.set_db_record_addr_l((dbr as u32) >> 2);
        });
        v.resize(CreateXrcSrqIn::SIZE + 8, 0);
        CreateXrcSrqIn::set_pas(&mut v, 0, buf).unwrap();
        let srqn =
            view::<CreateXrcSrqOut>(&exec(&mut self.d, &v, CreateXrcSrqOut::SIZE)).xrc_srqn();
        for w in 0..64u64 {
            let next = ((w + 1) % 64) as u16;
            self.d
                .bus
                .mem
                .write(buf + w * 64 + 2, &next.to_be_bytes())
                .unwrap();
        }
        Xsrq {
            srqn,
            buf,
            dbr,
            pc: 0,
        }
    }

    /// Posts a receive WQE on an XRC SRQ; returns its index.
    fn post_srq(&mut self, s: &mut Xsrq, va: u64, len: u32) -> u16 {
        let idx = s.pc % 64;
        let at = s.buf + u64::from(idx) * 64;
        self.d
            .bus
            .mem
            .write(at + 16, &data(len, self.lkey, va))
            .unwrap();
        self.d
            .bus
            .mem
            .write(at + 32, &data(0, wqe::TERMINATE_SCATTER_LIST_LKEY, 0))
            .unwrap();
        s.pc = s.pc.wrapping_add(1);
        self.d
            .bus
            .mem
            .write(s.dbr, &u32::from(s.pc).to_be_bytes())
            .unwrap();
        idx
    }

    /// An XRC initiator QP as mlx5_ib's `create_qp_common` builds it for IB_QPT_XRC_INI.
    fn ini(&mut self) {
        let (pd, s0, x1) = (self.pd, self.s0, self.x1);
        let mut v = input::<cmds::CreateQp>(|i| {
            let c = i.qpc_mut();
            c.set_st(qpc_st::XRC.into());
            c.set_pd(pd);
            c.set_uar_page(UAR);
            c.set_cqn_snd(SCQ);
            c.set_cqn_rcv(C0);
            c.set_rq_type(rq_type::SRQ_RQ.into());
            c.set_srqn_rmpn_xrqn(s0);
            c.set_xrcd(x1);
            c.set_log_sq_size(6);
            c.set_dbr_addr(QP_DBR);
            c.set_user_index(UIDX_INI);
        });
        v.resize(CreateQpIn::SIZE + 8, 0);
        CreateQpIn::set_pas(&mut v, 0, QP_BUF).unwrap();
        self.qpn = view::<CreateQpOut>(&exec(&mut self.d, &v, CreateQpOut::SIZE)).qpn();
    }

    /// An XRC target QP in `xrcd` as mlx5_ib's `create_xrc_tgt_qp` builds it.
    fn tgt(&mut self, xrcd: u32) {
        let (p0, s0) = (self.p0, self.s0);
        let v = input::<cmds::CreateQp>(|i| {
            let c = i.qpc_mut();
            c.set_st(qpc_st::XRC.into());
            c.set_pd(p0);
            // No UAR page: the target has no send queue to ring (mlx5_ib leaves it 0).
            c.set_rq_type(rq_type::SRQ_RQ.into());
            c.set_no_sq(1);
            c.set_cqn_rcv(C0);
            c.set_cqn_snd(C0);
            c.set_srqn_rmpn_xrqn(s0);
            c.set_xrcd(xrcd);
            c.set_dbr_addr(QP_DBR);
            c.set_user_index(UIDX_TGT);
        });
        self.qpn = view::<CreateQpOut>(&exec(&mut self.d, &v, CreateQpOut::SIZE)).qpn();
    }

    /// RST → INIT → RTR (→ RTS for an initiator; ibv_xsrq_pingpong leaves the target in RTR).
    fn connect(&mut self, peer: &Card, rcv_psn: u32, snd_psn: u32, rts: bool, ack_timeout: u8) {
        let qpn = self.qpn;
        let (pq, pmac, pgid) = (peer.qpn, peer.mac, peer.gid);
        ok::<cmds::Rst2InitQp>(&mut self.d, |i| {
            i.set_qpn(qpn);
            let c = i.qpc_mut();
            c.set_rre(1);
            c.set_rwe(1);
            c.set_rae(1);
            c.primary_address_path_mut().set_vhca_port_num(1);
        });
        ok::<cmds::Init2RtrQp>(&mut self.d, |i| {
            i.set_qpn(qpn);
            let c = i.qpc_mut();
            c.set_mtu(mtu::MTU_1K.into());
            c.set_log_msg_max(30);
            c.set_remote_qpn(pq);
            c.set_next_rcv_psn(rcv_psn);
            c.set_log_rra_max(2);
            c.set_min_rnr_nak(1);
            let p = c.primary_address_path_mut();
            p.set_hop_limit(64);
            p.set_udp_sport(0xc321);
            p.set_rmac_47_32(u32::from(u16::from_be_bytes([pmac[0], pmac[1]])));
            p.set_rmac_31_0(u32::from_be_bytes([pmac[2], pmac[3], pmac[4], pmac[5]]));
            p.rgid_rip_mut().copy_from_slice(&pgid);
            p.set_vhca_port_num(1);
        });
        if rts {
            ok::<cmds::Rtr2RtsQp>(&mut self.d, |i| {
                i.set_qpn(qpn);
                let c = i.qpc_mut();
                c.set_next_send_psn(snd_psn);
                c.set_retry_count(7);
                c.set_rnr_retry(7);
                c.set_log_sra_max(2);
                c.primary_address_path_mut()
                    .set_ack_timeout(ack_timeout.into());
            });
        }
    }

    /// Posts a send WQE with libmlx5's XRC segment naming `srqn` (none: `xrc` false) and
    /// rings the doorbell; returns its index.
    fn post_xrc(&mut self, op: u8, srqn: Option<u32>, segs: &[[u8; 16]], imm: u32) -> u16 {
        let idx = self.sq_pc;
        let mut all = Vec::new();
        if let Some(n) = srqn {
            let mut x = [0u8; 16];
            x[..4].copy_from_slice(&n.to_be_bytes());
            all.push(x);
        }
        all.extend_from_slice(segs);
        let ds = 1 + all.len() as u8;
        let mut w = Vec::new();
        w.extend(wqe::opmod_idx_opcode(0, idx, op).to_be_bytes());
        w.extend(wqe::qpn_ds(self.qpn, ds).to_be_bytes());
        w.extend([0, 0, 0, 0x08]);
        w.extend(imm.to_be_bytes());
        for s in &all {
            w.extend(s);
        }
        for (k, chunk) in w.chunks(64).enumerate() {
            let slot = (u64::from(idx) + k as u64) % 64;
            self.d.bus.mem.write(QP_BUF + slot * 64, chunk).unwrap();
        }
        self.sq_pc = self.sq_pc.wrapping_add(w.len().div_ceil(64) as u16);
        self.d
            .bus
            .mem
            .write(QP_DBR + 4, &u32::from(self.sq_pc).to_be_bytes())
            .unwrap();
        let db: [u8; 8] = w[..8].try_into().unwrap();
        self.d
            .region_write(0, u64::from(UAR) * 4096 + 0x800, &db)
            .unwrap();
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

    /// The next CQE of CQ `cqn`, if software owns one.
    fn cqe(&mut self, cqn: u32) -> Option<[u8; 64]> {
        let k = (cqn - SCQ) as usize;
        let ci = &mut self.ci[k];
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

    fn state(&mut self) -> u8 {
        let qpn = self.qpn;
        let out = ok::<cmds::QueryQp>(&mut self.d, |i| i.set_qpn(qpn));
        view::<QueryQpOut>(&out).qpc().state() as u8
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

fn be16(c: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([c[at], c[at + 1]])
}

fn be32(c: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([c[at], c[at + 1], c[at + 2], c[at + 3]])
}

/// Moves frames between the cards until quiet; `tap` sees each (from A: true) and may drop
/// it (returns true).
fn shuttle(a: &mut Card, b: &mut Card, tap: &mut dyn FnMut(bool, &[u8]) -> bool) -> usize {
    let mut n = 0;
    for _ in 0..10_000 {
        let (fa, fb) = (a.port.take(), b.port.take());
        if fa.is_empty() && fb.is_empty() {
            return n;
        }
        for f in fa {
            n += 1;
            if !tap(true, &f) {
                b.d.receive(&f);
            }
        }
        for f in fb {
            n += 1;
            if !tap(false, &f) {
                a.d.receive(&f);
            }
        }
    }
    panic!("the segment never went quiet");
}

fn run(a: &mut Card, b: &mut Card) -> usize {
    shuttle(a, b, &mut |_, _| false)
}

/// The (opcode, XRCETH) of a RoCE frame.
fn headers(f: &[u8]) -> (Opcode, Option<Xrceth>) {
    let p = packet::parse(f).expect("a valid RoCE frame");
    (p.bth.opcode, p.ext.xrc)
}

/// Card A with an initiator connected to card B's target in a fresh user XRC domain `X`;
/// returns the cards and `X`.
fn xrc_pair(ack_timeout: u8) -> (Card, Card, u32) {
    let mut a = Card::new(1);
    let mut b = Card::new(2);
    let x = b.xrcd();
    a.ini();
    b.tgt(x);
    a.connect(&b, 0x300, 0x100, true, ack_timeout);
    b.connect(&a, 0x100, 0x300, false, ack_timeout);
    (a, b, x)
}

#[test]
fn one_initiator_sends_to_two_xrc_srqs_through_one_target() {
    let (mut a, mut b, x) = xrc_pair(14);
    let mut s1 = b.xsrq(x, C1, UIDX_S1);
    // A kernel-style SRQ (cqe_version 0): its CQEs carry the SRQ number.
    let mut s2 = b.xsrq(x, C2, NO_UIDX);
    let msg: Vec<u8> = (0..3000u32).map(|i| (i * 11 + 3) as u8).collect();
    a.write(VA, &msg);
    a.write(VA + 0x1000, b"to the second SRQ");
    let r1 = b.post_srq(&mut s1, VA + 0x8000, 4096);
    let _ = b.post_srq(&mut s2, VA + 0xa000, 64);
    let r2 = b.post_srq(&mut s2, VA + 0xb000, 64);
    let i1 = a.post_xrc(
        wop::SEND_IMM,
        Some(s1.srqn),
        &[data(3000, a.lkey, VA)],
        0x0102_0304,
    );
    let i2 = a.post_xrc(
        wop::SEND,
        Some(s2.srqn),
        &[data(17, a.lkey, VA + 0x1000)],
        0,
    );
    let i3 = a.post_xrc(
        wop::SEND,
        Some(s2.srqn),
        &[data(17, a.lkey, VA + 0x1000)],
        0,
    );
    let mut wire = Vec::new();
    shuttle(&mut a, &mut b, &mut |from_a, f| {
        wire.push((from_a, headers(f)));
        false
    });
    // Requests: XRC opcodes with the XRCETH naming the WQE's SRQ; responses: XRC ACKs.
    let sent: Vec<_> = wire.iter().filter(|w| w.0).map(|w| w.1).collect();
    let srq = |n| Some(Xrceth { srqn: n });
    assert_eq!(
        sent,
        vec![
            (Opcode::XrcSendFirst, srq(s1.srqn)),
            (Opcode::XrcSendMiddle, srq(s1.srqn)),
            (Opcode::XrcSendLastWithImmediate, srq(s1.srqn)),
            (Opcode::XrcSendOnly, srq(s2.srqn)),
            (Opcode::XrcSendOnly, srq(s2.srqn)),
        ]
    );
    assert!(wire
        .iter()
        .filter(|w| !w.0)
        .all(|w| w.1 == (Opcode::XrcAcknowledge, None)));
    assert_eq!(b.read(VA + 0x8000, 3000), msg);
    assert_eq!(b.read(VA + 0xa000, 17), b"to the second SRQ");
    assert_eq!(b.read(VA + 0xb000, 17), b"to the second SRQ");
    // The initiator's completions: its send CQ, its user index.
    for idx in [i1, i2, i3] {
        let c = a.cqe(SCQ).expect("initiator CQE");
        assert_eq!((c[63] >> 4, be16(&c, 0x3c)), (cqe_op::REQ, idx));
        assert_eq!(be32(&c, 0x38) & 0xff_ffff, a.qpn);
        assert_eq!(be32(&c, 0x20), UIDX_INI);
    }
    // The target's: on each SRQ's CQ, the target QP's number, the SRQ's user index (or
    // number), the SRQ WQE's index, the initiator as the source QP.
    let c = b.cqe(C1).expect("CQE on the first SRQ's CQ");
    assert_eq!(c[63] >> 4, cqe_op::RESP_SEND_IMM);
    assert_eq!(be32(&c, 0x2c), 3000, "byte_cnt");
    assert_eq!(be32(&c, 0x24), 0x0102_0304, "immediate");
    assert_eq!(be32(&c, 0x38) & 0xff_ffff, b.qpn, "the target QP");
    assert_eq!(
        be32(&c, 0x20),
        UIDX_S1,
        "srqn_uidx: the XRC SRQ's user index"
    );
    assert_eq!(be16(&c, 0x3c), r1, "the SRQ WQE");
    assert_eq!(be32(&c, 0x18), 1 << 28 | 2 << 24 | a.qpn, "flags_rqpn");
    assert!(b.cqe(C1).is_none());
    for want in [0, r2] {
        let c = b.cqe(C2).expect("CQE on the second SRQ's CQ");
        assert_eq!((c[63] >> 4, be32(&c, 0x2c)), (cqe_op::RESP_SEND, 17));
        assert_eq!(be32(&c, 0x38) & 0xff_ffff, b.qpn);
        assert_eq!(be32(&c, 0x20), s2.srqn, "cqe_version 0: the SRQ number");
        assert_eq!(be16(&c, 0x3c), want);
    }
    assert!(b.cqe(C0).is_none(), "nothing on the target QP's own CQ");
    assert_eq!((a.state(), b.state()), (qpc_state::RTS, qpc_state::RTR));
    let s = b.d.roce.state.stats;
    assert_eq!((s.xrc_bad_srq, s.xrc_misdirected, s.errors), (0, 0, 0));
}

#[test]
fn rdma_write_read_and_atomics_through_xrc() {
    let (mut a, mut b, x) = xrc_pair(14);
    let mut s1 = b.xsrq(x, C1, UIDX_S1);
    let rkey = b.lkey;
    let msg: Vec<u8> = (0..2500u32).map(|i| (i % 253) as u8).collect();
    a.write(VA, &msg);
    a.post_xrc(
        wop::RDMA_WRITE,
        Some(s1.srqn),
        &[raddr(VA + 0x4000, rkey), data(2500, a.lkey, VA)],
        0,
    );
    // A WRITE with immediate consumes a WQE of the SRQ its XRCETH names.
    let r = b.post_srq(&mut s1, VA + 0x100, 16);
    a.post_xrc(
        wop::RDMA_WRITE_IMM,
        Some(s1.srqn),
        &[raddr(VA + 0x9000, rkey), data(8, a.lkey, VA)],
        0xfeed,
    );
    b.write(VA + 0xc000, &[0x5au8; 1500]);
    a.post_xrc(
        wop::RDMA_READ,
        Some(s1.srqn),
        &[raddr(VA + 0xc000, rkey), data(1500, a.lkey, VA + 0x6000)],
        0,
    );
    b.write(VA + 0xd000, &40u64.to_be_bytes());
    let mut atomic = [0u8; 16];
    atomic[..8].copy_from_slice(&2u64.to_be_bytes());
    a.post_xrc(
        wop::ATOMIC_FA,
        Some(s1.srqn),
        &[
            raddr(VA + 0xd000, rkey),
            atomic,
            data(8, a.lkey, VA + 0x7000),
        ],
        0,
    );
    let mut ops = Vec::new();
    shuttle(&mut a, &mut b, &mut |_, f| {
        ops.push(headers(f).0);
        false
    });
    assert!(ops.contains(&Opcode::XrcRdmaWriteFirst) && ops.contains(&Opcode::XrcRdmaWriteLast));
    assert!(ops.contains(&Opcode::XrcRdmaReadRequest));
    assert!(ops.contains(&Opcode::XrcRdmaReadResponseFirst));
    assert!(ops.contains(&Opcode::XrcFetchAdd) && ops.contains(&Opcode::XrcAtomicAcknowledge));
    assert!(ops.iter().all(|o| o.info().service == Service::Xrc));
    assert_eq!(b.read(VA + 0x4000, 2500), msg);
    assert_eq!(b.read(VA + 0x9000, 8), msg[..8]);
    assert_eq!(a.read(VA + 0x6000, 1500), vec![0x5a; 1500]);
    assert_eq!(a.read(VA + 0x7000, 8), 40u64.to_be_bytes());
    assert_eq!(b.read(VA + 0xd000, 8), 42u64.to_be_bytes());
    let mut kinds = Vec::new();
    while let Some(c) = a.cqe(SCQ) {
        assert_eq!(c[63] >> 4, cqe_op::REQ);
        kinds.push((c[0x38], be32(&c, 0x2c)));
    }
    assert_eq!(
        kinds,
        vec![
            (wop::RDMA_WRITE, 2500),
            (wop::RDMA_WRITE_IMM, 8),
            (wop::RDMA_READ, 1500),
            (wop::ATOMIC_FA, 8)
        ]
    );
    let c = b
        .cqe(C1)
        .expect("the WRITE with immediate completes on the SRQ's CQ");
    assert_eq!(c[63] >> 4, cqe_op::RESP_WR_IMM);
    assert_eq!((be32(&c, 0x24), be16(&c, 0x3c)), (0xfeed, r));
    assert_eq!(be32(&c, 0x20), UIDX_S1);
    assert!(b.cqe(C1).is_none() && b.cqe(C0).is_none());
}

#[test]
fn an_xrceth_naming_no_usable_xrc_srq_is_refused_on_both_sides() {
    // Each kind of bad SRQ, on a fresh pair: an XRC SRQ of another user XRC domain,
    // mlx5_ib's internal s0 (an XRC SRQ of its internal domain), and no SRQ at all.
    for case in 0..3 {
        let (mut a, mut b, _x) = xrc_pair(14);
        let y = b.xrcd();
        let mut s3 = b.xsrq(y, C3, 0x41);
        b.post_srq(&mut s3, VA + 0x100, 64);
        let target = [s3.srqn, b.s0, 0xab_cdef][case];
        a.write(VA, b"not for you");
        let i = a.post_xrc(wop::SEND, Some(target), &[data(11, a.lkey, VA)], 0);
        let later = a.post_xrc(wop::SEND, Some(target), &[data(11, a.lkey, VA)], 0);
        let mut acks = Vec::new();
        shuttle(&mut a, &mut b, &mut |from_a, f| {
            if !from_a {
                let p = packet::parse(f).unwrap();
                acks.push((p.bth.opcode, p.ext.aeth.map(|e| e.syndrome)));
            }
            false
        });
        assert_eq!(
            acks,
            vec![(
                Opcode::XrcAcknowledge,
                Some(Syndrome::Nak(super::headers::NakCode::RemoteAccessError))
            )],
            "case {case}: one NAK"
        );
        let c = a.cqe(SCQ).expect("the initiator's error CQE");
        assert_eq!(c[63] >> 4, cqe_op::REQ_ERR, "case {case}");
        assert_eq!(c[0x37], syndrome::REMOTE_ACCESS_ERR);
        assert_eq!(be16(&c, 0x3c), i);
        let f = a.cqe(SCQ).expect("the next WQE is flushed");
        assert_eq!((f[0x37], be16(&f, 0x3c)), (syndrome::WR_FLUSH_ERR, later));
        assert_eq!(a.state(), qpc_state::ERR);
        assert_eq!(b.state(), qpc_state::ERR, "class C: the target QP errs");
        assert_eq!(b.d.roce.state.stats.xrc_bad_srq, 1);
        assert!(b.cqe(C3).is_none(), "the other domain's SRQ saw nothing");
        assert_eq!(b.read(VA + 0x100, 11), vec![0; 11]);
        assert!(b.cqe(C0).is_none() && b.cqe(C1).is_none());
    }
}

#[test]
fn an_initiator_wqe_without_room_for_its_xrc_segment_fails_locally() {
    let (mut a, mut b, _) = xrc_pair(14);
    // A ctrl segment alone: no XRC segment.
    let i = a.post_xrc(wop::SEND, None, &[], 0);
    assert_eq!(run(&mut a, &mut b), 0, "nothing sent");
    let c = a.cqe(SCQ).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37]),
        (cqe_op::REQ_ERR, syndrome::LOCAL_QP_OP_ERR)
    );
    assert_eq!(be16(&c, 0x3c), i);
    assert_eq!(a.state(), qpc_state::ERR);
}

#[test]
fn lost_xrc_packets_are_resent_as_rc_would() {
    // ack_timeout 18: ~1.07 s, so only the test's clock fires it.
    let (mut a, mut b, x) = xrc_pair(18);
    let mut s1 = b.xsrq(x, C1, UIDX_S1);
    let msg: Vec<u8> = (0..4000u32).map(|i| (i ^ 0xa5) as u8).collect();
    a.write(VA, &msg);
    b.post_srq(&mut s1, VA + 0x8000, 4096);
    a.post_xrc(wop::SEND, Some(s1.srqn), &[data(4000, a.lkey, VA)], 0);
    let mut k = 0;
    let mut resent = Vec::new();
    shuttle(&mut a, &mut b, &mut |from_a, f| {
        if from_a {
            k += 1;
            if k > 4 {
                resent.push(headers(f));
            }
        }
        from_a && k == 2
    });
    assert_eq!(
        b.read(VA + 0x8000, 4000),
        msg,
        "recovered by the sequence NAK"
    );
    assert_eq!(
        resent,
        vec![
            (Opcode::XrcSendMiddle, Some(Xrceth { srqn: s1.srqn })),
            (Opcode::XrcSendMiddle, Some(Xrceth { srqn: s1.srqn })),
            (Opcode::XrcSendLast, Some(Xrceth { srqn: s1.srqn })),
        ],
        "go-back-N from the lost packet, still XRC"
    );
    assert_eq!(a.cqe(SCQ).unwrap()[63] >> 4, cqe_op::REQ);
    let r = b.cqe(C1).unwrap();
    assert_eq!((r[63] >> 4, be32(&r, 0x2c)), (cqe_op::RESP_SEND, 4000));
    assert!(b.cqe(C1).is_none(), "one completion");
    // Every frame of the next message lost: the ACK timer resends it.
    b.post_srq(&mut s1, VA + 0x9000, 64);
    a.post_xrc(wop::SEND, Some(s1.srqn), &[data(10, a.lkey, VA)], 0);
    shuttle(&mut a, &mut b, &mut |from_a, _| from_a);
    assert!(a.cqe(SCQ).is_none());
    a.d.roce_tick_at(super::engine::now_ns() + 5_000_000_000);
    run(&mut a, &mut b);
    assert_eq!(a.cqe(SCQ).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(b.cqe(C1).unwrap()[63] >> 4, cqe_op::RESP_SEND);
    assert_eq!(b.read(VA + 0x9000, 10), msg[..10]);
    assert!(a.d.roce.state.stats.timer_runs >= 1);
}

#[test]
fn a_target_flushed_mid_send_completes_to_the_srqs_cq() {
    let (mut a, mut b, x) = xrc_pair(18);
    let mut s1 = b.xsrq(x, C1, UIDX_S1);
    let r = b.post_srq(&mut s1, VA + 0x8000, 4096);
    a.post_xrc(wop::SEND, Some(s1.srqn), &[data(3000, a.lkey, VA)], 0);
    // The LAST packet is lost: the target holds the SRQ WQE open.
    let mut k = 0;
    shuttle(&mut a, &mut b, &mut |from_a, _| {
        k += u32::from(from_a);
        from_a && k == 3
    });
    let qpn = b.qpn;
    ok::<cmds::ToErrQp>(&mut b.d, |i| i.set_qpn(qpn));
    let c = b.cqe(C1).expect("the open WQE's flush on the SRQ's CQ");
    assert_eq!(
        (c[63] >> 4, c[0x37]),
        (cqe_op::RESP_ERR, syndrome::WR_FLUSH_ERR)
    );
    assert_eq!((be16(&c, 0x3c), be32(&c, 0x20)), (r, UIDX_S1));
    assert_eq!(be32(&c, 0x38) & 0xff_ffff, b.qpn);
    assert!(b.cqe(C0).is_none());
}

#[test]
fn misdirected_xrc_packets_are_dropped_and_counted() {
    let (mut a, mut b, x) = xrc_pair(14);
    let mut s1 = b.xsrq(x, C1, UIDX_S1);
    b.post_srq(&mut s1, VA + 0x8000, 64);
    a.post_xrc(wop::SEND, Some(s1.srqn), &[data(4, a.lkey, VA)], 0);
    let (mut req, mut ack) = (Vec::new(), Vec::new());
    shuttle(&mut a, &mut b, &mut |from_a, f| {
        if from_a { &mut req } else { &mut ack }.push(f.to_vec());
        false
    });
    let rx = |d: &Device| {
        (
            d.roce.state.stats.xrc_misdirected,
            d.roce.state.stats.rx_no_qp,
        )
    };
    // The ACK's addressing, turned into a request to the initiator.
    let p = packet::parse(&ack[0]).unwrap();
    let mut q = p;
    q.bth.opcode = Opcode::XrcSendOnly;
    q.bth.psn = 0x300;
    q.ext = super::headers::ExtHeaders {
        xrc: Some(Xrceth { srqn: a.s0 }),
        ..Default::default()
    };
    q.payload = b"abcd";
    a.d.receive(&packet::build(&q).unwrap());
    assert_eq!(rx(&a.d), (1, 0), "a request to an initiator");
    // The request's addressing, turned into an ACK to the target.
    let p = packet::parse(&req[0]).unwrap();
    let mut q = p;
    q.bth.opcode = Opcode::XrcAcknowledge;
    q.ext = super::headers::ExtHeaders {
        aeth: Some(Aeth {
            syndrome: Syndrome::Ack { credits: 31 },
            msn: 1,
        }),
        ..Default::default()
    };
    q.payload = &[];
    b.d.receive(&packet::build(&q).unwrap());
    assert_eq!(rx(&b.d), (1, 0), "a response to a target");
    // An RC opcode to an XRC QP: no such RC QP.
    let mut q = packet::parse(&req[0]).unwrap();
    q.bth.opcode = Opcode::RcSendOnly;
    q.ext = Default::default();
    b.d.receive(&packet::build(&q).unwrap());
    assert_eq!(rx(&b.d), (1, 1));
    assert!(
        a.port.take().is_empty() && b.port.take().is_empty(),
        "nothing answered"
    );
    assert_eq!((a.state(), b.state()), (qpc_state::RTS, qpc_state::RTR));
    assert_eq!(b.cqe(C1).map(|c| c[63] >> 4), Some(cqe_op::RESP_SEND));
    assert!(b.cqe(C1).is_none());
}
