//! Pause on the wire with a [`crate::wire::Loopback`] port: a PFC XOFF stalls the SQ at a
//! WQE of its priority (not other priorities or SQs), XON and expiry resume it, nothing is
//! lost; a lossless priority's frames are held with XOFF sent, delivered in order once WQEs
//! are posted, then XON. The port runs at 100 Mb/s so an XOFF lasts 335 ms.

use std::sync::Arc;

use cx4_hw::{regs::eth_link_mode, wqe::opcode};

use super::*;
use crate::{datapath::tests::*, device::Device, wire::Loopback};

const SQN2: u32 = 0x21;
const SQ2_RING: u64 = BASE + 0x7000;
const SQ2_DBR: u64 = DBR + 0xc0;
const RX_STRIDE: u64 = 0x800;

/// The datapath test device at 100 Mb/s with a second SQ and an RQ every frame reaches.
fn pfc_device() -> (Device, Arc<Loopback>) {
    let (mut d, port) = device();
    d.fw.regs.eth_proto = eth_link_mode::proto_bit(eth_link_mode::ETH_100BASE_TX);
    let mut sq2 = d.fw.sq(SQN).unwrap().clone();
    sq2.sqn = SQN2;
    sq2.wq.pas = vec![SQ2_RING];
    sq2.wq.dbr = SQ2_DBR;
    d.fw.nic.sqs.insert(SQN2, sq2);
    let wq = rq_wq();
    d.fw.nic.rqs.insert(RQN, ready_rq(RQN, wq, None));
    steer_all_to(&mut d, TIRN, RQN, Default::default());
    (d, port)
}

/// A frame of `len` bytes with VLAN PCP `prio` (priority 0 untagged).
fn prio_frame(len: usize, seed: u8, prio: u8) -> Vec<u8> {
    let mut f = frame(len, seed);
    if prio != 0 {
        f.splice(12..12, [0x81, 0x00, prio << 5, 0x05]);
        f.truncate(len);
    }
    f
}

fn pfc(enable: u8, quanta: u16) -> Vec<u8> {
    mac::pfc_frame([0x02, 0, 0, 0, 0, 0x77], enable, quanta)
}

/// Posts WQE `idx` of SQ `sqn` sending `f` from its own buffer, CQE requested.
fn post(d: &Device, sqn: u32, idx: u16, f: &[u8]) {
    let data = DATA + 0x200 * u64::from(idx) + if sqn == SQN { 0 } else { 0x1000 };
    d.bus.mem.write(data, f).unwrap();
    let (ring, qpn) = if sqn == SQN {
        (SQ_RING, SQN)
    } else {
        (SQ2_RING, SQN2)
    };
    let mut w = [0u8; 48];
    let dw0 = (u32::from(idx) << 8) | u32::from(opcode::SEND);
    w[0..4].copy_from_slice(&dw0.to_be_bytes());
    w[4..8].copy_from_slice(&((qpn << 8) | 3).to_be_bytes());
    w[11] = 0x08;
    w[32..36].copy_from_slice(&(f.len() as u32).to_be_bytes());
    w[36..40].copy_from_slice(&crate::fw::RESERVED_LKEY.to_be_bytes());
    w[40..48].copy_from_slice(&data.to_be_bytes());
    d.bus
        .mem
        .write(ring + u64::from(idx % 64) * 64, &w)
        .unwrap();
}

fn ring(d: &mut Device, sqn: u32, pc: u32) {
    let dbr = if sqn == SQN { SQ_DBR } else { SQ2_DBR };
    d.bus.mem.write(dbr + 4, &pc.to_be_bytes()).unwrap();
    d.sq_doorbell(UAR, sqn);
}

fn cc(d: &Device, sqn: u32) -> u32 {
    d.fw.sq(sqn).unwrap().cc
}

#[test]
fn pfc_stalls_only_its_priority_and_resumes_on_xon_and_expiry() {
    let (mut d, port) = pfc_device();
    d.fw.regs.qos.pfc_rx = 0x08;
    d.receive(&pfc(0x08, 0xffff));
    assert_eq!(d.fw.nic.port.pause.rx_pause[3], 1);
    assert_eq!(d.path.rx_frames, 0, "MAC control frames are not delivered");
    let frames = [
        prio_frame(80, 1, 0),
        prio_frame(81, 2, 3),
        prio_frame(82, 3, 0),
    ];
    for (i, f) in frames.iter().enumerate() {
        post(&d, SQN, i as u16, f);
    }
    ring(&mut d, SQN, 3);
    assert_eq!(
        port.take(),
        vec![frames[0].clone()],
        "priority 0 goes, 3 stalls"
    );
    assert_eq!(cc(&d, SQN), 1, "the SQ stops at the paused WQE");
    // Another SQ, priority 0: not affected.
    let other = prio_frame(90, 9, 0);
    post(&d, SQN2, 0, &other);
    ring(&mut d, SQN2, 1);
    assert_eq!(port.take(), vec![other]);
    // Ringing again changes nothing while paused.
    ring(&mut d, SQN, 3);
    assert!(port.take().is_empty());
    assert!(d.qos_line().contains("paused=0x08"), "{}", d.qos_line());
    // XON: the rest goes, in order, and completes.
    d.receive(&pfc(0x08, 0));
    assert_eq!(port.take(), frames[1..].to_vec());
    assert_eq!(cc(&d, SQN), 3);
    let c = &d.fw.nic.port.pause;
    assert_eq!((c.rx_pause[3], c.rx_pause_transition[3]), (2, 1));
    // Expiry: 300 quanta at 100 Mb/s is 1.5 ms.
    let f = prio_frame(83, 4, 3);
    d.receive(&pfc(0x08, 300));
    post(&d, SQN, 3, &f);
    ring(&mut d, SQN, 4);
    assert!(port.take().is_empty(), "paused again");
    let wait = d.pause_deadline().expect("a pause deadline");
    assert!(wait <= Duration::from_millis(2), "{wait:?}");
    std::thread::sleep(Duration::from_millis(5));
    d.pause_tick();
    assert_eq!(port.take(), vec![f]);
    let c = &d.fw.nic.port.pause;
    assert_eq!(c.rx_pause_transition[3], 2);
    assert!(c.rx_pause_duration[3] >= 1500, "{}", c.rx_pause_duration[3]);
    assert!(d.pause_deadline().is_none());
    assert_eq!(d.path.tx_frames, 5, "nothing lost");
}

#[test]
fn pause_without_pfcrx_or_pprx_is_counted_not_honoured() {
    let (mut d, port) = pfc_device();
    d.fw.regs.qos.pfc_rx = 0x01;
    d.receive(&pfc(0x08, 0xffff));
    d.receive(&mac::pause_frame([2, 0, 0, 0, 0, 1], 0xffff));
    let f = prio_frame(80, 1, 3);
    post(&d, SQN, 0, &f);
    ring(&mut d, SQN, 1);
    assert_eq!(port.take(), vec![f], "priority 3 is not PFC-enabled");
    let c = d.fw.nic.port.pause;
    assert_eq!((c.rx_pause[3], c.rx_pause[0], c.pause_rx), (1, 1, 1));
    assert_eq!(c.mac_control_rx, 2);
    assert_eq!(c.rx_pause_transition, [0; 8]);
    // With pprx, 802.3x pause stops every priority.
    d.fw.regs.qos.pause_rx = true;
    d.receive(&mac::pause_frame([2, 0, 0, 0, 0, 1], 0xffff));
    let g = prio_frame(80, 2, 5);
    post(&d, SQN, 1, &g);
    ring(&mut d, SQN, 2);
    assert!(port.take().is_empty());
    d.receive(&mac::pause_frame([2, 0, 0, 0, 0, 1], 0));
    assert_eq!(port.take(), vec![g]);
}

/// Posts RQ WQEs `from..to` (one 2 KiB buffer each) and moves the doorbell record.
fn post_rx(d: &Device, from: u32, to: u32) {
    for i in from..to {
        let mut w = [0u8; 16];
        w[0..4].copy_from_slice(&(RX_STRIDE as u32).to_be_bytes());
        w[4..8].copy_from_slice(&crate::fw::RESERVED_LKEY.to_be_bytes());
        w[8..16].copy_from_slice(&(RX_BUF + u64::from(i) * RX_STRIDE).to_be_bytes());
        d.bus
            .mem
            .write(RQ_RING + u64::from(i % 64) * 16, &w)
            .unwrap();
    }
    d.bus.mem.write(RQ_DBR, &to.to_be_bytes()).unwrap();
}

fn rx_buf(d: &Device, i: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    d.bus.mem.read(RX_BUF + i * RX_STRIDE, &mut b).unwrap();
    b
}

#[test]
fn a_receive_doorbell_record_more_than_a_ring_ahead_posts_nothing() {
    let (mut d, _port) = pfc_device();
    post_rx(&d, 0, 4);
    d.bus.mem.write(RQ_DBR, &2u32.to_be_bytes()).unwrap();
    d.receive(&prio_frame(100, 1, 0));
    assert_eq!(d.path.rx_frames, 1);
    // 65 ahead of the device's counter (1) on a 64-entry ring: not a count the driver can
    // post; nothing is consumed, the frame is out of buffer.
    d.bus.mem.write(RQ_DBR, &66u32.to_be_bytes()).unwrap();
    d.receive(&prio_frame(100, 2, 0));
    assert_eq!((d.path.rx_frames, d.path.rx_out_of_buffer), (1, 1));
    // A whole ring ahead is fine, and so is a 16-bit wrap of the record.
    d.bus.mem.write(RQ_DBR, &65u32.to_be_bytes()).unwrap();
    d.receive(&prio_frame(100, 3, 0));
    assert_eq!((d.path.rx_frames, d.path.rx_out_of_buffer), (2, 1));
    d.bus.mem.write(RQ_DBR, &0x1_0003u32.to_be_bytes()).unwrap();
    d.receive(&prio_frame(100, 4, 0));
    assert_eq!((d.path.rx_frames, d.path.rx_out_of_buffer), (3, 1));
}

#[test]
fn lossless_priority_holds_frames_with_xoff_then_delivers_in_order_and_xon() {
    let (mut d, port) = pfc_device();
    d.fw.regs.qos.pfc_tx = 0x08;
    let frames: Vec<Vec<u8>> = (0..3).map(|i| prio_frame(100 + i, i as u8, 3)).collect();
    for f in &frames {
        d.receive(f);
    }
    assert_eq!(d.path.rx_out_of_buffer, 0, "held, not dropped");
    assert_eq!(d.port.pause.held(), (3, 303));
    let sent = port.take();
    assert_eq!(
        sent.len(),
        1,
        "one XOFF (refreshed only before it runs out)"
    );
    assert_eq!(mac::parse_mac_control(&sent[0]), {
        let mut quanta = [0; 8];
        quanta[3] = 0xffff;
        Some(MacControl::Pfc {
            enable: 0x08,
            quanta,
        })
    });
    assert_eq!(&sent[0][..6], &mac::PAUSE_DMAC);
    assert_eq!(&sent[0][6..12], &d.fw.vport.mac, "from the port's MAC");
    // A frame of another priority is not held: dropped as before.
    d.receive(&prio_frame(70, 7, 1));
    assert_eq!(d.path.rx_out_of_buffer, 1);
    std::thread::sleep(Duration::from_millis(2));
    // Two WQEs: two frames go, the third stays held, XOFF stays.
    post_rx(&d, 0, 2);
    d.pause_tick();
    assert_eq!(d.path.rx_frames, 2);
    assert_eq!(d.port.pause.held().0, 1);
    assert!(port.take().is_empty());
    post_rx(&d, 2, 3);
    d.pause_tick();
    assert_eq!(d.path.rx_frames, 3);
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(rx_buf(&d, i as u64, f.len()), *f, "frame {i} in order");
    }
    let sent = port.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        mac::parse_mac_control(&sent[0]),
        Some(MacControl::Pfc {
            enable: 0x08,
            quanta: [0; 8]
        }),
        "XON once nothing is held"
    );
    let c = d.fw.nic.port.pause;
    assert_eq!((c.tx_pause[3], c.mac_control_tx), (2, 2));
    assert!(c.tx_pause_duration[3] >= 2000, "{}", c.tx_pause_duration[3]);
    assert!(d.pause_deadline().is_none());
    // What ethtool -S reads: PPCNT per-priority group of priority 3.
    use cx4_hw::{counters::EthPerPrioGrpDataLayout, regs::ppcnt_grp};
    let g = d.fw.ppcnt_group(ppcnt_grp::PER_PRIORITY, 3).unwrap();
    let g = <EthPerPrioGrpDataLayout as zerocopy::FromBytes>::read_from_prefix(&g)
        .unwrap()
        .0;
    assert_eq!((g.tx_pause_high(), g.tx_pause_low()), (0, 2));
    assert!(g.tx_pause_duration_low() >= 2000);
}

#[test]
fn without_pfctx_frames_for_a_full_rq_are_dropped_and_global_pause_holds_all() {
    let (mut d, port) = pfc_device();
    d.receive(&prio_frame(100, 1, 3));
    assert_eq!(d.path.rx_out_of_buffer, 1);
    assert!(port.take().is_empty(), "no pause frames");
    // pptx: any priority is held, with an 802.3x XOFF.
    d.fw.regs.qos.pause_tx = true;
    d.receive(&prio_frame(100, 2, 5));
    d.receive(&prio_frame(100, 3, 0));
    assert_eq!(d.port.pause.held().0, 2);
    let sent = port.take();
    assert_eq!(
        sent.iter()
            .map(|f| mac::parse_mac_control(f))
            .collect::<Vec<_>>(),
        vec![Some(MacControl::Pause { quanta: 0xffff })]
    );
    post_rx(&d, 0, 2);
    d.pause_tick();
    assert_eq!(d.path.rx_frames, 2);
    let sent = port.take();
    assert_eq!(
        mac::parse_mac_control(&sent[0]),
        Some(MacControl::Pause { quanta: 0 })
    );
    let c = d.fw.nic.port.pause;
    assert_eq!((c.pause_tx, c.tx_pause[0]), (2, 2));
}

fn inject(d: &mut Device, spec: &str) {
    d.inject(&crate::faults::Fault::parse(spec).unwrap())
        .unwrap();
}

fn xon_xoff(sent: &[Vec<u8>]) -> Vec<Option<MacControl>> {
    sent.iter().map(|f| mac::parse_mac_control(f)).collect()
}

fn pfc3(quanta: u16) -> Option<MacControl> {
    let mut q = [0; 8];
    q[3] = quanta;
    Some(MacControl::Pfc {
        enable: 0x08,
        quanta: q,
    })
}

#[test]
fn rx_starve_holds_lossless_frames_with_xoff_then_drains_in_order_with_xon_at_its_end() {
    let (mut d, port) = pfc_device();
    d.fw.regs.qos.pfc_tx = 0x08;
    // Buffers are posted, but the fault makes the RQ look empty.
    post_rx(&d, 0, 4);
    let t0 = Instant::now();
    inject(&mut d, "rx-starve ms=300");
    let dl = d
        .pause_deadline()
        .expect("the wire thread wakes at the starvation's end");
    assert!(dl <= Duration::from_millis(300), "{dl:?}");
    let frames: Vec<Vec<u8>> = (0..3).map(|i| prio_frame(100 + i, i as u8, 3)).collect();
    for f in &frames {
        d.receive(f);
    }
    assert_eq!((d.path.rx_frames, d.path.rx_out_of_buffer), (0, 0));
    assert_eq!(d.port.pause.held(), (3, 303));
    assert_eq!(xon_xoff(&port.take()), vec![pfc3(0xffff)], "one XOFF");
    // WQEs posted meanwhile are not consumed either.
    post_rx(&d, 4, 6);
    d.pause_tick();
    assert_eq!(d.path.rx_frames, 0);
    assert_eq!(d.fw.rq(RQN).unwrap().cc, 0, "no WQE consumed while starved");
    assert!(
        port.take().is_empty(),
        "XOFF asserted, not yet due for refresh"
    );
    // The wire thread: sleep to each deadline and tick, no frame arrives.
    let mut delivered_at = None;
    while let Some(dl) = d.pause_deadline() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "drain never happened"
        );
        std::thread::sleep(dl);
        d.pause_tick();
        if d.path.rx_frames > 0 && delivered_at.is_none() {
            delivered_at = Some(t0.elapsed());
        }
    }
    let at = delivered_at.expect("held frames delivered");
    assert!(
        at >= Duration::from_millis(300),
        "delivered at {at:?}, starved until 300 ms"
    );
    assert_eq!(d.path.rx_frames, 3);
    assert_eq!(d.port.pause.held().0, 0);
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(rx_buf(&d, i as u64, f.len()), *f, "frame {i} in order");
    }
    // XOFF (335 ms at 100 Mb/s) was refreshed at half its time while starved; XON last.
    let sent = xon_xoff(&port.take());
    let (last, refreshes) = sent.split_last().unwrap();
    assert_eq!(*last, pfc3(0), "XON once drained: {sent:?}");
    assert!(
        !refreshes.is_empty() && refreshes.iter().all(|m| *m == pfc3(0xffff)),
        "{sent:?}"
    );
    assert!(d.bus.faults.rx_starve_end().is_none(), "over");
    assert_eq!(d.path.rx_out_of_buffer, 0, "nothing lost");
    // Normal again: the next frame goes straight into the next WQE.
    let f = prio_frame(90, 9, 3);
    d.receive(&f);
    assert_eq!(d.path.rx_frames, 4);
    assert_eq!(rx_buf(&d, 3, f.len()), f);
    assert!(port.take().is_empty());
    let c = d.fw.nic.port.pause;
    assert_eq!(c.tx_pause[3], 2 + refreshes.len() as u64);
    assert!(
        c.tx_pause_duration[3] >= 250_000,
        "{}",
        c.tx_pause_duration[3]
    );
}

#[test]
fn rx_starve_without_pfctx_drops_and_counts_out_of_buffer() {
    let (mut d, port) = pfc_device();
    d.fw.nic.q_counters.insert(1, Default::default());
    d.fw.nic.rqs.get_mut(&RQN).unwrap().counter_set_id = 1;
    post_rx(&d, 0, 2);
    inject(&mut d, "rx-starve ms=60000");
    d.receive(&prio_frame(100, 1, 3));
    d.receive(&frame(80, 2));
    assert_eq!((d.path.rx_frames, d.path.rx_out_of_buffer), (0, 2));
    assert_eq!(
        d.fw.nic.q_counters[&1].out_of_buffer, 2,
        "the RQ's q counter"
    );
    assert_eq!(d.port.pause.held().0, 0);
    assert!(port.take().is_empty(), "no pause frames");
    assert_eq!(d.fw.rq(RQN).unwrap().cc, 0);
    // `clear` ends it early: the posted WQEs take frames again.
    inject(&mut d, "clear");
    let f = frame(80, 3);
    d.receive(&f);
    assert_eq!((d.path.rx_frames, d.path.rx_out_of_buffer), (1, 2));
    assert_eq!(rx_buf(&d, 0, f.len()), f);
}

#[test]
fn clear_ends_rx_starve_early_and_held_frames_drain_with_xon() {
    let (mut d, port) = pfc_device();
    d.fw.regs.qos.pfc_tx = 0x08;
    post_rx(&d, 0, 2);
    inject(&mut d, "rx-starve ms=60000");
    let frames = [prio_frame(100, 1, 3), prio_frame(110, 2, 3)];
    for f in &frames {
        d.receive(f);
    }
    assert_eq!(d.port.pause.held().0, 2);
    assert_eq!(xon_xoff(&port.take()), vec![pfc3(0xffff)]);
    d.pause_tick();
    assert_eq!(d.port.pause.held().0, 2, "still starved");
    inject(&mut d, "clear");
    d.pause_tick();
    assert_eq!((d.path.rx_frames, d.port.pause.held().0), (2, 0));
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(rx_buf(&d, i as u64, f.len()), *f, "frame {i} in order");
    }
    assert_eq!(xon_xoff(&port.take()), vec![pfc3(0)]);
    assert!(d.pause_deadline().is_none());
}

#[test]
fn rx_starve_ms_0_ends_it_now_and_leaves_other_faults() {
    let (mut d, port) = pfc_device();
    d.fw.regs.qos.pfc_tx = 0x08;
    post_rx(&d, 0, 1);
    inject(&mut d, "rx-starve ms=60000");
    inject(&mut d, "wqe-error count=2");
    let f = prio_frame(100, 1, 3);
    d.receive(&f);
    assert_eq!(xon_xoff(&port.take()), vec![pfc3(0xffff)]);
    inject(&mut d, "rx-starve ms=0");
    d.pause_tick();
    assert_eq!((d.path.rx_frames, d.port.pause.held().0), (1, 0));
    assert_eq!(rx_buf(&d, 0, f.len()), f);
    assert_eq!(xon_xoff(&port.take()), vec![pfc3(0)]);
    assert_eq!(d.bus.faults.wqe_errors, 2, "only the starvation ends");
    // Ending none is not an error.
    inject(&mut d, "rx-starve ms=0");
    assert!(crate::faults::Fault::parse("rx-starve ms=60001").is_err());
}

#[test]
fn lossless_buffer_full_drops_and_counts() {
    let (mut d, _port) = pfc_device();
    d.fw.regs.qos.pfc_tx = 0x01;
    let n = crate::pause::LOSSLESS_BUFFER / 1500 + 3;
    for i in 0..n {
        d.receive(&frame(1500, i as u8));
    }
    assert_eq!(d.port.pause.held().0, crate::pause::LOSSLESS_BUFFER / 1500);
    assert_eq!(d.path.rx_out_of_buffer, 3);
}

#[test]
fn dscp_trust_classifies_by_qpdpm() {
    let (mut d, port) = pfc_device();
    d.fw.regs.qos.trust = trust_state::DSCP;
    d.fw.regs.qos.pfc_rx = 0x20;
    d.receive(&pfc(0x20, 0xffff));
    let mut f = frame(80, 1);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[15] = 46 << 2; // DSCP 46 → priority 5 by default
    f[16..18].copy_from_slice(&66u16.to_be_bytes());
    post(&d, SQN, 0, &f);
    ring(&mut d, SQN, 1);
    assert!(port.take().is_empty(), "DSCP 46 is priority 5, paused");
    d.fw.regs.qos.dscp2prio[46] = 1;
    d.receive(&pfc(0x20, 0));
    assert_eq!(port.take().len(), 1);
}
