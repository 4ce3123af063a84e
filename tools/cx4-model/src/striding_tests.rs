//! A striding RQ without a VM: packets fill whole strides in order, a packet that does not fit
//! makes a filler CQE and goes to the next WQE by its link, an exhausted ring drops out of
//! buffer, a reset starts again at WQE 0, and LRO merges a burst of TCP segments into one CQE
//! with the fields mlx5e rewrites the headers from.

use cx4_hw::cq::cqe::Cqe64;
use zerocopy::FromBytes;

use crate::{
    datapath::tests::*,
    device::Device,
    eth::lro::tests::tcp4,
    fw::{Striding, TirLro, WqDesc, RESERVED_LKEY},
};

/// 4 WQEs of 8 strides of 256 bytes.
const STRIDE: u32 = 256;
const STRIDES: u32 = 8;
const WQE_BYTES: u64 = (STRIDE * STRIDES) as u64;

/// The datapath test device with a striding RQ every frame reaches (through a direct TIR with
/// `lro`); WQE i's buffer is at RX_BUF + i × 2 KiB, linked to `links[i]`.
fn striding_device(lro: TirLro, links: [u16; 4]) -> Device {
    let (mut d, _port) = device();
    let wq = WqDesc {
        wq_type: cx4_hw::wq::wq_type::LINKED_LIST_STRIDING_RQ,
        log_stride: 5,
        log_size: 2,
        page_shift: 12,
        pas: vec![RQ_RING],
        offset: 0,
        dbr: RQ_DBR,
        pd: 1,
        uar_page: 0,
        end_padding_mode: 0,
    };
    for (i, next) in links.iter().enumerate() {
        let mut w = [0u8; 32];
        w[2..4].copy_from_slice(&next.to_be_bytes());
        w[16..20].copy_from_slice(&(WQE_BYTES as u32).to_be_bytes());
        w[20..24].copy_from_slice(&RESERVED_LKEY.to_be_bytes());
        w[24..32].copy_from_slice(&(RX_BUF + i as u64 * WQE_BYTES).to_be_bytes());
        d.bus.mem.write(RQ_RING + 32 * i as u64, &w).unwrap();
    }
    d.fw.nic.rqs.insert(
        RQN,
        ready_rq(
            RQN,
            wq,
            Some(Striding {
                log_num_strides: 3,
                log_stride: 8,
                ..Default::default()
            }),
        ),
    );
    steer_all_to(&mut d, TIRN, RQN, lro);
    d
}

/// The device with a cyclic RQ instead: 4 WQEs of two 1 KiB scatter entries each (WQE i at
/// RX_BUF + i × 2 KiB, split at +1 KiB).
fn cyclic_device(lro: TirLro) -> Device {
    let mut d = striding_device(lro, [0; 4]);
    let rq = d.fw.nic.rqs.get_mut(&RQN).unwrap();
    rq.striding = None;
    rq.wq.wq_type = cx4_hw::wq::wq_type::CYCLIC;
    for i in 0..4u64 {
        let mut w = [0u8; 32];
        for (j, seg) in w.chunks_exact_mut(16).enumerate() {
            seg[..4].copy_from_slice(&1024u32.to_be_bytes());
            seg[4..8].copy_from_slice(&RESERVED_LKEY.to_be_bytes());
            let addr = RX_BUF + i * WQE_BYTES + j as u64 * 1024;
            seg[8..].copy_from_slice(&addr.to_be_bytes());
        }
        d.bus.mem.write(RQ_RING + 32 * i, &w).unwrap();
    }
    d
}

/// Posts WQEs up to counter `n` (the doorbell record).
fn post(d: &Device, n: u32) {
    d.bus.mem.write(RQ_DBR, &n.to_be_bytes()).unwrap();
}

/// (WQE index, first stride, strides, bytes, filler) of CQE `i`.
fn place(d: &Device, i: u64) -> (u16, u32, u32, u32, bool) {
    let c = Cqe64::read_from_bytes(&cqe(d, i)[..]).unwrap();
    let bc = c.byte_cnt();
    (
        c.wqe_id() as u16,
        c.wqe_counter(),
        (bc >> 16) & 0x7fff,
        bc & 0xffff,
        bc >> 31 != 0,
    )
}

fn read(d: &Device, addr: u64, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    d.bus.mem.read(addr, &mut b).unwrap();
    b
}

#[test]
fn packets_fill_strides_in_order_and_follow_the_links() {
    // WQE 0 → 1 → 3 → 2: the device follows the links, not the ring order.
    let mut d = striding_device(TirLro::default(), [1, 3, 0, 2]);
    post(&d, 3);
    let (a, b, c, e) = (frame(300, 1), frame(1000, 2), frame(700, 3), frame(60, 4));
    d.receive(&a); // strides 0-1 of WQE 0
    d.receive(&b); // strides 2-5
    d.receive(&c); // 3 strides: 2 left, so a filler for 6-7, then WQE 1 strides 0-2
    d.receive(&e); // WQE 1 stride 3
    assert_eq!(place(&d, 0), (0, 0, 2, 300, false));
    assert_eq!(place(&d, 1), (0, 2, 4, 1000, false));
    assert_eq!(place(&d, 2), (0, 6, 2, 0, true));
    assert_eq!(place(&d, 3), (1, 0, 3, 700, false));
    assert_eq!(place(&d, 4), (1, 3, 1, 60, false));
    assert_eq!(read(&d, RX_BUF, 300), a);
    assert_eq!(read(&d, RX_BUF + 2 * 256, 1000), b);
    assert_eq!(read(&d, RX_BUF + WQE_BYTES, 700), c);
    assert_eq!(read(&d, RX_BUF + WQE_BYTES + 3 * 256, 60), e);
    // Fill WQE 1 (4 strides left) and go on to WQE 3 (its link), the third posted.
    d.receive(&frame(1024, 5));
    d.receive(&frame(100, 6));
    assert_eq!(place(&d, 5), (1, 4, 4, 1024, false));
    assert_eq!(place(&d, 6), (3, 0, 1, 100, false));
    assert_eq!(d.path.rx_fillers, 1);
    // WQE 3 full, nothing more posted: out of buffer, counted.
    d.receive(&frame(1024, 7));
    d.receive(&frame(768, 8));
    assert_eq!(place(&d, 8), (3, 5, 3, 768, false));
    d.receive(&frame(100, 9));
    assert_eq!(d.path.rx_out_of_buffer, 1);
    // Posting WQE 2 (WQE 3's link) lets frames land again.
    post(&d, 4);
    d.receive(&frame(100, 10));
    assert_eq!(place(&d, 9), (2, 0, 1, 100, false));
    assert_eq!(read(&d, RX_BUF + 2 * WQE_BYTES, 100), frame(100, 10));
}

#[test]
fn a_reset_starts_again_at_wqe_0() {
    let mut d = striding_device(TirLro::default(), [1, 2, 3, 0]);
    post(&d, 2);
    d.receive(&frame(300, 1));
    let rq = d.fw.nic.rqs.get_mut(&RQN).unwrap();
    rq.cc = 0;
    rq.striding.as_mut().unwrap().reset();
    post(&d, 1);
    d.receive(&frame(200, 2));
    assert_eq!(place(&d, 1), (0, 0, 1, 200, false));
    assert_eq!(read(&d, RX_BUF, 200), frame(200, 2));
}

const LRO: TirLro = TirLro {
    mask: 1,
    max_ip_payload: 0xff00,
    timeout_us: 32,
};
const ACK: u8 = 0x10;
const PSH: u8 = 0x08;

/// A burst as the wire loop delivers it: merges stay open until the burst ends.
fn burst(d: &mut Device, frames: &[Vec<u8>]) {
    d.nic.set_defer(true);
    for f in frames {
        d.receive(f);
    }
    d.nic.set_defer(false);
    d.close_merges();
}

#[test]
fn lro_merges_a_burst_of_segments_into_one_packet() {
    let mut d = striding_device(LRO, [1, 2, 3, 0]);
    post(&d, 3);
    let payload = |n: usize, s: u8| {
        (0..n)
            .map(|i| (i as u8).wrapping_add(s))
            .collect::<Vec<_>>()
    };
    let segs = [
        tcp4(1000, 7, ACK, true, &payload(100, 1)),
        tcp4(1100, 8, ACK, true, &payload(101, 2)),
        tcp4(1201, 9, ACK | PSH, true, &payload(99, 3)),
        tcp4(1300, 9, ACK, true, &payload(50, 4)),
    ];
    burst(&mut d, &segs);
    // PSH closed the first merge after three segments; the fourth opened its own and the end
    // of the burst closed it as a plain single-segment packet.
    let hdr = 14 + 20 + 32;
    let merged = hdr + 100 + 101 + 99;
    assert_eq!(place(&d, 0), (0, 0, 2, merged as u32, false));
    let c = Cqe64::read_from_bytes(&cqe(&d, 0)[..]).unwrap();
    assert_eq!(c.lro_num_seg(), 3);
    assert_eq!(c.lro_ack_seq_num(), 9);
    assert_eq!(c.lro_tcppsh_abort_dupack() & 0x40, 0x40);
    let mut want = segs[0].clone();
    want.extend_from_slice(&payload(101, 2));
    want.extend_from_slice(&payload(99, 3));
    assert_eq!(read(&d, RX_BUF, merged), want);
    let c = Cqe64::read_from_bytes(&cqe(&d, 1)[..]).unwrap();
    assert_eq!(c.lro_num_seg(), 0, "one segment: a plain CQE");
    assert_eq!(place(&d, 1), (0, 2, 1, segs[3].len() as u32, false));
    assert_eq!(d.path.rx_lro_packets, 1);
    assert_eq!(d.path.rx_lro_merged, 2);
    assert_eq!(d.path.rx_frames, 4);
}

#[test]
fn lro_closes_on_another_packet_a_gap_or_a_full_wqe_and_not_without_lro() {
    let mut d = striding_device(LRO, [1, 2, 3, 0]);
    post(&d, 3);
    let p = [0x55u8; 600];
    // Another packet for the RQ lands after the merge it closes; a sequence gap starts anew.
    burst(
        &mut d,
        &[
            tcp4(0, 1, ACK, false, &p),
            tcp4(600, 1, ACK, false, &p),
            frame(100, 9),
            tcp4(1200, 1, ACK, false, &p),
            tcp4(1900, 1, ACK, false, &p),
        ],
    );
    let seg = 14 + 20 + 20 + 600;
    assert_eq!(place(&d, 0), (0, 0, 5, (seg + 600) as u32, false));
    assert_eq!(place(&d, 1), (0, 5, 1, 100, false));
    // 654 bytes need 3 strides, 2 are left: filler, then WQE 1.
    assert_eq!(place(&d, 2), (0, 6, 2, 0, true));
    assert_eq!(place(&d, 3), (1, 0, 3, seg as u32, false));
    assert_eq!(place(&d, 4), (1, 3, 3, seg as u32, false));
    // The merge stops at the end of its WQE: 8 strides = 2048 bytes hold 654 + 2 × 600.
    post(&d, 4);
    burst(
        &mut d,
        &(0..4)
            .map(|i| tcp4(i * 600, 1, ACK, false, &p))
            .collect::<Vec<_>>(),
    );
    assert_eq!(place(&d, 5), (1, 6, 2, 0, true));
    assert_eq!(place(&d, 6), (2, 0, 8, (seg + 1200) as u32, false));
    let c = Cqe64::read_from_bytes(&cqe(&d, 6)[..]).unwrap();
    assert_eq!(c.lro_num_seg(), 3);
    assert_eq!(place(&d, 7), (3, 0, 3, seg as u32, false));
    // Without LRO on the TIR, every segment is its own packet.
    let mut d = striding_device(TirLro::default(), [1, 2, 3, 0]);
    post(&d, 3);
    burst(
        &mut d,
        &[tcp4(0, 1, ACK, false, &p), tcp4(600, 1, ACK, false, &p)],
    );
    assert_eq!(place(&d, 1), (0, 3, 3, seg as u32, false));
    assert_eq!(d.path.rx_lro_merged, 0);
}

#[test]
fn a_superframe_from_the_wire_lands_as_one_merged_packet() {
    use crate::wire::vnet::RxOffload;
    let mut d = striding_device(LRO, [1, 2, 3, 0]);
    post(&d, 3);
    let payload: Vec<u8> = (0..1200).map(|i| (i * 7) as u8).collect();
    let mut sf = tcp4(5000, 3, ACK | PSH, false, &payload);
    let want = sf.clone();
    // The host leaves the TCP checksum partial (the pseudo-header sum only).
    sf[14 + 20 + 16..14 + 20 + 18].copy_from_slice(&[0x12, 0x34]);
    assert_eq!(
        d.receive_offloaded(&mut sf, RxOffload::Tcp { mss: 400 }, false),
        3
    );
    let c = Cqe64::read_from_bytes(&cqe(&d, 0)[..]).unwrap();
    assert_eq!(place(&d, 0), (0, 0, 5, want.len() as u32, false));
    assert_eq!(c.lro_num_seg(), 3);
    assert_eq!(
        read(&d, RX_BUF, want.len()),
        want,
        "checksum completed, one copy"
    );
    assert_eq!(
        (d.path.rx_wire, d.path.rx_frames, d.path.rx_superframes),
        (3, 3, 1)
    );
    // Without LRO the same superframe is cut into three packets.
    let mut d = striding_device(TirLro::default(), [1, 2, 3, 0]);
    post(&d, 3);
    let mut sf = want.clone();
    assert_eq!(
        d.receive_offloaded(&mut sf, RxOffload::Tcp { mss: 400 }, false),
        3
    );
    assert_eq!(place(&d, 2), (0, 4, 2, (14 + 20 + 20 + 400) as u32, false));
}

#[test]
fn a_superframe_lands_whole_in_a_cyclic_lro_wqe_that_holds_it() {
    use crate::wire::vnet::RxOffload;
    let mut d = cyclic_device(LRO);
    post(&d, 4);
    // 54 + 1200 bytes: across the WQE's two 1 KiB entries, three segments of 400.
    let payload: Vec<u8> = (0..1200).map(|i| (i * 5) as u8).collect();
    let mut sf = tcp4(9000, 3, ACK | PSH, false, &payload);
    let want = sf.clone();
    sf[14 + 20 + 16..14 + 20 + 18].copy_from_slice(&[0x12, 0x34]);
    assert_eq!(
        d.receive_offloaded(&mut sf, RxOffload::Tcp { mss: 400 }, false),
        3
    );
    let c = Cqe64::read_from_bytes(&cqe(&d, 0)[..]).unwrap();
    assert_eq!(
        (c.wqe_counter(), c.byte_cnt(), c.lro_num_seg()),
        (0, want.len() as u32, 3)
    );
    assert_eq!(
        read(&d, RX_BUF, want.len()),
        want,
        "one copy, checksum completed"
    );
    assert_eq!(
        (d.path.rx_wire, d.path.rx_frames, d.path.rx_superframes),
        (3, 3, 1)
    );
    assert_eq!(d.fw.rq(RQN).unwrap().cc, 1);
    // Larger than a WQE (2 KiB): cut into its segments, each received as from the wire.
    let big: Vec<u8> = (0..2400).map(|i| i as u8).collect();
    let mut sf = tcp4(10200, 3, ACK, false, &big);
    assert_eq!(
        d.receive_offloaded(&mut sf, RxOffload::Tcp { mss: 600 }, false),
        4
    );
    let c = Cqe64::read_from_bytes(&cqe(&d, 1)[..]).unwrap();
    assert_eq!(
        (c.wqe_counter(), c.byte_cnt(), c.lro_num_seg()),
        (1, 54 + 600, 0)
    );
    assert_eq!(d.path.rx_superframes, 2);
    // No WQE posted: cut, and the segments are out of buffer.
    let mut d = cyclic_device(LRO);
    let mut sf = want.clone();
    assert_eq!(
        d.receive_offloaded(&mut sf, RxOffload::Tcp { mss: 400 }, false),
        3
    );
    assert_eq!(d.path.rx_out_of_buffer, 3);
}

#[test]
fn lro_into_a_cyclic_rq_fills_the_wqe_scatter_list() {
    let mut d = cyclic_device(LRO);
    post(&d, 4);
    let p: Vec<u8> = (0..700).map(|i| i as u8).collect();
    // 54 + 700 + 700 = 1454 bytes cross the WQE's two entries; the third does not fit in 2 KiB.
    let segs: Vec<_> = (0..3).map(|i| tcp4(i * 700, 1, ACK, false, &p)).collect();
    burst(&mut d, &segs);
    let c = Cqe64::read_from_bytes(&cqe(&d, 0)[..]).unwrap();
    assert_eq!(
        (c.wqe_counter(), c.byte_cnt(), c.lro_num_seg()),
        (0, 54 + 1400, 2)
    );
    let mut want = segs[0].clone();
    want.extend_from_slice(&p);
    assert_eq!(read(&d, RX_BUF, want.len()), want);
    let c = Cqe64::read_from_bytes(&cqe(&d, 1)[..]).unwrap();
    assert_eq!(
        (c.wqe_counter(), c.byte_cnt(), c.lro_num_seg()),
        (1, 754, 0)
    );
    assert_eq!(d.fw.rq(RQN).unwrap().cc, 2);
    // A reset while a merge is open drops it: no CQE, the ring starts again.
    d.nic.set_defer(true);
    d.receive(&segs[0]);
    let rq = d.fw.nic.rqs.get_mut(&RQN).unwrap();
    rq.cc = 0;
    d.nic.set_defer(false);
    d.close_merges();
    assert_eq!(cqe(&d, 2), [0; 64]);
    // Without LRO: one WQE per frame.
    let mut d = cyclic_device(TirLro::default());
    post(&d, 4);
    burst(&mut d, &segs);
    assert_eq!(d.fw.rq(RQN).unwrap().cc, 3);
    assert_eq!(d.path.rx_lro_merged, 0);
}
