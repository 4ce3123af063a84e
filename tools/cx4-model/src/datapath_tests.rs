//! The integrated path without a VM: doorbell → engine → wire (a [`Loopback`] port) and
//! CQEs in guest memory; a wire frame → drop reasons; and a seeded fuzzer that throws
//! random WQEs, doorbell records, doorbells and frames at the device.

use std::sync::Arc;

use super::*;
use crate::{
    config::Config,
    device::Device,
    eq::Eq,
    fw::{Arm, Cq, Rq, Sq, Striding},
    guest_mem::test_backing,
    wire::Loopback,
};

pub(crate) const BASE: u64 = 0x10_0000;

/// The test RQ's cyclic ring: 64 entries of 16 bytes at `RQ_RING`, doorbell record at
/// `RQ_DBR`.
pub(crate) fn rq_wq() -> WqDesc {
    WqDesc {
        wq_type: 1,
        log_stride: 4,
        log_size: 6,
        page_shift: 12,
        pas: vec![RQ_RING],
        offset: 0,
        dbr: RQ_DBR,
        pd: 1,
        uar_page: UAR,
        end_padding_mode: 0,
    }
}

/// A ready RQ `rqn` on the test CQ over `wq` (striding when `striding` says how).
pub(crate) fn ready_rq(rqn: u32, wq: WqDesc, striding: Option<Striding>) -> Rq {
    Rq {
        rqn,
        state: QueueState::Rdy,
        cqn: CQN,
        vsd: true,
        scatter_fcs: false,
        counter_set_id: 0,
        user_index: 0,
        wq,
        cc: 0,
        striding,
    }
}
pub(crate) const CQ_RING: u64 = BASE;
pub(crate) const EQ_RING: u64 = BASE + 0x1000;
pub(crate) const SQ_RING: u64 = BASE + 0x2000;
pub(crate) const DATA: u64 = BASE + 0x4000;
pub(crate) const DBR: u64 = BASE + 0x3000;
pub(crate) const CQ_DBR: u64 = DBR;
pub(crate) const SQ_DBR: u64 = DBR + 0x40;
pub(crate) const UAR: u32 = 8;
pub(crate) const SQN: u32 = 0x20;
/// The receive tests' RQ (ring, doorbell record, buffers) and the TIR steering reaches it by.
pub(crate) const RQN: u32 = 0x40;
pub(crate) const TIRN: u32 = 0x30;
pub(crate) const RQ_RING: u64 = BASE + 0x8000;
pub(crate) const RQ_DBR: u64 = DBR + 0x80;
pub(crate) const RX_BUF: u64 = BASE + 0x10000;
pub(crate) const CQN: u32 = 0x10;

pub(crate) fn device() -> (Device, Arc<Loopback>) {
    let args = "--socket /x --init-delay-ms 0 --eth";
    let mut d = Device::new(&Config::from_args(args.split(' ').map(String::from)).unwrap());
    d.bus
        .mem
        .map(BASE, 0x10_0000, 0, Some(test_backing(0x10_0000)))
        .unwrap();
    d.fw.uars.insert(UAR, ());
    d.fw.pds.insert(1, ());
    d.fw.regs.admin_status = cx4_hw::regs::port_status::UP;
    d.fw.eqs.insert(
        5,
        Eq {
            eqn: 5,
            log_size: 6,
            pas: vec![EQ_RING],
            page_shift: 12,
            uar_page: UAR,
            vector: 1,
            mask: [1, 0, 0, 0],
            pi: 0,
            ci: 0,
            armed: false,
            overrun: false,
            events: 0,
            interrupts: 0,
        },
    );
    d.fw.cqs.insert(
        CQN,
        Cq {
            cqn: CQN,
            log_size: 6,
            cqe_size: 64,
            pas: vec![CQ_RING],
            page_shift: 12,
            eqn: 5,
            uar_page: UAR,
            dbr: CQ_DBR,
            pi: 0,
            arm: Arm::None,
            arm_sn: 0,
            overrun: false,
            moderation: Default::default(),
            mod_state: Default::default(),
            cqes: 0,
        },
    );
    d.fw.nic.sqs.insert(
        SQN,
        Sq {
            sqn: SQN,
            state: QueueState::Rdy,
            cqn: CQN,
            tisn: None,
            min_inline_mode: 0,
            allow_swp: false,
            flush_in_error_en: true,
            user_index: 0,
            reg_umr: false,
            wq: WqDesc {
                wq_type: 1,
                log_stride: 6,
                log_size: 6,
                page_shift: 12,
                pas: vec![SQ_RING],
                offset: 0,
                dbr: SQ_DBR,
                pd: 1,
                uar_page: UAR,
                end_padding_mode: 0,
            },
            cc: 0,
        },
    );
    let port = Arc::new(Loopback::default());
    d.attach(port.clone());
    (d, port)
}

/// A direct TIR `tirn` to `rqn` (with `lro`) that a one-entry NIC RX root table forwards
/// every frame to.
pub(crate) fn steer_all_to(d: &mut Device, tirn: u32, rqn: u32, lro: crate::fw::TirLro) {
    use crate::fw::{Dest, FlowGroup, FlowTable, Fte, HashFields, Miss, RxHash, Tir, TirDispatch};
    use cx4_hw::flow::{action, table_type};
    d.fw.nic.tirs.insert(
        tirn,
        Tir {
            tirn,
            transport_domain: 0,
            dispatch: TirDispatch::Direct { rqn },
            hash: RxHash {
                func: 0,
                symmetric: false,
                key: [0; 40],
                outer: HashFields::default(),
                inner: HashFields::default(),
            },
            tunneled_offload_en: false,
            self_lb_block: 0,
            lro,
        },
    );
    let mut groups = std::collections::BTreeMap::new();
    groups.insert(
        0,
        FlowGroup {
            id: 0,
            start: 0,
            end: 0,
            criteria_enable: 0,
            criteria: Box::default(),
        },
    );
    let mut entries = std::collections::BTreeMap::new();
    entries.insert(
        0,
        Fte {
            index: 0,
            group: 0,
            action: action::FWD_DEST,
            flow_tag: 0,
            dests: vec![Dest::Tir(tirn)],
            counters: vec![],
            value: Box::default(),
        },
    );
    d.fw.flow_tables.insert(
        1,
        FlowTable {
            id: 1,
            ty: table_type::NIC_RX,
            level: 0,
            log_size: 0,
            miss: Miss::Default,
            groups,
            entries,
        },
    );
    d.fw.flow_root.insert(table_type::NIC_RX, 1);
}

/// A SEND WQE at index `idx`: ctrl, eth segment without inline headers, one data segment.
pub(crate) fn send_wqe(d: &Device, idx: u16, lkey: u32, addr: u64, len: u32, ce: bool) -> [u8; 8] {
    let mut w = [0u8; 48];
    let dw0 = (u32::from(idx) << 8) | u32::from(wqe_opcode::SEND);
    w[0..4].copy_from_slice(&dw0.to_be_bytes());
    w[4..8].copy_from_slice(&((SQN << 8) | 3).to_be_bytes());
    w[11] = if ce { 0x08 } else { 0 };
    w[32..36].copy_from_slice(&len.to_be_bytes());
    w[36..40].copy_from_slice(&lkey.to_be_bytes());
    w[40..48].copy_from_slice(&addr.to_be_bytes());
    let at = SQ_RING + (u64::from(idx) % 64) * 64;
    d.bus.mem.write(at, &w).unwrap();
    w[..8].try_into().unwrap()
}

pub(crate) fn frame(len: usize, seed: u8) -> Vec<u8> {
    let mut f = vec![seed; len];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]); // local experimental ethertype
    f
}

pub(crate) fn cqe(d: &Device, i: u64) -> [u8; 64] {
    let mut c = [0u8; 64];
    d.bus.mem.read(CQ_RING + i * 64, &mut c).unwrap();
    c
}

#[test]
fn doorbell_sends_every_wqe_up_to_the_record_and_completes_the_last() {
    let (mut d, port) = device();
    for i in 0..3u16 {
        d.bus
            .mem
            .write(
                DATA + 0x100 * u64::from(i),
                &frame(100 + usize::from(i), i as u8),
            )
            .unwrap();
    }
    send_wqe(&d, 0, crate::fw::RESERVED_LKEY, DATA, 100, false);
    send_wqe(&d, 1, crate::fw::RESERVED_LKEY, DATA + 0x100, 101, false);
    let db = send_wqe(&d, 2, crate::fw::RESERVED_LKEY, DATA + 0x200, 102, true);
    d.bus.mem.write(SQ_DBR + 4, &3u32.to_be_bytes()).unwrap();
    d.region_write(0, u64::from(UAR) * 4096 + 0x800, &db)
        .unwrap();
    let sent = port.take();
    assert_eq!(sent.len(), 3, "one frame per WQE");
    for (i, f) in sent.iter().enumerate() {
        assert_eq!(*f, frame(100 + i, i as u8));
    }
    let c = cqe(&d, 0);
    assert_eq!(c[63] >> 4, cx4_hw::cq::cqe::opcode::REQ, "requester CQE");
    assert_eq!(
        u16::from_be_bytes([c[60], c[61]]),
        2,
        "wqe_counter of the last WQE"
    );
    assert_eq!(cqe(&d, 1)[63], 0, "only the WQE asking for it completes");
    assert_eq!(d.fw.sq(SQN).unwrap().cc, 3);
    assert_eq!(d.path.tx_frames, 3);
    // A second doorbell without new WQEs sends nothing.
    d.region_write(0, u64::from(UAR) * 4096 + 0x800, &db)
        .unwrap();
    assert!(port.take().is_empty());
}

#[test]
fn bad_lkey_errors_the_sq_and_later_wqes_are_flushed() {
    let (mut d, port) = device();
    let db = send_wqe(&d, 0, 0x1234_5600, DATA, 100, true);
    d.bus.mem.write(SQ_DBR + 4, &1u32.to_be_bytes()).unwrap();
    d.region_write(0, u64::from(UAR) * 4096 + 0x800, &db)
        .unwrap();
    assert!(port.take().is_empty());
    let c = cqe(&d, 0);
    assert_eq!(c[63] >> 4, cx4_hw::cq::cqe::opcode::REQ_ERR);
    assert_eq!(c[0x37], syndrome::LOCAL_PROT_ERR, "syndrome: {c:02x?}");
    assert_eq!(d.fw.sq(SQN).unwrap().state, QueueState::Err);
    d.bus.mem.write(DATA, &frame(100, 7)).unwrap();
    let db = send_wqe(&d, 1, crate::fw::RESERVED_LKEY, DATA, 100, true);
    d.bus.mem.write(SQ_DBR + 4, &2u32.to_be_bytes()).unwrap();
    d.region_write(0, u64::from(UAR) * 4096 + 0x800, &db)
        .unwrap();
    assert!(port.take().is_empty(), "an SQ in error sends nothing");
    let c = cqe(&d, 1);
    assert_eq!(c[63] >> 4, cx4_hw::cq::cqe::opcode::REQ_ERR);
    assert_eq!(c[0x37], syndrome::WR_FLUSH_ERR);
    assert_eq!(d.path.tx_flushed, 1);
}

#[test]
fn link_down_sends_nothing_but_completes() {
    let (mut d, port) = device();
    d.set_carrier(false);
    d.bus.mem.write(DATA, &frame(80, 1)).unwrap();
    let db = send_wqe(&d, 0, crate::fw::RESERVED_LKEY, DATA, 80, true);
    d.bus.mem.write(SQ_DBR + 4, &1u32.to_be_bytes()).unwrap();
    d.region_write(0, u64::from(UAR) * 4096 + 0x800, &db)
        .unwrap();
    assert!(port.take().is_empty());
    assert_eq!(cqe(&d, 0)[63] >> 4, cx4_hw::cq::cqe::opcode::REQ);
    assert_eq!(d.path.tx_link_down, 1);
}

#[test]
fn lso_output_goes_as_one_superframe_where_the_port_carries_them() {
    use crate::eth::{gso, lso};
    let f = gso::tests::tcp4(5000, 0x18);
    let h = frame::parse(&f, &ParseConfig::default()).unwrap();
    let output = || Output::Segments {
        superframe: f.clone(),
        segments: lso::segment(&f, &h, 1448, cx4_hw::wqe::CsFlags::empty()).unwrap(),
        gso: gso::superframe(&f, &h, 1448),
    };
    // A port that carries them: one write, four frames counted.
    let (mut d, _) = device();
    let port = Arc::new(Loopback::with_superframes());
    d.attach(port.clone());
    d.nic_at().transmit(&output(), true);
    let sf = port.take_superframes();
    assert_eq!(sf.len(), 1);
    assert_eq!((sf[0].0.mss, sf[0].1.len()), (1448, 5000));
    assert!(port.take().is_empty());
    assert_eq!((d.path.tx_frames, d.path.tx_superframes), (4, 1));
    assert_eq!(d.path.tx_bytes, 4 * 54 + 5000);
    // One that does not: the four segments.
    let (mut d, port) = device();
    d.nic_at().transmit(&output(), true);
    assert_eq!(port.take().len(), 4);
    assert_eq!((d.path.tx_frames, d.path.tx_superframes), (4, 0));
    // Link down: nothing on the wire either way.
    let (mut d, _) = device();
    let port = Arc::new(Loopback::with_superframes());
    d.attach(port.clone());
    d.nic_at().transmit(&output(), false);
    assert!(port.take_superframes().is_empty() && port.take().is_empty());
    assert_eq!(d.path.tx_link_down, 4);
}

#[test]
fn superframes_and_partial_checksums_from_the_wire_are_finished_or_dropped() {
    use crate::{eth::gso, wire::vnet::RxOffload};
    let (mut d, _port) = device();
    // A superframe: cut into its 4 segments, each steered (no flow table: dropped there).
    let mut f = gso::tests::tcp4(5000, 0x10);
    assert_eq!(
        d.receive_offloaded(&mut f, RxOffload::Tcp { mss: 1448 }, false),
        4
    );
    assert_eq!(
        (
            d.path.rx_wire,
            d.path.rx_superframes,
            d.path.rx_steered_drop
        ),
        (4, 1, 4)
    );
    // A partial checksum is completed: the frame is no longer malformed-looking, it is
    // steered like any other.
    let mut p = gso::tests::tcp4(100, 0x10);
    assert_eq!(
        d.receive_offloaded(
            &mut p,
            RxOffload::Csum {
                start: 34,
                offset: 16
            },
            false
        ),
        1
    );
    assert_eq!(d.path.rx_steered_drop, 5);
    // What cannot be finished is dropped and counted, never delivered.
    let n = p.len();
    for off in [
        RxOffload::Csum {
            start: n,
            offset: 0,
        },
        RxOffload::Tcp { mss: 0 },
        RxOffload::Unsupported(5),
    ] {
        assert_eq!(d.receive_offloaded(&mut p, off, false), 1);
    }
    let mut junk = vec![0xffu8; 40];
    assert_eq!(
        d.receive_offloaded(&mut junk, RxOffload::Tcp { mss: 100 }, false),
        1
    );
    assert_eq!(d.path.rx_malformed, 4);
    assert_eq!(d.receive_offloaded(&mut p, RxOffload::None, true), 1);
    assert_eq!(d.path.rx_oversize, 1);
    assert_eq!(d.path.rx_frames, 0);
}

#[test]
fn wire_frames_are_dropped_and_counted_by_reason() {
    let (mut d, _port) = device();
    d.receive(&frame(d.fw.regs.admin_mtu as usize, 0)); // over PMTU − FCS
    assert_eq!(d.path.rx_oversize, 1);
    let mut bad = frame(60, 0);
    bad[12..14].copy_from_slice(&[0x08, 0x00]);
    bad[14] = 0x4f; // IPv4 with IHL 15 and a total length beyond the frame
    d.receive(&bad);
    assert_eq!(d.path.rx_malformed, 1);
    d.receive(&frame(60, 0)); // no flow table: steering drops
    assert_eq!(d.path.rx_steered_drop, 1);
    d.set_carrier(false);
    d.receive(&frame(60, 0));
    assert_eq!(d.path.rx_link_down, 1);
    assert_eq!(d.path.rx_frames, 0);
}

/// A raw packet QP's queues (mlx5_ib qp.c create_raw_packet_qp) carry the QP's `user_index`:
/// libmlx5 (CQE version 1) finds the QP of a completion by `srqn_uidx`, so the SQ's requester
/// and error CQEs and the RQ's receive CQEs report it, beside the steering entry's flow tag.
#[test]
fn user_index_of_the_queues_is_in_their_cqes() {
    let (mut d, port) = device();
    d.fw.nic.sqs.get_mut(&SQN).unwrap().user_index = 0x12_3457;
    d.bus.mem.write(DATA, &frame(100, 1)).unwrap();
    let db = send_wqe(&d, 0, crate::fw::RESERVED_LKEY, DATA, 100, true);
    d.bus.mem.write(SQ_DBR + 4, &1u32.to_be_bytes()).unwrap();
    d.region_write(0, u64::from(UAR) * 4096 + 0x800, &db)
        .unwrap();
    assert_eq!(port.take().len(), 1);
    let c = cqe(&d, 0);
    assert_eq!(c[63] >> 4, cx4_hw::cq::cqe::opcode::REQ);
    assert_eq!(&c[0x20..0x24], &[0, 0x12, 0x34, 0x57], "SQ CQE srqn_uidx");
    // A WQE that fails: the error CQE names the QP the same way.
    let db = send_wqe(&d, 1, 0x1234_5600, DATA, 100, true);
    d.bus.mem.write(SQ_DBR + 4, &2u32.to_be_bytes()).unwrap();
    d.region_write(0, u64::from(UAR) * 4096 + 0x800, &db)
        .unwrap();
    let c = cqe(&d, 1);
    assert_eq!(c[63] >> 4, cx4_hw::cq::cqe::opcode::REQ_ERR);
    assert_eq!(
        &c[0x20..0x24],
        &[0, 0x12, 0x34, 0x57],
        "error CQE srqn_uidx"
    );

    // Receive: the RQ's user_index and the entry's flow tag.
    let wq = rq_wq();
    let mut rq = ready_rq(RQN, wq, None);
    rq.user_index = 0x77;
    d.fw.nic.rqs.insert(RQN, rq);
    steer_all_to(&mut d, TIRN, RQN, Default::default());
    let fte =
        d.fw.flow_tables
            .get_mut(&1)
            .unwrap()
            .entries
            .get_mut(&0)
            .unwrap();
    fte.flow_tag = 0xab_cdef;
    let mut w = [0u8; 16];
    w[0..4].copy_from_slice(&2048u32.to_be_bytes());
    w[4..8].copy_from_slice(&crate::fw::RESERVED_LKEY.to_be_bytes());
    w[8..16].copy_from_slice(&RX_BUF.to_be_bytes());
    d.bus.mem.write(RQ_RING, &w).unwrap();
    d.bus.mem.write(RQ_DBR, &1u32.to_be_bytes()).unwrap();
    d.receive(&frame(100, 9));
    assert_eq!(d.path.rx_frames, 1);
    let c = cqe(&d, 2);
    assert_eq!(c[63] >> 4, cx4_hw::cq::cqe::opcode::RESP_SEND);
    assert_eq!(&c[0x20..0x24], &[0, 0, 0, 0x77], "RQ CQE srqn_uidx");
    assert_eq!(&c[0x38..0x3c], &[0, 0xab, 0xcd, 0xef], "flow tag");
    let mut got = vec![0u8; 100];
    d.bus.mem.read(RX_BUF, &mut got).unwrap();
    assert_eq!(got, frame(100, 9));
}

/// Seeded fuzzing of the integrated path (`CX4_FUZZ_SEED`): random ring contents, doorbell
/// records, doorbells on any offset and random frames. Nothing may panic, the SQ's
/// counter moves at most a ring per doorbell, and only guest memory is touched.
#[test]
fn fuzzed_wqes_doorbells_and_frames_never_panic() {
    let mut seed: u64 = std::env::var("CX4_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_cafe);
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut d, port) = device();
    let mut ring = vec![0u8; 4096];
    for round in 0..3000 {
        let r = rnd();
        match r % 4 {
            0 => {
                // Random bytes over part of the ring, but keep some WQEs well formed.
                for b in ring.iter_mut() {
                    if rnd() % 8 == 0 {
                        *b = rnd() as u8;
                    }
                }
                d.bus.mem.write(SQ_RING, &ring).unwrap();
                if rnd() % 2 == 0 {
                    let idx = (rnd() % 64) as u16;
                    let lkey = if rnd() % 2 == 0 {
                        crate::fw::RESERVED_LKEY
                    } else {
                        rnd() as u32
                    };
                    send_wqe(
                        &d,
                        idx,
                        lkey,
                        DATA + rnd() % 0x2000,
                        (rnd() % 0x3000) as u32,
                        true,
                    );
                }
            }
            1 => {
                d.bus
                    .mem
                    .write(SQ_DBR + 4, &(rnd() as u32).to_be_bytes())
                    .unwrap();
                d.bus
                    .mem
                    .write(CQ_DBR, &(rnd() as u32).to_be_bytes())
                    .unwrap();
            }
            2 => {
                let before = d.fw.sq(SQN).unwrap().cc;
                let off = 0x800 + (rnd() % 0x800);
                let mut db = (rnd()).to_be_bytes();
                if rnd() % 2 == 0 {
                    db[4..8].copy_from_slice(&((SQN << 8) | 3).to_be_bytes());
                }
                let _ = d.region_write(0, u64::from(UAR) * 4096 + off, &db);
                let after = d.fw.sq(SQN).unwrap().cc;
                assert!(after.wrapping_sub(before) <= 64 + 16, "round {round}");
                if rnd() % 4 == 0 {
                    // The driver's recovery: back to ready, counters restart.
                    let sq = d.fw.nic.sqs.get_mut(&SQN).unwrap();
                    sq.state = QueueState::Rdy;
                    sq.cc = 0;
                    d.fw.cqs.get_mut(&CQN).unwrap().overrun = false;
                }
            }
            _ => {
                let len = (rnd() % 1600) as usize;
                let mut f: Vec<u8> = (0..len).map(|_| rnd() as u8).collect();
                if len >= 14 && rnd() % 2 == 0 {
                    f[12..14].copy_from_slice(&[0x08, 0x00]);
                } else if len >= 14 && rnd() % 2 == 0 {
                    // MAC control: pause, PFC or another opcode, any quanta, any length.
                    f[12..14].copy_from_slice(&[0x88, 0x08]);
                    if len >= 16 {
                        let op: u16 = [0x0001, 0x0101, rnd() as u16][(rnd() % 3) as usize];
                        f[14..16].copy_from_slice(&op.to_be_bytes());
                    }
                    let q = &mut d.fw.regs.qos;
                    (q.pfc_rx, q.pfc_tx) = (rnd() as u8, rnd() as u8);
                    (q.pause_rx, q.pause_tx) = (rnd() % 2 == 0, rnd() % 2 == 0);
                }
                d.receive(&f);
                if rnd() % 8 == 0 {
                    d.pause_tick();
                }
                if rnd() % 64 == 0 {
                    // The driver falls behind for a moment, or the harness clears it.
                    let spec = match rnd() % 3 {
                        0 => "clear".to_string(),
                        n => format!("rx-starve ms={}", n * (1 + rnd() % 3)),
                    };
                    d.inject(&crate::faults::Fault::parse(&spec).unwrap())
                        .unwrap();
                }
            }
        }
        port.take();
    }
    assert!(d.path.tx_wqes > 0 && d.path.rx_wire > 0);
}

#[path = "send_bench.rs"]
mod send_bench;
