//! Two modelled cards on one Ethernet segment (two [`Device`]s whose [`Loopback`] ports are
//! shuttled into each other), with PDs, MTT memory keys, GIDs and RC/UC QPs made by the
//! commands mlx5_ib sends and WQEs laid out as libmlx5 posts them: the data, both sides'
//! CQEs byte for byte, ACK timeouts, RNR, remote access errors, flushes, and a fuzzer.

use std::sync::Arc;

use cx4_hw::{
    command::{self as cmds},
    cq::cqe::{opcode as cqe_op, syndrome},
    mkey::{access_mode, mkey_from_index, CreateMkeyIn, CreateMkeyOut},
    pd::AllocPdOut,
    qp::{mtu, qpc_st, qpc_state, rq_type, CreateQpIn, CreateQpOut, QueryQpOut},
    wqe::{self, opcode as wop},
};

use super::fixture::{self, exec, input, ok, v4_gid, view};
use crate::{device::Device, fw::HcaState, wire::Loopback};

const BASE: u64 = 0x10_0000;
const MEM: u64 = 0x40_0000;
const EQ_RING: u64 = BASE;
const SCQ_RING: u64 = BASE + 0x1000;
const RCQ_RING: u64 = BASE + 0x2000;
const DBRS: u64 = BASE + 0x3000;
const QP_DBR: u64 = DBRS + 0x100;
const QP_BUF: u64 = BASE + 0x4000;
/// Receive queue: 16 WQEs of 64 bytes; send queue after it: 64 basic blocks.
const RQ_BYTES: u64 = 16 * 64;
const SRQ_BUF: u64 = BASE + 0x6000;
const SRQ_DBR: u64 = DBRS + 0x200;
const DATA: u64 = BASE + 0x10000;
const DATA_LEN: u64 = 0x20000;
/// The MR's virtual address of `DATA`.
const VA: u64 = 0x7000_0000;
const UAR: u32 = 8;
const SCQ: u32 = 0x10;
const RCQ: u32 = 0x11;
const UIDX: u32 = 0x33;

/// One card.
struct Card {
    d: Device,
    port: Arc<Loopback>,
    mac: [u8; 6],
    gid: [u8; 16],
    lkey: u32,
    /// The GID index the QP sends from.
    sgid_index: u32,
    /// On an IB port: the QP's address path is global (`grh`, `ib_tests.rs`).
    ib_grh: bool,
    qpn: u32,
    /// The queue counter set the QP names at RST2INIT (0: none, as before mlx5_ib).
    counter_set: u8,
    /// Bytes of the QP's own receive queue (0 with an SRQ).
    rq_bytes: u64,
    srq_pc: u16,
    sq_pc: u16,
    rq_pc: u16,
    scq_ci: u32,
    rcq_ci: u32,
}

impl Card {
    fn new(n: u8, st: u8) -> Card {
        Card::with_srq(n, st, false)
    }

    fn with_srq(n: u8, st: u8, srq: bool) -> Card {
        Card::with_link(n, st, srq, false)
    }

    /// A card whose port is RoCE, or InfiniBand (`ib`: `--link ib`, no RoCE address table;
    /// `ib_tests.rs`).
    fn with_link(n: u8, st: u8, srq: bool, ib: bool) -> Card {
        let args = if ib {
            "--socket /x --init-delay-ms 0 --link ib"
        } else {
            "--socket /x --init-delay-ms 0 --eth --roce"
        };
        let mut d = fixture::device(args, BASE, MEM, UAR);
        d.fw.cqs.insert(SCQ, fixture::cq(SCQ, SCQ_RING, DBRS, UAR));
        d.fw.cqs
            .insert(RCQ, fixture::cq(RCQ, RCQ_RING, DBRS + 0x40, UAR));
        // Software pre-fills CQ entries with an invalid opcode and owner 1.
        for ring in [SCQ_RING, RCQ_RING] {
            for k in 0..64u64 {
                d.bus.mem.write(ring + k * 64 + 63, &[0xf1]).unwrap();
            }
        }
        let port = Arc::new(Loopback::default());
        d.attach(port.clone());
        let mac = [0x02, 0xc4, 0, 0, 0, n];
        let gid = v4_gid([10, 0, 0, n]);
        if !ib {
            fixture::set_gid0_v2_ipv4(&mut d, &gid, mac);
        }
        let pd = view::<AllocPdOut>(&ok::<cmds::AllocPd>(&mut d, |_| {})).pd();
        // An MTT MR over DATA at VA, all rights (ibv_reg_mr with every access flag).
        let lkey = fixture::mtt_mr(&mut d, pd, (VA, DATA, DATA_LEN), 12, true);
        // An RMP as mlx5_ib's create_rmp_cmd builds it: 2^6 WQEs of 64 bytes.
        let mut srqn = 0;
        if srq {
            let mut v = input::<cmds::CreateRmp>(|i| {
                let c = i.ctx_mut();
                c.set_state(cx4_hw::srq::rmpc_state::RDY.into());
                let w = c.wq_mut();
                w.set_pd(pd);
                w.set_dbr_addr(SRQ_DBR);
                w.set_log_wq_stride(6);
                w.set_log_wq_sz(6);
            });
            v.resize(cx4_hw::srq::CreateRmpIn::SIZE + 8, 0);
            cx4_hw::srq::CreateRmpIn::set_wq_pas(&mut v, 0, SRQ_BUF).unwrap();
            let out = exec(&mut d, &v, cx4_hw::srq::CreateRmpOut::SIZE);
            srqn = view::<cx4_hw::srq::CreateRmpOut>(&out).rmpn();
            // libmlx5's free list: each WQE's next segment names the following one.
            for k in 0..64u64 {
                let next = ((k + 1) % 64) as u16;
                d.bus
                    .mem
                    .write(SRQ_BUF + k * 64 + 2, &next.to_be_bytes())
                    .unwrap();
            }
        }
        // The QP, as mlx5_ib creates a user QP: RQ then SQ in the buffer, cqe_version 1.
        let mut v = input::<cmds::CreateQp>(|i| {
            let c = i.qpc_mut();
            c.set_st(st.into());
            c.set_pd(pd);
            c.set_uar_page(UAR);
            c.set_cqn_snd(SCQ);
            c.set_cqn_rcv(RCQ);
            if srq {
                c.set_rq_type(rq_type::SRQ_RQ.into());
                c.set_srqn_rmpn_xrqn(srqn);
            } else {
                c.set_log_rq_size(4);
                c.set_log_rq_stride(2);
                c.set_rq_type(rq_type::NON_ZERO_RQ.into());
            }
            c.set_log_sq_size(6);
            c.set_dbr_addr(QP_DBR);
            c.set_user_index(UIDX);
        });
        v.resize(CreateQpIn::SIZE + 16, 0);
        CreateQpIn::set_pas(&mut v, 0, QP_BUF).unwrap();
        CreateQpIn::set_pas(&mut v, 1, QP_BUF + 0x1000).unwrap();
        let qpn = view::<CreateQpOut>(&exec(&mut d, &v, CreateQpOut::SIZE)).qpn();
        Card {
            d,
            port,
            mac,
            gid,
            lkey,
            sgid_index: 0,
            ib_grh: false,
            qpn,
            counter_set: 0,
            rq_bytes: if srq { 0 } else { RQ_BYTES },
            srq_pc: 0,
            sq_pc: 0,
            rq_pc: 0,
            scq_ci: 0,
            rcq_ci: 0,
        }
    }

    /// RST → INIT → RTR → RTS towards `peer` with real MODIFY_QP inputs.
    fn connect(
        &mut self,
        peer: (u32, [u8; 6], [u8; 16]),
        rcv_psn: u32,
        snd_psn: u32,
        ack_timeout: u8,
    ) {
        let (qpn, sgid, set) = (self.qpn, self.sgid_index, self.counter_set);
        ok::<cmds::Rst2InitQp>(&mut self.d, |i| {
            i.set_qpn(qpn);
            let c = i.qpc_mut();
            c.set_counter_set_id(set.into());
            c.set_rre(1);
            c.set_rwe(1);
            c.set_rae(1);
            let p = c.primary_address_path_mut();
            p.set_vhca_port_num(1);
        });
        ok::<cmds::Init2RtrQp>(&mut self.d, |i| {
            i.set_qpn(qpn);
            let c = i.qpc_mut();
            c.set_mtu(mtu::MTU_1K.into());
            c.set_log_msg_max(30);
            c.set_remote_qpn(peer.0);
            c.set_next_rcv_psn(rcv_psn);
            c.set_log_rra_max(2);
            c.set_min_rnr_nak(1);
            let p = c.primary_address_path_mut();
            p.set_src_addr_index(sgid);
            p.set_hop_limit(64);
            p.set_udp_sport(0xc123);
            p.set_rmac_47_32(u32::from(u16::from_be_bytes([peer.1[0], peer.1[1]])));
            p.set_rmac_31_0(u32::from_be_bytes([
                peer.1[2], peer.1[3], peer.1[4], peer.1[5],
            ]));
            p.rgid_rip_mut().copy_from_slice(&peer.2);
            // On an IB port the path is the peer's LID: card n's is n (`ib_tests.rs`).
            p.set_rlid(peer.1[5].into());
            p.set_grh(self.ib_grh.into());
            p.set_vhca_port_num(1);
        });
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

    /// The QP's context as the firmware holds it.
    fn ctx_mut(&mut self) -> &mut cx4_hw::qp::Qpc {
        let qpn = self.qpn;
        &mut self.d.fw.rdma.qps.get_mut(&qpn).expect("the card's QP").ctx
    }

    fn id(&self) -> (u32, [u8; 6], [u8; 16]) {
        (self.qpn, self.mac, self.gid)
    }

    /// Gives the card a RoCE v1 GID at index 1 (`gid`, tagged with `vlan` if given) and makes
    /// it the one the QP (and [`Card::id`]) uses.
    fn use_v1(&mut self, gid: [u8; 16], vlan: Option<u16>) {
        fixture::set_gid_v1(&mut self.d, 1, &gid, self.mac, vlan);
        self.gid = gid;
        self.sgid_index = 1;
    }

    /// Posts a send WQE as libmlx5 lays it out and rings the doorbell; returns its index.
    fn post_send(&mut self, op: u8, segs: &[[u8; 16]], imm: u32, signaled: bool) -> u16 {
        let idx = self.sq_pc;
        let ds = 1 + segs.len() as u8;
        let mut w = Vec::new();
        w.extend(wqe::opmod_idx_opcode(0, idx, op).to_be_bytes());
        w.extend(wqe::qpn_ds(self.qpn, ds).to_be_bytes());
        w.extend([0, 0, 0, if signaled { 0x08 } else { 0 }]);
        w.extend(imm.to_be_bytes());
        for s in segs {
            w.extend(s);
        }
        let bbs = w.len().div_ceil(64) as u16;
        // Write each 64-byte block at its ring position (the ring wraps).
        for (k, chunk) in w.chunks(64).enumerate() {
            let slot = (u64::from(idx) + k as u64) % 64;
            self.d
                .bus
                .mem
                .write(QP_BUF + self.rq_bytes + slot * 64, chunk)
                .unwrap();
        }
        self.sq_pc = self.sq_pc.wrapping_add(bbs);
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

    /// Posts a receive WQE with one data segment (and the terminator).
    fn post_recv(&mut self, va: u64, len: u32) {
        let slot = u64::from(self.rq_pc) % 16;
        let mut w = [0u8; 64];
        w[..16].copy_from_slice(&data(len, self.lkey, va));
        w[16..32].copy_from_slice(&data(0, wqe::TERMINATE_SCATTER_LIST_LKEY, 0));
        self.d.bus.mem.write(QP_BUF + slot * 64, &w).unwrap();
        self.rq_pc = self.rq_pc.wrapping_add(1);
        self.d
            .bus
            .mem
            .write(QP_DBR, &u32::from(self.rq_pc).to_be_bytes())
            .unwrap();
    }

    /// Posts an SRQ WQE as libmlx5 does: at the head of the free list (here in order), data
    /// segments after the next segment, the counter in the doorbell record.
    fn post_srq(&mut self, va: u64, len: u32) -> u16 {
        let idx = self.srq_pc % 64;
        let at = SRQ_BUF + u64::from(idx) * 64;
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
        self.srq_pc = self.srq_pc.wrapping_add(1);
        self.d
            .bus
            .mem
            .write(SRQ_DBR, &u32::from(self.srq_pc).to_be_bytes())
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

    fn next_cqe(&mut self, recv: bool) -> Option<[u8; 64]> {
        let (ring, dbr, ci) = if recv {
            (RCQ_RING, DBRS + 0x40, &mut self.rcq_ci)
        } else {
            (SCQ_RING, DBRS, &mut self.scq_ci)
        };
        let mut c = [0u8; 64];
        self.d
            .bus
            .mem
            .read(ring + u64::from(*ci % 64) * 64, &mut c)
            .unwrap();
        let owner = ((*ci >> 6) & 1) as u8;
        if c[63] >> 4 == cqe_op::INVALID || c[63] & 1 != owner {
            return None;
        }
        *ci += 1;
        // The consumer index in the CQ's doorbell record, as the driver updates it.
        self.d
            .bus
            .mem
            .write(dbr, &(*ci & 0xff_ffff).to_be_bytes())
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

fn atomic(swap_add: u64, compare: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..8].copy_from_slice(&swap_add.to_be_bytes());
    b[8..16].copy_from_slice(&compare.to_be_bytes());
    b
}

/// Moves frames between the two cards until the segment is quiet; `drop` may discard a
/// frame (true: lost). Returns how many frames crossed.
fn shuttle(a: &mut Card, b: &mut Card, drop: &mut dyn FnMut(bool, &[u8]) -> bool) -> usize {
    let mut n = 0;
    for _ in 0..10_000 {
        let fa = a.port.take();
        let fb = b.port.take();
        if fa.is_empty() && fb.is_empty() {
            return n;
        }
        for f in fa {
            n += 1;
            if !drop(true, &f) {
                b.d.receive(&f);
            }
        }
        for f in fb {
            n += 1;
            if !drop(false, &f) {
                a.d.receive(&f);
            }
        }
    }
    panic!("the segment never went quiet");
}

fn run(a: &mut Card, b: &mut Card) -> usize {
    shuttle(a, b, &mut |_, _| false)
}

fn pair(st: u8, ack_timeout: u8) -> (Card, Card) {
    let mut a = Card::new(1, st);
    let mut b = Card::new(2, st);
    let (ia, ib) = (a.id(), b.id());
    a.connect(ib, 0x200, 0x100, ack_timeout);
    b.connect(ia, 0x100, 0x200, ack_timeout);
    (a, b)
}

fn be16(c: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([c[at], c[at + 1]])
}

fn be32(c: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([c[at], c[at + 1], c[at + 2], c[at + 3]])
}

#[test]
fn rc_send_recv_moves_data_and_both_sides_complete() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let msg: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    a.write(VA, &msg);
    b.post_recv(VA + 0x8000, 4096);
    let idx = a.post_send(wop::SEND_IMM, &[data(3000, a.lkey, VA)], 0x1122_3344, true);
    let frames = run(&mut a, &mut b);
    assert_eq!(frames, 4, "3 packets at MTU 1024 and one ACK");
    assert_eq!(
        b.read(VA + 0x8000, 3000),
        msg,
        "the data landed in the receive buffer"
    );
    let c = a.next_cqe(false).expect("requester CQE");
    assert_eq!(c[63] >> 4, cqe_op::REQ);
    assert_eq!(be16(&c, 0x3c), idx, "wqe_counter");
    assert_eq!(
        be32(&c, 0x38),
        u32::from(wop::SEND_IMM) << 24 | a.qpn,
        "sop_drop_qpn"
    );
    assert_eq!(be32(&c, 0x20), UIDX, "srqn_uidx = user_index");
    assert!(a.next_cqe(false).is_none(), "one CQE");
    let r = b.next_cqe(true).expect("responder CQE");
    assert_eq!(r[63] >> 4, cqe_op::RESP_SEND_IMM);
    assert_eq!(be32(&r, 0x2c), 3000, "byte_cnt");
    assert_eq!(be32(&r, 0x24), 0x1122_3344, "immediate as posted");
    assert_eq!(
        be32(&r, 0x18),
        1 << 28 | 2 << 24 | a.qpn,
        "flags_rqpn: GRH, IPv4, source QP"
    );
    assert_eq!(be32(&r, 0x38) & 0xff_ffff, b.qpn, "sop_drop_qpn");
    assert_eq!(be32(&r, 0x20), UIDX);
    assert_eq!(be16(&r, 0x3c), 0, "the first receive WQE");
    assert_eq!(a.state(), qpc_state::RTS);
    assert_eq!(b.d.roce.state.stats.rx_packets, 3);
    // A second message in the other direction, plain SEND, inline data.
    a.post_recv(VA + 0x100, 64);
    let mut inl = Vec::new();
    inl.extend((5u32 | wqe::INLINE_SEG).to_be_bytes());
    inl.extend(b"hello");
    inl.resize(16, 0);
    b.post_send(wop::SEND, &[inl.try_into().unwrap()], 0, true);
    run(&mut a, &mut b);
    assert_eq!(a.read(VA + 0x100, 5), b"hello");
    let r = a.next_cqe(true).unwrap();
    assert_eq!((r[63] >> 4, be32(&r, 0x2c)), (cqe_op::RESP_SEND, 5));
    assert_eq!(b.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
}

#[test]
fn rdma_write_and_write_with_immediate() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let msg: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    a.write(VA, &msg);
    let rkey = b.lkey;
    // Unsignaled WRITE, then a signaled WRITE with immediate completing both.
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA + 0x4000, rkey), data(5000, a.lkey, VA)],
        0,
        false,
    );
    b.post_recv(VA + 0x100, 16);
    let idx = a.post_send(
        wop::RDMA_WRITE_IMM,
        &[raddr(VA + 0x9000, rkey), data(10, a.lkey, VA)],
        0xabcd,
        true,
    );
    run(&mut a, &mut b);
    assert_eq!(b.read(VA + 0x4000, 5000), msg);
    assert_eq!(b.read(VA + 0x9000, 10), msg[..10]);
    let c = a.next_cqe(false).unwrap();
    assert_eq!((c[63] >> 4, be16(&c, 0x3c)), (cqe_op::REQ, idx));
    assert!(
        a.next_cqe(false).is_none(),
        "the unsignaled WRITE has no CQE"
    );
    let r = b.next_cqe(true).unwrap();
    assert_eq!(r[63] >> 4, cqe_op::RESP_WR_IMM);
    assert_eq!(be32(&r, 0x24), 0xabcd);
    assert_eq!(be32(&r, 0x2c), 0, "no bytes in the receive WQE");
}

#[test]
fn multi_packet_rdma_read() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let remote: Vec<u8> = (0..10000u32).map(|i| (i * 13 + 5) as u8).collect();
    b.write(VA + 0x1000, &remote);
    let idx = a.post_send(
        wop::RDMA_READ,
        &[raddr(VA + 0x1000, b.lkey), data(10000, a.lkey, VA + 0x8000)],
        0,
        true,
    );
    let frames = run(&mut a, &mut b);
    assert_eq!(frames, 1 + 10, "one request, ten 1 KiB responses");
    assert_eq!(a.read(VA + 0x8000, 10000), remote);
    let c = a.next_cqe(false).unwrap();
    assert_eq!(c[63] >> 4, cqe_op::REQ);
    assert_eq!(be16(&c, 0x3c), idx);
    assert_eq!(be32(&c, 0x2c), 10000, "byte_cnt of a READ");
    assert_eq!(c[0x38], wop::RDMA_READ);
}

/// A READ's responses stream a burst at a time (`outgoing.rs`): b sends `read_burst`
/// packets when the request arrives and the next burst at each RoCE tick (due at once while
/// some wait), and the ACK of a SEND behind the READ leaves after the READ's last response:
/// a completes both, in order, with no retransmission and no duplicate at b.
#[test]
fn a_long_reads_responses_stream_in_bursts_and_what_follows_waits() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    b.d.roce.state.read_burst = Some(16);
    let len = 100 * 1024u32;
    let remote: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
    b.write(VA, &remote);
    b.post_recv(VA + 0x1_c000, 256);
    a.post_send(
        wop::RDMA_READ,
        &[raddr(VA, b.lkey), data(len, a.lkey, VA)],
        0,
        true,
    );
    a.post_send(wop::SEND, &[data(64, a.lkey, VA + 0x1_f000)], 0, true);
    // The requests, then the first burst of responses (nothing else leaves b yet).
    let first = run(&mut a, &mut b);
    assert_eq!(first, 2 + 16, "two requests and one burst of responses");
    assert!(a.next_cqe(false).is_none(), "the READ is not complete");
    let now = super::engine::now_ns();
    assert_eq!(
        b.d.roce.state.next_deadline(now),
        Some(now),
        "more to send at once"
    );
    let mut ticks = 0;
    while b.d.roce.state.next_deadline(now) == Some(now) {
        b.d.roce_tick_at(now);
        let n = run(&mut a, &mut b);
        assert!(n <= 16 + 1, "a burst of {n} frames");
        ticks += 1;
        assert!(ticks < 20, "the responses never ran out");
    }
    assert_eq!(
        ticks,
        (100 - 16usize).div_ceil(16),
        "100 responses in bursts of 16"
    );
    assert_eq!(a.read(VA, len as usize), remote);
    for op in [wop::RDMA_READ, wop::SEND] {
        let c = a.next_cqe(false).expect("a completion");
        assert_eq!((c[63] >> 4, c[0x38]), (cqe_op::REQ, op));
    }
    assert_eq!(
        b.next_cqe(true).map(|c| c[63] >> 4),
        Some(cqe_op::RESP_SEND)
    );
    let resp = match &b.d.roce.state.qps[&b.qpn].resp {
        Some(super::engine::RespSide::Rc(r)) => r.stats(),
        _ => panic!("b's responder"),
    };
    let req = match &a.d.roce.state.qps[&a.qpn].req {
        Some(super::engine::ReqSide::Rc(r)) => r.stats(),
        _ => panic!("a's requester"),
    };
    assert_eq!((resp.out_of_sequence, resp.duplicates), (0, 0));
    assert_eq!(
        (req.implicit_naks, req.timeouts),
        (0, 0),
        "the ACK came after the READ"
    );
    assert_eq!(a.d.roce.state.stats.timer_runs, 0, "nothing retransmitted");
}

/// SET_HCA_CAP of the atomic caps as mlx5_core's `handle_hca_cap_atomic` sends it (before
/// INIT_HCA): 8-byte atomics in host endianness.
fn host_endian_atomics(c: &mut Card) {
    let state = c.d.fw.state;
    c.d.fw.state = HcaState::Enabled;
    let q = input::<cmds::QueryHcaCap>(|i| {
        i.set_op_mod(cx4_hw::caps::query_op_mod(cx4_hw::caps::cap_type::ATOMIC, true).into())
    });
    let out = c.d.hca.fw.execute(&mut c.d.bus, &q, 0x1010).unwrap();
    let cur = view::<cx4_hw::caps::QueryHcaCapOut>(&out);
    assert_eq!(
        cur.capability()
            .atomic_caps()
            .supported_atomic_req_8B_endianness_mode_1(),
        1
    );
    let set = input::<cmds::SetHcaCap>(|i| {
        i.set_op_mod(cx4_hw::caps::set_op_mod(cx4_hw::caps::cap_type::ATOMIC).into());
        i.capability_mut().0.copy_from_slice(&cur.capability().0);
        i.capability_mut()
            .atomic_caps_mut()
            .set_atomic_req_8B_endianness_mode(1);
    });
    let out = c.d.hca.fw.execute(&mut c.d.bus, &set, 16).unwrap();
    assert_eq!(out[0], 0, "SET_HCA_CAP atomic: {:02x?}", &out[..8]);
    c.d.fw.state = state;
    assert!(c.d.roce_at().atomic_host_endian());
}

#[test]
fn atomics_in_host_endianness_once_mlx5_core_asks_for_it() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    host_endian_atomics(&mut a);
    host_endian_atomics(&mut b);
    b.write(VA + 0x800, &100u64.to_le_bytes());
    a.post_send(
        wop::ATOMIC_FA,
        &[
            raddr(VA + 0x800, b.lkey),
            atomic(5, 0),
            data(8, a.lkey, VA + 0x10),
        ],
        0,
        true,
    );
    a.post_send(
        wop::ATOMIC_CS,
        &[
            raddr(VA + 0x800, b.lkey),
            atomic(7, 105),
            data(8, a.lkey, VA + 0x18),
        ],
        0,
        true,
    );
    run(&mut a, &mut b);
    assert_eq!(
        a.read(VA + 0x10, 8),
        100u64.to_le_bytes(),
        "FA's original, host order"
    );
    assert_eq!(
        a.read(VA + 0x18, 8),
        105u64.to_le_bytes(),
        "CS's original, host order"
    );
    assert_eq!(
        b.read(VA + 0x800, 8),
        7u64.to_le_bytes(),
        "the responder's memory, host order"
    );
}

#[test]
fn atomics_compare_swap_and_fetch_add() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    b.write(VA + 0x800, &100u64.to_be_bytes());
    a.post_send(
        wop::ATOMIC_FA,
        &[
            raddr(VA + 0x800, b.lkey),
            atomic(5, 0),
            data(8, a.lkey, VA + 0x10),
        ],
        0,
        true,
    );
    a.post_send(
        wop::ATOMIC_CS,
        &[
            raddr(VA + 0x800, b.lkey),
            atomic(7, 105),
            data(8, a.lkey, VA + 0x18),
        ],
        0,
        true,
    );
    a.post_send(
        wop::ATOMIC_CS,
        &[
            raddr(VA + 0x800, b.lkey),
            atomic(9, 105),
            data(8, a.lkey, VA + 0x20),
        ],
        0,
        true,
    );
    run(&mut a, &mut b);
    assert_eq!(
        a.read(VA + 0x10, 8),
        100u64.to_be_bytes(),
        "FA returns the original"
    );
    assert_eq!(
        a.read(VA + 0x18, 8),
        105u64.to_be_bytes(),
        "CS returns the original"
    );
    assert_eq!(
        a.read(VA + 0x20, 8),
        7u64.to_be_bytes(),
        "failed CS returns the value"
    );
    assert_eq!(
        b.read(VA + 0x800, 8),
        7u64.to_be_bytes(),
        "100 + 5, swapped to 7, kept"
    );
    for _ in 0..3 {
        let c = a.next_cqe(false).unwrap();
        assert_eq!(c[63] >> 4, cqe_op::REQ);
        assert_eq!(be32(&c, 0x2c), 8);
    }
}

#[test]
fn bad_rkey_is_a_remote_access_error_and_later_wqes_flush() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let i0 = a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA, 0xdead_0000), data(100, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    let c = a.next_cqe(false).unwrap();
    assert_eq!(c[63] >> 4, cqe_op::REQ_ERR);
    assert_eq!(c[0x37], syndrome::REMOTE_ACCESS_ERR);
    assert_eq!(be16(&c, 0x3c), i0);
    assert_eq!(a.state(), qpc_state::ERR, "the requester's QP is in error");
    assert_eq!(b.state(), qpc_state::ERR, "so is the responder's");
    let i1 = a.post_send(wop::SEND, &[data(10, a.lkey, VA)], 0, false);
    let c = a.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37]),
        (cqe_op::REQ_ERR, syndrome::WR_FLUSH_ERR)
    );
    assert_eq!(be16(&c, 0x3c), i1, "flushed even though unsignaled");
    assert!(a.port.take().is_empty(), "nothing sent in error");
}

#[test]
fn a_dropped_packet_is_resent_after_the_ack_timeout() {
    // ack_timeout 18: 4.096 µs × 2^18 ≈ 1.07 s, so only the test's clock fires it.
    let (mut a, mut b) = pair(qpc_st::RC, 18);
    let msg: Vec<u8> = (0..4000u32).map(|i| (i ^ 0x5a) as u8).collect();
    a.write(VA, &msg);
    b.post_recv(VA + 0x8000, 4096);
    a.post_send(wop::SEND, &[data(4000, a.lkey, VA)], 0, true);
    let mut k = 0;
    shuttle(&mut a, &mut b, &mut |from_a, _| {
        k += 1;
        from_a && k == 2 // the second packet of the message is lost
    });
    // The PSN sequence NAK for the third packet sent the requester back at once.
    assert_eq!(b.read(VA + 0x8000, 4000), msg);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    let r = b.next_cqe(true).unwrap();
    assert_eq!((r[63] >> 4, be32(&r, 0x2c)), (cqe_op::RESP_SEND, 4000));
    let naks = match &a.d.roce.state.qps[&a.qpn].req {
        Some(super::engine::ReqSide::Rc(r)) => r.stats().seq_naks,
        _ => 0,
    };
    assert_eq!(
        (naks, a.d.roce.state.stats.timer_runs),
        (1, 0),
        "recovered by the NAK"
    );
    // Now lose the last packet and its ACK never comes: only the timer recovers.
    b.post_recv(VA + 0x8000, 4096);
    a.post_send(wop::SEND, &[data(1000, a.lkey, VA)], 0, true);
    shuttle(&mut a, &mut b, &mut |from_a, _| from_a);
    assert!(a.next_cqe(false).is_none());
    assert!(a.d.roce_deadline().is_some(), "the ACK timer runs");
    a.d.roce_tick_at(super::engine::now_ns() + 5_000_000_000);
    run(&mut a, &mut b);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(b.next_cqe(true).unwrap()[63] >> 4, cqe_op::RESP_SEND);
    assert!(a.d.roce.state.stats.timer_runs >= 1);
}

#[test]
fn rnr_then_success_when_a_receive_is_posted() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    a.write(VA, b"0123456789");
    a.post_send(wop::SEND, &[data(10, a.lkey, VA)], 0, true);
    run(&mut a, &mut b);
    assert!(a.next_cqe(false).is_none(), "RNR NAKed, waiting");
    b.post_recv(VA + 0x40, 64);
    a.d.roce_tick_at(super::engine::now_ns() + 1_000_000_000);
    run(&mut a, &mut b);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(b.read(VA + 0x40, 10), b"0123456789");
    assert_eq!(b.next_cqe(true).unwrap()[63] >> 4, cqe_op::RESP_SEND);
}

#[test]
fn uc_send_and_write() {
    let (mut a, mut b) = pair(qpc_st::UC, 0);
    let msg: Vec<u8> = (0..2500u32).map(|i| i as u8).collect();
    a.write(VA, &msg);
    b.post_recv(VA + 0x8000, 4096);
    a.post_send(wop::SEND, &[data(2500, a.lkey, VA)], 0, true);
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA + 0x4000, b.lkey), data(2500, a.lkey, VA)],
        0,
        true,
    );
    let frames = run(&mut a, &mut b);
    assert_eq!(frames, 6, "no ACKs on UC");
    assert_eq!(b.read(VA + 0x8000, 2500), msg);
    assert_eq!(b.read(VA + 0x4000, 2500), msg);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    let r = b.next_cqe(true).unwrap();
    assert_eq!((r[63] >> 4, be32(&r, 0x2c)), (cqe_op::RESP_SEND, 2500));
}

#[test]
fn sends_to_an_srq_qp_take_srq_wqes() {
    let mut a = Card::new(1, qpc_st::RC);
    let mut b = Card::with_srq(2, qpc_st::RC, true);
    let (ia, ib) = (a.id(), b.id());
    a.connect(ib, 0x200, 0x100, 14);
    b.connect(ia, 0x100, 0x200, 14);
    a.write(VA, b"first message");
    a.write(VA + 0x100, b"second");
    let w0 = b.post_srq(VA + 0x1000, 256);
    let w1 = b.post_srq(VA + 0x2000, 256);
    a.post_send(wop::SEND, &[data(13, a.lkey, VA)], 0, true);
    a.post_send(wop::SEND, &[data(6, a.lkey, VA + 0x100)], 0, true);
    run(&mut a, &mut b);
    assert_eq!(b.read(VA + 0x1000, 13), b"first message");
    assert_eq!(b.read(VA + 0x2000, 6), b"second");
    for (w, len) in [(w0, 13), (w1, 6)] {
        let r = b.next_cqe(true).unwrap();
        assert_eq!(r[63] >> 4, cqe_op::RESP_SEND);
        assert_eq!(be16(&r, 0x3c), w, "wqe_counter is the SRQ WQE index");
        assert_eq!(be32(&r, 0x2c), len);
        assert_eq!(be32(&r, 0x20), UIDX, "the QP's user index");
    }
    // The SRQ is empty: the third SEND is RNR NAKed until a WQE is posted.
    a.post_send(wop::SEND, &[data(6, a.lkey, VA + 0x100)], 0, true);
    run(&mut a, &mut b);
    assert!(b.next_cqe(true).is_none());
    b.post_srq(VA + 0x3000, 256);
    a.d.roce_tick_at(super::engine::now_ns() + 1_000_000_000);
    run(&mut a, &mut b);
    assert_eq!(b.read(VA + 0x3000, 6), b"second");
    assert_eq!(be16(&b.next_cqe(true).unwrap(), 0x3c), 2);
    // The SRQ QP's send queue starts at the buffer's start (it has no RQ).
    b.write(VA + 0x4000, b"back");
    b.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA + 0x5000, a.lkey), data(4, b.lkey, VA + 0x4000)],
        0,
        true,
    );
    run(&mut a, &mut b);
    assert_eq!(a.read(VA + 0x5000, 4), b"back");
    assert_eq!(b.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
}

#[test]
fn a_qp_connected_to_its_own_gid_loops_back_inside_the_card() {
    let mut a = Card::new(1, qpc_st::RC);
    let me = a.id();
    a.connect(me, 0x300, 0x300, 14);
    let msg: Vec<u8> = (0..20000u32).map(|i| (i / 3) as u8).collect();
    a.write(VA, &msg);
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA + 0x8000, a.lkey), data(20000, a.lkey, VA)],
        0,
        true,
    );
    assert!(a.port.take().is_empty(), "nothing on the wire");
    assert_eq!(a.read(VA + 0x8000, 20000), msg);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(
        a.d.roce.state.stats.rx_packets,
        20 + 2,
        "20 requests and their ACKs"
    );
}

#[test]
fn wqes_posted_before_rts_start_at_rtr2rts() {
    let mut a = Card::new(1, qpc_st::RC);
    let mut b = Card::new(2, qpc_st::RC);
    let (ia, ib) = (a.id(), b.id());
    b.connect(ia, 0x100, 0x200, 14);
    a.write(VA, b"early");
    b.post_recv(VA, 64);
    // Posted and rung in RESET: ignored until the QP reaches RTS.
    a.post_send(wop::SEND, &[data(5, a.lkey, VA)], 0, true);
    assert!(a.port.take().is_empty());
    a.connect(ib, 0x200, 0x100, 14);
    run(&mut a, &mut b);
    assert_eq!(b.read(VA, 5), b"early");
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
}

/// Two RC cards connected over RoCE v1 GIDs (`gid` of each card's MAC, tagged with `vlan`).
fn pair_v1(gid: fn([u8; 6]) -> [u8; 16], vlan: Option<u16>) -> (Card, Card) {
    let mut a = Card::new(1, qpc_st::RC);
    let mut b = Card::new(2, qpc_st::RC);
    for c in [&mut a, &mut b] {
        let g = gid(c.mac);
        c.use_v1(g, vlan);
    }
    let (ia, ib) = (a.id(), b.id());
    a.connect(ib, 0x200, 0x100, 14);
    b.connect(ia, 0x100, 0x200, 14);
    (a, b)
}

/// The EtherType after the optional 802.1Q tag.
fn ethertype(f: &[u8]) -> u16 {
    match be16(f, 12) {
        0x8100 => be16(f, 16),
        t => t,
    }
}

/// [`run`], checking that every frame crossing is RoCE v1 (EtherType 0x8915, a GRH).
fn run_v1(a: &mut Card, b: &mut Card) -> usize {
    shuttle(a, b, &mut |_, f| {
        assert_eq!(
            ethertype(f),
            0x8915,
            "RoCE v1 on the wire: {:02x?}",
            &f[..20]
        );
        let p = super::packet::parse(f).expect("a valid RoCE v1 frame");
        assert!(p.ip.is_v1());
        false
    })
}

#[test]
fn rc_send_write_read_over_link_local_roce_v1_gids() {
    let (mut a, mut b) = pair_v1(fixture::link_local_gid, None);
    assert_eq!(
        a.gid,
        [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0xc4, 0, 0xff, 0xfe, 0, 0, 1],
        "fe80:: + EUI-64 of 02:c4:00:00:00:01"
    );
    // SEND: three packets at MTU 1024, each EtherType 0x8915 + GRH + BTH, no IP, no UDP.
    let msg: Vec<u8> = (0..3000u32).map(|i| (i * 11) as u8).collect();
    a.write(VA, &msg);
    b.post_recv(VA + 0x8000, 4096);
    a.post_send(wop::SEND_IMM, &[data(3000, a.lkey, VA)], 0x0a0b_0c0d, true);
    let f = a.port.take();
    assert_eq!(f.len(), 3);
    assert_eq!(be16(&f[0], 12), 0x8915);
    assert_eq!(
        f[0].len(),
        14 + 40 + 12 + 1024 + 4,
        "Ethernet, GRH, BTH, payload, ICRC"
    );
    let g = &f[0][14..54];
    assert_eq!(g[0] >> 4, 6, "IPVer 6");
    assert_eq!(be16(g, 4) as usize, 12 + 1024 + 4, "PayLen: BTH to ICRC");
    assert_eq!((g[6], g[7]), (0x1b, 64), "next header BTH, hop limit");
    assert_eq!(&g[8..24], &a.gid, "SGID");
    assert_eq!(&g[24..40], &b.gid, "DGID");
    let p = super::packet::parse(&f[0]).unwrap();
    assert_eq!(
        (p.bth.opcode, p.bth.dest_qp, p.bth.psn),
        (super::headers::Opcode::RcSendFirst, b.qpn, 0x100)
    );
    assert_eq!((p.src_port, p.ip.ecn()), (0, super::packet::Ecn::NotEct));
    for x in &f {
        b.d.receive(x);
    }
    run_v1(&mut a, &mut b);
    assert_eq!(b.read(VA + 0x8000, 3000), msg);
    let r = b.next_cqe(true).unwrap();
    assert_eq!((r[63] >> 4, be32(&r, 0x2c)), (cqe_op::RESP_SEND_IMM, 3000));
    assert_eq!(be32(&r, 0x24), 0x0a0b_0c0d);
    assert_eq!(
        be32(&r, 0x18),
        1 << 28 | u32::from(cx4_hw::cq::cqe::roce_l3_header_type::GRH) << 24 | a.qpn,
        "flags_rqpn: GRH, L3 type GRH (RoCE v1), source QP"
    );
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    // WRITE with immediate, 5000 bytes.
    let w: Vec<u8> = (0..5000u32).map(|i| (i % 253) as u8).collect();
    a.write(VA, &w);
    b.post_recv(VA + 0x100, 16);
    a.post_send(
        wop::RDMA_WRITE_IMM,
        &[raddr(VA + 0x4000, b.lkey), data(5000, a.lkey, VA)],
        0x77,
        true,
    );
    run_v1(&mut a, &mut b);
    assert_eq!(b.read(VA + 0x4000, 5000), w);
    let r = b.next_cqe(true).unwrap();
    assert_eq!((r[63] >> 4, be32(&r, 0x24)), (cqe_op::RESP_WR_IMM, 0x77));
    assert_eq!(be32(&r, 0x18) >> 24, 0x10, "GRH bit, L3 type GRH");
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    // READ, 10000 bytes: one request, ten responses, all v1.
    let remote: Vec<u8> = (0..10000u32).map(|i| (i * 13 + 5) as u8).collect();
    b.write(VA + 0x1000, &remote);
    a.post_send(
        wop::RDMA_READ,
        &[raddr(VA + 0x1000, b.lkey), data(10000, a.lkey, VA + 0x8000)],
        0,
        true,
    );
    assert_eq!(run_v1(&mut a, &mut b), 1 + 10);
    assert_eq!(a.read(VA + 0x8000, 10000), remote);
    let c = a.next_cqe(false).unwrap();
    assert_eq!((c[63] >> 4, be32(&c, 0x2c)), (cqe_op::REQ, 10000));
    for c in [&a, &b] {
        assert_eq!(c.d.roce.state.stats.rx_malformed, 0);
        assert_eq!(
            c.d.roce.state.cong.stats.ect_marked, 0,
            "RoCE v1 carries no ECN"
        );
    }
}

#[test]
fn roce_v1_over_a_vlan_with_ipv4_mapped_gids() {
    let (mut a, mut b) = pair_v1(|mac| v4_gid([192, 168, 7, mac[5]]), Some(100));
    a.write(VA, b"tagged v1");
    b.post_recv(VA + 0x100, 64);
    a.post_send(wop::SEND, &[data(9, a.lkey, VA)], 0, true);
    let f = a.port.take();
    assert_eq!(
        (be16(&f[0], 12), be16(&f[0], 14) & 0xfff, be16(&f[0], 16)),
        (0x8100, 100, 0x8915),
        "802.1Q VID 100, then RoCE v1"
    );
    assert_eq!(
        &f[0][18 + 8..18 + 24],
        &a.gid,
        "the IPv4-mapped GID as the SGID"
    );
    assert_eq!(&f[0][18 + 24..18 + 40], &b.gid);
    b.d.receive(&f[0]);
    run_v1(&mut a, &mut b);
    assert_eq!(b.read(VA + 0x100, 9), b"tagged v1");
    let r = b.next_cqe(true).unwrap();
    assert_eq!(be32(&r, 0x18) >> 24, 0x10, "GRH bit, L3 type GRH");
    assert_eq!((r[0x1d] & 1, be16(&r, 0x1e) & 0xfff), (1, 100), "the VLAN");
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
}

#[test]
fn a_qp_connected_to_its_own_v1_gid_loops_back_inside_the_card() {
    let mut a = Card::new(1, qpc_st::RC);
    a.use_v1(fixture::link_local_gid(a.mac), None);
    let me = a.id();
    a.connect(me, 0x300, 0x300, 14);
    let msg: Vec<u8> = (0..5000u32).map(|i| (i / 7) as u8).collect();
    a.write(VA, &msg);
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA + 0x8000, a.lkey), data(5000, a.lkey, VA)],
        0,
        true,
    );
    assert!(a.port.take().is_empty(), "nothing on the wire");
    assert_eq!(a.read(VA + 0x8000, 5000), msg);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(
        a.d.roce.state.stats.rx_packets,
        5 + 1,
        "5 requests and their ACK"
    );
    assert_eq!(a.d.roce.state.stats.rx_malformed, 0);
}

#[test]
fn truncated_and_malformed_v1_frames_are_dropped_and_counted() {
    for vlan in [None, Some(9)] {
        let (mut a, mut b) = pair_v1(fixture::link_local_gid, vlan);
        a.write(VA, &[0x3c; 100]);
        b.post_recv(VA + 0x8000, 4096);
        a.post_send(wop::SEND, &[data(100, a.lkey, VA)], 0, true);
        let good = a.port.take().remove(0);
        let l3 = if vlan.is_some() { 18 } else { 14 };
        let malformed = |b: &Card| b.d.roce.state.stats.rx_malformed;
        // Every truncation: too short for the DGID, not RoCE (the Ethernet path has it);
        // else taken by the engine, dropped and counted.
        for cut in 0..good.len() {
            let before = malformed(&b);
            let taken = b.d.roce_receive(&good[..cut]);
            assert_eq!(taken, cut >= l3 + 40, "cut at {cut}");
            assert_eq!(malformed(&b), before + u64::from(taken), "cut at {cut}");
        }
        // One flipped bit anywhere the ICRC covers (not the masked traffic class, flow label,
        // hop limit and resv8a): dropped and counted, or — a changed DGID or next header —
        // not RoCE for this card.
        let masked = |at: usize, bit: u8| {
            (at == 0 && bit & 0xf0 == 0) || matches!(at, 1..=3 | 7) || at == 40 + 4
        };
        let mut taken_n = 0;
        for at in 0..good.len() - l3 {
            for bit in [0x01u8, 0x80] {
                if masked(at, bit) {
                    continue;
                }
                let mut f = good.clone();
                f[l3 + at] ^= bit;
                let before = malformed(&b);
                let taken = b.d.roce_receive(&f);
                assert_eq!(taken, !(at == 6 || (24..40).contains(&at)), "byte {at}");
                assert_eq!(
                    malformed(&b),
                    before + u64::from(taken),
                    "byte {at} ^{bit:#x}"
                );
                taken_n += usize::from(taken);
            }
        }
        assert!(taken_n > 200, "{taken_n}");
        // Random damage outside the masked fields: never a panic, never a delivery.
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let mut f = good.clone();
            for _ in 0..1 + rnd() % 3 {
                let mut at = (rnd() % (f.len() - l3) as u64) as usize;
                if matches!(at, 0..=3 | 7 | 44) {
                    at = 8; // a byte of the SGID instead
                }
                f[l3 + at] ^= (rnd() as u8) | 1;
            }
            if rnd() % 2 == 0 {
                f.truncate((rnd() % f.len() as u64) as usize);
            }
            b.d.receive(&f);
        }
        assert!(b.next_cqe(true).is_none(), "nothing damaged was delivered");
        assert_eq!(b.d.roce.state.stats.rx_packets, 0);
        // The good frame still goes through afterwards.
        b.d.receive(&good);
        run_v1(&mut a, &mut b);
        assert_eq!(b.read(VA + 0x8000, 100), vec![0x3c; 100]);
        assert_eq!(b.next_cqe(true).unwrap()[63] >> 4, cqe_op::RESP_SEND);
    }
}

#[test]
fn rings_wrap_many_times_with_multi_block_wqes() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let msg: Vec<u8> = (0..3000u32).map(|i| (i * 31 + 7) as u8).collect();
    a.write(VA, &msg);
    for n in 0..150u32 {
        // Three gather entries (2 basic blocks): WQEs straddle the end of the 64-block ring.
        let segs = [
            raddr(VA + 0x10000 + u64::from(n % 4) * 0x1000, b.lkey),
            data(1000, a.lkey, VA),
            data(1000, a.lkey, VA + 1000),
            data(1000 - n, a.lkey, VA + 2000),
        ];
        let idx = a.post_send(wop::RDMA_WRITE_IMM, &segs, n, true);
        b.post_recv(VA + 0x8000, 16);
        run(&mut a, &mut b);
        let len = 3000 - n as usize;
        let at = VA + 0x10000 + u64::from(n % 4) * 0x1000;
        assert_eq!(b.read(at, len), msg[..len], "WRITE {n}");
        let c = a
            .next_cqe(false)
            .unwrap_or_else(|| panic!("requester CQE {n}"));
        assert_eq!(
            (c[63] >> 4, be16(&c, 0x3c)),
            (cqe_op::REQ, idx),
            "WQE {n}: {c:02x?}"
        );
        let r = b
            .next_cqe(true)
            .unwrap_or_else(|| panic!("responder CQE {n}"));
        assert_eq!(r[63] >> 4, cqe_op::RESP_WR_IMM, "{n}");
        assert_eq!(be32(&r, 0x24), n, "immediate {n}");
        assert_eq!(be16(&r, 0x3c), n as u16, "receive WQE counter {n}");
    }
    assert_eq!(a.sq_pc, 300, "150 WQEs of two blocks");
}

#[test]
fn a_bad_lkey_is_a_local_protection_error_and_flushes_what_follows() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    a.write(VA, b"fine");
    b.post_recv(VA, 64);
    b.post_recv(VA, 64);
    // An unsignaled SEND in flight (its ACK not delivered yet), then a bad lkey.
    let i0 = a.post_send(wop::SEND, &[data(4, a.lkey, VA)], 0, false);
    let i1 = a.post_send(wop::SEND, &[data(4, a.lkey ^ 0x100, VA)], 0, true);
    let i2 = a.post_send(wop::SEND, &[data(4, a.lkey, VA)], 0, true);
    let expect = [
        (i0, syndrome::WR_FLUSH_ERR),
        (i1, syndrome::LOCAL_PROT_ERR),
        (i2, syndrome::WR_FLUSH_ERR),
    ];
    for (idx, synd) in expect {
        let c = a.next_cqe(false).unwrap();
        assert_eq!(c[63] >> 4, cqe_op::REQ_ERR);
        assert_eq!((be16(&c, 0x3c), c[0x37]), (idx, synd));
        assert_eq!(c[0x38], wop::SEND, "s_wqe_opcode");
    }
    assert_eq!(a.state(), qpc_state::ERR);
    // The packet of the first SEND was on the wire already; the responder took it.
    run(&mut a, &mut b);
    assert_eq!(b.next_cqe(true).unwrap()[63] >> 4, cqe_op::RESP_SEND);
}

#[test]
fn a_silent_peer_exhausts_the_transport_retries() {
    let (mut a, mut b) = pair(qpc_st::RC, 18);
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA, b.lkey), data(8, a.lkey, VA)],
        0,
        true,
    );
    let mut now = super::engine::now_ns();
    for _ in 0..8 {
        assert!(a.next_cqe(false).is_none());
        a.port.take();
        now += 5_000_000_000;
        a.d.roce_tick_at(now);
    }
    assert!(a.port.take().is_empty(), "7 retries, then none");
    let c = a.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37]),
        (cqe_op::REQ_ERR, syndrome::TRANSPORT_RETRY_EXC_ERR)
    );
    assert_eq!(a.state(), qpc_state::ERR);
    let _ = &mut b;
}

#[test]
fn to_error_flushes_posted_receives_and_reset_restarts_counters() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    b.post_recv(VA, 64);
    b.post_recv(VA, 64);
    let qpn = b.qpn;
    ok::<cmds::ToErrQp>(&mut b.d, |i| i.set_qpn(qpn));
    for i in 0..2 {
        let c = b.next_cqe(true).unwrap();
        assert_eq!(
            (c[63] >> 4, c[0x37]),
            (cqe_op::RESP_ERR, syndrome::WR_FLUSH_ERR)
        );
        assert_eq!(be16(&c, 0x3c), i);
    }
    ok::<cmds::ToRstQp>(&mut b.d, |i| i.set_qpn(qpn));
    assert!(
        !b.d.roce.state.qps.contains_key(&qpn),
        "engine state dropped at RESET"
    );
    let _ = &mut a;
}

/// Random WQE bytes, doorbells and random / mutated RoCE frames never panic.
#[test]
fn fuzzed_wqes_and_frames_never_panic() {
    let mut seed: u64 = 0x0bad_5eed;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut a, mut b) = pair(qpc_st::RC, 4);
    // Collect some well-formed frames to mutate.
    a.write(VA, &[7u8; 3000]);
    b.post_recv(VA, 4096);
    a.post_send(wop::SEND, &[data(3000, a.lkey, VA)], 0, true);
    let mut samples = a.port.take();
    for f in samples.clone() {
        b.d.receive(&f);
    }
    samples.extend(b.port.take());
    for round in 0..3000 {
        match rnd() % 3 {
            0 => {
                let mut w = [0u8; 64];
                for x in w.iter_mut() {
                    *x = rnd() as u8;
                }
                let ops = [
                    wop::SEND,
                    wop::RDMA_WRITE,
                    wop::RDMA_READ,
                    wop::ATOMIC_CS,
                    wop::NOP,
                    rnd() as u8,
                ];
                w[3] = ops[(rnd() % ops.len() as u64) as usize];
                let segs: Vec<[u8; 16]> =
                    w[16..].chunks(16).map(|c| c.try_into().unwrap()).collect();
                let n = (rnd() % 4) as usize;
                a.post_send(w[3], &segs[..n], rnd() as u32, rnd() % 2 == 0);
                if rnd() % 3 == 0 {
                    b.post_recv(VA + rnd() % 0x1000, (rnd() % 5000) as u32);
                }
            }
            1 => {
                let mut f = samples[(rnd() % samples.len() as u64) as usize].clone();
                let flips = 1 + rnd() % 4;
                for _ in 0..flips {
                    let i = (rnd() % f.len() as u64) as usize;
                    f[i] ^= rnd() as u8;
                }
                if rnd() % 2 == 0 {
                    let l = (rnd() % f.len() as u64) as usize;
                    f.truncate(l.max(1));
                }
                b.d.receive(&f);
            }
            _ => {
                // A rebuilt valid frame (good ICRC) with random transport header fields.
                let f = samples[(rnd() % samples.len() as u64) as usize].clone();
                if let Ok(p) = super::packet::parse(&f) {
                    let mut q = p;
                    q.bth.psn = (rnd() as u32) & 0xff_ffff;
                    q.bth.dest_qp = if rnd() % 2 == 0 {
                        b.qpn
                    } else {
                        rnd() as u32 & 0xff_ffff
                    };
                    if let Some(ops) = super::headers::Opcode::ALL.get((rnd() % 64) as usize) {
                        if ops.info().headers == q.bth.opcode.info().headers {
                            q.bth.opcode = *ops;
                        }
                    }
                    if let Ok(g) = super::packet::build(&q) {
                        b.d.receive(&g);
                    }
                }
            }
        }
        if rnd() % 8 == 0 {
            run(&mut a, &mut b);
            a.d.roce_tick_at(super::engine::now_ns() + (rnd() % 1_000_000_000));
        }
        if rnd() % 50 == 0 {
            // The driver resets and reconnects both QPs.
            for c in [&mut a, &mut b] {
                let qpn = c.qpn;
                ok::<cmds::ToRstQp>(&mut c.d, |i| i.set_qpn(qpn));
                c.sq_pc = 0;
                c.rq_pc = 0;
                c.d.bus.mem.write(QP_DBR, &[0u8; 8]).unwrap();
            }
            let (ia, ib) = (a.id(), b.id());
            a.connect(ib, 0x200, 0x100, 4);
            b.connect(ia, 0x100, 0x200, 4);
            let _ = round;
        }
    }
    assert!(b.d.roce.state.stats.rx_packets > 0);
}

/// UD and GSI QPs over the same two-card harness.
#[path = "ud_tests.rs"]
mod ud_tests;

/// Two cards with InfiniBand ports.
#[path = "ib_tests.rs"]
mod ib_tests;

/// The `roce-wire` fault between two cards: drop, flip, reorder, delay, and clear.
#[path = "wire_fault_tests.rs"]
mod wire_fault_tests;

/// The queue counter set `c`'s QP names, as QUERY_Q_COUNTER reports it.
fn q_counter(c: &mut Card) -> cx4_hw::counters::QueryQCounterOut {
    let set = c.counter_set;
    view(&ok::<cmds::QueryQCounter>(&mut c.d, |i| {
        i.set_counter_set_id(set.into())
    }))
}

#[test]
fn transport_events_count_in_the_qps_queue_counter_set() {
    // As mlx5_ib: a queue counter set per port, named by every QP at RST2INIT.
    let mut a = Card::new(1, qpc_st::RC);
    let mut b = Card::new(2, qpc_st::RC);
    for c in [&mut a, &mut b] {
        let out = ok::<cmds::AllocQCounter>(&mut c.d, |_| {});
        c.counter_set = view::<cx4_hw::counters::AllocQCounterOut>(&out).counter_set_id() as u8;
    }
    let (ia, ib) = (a.id(), b.id());
    a.connect(ib, 0x200, 0x100, 18);
    b.connect(ia, 0x100, 0x200, 18);
    // A WRITE, a READ and an atomic: the responder's request counters.
    a.write(VA, &[7u8; 3000]);
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA + 0x4000, b.lkey), data(3000, a.lkey, VA)],
        0,
        true,
    );
    a.post_send(
        wop::RDMA_READ,
        &[raddr(VA + 0x4000, b.lkey), data(3000, a.lkey, VA + 0x8000)],
        0,
        true,
    );
    a.post_send(
        wop::ATOMIC_FA,
        &[
            raddr(VA + 0x6000, b.lkey),
            atomic(1, 0),
            data(8, a.lkey, VA + 0x9000),
        ],
        0,
        true,
    );
    run(&mut a, &mut b);
    for _ in 0..3 {
        assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    }
    let qb = q_counter(&mut b);
    assert_eq!(
        (
            qb.rx_write_requests(),
            qb.rx_read_requests(),
            qb.rx_atomic_requests()
        ),
        (1, 1, 1)
    );
    assert_eq!((qb.out_of_sequence(), qb.duplicate_request()), (0, 0));
    // Lose the second packet of a 3-packet SEND: b sees the third out of sequence and NAKs
    // it, a counts the sequence NAK.
    b.post_recv(VA + 0x8000, 4096);
    a.post_send(wop::SEND, &[data(3000, a.lkey, VA)], 0, true);
    let mut k = 0;
    shuttle(&mut a, &mut b, &mut |from_a, _| {
        k += 1;
        from_a && k == 2
    });
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    let (qa, qb) = (q_counter(&mut a), q_counter(&mut b));
    assert_eq!(
        qa.packet_seq_err(),
        1,
        "a's requester acted on one sequence NAK"
    );
    assert_eq!(
        qb.out_of_sequence(),
        1,
        "b's responder saw one packet out of sequence"
    );
    assert_eq!(qa.local_ack_timeout_err(), 0);
    // Lose every ACK of a one-packet SEND: a's timer resends, b sees a duplicate.
    b.post_recv(VA + 0x8000, 4096);
    a.post_send(wop::SEND, &[data(100, a.lkey, VA)], 0, true);
    shuttle(&mut a, &mut b, &mut |from_a, _| !from_a);
    a.d.roce_tick_at(super::engine::now_ns() + 5_000_000_000);
    run(&mut a, &mut b);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    let (qa, qb) = (q_counter(&mut a), q_counter(&mut b));
    assert_eq!(qa.local_ack_timeout_err(), 1);
    assert_eq!(qb.duplicate_request(), 1);
    // An RNR NAK: no receive posted on b.
    a.post_send(wop::SEND, &[data(10, a.lkey, VA)], 0, true);
    run(&mut a, &mut b);
    assert_eq!(q_counter(&mut a).rnr_nak_retry_err(), 1);
    // Clear: the set restarts from 0; the QPs' later events count from there.
    let set = a.counter_set;
    ok::<cmds::QueryQCounter>(&mut a.d, |i| {
        i.set_counter_set_id(set.into());
        i.set_clear(1);
    });
    assert_eq!(q_counter(&mut a).packet_seq_err(), 0);
    b.post_recv(VA + 0x40, 64);
    a.d.roce_tick_at(super::engine::now_ns() + 10_000_000_000);
    run(&mut a, &mut b);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    let qa = q_counter(&mut a);
    assert_eq!(
        (
            qa.rnr_nak_retry_err(),
            qa.packet_seq_err(),
            qa.local_ack_timeout_err()
        ),
        (0, 0, 0)
    );
    // Clearing a's set left b's alone.
    assert_eq!(q_counter(&mut b).rx_write_requests(), 1);
    // The error state drops b's responder; what it counted stays in the set (it used to
    // go back to 0, subtracting from the set: kernel ULPs that flush their QPs saw their
    // counters vanish).
    let qpn = b.qpn;
    ok::<cmds::ToErrQp>(&mut b.d, |i| i.set_qpn(qpn));
    let qb = q_counter(&mut b);
    assert_eq!(
        (
            qb.rx_write_requests(),
            qb.rx_read_requests(),
            qb.rx_atomic_requests(),
            qb.duplicate_request()
        ),
        (1, 1, 1, 1)
    );
}

/// The EQEs on the test card's EQ, in order (it takes completion events, and whatever else
/// the test added to its mask).
fn eqes(c: &Card) -> Vec<[u8; 64]> {
    let n = c.d.fw.eqs[&5].pi as u64;
    (0..n)
        .map(|k| {
            let mut e = [0u8; 64];
            c.d.bus.mem.read(EQ_RING + (k % 64) * 64, &mut e).unwrap();
            e
        })
        .collect()
}

#[test]
fn a_responder_access_error_raises_the_qp_access_error_event_and_a_length_error_does_not() {
    use cx4_hw::eq::event_type as ev;
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    // The EQ also takes the QP error events, as mlx5_core's async EQ does.
    b.d.fw.eqs.get_mut(&5).unwrap().mask[0] |=
        1 << ev::WQ_ACCESS_ERROR | 1 << ev::WQ_INVAL_REQ_ERROR | 1 << ev::WQ_CATAS_ERROR;
    b.post_recv(VA + 0x100, 64);
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA, 0xdead_0000), data(100, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    assert_eq!(
        a.next_cqe(false).unwrap()[0x37],
        syndrome::REMOTE_ACCESS_ERR
    );
    let events: Vec<_> = eqes(&b).into_iter().filter(|e| e[1] != ev::COMP).collect();
    assert_eq!(events.len(), 1, "one QP event: {events:02x?}");
    let e = events[0];
    assert_eq!(e[1], ev::WQ_ACCESS_ERROR);
    assert_eq!(e[0x34], cx4_hw::eq::event_queue_type::QP);
    assert_eq!(be32(&e, 0x38) & 0xff_ffff, b.qpn);
    // The posted receive was flushed (a completion event came with it).
    let r = b.next_cqe(true).unwrap();
    assert_eq!(
        (r[63] >> 4, r[0x37]),
        (cqe_op::RESP_ERR, syndrome::WR_FLUSH_ERR)
    );

    // A SEND longer than the receive: the receive completes with a local length error and
    // the requester gets a remote invalid request error; no affiliated event.
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    b.d.fw.eqs.get_mut(&5).unwrap().mask[0] |=
        1 << ev::WQ_ACCESS_ERROR | 1 << ev::WQ_INVAL_REQ_ERROR | 1 << ev::WQ_CATAS_ERROR;
    b.post_recv(VA + 0x100, 64);
    a.post_send(wop::SEND, &[data(100, a.lkey, VA)], 0, true);
    run(&mut a, &mut b);
    assert_eq!(
        a.next_cqe(false).unwrap()[0x37],
        syndrome::REMOTE_INVAL_REQ_ERR
    );
    assert_eq!(b.next_cqe(true).unwrap()[0x37], syndrome::LOCAL_LENGTH_ERR);
    assert!(eqes(&b).iter().all(|e| e[1] == ev::COMP), "no QP event");
}
/// Congestion between two cards: ECN, CNPs, DCQCN pacing, PFC pause of RoCE frames.
#[path = "cong_tests.rs"]
mod cong_tests;

/// Memory-key work requests: fast registration, local and remote invalidation, KLM mkeys,
/// the REG_UMR QP.
#[path = "umr_tests.rs"]
mod umr_tests;

/// Memory windows: binds by UMR WQEs as libmlx5 posts them, access through the window.
#[path = "mw_tests.rs"]
mod mw_tests;

/// The responder's QP rights (`rre`, `rwe`, `rae`) and their optional-parameter bits.
#[path = "rights_tests.rs"]
mod rights_tests;

/// The SRQ limit event (an RMP armed by MODIFY_RMP).
#[path = "srq_limit_tests.rs"]
mod srq_limit_tests;

/// On-demand paging: page faults held until PAGE_FAULT_RESUME.
#[path = "odp_tests.rs"]
mod odp_tests;

/// A host micro-benchmark of 64 KiB RDMA WRITEs (ignored by `cargo test`).
#[path = "write_bench.rs"]
mod write_bench;

#[path = "burst_tests.rs"]
mod burst_tests;
